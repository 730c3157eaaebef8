"""Reductions of values into running state: ``Sum``, ``Mean`` and ``MeanMetricWrapper``."""
import numpy as np

from kgraph.metrics.metric import Metric, divide_no_nan, squeeze_or_expand_to_same_rank, to_numpy
from kgraph.saving.registration import get_registered_name


def reduce_to_samplewise_values(values, sample_weight, reduce_fn):
    """``(values, sample_weight)`` weighted and reduced to one value (and weight, if any) per sample, as Keras does."""
    values = to_numpy(values, np.float64)
    if sample_weight is not None:
        sample_weight = to_numpy(sample_weight, np.float64)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        weight_ndim = sample_weight.ndim
        if values.ndim > weight_ndim:
            values = reduce_fn(values, axis=tuple(range(weight_ndim, values.ndim)))
        sample_weight = np.broadcast_to(sample_weight, values.shape)
        values = values * sample_weight
        if weight_ndim > 1:
            sample_weight = reduce_fn(sample_weight, axis=tuple(range(1, weight_ndim)))
    if values.ndim > 1:
        values = reduce_fn(values, axis=tuple(range(1, values.ndim)))
    return values, sample_weight


class Sum(Metric):
    """The (weighted) sum of all values seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(shape=(), initializer="zeros", dtype=self.dtype, name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = reduce_to_samplewise_values(values, sample_weight, np.sum)
        self.total.assign(self.total.value + np.sum(values))

    def result(self):
        return self._as_result(self.total.value)


class Mean(Metric):
    """The (weighted) mean of all values seen: ``total / count``."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(shape=(), initializer="zeros", dtype=self.dtype, name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", dtype=self.dtype, name="count")

    def update_state(self, values, sample_weight=None):
        if self._float_step(values, sample_weight):
            return
        if getattr(values, "ndim", None) == 0 and (sample_weight is None or getattr(sample_weight, "ndim", 1) == 0
                                                   or type(sample_weight) in (int, float)):
            # One value (a step's loss), weighed by a number or not: the same float64 arithmetic as below, without
            # the reductions and broadcasts over arrays of one element.
            value = to_numpy(values, np.float64)
            if sample_weight is None:
                count = 1
            else:
                count = to_numpy(sample_weight, np.float64)
                value = value * count
            self.total.assign(self.total.value + value)
            self.count.assign(self.count.value + count)
            return
        values, sample_weight = reduce_to_samplewise_values(values, sample_weight, np.mean)
        self.total.assign(self.total.value + np.sum(values))
        if sample_weight is not None:
            count = np.sum(sample_weight)
        else:
            count = values.shape[0] if values.ndim >= 1 else 1
        self.count.assign(self.count.value + count)

    def _float_step(self, values, sample_weight):
        """The update for one float value (an ndarray of shape ()) weighed by a Python int or None, with float
        state (a step's loss into the loss tracker): the float64 arithmetic below done on Python floats, which
        are float64 and convert a float32 exactly. False where it does not apply."""
        if (type(values) is not np.ndarray or values.ndim or values.dtype.kind != "f"
                or not (sample_weight is None or type(sample_weight) is int)):
            return False
        total, count = self.total, self.count
        if total.value.dtype.kind != "f" or count.value.dtype.kind != "f":
            return False
        value = float(values)
        if sample_weight is None:
            sample_weight = 1
        else:
            value = value * float(sample_weight)
        total._assign_scalar(float(total.value) + value)
        count._assign_scalar(float(count.value) + sample_weight)
        return True

    def result(self):
        return self._as_result(divide_no_nan(self.total.value, self.count.value))


def serialize_function(fn):
    """Keras's config of a function: its registered name (else its own) under ``class_name`` "function"."""
    return {"module": "builtins", "class_name": "function", "config": get_registered_name(fn),
            "registered_name": "function"}


class MeanMetricWrapper(Mean):
    """The running mean of a per-sample ``fn(y_true, y_pred, **kwargs)`` (module-level or registered, to save)."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        mask = getattr(y_pred, "_keras_mask", None)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        if mask is not None:
            # As Keras: a mask the prediction carries (a masked sequence model's output) weighs its entries out.
            mask = np.asarray(mask).astype(np.float64)
            if sample_weight is None:
                sample_weight = mask
            else:
                weight = np.asarray(sample_weight, dtype=np.float64)
                while weight.ndim < mask.ndim:
                    weight = weight[..., None]
                while mask.ndim < weight.ndim:
                    mask = mask[..., None]
                sample_weight = weight * mask
        super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        return {**super().get_config(), "fn": serialize_function(self._fn), **self._fn_kwargs}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        fn = config.get("fn")
        if fn is not None and not callable(fn):
            from kgraph.metrics import get_function  # deferred: the package face imports this module
            config["fn"] = get_function(fn if isinstance(fn, str) else fn["config"])
        return cls(**config)


class MeanOfFunction(MeanMetricWrapper):
    """A built-in ``MeanMetricWrapper``: its config is its constructor's arguments, the function is implied."""

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, **self._fn_kwargs}
