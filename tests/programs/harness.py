"""Run the Keras 3 programs of this folder under kgraph (``keras`` renamed to ``kgraph``) and under real Keras.

Each program ``p_<topic>.py`` is a plain Keras 3 program (``import keras``) whose ``main()`` returns a dict:

    model       the trained model (its weights are copied from the Keras run into the kgraph run; it is saved
                to ``.keras`` and exported); None where the program has no single model
    loss        the final training loss (reported, never compared: the two runs start from different weights)
    inputs      fixed inputs: the harness predicts them with ``model.predict``
    evaluate    optional ``(x, y)``: the harness runs ``model.evaluate(x, y, return_dict=True)``
    probe       optional ``fn(model) -> dict of arrays``: deterministic outputs the harness computes from the
                model (a sub-layer's output, a stateful sequence, ...), after the same weight copy
    values      optional dict: deterministic results that do not depend on weights (preprocessing outputs,
                hook orders, weight counts), compared with Keras's as they are
    saved_model optional: the model to save and export when it is not ``model`` (a GAN's generator, say)
    save        optional: a string saying why the model cannot be saved (then nothing is exported)

Everything runs in child processes, so the module caches of real Keras and kgraph never mix:

- ``python -m tests.programs.harness kgraph WORKDIR NAME [--ref]``: one program under kgraph, in its own
  working directory ``WORKDIR/kgraph/NAME``. A ``sys.meta_path`` finder maps ``keras`` and every ``keras.*``
  module to ``kgraph`` and ``kgraph.*`` and adds nothing else: a name kgraph lacks fails the program. The
  trained model is saved there as ``NAME.keras``; with ``--ref`` the child then waits for the Keras run's
  ``WORKDIR/NAME.ref.pkl``, loads its weights with ``set_weights`` and predicts, evaluates and probes.
  Its results go to ``WORKDIR/NAME.kgraph.pkl``.
- ``python -m tests.programs.harness keras WORKDIR NAME...``: the programs under real Keras (torch backend), one
  after another in one process (Keras takes seconds to import; ``keras.backend.clear_session()`` between
  programs), each in ``WORKDIR/keras/NAME`` and writing the reference ``WORKDIR/NAME.ref.pkl`` (weights,
  predictions, evaluation, probes, values). One name is added to real Keras there, and only there:
  ``keras.GradientTape`` (``torch_tape.py``: tf.GradientTape's semantics on torch autograd), which the programs'
  TensorFlow-style train steps use and Keras 3 lacks.

The parent side (``Suite``) schedules those children, exports each saved model with
``python -m export NAME.keras --verify`` and turns the results into the three checks of ``check_*``.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PROGRAMS_DIR = Path(__file__).resolve().parent
REPO_ROOT = PROGRAMS_DIR.parent.parent

# Float32 comparisons after the weight copy. Both runs compute the same formulas on the same float32 weights
# and inputs, but in other orders (torch's MKL/oneDNN kernels against NumPy's OpenBLAS products, kgraph's
# Winograd convolutions, fused conv+pool): each dot product of K terms then differs by about sqrt(K) float32
# epsilons (6e-8) of its terms' magnitude, and a few layers compound that to ~1e-5 of an output's scale. 1e-4
# leaves that margin tenfold while any real difference of formula (an epsilon, an activation, a layout, a mask)
# shows at 1e-3 or more. Integer, boolean and string results must be equal.
RTOL = 1e-4
ATOL_OF_SCALE = 1e-4

CHILD_TIMEOUT_S = 240
EXPORT_TIMEOUT_S = 180
REF_WAIT_S = 600
KERAS_TIMEOUT_S = 900


def program_names() -> list[str]:
    """The programs of this folder, by file name."""
    return sorted(p.stem for p in PROGRAMS_DIR.glob("p_*.py"))


# Packages a program may import besides keras and NumPy (the torch-backend guides use torch itself).
OPTIONAL_PACKAGES = ("torch",)


def missing_packages(name: str) -> list[str]:
    """The packages program ``name`` imports that are not installed here (its checks are then skipped)."""
    source = (PROGRAMS_DIR / f"{name}.py").read_text()
    return [p for p in OPTIONAL_PACKAGES
            if f"import {p}" in source and importlib.util.find_spec(p) is None]


# ----- the rename ---------------------------------------------------------------------------------------------
class _AliasLoader(importlib.abc.Loader):
    """Loads ``keras[.x]`` as the already importable module ``kgraph[.x]`` (the same module object)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._own_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # The import system set the alias's spec on the shared module object; kgraph keeps its own.
        module.__spec__ = self._own_spec


class KerasAliasFinder(importlib.abc.MetaPathFinder):
    """``keras`` -> ``kgraph``, ``keras.<sub>`` -> ``kgraph.<sub>``; every other name goes to the next finder."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras" and not fullname.startswith("keras."):
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader("kgraph" + fullname[len("keras"):]))


def install_keras_alias() -> KerasAliasFinder:
    """Put the finder first on ``sys.meta_path`` (child processes only: it is never removed there)."""
    if any(name == "keras" or name.startswith("keras.") for name in sys.modules):
        raise RuntimeError("real Keras is already imported in this process; the rename must come first")
    finder = KerasAliasFinder()
    sys.meta_path.insert(0, finder)
    return finder


def load_program(name: str):
    """Import ``p_<topic>.py`` as the top-level module ``name`` (its classes keep that ``__module__``)."""
    path = PROGRAMS_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ----- results -------------------------------------------------------------------------------------------------
def to_numpy(value):
    """Arrays, scalars and nests of them (torch tensors and Keras variables included) as NumPy data."""
    if isinstance(value, dict):
        return {str(k): to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_numpy(v) for v in value]
    if isinstance(value, (str, bytes, bool, int, float)) or value is None:
        return value
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    if hasattr(value, "value") and not isinstance(value, np.ndarray) and hasattr(value, "assign"):
        value = value.value  # a Variable
        if type(value).__module__.startswith("torch"):
            return value.detach().cpu().numpy()
    return np.array(value)


def flatten(value, prefix="") -> dict:
    """A nest of arrays as ``{path: array}``."""
    if isinstance(value, dict):
        out = {}
        for k in sorted(value):
            out.update(flatten(value[k], f"{prefix}/{k}" if prefix else str(k)))
        return out
    if isinstance(value, (list, tuple)):
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix or "value": value}


def describe(value) -> dict:
    """``{path: (dtype, shape, digest of the values)}`` of a nest of arrays (the values compared as float64
    or text, so that a dtype difference shows apart from a difference of values)."""
    out = {}
    for key, arr in flatten(to_numpy(value)).items():
        arr = np.asarray(arr)
        text = arr.dtype.kind in "OUS"
        data = arr.astype(str) if text else arr.astype(np.float64)
        out[key] = (str(arr.dtype), tuple(arr.shape), hashlib.sha256(np.ascontiguousarray(data).tobytes()).hexdigest())
    return out


def _error(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "message": str(exc).strip(), "traceback": traceback.format_exc()}


def _measure(out, model, stage_prefix, res):
    """Predict, evaluate and probe ``model`` on the program's fixed data into ``res``."""
    if out.get("inputs") is not None:
        res[f"{stage_prefix}predict"] = to_numpy(model.predict(out["inputs"], verbose=0))
    if out.get("evaluate") is not None:
        x, y = out["evaluate"]
        res[f"{stage_prefix}evaluate"] = to_numpy(model.evaluate(x, y, verbose=0, return_dict=True))
    if out.get("probe") is not None:
        res[f"{stage_prefix}probe"] = to_numpy(out["probe"](model))


def _custom_classes(model, name):
    """Whether the program defines a class the model is built from (the export must then import the program)."""
    seen = [model]
    stack = [model]
    while stack:
        obj = stack.pop()
        for sub in getattr(obj, "layers", None) or getattr(obj, "_layers", None) or []:
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    # The layers, and the objects they hold: regularizers, initializers, constraints of the program's own classes.
    held = [v for obj in seen for v in vars(obj).values()
            if type(v).__module__ == name and not callable(getattr(v, "call", None))]
    functions = [getattr(obj, "function", None) for obj in seen]  # a Lambda's function (a registered one)
    return any(type(obj).__module__ == name for obj in seen + held) or \
        any(getattr(f, "__module__", None) == name for f in functions)


def run_program(name: str, backend: str, workdir: Path, ref: bool = False) -> dict:
    """Run one program in this process and return its results (never raises)."""
    res = {"program": name, "backend": backend, "stage": "import"}
    out = None
    try:
        module = load_program(name)
        res["stage"] = "main"
        out = module.main()
        res["loss"] = None if out.get("loss") is None else float(np.asarray(to_numpy(out["loss"])))
        res["values"] = to_numpy(out.get("values") or {})
        res["data"] = describe({"inputs": out.get("inputs"), "evaluate": out.get("evaluate")})
        model = out.get("model")
        if backend == "keras" and model is not None:
            # The reference. (The kgraph run measures once only, after the weight copy: a probe may compile
            # the model again, so a second measurement would not be of the same model.)
            res["stage"] = "measure"
            _measure(out, model, "", res)
            res["weights"] = to_numpy(model.get_weights())
        res["runs"] = True
    except BaseException as exc:  # noqa: BLE001  (the failure is the result)
        res["runs"] = False
        res["error"] = _error(exc)
        return res
    if backend == "kgraph":  # only kgraph's files are exported
        _save(name, out, workdir, res)
        if ref and model is not None:
            _match(name, out, model, workdir, res)
    return res


def _save(name, out, workdir, res):
    """Save the program's model to ``NAME.keras`` in its working directory, for the export."""
    to_save = out.get("saved_model", out.get("model"))
    save = out.get("save", True)
    if to_save is None:
        res["save_error"] = "the program returns no model"
    elif save is not True:
        res["save_skipped"] = str(save)
    else:
        try:
            path = program_dir(workdir, name, "kgraph") / f"{name}.keras"
            to_save.save(str(path))
            res["saved"] = str(path)
            res["custom_classes"] = _custom_classes(to_save, name)
        except BaseException as exc:  # noqa: BLE001
            res["save_error"] = _error(exc)


def _match(name, out, model, workdir, res):
    """Load the Keras run's weights into the kgraph model and measure again."""
    ref_path = workdir / f"{name}.ref.pkl"
    done = workdir / "keras.done"
    deadline = time.monotonic() + REF_WAIT_S
    while not ref_path.exists():
        if done.exists() or time.monotonic() > deadline:
            res["match_error"] = {"type": "NoReference", "message": "the Keras run wrote no reference",
                                  "traceback": ""}
            return
        time.sleep(0.1)
    with open(ref_path, "rb") as f:
        keras_res = pickle.load(f)
    if not keras_res.get("runs") or "weights" not in keras_res:
        return  # the Keras run failed: nothing to match (the check reports it)
    try:
        res["stage"] = "set_weights"
        model.set_weights(keras_res["weights"])
        res["stage"] = "matched measure"
        _measure(out, model, "matched_", res)
        res["stage"] = "done"
    except BaseException as exc:  # noqa: BLE001
        res["match_error"] = _error(exc)


def program_dir(workdir: Path, name: str, backend: str) -> Path:
    """The working directory of one program's run (its checkpoints and files; the saved model too)."""
    path = workdir / backend / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(obj, f)
    os.replace(tmp, path)


def _child_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.programs.harness")
    p.add_argument("backend", choices=["kgraph", "keras"])
    p.add_argument("workdir")
    p.add_argument("names", nargs="+")
    p.add_argument("--ref", action="store_true")
    args = p.parse_args(argv)
    workdir = Path(args.workdir)
    if args.backend == "kgraph":
        install_keras_alias()
        (name,) = args.names
        os.chdir(program_dir(workdir, name, "kgraph"))  # programs write their files in the current directory
        _write(workdir / f"{name}.kgraph.pkl", run_program(name, "kgraph", workdir, ref=args.ref))
        return 0
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras

    from tests.programs.torch_tape import install
    install(keras)  # keras.GradientTape, before any program runs
    for name in args.names:
        os.chdir(program_dir(workdir, name, "keras"))
        res = run_program(name, "keras", workdir)
        _write(workdir / f"{name}.ref.pkl", res)
        sys.modules.pop(name, None)
        try:
            keras.backend.clear_session()
            keras.config.set_floatx("float32")
            keras.config.set_image_data_format("channels_last")
        except Exception:  # noqa: BLE001
            pass
        gc.collect()
    return 0


# ----- the parent side ---------------------------------------------------------------------------------------------
def keras_available() -> str | None:
    """None when real Keras (with torch) can run here, else why not."""
    for module in ("keras", "torch"):
        if importlib.util.find_spec(module) is None:
            return f"real Keras cannot run here: `{module}` is not installed (pip install -e '.[compare]')"
    return None


def _child_env():
    env = dict(os.environ)
    env["KERAS_BACKEND"] = "torch"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    # The suite runs several children side by side on few cores: one thread each.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env["PYTHONWARNINGS"] = "ignore"
    return env


@dataclass
class ProgramResult:
    name: str
    kgraph: dict = field(default_factory=dict)
    keras: dict | None = None        # None: real Keras not run (see Suite.keras_skip)
    export: dict | None = None       # {"rc", "output", "command"} or None when nothing was saved
    missing: list = field(default_factory=list)  # packages the program imports that are not installed
    seconds: float = 0.0


class Suite:
    """Runs programs: a Keras worker and kgraph children side by side, then the exports."""

    def __init__(self, names=None, jobs: int = 3, workdir: str | None = None, keras: bool = True) -> None:
        self.names = list(names or program_names())
        self.jobs = jobs
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kgraph-programs-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.keras_skip = keras_available() if keras else "real Keras not requested"
        self.results: dict[str, ProgramResult] = {}
        self.seconds = 0.0

    def _python(self, *args, **kw):
        return subprocess.run([sys.executable, *args], env=_child_env(), capture_output=True, text=True, **kw)

    def _keras_worker(self):
        try:
            log = open(self.workdir / "keras.log", "w")
            proc = subprocess.Popen([sys.executable, "-m", "tests.programs.harness", "keras", str(self.workdir),
                                     *self.names], env=_child_env(), stdout=log, stderr=subprocess.STDOUT,
                                    cwd=REPO_ROOT)
            try:
                proc.wait(timeout=KERAS_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
        finally:
            (self.workdir / "keras.done").touch()

    def _run_one(self, name):
        start = time.monotonic()
        result = ProgramResult(name)
        result.missing = missing_packages(name)
        if result.missing:
            return result
        args = ["-m", "tests.programs.harness", "kgraph", str(self.workdir), name]
        if self.keras_skip is None:
            args.append("--ref")
        pkl = self.workdir / f"{name}.kgraph.pkl"
        try:
            proc = self._python(*args, timeout=CHILD_TIMEOUT_S + REF_WAIT_S, cwd=REPO_ROOT)
            output = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            output = f"timed out after {exc.timeout} s"
        if pkl.exists():
            with open(pkl, "rb") as f:
                result.kgraph = pickle.load(f)
        else:
            result.kgraph = {"runs": False, "stage": "process",
                             "error": {"type": "ChildProcessDied", "message": output[-3000:], "traceback": output}}
        saved = result.kgraph.get("saved")
        if saved:
            result.export = self._export(name, saved, result.kgraph.get("custom_classes"))
        result.seconds = time.monotonic() - start
        return result

    def _export(self, name, saved, custom_classes):
        command = [saved, "--verify"]
        if custom_classes:
            # The file names the program's classes: a module (in the model's folder, the export's working
            # directory) installs the rename and imports the program, as a user's `--import my_layers` would.
            shim = Path(saved).parent / f"import_{name}.py"
            shim.write_text("from tests.programs.harness import install_keras_alias, load_program\n"
                            f"install_keras_alias()\nload_program({name!r})\n")
            command += ["--import", shim.stem]
        try:
            proc = self._python("-m", "export", *command, timeout=EXPORT_TIMEOUT_S, cwd=Path(saved).parent)
            return {"rc": proc.returncode, "output": (proc.stdout + proc.stderr).strip(),
                    "command": "python -m export " + " ".join(Path(c).name if c == saved else c for c in command)}
        except subprocess.TimeoutExpired as exc:
            return {"rc": -1, "output": f"timed out after {exc.timeout} s", "command": "python -m export"}

    def run(self) -> dict[str, ProgramResult]:
        start = time.monotonic()
        if not self.names:
            return self.results
        for stale in [*self.workdir.glob("*.pkl"), self.workdir / "keras.done"]:
            stale.unlink(missing_ok=True)  # results of an earlier run in a kept folder
        worker = None
        if self.keras_skip is None:
            worker = threading.Thread(target=self._keras_worker, daemon=True)
            worker.start()
        else:
            (self.workdir / "keras.done").touch()
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            for result in pool.map(self._run_one, self.names):
                self.results[result.name] = result
        if worker is not None:
            worker.join()
            for name in self.names:
                path = self.workdir / f"{name}.ref.pkl"
                if path.exists():
                    with open(path, "rb") as f:
                        self.results[name].keras = pickle.load(f)
                else:
                    log = (self.workdir / "keras.log").read_text()[-3000:]
                    self.results[name].keras = {"runs": False, "error": {
                        "type": "ChildProcessDied", "message": log, "traceback": log}}
        self.seconds = time.monotonic() - start
        return self.results


# ----- the checks (shared by the tests and the report) -------------------------------------------------------------
PASS, FAIL, SKIP = "pass", "fail", "skip"


def _first_line(err) -> str:
    if isinstance(err, dict):
        msg = err.get("message", "")
        lines = [ln for ln in msg.splitlines() if ln.strip()]
        head = lines[0] if lines else ""
        return f"{err.get('type')}: {head}"
    return str(err)


def check_runs(r: ProgramResult) -> tuple[str, str]:
    k = r.kgraph
    if k.get("runs"):
        return PASS, f"final loss {k.get('loss')}"
    err = k.get("error", {})
    return FAIL, (f"fails under kgraph at stage '{k.get('stage')}': {_first_line(err)}\n\n"
                  f"{err.get('traceback', '')[-6000:]}")


def compare(expected, actual, label) -> list[str]:
    """Differences between two nests of results, one line each."""
    problems = []
    e, a = flatten(expected), flatten(actual)
    if sorted(e) != sorted(a):
        problems.append(f"{label}: keys differ: only in Keras's {sorted(set(e) - set(a))}, only in kgraph's "
                        f"{sorted(set(a) - set(e))}")
    for key in sorted(set(e) & set(a)):
        x, y = e[key], a[key]
        where = f"{label}[{key}]"
        if isinstance(x, str) or isinstance(y, str) or x is None or y is None:
            if (x is None) != (y is None) or x != y:  # an array against None differs, unevaluated
                problems.append(f"{where}: Keras {x!r:.80} / kgraph {y!r:.80}")
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            problems.append(f"{where}: shapes differ: Keras {x.shape} / kgraph {y.shape}")
            continue
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            scale = max(1.0, float(np.max(np.abs(x64)))) if x.size else 1.0
            bad = ~np.isclose(y64, x64, rtol=RTOL, atol=ATOL_OF_SCALE * scale, equal_nan=True)
            if bad.any():
                diff = float(np.max(np.abs(x64 - y64)[bad]))
                problems.append(f"{where}: {int(bad.sum())} of {x.size} values differ beyond rtol={RTOL}, "
                                f"atol={ATOL_OF_SCALE}*{scale:.3g}; max abs diff {diff:.3g}")
        else:
            xs = x.astype(str) if x.dtype.kind in "OSU" else x
            ys = y.astype(str) if y.dtype.kind in "OSU" else y
            if not np.array_equal(xs, ys):
                problems.append(f"{where}: differs: Keras {x.ravel()[:8]} / kgraph {y.ravel()[:8]}")
    return problems


def check_matches(r: ProgramResult, keras_skip: str | None) -> tuple[str, str]:
    if keras_skip is not None:
        return SKIP, keras_skip
    ref = r.keras or {}
    if not ref.get("runs"):
        err = ref.get("error", {})
        needs_tf = (err.get("type") in ("ImportError", "ModuleNotFoundError")
                    and "tensorflow" in err.get("message", "").lower())
        if needs_tf and importlib.util.find_spec("tensorflow") is None:
            return SKIP, f"real Keras cannot run this program here (no TensorFlow): {_first_line(err)}"
        return FAIL, f"the program fails under real Keras (a bug of the program): {_first_line(err)}\n" \
                     f"{err.get('traceback', '')[-4000:]}"
    k = r.kgraph
    if not k.get("runs"):
        return FAIL, "does not run under kgraph (see the runs check): " + _first_line(k.get("error", {}))
    problems = []
    ref_data, k_data = ref.get("data", {}), k.get("data", {})
    for key in sorted(set(ref_data) | set(k_data)):
        e_dtype, e_shape, e_hash = ref_data.get(key, ("-",) * 3)
        a_dtype, a_shape, a_hash = k_data.get(key, ("-",) * 3)
        if (e_shape, e_hash) != (a_shape, a_hash):
            return FAIL, f"the program's data differs between the two runs at {key}: Keras {e_dtype}{e_shape} / " \
                         f"kgraph {a_dtype}{a_shape} (a bug of the program, or of a data utility it calls)"
        if e_dtype != a_dtype:
            problems.append(f"data[{key}]: the program's data has dtype {e_dtype} under Keras, {a_dtype} under kgraph "
                            f"(same values; a utility the program calls returns another dtype)")
    problems += compare(ref.get("values", {}), k.get("values", {}), "values")
    if k.get("match_error"):
        err = k["match_error"]
        problems.insert(0, f"after set_weights(Keras weights), at stage '{k.get('stage')}': {_first_line(err)}\n"
                           f"{err.get('traceback', '')[-4000:]}")
    else:
        for what in ("predict", "evaluate", "probe"):
            if what in ref:
                problems += compare(ref[what], k.get(f"matched_{what}"), what)
    if problems:
        return FAIL, "\n".join(problems)
    checked = [w for w in ("values", "predict", "evaluate", "probe") if ref.get(w) is not None]
    return PASS, "equal within tolerance: " + ", ".join(checked)


def check_exports(r: ProgramResult) -> tuple[str, str]:
    k = r.kgraph
    if not k.get("runs"):
        return FAIL, "does not run under kgraph (see the runs check): " + _first_line(k.get("error", {}))
    if "save_skipped" in k:
        return SKIP, f"not saveable: {k['save_skipped']}"
    if "save_error" in k:
        err = k["save_error"]
        if isinstance(err, str):
            return SKIP, err
        return FAIL, f"model.save('{r.name}.keras') fails under kgraph: {_first_line(err)}\n" \
                     f"{err.get('traceback', '')[-4000:]}"
    e = r.export or {}
    if e.get("rc") == 0:
        return PASS, e.get("command", "")
    return FAIL, f"`{e.get('command')}` exited {e.get('rc')}:\n{e.get('output', '')[-4000:]}"


def _unless_missing(check):
    def wrapped(r: ProgramResult, suite) -> tuple[str, str]:
        if r.missing:
            return SKIP, f"the program imports {', '.join(r.missing)}, which is not installed here"
        return check(r, suite)
    return wrapped


CHECKS = {
    "runs": _unless_missing(lambda r, suite: check_runs(r)),
    "matches": _unless_missing(lambda r, suite: check_matches(r, suite.keras_skip)),
    "exports": _unless_missing(lambda r, suite: check_exports(r)),
}


if __name__ == "__main__":
    sys.exit(_child_main())
