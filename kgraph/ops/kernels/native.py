"""NumPy's own native routines, callable from compiled kernels while they hold no GIL.

A recurrence split between two threads (``kernels.threads``) gives up the GIL
for each NumPy call of each step and takes it back after: the LSTM's forward
step made six such calls, its backward step two. Two Python threads doing
that measured 12 % slower per half than one half alone (4.30 against 3.84 ms
for 32 backward steps of 64 rows; two processes, which share no GIL, lost
nothing): a thread that wants the GIL back while the other holds it sleeps
until woken. A compiled loop that calls NumPy's routines itself keeps the GIL
out of the loop, and computes what NumPy's calls would, bit for bit, by
running the same machine code:

- ``gemm(dtype)``: the ``cblas_sgemm`` / ``cblas_dgemm`` of the OpenBLAS that
  NumPy's wheels bundle (its 64-bit-integer interface, symbols named
  ``scipy_cblas_sgemm64_`` or ``cblas_sgemm64_``) among the libraries that
  threadpoolctl lists, the function NumPy's ``matmul`` calls for C-ordered
  float32 and float64 matrices;
- ``tanh_loop(dtype)``: the strided inner loop of ``np.tanh`` for the dtype,
  as NumPy hands it out for this purpose (``ufunc._get_strided_loop``, NumPy
  1.24 and later; its capsule is kept here for the process's life). The loop is
  what ``np.tanh`` runs on a contiguous array; called directly, NumPy's check of
  the floating-point error flags afterwards (warnings under ``np.errstate``)
  does not happen, where ``tanh`` sets none for finite or infinite input.

Before either is used it must give NumPy's own results bit for bit on a set of
cases (shapes, strided rows, special values); where it does not, or where NumPy
uses another BLAS, lacks the loop API, or threadpoolctl is not installed,
callers keep their NumPy calls.
"""
import ctypes
import threading

import numpy as np

__all__ = ["gemm", "kernel_gemm", "tanh_loop"]

_lock = threading.Lock()
_found = {}  # (routine, dtype char) -> what the routine returns (NumPy keeps its BLAS and loops loaded for good)

# (rows, inner, columns) of the product's check, and whether A's and the output's rows lie in wider arrays.
_CHECKS = ((2, 3, 4, False), (9, 17, 33, True), (64, 128, 512, False), (64, 512, 128, True),
           (128, 128, 512, False), (37, 200, 70, True))
_CAPSULE = b"numpy_1.24_ufunc_call_info"


def _cached(routine, dtype, fused, find):
    char = np.dtype(dtype).char
    key = (routine, char)
    if key in _found:
        return _found[key]
    if char not in "fd":
        return None
    with _lock:
        if key not in _found:
            _found[key] = find(char, fused)
    return _found[key]


def gemm(dtype, fused):
    """The address of NumPy's BLAS ``?gemm`` for ``dtype`` (float32 or float64), for ``fused.gemm_rows``, or
    None (another dtype, another BLAS, no threadpoolctl, or products that differ from NumPy's)."""
    return _cached("gemm", dtype, fused, _find_gemm)


def kernel_gemm(fused, kernel, rows, dtype):
    """``gemm(dtype)`` for a recurrence's compiled steps, whose products take ``kernel`` on ``rows`` rows of
    states of ``dtype``; None where the steps call ``np.matmul`` instead: no compiled kernels (``fused`` None),
    one row, or a kernel BLAS would not take as it is (not C-ordered and aligned, or not of the states' dtype)."""
    if fused is None or rows < 2 or not isinstance(kernel, np.ndarray) or kernel.dtype != dtype:
        return None
    if not (kernel.flags.c_contiguous and kernel.flags.aligned):
        return None
    return gemm(dtype, fused)


def tanh_loop(dtype, fused):
    """``(loop, context, auxdata)`` addresses of ``np.tanh``'s strided loop for ``dtype`` (float32 or float64),
    for ``fused.ufunc_rows``, or None (another dtype, a NumPy without the loop API, a loop that needs the GIL, or
    results that differ from ``np.tanh``'s)."""
    return _cached("tanh", dtype, fused, _find_tanh)


def _libraries():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return []
    try:
        libraries = ThreadpoolController().select(internal_api="openblas").lib_controllers
    except Exception:  # a threadpoolctl that cannot inspect this process: NumPy's calls stay
        return []
    return sorted(libraries, key=lambda lib: "numpy" not in lib.filepath)  # NumPy's own copy first


def _find_gemm(char, fused):
    letter = "s" if char == "f" else "d"
    for library in _libraries():
        for name in (f"scipy_cblas_{letter}gemm64_", f"cblas_{letter}gemm64_"):
            try:
                address = ctypes.cast(library.dynlib[name], ctypes.c_void_p).value
            except (AttributeError, TypeError):  # no such symbol in this library
                continue
            if address and _gemm_agrees(address, np.dtype(char), fused):
                return address
    return None


def _gemm_agrees(address, dtype, fused):
    """Whether the function at ``address`` gives ``np.matmul``'s values bit for bit on ``_CHECKS``."""
    rng = np.random.default_rng(0)
    one, zero = dtype.type(1), dtype.type(0)
    for rows, inner, columns, strided in _CHECKS:
        pad = 3 if strided else 0
        a = rng.standard_normal((rows, inner + pad)).astype(dtype)[:, :inner]
        b = rng.standard_normal((inner, columns)).astype(dtype)
        out = np.zeros((rows, columns + pad), dtype=dtype)[:, :columns]
        fused.gemm_rows(address, a, b, out, one, zero)
        if not np.array_equal(out, np.matmul(a, b)):
            return False
    return True


_capsules = []  # the loops' capsules: NumPy ties the loops' data to them


def _find_tanh(char, fused):
    dtype = np.dtype(char)
    try:
        _, capsule = np.tanh._resolve_dtypes_and_context((dtype, dtype))
        np.tanh._get_strided_loop(capsule, fixed_strides=(dtype.itemsize, dtype.itemsize))
        pointer = ctypes.pythonapi["PyCapsule_GetPointer"]  # a function object of its own: the shared one stays as set
        pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        info = pointer(capsule, _CAPSULE)
    except (AttributeError, TypeError, ValueError):  # a NumPy without this API, or another capsule version
        return None
    # The capsule's struct: the loop, its context, its auxdata (pointers), then npy_bool requires_pyapi.
    loop, context, auxdata = (ctypes.c_void_p * 3).from_address(info)
    requires_pyapi = ctypes.c_ubyte.from_address(info + 3 * ctypes.sizeof(ctypes.c_void_p)).value
    if not loop or requires_pyapi:
        return None
    found = (loop, context or 0, auxdata or 0)
    if not _tanh_agrees(found, dtype, fused):
        return None
    _capsules.append(capsule)
    return found


def _tanh_agrees(found, dtype, fused):
    """Whether the loop gives ``np.tanh``'s values bit for bit, in place and not, special values included."""
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 20.0, -20.0, 9.0, 0.5], dtype=dtype)
    scratch = np.empty(5, dtype=np.int64)
    for size in (1, 7, 64, 1000, 4099):
        x = np.concatenate([special, (rng.standard_normal(size) * 4).astype(dtype)])
        out = np.full_like(x, np.nan)
        fused.ufunc_rows(found[0], found[1], found[2], x, out, scratch)
        inplace = x.copy()
        fused.ufunc_rows(found[0], found[1], found[2], inplace, inplace, scratch)
        expected = np.tanh(x)
        if not (np.array_equal(out, expected, equal_nan=True) and np.array_equal(inplace, expected, equal_nan=True)
                and np.array_equal(np.signbit(out), np.signbit(expected))):
            return False
    return True
