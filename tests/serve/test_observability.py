"""Observability through a real server: /metrics (Triton's names, latency histograms, process metrics) parsed
with prometheus_client, the metrics port, the access log, "ready" only once every port is bound, exit statuses."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from prometheus_client.parser import text_string_to_metric_families

from serve.metrics import BUCKETS_US
from tests.serve.harness import ROOT, ServeProcess, free_port

LABELS = {"model": "classifier", "version": "1"}


def _body(rows: int, width: int = 16) -> dict:
    x = np.linspace(-1, 1, rows * width, dtype=np.float32)
    return {"inputs": [{"name": "x", "datatype": "FP32", "shape": [rows, width], "data": x.tolist()}]}


def _families(text: str) -> dict:
    return {family.name: family for family in text_string_to_metric_families(text)}


def _value(family, sample_name: str, **labels) -> float:
    wanted = {**LABELS, **labels}
    matches = [s.value for s in family.samples if s.name == sample_name and s.labels == wanted]
    assert len(matches) == 1, (sample_name, wanted, family.samples)
    return matches[0]


@pytest.fixture(scope="module")
def metrics_port():
    return free_port()


@pytest.fixture(scope="module")
def server(start_server, mlp_file, metrics_port):
    server = start_server(mlp_file, "--metrics-port", str(metrics_port), "--log-verbose")
    for rows in (1, 3):
        assert httpx.post(server.url + "/v2/models/classifier/infer", json=_body(rows)).status_code == 200
    assert httpx.post(server.url + "/v2/models/classifier/infer", json=_body(1, 15)).status_code == 400
    return server


def test_metrics_keep_triton_names_and_add_latency_histograms(server):
    families = _families(httpx.get(server.url + "/metrics").text)
    assert families["nv_inference_request_success"].type == "counter"
    assert _value(families["nv_inference_request_success"], "nv_inference_request_success_total") == 2
    assert _value(families["nv_inference_request_failure"], "nv_inference_request_failure_total") == 1
    assert _value(families["nv_inference_count"], "nv_inference_count_total") == 4
    bounds = [str(b) for b in BUCKETS_US] + ["+Inf"]
    expected_counts = {"nv_inference_request_histogram_us": 3, "nv_inference_queue_histogram_us": 2,
                       "nv_inference_compute_infer_histogram_us": 2}
    for name, count in expected_counts.items():
        family = families[name]
        assert family.type == "histogram"
        buckets = [s for s in family.samples if s.name == name + "_bucket"]
        assert [s.labels["le"] for s in buckets] == bounds
        values = [s.value for s in buckets]
        assert values == sorted(values) and values[-1] == count
        assert _value(family, name + "_count") == count
    compute_sum = _value(families["nv_inference_compute_infer_histogram_us"], "nv_inference_compute_infer_histogram_us_sum")
    compute_total = _value(families["nv_inference_compute_infer_duration_us"],
                           "nv_inference_compute_infer_duration_us_total")
    # The counter holds whole microseconds per request, the histogram's sum their exact values.
    assert compute_total <= compute_sum < compute_total + 2
    assert families["process_resident_memory_bytes"].samples[0].value > 10e6
    assert families["process_cpu_seconds"].samples[0].value > 0


def test_metrics_port(server, metrics_port):
    response = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = _families(response.text)
    assert _value(families["nv_inference_request_success"], "nv_inference_request_success_total") == 2
    assert "nv_inference_request_histogram_us" in families
    assert httpx.get(f"http://127.0.0.1:{metrics_port}/v2/health/ready").status_code == 404
    assert httpx.post(f"http://127.0.0.1:{metrics_port}/metrics").status_code == 405


def test_access_log(server):
    grpc = grpcclient.InferenceServerClient(server.grpc_address)
    assert not grpc.is_model_ready("nope")
    grpc.close()
    # A call's line is written once the call has ended, which may be just after the client has its answer.
    deadline = time.monotonic() + 10
    while "gRPC /inference.GRPCInferenceService/ModelReady OK" not in server.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = server.log()
    assert '"POST /v2/models/classifier/infer HTTP/1.1" 200' in log
    assert '"POST /v2/models/classifier/infer HTTP/1.1" 400' in log
    assert "gRPC /inference.GRPCInferenceService/ModelReady OK" in log


def test_no_access_log_by_default(start_server, mlp_file):
    quiet = start_server(mlp_file)
    assert httpx.post(quiet.url + "/v2/models/classifier/infer", json=_body(1)).status_code == 200
    assert "POST /v2/models/classifier/infer" not in quiet.log()


@pytest.mark.parametrize("flag", ["--port", "--grpc-port", "--metrics-port"])
def test_a_port_that_cannot_be_bound_exits_3_without_claiming_ready(mlp_file, flag):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        flags = ["--metrics-port", str(free_port())] if flag != "--metrics-port" else []
        server = ServeProcess(mlp_file, *flags, flag, str(port))
        # The last --port / --grpc-port on the command line wins over the harness's free one.
        status = server.process.wait(timeout=60)
    log = server.log()
    assert status == 3, log
    assert "server ready" not in log
    assert str(port) in log


def test_help_documents_exit_statuses_and_container_hosts():
    result = subprocess.run([sys.executable, "-m", "serve", "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    text = " ".join(result.stdout.split())
    assert "3 when a port (HTTP, gRPC or metrics) cannot be bound" in text
    assert "1 when no model could be loaded at startup" in text
    assert "in a container" in text and "0.0.0.0" in text
    assert "--metrics-port" in text and "--log-verbose" in text
