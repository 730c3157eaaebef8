"""Where a kgraph training step's time goes, op by op: each recorded op's forward and its VJP, the optimizer's
update, and the rest (the framework's Python: layer calls, the tape, the loss's wrappers, metrics, the batches).

For each model of ``train_throughput.py`` this times ``fit`` steps plainly, then again with every primitive op's
forward and VJP wrapped in timers (a convolution's VJP pieces are timed when the tape asks for them, so a piece
it never asks for, such as the first layer's input gradient, costs nothing, as in a plain step), and the step's
matrix products alone (``floor.py``'s floor). Times are ms per step, best of ``--rounds`` for the plain step and
the floor, means over the timed rounds for the parts. Ops are named as recorded, the fused convolution+pooling
by its kernel's shape.

    python benchmarks/op_times.py [--models mlp,cnn,lstm] [--rounds 8] [--steps 16]
"""
import argparse
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import numpy as np  # noqa: E402
import train_throughput as tt  # noqa: E402
from floor import floor_steps  # noqa: E402

import kgraph  # noqa: E402
from kgraph.backend import autodiff  # noqa: E402
from kgraph.optimizers.optimizer import Optimizer  # noqa: E402

BATCH = 128


class OpTimer:
    """Adds each op's forward and VJP seconds (by name) while installed."""

    def __init__(self):
        self.forward = collections.defaultdict(float)
        self.backward = collections.defaultdict(float)
        self.apply = 0.0
        self._wrapped = {}  # id(spec) -> (spec, its own fn)

    def _name(self, spec, args):
        if spec.name == "_conv_max_pool" and len(args) > 1:
            return f"conv_max_pool{tuple(np.shape(args[1]))}"
        return spec.name

    def _timed_vjp(self, name, vjp):
        def thunk(piece):
            def run():
                start = time.perf_counter()
                value = piece()
                self.backward[name] += time.perf_counter() - start
                return value
            return run

        def timed(g):
            start = time.perf_counter()
            cts = vjp(g)
            if isinstance(cts, (tuple, list)):
                cts = tuple(thunk(c) if callable(c) and not isinstance(c, np.ndarray) else c for c in cts)
            elif callable(cts) and not isinstance(cts, np.ndarray):
                cts = thunk(cts)
            self.backward[name] += time.perf_counter() - start
            return cts
        return timed

    def _timed_fn(self, spec, fn):
        def timed(*args, **kwargs):
            name = self._name(spec, args)
            start = time.perf_counter()
            out, vjp = fn(*args, **kwargs)
            self.forward[name] += time.perf_counter() - start
            return out, self._timed_vjp(name, vjp)
        return timed

    def install(self):
        record, apply, timer = autodiff._call_and_record, Optimizer.apply, self

        def call_and_record(spec, tapes, args, kwargs):
            if id(spec) not in timer._wrapped:
                timer._wrapped[id(spec)] = (spec, spec.fn)
                spec.fn = timer._timed_fn(spec, spec.fn)
            return record(spec, tapes, args, kwargs)

        def timed_apply(optimizer, *args, **kwargs):
            start = time.perf_counter()
            try:
                return apply(optimizer, *args, **kwargs)
            finally:
                timer.apply += time.perf_counter() - start

        autodiff._call_and_record, Optimizer.apply = call_and_record, timed_apply
        self._restore = (record, apply)

    def uninstall(self):
        autodiff._call_and_record, Optimizer.apply = self._restore
        for spec, fn in self._wrapped.values():
            spec.fn = fn
        self._wrapped.clear()


def seconds(run):
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def report(model, rounds, steps):
    entry = tt.MODELS[model]
    x, y = entry["data"](steps * BATCH)
    kgraph.utils.set_random_seed(0)
    net = entry["kgraph"]()
    net.compile(optimizer="adam", loss=entry["loss"])

    def run():
        net.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)

    products = floor_steps(model, steps)
    timer = OpTimer()
    plain, floor, timed = [], [], 0.0
    for turn in range(rounds + 1):  # turns alternate, so a slow moment of the machine hits all three alike
        plain.append(seconds(run))
        floor.append(seconds(products))
        timer.install()
        try:
            if turn == 0:  # the first turn is a warm-up: nothing of it counts
                run()
                timer.forward.clear(), timer.backward.clear()
                timer.apply = 0.0
            else:
                timed += seconds(run)
        finally:
            timer.uninstall()
    plain, floor = (min(times[1:]) * 1000 / steps for times in (plain, floor))
    timed *= 1000 / (rounds * steps)
    per_step = 1000 / (rounds * steps)
    print(f"{model}: step {plain:.2f} ms (with the timers {timed:.2f}), floor {floor:.2f} ms ({plain / floor:.2f}x)")
    parts = 0.0
    for name in sorted(set(timer.forward) | set(timer.backward),
                       key=lambda n: -(timer.forward[n] + timer.backward[n])):
        fwd, bwd = timer.forward[name] * per_step, timer.backward[name] * per_step
        parts += fwd + bwd
        print(f"  {name:<34} forward {fwd:6.2f}  vjp {bwd:6.2f}  ms")
    apply = timer.apply * per_step
    print(f"  {'optimizer.apply':<34} {apply:6.2f} ms")
    print(f"  {'the rest (framework, data, Python)':<34} {timed - parts - apply:6.2f} ms", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,lstm")
    parser.add_argument("--rounds", type=int, default=8, help="epochs of --steps steps timed, each way")
    parser.add_argument("--steps", type=int, default=16, help="training steps per epoch")
    args = parser.parse_args()
    for model in args.models.split(","):
        if model not in tt.MODELS:
            parser.error(f"unknown model {model!r}; expected some of {', '.join(tt.MODELS)}")
        report(model, args.rounds, args.steps)


if __name__ == "__main__":
    main()
