"""Numeric preprocessing layers: Normalization, Discretization and CategoryEncoding (with their ``adapt``)."""
import itertools
import math

import numpy as np

from kgraph import backend, ops
from kgraph.backend.autodiff import no_cotangent, primitive
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.layer import Layer
from kgraph.trainers.py_dataset import PyDataset

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count")


def validate_output_mode(layer_name, output_mode, allowed):
    """Keras's check of a string argument ``output_mode``."""
    if output_mode not in allowed:
        raise ValueError(f"Unknown value for `output_mode` argument of layer {layer_name}. "
                         f"Allowed values are: {list(allowed)}. Received: output_mode={output_mode!r}")


def encoded_shape(input_shape, output_mode, depth):
    """The output shape of ``encode_categorical`` for ``input_shape`` (Keras's rules)."""
    input_shape = tuple(input_shape)
    if output_mode == "int":
        return input_shape
    if output_mode == "one_hot":
        if len(input_shape) > 1 and input_shape[-1] == 1:
            return input_shape[:-1] + (depth,)
        return input_shape + (depth,)
    if len(input_shape) >= 2:
        return (input_shape[0],) + input_shape[2:] + (depth,)
    return (depth,)


def encode_categorical(indices, output_mode, depth, dtype):
    """Integer indices as ``int`` (cast), ``one_hot``, ``multi_hot`` or ``count`` vectors of size ``depth``."""
    if output_mode == "int":
        return ops.cast(indices, dtype)
    if len(indices.shape) == 0:
        indices = ops.expand_dims(indices, -1)
    if output_mode == "one_hot":
        if len(indices.shape) > 1 and indices.shape[-1] == 1:
            indices = ops.squeeze(indices, -1)
        return ops.one_hot(indices, depth, dtype=dtype)
    encoded = ops.one_hot(indices, depth, dtype=dtype)
    axis = 1 if len(indices.shape) > 1 else 0
    return ops.max(encoded, axis=axis) if output_mode == "multi_hot" else ops.sum(encoded, axis=axis)


def check_indices(layer, indices, depth):
    """``indices`` after Keras's range check of an encoding layer's integer inputs (skipped for symbolic inputs):
    an op, so that a replayed training step checks every batch."""
    if isinstance(indices, KerasTensor):
        return indices
    return _checked_indices(indices, depth, layer.name)


@primitive(num_inputs=1)
def _checked_indices(indices, depth, name):
    values = np.asarray(indices)
    if values.size and (values.min() < 0 or values.max() >= depth):
        raise ValueError(f"Input values of layer '{name}' must be in the range 0 <= values < "
                         f"num_tokens with num_tokens={depth}. Received: min={values.min()}, max={values.max()}")
    return values, no_cotangent


def batches_of(data, batch_size=None, steps=None):
    """The batches ``adapt`` reads, each once.

    An array is one batch (or its ``batch_size`` slices); an iterable or a PyDataset gives its first ``steps``
    batches (of ``(x, y)`` batches, only ``x`` is read).
    """
    if isinstance(data, (list, tuple)) and data and not isinstance(data[0], (np.ndarray, list, tuple)):
        data = np.asarray(data)
    if isinstance(data, np.ndarray):
        if batch_size is None:
            return iter([data])
        data = [data[i:i + batch_size] for i in range(0, len(data), batch_size)]
    elif isinstance(data, PyDataset):
        dataset = data
        data = (dataset[i] for i in (range(dataset.num_batches) if dataset.num_batches is not None
                                     else itertools.count()))
    elif not hasattr(data, "__iter__"):
        raise TypeError(f"Unsupported data type: {type(data)}. `adapt` supports NumPy arrays, "
                        "`kgraph.utils.PyDataset`, and iterables of batches (e.g. a list of arrays or a generator "
                        "yielding batches).")
    batches = (b[0] if isinstance(b, tuple) else b for b in data)
    return itertools.islice(batches, steps) if steps is not None else iter(batches)


class Normalization(Layer):
    """``(inputs - mean) / sqrt(variance)`` per position of ``axis``; ``adapt`` learns mean and variance."""

    _masking = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        self.axis = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        if (mean is not None) != (variance is not None):
            raise ValueError("When setting values directly, both `mean` and `variance` must be set. "
                             f"Received: mean={mean} and variance={variance}")
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError("When setting values directly, `mean` and `variance` must have the same shape. "
                                 f"Received: mean shape {np.shape(mean)} and variance shape {np.shape(variance)}")
            if len(np.shape(mean)) > len(self.axis):
                raise ValueError(f"The rank of `mean` must be less than or equal to the number of axes "
                                 f"({len(self.axis)}). Received: mean shape {np.shape(mean)} for axis {self.axis}")
        self.input_mean = mean
        self.input_variance = variance
        self.invert = bool(invert)

    def build(self, input_shape):
        ndim = len(input_shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError(f"All `axis` values must be in the range [-ndim, ndim). Received inputs with "
                             f"ndim={ndim}, while axis={self.axis}")
        self._keep_axis = tuple(sorted(a % ndim for a in self.axis))
        for d in self._keep_axis:
            if input_shape[d] is None:
                raise ValueError(f"All `axis` values to be kept must have a known shape. Received "
                                 f"axis={self.axis}, inputs.shape={tuple(input_shape)}, with unknown axis at index {d}")
        self._reduce_axis = tuple(d for d in range(ndim) if d not in self._keep_axis)
        self._broadcast_shape = tuple(input_shape[d] if d in self._keep_axis else 1 for d in range(ndim))
        self._mean_and_var_shape = tuple(input_shape[d] for d in self._keep_axis)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(self._mean_and_var_shape, "zeros", trainable=False, name="mean")
            self.adapt_variance = self.add_weight(self._mean_and_var_shape, "ones", trainable=False,
                                                  name="variance")
            self.count = self.add_weight((), "zeros", dtype="int64", trainable=False, name="count")
        else:
            self._constants = [self._broadcast(np.asarray(v, dtype=np.float64))
                               for v in (self.input_mean, self.input_variance)]
        self.built = True

    def _broadcast(self, value):
        if value.ndim:
            shape = [1] * len(self._broadcast_shape)
            for i in range(1, value.ndim + 1):
                shape[self._keep_axis[-i]] = value.shape[-i]
            value = value.reshape(shape)
        return np.broadcast_to(value, self._broadcast_shape).astype(self.compute_dtype)

    def adapt(self, data, batch_size=None, steps=None):
        """Compute the mean and variance of ``data`` (an array or an iterable of batches), streaming."""
        batches = batches_of(data, batch_size, steps)
        first = next(batches, None)
        if first is None:
            raise ValueError("adapt() received an empty iterable (no batches). Expected at least one batch.")
        first = np.asarray(first)
        if not self.built:
            self.build(first.shape)
            self._build_input_shape = tuple(first.shape)
        if self.input_mean is not None:
            raise ValueError(f"Layer '{self.name}' was given `mean` and `variance`; it cannot be adapted.")
        total_mean = total_var = np.zeros(self._mean_and_var_shape)
        total_count = 0
        for batch in itertools.chain([first], batches):
            batch = np.asarray(batch, dtype=np.float64)
            if batch.ndim != len(self._broadcast_shape) or any(
                    batch.shape[d] != self._broadcast_shape[d] for d in self._keep_axis):
                raise ValueError(f"adapt() yielded a batch with incompatible shape. Expected "
                                 f"{tuple(self._build_input_shape)}, got {batch.shape}.")
            count = math.prod(batch.shape[d] for d in self._reduce_axis)
            mean, var = batch.mean(axis=self._reduce_axis), batch.var(axis=self._reduce_axis)
            total_count += count
            weight = count / total_count
            new_mean = total_mean * (1 - weight) + mean * weight
            total_var = ((total_var + (total_mean - new_mean) ** 2) * (1 - weight)
                         + (var + (mean - new_mean) ** 2) * weight)
            total_mean = new_mean
        self.adapt_mean.assign(total_mean)
        self.adapt_variance.assign(total_var)
        # `count` stays as it is (0): Keras 3 keeps the weight for its file layout and never assigns it in adapt.

    @property
    def mean(self):
        """The mean in the inputs' broadcast shape (Keras's ``mean``): None before the layer is built."""
        return self._statistics()[0] if self.built else None

    @property
    def variance(self):
        """The variance in the inputs' broadcast shape (Keras's ``variance``): None before the layer is built."""
        return self._statistics()[1] if self.built else None

    def _statistics(self):
        if self.input_mean is not None:
            return self._constants
        return [ops.cast(ops.reshape(v, self._broadcast_shape), self.compute_dtype)
                for v in (self.adapt_mean, self.adapt_variance)]

    def call(self, inputs):
        mean, variance = self._statistics()
        inputs = ops.cast(inputs, self.compute_dtype)
        std = ops.maximum(ops.sqrt(variance), np.asarray(backend.epsilon(), self.compute_dtype))
        if self.invert:
            return ops.add(mean, ops.multiply(inputs, std))
        return ops.divide(ops.subtract(inputs, mean), std)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"axis": self.axis, "invert": self.invert,
                       "mean": np.array(self.input_mean).tolist(), "variance": np.array(self.input_variance).tolist()})
        return config


class Discretization(Layer):
    """Buckets inputs by ``bin_boundaries`` (or ``num_bins`` quantiles learnt by ``adapt``)."""

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False,
                 dtype=None, name=None, **kwargs):
        super().__init__(dtype=dtype, name=name, **kwargs)
        if sparse:
            raise ValueError("`sparse=True` cannot be used with kgraph, which has no sparse tensors. "
                             f"Received: sparse={sparse}")
        validate_output_mode(type(self).__name__, output_mode, OUTPUT_MODES)
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"`num_bins` must be greater than or equal to 0. Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError("Both `num_bins` and `bin_boundaries` should not be set. "
                             f"Received: `num_bins={num_bins}` and `bin_boundaries={bin_boundaries}`")
        if num_bins is None and bin_boundaries is None:
            raise ValueError("You need to set either `num_bins` or `bin_boundaries`.")
        self.bin_boundaries = list(bin_boundaries) if bin_boundaries is not None else None
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = sparse

    @property
    def output_dtype(self):
        return "int32" if self.output_mode == "int" else self.compute_dtype

    def adapt(self, data, batch_size=None, steps=None):
        """Learn ``num_bins`` quantile boundaries of ``data`` (an array or an iterable of batches)."""
        if self.num_bins is None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized with "
                             "`bin_boundaries`, use `num_bins` instead.")
        summary = np.zeros((2, 0), dtype=np.float32)
        for batch in batches_of(data, batch_size, steps):
            summary = _merge_summaries(_summarize(np.asarray(batch, np.float32), self.epsilon), summary,
                                       self.epsilon)
        self.bin_boundaries = _compress_summary(summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise ValueError("You need to either pass the `bin_boundaries` argument at construction time or "
                             "call `adapt(dataset)` before you can start using the `Discretization` layer.")
        boundaries = np.asarray(self.bin_boundaries, dtype=self.compute_dtype)
        above = ops.greater_equal(ops.expand_dims(ops.cast(inputs, self.compute_dtype), -1), boundaries)
        indices = ops.sum(ops.cast(above, "int32"), axis=-1)
        return encode_categorical(indices, self.output_mode, len(boundaries) + 1, self.output_dtype)

    def compute_output_shape(self, input_shape):
        depth = len(self.bin_boundaries) + 1 if self.bin_boundaries is not None else self.num_bins
        return encoded_shape(input_shape, self.output_mode, depth)

    def compute_output_spec(self, inputs):
        return KerasTensor(self.compute_output_shape(inputs.shape), dtype=self.output_dtype, name=self.name)

    def get_config(self):
        config = super().get_config()
        config.update({"bin_boundaries": self.bin_boundaries, "num_bins": self.num_bins, "epsilon": self.epsilon,
                       "output_mode": self.output_mode, "sparse": self.sparse})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("bin_boundaries") is not None and config.get("num_bins") is not None:
            boundaries = config.pop("bin_boundaries")
            layer = cls(**config)
            layer.bin_boundaries = boundaries
            return layer
        return cls(**config)


def _summarize(values, epsilon):
    """A weighted summary of ``values``: about ``1 / epsilon`` sorted values, each with the count it stands for."""
    values = np.sort(values.reshape(-1))
    step = max(values.size * epsilon, 1)
    boundaries = values[int(step - 1)::int(step)]
    return np.stack([boundaries, np.full_like(boundaries, step)])


def _merge_summaries(first, second, epsilon):
    merged = np.concatenate((first, second), axis=1)
    return _compress_summary(merged[:, np.argsort(merged[0], kind="stable")], epsilon)


def _compress_summary(summary, epsilon):
    """Resample a summary at cumulative-weight fractions ``epsilon, 2 epsilon, ..., 1`` (by interpolation)."""
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum_weights = summary[1].cumsum()
    fractions = cum_weights / cum_weights[-1]
    bins = np.interp(percents, fractions, summary[0])
    cum_weights = np.interp(percents, fractions, cum_weights)
    return np.stack((bins, np.diff(cum_weights, prepend=0.0))).astype(np.float32)


class CategoryEncoding(Layer):
    """Integer inputs in ``[0, num_tokens)`` as ``multi_hot``, ``one_hot`` or ``count`` vectors."""

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        validate_output_mode(type(self).__name__, output_mode, ("one_hot", "multi_hot", "count"))
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens is not known "
                             "beforehand, use the IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        if sparse:
            raise ValueError("`sparse=True` cannot be used with kgraph, which has no sparse tensors. "
                             f"Received: sparse={sparse}")
        self.num_tokens = int(num_tokens)
        self.output_mode = output_mode
        self.sparse = sparse

    def call(self, inputs, count_weights=None):
        inputs = check_indices(self, inputs, self.num_tokens)
        if count_weights is not None:
            if self.output_mode != "count":
                raise ValueError("`count_weights` is not used when `output_mode` is not `'count'`. "
                                 f"Received `count_weights={count_weights}`.")
            encoded = ops.one_hot(inputs, self.num_tokens, dtype=self.compute_dtype)
            weighted = ops.multiply(encoded, ops.expand_dims(ops.cast(count_weights, self.compute_dtype), -1))
            return ops.sum(weighted, axis=1 if len(inputs.shape) > 1 else 0)
        return encode_categorical(inputs, self.output_mode, self.num_tokens, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return encoded_shape(input_shape, self.output_mode, self.num_tokens)

    def get_config(self):
        config = super().get_config()
        config.update({"num_tokens": self.num_tokens, "output_mode": self.output_mode})
        return config
