"""Per-model inference statistics, in Triton's JSON shape and as Prometheus metrics.

Triton's counters keep Triton's exact exposition (``nv_inference_request_success{...}``, typed
counter, no ``_total`` suffix, which prometheus_client would add), so dashboards written for
Triton read them unchanged. Latency histograms and process metrics come from prometheus_client.
All observations happen on the event loop's thread, so they need no lock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector, generate_latest
from prometheus_client.core import HistogramMetricFamily

logger = logging.getLogger("serve.metrics")

# Upper bounds (microseconds) of the latency histograms' buckets: 100 us to 10 s, then +Inf.
BUCKETS_US = (100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
              1_000_000, 2_500_000, 5_000_000, 10_000_000)


class LatencyHistogram:
    """Counts of durations per bucket of BUCKETS_US, and their sum in microseconds."""

    __slots__ = ("counts", "sum_us")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS_US) + 1)
        self.sum_us = 0.0

    def observe(self, duration_ns: int, times: int = 1) -> None:
        """Count TIMES durations of DURATION_NS nanoseconds."""
        us = duration_ns / 1000
        self.counts[bisect_left(BUCKETS_US, us)] += times
        self.sum_us += us * times

    def buckets(self) -> list[tuple[str, int]]:
        """Cumulative (upper bound, count) pairs as Prometheus writes them, ending with +Inf."""
        total, pairs = 0, []
        for bound, count in zip((*map(str, BUCKETS_US), "+Inf"), self.counts):
            total += count
            pairs.append((bound, total))
        return pairs


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
        "request_us",
        "queue_us",
        "compute_us",
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
        self.request_us = LatencyHistogram()
        self.queue_us = LatencyHistogram()
        self.compute_us = LatencyHistogram()

    def record_success(self, duration_ns: int) -> None:
        """Count a request answered with outputs."""
        self.success_count += 1
        self.success_ns += duration_ns
        self.request_us.observe(duration_ns)
        self.last_inference_ms = time.time_ns() // 1_000_000

    def record_failure(self, duration_ns: int) -> None:
        """Count a request for this model that ended in an error."""
        self.fail_count += 1
        self.fail_ns += duration_ns
        self.request_us.observe(duration_ns)

    def record_execution(self, rows: int, requests: int, queue_ns: Sequence[int], input_ns: int, infer_ns: int,
                         output_ns: int) -> None:
        """Count one session run serving `requests` requests with `rows` samples in total, each request
        having waited its entry of `queue_ns` in the queue."""
        self.execution_count += 1
        self.inference_count += rows
        self.queue_count += requests
        for wait_ns in queue_ns:
            self.queue_ns += wait_ns
            self.queue_us.observe(wait_ns)
        self.compute_us.observe(infer_ns, requests)
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


_HISTOGRAMS = (
    ("nv_inference_request_histogram_us", "Histogram of end-to-end inference request durations in microseconds",
     "request_us"),
    ("nv_inference_queue_histogram_us", "Histogram of the time requests wait in the scheduling queue in microseconds",
     "queue_us"),
    ("nv_inference_compute_infer_histogram_us",
     "Histogram of the model execution time charged to each request (a batch's whole run) in microseconds",
     "compute_us"),
)


class _LatencyCollector:
    """prometheus_client collector of latency histograms from a snapshot: (name, version, histograms) per version."""

    def __init__(self, snapshot: list[tuple[str, str, list[tuple[list, float]]]]) -> None:
        self.snapshot = snapshot

    def collect(self):
        for index, (metric, help_text, _) in enumerate(_HISTOGRAMS):
            family = HistogramMetricFamily(metric, help_text, labels=["model", "version"])
            for name, version, histograms in self.snapshot:
                buckets, sum_us = histograms[index]
                family.add_metric([name, version], buckets, sum_us)
            yield family


class Exposition:
    """The server's /metrics page: Triton's counters, latency histograms, and process metrics."""

    def __init__(self, models: Callable[[], Iterable]) -> None:
        self.models = models
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)

    async def render(self) -> str:
        """The Prometheus text exposition of everything, as of now.

        The numbers are copied on the event loop, which alone updates them; prometheus_client's
        formatting (several microseconds a sample) runs on a helper thread.
        """
        models = list(self.models())
        snapshot = [
            (m.name, m.version, [(getattr(m.stats, a).buckets(), getattr(m.stats, a).sum_us) for _, _, a in _HISTOGRAMS])
            for m in models
        ]
        counters = prometheus_text(models)
        return counters + await asyncio.to_thread(self._format, snapshot)

    def _format(self, snapshot: list) -> str:
        latencies = CollectorRegistry(auto_describe=False)
        latencies.register(_LatencyCollector(snapshot))
        return (generate_latest(latencies) + generate_latest(self.registry)).decode()


class MetricsServer:
    """GET /metrics on a port of its own (--metrics-port), served on the server's event loop.

    Each connection asks one thing and is closed after the answer; a request line and headers
    beyond 16 KiB, or slower than 10 s, are dropped, so a scraper's port cannot be held open.
    """

    CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self, exposition: Exposition, host: str, port: int) -> None:
        self.exposition = exposition
        self.host = host
        self.port = port
        self._server = None

    async def start(self) -> None:
        """Bind and start serving; RuntimeError naming the port when it cannot be bound."""
        try:
            self._server = await asyncio.start_server(self._answer, self.host, self.port, limit=16 * 1024)
        except OSError as exc:
            raise RuntimeError(f"cannot bind the metrics port {self.host}:{self.port}: {exc}") from None
        logger.info("Prometheus metrics on http://%s:%d/metrics", self.host, self.port)

    async def stop(self) -> None:
        """Stop listening and close the open connections."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _answer(self, reader, writer) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, _, rest = head.partition(b" ")
            path = rest.partition(b" ")[0].partition(b"?")[0]
            if method not in (b"GET", b"HEAD"):
                status, body, kind = "405 Method Not Allowed", b"only GET /metrics is served here\n", "text/plain"
            elif path != b"/metrics":
                status, body, kind = "404 Not Found", b"only GET /metrics is served here\n", "text/plain"
            else:
                status, body, kind = "200 OK", (await self.exposition.render()).encode(), self.CONTENT_TYPE
            header = f"HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
            writer.write(header.encode("ascii") + (b"" if method == b"HEAD" else body))
            await writer.drain()
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()
