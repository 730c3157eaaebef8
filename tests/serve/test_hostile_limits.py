"""A model's queue bound and element budget, and the server's in-flight bounds, on real onnxruntime sessions.

Every coroutine below starts before any run ends (one inference thread, asyncio.gather), so which
requests are admitted follows from the bounds alone.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from serve.batcher import Batcher
from serve.dataplane import Admission
from serve.metrics import ModelStats
from serve.protocol import InferRequest, ProtocolError, Signature, check_binary_header, parse_infer_request
from serve.runtime import CPU, InferencePool, ModelSession, Placement, execution_error
from tests.serve import models


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> ModelSession:
    path = models.mlp(tmp_path_factory.mktemp("limits") / "mlp.onnx", sizes=(16, 8, 4), seed=2)
    return ModelSession(path, Placement(((CPU, ()),)), 1)


def _request(rows: int) -> InferRequest:
    x = np.ones((rows, 16), np.float32)
    return InferRequest(None, {"x": x}, [("y", False)], rows, (("x", (16,)),))


async def _outcomes(batcher: Batcher, requests: list[InferRequest]) -> list[str]:
    results = await asyncio.gather(*(batcher.infer(r) for r in requests), return_exceptions=True)
    outcomes = []
    for result in results:
        if isinstance(result, ProtocolError):
            assert result.status == 503 and result.exhausted
            outcomes.append(result.message)
        else:
            outcomes.append("ok")
    return outcomes


def test_max_queue_size_refuses_requests_beyond_the_queue(session):
    pool = InferencePool(1)
    try:
        batcher = Batcher(session, pool, ModelStats(), 0, 0.0, max_queue_size=2, name="mlp")
        outcomes = asyncio.run(_outcomes(batcher, [_request(1) for _ in range(5)]))
    finally:
        pool.shutdown()
    # One runs on the pool's one thread, two wait; the other two are refused at once.
    assert outcomes[:3] == ["ok", "ok", "ok"]
    assert outcomes[3:] == ["model 'mlp' has 2 requests waiting, its max_queue_size; retry later"] * 2


def test_model_element_budget_counts_queued_and_running_requests(session):
    pool = InferencePool(1)
    try:
        batcher = Batcher(session, pool, ModelStats(), 0, 0.0, max_elements=100 * 16, name="mlp")
        # 60 + 40 rows fit the budget of 100 rows; 1 more does not; a lone request larger than it is admitted.
        outcomes = asyncio.run(_outcomes(batcher, [_request(60), _request(40), _request(1)]))
        alone = asyncio.run(_outcomes(batcher, [_request(150)]))
    finally:
        pool.shutdown()
    assert outcomes[:2] == ["ok", "ok"]
    assert outcomes[2].startswith("model 'mlp' holds 1600 input elements in flight, this request's 16 would pass")
    assert alone == ["ok"] and batcher.elements == 0 and batcher.pending == 0


def test_request_element_budget_is_checked_before_the_data_is_decoded(session):
    signature = Signature(session.inputs, session.outputs, True, 0, max_elements=1000)
    body = b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [100, 16], "data": "not even numbers"}]}'
    with pytest.raises(ProtocolError) as refused:
        parse_infer_request(body, None, signature)
    assert refused.value.status == 413
    assert refused.value.message == "the request's inputs hold 1600 elements or more, the limit is 1000 elements per request"


def test_admission_bounds_requests_and_bytes():
    admission = Admission(max_requests=2, max_bytes=100)
    admission.enter(80)
    with pytest.raises(ProtocolError, match="bytes of requests in flight") as refused:
        admission.enter(30)
    assert refused.value.exhausted and admission.requests == 1
    admission.enter(20)
    with pytest.raises(ProtocolError, match="2 inference requests in flight"):
        admission.enter(0)
    admission.leave(80)
    admission.leave(20)
    # Alone, a request is admitted whatever its size: the per-request limits bound it.
    admission.enter(500)
    assert (admission.requests, admission.bytes) == (1, 500)


def test_allocation_failures_are_capacity_errors_without_source_paths():
    failure = RuntimeError(
        "[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running MatMul node. Name:'' "
        "Status Message: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:360 void* "
        "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*) Available memory of 0 "
        "is smaller than requested bytes of 512000"
    )
    error = execution_error(failure)
    assert (error.status, error.exhausted) == (503, True)
    assert "onnxruntime_src" not in error.message and "memory budget" in error.message
    other = execution_error(RuntimeError(
        "Status Message: /onnxruntime_src/onnxruntime/core/providers/cpu/tensor/gather.cc:134 "
        "onnxruntime::Gather::Compute(...) indices element out of data bounds"))
    assert other.status == 400 and other.message == "model execution failed: Status Message: indices element out of data bounds"


def test_binary_header_is_checked_before_the_tensors_arrive(session):
    signature = Signature(session.inputs, session.outputs, True, 0, max_elements=1000)
    header = b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 16], "parameters": {"binary_data_size": 128}}]}'
    assert check_binary_header(header, signature) == 128
    with pytest.raises(ProtocolError, match="1600 elements or more"):
        check_binary_header(header.replace(b"[2, 16]", b"[100, 16]"), signature)
    with pytest.raises(ProtocolError, match=r"dim 1 must be 16, got 17"):
        check_binary_header(header.replace(b"[2, 16]", b"[2, 17]"), signature)
