"""KGRAPH_KERNEL_THREADS: 1 keeps every kernel in the calling thread, with the same values (a fresh process each)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

PROBE = """
import json, threading
import numpy as np
import kgraph
from kgraph.ops.kernels import threads

kgraph.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.standard_normal((128, 12, 12, 8)).astype(np.float32)
model = kgraph.Sequential([kgraph.Input((12, 12, 8)), kgraph.layers.Conv2D(16, 3, activation="relu"),
                           kgraph.layers.MaxPooling2D(2), kgraph.layers.Flatten(), kgraph.layers.Dense(4)])
model.compile(optimizer="adam", loss="mse")
model.fit(x, rng.standard_normal((128, 4)).astype(np.float32), epochs=3, batch_size=128, verbose=0)
sequences = rng.standard_normal((128, 16, 32)).astype(np.float32)
recurrent = kgraph.Sequential([kgraph.Input((16, 32)), kgraph.layers.LSTM(64)])
out = recurrent(sequences)
print(json.dumps({"cores": threads.cores(), "can": threads.can_split(),
                  "threads": sorted(t.name for t in threading.enumerate()),
                  "weights": float(sum(np.abs(w).sum() for w in model.get_weights())),
                  "lstm": float(np.abs(np.asarray(out)).sum())}))
"""


def _probe(value):
    env = {k: v for k, v in os.environ.items() if k != "KGRAPH_KERNEL_THREADS"}
    if value is not None:
        env["KGRAPH_KERNEL_THREADS"] = value
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=env)
    return out


def test_one_kernel_thread_starts_no_worker_and_computes_the_same():
    alone = _probe("1")
    assert alone.returncode == 0, alone.stderr
    alone = json.loads(alone.stdout.strip().splitlines()[-1])
    assert alone["cores"] == 1 and not alone["can"]
    assert not any(name.startswith("kgraph-kernel") for name in alone["threads"])
    default = _probe(None)
    assert default.returncode == 0, default.stderr
    default = json.loads(default.stdout.strip().splitlines()[-1])
    if default["can"]:
        assert "kgraph-kernel_0" in default["threads"]  # the default did share the work
    # Split or whole, the same training and the same LSTM outputs (to float32 rounding of BLAS's blocking).
    assert abs(default["weights"] - alone["weights"]) <= 1e-4 * abs(alone["weights"])
    assert abs(default["lstm"] - alone["lstm"]) <= 1e-5 * abs(alone["lstm"])


def test_a_malformed_value_is_named():
    out = _probe("two")
    assert out.returncode != 0
    assert "KGRAPH_KERNEL_THREADS='two'" in out.stderr and "whole number" in out.stderr


def test_a_split_runs_each_half_on_one_blas_thread_and_restores_the_counts():
    from kgraph.ops.kernels import threads
    if not threads.can_split():
        pytest.skip("one core or no threadpoolctl: nothing is split")
    libraries = threads._blas_controller().lib_controllers
    before = [library.get_num_threads() for library in libraries]
    seen = {}

    def job(part):
        seen[part] = [library.get_num_threads() for library in libraries]
    threads.in_halves(job, "first", "second")
    assert seen == {"first": [1] * len(libraries), "second": [1] * len(libraries)}
    assert [library.get_num_threads() for library in libraries] == before

    def failing(part):
        if part == "second":
            raise RuntimeError("this half failed")
    with pytest.raises(RuntimeError, match="this half failed"):
        threads.in_halves(failing, "first", "second")
    assert [library.get_num_threads() for library in libraries] == before  # restored after an error too


def test_a_library_that_cannot_say_its_thread_count_is_left_alone(monkeypatch):
    from kgraph.ops.kernels import threads

    class Unknown:
        """A BLAS controller whose thread count is unknown: a split must neither set nor restore it."""
        calls = []

        def get_num_threads(self):
            return None

        def set_num_threads(self, count):
            self.calls.append(count)

    class Controller:
        lib_controllers = [Unknown()]
    monkeypatch.setattr(threads, "_blas_controller", lambda: Controller())
    parts = []
    threads.in_halves(parts.append, "first", "second")
    assert sorted(parts) == ["first", "second"] and Unknown.calls == []
    threads.in_halves(parts.append, "third", "fourth")  # the split lock was released
    assert len(parts) == 4
