"""--restricted-api: the model-repository endpoints need a header key over REST and gRPC; the exposure warning."""

from __future__ import annotations

import subprocess
import sys

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tests.serve.harness import ROOT, free_port

KEY = {"admin-key": "s3cret"}


@pytest.fixture(scope="module")
def server(start_server, mlp_file):
    return start_server(mlp_file, "--model-control-mode", "explicit", "--restricted-api", "model-repository:Admin-Key=s3cret")


@pytest.mark.parametrize("path", ["/v2/repository/index", "/v2/repository/models/classifier/unload",
                                  "/v2/repository/models/classifier/load"])
def test_rest_repository_endpoints_need_the_key(server, path):
    for headers in ({}, {"admin-key": "wrong"}, {"other-key": "s3cret"}):
        response = httpx.post(server.url + path, headers=headers)
        assert response.status_code == 403
        assert "need header 'admin-key'" in response.json()["error"]
    assert httpx.get(server.url + "/v2/models/classifier/ready").status_code == 200
    response = httpx.post(server.url + path, headers=KEY)
    assert response.status_code == 200, response.text
    httpx.post(server.url + "/v2/repository/models/classifier/load", headers=KEY)


def test_inference_and_metadata_stay_open(server):
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "data": [0.5] * 16}]}
    assert httpx.post(server.url + "/v2/models/classifier/infer", json=body).status_code == 200
    assert httpx.get(server.url + "/v2/models/classifier").status_code == 200


def test_grpc_repository_calls_need_the_key(server):
    client = grpcclient.InferenceServerClient(server.grpc_address)
    for call in (client.get_model_repository_index, lambda **kw: client.unload_model("classifier", **kw)):
        with pytest.raises(InferenceServerException) as error:
            call(headers={"admin-key": "wrong"})
        assert error.value.status() == str(grpc.StatusCode.PERMISSION_DENIED)
        call(headers=KEY)
    assert not client.is_model_ready("classifier")
    client.load_model("classifier", headers=KEY)
    tensor = grpcclient.InferInput("x", [1, 16], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 16), np.float32))
    assert client.infer("classifier", [tensor]).as_numpy("y").shape == (1, 5)
    client.close()


def _start_unbindable(mlp_file, *flags: str) -> subprocess.CompletedProcess:
    # 192.0.2.1 (TEST-NET-1) is never a local address: the server logs its start-up
    # checks, then fails to bind, so nothing is ever exposed.
    return subprocess.run(
        [sys.executable, "-m", "serve", str(mlp_file), "--host", "192.0.2.1", "--port", str(free_port()),
         "--grpc-port", "0", *flags],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )


def test_unrestricted_model_control_on_a_public_address_warns(mlp_file):
    result = _start_unbindable(mlp_file, "--model-control-mode", "explicit")
    assert "model control is explicit and unrestricted on 192.0.2.1" in result.stderr
    result = _start_unbindable(mlp_file, "--model-control-mode", "explicit", "--restricted-api", "model-repository:k=v")
    assert "unrestricted" not in result.stderr


@pytest.mark.parametrize("value, message", [("admin-key=x", "expected CATEGORY:KEY=VALUE"),
                                            ("inference:k=v", "unknown API category 'inference'"),
                                            ("model-repository:k y=v", "header name")])
def test_bad_restriction_is_a_usage_error(mlp_file, value, message):
    result = subprocess.run([sys.executable, "-m", "serve", str(mlp_file), "--restricted-api", value],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
