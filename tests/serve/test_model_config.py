"""config.pbtxt as Triton's ModelConfig message: field numbers, strict parsing, version policies, declared tensors."""

from __future__ import annotations

import re

import onnx
import pytest
from google.protobuf import text_format
from onnx import TensorProto, helper

from export.triton import config_text, model_config
from serve.config import UNSUPPORTED_FIELDS, ModelConfig, RepositoryError, declared_specs, parse_config
from serve.model import ModelSource, ModelVersion
from serve.proto import model_config_pb2 as pb
from serve.protocol import TensorSpec
from serve.runtime import InferencePool, ModelSession, select_providers
from tests.serve import models

# Field numbers of Triton's published model_config.proto (triton-inference-server/common,
# protobuf/model_config.proto), every field of each message the server's own .proto takes from.
TRITON_FIELDS = {
    "ModelConfig": {
        "name": 1, "platform": 2, "backend": 17, "runtime": 25, "version_policy": 3, "max_batch_size": 4,
        "input": 5, "output": 6, "batch_input": 20, "batch_output": 21, "optimization": 12, "dynamic_batching": 11,
        "sequence_batching": 13, "ensemble_scheduling": 15, "instance_group": 7, "default_model_filename": 8,
        "cc_model_filenames": 9, "metric_tags": 10, "parameters": 14, "model_warmup": 16, "model_operations": 18,
        "model_transaction_policy": 19, "model_repository_agents": 23, "response_cache": 24, "model_metrics": 26,
    },
    "ModelVersionPolicy": {"latest": 1, "all": 2, "specific": 3},
    "ModelVersionPolicy.Latest": {"num_versions": 1},
    "ModelVersionPolicy.All": {},
    "ModelVersionPolicy.Specific": {"versions": 1},
    "ModelInput": {
        "name": 1, "data_type": 2, "format": 3, "dims": 4, "reshape": 5, "is_shape_tensor": 6,
        "allow_ragged_batch": 7, "optional": 8, "is_non_linear_format_io": 9,
    },
    "ModelOutput": {
        "name": 1, "data_type": 2, "dims": 3, "reshape": 5, "label_filename": 4, "is_shape_tensor": 6,
        "is_non_linear_format_io": 7,
    },
    "ModelInstanceGroup": {
        "name": 1, "kind": 4, "count": 2, "rate_limiter": 6, "gpus": 3, "secondary_devices": 8, "profile": 5,
        "passive": 7, "host_policy": 9,
    },
    "ModelDynamicBatching": {
        "preferred_batch_size": 1, "max_queue_delay_microseconds": 2, "preserve_ordering": 3, "priority_levels": 4,
        "default_priority_level": 5, "default_queue_policy": 6, "priority_queue_policy": 7,
    },
    "ModelQueuePolicy": {
        "timeout_action": 1, "default_timeout_microseconds": 2, "allow_timeout_override": 3, "max_queue_size": 4,
    },
    "ModelParameter": {"string_value": 1},
}
TRITON_ENUMS = {
    "DataType": {
        "TYPE_INVALID": 0, "TYPE_BOOL": 1, "TYPE_UINT8": 2, "TYPE_UINT16": 3, "TYPE_UINT32": 4, "TYPE_UINT64": 5,
        "TYPE_INT8": 6, "TYPE_INT16": 7, "TYPE_INT32": 8, "TYPE_INT64": 9, "TYPE_FP16": 10, "TYPE_FP32": 11,
        "TYPE_FP64": 12, "TYPE_STRING": 13, "TYPE_BF16": 14,
    },
    "ModelInstanceGroup.Kind": {"KIND_AUTO": 0, "KIND_GPU": 1, "KIND_CPU": 2, "KIND_MODEL": 3},
}


def _message(module, dotted: str):
    descriptor = module.DESCRIPTOR.message_types_by_name[dotted.split(".")[0]]
    for part in dotted.split(".")[1:]:
        descriptor = descriptor.nested_types_by_name[part]
    return descriptor


def _enum(module, dotted: str):
    if "." not in dotted:
        return module.DESCRIPTOR.enum_types_by_name[dotted]
    outer, name = dotted.rsplit(".", 1)
    return _message(module, outer).enum_types_by_name[name]


@pytest.mark.parametrize("message", sorted(TRITON_FIELDS))
def test_field_numbers_match_triton(message):
    ours = {field.name: field.number for field in _message(pb, message).fields}
    published = TRITON_FIELDS[message]
    assert {name: published.get(name) for name in ours} == ours
    # Every published field is either read or named as unsupported, so none is silently unknown.
    assert set(ours) | set(UNSUPPORTED_FIELDS.get(message, ())) == set(published)


@pytest.mark.parametrize("enum", sorted(TRITON_ENUMS))
def test_enum_numbers_match_triton(enum):
    assert {v.name: v.number for v in _enum(pb, enum).values} == TRITON_ENUMS[enum]


def test_published_copy_matches_tritonclient():
    """The copy above against the model_config_pb2 that tritonclient generates from Triton's .proto."""
    triton = pytest.importorskip("tritonclient.grpc.model_config_pb2")
    for message, fields in TRITON_FIELDS.items():
        assert {f.name: f.number for f in _message(triton, message).fields} == fields, message
    for enum, values in TRITON_ENUMS.items():
        assert {v.name: v.number for v in _enum(triton, enum).values} == values, enum
    # The same text gives the same bytes through both messages: types agree, not only numbers.
    theirs = text_format.Parse(EXAMPLE, triton.ModelConfig()).SerializeToString(deterministic=True)
    assert parse_config(EXAMPLE).SerializeToString(deterministic=True) == theirs


EXAMPLE = """
name: "m"  # a comment
platform: "onnxruntime_onnx"
version_policy: { specific { versions: [1, 3] } }
max_batch_size: 8
input [ { name: "x", data_type: TYPE_FP32, dims: [ -1, 16 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: 5 } ]
instance_group [ { count: 2, kind: KIND_CPU } ]
dynamic_batching { preferred_batch_size: [ 4, 2 ] max_queue_delay_microseconds: 100
                   default_queue_policy { max_queue_size: 7 } }
default_model_filename: "net.onnx"
"""


def _read(tmp_path, text: str, name: str = "m") -> ModelConfig:
    path = tmp_path / "config.pbtxt"
    path.write_text(text)
    return ModelConfig.read(path, name)


def test_every_supported_field_is_read(tmp_path):
    config = _read(tmp_path, EXAMPLE)
    assert config.version_policy == ("specific", (1, 3))
    assert config.max_batch_size == 8
    assert config.inputs[0].name == "x" and config.inputs[0].datatype == "FP32" and config.inputs[0].dims == (-1, 16)
    assert config.outputs[0].dims == (5,)
    assert (config.instance_kind, config.instance_count) == ("KIND_CPU", 2)
    assert config.preferred_batch_sizes == (2, 4)
    assert (config.max_queue_delay_us, config.max_queue_size) == (100, 7)
    assert config.default_model_filename == "net.onnx"


def test_triton_defaults(tmp_path):
    config = _read(tmp_path, 'name: "m"')
    assert config.version_policy == ("latest", 1)
    # No max_batch_size: the server's flag decides, as Triton's auto-completed default does; 0 is kept as 0.
    assert config.max_batch_size is None and _read(tmp_path, "max_batch_size: 0").max_batch_size == 0
    assert config.instance_count == 1 and config.default_model_filename == "model.onnx"
    assert (config.max_queue_delay_us, config.preferred_batch_sizes, config.max_queue_size) == (None, (), 0)


@pytest.mark.parametrize(
    "text, message",
    [
        ("max_batch_sise: 4", "line 1: unknown field 'max_batch_sise' in ModelConfig (not a field of Triton's"),
        ('name: "m"\ninput [ { name: "x", dtype: TYPE_FP32 } ]',
         "line 2: unknown field 'dtype' in ModelInput"),
        ("sequence_batching { }", "field 'sequence_batching' of ModelConfig is a Triton setting this server does "
         "not support"),
        ("dynamic_batching { priority_levels: 2 }", "field 'priority_levels' of ModelDynamicBatching is a Triton"),
        ("dynamic_batching { default_queue_policy { timeout_action: DELAY } }",
         "field 'timeout_action' of ModelQueuePolicy is a Triton setting"),
        ('output [ { name: "y", label_filename: "labels.txt" } ]', "field 'label_filename' of ModelOutput"),
        ("max_batch_size: 4\nmax_batch_size: 8", 'line 2: Message type "ModelConfig" should not have multiple '
         '"max_batch_size" fields'),
        ('input [ { name: "x", data_type: TYPE_FP33 } ]', "has no value named TYPE_FP33"),
        ("max_batch_size 4", "line 1"),
    ],
)
def test_unknown_and_unsupported_fields_are_named(tmp_path, text, message):
    with pytest.raises(RepositoryError, match=re.escape(message)):
        _read(tmp_path, text)


@pytest.mark.parametrize(
    "text, message",
    [
        ('default_model_filename: "../2/model.onnx"', "default_model_filename must be a plain file name"),
        ('default_model_filename: "/etc/passwd"', "default_model_filename must be a plain file name"),
        ('default_model_filename: "sub/model.onnx"', "default_model_filename must be a plain file name"),
        ('default_model_filename: ".."', "default_model_filename must be a plain file name"),
        ('default_model_filename: ""', "default_model_filename must be a plain file name"),
        ("version_policy: { latest { num_versions: 0 } }", "num_versions must be >= 1, got 0"),
        ("version_policy: { specific { } }", "version_policy specific must list version numbers"),
        ("instance_group [ { kind: KIND_MODEL } ]", "KIND_MODEL is not supported"),
        ('parameters { key: "intra_op_thread_count" value { string_value: "2" } }',
         "parameters intra_op_thread_count are not supported"),
        ("max_batch_size: 4\ndynamic_batching { preferred_batch_size: [8] }", "preferred_batch_size [8] exceeds"),
        ('input [ { name: "x", dims: [4] } ]', "input 'x' needs a data_type"),
        ('input [ { name: "x", data_type: TYPE_FP32 } ]', "input 'x' dims must list each dim"),
        ('input [ { name: "x", data_type: TYPE_FP32, dims: [0] } ]', "got [0]"),
        ('input [ { name: "x", data_type: TYPE_FP32, dims: [-2] } ]', "got [-2]"),
        ('output [ { name: "y", data_type: TYPE_FP32, dims: [1] }, { name: "y", data_type: TYPE_FP32, dims: [1] } ]',
         "output 'y' is declared twice"),
    ],
)
def test_values_are_checked(tmp_path, text, message):
    with pytest.raises(RepositoryError, match=re.escape(message)):
        _read(tmp_path, text)


def test_version_policies_select_versions(tmp_path):
    on_disk = [1, 2, 3, 10]
    assert _read(tmp_path, "").select_versions(on_disk) == ([10], [])
    assert _read(tmp_path, "version_policy: { latest: { num_versions: 2 } }").select_versions(on_disk) == ([3, 10], [])
    assert _read(tmp_path, "version_policy: { all: {} }").select_versions(on_disk) == (on_disk, [])
    specific = _read(tmp_path, "version_policy: { specific: { versions: [2, 4] } }")
    assert specific.select_versions(on_disk) == ([2], [4])
    assert specific.describe_policy() == "specific { versions: [2, 4] }"


def _specs(*items) -> tuple[TensorSpec, ...]:
    return tuple(TensorSpec(name, datatype, shape) for name, datatype, shape in items)


MODEL_INPUTS = _specs(("x", "FP32", (-1, -1)), ("ids", "INT64", (-1, 3)))


def test_declared_dims_narrow_the_model(tmp_path):
    config = _read(tmp_path, 'max_batch_size: 4\ninput [ { name: "x", data_type: TYPE_FP32, dims: [16] },'
                             '{ name: "ids", data_type: TYPE_INT64, dims: [-1] } ]')
    assert declared_specs(config, MODEL_INPUTS, "input", "m", True) == _specs(("x", "FP32", (-1, 16)),
                                                                              ("ids", "INT64", (-1, 3)))
    # A model that does not batch declares whole shapes.
    whole = _read(tmp_path, 'max_batch_size: 0\ninput [ { name: "x", data_type: TYPE_FP32, dims: [2, 16] },'
                            '{ name: "ids", data_type: TYPE_INT64, dims: [2, 3] } ]')
    assert declared_specs(whole, MODEL_INPUTS, "input", "m", False)[0].shape == (2, 16)
    assert declared_specs(ModelConfig(), MODEL_INPUTS, "input", "m", True) == MODEL_INPUTS


@pytest.mark.parametrize(
    "inputs, message",
    [
        ('{ name: "z", data_type: TYPE_FP32, dims: [16] }', "declares input 'z', which the model does not have"),
        ('{ name: "x", data_type: TYPE_FP32, dims: [16] }', "does not declare the model's input(s) ids"),
        ('{ name: "x", data_type: TYPE_FP64, dims: [16] }, { name: "ids", data_type: TYPE_INT64, dims: [3] }',
         "input 'x' has data_type TYPE_FP64 but the model's is TYPE_FP32"),
        ('{ name: "x", data_type: TYPE_FP32, dims: [16] }, { name: "ids", data_type: TYPE_INT64, dims: [4] }',
         "input 'ids' has dims [4], shape [-1, 4] (with the batch dim that max_batch_size adds), but the model's "
         "shape is [-1, 3]"),
        ('{ name: "x", data_type: TYPE_FP32, dims: [4, 4] }, { name: "ids", data_type: TYPE_INT64, dims: [3] }',
         "input 'x' has dims [4, 4]"),
    ],
)
def test_declared_inputs_must_match_the_model(tmp_path, inputs, message):
    config = _read(tmp_path, f"max_batch_size: 4\ninput [ {inputs} ]")
    with pytest.raises(RepositoryError, match=re.escape(message)):
        declared_specs(config, MODEL_INPUTS, "input", "m", True)


def test_outputs_may_be_a_subset(tmp_path):
    outputs = _specs(("a", "FP32", (-1, 2)), ("b", "INT64", (-1,)))
    config = _read(tmp_path, 'max_batch_size: 2\noutput [ { name: "b", data_type: TYPE_INT64, dims: [-1] } ]')
    with pytest.raises(RepositoryError, match=re.escape("output 'b' has dims [-1], shape [-1, -1]")):
        declared_specs(config, outputs, "output", "m", True)
    config = _read(tmp_path, 'max_batch_size: 0\noutput [ { name: "b", data_type: TYPE_INT64, dims: [-1] } ]')
    assert declared_specs(config, outputs, "output", "m", False) == outputs[1:]


def _onnx_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["tokens"], ["same"]), helper.make_node("Cast", ["tokens"], ["flags"], to=9)],
        "g",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["batch", "time", 3])],
        [helper.make_tensor_value_info("same", TensorProto.INT64, ["batch", "time", 3]),
         helper.make_tensor_value_info("flags", TensorProto.BOOL, ["batch", "time", 3])],
    )
    return helper.make_model(graph)


def test_exporter_config_round_trips():
    text = config_text(_onnx_model(), 'name "with" quotes', max_batch_size=16)
    assert parse_config(text) == model_config(_onnx_model(), 'name "with" quotes', 16)
    config = ModelConfig.from_message(parse_config(text), 'name "with" quotes', "exported")
    assert config.max_batch_size == 16 and parse_config(text).HasField("dynamic_batching")
    assert [(t.name, t.datatype, t.dims) for t in config.inputs] == [("tokens", "INT64", (-1, 3))]
    assert [(t.name, t.datatype, t.dims) for t in config.outputs] == [("same", "INT64", (-1, 3)),
                                                                      ("flags", "BOOL", (-1, 3))]
    assert "dims: [-1, 3]" in text


def test_dynamic_batching_settings_reach_the_batcher(tmp_path):
    path = models.mlp(tmp_path / "m" / "1" / "model.onnx")
    config = _read(tmp_path, "max_batch_size: 8\ndynamic_batching { preferred_batch_size: [4, 2] "
                             "max_queue_delay_microseconds: 250 default_queue_policy { max_queue_size: 7 } }")
    pool = InferencePool(1)
    try:
        session = ModelSession(path, select_providers("cpu"), 1)
        version = ModelVersion(ModelSource("m", 1, path, config), session, pool, 64, 0)
        batcher = version.batcher
        assert (batcher.max_rows, batcher.max_delay_s, batcher.preferred_rows) == (8, 250e-6, (2, 4))
        assert batcher.max_queue_size == 7
    finally:
        pool.shutdown()
