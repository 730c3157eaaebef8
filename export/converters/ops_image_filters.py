"""Converters of ``kgraph.ops.image_filters``."""
