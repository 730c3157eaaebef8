"""tanh of float32 values for the compiled recurrent kernels, correctly rounded and vectorized.

NumPy's float32 ``tanh`` (its AVX2 loop) cost 2.7-3.5 ns an element on an AMD
EPYC machine of this project's (about 0.3 ns on the machines of earlier
measurements: 12 us for a 64-row LSTM half-step), and an LSTM's forward pass takes
the tanh of every gate (the sigmoids are ``0.5 * tanh(x / 2) + 0.5``) and
of every cell state: 2.6 million values a step for LSTM(128) over 32 steps of
128 rows, more than a third of the forward pass. This loop computes it in
about 1.5 ns there, as a rational function in float64 arithmetic that LLVM
turns into vector code, and rounds once to float32. Which of the two the
kernels use is timed once per process (``preferred``): this loop where it is
clearly the faster (by ``FASTER``), else NumPy's. The two differ by one unit
in the last place at most, so a model's float32 LSTM or GRU values depend on
which one the machine chose, as they depend on its BLAS.

The loop:

- ``y = x / 4`` (exact), ``q = y^2``; ``tanh(y) ~ y N(q) / D(q)``, the
  convergent of Lambert's continued fraction ``tanh y = y / (1 + y^2 / (3 +
  y^2 / (5 + ...)))`` that ends at 15 (the [7/8] Padé approximant):
  ``N = 2027025 + 270270 q + 6930 q^2 + 36 q^3`` and
  ``D = 2027025 + 945945 q + 51975 q^2 + 630 q^3 + q^4``, within 9.7e-10
  of ``tanh(y)`` relatively for ``|y| <= 2.275``;
- two doublings ``tanh(2y) = 2t / (1 + t^2)`` with the fractions kept as
  numerator and denominator: ``A = 2 y N D``, ``B = D^2 + q N^2`` give
  ``tanh(2y) = A / B``, and ``tanh(4y) = 2 A B / (B^2 + A^2)``, one division
  in all (every term positive: no cancellation, and the relative error does
  not grow through a doubling);
- ``x`` is clamped to ``[-9.1, 9.1]`` first: ``tanh`` of anything beyond
  9.02 rounds to 1 in float32, and the clamp keeps ``B^2`` far from overflow.

Checked over every float32 in ``[0, 9.2]`` (1.09e9 values; the function is odd
bit for bit, and 1 beyond): each result equals ``np.tanh`` of the value in
float64 rounded to float32, where NumPy's float32 ``tanh`` is off by one unit
in the last place for about a third of random inputs. ``benchmarks/tanh_check.py`` repeats
the check and times both. ``-0.0`` stays ``-0.0``, infinities give ``+-1``, NaN
stays NaN (comparisons with NaN are false, so the clamp passes it through).

Each row is copied into a scratch row, computed into a second and copied
out: computed in place (``out`` is ``a``) it would fail LLVM's overlap check
and run the scalar loop, at 5.4 ns an element, and rows lying in a wider
array (a GRU's gate columns) would not vectorize (7.4 ns an element, 2.4 with
the copies).
"""
import threading
import time

import numpy as np

from kgraph.ops.kernels.jit import compile_kernel

__all__ = ["FASTER", "preferred", "tanh_rows"]

# ``tanh_rows`` is preferred where NumPy's tanh takes at least this many times as long: 1.8x to 2.2x on the EPYC
# machine, far below 1 where NumPy's loop runs at 0.3 ns an element, so the choice is stable between runs.
FASTER = 1.25

_lock = threading.Lock()
_choice = []  # [whether tanh_rows is preferred] once timed


def preferred():
    """Whether the recurrent kernels take ``tanh_rows`` for float32 (else ``np.tanh``): timed once per process,
    best of five alternating turns each on one LSTM step's gates (128 x 512)."""
    if not _choice:
        with _lock:
            if not _choice:
                _choice.append(_time_both())
    return _choice[0]


def _time_both(turns=5):
    block = np.linspace(-6.0, 6.0, 128 * 512, dtype=np.float32).reshape(128, 512)
    out = np.empty_like(block)
    tanh_rows(block, out)  # compiled, or loaded from numba's cache, before it is timed
    best = [np.inf, np.inf]
    for _ in range(turns):
        for which, run in enumerate((lambda: np.tanh(block, out=out), lambda: tanh_rows(block, out))):
            start = time.perf_counter()
            run()
            best[which] = min(best[which], time.perf_counter() - start)
    return best[0] >= FASTER * best[1]


@compile_kernel
def tanh_rows(a, out):
    """``out = tanh(a)`` for float32 arrays of two axes and one shape (``out`` may be ``a``)."""
    source = np.empty(a.shape[1], dtype=np.float32)
    row = np.empty(a.shape[1], dtype=np.float32)
    for r in range(a.shape[0]):
        x = a[r]
        for j in range(x.shape[0]):
            source[j] = x[j]
        for j in range(x.shape[0]):
            v = np.float64(source[j])
            v = 9.1 if v > 9.1 else v
            v = -9.1 if v < -9.1 else v
            y = v * 0.25
            q = y * y
            n = 2027025.0 + q * (270270.0 + q * (6930.0 + q * 36.0))
            d = 2027025.0 + q * (945945.0 + q * (51975.0 + q * (630.0 + q)))
            numerator = 2.0 * y * n * d
            denominator = d * d + q * n * n
            row[j] = 2.0 * numerator * denominator / (denominator * denominator + numerator * numerator)
        o = out[r]
        for j in range(x.shape[0]):
            o[j] = row[j]
