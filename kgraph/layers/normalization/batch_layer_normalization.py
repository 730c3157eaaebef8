"""Normalization layers: BatchNormalization and LayerNormalization, with Keras's weights and semantics."""
import numpy as np

from kgraph import constraints, initializers, ops, regularizers
from kgraph.layers.arguments import reject_unsupported, serialize_regularizer
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.ops.math import _no_gradient as no_gradient


@no_gradient
def _moving_statistic(moving, batch, momentum):
    """A moving statistic's new value: ``moving * momentum + batch * (1 - momentum)``."""
    return moving * momentum + batch * (1.0 - momentum)


def _check_axis(layer, axis, rank):
    if not -rank <= axis < rank:
        raise ValueError(f"Layer '{layer.name}': axis {axis} is out of bounds for input of rank {rank}. "
                         f"Received: axis={layer.axis}")
    return axis % rank


class BatchNormalization(Layer):
    """Normalizes ``axis`` with batch statistics in training and moving statistics in inference.

    Weights, in Keras's order: ``gamma``, ``beta`` (trainable, if ``scale`` /
    ``center``), ``moving_mean``, ``moving_variance``. A call with
    ``training=True`` on a trainable layer normalizes with the batch mean and
    biased variance and updates
    ``moving = moving * momentum + batch_statistic * (1 - momentum)``; any
    other call (or a layer with ``trainable=False``) uses the moving
    statistics and changes nothing.
    """

    _masking = True

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, synchronized=False, **kwargs):
        super().__init__(**kwargs)
        # Without renorm, Keras ignores renorm_clipping and renorm_momentum too.
        reject_unsupported(self, allowed=(False,), renorm=renorm)
        if synchronized:
            raise ValueError(f"Layer '{self.name}': `synchronized=True` needs a distributed TensorFlow strategy; "
                             "kgraph runs on one device. Expected synchronized=False.")
        if isinstance(axis, (list, tuple)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"Layer '{self.name}': expected an int for the argument 'axis'. Received: axis={axis!r}")
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        rank = len(input_shape)
        axis = _check_axis(self, self.axis, rank)
        size = input_shape[axis]
        if size is None:
            raise ValueError(f"Layer '{self.name}': axis {self.axis} of the input shape must be defined. "
                             f"Received: input_shape={tuple(input_shape)}")
        shape = (size,)
        if self.scale:
            self.gamma = self.add_weight(shape=shape, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                         name="gamma")
        if self.center:
            self.beta = self.add_weight(shape=shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                        name="beta")
        self.moving_mean = self.add_weight(shape=shape, initializer=self.moving_mean_initializer, trainable=False,
                                           name="moving_mean")
        self.moving_variance = self.add_weight(shape=shape, initializer=self.moving_variance_initializer,
                                               trainable=False, name="moving_variance")
        self.input_spec = InputSpec(ndim=rank, axes={self.axis: size})
        self.built = True

    def call(self, inputs, training=None):
        axis = self.axis % np.ndim(inputs)
        if training and self.trainable:
            reduction = tuple(i for i in range(np.ndim(inputs)) if i != axis)
            mean, variance = ops.moments(inputs, reduction)
            # The moving statistics are state, not a function of the weights: an op without a gradient keeps
            # them off the gradient tape (and in a replayed training step, kgraph.trainers.replay).
            self.moving_mean.assign(_moving_statistic(self.moving_mean.value, mean, momentum=self.momentum))
            self.moving_variance.assign(_moving_statistic(self.moving_variance.value, variance,
                                                          momentum=self.momentum))
        else:
            mean, variance = self.moving_mean, self.moving_variance
        return ops.batch_normalization(inputs, mean, variance, axis, offset=self.beta, scale=self.gamma,
                                       epsilon=self.epsilon)

    def compute_output_shape(self, input_shape):
        _check_axis(self, self.axis, len(input_shape))
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon, "center": self.center,
            "scale": self.scale, "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
            "moving_variance_initializer": initializers.serialize(self.moving_variance_initializer),
            "beta_regularizer": serialize_regularizer(self.beta_regularizer),
            "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
            "beta_constraint": constraints.serialize(self.beta_constraint),
            "gamma_constraint": constraints.serialize(self.gamma_constraint),
        })
        return config


class LayerNormalization(Layer):
    """Normalizes each example over ``axis`` (an int or a list of ints), then applies ``gamma`` and ``beta``.

    ``gamma`` and ``beta`` have shape ``tuple(input_shape[a] for a in sorted(axis))``, as in Keras.
    """

    _masking = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        # Keras's deprecated rms_scaling=True (variance, not RMS, scaling) is not implemented.
        rms_scaling = kwargs.pop("rms_scaling", False)
        super().__init__(**kwargs)
        reject_unsupported(self, allowed=(False,), rms_scaling=rms_scaling)
        if isinstance(axis, (list, tuple)) and all(isinstance(a, (int, np.integer)) for a in axis) and axis:
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            self.axis = int(axis)
        else:
            raise TypeError(f"Expected an int or a list/tuple of ints for the argument 'axis', but received: "
                            f"{axis!r}")
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.gamma = self.beta = None

    @property
    def axes(self):
        """The normalized axes as a sorted list (Keras's order for the weight shape)."""
        return sorted(self.axis) if isinstance(self.axis, list) else [self.axis]

    def build(self, input_shape):
        rank = len(input_shape)
        for a in self.axes:
            _check_axis(self, a, rank)
        if len({a % rank for a in self.axes}) != len(self.axes):
            raise ValueError(f"Layer '{self.name}': duplicate axes in axis={self.axis} for input of rank {rank}.")
        shape = tuple(input_shape[a] for a in self.axes)
        if None in shape:
            raise ValueError(f"Layer '{self.name}': the normalized axes {self.axis} of the input shape must be "
                             f"defined. Received: input_shape={tuple(input_shape)}")
        if self.scale:
            self.gamma = self.add_weight(shape=shape, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                         name="gamma")
        if self.center:
            self.beta = self.add_weight(shape=shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                        name="beta")
        self.built = True

    def call(self, inputs):
        return ops.layer_normalization(inputs, self.gamma, self.beta, axis=self.axes, epsilon=self.epsilon)

    def compute_output_shape(self, input_shape):
        for a in self.axes:
            _check_axis(self, a, len(input_shape))
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": self.axis, "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
            "beta_initializer": initializers.serialize(self.beta_initializer),
            "gamma_initializer": initializers.serialize(self.gamma_initializer),
            "beta_regularizer": serialize_regularizer(self.beta_regularizer),
            "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
            "beta_constraint": constraints.serialize(self.beta_constraint),
            "gamma_constraint": constraints.serialize(self.gamma_constraint),
        })
        return config
