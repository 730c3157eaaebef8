"""A convolution followed by max pooling over non-overlapping windows, as one primitive.

In a CNN a convolution's output is usually read by one max pooling and
nothing else, and the pooling keeps one cell of each window. Computed as one
op, the convolution writes its output grouped by pooling tap (every window's
first cell, then every window's second cell, ...), so the pooling is a
running maximum over a few large contiguous slabs rather than strided passes
over the whole activation. The bias and a relu commute with the maximum (they
are the same non-decreasing function on every cell of a channel), so they run
on the pooled output, a fraction of the size, and convolution cells that no
window reads (the tail a "valid" pooling drops) are never computed.

The values are the two ops' values (the maximum of ``conv + bias`` is the
maximum of ``conv``, plus ``bias``, exactly in floating point); the gradient
goes to the first maximum of each window in row-major order, as in
``max_pool``. Ties are broken before the bias is added, so two cells that
differ only below the rounding of ``+ bias`` are not a tie here.
"""
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided

from kgraph.backend.autodiff import primitive
from kgraph.ops.conv import _image_blocks, _Kernel, conv_args, empty_batch, shared_vjp
from kgraph.ops.kernels import compiled, threads, winograd
from kgraph.ops.kernels.windows import conv_output_length, normalize_tuple, pad, scratch, unpad
from kgraph.ops.nn import relu_gradient
from kgraph.ops.operations import op

__all__ = ["conv_max_pool"]

# Images per block: about this many bytes of a path's intermediates, so that a block's passes over them
# run in cache rather than memory (measured: 25 % faster than whole-batch blocks on a 128-image CNN batch).
_BLOCK_BYTES = 1 << 22
# Fewest Winograd tiles per block (the rows of its transformed-domain products).
_MIN_TILES = 256
# What the forward pass may keep for the VJP (window matrices, Winograd tiles); above it each block's are
# rebuilt in the VJP, so memory stays bounded by one block.
_KEEP_BYTES = 1 << 25
# What the compiled pooling passes take: a window of at most this many taps (one byte each), these dtypes.
_MAX_TAPS = 255
_COMPILED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Per call geometry: the timing of two threads (each taking half of the image blocks) against one.
_TIMINGS = {}


def _running_max(slabs):
    """The maximum of equally shaped ``slabs``, and per later slab where it beat the maximum of those before."""
    best, beats = slabs[0], []
    for i, slab in enumerate(slabs[1:]):
        beats.append(np.greater(slab, best))
        best = np.maximum(best, slab, out=None if i == 0 else best)
    return (best.copy() if len(slabs) == 1 else best), beats


def _taps(a):
    """The slabs of ``a (A, P, B, Q, C, F)`` (the layout the paths give), one per pooling tap in row-major order."""
    return [a[:, p, :, q] for p in range(a.shape[1]) for q in range(a.shape[3])]


def _pool(a, into=None, bias=None, relu=False):
    """``(best, winners, finished)``: the maximum of ``a (A, P, B, Q, C, F)`` over its axes ``P`` and ``Q``, what
    ``_unpool`` needs to route a gradient to it (compiled: the kernels and the winning taps, one byte a cell;
    NumPy: the ``_running_max`` masks), and whether ``best`` has had ``bias`` added and the relu applied.

    ``into``: where the compiled pass may write ``best`` (a C-contiguous ``(A, B, C, F)`` view of the op's
    output), finishing it with the bias and the relu as it goes."""
    fused = compiled.kernels(a.size)
    if fused is None or a.dtype not in _COMPILED_DTYPES or a.shape[1] * a.shape[3] > _MAX_TAPS:
        best, beats = _running_max(_taps(a))
        return best, beats, False
    shape = a.shape[:1] + a.shape[2:3] + a.shape[4:]
    index = np.empty(shape, dtype=np.uint8)
    finish = into is not None and (bias is None or bias.dtype == a.dtype)
    best = into if finish else np.empty(shape, dtype=a.dtype)
    no_bias = np.empty(0, dtype=a.dtype)
    fused.pool_argmax(a, best, index, bias if finish and bias is not None else no_bias, finish and relu,
                      a.dtype.type(0))
    return best, (fused, index), finish


def _unpool(g, winners, out):
    """Write into ``out (A, P, B, Q, C, F)`` the pooled cotangent ``g (A, B, C, F)`` at each window's maximum
    (``_pool``'s ``winners``), zeros elsewhere."""
    if isinstance(winners, tuple):
        fused, index = winners
        fused.pool_route(g, index, out, out.dtype.type(0))
    else:
        _route(g, winners, _taps(out))


def _route(g, beats, shares):
    """Write into ``shares[t]`` the part of ``g`` whose window maximum slab ``t`` held (``_running_max``'s winner).

    The last slab that beat the running maximum holds it: walk the slabs
    backwards, each taking what it won and leaving the rest to earlier ones.
    """
    rest = g
    for t in range(len(shares) - 1, 0, -1):
        np.multiply(rest, beats[t - 1], out=shares[t])
        rest = np.subtract(rest, shares[t], out=shares[0] if t == 1 else None)
    if len(shares) == 1:
        shares[0][...] = rest


class _Im2col:
    """The convolution as one product of a tap-major window matrix with the kernel.

    Row ``(t, n, p)`` of the window matrix is the window of output cell
    ``p * pool + t`` of image ``n`` (``t`` a pooling tap, ``p`` a pooled
    cell), so the product's rows come out grouped by pooling tap.
    """

    def __init__(self, xp, mat, kernel_size, strides, dilation, pool, pooled):
        self.xp, self.mat = xp, mat
        self.kernel_size, self.strides, self.dilation = kernel_size, strides, dilation
        self.pool, self.pooled = pool, pooled
        self.taps = int(np.prod(pool))
        self.cells = int(np.prod(pooled))
        self.channels = xp.shape[-1]
        # A single input channel: gather one kernel tap at a time into a (taps, rows) matrix (whole rows per
        # copy) and hand BLAS its transpose.
        self.transposed = self.channels == 1 and mat.groups == 1

    min_images = 1

    def bytes_per_image(self, itemsize):
        rows = self.taps * self.cells
        return rows * (self.mat.taps * self.channels + self.mat.filters) * itemsize

    def _view(self, a, i0, i1, kernel_axes):
        """Strided view ``(*pool, n, *pooled, [*kernel_size,] C)`` of the cells of ``a[i0:i1]`` each row reads."""
        r = len(self.pool)
        st = a.strides
        shape = self.pool + (i1 - i0,) + self.pooled
        steps = (tuple(st[1 + i] * self.strides[i] for i in range(r)) + (st[0],)
                 + tuple(st[1 + i] * self.strides[i] * self.pool[i] for i in range(r)))
        if kernel_axes:
            shape += self.kernel_size
            steps += tuple(st[1 + i] * self.dilation[i] for i in range(r))
        return as_strided(a[i0:i1], shape=shape + (a.shape[-1],), strides=steps + (st[-1],))

    def _tap_view(self, a, i0, i1, taps):
        """The view ``(*pool, n, *pooled, C)`` of the cells of ``a[i0:i1]`` that kernel tap ``taps`` reads."""
        start = (slice(None),) + tuple(slice(t * d, None) for t, d in zip(taps, self.dilation))
        return self._view(a[start], i0, i1, False)

    def columns(self, i0, i1):
        rows = (i1 - i0) * self.taps * self.cells
        width = self.mat.taps * self.channels
        if self.transposed:
            buf = np.empty((self.mat.taps, rows), dtype=self.xp.dtype)
            view = self._view(self.xp, i0, i1, True)[..., 0]
            r = len(self.pool)
            order = tuple(range(2 * r + 1, 3 * r + 1)) + tuple(range(2 * r + 1))
            np.copyto(buf.reshape(self.kernel_size + view.shape[:2 * r + 1]), view.transpose(order))
            return buf.T
        cols = np.empty((rows, width), dtype=self.xp.dtype)
        view = self._view(self.xp, i0, i1, True)
        np.copyto(cols.reshape(view.shape), view)
        return cols

    def forward(self, i0, i1):
        """``(cells, state)``: the block's convolution cells ``(1, taps, 1, 1, n * cells, filters)``, one slab
        per pooling tap (``_pool``'s layout)."""
        cols = self.columns(i0, i1)
        y = np.empty((cols.shape[0], self.mat.filters), dtype=cols.dtype)
        self.mat.apply(cols, y)
        return y.reshape(1, self.taps, 1, 1, -1, self.mat.filters), cols

    def pooled_block(self, best, i0, i1):
        return best.reshape((i1 - i0,) + self.pooled + (self.mat.filters,))

    def pooled_view(self, out, i0, i1):
        """``out[i0:i1]`` in ``_pool``'s layout of the block's maxima (None when the layouts differ)."""
        return out[i0:i1].reshape(1, 1, -1, self.mat.filters)

    def backward(self, cols, i0, i1, g, beats, dxp):
        """The kernel-matrix gradient of the block; adds the input gradient into ``dxp`` when given."""
        if cols is None:
            cols = self.columns(i0, i1)
        size = cols.shape[0] * self.mat.filters
        gy = scratch("pooled_conv_grad", size, g.dtype).reshape(1, self.taps, 1, 1, -1, self.mat.filters)
        _unpool(g.reshape(1, 1, -1, self.mat.filters), beats, gy)
        gy = gy.reshape(-1, self.mat.filters)
        d_matrix = self.mat.weight_grad(cols, gy)
        if dxp is not None:
            dcols = np.empty((cols.shape[0], self.mat.taps * self.channels), dtype=g.dtype)
            self.mat.window_grad(gy, dcols)
            dcols = dcols.reshape(self.pool + (i1 - i0,) + self.pooled + self.kernel_size + (self.channels,))
            lead = (slice(None),) * (2 * len(self.pool) + 1)
            for taps in np.ndindex(*self.kernel_size):
                self._tap_view(dxp, i0, i1, taps)[...] += dcols[lead + taps]
        return d_matrix


class _Direct:
    """A 3x3 stride-1 convolution of one input channel (a grayscale image's first layer) pooled over 2x2
    windows, both in one compiled pass per block (``kernels.fused_conv``): only the pooled output and its winning
    taps are written, and the VJP reads those and the image (no window matrix, no convolution-sized array)."""

    min_images = 1

    def __init__(self, xp, kernel, dtype, pooled, fused):
        self.fused, self.dtype, self.pooled = fused, dtype, pooled
        self.image = np.ascontiguousarray(xp[..., 0], dtype=dtype)
        self.weights = np.ascontiguousarray(np.asarray(kernel, dtype=dtype).reshape(9, -1))
        self.filters = self.weights.shape[1]

    @staticmethod
    def applicable(fused, kernel_size, strides, dilation, pool, groups, channels, dtype, bias):
        return (fused is not None and tuple(kernel_size) == (3, 3) and tuple(strides) == (1, 1)
                and tuple(dilation) == (1, 1) and tuple(pool) == (2, 2) and groups == 1 and channels == 1
                and dtype in _COMPILED_DTYPES and (bias is None or np.asarray(bias).dtype == dtype))

    def bytes_per_image(self, itemsize):
        return int(np.prod(self.pooled)) * self.filters * (itemsize + 1)  # the pooled output and its taps

    def forward_pooled(self, out, i0, i1, bias, relu):
        """Write images ``i0:i1``' pooled convolution, ``bias`` added and the relu applied, into ``out``; what the
        VJP reads besides the image: the winning taps, the block's output and whether it went through the relu."""
        block = out[i0:i1]
        index = np.empty(block.shape, dtype=np.uint8)
        rows = np.empty((2, 2 * self.pooled[1], self.filters), dtype=self.dtype)
        bias = np.empty(0, dtype=self.dtype) if bias is None else np.asarray(bias)
        self.fused.conv3x3_max_pool(self.image[i0:i1], self.weights, block, index, rows, bias, relu,
                                    self.dtype.type(0), 0, i1 - i0)
        return index, block, relu

    def backward(self, state, i0, i1, g, pooled, dxp):
        """For the block's pooled cotangent ``g`` (before the relu's gradient, which this applies) and what
        ``forward_pooled`` returned: the kernel matrix's gradient (9 rows) with the bias's as a tenth row; adds the
        input gradient into ``dxp`` when given."""
        del state  # nothing kept but ``pooled``
        index, block, relu = pooled
        d_weights = np.zeros((10, self.filters), dtype=self.dtype)
        image = self.image[i0:i1]
        d_image = np.zeros_like(image) if dxp is not None else np.empty((0, 0, 0), dtype=self.dtype)
        self.fused.conv3x3_max_pool_grads(image, self.weights, np.ascontiguousarray(g, dtype=self.dtype),
                                          block, relu, index, d_weights, np.empty_like(d_weights),
                                          np.empty(self.filters, dtype=self.dtype), d_image, 0, i1 - i0)
        if dxp is not None:
            dxp[i0:i1, :image.shape[1], :image.shape[2], 0] += d_image
        return d_weights


class _Winograd:
    """The convolution as Winograd tiles.

    ``forward_tiles`` gives cell ``(m * i + p, m * j + q)`` at ``[p, q, n, i, j]``
    (``m`` the tile side). When the pooling window's sides divide ``m``, every
    window lies inside a tile: with ``p = a * ph + dp`` the slab of pooling tap
    ``(dp, dq)`` is ``[a, dp, b, dq]`` over every ``a, b``, contiguous along
    ``(n, i, j, filters)``. Otherwise the tiles are first laid out as images
    and the slabs are strided views of those.
    """

    def __init__(self, xp, kernel, dtype, pool, pooled, tile):
        self.xp, self.kernel, self.dtype = xp, kernel, dtype
        self.pool, self.pooled, self.tile = pool, pooled, tile
        self.aligned = all(tile % p == 0 for p in pool)
        self.per_tile = tuple(tile // p for p in pool)
        self.filters = kernel.shape[-1]
        self.out = tuple(s - 2 for s in xp.shape[1:3])
        self.tiles = tuple(-(-o // tile) for o in self.out)
        # Blocks of at least _MIN_TILES tiles: thinner transformed-domain products lose half their speed.
        self.min_images = -(-_MIN_TILES // int(np.prod(self.tiles)))

    def bytes_per_image(self, itemsize):
        outputs = int(np.prod(self.tiles)) * self.tile ** 2 * self.filters * itemsize
        return winograd.bytes_per_image(self.out, self.xp.shape[-1], self.dtype, self.tile) + outputs

    def _grid(self, a):
        """``a`` (tiles, or ``(n, *out, filters)`` images) in ``_pool``'s layout ``(A, ph, B, pw, C, filters)``."""
        ph, pw = self.pool
        if self.aligned:
            (a_, b_) = self.per_tile
            return a.reshape(a_, ph, b_, pw, -1, self.filters)
        (rows, cols), f = self.pooled, self.filters
        return a.reshape(a.shape[0] * rows, ph, cols, pw, 1, f)

    def _conv(self, i0, i1):
        return winograd.WinogradConv2D(self.xp[i0:i1], self.kernel, self.dtype, self.tile)

    def forward(self, i0, i1):
        conv = self._conv(i0, i1)
        if self.aligned:
            return self._grid(conv.forward_tiles()), conv
        images = conv.forward(np.empty((i1 - i0,) + self.out + (self.filters,), dtype=self.dtype))
        return self._grid(images), conv

    def pooled_view(self, out, i0, i1):
        if self.aligned:
            return None
        return out[i0:i1].reshape((i1 - i0) * self.pooled[0], self.pooled[1], 1, self.filters)

    def pooled_block(self, best, i0, i1):
        n = i1 - i0
        if not self.aligned:
            return best.reshape((n,) + self.pooled + (self.filters,))
        (a, b), (rows, cols), (th, tw) = self.per_tile, self.pooled, self.tiles
        grid = best.reshape(a, b, n, th, tw, self.filters).transpose(2, 3, 0, 4, 1, 5)
        return grid.reshape(n, th * a, tw * b, self.filters)[:, :rows, :cols]

    def backward(self, conv, i0, i1, g, beats, dxp):
        if conv is None:
            conv = self._conv(i0, i1)
        n = i1 - i0
        if self.aligned:
            (a, b), (rows, cols), (th, tw) = self.per_tile, self.pooled, self.tiles
            # The pooled cotangent in the slabs' layout, zero for pooled cells past the output's end.
            grid = np.zeros((n, th, a, tw, b, self.filters), dtype=self.dtype)
            grid.reshape(n, th * a, tw * b, self.filters)[:, :rows, :cols] = g
            g_slab = np.ascontiguousarray(grid.transpose(2, 4, 0, 1, 3, 5)).reshape(a, b, -1, self.filters)
            g_tiles = np.empty((self.tile, self.tile, n, th, tw, self.filters), dtype=self.dtype)
            _unpool(g_slab, beats, self._grid(g_tiles))
            d_kernel, d_xp = conv.tile_gradients(g_tiles, dxp is not None)
        else:
            g_images = np.empty((n,) + self.out + (self.filters,), dtype=self.dtype)
            _unpool(g.reshape(n * self.pooled[0], self.pooled[1], 1, self.filters), beats, self._grid(g_images))
            d_kernel, d_xp = conv.gradients(g_images, dxp is not None)
        if dxp is not None:
            dxp[i0:i1, :d_xp.shape[1], :d_xp.shape[2]] += d_xp
        return d_kernel.reshape(-1, self.filters)


def _halves(path, blocks, n, per_image):
    """``(blocks, (first, second))`` for two threads: the image blocks and each thread's block indices, or
    None when the batch is too small to share or nothing can run in two threads.

    A Winograd block holds several times its nominal budget in transformed tiles (it needs 256 tiles for
    full-speed products), so its split blocks take half the images: two threads then hold what one did.
    """
    if not threads.can_split():
        return None
    if isinstance(path, _Winograd):
        min_images = -(-path.min_images // 2)
        if n < 2 * min_images:
            return None
        blocks = _image_blocks(n, per_image, max(_BLOCK_BYTES, path.min_images * per_image) // 2)
    if len(blocks) == 1:
        if n < 2:
            return None
        blocks = [(0, n // 2), (n // 2, n)]
    if len(blocks) % 2:
        blocks = _image_blocks(n, per_image, -(-n * per_image // (len(blocks) + 1)))
    half = len(blocks) // 2
    return blocks, (range(half), range(half, len(blocks)))


class _Blocks:
    """The batch's image blocks, run by one thread or shared by two (as timed faster for this geometry).

    The choice holds for the call (the backward pass runs the forward's blocks the same way) and is timed
    over both passes.
    """

    def __init__(self, path, n, dtype, key):
        self.path = path
        per_image = path.bytes_per_image(dtype.itemsize)
        self.blocks = _image_blocks(n, per_image, max(_BLOCK_BYTES, path.min_images * per_image))
        self.keep = n * per_image <= _KEEP_BYTES
        self.halves, self.timing = _halves(path, self.blocks, n, per_image), None
        if self.halves is not None:
            self.timing = threads.timings(_TIMINGS, key)
            if self.timing.choose():
                self.blocks, self.halves = self.halves
            else:
                self.halves = None
        self.states, self.beats = [None] * len(self.blocks), [None] * len(self.blocks)

    def _run(self, job):
        """``job`` over every block index (in two threads when split); its seconds."""
        start = time.perf_counter()
        if self.halves is None:
            job(range(len(self.blocks)))
        else:
            threads.in_halves(job, *self.halves)
        return time.perf_counter() - start

    def forward(self, out, bias, relu):
        """Write the pooled convolution of every block, ``bias`` added and the relu applied, into ``out``, keeping
        what the VJP needs."""
        finished = [True] * len(self.blocks)

        def job(indices):
            for k in indices:
                i0, i1 = self.blocks[k]
                if isinstance(self.path, _Direct):  # pooled and finished in its own pass
                    self.beats[k] = self.path.forward_pooled(out, i0, i1, bias, relu)
                    continue
                cells, state = self.path.forward(i0, i1)
                best, self.beats[k], finished[k] = _pool(cells, self.path.pooled_view(out, i0, i1), bias, relu)
                if not finished[k]:
                    out[i0:i1] = self.path.pooled_block(best, i0, i1)
                self.states[k] = state if self.keep else None
                del cells, best, state
        seconds = self._run(job)
        if self.timing is not None:
            self.timing.record(self.halves is not None, seconds)
        if all(finished):
            return
        # A per-channel zero row broadcasts faster than a scalar operand.
        zeros = np.zeros(out.shape[-1], dtype=out.dtype)
        for i0, i1 in [(0, len(out))] if not any(finished) else [b for b, f in zip(self.blocks, finished) if not f]:
            if bias is not None:
                out[i0:i1] += bias
            if relu:
                np.maximum(out[i0:i1], zeros, out=out[i0:i1])

    def backward(self, g, dxp):
        """The kernel's gradient (as a matrix) for the pooled cotangent ``g``; adds the input's into ``dxp``."""
        parts = [None] * len(self.blocks)

        def job(indices):
            for k in indices:
                i0, i1 = self.blocks[k]
                parts[k] = self.path.backward(self.states[k], i0, i1, g[i0:i1], self.beats[k], dxp)
        seconds = self._run(job)
        if self.timing is not None:
            self.timing.add(self.halves is not None, seconds)
        d_matrix = parts[0]
        for part in parts[1:]:
            d_matrix = d_matrix + part
        return d_matrix


@primitive(num_inputs=3)
def _conv_max_pool(x, kernel, bias, strides, pads, dilation, pool, relu):
    x = np.asarray(x)
    r = x.ndim - 2
    kernel_size = tuple(kernel.shape[:r])
    spatial = x.shape[1:1 + r]
    conv_out = tuple(conv_output_length(n, k, s, d, p)
                     for n, k, s, d, p in zip(spatial, kernel_size, strides, dilation, pads))
    pooled = tuple(o // p for o, p in zip(conv_out, pool))
    if any(p < 1 for p in pooled):
        raise ValueError(f"conv_max_pool: the convolution output {conv_out} (input spatial shape {spatial}, "
                         f"kernel {kernel_size}) is smaller than the pooling window {pool}.")
    n, channels = x.shape[0], x.shape[-1]
    mat = _Kernel(kernel, channels // kernel.shape[-2])
    dtype = np.result_type(x.dtype, kernel.dtype)
    if n == 0:
        return empty_batch(x, kernel, bias, (0,) + pooled + (mat.filters,), dtype)
    xp_full = pad(x, pads)
    # Only the input cells that the pooled convolution cells read.
    reach = tuple((p * k - 1) * s + (w - 1) * d + 1
                  for p, k, s, w, d in zip(pooled, pool, strides, kernel_size, dilation))
    xp = xp_full[(slice(None),) + tuple(slice(0, e) for e in reach)]
    needed = tuple(p * k for p, k in zip(pooled, pool))
    fused = compiled.kernels(int(np.prod(x.shape[:-1])) * mat.filters)
    if r == 2 and _Direct.applicable(fused, kernel_size, strides, dilation, pool, mat.groups, channels, dtype,
                                     bias):
        path = _Direct(xp, kernel, dtype, pooled, fused)
    elif r == 2 and winograd.applicable(kernel_size, strides, dilation, mat.groups, channels, mat.filters, needed,
                                      dtype):
        path = _Winograd(xp, kernel, dtype, pool, pooled, winograd.choose_tile(needed))
    else:
        path = _Im2col(xp, mat, kernel_size, strides, dilation, pool, pooled)
    out = np.empty((n,) + pooled + (mat.filters,), dtype=dtype)
    blocks = _Blocks(path, n, dtype, (type(path).__name__, x.shape, kernel.shape, pool))
    blocks.forward(out, bias, relu)

    def backward(g, grads, with_x):
        g = np.asarray(g, dtype=dtype)
        dxp = np.zeros(xp_full.shape, dtype=dtype) if with_x else None
        if isinstance(path, _Direct):  # the relu's gradient and the bias's sum come from its own pass
            matrix = blocks.backward(g, dxp)
            grads["bias"] = matrix[9].copy() if bias is not None else None
            grads["kernel"] = mat.unmatrix(np.ascontiguousarray(matrix[:9]))
        else:
            if relu:
                g = relu_gradient(g, out)
            g2 = g.reshape(-1, mat.filters)
            grads["bias"] = np.ones(g2.shape[0], dtype=dtype) @ g2 if bias is not None else None
            grads["kernel"] = mat.unmatrix(blocks.backward(g, dxp))
        if with_x:
            grads["x"] = unpad(dxp, pads, spatial)

    return out, lambda g: shared_vjp(backward, g, bias is not None)


@op
def conv_max_pool(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1, bias=None,
                  relu=False, pool_size=2):
    """``max_pool(conv(...), pool_size)`` with pooling strides equal to ``pool_size`` and "valid" padding.

    Takes ``conv``'s arguments (``bias`` and ``relu`` included) and gives its
    result pooled by ``max_pool(..., pool_size, strides=pool_size,
    padding="valid")``, in one op (see the module docstring).
    """
    strides, pads, dilation, _ = conv_args(inputs, kernel, strides, padding, data_format, dilation_rate,
                                           "conv_max_pool")
    pool = normalize_tuple(pool_size, len(strides), "pool_size")
    return _conv_max_pool(inputs, kernel, bias, strides=strides, pads=pads, dilation=dilation, pool=pool,
                          relu=bool(relu))
