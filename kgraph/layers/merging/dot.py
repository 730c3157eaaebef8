"""Dot: the batched dot product of two inputs along one axis of each (Keras's ``batch_dot``)."""
import string

import numpy as np

from kgraph import ops
from kgraph.layers.layer import Layer


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class Dot(Layer):
    """Contracts ``inputs[0]`` axis ``axes[0]`` with ``inputs[1]`` axis ``axes[1]``, per sample.

    The output has the remaining axes of the first input, then those of the
    second (a rank-1 result becomes ``(batch, 1)``). ``normalize=True`` first
    scales both inputs to unit L2 norm along the dot axes (cosine proximity).
    """

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not _is_int(axes):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(f"Invalid type for argument `axes`: it should be a list or an int. Received: "
                                f"axes={axes}")
            if len(axes) != 2:
                raise ValueError(f"Invalid format for argument `axes`: it should contain two elements. Received: "
                                 f"axes={axes}")
            if not _is_int(axes[0]) or not _is_int(axes[1]):
                raise ValueError(f"Invalid format for argument `axes`: list elements should be integers. Received: "
                                 f"axes={axes}")
        self.axes = int(axes) if _is_int(axes) else [int(a) for a in axes]
        self.normalize = bool(normalize)
        self.supports_masking = True

    def _axes(self, shapes):
        if not isinstance(shapes, (list, tuple)) or len(shapes) != 2 or \
                not all(isinstance(s, (list, tuple)) for s in shapes):
            raise ValueError(f"A `Dot` layer should be called on a list of 2 inputs. Received: input_shape={shapes}")
        pair = [self.axes, self.axes] if _is_int(self.axes) else self.axes
        ranks = [len(s) for s in shapes]
        if min(ranks) < 2:
            raise ValueError(f"Cannot do batch_dot on inputs with rank < 2. Received inputs with shapes "
                             f"{tuple(shapes[0])} and {tuple(shapes[1])}.")
        axes = []
        for axis, rank in zip(pair, ranks):
            if not -rank <= axis < rank:
                raise ValueError(f"Layer '{self.name}': axis {axis} is out of bounds for an input of rank {rank}. "
                                 f"Received: axes={self.axes}")
            axes.append(axis % rank)
        if 0 in axes:
            raise ValueError("Cannot perform batch_dot over axis 0. If your inputs are not batched, add a dummy "
                             "batch dimension to your inputs using keras.ops.expand_dims(x, 0)")
        d1, d2 = shapes[0][axes[0]], shapes[1][axes[1]]
        if d1 is not None and d2 is not None and d1 != d2:
            raise ValueError(f"Incompatible input shapes: axis values {d1} (at axis {axes[0]}) != {d2} (at axis "
                             f"{axes[1]}). Full input shapes: {tuple(shapes[0])}, {tuple(shapes[1])}")
        return axes

    def build(self, input_shape):
        self._axes(input_shape)
        self.built = True

    def call(self, inputs):
        x1, x2 = inputs
        shapes = [tuple(x1.shape), tuple(x2.shape)]
        a1, a2 = self._axes(shapes)
        if self.normalize:
            x1, x2 = _unit_norm(x1, a1), _unit_norm(x2, a2)
        equation = _equation(len(shapes[0]), len(shapes[1]), a1, a2)
        out = ops.einsum(equation, x1, x2)
        return ops.expand_dims(out, -1) if len(equation.split("->")[1]) == 1 else out

    def compute_output_shape(self, input_shape):
        a1, a2 = self._axes(input_shape)
        first = [d for i, d in enumerate(input_shape[0]) if i != a1]
        second = [d for i, d in enumerate(input_shape[1]) if i not in (0, a2)]
        shape = first + second
        return tuple(shape + [1] if len(shape) == 1 else shape)

    def compute_mask(self, inputs, previous_mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update({"axes": self.axes, "normalize": self.normalize})
        return config


def _equation(rank1, rank2, axis1, axis2):
    """The einsum equation of a batched dot of a rank-``rank1`` and a rank-``rank2`` tensor."""
    letters = iter(string.ascii_lowercase[2:])
    first = ["a"] + [("b" if i == axis1 else next(letters)) for i in range(1, rank1)]
    second = ["a"] + [("b" if i == axis2 else next(letters)) for i in range(1, rank2)]
    output = [c for c in first if c != "b"] + [c for c in second[1:] if c != "b"]
    return f"{''.join(first)},{''.join(second)}->{''.join(output)}"


def _unit_norm(x, axis):
    """``x / max(||x||, 1e-7)`` along ``axis``, Keras's ``normalize``."""
    return ops.multiply(x, ops.rsqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), 1e-14)))


def dot(inputs, axes=-1, **kwargs):
    """Functional interface to the ``Dot`` layer."""
    return Dot(axes=axes, **kwargs)(inputs)
