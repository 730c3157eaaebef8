"""Converters of ``kgraph.ops.nn_extra``: every op there is a composition of other ops, converted by tracing."""
from export.converters.ops_extra import register_composites
from kgraph.ops.nn_extra import __all__ as _NN_EXTRA

register_composites(_NN_EXTRA)
