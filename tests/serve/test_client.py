"""tritonclient.http against a real server: binary and JSON tensors, metadata, statistics, metrics."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.serve.harness import DEFAULT_PROVIDER, reference
from tests.serve.models import DATATYPES


@pytest.fixture(scope="module")
def server(start_server, repository):
    return start_server(repository)


@pytest.fixture(scope="module")
def client(server):
    client = httpclient.InferenceServerClient(server.address, concurrency=4)
    yield client
    client.close()


def _input(name: str, array: np.ndarray, datatype: str, binary: bool) -> httpclient.InferInput:
    tensor = httpclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array, binary_data=binary)
    return tensor


@pytest.mark.parametrize("binary_in", [True, False], ids=["binary-in", "json-in"])
@pytest.mark.parametrize("binary_out", [True, False], ids=["binary-out", "json-out"])
def test_mlp_matches_onnxruntime(client, repository, binary_in, binary_out):
    x = np.random.default_rng(10).standard_normal((3, 16)).astype(np.float32)
    result = client.infer(
        "mlp",
        [_input("x", x, "FP32", binary_in)],
        outputs=[httpclient.InferRequestedOutput("y", binary_data=binary_out)],
        request_id="req-7",
    )
    response = result.get_response()
    assert response["id"] == "req-7"
    assert response["model_name"] == "mlp" and response["model_version"] == "2"
    expected = reference(repository / "mlp" / "2" / "model.onnx", {"x": x})["y"]
    np.testing.assert_allclose(result.as_numpy("y"), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_two_inputs_two_outputs_with_int64(client, repository, binary):
    rng = np.random.default_rng(11)
    features = rng.standard_normal((2, 4)).astype(np.float32)
    ids = rng.integers(-(2**40), 2**40, size=(2, 3), dtype=np.int64)
    result = client.infer("multi", [_input("features", features, "FP32", binary), _input("ids", ids, "INT64", binary)])
    expected = reference(repository / "multi" / "1" / "model.onnx", {"features": features, "ids": ids})
    np.testing.assert_allclose(result.as_numpy("scores"), expected["scores"], rtol=1e-6)
    np.testing.assert_array_equal(result.as_numpy("shifted"), ids * 3 + 1)
    assert result.as_numpy("shifted").dtype == np.int64


def test_requested_output_subset(client):
    features = np.ones((1, 4), np.float32)
    ids = np.array([[1, 2, 3]], np.int64)
    result = client.infer(
        "multi",
        [_input("features", features, "FP32", True), _input("ids", ids, "INT64", True)],
        outputs=[httpclient.InferRequestedOutput("shifted", binary_data=False)],
    )
    assert [o["name"] for o in result.get_response()["outputs"]] == ["shifted"]
    np.testing.assert_array_equal(result.as_numpy("shifted"), [[4, 7, 10]])
    assert result.as_numpy("scores") is None


def _typed_samples() -> dict[str, np.ndarray]:
    samples = {}
    for name, (_, dtype) in DATATYPES.items():
        if name == "BOOL":
            samples[name] = np.array([[True, False], [False, True]])
        elif np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            samples[name] = np.array([[info.min, info.max], [0, 1]], dtype=dtype)
        else:
            samples[name] = np.array([[1.5, -2.25], [0.0, 65504.0 if name == "FP16" else 1e30]], dtype=dtype)
    return samples


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_every_datatype_round_trips(client, binary):
    samples = _typed_samples()
    inputs = [_input(f"in_{name}", array, name, binary) for name, array in samples.items()]
    outputs = [httpclient.InferRequestedOutput(f"out_{name}", binary_data=binary) for name in samples]
    result = client.infer("types", inputs, outputs=outputs)
    for name, array in samples.items():
        got = result.as_numpy(f"out_{name}")
        assert got.dtype == array.dtype, name
        np.testing.assert_array_equal(got, array, err_msg=name)
    datatypes = {o["name"]: o["datatype"] for o in result.get_response()["outputs"]}
    assert datatypes == {f"out_{name}": name for name in samples}


def test_health_and_metadata(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("mlp")
    assert client.is_model_ready("mlp", "1")
    server = client.get_server_metadata()
    assert {"binary_tensor_data", "statistics", "model_repository"} <= set(server["extensions"])
    assert server["name"] and server["version"]
    meta = client.get_model_metadata("mlp")
    assert meta["versions"] == ["1", "2"]
    assert meta["platform"] == "onnxruntime_onnx"
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 16]}]
    assert meta["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, 5]}]
    assert meta["parameters"]["execution_provider"] == DEFAULT_PROVIDER
    fixed = client.get_model_metadata("fixed")
    assert fixed["inputs"][0]["shape"] == [2, 3]
    multi = client.get_model_metadata("multi", "1")
    assert [(t["name"], t["datatype"]) for t in multi["inputs"]] == [("features", "FP32"), ("ids", "INT64")]


def test_model_config(client):
    config = client.get_model_config("mlp")
    assert config["max_batch_size"] == 8
    assert config["dynamic_batching"]["max_queue_delay_microseconds"] == 3000
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [16]}]
    assert client.get_model_config("fixed")["max_batch_size"] == 0


def test_statistics_and_repository_index(client):
    x = np.zeros((4, 16), np.float32)
    before = client.get_inference_statistics("mlp", "1")["model_stats"][0]
    client.infer("mlp", [_input("x", x, "FP32", True)], model_version="1")
    stats = client.get_inference_statistics("mlp", "1")["model_stats"][0]
    assert stats["name"] == "mlp" and stats["version"] == "1"
    assert stats["inference_count"] == before["inference_count"] + 4
    assert stats["execution_count"] == before["execution_count"] + 1
    assert stats["inference_stats"]["success"]["count"] == before["inference_stats"]["success"]["count"] + 1
    for key in ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output"):
        assert set(stats["inference_stats"][key]) == {"count", "ns"}
    assert stats["last_inference"] > 0
    everything = client.get_inference_statistics()["model_stats"]
    assert {(s["name"], s["version"]) for s in everything} >= {("mlp", "1"), ("mlp", "2"), ("multi", "1")}
    index = client.get_model_repository_index()
    assert {"name": "mlp", "version": "2", "state": "READY"} in index
    assert {entry["name"] for entry in index} == {"mlp", "multi", "types", "fixed", "rowsum", "gather"}


def test_unknown_model_is_an_error(client):
    with pytest.raises(InferenceServerException) as info:
        client.infer("nope", [_input("x", np.zeros((1, 16), np.float32), "FP32", True)])
    assert info.value.status() == "404"
    assert "unknown model 'nope'" in info.value.message()


def test_metrics_use_triton_names(client, server):
    client.infer("multi", [_input("features", np.ones((1, 4), np.float32), "FP32", True),
                           _input("ids", np.ones((1, 3), np.int64), "INT64", True)])
    response = httpx.get(server.url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    for metric in (
        "nv_inference_request_success",
        "nv_inference_request_failure",
        "nv_inference_count",
        "nv_inference_exec_count",
        "nv_inference_request_duration_us",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_infer_duration_us",
    ):
        assert f"# TYPE {metric} counter" in text
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert int(samples['nv_inference_request_success{model="multi",version="1"}']) >= 1
    assert samples[f'serve_model_execution_provider{{model="multi",version="1",provider="{DEFAULT_PROVIDER}"}}'] == "1"
