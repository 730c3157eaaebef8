"""Converters of ``kgraph.ops.image`` and ``kgraph.ops.patches``: compositions of other ops, converted by tracing."""
from export.converters.ops_extra import register_composites
from kgraph.ops.image import __all__ as _IMAGE
from kgraph.ops.patches import __all__ as _PATCHES

register_composites(_IMAGE + _PATCHES)
