"""The exported file: dynamic batch, names, initializers, metadata, opset and IR version, external data."""
import os
import re

import numpy as np
import onnx
import pytest

import kgraph
from export import ExportError, converter, opsets, to_onnx, writer
from export.verify import make_inputs, session
from kgraph import layers as L
from tests.export import zoo
from tests.export.parity import assert_parity, check_file


def _dims(info):
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


def test_every_input_and_output_has_a_dynamic_batch_axis():
    for name in ("multi_io", "dict_io", "reshape_flatten", "merges"):
        proto = to_onnx(zoo.shared(name))
        for info in list(proto.graph.input) + list(proto.graph.output):
            assert _dims(info)[0] == "batch", (name, info.name)


def test_fixed_batch_input_exports_dynamic_and_runs_at_batch_7():
    fixed = kgraph.Input(batch_shape=(1, 24), name="x")
    h = L.Flatten()(L.Dense(5, activation="relu")(L.Reshape((4, 6))(fixed)))
    model = zoo.perturb(kgraph.Model(fixed, L.Dense(3)(h)))
    proto = to_onnx(model)
    assert _dims(proto.graph.input[0]) == ["batch", 24]
    free = kgraph.Input(shape=(24,), name="x")
    h = L.Flatten()(L.Dense(5, activation="relu")(L.Reshape((4, 6))(free)))
    twin = kgraph.Model(free, L.Dense(3)(h))
    twin.set_weights(model.get_weights())
    x = np.random.default_rng(0).standard_normal((7, 24)).astype(np.float32)
    for level in ("ORT_ENABLE_ALL", "ORT_DISABLE_ALL"):
        (y,) = session(proto, level).run(None, {"x": x})
        np.testing.assert_allclose(y, twin.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def test_no_batch_size_is_baked_into_constants():
    for name in zoo.names():
        proto = to_onnx(zoo.shared(name))
        consts = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
        for node in proto.graph.node:
            if node.op_type == "Reshape" and node.input[1] in consts:  # else computed from the input's shape
                # 0 copies the batch size, -1 infers it (a reshape that merges the batch with another axis).
                assert consts[node.input[1]][0] in (0, -1), (name, node.name)


def test_dynamic_dims_are_named_and_an_axis_passed_through_shares_the_inputs_name():
    proto = assert_parity(zoo.shared("variable_length"))
    assert _dims(proto.graph.input[0]) == ["batch", "tokens_dim1", 6]
    assert _dims(proto.graph.output[0]) == ["batch", "tokens_dim1", 4]
    for name in ("stacked_gru", "lstm_return_state"):
        proto = to_onnx(zoo.shared(name))
        assert _dims(proto.graph.output[0]) == ["batch", "sequence_dim1", 2]
    proto = to_onnx(zoo.shared("transformer_encoder_causal"))  # through a causal mask
    assert _dims(proto.graph.output[0]) == ["batch", "sequence_dim1", 4]
    # A mask input broadcast against the scores: inference cannot tie the axes, so they keep their own names.
    proto = to_onnx(zoo.shared("attention_with_mask"))
    assert _dims(proto.graph.output[0]) == ["batch", f"{proto.graph.output[0].name}_dim1", 6]


def test_shared_layer_and_twice_called_nested_model_have_one_initializer_per_weight():
    for name in ("shared_layer", "nested_twice", "nested_sequential"):
        model = zoo.shared(name)
        proto = to_onnx(model)
        assert sorted(i.name for i in proto.graph.initializer) == sorted(v.path for v in model.weights), name


def test_names_follow_the_model():
    model = zoo.shared("multi_io")
    proto = to_onnx(model)
    assert [i.name for i in proto.graph.input] == model.input_names == ["a", "b"]
    assert [o.name for o in proto.graph.output] == model.output_names == ["score", "logits", "aux"]
    assert {i.name for i in proto.graph.initializer} == {v.path for v in model.weights}
    node_names = [n.name for n in proto.graph.node]
    assert len(set(node_names)) == len(node_names)
    layer_names = {layer.name for layer in model.layers}
    assert all(n.split("/")[0] in layer_names for n in node_names)
    assert "score/Gemm" in node_names and "score/Sigmoid" in node_names


def test_duplicate_outputs_and_input_outputs_get_identities():
    proto = assert_parity(zoo.shared("dropout_identity"))
    assert [n.op_type for n in proto.graph.node].count("Identity") == 2
    assert len({o.name for o in proto.graph.output}) == 3


def test_metadata_and_producer(tmp_path):
    model = zoo.shared("mlp_sequential")
    proto = to_onnx(model, tmp_path / "mlp.onnx", source="/some/dir/mlp.pkl")
    assert proto.producer_name == "kgraph" and proto.producer_version == kgraph.__version__
    props = {p.key: p.value for p in proto.metadata_props}
    assert props == {"kgraph_version": kgraph.__version__, "source_file": "mlp.pkl", "layer_count": "3",
                     "model_name": "mlp_sequential"}
    assert onnx.load(tmp_path / "mlp.onnx").metadata_props == proto.metadata_props


@pytest.mark.parametrize("opset", [13, 17, "max"])
def test_ir_version_follows_the_opset(opset):
    opset = opsets.max_opset() if opset == "max" else opset
    proto = to_onnx(zoo.shared("mlp_functional"), opset=opset)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", opset)]
    assert proto.ir_version == onnx.helper.find_min_ir_version_for(list(proto.opset_import))
    assert proto.ir_version <= opsets.max_ir_version()


def test_default_opset_is_17():
    assert to_onnx(zoo.shared("mlp_functional")).opset_import[0].version == 17


@pytest.mark.parametrize("bad", [12, "max+1", 17.0, "17"])
def test_out_of_range_opset_is_a_clear_error(bad):
    bad = opsets.max_opset() + 1 if bad == "max+1" else bad
    with pytest.raises(ExportError, match="Received: opset="):
        to_onnx(zoo.shared("mlp_functional"), opset=bad)


def test_opset_20_uses_the_gelu_op():
    ops_20 = {n.op_type for n in assert_parity(zoo.shared("dense_activations"), opset=20).graph.node}
    assert "Gelu" in ops_20 and "Erf" not in ops_20


def _lowest_opset(entry):
    """The lowest opset ``entry`` exports at: its declared min_opset, or the one a clean ExportError names."""
    try:
        to_onnx(zoo.shared(entry.name), opset=entry.min_opset)
    except ExportError as err:
        needed = re.search(r"needs opset >= (\d+)", str(err))
        assert needed, f"zoo model '{entry.name}' fails at opset {entry.min_opset} without naming the opset it needs"
        return int(needed.group(1))
    return entry.min_opset


@pytest.mark.parametrize("opset", ["lowest", "max"])
def test_every_zoo_model_at_its_lowest_and_the_newest_opset(opset):
    for name in zoo.names():
        entry = zoo.entry(name)
        target = opsets.max_opset() if opset == "max" else _lowest_opset(entry)
        proto = assert_parity(zoo.shared(name), rtol=entry.rtol, atol=entry.atol, sampler=entry.sampler, opset=target,
                              levels=("ORT_ENABLE_ALL",))
        assert proto.opset_import[0].version == target


def test_mlp_is_three_gemms_and_activations():
    proto = to_onnx(zoo.shared("mlp_sequential"))
    assert [n.op_type for n in proto.graph.node] == ["Gemm", "Relu", "Gemm", "Relu", "Gemm", "Softmax"]


def test_large_models_are_written_with_external_data(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "EXTERNAL_DATA_THRESHOLD", 1024)
    model = zoo.shared("mlp_sequential")
    path = tmp_path / "big.onnx"
    proto = to_onnx(model, path)
    assert sorted(os.listdir(tmp_path)) == ["big.onnx", "big.onnx.data"]
    assert all(i.raw_data for i in proto.graph.initializer)
    on_disk = onnx.load(path, load_external_data=False)
    kernels = [i for i in on_disk.graph.initializer if i.name.endswith("/kernel")]
    assert len(kernels) == 3 and all(i.data_location == onnx.TensorProto.EXTERNAL for i in kernels)
    check_file(path)
    x = np.random.default_rng(1).standard_normal((3, 32)).astype(np.float32)
    (y,) = session(path, "ORT_ENABLE_ALL").run(None, {"features": x})
    np.testing.assert_allclose(y, model.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    with pytest.raises(ExportError, match="Expected a `path`"):
        to_onnx(model)


def test_writing_replaces_atomically_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    to_onnx(zoo.shared("mlp_functional"), path)
    assert os.listdir(tmp_path) == ["m.onnx"]
    check_file(path)


class Lookup(kgraph.Layer):
    """``table[indices]`` for integer indices in ``[0, input_dim)``; fails outside."""

    def __init__(self, input_dim, **kwargs):
        super().__init__(**kwargs)
        self.input_dim = input_dim

    def build(self, input_shape):
        self.table = self.add_weight(shape=(self.input_dim, 2), name="table")

    def call(self, indices):
        if np.any(indices >= self.input_dim):
            raise IndexError(f"index out of [0, {self.input_dim})")
        return kgraph.ops.take(self.table, indices, axis=0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (2,)


@converter(Lookup, opset=13)
def convert_lookup(ctx):
    """One Gather on the table."""
    return ctx.op("Gather", [ctx.weight(ctx.layer.table), ctx.input(0)], axis=0)


def test_integer_inputs_are_sampled_in_the_range_their_consumers_accept():
    ids = kgraph.Input(shape=(4,), dtype="int64", name="ids")
    inner_ids = kgraph.Input(shape=(4,), dtype="int64", name="inner_ids")
    inner = kgraph.Model(inner_ids, L.Flatten()(Lookup(3)(inner_ids)), name="inner")
    model = zoo.perturb(kgraph.Model(ids, L.Dense(2)(inner(ids))))
    assert make_inputs(model, 50)["ids"].max() == 2
    assert_parity(model)
    custom = make_inputs(model, 3, sampler=lambda name, shape, dtype, rng: np.ones(shape, dtype))
    assert np.array_equal(custom["ids"], np.ones((3, 4), np.int64))
