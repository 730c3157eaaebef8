"""Converter registry: layer class -> converter functions, one per minimum opset."""
from __future__ import annotations

import bisect
import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import TypeAlias, TypeVar

    from export.builder import Value
    from export.context import ConversionContext
    from kgraph.graph.operation import Operation
    from kgraph.layers.layer import Layer
    from kgraph.ops.operations import OpOperation

    # What a converter returns (see export.converters): the ONNX name (data in the native layout) or the Value of
    # each output of the call, in node.output_tensors order; a list or tuple when the call has several outputs.
    ConverterResult: TypeAlias = str | Value | list[str | Value] | tuple[str | Value, ...]
    # A converter: ``fn(ctx)`` for one call of a layer or an op.
    ConverterFn: TypeAlias = Callable[[ConversionContext], ConverterResult]
    _ConverterT = TypeVar("_ConverterT", bound=ConverterFn)
    _ClassT = TypeVar("_ClassT", bound=type)

DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-5

_CONVERTERS = {}
_OP_CONVERTERS = {}
_UNEXPORTABLE = {}
_INHERITING = set()


@dataclasses.dataclass(frozen=True)
class Converter:
    """One registered converter: the function, its layer class, its minimum opset and its tolerances."""

    layer_class: type
    opset: int
    fn: object
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    def __call__(self, ctx: ConversionContext) -> ConverterResult:
        return self.fn(ctx)


class ExportError(ValueError):
    """A model cannot be exported as asked (unsupported layer, configuration or opset)."""


class ConverterNotFoundError(ExportError, LookupError):
    """No converter is registered for a layer's class (or none at or below the target opset)."""


def converter(layer_class: type, opset: int = 13, *, rtol: float | None = None,
              atol: float | None = None) -> Callable[[_ConverterT], _ConverterT]:
    """Decorator registering ``fn(ctx)`` as the converter of exactly ``layer_class`` from ``opset`` on."""
    # The variant with the highest opset not above the target wins. rtol/atol: the parity tolerance
    # models using this layer need (the loosest in a model wins).
    if not isinstance(layer_class, type):
        raise TypeError(f"converter() expects a layer class as its first argument. Received: {layer_class!r}")
    if not isinstance(opset, int) or opset < 1:
        raise ValueError(f"converter() expects a positive integer opset. Received: opset={opset!r}")

    def register(fn: _ConverterT) -> _ConverterT:
        variants = _CONVERTERS.setdefault(layer_class, [])
        if any(v.opset == opset for v in variants):
            raise ValueError(f"A converter for {_qualname(layer_class)} at opset {opset} is already registered "
                             f"({_qualname(next(v.fn for v in variants if v.opset == opset))}).")
        entry = Converter(layer_class, opset, fn,
                          DEFAULT_RTOL if rtol is None else float(rtol),
                          DEFAULT_ATOL if atol is None else float(atol))
        bisect.insort(variants, entry, key=lambda v: v.opset)
        return fn

    return register


def op_converter(op_name: str, opset: int = 13, *, rtol: float | None = None,
                 atol: float | None = None) -> Callable[[_ConverterT], _ConverterT]:
    """Decorator registering ``fn(ctx)`` as the converter of the ``kgraph.ops`` op ``op_name`` from ``opset`` on."""
    # Same rules as `converter`: the variant with the highest opset not above the target wins.
    if not isinstance(op_name, str):
        raise TypeError(f"op_converter() expects an op name such as 'add'. Received: {op_name!r}")

    def register(fn: _ConverterT) -> _ConverterT:
        variants = _OP_CONVERTERS.setdefault(op_name, [])
        if any(v.opset == opset for v in variants):
            raise ValueError(f"A converter for op '{op_name}' at opset {opset} is already registered.")
        entry = Converter(op_name, opset, fn, DEFAULT_RTOL if rtol is None else float(rtol),
                          DEFAULT_ATOL if atol is None else float(atol))
        bisect.insort(variants, entry, key=lambda v: v.opset)
        return fn

    return register


def unexportable(op_name: str, reason: str) -> None:
    """Declare that the ``kgraph.ops`` op ``op_name`` has no ONNX form, and why (the error a model using it gets)."""
    if not isinstance(op_name, str):
        raise TypeError(f"unexportable() expects an op name such as 'cond'. Received: {op_name!r}")
    if op_name in _UNEXPORTABLE:
        raise ValueError(f"Op '{op_name}' is already declared unexportable: {_UNEXPORTABLE[op_name]}")
    _UNEXPORTABLE[op_name] = reason


def unexportable_ops() -> dict[str, str]:
    """Every op declared unexportable, with its reason."""
    return dict(_UNEXPORTABLE)


def has_op_converter(op_name: str) -> bool:
    """Whether some converter (at any opset) is registered for the op ``op_name``."""
    return op_name in _OP_CONVERTERS


def lookup_op(operation: OpOperation, opset: int) -> Converter:
    """The converter for an op node's ``operation`` at ``opset``; raises ConverterNotFoundError naming the op."""
    variants = _OP_CONVERTERS.get(operation.op_name)
    if not variants:
        reason = _UNEXPORTABLE.get(operation.op_name)
        if reason:
            raise ConverterNotFoundError(
                f"Operation '{operation.name}' (kgraph.ops.{operation.op_name}) cannot be exported to ONNX: {reason.rstrip('.')}.")
        raise ConverterNotFoundError(
            f"Operation '{operation.name}' (kgraph.ops.{operation.op_name}) has no ONNX converter. Register one "
            f"with `@export.registry.op_converter('{operation.op_name}', opset=13)`.")
    usable = [v for v in variants if v.opset <= opset]
    if not usable:
        raise ConverterNotFoundError(f"Operation '{operation.name}' (kgraph.ops.{operation.op_name}) needs opset "
                                     f">= {variants[0].opset}; the export targets opset {opset}.")
    return usable[-1]


def registered_ops() -> list[str]:
    """Every op name with at least one registered converter."""
    return list(_OP_CONVERTERS)


def inherit_converter(layer_class: _ClassT) -> _ClassT:
    """Class decorator: let ``layer_class`` use the converter of its nearest registered base class."""
    # Opt-in only: a subclass may override call(), so reusing its parent's converter silently could be wrong.
    if not isinstance(layer_class, type):
        raise TypeError(f"inherit_converter() expects a layer class. Received: {layer_class!r}")
    _INHERITING.add(layer_class)
    return layer_class


def _resolve_class(layer_class):
    """The registered class whose converters ``layer_class`` uses, or None."""
    if layer_class in _CONVERTERS:
        return layer_class
    if layer_class not in _INHERITING:
        return None
    for base in layer_class.__mro__[1:]:
        if base in _CONVERTERS:
            return base
    return None


def has_converter(layer_class: type) -> bool:
    """Whether some converter (at any opset) applies to ``layer_class``."""
    return _resolve_class(layer_class) is not None


def lookup(layer: Layer, opset: int) -> Converter:
    """The converter for ``layer`` at target ``opset``; raises ConverterNotFoundError naming the layer."""
    cls = type(layer)
    registered = _resolve_class(cls)
    if registered is None:
        raise ConverterNotFoundError(
            f"Layer '{layer.name}' of class {_qualname(cls)} has no ONNX converter. Expected a converter "
            f"registered for exactly this class. Register one with\n"
            f"    from export.registry import converter\n"
            f"    @converter({cls.__name__}, opset=13)\n"
            f"    def convert_{layer.name}(ctx): ...\n"
            f"(see the docstring of export.converters), or, if the class computes exactly what a base class "
            f"computes, decorate it with @export.registry.inherit_converter.")
    variants = [v for v in _CONVERTERS[registered] if v.opset <= opset]
    if not variants:
        raise ConverterNotFoundError(
            f"Layer '{layer.name}' of class {_qualname(cls)} needs opset >= "
            f"{_CONVERTERS[registered][0].opset}; the export targets opset {opset}.")
    return variants[-1]


def registered_classes() -> list[type]:
    """Every layer class with at least one registered converter."""
    return list(_CONVERTERS)


def variants(layer_class: type) -> list[Converter]:
    """The registered converters of ``layer_class``, lowest opset first."""
    return list(_CONVERTERS.get(layer_class, []))


def tolerance(layers: Iterable[Operation], opset: int) -> tuple[float, float]:
    """``(rtol, atol)`` for a model made of ``layers``: the loosest its converters or classes declare."""
    rtol, atol = DEFAULT_RTOL, DEFAULT_ATOL
    for layer in layers:
        if getattr(layer, "op_name", None) is not None:
            if has_op_converter(layer.op_name):
                entry = lookup_op(layer, opset)
                rtol, atol = max(rtol, entry.rtol), max(atol, entry.atol)
        elif has_converter(type(layer)):
            entry = lookup(layer, opset)
            rtol, atol = max(rtol, entry.rtol), max(atol, entry.atol)
        rtol = max(rtol, float(getattr(type(layer), "export_rtol", rtol)))
        atol = max(atol, float(getattr(type(layer), "export_atol", atol)))
    return rtol, atol


def _qualname(obj):
    return f"{obj.__module__}.{obj.__qualname__}"
