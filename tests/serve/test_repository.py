"""Model repositories: versions, config.pbtxt, discovery errors, and the index."""

from __future__ import annotations

import subprocess
import sys

import httpx
import numpy as np
import pytest

from serve.config import ModelConfig, RepositoryError
from serve.repository import model_names, scan
from tests.serve import models
from tests.serve.harness import ROOT, ServeProcess, reference


@pytest.fixture(scope="module")
def server(start_server, repository):
    return start_server(repository)


def _infer(url: str, path: str, x: np.ndarray) -> httpx.Response:
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]}
    return httpx.post(url + path, json=body)


def test_newest_version_is_the_default(server, repository):
    x = np.random.default_rng(30).standard_normal((2, 16)).astype(np.float32)
    response = _infer(server.url, "/v2/models/mlp/infer", x)
    assert response.status_code == 200
    assert response.json()["model_version"] == "2"
    got = np.array(response.json()["outputs"][0]["data"]).reshape(2, 5)
    np.testing.assert_allclose(got, reference(repository / "mlp" / "2" / "model.onnx", {"x": x})["y"], rtol=1e-5)
    old = reference(repository / "mlp" / "1" / "model.onnx", {"x": x})["y"]
    assert not np.allclose(got, old)


def test_explicit_version(server, repository):
    x = np.random.default_rng(31).standard_normal((1, 16)).astype(np.float32)
    response = _infer(server.url, "/v2/models/mlp/versions/1/infer", x)
    assert response.status_code == 200
    assert response.json()["model_version"] == "1"
    got = np.array(response.json()["outputs"][0]["data"]).reshape(1, 5)
    np.testing.assert_allclose(got, reference(repository / "mlp" / "1" / "model.onnx", {"x": x})["y"], rtol=1e-5)
    assert httpx.get(server.url + "/v2/models/mlp/versions/1").json()["versions"] == ["1", "2"]
    assert httpx.get(server.url + "/v2/models/mlp/versions/1/ready").json() == {"name": "mlp", "ready": True}


def test_unknown_version_is_404(server):
    response = _infer(server.url, "/v2/models/mlp/versions/3/infer", np.zeros((1, 16), np.float32))
    assert response.status_code == 404
    assert "available versions: 1, 2" in response.json()["error"]
    assert httpx.get(server.url + "/v2/models/mlp/versions/3").status_code == 404


def test_config_pbtxt_is_applied(server):
    config = httpx.get(server.url + "/v2/models/mlp/config").json()
    assert config["max_batch_size"] == 8
    assert config["dynamic_batching"] == {"max_queue_delay_microseconds": 3000}
    too_big = _infer(server.url, "/v2/models/mlp/infer", np.zeros((9, 16), np.float32))
    assert too_big.status_code == 400
    assert "max_batch_size is 8" in too_big.json()["error"]
    default = httpx.get(server.url + "/v2/models/multi/config").json()
    assert default["max_batch_size"] == 64


def test_repository_index(server):
    response = httpx.post(server.url + "/v2/repository/index", json={})
    assert response.status_code == 200
    entries = {(e["name"], e["version"]): e["state"] for e in response.json()}
    assert entries[("mlp", "1")] == entries[("mlp", "2")] == "READY"
    assert len(entries) == 7


def test_single_file_is_served_as_its_stem(start_server, mlp_file):
    single = start_server(mlp_file, "--no-batching")
    meta = httpx.get(single.url + "/v2/models/classifier").json()
    assert meta["versions"] == ["1"]
    x = np.random.default_rng(32).standard_normal((3, 16)).astype(np.float32)
    response = _infer(single.url, "/v2/models/classifier/versions/1/infer", x)
    got = np.array(response.json()["outputs"][0]["data"]).reshape(3, 5)
    np.testing.assert_allclose(got, reference(mlp_file, {"x": x})["y"], rtol=1e-5)


def test_discovery_errors(tmp_path):
    with pytest.raises(RepositoryError, match="does not exist"):
        model_names(tmp_path / "missing")
    assert model_names(tmp_path) == []
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(RepositoryError, match="is not an .onnx file"):
        model_names(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "²").mkdir()
    assert model_names(tmp_path) == ["empty"]
    with pytest.raises(RepositoryError, match="no version directory holds model.onnx"):
        scan(tmp_path, "empty")


def test_config_errors(tmp_path):
    config = tmp_path / "config.pbtxt"
    config.write_text('name: "other"')
    with pytest.raises(RepositoryError, match="name is 'other' but the directory is 'm'"):
        ModelConfig.read(config, "m")
    config.write_text('platform: "tensorflow_savedmodel"')
    with pytest.raises(RepositoryError, match="platform/backend must be onnxruntime_onnx"):
        ModelConfig.read(config, "m")
    config.write_text("max_batch_size: -2")
    with pytest.raises(RepositoryError, match="max_batch_size must be >= 0"):
        ModelConfig.read(config, "m")
    config.write_text('max_batch_size: "8"')
    with pytest.raises(RepositoryError, match='line 1: .*Couldn\'t parse integer: "8"'):
        ModelConfig.read(config, "m")


def test_empty_repository_fails_at_startup(tmp_path):
    result = subprocess.run([sys.executable, "-m", "serve", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "holds no models" in result.stderr


def test_repository_without_a_loadable_model_fails_at_startup(tmp_path):
    models.mlp(tmp_path / "m" / "1" / "model.onnx")
    (tmp_path / "m" / "config.pbtxt").write_text('name: "wrong"')
    server = ServeProcess(tmp_path)
    assert server.process.wait(timeout=60) == 1
    assert "name is 'wrong' but the directory is 'm'" in server.log()
    assert "no model could be loaded" in server.log()


def test_config_batching_a_model_without_batch_axis_fails_startup(tmp_path):
    models.fixed(tmp_path / "f" / "1" / "model.onnx")
    (tmp_path / "f" / "config.pbtxt").write_text("max_batch_size: 4")
    server = ServeProcess(tmp_path)
    assert server.process.wait(timeout=60) == 1
    assert "sets max_batch_size 4 but the model has no dynamic first dim" in server.log()
