"""Max and average pooling over sliding windows of channels-last arrays, named as in ``keras.ops``.

Each is one fused primitive: the forward pass reduces the windows with one
vectorized op per window tap; the VJP routes the cotangent back with one
vectorized op per tap. Max pooling whose windows do not overlap (the usual
``pool_size == strides``) reduces one spatial axis at a time instead, and
remembers where each tap won, so its VJP needs no comparison pass.
"""
import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.ops.kernels.windows import (
    check_data_format,
    conv_output_length,
    conv_pads,
    normalize_tuple,
    pad,
    tap_slices,
    unpad,
)
from kgraph.ops.operations import op

__all__ = ["average_pool", "max_pool"]


# The VJP of overlapping max pooling runs over blocks of images of about this many input bytes, so
# that its per-tap passes over the block stay in cache.
_BLOCK_BYTES = 1 << 20


def _geometry(x, pool_size, strides, pads):
    spatial = x.shape[1:-1]
    out_spatial = tuple(conv_output_length(n, k, s, 1, p) for n, k, s, p in zip(spatial, pool_size, strides, pads))
    regions = [region for _, region in tap_slices(pool_size, strides, (1,) * len(pool_size), out_spatial)]
    # Windows that do not overlap write disjoint cells in the VJP: no accumulation needed.
    disjoint = all(k <= s for k, s in zip(pool_size, strides))
    return spatial, out_spatial, regions, disjoint


@primitive(num_inputs=1)
def _max_pool(x, pool_size, strides, pads):
    x = np.asarray(x)
    spatial, out_spatial, regions, disjoint = _geometry(x, pool_size, strides, pads)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = pad(x, pads, lowest)
    if disjoint:
        return _max_pool_disjoint(xp, pool_size, strides, out_spatial, pads, spatial)
    out = xp[regions[0]].copy()
    for region in regions[1:]:
        np.maximum(out, xp[region], out=out)

    def vjp(g):
        dxp = np.zeros(xp.shape, dtype=g.dtype)
        per_block = max(1, _BLOCK_BYTES // max(1, xp[:1].nbytes))
        for i0 in range(0, xp.shape[0], per_block):
            i1 = i0 + per_block
            _route_to_max(xp[i0:i1], out[i0:i1], g[i0:i1], dxp[i0:i1], regions)
        return unpad(dxp, pads, spatial)

    return out, vjp


def _split_axis(a, axis, count, step, taps):
    """View ``(..., count, taps, ...)`` of spatial ``axis``: ``count`` windows ``step`` apart, ``taps`` cells each."""
    st = a.strides
    return np.lib.stride_tricks.as_strided(a, shape=a.shape[:1 + axis] + (count, taps) + a.shape[2 + axis:],
                                           strides=st[:1 + axis] + (st[1 + axis] * step, st[1 + axis]) + st[2 + axis:])


def _max_pool_disjoint(xp, pool_size, strides, out_spatial, pads, spatial):
    """Max pooling whose windows do not overlap, one spatial axis at a time (the last axis first).

    Reducing axis by axis, each time keeping the first maximum along the axis,
    picks the same cell as the first maximum of the whole window in row-major
    order. Each step records, per kept tap, where it beat the running maximum;
    the VJP walks the steps back with two vectorized ops per tap.
    """
    steps = []
    cur = xp
    for axis in reversed(range(len(pool_size))):
        k, s, o = pool_size[axis], strides[axis], out_spatial[axis]
        view = _split_axis(cur, axis, o, s, k)
        lead = (slice(None),) * (2 + axis)
        best = view[lead + (0,)]
        beats = []
        for t in range(1, k):
            tap = view[lead + (t,)]
            beats.append(np.greater(tap, best))
            best = np.maximum(best, tap, out=None if t == 1 else best)
        if k == 1:
            best = best.copy()
        steps.append((axis, cur.shape, beats))
        cur = best
    out = cur

    def vjp(g):
        g = np.asarray(g)
        for axis, shape, beats in reversed(steps):
            k, s, o = pool_size[axis], strides[axis], out_spatial[axis]
            # Cells no window reads (gaps between windows, the cropped tail) get zeros.
            tiled = k == s and o * s == shape[1 + axis]
            dcur = (np.empty if tiled else np.zeros)(shape, dtype=g.dtype)
            view = _split_axis(dcur, axis, o, s, k)
            lead = (slice(None),) * (2 + axis)
            rest = g
            # The last tap that beat the running maximum holds it: walk the taps backwards.
            for t in range(k - 1, 0, -1):
                share = view[lead + (t,)]
                np.multiply(rest, beats[t - 1], out=share)
                rest = np.subtract(rest, share, out=view[lead + (0,)] if t == 1 else None)
            if k == 1:
                view[lead + (0,)] = rest
            g = dcur
        return unpad(g, pads, spatial)

    return out, vjp


def _route_to_max(xp, out, g, dxp, regions):
    """Add each window's cotangent ``g`` to the input cell holding its maximum (one block of images)."""
    taken = np.zeros(out.shape, dtype=bool)
    hit = np.empty(out.shape, dtype=bool)
    routed = np.empty(out.shape, dtype=g.dtype)
    last = len(regions) - 1
    for i, region in enumerate(regions):
        # Only the first maximum of a window gets the gradient, like TensorFlow and PyTorch:
        # a tap wins where it equals the maximum and no earlier tap has (hit > taken).
        np.equal(xp[region], out, out=hit)
        if i:
            np.greater(hit, taken, out=hit)
        if i < last:
            taken |= hit
        np.multiply(g, hit, out=routed)
        dxp[region] += routed


@primitive(num_inputs=1)
def _average_pool(x, pool_size, strides, pads):
    x = np.asarray(x)
    spatial, _, regions, disjoint = _geometry(x, pool_size, strides, pads)
    xp = pad(x, pads)
    out = xp[regions[0]].copy()
    for region in regions[1:]:
        out += xp[region]
    if any(b or a for b, a in pads):
        # Padded cells are not averaged in: divide by the count of real cells of each window.
        cells = pad(np.ones((1,) + spatial + (1,), dtype=out.dtype), pads)
        count = cells[regions[0]].copy()
        for region in regions[1:]:
            count += cells[region]
    else:
        count = np.asarray(np.prod(pool_size), dtype=out.dtype)
    out /= count

    def vjp(g):
        share = g / count
        dxp = np.zeros(xp.shape, dtype=g.dtype)
        for region in regions:
            if disjoint:
                dxp[region] = share
            else:
                dxp[region] += share
        return unpad(dxp, pads, spatial)

    return out, vjp


def _pool_args(inputs, pool_size, strides, padding, data_format, op):
    check_data_format(data_format)
    x_shape = np.shape(inputs)
    r = len(x_shape) - 2
    if r < 1:
        raise ValueError(f"{op} expects inputs of shape (batch, *spatial, channels). Received: inputs.shape={x_shape}")
    pool_size = normalize_tuple(pool_size, r, "pool_size")
    strides = pool_size if strides is None else normalize_tuple(strides, r, "strides")
    if str(padding).lower() not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. Received: padding={padding!r}")
    pads = conv_pads(x_shape[1:-1], pool_size, strides, padding, (1,) * r)
    if any(conv_output_length(n, k, s, 1, p) < 1 for n, k, s, p in zip(x_shape[1:-1], pool_size, strides, pads)):
        raise ValueError(f"{op}: the pooling window {pool_size} is larger than the input spatial shape "
                         f"{x_shape[1:-1]}.")
    return pool_size, strides, pads


@op
def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Maximum over sliding windows; "same" padding never wins the maximum. Strides default to pool_size."""
    pool_size, strides, pads = _pool_args(inputs, pool_size, strides, padding, data_format, "max_pool")
    return _max_pool(inputs, pool_size=pool_size, strides=strides, pads=pads)


@op
def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Mean over sliding windows; with "same" padding, over the real (unpadded) cells only."""
    pool_size, strides, pads = _pool_args(inputs, pool_size, strides, padding, data_format, "average_pool")
    return _average_pool(inputs, pool_size=pool_size, strides=strides, pads=pads)
