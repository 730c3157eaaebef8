"""Global numeric settings: the default float type and the fuzz factor."""
import numpy as np

_FLOATX = "float32"
_EPSILON = 1e-7


def floatx():
    """Return the default float type as a string, e.g. ``"float32"``."""
    return _FLOATX


def set_floatx(value):
    """Set the default float type (``"float16"``, ``"float32"`` or ``"float64"``)."""
    global _FLOATX
    if value not in ("float16", "float32", "float64"):
        raise ValueError(
            f"Unknown floatx type: {value!r}. Expected one of 'float16', 'float32', 'float64'."
        )
    _FLOATX = str(value)


def epsilon():
    """Return the fuzz factor used in numeric expressions."""
    return _EPSILON


def set_epsilon(value):
    global _EPSILON
    _EPSILON = float(value)


def standardize_dtype(dtype):
    """Return a dtype name string (``None`` means floatx; Keras's ``"string"`` is NumPy's ``"str"``)."""
    if dtype is None:
        return floatx()
    if dtype == "string":
        return "str"
    return np.dtype(dtype).name
