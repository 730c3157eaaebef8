"""Winograd F(m x m, 3x3): 3x3 stride-1 convolutions with several times fewer multiplications than im2col.

The output is computed in m x m tiles (m = 4 or 5 by default; 6 is available). Each (m+2) x (m+2) input
tile ``d`` and the kernel ``k`` are moved to a transformed domain
(``V = Bt d B``, ``U = G k Gt``) where the convolution becomes an element-wise
product summed over input channels: (m+2)^2 independent matrix products
``M[a, b] = V[a, b] @ U[a, b]`` over all tiles at once. The output tile is
``At M A``. Every step is linear, so the VJP runs the same steps transposed:
``dM = A dY At``, ``dU = V^T dM``, ``dV = dM U^T``, ``dd = B dV Bt``, and the
input tiles' cotangents are added back where neighbouring tiles overlap.

F(4x4) does 36 products per 16 outputs (4x fewer than im2col's 9 per output),
F(5x5) 49 per 25 and F(6x6) 64 per 36 (5x fewer), moving less data per
output. The interpolation points decide the float32 rounding: measured against
float64 on 3x3 convolutions of 16 to 512 channels (im2col: about 5e-7 of the
output's scale), F(4x4) on (0, +-3/2, +-2/3) stays within 2e-6 of the scale
where the textbook (0, +-1, +-2) gave 9e-6, F(5x5) on (0, -1, -2, -1/2, 3/2,
3/4) within 7e-6 (1e-5 on (0, +-1, +-1/2, 2)), and F(6x6), best on (0, +-1,
+-2, +-1/2), reached 1.2e-5, so it is left out of the default choice: an
exported model's ``--verify`` compares with onnxruntime's direct convolutions
at 1e-5. The tile is chosen per geometry (``choose_tile``): of F(4x4) and
F(5x5), the one that transforms the fewest cells for the output's size.

Each transform is a small matrix applied along one tile axis with one matrix
product over every tile and channel at once, so the whole op is BLAS calls and
a few whole-array copies.
"""
from fractions import Fraction

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["applicable", "choose_tile", "WinogradConv2D"]

# Below this many input channels or filters the thin transformed-domain products lose to one im2col product.
MIN_CHANNELS = 16
# Smallest output side worth tiling.
MIN_OUTPUT = 4
# Interpolation points of each tile size, infinity included implicitly (Lavin & Gray, 2016), each set the
# most accurate in float32 of those tried (see the module docstring).
_POINTS = {4: (0, Fraction(3, 2), Fraction(-3, 2), Fraction(2, 3), Fraction(-2, 3)),
           5: (0, -1, -2, Fraction(-1, 2), Fraction(3, 2), Fraction(3, 4)),
           6: (0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2))}
# The tiles ``choose_tile`` picks from (F(6x6) rounds twice as coarsely as F(5x5)).
TILES = (4, 5)


def _poly_with_roots(roots):
    """Coefficients (constant first) of the monic polynomial with ``roots``."""
    coeffs = [Fraction(1)]
    for root in roots:
        coeffs = [(coeffs[i - 1] if i else 0) - root * (coeffs[i] if i < len(coeffs) else 0)
                  for i in range(len(coeffs) + 1)]
    return coeffs


def _toom_cook(points, m, r=3):
    """Exact ``(Bt, G, At)`` of F(m, r) for the finite interpolation ``points`` and infinity.

    ``At`` evaluates at the points, ``G`` evaluates the kernel divided by the
    Lagrange denominators, and row ``j`` of ``Bt`` holds the coefficients of
    the product of ``(x - p)`` over the other points (over all of them for
    infinity's row).
    """
    points = [Fraction(p) for p in points]
    n = m + r - 1
    bt = [[Fraction(0)] * n for _ in range(n)]
    g = [[Fraction(0)] * r for _ in range(n)]
    at = [[Fraction(0)] * n for _ in range(m)]
    for j, p in enumerate(points):
        others = points[:j] + points[j + 1:]
        scale = Fraction(1)
        for q in others:
            scale *= p - q
        bt[j][:n - 1] = _poly_with_roots(others)
        g[j] = [p ** k / scale for k in range(r)]
        for i in range(m):
            at[i][j] = p ** i
    bt[n - 1] = _poly_with_roots(points)
    g[n - 1][r - 1] = Fraction(1)
    at[m - 1][n - 1] = Fraction(1)
    return tuple(np.array([[float(v) for v in row] for row in a]) for a in (bt, g, at))


_TRANSFORMS = {m: _toom_cook(points, m) for m, points in _POINTS.items()}


def applicable(kernel_size, strides, dilation, groups, channels, filters, out_spatial, dtype):
    """Whether a convolution of this geometry runs in the Winograd domain (faster than im2col there)."""
    return (tuple(kernel_size) == (3, 3) and tuple(strides) == (1, 1) and tuple(dilation) == (1, 1)
            and groups == 1 and channels >= MIN_CHANNELS and filters >= MIN_CHANNELS
            and min(out_spatial) >= MIN_OUTPUT and np.dtype(dtype) in (np.float32, np.float64))


def _transformed_cells(out_spatial, tile):
    return int(np.prod([-(-o // tile) for o in out_spatial])) * (tile + 2) ** 2


def choose_tile(out_spatial, sizes=None):
    """The tile size among ``sizes`` (default ``TILES``) that transforms the fewest cells for ``out_spatial``.

    Ties go to the smaller tile (the smaller rounding).
    """
    return min(sorted(TILES if sizes is None else sizes), key=lambda tile: _transformed_cells(out_spatial, tile))


def bytes_per_image(out_spatial, channels, dtype, tile):
    """Size of one image's transformed tiles (what a block of images keeps for the VJP)."""
    return _transformed_cells(out_spatial, tile) * channels * np.dtype(dtype).itemsize


def _two_axes(m, t, rows):
    """``m`` applied along both leading axes of ``t (rows, rows, k)``: ``m t m^T`` for every trailing column."""
    first = (m @ t.reshape(rows, -1)).reshape(m.shape[0], rows, -1)
    return np.matmul(m, first)


class WinogradConv2D:
    """One 3x3 stride-1 valid convolution of an already padded channels-last batch ``xp`` with ``kernel``.

    ``tile``: output cells per tile side, one of ``TILES``.
    """

    def __init__(self, xp, kernel, dtype, tile=4):
        self.tile = t = tile
        self.size = size = tile + 2  # input cells per tile side
        self.dtype = np.dtype(dtype)
        self.n, hp, wp, self.channels = xp.shape
        self.filters = kernel.shape[-1]
        self.xp_spatial = (hp, wp)
        self.out_spatial = (hp - 2, wp - 2)
        self.tiles = tuple(-(-o // t) for o in self.out_spatial)
        th, tw = self.tiles
        self.ext = (t * th + 2, t * tw + 2)
        if (hp, wp) != self.ext:
            # The last tiles reach past the input: they read zeros there (their extra outputs are dropped).
            xe = np.zeros((self.n,) + self.ext + (self.channels,), dtype=self.dtype)
            xe[:, :hp, :wp] = xp
        else:
            xe = np.asarray(xp, dtype=self.dtype)
        s = xe.strides
        tiles = as_strided(xe, shape=(size, size, self.n, th, tw, self.channels),
                           strides=(s[1], s[2], s[0], t * s[1], t * s[2], s[3]), writeable=False)
        self.bt, self.g, self.at = (m.astype(self.dtype) for m in _TRANSFORMS[t])
        self.v = _two_axes(self.bt, np.ascontiguousarray(tiles), size).reshape(size * size, -1, self.channels)
        k = np.asarray(kernel, dtype=self.dtype).reshape(3, 3 * self.channels * self.filters)
        gk = (self.g @ k).reshape(size, 3, -1)
        self.u = np.matmul(self.g, gk).reshape(size * size, self.channels, self.filters)

    def forward_tiles(self):
        """The output as tiles ``(tile, tile, n, th, tw, filters)``.

        Element ``[p, q, n, i, j]`` is output cell ``(tile * i + p, tile * j + q)``
        of image ``n``; the last tiles include cells past the output's end.
        """
        th, tw = self.tiles
        m = np.matmul(self.v, self.u).reshape(self.size, self.size, -1)
        return _two_axes(self.at, m, self.size).reshape(self.tile, self.tile, self.n, th, tw, self.filters)

    def _image_layout(self, a):
        """``a (n, th * tile, tw * tile, c)`` viewed as ``(tile, tile, n, th, tw, c)`` (the tiles' layout)."""
        th, tw = self.tiles
        t = self.tile
        return a.reshape(self.n, th, t, tw, t, a.shape[-1]).transpose(2, 4, 0, 1, 3, 5)

    def forward(self, out):
        """Write the convolution into ``out (n, oh, ow, filters)``."""
        th, tw = self.tiles
        y = self.forward_tiles()
        oh, ow = self.out_spatial
        span = (self.tile * th, self.tile * tw)
        if (oh, ow) == span:
            self._image_layout(out)[...] = y
            return out
        full = np.empty((self.n,) + span + (self.filters,), dtype=self.dtype)
        self._image_layout(full)[...] = y
        out[...] = full[:, :oh, :ow]
        return out

    def _tile_grid(self, a, row0, col0, taps):
        """Writable view ``(taps[0], taps[1], n, th, tw, c)`` of ``a``.

        Element ``[p, q, n, i, j]`` is ``a[n, row0 + tile * i + p, col0 + tile * j + q]``.
        """
        s = a.strides
        th, tw = self.tiles
        t = self.tile
        return as_strided(a[:, row0:, col0:], shape=tuple(taps) + (self.n, th, tw, a.shape[-1]),
                          strides=(s[1], s[2], s[0], t * s[1], t * s[2], s[3]))

    def gradients(self, g, with_x):
        """``(d_kernel (3, 3, channels, filters), d_xp or None)`` for the cotangent ``g (n, oh, ow, filters)``."""
        th, tw = self.tiles
        oh, ow = self.out_spatial
        span = (self.tile * th, self.tile * tw)
        if (oh, ow) == span:  # the tiles cover the output exactly
            return self.tile_gradients(np.ascontiguousarray(self._image_layout(np.asarray(g, self.dtype))), with_x)
        full = np.zeros((self.n,) + span + (self.filters,), dtype=self.dtype)
        full[:, :oh, :ow] = g
        return self.tile_gradients(np.ascontiguousarray(self._image_layout(full)), with_x)

    def tile_gradients(self, g_tiles, with_x):
        """``gradients`` for a cotangent laid out as ``forward_tiles``'s output (zero past the output's end)."""
        th, tw = self.tiles
        t, size = self.tile, self.size
        dm = _two_axes(self.at.T, g_tiles, t).reshape(size * size, -1, self.filters)
        du = np.matmul(self.v.transpose(0, 2, 1), dm).reshape(size, size * self.channels * self.filters)
        gdu = (self.g.T @ du).reshape(3, size, -1)
        d_kernel = np.matmul(self.g.T, gdu).reshape(3, 3, self.channels, self.filters)
        if not with_x:
            return d_kernel, None
        dv = np.matmul(dm, self.u.transpose(0, 2, 1)).reshape(size, size, -1)
        dd = _two_axes(self.bt.T, dv, size).reshape(size, size, self.n, th, tw, self.channels)
        dxe = np.empty((self.n,) + self.ext + (self.channels,), dtype=self.dtype)
        span_h, span_w = t * th, t * tw
        # Taps 0..tile-1 of every tile cover the first span_h x span_w cells exactly once: one strided copy ...
        self._image_layout(dxe[:, :span_h, :span_w])[...] = dd[:t, :t]
        dxe[:, span_h:] = 0
        dxe[:, :span_h, span_w:] = 0
        # ... and the last two taps overlap the next tile's first two cells: three strided adds.
        for rows, cols in ((slice(t, None), slice(None, t)), (slice(None, t), slice(t, None)),
                           (slice(t, None), slice(t, None))):
            part = dd[rows, cols]
            self._tile_grid(dxe, rows.start or 0, cols.start or 0, part.shape[:2])[...] += part
        hp, wp = self.xp_spatial
        return d_kernel, dxe[:, :hp, :wp]
