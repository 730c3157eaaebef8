"""``keras.ops.rearrange``: einops-style axis patterns (``"b (h w) c -> b h w c"``) as one reshape-transpose-reshape."""
import math
import re

from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import transpose as _transpose

__all__ = ["rearrange"]

_TOKEN = re.compile(r"\(|\)|[A-Za-z_][A-Za-z0-9_]*|\S")


def _groups(side, pattern):
    """The axis groups of one side of ``pattern``: a list of lists of axis names."""
    groups, current = [], None
    for token in _TOKEN.findall(side):
        if token == "(":
            if current is not None:
                raise ValueError(f"rearrange patterns do not nest parentheses. Received: pattern={pattern!r}")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError(f"Unbalanced parentheses in the rearrange pattern. Received: pattern={pattern!r}")
            groups.append(current)
            current = None
        elif token.isidentifier():
            (groups if current is None else current).append(token if current is not None else [token])
        else:
            raise ValueError(f"rearrange patterns hold axis names and parentheses only. Received: pattern={pattern!r}")
    if current is not None:
        raise ValueError(f"Unbalanced parentheses in the rearrange pattern. Received: pattern={pattern!r}")
    return groups


@op
def rearrange(tensor, pattern, **axes_lengths):
    """Split, merge and permute axes as ``pattern`` says; ``axes_lengths`` give the sizes a split cannot infer."""
    left, arrow, right = pattern.partition("->")
    if not arrow:
        raise ValueError(f"A rearrange pattern has the form 'input axes -> output axes'. Received: pattern={pattern!r}")
    inputs, outputs = _groups(left, pattern), _groups(right, pattern)
    names_in = [n for g in inputs for n in g]
    names_out = [n for g in outputs for n in g]
    if sorted(names_in) != sorted(names_out) or len(set(names_in)) != len(names_in):
        raise ValueError(f"Both sides of a rearrange pattern name each axis once. Received: pattern={pattern!r}")
    shape = _shape(tensor)
    if len(inputs) != len(shape):
        raise ValueError(f"The pattern's input has {len(inputs)} axes; the tensor has {len(shape)}. "
                         f"Received: pattern={pattern!r}, tensor.shape={shape}")
    sizes = dict(axes_lengths)
    for group, size in zip(inputs, shape):
        unknown = [n for n in group if n not in sizes]
        if len(unknown) == 1:
            known = math.prod(sizes[n] for n in group if n in sizes)
            sizes[unknown[0]] = None if size is None else size // known
        elif len(unknown) > 1:
            raise ValueError(f"rearrange cannot split an axis into {unknown} without their lengths. "
                             f"Received: pattern={pattern!r}")

    def target(groups):
        """A reshape target: each group's size, -1 for the one holding an unknown (batch) axis."""
        return [-1 if any(sizes[n] is None for n in g) else math.prod(sizes[n] for n in g) for g in groups]

    x = _reshape(tensor, target([[n] for n in names_in]))
    order = [names_in.index(n) for n in names_out]
    if order != sorted(order):
        x = _transpose(x, order)
    return _reshape(x, target(outputs))
