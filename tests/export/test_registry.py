"""The converter registry: exact-class lookup, opset variants, coverage by the zoo, and unsupported layers."""
import os

import numpy as np
import pytest

import kgraph
from export import NATIVE, Value, converter, inherit_converter, registry, to_onnx
from export.converters.activations import activation_name, supported_activations
from export.registry import ConverterNotFoundError
from export.verify import leaf_layers
from kgraph import layers as L
from tests.export import zoo
from tests.export.parity import assert_parity


class ChannelAffine(kgraph.Layer):
    """``scale * x + offset`` per channel (last axis): the example layer of the converter contract."""

    _preserves_dtype = True

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")
        self.offset = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="offset")

    def call(self, inputs):
        return kgraph.ops.add(kgraph.ops.multiply(inputs, self.scale), self.offset)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


@converter(ChannelAffine, opset=13)
def convert_channel_affine(ctx):
    """The example converter of the export.converters docstring, verbatim."""
    layout, rank = ctx.layout(0), ctx.input_rank(0)
    if layout.perm(rank) is None:  # a FeatureOrder permutes channels: work in native order
        layout = NATIVE
    x = ctx.input(0, layout)
    # Broadcast the per-channel weights against the physical channel axis.
    shape = [1] * rank
    shape[layout.physical_axis(-1, rank)] = -1
    reshape = lambda w: np.reshape(w, shape[1:])  # noqa: E731
    tag = "x".join(str(d) for d in shape[1:])
    scale = ctx.weight(ctx.layer.scale, transform=reshape, variant=tag)
    offset = ctx.weight(ctx.layer.offset, transform=reshape, variant=tag)
    y = ctx.op("Add", [ctx.op("Mul", [x, scale]), offset])
    return Value(y, layout)


class Doubler(kgraph.Layer):
    """``2 * x`` through ``np.asarray`` (which tracing cannot follow), with no converter registered."""

    _preserves_dtype = True

    def call(self, inputs):
        return kgraph.ops.multiply(np.asarray(inputs), 2.0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class ScaledDense(L.Dense):
    """A Dense subclass whose ``call`` differs from Dense's."""

    def call(self, inputs):
        return kgraph.ops.multiply(super().call(inputs), 3.0)


@inherit_converter
class WideDense(L.Dense):
    """A Dense subclass that only changes a default, opted in to Dense's converter."""

    def __init__(self, units=32, **kwargs):
        super().__init__(units, **kwargs)


def test_every_converter_in_the_package_is_exercised_by_a_zoo_model():
    used = {type(layer) for name in zoo.names() for layer in leaf_layers(zoo.shared(name))}
    ours = {cls for cls in registry.registered_classes()
            if any(v.fn.__module__.startswith("export.") for v in registry.variants(cls))}
    missing = sorted(cls.__name__ for cls in ours - used)
    assert not missing, f"converters with no zoo model using their layer: {missing}"


def test_every_activation_emitter_is_exercised_by_a_zoo_model():
    used = set()
    for name in zoo.names():
        for layer in leaf_layers(zoo.shared(name)):
            if hasattr(layer, "activation"):
                used.add(activation_name(layer.activation))
    missing = sorted(set(supported_activations()) - used - {"swish"})  # swish is silu under another name
    assert not missing, f"activations with no zoo model using them: {missing}"


def test_docstring_example_converter_on_every_layout():
    x = kgraph.Input(shape=(3, 4, 5), name="x")
    flat = L.Flatten(data_format="channels_first")(x)
    outs = [L.Dense(2)(ChannelAffine()(L.Dense(6)(flat))), ChannelAffine()(flat), ChannelAffine()(x)]
    model = zoo.train_briefly(kgraph.Model(x, outs))
    assert_parity(model)


def test_subclass_with_its_own_call_is_traced_not_given_the_base_converter():
    x = kgraph.Input(shape=(4,), name="x")
    model = zoo.perturb(kgraph.Model(x, ScaledDense(2, name="scaled")(x)))
    assert not registry.has_converter(ScaledDense)
    proto = assert_parity(model)
    assert "Mul" in [node.op_type for node in proto.graph.node]  # its own `call`, times 3


def test_subclass_opted_in_uses_the_base_converter():
    x = kgraph.Input(shape=(4,), name="x")
    model = zoo.perturb(kgraph.Model(x, WideDense(activation="relu")(x)))
    assert registry.lookup(model.layers[1], 17).layer_class is L.Dense
    assert_parity(model)


def test_highest_variant_not_above_the_target_opset_wins():
    class Versioned(kgraph.Layer):
        def compute_output_shape(self, input_shape):
            return tuple(input_shape)

    def v13(ctx):
        return ctx.input(0)

    def v15(ctx):
        return ctx.input(0)

    converter(Versioned, opset=15)(v15)
    converter(Versioned, opset=13)(v13)
    layer = Versioned()
    assert registry.lookup(layer, 13).fn is v13
    assert registry.lookup(layer, 14).fn is v13
    assert registry.lookup(layer, 15).fn is v15
    assert registry.lookup(layer, 21).fn is v15
    with pytest.raises(ValueError, match="already registered"):
        converter(Versioned, opset=15)(v13)


def test_a_variant_above_the_target_opset_only_is_an_error():
    class Modern(kgraph.Layer):
        def compute_output_shape(self, input_shape):
            return tuple(input_shape)

    converter(Modern, opset=18)(lambda ctx: ctx.input(0))
    with pytest.raises(ConverterNotFoundError, match="needs opset >= 18; the export targets opset 17"):
        registry.lookup(Modern(), 17)


def test_an_op_is_declared_unexportable_once_and_its_reason_is_kept():
    reason = registry.unexportable_ops()["inv"]
    with pytest.raises(ValueError, match="'inv' is already declared unexportable"):
        registry.unexportable("inv", "another reason")
    assert registry.unexportable_ops()["inv"] == reason


def test_declared_tolerances_are_the_loosest_of_the_model():
    class Loose(kgraph.Layer):
        def compute_output_shape(self, input_shape):
            return tuple(input_shape)

    class Declared(kgraph.Layer):
        export_rtol = 1e-3

    converter(Loose, opset=13, rtol=1e-4, atol=2e-5)(lambda ctx: ctx.input(0))
    assert registry.tolerance([L.Dense(2)], 17) == (1e-5, 1e-5)
    assert registry.tolerance([L.Dense(2), Loose()], 17) == (1e-4, 2e-5)
    assert registry.tolerance([Loose(), Declared()], 17) == (1e-3, 2e-5)


def test_unsupported_layer_names_layer_and_class_and_writes_nothing(tmp_path):
    x = kgraph.Input(shape=(4,), name="x")
    model = kgraph.Model(x, L.Dense(2)(Doubler(name="times_two")(L.Dense(4)(x))))
    fresh = tmp_path / "fresh.onnx"
    with pytest.raises(registry.ExportError) as info:
        to_onnx(model, fresh)
    message = str(info.value)
    assert "'times_two' (Doubler)" in message and "@export.converter(Doubler, opset=13)" in message
    assert not fresh.exists()
    existing = tmp_path / "existing.onnx"
    existing.write_bytes(b"previous export")
    with pytest.raises(registry.ExportError):
        to_onnx(model, existing)
    assert existing.read_bytes() == b"previous export"
    assert sorted(os.listdir(tmp_path)) == ["existing.onnx"]


def test_a_converter_returning_the_wrong_number_of_outputs_is_named():
    class Pair(kgraph.Layer):
        def compute_output_shape(self, input_shape):
            return [tuple(input_shape), tuple(input_shape)]

    converter(Pair, opset=13)(lambda ctx: ctx.input(0))
    x = kgraph.Input(shape=(3,), name="x")
    a, b = Pair(name="pair")(x)
    with pytest.raises(registry.ExportError, match="layer 'pair' returned 1 outputs; expected 2"):
        to_onnx(kgraph.Model(x, [a, b]))
