"""Triton's behaviours through a real server: strict config.pbtxt, version policies, declared dims, instance
groups, preferred batch sizes, ModelReady for unknown models, and an index of every model directory."""

from __future__ import annotations

import threading

import httpx
import numpy as np
import onnx
import pytest
import tritonclient.grpc as grpcclient

from export.triton import write_repository
from tests.serve import models
from tests.serve.harness import reference

DECLARED = """
max_batch_size: 4
input [ { name: "x", data_type: TYPE_FP32, dims: [ 6 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 1 ] } ]
dynamic_batching { }
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("triton")
    for name, config in (("latest", None), ("pair", "version_policy: { latest: { num_versions: 2 } }"),
                         ("chosen", "version_policy: { specific: { versions: [1, 3] } }")):
        for version in (1, 2, 3):
            models.mlp(root / name / str(version) / "model.onnx", seed=version)
        if config:
            (root / name / "config.pbtxt").write_text(config)
    models.mlp(root / "typo" / "1" / "model.onnx")
    (root / "typo" / "config.pbtxt").write_text('name: "typo"\nmax_batch_sise: 4\n')
    models.rowsum(root / "declared" / "1" / "model.onnx")
    (root / "declared" / "config.pbtxt").write_text(DECLARED)
    # No max_batch_size: the server's --max-batch-size applies and the dims leave the batch axis out.
    models.rowsum(root / "implicit" / "1" / "model.onnx")
    (root / "implicit" / "config.pbtxt").write_text('input [ { name: "x", data_type: TYPE_FP32, dims: [ 3 ] } ]')
    models.mlp(root / "wrongdims" / "1" / "model.onnx")
    (root / "wrongdims" / "config.pbtxt").write_text(
        'max_batch_size: 2\ninput [ { name: "x", data_type: TYPE_FP32, dims: [ 15 ] } ]')
    models.mlp(root / "escape" / "1" / "model.onnx")
    (root / "escape" / "config.pbtxt").write_text('default_model_filename: "../../latest/3/model.onnx"')
    models.mlp(root / "twice" / "1" / "model.onnx", seed=5)
    (root / "twice" / "config.pbtxt").write_text(
        "max_batch_size: 8\ninstance_group [ { count: 2, kind: KIND_CPU } ]\ndynamic_batching { }")
    models.mlp(root / "preferred" / "1" / "model.onnx", seed=6)
    # A minute's queue delay: only the preferred batch size (2 rows) can make a batch run sooner.
    (root / "preferred" / "config.pbtxt").write_text(
        "max_batch_size: 8\ndynamic_batching { preferred_batch_size: [2] max_queue_delay_microseconds: 60000000 }")
    write_repository(onnx.load(str(models.mlp(root / ".staging" / "m.onnx", seed=7))), root, "exported")
    return root


@pytest.fixture(scope="module")
def server(start_server, root):
    return start_server(root)


def _infer(server, model: str, x: np.ndarray, version: str = "") -> httpx.Response:
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]}
    return httpx.post(server.url + path, json=body, timeout=30)


def _index(server) -> dict:
    return {(e["name"], e.get("version")): e for e in httpx.post(server.url + "/v2/repository/index").json()}


def test_version_policies(server, root):
    versions = {name: httpx.get(f"{server.url}/v2/models/{name}").json()["versions"]
                for name in ("latest", "pair", "chosen")}
    assert versions == {"latest": ["3"], "pair": ["2", "3"], "chosen": ["1", "3"]}
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    response = _infer(server, "latest", x)
    assert response.json()["model_version"] == "3"
    np.testing.assert_allclose(np.array(response.json()["outputs"][0]["data"]).reshape(2, 5),
                               reference(root / "latest" / "3" / "model.onnx", {"x": x})["y"], rtol=1e-5)
    assert _infer(server, "latest", x, "1").status_code == 404
    assert _infer(server, "chosen", x, "2").status_code == 404
    assert _infer(server, "chosen", x, "1").json()["model_version"] == "1"


def test_typo_in_config_makes_the_model_unavailable_with_the_field_named(server):
    entry = _index(server)[("typo", None)]
    assert entry["state"] == "UNAVAILABLE"
    assert "unknown field 'max_batch_sise' in ModelConfig" in entry["reason"]
    assert "unknown field 'max_batch_sise'" in server.log()
    assert httpx.get(server.url + "/v2/models/typo/ready").status_code == 503


def test_config_that_contradicts_the_model_is_unavailable(server):
    index = _index(server)
    reason = index[("wrongdims", "1")]["reason"]
    assert index[("wrongdims", "1")]["state"] == "UNAVAILABLE"
    assert "input 'x' has dims [15], shape [-1, 15]" in reason and "the model's shape is [-1, 16]" in reason
    escape = index[("escape", None)]
    assert escape["state"] == "UNAVAILABLE" and "default_model_filename must be a plain file name" in escape["reason"]


def test_declared_dims_are_enforced_per_request(server):
    metadata = httpx.get(server.url + "/v2/models/declared").json()
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 6]}]
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    response = _infer(server, "declared", x)
    assert response.status_code == 200
    assert response.json()["outputs"][0]["data"] == x.sum(axis=1).tolist()
    wider = _infer(server, "declared", np.ones((2, 7), np.float32))
    assert wider.status_code == 400
    assert "input 'x' has shape [2, 7], the model expects [-1, 6]" in wider.json()["error"]
    taller = _infer(server, "declared", np.ones((5, 6), np.float32))
    assert taller.status_code == 400 and "max_batch_size is 4" in taller.json()["error"]
    assert _infer(server, "implicit", np.ones((9, 3), np.float32)).status_code == 200
    assert "the model expects [-1, 3]" in _infer(server, "implicit", np.ones((2, 4), np.float32)).json()["error"]
    assert httpx.get(server.url + "/v2/models/implicit/config").json()["max_batch_size"] == 64
    grpc = grpcclient.InferenceServerClient(server.grpc_address)
    tensor = grpcclient.InferInput("x", [1, 7], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 7), np.float32))
    with pytest.raises(Exception, match=r"input 'x' has shape \[1, 7\]"):
        grpc.infer("declared", [tensor])
    grpc.close()


def test_model_ready_is_false_for_unknown_models(server):
    grpc = grpcclient.InferenceServerClient(server.grpc_address)
    assert grpc.is_model_ready("latest")
    assert not grpc.is_model_ready("nope")
    assert not grpc.is_model_ready("latest", "1")
    assert not grpc.is_model_ready("typo")
    grpc.close()


def test_index_lists_every_model_directory(server, root):
    models.mlp(root / "later" / "1" / "model.onnx")
    index = _index(server)
    assert index[("later", None)] == {"name": "later", "state": "UNAVAILABLE", "reason": "not loaded"}
    assert index[("latest", "3")]["state"] == "READY" and ("latest", "1") not in index


def test_instance_group_count_runs_that_many_sessions(server, root):
    config = httpx.get(server.url + "/v2/models/twice/config").json()
    assert config["instance_group"] == [{"kind": "KIND_CPU", "count": 2}]
    xs = [np.random.default_rng(i).standard_normal((1, 16)).astype(np.float32) for i in range(8)]
    answers = [None] * len(xs)

    def send(i: int) -> None:
        answers[i] = _infer(server, "twice", xs[i]).json()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(xs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for x, answer in zip(xs, answers):
        np.testing.assert_allclose(np.array(answer["outputs"][0]["data"]).reshape(1, 5),
                                   reference(root / "twice" / "1" / "model.onnx", {"x": x})["y"], rtol=1e-5)


def test_preferred_batch_size_runs_a_batch_without_waiting_out_the_delay(server):
    x = np.ones((1, 16), np.float32)
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(_infer(server, "preferred", x).status_code))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Each client gives up after 30 s, half the queue delay: both answered means the 2-row batch ran at once.
    assert statuses == [200, 200]
    stats = httpx.get(server.url + "/v2/models/preferred/stats").json()["model_stats"][0]
    assert (stats["inference_count"], stats["execution_count"]) == (2, 1)


def test_exported_repository_round_trips(server, root):
    config = httpx.get(server.url + "/v2/models/exported/config").json()
    assert config["max_batch_size"] == 64
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [16]}]
    x = np.random.default_rng(9).standard_normal((3, 16)).astype(np.float32)
    response = _infer(server, "exported", x)
    np.testing.assert_allclose(np.array(response.json()["outputs"][0]["data"]).reshape(3, 5),
                               reference(root / "exported" / "1" / "model.onnx", {"x": x})["y"], rtol=1e-5)
