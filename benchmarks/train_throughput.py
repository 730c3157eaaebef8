"""Training throughput (samples/s of ``fit``): kgraph next to Keras 3 (torch backend) and PyTorch eager.

Every model in ``MODELS`` is trained on the same random data by each framework
in this one run, and the ratios are printed side by side. kgraph and PyTorch
take turns, one epoch per round, and each one's best round is reported (Keras
runs its rounds in a subprocess), so a moment when a shared machine is busy
does not decide a ratio. The floor is the speed of the bare matrix products
(the BLAS calls any NumPy engine must make).

    python benchmarks/train_throughput.py [--models mlp,cnn,lstm] [--rounds 3] [--quick]
"""
import argparse
import os
import subprocess
import sys
import textwrap
import time

import numpy as np

# Keras reads its backend once, at import: the comparison runs it on torch.
os.environ.setdefault("KERAS_BACKEND", "torch")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cnn_models import CNN_KERAS, cnn_data, cnn_floor, cnn_kgraph, cnn_torch  # noqa: E402
from lstm_models import (  # noqa: E402
    GRU_KERAS,
    LSTM_KERAS,
    LSTM_MASKED_KERAS,
    gru_floor,
    gru_kgraph,
    gru_torch,
    lstm_data,
    lstm_floor,
    lstm_kgraph,
    lstm_masked_data,
    lstm_masked_kgraph,
    lstm_torch,
)

import kgraph  # noqa: E402
from kgraph import layers  # noqa: E402

BATCH = 128


def mlp_data(n):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 784)).astype("float32"), rng.integers(0, 10, size=n)


def mlp_kgraph():
    inputs = kgraph.Input(shape=(784,))
    h = layers.Dense(512, activation="relu")(inputs)
    h = layers.Dense(512, activation="relu")(h)
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))


MLP_KERAS = """
def build():
    inputs = keras.Input(shape=(784,))
    h = keras.layers.Dense(512, activation="relu")(inputs)
    h = keras.layers.Dense(512, activation="relu")(h)
    return keras.Model(inputs, keras.layers.Dense(10, activation="softmax")(h))
"""


def mlp_torch():
    import torch
    return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 10))


def mlp_floor(x):
    """Samples/s if a step cost only its 8 matmuls (3 forward, 3 weight grads, 2 input grads)."""
    rng = np.random.default_rng(1)
    w = [rng.normal(size=s).astype("float32") for s in ((784, 512), (512, 512), (512, 10))]
    xb = x[:BATCH]
    h1 = np.maximum(xb @ w[0], 0)
    h2 = np.maximum(h1 @ w[1], 0)
    g3 = (h2 @ w[2])
    steps = 30
    start = time.perf_counter()
    for _ in range(steps):
        a1 = xb @ w[0]
        a2 = h1 @ w[1]
        a3 = h2 @ w[2]
        _ = h2.T @ g3
        g2 = g3 @ w[2].T
        _ = h1.T @ g2
        g1 = a2 @ w[1].T
        _ = xb.T @ g1
        del a1, a3
    return steps * BATCH / (time.perf_counter() - start)


MODELS = {
    "mlp": {"data": mlp_data, "kgraph": mlp_kgraph, "keras": MLP_KERAS, "torch": mlp_torch, "floor": mlp_floor,
            "loss": "sparse_categorical_crossentropy", "samples": 8192},
    "cnn": {"data": cnn_data, "kgraph": cnn_kgraph, "keras": CNN_KERAS, "torch": cnn_torch, "floor": cnn_floor,
            "loss": "sparse_categorical_crossentropy", "samples": 4096},
    "lstm": {"data": lstm_data, "kgraph": lstm_kgraph, "keras": LSTM_KERAS, "torch": lstm_torch, "floor": lstm_floor,
             "loss": "sparse_categorical_crossentropy", "samples": 2048},
    # Masked steps (Masking(0.0) over zero-padded tails): nn.LSTM has no step mask, so no PyTorch entry.
    "lstm_masked": {"data": lstm_masked_data, "kgraph": lstm_masked_kgraph, "keras": LSTM_MASKED_KERAS,
                    "torch": None, "floor": lstm_floor, "loss": "sparse_categorical_crossentropy", "samples": 2048},
    "gru": {"data": lstm_data, "kgraph": gru_kgraph, "keras": GRU_KERAS, "torch": gru_torch, "floor": gru_floor,
            "loss": "sparse_categorical_crossentropy", "samples": 2048},
}


def kgraph_runner(entry):
    """Build and warm up the kgraph model; return a function timing one epoch of ``fit`` (samples/s)."""
    x, y = entry["data"](entry["samples"])
    kgraph.utils.set_random_seed(0)
    model = entry["kgraph"]()
    model.compile(optimizer="adam", loss=entry["loss"])
    model.fit(x[: BATCH * 4], y[: BATCH * 4], batch_size=BATCH, epochs=1, verbose=0)

    def epoch():
        start = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
        return len(x) / (time.perf_counter() - start)
    return epoch


def torch_runner(entry):
    """The same for a PyTorch eager training loop (shuffled batches, Adam, cross-entropy)."""
    import torch
    x, y = entry["data"](entry["samples"])
    torch.manual_seed(0)
    module = entry["torch"]()
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    tx, ty = torch.from_numpy(x), torch.from_numpy(np.asarray(y, dtype=np.int64))

    def run(limit=None):
        order = torch.randperm(len(tx))[:limit]
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            optimizer.zero_grad()
            loss = loss_fn(module(tx[idx]), ty[idx])
            loss.backward()
            optimizer.step()
    run(BATCH * 4)

    def epoch():
        start = time.perf_counter()
        run()
        return len(tx) / (time.perf_counter() - start)
    return epoch


def time_keras(name, entry, rounds):
    """Keras 3 (torch backend) in a subprocess: the best of ``rounds`` one-epoch fits (samples/s)."""
    script = textwrap.dedent(f"""
        import os, sys, time
        os.environ["KERAS_BACKEND"] = "torch"
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import keras
        from train_throughput import MODELS
        entry = MODELS[{name!r}]
    """) + textwrap.dedent(entry["keras"]) + textwrap.dedent(f"""
        x, y = entry["data"](entry["samples"])
        model = build()
        model.compile(optimizer="adam", loss=entry["loss"])
        model.fit(x[:{BATCH * 4}], y[:{BATCH * 4}], batch_size={BATCH}, epochs=1, verbose=0)
        best = 0
        for _ in range({rounds}):
            start = time.perf_counter()
            model.fit(x, y, batch_size={BATCH}, epochs=1, verbose=0)
            best = max(best, len(x) / (time.perf_counter() - start))
        print(best)
    """)
    env = dict(os.environ, KERAS_BACKEND="torch")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr else "failed"
    return float(out.stdout.strip().splitlines()[-1]), None


def available(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating one-epoch rounds per framework; the best of each is reported")
    parser.add_argument("--quick", action="store_true", help="one round on a quarter of the data")
    args = parser.parse_args()
    have_torch, have_keras = available("torch"), available("torch") and available("keras")
    # NumPy's BLAS kernels decide most of kgraph's speed; OPENBLAS_CORETYPE (when set) forces OpenBLAS's choice.
    print(f"numpy {np.__version__}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(OpenBLAS chooses)')}; "
          f"torch {'yes' if have_torch else 'not installed'}; "
          f"keras {'yes' if have_keras else 'not installed'}; batch {BATCH}; Adam")
    header = f"{'model':<8}{'kgraph':>12}{'keras-torch':>14}{'torch eager':>14}{'kg/keras':>10}{'kg/torch':>10}{'floor':>12}{'kg/floor':>10}"
    print(header)
    for name in args.models.split(","):
        entry = dict(MODELS[name])
        rounds = args.rounds
        if args.quick:
            entry["samples"] //= 4
            rounds = 1
        # kgraph and PyTorch take turns, one epoch each, so a busy moment of the machine hits both alike;
        # the best round of each is what the hardware allows it.
        with_torch = have_torch and entry.get("torch") is not None
        runners = [kgraph_runner(entry)] + ([torch_runner(entry)] if with_torch else [])
        best = [0.0] * len(runners)
        for _ in range(rounds):
            for i, epoch in enumerate(runners):
                # The other framework's BLAS/OpenMP threads stop spinning first (see floor.py's PAUSE_S).
                time.sleep(0.3)
                best[i] = max(best[i], epoch())
        ours, torch_sps = best[0], (best[1] if with_torch else None)
        keras_sps = floor = None
        if have_keras:
            keras_sps, err = time_keras(name, entry, rounds)
            if err:
                print(f"  keras failed on {name}: {err}")
        if entry.get("floor"):
            floor = max(entry["floor"](entry["data"](BATCH)[0]) for _ in range(rounds))
        fmt = lambda v: f"{v:,.0f}" if v else "-"  # noqa: E731
        ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "-"  # noqa: E731
        print(f"{name:<8}{fmt(ours):>12}{fmt(keras_sps):>14}{fmt(torch_sps):>14}{ratio(ours, keras_sps):>10}"
              f"{ratio(ours, torch_sps):>10}{fmt(floor):>12}{ratio(ours, floor):>10}")
    print("(samples/s of fit, best round; ratios > 1 mean kgraph is faster; kg/floor is the share of the "
          "bare-matmul speed)")


if __name__ == "__main__":
    main()
