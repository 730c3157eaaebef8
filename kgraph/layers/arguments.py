"""Keras arguments of layers: checked by name, refused by name where kgraph does not implement them."""
from kgraph import regularizers


def serialize_regularizer(regularizer):
    """Config entry of an optional regularizer."""
    return regularizers.serialize(regularizer) if regularizer is not None else None


def reject_unsupported(layer, allowed=(None,), **arguments):
    """Raise, naming it, if a Keras argument kgraph does not implement has a value other than ``allowed`` (the
    values that leave Keras's computation unchanged; None by default)."""
    for name, value in arguments.items():
        if not any(value is a or (isinstance(value, (bool, str)) and value == a) for a in allowed):
            expected = " or ".join(f"{name}={a!r}" for a in allowed)
            raise ValueError(f"Layer '{layer.name}' ({type(layer).__name__}) does not support `{name}` in kgraph; "
                             f"expected {expected}. Received: {name}={value!r}")


def check_data_format(layer, data_format):
    """Return "channels_last"; kgraph's spatial layers only work on channels-last data."""
    if data_format not in (None, "channels_last"):
        raise ValueError(f"Layer '{layer.name}' ({type(layer).__name__}) supports data_format='channels_last' "
                         f"only. Received: data_format={data_format!r}")
    return "channels_last"


def check_padding(layer, padding, allowed):
    """The lower-cased padding, checked against ``allowed``."""
    value = str(padding).lower()
    if value not in allowed:
        raise ValueError(f"Layer '{layer.name}': the `padding` argument must be one of {allowed}. "
                         f"Received: padding={padding!r}")
    return value
