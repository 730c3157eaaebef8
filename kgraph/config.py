"""``keras.config``: the float type, epsilon, image data format, backend name and safe mode."""
from kgraph.backend import epsilon, floatx, set_epsilon, set_floatx  # noqa: F401
from kgraph.dtype_policies import dtype_policy, set_dtype_policy  # noqa: F401
from kgraph.layers.core.lambda_layer import SafeModeScope, enable_unsafe_deserialization  # noqa: F401


def backend():
    """The name of the engine computing kgraph's ops: NumPy."""
    return "numpy"


def image_data_format():
    """kgraph's layers take channels-last images (``"channels_last"``), Keras's default."""
    return "channels_last"


def set_image_data_format(data_format):
    """Only ``"channels_last"`` is kgraph's native format; layers also take ``data_format`` one by one."""
    if data_format != "channels_last":
        raise ValueError("kgraph computes images channels-last; set `data_format` on the layers that support "
                         f"channels_first instead. Received: data_format={data_format!r}")
