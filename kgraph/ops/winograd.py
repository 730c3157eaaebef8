"""Winograd F(4x4, 3x3): 3x3 stride-1 convolutions with 4x fewer multiplications than im2col.

The output is computed in 4x4 tiles. Each 6x6 input tile ``d`` and the
kernel ``k`` are moved to a transformed domain (``V = Bt d B``,
``U = G k Gt``) where the convolution becomes an element-wise product
summed over input channels: 36 independent matrix products
``M[a, b] = V[a, b] @ U[a, b]`` over all tiles at once. The output tile is
``At M A``. Every step is linear, so the VJP runs the same steps transposed:
``dM = A dY At``, ``dU = V^T dM``, ``dV = dM U^T``, ``dd = B dV Bt``, and the
input tiles' cotangents are added back where neighbouring tiles overlap.

Each transform is a 6x6 (or 4x6) matrix applied along one tile axis with one
matrix product over every tile and channel at once, so the whole op is BLAS
calls and a few whole-array copies. In float32 its results differ from
im2col's by a few 1e-6 of the output's scale (the transforms' constants are
not all powers of two).
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["applicable", "WinogradConv2D"]

# Interpolation points 0, 1, -1, 2, -2 and infinity (Lavin & Gray, 2016).
_BT = np.array([[4, 0, -5, 0, 1, 0],
                [0, -4, -4, 1, 1, 0],
                [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0],
                [0, 4, 0, -5, 0, 1]], dtype=np.float64)
_G = np.array([[1 / 4, 0, 0],
               [-1 / 6, -1 / 6, -1 / 6],
               [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6],
               [1 / 24, -1 / 12, 1 / 6],
               [0, 0, 1]], dtype=np.float64)
_AT = np.array([[1, 1, 1, 1, 1, 0],
                [0, 1, -1, 2, -2, 0],
                [0, 1, 1, 4, 4, 0],
                [0, 1, -1, 8, -8, 1]], dtype=np.float64)

TILE = 4  # output cells per tile side
_IN = TILE + 2  # input cells per tile side

# Below this many input channels or filters the 36 thin products lose to one im2col product.
MIN_CHANNELS = 16
# Smallest output side worth tiling (a 4x4 tile computes 16 outputs whatever the image size).
MIN_OUTPUT = 4


def applicable(kernel_size, strides, dilation, groups, channels, filters, out_spatial, dtype):
    """Whether a convolution of this geometry runs in the Winograd domain (faster than im2col there)."""
    return (tuple(kernel_size) == (3, 3) and tuple(strides) == (1, 1) and tuple(dilation) == (1, 1)
            and groups == 1 and channels >= MIN_CHANNELS and filters >= MIN_CHANNELS
            and min(out_spatial) >= MIN_OUTPUT and np.dtype(dtype) in (np.float32, np.float64))


def bytes_per_image(out_spatial, channels, dtype):
    """Size of one image's transformed tiles (what a block of images keeps for the VJP)."""
    tiles = int(np.prod([-(-o // TILE) for o in out_spatial]))
    return _IN * _IN * tiles * channels * np.dtype(dtype).itemsize


def _two_axes(m, t, rows):
    """``m`` applied along both leading axes of ``t (rows, rows, k)``: ``m t m^T`` for every trailing column."""
    first = (m @ t.reshape(rows, -1)).reshape(m.shape[0], rows, -1)
    return np.matmul(m, first)


class WinogradConv2D:
    """One 3x3 stride-1 valid convolution of an already padded channels-last batch ``xp`` with ``kernel``."""

    def __init__(self, xp, kernel, dtype):
        self.dtype = np.dtype(dtype)
        self.n, hp, wp, self.channels = xp.shape
        self.filters = kernel.shape[-1]
        self.xp_spatial = (hp, wp)
        self.out_spatial = (hp - 2, wp - 2)
        self.tiles = tuple(-(-o // TILE) for o in self.out_spatial)
        th, tw = self.tiles
        self.ext = (TILE * th + 2, TILE * tw + 2)
        if (hp, wp) != self.ext:
            # The last tiles reach past the input: they read zeros there (their extra outputs are dropped).
            xe = np.zeros((self.n,) + self.ext + (self.channels,), dtype=self.dtype)
            xe[:, :hp, :wp] = xp
        else:
            xe = np.asarray(xp, dtype=self.dtype)
        s = xe.strides
        tiles = as_strided(xe, shape=(_IN, _IN, self.n, th, tw, self.channels),
                           strides=(s[1], s[2], s[0], TILE * s[1], TILE * s[2], s[3]), writeable=False)
        self.bt, self.g, self.at = (m.astype(self.dtype) for m in (_BT, _G, _AT))
        self.v = _two_axes(self.bt, np.ascontiguousarray(tiles), _IN).reshape(_IN * _IN, -1, self.channels)
        k = np.asarray(kernel, dtype=self.dtype).reshape(3, 3 * self.channels * self.filters)
        gk = (self.g @ k).reshape(_IN, 3, -1)
        self.u = np.matmul(self.g, gk).reshape(_IN * _IN, self.channels, self.filters)

    def forward_tiles(self):
        """The output as tiles ``(4, 4, n, th, tw, filters)``.

        Element ``[p, q, n, i, j]`` is output cell ``(4i + p, 4j + q)`` of image ``n``; the last tiles
        include cells past the output's end.
        """
        th, tw = self.tiles
        m = np.matmul(self.v, self.u).reshape(_IN, _IN, -1)
        return _two_axes(self.at, m, _IN).reshape(TILE, TILE, self.n, th, tw, self.filters)

    def forward(self, out):
        """Write the convolution into ``out (n, oh, ow, filters)``."""
        th, tw = self.tiles
        y = self.forward_tiles()
        oh, ow = self.out_spatial
        if (oh, ow) == (TILE * th, TILE * tw):
            out.reshape(self.n, th, TILE, tw, TILE, self.filters).transpose(2, 4, 0, 1, 3, 5)[...] = y
            return out
        full = np.empty((self.n, th, TILE, tw, TILE, self.filters), dtype=self.dtype)
        full.transpose(2, 4, 0, 1, 3, 5)[...] = y
        out[...] = full.reshape(self.n, TILE * th, TILE * tw, self.filters)[:, :oh, :ow]
        return out

    def _tile_grid(self, a, row0, col0, taps):
        """Writable view ``(taps[0], taps[1], n, th, tw, c)`` of ``a``.

        Element ``[p, q, n, i, j]`` is ``a[n, row0 + 4i + p, col0 + 4j + q]``.
        """
        s = a.strides
        th, tw = self.tiles
        return as_strided(a[:, row0:, col0:], shape=tuple(taps) + (self.n, th, tw, a.shape[-1]),
                          strides=(s[1], s[2], s[0], TILE * s[1], TILE * s[2], s[3]))

    def gradients(self, g, with_x):
        """``(d_kernel (3, 3, channels, filters), d_xp or None)`` for the cotangent ``g (n, oh, ow, filters)``."""
        th, tw = self.tiles
        oh, ow = self.out_spatial
        if (oh, ow) != (TILE * th, TILE * tw):
            full = np.zeros((self.n, TILE * th, TILE * tw, self.filters), dtype=self.dtype)
            full[:, :oh, :ow] = g
            g = full
        g6 = np.ascontiguousarray(
            np.asarray(g, dtype=self.dtype).reshape(self.n, th, TILE, tw, TILE, self.filters).transpose(2, 4, 0, 1,
                                                                                                       3, 5))
        return self.tile_gradients(g6, with_x)

    def tile_gradients(self, g6, with_x):
        """``gradients`` for a cotangent laid out as ``forward_tiles``'s output (zero past the output's end)."""
        th, tw = self.tiles
        dm = _two_axes(self.at.T, g6, TILE).reshape(_IN * _IN, -1, self.filters)
        du = np.matmul(self.v.transpose(0, 2, 1), dm).reshape(_IN, _IN * self.channels * self.filters)
        gdu = (self.g.T @ du).reshape(3, _IN, -1)
        d_kernel = np.matmul(self.g.T, gdu).reshape(3, 3, self.channels, self.filters)
        if not with_x:
            return d_kernel, None
        dv = np.matmul(dm, self.u.transpose(0, 2, 1)).reshape(_IN, _IN, -1)
        dd = _two_axes(self.bt.T, dv, _IN).reshape(_IN, _IN, self.n, th, tw, self.channels)
        dxe = np.empty((self.n,) + self.ext + (self.channels,), dtype=self.dtype)
        span_h, span_w = TILE * th, TILE * tw
        # Taps 0..3 of every tile cover the first span_h x span_w cells exactly once: one strided copy ...
        core = dxe[:, :span_h, :span_w].reshape(self.n, th, TILE, tw, TILE, self.channels)
        core.transpose(2, 4, 0, 1, 3, 5)[...] = dd[:TILE, :TILE]
        dxe[:, span_h:] = 0
        dxe[:, :span_h, span_w:] = 0
        # ... and taps 4 and 5 overlap the next tile's first two cells: three strided adds.
        for rows, cols in ((slice(TILE, None), slice(None, TILE)), (slice(None, TILE), slice(TILE, None)),
                           (slice(TILE, None), slice(TILE, None))):
            part = dd[rows, cols]
            self._tile_grid(dxe, rows.start or 0, cols.start or 0, part.shape[:2])[...] += part
        hp, wp = self.xp_spatial
        return d_kernel, dxe[:, :hp, :wp]
