"""Converters of ``keras.ops.linalg``: determinants (ONNX Det) and norms; ONNX has no solvers or decompositions."""
from __future__ import annotations

from typing import TYPE_CHECKING

from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

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
def convert_det(ctx: ConversionContext) -> ConverterResult:
    """Det of each matrix."""
    return ctx.op("Det", [ctx.input(0, dtype=ctx.output_dtype())])
