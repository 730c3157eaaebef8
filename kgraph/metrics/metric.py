"""The ``Metric`` base (state in non-trainable Variables, Keras's stateful and stateless API) and NumPy helpers."""
# Metrics never touch a GradientTape: built-in metrics compute in NumPy (those of a loss's formula call the loss
# function, whose kgraph.ops compute in NumPy too) and accumulate into Variables of the metric's dtype between
# reset_state() calls.
import re

import numpy as np

from kgraph import backend, initializers
from kgraph.backend.variable import Variable


def to_snake_case(name):
    """Keras's snake_case of a class name (``MeanIoU`` -> ``mean_io_u``)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def to_numpy(x, dtype=None):
    """Return ``x`` (array, Variable, list or number) as an ndarray."""
    if isinstance(x, Variable):
        x = x.value
    return np.asarray(x, dtype=dtype)


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """NumPy twin of the losses' rank alignment on a trailing unit axis."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = x2[..., None]
        else:
            x1 = np.squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = x1[..., None]
        else:
            x2 = np.squeeze(x2, -1)
    return x1, x2


def divide_no_nan(numerator, denominator):
    """Elementwise ``numerator / denominator`` with 0 where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    if numerator.ndim == 0 and denominator.ndim == 0:  # a running mean's result, once a step: the same division
        return np.asarray(numerator / denominator if denominator != 0 else 0.0, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def sigmoid(x):
    """``1 / (1 + exp(-x))`` without overflow."""
    return np.exp(-np.logaddexp(0.0, -x))


def _auto_name(cls):
    from kgraph.utils import naming  # deferred: kgraph.utils imports the trainers, which import the metrics
    return naming.uniquify(to_snake_case(cls.__name__))


class Metric:
    """Base class: ``__init__`` adds state Variables, ``update_state`` assigns them, ``result`` reads them."""

    def __init__(self, dtype=None, name=None):
        self._variables = []
        self._metrics = []
        self.name = name or _auto_name(type(self))
        self._dtype = backend.standardize_dtype(dtype)

    def __setattr__(self, name, value):
        # Variables and metrics assigned as attributes are tracked, as Keras's Tracker does.
        if isinstance(value, (Variable, Metric)) and "_metrics" in self.__dict__:
            store = self._variables if isinstance(value, Variable) else self._metrics
            if not any(value is known for known in store):
                store.append(value)
        super().__setattr__(name, value)

    @property
    def dtype(self):
        return self._dtype

    @property
    def variables(self):
        """This metric's Variables, then those of the metrics it holds."""
        variables = list(self._variables)
        for metric in self._metrics:
            variables.extend(metric.variables)
        return variables

    def add_variable(self, shape, initializer, dtype=None, aggregation="sum", name=None):
        """Create a non-trainable state Variable (``aggregation`` is accepted for Keras; kgraph runs on one device)."""
        if "_metrics" not in self.__dict__:
            raise RuntimeError("You forgot to call `super().__init__()` in the `__init__()` method. Go add it!")
        dtype = backend.standardize_dtype(dtype)
        shape = tuple(shape)
        value = initializers.get(initializer)(shape, dtype=dtype)
        name = name or "variable"
        variable = Variable(value, name=name, trainable=False, dtype=dtype, path=f"{self.name}/{name}")
        self._variables.append(variable)
        return variable

    def add_weight(self, shape=(), initializer=None, dtype=None, name=None):
        """Keras's older alias of ``add_variable``."""
        return self.add_variable(shape=shape, initializer=initializer, dtype=dtype, name=name)

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement update_state().")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement result().")

    def reset_state(self):
        """Set every state Variable to zeros."""
        for variable in self.variables:
            variable.assign(np.zeros(variable.shape, dtype=variable.dtype))

    def _swap_in(self, values):
        """Assign ``values`` to ``variables`` one to one; return the values they held."""
        variables = self.variables
        if len(values) != len(variables):
            raise ValueError(
                "Argument `metric_variables` must be a list of tensors corresponding 1:1 to "
                f"{type(self).__name__}().variables. Received list with length {len(values)}, "
                f"but expected {len(variables)} variables."
            )
        previous = [variable.value for variable in variables]
        for variable, value in zip(variables, values):
            variable.assign(to_numpy(value))
        return previous

    def _restore(self, previous):
        for variable, value in zip(self.variables, previous):
            variable.assign(value)

    def stateless_update_state(self, metric_variables, *args, **kwargs):
        """The state values ``update_state`` would give from ``metric_variables``; the metric's state is unchanged."""
        previous = self._swap_in(metric_variables)
        try:
            self.update_state(*args, **kwargs)
            return [variable.numpy() for variable in self.variables]
        finally:
            self._restore(previous)

    def stateless_result(self, metric_variables):
        """``result()`` computed from ``metric_variables``; the metric's state is unchanged."""
        previous = self._swap_in(metric_variables)
        try:
            value = self.result()
            return value.numpy() if isinstance(value, Variable) else value
        finally:
            self._restore(previous)

    def stateless_reset_state(self):
        """The state values ``reset_state`` would give; the metric's state is unchanged."""
        previous = [variable.value for variable in self.variables]
        try:
            self.reset_state()
            return [variable.numpy() for variable in self.variables]
        finally:
            self._restore(previous)

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _as_result(self, value):
        """``value`` in the metric's dtype: a NumPy scalar, or an array for several values."""
        return np.asarray(value, dtype=self.dtype)[()]

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"
