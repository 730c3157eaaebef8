"""Converters of ``kgraph.ops.linalg``: determinants (ONNX Det) and norms; ONNX has no solvers or decompositions."""
from export.converters.ops import UNEXPORTABLE
from export.converters.ops_extra import register_composites
from export.registry import op_converter

register_composites(["logdet", "norm"])

_NO_ONNX = "ONNX has no {} (its only matrix function is Det)"
UNEXPORTABLE.update({
    "inv": _NO_ONNX.format("matrix inverse"), "solve": _NO_ONNX.format("linear solver"),
    "solve_triangular": _NO_ONNX.format("triangular solver"), "cholesky": _NO_ONNX.format("Cholesky factorization"),
    "cholesky_inverse": _NO_ONNX.format("matrix inverse"), "eigh": _NO_ONNX.format("eigendecomposition"),
    "eig": _NO_ONNX.format("eigendecomposition"), "qr": _NO_ONNX.format("QR factorization"),
    "svd": _NO_ONNX.format("singular value decomposition"), "lstsq": _NO_ONNX.format("least-squares solver"),
    "pinv": _NO_ONNX.format("pseudo-inverse (an SVD)"), "matrix_rank": _NO_ONNX.format("rank (an SVD)"),
    "lu_factor": _NO_ONNX.format("LU factorization"),
    "jvp": "it differentiates a Python function at run time; ONNX graphs carry values, not derivatives",
})


@op_converter("det", opset=13)
def convert_det(ctx):
    """Det of each matrix."""
    return ctx.op("Det", [ctx.input(0, dtype=ctx.output_dtype())])


@op_converter("slogdet", opset=13)
def convert_slogdet(ctx):
    """Sign and log of the absolute value of Det (it overflows where NumPy's LU-based form would not)."""
    d = ctx.op("Det", [ctx.input(0, dtype=ctx.output_dtype())])
    return [ctx.op("Sign", [d]), ctx.op("Log", [ctx.op("Abs", [d])])]
