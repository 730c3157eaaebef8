"""Normalization layers without running statistics: UnitNormalization, GroupNormalization, RMSNormalization."""
import numpy as np

from kgraph import constraints, initializers, ops, regularizers
from kgraph.layers.arguments import serialize_regularizer
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer


def _axis_argument(axis):
    """``axis`` as an int or a non-empty list of ints, or a TypeError in Keras's words."""
    if isinstance(axis, (list, tuple)) and axis and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis):
        return [int(a) for a in axis]
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return int(axis)
    raise TypeError("Invalid value for `axis` argument: expected an int or a list/tuple of ints. "
                    f"Received: axis={axis}")


def _checked_axes(layer, input_shape):
    """The layer's axes as sorted non-negative ints, after Keras's bounds check."""
    rank = len(input_shape)
    axes = layer.axis if isinstance(layer.axis, list) else [layer.axis]
    for a in axes:
        if a >= rank or a < -rank:
            raise ValueError(f"Axis {a} is out of bounds for input shape {tuple(input_shape)}. "
                             f"Received: axis={layer.axis}")
    return sorted({a % rank for a in axes})


class UnitNormalization(Layer):
    """Scales each example to unit L2 norm over ``axis``: ``x / max(||x||, 1e-12)``."""

    _preserves_dtype = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = _axis_argument(axis)
        self.supports_masking = True

    def call(self, inputs):
        axes = tuple(_checked_axes(self, inputs.shape))
        # x / max(||x||, 1e-12), written so that an all-zero row has a zero gradient rather than 0 * inf.
        square_norm = ops.sum(ops.square(inputs), axis=axes, keepdims=True)
        return ops.multiply(inputs, ops.rsqrt(ops.maximum(square_norm, 1e-24)))

    def compute_output_shape(self, input_shape):
        _checked_axes(self, input_shape)
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class GroupNormalization(Layer):
    """Normalizes each example over groups of ``groups`` channels on ``axis`` (and all other non-batch axes).

    ``groups=-1`` is instance normalization (one channel per group). Weights, in
    Keras's order: ``gamma`` then ``beta``, each of shape ``(channels,)``.
    """

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) or (groups <= 0 and groups != -1):
            raise ValueError("Received an invalid value for argument `groups`, expected a positive integer (or `-1` "
                             f"for instance normalization). Received: groups={groups}")
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"Layer '{self.name}': expected an int for the argument 'axis'. Received: axis={axis!r}")
        self.groups = int(groups)
        self.axis = int(axis)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.supports_masking = True
        self.gamma = self.beta = None

    def build(self, input_shape):
        axis = _checked_axes(self, input_shape)[0]
        if axis == 0:
            raise ValueError(f"Layer '{self.name}': axis {self.axis} is the batch axis; expected a channel axis.")
        dim = input_shape[axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension but the layer "
                             f"received an input with shape {tuple(input_shape)}.")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number of channels ({dim}).")
        if dim % self.groups:
            raise ValueError(f"The number of channels ({dim}) must be a multiple of the number of groups "
                             f"({self.groups}).")
        self.input_spec = InputSpec(ndim=len(input_shape), axes={self.axis: dim})
        if self.scale:
            self.gamma = self.add_weight(shape=(dim,), initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                         name="gamma")
        if self.center:
            self.beta = self.add_weight(shape=(dim,), initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                        name="beta")
        self.built = True

    def call(self, inputs):
        rank = len(inputs.shape)
        axis = self.axis % rank
        channels = inputs.shape[axis]
        reduce = tuple(i for i in range(1, rank) if i != axis)
        # Group statistics without reshaping (so unknown spatial sizes stay unknown): per-channel means over the
        # other axes, averaged within each group by a block matrix, in two passes for an exact variance.
        size = channels // self.groups
        group_average = np.kron(np.eye(self.groups), np.full((size, size), 1.0 / size)).astype(inputs.dtype)
        broadcast = tuple(channels if i == axis else 1 for i in range(1, rank))

        def group_mean(x):
            per_channel = ops.mean(x, axis=reduce) if reduce else x
            return ops.reshape(ops.matmul(per_channel, group_average), (-1,) + broadcast)

        centered = ops.subtract(inputs, group_mean(inputs))
        inverse_std = ops.rsqrt(ops.add(group_mean(ops.square(centered)), self.epsilon))
        if self.gamma is not None:
            inverse_std = ops.multiply(inverse_std, ops.reshape(self.gamma, broadcast))
        outputs = ops.multiply(centered, inverse_std)
        return outputs if self.beta is None else ops.add(outputs, ops.reshape(self.beta, broadcast))

    def compute_output_shape(self, input_shape):
        _checked_axes(self, input_shape)
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "groups": self.groups, "axis": self.axis, "epsilon": self.epsilon, "center": self.center,
            "scale": self.scale, "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "beta_regularizer": serialize_regularizer(self.beta_regularizer),
            "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
            "beta_constraint": constraints.serialize(self.beta_constraint),
            "gamma_constraint": constraints.serialize(self.gamma_constraint),
        })
        return config


class RMSNormalization(Layer):
    """``x * rsqrt(mean(x**2 over axis) + epsilon) * scale``; ``scale`` has the shape of the normalized axes."""

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis = _axis_argument(axis)
        self.epsilon = float(epsilon)
        self.scale = None

    def build(self, input_shape):
        axes = _checked_axes(self, input_shape)
        shape = tuple(input_shape[a] for a in axes)
        if None in shape or 0 in axes:
            raise ValueError(f"Layer '{self.name}': the normalized axes {self.axis} must be defined non-batch axes. "
                             f"Received: input_shape={tuple(input_shape)}")
        self.scale = self.add_weight(shape=shape, initializer="ones", name="scale")
        self.built = True

    def call(self, inputs):
        rank = len(inputs.shape)
        axes = _checked_axes(self, inputs.shape)
        mean_square = ops.mean(ops.square(inputs), axis=tuple(axes), keepdims=True)
        outputs = ops.multiply(inputs, ops.rsqrt(ops.add(mean_square, self.epsilon)))
        broadcast = tuple(inputs.shape[i] if i in axes else 1 for i in range(axes[0], rank))
        return ops.multiply(outputs, ops.reshape(self.scale, broadcast))

    def compute_output_shape(self, input_shape):
        _checked_axes(self, input_shape)
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"axis": self.axis, "epsilon": self.epsilon})
        return config
