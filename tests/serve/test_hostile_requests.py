"""Hostile and careless clients against a real server process on loopback: every request costs bounded
memory and time, and an unauthenticated client learns nothing of the server's files.

One server holds the attention model (whose scores grow with the square of the sequence), an MLP, a model
that makes NaN and infinities, a broken file and two links out of the repository; its limits are lowered
by flags so that each case is small and quick.
"""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import time
from pathlib import Path

import grpc
import httpx
import numpy as np
import pytest
from onnx import TensorProto, helper
from tritonclient.grpc import service_pb2, service_pb2_grpc

from tests.serve import models
from tests.serve.harness import ON_CUDA

MIB = 1 << 20
SEQ_OVER_BUDGET = 24_000  # attention scores of 24000^2 float32: 2.3 GB, over the 768 MiB budget below
SEQ_WITHIN_BUDGET = 6_000  # 144 MB of scores: served, and the memory goes back afterwards
FLAGS = (
    "--max-inference-memory", str(768 * MIB),
    "--max-request-elements", str(2_000_000),
    "--max-json-bytes", str(MIB),
    "--max-inflight-bytes", str(40 * MIB),
    "--max-inflight-requests", "6",
    "--grpc-stream-inflight", "2",
    "--max-header-bytes", "16384",
    "--header-timeout", "1",
    "--body-timeout", "1",
    "--device", "cpu",
)


def _nonfinite_model(path: Path) -> Path:
    """y = log(x): NaN for x < 0, -inf for 0, inf for inf."""
    graph = helper.make_graph(
        [helper.make_node("Log", ["x"], ["y"])], "log",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
    )
    return models._save(graph, path)


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    """The hostile repository, beside a folder outside it that links point into."""
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "repository", base / "outside"
    models.attention(root / "attention" / "1" / "model.onnx", width=64)
    models.mlp(root / "mlp" / "1" / "model.onnx", sizes=(16, 32, 5), seed=3)
    _nonfinite_model(root / "log" / "1" / "model.onnx")
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx file")
    models.mlp(outside / "stolen" / "1" / "model.onnx", sizes=(16, 5), seed=4)
    (root / "linked").symlink_to(outside / "stolen", target_is_directory=True)
    (root / "linkedfile" / "1").mkdir(parents=True)
    (root / "linkedfile" / "1" / "model.onnx").symlink_to(outside / "stolen" / "1" / "model.onnx")
    (root / "inner" / "1").mkdir(parents=True)
    (root / "inner" / "1" / "model.onnx").symlink_to(root / "mlp" / "1" / "model.onnx")
    return root


@pytest.fixture(scope="module")
def server(start_server, layout):
    return start_server(layout, *FLAGS)


def _memory(server, field: str) -> int:
    """A /proc/PID/status field of the server process (VmRSS, VmHWM), in bytes."""
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for the server process")


def _binary_infer(model: str, array: np.ndarray) -> tuple[bytes, dict[str, str]]:
    header = json.dumps({
        "inputs": [{"name": "x", "datatype": "FP32", "shape": list(array.shape),
                    "parameters": {"binary_data_size": array.nbytes}}],
        "parameters": {"binary_data_output": True},
    }).encode()
    headers = {"Inference-Header-Content-Length": str(len(header)), "Content-Type": "application/octet-stream"}
    return header + array.tobytes(), headers


def _raw_exchange(server, payload: bytes, pause: float = 0.0, chunks: int = 1, timeout: float = 20.0) -> bytes:
    """Send PAYLOAD over a raw socket in CHUNKS pieces PAUSE seconds apart (stopping once the server
    answers), then read until the server closes."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        size = max(1, -(-len(payload) // chunks))
        try:
            for start in range(0, len(payload), size):
                if select.select([sock], [], [], pause)[0]:
                    break
                sock.sendall(payload[start:start + size])
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


@pytest.mark.skipif(ON_CUDA, reason="the inference memory budget is onnxruntime's CPU arena")
def test_attention_request_past_the_memory_budget_is_refused_at_once(server):
    base_rss, base_peak = _memory(server, "VmRSS"), _memory(server, "VmHWM")
    x = np.random.default_rng(0).standard_normal((1, SEQ_OVER_BUDGET, 64)).astype(np.float32)
    body, headers = _binary_infer("attention", x)
    response = httpx.post(server.url + "/v2/models/attention/infer", content=body, headers=headers, timeout=60)
    assert response.status_code == 503
    message = response.json()["error"]
    assert "more memory than the server's inference memory budget" in message
    assert "onnxruntime_src" not in message and ".cc:" not in message
    # The 2.3 GB of scores were never allocated: the peak grew by little more than the request itself.
    assert _memory(server, "VmHWM") - max(base_peak, base_rss) < 400 * MIB
    assert httpx.get(server.url + "/v2/health/ready").status_code == 200
    with grpc.insecure_channel(server.grpc_address) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        request = service_pb2.ModelInferRequest(model_name="attention", raw_input_contents=[x.tobytes()])
        request.inputs.add(name="x", datatype="FP32", shape=list(x.shape))
        with pytest.raises(grpc.RpcError) as failure:
            stub.ModelInfer(request, timeout=60)
    assert failure.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.mark.skipif(ON_CUDA, reason="the arena that shrinks is onnxruntime's CPU arena")
def test_memory_goes_back_after_a_large_run(server):
    base_rss = _memory(server, "VmRSS")
    x = np.random.default_rng(1).standard_normal((1, SEQ_WITHIN_BUDGET, 64)).astype(np.float32)
    body, headers = _binary_infer("attention", x)
    response = httpx.post(server.url + "/v2/models/attention/infer", content=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    assert _memory(server, "VmHWM") - base_rss > 100 * MIB  # the scores were there
    assert _memory(server, "VmRSS") - base_rss < 60 * MIB  # and went back


def test_elements_past_the_budget_are_refused_from_the_binary_header(server):
    header = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 40_000, 64],
                                     "parameters": {"binary_data_size": 40_000 * 64 * 4}}]}).encode()
    head = (
        f"POST /v2/models/attention/infer HTTP/1.1\r\nHost: t\r\nContent-Length: {len(header) + 40_000 * 256}\r\n"
        f"Inference-Header-Content-Length: {len(header)}\r\nConnection: close\r\n\r\n"
    ).encode()
    # Only the JSON header is sent: the answer comes without the 10 MB of tensor bytes.
    answer = _raw_exchange(server, head + header + b"\0" * (1 << 20))
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"2560000 elements or more, the limit is 2000000" in answer


def test_binary_body_longer_than_its_header_announces_is_refused_early(server):
    header = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4096, 64],
                                     "parameters": {"binary_data_size": 4096 * 256}}]}).encode()
    head = (
        f"POST /v2/models/attention/infer HTTP/1.1\r\nHost: t\r\nContent-Length: {len(header) + (8 << 20)}\r\n"
        f"Inference-Header-Content-Length: {len(header)}\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = _raw_exchange(server, head + header + b"\0" * 4096)
    assert answer.startswith(b"HTTP/1.1 400")
    assert f"announces {4096 * 256} binary bytes after it".encode() in answer


def test_json_body_limit_is_checked_on_content_length(server):
    head = b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: t\r\nContent-Length: 50000000\r\nConnection: close\r\n\r\n"
    answer = _raw_exchange(server, head + b'{"inputs": [')
    assert answer.startswith(b"HTTP/1.1 413") and b"JSON request body is 50000000 bytes" in answer


def test_bytes_in_flight_are_bounded(server):
    """Two JSON bodies of 900 KB count 14 MiB each (JSON weight 16): a third does not fit in 40 MiB."""
    head = b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: t\r\nContent-Length: 921600\r\n\r\n"
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(2)]
    done = threading.Event()

    def trickle() -> None:
        # A byte every 0.3 s keeps the held bodies inside the 1 s body timeout.
        while not done.wait(0.3):
            for sock in held:
                sock.sendall(b" ")

    feeder = threading.Thread(target=trickle)
    try:
        for sock in held:
            sock.sendall(head + b'{"inputs": ')
        feeder.start()
        # Until both held requests are admitted, a third one is admitted too, and times out (408).
        third = head.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n") + b"{"
        answers = [_raw_exchange(server, third)]
        while not answers[-1].startswith(b"HTTP/1.1 503") and len(answers) < 10:
            answers.append(_raw_exchange(server, third))
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers[:-1])
        assert answers[-1].startswith(b"HTTP/1.1 503") and b"bytes of requests in flight" in answers[-1]
    finally:
        done.set()
        if feeder.is_alive():
            feeder.join()
        for sock in held:
            sock.close()
    x = np.ones((1, 16), np.float32)
    response = httpx.post(server.url + "/v2/models/mlp/infer", content=_binary_infer("mlp", x)[0],
                          headers=_binary_infer("mlp", x)[1])
    assert response.status_code == 200


def test_large_header_is_answered_431(server):
    payload = b"GET /v2/health/live HTTP/1.1\r\nHost: t\r\nX-Filler: " + b"a" * (16 * MIB)
    answer = _raw_exchange(server, payload, chunks=256)
    assert answer.startswith(b"HTTP/1.1 431")
    assert httpx.get(server.url + "/v2/health/live").status_code == 200


def test_slow_header_and_short_body_time_out(server):
    # One header byte every 0.2 s: the 1 s header timeout closes it with 408.
    slow = b"GET /v2/health/live HTTP/1.1\r\nHost: t\r\nX-Slow: abcdefghijklmnopqrstuvwxyz\r\n\r\n"
    assert _raw_exchange(server, slow, pause=0.2, chunks=len(slow)).startswith(b"HTTP/1.1 408")
    # A connection that sends nothing at all is closed the same way.
    assert _raw_exchange(server, b"").startswith(b"HTTP/1.1 408")
    # A body shorter than its Content-Length is not waited on forever.
    short = b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{\"inputs\""
    answer = _raw_exchange(server, short)
    assert answer.startswith(b"HTTP/1.1 408") and b"stopped arriving" in answer


def _stream_requests(count: int, x: np.ndarray):
    for i in range(count):
        request = service_pb2.ModelInferRequest(model_name="attention", id=str(i), raw_input_contents=[x.tobytes()])
        request.inputs.add(name="x", datatype="FP32", shape=list(x.shape))
        yield request


def test_grpc_stream_flood_is_read_as_answers_go_out(server):
    """40 requests on one stream: two run at a time, so the server's 6 in-flight slots never run out."""
    x = np.random.default_rng(2).standard_normal((1, 600, 64)).astype(np.float32)
    with grpc.insecure_channel(server.grpc_address) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        answers = list(stub.ModelStreamInfer(_stream_requests(40, x), timeout=120))
    assert len(answers) == 40
    assert [a.error_message for a in answers if a.error_message] == []
    assert sorted(int(a.infer_response.id) for a in answers) == list(range(40))


def test_grpc_calls_past_the_in_flight_bound_are_resource_exhausted(server):
    x = np.random.default_rng(3).standard_normal((1, 3000, 64)).astype(np.float32)
    codes: list[grpc.StatusCode] = []
    with grpc.insecure_channel(server.grpc_address) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        calls = [stub.ModelInfer.future(next(_stream_requests(1, x)), timeout=120) for _ in range(24)]
        for call in calls:
            try:
                call.result()
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as exc:
                codes.append(exc.code())
                assert "in flight" in exc.details()
    assert set(codes) == {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert httpx.get(server.url + "/v2/health/ready").status_code == 200


def test_grpc_raw_and_typed_contents_together_are_refused(server):
    with grpc.insecure_channel(server.grpc_address) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        request = service_pb2.ModelInferRequest(model_name="mlp", raw_input_contents=[np.ones(16, np.float32).tobytes()])
        tensor = request.inputs.add(name="x", datatype="FP32", shape=[1, 16])
        tensor.contents.fp32_contents.extend([2.0] * 16)
        with pytest.raises(grpc.RpcError) as failure:
            stub.ModelInfer(request, timeout=30)
    assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "both raw_input_contents and typed contents" in failure.value.details()


def test_unavailable_models_tell_clients_nothing_of_the_server(server, layout):
    for name in ("broken", "linked", "linkedfile"):
        expected = f"model '{name}' is unavailable"
        for path in ("", "/ready", "/config"):
            response = httpx.get(f"{server.url}/v2/models/{name}{path}")
            assert (response.status_code, response.json()["error"]) == (503, expected)
        response = httpx.post(f"{server.url}/v2/models/{name}/infer", json={"inputs": []})
        assert (response.status_code, response.json()["error"]) == (503, expected)
        with grpc.insecure_channel(server.grpc_address) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            for call, request in ((stub.ModelMetadata, service_pb2.ModelMetadataRequest(name=name)),
                                  (stub.ModelInfer, service_pb2.ModelInferRequest(model_name=name))):
                with pytest.raises(grpc.RpcError) as failure:
                    call(request, timeout=30)
                assert (failure.value.code(), failure.value.details()) == (grpc.StatusCode.UNAVAILABLE, expected)
    # The reasons, with their paths, are in the repository index and the log.
    index = {e["name"]: e for e in httpx.post(server.url + "/v2/repository/index").json()}
    assert "onnxruntime cannot load the model" in index["broken"]["reason"]
    for name in ("linked", "linkedfile"):
        assert index[name]["state"] == "UNAVAILABLE" and "leads out of the repository" in index[name]["reason"]
    assert "leads out of the repository" in server.log()
    # A link that stays inside the repository is served.
    assert index["inner"]["state"] == "READY" and index["mlp"]["state"] == "READY"


def test_nan_and_infinities_are_written_as_triton_does(server):
    response = httpx.post(server.url + "/v2/models/log/infer", json={
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [-1.0, 0.0, 1e39]}]})
    assert response.status_code == 200
    assert b'"data":[NaN,-Infinity,Infinity]' in response.content
    data = json.loads(response.content)["outputs"][0]["data"]
    assert np.isnan(data[0]) and data[1] == -np.inf and data[2] == np.inf


def _slow_repository(root: Path) -> Path:
    """Four models of 16 MB weights each load before model 'zz', which a client asks for meanwhile."""
    for i in range(4):
        models.mlp(root / f"big{i}" / "1" / "model.onnx", sizes=(1024, 2048, 2048, 8), seed=i)
    models.mlp(root / "zz" / "1" / "model.onnx", sizes=(16, 5), seed=9)
    return root


def test_models_on_disk_are_loading_until_loaded(start_server, tmp_path):
    server = start_server(_slow_repository(tmp_path / "slow"), "--device", "cpu", wait=False)
    answers: list[tuple[int, str]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set() and server.process.poll() is None:
            try:
                response = httpx.get(server.url + "/v2/models/zz/ready", timeout=5)
            except httpx.TransportError:
                time.sleep(0.01)
                continue
            answers.append((response.status_code, response.text))
            if response.status_code == 200:
                return

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        server.wait_ready(timeout=120)
        poller.join(timeout=30)
    finally:
        stop.set()
    statuses = {status for status, _ in answers}
    assert 404 not in statuses and statuses <= {200, 503}
    assert (503, json.dumps({"error": "model 'zz' is loading"}, separators=(",", ":"))) in answers
    assert answers[-1][0] == 200


def test_open_file_limit_leaves_room_for_the_connection_cap(server):
    limits = Path(f"/proc/{server.process.pid}/limits").read_text()
    soft = next(line.split()[3] for line in limits.splitlines() if line.startswith("Max open files"))
    hard = next(line.split()[4] for line in limits.splitlines() if line.startswith("Max open files"))
    assert soft == "unlimited" or int(soft) >= min(1000 + 256, int(hard) if hard != "unlimited" else 1 << 30)
    assert os.path.exists(f"/proc/{server.process.pid}")


def test_connections_past_the_cap_are_answered_503(start_server, mlp_file):
    server = start_server(mlp_file, "--max-connections", "4", "--device", "cpu")
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(3)]
    try:
        # The readiness probe's connection is gone; three idle ones and this one fill the cap of four.
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/v2/health/live").status_code == 200
            refused = _raw_exchange(server, b"GET /v2/health/live HTTP/1.1\r\nHost: t\r\n\r\n")
            assert refused.startswith(b"HTTP/1.1 503") and b"too many open connections" in refused
    finally:
        for sock in idle:
            sock.close()
    # Once the server has seen the idle connections close, new ones are served again.
    statuses = []
    while len(statuses) < 50 and 200 not in statuses:
        statuses.append(httpx.get(server.url + "/v2/health/live").status_code)
        time.sleep(0.05)
    assert statuses[-1] == 200 and set(statuses) <= {200, 503}
