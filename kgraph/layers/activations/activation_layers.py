"""Activation layers with arguments: ReLU, LeakyReLU, PReLU, ELU, Softmax."""
import warnings

import numpy as np

from kgraph import constraints, initializers, ops, regularizers
from kgraph.layers.arguments import serialize_regularizer
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


class _Elementwise(Layer):
    """A layer whose output has its input's shape and dtype."""

    _preserves_dtype = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class ReLU(_Elementwise):
    """``max_value``-capped rectifier: ``x`` above ``threshold``, ``negative_slope * (x - threshold)`` below."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and (not _is_number(max_value) or max_value < 0.0):
            raise ValueError(f"max_value of a ReLU layer cannot be a negative value. Received: max_value={max_value}")
        if not _is_number(negative_slope) or negative_slope < 0.0:
            raise ValueError("negative_slope of a ReLU layer cannot be None or a negative value. "
                             f"Received: negative_slope={negative_slope}")
        if not _is_number(threshold) or threshold < 0.0:
            raise ValueError("threshold of a ReLU layer cannot be None or a negative value. "
                             f"Received: threshold={threshold}")
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        slope, threshold, cap = self.negative_slope, self.threshold, self.max_value
        if slope == 0.0 and threshold == 0.0:
            if cap is None:
                return ops.relu(inputs)
            return ops.relu6(inputs) if cap == 6.0 else ops.clip(inputs, 0.0, cap)
        # Keras's rule: x where x > threshold (capped at max_value), else negative_slope * (x - threshold).
        positive = inputs if cap is None else ops.minimum(inputs, cap)
        negative = ops.multiply(ops.subtract(inputs, threshold), slope)
        return ops.where(ops.greater(inputs, threshold), positive, negative)

    def get_config(self):
        config = super().get_config()
        config.update({"max_value": self.max_value, "negative_slope": self.negative_slope,
                       "threshold": self.threshold})
        return config


class LeakyReLU(_Elementwise):
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise."""

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:  # Keras's deprecated name of the argument
            negative_slope = kwargs.pop("alpha")
            warnings.warn("Argument `alpha` is deprecated. Use `negative_slope` instead.", stacklevel=2)
        super().__init__(**kwargs)
        if not _is_number(negative_slope) or negative_slope < 0:
            raise ValueError("The negative_slope value of a Leaky ReLU layer cannot be None or negative value. "
                             f"Expected a float. Received: negative_slope={negative_slope}")
        self.negative_slope = float(negative_slope)

    def call(self, inputs):
        return ops.leaky_relu(inputs, negative_slope=self.negative_slope)

    def get_config(self):
        config = super().get_config()
        config["negative_slope"] = self.negative_slope
        return config


class PReLU(_Elementwise):
    """Leaky rectifier with a learned slope ``alpha`` of shape ``input_shape[1:]`` (1 on ``shared_axes``)."""

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = list(shared_axes) if isinstance(shared_axes, (list, tuple)) else [shared_axes]
            if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) and a >= 1 for a in axes):
                raise ValueError(f"Layer '{self.name}': `shared_axes` must be positive axis indices (axis 0 is the "
                                 f"batch). Received: shared_axes={shared_axes!r}")
            self.shared_axes = [int(a) for a in axes]
        self.alpha = None

    def build(self, input_shape):
        rank = len(input_shape)
        shared = set(self.shared_axes or ())
        if any(a >= rank for a in shared):
            raise ValueError(f"Layer '{self.name}': shared_axes={self.shared_axes} is out of bounds for an input of "
                             f"rank {rank}. Received: input_shape={tuple(input_shape)}")
        shape = tuple(1 if i in shared else input_shape[i] for i in range(1, rank))
        if None in shape:
            raise ValueError(f"Layer '{self.name}': the non-shared axes of the input must be defined. "
                             f"Received: input_shape={tuple(input_shape)}, shared_axes={self.shared_axes}")
        self.alpha = self.add_weight(shape=shape, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer, constraint=self.alpha_constraint,
                                     name="alpha")
        self.input_spec = InputSpec(ndim=rank, axes={i: input_shape[i] for i in range(1, rank) if i not in shared})
        self.built = True

    def call(self, inputs):
        return ops.subtract(ops.relu(inputs), ops.multiply(self.alpha, ops.relu(ops.negative(inputs))))

    def get_config(self):
        config = super().get_config()
        config.update({"alpha_initializer": initializers.serialize(self.alpha_initializer),
                       "alpha_regularizer": serialize_regularizer(self.alpha_regularizer),
                       "alpha_constraint": constraints.serialize(self.alpha_constraint),
                       "shared_axes": self.shared_axes})
        return config


class ELU(_Elementwise):
    """``x`` for ``x >= 0``, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        if not _is_number(alpha):
            raise ValueError(f"alpha of an ELU layer must be a number. Received: alpha={alpha!r}")
        self.alpha = float(alpha)

    def call(self, inputs):
        return ops.elu(inputs, alpha=self.alpha)

    def get_config(self):
        config = super().get_config()
        config["alpha"] = self.alpha
        return config


def large_negative_number(dtype):
    """The fill value Keras gives masked logits: one that ``exp`` turns into 0 without overflow."""
    return -3e4 if np.dtype(dtype) == np.float16 else -1e9


class Softmax(_Elementwise):
    """Softmax over ``axis`` (an int or a list of ints); ``mask`` (call argument) zeroes masked positions."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)) and axis and all(isinstance(a, (int, np.integer)) for a in axis):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            self.axis = int(axis)
        else:
            raise TypeError(f"Expected an int or a list/tuple of ints for the argument 'axis'. Received: axis={axis!r}")

    def call(self, inputs, mask=None):
        if mask is not None:
            self._check_mask(tuple(inputs.shape), tuple(mask.shape))
            if np.dtype(mask.dtype) != np.bool_:
                mask = ops.greater(mask, 0.5)
            inputs = ops.where(mask, inputs, large_negative_number(inputs.dtype))
        if isinstance(self.axis, list) and len(self.axis) > 1:
            outputs = ops.exp(ops.subtract(inputs, ops.logsumexp(inputs, axis=self.axis, keepdims=True)))
        else:
            outputs = ops.softmax(inputs, axis=self.axis[0] if isinstance(self.axis, list) else self.axis)
        return outputs if mask is None else ops.where(mask, outputs, 0.0)

    @staticmethod
    def _check_mask(input_shape, mask_shape):
        if len(mask_shape) > len(input_shape) or any(
                m is not None and i is not None and m not in (1, i)
                for m, i in zip(reversed(mask_shape), reversed(input_shape))):
            raise ValueError("The `mask` must be broadcastable to `inputs`. Each mask dimension must be 1 or match "
                             f"the corresponding input dimension. Received: inputs.shape={tuple(input_shape)}, "
                             f"mask.shape={tuple(mask_shape)}")

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config
