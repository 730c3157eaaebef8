"""The framework's share of a training step: kgraph's MLP step next to the same step written by hand in NumPy.

Both run in this one process, taking turns step by step on the same batches
(MLP 784-512-512-10, batch 128, sparse crossentropy, Adam): kgraph through a
GradientTape as ``train_step`` does (forward, loss, gradient, ``optimizer.apply``),
the hand-written step with the same products, biases, relu, softmax and Adam
(kgraph's compiled loops where numba is installed, as kgraph uses them) and
no framework: no layers, tape, loss objects or optimizer bookkeeping. The
difference per phase is what the framework adds *in a step*, where each
phase starts with caches that the step's products and Adam (about 19 MB of
weights, gradients and moments) have just swept: measured so, kgraph's
Python costs about three times what it costs run alone in a loop.

Before timing, one step of each from the same weights is compared (the
hand-written step must be the same math: the script stops if the weights
differ by more than float32 rounding).

    python benchmarks/framework_overhead.py [--steps 400]
"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import train_throughput as tt  # noqa: E402

import kgraph  # noqa: E402
from kgraph.backend.autodiff import GradientTape  # noqa: E402
from kgraph.ops.kernels import compiled  # noqa: E402

PHASES = ("forward", "loss", "gradient", "optimizer")


class HandStep:
    """The MLP's training step in plain NumPy on copies of ``weights`` (kernel, bias, ... per layer)."""

    def __init__(self, weights, beta_1=0.9, beta_2=0.999, epsilon=1e-7, learning_rate=0.001):
        self.w = [np.array(w) for w in weights]
        self.m = [np.zeros_like(w) for w in self.w]
        self.v = [np.zeros_like(w) for w in self.w]
        self.rates = (1.0 - beta_1, 1.0 - beta_2)
        self.betas, self.epsilon, self.learning_rate, self.t = (beta_1, beta_2), epsilon, learning_rate, 0
        self.fused = compiled.kernels(self.w[0].size)

    def _relu(self, a):
        if self.fused is None:
            return np.maximum(a, 0)
        out = np.empty_like(a)
        self.fused.relu(a.reshape(-1), out.reshape(-1), a.dtype.type(0))
        return out

    def _relu_gradient(self, g, a):
        if self.fused is None:
            return g * (a > 0)
        out = np.empty_like(g)
        self.fused.relu_gradient(g.reshape(-1), a.reshape(-1), out.reshape(-1), a.dtype.type(0), a.dtype.type(1))
        return out

    def _adam(self, gradients):
        self.t += 1
        alpha = self.learning_rate * math.sqrt(1.0 - self.betas[1] ** self.t) / (1.0 - self.betas[0] ** self.t)
        for w, g, m, v in zip(self.w, gradients, self.m, self.v):
            if self.fused is not None:
                constants = [w.dtype.type(c) for c in (*self.rates, alpha, self.epsilon)]
                self.fused.adam(w.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1), *constants)
                continue
            m += (g - m) * self.rates[0]
            v += (np.square(g) - v) * self.rates[1]
            w -= m / (np.sqrt(v) + self.epsilon) * alpha

    def step(self, x, labels, seconds):
        """One step; adds each phase's seconds to ``seconds``."""
        w, marks = self.w, [time.perf_counter()]
        a1 = x @ w[0]
        a1 += w[1]
        h1 = self._relu(a1)
        a2 = h1 @ w[2]
        a2 += w[3]
        h2 = self._relu(a2)
        a3 = h2 @ w[4]
        a3 += w[5]
        e = np.exp(a3 - np.max(a3, axis=-1, keepdims=True))
        p = e / np.sum(e, axis=-1, keepdims=True)
        marks.append(time.perf_counter())
        rows = np.arange(len(labels))
        loss = float(np.mean(-np.log(np.clip(p[rows, labels], 1e-7, 1 - 1e-7))))
        d3 = p.copy()
        d3[rows, labels] -= 1
        d3 /= len(labels)
        marks.append(time.perf_counter())
        g = [None] * 6
        g[4], g[5] = h2.T @ d3, d3.sum(axis=0)
        d2 = self._relu_gradient(d3 @ w[4].T, a2)
        g[2], g[3] = h1.T @ d2, d2.sum(axis=0)
        d1 = self._relu_gradient(d2 @ w[2].T, a1)
        g[0], g[1] = x.T @ d1, d1.sum(axis=0)
        marks.append(time.perf_counter())
        self._adam(g)
        marks.append(time.perf_counter())
        for phase, start, end in zip(PHASES, marks, marks[1:]):
            seconds[phase].append(end - start)
        return loss


def kgraph_step(net, x, labels, seconds):
    """One step as ``train_step`` takes it (forward and loss under a tape, gradient, apply), timed by phase."""
    marks = [time.perf_counter()]
    with GradientTape() as tape:
        y_pred = net(x, training=True)
        marks.append(time.perf_counter())
        loss = net.compute_loss(x, labels, y_pred)
    marks.append(time.perf_counter())
    variables = net.trainable_weights
    grads = tape.gradient(loss, variables)
    marks.append(time.perf_counter())
    net.optimizer.apply(grads, variables)
    marks.append(time.perf_counter())
    for phase, start, end in zip(PHASES, marks, marks[1:]):
        seconds[phase].append(end - start)
    return float(loss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="steps of each, taking turns")
    args = parser.parse_args()
    entry = tt.MODELS["mlp"]
    x, y = entry["data"](16 * tt.BATCH)
    kgraph.utils.set_random_seed(0)
    net = entry["kgraph"]()
    net.compile(optimizer="adam", loss=entry["loss"])
    hand = HandStep(net.get_weights())
    scratch = {phase: [] for phase in PHASES}
    batches = [(x[i:i + tt.BATCH], y[i:i + tt.BATCH]) for i in range(0, len(x), tt.BATCH)]
    losses = kgraph_step(net, *batches[0], scratch), hand.step(*batches[0], scratch)
    # Adam's first step moves each weight by about the learning rate (1e-3) whatever its gradient's size, so
    # the weights after it agree to float32 rounding of that step.
    worst = max(float(np.max(np.abs(a - b))) for a, b in zip(net.get_weights(), hand.w))
    if worst > 1e-6 or abs(losses[0] - losses[1]) > 1e-6:
        sys.exit(f"the hand-written step is not kgraph's: losses {losses}, weights differ by up to {worst:.2e}")
    times = {"kgraph": {p: [] for p in PHASES}, "NumPy": {p: [] for p in PHASES}}
    for i in range(args.steps):
        xb, yb = batches[i % len(batches)]
        kgraph_step(net, xb, yb, times["kgraph"])
        hand.step(xb, yb, times["NumPy"])
    print(f"MLP 784-512-512-10, batch 128, Adam; {args.steps} steps each, taking turns; µs per phase, median "
          f"(10th percentile); numba {'on' if hand.fused is not None else 'off'}; first step's weights agree "
          f"within {worst:.1e}")
    print(f"{'phase':<11}{'kgraph':>20}{'NumPy by hand':>20}{'framework':>20}")
    totals = {name: 0.0 for name in times}
    for phase in PHASES:
        cells = []
        for name in times:
            a = np.array(times[name][phase]) * 1e6
            totals[name] += np.median(a)
            cells.append(f"{np.median(a):>10.0f} ({np.quantile(a, 0.1):>5.0f})")
        extra = np.median(np.array(times["kgraph"][phase])) - np.median(np.array(times["NumPy"][phase]))
        print(f"{phase:<11}{cells[0]:>20}{cells[1]:>20}{extra * 1e6:>15.0f} µs")
    share = (totals["kgraph"] - totals["NumPy"]) / totals["kgraph"]
    print(f"{'step':<11}{totals['kgraph']:>10.0f}{'':>10}{totals['NumPy']:>10.0f}{'':>10}"
          f"{totals['kgraph'] - totals['NumPy']:>15.0f} µs ({share:.0%} of kgraph's step)")


if __name__ == "__main__":
    main()
