"""Hinge metrics: running means of the hinge, squared hinge and categorical hinge losses."""
from kgraph.losses.functions import categorical_hinge, hinge, squared_hinge
from kgraph.metrics.reduction_metrics import MeanOfFunction


class Hinge(MeanOfFunction):
    """Running mean of the hinge loss."""

    def __init__(self, name="hinge", dtype=None):
        super().__init__(hinge, name=name, dtype=dtype)


class SquaredHinge(MeanOfFunction):
    """Running mean of the squared hinge loss."""

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, name=name, dtype=dtype)


class CategoricalHinge(MeanOfFunction):
    """Running mean of the categorical hinge loss."""

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, name=name, dtype=dtype)
