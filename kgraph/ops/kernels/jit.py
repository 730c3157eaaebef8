"""How the compiled kernels are compiled (imported only by the numba kernel modules)."""
import numba

__all__ = ["compile_kernel"]


def compile_kernel(function):
    """``function`` compiled by numba: GIL released, NumPy's division semantics, machine code cached on disk."""
    options = {"nogil": True, "error_model": "numpy"}
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError:  # no writable place for numba's cache: compile in each process
        return numba.njit(**options)(function)
