"""Triton's config.pbtxt: a protobuf text-format reader and the fields this server uses."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

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
    instance_kind: str | None = None
    gpus: tuple[int, ...] = ()

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
        kind, gpus = _instance_group(fields.get("instance_group", []), str(path))
        return cls(max_batch_size, delay, filename, kind, gpus)


_INSTANCE_KINDS = ("KIND_AUTO", "KIND_GPU", "KIND_CPU")
_INSTANCE_FIELDS = ("name", "kind", "count", "gpus")


def _instance_group(groups: list, where: str) -> tuple[str | None, tuple[int, ...]]:
    """The device kind and GPU indices of a config's instance_group entries.

    Every entry must agree on one kind and at most one GPU: the server runs one onnxruntime
    session per model version, which its inference threads share (``count`` instances of
    Triton are that many concurrent runs here, bounded by --threads).
    """
    kinds, gpus = set(), set()
    for group in groups:
        if not isinstance(group, dict):
            raise RepositoryError(f"{where}: instance_group entries must be messages {{ kind: ... }}, got {group!r}")
        unknown = sorted(set(group) - set(_INSTANCE_FIELDS))
        if unknown:
            raise RepositoryError(
                f"{where}: instance_group field(s) {', '.join(unknown)} are not supported by this server "
                f"(it reads {', '.join(_INSTANCE_FIELDS)})"
            )
        kind = _last(group, "kind", str, f"{where}: instance_group") or "KIND_AUTO"
        if kind not in _INSTANCE_KINDS:
            raise RepositoryError(f"{where}: instance_group kind must be one of {', '.join(_INSTANCE_KINDS)}, got {kind}")
        count = _last(group, "count", int, f"{where}: instance_group")
        if count is not None and count < 1:
            raise RepositoryError(f"{where}: instance_group count must be >= 1, got {count}")
        indices = group.get("gpus", [])
        if any(not isinstance(i, int) or isinstance(i, bool) or i < 0 for i in indices):
            raise RepositoryError(f"{where}: instance_group gpus must be GPU indices (integers >= 0), got {indices}")
        if indices and kind != "KIND_GPU":
            raise RepositoryError(f"{where}: instance_group lists gpus {indices} for {kind}; gpus need KIND_GPU")
        kinds.add(kind)
        gpus.update(indices)
    if len(kinds) > 1:
        raise RepositoryError(
            f"{where}: instance_group mixes {', '.join(sorted(kinds))}; this server places each model version "
            "on one device, so give one kind"
        )
    if len(gpus) > 1:
        raise RepositoryError(
            f"{where}: instance_group lists gpus {sorted(gpus)}; this server places each model version on one "
            "GPU, so list one (serve a model on several GPUs with one server per GPU)"
        )
    kind = kinds.pop() if kinds else None
    return (None if kind == "KIND_AUTO" else kind), tuple(gpus)
