"""Compiled kernels' calls into NumPy's own native routines (``kernels.native`` finds and checks them): its BLAS
``?gemm`` and a ufunc's strided loop, called by address from numba code that holds no GIL. Imported only through
``kernels.compiled`` (``kernels.fused`` re-exports them), which checks for numba."""
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from kgraph.ops.kernels.fused_tanh import tanh_rows
from kgraph.ops.kernels.jit import compile_kernel

__all__ = ["gemm_rows", "tanh_into", "ufunc_rows"]

_compile = compile_kernel


@intrinsic
def _call_gemm(typingctx, address, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """Call the ``cblas_?gemm`` at ``address`` (an integer: a typed argument would cost the kernel's caller a
    microsecond of dispatch per call) as ``cblas_?gemm(RowMajor, NoTrans, NoTrans, m, n, k, alpha, a, lda, b,
    ldb, beta, c, ldc)`` with 64-bit integers; ``a``, ``b``, ``c`` are data addresses, ``alpha`` and ``beta`` of
    the matrices' float type."""
    if not isinstance(alpha, types.Float) or beta != alpha:
        return None
    signature = types.void(address, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def codegen(context, builder, signature, args):
        i32, i64, pointer = ir.IntType(32), ir.IntType(64), ir.IntType(8).as_pointer()
        scalar = context.get_value_type(alpha)
        function_type = ir.FunctionType(ir.VoidType(), [i32] * 3 + [i64] * 3 + [scalar, pointer, i64, pointer, i64,
                                                                                 scalar, pointer, i64])
        values = [context.cast(builder, value, kind, types.int64) if isinstance(kind, types.Integer) else value
                  for value, kind in zip(args, signature.args)]
        (address_, m_, n_, k_, alpha_, a_, lda_, b_, ldb_, beta_, c_, ldc_) = values
        function = builder.inttoptr(address_, function_type.as_pointer())
        row_major, no_transpose = ir.Constant(i32, 101), ir.Constant(i32, 111)
        builder.call(function, [row_major, no_transpose, no_transpose, m_, n_, k_, alpha_,
                                builder.inttoptr(a_, pointer), lda_, builder.inttoptr(b_, pointer), ldb_, beta_,
                                builder.inttoptr(c_, pointer), ldc_])
        return context.get_dummy_value()
    return signature, codegen


@_compile
def gemm_rows(gemm, a, b, out, one, zero):
    """``out = a @ b`` by the BLAS ``cblas_?gemm`` at address ``gemm`` (NumPy's, ``kernels.native``), called as
    NumPy's ``matmul`` calls it: row-major, the rows of ``a``, ``b`` and ``out`` of unit stride (their leading
    dimensions the row strides), ``alpha`` one and ``beta`` zero."""
    size = a.itemsize
    _call_gemm(gemm, a.shape[0], b.shape[1], a.shape[1], one, a.ctypes.data, a.strides[0] // size,
               b.ctypes.data, b.strides[0] // size, zero, out.ctypes.data, out.strides[0] // size)


@intrinsic
def _call_loop(typingctx, loop, context, data, dimensions, strides, auxdata):
    """Call the NumPy strided loop at ``loop``: ``loop(context, data, dimensions, strides, auxdata)``, every
    argument an address (an integer); returns the loop's status (0 on success)."""
    signature = types.int32(loop, context, data, dimensions, strides, auxdata)

    def codegen(ctx, builder, signature, args):
        pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.IntType(32), [pointer] * 5)
        values = [ctx.cast(builder, value, kind, types.int64) for value, kind in zip(args, signature.args)]
        function = builder.inttoptr(values[0], function_type.as_pointer())
        return builder.call(function, [builder.inttoptr(value, pointer) for value in values[1:]])
    return signature, codegen


@_compile
def ufunc_rows(loop, context, auxdata, a, out, scratch):
    """``out = f(a)`` by the strided loop of a one-input ufunc ``f`` (``kernels.native``): one call over all of
    C-contiguous ``a`` and ``out`` (one size; ``out`` may be ``a``), as NumPy calls it on contiguous arrays.
    ``scratch``: five int64 for the call's pointers, size and strides. Returns the loop's status."""
    scratch[0] = a.ctypes.data
    scratch[1] = out.ctypes.data
    scratch[2] = a.size
    scratch[3] = a.itemsize
    scratch[4] = out.itemsize
    base = scratch.ctypes.data
    return _call_loop(loop, context, base, base + 16, base + 24, auxdata)


@_compile
def tanh_into(loop, loop_context, loop_auxdata, a, out, scratch):
    """``out = tanh(a)`` (rows of unit stride, C-contiguous): ``fused_tanh.tanh_rows`` where ``loop`` is 0 (float32),
    else ``np.tanh``'s own loop by ``ufunc_rows`` (``scratch`` as there)."""
    if loop == 0:
        tanh_rows(a, out)
    else:
        ufunc_rows(loop, loop_context, loop_auxdata, a, out, scratch)
