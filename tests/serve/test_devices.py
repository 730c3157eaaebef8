"""Device placement: --device (cuda:N), --cuda-option, config.pbtxt instance_group, and what clients see of it.

The CUDA side runs where onnxruntime has CUDAExecutionProvider (benchmarks/gpu_check.py checks it on a GPU);
elsewhere the same tests check that a model asking for a GPU is refused by name while the others serve.
"""

from __future__ import annotations

import re
import subprocess
import sys

import httpx
import pytest
import tritonclient.grpc as grpcclient

from serve.config import ModelConfig, RepositoryError
from serve.runtime import (
    CPU,
    CUDA,
    CUDA_DEFAULTS,
    RuntimeSetupError,
    parse_cuda_options,
    parse_device,
    select_providers,
)
from tests.serve import models
from tests.serve.harness import ON_CUDA, ROOT


@pytest.mark.parametrize(
    "text, parsed",
    [("auto", ("auto", None)), ("cpu", ("cpu", None)), ("cuda", ("cuda", None)), ("cuda:0", ("cuda", 0)),
     ("cuda:12", ("cuda", 12))],
)
def test_device_names(text, parsed):
    assert parse_device(text) == parsed


@pytest.mark.parametrize("text", ["gpu", "cuda:", "cuda:-1", "cuda:a", "cpu:0", "CUDA", "cuda:0:1", ""])
def test_bad_device_names_are_refused_by_name(text):
    with pytest.raises(RuntimeSetupError, match=f"unknown device {text!r}; choose one of auto, cpu, cuda or cuda:N"):
        parse_device(text)


def test_cuda_options_override_the_defaults():
    assert parse_cuda_options([]) == CUDA_DEFAULTS
    options = parse_cuda_options(["gpu_mem_limit=1073741824", " use_tf32 = 1 "])
    assert options == {**CUDA_DEFAULTS, "gpu_mem_limit": "1073741824", "use_tf32": "1"}
    for bad in ("gpu_mem_limit", "=3", "key="):
        with pytest.raises(RuntimeSetupError, match="--cuda-option expects KEY=VALUE"):
            parse_cuda_options([bad])
    with pytest.raises(RuntimeSetupError, match="device_id is set by --device cuda:N"):
        parse_cuda_options(["device_id=1"])


def test_cpu_placement_has_no_cuda():
    placement = select_providers("cpu")
    assert placement.for_onnxruntime() == [(CPU, {})]
    assert not placement.wants_cuda


@pytest.mark.skipif(not ON_CUDA, reason="needs onnxruntime's CUDAExecutionProvider")
def test_cuda_placement_names_device_and_options():
    placement = select_providers("cuda:0", parse_cuda_options(["gpu_mem_limit=1073741824"]))
    assert placement.wants_cuda
    (cuda, options), (cpu, _) = placement.for_onnxruntime()
    assert (cuda, cpu) == (CUDA, CPU)
    assert options == {**CUDA_DEFAULTS, "gpu_mem_limit": "1073741824", "device_id": "0"}
    assert placement.describe() == f"{CUDA} (device 0) > {CPU}"


@pytest.mark.skipif(ON_CUDA, reason="CUDA is available here")
def test_cuda_device_index_without_cuda_is_a_startup_error(mlp_file):
    result = subprocess.run([sys.executable, "-m", "serve", str(mlp_file), "--device", "cuda:1"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--device cuda:1 needs onnxruntime's CUDAExecutionProvider" in result.stderr


def _config(tmp_path, text: str) -> ModelConfig:
    path = tmp_path / "config.pbtxt"
    path.write_text(text)
    return ModelConfig.read(path, "m")


def test_instance_group_kinds_and_gpus(tmp_path):
    assert (_config(tmp_path, "").instance_kind, _config(tmp_path, "").gpus) == (None, ())
    config = _config(tmp_path, "instance_group [ { kind: KIND_GPU, count: 2, gpus: [ 1 ] } ]")
    assert (config.instance_kind, config.gpus) == ("KIND_GPU", (1,))
    assert _config(tmp_path, "instance_group [ { kind: KIND_CPU } ]").instance_kind == "KIND_CPU"
    assert _config(tmp_path, "instance_group [ { count: 1 } ]").instance_kind is None  # KIND_AUTO
    two = "instance_group [ { kind: KIND_GPU, gpus: [0] }, { kind: KIND_GPU, gpus: [0], count: 2 } ]"
    assert _config(tmp_path, two).gpus == (0,)


@pytest.mark.parametrize(
    "text, message",
    [
        ("instance_group [ { kind: KIND_TPU } ]", 'Enum type "ModelInstanceGroup.Kind" has no value named KIND_TPU'),
        ("instance_group [ { kind: KIND_CPU }, { kind: KIND_GPU } ]", "mixes KIND_CPU, KIND_GPU"),
        ("instance_group [ { kind: KIND_GPU, gpus: [0, 1] } ]", "lists gpus [0, 1]"),
        ("instance_group [ { kind: KIND_CPU, gpus: [0] } ]", "gpus need KIND_GPU"),
        ("instance_group [ { kind: KIND_GPU, gpus: [-1] } ]", "gpus must be GPU indices"),
        ("instance_group [ { count: 0 } ]", "count must be >= 1, got 0"),
        ("instance_group [ { kind: KIND_GPU, profile: ['a'] } ]", "field 'profile' of ModelInstanceGroup is a Triton setting this server does not support"),
        ("instance_group [ 3 ]", 'Expected "{"'),
    ],
)
def test_instance_group_errors_name_the_problem(tmp_path, text, message):
    with pytest.raises(RepositoryError, match=re.escape(message)):
        _config(tmp_path, text)


@pytest.fixture(scope="module")
def placed_repository(tmp_path_factory):
    """The same MLP three times: server default, pinned to the CPU, pinned to GPU 0."""
    root = tmp_path_factory.mktemp("placed")
    for name, group in (("auto", ""), ("cpu", "instance_group [ { kind: KIND_CPU } ]"),
                        ("gpu", "instance_group [ { kind: KIND_GPU, count: 1, gpus: [ 0 ] } ]")):
        models.mlp(root / name / "1" / "model.onnx")
        (root / name / "config.pbtxt").write_text(f'name: "{name}"\n{group}\n')
    return root


def test_instance_group_places_each_model(start_server, placed_repository):
    server = start_server(placed_repository)
    metadata = {name: httpx.get(f"{server.url}/v2/models/{name}").json() for name in ("auto", "cpu")}
    assert metadata["cpu"]["parameters"]["execution_provider"] == CPU
    assert metadata["auto"]["parameters"]["execution_provider"] == (CUDA if ON_CUDA else CPU)
    config = httpx.get(f"{server.url}/v2/models/cpu/config").json()
    assert config["instance_group"] == [{"kind": "KIND_CPU", "count": 1}]
    grpc = grpcclient.InferenceServerClient(server.grpc_address)
    grpc_config = grpc.get_model_config("cpu", as_json=True)["config"]
    assert grpc_config["instance_group"] == [{"kind": "KIND_CPU", "count": 1}]
    gpu = httpx.get(f"{server.url}/v2/models/gpu")
    if ON_CUDA:
        assert gpu.json()["parameters"]["execution_provider"] == CUDA
        config = grpc.get_model_config("gpu", as_json=True)["config"]
        assert config["instance_group"] == [{"kind": "KIND_GPU", "count": 1, "gpus": [0]}]
    else:
        # A model that asks for a GPU the server cannot give is unavailable, with the reason; the others serve.
        assert gpu.status_code == 503
        assert gpu.json()["error"] == "model 'gpu' is unavailable"
        reasons = {e["name"]: e.get("reason", "") for e in httpx.post(f"{server.url}/v2/repository/index").json()}
        assert "model 'gpu' (instance_group KIND_GPU) needs onnxruntime's CUDAExecutionProvider" in reasons["gpu"]
        assert httpx.get(f"{server.url}/v2/health/ready").status_code == 200
    grpc.close()


def test_cpu_device_overrides_nothing_a_config_pins(start_server, placed_repository):
    server = start_server(placed_repository, "--device", "cpu")
    assert httpx.get(f"{server.url}/v2/models/auto").json()["parameters"]["execution_provider"] == CPU
    assert "with CPUExecutionProvider," in server.log()
