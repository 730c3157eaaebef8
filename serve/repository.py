"""Model repository: finding models on disk, loading and unloading them per model, and their states."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path

from serve.config import ModelConfig, RepositoryError
from serve.model import ModelSource, ModelVersion
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


def scan(root: Path, name: str) -> list[ModelSource]:
    """The versions of model NAME on disk, by version; RepositoryError when none can be served."""
    if root.is_file():
        return [ModelSource(root.stem, 1, root, ModelConfig(), _stamp(root))]
    model_dir = root / name
    config_path = model_dir / "config.pbtxt"
    try:
        config = ModelConfig.read(config_path, name) if config_path.is_file() else ModelConfig()
        found = [
            ModelSource(name, int(v.name), v / config.default_model_filename, config,
                        _stamp(v / config.default_model_filename, config_path))
            for v in model_dir.iterdir()
            if _VERSION.fullmatch(v.name) and v.is_dir() and (v / config.default_model_filename).is_file()
        ]
    except OSError as exc:
        raise RepositoryError(f"{model_dir}: cannot read: {exc}") from None
    if not found:
        raise RepositoryError(
            f"{model_dir}: no version directory holds {config.default_model_filename} "
            f"(expected {model_dir}/<version number>/{config.default_model_filename})"
        )
    return sorted(found, key=lambda s: s.version)


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
                 max_batch_size: int, max_queue_delay_us: int, cuda_options: dict[str, str] | None = None) -> None:
        self.root = root
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
                session = ModelSession(source.path, placement, self.intra_op_threads)
                session.warmup()
                built.append(ModelVersion(source, session, self.pool, self.max_batch_size, self.max_queue_delay_us))
            except Exception as exc:
                failed.append((source.version, str(exc)))
        return built, failed

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
            state, reason = next(iter(states.values()))
            if state == LOADING:
                raise ProtocolError(f"model '{name}' is still loading", 503)
            raise ProtocolError(f"model '{name}' is not available: {reason}", 503)
        if version is None:
            return versions[max(versions)]
        model = versions.get(int(version)) if _VERSION.fullmatch(version) else None
        if model is None:
            state, reason = self.states.get(name, {}).get(version, ("", ""))
            if state == UNAVAILABLE:
                raise ProtocolError(f"model '{name}' version {version} is not available: {reason}", 503)
            available = ", ".join(str(v) for v in versions)
            raise ProtocolError(f"model '{name}' has no version '{version}'; available versions: {available}", 404)
        return model

    def all_versions(self) -> list[ModelVersion]:
        """Every loaded model version, by name then version."""
        return [self.models[name][v] for name in sorted(self.models) for v in self.models[name]]

    def index(self, ready_only: bool = False) -> list[dict]:
        """The repository index: every model version known, with its state and the reason for it."""
        entries = []
        for name in sorted(self.states):
            for version, (state, reason) in self.states[name].items():
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
