"""Lambda: a Python function as a layer, and the safe mode that keeps model files free of code.

A model file never holds code: a saved Lambda holds the name of its function,
and loading it looks that name up in ``custom_objects`` only (it never imports
a module or evaluates anything from the file). Because such a file cannot be
used without the code that defined the function, ``get_config`` (and so
saving) refuses a Lambda unless safe mode is turned off, with
``enable_unsafe_deserialization()`` or inside ``SafeModeScope(False)``.
"""
import inspect

from kgraph import tree
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.layer import Layer
from kgraph.saving.serialization import decode_argument, encode_argument

_SAFE_MODE = [True]


class SafeModeScope:
    """``with SafeModeScope(False):`` lets Lambda layers be saved (by function name) inside the block."""

    def __init__(self, safe_mode=True):
        self.safe_mode = bool(safe_mode)

    def __enter__(self):
        self._previous = _SAFE_MODE[0]
        _SAFE_MODE[0] = self.safe_mode
        return self

    def __exit__(self, *exc_info):
        _SAFE_MODE[0] = self._previous


def enable_unsafe_deserialization():
    """Turn safe mode off for the rest of the process: Lambda layers may then be saved by function name."""
    _SAFE_MODE[0] = False


def in_safe_mode():
    """Whether saving a Lambda layer is refused (the default)."""
    return _SAFE_MODE[0]


def _no_tensor(value):
    raise TypeError("Lambda `arguments` cannot hold tensors in a saved config.")


class Lambda(Layer):
    """Calls ``function(inputs, **arguments)`` (plus ``mask``/``training`` if the function takes them).

    ``output_shape``: the output shape without the batch axis (a tuple), or a
    function of the full input shape; by default the function is traced on
    KerasTensors. ``mask``: a function ``mask(inputs, previous_mask)`` or a
    fixed mask for the output.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Layer '{self.name}': `function` must be callable. Received: function={function!r}")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape if output_shape is None or callable(output_shape) else \
            tuple(output_shape)
        self.mask = mask
        self.supports_masking = mask is not None
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            parameters = {}
        self._fn_expects_mask_arg = "mask" in parameters
        self._fn_expects_training_arg = "training" in parameters

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_expects_mask_arg:
            kwargs["mask"] = mask
        if self._fn_expects_training_arg:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, previous_mask=None):
        return self.mask(inputs, previous_mask) if callable(self.mask) else self.mask

    def compute_output_spec(self, *args, **kwargs):
        if self._output_shape is None:
            from kgraph.graph import tracing
            return tracing.layer_output_spec(self, args, kwargs)
        return super().compute_output_spec(*args, **kwargs)

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            from kgraph.graph import tracing
            spec = tracing.layer_output_spec(self, (_placeholders(input_shape),), {})
            return tree.map_structure(lambda t: t.shape, spec)
        if callable(self._output_shape):
            return self._output_shape(input_shape)
        return (tree.flatten(input_shape)[0],) + self._output_shape

    def get_config(self):
        config = super().get_config()
        config["function"] = self._function_config(self.function, "function")
        if self._output_shape is not None:
            config["output_shape"] = self._function_config(self._output_shape, "output_shape") \
                if callable(self._output_shape) else list(self._output_shape)
        if self.mask is not None:
            config["mask"] = self._function_config(self.mask, "mask") if callable(self.mask) \
                else encode_argument(self.mask, _no_tensor)
        config["arguments"] = encode_argument(self.arguments, _no_tensor)
        return config

    def _function_config(self, fn, argument):
        name = getattr(fn, "__name__", None)
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Cannot save Lambda layer '{self.name}': its `{argument}` {fn!r} has no name to "
                             "restore it by (a Python lambda), and kgraph files hold no code. Define it with `def` "
                             "and pass it in `custom_objects` when loading.")
        registered = _registered_name(fn)
        if registered is not None:
            # Registered with register_keras_serializable: restored by that name from this process's registry (as
            # Keras does, in safe mode too); the file still holds no code.
            return {"module": "builtins", "class_name": "function", "config": registered,
                    "registered_name": "function"}
        if in_safe_mode():
            raise ValueError(
                f"Saving the config of Lambda layer '{self.name}' needs its `{argument}` ('{name}'), a Python "
                "function: kgraph files hold no code, only its name, and loading needs the function passed as "
                f"`custom_objects={{'{name}': {name}}}`. If you accept that, turn safe mode off with "
                "`kgraph.layers.core.lambda_layer.enable_unsafe_deserialization()` or save inside "
                "`with kgraph.layers.core.lambda_layer.SafeModeScope(False):`; otherwise write a Layer subclass with "
                "its own get_config().")
        return {"module": getattr(fn, "__module__", None), "class_name": "function", "config": name,
                "registered_name": "function"}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuild a Lambda; its functions come from ``custom_objects`` by name, never from the config."""
        config = dict(config)
        name = config.get("name", "lambda")
        for argument in ("function", "output_shape", "mask"):
            value = config.get(argument)
            if isinstance(value, dict) and value.get("class_name") in ("function", "__lambda__"):
                config[argument] = _find_function(name, argument, value, custom_objects or {})
            elif argument == "output_shape" and isinstance(value, list):
                config[argument] = tuple(value)
            elif argument == "mask" and value is not None:
                config[argument] = decode_argument(value, _no_tensor)
        config["arguments"] = decode_argument(config.get("arguments") or {}, _no_tensor)
        return cls(**config)


def _placeholders(shapes):
    """KerasTensors with the given shape, or the same structure of shapes."""
    if isinstance(shapes, tuple) and all(d is None or isinstance(d, int) for d in shapes):
        return KerasTensor(shapes)
    return [_placeholders(s) for s in shapes]


def _find_function(layer_name, argument, value, custom_objects):
    if value["class_name"] == "__lambda__":
        raise ValueError(f"Cannot load Lambda layer '{layer_name}': its `{argument}` is stored as Python bytecode, "
                         "and kgraph never runs code from a model file. Re-create the layer in code, or save it "
                         "with a named function and pass that function in `custom_objects`.")
    fn_name = value.get("config")
    found = custom_objects.get(fn_name)
    if not callable(found) and isinstance(fn_name, str) and ">" in fn_name:
        # Keras's form of a registered function ("package>name"): this process's registry, or custom_objects.
        from kgraph.saving.registration import get_registered_object
        found = get_registered_object(fn_name, custom_objects)
        found = found if callable(found) else custom_objects.get(fn_name.split(">", 1)[1])
    if not callable(found) and isinstance(fn_name, str) and ">" in fn_name:
        raise ValueError(f"Cannot load Lambda layer '{layer_name}': its `{argument}` is the function registered as "
                         f"'{fn_name}' (register_keras_serializable), which is not registered in this process. "
                         "Import the module that defines and registers it (`python -m export ... --import MODULE`), "
                         f"or pass it as `custom_objects={{'{fn_name.split('>', 1)[1]}': <the function>}}`.")
    if not callable(found):
        module = f" (defined in module '{value['module']}')" if value.get("module") else ""
        raise ValueError(f"Cannot load Lambda layer '{layer_name}': its `{argument}` is the Python function "
                         f"'{fn_name}'{module}, and kgraph never loads code from a model file. Pass the function "
                         f"when loading: `custom_objects={{'{fn_name}': {fn_name}}}`.")
    return found


def _registered_name(fn):
    """The ``package>name`` ``fn`` was registered under with ``register_keras_serializable``, or None."""
    from kgraph.saving.registration import _NAMES
    try:
        return _NAMES.get(fn)
    except TypeError:
        return None
