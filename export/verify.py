"""verify: run the native model and onnxruntime on the same seeded random inputs and compare every output."""
from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import TYPE_CHECKING

import numpy as np
import onnx

import kgraph
from export import registry
from export.exporter import functional_of
from export.isolation import run_isolated
from export.quantize import TOLERANCES
from kgraph import tree

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import TypeAlias

    import numpy.typing as npt
    import onnxruntime

    from kgraph.graph.operation import Operation
    from kgraph.models.model import Model

    # sampler(input name, shape, dtype name, rng) -> the input's array.
    Sampler: TypeAlias = Callable[[str, tuple[int, ...], str, np.random.Generator], npt.ArrayLike]

LEVELS = ("ORT_ENABLE_ALL", "ORT_DISABLE_ALL")
BATCHES = (0, 1, 3)
DYNAMIC_DIM = 5
# A second length for dynamic axes (a time axis), so a length baked into the graph shows.
SECOND_LENGTH = 9
DEFAULT_INT_HIGH = 10


@dataclasses.dataclass
class Comparison:
    """One output compared at one batch size and one onnxruntime optimization level."""

    batch: int
    level: str
    output: str
    max_abs: float
    max_rel: float
    ok: bool
    detail: str = ""
    steps: int = None

    def __str__(self):
        verdict = "ok" if self.ok else "FAIL"
        where = f"batch={self.batch:<3d}" + ("" if self.steps is None else f" steps={self.steps:<3d}")
        line = (f"{where} {self.level:<16s} {self.output:<24s} max_abs={self.max_abs:.3e} "
                f"max_rel={self.max_rel:.3e} {verdict}")
        return f"{line} ({self.detail})" if self.detail else line


@dataclasses.dataclass
class Report:
    """Every comparison made by ``verify``, the tolerance applied, and findings (runtime aborts) beside them."""

    rtol: float
    atol: float
    comparisons: list
    findings: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons)

    @property
    def failures(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.ok]


def leaf_layers(model: Model) -> list[Operation]:
    """Every non-model layer in ``model``'s graph, nested models expanded, each once."""
    out, seen, stack = [], set(), [model]
    while stack:
        for layer in functional_of(stack.pop()).layers:
            if id(layer) in seen or isinstance(layer, kgraph.layers.InputLayer):
                continue
            seen.add(id(layer))
            if isinstance(layer, (kgraph.models.Functional, kgraph.Sequential)):
                stack.append(layer)
            else:
                out.append(layer)
    return out


def _input_dims(tensor):
    """``input_dim`` of every layer reading ``tensor`` (an Embedding's vocabulary size), through nested models."""
    found = []
    for node in tensor._keras_history.layer.outbound_nodes:
        layer = node.outbound_layer
        if isinstance(layer, (kgraph.models.Functional, kgraph.Sequential)):
            inner = functional_of(layer)
            flat = inner._flatten_call_inputs(node.call_args[0])
            found += [d for t, x in zip(inner.inputs, flat) if x is tensor for d in _input_dims(t)]
        elif isinstance(getattr(layer, "input_dim", None), (int, np.integer)) and layer.input_dim > 0:
            found.append(int(layer.input_dim))
        elif isinstance(layer, kgraph.layers.CategoryEncoding) and layer.num_tokens:
            found.append(int(layer.num_tokens))  # counts of ids in [0, num_tokens)
    return found


def _masks_padding(tensor):
    """Whether an ``Embedding(mask_zero=True)`` reads ``tensor``: index 0 then marks padding."""
    return any(getattr(node.outbound_layer, "mask_zero", False) for node in tensor._keras_history.layer.outbound_nodes)


def default_sampler(model: Model, ids: bool = False) -> Sampler:
    """Sampler for ``model``'s inputs: standard normal floats, integers in a range its consumers accept.

    Token ids read by ``Embedding(mask_zero=True)`` come as sequences padded at the end (ids from 1, then
    zeros), as real token data is, so the masks are exercised. ``ids``: every float input gets small
    non-negative integers too (for float inputs that a user's layer reads as ids)."""
    functional = functional_of(model)
    # Inputs read as ids (by an Embedding or a CategoryEncoding) get ids in range, floats included: the guides
    # declare token inputs as keras.Input(shape=(None,)), float32.
    bounded = {name: min(dims) for t, name in zip(functional.inputs, functional.input_names)
               if (dims := _input_dims(t))}
    highs = {name: bounded.get(name, DEFAULT_INT_HIGH) for name in functional.input_names}
    padded = {name for t, name in zip(functional.inputs, functional.input_names) if _masks_padding(t)}

    def sample(name, shape, dtype, rng):
        dtype = np.dtype(dtype)
        if np.issubdtype(dtype, np.floating) and name not in bounded and not ids:
            return rng.standard_normal(shape).astype(dtype)
        if dtype == np.bool_:
            return rng.random(shape) < 0.5
        high = highs.get(name, DEFAULT_INT_HIGH)
        if name in padded and len(shape) == 2 and high > 1:
            tokens = rng.integers(1, high, size=shape)
            lengths = rng.integers(1, shape[1] + 1, size=shape[0]) if shape[1] else np.zeros(shape[0], int)
            return np.where(np.arange(shape[1]) < lengths[:, None], tokens, 0).astype(dtype)
        return rng.integers(0, high, size=shape).astype(dtype)

    return sample


def has_dynamic_axis(model: Model) -> bool:
    """Whether an input of ``model`` has a dynamic axis besides the batch (a variable sequence length)."""
    return any(d is None for t in functional_of(model).inputs for d in t.shape[1:])


def make_inputs(model: Model, batch: int, sampler: Sampler | None = None, seed: int = 0,
                steps: int = DYNAMIC_DIM) -> dict[str, np.ndarray]:
    """``{input name: array}`` at ``batch`` from ``sampler(name, shape, dtype, rng)`` (default: default_sampler).

    Dynamic axes other than the batch get ``steps`` elements.
    """
    functional = functional_of(model)
    sampler = sampler or default_sampler(model)
    rng = np.random.default_rng(seed)
    out = {}
    for tensor, name in zip(functional.inputs, functional.input_names):
        shape = (batch,) + tuple(steps if d is None else d for d in tensor.shape[1:])
        out[name] = np.asarray(sampler(name, shape, tensor.dtype, rng))
    return out


def working_inputs(model: Model, sampler: Sampler | None = None,
                   seed: int = 0) -> tuple[Sampler, tuple[int | None, ...]]:
    """A sampler and lengths whose inputs the native model takes: the default sampler first, then (where it
    refuses those) small non-negative integers in the float inputs, as token ids read by a user's layer."""
    samplers = [sampler] if sampler is not None else [default_sampler(model), default_sampler(model, ids=True)]
    error = None
    for candidate in samplers:
        try:
            if has_dynamic_axis(model):
                return candidate, accepted_lengths(model, candidate, seed)
            native_outputs(model, make_inputs(model, 1, sampler=candidate, seed=seed))
            return candidate, (None,)
        except ValueError as err:
            error = err
    raise ValueError(f"The native model refuses the verification inputs: {error}")


def _native_cases(model, cases, sampler, seed):
    """Each case's feeds and native outputs; without a sampler, the default one, then (where the model refuses
    its inputs) the one that puts small ids in the float inputs."""
    def run(candidate):
        feeds = [make_inputs(model, batch, sampler=candidate, seed=seed + batch + 100 * (steps or 0),
                             steps=steps or DYNAMIC_DIM) for steps, batch in cases]
        return feeds, [native_outputs(model, feed) for feed in feeds]

    if sampler is not None:
        return run(sampler)
    try:
        return run(default_sampler(model))
    except ValueError:
        return run(default_sampler(model, ids=True))


def accepted_lengths(model: Model, sampler: Sampler | None = None, seed: int = 0) -> tuple[int, int]:
    """Two lengths for the dynamic axes that the native model accepts: (5, 9) where it takes them, else the
    shortest ones from a doubling series (strided convolutions need a minimum length)."""
    candidates = [DYNAMIC_DIM, SECOND_LENGTH] + [SECOND_LENGTH * 2 ** k - (2 ** k - 1) for k in range(1, 8)]
    accepted, last_error = [], None
    for steps in candidates:
        try:
            native_outputs(model, make_inputs(model, 1, sampler=sampler, seed=seed, steps=steps))
        except ValueError as err:
            last_error = err
            continue
        accepted.append(steps)
        if len(accepted) == 2:
            return tuple(accepted)
    if accepted:
        return (accepted[0], accepted[0])
    raise ValueError(f"The model takes none of the lengths {candidates} on its dynamic axes: {last_error}")


def native_outputs(model: Model, feeds: Mapping[str, npt.ArrayLike]) -> list[np.ndarray]:
    """The native model's outputs for ``feeds`` (by input name), flat, in output order."""
    functional = functional_of(model)
    arrays = [feeds[name] for name in functional.input_names]
    if isinstance(functional._inputs_struct, dict):
        x = dict(zip(functional.input_names, arrays))
    else:
        x = arrays[0] if len(arrays) == 1 else arrays
    return [np.asarray(y) for y in tree.flatten(model.predict(x, verbose=0))]


def session(onnx_model: onnx.ModelProto | os.PathLike[str] | str, level: str) -> onnxruntime.InferenceSession:
    """An onnxruntime CPU session for a ModelProto or a path, at optimization ``level`` (a LEVELS name)."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
    options.log_severity_level = 3
    source = onnx_model.SerializeToString() if isinstance(onnx_model, onnx.ModelProto) else os.fspath(onnx_model)
    return onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def compare(expected: np.ndarray, actual: np.ndarray, rtol: float, atol: float,
            scaled: bool = False) -> tuple[float, float, bool, str]:
    """``(max_abs, max_rel, ok, detail)`` for one output: ``|a - e| <= atol + rtol * |e|`` everywhere.

    ``scaled``: ``atol`` is a fraction of the output's largest finite magnitude (for int8 and float16 weights).
    """
    if expected.shape != actual.shape:
        return float("inf"), float("inf"), False, f"shape {actual.shape}, expected {expected.shape}"
    if expected.dtype != actual.dtype:
        return float("inf"), float("inf"), False, f"dtype {actual.dtype}, expected {expected.dtype}"
    if expected.size == 0:
        return 0.0, 0.0, True, ""
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    if not np.array_equal(np.isnan(e), np.isnan(a)):
        return float("nan"), float("nan"), False, "NaN in different places"
    finite = ~np.isnan(e)
    diff = np.abs(a[finite] - e[finite])
    diff[a[finite] == e[finite]] = 0.0  # equal infinities
    scale = np.abs(e[finite])
    if scaled:
        atol = atol * float(scale.max(initial=0.0))
    rel = np.divide(diff, scale, out=np.where(diff > 0, np.inf, 0.0), where=scale > 0)
    ok = bool(np.all(diff <= atol + rtol * scale))
    return float(diff.max(initial=0.0)), float(rel.max(initial=0.0)), ok, ""


def verify(model: Model, onnx_model: onnx.ModelProto | os.PathLike[str] | str, batches: Sequence[int] = BATCHES,
           sampler: Sampler | None = None, rtol: float | None = None, atol: float | None = None, seed: int = 0,
           print_fn: Callable[[str], object] | None = print, levels: Sequence[str] = LEVELS,
           lengths: Sequence[int | None] | None = None, weights: str | None = None) -> Report:
    """Compare native ``predict`` with onnxruntime on seeded inputs per batch, level and output; return a Report.

    Args:
        batches: batch sizes; a 0-row batch runs onnxruntime in a child process, so an abort of the runtime
            is a finding in the report (naming the node) rather than the end of the caller; an abort at any
            other batch (of a converted model, also run in the child) fails the comparisons.
        levels: onnxruntime GraphOptimizationLevel names.
        lengths: sizes of the dynamic non-batch axes; default ``(5, 9)`` for models that have one (longer ones
            where the model needs them: ``accepted_lengths``).
        rtol, atol: default to the loosest the model's layers declare (1e-5 each for float32 layers).
        print_fn: called with each line of the report; None is silent.
        weights: 'int8' or 'fp16' for a converted model (see export.quantize): its tolerances apply, atol as a
            fraction of each output's scale, and every batch runs in the child process.
    """
    opset = next((o.version for o in _opset_imports(onnx_model) if o.domain in ("", "ai.onnx")), None)
    default_rtol, default_atol = registry.tolerance(leaf_layers(model), opset)
    if weights is not None:
        default_rtol, default_atol = TOLERANCES[weights]
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    if lengths is None:
        lengths = working_inputs(model, sampler, seed)[1]
    names = functional_of(model).output_names
    report = Report(rtol, atol, [])
    say = print_fn or (lambda line: None)
    cases = [(steps, batch) for steps in lengths for batch in batches]
    feeds, native = _native_cases(model, cases, sampler, seed)
    isolated = [i for i, (_, batch) in enumerate(cases) if batch == 0 or weights is not None]
    outcomes = dict(zip(isolated, _run_isolated(onnx_model, [feeds[i] for i in isolated], names, levels)))
    sessions = {level: session(onnx_model, level) for level in levels} if len(isolated) < len(cases) else {}
    for i, ((steps, batch), feed) in enumerate(zip(cases, feeds)):
        expected = native[i]
        if i in outcomes and outcomes[i].abort and batch == 0:
            # A runtime that cannot take 0 rows is worth knowing, not a wrong number: the server refuses
            # requests without rows (serve.protocol.check_not_empty), so no served request reaches this.
            report.findings.append(f"batch={batch}" + ("" if steps is None else f" steps={steps}") +
                                   f": {outcomes[i].abort}")
            say(f"note: {report.findings[-1]}. onnxruntime cannot run this model on an empty batch; the server "
                "refuses requests without rows, so served requests never reach this, and the check does not fail")
            continue
        for level in levels:
            if i in outcomes:
                actual = outcomes[i].outputs.get(level)
                error = outcomes[i].error or outcomes[i].abort
            else:
                sess = sessions[level]
                actual, error = sess.run(names, {x.name: feed[x.name] for x in sess.get_inputs()}), ""
            for k, (name, e) in enumerate(zip(names, expected)):
                found = (float("inf"), float("inf"), False, error) if error else \
                    compare(e, np.asarray(actual[k]), rtol, atol, scaled=weights is not None)
                report.comparisons.append(Comparison(batch, level, name, *found, steps=steps))
                say(str(report.comparisons[-1]))
    total, failed = len(report.comparisons), len(report.failures)
    findings = f"; {len(report.findings)} empty-batch note(s) above" if report.findings else ""
    scale = " of each output's scale" if weights is not None else ""
    say(f"{'PASS' if report.ok else 'FAIL'}: {total - failed}/{total} comparisons within rtol={rtol:g}, "
        f"atol={atol:g}{scale}{findings}")
    return report


def _run_isolated(onnx_model, feeds, names, levels):
    """``run_isolated`` of each feed on a ModelProto or a path (a proto is written to a temporary file first)."""
    if not feeds:
        return []
    if not isinstance(onnx_model, onnx.ModelProto):
        return run_isolated([(onnx_model, feed, names) for feed in feeds], levels)
    with tempfile.TemporaryDirectory(prefix="kgraph-verify-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save_model(onnx_model, path)
        return run_isolated([(path, feed, names) for feed in feeds], levels)


def _opset_imports(onnx_model):
    if isinstance(onnx_model, onnx.ModelProto):
        return onnx_model.opset_import
    return onnx.load(os.fspath(onnx_model), load_external_data=False).opset_import
