"""How much of the programs' ``fit``, ``evaluate`` and ``predict`` the replay took (``kgraph/trainers/replay.py``).

``python -m tests.programs.report --replay`` runs the children with ``KGRAPH_REPLAY_COVERAGE=FILE`` in their
environment; ``tests/programs/__init__.py`` then calls ``install(FILE)`` in each child, which watches
``kgraph.trainers.replay`` once a program imports it: every step it makes for a model (one per model and kind
of call, kept across calls) and every call whose model runs all its steps as written (its class, its own
``train_step``, ``run_eagerly``...). At exit the child appends one JSON line per model and kind of call to
FILE: the program, the call, why the model's steps ran as written (or null), and each batch signature's
status as ``replay.describe`` words it. ``summary`` turns the lines of every child into the report's lines.
"""
from __future__ import annotations

import atexit
import collections
import importlib.machinery
import json
import sys

_CALLS = {"train_step": "fit", "test_step": "evaluate", "predict_step": "predict"}


def install(path):
    """Watch ``kgraph.trainers.replay`` in this process and write what it did to ``path`` at exit."""
    steps, written = [], {}
    sys.meta_path.insert(0, _Finder(lambda module: _watch(module, steps, written)))
    atexit.register(_write, path, steps, written)


class _Finder:
    """Runs ``then(module)`` right after ``kgraph.trainers.replay`` is first executed (finding nothing itself)."""

    def __init__(self, then):
        self.then = then

    def find_spec(self, name, path, target=None):
        if name != "kgraph.trainers.replay":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        execute, then = spec.loader.exec_module, self.then

        def exec_module(module):
            execute(module)
            then(module)
        spec.loader.exec_module = exec_module
        return spec


def _watch(replay, steps, written):
    made, replayed = replay.ReplayedStep.__init__, replay._replayed

    def init(step, model):
        made(step, model)
        steps.append(step)

    def watched(model, method, kept, kind):
        reason = replay._written(model, method)
        if reason is not None:
            written[id(model), method] = reason
        return replayed(model, method, kept, kind)
    replay.ReplayedStep.__init__ = init
    replay._replayed = watched


def _write(path, steps, written):
    program = next((a for a in sys.argv if a.startswith("p_")), sys.argv[0])
    lines = [{"program": program, "call": _CALLS[step._method], "model": step.refused,
              "signatures": [entry if type(entry) is str else ("confirmed" if entry.confirmed else "traced once")
                             for entry in step.programs.values()]} for step in steps]
    lines += [{"program": program, "call": _CALLS[method], "model": reason, "signatures": []}
              for (_, method), reason in written.items()]
    if lines:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)


def summary(path, top=8):
    """The report's lines: per kind of call, its models replayed or not (the commonest reasons) and its batch
    signatures confirmed, traced once or refused (the commonest reasons)."""
    try:
        with open(path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        records = []
    out = []
    for call in _CALLS.values():
        rows = [r for r in records if r["call"] == call]
        refused = collections.Counter(_kind_of(r["model"]) for r in rows if r["model"])
        statuses = collections.Counter(s if s in ("confirmed", "traced once") else "refused"
                                       for r in rows if not r["model"] for s in r["signatures"])
        reasons = collections.Counter(s for r in rows if not r["model"] for s in r["signatures"]
                                      if s not in ("confirmed", "traced once"))
        out.append(f"{call}: {len(rows)} models ({len(rows) - sum(refused.values())} replayable); signatures "
                   f"{statuses['confirmed']} confirmed, {statuses['traced once']} traced once, "
                   f"{statuses['refused']} refused")
        out += [f"  as written ({n}): {reason}" for reason, n in refused.most_common(top)]
        out += [f"  trace refused ({n}): {reason}" for reason, n in reasons.most_common(top)]
    return out


def _kind_of(reason):
    """A model's reason, with the layer's own name left out so that one kind of layer counts once."""
    if reason.startswith("layer '") and "' (" in reason and ")" in reason.split("' (", 1)[1]:
        kind, rest = reason.split("' (", 1)[1].split(")", 1)
        return f"layer {kind}{rest}"
    return reason
