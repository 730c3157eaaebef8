"""How the compiled kernels are compiled (imported only by the numba kernel modules)."""
import numba

__all__ = ["compile_kernel"]


def compile_kernel(function=None, *, fused_multiply_add=False):
    """``function`` compiled by numba: GIL released, NumPy's division semantics, machine code cached on disk.

    ``fused_multiply_add``: a product added to a sum may round once, as one fused multiply-add where the machine
    has one (LLVM's ``contract`` flag, nothing else of ``fastmath``): for kernels that stand for a BLAS product,
    which does the same; the elementwise kernels that stand for NumPy's operations leave it off. As a decorator:
    ``@compile_kernel`` or ``@compile_kernel(fused_multiply_add=True)``.
    """
    if function is None:
        return lambda f: compile_kernel(f, fused_multiply_add=fused_multiply_add)
    options = {"nogil": True, "error_model": "numpy"}
    if fused_multiply_add:
        options["fastmath"] = {"contract"}
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError:  # no writable place for numba's cache: compile in each process
        return numba.njit(**options)(function)
