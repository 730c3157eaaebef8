"""Model repository: finding models on disk, loading and unloading them per model, and their states."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path

from serve.config import ModelConfig, RepositoryError, declared_specs
from serve.instances import InstanceGroup
from serve.model import ModelLimits, ModelSource, ModelVersion
from serve.protocol import ProtocolError
from serve.runtime import InferencePool, ModelSession, Placement, model_placement

logger = logging.getLogger("serve.repository")

READY = "READY"
LOADING = "LOADING"
UNAVAILABLE = "UNAVAILABLE"

# A version is ASCII digits: str.isdigit() also accepts '²', which int() refuses, and
# 19 digits keep int() far from its limit on string length.
_VERSION = re.compile(r"[0-9]{1,19}")


def _stamp(*paths: Path) -> tuple:
    """Size, modification time and inode of each existing path: what changes when a file is replaced."""
    stamps = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        stamps.append((str(path), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(stamps)


def model_names(root: Path) -> list[str]:
    """Names of the models under PATH: an .onnx file's stem, or a repository's model directories."""
    if root.is_file():
        if root.suffix != ".onnx":
            raise RepositoryError(f"{root} is not an .onnx file")
        return [root.stem]
    if not root.is_dir():
        raise RepositoryError(f"{root} does not exist")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def _inside(root: Path, path: Path) -> Path:
    """PATH, or a RepositoryError when it (through a symbolic link) leads out of the repository ROOT."""
    target = path.resolve()
    if not target.is_relative_to(root.resolve()):
        raise RepositoryError(f"{path} leads out of the repository (to {target}); links out of it are refused")
    return path


def scan(root: Path, name: str) -> list[ModelSource]:
    """The versions of model NAME on disk that its version policy serves, by version; RepositoryError when none."""
    if root.is_file():
        return [ModelSource(root.stem, 1, root, ModelConfig(), _stamp(root))]
    model_dir = _inside(root, root / name)
    config_path = model_dir / "config.pbtxt"
    try:
        config = ModelConfig.read(config_path, name) if config_path.is_file() else ModelConfig()
        filename = config.default_model_filename
        available = {int(v.name): v / filename for v in model_dir.iterdir()
                     if _VERSION.fullmatch(v.name) and v.is_dir() and (v / filename).is_file()}
    except OSError as exc:
        raise RepositoryError(f"{model_dir}: cannot read: {exc}") from None
    if not available:
        raise RepositoryError(
            f"{model_dir}: no version directory holds {filename} "
            f"(expected {model_dir}/<version number>/{filename})"
        )
    selected, missing = config.select_versions(list(available))
    if missing:
        logger.warning("model '%s': version_policy %s names version(s) %s, which are not in %s", name,
                       config.describe_policy(), ", ".join(map(str, missing)), model_dir)
    if not selected:
        raise RepositoryError(
            f"{model_dir}: version_policy {config.describe_policy()} selects none of the versions on disk "
            f"({', '.join(map(str, sorted(available)))})"
        )
    for version in selected:
        _inside(root, available[version])
    if config_path.exists():
        _inside(root, config_path)
    return [ModelSource(name, v, available[v], config, _stamp(available[v], config_path)) for v in selected]


def fingerprint(root: Path, name: str) -> tuple:
    """Every file of model NAME with its stamp: a different fingerprint means something changed on disk."""
    if root.is_file():
        return _stamp(root)
    paths = []
    for directory, subdirs, files in os.walk(root / name):
        subdirs.sort()
        paths.extend(Path(directory) / f for f in sorted(files))
    return _stamp(*paths)


class Repository:
    """The served model versions, each model's version states, and the server's readiness."""

    def __init__(self, root: Path, placement: Placement, intra_op_threads: int, pool: InferencePool,
                 max_batch_size: int, max_queue_delay_us: int, cuda_options: dict[str, str] | None = None,
                 limits: ModelLimits | None = None) -> None:
        self.root = root
        self.limits = limits or ModelLimits()
        self.placement = placement
        self.cuda_options = cuda_options or {}
        self.intra_op_threads = intra_op_threads
        self.pool = pool
        self.max_batch_size = max_batch_size
        self.max_queue_delay_us = max_queue_delay_us
        self.state = "loading"
        self.models: dict[str, dict[int, ModelVersion]] = {}
        # model -> version ("" when no version is known) -> (state, reason), for the index
        self.states: dict[str, dict[str, tuple[str, str]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._retiring: set[asyncio.Task] = set()

    @property
    def ready(self) -> bool:
        """Whether the server takes new work: the startup loading is done and it is not draining."""
        return self.state == "ready"

    def on_disk(self, name: str) -> bool:
        """Whether NAME is a model of the repository on disk (never a path outside it)."""
        try:
            return name in model_names(self.root)
        except (RepositoryError, OSError):
            return False

    async def load(self, name: str) -> None:
        """(Re)load model NAME from disk: new and changed versions load and warm up while the
        loaded ones keep serving, then every version swaps at once. A version that fails keeps
        its working predecessor. Raises ProtocolError when any version fails to load."""
        async with self._locks.setdefault(name, asyncio.Lock()):
            await self._load(name)

    async def _load(self, name: str) -> None:
        current = self.models.get(name, {})
        states = self.states.setdefault(name, {"": (LOADING, "")})
        try:
            sources = await asyncio.to_thread(scan, self.root, name)
        except RepositoryError as exc:
            logger.error("model '%s' cannot be loaded: %s", name, exc)
            if current:
                kept = f"the repository changed and cannot be read, the loaded files keep serving: {exc}"
                self.states[name] = {str(v): (READY, kept) for v in sorted(current)}
            else:
                self.states[name] = {"": (UNAVAILABLE, str(exc))}
            raise ProtocolError(f"failed to load model '{name}': {exc}") from None
        fresh = [s for s in sources if s.version not in current or current[s.version].source != s]
        for source in fresh:
            if source.version not in current:
                states[str(source.version)] = (LOADING, "")
        states.pop("", None)
        built, failed = await asyncio.to_thread(self._build, fresh)
        on_disk = {s.version for s in sources}
        new = {v: m for v, m in current.items() if v in on_disk}
        new.update((int(m.version), m) for m in built)
        new_states = {str(v): (READY, "") for v in new}
        unserved = [str(v) for v, _ in failed if v not in new]
        for version, model in current.items():
            # The version policy moved on to versions that failed: the old one serves until they load.
            if unserved and version not in new and model.source.path.is_file():
                new[version] = model
                new_states[str(version)] = (READY, f"kept serving while version(s) {', '.join(unserved)} cannot load")
        for version, reason in failed:
            logger.error("model '%s' version %d cannot be loaded: %s", name, version, reason)
            if version in new:
                new_states[str(version)] = (READY, f"the changed files failed to load, the loaded ones keep serving: {reason}")
            else:
                new_states[str(version)] = (UNAVAILABLE, reason)
        self._publish(name, new, built)
        self.states[name] = dict(sorted(new_states.items(), key=lambda item: int(item[0])))
        self._retire([m for v, m in current.items() if new.get(v) is not m])
        if failed:
            reasons = "; ".join(f"version {v}: {reason}" for v, reason in failed)
            serving = f" (still serving version(s) {', '.join(map(str, new))})" if new else ""
            raise ProtocolError(f"failed to load model '{name}'{serving}: {reasons}")

    def _build(self, sources: list[ModelSource]) -> tuple[list[ModelVersion], list[tuple[int, str]]]:
        """Create, check and warm up a session per version (blocking: runs off the event loop)."""
        built, failed = [], []
        for source in sources:
            try:
                config = source.config
                placement = model_placement(self.placement, self.cuda_options, config.instance_kind, config.gpus,
                                            source.name)
                session = self._session(source, placement)
                session.warmup()
                built.append(ModelVersion(source, session, self.pool, self.max_batch_size, self.max_queue_delay_us,
                                          self.limits))
            except Exception as exc:
                failed.append((source.version, str(exc)))
        return built, failed

    def _session(self, source: ModelSource, placement: Placement) -> ModelSession | InstanceGroup:
        """The version's sessions (instance_group count of them), narrowed to what config.pbtxt declares."""
        config = source.config
        where = f"model '{source.name}' version {source.version}"
        sessions = [ModelSession(source.path, placement, self.intra_op_threads) for _ in range(config.instance_count)]
        batched = bool(config.max_batch_size) or (config.max_batch_size is None and sessions[0].has_batch_axis())
        inputs = declared_specs(config, sessions[0].inputs, "input", where, batched)
        outputs = declared_specs(config, sessions[0].outputs, "output", where, batched)
        for session in sessions:
            session.inputs, session.outputs = inputs, outputs
        return sessions[0] if len(sessions) == 1 else InstanceGroup(sessions)

    def _publish(self, name: str, new: dict[int, ModelVersion], built: list[ModelVersion]) -> None:
        versions = [str(v) for v in sorted(new)]
        for model in new.values():
            model.set_metadata(versions)
        for model in built:
            model.batcher.start()
            logger.info(
                "model '%s' version %s ready on %s: %s", model.name, model.version, model.provider,
                model.describe_batching(),
            )
        if new:
            self.models[name] = dict(sorted(new.items()))
        else:
            self.models.pop(name, None)

    def _retire(self, models: list[ModelVersion]) -> None:
        """Let replaced or unloaded versions finish the requests they hold, in the background."""
        for model in models:
            task = asyncio.get_running_loop().create_task(model.batcher.close())
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)
            logger.info("model '%s' version %s unloaded", model.name, model.version)

    async def unload(self, name: str) -> None:
        """Stop serving every version of model NAME; requests it already accepted finish."""
        if name not in self.states:
            raise ProtocolError(f"unknown model '{name}'", 404)
        async with self._locks.setdefault(name, asyncio.Lock()):
            current = self.models.pop(name, {})
            self.states[name] = {str(v): (UNAVAILABLE, "unloaded") for v in current} or {"": (UNAVAILABLE, "unloaded")}
            self._retire(list(current.values()))

    def announce(self, names: list[str]) -> None:
        """Report each model NAMES lists as LOADING (503, not 404) until its first load attempt ends."""
        for name in names:
            self.states.setdefault(name, {"": (LOADING, "")})

    def begin_drain(self) -> None:
        """Report not ready from now on; requests already accepted still run."""
        if self.state in ("loading", "ready"):
            self.state = "draining"

    def get(self, name: str, version: str | None = None) -> ModelVersion:
        """The model version a URL names (newest when no version), or a 404/503 error."""
        versions = self.models.get(name)
        if versions is None:
            states = self.states.get(name)
            if states is None:
                raise ProtocolError(f"unknown model '{name}'; served models: {', '.join(self.models)}", 404)
            # The reason (paths, onnxruntime's words) is in the log and the restricted repository index only.
            state, _ = next(iter(states.values()))
            if state == LOADING:
                raise ProtocolError(f"model '{name}' is loading", 503)
            raise ProtocolError(f"model '{name}' is unavailable", 503)
        if version is None:
            return versions[max(versions)]
        model = versions.get(int(version)) if _VERSION.fullmatch(version) else None
        if model is None:
            state, _ = self.states.get(name, {}).get(version, ("", ""))
            if state in (UNAVAILABLE, LOADING):
                raise ProtocolError(f"model '{name}' version {version} is {state.lower()}", 503)
            available = ", ".join(str(v) for v in versions)
            raise ProtocolError(f"model '{name}' has no version '{version}'; available versions: {available}", 404)
        return model

    def all_versions(self) -> list[ModelVersion]:
        """Every loaded model version, by name then version."""
        return [self.models[name][v] for name in sorted(self.models) for v in self.models[name]]

    def index(self, ready_only: bool = False) -> list[dict]:
        """The repository index: every model directory and loaded version, with its state and the reason for it."""
        entries = []
        try:
            on_disk = model_names(self.root)
        except (RepositoryError, OSError):
            on_disk = []
        for name in sorted(set(self.states).union(on_disk)):
            # A model directory the server has not tried to load (added after startup) is listed too.
            for version, (state, reason) in self.states.get(name, {"": (UNAVAILABLE, "not loaded")}).items():
                if ready_only and state != READY:
                    continue
                entry = {"name": name, "version": version} if version else {"name": name}
                entry["state"] = state
                if reason:
                    entry["reason"] = reason
                entries.append(entry)
        return entries

    async def close(self) -> None:
        """Stop taking work and let every batcher finish what it holds."""
        self.state = "draining"
        for model in self.all_versions():
            await model.batcher.close()
        if self._retiring:
            await asyncio.wait(list(self._retiring))
