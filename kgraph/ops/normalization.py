"""Fused batch and layer normalization ops, named as in ``keras.ops``."""
import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.ops.operations import op
from kgraph.ops.reductions import _reduced_axes

__all__ = ["batch_normalization", "layer_normalization"]


def _channel_view(v, ndim, axis):
    if v is None:
        return None
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


@primitive(num_inputs=5)
def _batch_normalization(x, mean, variance, offset, scale, axis, epsilon):
    x = np.asarray(x)
    ax = axis % x.ndim
    others = tuple(i for i in range(x.ndim) if i != ax)
    inv = 1.0 / np.sqrt(variance + epsilon)
    factor = inv if scale is None else inv * scale
    centered = x - _channel_view(mean, x.ndim, ax)
    out = centered * _channel_view(factor, x.ndim, ax)
    if offset is not None:
        out += _channel_view(offset, x.ndim, ax)

    def vjp(g):
        g_centered = None

        def g_centered_sum():
            nonlocal g_centered
            if g_centered is None:
                g_centered = np.sum(g * centered, axis=others)
            return g_centered

        return (lambda: g * _channel_view(factor, x.ndim, ax),
                lambda: -np.sum(g, axis=others) * factor,
                lambda: g_centered_sum() * (-0.5 * factor * inv * inv),
                None if offset is None else (lambda: np.sum(g, axis=others)),
                None if scale is None else (lambda: g_centered_sum() * inv))

    return out, vjp


@op
def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset`` with per-channel 1-D statistics on ``axis``."""
    ndim = np.ndim(x)
    if not -ndim <= axis < ndim:
        raise ValueError(f"batch_normalization: axis {axis} is out of bounds for an input of rank {ndim}.")
    size = np.shape(x)[axis]
    for name, v in (("mean", mean), ("variance", variance), ("offset", offset), ("scale", scale)):
        if v is not None and np.shape(v) != (size,):
            raise ValueError(f"batch_normalization expects `{name}` of shape ({size},) (the size of axis {axis}). "
                             f"Received: {name}.shape={np.shape(v)}, x.shape={np.shape(x)}")
    return _batch_normalization(x, mean, variance, offset, scale, axis=axis, epsilon=float(epsilon))


@primitive(num_inputs=3)
def _layer_normalization(x, gamma, beta, axes, epsilon):
    x = np.asarray(x)
    mu = np.mean(x, axis=axes, keepdims=True)
    centered = x - mu
    inv = 1.0 / np.sqrt(np.mean(centered * centered, axis=axes, keepdims=True) + epsilon)
    normed = centered * inv
    bshape = tuple(d if i in axes else 1 for i, d in enumerate(x.shape))
    others = tuple(i for i in range(x.ndim) if i not in axes)
    out = normed if gamma is None else normed * gamma.reshape(bshape)
    if beta is not None:
        out = out + beta.reshape(bshape)

    def vjp(g):
        def d_x():
            gn = g if gamma is None else g * gamma.reshape(bshape)
            return inv * (gn - np.mean(gn, axis=axes, keepdims=True)
                          - normed * np.mean(gn * normed, axis=axes, keepdims=True))

        return (d_x,
                None if gamma is None else (lambda: np.sum(g * normed, axis=others).reshape(gamma.shape)),
                None if beta is None else (lambda: np.sum(g, axis=others).reshape(beta.shape)))

    return out, vjp


@op
def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=1e-3):
    """Normalize each example over ``axis`` (an int or a list), then scale by ``gamma`` and shift by ``beta``.

    ``gamma`` and ``beta`` have the sizes of the normalized axes, in
    increasing axis order (Keras's layout).
    """
    ndim = np.ndim(x)
    axes = _reduced_axes(axis, ndim)
    expected = tuple(np.shape(x)[a] for a in axes)
    for name, v in (("gamma", gamma), ("beta", beta)):
        if v is not None and int(np.prod(np.shape(v))) != int(np.prod(expected)):
            raise ValueError(f"layer_normalization expects `{name}` of shape {expected} (the normalized axes). "
                             f"Received: {name}.shape={np.shape(v)}, x.shape={np.shape(x)}")
    return _layer_normalization(x, gamma, beta, axes=axes, epsilon=float(epsilon))
