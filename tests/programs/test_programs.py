"""The acceptance suite: real Keras 3 programs (p_*.py in this folder) run unchanged under kgraph.

Three checks per program, each a test parametrized over the programs:

- ``test_runs_under_kgraph``: the program's main() completes with ``keras`` renamed to ``kgraph``;
- ``test_matches_keras``: where real Keras can run (the ``compare`` extra: Keras 3.15 on torch), the weights of
  the model Keras trained are loaded into the kgraph model with set_weights, and predict, evaluate and the
  program's probes give the same numbers, as do its weight-independent values (float32 tolerance:
  ``harness.RTOL`` and ``harness.ATOL_OF_SCALE``, whose comment says why);
- ``test_exports``: the model kgraph saved to ``NAME.keras`` passes ``python -m export NAME.keras --verify``.

All programs run once per session (``harness.Suite``: child processes, Keras and kgraph never in one process);
the tests read the results. A check that fails today for a reason kgraph must fix is listed in
expectations.py and marked ``xfail(strict=True)`` with that reason, so it has to be un-listed once fixed.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.programs import expectations
from tests.programs.harness import (
    CHECKS,
    FAIL,
    REPO_ROOT,
    SKIP,
    KerasAliasFinder,
    ProgramResult,
    Suite,
    compare,
    program_names,
)

PROGRAMS = program_names()


def _params(check):
    params = []
    for name in PROGRAMS:
        reason = expectations.reason(name, check)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.fixture(scope="module")
def suite(request, tmp_path_factory):
    """Every selected program run once: a Keras worker and kgraph children side by side, then the exports.

    Once per process that runs a test of this module: the README's test command runs the tests in two
    pytest-xdist workers by file (``--dist loadfile`` in pyproject.toml), so this module's tests share one run.
    """
    selected = sorted({item.callspec.params["program"] for item in request.session.items
                       if getattr(item, "callspec", None) is not None and "program" in item.callspec.params
                       and item.module is request.module})
    s = Suite(selected, workdir=tmp_path_factory.mktemp("programs"))
    s.run()
    return s


def _check(suite, program, check):
    status, message = CHECKS[check](suite.results[program], suite)
    if status == SKIP:
        pytest.skip(message)
    if status == FAIL:
        pytest.fail(message, pytrace=False)


@pytest.mark.parametrize("program", _params("runs"))
def test_runs_under_kgraph(suite, program):
    _check(suite, program, "runs")


@pytest.mark.parametrize("program", _params("matches"))
def test_matches_keras(suite, program):
    _check(suite, program, "matches")


@pytest.mark.parametrize("program", _params("exports"))
def test_exports(suite, program):
    _check(suite, program, "exports")


def test_every_expectation_names_a_program_a_check_and_a_cause():
    for program, check in expectations.XFAIL:
        assert program in PROGRAMS and check in CHECKS, (program, check)
        assert expectations.cause(program, check) in expectations.CAUSES, (program, check)


RENAME_PROBE = """
import sys
from tests.programs.harness import KerasAliasFinder, install_keras_alias
before = list(sys.meta_path)
install_keras_alias()
assert len(sys.meta_path) == len(before) + 1 and isinstance(sys.meta_path[0], KerasAliasFinder)
import keras
import keras.layers
from keras import layers, ops
from keras.models import Model
import kgraph
assert keras is kgraph and keras.layers is kgraph.layers and layers is kgraph.layers and ops is kgraph.ops
assert Model is kgraph.Model
assert kgraph.__spec__.name == "kgraph" and kgraph.layers.__spec__.name == "kgraph.layers"
assert sys.modules["keras"] is kgraph and sys.modules["keras.layers"] is kgraph.layers
try:
    import keras.no_such_module
except ModuleNotFoundError as err:
    assert "kgraph.no_such_module" in str(err), err
else:
    raise AssertionError("a module kgraph lacks was found")
assert KerasAliasFinder().find_spec("json") is None and KerasAliasFinder().find_spec("kerasx") is None
print("ok")
"""


def test_the_rename_maps_keras_to_kgraph_and_nothing_else():
    proc = subprocess.run([sys.executable, "-c", RENAME_PROBE], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_the_rename_never_reaches_this_process(suite):
    assert not any(isinstance(f, KerasAliasFinder) for f in sys.meta_path)
    keras = sys.modules.get("keras")
    assert keras is None or keras is not sys.modules.get("kgraph")


def test_a_program_that_fails_is_reported_with_its_stage_and_error():
    r = ProgramResult("p_x", kgraph={"runs": False, "stage": "main",
                                     "error": {"type": "AttributeError", "message": "no zero_grad", "traceback": ""}})
    status, message = CHECKS["runs"](r, None)
    assert status == FAIL and "stage 'main'" in message and "AttributeError: no zero_grad" in message
    status, message = CHECKS["exports"](r, None)
    assert status == FAIL and "does not run under kgraph" in message


def test_the_comparison_reports_keys_dtypes_and_values():
    assert compare({"a": np.float32(1.0)}, {"a": np.float32(1.0 + 1e-6)}, "x") == []
    assert "differ beyond" in compare({"a": np.ones(3, "float32")}, {"a": np.full(3, 1.01, "float32")}, "x")[0]
    assert "only in Keras's ['b']" in compare({"a": 1, "b": 2}, {"a": 1}, "x")[0]
    assert "differs" in compare({"a": np.array(["x"])}, {"a": np.array(["y"])}, "x")[0]
    assert "kgraph None" in compare({"g": [np.ones((2, 2))]}, {"g": [None]}, "x")[0]  # a missing gradient
    assert compare({"g": [None, "s"]}, {"g": [None, "s"]}, "x") == []
