"""``keras.dtype_policies``: the float type a layer keeps its weights in and computes in.

kgraph computes in one float type per layer: its policy names that type (``"float32"``, ``"float64"``,
``"float16"``, ``"bfloat16"`` where NumPy has it, or any other dtype name a layer takes). Keras's mixed
policies (``"mixed_float16"``, ``"mixed_bfloat16"``: weights in float32, computation in half precision) and its
quantized policies are refused by name: a NumPy engine gains no speed from half precision, and computing such a
model in float32 silently would give other numbers than the program asked for.
"""
from __future__ import annotations

from kgraph.backend.settings import floatx, standardize_dtype

__all__ = ["DTypePolicy", "FloatDTypePolicy", "deserialize", "dtype_policy", "get", "serialize", "set_dtype_policy"]

_MIXED = ("mixed_float16", "mixed_bfloat16")
_GLOBAL = {"policy": None}


def _refuse_unsupported(name):
    if name in _MIXED or str(name).startswith(("int8", "int4", "float8", "gptq", "awq")):
        raise ValueError(f"kgraph does not support the dtype policy {name!r}: it computes each layer in one float "
                         "type (mixed-precision and quantized policies are not implemented). Use 'float32' (or "
                         "'float64').")


class DTypePolicy:
    """The dtype a layer's variables and computation use; ``DTypePolicy("float64")``."""

    def __init__(self, name=None):
        if name is None:
            name = floatx()
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as 'float32'. Received: name={name!r} "
                            f"(of type {type(name).__name__})")
        _refuse_unsupported(name)
        self._name = "string" if standardize_dtype(name) == "str" else standardize_dtype(name)

    name = property(lambda self: self._name)
    compute_dtype = property(lambda self: self._name)
    variable_dtype = property(lambda self: self._name)
    quantization_mode = property(lambda self: None)

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other.name == self.name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'


FloatDTypePolicy = DTypePolicy  # Keras 3 keeps this name as an alias


def serialize(policy):
    """Keras's form of a policy: ``{"module": "keras", "class_name": "DTypePolicy", "config": {...}, ...}``."""
    policy = get(policy)
    return {"module": "keras", "class_name": "DTypePolicy", "config": policy.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A policy from ``serialize``'s dict (or a dtype name)."""
    return get(config)


def get(identifier):
    """A DTypePolicy from a policy, a dtype name, a NumPy dtype or ``serialize``'s dict (None: the global one)."""
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        if not str(identifier.get("class_name", "")).endswith("DTypePolicy"):
            raise ValueError(f"Cannot interpret {identifier!r} as a dtype policy: expected a DTypePolicy config.")
        return DTypePolicy(**identifier.get("config", {}))
    return DTypePolicy(identifier if isinstance(identifier, str) else standardize_dtype(identifier))


def set_dtype_policy(policy):
    """Set the policy of the layers created from now on (``keras.config.set_dtype_policy``)."""
    _GLOBAL["policy"] = None if policy is None else get(policy)


def dtype_policy():
    """The global policy (``floatx()``'s, unless ``set_dtype_policy`` set one)."""
    return _GLOBAL["policy"] or DTypePolicy(floatx())


def layer_dtype(value):
    """The dtype name a layer keeps, from a ``dtype=`` argument (name, NumPy dtype, policy or its dict)."""
    if value is None:
        return standardize_dtype(_GLOBAL["policy"].name) if _GLOBAL["policy"] is not None else floatx()
    if isinstance(value, (DTypePolicy, dict)):
        return standardize_dtype(get(value).name)
    if isinstance(value, str):
        _refuse_unsupported(value)
    return standardize_dtype(value)
