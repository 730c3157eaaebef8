"""EinsumDense: a dense layer whose contraction is an einsum equation, with Keras's kernel and bias shapes."""
import re

import numpy as np

from kgraph import activations, constraints, initializers, ops, regularizers
from kgraph.layers.arguments import reject_unsupported, serialize_regularizer
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer

_FORMS = ((r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", None),
          (r"\.\.\.([a-zA-Z]+),([a-zA-Z]+)->\.\.\.([a-zA-Z]+)", "left"),
          (r"([a-zA-Z]{2,})\.\.\.,([a-zA-Z]+)->([a-zA-Z]+)\.\.\.", "right"))


def analyze_equation(equation, bias_axes, input_shape, partial_output_shape):
    """``(kernel_shape, bias_shape or None, output_shape, kernel_input_axes, kernel_output_axes)``."""
    for pattern, elided_side in _FORMS:
        match = re.fullmatch(pattern, equation.replace(" ", ""))
        if match:
            break
    else:
        raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the form [X],[Y]->[Z], "
                         "...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")
    input_spec, weight_spec, output_spec = match.groups()
    rank = len(input_shape)
    elided = rank - len(input_spec)
    if elided < 0 or (elided and elided_side is None):
        raise ValueError(f"Einsum equation '{equation}' names {len(input_spec)} input axes but the input has rank "
                         f"{rank}. Received: input_shape={tuple(input_shape)}")
    output_shape = [input_shape[0]] + list(partial_output_shape)
    if elided_side == "left":
        output_shape[1:1] = list(input_shape[1:elided])
        input_axis = {c: elided + i for i, c in enumerate(input_spec)}
        output_axis = {c: elided + i for i, c in enumerate(output_spec)}
    else:
        output_shape += list(input_shape[rank - elided:])
        input_axis = {c: i for i, c in enumerate(input_spec)}
        output_axis = {c: i for i, c in enumerate(output_spec)}
    expected = len(output_spec) + elided - (len(output_shape) - len(partial_output_shape))
    if expected != len(partial_output_shape):
        raise ValueError(f"Einsum equation '{equation}' on an input of rank {rank} needs an `output_shape` of "
                         f"{expected} sizes (the output axes after the batch, elided ones excluded). Received: "
                         f"output_shape={tuple(partial_output_shape)}")
    for c in input_spec:
        if c in output_axis:
            size_in, size_out = input_shape[input_axis[c]], output_shape[output_axis[c]]
            if size_out is not None and size_in is not None and size_out != size_in:
                raise ValueError(f"Input shape and output shape do not match at shared dimension '{c}'. Input "
                                 f"shape is {size_in}, and output shape is {size_out}.")
            output_shape[output_axis[c]] = size_in if size_out is None else size_out
    for c in output_spec:
        if c not in input_spec and c not in weight_spec:
            raise ValueError(f"Dimension '{c}' was specified in the output '{output_spec}' but has no corresponding "
                             f"dim in the input spec '{input_spec}' or weight spec '{weight_spec}'")
    kernel_shape, kernel_in, kernel_out = [], [], []
    for i, c in enumerate(weight_spec):
        if c in output_axis:
            kernel_shape.append(output_shape[output_axis[c]])
            kernel_out.append(i)
        elif c in input_axis:
            kernel_shape.append(input_shape[input_axis[c]])
            kernel_in.append(i)
        else:
            raise ValueError(f"Weight dimension '{c}' did not have a match in either the input spec "
                             f"'{input_spec}' or the output spec '{output_spec}'. For this layer, the weight must "
                             "be fully specified.")
    bias_shape = None
    if bias_axes is not None:
        for c in bias_axes:
            if c not in output_spec:
                raise ValueError(f"Bias dimension '{c}' was requested, but is not part of the output spec "
                                 f"'{output_spec}'")
        first = min(output_spec.index(c) for c in bias_axes)
        bias_shape = [output_shape[output_axis[c]] if c in bias_axes else 1 for c in output_spec[first:]]
        if elided_side == "right":
            bias_shape += [1] * elided
    return kernel_shape, bias_shape, tuple(output_shape), kernel_in, kernel_out


class _FanShaped:
    """A variance-scaling initializer whose fans are the kernel's input and output axes (as Keras computes them)."""

    def __init__(self, initializer, fan_in, fan_out):
        self.initializer, self.fan_in, self.fan_out = initializer, fan_in, fan_out

    def __call__(self, shape, dtype=None):
        # Variance-scaling draws are independent: a (fan_in, fan_out) draw reshaped has the same distribution.
        return np.reshape(self.initializer((self.fan_in, self.fan_out), dtype=dtype), shape)


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``; ``output_shape`` excludes the batch (and elided) axes.

    ``bias_axes`` names the output letters the bias varies along (e.g. ``"de"``).
    """
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    def __init__(self, equation, output_shape, activation=None, bias_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, lora_rank=None, lora_alpha=None, gptq_unpacked_column_size=None,
                 quantization_config=None, **kwargs):
        super().__init__(**kwargs)
        reject_unsupported(self, lora_rank=lora_rank, lora_alpha=lora_alpha,
                           gptq_unpacked_column_size=gptq_unpacked_column_size,
                           quantization_config=quantization_config)
        if not isinstance(equation, str):
            raise TypeError(f"Layer '{self.name}': `equation` must be a string. Received: equation={equation!r}")
        self.equation = equation
        sizes = (output_shape,) if isinstance(output_shape, (int, np.integer)) or output_shape is None \
            else tuple(output_shape)
        if not all(s is None or (isinstance(s, (int, np.integer)) and s > 0) for s in sizes):
            raise ValueError(f"Layer '{self.name}': `output_shape` must be an int or a tuple of positive ints (or "
                             f"None). Received: output_shape={output_shape!r}")
        self.partial_output_shape = tuple(None if s is None else int(s) for s in sizes)
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.kernel = self.bias = None

    def build(self, input_shape):
        kernel_shape, bias_shape, _, kernel_in, kernel_out = analyze_equation(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape)
        if None in kernel_shape or (bias_shape is not None and None in bias_shape):
            raise ValueError(f"Layer '{self.name}': the kernel shape {kernel_shape} of equation '{self.equation}' "
                             f"has an undefined size. Received: input_shape={tuple(input_shape)}")
        initializer = self.kernel_initializer
        if isinstance(initializer, initializers.VarianceScaling):
            initializer = _FanShaped(initializer, int(np.prod([kernel_shape[i] for i in kernel_in])),
                                     int(np.prod([kernel_shape[i] for i in kernel_out])))
        self.kernel = self.add_weight(shape=kernel_shape, initializer=initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        if bias_shape is not None:
            self.bias = self.add_weight(shape=bias_shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        name="bias")
        self.input_spec = InputSpec(ndim=len(input_shape))
        self.built = True

    def call(self, inputs):
        outputs = ops.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            outputs = ops.add(outputs, self.bias)
        return self.activation(outputs)

    def compute_output_shape(self, input_shape):
        return analyze_equation(self.equation, self.bias_axes, input_shape, self.partial_output_shape)[2]

    def get_config(self):
        config = super().get_config()
        config.update({
            "output_shape": self.partial_output_shape, "equation": self.equation,
            "activation": activations.serialize(self.activation), "bias_axes": self.bias_axes,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "quantization_config": None,  # quantized layers are refused at construction
        })
        return config
