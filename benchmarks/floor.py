"""Training step time over its matrix-product floor, and next to PyTorch eager, side by side in one run.

For each model of ``train_throughput.py`` (MLP 784-512-512-10, the digits CNN,
LSTM(128) on 32x64 by default; also GRU(128) and the masked LSTM; batch 128, Adam) this starts one worker process per
contender: kgraph (this tree, with its compiled kernels where numba is installed;
with ``--numpy-too`` also this tree with them off, and optionally a git revision
with ``--baseline``), PyTorch eager, and the floor (the step's matrix products
alone, run by NumPy's BLAS on arrays of the step's shapes). The workers take
turns 0.3 s apart, each running ``--steps`` training steps untimed and then
timing as many (kgraph through ``fit``), and the best round of each is kept,
so a busy moment of a shared machine hits all alike. Each worker also reports its peak RSS (its own
process: the framework, the model, the data and the steps).

    python benchmarks/floor.py [--models mlp,cnn,lstm] [--rounds 15] [--steps 8] [--processes 1] [--numpy-too]
                               [--baseline HEAD | --baseline-root DIR] [--env NAME=VALUE ...]
    python benchmarks/floor.py --models mlp --by-hand   # also the MLP's step by hand in NumPy, no framework
    python benchmarks/floor.py --profile mlp   # cProfile of kgraph steps, the top functions by own time
    python benchmarks/floor.py --breakdown     # ms of forward, loss, gradient, optimizer next to the floor

The MLP's floor is its 8 products (3 forward, 3 weight gradients, 2 input
gradients); the LSTM's the input projection, 32 recurrent products forward and
32 back, and the two weight gradients; the CNN's the im2col products of a plain
engine (kgraph runs its second convolution as Winograd, below that floor).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The worker: builds one contender for one model, then times ``steps`` steps per line read from stdin.
WORKER = r"""
import resource, sys, time
sys.path.insert(0, {root!r})
import kgraph  # this tree's (or the revision's) package, before the benchmarks put ROOT on the path
sys.path.insert(1, {bench!r})
import numpy as np
import floor
run = floor.CONTENDERS[{kind!r}]({model!r}, {steps})
run()
print("ready", flush=True)
for line in sys.stdin:
    run()  # untimed: after the pause between turns, cores and thread pools wake up during this one
    start = time.perf_counter()
    run()
    ms = (time.perf_counter() - start) * 1000 / {steps}
    print(ms, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, flush=True)
"""


BATCH = 128
# Seconds between turns. A BLAS or OpenMP pool keeps its threads spinning for a while after its last
# product (OpenBLAS about 2**28 cycles), so a turn started right after another contender's ran beside
# those threads: measured here, the floor's products after kgraph's turn took 27 ms against 14 ms after a
# pause, PyTorch's LSTM step 30 ms against 17 ms. After this pause every turn starts on idle cores, and
# each worker runs its steps once untimed before the timed run: on this virtual machine the first steps after
# an idle pause are slow while halted cores and sleeping threads wake (kgraph's CNN: 40 ms, then 15 ms).
PAUSE_S = 0.3


def kgraph_steps(model, steps):
    """Build and compile ``model`` in kgraph; return a function running ``steps`` steps of ``fit``."""
    import train_throughput as tt

    import kgraph
    entry = tt.MODELS[model]
    x, y = entry["data"](steps * BATCH)
    kgraph.utils.set_random_seed(0)
    net = entry["kgraph"]()
    net.compile(optimizer="adam", loss=entry["loss"])
    return lambda: net.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)


def torch_steps(model, steps):
    """The same model as a PyTorch eager loop (shuffled batches, Adam, cross-entropy)."""
    import numpy as np
    import torch
    import train_throughput as tt
    entry = tt.MODELS[model]
    x, y = entry["data"](steps * BATCH)
    torch.manual_seed(0)
    module = entry["torch"]()
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    tx, ty = torch.from_numpy(x), torch.from_numpy(np.asarray(y, dtype=np.int64))

    def run():
        order = torch.randperm(len(tx))
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            optimizer.zero_grad()
            loss_fn(module(tx[idx]), ty[idx]).backward()
            optimizer.step()
    return run


def _products(model):
    """``(a_shape, b_shape)`` of every matrix product of one training step of ``model``."""
    if model == "mlp":
        dims = (784, 512, 512, 10)
        forward = [((BATCH, i), (i, o)) for i, o in zip(dims, dims[1:])]
        weights = [((i, BATCH), (BATCH, o)) for i, o in zip(dims, dims[1:])]
        inputs = [((BATCH, o), (o, i)) for i, o in zip(dims[1:-1], dims[2:])]
        return forward + weights + inputs
    if model in ("lstm", "lstm_masked", "gru"):  # masked steps change no product; the GRU has 3 gates
        t, f, u, g = 32, 64, 128, 3 if model == "gru" else 4
        return ([((t * BATCH, f), (f, g * u))] + [((BATCH, u), (u, g * u))] * t + [((BATCH, g * u), (g * u, u))] * t
                + [((u, t * BATCH), (t * BATCH, g * u)), ((f, t * BATCH), (t * BATCH, g * u)),
                   ((BATCH, u), (u, 10)), ((u, BATCH), (BATCH, 10))])
    if model == "cnn":
        shapes = [(BATCH * 26 * 26, 9, 32), (BATCH * 11 * 11, 288, 64), (BATCH, 1600, 128), (BATCH, 128, 10)]
        out = []
        for i, (m, k, n) in enumerate(shapes):
            out += [((m, k), (k, n)), ((k, m), (m, n))] + ([((m, n), (n, k))] if i else [])
        return out
    raise ValueError(f"Unknown model {model!r}; expected one of mlp, cnn, lstm")


def floor_steps(model, steps):
    """The step's matrix products alone, on random float32 operands of the step's shapes."""
    import numpy as np
    rng = np.random.default_rng(1)
    pairs = [(rng.random(a, dtype=np.float32), rng.random(b, dtype=np.float32)) for a, b in _products(model)]
    outs = [np.empty((a.shape[0], b.shape[1]), np.float32) for a, b in pairs]

    def run():
        for _ in range(steps):
            for (a, b), out in zip(pairs, outs):
                np.matmul(a, b, out=out)
    return run


def hand_steps(model, steps):
    """The MLP's step written by hand in NumPy, no framework at all (``framework_overhead.HandStep``: the same
    products, biases, relu, softmax, crossentropy and Adam, with kgraph's compiled loops where numba is
    installed), on shuffled batches gathered as ``fit`` gathers them: what an engine built on NumPy's BLAS could
    reach at best."""
    if model != "mlp":
        raise ValueError(f"--by-hand times the MLP's step only; received {model!r}")
    import numpy as np
    import train_throughput as tt
    from framework_overhead import PHASES, HandStep

    import kgraph
    x, y = tt.MODELS[model]["data"](steps * BATCH)
    kgraph.utils.set_random_seed(0)
    hand = HandStep(tt.MODELS[model]["kgraph"]().get_weights())
    rng = np.random.default_rng(0)

    def run():
        seconds = {phase: [] for phase in PHASES}
        order = rng.permutation(len(x))
        for i in range(0, len(order), BATCH):
            rows = order[i:i + BATCH]
            hand.step(x[rows], y[rows], seconds)
    return run


CONTENDERS = {"kgraph": kgraph_steps, "torch": torch_steps, "floor": floor_steps, "numpy": hand_steps}


def checkout(revision, into):
    """The ``kgraph`` package of ``revision`` unpacked under ``into`` (as revision_compare.py does)."""
    sys.path.insert(0, HERE)
    from revision_compare import checkout as unpack
    return unpack(revision, into)


def start(root, kind, model, steps, env=None):
    code = WORKER.format(root=root, bench=HERE, kind=kind, model=model, steps=steps)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=None if env is None else {**os.environ, **env})
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the {kind} worker for {model} did not start")
    return proc


def round_of(proc):
    time.sleep(PAUSE_S)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    ms, rss = proc.stdout.readline().split()
    return float(ms), float(rss)


def compare(model, contenders, rounds, steps, processes=1):
    """Best ms per step and peak RSS (MiB) of each contender ``(label, root, kind, env)``, turns interleaved.

    With ``processes`` > 1 each contender runs in that many worker processes (started in turn, so that no
    contender's are all started first) and keeps its best: a process's speed depends on where its memory
    landed, stable for its life (identical trees in two processes ran their MLP step 7 % apart, and either
    one could be the faster), which best-of-turns inside one process cannot average out."""
    slots = [c for _ in range(processes) for c in range(len(contenders))]
    workers = [start(contenders[c][1], contenders[c][2], model, steps, contenders[c][3]) for c in slots]
    best = [float("inf")] * len(contenders)
    rss = [0.0] * len(contenders)
    try:
        for r in range(rounds):
            # Who goes first rotates, so no contender always runs right after the same other one.
            order = list(range(len(workers)))
            order = order[r % len(order):] + order[:r % len(order)]
            for i in order:
                ms, peak = round_of(workers[i])
                best[slots[i]] = min(best[slots[i]], ms)
                rss[slots[i]] = max(rss[slots[i]], peak)
    finally:
        for proc in workers:
            proc.stdin.close()
            proc.wait()
    return best, rss


def profile(model, steps):
    import cProfile
    import pstats
    sys.path.insert(0, ROOT)
    sys.path.insert(1, HERE)
    run = CONTENDERS["kgraph"](model, steps)
    run()
    profiler = cProfile.Profile()
    profiler.enable()
    run()
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)


def breakdown(model, rounds):
    """Best-of-``rounds`` ms of each part of one kgraph step (forward, loss, gradient, optimizer), and the
    whole ``fit`` step and the floor, timed in this process."""
    import time

    import train_throughput as tt
    from framework_overhead import PHASES, kgraph_step

    import kgraph
    entry = tt.MODELS[model]
    x, y = entry["data"](BATCH)
    kgraph.utils.set_random_seed(0)
    net = entry["kgraph"]()
    net.compile(optimizer="adam", loss=entry["loss"])
    net.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    step, products = kgraph_steps(model, 8), floor_steps(model, 1)
    parts = {"forward": [], "loss": [], "gradient": [], "optimizer": [], "fit step": [], "floor": []}
    seconds = {phase: [] for phase in PHASES}
    for _ in range(rounds):
        kgraph_step(net, x, y, seconds)
        for phase in PHASES:
            parts[phase].append(seconds[phase][-1] * 1000)
        start = time.perf_counter()
        step()
        parts["fit step"].append((time.perf_counter() - start) * 1000 / 8)
        start = time.perf_counter()
        products()
        parts["floor"].append((time.perf_counter() - start) * 1000)
    best = {name: min(times) for name, times in parts.items()}
    print(f"{model}: " + ", ".join(f"{name} {ms:.2f} ms" for name, ms in best.items())
          + f"; fit step / floor {best['fit step'] / best['floor']:.2f}x; "
          f"fit step - (forward + loss + gradient + optimizer) {best['fit step'] - sum(list(best.values())[:4]):.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,lstm")
    parser.add_argument("--rounds", type=int, default=15, help="turns per contender; the best is reported")
    parser.add_argument("--steps", type=int, default=8, help="training steps timed per turn")
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes per contender, each keeping its best (a process's speed varies with "
                             "where its memory lands: 3 evens that out)")
    parser.add_argument("--baseline", help="also time kgraph at this git revision (e.g. HEAD)")
    parser.add_argument("--baseline-root", help="or the kgraph package under this directory (a copy of a revision)")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    parser.add_argument("--by-hand", action="store_true",
                        help="also time the MLP's step written by hand in NumPy, with no framework (MLP only)")
    parser.add_argument("--numpy-too", action="store_true",
                        help="also time this tree with KGRAPH_COMPILED_KERNELS=0 (NumPy only; the same without numba)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="also time this tree with NAME=VALUE in its environment (repeatable: one contender "
                             "each), e.g. OPENBLAS_THREAD_TIMEOUT=24")
    parser.add_argument("--profile", metavar="MODEL", help="profile kgraph's steps on MODEL instead")
    parser.add_argument("--breakdown", action="store_true",
                        help="time the parts of one kgraph step of each model instead (in this process)")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    import train_throughput as tt
    torchless = [m for m in args.models.split(",") if m in tt.MODELS and tt.MODELS[m].get("torch") is None]
    if torchless and not args.no_torch and not (args.profile or args.breakdown):
        parser.error(f"{', '.join(torchless)} has no PyTorch model (nn.LSTM has no step mask): pass --no-torch")
    if args.by_hand and args.models != "mlp":
        parser.error("--by-hand times the MLP's step only: pass --models mlp")
    if args.processes < 1:
        parser.error(f"--processes expects 1 or more worker processes per contender; received {args.processes}")
    if args.profile:
        profile(args.profile, args.steps)
        return
    if args.breakdown:
        sys.path[:0] = [ROOT, HERE]
        for model in args.models.split(","):
            breakdown(model, args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        contenders = [("kgraph", ROOT, "kgraph", None)]
        if args.numpy_too:
            contenders.append(("kgraph-numpy", ROOT, "kgraph", {"KGRAPH_COMPILED_KERNELS": "0"}))
        for setting in args.env:
            name, equals, value = setting.partition("=")
            if not equals or not name:
                parser.error(f"--env expects NAME=VALUE; received {setting!r}")
            contenders.append((f"kgraph+{setting}", ROOT, "kgraph", {name: value}))
        if args.baseline:
            contenders.append((f"kgraph@{args.baseline}", checkout(args.baseline, tmp), "kgraph", None))
        elif args.baseline_root:
            contenders.append(("kgraph@base", os.path.abspath(args.baseline_root), "kgraph", None))
        if not args.no_torch:
            contenders.append(("torch", ROOT, "torch", None))
        if args.by_hand:
            contenders.append(("numpy", ROOT, "numpy", None))
        contenders.append(("floor", ROOT, "floor", None))
        labels = [label for label, _, _, _ in contenders]
        print(f"batch 128, Adam; ms per step, best of {args.rounds} interleaved turns of {args.steps} steps in each of "
              f"{args.processes} worker process(es) per contender; peak RSS of each contender's workers in MiB")
        print(f"{'model':<6}" + "".join(f"{label:>17}" for label in labels)
              + "".join(f"{label + '/floor':>24}" for label in labels[:-1])
              + ("".join(f"{'torch/' + label:>24}" for label in labels if label.startswith("kgraph"))
                 if not args.no_torch else ""))
        for model in args.models.split(","):
            best, rss = compare(model, contenders, args.rounds, args.steps, args.processes)
            times = dict(zip(labels, best))
            row = f"{model:<6}" + "".join(f"{ms:>9.2f} ms {mib:>4.0f}" for ms, mib in zip(best, rss))
            row += "".join(f"{times[label] / times['floor']:>23.2f}x" for label in labels[:-1])
            if not args.no_torch:
                row += "".join(f"{times['torch'] / times[label]:>23.2f}x" for label in labels
                               if label.startswith("kgraph"))
            print(row, flush=True)
    print("(x/floor: step time over the matrix products' time, lower is better; torch/kgraph: above 1 means "
          "kgraph's step is faster)")


if __name__ == "__main__":
    main()
