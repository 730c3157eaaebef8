"""The first split of work between two threads shortens OpenBLAS's spin (a fresh process each: it is global)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

PROBE = """
import json, os
import numpy as np  # the library starts its threads here, before kgraph
a = np.arange(256 * 256, dtype=np.float64).reshape(256, 256) % 7
before = a @ a
from kgraph.ops.kernels import threads
can = threads.can_split()
print(json.dumps({"can": can, "env": os.environ.get("OPENBLAS_THREAD_TIMEOUT"),
                  "same": bool((a @ a == before).all()), "again": threads.shorten_blas_spin(threads._controller)
                  if can else []}))
"""


def _probe(env):
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**{k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}, **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_spin_is_shortened_once_and_products_stay_the_same():
    result = _probe({})
    if not result["can"]:
        pytest.skip("one core or no threadpoolctl: nothing is split, BLAS is left as it is")
    assert result["env"] == "20"
    assert result["same"]  # the restarted threads compute the same product
    assert result["again"] == []  # set once; a second call leaves the library alone


THREADED = """
import json, os, threading
import numpy as np
stop = threading.Event()
helper = threading.Thread(target=stop.wait)
helper.start()
from kgraph.ops.kernels import threads
can = threads.can_split()
stop.set()
helper.join()
print(json.dumps({"can": can, "env": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}))
"""


def test_nothing_is_restarted_while_another_python_thread_runs():
    out = subprocess.run([sys.executable, "-c", THREADED], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["env"] is None


def test_a_spin_the_user_set_is_kept():
    result = _probe({"OPENBLAS_THREAD_TIMEOUT": "24"})
    assert result["env"] == "24"
    assert result["same"] and result["again"] == []
