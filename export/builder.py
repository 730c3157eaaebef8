"""GraphBuilder: the names, initializers, constants, tensor layouts and nodes of the ONNX graph being built."""
from __future__ import annotations

import dataclasses
import hashlib
from typing import TYPE_CHECKING

import numpy as np
from onnx import helper, numpy_helper

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    import numpy.typing as npt
    import onnx

    from export.context import ConversionContext
    from kgraph.backend.variable import Variable


class Layout:
    """How a tensor's physical ONNX axes relate to its logical Keras axes (base class)."""

    def perm(self, rank: int) -> tuple[int, ...] | None:
        """Axis permutation with ``physical = transpose(logical, perm)``, or None if not an axis permutation."""
        return None

    def normalize(self, rank: int) -> Layout:
        """The canonical equal layout for a tensor of ``rank`` (NATIVE where this layout is a no-op)."""
        return self

    def physical_axis(self, axis: int, rank: int) -> int:
        """Physical axis holding logical ``axis`` (negative axes allowed)."""
        perm = self.perm(rank)
        axis = axis % rank
        if perm is None:
            raise ValueError(f"Layout {self!r} does not map single axes; expected an axis-permutation layout.")
        return perm.index(axis)

    def to_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        """Emit the nodes turning ``name`` (in this layout) into the native layout; return the new name."""
        raise NotImplementedError(f"{type(self).__name__} must define to_native()")

    def from_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        """Emit the nodes turning ``name`` (native layout) into this layout; return the new name."""
        raise NotImplementedError(f"{type(self).__name__} must define from_native()")


class _AxisLayout(Layout):
    """A layout that is a permutation of the axes, given by rank."""

    def normalize(self, rank: int) -> Layout:
        perm = self.perm(rank)
        return NATIVE if perm == tuple(range(rank)) else self

    def to_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        inverse = tuple(int(i) for i in np.argsort(self.perm(rank)))
        return ctx.op("Transpose", [name], perm=list(inverse), name="to_native")

    def from_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        return ctx.op("Transpose", [name], perm=list(self.perm(rank)), name=f"to_{self}")

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class NativeLayout(_AxisLayout):
    """Keras's own axis order (channels last, "NHWC"-style)."""

    def perm(self, rank: int) -> tuple[int, ...]:
        return tuple(range(rank))

    def __repr__(self):
        return "native"


class ChannelsFirstLayout(_AxisLayout):
    """Channels moved from the last axis to axis 1 ("NCHW"-style), as ONNX Conv/Pool expect."""

    def perm(self, rank: int) -> tuple[int, ...]:
        if rank <= 2:
            return tuple(range(rank))
        return (0, rank - 1) + tuple(range(1, rank - 1))

    def __repr__(self):
        return "channels_first"


class FeatureOrder(Layout):
    """A 2-D ``(batch, features)`` tensor whose physical feature ``j`` is logical feature ``order[j]``."""

    # Flatten of channels-first data gives this; a Dense consumer folds it into its kernel rows
    # (``kernel[order]``), so no op runs to restore Keras's feature order.
    def __init__(self, order: npt.ArrayLike) -> None:
        self.order = np.asarray(order, dtype=np.int64)
        if self.order.ndim != 1 or not np.array_equal(np.sort(self.order), np.arange(self.order.size)):
            raise ValueError(f"FeatureOrder expects a permutation of range(n). Received: {order!r}")

    def normalize(self, rank: int) -> Layout:
        return NATIVE if np.array_equal(self.order, np.arange(self.order.size)) else self

    def physical_axis(self, axis: int, rank: int) -> int:
        # Only whole-axis operations (softmax over features) may ask: they are order-invariant.
        return axis % rank

    def to_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        inverse = np.argsort(self.order).astype(np.int64)
        return ctx.op("Gather", [name, ctx.const(inverse, name="feature_order")], axis=rank - 1,
                      name="to_native")

    def from_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        return ctx.op("Gather", [name, ctx.const(self.order, name="feature_order")], axis=rank - 1,
                      name="to_feature_order")

    def __eq__(self, other):
        return isinstance(other, FeatureOrder) and np.array_equal(self.order, other.order)

    def __hash__(self):
        return hash(self.order.tobytes())

    def __repr__(self):
        return f"FeatureOrder(n={self.order.size})"


NATIVE = NativeLayout()
CHANNELS_FIRST = ChannelsFirstLayout()


@dataclasses.dataclass(frozen=True)
class Value:
    """An ONNX tensor name together with the layout its data is in."""

    name: str
    layout: Layout = NATIVE


def onnx_dtype(dtype: npt.DTypeLike) -> int:
    """The ONNX TensorProto element type for a NumPy dtype (or dtype name)."""
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class GraphBuilder:
    """Owns one ONNX graph's names, initializers, constants, layout conversions, nodes, inputs and outputs."""

    # Weights are keyed by Variable (a shared layer or a twice-called nested model gets one initializer);
    # conversions by tensor and target layout (two consumers share one Transpose).

    def __init__(self, opset: int) -> None:
        self.opset = int(opset)
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self._names = set()
        self._weights = {}
        self._consts = {}
        self._conversions = {}
        self._graph_inputs = set()
        self._renamed = {}

    # ----- naming -------------------------------------------------------------------
    def reserve(self, name: str) -> str:
        """Claim ``name`` exactly (graph inputs and outputs); raise if it is taken."""
        if name in self._names:
            raise ValueError(f"The ONNX name '{name}' is used twice; expected unique input and output names.")
        self._names.add(name)
        return name

    def unique_name(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``... if taken; the result is claimed."""
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    # ----- graph pieces -------------------------------------------------------------
    def add_input(self, name: str, shape: Sequence[int | None], dtype: npt.DTypeLike,
                  dim_params: Mapping[int, str]) -> str:
        """Declare a graph input; ``dim_params`` (axis -> name) makes those axes dynamic whatever ``shape`` says."""
        self.reserve(name)
        self._graph_inputs.add(name)
        self.inputs.append(_value_info(name, shape, dtype, dim_params))
        return name

    def add_node(self, op_type: str, inputs: Iterable[str], outputs: Iterable[str], name: str,
                 domain: str | None = None, **attrs: Any) -> None:
        """Append a node with exactly these names; attributes with value None are left out."""
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=name, domain=domain,
                                           **attrs))

    def weight(self, variable: Variable, scope: str, transform: Callable[[np.ndarray], npt.ArrayLike] | None = None,
               variant: str | None = None) -> str:
        """Initializer for a weight Variable (one per Variable and distinct transformed value); return its name."""
        if transform is not None and variant is None:
            raise ValueError("weight(): a `transform` needs a `variant` label naming it, e.g. variant='oihw'.")
        value = np.asarray(variable.value)
        key = (id(variable), variant)
        if transform is not None:
            value = np.ascontiguousarray(transform(value))
            # Two calls may transform one Variable differently under one label (e.g. two row orders).
            key += (value.dtype.str, value.shape, hashlib.sha1(value.tobytes()).hexdigest())
        if key in self._weights:
            return self._weights[key][0]
        path = getattr(variable, "path", None) or f"{scope}/{getattr(variable, 'name', 'weight')}"
        name = self.unique_name(path if variant is None else f"{path}_{variant}")
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        self._weights[key] = (name, variable)
        return name

    def const(self, value: npt.ArrayLike, scope: str, name: str = "const", dtype: npt.DTypeLike | None = None) -> str:
        """Initializer for a constant array, shared by all users of an equal constant; return its name."""
        array = np.asarray(value, dtype=dtype)
        array = np.ascontiguousarray(array) if array.ndim else array  # ascontiguousarray makes a scalar 1-D
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            unique = self.unique_name(f"{scope}/{name}" if scope else name)
            self.initializers.append(numpy_helper.from_array(array, unique))
            self._consts[key] = unique
        return self._consts[key]

    def convert(self, ctx: ConversionContext, value: Value, rank: int, layout: Layout) -> str:
        """``value``'s data in ``layout``, emitting (once per tensor and layout) the conversion nodes."""
        value = Value(self._renamed.get(value.name, value.name), value.layout)
        current, target = value.layout.normalize(rank), layout.normalize(rank)
        if current == target:
            return value.name
        key = (value.name, target)
        if key in self._conversions:
            return self._conversions[key]
        from_perm, to_perm = current.perm(rank), target.perm(rank)
        if from_perm is not None and to_perm is not None:
            perm = [from_perm.index(axis) for axis in to_perm]
            name = ctx.op("Transpose", [value.name], perm=perm, name=f"to_{target}")
        elif target == NATIVE:
            name = current.to_native(ctx, value.name, rank)
        else:
            name = target.from_native(ctx, self.convert(ctx, value, rank, NATIVE), rank)
        self._conversions[key] = name
        return name

    def add_output(self, name: str, source: str, shape: Sequence[int | None], dtype: npt.DTypeLike,
                   dim_params: Mapping[int, str]) -> None:
        """Declare graph output ``name`` carrying tensor ``source`` (renamed in place when possible)."""
        source = self._renamed.get(source, source)
        if name == source and name in self._graph_inputs:
            # An input passed straight through keeps its name, which is the output's name too.
            self.outputs.append(_value_info(name, shape, dtype, dim_params))
            return
        self.reserve(name)
        produced = any(source in node.output for node in self.nodes)
        claimed = {info.name for info in self.outputs}
        if produced and source not in self._graph_inputs and source not in claimed:
            self._rename(source, name)
            self._renamed[source] = name
        else:
            self.add_node("Identity", [source], [name], name=self.unique_name(f"{name}/Identity"))
        self.outputs.append(_value_info(name, shape, dtype, dim_params))

    def _rename(self, old, new):
        for node in self.nodes:
            for field in (node.input, node.output):
                for i, item in enumerate(field):
                    if item == old:
                        field[i] = new
        self._conversions = {k: (new if v == old else v) for k, v in self._conversions.items()}

    def make_graph(self, name: str) -> onnx.GraphProto:
        """The GraphProto of everything added so far."""
        return helper.make_graph(self.nodes, name, self.inputs, self.outputs, initializer=self.initializers)


def _value_info(name, shape, dtype, dim_params):
    dims = [dim_params[i] if i in dim_params else (None if d is None else int(d)) for i, d in enumerate(shape)]
    for i, d in enumerate(dims):
        if d is None:
            dims[i] = f"{name}_dim{i}"
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), dims)
