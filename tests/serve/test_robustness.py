"""No request crashes the server: edge shapes, disagreeing batch sizes, odd versions, broken models."""

from __future__ import annotations

import json

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tests.serve import models
from tests.serve.harness import VALUES_CHECKED, reference

LIMIT = 256 * 1024
GRPC_CODES = {400: grpc.StatusCode.INVALID_ARGUMENT, 413: grpc.StatusCode.RESOURCE_EXHAUSTED}


@pytest.fixture(scope="module")
def edge_repository(tmp_path_factory):
    """An RNN, a CNN and an attention model, each with dynamic batch and inner dims."""
    root = tmp_path_factory.mktemp("edge")
    models.lstm(root / "rnn" / "1" / "model.onnx")
    models.cnn(root / "cnn" / "1" / "model.onnx")
    models.attention(root / "attention" / "1" / "model.onnx")
    return root


@pytest.fixture(scope="module")
def server(start_server, edge_repository):
    return start_server(edge_repository, "--max-request-bytes", str(LIMIT))


def _binary_body(name: str, x: np.ndarray) -> tuple[bytes, dict]:
    header = json.dumps(
        {"inputs": [{"name": name, "datatype": "FP32", "shape": list(x.shape), "parameters": {"binary_data_size": x.nbytes}}],
         "parameters": {"binary_data_output": True}}
    ).encode()
    return header + x.tobytes(), {"Inference-Header-Content-Length": str(len(header))}


def _largest_rows(name: str, row_shape: tuple[int, ...]) -> int:
    """The most rows whose binary request body still fits in LIMIT bytes."""
    row_bytes = 4 * int(np.prod(row_shape))
    rows = LIMIT // row_bytes
    while len(_binary_body(name, np.zeros((rows, *row_shape), np.float32))[0]) > LIMIT:
        rows -= 1
    return rows


# model -> (shape, expected status); 0-sized tensors are refused before they reach onnxruntime,
# whose recurrent kernels abort the process on an empty batch.
EDGES = {
    "rnn": [((0, 3, 8), 400), ((2, 0, 8), 400), ((1, 1, 8), 200), ((3, 1, 8), 200), ("largest", 200), ("over", 413)],
    # A 2x2 image under a 3x3 kernel: refused on the CPU; on CUDA refused or answered with unspecified values,
    # depending on the cuDNN algorithm chosen (None: either, values not compared).
    "cnn": [((0, 1, 5, 5), 400), ((1, 1, 0, 5), 400), ((1, 1, 2, 2), 400 if VALUES_CHECKED else None),
            ((2, 1, 3, 3), 200), ((1, 1, 1, 40), 400),
            ("largest", 200), ("over", 413)],
    "attention": [((0, 4, 8), 400), ((1, 0, 8), 400), ((1, 1, 8), 200), ((2, 5, 8), 200), ("largest", 200), ("over", 413)],
}
ROW_SHAPES = {"rnn": (4, 8), "cnn": (1, 8, 8), "attention": (4, 8)}


def _output(response: httpx.Response) -> np.ndarray:
    if "inference-header-content-length" in response.headers:
        return np.frombuffer(response.content[int(response.headers["inference-header-content-length"]):], np.float32)
    return np.array(response.json()["outputs"][0]["data"], np.float32)


@pytest.mark.parametrize("model", list(EDGES))
def test_every_edge_shape_is_answered_and_the_server_survives(server, edge_repository, model):
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for shape, status in EDGES[model]:
            if shape in ("largest", "over"):
                shape = (_largest_rows("x", ROW_SHAPES[model]) + (shape == "over"), *ROW_SHAPES[model])
            x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
            bodies = [_binary_body("x", x)] + ([_json_body(x)] if x.size < 10_000 else [])
            for body, headers in bodies:
                response = http.post(f"/v2/models/{model}/infer", content=body, headers=headers)
                assert server.process.poll() is None, f"{model} {shape} killed the server:\n{server.log()}"
                assert response.status_code in ((200, 400) if status is None else (status,)), (model, shape,
                                                                                             response.text[:300])
                if status == 200 and response.status_code == 200:
                    want = reference(edge_repository / model / "1" / "model.onnx", {"x": x})
                    # Same onnxruntime build, but a run of another size may sum in another order.
                    np.testing.assert_allclose(_output(response), next(iter(want.values())).ravel(), rtol=1e-5, atol=1e-6)
                elif response.status_code != 200:
                    assert "error" in response.json()
            assert http.get("/v2/health/ready").status_code == 200
        small = np.ones((1, *ROW_SHAPES[model]), np.float32)
        assert http.post(f"/v2/models/{model}/infer", content=_json_body(small)[0]).status_code == 200


@pytest.mark.parametrize("model", list(EDGES))
def test_every_edge_shape_over_grpc(server, edge_repository, model):
    client = grpcclient.InferenceServerClient(server.grpc_address)
    row_shape = ROW_SHAPES[model]
    fixed = [(shape, status) for shape, status in EDGES[model] if shape not in ("largest", "over")]
    for shape, status in fixed + [((LIMIT // (4 * int(np.prod(row_shape))) + 1, *row_shape), 413)]:
        x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
        tensor = grpcclient.InferInput("x", list(shape), "FP32")
        tensor.set_data_from_numpy(x)
        if status is None:
            try:
                client.infer(model, [tensor])
            except InferenceServerException as error:
                assert error.status() == str(GRPC_CODES[400]), (model, shape, error.message())
            continue
        if status == 200:
            want = reference(edge_repository / model / "1" / "model.onnx", {"x": x})
            got = client.infer(model, [tensor]).as_numpy(next(iter(want)))
            np.testing.assert_allclose(got, next(iter(want.values())), rtol=1e-5, atol=1e-6)
            continue
        with pytest.raises(InferenceServerException) as error:
            client.infer(model, [tensor])
        assert error.value.status() == str(GRPC_CODES[status]), (model, shape, error.value.message())
        assert server.process.poll() is None, f"{model} {shape} killed the server:\n{server.log()}"
    assert client.is_server_ready()
    client.close()


def _json_body(x: np.ndarray) -> tuple[bytes, dict]:
    return json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]}).encode(), {}


def test_empty_input_names_the_problem(server):
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [0, 3, 8], "data": []}]}
    response = httpx.post(server.url + "/v2/models/rnn/infer", json=body)
    assert response.status_code == 400
    assert "input 'x' has shape [0, 3, 8], which holds no elements" in response.json()["error"]


def test_inputs_disagreeing_on_batch_size_are_400(start_server, repository):
    server = start_server(repository)
    body = {"id": "mismatch", "inputs": [
        {"name": "features", "datatype": "FP32", "shape": [2, 4], "data": [0.5] * 8},
        {"name": "ids", "datatype": "INT64", "shape": [3, 3], "data": [1] * 9},
    ]}
    response = httpx.post(server.url + "/v2/models/multi/infer", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == (
        "inputs disagree on the batch size (dim 0): input 'features' has 2 row(s), input 'ids' has 3"
    )
    stats = httpx.get(server.url + "/v2/models/multi/stats").json()["model_stats"][0]
    assert stats["execution_count"] == 0


@pytest.mark.parametrize("version", ["²", "١", "1²", "-1", "+1", " 1", "1" * 5000, "0x1"])
def test_versions_must_be_ascii_digits(server, version):
    from urllib.parse import quote

    path = f"/v2/models/rnn/versions/{quote(version)}"
    x = np.ones((1, 1, 8), np.float32)
    with httpx.Client(base_url=server.url) as http:
        for method, suffix in (("POST", "/infer"), ("GET", ""), ("GET", "/ready"), ("GET", "/config"), ("GET", "/stats")):
            response = http.request(method, path + suffix, content=_json_body(x)[0] if method == "POST" else None)
            assert response.status_code == 404, (version[:10], suffix, response.text[:200])
            assert "has no version" in response.json()["error"]
        assert http.post("/v2/models/rnn/versions/1/infer", content=_json_body(x)[0]).status_code == 200


def test_response_id_is_always_present(server):
    x = np.ones((1, 1, 8), np.float32)
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 8], "data": x.ravel().tolist()}]}
    assert httpx.post(server.url + "/v2/models/rnn/infer", json=body).json()["id"] == ""
    assert httpx.post(server.url + "/v2/models/rnn/infer", json=dict(body, id="req-1")).json()["id"] == "req-1"


def test_broken_models_at_startup_leave_the_good_ones_serving(start_server, tmp_path):
    models.mlp(tmp_path / "good" / "1" / "model.onnx", seed=7)
    good = (tmp_path / "good" / "1" / "model.onnx").read_bytes()
    (tmp_path / "truncated" / "1").mkdir(parents=True)
    (tmp_path / "truncated" / "1" / "model.onnx").write_bytes(good[: len(good) // 2])
    (tmp_path / "garbage" / "1").mkdir(parents=True)
    (tmp_path / "garbage" / "1" / "model.onnx").write_bytes(b"this is not an onnx file")
    (tmp_path / "badconfig" / "1").mkdir(parents=True)
    (tmp_path / "badconfig" / "1" / "model.onnx").write_bytes(good)
    (tmp_path / "badconfig" / "config.pbtxt").write_text("max_batch_size: [")
    server = start_server(tmp_path)
    x = np.random.default_rng(8).standard_normal((2, 16)).astype(np.float32)
    response = httpx.post(server.url + "/v2/models/good/infer", content=_json_body(x)[0])
    assert response.status_code == 200
    got = np.array(response.json()["outputs"][0]["data"]).reshape(2, 5)
    np.testing.assert_allclose(got, reference(tmp_path / "good" / "1" / "model.onnx", {"x": x})["y"], rtol=1e-5)
    index = {(e["name"], e.get("version")): e for e in httpx.post(server.url + "/v2/repository/index").json()}
    assert index[("good", "1")]["state"] == "READY"
    for name, version in (("truncated", "1"), ("garbage", "1"), ("badconfig", None)):
        entry = index[(name, version)]
        assert entry["state"] == "UNAVAILABLE"
        assert entry["reason"] and entry["reason"][:60] in server.log()
    assert "onnxruntime cannot load the model" in index[("garbage", "1")]["reason"]
    assert "cannot parse" in index[("badconfig", None)]["reason"]
    response = httpx.post(server.url + "/v2/models/garbage/infer", content=_json_body(x)[0])
    assert response.status_code == 503
    assert response.json()["error"] == "model 'garbage' is unavailable"
    ready = httpx.post(server.url + "/v2/repository/index", json={"ready": True}).json()
    assert [e["name"] for e in ready] == ["good"]
