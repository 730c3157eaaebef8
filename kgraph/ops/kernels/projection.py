"""The input bias of a recurrence, added by its steps instead of by a pass over the input projection.

A recurrent layer's input projection ``x @ kernel + bias`` covers every
timestep; the recurrence reads each step's rows of it once anyway, so its
compiled steps add the bias there, in the same float operations as a projection
that held it (``(z + (p + b))``). Where a step cannot (NumPy's loops), the bias
is added to the projection first with ``with_bias``.
"""
import numpy as np

__all__ = ["bias_gradient", "with_bias"]


def with_bias(projection, bias):
    """``projection`` plus ``bias`` in a new array of the projection's dtype and memory order, the values of the
    input projection's own bias add."""
    out = np.array(projection, order="K")
    out += bias
    return out


def bias_gradient(d_projection):
    """The bias's cotangent: ``d_projection`` summed over batch and time, as the time-major input projection's
    VJP sums it (the same values as when the projection held the bias)."""
    return d_projection.swapaxes(0, 1).sum(axis=(0, 1))
