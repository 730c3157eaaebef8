"""The changes that may alter what a layer's ``trainable_weights`` lists, counted.

``Layer.__setattr__`` counts a trainable flag set and any Layer, Variable, list, tuple or dict set as an
attribute; ``add_weight`` counts a new weight; the models count their layer lists when they set them without
``__setattr__``. Whoever keeps such a list (a replayed training step keeps its trainable variables) may keep it
while the count stands.
"""

structure_changes = [0]


def structure_version():
    """The count of changes to any layer's trainable flag, sub-layers or weights so far."""
    return structure_changes[0]


def structure_changed():
    """Count a change to a layer's sub-layers made without setting an attribute (``object.__setattr__``)."""
    structure_changes[0] += 1
