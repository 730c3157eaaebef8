"""Graph build and run time for chains and stacked wide diamonds of N = 1k, 10k, 100k nodes.

Graphs: a chain of Identity layers, a chain of ``x + 1`` op nodes (``kgraph.ops.add``
called through the ``+`` operator, each an Operation with its own node and shape
inference), and stacked wide diamonds of Identity layers merged by Average.

Prints seconds per phase and the ratio to the previous size: linear cost means
about 10x per 10x. (Keras 3 raises RecursionError near 1,000 chained layers.)

    python benchmarks/graph_build.py [--sizes 1000,10000,100000] [--width 8]
"""
import argparse
import gc
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kgraph  # noqa: E402
from kgraph import layers  # noqa: E402


def chain(n, width):
    x = kgraph.Input(shape=(4,))
    h = x
    for _ in range(n):
        h = layers.Identity()(h)
    return x, h


def op_chain(n, width):
    x = kgraph.Input(shape=(4,))
    h = x
    for _ in range(n):
        h = h + 1.0
    return x, h


def diamonds(n, width):
    """Blocks of ``width`` parallel Identity layers merged by an Average, stacked to about ``n`` layers."""
    x = kgraph.Input(shape=(4,))
    h = x
    for _ in range(max(1, n // (width + 1))):
        h = layers.Average()([layers.Identity()(h) for _ in range(width)])
    return x, h


def measure(builder, n, width):
    kgraph.utils.clear_session()
    gc.collect()  # start each size without the previous size's garbage
    start = time.perf_counter()
    x, y = builder(n, width)
    called = time.perf_counter()
    model = kgraph.Model(x, y)
    mapped = time.perf_counter()
    model.predict(np.ones((2, 4), "float32"), verbose=0)
    ran = time.perf_counter()
    return {"call": called - start, "map": mapped - called, "run": ran - mapped, "total": ran - start,
            "nodes": len(model.operations)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--width", type=int, default=8)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'graph':<10}{'N':>8}{'nodes':>9}{'call s':>9}{'map s':>9}{'run s':>9}{'total s':>9}{'x prev':>8}")
    for name, builder in (("chain", chain), ("op chain", op_chain), ("diamonds", diamonds)):
        measure(builder, 100, args.width)  # warm-up: first-call costs are not part of the scaling
        previous = None
        for n in sizes:
            r = measure(builder, n, args.width)
            growth = f"{r['total'] / previous:.1f}x" if previous else "-"
            print(f"{name:<10}{n:>8}{r['nodes']:>9}{r['call']:>9.2f}{r['map']:>9.2f}{r['run']:>9.2f}"
                  f"{r['total']:>9.2f}{growth:>8}")
            previous = r["total"]


if __name__ == "__main__":
    main()
