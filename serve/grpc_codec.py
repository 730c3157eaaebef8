"""Open Inference Protocol gRPC tensors to and from NumPy, with the same validation as REST."""

from __future__ import annotations

import math

import numpy as np

from serve.proto import inference_pb2 as pb
from serve.protocol import (
    InferRequest,
    ProtocolError,
    Signature,
    TensorSpec,
    batch_key,
    check_elements,
    check_not_empty,
    check_shape,
    datatype_of,
    shape_text,
)

# The typed 'contents' field that carries each datatype (FP16 travels only as raw bytes).
_CONTENTS_FIELD = {
    "BOOL": "bool_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
}


def _raw_tensor(spec: TensorSpec, raw: bytes, index: int, shape: tuple[int, ...], count: int) -> np.ndarray:
    expected = count * spec.dtype.itemsize
    if len(raw) != expected:
        raise ProtocolError(
            f"input '{spec.name}' has shape {shape_text(shape)} and datatype {spec.datatype}, which take "
            f"{expected} bytes, raw_input_contents[{index}] has {len(raw)}"
        )
    array = np.frombuffer(raw, dtype=spec.dtype, count=count).reshape(shape)
    if spec.datatype == "BOOL" and count and array.view(np.uint8).max() > 1:
        raise ProtocolError(f"input '{spec.name}' is BOOL, its raw bytes must each be 0 or 1")
    return array


def _typed_tensor(spec: TensorSpec, contents: pb.InferTensorContents, shape: tuple[int, ...], count: int) -> np.ndarray:
    field = _CONTENTS_FIELD.get(spec.datatype)
    if field is None:
        raise ProtocolError(f"input '{spec.name}' is {spec.datatype}, which gRPC carries only in raw_input_contents")
    values = getattr(contents, field)
    if len(values) != count:
        raise ProtocolError(
            f"input '{spec.name}' has shape {shape_text(shape)} which needs {count} elements, "
            f"contents.{field} has {len(values)}"
        )
    if spec.dtype.kind in "iu" and count:
        info = np.iinfo(spec.dtype)
        low, high = min(values), max(values)
        if low < info.min or high > info.max:
            raise ProtocolError(
                f"input '{spec.name}' has datatype {spec.datatype} whose range is [{info.min}, {info.max}], "
                f"contents.{field} holds {low if low < info.min else high}"
            )
    return np.array(values, dtype=spec.dtype).reshape(shape)


def parse_grpc_request(request: pb.ModelInferRequest, signature: Signature, layout: list | None = None) -> InferRequest:
    """Validate a ModelInferRequest against a model, as parse_infer_request does for REST. LAYOUT, when given,
    receives each raw input's entry of a ``Plan``."""
    # Each read of a message's repeated field or string makes a new Python object: read each once.
    tensors = request.inputs
    if not tensors:
        raise ProtocolError("request 'inputs' must be a non-empty list of tensors")
    raw = request.raw_input_contents
    if raw and len(raw) != len(tensors):
        raise ProtocolError(
            f"raw_input_contents has {len(raw)} entries, the request has {len(tensors)} inputs; "
            "send every input raw or none"
        )
    specs = signature.input_specs
    inputs: dict[str, np.ndarray] = {}
    elements = 0
    for index, tensor in enumerate(tensors):
        name = tensor.name
        spec = specs.get(name)
        if spec is None:
            raise ProtocolError(f"unknown input {name!r}; the model's inputs are {', '.join(specs)}")
        if name in inputs:
            raise ProtocolError(f"input '{name}' is given more than once")
        datatype = tensor.datatype
        if datatype != spec.datatype:
            raise ProtocolError(f"input '{name}' has datatype {datatype!r}, the model expects {spec.datatype}")
        shape = check_shape(spec, list(tensor.shape), signature.max_rows_per_request, signature.batchable)
        count = math.prod(shape)
        elements = check_elements(elements + count, signature.max_elements)
        if tensor.parameters and "shared_memory_region" in tensor.parameters:
            raise ProtocolError(f"input '{name}' uses shared memory, which this server does not support")
        has_contents = tensor.HasField("contents")
        if raw:
            if has_contents:
                raise ProtocolError(
                    "the request has both raw_input_contents and typed contents; send every input one way"
                )
            inputs[name] = _raw_tensor(spec, raw[index], index, shape, count)
            if layout is not None:
                layout.append((name, spec.dtype, count, shape, spec.datatype == "BOOL" and count > 0))
        elif has_contents:
            inputs[name] = _typed_tensor(spec, tensor.contents, shape, count)
        else:
            raise ProtocolError(f"input '{name}' has neither contents nor raw_input_contents")
    if len(inputs) != len(specs):
        missing = [name for name in specs if name not in inputs]
        raise ProtocolError(f"missing input(s) {', '.join(missing)}; the model needs {', '.join(specs)}")
    check_not_empty(inputs)
    names = signature.output_names
    outputs: list[tuple[str, bool]] = []
    for wanted in request.outputs:
        name = wanted.name
        if name not in names:
            raise ProtocolError(f"unknown output {name!r}; the model's outputs are {', '.join(names)}")
        if any(name == seen for seen, _ in outputs):
            raise ProtocolError(f"output '{name}' is requested more than once")
        if "classification" in wanted.parameters:
            raise ProtocolError(f"output '{name}' asks for classification, which this server does not support")
        outputs.append((name, True))
    rows, key = batch_key(inputs, signature)
    return InferRequest(request.id, inputs, outputs or [(name, True) for name in names], rows, key)


def encode_grpc_response(
    model_name: str, model_version: str, request_id: str, outputs: list[tuple[str, np.ndarray, bool]]
) -> pb.ModelInferResponse:
    """A ModelInferResponse carrying every output as little-endian raw_output_contents."""
    response = pb.ModelInferResponse(model_name=model_name, model_version=model_version, id=request_id)
    for name, array, _ in outputs:
        response.outputs.add(name=name, datatype=datatype_of(array), shape=array.shape)
        response.raw_output_contents.append(
            np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        )
    return response


# ModelInferRequest's raw_input_contents (field 7, length-delimited) as the first byte of its fields.
_RAW_TAG = 7 << 3 | 2
# ModelInferResponse's id (field 3) and raw_output_contents (field 6), length-delimited.
_ID_TAG, _RAW_OUT_TAG = bytes((3 << 3 | 2,)), bytes((6 << 3 | 2,))
# Response heads kept by encode_grpc_response_bytes (cleared when full: models and output shapes vary).
_RESPONSE_HEADS = 256
_response_heads: dict[tuple, tuple[bytes, bytes]] = {}


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_grpc_response_bytes(
    model_name: str, model_version: str, request_id: str, outputs: list[tuple[str, np.ndarray, bool]]
) -> bytes:
    """``encode_grpc_response(...).SerializeToString()``, byte for byte, without building the message each time.

    Protobuf writes a message's fields in the order of their numbers: the model's name and version (1, 2),
    the id (3), the outputs' names, datatypes and shapes (5), then their raw contents (6). Fields 1-2 and 5
    are serialized once per model version and output layout; the id and the contents are framed here.
    """
    key = (model_name, model_version, tuple((name, array.dtype, array.shape) for name, array, _ in outputs))
    heads = _response_heads.get(key)
    if heads is None:
        described = pb.ModelInferResponse()
        for name, array, _ in outputs:
            described.outputs.add(name=name, datatype=datatype_of(array), shape=array.shape)
        heads = (pb.ModelInferResponse(model_name=model_name, model_version=model_version).SerializeToString(),
                 described.SerializeToString())
        if len(_response_heads) >= _RESPONSE_HEADS:
            _response_heads.clear()
        _response_heads[key] = heads
    parts = [heads[0]]
    if request_id:
        text = request_id.encode("utf-8")
        parts += [_ID_TAG, _varint(len(text)), text]
    parts.append(heads[1])
    for _, array, _ in outputs:
        raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        parts += [_RAW_OUT_TAG, _varint(len(raw)), raw]
    return b"".join(parts)


def split_raw(payload: bytes) -> tuple[bytes, list[memoryview]] | None:
    """A ModelInferRequest's bytes before its raw_input_contents, and those contents, when the message is laid
    out as protobuf writes one (every field length-delimited with a one-byte tag, the raw contents last); else
    None. Two requests with the same first part and contents of the same sizes validate alike."""
    view = memoryview(payload)
    size, pos, head_end, raws = len(payload), 0, -1, []
    while pos < size:
        tag, start = payload[pos], pos
        pos += 1
        length = shift = 0
        while True:
            if pos >= size or shift > 28:
                return None
            byte = payload[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        end = pos + length
        if tag & 0x87 != 2 or end > size:
            return None
        if tag == _RAW_TAG:
            if head_end < 0:
                head_end = start
            raws.append(view[pos:end])
        elif head_end >= 0:
            return None
        pos = end
    return (payload[:head_end] if head_end >= 0 else payload), raws


class RawLayout:
    """Where ``split_raw`` found a request's parts: its first part, then each raw content behind its tag and
    length. A request of the same size that starts with the same first part and frames contents of the same
    sizes with the same bytes splits the same way, so it is recognised without walking its fields. Carries
    the ``Plan`` that the request validated to."""

    __slots__ = ("head", "total", "marks", "spans", "plan")

    def __init__(self, head: bytes, sizes: tuple[int, ...], plan: Plan) -> None:
        self.head, self.plan = head, plan
        pos, marks, spans = len(head), [], []
        for size in sizes:
            mark = bytes((_RAW_TAG,)) + _varint(size)
            marks.append((pos, pos + len(mark), mark))
            pos += len(mark)
            spans.append((pos, pos + size))
            pos += size
        self.total, self.marks, self.spans = pos, tuple(marks), tuple(spans)

    def split(self, payload: bytes) -> list[memoryview] | None:
        """``split_raw(payload)[1]`` when PAYLOAD is laid out as this layout's request, else None."""
        if len(payload) != self.total or not payload.startswith(self.head):
            return None
        for start, end, mark in self.marks:
            if payload[start:end] != mark:
                return None
        view = memoryview(payload)
        return [view[start:end] for start, end in self.spans]


class Plan:
    """What validating a raw-contents ModelInferRequest found (see ``split_raw``): the model it names, the
    signature it was checked against, each raw input's name, dtype, element count, shape and whether its bytes
    need the BOOL check, and the request's id, outputs, rows and batch key."""

    __slots__ = ("model_name", "model_version", "signature", "request_id", "tensors", "outputs", "rows", "key")

    def __init__(self, request: pb.ModelInferRequest, signature: Signature, parsed: InferRequest,
                 tensors: list[tuple]) -> None:
        self.model_name, self.model_version, self.signature = request.model_name, request.model_version, signature
        self.request_id, self.outputs, self.rows, self.key = parsed.id, tuple(parsed.outputs), parsed.rows, parsed.key
        self.tensors = tuple(tensors)

    def request(self, raws: list[memoryview]) -> InferRequest:
        inputs = {}
        for (name, dtype, count, shape, boolean), raw in zip(self.tensors, raws):
            array = np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)
            if boolean and array.view(np.uint8).max() > 1:
                raise ProtocolError(f"input '{name}' is BOOL, its raw bytes must each be 0 or 1")
            inputs[name] = array
        return InferRequest(self.request_id, inputs, list(self.outputs), self.rows, self.key)
