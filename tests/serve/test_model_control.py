"""Model control: explicit load/unload over REST and gRPC, and poll mode's hot swap under load."""

from __future__ import annotations

import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.serve import models
from tests.serve.harness import reference


def _body(x: np.ndarray) -> dict:
    return {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]}


def _replace(source, target) -> None:
    """Put a file in place atomically, as an operator's deployment would."""
    staging = target.with_name(target.name + ".staging")
    shutil.copyfile(source, staging)
    os.replace(staging, target)


@pytest.fixture()
def explicit(start_server, tmp_path):
    models.mlp(tmp_path / "a" / "1" / "model.onnx", seed=20)
    models.mlp(tmp_path / "b" / "1" / "model.onnx", seed=21)
    return tmp_path, start_server(tmp_path, "--model-control-mode", "explicit")


def test_http_unload_and_load(explicit):
    root, server = explicit
    client = httpclient.InferenceServerClient(server.address)
    assert client.is_model_ready("a")
    client.unload_model("a")
    assert not client.is_model_ready("a") and client.is_model_ready("b")
    response = httpx.post(server.url + "/v2/models/a/infer", json=_body(np.ones((1, 16), np.float32)))
    assert response.status_code == 503 and response.json()["error"] == "model 'a' is unavailable"
    assert {"name": "a", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"} in client.get_model_repository_index()
    client.load_model("a")
    assert client.is_model_ready("a")
    # A model added to the repository after startup loads on request.
    models.mlp(root / "c" / "3" / "model.onnx", seed=22)
    client.load_model("c")
    x = np.random.default_rng(60).standard_normal((2, 16)).astype(np.float32)
    response = httpx.post(server.url + "/v2/models/c/infer", json=_body(x)).json()
    assert response["model_version"] == "3"
    np.testing.assert_allclose(np.array(response["outputs"][0]["data"]).reshape(2, 5),
                               reference(root / "c" / "3" / "model.onnx", {"x": x})["y"], rtol=1e-5)
    for name in ("nope", "..", "../a", "a/1"):
        response = httpx.post(server.url + f"/v2/repository/models/{name}/load")
        assert response.status_code == 404, (name, response.text)
    with pytest.raises(InferenceServerException, match="are not supported"):
        client.load_model("a", config='{"max_batch_size": 4}')
    client.close()


def _pending(server, model: str) -> int:
    for line in httpx.get(server.url + "/metrics").text.splitlines():
        if line.startswith(f'nv_inference_pending_request_count{{model="{model}",'):
            return int(line.split()[-1])
    return 0


def test_in_flight_requests_finish_when_their_model_unloads(start_server, mlp_file):
    # A 10 s queue delay holds every request in a forming batch until the model unloads.
    server = start_server(mlp_file, "--model-control-mode", "explicit", "--max-queue-delay-us", "10000000")
    x = np.ones((1, 16), np.float32)
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(httpx.post, server.url + "/v2/models/classifier/infer", json=_body(x), timeout=30)
                   for _ in range(8)]
        deadline = time.monotonic() + 20
        while _pending(server, "classifier") < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        started = time.monotonic()
        unloaded = httpx.post(server.url + "/v2/repository/models/classifier/unload",
                              json={"parameters": {"unload_dependents": False}})
        statuses = [f.result().status_code for f in futures]
    assert unloaded.status_code == 200
    assert statuses == [200] * 8
    assert time.monotonic() - started < 9, "the unload should run the held batch at once"
    assert httpx.post(server.url + "/v2/models/classifier/infer", json=_body(x)).status_code == 503


def test_grpc_unload_and_load(explicit):
    root, server = explicit
    client = grpcclient.InferenceServerClient(server.grpc_address)
    client.unload_model("b")
    assert not client.is_model_ready("b")
    with pytest.raises(InferenceServerException) as error:
        tensor = grpcclient.InferInput("x", [1, 16], "FP32")
        tensor.set_data_from_numpy(np.ones((1, 16), np.float32))
        client.infer("b", [tensor])
    assert error.value.status() == str(grpc.StatusCode.UNAVAILABLE)
    client.load_model("b")
    assert client.is_model_ready("b")
    index = client.get_model_repository_index(as_json=True)["models"]
    assert {"name": "b", "version": "1", "state": "READY"} in index
    with pytest.raises(InferenceServerException) as error:
        client.load_model("missing")
    assert error.value.status() == str(grpc.StatusCode.NOT_FOUND)
    (root / "a" / "1" / "model.onnx").write_bytes(b"broken")
    with pytest.raises(InferenceServerException, match=r"failed to load model 'a' \(still serving version\(s\) 1\): version 1: "):
        client.load_model("a")
    # The broken file never replaces the working version.
    assert client.is_model_ready("a")
    entry = next(e for e in client.get_model_repository_index(as_json=True)["models"] if e["name"] == "a")
    assert entry["state"] == "READY" and "the changed files failed to load" in entry["reason"]
    client.close()


def test_poll_mode_swaps_a_changed_model_under_load_without_failures(start_server, tmp_path):
    models.mlp(tmp_path / "m" / "1" / "model.onnx", seed=30)
    new_file = models.mlp(tmp_path / "staging" / "new.onnx", seed=31)
    broken = tmp_path / "staging" / "broken.onnx"
    broken.write_bytes(b"not a model")
    repo = tmp_path / "repo"
    shutil.copytree(tmp_path / "m", repo / "m")
    server = start_server(repo, "--model-control-mode", "poll", "--repository-poll-secs", "0.2")
    x = np.random.default_rng(70).standard_normal((1, 16)).astype(np.float32)
    old_y = reference(repo / "m" / "1" / "model.onnx", {"x": x})["y"]
    new_y = reference(new_file, {"x": x})["y"]
    statuses: list[int] = []
    unexpected: list[np.ndarray] = []
    seen_new = threading.Event()
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            deadline = time.monotonic() + 30
            while not stop.is_set() and time.monotonic() < deadline:
                response = http.post("/v2/models/m/infer", json=_body(x))
                statuses.append(response.status_code)
                if response.status_code == 200:
                    y = np.array(response.json()["outputs"][0]["data"]).reshape(1, 5)
                    if np.allclose(y, new_y, rtol=1e-5):
                        seen_new.set()
                    elif not np.allclose(y, old_y, rtol=1e-5):
                        unexpected.append(y)

    senders = [threading.Thread(target=load) for _ in range(3)]
    for sender in senders:
        sender.start()
    time.sleep(0.5)
    # A broken new version is reported and never serves; the working one carries on.
    (repo / "m" / "2").mkdir()
    _replace(broken, repo / "m" / "2" / "model.onnx")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        index = httpx.post(server.url + "/v2/repository/index").json()
        if any(e.get("version") == "2" and e["state"] == "UNAVAILABLE" for e in index):
            break
        time.sleep(0.1)
    assert any(e.get("version") == "2" and e["state"] == "UNAVAILABLE" and "onnxruntime" in e["reason"] for e in index)
    shutil.rmtree(repo / "m" / "2")
    _replace(new_file, repo / "m" / "1" / "model.onnx")
    swapped = seen_new.wait(timeout=20)
    time.sleep(0.3)
    stop.set()
    for sender in senders:
        sender.join()
    assert swapped, server.log()
    assert len(statuses) > 20 and set(statuses) == {200}, sorted(set(statuses))
    assert not unexpected
    assert [(e.get("version"), e["state"]) for e in httpx.post(server.url + "/v2/repository/index").json()] == [("1", "READY")]
