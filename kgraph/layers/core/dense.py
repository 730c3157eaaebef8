"""Dense: ``activation(inputs @ kernel + bias)`` with Keras's arguments and weights."""
import numpy as np

from kgraph import activations, constraints, initializers, ops, regularizers
from kgraph.backend.autocast import _autocast
from kgraph.layers.arguments import reject_unsupported
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.layers.own_variables import assign_own
from kgraph.ops.nn import dense_activation, relu, sigmoid, softmax

# The activations a Dense layer's step records with its product as one op (``ops.nn.dense_activation``): each
# calls exactly this primitive, with its defaults.
_FUSED_ACTIVATIONS = {activations.relu: relu, activations.sigmoid: sigmoid, activations.tanh: ops.tanh,
                      activations.softmax: softmax}


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` on the last axis; kernel shape (input_dim, units)."""

    _masking = True

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, lora_rank=None,
                 lora_alpha=None, quantization_config=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        reject_unsupported(self, lora_rank=lora_rank, lora_alpha=lora_alpha, quantization_config=quantization_config)
        if not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. "
                             f"Received: units={units}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer) if kernel_regularizer else None
        self.bias_regularizer = regularizers.get(bias_regularizer) if bias_regularizer else None
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(f"The last dimension of the inputs to Dense layer '{self.name}' must be defined. "
                             f"Received: input_shape={input_shape}")
        self.kernel = self.add_weight(shape=(input_dim, self.units), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.bias = self.add_weight(shape=(self.units,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: input_dim})
        self.built = True

    def call(self, inputs):
        return self.activation(ops.dense(inputs, self.kernel, self.bias))

    def _direct_call(self, x):
        """``call(x)`` as a Functional model's step runs it, without the generic layer call's work where none of
        it applies: an exact Dense (whose ``call`` no one replaced), built, with a built-in activation, no
        activity regularizer or mixed policy, on an array of its dtype and input width that carries no mask (no
        conversion, build, input check, mask or loss to attend to; its name scope only names new variables).
        None otherwise: the caller makes the full call. About 7 µs less per layer call, at every training step."""
        if type(self) is not Dense or "call" in self.__dict__ or not self.built \
                or self.activity_regularizer is not None or self.__dict__.get("_mixed_compute") is not None \
                or _autocast.__dict__.get("dtype") is not None \
                or getattr(self.activation, "__module__", None) != activations.__name__:
            return None
        if not isinstance(x, np.ndarray) or x.dtype != self.dtype or x.ndim < 2 \
                or x.shape[-1] != self.kernel.shape[0] or getattr(x, "_keras_mask", None) is not None:
            return None
        fused = _FUSED_ACTIVATIONS.get(self.activation)
        if fused is not None:
            return dense_activation(x, self.kernel, self.bias, fused)
        return self.activation(ops.dense(x, self.kernel, self.bias))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def save_own_variables(self, store):
        """As Keras's Dense: the kernel under ``"0"`` and the bias (if any) under ``"1"``, nothing else."""
        if self.built:
            for i, variable in enumerate(self._serialized_variables()):
                store[str(i)] = variable.numpy()

    def load_own_variables(self, store):
        if self.built:
            assign_own(self, self._serialized_variables(), store, exact=False)

    def _serialized_variables(self):
        return [self.kernel] + ([self.bias] if self.bias is not None else [])

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer) if self.kernel_regularizer else None,
            "bias_regularizer": regularizers.serialize(self.bias_regularizer) if self.bias_regularizer else None,
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "quantization_config": None,  # quantized layers are refused at construction
        })
        return config
