"""Layer and op converters; importing this package registers every converter module below.

The contract
============

A converter turns one call of one layer (a kgraph ``Node``) into ONNX nodes.
It is a function ``fn(ctx)`` registered for an exact layer class and a
minimum opset::

    from export.registry import converter

    @converter(MyLayer, opset=13)          # used for target opsets 13 and up ...
    def convert_my_layer(ctx): ...

    @converter(MyLayer, opset=20)          # ... until a variant for a higher opset takes over
    def convert_my_layer_20(ctx): ...

For a target opset the registered variant with the highest ``opset`` not
above it is used. Lookup is by exact class: a subclass (which may override
``call``) does not silently reuse its parent's converter; decorate the
subclass with ``@export.registry.inherit_converter`` if it computes exactly
what its parent computes. ``@converter(..., rtol=1e-4, atol=1e-5)`` declares
the parity tolerance a layer needs (e.g. recurrent or attention layers); the
loosest tolerance of the layers in a model is what ``--verify`` uses. A layer
class may instead declare ``export_rtol`` / ``export_atol`` class attributes.

``ctx`` (``export.context.ConversionContext``) gives:

- ``ctx.layer``, ``ctx.node``, ``ctx.opset``, ``ctx.scope`` (the layer path,
  e.g. ``"encoder/dense"``), ``ctx.num_inputs``, ``ctx.num_outputs``;
- ``ctx.input_shape(i)``, ``ctx.input_rank(i)``, ``ctx.input_dtype(i)``,
  ``ctx.output_shape(i)``, ``ctx.output_rank(i)``, ``ctx.output_dtype(i)``:
  Keras (logical, channels-last) shapes with the batch axis ``None``; input
  ``i`` is ``node.input_tensors[i]``;
- ``ctx.input(i=0, layout=NATIVE, dtype=None) -> str``: the ONNX name of
  input ``i`` in the asked layout (``layout=None``: as it is), cast to
  ``dtype`` if given. A Transpose (or Gather, for a ``FeatureOrder``) is
  emitted only if the producer's layout differs, once per tensor and layout;
  ``ctx.inputs(layout, dtype)`` does all inputs; ``ctx.layout(i)`` is the
  layout input ``i`` is in now;
- ``ctx.op(op_type, inputs, outputs=1, name=None, domain=None, **attrs)``:
  appends a node named ``<scope>/<name or op_type>`` and returns its output
  name (a list if ``outputs > 1``); ``""`` marks an omitted optional input;
- ``ctx.weight(variable, transform=None, variant=None) -> str``: one
  initializer per weight Variable (named after ``variable.path``, e.g.
  ``dense/kernel``) shared by every call of the layer and of any model
  containing it; ``transform`` (with a ``variant`` label, e.g. ``"oihw"``)
  stores a re-laid-out copy instead, named ``dense/kernel_oihw``;
- ``ctx.const(value, dtype=None, name="const") -> str``: a constant
  initializer, shared with equal constants;
- ``ctx.error(message)``: an ``ExportError`` naming the layer, to raise.

The converter returns the ONNX name of each output, in
``node.output_tensors`` order: a ``str`` (data in the native layout) or a
``Value(name, layout)``; a list or tuple when the layer has several outputs.

Layouts (``export.builder``): ``NATIVE`` is Keras's own axis order
(channels last); ``CHANNELS_FIRST`` moves the last axis to axis 1 (what
ONNX Conv, pooling and normalization ops want); ``FeatureOrder(order)`` is a
2-D tensor whose features are permuted (what Flatten of channels-first data
gives; Dense folds it into its kernel rows). A conv converter asks for
``ctx.input(0, CHANNELS_FIRST)`` and returns ``Value(y, CHANNELS_FIRST)``, so
a chain of conv layers transposes once at entry. Elementwise converters take
``ctx.input(0, layout=None)`` and return their output in ``ctx.layout(0)``.
Axis arguments map through ``layout.physical_axis(axis, rank)``.

Activations: ``export.converters.activations.emit_activation(ctx,
activation, x, layout, rank, dtype)`` emits any kgraph activation (given as a
function or name); new ones register with ``register_activation(name)``.

A complete example: a layer computing ``scale * x + offset`` per channel
(weights ``scale`` and ``offset`` of shape ``(channels,)``), which keeps the
layout it is given::

    import numpy as np
    from export.builder import NATIVE, Value
    from export.registry import converter

    @converter(ChannelAffine, opset=13)
    def convert_channel_affine(ctx):
        layout, rank = ctx.layout(0), ctx.input_rank(0)
        if layout.perm(rank) is None:  # a FeatureOrder permutes channels: work in native order
            layout = NATIVE
        x = ctx.input(0, layout)
        # Broadcast the per-channel weights against the physical channel axis.
        shape = [1] * rank
        shape[layout.physical_axis(-1, rank)] = -1
        reshape = lambda w: np.reshape(w, shape[1:])
        tag = "x".join(str(d) for d in shape[1:])
        scale = ctx.weight(ctx.layer.scale, transform=reshape, variant=tag)
        offset = ctx.weight(ctx.layer.offset, transform=reshape, variant=tag)
        y = ctx.op("Add", [ctx.op("Mul", [x, scale]), offset])
        return Value(y, layout)

Layer converters live in ``layers/``, one module per ``kgraph.layers``
family; op converters in ``ops/``, one module per ``keras.ops`` family (an
op with no ONNX form is declared there with
``export.registry.unexportable(op_name, reason)``). Put a new converter
module in one of them and import it in that package's ``__init__``, or
register from anywhere before exporting (registration is a side effect of
import).
"""
from export.converters import activations, layers, ops  # noqa: F401
