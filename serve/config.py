"""Triton's config.pbtxt: read with protobuf's text format into a ModelConfig message, then checked.

The message (serve/proto/model_config.proto) keeps Triton's field names and numbers but holds
only the fields this server implements, so text format refuses every other field by name: a
typo such as ``max_batch_sise`` and a Triton setting the server does not implement make the
model UNAVAILABLE with the field named, instead of being ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format

from serve.proto import model_config_pb2 as pb
from serve.protocol import TensorSpec

PLATFORM = "onnxruntime_onnx"
BACKEND = "onnxruntime"
DEFAULT_MODEL_FILENAME = "model.onnx"


class RepositoryError(Exception):
    """A model path or repository layout that cannot be served, with the reason."""


# Triton's fields that this server does not implement, per message of Triton's model_config.proto:
# an error naming one of them says so, where any other unknown name is reported as a typo.
UNSUPPORTED_FIELDS = {
    "ModelConfig": (
        "runtime", "batch_input", "batch_output", "optimization", "sequence_batching", "ensemble_scheduling",
        "cc_model_filenames", "metric_tags", "model_warmup", "model_operations", "model_transaction_policy",
        "model_repository_agents", "response_cache", "model_metrics",
    ),
    "ModelInput": ("format", "reshape", "is_shape_tensor", "allow_ragged_batch", "optional", "is_non_linear_format_io"),
    "ModelOutput": ("reshape", "label_filename", "is_shape_tensor", "is_non_linear_format_io"),
    "ModelInstanceGroup": ("rate_limiter", "secondary_devices", "profile", "passive", "host_policy"),
    "ModelDynamicBatching": ("preserve_ordering", "priority_levels", "default_priority_level", "priority_queue_policy"),
    "ModelQueuePolicy": ("timeout_action", "default_timeout_microseconds", "allow_timeout_override"),
}

_PACKAGE = pb.DESCRIPTOR.package + "."
_NO_FIELD = re.compile(r'Message type "([\w.]+)" has no field named "([^"]+)"')


def _parse_error(exc: text_format.ParseError) -> str:
    """A text-format error in the words of config.pbtxt: the line, the field, and whether Triton knows it."""
    text = str(exc).replace(_PACKAGE, "")
    where = f"line {exc.GetLine()}: " if exc.GetLine() else ""
    match = _NO_FIELD.search(text)
    if match is None:
        return where + text.split(" : ", 1)[-1]
    message, field = match.groups()
    if field in UNSUPPORTED_FIELDS.get(message.rsplit(".", 1)[-1], ()):
        return f"{where}field '{field}' of {message} is a Triton setting this server does not support"
    return f"{where}unknown field '{field}' in {message} (not a field of Triton's model configuration)"


def parse_config(text: str) -> pb.ModelConfig:
    """config.pbtxt text as a ModelConfig message; RepositoryError naming the line and field on a mistake."""
    try:
        return text_format.Parse(text, pb.ModelConfig())
    except text_format.ParseError as exc:
        raise RepositoryError(_parse_error(exc)) from None


def plain_filename(name: str, where: str) -> str:
    """NAME when it is a plain file name (no directory part), else a RepositoryError."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise RepositoryError(
            f"{where}: default_model_filename must be a plain file name inside the version directory, got {name!r}"
        )
    return name


@dataclass(frozen=True)
class TensorConfig:
    """An input or output declared in config.pbtxt: name, V2 datatype and dims (-1: variable)."""

    name: str
    datatype: str
    dims: tuple[int, ...]


@dataclass(frozen=True)
class ModelConfig:
    """What a config.pbtxt says about a model; the defaults stand for a model without one.

    max_batch_size is None when the file does not set it: the server's --max-batch-size then
    applies, as Triton's auto-completed configuration applies its default-max-batch-size, and
    declared dims leave out the batch dim of a model that has one. As there, a model batches
    whenever its max_batch_size is over 1; a dynamic_batching block only tunes it.
    max_queue_size 0 leaves the server's --max-queue-size in force.
    """

    max_batch_size: int | None = None
    max_queue_delay_us: int | None = None
    default_model_filename: str = DEFAULT_MODEL_FILENAME
    instance_kind: str | None = None
    gpus: tuple[int, ...] = ()
    instance_count: int = 1
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_size: int = 0
    version_policy: tuple = ("latest", 1)
    inputs: tuple[TensorConfig, ...] = ()
    outputs: tuple[TensorConfig, ...] = ()

    @classmethod
    def read(cls, path: Path, model_name: str) -> ModelConfig:
        """Read and check DIR/NAME/config.pbtxt."""
        try:
            message = parse_config(path.read_text(encoding="utf-8"))
        except (RepositoryError, UnicodeDecodeError) as exc:
            raise RepositoryError(f"{path}: cannot parse: {exc}") from None
        return cls.from_message(message, model_name, str(path))

    @classmethod
    def from_message(cls, message: pb.ModelConfig, model_name: str, where: str) -> ModelConfig:
        """Check a parsed configuration of model MODEL_NAME (WHERE names it in errors)."""
        if message.name and message.name != model_name:
            raise RepositoryError(f"{where}: name is '{message.name}' but the directory is '{model_name}'")
        if message.platform not in ("", PLATFORM) or message.backend not in ("", BACKEND):
            raise RepositoryError(
                f"{where}: platform/backend must be {PLATFORM}/{BACKEND}, got {message.platform or message.backend}"
            )
        if message.parameters:
            raise RepositoryError(
                f"{where}: parameters {', '.join(sorted(message.parameters))} are not supported by this server "
                "(it reads no model parameters)"
            )
        max_batch_size = message.max_batch_size if message.HasField("max_batch_size") else None
        if max_batch_size is not None and max_batch_size < 0:
            raise RepositoryError(f"{where}: max_batch_size must be >= 0, got {max_batch_size}")
        filename = DEFAULT_MODEL_FILENAME
        if message.HasField("default_model_filename"):
            filename = plain_filename(message.default_model_filename, where)
        kind, gpus, count = _instance_group(message.instance_group, where)
        batching = _dynamic_batching(message, where)
        return cls(
            max_batch_size=max_batch_size,
            default_model_filename=filename,
            instance_kind=kind,
            gpus=gpus,
            instance_count=count,
            version_policy=_version_policy(message, where),
            inputs=_tensors(message.input, "input", where),
            outputs=_tensors(message.output, "output", where),
            **batching,
        )

    def select_versions(self, available: list[int]) -> tuple[list[int], list[int]]:
        """The versions the version policy serves out of AVAILABLE, and the ones it names that are missing."""
        kind, argument = self.version_policy
        ordered = sorted(available)
        if kind == "all":
            return ordered, []
        if kind == "specific":
            return [v for v in ordered if v in argument], sorted(set(argument) - set(ordered))
        return ordered[-argument:], []

    def describe_policy(self) -> str:
        """The version policy as config.pbtxt writes it, for messages."""
        kind, argument = self.version_policy
        if kind == "all":
            return "all"
        if kind == "specific":
            return f"specific {{ versions: {list(argument)} }}"
        return f"latest {{ num_versions: {argument} }}"


def _version_policy(message: pb.ModelConfig, where: str) -> tuple:
    policy = message.version_policy
    choice = policy.WhichOneof("policy_choice")
    if choice == "all":
        return ("all", None)
    if choice == "specific":
        versions = tuple(policy.specific.versions)
        if not versions or any(v < 0 for v in versions):
            raise RepositoryError(
                f"{where}: version_policy specific must list version numbers >= 0, got {list(versions)}"
            )
        return ("specific", versions)
    count = policy.latest.num_versions if policy.latest.HasField("num_versions") else 1
    if count < 1:
        raise RepositoryError(f"{where}: version_policy latest num_versions must be >= 1, got {count}")
    return ("latest", count)


def _dynamic_batching(message: pb.ModelConfig, where: str) -> dict:
    if not message.HasField("dynamic_batching"):
        return {}
    block = message.dynamic_batching
    preferred = tuple(block.preferred_batch_size)
    if any(size < 1 for size in preferred):
        raise RepositoryError(f"{where}: dynamic_batching preferred_batch_size must be >= 1, got {list(preferred)}")
    if message.max_batch_size and any(size > message.max_batch_size for size in preferred):
        raise RepositoryError(
            f"{where}: dynamic_batching preferred_batch_size {list(preferred)} exceeds max_batch_size "
            f"{message.max_batch_size}"
        )
    delay = block.max_queue_delay_microseconds if block.HasField("max_queue_delay_microseconds") else None
    return {
        "max_queue_delay_us": delay,
        "preferred_batch_sizes": tuple(sorted(set(preferred))),
        "max_queue_size": block.default_queue_policy.max_queue_size,
    }


def _tensors(entries, role: str, where: str) -> tuple[TensorConfig, ...]:
    tensors, seen = [], set()
    for entry in entries:
        if not entry.name:
            raise RepositoryError(f"{where}: every {role} needs a name")
        if entry.name in seen:
            raise RepositoryError(f"{where}: {role} '{entry.name}' is declared twice")
        seen.add(entry.name)
        if entry.data_type == pb.TYPE_INVALID:
            raise RepositoryError(f"{where}: {role} '{entry.name}' needs a data_type (e.g. TYPE_FP32)")
        dims = tuple(entry.dims)
        if not dims or any(d == 0 or d < -1 for d in dims):
            raise RepositoryError(
                f"{where}: {role} '{entry.name}' dims must list each dim as an integer >= 1, or -1 for a variable "
                f"size, got {list(dims)}"
            )
        tensors.append(TensorConfig(entry.name, pb.DataType.Name(entry.data_type).removeprefix("TYPE_"), dims))
    return tuple(tensors)


def _instance_group(groups, where: str) -> tuple[str | None, tuple[int, ...], int]:
    """The device kind, GPU index and session count of a config's instance_group entries.

    Every entry must agree on one kind and at most one GPU: the server places each model version
    on one device. The counts add up, as Triton's instances do: that many onnxruntime sessions
    of each version take runs side by side.
    """
    kinds, gpus, count = set(), set(), 0
    for group in groups:
        kind = pb.ModelInstanceGroup.Kind.Name(group.kind)
        if kind == "KIND_MODEL":
            raise RepositoryError(f"{where}: instance_group kind KIND_MODEL is not supported; use KIND_CPU or KIND_GPU")
        if group.HasField("count") and group.count < 1:
            raise RepositoryError(f"{where}: instance_group count must be >= 1, got {group.count}")
        indices = list(group.gpus)
        if any(i < 0 for i in indices):
            raise RepositoryError(f"{where}: instance_group gpus must be GPU indices (integers >= 0), got {indices}")
        if indices and kind != "KIND_GPU":
            raise RepositoryError(f"{where}: instance_group lists gpus {indices} for {kind}; gpus need KIND_GPU")
        kinds.add(kind)
        gpus.update(indices)
        count += group.count if group.HasField("count") else 1
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
    return (None if kind == "KIND_AUTO" else kind), tuple(gpus), max(count, 1)


def declared_specs(config: ModelConfig, model: tuple[TensorSpec, ...], role: str, where: str,
                   batched: bool) -> tuple[TensorSpec, ...]:
    """The model's tensors (of ROLE input or output) narrowed to what config.pbtxt declares.

    Each declared tensor must exist in the ONNX model with the same type and rank, and its dims
    may only fix what the model leaves variable; a RepositoryError names the first mismatch. With
    the model BATCHED (max_batch_size > 0, or none set for a model with a batch axis) the dims
    leave out the batch dim, as in Triton. Every model input must be declared once any is;
    outputs may be a subset.
    """
    declared = config.inputs if role == "input" else config.outputs
    if not declared:
        return model
    by_name = {spec.name: spec for spec in model}
    names = {t.name for t in declared}
    for tensor in declared:
        if tensor.name not in by_name:
            raise RepositoryError(
                f"{where}: config.pbtxt declares {role} '{tensor.name}', which the model does not have "
                f"(its {role}s: {', '.join(by_name)})"
            )
    missing = [name for name in by_name if name not in names]
    if role == "input" and missing:
        raise RepositoryError(f"{where}: config.pbtxt does not declare the model's input(s) {', '.join(missing)}")
    batch = (-1,) if batched else ()
    return tuple(
        _narrowed(by_name[name], next(t for t in declared if t.name == name), batch, role, where)
        for name in by_name
        if name in names or role == "input"
    )


def _narrowed(spec: TensorSpec, tensor: TensorConfig, batch: tuple, role: str, where: str) -> TensorSpec:
    if tensor.datatype != spec.datatype:
        raise RepositoryError(
            f"{where}: config.pbtxt {role} '{tensor.name}' has data_type TYPE_{tensor.datatype} but the model's "
            f"is TYPE_{spec.datatype}"
        )
    shape = batch + tensor.dims
    if spec.shape is None:
        return TensorSpec(spec.name, spec.datatype, shape)
    if len(shape) != len(spec.shape) or any(a >= 0 and b >= 0 and a != b for a, b in zip(shape, spec.shape)):
        with_batch = " (with the batch dim that max_batch_size adds)" if batch else ""
        raise RepositoryError(
            f"{where}: config.pbtxt {role} '{tensor.name}' has dims {list(tensor.dims)}, shape {list(shape)}"
            f"{with_batch}, but the model's shape is {list(spec.shape)}"
        )
    return TensorSpec(spec.name, spec.datatype, tuple(a if a >= 0 else b for a, b in zip(shape, spec.shape)))
