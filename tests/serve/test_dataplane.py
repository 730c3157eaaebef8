"""The transport-neutral data plane, called directly: no server process, no network."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from time import perf_counter_ns

import numpy as np
import orjson
import pytest

from serve import EXTENSIONS, SERVER_NAME, __version__
from serve.control import ModelControl, Restriction
from serve.dataplane import DataPlane
from serve.protocol import ProtocolError, parse_infer_request
from serve.repository import Repository
from serve.runtime import InferencePool, select_providers
from tests.serve import models
from tests.serve.harness import reference


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """Model 'mlp' versions 1 and 2 (both served), and model 'broken' whose only version cannot load."""
    root = tmp_path_factory.mktemp("dataplane")
    models.mlp(root / "mlp" / "1" / "model.onnx", seed=1)
    models.mlp(root / "mlp" / "2" / "model.onnx", seed=2)
    (root / "mlp" / "config.pbtxt").write_text("version_policy: { all { } }\ndynamic_batching { }\n")
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.onnx").write_bytes(b"not a model")
    return root


def run(root: Path, check: Callable[[DataPlane], Awaitable[None]], mode: str = "none",
        restriction: Restriction | None = None) -> None:
    """Load ROOT on a fresh event loop, await CHECK(plane), then drain everything."""

    async def main() -> None:
        pool = InferencePool(1)
        repository = Repository(root, select_providers("cpu"), 1, pool, 8, 0)
        plane = DataPlane(repository, ModelControl(repository, mode, 1.0), restriction)
        assert plane.live() and not plane.ready()
        await plane.control.start()
        try:
            await check(plane)
        finally:
            await repository.close()
            pool.shutdown()

    asyncio.run(main())


def error(call: Callable[[], object]) -> tuple[int, str]:
    """The status and message of the ProtocolError CALL raises."""
    with pytest.raises(ProtocolError) as caught:
        call()
    return caught.value.status, caught.value.message


def test_health_metadata_and_config(root):
    async def check(plane: DataPlane) -> None:
        assert plane.live() and plane.ready()
        assert plane.server_metadata() == {"name": SERVER_NAME, "version": __version__, "extensions": EXTENSIONS}
        assert plane.model("mlp").version == "2" and plane.model("mlp", "").version == "2"
        assert plane.model("mlp", "1").version == "1"
        assert plane.model_ready("mlp", "1") == {"name": "mlp", "ready": True}
        metadata = orjson.loads(plane.model_metadata("mlp"))
        assert metadata["versions"] == ["1", "2"] and metadata["inputs"][0]["name"] == "x"
        assert orjson.loads(plane.model_config("mlp", "1"))["name"] == "mlp"
        assert error(lambda: plane.model_ready("nope")) == (404, "unknown model 'nope'; served models: mlp")
        assert error(lambda: plane.model_metadata("mlp", "3"))[0] == 404
        status, message = error(lambda: plane.model_config("broken"))
        # The reason (a path, onnxruntime's words) is for the log and the restricted index only.
        assert (status, message) == (503, "model 'broken' is unavailable")

    run(root, check)


def test_inference_steps_and_statistics(root):
    async def check(plane: DataPlane) -> None:
        x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
        tensor = {"name": "x", "datatype": "FP32", "shape": [1, 16], "data": x.ravel().tolist()}
        body = orjson.dumps({"inputs": [tensor]})
        start = perf_counter_ns()
        model = plane.model("mlp", "1")
        request = parse_infer_request(body, None, model.signature)
        selected = plane.outputs(model, request, await model.batcher.infer(request))
        plane.infer_succeeded(model, start)
        ((name, array, binary),) = selected
        assert name == "y" and not binary
        np.testing.assert_allclose(array, reference(root / "mlp" / "1" / "model.onnx", {"x": x})["y"], rtol=1e-5)

        refused = ProtocolError("bad input")
        assert plane.infer_failed(model, start, refused) is refused
        internal = plane.infer_failed(model, start, ValueError("boom"))
        assert (internal.status, internal.message) == (500, "internal server error: ValueError: boom")
        assert plane.infer_failed(None, start, refused) is refused

        (one,) = plane.model_statistics("mlp", "1")["model_stats"]
        assert (one["name"], one["version"], one["inference_count"]) == ("mlp", "1", 1)
        assert one["inference_stats"]["success"]["count"] == 1 and one["inference_stats"]["fail"]["count"] == 2
        every = plane.model_statistics("mlp")["model_stats"]
        assert [(s["version"], s["inference_count"]) for s in every] == [("1", 1), ("2", 0)]
        assert plane.model_statistics() == {"model_stats": every}
        assert error(lambda: plane.model_statistics("nope"))[0] == 404
        assert 'nv_inference_request_failure{model="mlp",version="1"} 2' in await plane.metrics()

    run(root, check)


def test_repository_control(root):
    async def check(plane: DataPlane) -> None:
        states = {(e["name"], e.get("version")): e["state"] for e in plane.repository_index()}
        assert states == {("broken", "1"): "UNAVAILABLE", ("mlp", "1"): "READY", ("mlp", "2"): "READY"}
        assert [e["name"] for e in plane.repository_index(ready_only=True)] == ["mlp", "mlp"]
        with pytest.raises(ProtocolError, match=r"load parameters \(config\) are not supported"):
            await plane.load("mlp", {"config": "{}"})
        await plane.unload("mlp")
        assert error(lambda: plane.model("mlp")) == (503, "model 'mlp' is unavailable")
        await plane.load("mlp", {})
        assert plane.model("mlp").version == "2"
        with pytest.raises(ProtocolError, match="has no model directory 'nope'") as caught:
            await plane.load("nope", {})
        assert caught.value.status == 404

    run(root, check, mode="explicit")


def test_repository_control_needs_explicit_mode(root):
    async def check(plane: DataPlane) -> None:
        with pytest.raises(ProtocolError, match="cannot unload models in model control mode 'none'"):
            await plane.unload("mlp")

    run(root, check)


def test_restricted_api_check():
    restricted = DataPlane(None, None, Restriction.parse("model-repository:Admin-Key=secret"))
    assert error(lambda: restricted.check_restricted({}))[0] == 403
    assert error(lambda: restricted.check_restricted({"admin-key": "wrong"}))[0] == 403
    restricted.check_restricted({"admin-key": "secret"})
    DataPlane(None, None).check_restricted({})
