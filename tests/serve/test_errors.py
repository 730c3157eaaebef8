"""Every error path of the raw protocol: status code, an 'error' message, and a server that keeps serving."""

from __future__ import annotations

import gzip
import json

import httpx
import numpy as np
import pytest

from tests.serve.harness import VALUES_CHECKED

LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def server(start_server, repository):
    return start_server(repository, "--max-request-bytes", str(LIMIT))


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def _x(rows: int = 1, width: int = 16) -> list:
    return [0.5] * (rows * width)


def _binary(header: dict, blob: bytes, header_length: int | None = None) -> tuple[bytes, dict]:
    head = json.dumps(header).encode()
    length = len(head) if header_length is None else header_length
    return head + blob, {"Inference-Header-Content-Length": str(length)}


def _mlp(**overrides) -> dict:
    tensor = {"name": "x", "datatype": "FP32", "shape": [1, 16], "data": _x()}
    tensor.update(overrides)
    return {"inputs": [tensor]}


MULTI_OK = {
    "inputs": [
        {"name": "features", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
        {"name": "ids", "datatype": "INT64", "shape": [1, 3], "data": [1, 2, 3]},
    ]
}

RAW_16 = np.zeros(16, np.float32).tobytes()

CASES = {
    "malformed-json": ("mlp", b'{"inputs": [', {}, "malformed JSON"),
    "not-an-object": ("mlp", b"[1, 2]", {}, "must be a JSON object"),
    "no-inputs": ("mlp", {}, {}, "'inputs' must be a non-empty list"),
    "empty-inputs": ("mlp", {"inputs": []}, {}, "'inputs' must be a non-empty list"),
    "input-not-object": ("mlp", {"inputs": [3]}, {}, "must be a JSON object"),
    "unknown-input": ("mlp", _mlp(name="z"), {}, "unknown input 'z'"),
    "missing-input": ("multi", {"inputs": MULTI_OK["inputs"][:1]}, {}, "missing input(s) ids"),
    "duplicate-input": ("mlp", {"inputs": _mlp()["inputs"] * 2}, {}, "more than once"),
    "wrong-datatype": ("mlp", _mlp(datatype="FP64"), {}, "datatype 'FP64', the model expects FP32"),
    "unknown-datatype": ("mlp", _mlp(datatype="FLOAT"), {}, "the model expects FP32"),
    "wrong-rank": ("mlp", _mlp(shape=[16]), {}, "rank 1, the model expects rank 2"),
    "wrong-fixed-dim": ("mlp", _mlp(shape=[1, 15], data=_x(1, 15)), {}, "dim 1 must be 16, got 15"),
    "fixed-model-dim": ("fixed", {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]}, {},
                        "dim 0 must be 2, got 1"),
    "shape-not-list": ("mlp", _mlp(shape="1x16"), {}, "'shape' must be a list of non-negative integers"),
    "negative-dim": ("mlp", _mlp(shape=[-1, 16]), {}, "'shape' must be a list of non-negative integers"),
    "count-mismatch": ("mlp", _mlp(shape=[2, 16]), {}, "needs 32 elements, 'data' has 16"),
    "ragged-data": ("mlp", _mlp(shape=[2, 16], data=[_x(), _x(1, 15)]), {}, "rectangular"),
    "string-data": ("mlp", _mlp(data=["a"] * 16), {}, "holds strings"),
    "float-for-int": ("multi", {"inputs": [MULTI_OK["inputs"][0], dict(MULTI_OK["inputs"][1], data=[1.5, 2, 3])]}, {},
                      "INT64 but its 'data' holds non-integer numbers"),
    "int-out-of-range": ("multi", {"inputs": [MULTI_OK["inputs"][0], dict(MULTI_OK["inputs"][1], data=[2**63, 2, 3])]},
                         {}, "range"),
    "bool-for-float": ("mlp", _mlp(data=[True] * 16), {}, "holds booleans"),
    "null-data": ("mlp", _mlp(data=None), {}, "'data' holds values"),
    "no-data": ("mlp", {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16]}]}, {}, "neither 'data'"),
    "batch-over-config-max": ("mlp", _mlp(shape=[9, 16], data=_x(9)), {}, "max_batch_size is 8"),
    "unknown-output": ("mlp", dict(_mlp(), outputs=[{"name": "nope"}]), {}, "unknown output 'nope'"),
    "duplicate-output": ("mlp", dict(_mlp(), outputs=[{"name": "y"}, {"name": "y"}]), {}, "more than once"),
    "outputs-not-list": ("mlp", dict(_mlp(), outputs={"name": "y"}), {}, "'outputs' must be a list"),
    "classification": ("mlp", dict(_mlp(), outputs=[{"name": "y", "parameters": {"classification": 2}}]), {},
                       "classification"),
    "id-not-string": ("mlp", dict(_mlp(), id=5), {}, "'id' must be a string"),
    "flag-not-bool": ("mlp", dict(_mlp(), parameters={"binary_data_output": "yes"}), {}, "must be true or false"),
    "parameters-not-object": ("mlp", _mlp(parameters=[1]), {}, "'parameters' must be a JSON object"),
    "binary-size-disagrees-with-shape": (
        "mlp",
        *_binary({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "parameters": {"binary_data_size": 60}}]},
                 RAW_16[:60]),
        "take 64 bytes, 'binary_data_size' says 60",
    ),
    "binary-bytes-left-over": (
        "mlp",
        *_binary({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}]},
                 RAW_16 + b"\0\0\0\0"),
        "has 68 bytes, the inputs' binary_data_size add up to 64",
    ),
    "binary-bytes-missing": (
        "mlp",
        *_binary({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}]},
                 RAW_16[:32]),
        "has only 32 bytes",
    ),
    "binary-size-not-int": (
        "mlp",
        *_binary({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "parameters": {"binary_data_size": "64"}}]},
                 RAW_16),
        "'binary_data_size' must be a non-negative integer",
    ),
    "header-length-beyond-body": ("mlp", *_binary(_mlp(), b"", header_length=10_000), "Inference-Header-Content-Length is 10000"),
    "header-length-not-a-number": ("mlp", json.dumps(_mlp()).encode(), {"Inference-Header-Content-Length": "abc"}, "byte count"),
    "binary-size-without-header": (
        "mlp",
        {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}]},
        {},
        "no Inference-Header-Content-Length",
    ),
    "data-and-binary": (
        "mlp",
        *_binary({"inputs": [dict(_mlp()["inputs"][0], parameters={"binary_data_size": 64})]}, RAW_16),
        "both 'data' and 'binary_data_size'",
    ),
    "bad-bool-bytes": (
        "types",
        *_binary(
            {
                "inputs": [
                    {"name": f"in_{t}", "datatype": t, "shape": [1, 2],
                     "parameters": {"binary_data_size": 2 * np.dtype(d).itemsize}}
                    for t, d in [("BOOL", np.bool_), ("UINT8", np.uint8), ("UINT16", np.uint16), ("UINT32", np.uint32),
                                 ("UINT64", np.uint64), ("INT8", np.int8), ("INT16", np.int16), ("INT32", np.int32),
                                 ("INT64", np.int64), ("FP16", np.float16), ("FP32", np.float32), ("FP64", np.float64)]
                ]
            },
            b"\x02\x01" + bytes(2 + 4 + 8 + 16 + 2 + 4 + 8 + 16 + 4 + 8 + 16),
        ),
        "binary bytes must each be 0 or 1",
    ),
    "bad-gzip": ("mlp", b"not gzip at all", {"Content-Encoding": "gzip"}, "not valid gzip"),
    "unknown-encoding": ("mlp", json.dumps(_mlp()).encode(), {"Content-Encoding": "br"}, "unsupported Content-Encoding"),
    "value-fails-in-model": (
        "gather",
        {"inputs": [{"name": "data", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
                    {"name": "idx", "datatype": "INT64", "shape": [1, 2], "data": [0, 9]}]},
        {},
        "model execution failed",
    ),
}


def _post(http: httpx.Client, model: str, body, headers: dict | None = None, path: str | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http.post(path or f"/v2/models/{model}/infer", content=content, headers=headers or {})


def _assert_serving(http: httpx.Client) -> None:
    response = _post(http, "mlp", _mlp())
    assert response.status_code == 200, response.text
    assert len(response.json()["outputs"][0]["data"]) == 5


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=pytest.mark.skipif(
        case == "value-fails-in-model" and not VALUES_CHECKED, reason="CUDA kernels do not check index values"))
    for case in CASES
], ids=list(CASES))
def test_bad_request_is_400(http, case):
    model, body, headers, message = CASES[case]
    response = _post(http, model, body, headers)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    assert message in response.json()["error"]
    _assert_serving(http)


@pytest.mark.parametrize(
    "path, message",
    [
        ("/v2/models/nope/infer", "unknown model 'nope'; served models: fixed, gather, mlp"),
        ("/v2/models/mlp/versions/9/infer", "model 'mlp' has no version '9'; available versions: 1, 2"),
        ("/v2/models/mlp/versions/latest/infer", "no version 'latest'"),
    ],
)
def test_unknown_model_or_version_is_404(http, path, message):
    response = _post(http, "mlp", _mlp(), path=path)
    assert response.status_code == 404
    assert message in response.json()["error"]
    for meta_path in (path.removesuffix("/infer"), path.replace("/infer", "/ready"), path.replace("/infer", "/stats")):
        response = http.get(meta_path)
        assert response.status_code == 404 and "error" in response.json()
    _assert_serving(http)


def test_unknown_route_and_method(http):
    response = http.get("/v2/nothing/here")
    assert response.status_code == 404 and "no such endpoint" in response.json()["error"]
    response = http.get("/v2/models/mlp/infer")
    assert response.status_code == 405 and "GET is not allowed" in response.json()["error"]
    _assert_serving(http)


def test_declared_body_over_limit_is_413(http):
    response = _post(http, "mlp", b"x" * (LIMIT + 1))
    assert response.status_code == 413
    assert f"limit is {LIMIT} bytes" in response.json()["error"]
    _assert_serving(http)


def test_streamed_body_over_limit_is_413(server):
    def chunks():
        for _ in range(LIMIT // 1024 + 2):
            yield b" " * 1024

    with httpx.Client(base_url=server.url) as client:
        response = client.post("/v2/models/mlp/infer", content=chunks())
    assert response.status_code == 413
    assert "exceeds the limit" in response.json()["error"]
    with httpx.Client(base_url=server.url) as client:
        _assert_serving(client)


def test_decompressed_body_over_limit_is_413(http):
    bomb = gzip.compress(b" " * (LIMIT * 4))
    response = _post(http, "mlp", bomb, {"Content-Encoding": "gzip"})
    assert response.status_code == 413
    _assert_serving(http)


def test_gzip_request_is_accepted(http):
    response = _post(http, "mlp", gzip.compress(json.dumps(_mlp()).encode()), {"Content-Encoding": "gzip"})
    assert response.status_code == 200, response.text


def test_failures_are_counted_and_never_500(http):
    stats = http.get("/v2/models/mlp/stats").json()["model_stats"]
    newest = next(s for s in stats if s["version"] == "2")
    assert newest["inference_stats"]["fail"]["count"] >= 10
    metrics = http.get("/metrics").text
    assert 'nv_inference_request_failure{model="mlp",version="2"}' in metrics
    _assert_serving(http)
