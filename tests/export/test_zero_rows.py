"""0-row batches: native predict/evaluate give empty outputs, exported graphs run them or the abort is reported."""
import re

import numpy as np
import onnx
import pytest

import kgraph
from export import to_onnx
from export.isolation import run_isolated
from export.verify import LEVELS, make_inputs, native_outputs, verify
from kgraph import layers as L
from tests.export import zoo

# onnxruntime's LSTM and GRU kernels abort the process on a 0-row batch (std::terminate, SIGABRT).
ABORTING_OPS = {"LSTM", "GRU"}


def _inputs(name, batch):
    return make_inputs(zoo.shared(name), batch, sampler=zoo.entry(name).sampler, seed=batch)


@pytest.mark.parametrize("name", zoo.names())
def test_predict_on_zero_rows_gives_empty_outputs_with_trailing_shapes(name):
    model = zoo.shared(name)
    empty, one = native_outputs(model, _inputs(name, 0)), native_outputs(model, _inputs(name, 1))
    assert [y.shape for y in empty] == [(0,) + y.shape[1:] for y in one]
    assert [y.dtype for y in empty] == [y.dtype for y in one]


def test_evaluate_on_zero_rows_reports_reset_metrics():
    x = kgraph.Input(shape=(4,), name="x")
    model = kgraph.Model(x, L.Dense(3, activation="softmax")(L.Dense(5)(x)))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    logs = model.evaluate(np.zeros((0, 4), np.float32), np.zeros((0,), np.int64), verbose=0, return_dict=True)
    assert logs == {"loss": 0.0, "accuracy": 0.0}
    assert model.predict(np.zeros((0, 4), np.float32), verbose=0).shape == (0, 3)


def test_exported_zoo_runs_zero_rows_or_reports_the_aborting_node(tmp_path):
    names = zoo.names()
    runs, ops = [], {}
    for name in names:
        model, path = zoo.shared(name), tmp_path / f"{name}.onnx"
        proto = to_onnx(model, path)
        ops[name] = {node.op_type for node in proto.graph.node}
        runs.append((path, _inputs(name, 0), list(model.output_names)))
    outcomes = run_isolated(runs, LEVELS)
    for name, (_, feed, _), outcome in zip(names, runs, outcomes):
        assert not outcome.error, f"{name}: {outcome.error}"
        if ops[name] & ABORTING_OPS:
            assert outcome.abort.startswith("onnxruntime aborted the process (SIGABRT) at ORT_ENABLE_ALL in node"), name
            op = outcome.abort.rsplit("(op ", 1)[1].rstrip(")")
            assert op in ops[name] & ABORTING_OPS, f"{name}: {outcome.abort}"
            continue
        assert not outcome.abort, f"{name}: {outcome.abort}"
        expected = native_outputs(zoo.shared(name), feed)
        for level in LEVELS:
            assert [y.shape for y in outcome.outputs[level]] == [y.shape for y in expected], f"{name} {level}"


def _reshape_shapes(proto):
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    return sorted(initializers[node.input[1]].tolist() for node in proto.graph.node
                  if node.op_type == "Reshape" and node.input[1] in initializers)


def test_reshapes_write_resolved_sizes():
    x = kgraph.Input(shape=(24,), name="x")
    sequence = kgraph.Input(shape=(None, 6), name="sequence")
    fixed = L.Reshape((4, -1))(x)
    dynamic = L.Reshape((-1, 3))(sequence)
    model = zoo.perturb(kgraph.Model([x, sequence], [fixed, dynamic]))
    proto = to_onnx(model)
    assert _reshape_shapes(proto) == [[0, 4, 6]]  # and one computed from the sequence's length
    report = verify(model, proto, batches=(0, 2), print_fn=None)
    assert report.ok and not report.findings
    assert {(c.batch, c.steps) for c in report.comparisons} == {(0, 5), (2, 5), (0, 9), (2, 9)}
    # Bidirectional's concatenation of its two directions: the size written, not -1.
    concat = zoo.perturb(kgraph.Model(sequence, L.Bidirectional(L.GRU(3, return_sequences=True))(sequence)))
    assert _reshape_shapes(to_onnx(concat)) == [[0, 0, 6]]


def test_verify_reports_an_abort_as_a_finding_and_passes(capsys):
    model = zoo.shared("stacked_gru")
    report = verify(model, to_onnx(model), batches=(0, 1), rtol=1e-4, levels=("ORT_ENABLE_ALL",))
    assert report.ok and len(report.comparisons) == 2
    assert [f.split(":")[0] for f in report.findings] == ["batch=0 steps=5", "batch=0 steps=9"]
    assert all(re.search(r"aborted the process \(SIGABRT\) at ORT_ENABLE_ALL in node '[^']+/GRU' \(op GRU\)$", f)
               for f in report.findings), report.findings
    out = capsys.readouterr().out
    assert "PASS: 2/2 comparisons within rtol=0.0001, atol=1e-05; 2 empty-batch note(s) above" in out
    assert "FINDING" not in out and out.count("the server refuses requests without rows") == 2
