"""Running onnxruntime in child processes, so that a runtime abort is a finding that names the node.

onnxruntime's LSTM and GRU kernels abort the whole process (``std::terminate``)
on a 0-row batch; no Python exception is raised. ``run_isolated`` runs
every feed in a child process, starts a new child after a death, and runs
the graph node by node in one more child to find the node that killed it.

A child runs this file as a script on a JSON job written by the parent; it
prints ``level I LEVEL`` (before running feed I at LEVEL), ``done I``,
``error I MESSAGE`` and, when locating, ``node {...}`` lines as it goes.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import numpy.typing as npt

CHILD_TIMEOUT_S = 600
TIMEOUT = "onnxruntime ran for over"
# This file run as a script, without importing the export package (and kgraph) in the child.
_CHILD = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


@dataclasses.dataclass
class Outcome:
    """One feed's result: outputs per optimization level, or the error (raised) or abort (a death) instead."""

    outputs: dict = dataclasses.field(default_factory=dict)
    error: str = ""
    abort: str = ""


def run_isolated(runs: Sequence[tuple[os.PathLike[str] | str, Mapping[str, npt.ArrayLike], Sequence[str]]],
                 levels: Sequence[str]) -> list[Outcome]:
    """Run each ``(ONNX file, feed dict, output names)`` of ``runs`` at each level; one Outcome per run."""
    # Runs of one file share its sessions in a child; a child lives until every run is done or it dies.
    outcomes = [Outcome() for _ in runs]
    with tempfile.TemporaryDirectory(prefix="kgraph-isolated-") as tmp:
        inputs = []
        for i, (_, feed, _) in enumerate(runs):
            inputs.append(os.path.join(tmp, f"in{i}.npz"))
            np.savez(inputs[-1], **feed)
        job = {"models": [os.path.abspath(os.fspath(path)) for path, _, _ in runs], "inputs": inputs,
               "levels": list(levels), "names": [list(names) for _, _, names in runs], "out": tmp}
        start = 0
        while start < len(runs):
            lines, death = _child(tmp, dict(job, start=start))
            done = {int(line.split()[1]) for line in lines if line.startswith("done ")}
            for line in lines:
                if line.startswith("error "):
                    _, index, message = line.split(" ", 2)
                    outcomes[int(index)].error = json.loads(message)
            for i in done:
                with np.load(os.path.join(tmp, f"out{i}.npz")) as arrays:
                    outcomes[i].outputs = {level: [arrays[f"{level}/{k}"] for k in range(len(runs[i][2]))]
                                           for level in levels}
            reported = done | {int(line.split()[1]) for line in lines if line.startswith("error ")}
            failed = max(reported, default=start - 1) + 1
            if death is None or failed == len(runs):  # a death after the last run (at exit) spoils no result
                break
            levels_run = [line.split()[2] for line in lines if line.startswith(f"level {failed} ")]
            at = f" at {levels_run[-1]}" if levels_run else ""
            where = "" if death.startswith(TIMEOUT) else f" {_locate(tmp, job, failed)}"
            outcomes[failed].abort = death + at + where
            start = failed + 1
    return outcomes


def _child(tmp, job):
    """Run one child on ``job``; return its stdout lines and how it died (None if it exited normally)."""
    path = os.path.join(tmp, "job.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(job, f)
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, os.path.abspath(__file__), path], capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        return out.splitlines(), f"{TIMEOUT} {CHILD_TIMEOUT_S} s and was stopped"
    if proc.returncode == 0:
        return proc.stdout.splitlines(), None
    if proc.returncode < 0:
        number = -proc.returncode
        name = signal.Signals(number).name if number in signal.valid_signals() else f"signal {number}"
        death = f"onnxruntime aborted the process ({name})"
    else:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        death = f"onnxruntime's process exited with status {proc.returncode} ({last})"
    return proc.stdout.splitlines(), death


def _locate(tmp, job, index):
    """Where the abort happens: the node named by running the graph node by node on feed ``index``."""
    lines, death = _child(tmp, dict(job, locate=index))
    nodes = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("node ")]
    if death is None:
        return "(no node aborts when the graph runs node by node with optimizations off)"
    culprit = nodes[-1] if nodes else None
    return f"in node '{culprit['name']}' (op {culprit['op']})" if culprit else "before any node ran"


def _session(model, level):
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _say(line):
    print(line, flush=True)


def _run_jobs(job):
    """Child: run every feed from ``job['start']`` on, saving outputs and printing a line per feed."""
    sessions = {}
    for i in range(job["start"], len(job["inputs"])):
        with np.load(job["inputs"][i]) as arrays:
            feed = dict(arrays)
        path, results, level = job["models"][i], {}, None
        try:
            if path not in sessions:
                sessions = {path: {level: _session(path, level) for level in job["levels"]}}
            for level, sess in sessions[path].items():
                _say(f"level {i} {level}")
                results.update((f"{level}/{k}", y) for k, y in enumerate(sess.run(job["names"][i], feed)))
        except Exception as err:  # onnxruntime raises its own exception types (shape and type errors)
            where = "loading the model" if level is None else level
            _say(f"error {i} {json.dumps(f'onnxruntime failed ({where}): {err}'.splitlines()[0])}")
            continue
        np.savez(os.path.join(job["out"], f"out{i}.npz"), **results)
        _say(f"done {i}")


def _locate_node(job):
    """Child: run each node's prefix of the graph in turn, printing each node before it runs."""
    import onnx
    model = onnx.shape_inference.infer_shapes(onnx.load(job["models"][job["locate"]]))
    types = {v.name: v.type.tensor_type.elem_type for v in list(model.graph.value_info) + list(model.graph.output)}
    with np.load(job["inputs"][job["locate"]]) as arrays:
        feed = dict(arrays)
    for k, node in enumerate(model.graph.node):
        outputs = [name for name in node.output if name and name in types]
        if not outputs:
            continue
        _say(f"node {json.dumps({'name': node.name, 'op': node.op_type})}")
        prefix = onnx.ModelProto()
        prefix.CopyFrom(model)
        # Only the nodes up to this one: with optimizations off onnxruntime runs every node it is given.
        del prefix.graph.node[k + 1:]
        del prefix.graph.output[:]
        prefix.graph.output.extend(onnx.helper.make_tensor_value_info(name, types[name], None) for name in outputs)
        _session(prefix.SerializeToString(), "ORT_DISABLE_ALL").run(outputs, feed)


def _main(path):
    with open(path, encoding="utf-8") as f:
        job = json.load(f)
    if "locate" in job:
        _locate_node(job)
    else:
        _run_jobs(job)


if __name__ == "__main__":
    _main(sys.argv[1])
