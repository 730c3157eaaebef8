"""Converters of ``kgraph.ops.image``: every op there is a composition of other ops, converted by tracing."""
from export.converters.ops_extra import register_composites
from kgraph.ops.image import __all__ as _IMAGE

register_composites(_IMAGE)
