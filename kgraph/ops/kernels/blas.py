"""NumPy's own BLAS product, callable from compiled kernels while they hold no GIL.

A recurrence split between two threads (``kernels.threads``) gives up the GIL
for each NumPy call of each step and takes it back after: the LSTM's forward
step makes six such calls, its backward step two. Two Python threads doing
that measured 12 % slower per half than one half alone (4.30 against 3.84 ms
for 32 backward steps of 64 rows; two processes, which share no GIL, lost
nothing): a thread that wants the GIL back while the other holds it sleeps
until woken. A compiled loop that calls the step's matrix product itself keeps
the GIL out of the loop.

``gemm(dtype)`` finds the ``cblas_sgemm`` / ``cblas_dgemm`` of the OpenBLAS
that NumPy's wheels bundle (its 64-bit-integer interface, symbols named
``scipy_cblas_sgemm64_`` or ``cblas_sgemm64_``) among the libraries that
threadpoolctl lists, the function NumPy's ``matmul`` calls for C-ordered
float32 and float64 matrices. Before it is used, it must give NumPy's products
bit for bit on a set of shapes, strided rows included; where it does not, or
where NumPy uses another BLAS (or threadpoolctl is not installed), callers keep
their NumPy calls.
"""
import ctypes
import threading

import numpy as np

__all__ = ["gemm"]

_lock = threading.Lock()
_found = {}  # dtype char -> the function's address, or None (NumPy keeps its BLAS loaded for good)

# (rows, inner, columns) of the check, and whether A's and the output's rows lie in wider arrays.
_CHECKS = ((2, 3, 4, False), (9, 17, 33, True), (64, 128, 512, False), (64, 512, 128, True),
           (128, 128, 512, False), (37, 200, 70, True))


def gemm(dtype, fused):
    """The address of NumPy's BLAS ``?gemm`` for ``dtype`` (float32 or float64), for ``fused.gemm_rows``, or
    None (another dtype, another BLAS, no threadpoolctl, or products that differ from NumPy's)."""
    char = np.dtype(dtype).char
    if char in _found:
        return _found[char]
    if char not in "fd":
        return None
    with _lock:
        if char not in _found:
            _found[char] = _find(char, fused)
    return _found[char]


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


def _find(char, fused):
    letter = "s" if char == "f" else "d"
    for library in _libraries():
        for name in (f"scipy_cblas_{letter}gemm64_", f"cblas_{letter}gemm64_"):
            try:
                address = ctypes.cast(library.dynlib[name], ctypes.c_void_p).value
            except (AttributeError, TypeError):  # no such symbol in this library
                continue
            if address and _agrees(address, np.dtype(char), fused):
                return address
    return None


def _agrees(address, dtype, fused):
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
