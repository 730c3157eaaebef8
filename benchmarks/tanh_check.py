"""The compiled float32 tanh of the recurrent kernels (``kgraph.ops.kernels.fused_tanh``) against NumPy's.

Checks every float32 from 0 up to 9.2 (1.09e9 values; tanh rounds to 1 from 9.02 on, and the function is odd)
against float64's tanh rounded to float32, counts how often NumPy's own float32 tanh differs from that on a
random sample, and times both, interleaved, on one LSTM step's gates (128 x 512, in place), best of N.

    python benchmarks/tanh_check.py [--rounds 300] [--skip-exhaustive]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kgraph.ops.kernels import fused_tanh  # noqa: E402  (needs numba: the `fast` extra)


def exhaustive(chunk=1 << 24):
    """``(values, mismatches, largest difference in units in the last place)`` over every float32 in [0, 9.2]."""
    top = int(np.array([9.2], np.float32).view(np.int32)[0]) + 1
    mismatches, worst = 0, 0
    for start in range(0, top, chunk):
        bits = np.arange(start, min(start + chunk, top), dtype=np.int32)
        x = bits.view(np.float32).reshape(1, -1)
        got = np.empty_like(x)
        fused_tanh.tanh_rows(x, got)
        expected = np.tanh(x.astype(np.float64)).astype(np.float32)
        ulps = np.abs(got.view(np.int32).astype(np.int64) - expected.view(np.int32))
        mismatches += int(np.count_nonzero(ulps))
        worst = max(worst, int(ulps.max()))
    return top, mismatches, worst


def numpy_accuracy(n=1 << 22):
    """Fraction of NumPy's float32 tanh values (standard normal inputs times 3) off the correctly rounded one,
    and the largest difference in units in the last place."""
    x = (np.random.default_rng(0).standard_normal(n) * 3).astype(np.float32)
    ulps = np.abs(np.tanh(x).view(np.int32).astype(np.int64)
                  - np.tanh(x.astype(np.float64)).astype(np.float32).view(np.int32))
    return np.count_nonzero(ulps) / n, int(ulps.max())


def timing(rounds):
    """Best-of-``rounds`` ns an element of ``np.tanh`` and ``tanh_rows`` on a 128 x 512 block, in place."""
    block = (np.random.default_rng(1).standard_normal((128, 512)) * 3).astype(np.float32)
    work = block.copy()
    fused_tanh.tanh_rows(work, work)  # compiled (or loaded from the cache) before timing
    best = {"numpy": np.inf, "compiled": np.inf}
    for _ in range(rounds):
        for name, run in (("numpy", lambda: np.tanh(work, out=work)),
                          ("compiled", lambda: fused_tanh.tanh_rows(work, work))):
            np.copyto(work, block)
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: seconds / block.size * 1e9 for name, seconds in best.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--skip-exhaustive", action="store_true")
    args = parser.parse_args()
    ns = timing(args.rounds)
    print(f"tanh of 128 x 512 float32, in place: NumPy {ns['numpy']:.2f} ns an element, compiled "
          f"{ns['compiled']:.2f} ns; NumPy / compiled {ns['numpy'] / ns['compiled']:.2f}x")
    share, worst = numpy_accuracy()
    print(f"NumPy's float32 tanh: {share:.1%} of 4M random values off the correctly rounded one (at most {worst} "
          "ulp)")
    if not args.skip_exhaustive:
        start = time.perf_counter()
        values, mismatches, worst = exhaustive()
        print(f"compiled tanh, every float32 in [0, 9.2] ({values:,} values, {time.perf_counter() - start:.0f} s): "
              f"{mismatches} off the correctly rounded one (at most {worst} ulp)")


if __name__ == "__main__":
    main()
