"""Model repository: finding ONNX models and versions, reading config.pbtxt, loading and readiness."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import orjson

from serve.batcher import Batcher
from serve.metrics import ModelStats
from serve.protocol import ProtocolError, Signature
from serve.runtime import CUDA, InferencePool, ModelSession, RuntimeSetupError

logger = logging.getLogger("serve.repository")

PLATFORM = "onnxruntime_onnx"
BACKEND = "onnxruntime"


class RepositoryError(Exception):
    """A model path or repository layout that cannot be served, with the reason."""


_TOKEN = re.compile(
    r"""\s+|\#[^\n]*
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<number>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)[fF]?)
    |(?P<word>[A-Za-z_][\w.]*)
    |(?P<punct>[{}\[\]<>:,;])""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def _tokens(text: str) -> list[tuple[str, object]]:
    tokens: list[tuple[str, object]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            line = text.count("\n", 0, pos) + 1
            raise RepositoryError(f"unexpected character {text[pos]!r} on line {line}")
        pos = match.end()
        kind = match.lastgroup
        if kind is None:
            continue
        raw = match.group(kind)
        if kind == "string":
            value: object = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), raw[1:-1])
        elif kind == "number":
            body = raw.rstrip("fF")
            value = float(body) if any(c in body for c in ".eE") else int(body)
        else:
            value = raw
        tokens.append((kind, value))
    return tokens


def parse_pbtxt(text: str) -> dict[str, list]:
    """Parse protobuf text format into {field: [values]}, messages becoming nested dicts."""
    tokens = _tokens(text)
    pos = 0

    def peek(value: str) -> bool:
        return pos < len(tokens) and tokens[pos] == ("punct", value)

    def expect_word() -> str:
        nonlocal pos
        if pos >= len(tokens) or tokens[pos][0] != "word":
            found = tokens[pos][1] if pos < len(tokens) else "end of file"
            raise RepositoryError(f"expected a field name, found {found!r}")
        pos += 1
        return tokens[pos - 1][1]

    def message(closing: str | None) -> dict[str, list]:
        nonlocal pos
        fields: dict[str, list] = {}
        while True:
            if closing is None and pos >= len(tokens):
                return fields
            if closing is not None and peek(closing):
                pos += 1
                return fields
            name = expect_word()
            colon = peek(":")
            if colon:
                pos += 1
            if peek("["):
                pos += 1
                values = []
                while not peek("]"):
                    values.append(value())
                    if peek(","):
                        pos += 1
                pos += 1
                fields.setdefault(name, []).extend(values)
            else:
                if not colon and not (peek("{") or peek("<")):
                    raise RepositoryError(f"expected ':' or '{{' after field {name!r}")
                fields.setdefault(name, []).append(value())
            if peek(",") or peek(";"):
                pos += 1

    def value():
        nonlocal pos
        if pos >= len(tokens):
            raise RepositoryError("unexpected end of file, a value was expected")
        kind, val = tokens[pos]
        pos += 1
        if kind == "punct" and val in "{<":
            return message("}" if val == "{" else ">")
        if kind == "punct":
            raise RepositoryError(f"unexpected {val!r} where a value was expected")
        return val

    return message(None)


def _last(fields: dict[str, list], name: str, kind: type, where: str):
    values = fields.get(name)
    if not values:
        return None
    value = values[-1]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise RepositoryError(f"{where}: field '{name}' must be {kind.__name__}, got {value!r}")
    return value


@dataclass(frozen=True)
class ModelConfig:
    """The parts of a Triton config.pbtxt this server uses."""

    max_batch_size: int | None = None
    max_queue_delay_us: int | None = None
    default_model_filename: str = "model.onnx"

    @classmethod
    def read(cls, path: Path, model_name: str) -> ModelConfig:
        """Read and check DIR/NAME/config.pbtxt."""
        try:
            fields = parse_pbtxt(path.read_text(encoding="utf-8"))
        except (RepositoryError, UnicodeDecodeError) as exc:
            raise RepositoryError(f"{path}: cannot parse: {exc}") from None
        name = _last(fields, "name", str, str(path))
        if name is not None and name != model_name:
            raise RepositoryError(f"{path}: name is '{name}' but the directory is '{model_name}'")
        platform = _last(fields, "platform", str, str(path))
        backend = _last(fields, "backend", str, str(path))
        if platform not in (None, PLATFORM) or backend not in (None, BACKEND):
            raise RepositoryError(f"{path}: platform/backend must be {PLATFORM}/{BACKEND}, got {platform or backend}")
        max_batch_size = _last(fields, "max_batch_size", int, str(path))
        if max_batch_size is not None and max_batch_size < 0:
            raise RepositoryError(f"{path}: max_batch_size must be >= 0, got {max_batch_size}")
        delay = None
        dynamic = _last(fields, "dynamic_batching", dict, str(path))
        if dynamic is not None:
            delay = _last(dynamic, "max_queue_delay_microseconds", int, f"{path}: dynamic_batching")
        filename = _last(fields, "default_model_filename", str, str(path)) or "model.onnx"
        return cls(max_batch_size, delay, filename)


@dataclass(frozen=True)
class ModelSource:
    """Where one model version's ONNX file is, and its configuration."""

    name: str
    version: int
    path: Path
    config: ModelConfig


def discover(path: Path) -> list[ModelSource]:
    """Model versions under PATH: one .onnx file, or a Triton-style repository directory."""
    if path.is_file():
        if path.suffix != ".onnx":
            raise RepositoryError(f"{path} is not an .onnx file")
        return [ModelSource(path.stem, 1, path, ModelConfig())]
    if not path.is_dir():
        raise RepositoryError(f"{path} does not exist")
    sources: list[ModelSource] = []
    for model_dir in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        config_path = model_dir / "config.pbtxt"
        config = ModelConfig.read(config_path, model_dir.name) if config_path.is_file() else ModelConfig()
        found = [
            ModelSource(model_dir.name, int(v.name), v / config.default_model_filename, config)
            for v in model_dir.iterdir()
            if v.is_dir() and v.name.isdigit() and (v / config.default_model_filename).is_file()
        ]
        if not found:
            raise RepositoryError(
                f"{model_dir}: no version directory holds {config.default_model_filename} "
                f"(expected {model_dir}/<version number>/{config.default_model_filename})"
            )
        sources.extend(sorted(found, key=lambda s: s.version))
    if not sources:
        raise RepositoryError(f"{path} holds no models (expected NAME/config.pbtxt and NAME/<version>/model.onnx)")
    return sources


class ModelVersion:
    """A loaded model version: session, batcher, statistics and its cached metadata."""

    def __init__(self, source: ModelSource, session: ModelSession, pool: InferencePool, max_rows: int, delay_us: int) -> None:
        config = source.config
        self.name = source.name
        self.version = str(source.version)
        self.session = session
        self.provider = session.provider
        self.output_index = {name: i for i, name in enumerate(session.output_names)}
        self.stats = ModelStats()
        if config.max_batch_size and not session.has_batch_axis():
            raise RepositoryError(
                f"model '{source.name}' version {source.version}: config.pbtxt sets max_batch_size "
                f"{config.max_batch_size} but the model has no dynamic first dim to batch along "
                f"(inputs: {', '.join(f'{s.name} {list(s.shape or [])}' for s in session.inputs)})"
            )
        batch_axis = session.has_batch_axis() and config.max_batch_size != 0
        if config.max_batch_size:
            max_rows = min(max_rows, config.max_batch_size) if max_rows else 0
        if config.max_queue_delay_us is not None:
            delay_us = config.max_queue_delay_us
        self.batcher = Batcher(session, pool, self.stats, max_rows if batch_axis else 0, delay_us / 1e6)
        self.signature = Signature(session.inputs, session.outputs, batch_axis, config.max_batch_size or 0)
        self.reported_max_batch = config.max_batch_size if config.max_batch_size is not None else (
            max_rows if self.batcher.enabled else 0
        )
        self.metadata_json = b""
        self.config_json = self._config_json(source)

    @property
    def pending(self) -> int:
        """Requests queued or running for this version."""
        return self.batcher.pending

    def describe_batching(self) -> str:
        """A log-friendly summary of how this version batches."""
        if self.batcher.enabled:
            return f"dynamic batching up to {self.batcher.max_rows} rows, queue delay {self.batcher.max_delay_s * 1e6:.0f} us"
        if not self.signature.batchable:
            return "no batching (the model has no dynamic batch axis)"
        return "no batching"

    def set_metadata(self, versions: list[str]) -> None:
        """Cache the V2 model metadata response, listing every loaded version of the model."""
        self.metadata_json = orjson.dumps(
            {
                "name": self.name,
                "versions": versions,
                "platform": PLATFORM,
                "inputs": [spec.metadata() for spec in self.session.inputs],
                "outputs": [spec.metadata() for spec in self.session.outputs],
                "parameters": {
                    "execution_provider": self.provider,
                    "max_batch_size": self.reported_max_batch,
                    "dynamic_batching": self.batcher.enabled,
                },
            }
        )

    def _config_json(self, source: ModelSource) -> bytes:
        strip = 1 if self.reported_max_batch > 0 else 0

        def tensor(spec) -> dict:
            dims = list(spec.shape[strip:]) if spec.shape is not None else [-1]
            return {"name": spec.name, "data_type": "TYPE_" + spec.datatype, "dims": dims}

        config = {
            "name": self.name,
            "platform": PLATFORM,
            "backend": BACKEND,
            "max_batch_size": self.reported_max_batch,
            "input": [tensor(spec) for spec in self.session.inputs],
            "output": [tensor(spec) for spec in self.session.outputs],
            "instance_group": [{"kind": "KIND_GPU" if self.provider == CUDA else "KIND_CPU", "count": 1}],
            "default_model_filename": source.path.name,
            "parameters": {"execution_provider": {"string_value": self.provider}},
        }
        if self.batcher.enabled:
            config["dynamic_batching"] = {"max_queue_delay_microseconds": round(self.batcher.max_delay_s * 1e6)}
        return orjson.dumps(config)


class Repository:
    """Every served model version, with the server's readiness state."""

    def __init__(self, sources: list[ModelSource], providers: list[str], intra_op_threads: int, pool: InferencePool,
                 max_batch_size: int, max_queue_delay_us: int) -> None:
        self.sources = sources
        self.providers = providers
        self.intra_op_threads = intra_op_threads
        self.pool = pool
        self.max_batch_size = max_batch_size
        self.max_queue_delay_us = max_queue_delay_us
        self.state = "loading"
        self.models: dict[str, dict[int, ModelVersion]] = {}
        self._names = sorted({s.name for s in sources})

    @property
    def ready(self) -> bool:
        """Whether the server takes new work: every model loaded and not draining."""
        return self.state == "ready"

    def load(self) -> list[ModelVersion]:
        """Create, check and warm up a session per model version (blocking; run it off the event loop)."""
        loaded = []
        for source in self.sources:
            try:
                session = ModelSession(source.path, self.providers, self.intra_op_threads)
                session.warmup()
            except RuntimeSetupError as exc:
                raise RepositoryError(f"model '{source.name}' version {source.version}: {exc}") from None
            loaded.append(ModelVersion(source, session, self.pool, self.max_batch_size, self.max_queue_delay_us))
        return loaded

    def activate(self, loaded: list[ModelVersion]) -> None:
        """Publish loaded versions and start their batchers (on the event loop); the server becomes ready."""
        for model in loaded:
            self.models.setdefault(model.name, {})[int(model.version)] = model
        for versions in self.models.values():
            names = [str(v) for v in sorted(versions)]
            for model in versions.values():
                model.set_metadata(names)
                model.batcher.start()
                logger.info(
                    "model '%s' version %s ready on %s: %s", model.name, model.version, model.provider,
                    model.describe_batching(),
                )
        if self.state == "loading":
            self.state = "ready"

    def begin_drain(self) -> None:
        """Report not ready from now on; requests already accepted still run."""
        if self.state in ("loading", "ready"):
            self.state = "draining"

    def get(self, name: str, version: str | None = None) -> ModelVersion:
        """The model version a URL names (newest when no version), or a 404/503 error."""
        versions = self.models.get(name)
        if versions is None:
            if name in self._names and self.state == "loading":
                raise ProtocolError(f"model '{name}' is still loading", 503)
            raise ProtocolError(f"unknown model '{name}'; served models: {', '.join(self._names)}", 404)
        if version is None:
            return versions[max(versions)]
        model = versions.get(int(version)) if version.isdigit() else None
        if model is None:
            available = ", ".join(str(v) for v in sorted(versions))
            raise ProtocolError(f"model '{name}' has no version '{version}'; available versions: {available}", 404)
        return model

    def all_versions(self) -> list[ModelVersion]:
        """Every loaded model version, by name then version."""
        return [self.models[name][v] for name in sorted(self.models) for v in sorted(self.models[name])]

    def index(self) -> list[dict]:
        """The repository index: every model version and its state."""
        state = "READY" if self.state in ("ready", "draining") else "LOADING"
        return [{"name": s.name, "version": str(s.version), "state": state} for s in self.sources]

    async def close(self) -> None:
        """Stop taking work and let every batcher finish what it holds."""
        self.state = "draining"
        for model in self.all_versions():
            await model.batcher.close()
