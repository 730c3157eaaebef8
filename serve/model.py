"""A loaded model version: its session, batcher, statistics and cached metadata."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from serve.batcher import Batcher
from serve.config import BACKEND, PLATFORM, ModelConfig, RepositoryError
from serve.metrics import ModelStats
from serve.protocol import Signature
from serve.runtime import CUDA, InferencePool, ModelSession


@dataclass(frozen=True)
class ModelSource:
    """Where one model version's ONNX file is, its configuration, and the files' stamp.

    The stamp (size, modification time and inode of the model and config files) tells a
    changed file from the one already loaded.
    """

    name: str
    version: int
    path: Path
    config: ModelConfig
    stamp: tuple = ()


@dataclass(frozen=True)
class ModelLimits:
    """Admission limits of every model version (0: none): input elements per request, input elements
    a version holds in flight, and requests waiting in its queue (Triton's max_queue_size)."""

    request_elements: int = 0
    model_elements: int = 0
    queue_size: int = 0


class ModelVersion:
    """A loaded model version: session, batcher, statistics and its cached metadata."""

    def __init__(self, source: ModelSource, session: ModelSession, pool: InferencePool, max_rows: int, delay_us: int,
                 limits: ModelLimits = ModelLimits()) -> None:
        config = source.config
        self.source = source
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
        self.batcher = Batcher(session, pool, self.stats, max_rows if batch_axis else 0, delay_us / 1e6,
                               config.max_queue_size or limits.queue_size, limits.model_elements, source.name)
        self.batcher.preferred_rows = config.preferred_batch_sizes
        self.signature = Signature(session.inputs, session.outputs, batch_axis, config.max_batch_size or 0,
                                   limits.request_elements)
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

    def _instance_group(self) -> dict:
        count = self.source.config.instance_count
        if self.provider != CUDA:
            return {"kind": "KIND_CPU", "count": count}
        device = dict(self.session.placement.providers[0][1]).get("device_id", "0")
        return {"kind": "KIND_GPU", "count": count, "gpus": [int(device)]}

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
            "instance_group": [self._instance_group()],
            "default_model_filename": source.path.name,
            "parameters": {"execution_provider": {"string_value": self.provider}},
        }
        if self.batcher.enabled:
            config["dynamic_batching"] = {"max_queue_delay_microseconds": round(self.batcher.max_delay_s * 1e6)}
        return orjson.dumps(config)
