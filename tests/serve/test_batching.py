"""Dynamic batching against a real server: merged runs, per-request rows, isolation, and a bounded load test."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import numpy as np
import pytest

from tests.serve.harness import VALUES_CHECKED, reference


@pytest.fixture(scope="module")
def server(start_server, repository):
    # A generous queue delay makes merging certain even on a slow, busy machine.
    return start_server(repository, "--max-queue-delay-us", "50000", "--max-batch-size", "64", "--threads", "2")


def _json_body(inputs: dict[str, tuple[str, np.ndarray]], request_id: str | None = None) -> bytes:
    body = {
        "inputs": [
            {"name": name, "datatype": datatype, "shape": list(array.shape), "data": array.ravel().tolist()}
            for name, (datatype, array) in inputs.items()
        ]
    }
    if request_id is not None:
        body["id"] = request_id
    return json.dumps(body).encode()


def _binary_body(name: str, array: np.ndarray, datatype: str) -> tuple[bytes, dict]:
    raw = array.tobytes()
    header = json.dumps(
        {
            "inputs": [{"name": name, "datatype": datatype, "shape": list(array.shape), "parameters": {"binary_data_size": len(raw)}}],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    return header + raw, {"Inference-Header-Content-Length": str(len(header))}


def _decode_binary(response: httpx.Response) -> dict[str, np.ndarray]:
    length = int(response.headers["inference-header-content-length"])
    header = json.loads(response.content[:length])
    outputs, offset = {}, length
    for out in header["outputs"]:
        size = out["parameters"]["binary_data_size"]
        dtype = {"FP32": np.float32, "INT64": np.int64}[out["datatype"]]
        outputs[out["name"]] = np.frombuffer(response.content[offset:offset + size], dtype=dtype).reshape(out["shape"])
        offset += size
    return outputs


async def _burst(url: str, requests: list[tuple[str, bytes, dict]], concurrency: int) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(path: str, body: bytes, headers: dict) -> httpx.Response:
            async with gate:
                return await client.post(path, content=body, headers=headers)

        return await asyncio.gather(*(one(*r) for r in requests))


def _stats(url: str, model: str, version: str = "1") -> dict:
    return httpx.get(f"{url}/v2/models/{model}/versions/{version}/stats").json()["model_stats"][0]


def test_concurrent_requests_are_merged_and_split_back(server, repository):
    rng = np.random.default_rng(20)
    before = _stats(server.url, "multi")
    requests, sent = [], []
    for i in range(40):
        rows = 1 + i % 3
        features = rng.standard_normal((rows, 4)).astype(np.float32)
        ids = rng.integers(0, 1000, size=(rows, 3), dtype=np.int64)
        sent.append((features, ids))
        body = _json_body({"features": ("FP32", features), "ids": ("INT64", ids)}, request_id=f"r{i}")
        requests.append(("/v2/models/multi/infer", body, {"Content-Type": "application/json"}))
    responses = asyncio.run(_burst(server.url, requests, concurrency=40))
    model_path = repository / "multi" / "1" / "model.onnx"
    for i, (response, (features, ids)) in enumerate(zip(responses, sent)):
        assert response.status_code == 200, response.text
        payload = response.json()
        assert payload["id"] == f"r{i}"
        outputs = {o["name"]: np.array(o["data"]).reshape(o["shape"]) for o in payload["outputs"]}
        expected = reference(model_path, {"features": features, "ids": ids})
        np.testing.assert_allclose(outputs["scores"], expected["scores"], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(outputs["shifted"], ids * 3 + 1)
    after = _stats(server.url, "multi")
    rows = after["inference_count"] - before["inference_count"]
    runs = after["execution_count"] - before["execution_count"]
    assert rows == sum(f.shape[0] for f, _ in sent)
    assert runs < 40, f"{runs} runs for 40 concurrent requests: nothing was merged"
    assert any(b["batch_size"] > 3 for b in after["batch_stats"])


def test_only_matching_inner_dims_are_merged(server):
    rng = np.random.default_rng(21)
    requests, sent = [], []
    for i in range(24):
        x = rng.standard_normal((1 + i % 2, 3 if i % 3 else 5)).astype(np.float32)
        sent.append(x)
        body, headers = _binary_body("x", x, "FP32")
        requests.append(("/v2/models/rowsum/infer", body, headers))
    responses = asyncio.run(_burst(server.url, requests, concurrency=24))
    for response, x in zip(responses, sent):
        assert response.status_code == 200, response.text
        # A row sum can cancel to near zero, where a relative tolerance alone fails on the summation order of
        # another provider (CUDA's reduction differs from NumPy's): float32 rounding of five O(1) terms is ~1e-6.
        np.testing.assert_allclose(_decode_binary(response)["y"], x.sum(axis=1, keepdims=True), rtol=1e-5, atol=2e-6)
    stats = _stats(server.url, "rowsum")
    assert stats["execution_count"] < 24


def test_model_without_batch_axis_runs_each_request_alone(server):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    body = _json_body({"x": ("FP32", x)})
    before = _stats(server.url, "fixed")
    responses = asyncio.run(_burst(server.url, [("/v2/models/fixed/infer", body, {})] * 8, concurrency=8))
    for response in responses:
        assert response.status_code == 200
        assert response.json()["outputs"][0]["data"] == (x + 1).ravel().tolist()
    after = _stats(server.url, "fixed")
    assert after["execution_count"] - before["execution_count"] == 8
    assert after["inference_count"] - before["inference_count"] == 8


def test_failing_values_do_not_fail_batch_neighbours(server):
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    good = _json_body({"data": ("FP32", data), "idx": ("INT64", np.array([[0, 3], [1, 2]]))})
    bad = _json_body({"data": ("FP32", data[:1]), "idx": ("INT64", np.array([[0, 17]]))})
    path = "/v2/models/gather/infer"
    requests = [(path, bad if i == 5 else good, {}) for i in range(12)]
    responses = asyncio.run(_burst(server.url, requests, concurrency=12))
    for i, response in enumerate(responses):
        if i == 5:
            if VALUES_CHECKED:
                assert response.status_code == 400
                assert "model execution failed" in response.json()["error"]
        else:
            assert response.status_code == 200, response.text
            assert response.json()["outputs"][0]["data"] == [0.0, 3.0, 5.0, 6.0]


def test_invalid_request_is_rejected_before_joining_a_batch(server):
    x = np.ones((1, 4), np.float32)
    good = _json_body({"features": ("FP32", x), "ids": ("INT64", np.ones((1, 3), np.int64))})
    bad = _json_body({"features": ("FP32", x), "ids": ("INT32", np.ones((1, 3), np.int64))})
    requests = [("/v2/models/multi/infer", bad if i % 4 == 0 else good, {}) for i in range(16)]
    responses = asyncio.run(_burst(server.url, requests, concurrency=16))
    assert [r.status_code for r in responses] == [400 if i % 4 == 0 else 200 for i in range(16)]


def test_bounded_load_has_no_failures(server, repository):
    rng = np.random.default_rng(22)
    xs = rng.standard_normal((300, 16)).astype(np.float32)
    requests = [("/v2/models/mlp/infer", *_binary_body("x", xs[i:i + 1], "FP32")) for i in range(300)]
    started = time.perf_counter()
    responses = asyncio.run(_burst(server.url, requests, concurrency=32))
    elapsed = time.perf_counter() - started
    assert [r.status_code for r in responses].count(200) == 300, {r.status_code for r in responses}
    got = np.concatenate([_decode_binary(r)["y"] for r in responses])
    expected = reference(repository / "mlp" / "2" / "model.onnx", {"x": xs})["y"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert elapsed < 30
    stats = _stats(server.url, "mlp", "2")
    assert stats["inference_stats"]["fail"]["count"] == 0
    assert stats["inference_count"] > stats["execution_count"]
    assert max(b["batch_size"] for b in stats["batch_stats"]) <= 8


def test_no_batching_flag_runs_every_request_alone(start_server, repository):
    unbatched = start_server(repository, "--no-batching")
    meta = httpx.get(unbatched.url + "/v2/models/multi").json()
    assert meta["parameters"]["dynamic_batching"] is False
    x = np.ones((1, 4), np.float32)
    body = _json_body({"features": ("FP32", x), "ids": ("INT64", np.ones((1, 3), np.int64))})
    responses = asyncio.run(_burst(unbatched.url, [("/v2/models/multi/infer", body, {})] * 16, concurrency=16))
    assert all(r.status_code == 200 for r in responses)
    stats = _stats(unbatched.url, "multi")
    assert stats["execution_count"] == stats["inference_count"] == 16
