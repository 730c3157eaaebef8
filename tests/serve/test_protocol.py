"""Request parsing and response encoding in-process: arbitrary input is a ProtocolError, never a crash."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serve.protocol import DATATYPES, ProtocolError, Signature, TensorSpec, encode_infer_response, parse_infer_request

SIGNATURE = Signature(
    inputs=(TensorSpec("x", "FP32", (-1, 3)), TensorSpec("ids", "INT64", (-1, 2))),
    outputs=(TensorSpec("y", "FP32", (-1, 1)), TensorSpec("z", "INT64", (-1, 2))),
    batchable=True,
    max_rows_per_request=0,
)

DYNAMIC = Signature(
    inputs=(TensorSpec("v", "FP16", (-1, -1, -1)),),
    outputs=(TensorSpec("w", "FP16", None),),
    batchable=True,
    max_rows_per_request=0,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)

keys = st.sampled_from(["name", "datatype", "shape", "data", "parameters", "binary_data_size", "inputs", "outputs", "id"])
field_values = st.one_of(
    json_values,
    st.sampled_from(["x", "ids", "y", "FP32", "INT64", "BOOL", "FP16"]),
    st.lists(st.integers(-2, 4), max_size=3),
)


def _parse(body: bytes, header_length: int | None = None):
    try:
        return parse_infer_request(body, header_length, SIGNATURE)
    except ProtocolError as exc:
        assert exc.status in (400, 413) and exc.message
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_document_is_handled(document):
    _parse(json.dumps(document).encode())


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.dictionaries(keys, field_values, max_size=6), max_size=3),
    st.one_of(st.none(), st.lists(st.dictionaries(keys, field_values, max_size=3), max_size=3)),
)
def test_any_tensor_list_is_handled(inputs, outputs):
    request = {"inputs": inputs}
    if outputs is not None:
        request["outputs"] = outputs
    _parse(json.dumps(request).encode())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(-5, 80), st.integers(0, 40))
def test_any_binary_body_is_handled(blob, header_length, size):
    header = json.dumps(
        {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "parameters": {"binary_data_size": size}},
                    {"name": "ids", "datatype": "INT64", "shape": [1, 2], "data": [1, 2]}]}
    ).encode()
    body = header + blob
    _parse(body, header_length if header_length >= 0 else len(header))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 2**63 - 1) | st.sampled_from([0, 1, 2, 2**31, 2**62]), min_size=0, max_size=4),
    st.sampled_from(["json", "binary"]),
    st.integers(0, 8),
)
def test_any_shape_with_dynamic_dims_is_handled(shape, encoding, elements):
    tensor = {"name": "v", "datatype": "FP16", "shape": shape}
    if encoding == "json":
        tensor["data"] = [0.5] * elements
        body, header_length = json.dumps({"inputs": [tensor]}).encode(), None
    else:
        tensor["parameters"] = {"binary_data_size": 2 * elements}
        header = json.dumps({"inputs": [tensor]}).encode()
        body, header_length = header + bytes(2 * elements), len(header)
    try:
        request = parse_infer_request(body, header_length, DYNAMIC)
    except ProtocolError as exc:
        assert exc.status == 400 and exc.message
    else:
        assert list(request.inputs["v"].shape) == shape


def test_valid_request_parses_to_arrays():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    header = json.dumps(
        {"id": "a", "inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 3], "parameters": {"binary_data_size": 24}},
                               {"name": "ids", "datatype": "INT64", "shape": [2, 2], "data": [[1, 2], [3, 4]]}],
         "outputs": [{"name": "z", "parameters": {"binary_data": True}}]}
    ).encode()
    request = parse_infer_request(header + x.tobytes(), len(header), SIGNATURE)
    assert request.id == "a"
    np.testing.assert_array_equal(request.inputs["x"], x)
    np.testing.assert_array_equal(request.inputs["ids"], [[1, 2], [3, 4]])
    assert request.outputs == [("z", True)]
    assert request.rows == 2
    assert request.key == (("x", (3,)), ("ids", (2,)))


@pytest.mark.parametrize("datatype", list(DATATYPES))
@pytest.mark.parametrize("binary", [True, False])
def test_response_encoding_round_trips(datatype, binary):
    rng = np.random.default_rng(0)
    array = (rng.random((2, 3)) * 100).astype(DATATYPES[datatype])
    body, header_length = encode_infer_response("m", "1", "r", [("out", array, binary)])
    if binary:
        header = orjson.loads(body[:header_length])
        output = header["outputs"][0]
        assert output["parameters"]["binary_data_size"] == array.nbytes
        decoded = np.frombuffer(body[header_length:], dtype=DATATYPES[datatype]).reshape(output["shape"])
    else:
        assert header_length is None
        header = orjson.loads(body)
        output = header["outputs"][0]
        decoded = np.array(output["data"], dtype=DATATYPES[datatype]).reshape(output["shape"])
    assert header["model_name"] == "m" and header["model_version"] == "1" and header["id"] == "r"
    assert output["datatype"] == datatype and output["shape"] == [2, 3]
    np.testing.assert_array_equal(decoded, array)


def _binary_body(header: dict, *arrays: np.ndarray) -> tuple[bytes, int]:
    head = json.dumps(header).encode()
    return head + b"".join(a.tobytes() for a in arrays), len(head)


def _fresh_signature(*inputs: TensorSpec) -> Signature:
    return Signature(inputs=inputs, outputs=(TensorSpec("y", "FP32", (-1, 1)),), batchable=True, max_rows_per_request=0)


def test_a_repeated_binary_header_is_validated_once_and_reads_each_bodys_own_bytes():
    signature = _fresh_signature(TensorSpec("x", "FP32", (-1, 3)), TensorSpec("ids", "INT64", (-1, 2)))
    header = {"id": "r", "inputs": [
        {"name": "ids", "datatype": "INT64", "shape": [2, 2], "parameters": {"binary_data_size": 32}},
        {"name": "x", "datatype": "FP32", "shape": [2, 3], "parameters": {"binary_data_size": 24}}],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}
    rng = np.random.default_rng(0)
    requests = []
    for _ in range(3):
        ids, x = rng.integers(0, 9, (2, 2)), rng.standard_normal((2, 3)).astype(np.float32)
        body, length = _binary_body(header, ids, x)
        request = parse_infer_request(body, length, signature)
        np.testing.assert_array_equal(request.inputs["ids"], ids)
        np.testing.assert_array_equal(request.inputs["x"], x)
        requests.append(request)
    assert len(signature.plans) == 1
    first, *repeats = requests
    for request in repeats:
        assert list(request.inputs) == list(first.inputs) == ["ids", "x"]
        assert (request.id, request.outputs, request.rows, request.key) == (first.id, first.outputs, first.rows,
                                                                            first.key)
        assert request.outputs is not first.outputs
    # The same header with another body size is validated again, and refused.
    body, length = _binary_body(header, rng.integers(0, 9, (2, 2)), np.zeros(7, np.float32))
    with pytest.raises(ProtocolError, match="binary part"):
        parse_infer_request(body, length, signature)


def test_a_repeated_header_still_checks_bool_bytes_and_json_data_is_never_planned():
    signature = _fresh_signature(TensorSpec("b", "BOOL", (-1, 2)), TensorSpec("x", "FP32", (-1, 1)))
    header = {"inputs": [{"name": "b", "datatype": "BOOL", "shape": [1, 2], "parameters": {"binary_data_size": 2}},
                         {"name": "x", "datatype": "FP32", "shape": [1, 1], "parameters": {"binary_data_size": 4}}]}
    good, length = _binary_body(header, np.array([[1, 0]], np.uint8), np.ones(1, np.float32))
    parse_infer_request(good, length, signature)
    bad, _ = _binary_body(header, np.array([[1, 2]], np.uint8), np.ones(1, np.float32))
    with pytest.raises(ProtocolError, match="BOOL"):
        parse_infer_request(bad, length, signature)
    mixed = {"inputs": [header["inputs"][0], {"name": "x", "datatype": "FP32", "shape": [1, 1], "data": [2.0]}]}
    plain = _fresh_signature(*signature.inputs)
    body, length = _binary_body(mixed, np.array([[1, 0]], np.uint8))
    for _ in range(2):
        assert parse_infer_request(body, length, plain).inputs["x"].tolist() == [[2.0]]
    assert plain.plans == {}


def test_plans_are_bounded_per_signature():
    signature = _fresh_signature(TensorSpec("x", "FP32", (-1, 1)))
    for i in range(300):
        header = {"id": str(i), "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1],
                                            "parameters": {"binary_data_size": 4}}]}
        body, length = _binary_body(header, np.ones(1, np.float32))
        assert parse_infer_request(body, length, signature).id == str(i)
        assert len(signature.plans) <= 256
