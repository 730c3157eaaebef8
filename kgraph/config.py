"""``keras.config``: the float type, epsilon, image data format, backend name, safe mode, interactive logging,
the debugging caps on ``fit``'s epochs and steps, and Keras's switches for flash attention and traceback
filtering."""
import os

from kgraph.backend import epsilon, floatx, set_epsilon, set_floatx  # noqa: F401
from kgraph.dtype_policies import dtype_policy, set_dtype_policy  # noqa: F401
from kgraph.layers.core.lambda_layer import SafeModeScope, enable_unsafe_deserialization  # noqa: F401
from kgraph.utils.io_utils import (  # noqa: F401
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)


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

_STATE = {"flash_attention": None, "traceback_filtering": True,
          "max_epochs": None, "max_steps_per_epoch": None}


def _env_limit(name):
    value = os.environ.get(name)
    return int(value) if value else None


_STATE["max_epochs"] = _env_limit("KERAS_MAX_EPOCHS")
_STATE["max_steps_per_epoch"] = _env_limit("KERAS_MAX_STEPS_PER_EPOCH")


def set_backend(backend):
    """kgraph computes with NumPy only: ``"numpy"`` is accepted (nothing changes), any other backend refused."""
    if backend != "numpy":
        raise ValueError(f"kgraph computes every op with NumPy and cannot switch to the {backend!r} backend "
                         "(Keras's set_backend reloads Keras on JAX, TensorFlow or PyTorch). Received: "
                         f"backend={backend!r}")


def enable_flash_attention():
    """Let attention use flash attention where the inputs allow it (Keras's default, ``None``: automatic).

    kgraph computes attention with one NumPy formula whatever this says, so the values do not change.
    """
    _STATE["flash_attention"] = None


def disable_flash_attention():
    """Keep attention off flash attention (``False``); in kgraph the values are the same either way."""
    _STATE["flash_attention"] = False


def is_flash_attention_enabled():
    """``None`` (automatic, the default and after ``enable_flash_attention()``) or ``False`` once disabled."""
    return _STATE["flash_attention"]


def enable_traceback_filtering():
    """Keras's switch for trimming its own frames from tracebacks; kgraph's tracebacks are always shown whole."""
    _STATE["traceback_filtering"] = True


def disable_traceback_filtering():
    """Turn Keras's traceback filtering off (kgraph's tracebacks are always shown whole)."""
    _STATE["traceback_filtering"] = False


def is_traceback_filtering_enabled():
    """The traceback-filtering switch: True unless ``disable_traceback_filtering()`` was called."""
    return _STATE["traceback_filtering"]


def is_nnx_enabled():
    """Always False: Flax NNX is a JAX feature and kgraph runs on NumPy."""
    return False


def _checked_limit(value, name):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"`{name}` must be a positive integer or None. Received: {name}={value!r}")
    return value


def set_max_epochs(max_epochs):
    """Cap the epochs of every ``fit`` (``None``: no cap); also read from ``KERAS_MAX_EPOCHS``."""
    _STATE["max_epochs"] = _checked_limit(max_epochs, "max_epochs")


def set_max_steps_per_epoch(max_steps_per_epoch):
    """Cap the steps of each epoch of ``fit`` and of ``evaluate`` / ``predict`` (``None``: no cap); also read from
    ``KERAS_MAX_STEPS_PER_EPOCH``."""
    _STATE["max_steps_per_epoch"] = _checked_limit(max_steps_per_epoch, "max_steps_per_epoch")


def max_epochs():
    """The epoch cap of ``fit``, or None."""
    return _STATE["max_epochs"]


def max_steps_per_epoch():
    """The step cap of each epoch, or None."""
    return _STATE["max_steps_per_epoch"]
