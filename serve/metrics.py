"""Per-model inference statistics, in Triton's JSON shape and as Prometheus text."""

from __future__ import annotations

import time
from collections.abc import Iterable


class ModelStats:
    """Counters and cumulative durations (nanoseconds) for one model version."""

    __slots__ = (
        "success_count",
        "success_ns",
        "fail_count",
        "fail_ns",
        "queue_count",
        "queue_ns",
        "input_count",
        "input_ns",
        "infer_count",
        "infer_ns",
        "output_count",
        "output_ns",
        "inference_count",
        "execution_count",
        "last_inference_ms",
        "batches",
    )

    def __init__(self) -> None:
        self.success_count = self.success_ns = 0
        self.fail_count = self.fail_ns = 0
        self.queue_count = self.queue_ns = 0
        self.input_count = self.input_ns = 0
        self.infer_count = self.infer_ns = 0
        self.output_count = self.output_ns = 0
        self.inference_count = 0
        self.execution_count = 0
        self.last_inference_ms = 0
        # rows per execution -> [executions, input ns, infer ns, output ns]
        self.batches: dict[int, list[int]] = {}

    def record_success(self, duration_ns: int) -> None:
        """Count a request answered with outputs."""
        self.success_count += 1
        self.success_ns += duration_ns
        self.last_inference_ms = time.time_ns() // 1_000_000

    def record_failure(self, duration_ns: int) -> None:
        """Count a request for this model that ended in an error."""
        self.fail_count += 1
        self.fail_ns += duration_ns

    def record_execution(self, rows: int, requests: int, queue_ns: int, input_ns: int, infer_ns: int, output_ns: int) -> None:
        """Count one session run serving `requests` requests with `rows` samples in total."""
        self.execution_count += 1
        self.inference_count += rows
        self.queue_count += requests
        self.queue_ns += queue_ns
        # Like Triton, each request in a batch is charged the batch's full compute time.
        self.input_count += requests
        self.input_ns += input_ns * requests
        self.infer_count += requests
        self.infer_ns += infer_ns * requests
        self.output_count += requests
        self.output_ns += output_ns * requests
        batch = self.batches.get(rows)
        if batch is None:
            batch = self.batches[rows] = [0, 0, 0, 0]
        batch[0] += 1
        batch[1] += input_ns
        batch[2] += infer_ns
        batch[3] += output_ns

    def to_json(self, name: str, version: str) -> dict:
        """This model's entry in Triton's statistics response."""

        def duration(count: int, ns: int) -> dict:
            return {"count": count, "ns": ns}

        return {
            "name": name,
            "version": version,
            "last_inference": self.last_inference_ms,
            "inference_count": self.inference_count,
            "execution_count": self.execution_count,
            "inference_stats": {
                "success": duration(self.success_count, self.success_ns),
                "fail": duration(self.fail_count, self.fail_ns),
                "queue": duration(self.queue_count, self.queue_ns),
                "compute_input": duration(self.input_count, self.input_ns),
                "compute_infer": duration(self.infer_count, self.infer_ns),
                "compute_output": duration(self.output_count, self.output_ns),
                "cache_hit": duration(0, 0),
                "cache_miss": duration(0, 0),
            },
            "batch_stats": [
                {
                    "batch_size": rows,
                    "compute_input": duration(runs, input_ns),
                    "compute_infer": duration(runs, infer_ns),
                    "compute_output": duration(runs, output_ns),
                }
                for rows, (runs, input_ns, infer_ns, output_ns) in sorted(self.batches.items())
            ],
            "memory_usage": [],
        }


_COUNTERS = (
    ("nv_inference_request_success", "Number of successful inference requests, all batch sizes", lambda s: s.success_count),
    ("nv_inference_request_failure", "Number of failed inference requests, all batch sizes", lambda s: s.fail_count),
    ("nv_inference_count", "Number of inferences performed (a batch of N samples counts N)", lambda s: s.inference_count),
    ("nv_inference_exec_count", "Number of model executions performed", lambda s: s.execution_count),
    (
        "nv_inference_request_duration_us",
        "Cumulative inference request duration in microseconds",
        lambda s: (s.success_ns + s.fail_ns) // 1000,
    ),
    ("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds", lambda s: s.queue_ns // 1000),
    (
        "nv_inference_compute_input_duration_us",
        "Cumulative compute input duration in microseconds",
        lambda s: s.input_ns // 1000,
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "Cumulative compute inference duration in microseconds",
        lambda s: s.infer_ns // 1000,
    ),
    (
        "nv_inference_compute_output_duration_us",
        "Cumulative inference compute output duration in microseconds",
        lambda s: s.output_ns // 1000,
    ),
)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(models: Iterable) -> str:
    """Prometheus exposition text for loaded model versions (objects with name, version, stats, provider, pending)."""
    models = list(models)
    lines: list[str] = []
    for metric, help_text, value in _COUNTERS:
        lines.append(f"# HELP {metric} {help_text}")
        lines.append(f"# TYPE {metric} counter")
        for model in models:
            lines.append(f'{metric}{{model="{_label(model.name)}",version="{model.version}"}} {value(model.stats)}')
    lines.append("# HELP nv_inference_pending_request_count Instantaneous number of pending requests awaiting execution")
    lines.append("# TYPE nv_inference_pending_request_count gauge")
    for model in models:
        lines.append(f'nv_inference_pending_request_count{{model="{_label(model.name)}",version="{model.version}"}} {model.pending}')
    lines.append("# HELP serve_model_execution_provider onnxruntime execution provider running each model version (always 1)")
    lines.append("# TYPE serve_model_execution_provider gauge")
    for model in models:
        lines.append(
            f'serve_model_execution_provider{{model="{_label(model.name)}",version="{model.version}",'
            f'provider="{_label(model.provider)}"}} 1'
        )
    return "\n".join(lines) + "\n"
