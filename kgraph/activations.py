"""Activation functions by Keras name, written with kgraph.ops."""
from kgraph import ops


def linear(x):
    return x


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return ops.relu(x)
    out = ops.where(x >= threshold, x, ops.multiply(negative_slope, ops.subtract(x, threshold)))
    return out if max_value is None else ops.minimum(out, max_value)


def sigmoid(x):
    return ops.sigmoid(x)


def tanh(x):
    return ops.tanh(x)


def softmax(x, axis=-1):
    return ops.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    return ops.log_softmax(x, axis=axis)


def gelu(x, approximate=False):
    return ops.gelu(x, approximate=approximate)


def elu(x, alpha=1.0):
    return ops.elu(x, alpha=alpha)


def selu(x):
    return ops.selu(x)


def softplus(x):
    return ops.softplus(x)


def softsign(x):
    return ops.softsign(x)


def silu(x):
    return ops.silu(x)


swish = silu


def leaky_relu(x, negative_slope=0.2):
    return ops.leaky_relu(x, negative_slope=negative_slope)


def hard_sigmoid(x):
    return ops.hard_sigmoid(x)


def exponential(x):
    return ops.exp(x)


def relu6(x):
    return ops.relu6(x)


def celu(x, alpha=1.0):
    return ops.celu(x, alpha=alpha)


def glu(x, axis=-1):
    return ops.glu(x, axis=axis)


def hard_shrink(x, threshold=0.5):
    return ops.hard_shrink(x, threshold=threshold)


def hard_silu(x):
    return ops.hard_silu(x)


hard_swish = hard_silu


def hard_tanh(x):
    return ops.hard_tanh(x)


def log_sigmoid(x):
    return ops.log_sigmoid(x)


def mish(x):
    """``x * tanh(softplus(x))``."""
    return ops.multiply(x, ops.tanh(ops.softplus(x)))


def soft_shrink(x, threshold=0.5):
    return ops.soft_shrink(x, threshold=threshold)


def sparse_plus(x):
    return ops.sparse_plus(x)


def sparse_sigmoid(x):
    return ops.sparse_sigmoid(x)


def sparsemax(x, axis=-1):
    return ops.sparsemax(x, axis=axis)


def squareplus(x, b=4):
    return ops.squareplus(x, b=b)


def tanh_shrink(x):
    return ops.tanh_shrink(x)


def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, ``default_value`` elsewhere."""
    return ops.threshold(x, threshold, default_value)


_BY_NAME = {f.__name__: f for f in (linear, relu, sigmoid, tanh, softmax, log_softmax, gelu, elu, selu,
                                    softplus, softsign, silu, leaky_relu, hard_sigmoid, exponential, relu6, celu,
                                    glu, hard_shrink, hard_silu, hard_tanh, log_sigmoid, mish, soft_shrink,
                                    sparse_plus, sparse_sigmoid, sparsemax, squareplus, tanh_shrink, threshold)}
# Keras's second names: saved under the first one.
_ALIASES = {"swish": silu, "hard_swish": hard_silu}
_BY_NAME.update(_ALIASES)


def get(identifier):
    """The activation function for a name, ``None`` (linear) or a callable."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(f"Unknown activation function: {identifier!r}. Valid names: {sorted(_BY_NAME)}")
        return fn
    if callable(identifier):
        return identifier
    if isinstance(identifier, dict):
        # A registered custom activation, as serialize() writes it (Keras's serialized-object form).
        from kgraph.saving.serialization_lib import deserialize_keras_object
        return get(deserialize_keras_object(identifier))
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r}")


def serialize(activation):
    """The Keras name of a built-in activation, or the serialized form of a registered one."""
    for name, fn in _BY_NAME.items():
        if fn is activation and name not in _ALIASES:
            return name
    name = getattr(activation, "__name__", None)
    if name in _BY_NAME:
        return _BY_NAME[name].__name__
    from kgraph.saving.registration import get_registered_name
    if name is not None and get_registered_name(activation) != name:
        from kgraph.saving.serialization_lib import serialize_keras_object
        return serialize_keras_object(activation)
    raise ValueError(f"Cannot serialize activation {activation!r}: only built-in activations and functions "
                     "registered with @kgraph.saving.register_keras_serializable() can be saved.")


def deserialize(config, custom_objects=None):
    """The activation function ``config`` names: a name (``"mish"``), or a registered function's serialized form.

    custom_objects: ``{name: function}`` for a user's functions, looked up first.
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        fn = custom_objects.get(config) or _BY_NAME.get(config)
        if fn is None:
            from kgraph.saving.serialization_lib import deserialize_keras_object
            fn = deserialize_keras_object(config, custom_objects=custom_objects)
        if not callable(fn):
            raise ValueError(f"Unknown activation function: {config!r}. Valid names: {sorted(_BY_NAME)}, or a "
                             "function registered with @kgraph.saving.register_keras_serializable().")
        return fn
    if isinstance(config, dict):
        from kgraph.saving.serialization_lib import deserialize_keras_object
        fn = deserialize_keras_object(config, custom_objects=custom_objects, module_objects=dict(_BY_NAME))
        if callable(fn):
            return fn
    raise ValueError(f"Could not interpret serialized activation function: {config!r}")
