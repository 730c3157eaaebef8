"""gRPC ModelInfer answered without a task per call, and the validation plans of repeated raw-contents requests;
run as a separate process (by test_grpc_plans.py).

The server's generated protobuf module registers the same names as tritonclient's, which the other tests
import, so these checks, which call the server's gRPC code in process, run on their own:

    python -m tests.serve.grpc_plans_check CHECK DIR   (exit status 0 when the check passes)
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from serve.control import ModelControl
from serve.dataplane import DataPlane
from serve.grpc_calls import Abort, StatusCode
from serve.grpc_codec import RawLayout, encode_grpc_response, encode_grpc_response_bytes, split_raw
from serve.grpc_server import InferenceServicer
from serve.proto import inference_pb2 as pb
from serve.repository import Repository
from serve.runtime import InferencePool, select_providers
from tests.serve import models
from tests.serve.harness import reference


def _request(features: np.ndarray, ids: np.ndarray, request_id: str = "", model: str = "multi") -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=model, model_version="1", id=request_id)
    request.inputs.add(name="features", datatype="FP32", shape=list(features.shape))
    request.inputs.add(name="ids", datatype="INT64", shape=list(ids.shape))
    request.outputs.add(name="shifted")
    request.raw_input_contents.extend([features.astype("<f4").tobytes(), ids.astype("<i8").tobytes()])
    return request


def check_split_raw_parts_a_request_as_protobuf_writes_it():
    rng = np.random.default_rng(0)
    request = _request(rng.standard_normal((2, 4)).astype(np.float32), rng.integers(0, 5, (2, 3)), "id-1")
    payload = request.SerializeToString()
    head, raws = split_raw(payload)
    without = pb.ModelInferRequest()
    without.CopyFrom(request)
    del without.raw_input_contents[:]
    assert head == without.SerializeToString()
    assert [bytes(raw) for raw in raws] == list(request.raw_input_contents)
    typed = pb.ModelInferRequest(model_name="multi")
    typed.inputs.add(name="features").contents.fp32_contents.extend([1, 2])
    assert split_raw(typed.SerializeToString()) == (typed.SerializeToString(), [])


def check_a_raw_layout_splits_requests_laid_out_alike_and_no_others():
    rng = np.random.default_rng(5)
    features, ids = rng.standard_normal((40, 4)).astype(np.float32), rng.integers(0, 5, (40, 3))  # 640, 960 bytes
    payload = _request(features, ids, "id-1").SerializeToString()
    head, raws = split_raw(payload)
    layout = RawLayout(head, tuple(len(raw) for raw in raws), plan=None)
    assert layout.total == len(payload)
    other = _request(features + 1, ids + 1, "id-1").SerializeToString()
    for request in (payload, other):
        assert [bytes(raw) for raw in layout.split(request)] == [bytes(raw) for raw in split_raw(request)[1]]
    at = len(head)
    assert payload[-963:-960] == bytes((7 << 3 | 2,)) + bytes((0xC0, 0x07))  # the second content's tag, 960
    unlike = [
        _request(features, ids, "id-2").SerializeToString(),  # another id, same size
        _request(features[:39], ids, "id-1").SerializeToString(),  # another size
        payload[:at] + bytes((8 << 3 | 2,)) + payload[at + 1:],  # the first content under another field's tag
        payload[:at + 1] + bytes((payload[at + 1] + 1,)) + payload[at + 2:],  # its length changed
        payload[:-963] + bytes((0x3B,)) + payload[-962:],  # the second content's tag changed
    ]
    for request in unlike:
        assert len(request) != len(payload) or request != payload
        assert layout.split(request) is None


def check_responses_framed_from_kept_heads_equal_protobufs_own():
    rng = np.random.default_rng(4)
    outputs = [
        [("y", rng.random((1, 10), dtype=np.float32), True)],
        [("y", rng.random((2, 3), dtype=np.float32), True), ("n", np.zeros((3, 0), np.int64), True)],
        [("p", rng.random((7, 40)), False), ("b", np.array([[True, False]]), True)],  # 2,240 raw bytes
        [("h", rng.random((4, 5)).astype(">f2"), True), ("u", np.arange(300, dtype=np.uint8).reshape(3, 100), True)],
        [("s", np.float32(2.5).reshape(()), True)],
    ]
    for model in ("mlp", "m" * 200):
        for request_id in ("", "a", "\u00e9" * 100):
            for selected in outputs:
                for _ in range(2):  # built, then from the kept heads
                    expected = encode_grpc_response(model, "12", request_id, selected).SerializeToString()
                    assert encode_grpc_response_bytes(model, "12", request_id, selected) == expected


def check_split_raw_leaves_other_layouts_to_the_full_parse():
    for payload in (b"\x3a\x02ab\x0a\x01m",          # a field after the raw contents
                    b"\x0a\x05ab",                   # a length past the end
                    b"\x08\x01",                     # a varint field
                    b"\x0a\xff\xff\xff\xff\xff\x01",  # a length that never ends
                    b"\x82\x01\x00"):                # a two-byte tag
        assert split_raw(payload) is None, payload


def build(root: Path) -> Path:
    models.multi(root / "multi" / "1" / "model.onnx")
    flags = helper.make_graph([helper.make_node("Not", ["b"], ["n"])], "flags",
                              [helper.make_tensor_value_info("b", TensorProto.BOOL, ["batch", 2])],
                              [helper.make_tensor_value_info("n", TensorProto.BOOL, ["batch", 2])])
    (root / "flags" / "1").mkdir(parents=True)
    onnx.save(helper.make_model(flags, opset_imports=[helper.make_opsetid("", 17)]), root / "flags" / "1" / "model.onnx")
    return root


def _serving(root: Path, check) -> None:
    async def main() -> None:
        pool = InferencePool(1)
        repository = Repository(root, select_providers("cpu"), 1, pool, 8, 0)
        plane = DataPlane(repository, ModelControl(repository, "none", 1.0))
        await plane.control.start()
        try:
            await check(InferenceServicer(plane), plane)
        finally:
            await repository.close()
            pool.shutdown()

    asyncio.run(main())


async def _call(servicer: InferenceServicer, request: pb.ModelInferRequest) -> pb.ModelInferResponse:
    """ModelInfer over the direct path, as the server's calls take it."""
    done = asyncio.get_running_loop().create_future()
    pending = servicer.infer_direct(request.SerializeToString(), pb.ModelInferRequest.FromString,
                                    lambda payload, exc: done.set_result((payload, exc)))
    assert pending is not None
    payload, exc = await done
    if exc is not None:
        raise exc
    return pb.ModelInferResponse.FromString(payload)


def check_repeated_requests_are_validated_once_and_answered_from_their_own_bytes(root):
    path = root / "multi" / "1" / "model.onnx"
    rng = np.random.default_rng(1)

    async def check(servicer, plane) -> None:
        for i in range(4):
            features, ids = rng.standard_normal((3, 4)).astype(np.float32), rng.integers(-9, 9, (3, 3))
            response = await _call(servicer, _request(features, ids, "same"))
            want = reference(path, {"features": features, "ids": ids})["shifted"]
            assert response.id == "same" and [o.name for o in response.outputs] == ["shifted"]
            np.testing.assert_array_equal(np.frombuffer(response.raw_output_contents[0], "<i8").reshape(3, 3), want)
            assert len(servicer._plans) == 1
        # Other sizes of the same layout are validated (and refused) anew.
        bad = _request(rng.standard_normal((3, 4)).astype(np.float32), rng.integers(0, 9, (3, 3)), "same")
        bad.raw_input_contents[1] = bad.raw_input_contents[1][:-8]
        with pytest.raises(Abort) as caught:
            await _call(servicer, bad)
        assert caught.value.code == StatusCode.INVALID_ARGUMENT and "raw_input_contents[1]" in caught.value.details
        assert (plane.admission.requests, plane.admission.bytes) == (0, 0)

    _serving(root, check)


def check_a_planned_request_still_checks_bool_bytes(root):
    async def check(servicer, plane) -> None:
        request = pb.ModelInferRequest(model_name="flags", model_version="1")
        request.inputs.add(name="b", datatype="BOOL", shape=[1, 2])
        request.raw_input_contents.append(bytes([1, 0]))
        for _ in range(2):
            assert (await _call(servicer, request)).raw_output_contents[0] == bytes([0, 1])
        assert len(servicer._plans) == 1
        request.raw_input_contents[0] = bytes([1, 2])
        with pytest.raises(Abort) as caught:
            await _call(servicer, request)
        assert caught.value.code == StatusCode.INVALID_ARGUMENT and "BOOL" in caught.value.details

    _serving(root, check)


def check_a_malformed_message_is_invalid_argument_and_holds_nothing(root):
    async def check(servicer, plane) -> None:
        def parse(payload):
            raise Abort(StatusCode.INVALID_ARGUMENT, "not a ModelInferRequest")

        with pytest.raises(Abort):
            servicer.infer_direct(b"\x08\x01", parse, lambda *_: None)
        assert (plane.admission.requests, plane.admission.bytes) == (0, 0)

    _serving(root, check)


if __name__ == "__main__":
    name, directory = sys.argv[1], Path(sys.argv[2])
    check = globals()[f"check_{name}"]
    check(build(directory)) if "root" in inspect.signature(check).parameters else check()
