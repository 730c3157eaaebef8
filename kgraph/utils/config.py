"""``keras.utils.Config``: named values read and written as attributes or keys, which can be frozen."""
import copy
import difflib
import json

_OWN = frozenset({"_config", "_frozen"})


class Config:
    """A dict-like container: ``config = Config(lr=0.1); config.epochs = 3; config["lr"]``.

    ``freeze()`` makes every later change raise a ValueError (``unfreeze()`` lifts it); ``to_json()`` gives the
    values as JSON. Iterating yields the names in sorted order.
    """

    def __init__(self, **kwargs):
        object.__setattr__(self, "_config", kwargs)
        object.__setattr__(self, "_frozen", False)

    @property
    def frozen(self):
        """True once ``freeze()`` was called (until ``unfreeze()``)."""
        return self._frozen

    def freeze(self):
        """Refuse every later change."""
        object.__setattr__(self, "_frozen", True)

    def unfreeze(self):
        """Allow changes again."""
        object.__setattr__(self, "_frozen", False)

    def _check_mutable(self):
        if self._frozen:
            raise ValueError("Cannot mutate attribute(s) because the config is frozen.")

    def as_dict(self):
        return copy.copy(self._config)

    def to_json(self):
        return json.dumps(self._config)

    def keys(self):
        return self._config.keys()

    def values(self):
        return self._config.values()

    def items(self):
        return self._config.items()

    def pop(self, *args):
        self._check_mutable()
        return self._config.pop(*args)

    def update(self, *args, **kwargs):
        self._check_mutable()
        return self._config.update(*args, **kwargs)

    def get(self, keyname, value=None):
        return self._config.get(keyname, value)

    def __setattr__(self, name, value):
        if name in _OWN or hasattr(type(self), name):
            return object.__setattr__(self, name, value)
        self._check_mutable()
        self._config[name] = value

    def __getattr__(self, name):
        # Only reached for names that are not the class's own attributes.
        if name.startswith("__") or name in _OWN:
            raise AttributeError(name)
        config = self._config
        if name in config:
            return config[name]
        message = f"Unknown attribute: '{name}'."
        close = difflib.get_close_matches(name, config.keys(), n=1, cutoff=0.7)
        if close:
            message += f" Did you mean '{close[0]}'?"
        raise AttributeError(message)

    def __setitem__(self, key, item):
        self._check_mutable()
        self._config[key] = item

    def __getitem__(self, key):
        return self._config[key]

    def __delitem__(self, key):
        self._check_mutable()
        del self._config[key]

    def __contains__(self, item):
        return item in self._config

    def __iter__(self):
        return iter(sorted(self._config.keys()))

    def __len__(self):
        return len(self._config)

    def __repr__(self):
        return f"<Config {self._config}>"

    def __getstate__(self):
        return {"_config": self._config, "_frozen": self._frozen}

    def __setstate__(self, state):
        object.__setattr__(self, "_config", state["_config"])
        object.__setattr__(self, "_frozen", state["_frozen"])
