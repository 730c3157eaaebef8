"""Open Inference Protocol tensors: JSON and binary encodings to and from NumPy, with validation."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import orjson

DATATYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype("<u1"),
    "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"),
    "INT8": np.dtype("<i1"),
    "INT16": np.dtype("<i2"),
    "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"),
    "FP16": np.dtype("<f2"),
    "FP32": np.dtype("<f4"),
    "FP64": np.dtype("<f8"),
}

ONNX_TYPES: dict[str, str] = {
    "tensor(bool)": "BOOL",
    "tensor(uint8)": "UINT8",
    "tensor(uint16)": "UINT16",
    "tensor(uint32)": "UINT32",
    "tensor(uint64)": "UINT64",
    "tensor(int8)": "INT8",
    "tensor(int16)": "INT16",
    "tensor(int32)": "INT32",
    "tensor(int64)": "INT64",
    "tensor(float16)": "FP16",
    "tensor(float)": "FP32",
    "tensor(double)": "FP64",
}

_NUMPY_TO_DATATYPE = {dtype.newbyteorder("="): name for name, dtype in DATATYPES.items()}

# Which kinds of JSON-decoded NumPy arrays each target kind accepts: integers never
# silently truncate floats, and booleans only come from JSON true/false.
_ACCEPTED_KINDS = {"b": "b", "i": "iu", "u": "iu", "f": "iuf"}
_KIND_NAMES = {
    "b": "booleans",
    "i": "integers",
    "u": "integers",
    "f": "non-integer numbers",
    "U": "strings",
    "O": "values that are not all numbers of one kind",
}


class ProtocolError(Exception):
    """A request the server refuses, with the HTTP status and a message for the client.

    EXHAUSTED marks a refusal for lack of capacity (a full queue, the in-flight or memory
    budget): 503 over REST, RESOURCE_EXHAUSTED (rather than UNAVAILABLE) over gRPC.
    """

    def __init__(self, message: str, status: int = 400, exhausted: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.exhausted = exhausted


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """Name, V2 datatype and shape (-1 for a dynamic dim, None for unknown rank) of a model tensor."""

    name: str
    datatype: str
    shape: tuple[int, ...] | None

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of this tensor's elements."""
        return DATATYPES[self.datatype]

    def metadata(self) -> dict:
        """The tensor's entry in V2 model metadata."""
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape) if self.shape is not None else [-1]}


@dataclass(frozen=True, slots=True)
class Signature:
    """What a model version accepts: inputs, outputs and its batching limits."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    batchable: bool
    max_rows_per_request: int
    max_elements: int = 0
    # Looked up by every request: the inputs by name and the output names, in model order.
    input_specs: dict[str, TensorSpec] = field(init=False, repr=False, compare=False)
    output_names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    # What validating a binary request's JSON header found, by (header bytes, binary bytes): see _Plan.
    plans: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_specs", {spec.name: spec for spec in self.inputs})
        object.__setattr__(self, "output_names", tuple(spec.name for spec in self.outputs))
        object.__setattr__(self, "plans", {})


@dataclass(slots=True)
class InferRequest:
    """A validated inference request, ready to be batched."""

    id: str | None
    inputs: dict[str, np.ndarray]
    outputs: list[tuple[str, bool]]
    rows: int
    key: tuple | None


def datatype_of(array: np.ndarray) -> str:
    """The V2 datatype naming a NumPy array's element type."""
    try:
        return _NUMPY_TO_DATATYPE[array.dtype.newbyteorder("=")]
    except KeyError:
        raise ProtocolError(f"the model produced an output of type {array.dtype}, which has no V2 datatype", 500) from None


def error_body(message: str) -> bytes:
    """The JSON body of an error response."""
    return orjson.dumps({"error": message})


def shape_text(shape) -> str:
    """A shape as the error messages write it: [2, 16]."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


_NO_PARAMETERS: dict = {}
_UNNAMED = object()


def _parameters(obj: dict, where: str, name=_UNNAMED) -> dict:
    """OBJ's 'parameters' object (an empty dict, never to be changed, when it has none). Errors name the
    tensor by WHERE, a format string taking NAME, formatted only when one is raised."""
    params = obj.get("parameters")
    if params is None:
        return _NO_PARAMETERS
    if type(params) is not dict:
        raise ProtocolError(f"{_where(where, name)} 'parameters' must be a JSON object, got {type(params).__name__}")
    return params


def _flag(params: dict, key: str, default: bool, where: str, name=_UNNAMED) -> bool:
    value = params.get(key, default)
    if value is not True and value is not False:
        raise ProtocolError(f"{_where(where, name)} parameter '{key}' must be true or false, got {value!r}")
    return value


def _where(where: str, name) -> str:
    return where if name is _UNNAMED else where.format(name)


def check_shape(spec: TensorSpec, shape, max_rows: int, batchable: bool) -> tuple[int, ...]:
    """A request's shape for an input, checked against the model's (rank, fixed dims, batch limit)."""
    if type(shape) is not list or not all(type(d) is int and d >= 0 for d in shape):
        raise ProtocolError(f"input '{spec.name}' 'shape' must be a list of non-negative integers, got {shape!r}")
    if spec.shape is not None:
        if len(shape) != len(spec.shape):
            raise ProtocolError(
                f"input '{spec.name}' has shape {shape_text(shape)} of rank {len(shape)}, "
                f"the model expects rank {len(spec.shape)} shape {shape_text(spec.shape)}"
            )
        for axis, (got, want) in enumerate(zip(shape, spec.shape)):
            if want >= 0 and got != want:
                raise ProtocolError(
                    f"input '{spec.name}' has shape {shape_text(shape)}, the model expects {shape_text(spec.shape)} "
                    f"(dim {axis} must be {want}, got {got})"
                )
    if batchable and max_rows and shape[0] > max_rows:
        raise ProtocolError(f"input '{spec.name}' has batch size {shape[0]}, the model's max_batch_size is {max_rows}")
    return tuple(shape)


def check_elements(total: int, limit: int) -> int:
    """TOTAL, the elements of a request's inputs so far, or a 413 error when it passes LIMIT (0: no limit)."""
    if limit and total > limit:
        raise ProtocolError(
            f"the request's inputs hold {total} elements or more, the limit is {limit} elements per request", 413
        )
    return total


def _json_tensor(spec: TensorSpec, data, shape: tuple[int, ...], count: int) -> np.ndarray:
    where = f"input '{spec.name}'"
    try:
        array = np.array(data)
    except (ValueError, TypeError, OverflowError):
        raise ProtocolError(f"{where} 'data' must be a flat or rectangular nested list of numbers") from None
    target = spec.dtype
    if target.kind in "iu" and array.dtype.kind in "fO" and array.size:
        # NumPy turns a mix of negative and beyond-int64 integers into float64 or object
        # arrays; only an element-wise look tells exact integers from other values.
        array = _exact_integers(spec, data)
    kind = array.dtype.kind
    if array.size and kind not in _ACCEPTED_KINDS[target.kind]:
        holds = _KIND_NAMES.get(kind, f"values of NumPy kind '{kind}'")
        raise ProtocolError(f"{where} has datatype {spec.datatype} but its 'data' holds {holds}")
    if array.size != count:
        raise ProtocolError(
            f"{where} has shape {shape_text(shape)} which needs {count} elements, 'data' has {array.size}"
        )
    if target.kind in "iu" and array.size:
        info = np.iinfo(target)
        low, high = array.min(), array.max()
        if low < info.min or high > info.max:
            raise ProtocolError(
                f"{where} has datatype {spec.datatype} whose range is [{info.min}, {info.max}], 'data' holds {low if low < info.min else high}"
            )
    return _reshape(spec, array.astype(target, copy=False), shape)


def _reshape(spec: TensorSpec, array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    try:
        return array.reshape(shape)
    except ValueError as exc:
        raise ProtocolError(f"input '{spec.name}' has shape {shape_text(shape)}, which no array can have: {exc}") from None


def _flat(data) -> list:
    values = []
    stack = [iter([data])]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            values.append(item)
        else:
            stack.pop()
    return values


def _exact_integers(spec: TensorSpec, data) -> np.ndarray:
    where = f"input '{spec.name}'"
    values = _flat(data)
    for value in values:
        if type(value) is not int:
            holds = "non-integer numbers" if isinstance(value, float) else f"a value that is not an integer ({value!r})"
            raise ProtocolError(f"{where} has datatype {spec.datatype} but its 'data' holds {holds}")
    info = np.iinfo(spec.dtype)
    low, high = min(values), max(values)
    if low < info.min or high > info.max:
        raise ProtocolError(
            f"{where} has datatype {spec.datatype} whose range is [{info.min}, {info.max}], "
            f"'data' holds {low if low < info.min else high}"
        )
    return np.array(values, dtype=spec.dtype)


def _binary_tensor(spec: TensorSpec, size, blob: memoryview, offset: int, shape, count: int) -> np.ndarray:
    if type(size) is not int or size < 0:
        raise ProtocolError(f"input '{spec.name}' parameter 'binary_data_size' must be a non-negative integer, got {size!r}")
    expected = count * spec.dtype.itemsize
    if size != expected:
        raise ProtocolError(
            f"input '{spec.name}' has shape {shape_text(shape)} and datatype {spec.datatype}, which take {expected} bytes, "
            f"'binary_data_size' says {size}"
        )
    if offset + size > len(blob):
        raise ProtocolError(
            f"input '{spec.name}' needs {size} binary bytes at offset {offset}, the binary part of the body has only {len(blob)} bytes"
        )
    array = _reshape(spec, np.frombuffer(blob, dtype=spec.dtype, count=count, offset=offset), shape)
    if spec.datatype == "BOOL" and count and array.view(np.uint8).max() > 1:
        raise ProtocolError(f"input '{spec.name}' is BOOL, its binary bytes must each be 0 or 1")
    return array


def check_binary_header(header: bytes, signature: Signature) -> int:
    """The binary bytes the JSON HEADER of a binary request announces, once its shapes pass the model's
    limits; lets a large body be refused before its tensors are read. The full parse checks the rest."""
    try:
        request = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"malformed JSON in request: {exc}") from None
    raw_inputs = request.get("inputs") if isinstance(request, dict) else None
    specs = signature.input_specs
    announced = elements = 0
    for raw in raw_inputs if isinstance(raw_inputs, list) else ():
        if not isinstance(raw, dict):
            continue
        name = raw.get("name")
        spec = specs.get(name) if isinstance(name, str) else None
        if spec is not None:
            shape = check_shape(spec, raw.get("shape"), signature.max_rows_per_request, signature.batchable)
            elements = check_elements(elements + math.prod(shape), signature.max_elements)
        size = _parameters(raw, "input {!r}", name).get("binary_data_size")
        if type(size) is int and size > 0:
            announced += size
    return announced


# A client sending binary requests repeats the same JSON header byte for byte (only the tensors' bytes change), so
# what validating a header found is kept per model signature: a repeat costs a lookup and a view per input.
_PLAN_HEADER_BYTES = 4096
_PLANS_PER_SIGNATURE = 256


class _Plan:
    """A validated binary request's layout: each input's name, dtype, byte offset, element count and shape, whether
    its bytes need the BOOL check, and the request's id, outputs, rows and batch key."""

    __slots__ = ("request_id", "tensors", "outputs", "rows", "key")

    def __init__(self, request: InferRequest, tensors: list[tuple]) -> None:
        self.request_id, self.outputs, self.rows, self.key = request.id, tuple(request.outputs), request.rows, request.key
        self.tensors = tuple(tensors)

    def request(self, blob: memoryview) -> InferRequest:
        inputs = {}
        for name, dtype, offset, count, shape, boolean in self.tensors:
            array = np.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(shape)
            if boolean and array.view(np.uint8).max() > 1:
                raise ProtocolError(f"input '{name}' is BOOL, its binary bytes must each be 0 or 1")
            inputs[name] = array
        return InferRequest(self.request_id, inputs, list(self.outputs), self.rows, self.key)


def parse_infer_request(body: bytes, header_length: int | None, signature: Signature) -> InferRequest:
    """Validate an inference request body (JSON, or JSON header plus binary tensors) against a model."""
    if header_length is None:
        return _parse(body, memoryview(b""), None, signature)
    if header_length > len(body):
        raise ProtocolError(
            f"Inference-Header-Content-Length is {header_length} but the body has only {len(body)} bytes"
        )
    view = memoryview(body)
    blob = view[header_length:]
    if header_length > _PLAN_HEADER_BYTES:
        return _parse(view[:header_length], blob, header_length, signature)
    plans = signature.plans
    key = (bytes(view[:header_length]), len(blob))
    plan = plans.get(key)
    if plan is not None:
        return plan.request(blob)
    layout: list[tuple] = []
    request = _parse(key[0], blob, header_length, signature, layout)
    if len(layout) == len(request.inputs):  # every input binary: the header says it all
        if len(plans) >= _PLANS_PER_SIGNATURE:
            plans.clear()
        plans[key] = _Plan(request, layout)
    return request


def _parse(header, blob: memoryview, header_length: int | None, signature: Signature,
           layout: list | None = None) -> InferRequest:
    """parse_infer_request's validation; LAYOUT, when given, receives each binary input's _Plan entry."""
    try:
        request = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"malformed JSON in request: {exc}") from None
    if not isinstance(request, dict):
        raise ProtocolError(f"the request must be a JSON object, got {type(request).__name__}")
    request_id = request.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise ProtocolError(f"request 'id' must be a string, got {request_id!r}")
    binary_default = _flag(_parameters(request, "request"), "binary_data_output", False, "request")

    raw_inputs = request.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise ProtocolError("request 'inputs' must be a non-empty list of tensors")
    specs = signature.input_specs
    inputs: dict[str, np.ndarray] = {}
    offset = elements = 0
    for raw in raw_inputs:
        if not isinstance(raw, dict):
            raise ProtocolError(f"each entry of 'inputs' must be a JSON object, got {type(raw).__name__}")
        name = raw.get("name")
        spec = specs.get(name) if isinstance(name, str) else None
        if spec is None:
            raise ProtocolError(f"unknown input {name!r}; the model's inputs are {', '.join(specs)}")
        if name in inputs:
            raise ProtocolError(f"input '{name}' is given more than once")
        datatype = raw.get("datatype")
        if datatype != spec.datatype:
            raise ProtocolError(f"input '{name}' has datatype {datatype!r}, the model expects {spec.datatype}")
        shape = check_shape(spec, raw.get("shape"), signature.max_rows_per_request, signature.batchable)
        count = math.prod(shape)
        elements = check_elements(elements + count, signature.max_elements)
        params = _parameters(raw, "input '{}'", name)
        size = params.get("binary_data_size")
        if size is not None:
            if "data" in raw:
                raise ProtocolError(f"input '{name}' has both 'data' and 'binary_data_size'; send one of them")
            if header_length is None:
                raise ProtocolError(
                    f"input '{name}' has 'binary_data_size' but the request has no Inference-Header-Content-Length header"
                )
            inputs[name] = _binary_tensor(spec, size, blob, offset, shape, count)
            if layout is not None:
                layout.append((name, spec.dtype, offset, count, shape, spec.datatype == "BOOL" and count > 0))
            offset += size
        elif "data" in raw:
            inputs[name] = _json_tensor(spec, raw["data"], shape, count)
        elif "shared_memory_region" in params:
            raise ProtocolError(f"input '{name}' uses shared memory, which this server does not support")
        else:
            raise ProtocolError(f"input '{name}' has neither 'data' nor parameters.binary_data_size")
    if offset != len(blob):
        raise ProtocolError(
            f"the binary part of the body has {len(blob)} bytes, the inputs' binary_data_size add up to {offset}"
        )
    missing = [name for name in specs if name not in inputs]
    if missing:
        raise ProtocolError(f"missing input(s) {', '.join(missing)}; the model needs {', '.join(specs)}")

    check_not_empty(inputs)
    outputs = _requested_outputs(request.get("outputs"), signature, binary_default)
    rows, key = batch_key(inputs, signature)
    return InferRequest(request_id, inputs, outputs, rows, key)


def _requested_outputs(raw_outputs, signature: Signature, binary_default: bool) -> list[tuple[str, bool]]:
    names = signature.output_names
    if raw_outputs is None or raw_outputs == []:
        return [(name, binary_default) for name in names]
    if not isinstance(raw_outputs, list):
        raise ProtocolError(f"request 'outputs' must be a list, got {type(raw_outputs).__name__}")
    requested: list[tuple[str, bool]] = []
    for raw in raw_outputs:
        if not isinstance(raw, dict):
            raise ProtocolError(f"each entry of 'outputs' must be a JSON object, got {type(raw).__name__}")
        name = raw.get("name")
        if not isinstance(name, str) or name not in names:
            raise ProtocolError(f"unknown output {name!r}; the model's outputs are {', '.join(names)}")
        if any(name == seen for seen, _ in requested):
            raise ProtocolError(f"output '{name}' is requested more than once")
        params = _parameters(raw, "output '{}'", name)
        if params.get("classification"):
            raise ProtocolError(f"output '{name}' asks for classification, which this server does not support")
        requested.append((name, _flag(params, "binary_data", binary_default, "output '{}'", name)))
    return requested


def check_not_empty(inputs: dict[str, np.ndarray]) -> None:
    """Refuse inputs without elements."""
    # onnxruntime's recurrent kernels abort the whole process on an empty batch or an
    # empty sequence, so a tensor without elements never reaches a session.
    for name, array in inputs.items():
        if array.size == 0:
            raise ProtocolError(
                f"input '{name}' has shape {shape_text(array.shape)}, which holds no elements; "
                "every input needs at least one row and no dim of size 0"
            )


def batch_key(inputs: dict[str, np.ndarray], signature: Signature) -> tuple[int, tuple | None]:
    """Rows along axis 0 and the key that mergeable requests share (None: never merge)."""
    if not signature.batchable:
        return 1, None
    (first, array), *others = inputs.items()
    rows = array.shape[0]
    for name, other in others:
        if other.shape[0] != rows:
            raise ProtocolError(
                f"inputs disagree on the batch size (dim 0): input '{first}' has {rows} row(s), "
                f"input '{name}' has {other.shape[0]}"
            )
    return rows, tuple((name, a.shape[1:]) for name, a in inputs.items())


def encode_infer_response(
    model_name: str,
    model_version: str,
    request_id: str | None,
    outputs: list[tuple[str, np.ndarray, bool]],
) -> tuple[bytes, int | None]:
    """The response body, and the JSON header length when binary tensors follow it."""
    entries = []
    blobs = []
    nonfinite: list[bytes] = []
    for name, array, binary in outputs:
        entry = {"name": name, "datatype": datatype_of(array), "shape": list(array.shape)}
        if binary:
            raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
            entry["parameters"] = {"binary_data_size": len(raw)}
            blobs.append(raw)
        else:
            flat = np.ascontiguousarray(array).reshape(-1)
            if flat.dtype.kind == "f" and not np.isfinite(flat).all():
                entry["data"] = _NONFINITE_MARK % len(nonfinite)
                nonfinite.append(_nonfinite_json(flat))
            else:
                entry["data"] = flat
        entries.append(entry)
    # KServe's response model requires 'id': the request's, or empty when it sent none.
    response = {"id": request_id or "", "model_name": model_name, "model_version": model_version, "outputs": entries}
    header = orjson.dumps(response, option=orjson.OPT_SERIALIZE_NUMPY)
    if nonfinite:
        header = _splice_nonfinite(header, nonfinite)
    if not blobs:
        return header, None
    return b"".join([header, *blobs]), len(header)


# NaN and infinities have no JSON number; Triton writes them as the tokens NaN, Infinity and
# -Infinity (rapidjson's kWriteNanAndInfFlag), which Python's json module and tritonclient read back.
_NONFINITE_MARK = "\x00nonfinite-%d\x00"
_NULL = re.compile(rb"null")


def _nonfinite_json(flat: np.ndarray) -> bytes:
    """A float array as a JSON list, its NaN and infinities written as NaN, Infinity and -Infinity."""
    tokens = iter(
        b"NaN" if np.isnan(v) else (b"Infinity" if v > 0 else b"-Infinity") for v in flat[~np.isfinite(flat)]
    )
    # orjson writes every non-finite float as null, and a number list holds no other null.
    return _NULL.sub(lambda _: next(tokens), orjson.dumps(flat, option=orjson.OPT_SERIALIZE_NUMPY))


def _splice_nonfinite(header: bytes, lists: list[bytes]) -> bytes:
    """HEADER with each non-finite output's marker replaced by its JSON list.

    The outputs are the response's last field, so each marker is searched from the right:
    a request id that copies a marker's text stays as the client sent it.
    """
    end = len(header)
    for index in reversed(range(len(lists))):
        mark = orjson.dumps(_NONFINITE_MARK % index)
        at = header.rfind(mark, 0, end)
        header = header[:at] + lists[index] + header[at + len(mark):]
        end = at
    return header
