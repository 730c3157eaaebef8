"""Converters of ``keras.ops.linalg``: determinants (ONNX Det) and norms; ONNX has no solvers or decompositions."""
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable

register_composites(["norm"])

_NO_ONNX = "ONNX has no {} (its only matrix function is Det)"
for _name, _what in {"inv": "matrix inverse", "solve": "linear solver", "solve_triangular": "triangular solver",
                     "cholesky": "Cholesky factorization", "cholesky_inverse": "matrix inverse",
                     "eigh": "eigendecomposition", "eig": "eigendecomposition", "qr": "QR factorization",
                     "svd": "singular value decomposition", "lstsq": "least-squares solver",
                     "pinv": "pseudo-inverse (an SVD)", "matrix_rank": "rank (an SVD)",
                     "lu_factor": "LU factorization"}.items():
    unexportable(_name, _NO_ONNX.format(_what))
unexportable("jvp", "it differentiates a Python function at run time; ONNX graphs carry values, not derivatives")


@op_converter("det", opset=13)
def convert_det(ctx):
    """Det of each matrix."""
    return ctx.op("Det", [ctx.input(0, dtype=ctx.output_dtype())])
