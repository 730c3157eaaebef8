"""The gRPC service with NVIDIA's tritonclient.grpc: raw tensors, async calls, outputs, statistics, errors."""

from __future__ import annotations

import queue
import socket

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tests.serve import models
from tests.serve.harness import ON_CUDA, VALUES_CHECKED, ServeProcess, reference


@pytest.fixture(scope="module")
def server(start_server, repository):
    return start_server(repository)


@pytest.fixture(scope="module")
def client(server):
    client = grpcclient.InferenceServerClient(server.grpc_address)
    yield client
    client.close()


def _input(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def test_health_and_metadata(client):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
    meta = client.get_server_metadata(as_json=True)
    assert meta["name"] == "kgraph-serve" and "model_repository" in meta["extensions"]
    model = client.get_model_metadata("multi", as_json=True)
    assert model["platform"] == "onnxruntime_onnx"
    assert [(t["name"], t["datatype"], t["shape"]) for t in model["inputs"]] == [
        ("features", "FP32", ["-1", "4"]), ("ids", "INT64", ["-1", "3"])]
    assert client.get_model_metadata("mlp", as_json=True)["versions"] == ["1", "2"]
    config = client.get_model_config("mlp", as_json=True)["config"]
    assert config["max_batch_size"] == 8
    assert config["dynamic_batching"] == {"max_queue_delay_microseconds": "3000"}
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": ["16"]}]


def test_infer_matches_onnxruntime(client, repository):
    rng = np.random.default_rng(40)
    features = rng.standard_normal((3, 4)).astype(np.float32)
    ids = rng.integers(-50, 50, (3, 3)).astype(np.int64)
    result = client.infer("multi", [_input("features", features, "FP32"), _input("ids", ids, "INT64")], request_id="g-1")
    want = reference(repository / "multi" / "1" / "model.onnx", {"features": features, "ids": ids})
    # On the CPU, the same onnxruntime build and the same single-request run: bit-identical results.
    # On CUDA (the reference runs on the CPU), float32 kernels that sum in another order.
    tolerance = {"rtol": 1e-6, "atol": 1e-6} if ON_CUDA else {"rtol": 0, "atol": 0}
    np.testing.assert_allclose(result.as_numpy("scores"), want["scores"], **tolerance)
    np.testing.assert_array_equal(result.as_numpy("shifted"), want["shifted"])
    response = result.get_response()
    assert (response.id, response.model_name, response.model_version) == ("g-1", "multi", "1")


def test_requested_outputs_and_versions(client, repository):
    features = np.ones((2, 4), np.float32)
    ids = np.arange(6, dtype=np.int64).reshape(2, 3)
    result = client.infer("multi", [_input("features", features, "FP32"), _input("ids", ids, "INT64")],
                          outputs=[grpcclient.InferRequestedOutput("shifted")])
    assert result.as_numpy("scores") is None
    np.testing.assert_array_equal(result.as_numpy("shifted"), ids * 3 + 1)
    x = np.random.default_rng(41).standard_normal((2, 16)).astype(np.float32)
    old = client.infer("mlp", [_input("x", x, "FP32")], model_version="1")
    np.testing.assert_allclose(old.as_numpy("y"), reference(repository / "mlp" / "1" / "model.onnx", {"x": x})["y"],
                               rtol=1e-6)
    assert old.get_response().model_version == "1"


def test_every_datatype_round_trips(client):
    inputs, arrays = [], {}
    for datatype, (_, dtype) in models.DATATYPES.items():
        array = (np.arange(4) % 2).astype(dtype).reshape(2, 2)
        arrays[datatype] = array
        inputs.append(_input(f"in_{datatype}", array, datatype))
    result = client.infer("types", inputs)
    for datatype, array in arrays.items():
        got = result.as_numpy(f"out_{datatype}")
        assert got.dtype == array.dtype
        np.testing.assert_array_equal(got, array)


def test_async_infer_runs_concurrently(client, repository):
    done: queue.Queue = queue.Queue()
    xs = [np.random.default_rng(50 + i).standard_normal((1, 16)).astype(np.float32) for i in range(16)]
    for i, x in enumerate(xs):
        client.async_infer("mlp", [_input("x", x, "FP32")], callback=lambda result, error, i=i: done.put((i, result, error)),
                           request_id=str(i))
    answers = [done.get(timeout=30) for _ in xs]
    for i, result, error in answers:
        assert error is None
        assert result.get_response().id == str(i)
        want = reference(repository / "mlp" / "2" / "model.onnx", {"x": xs[i]})["y"]
        # Merged runs may sum in another order than a one-row run.
        np.testing.assert_allclose(result.as_numpy("y"), want, rtol=1e-5, atol=1e-7)


def test_statistics_count_grpc_requests(client):
    before = client.get_inference_statistics("rowsum", as_json=True)["model_stats"][0]
    client.infer("rowsum", [_input("x", np.ones((2, 7), np.float32), "FP32")])
    after = client.get_inference_statistics("rowsum", "1", as_json=True)["model_stats"][0]
    assert int(after["inference_stats"]["success"]["count"]) == int(before["inference_stats"]["success"].get("count", 0)) + 1
    assert int(after["inference_count"]) == int(before.get("inference_count", 0)) + 2
    everything = client.get_inference_statistics(as_json=True)["model_stats"]
    assert {(s["name"], s["version"]) for s in everything} >= {("mlp", "1"), ("mlp", "2"), ("rowsum", "1")}
    index = client.get_model_repository_index(as_json=True)["models"]
    assert {"name": "mlp", "version": "2", "state": "READY"} in index


@pytest.mark.parametrize(
    "model, version, inputs, code, message",
    [
        ("nope", "", [("x", np.ones((1, 16), np.float32), "FP32")], grpc.StatusCode.NOT_FOUND, "unknown model 'nope'"),
        ("mlp", "²", [("x", np.ones((1, 16), np.float32), "FP32")], grpc.StatusCode.NOT_FOUND, "no version '²'"),
        ("mlp", "", [("x", np.ones((1, 15), np.float32), "FP32")], grpc.StatusCode.INVALID_ARGUMENT, "dim 1 must be 16"),
        ("mlp", "", [("x", np.ones((0, 16), np.float32), "FP32")], grpc.StatusCode.INVALID_ARGUMENT, "no elements"),
        ("mlp", "", [("x", np.ones((1, 16), np.float64), "FP64")], grpc.StatusCode.INVALID_ARGUMENT, "expects FP32"),
        ("multi", "", [("features", np.ones((2, 4), np.float32), "FP32"), ("ids", np.ones((3, 3), np.int64), "INT64")],
         grpc.StatusCode.INVALID_ARGUMENT, "inputs disagree on the batch size"),
        pytest.param(
            "gather", "", [("data", np.ones((1, 4), np.float32), "FP32"), ("idx", np.full((1, 2), 9, np.int64), "INT64")],
            grpc.StatusCode.INVALID_ARGUMENT, "model execution failed",
            marks=pytest.mark.skipif(not VALUES_CHECKED, reason="CUDA kernels do not check index values"),
        ),
    ],
    ids=["unknown-model", "unicode-version", "wrong-dim", "zero-rows", "wrong-datatype", "batch-disagreement", "bad-values"],
)
def test_errors_carry_matching_status_codes(client, model, version, inputs, code, message):
    with pytest.raises(InferenceServerException) as error:
        client.infer(model, [_input(*spec) for spec in inputs], model_version=version)
    assert error.value.status() == str(code)
    assert message in error.value.message()
    assert client.is_server_ready()


def test_model_control_is_refused_in_none_mode(client):
    with pytest.raises(InferenceServerException) as error:
        client.unload_model("mlp")
    assert error.value.status() == str(grpc.StatusCode.INVALID_ARGUMENT)
    assert "--model-control-mode explicit" in error.value.message()
    assert client.is_model_ready("mlp")


def test_busy_grpc_port_fails_startup(mlp_file):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = ServeProcess(mlp_file, "--grpc-port", str(port))
        assert server.process.wait(timeout=60) == 3  # the documented status of a port that cannot be bound
    assert f"cannot bind the gRPC port 127.0.0.1:{port}" in server.log()


def test_stream_infer_answers_every_request_and_errors_in_band(client, repository):
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    xs = {f"s{i}": np.random.default_rng(80 + i).standard_normal((1, 16)).astype(np.float32) for i in range(6)}
    for request_id, x in xs.items():
        client.async_stream_infer("mlp", [_input("x", x, "FP32")], request_id=request_id)
    client.async_stream_infer("mlp", [_input("x", np.ones((1, 3), np.float32), "FP32")], request_id="bad")
    received = [answers.get(timeout=30) for _ in range(len(xs) + 1)]
    client.stop_stream()
    errors = [error for _, error in received if error is not None]
    assert len(errors) == 1 and "dim 1 must be 16" in errors[0].message()
    results = {result.get_response().id: result for result, error in received if error is None}
    assert set(results) == set(xs)
    for request_id, x in xs.items():
        want = reference(repository / "mlp" / "2" / "model.onnx", {"x": x})["y"]
        # Merged runs may sum in another order than a one-row run.
        np.testing.assert_allclose(results[request_id].as_numpy("y"), want, rtol=1e-5, atol=1e-7)


def test_messages_larger_than_the_windows_cross_both_ways(server):
    # 3 MiB requests (3x the stream window the server advertises) on a stream and as unary calls, and
    # 192 KiB answers (3x grpcio's first window), through grpcio's client: flow control lets each through.
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    rows = 49152  # x [rows, 16] float32: 3 MiB
    values = np.random.default_rng(9).standard_normal((rows, 16)).astype(np.float32)

    def request(i: int):
        made = service_pb2.ModelInferRequest(model_name="rowsum", id=str(i), raw_input_contents=[values.tobytes()])
        made.inputs.add(name="x", datatype="FP32", shape=[rows, 16])
        return made

    options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    with grpc.insecure_channel(server.grpc_address, options=options) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        answers = list(stub.ModelStreamInfer(iter([request(i) for i in range(4)]), timeout=60))
        unary = stub.ModelInfer(request(9), timeout=60)
    assert sorted(a.infer_response.id for a in answers) == ["0", "1", "2", "3"]
    assert not any(a.error_message for a in answers)
    for response in [a.infer_response for a in answers] + [unary]:
        got = np.frombuffer(response.raw_output_contents[0], np.float32)
        np.testing.assert_allclose(got, values.sum(axis=1), rtol=1e-5, atol=1e-4)


def test_a_large_answer_crosses_in_many_frames(client):
    # About 12 MB out (hundreds of DATA frames at grpcio's frame size, each waiting for its window).
    rows = 300_000
    rng = np.random.default_rng(12)
    features = rng.standard_normal((rows, 4)).astype(np.float32)
    ids = rng.integers(-1000, 1000, (rows, 3)).astype(np.int64)
    result = client.infer("multi", [_input("features", features, "FP32"), _input("ids", ids, "INT64")])
    np.testing.assert_array_equal(result.as_numpy("shifted"), ids * 3 + 1)
    assert result.as_numpy("scores").shape[0] == rows


def test_asyncio_client_calls_and_streams(server, repository):
    # tritonclient.grpc.aio: grpcio's asyncio channel, 24 calls at once and a stream of 8 requests.
    import asyncio

    import tritonclient.grpc.aio as aioclient

    xs = [np.random.default_rng(60 + i).standard_normal((1, 16)).astype(np.float32) for i in range(24)]

    async def run():
        client = aioclient.InferenceServerClient(server.grpc_address)
        try:
            assert await client.is_server_live()
            results = await asyncio.gather(*(client.infer("mlp", [_input("x", x, "FP32")], model_version="2",
                                                          request_id=str(i)) for i, x in enumerate(xs)))

            async def requests():
                for i, x in enumerate(xs[:8]):
                    yield {"model_name": "mlp", "model_version": "2", "inputs": [_input("x", x, "FP32")],
                           "request_id": f"s{i}"}

            streamed = [item async for item in client.stream_infer(requests())]
        finally:
            await client.close()
        return results, streamed

    results, streamed = asyncio.run(run())
    model = repository / "mlp" / "2" / "model.onnx"
    for i, result in enumerate(results):
        assert result.get_response().id == str(i)
        np.testing.assert_allclose(result.as_numpy("y"), reference(model, {"x": xs[i]})["y"], rtol=1e-5, atol=1e-7)
    assert sorted(result.get_response().id for result, error in streamed if error is None) == \
        [f"s{i}" for i in range(8)]
