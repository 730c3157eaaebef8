"""Elementwise activations for fused recurrent ops: forward into a buffer, derivative from the output."""
import numpy as np


def _sigmoid(x, out):
    # 0.5 * tanh(x / 2) + 0.5 equals the logistic sigmoid and never overflows.
    np.multiply(x, 0.5, out=out)
    np.tanh(out, out=out)
    out *= 0.5
    out += 0.5


def _sigmoid_derivative(y):
    return y * (1 - y)


def _tanh(x, out):
    np.tanh(x, out=out)


def _tanh_derivative(y):
    return 1 - y * y


def _relu(x, out):
    np.maximum(x, 0, out=out)


def _relu_derivative(y):
    return (y > 0).astype(y.dtype)


def _linear(x, out):
    if out is not x:
        np.copyto(out, x)


def _linear_derivative(y):
    return np.ones_like(y)


def _hard_sigmoid(x, out):
    # Keras 3's hard_sigmoid: relu6(x + 3) / 6.
    np.multiply(x, 1 / 6, out=out)
    out += 0.5
    np.clip(out, 0, 1, out=out)


def _hard_sigmoid_derivative(y):
    return ((y > 0) & (y < 1)).astype(y.dtype) / 6


def _softsign(x, out):
    denominator = np.abs(x)
    denominator += 1
    np.divide(x, denominator, out=out)


def _softsign_derivative(y):
    # x / (1 + |x|) has derivative 1 / (1 + |x|)^2 = (1 - |y|)^2.
    d = 1 - np.abs(y)
    return d * d


def _softplus(x, out):
    np.logaddexp(x, 0, out=out)


def _softplus_derivative(y):
    # d/dx log(1 + e^x) = sigmoid(x) = 1 - e^-y.
    return -np.expm1(-y)


def _elu(x, out):
    np.copyto(out, np.where(x > 0, x, np.expm1(np.minimum(x, 0))))


def _elu_derivative(y):
    return np.where(y > 0, 1, y + 1).astype(y.dtype)


def _leaky_relu(x, out):
    np.copyto(out, np.where(x >= 0, x, 0.2 * x))


def _leaky_relu_derivative(y):
    return np.where(y >= 0, 1, 0.2).astype(y.dtype)


class GateActivation:
    """An activation by Keras name, with ``forward(x, out)`` and ``derivative(y)`` (f' given y = f(x))."""

    def __init__(self, name, forward, derivative):
        self.name = name
        self.forward = forward
        self.derivative = derivative

    def __repr__(self):
        return f"<GateActivation {self.name}>"


_TABLE = {a.name: a for a in (
    GateActivation("sigmoid", _sigmoid, _sigmoid_derivative),
    GateActivation("tanh", _tanh, _tanh_derivative),
    GateActivation("relu", _relu, _relu_derivative),
    GateActivation("linear", _linear, _linear_derivative),
    GateActivation("hard_sigmoid", _hard_sigmoid, _hard_sigmoid_derivative),
    GateActivation("softsign", _softsign, _softsign_derivative),
    GateActivation("softplus", _softplus, _softplus_derivative),
    GateActivation("elu", _elu, _elu_derivative),
    GateActivation("leaky_relu", _leaky_relu, _leaky_relu_derivative),
)}

SUPPORTED = tuple(sorted(_TABLE))


def get(name):
    """The GateActivation named ``name`` (a Keras activation name)."""
    activation = _TABLE.get(name)
    if activation is None:
        raise ValueError(f"Recurrent ops support the activations {list(SUPPORTED)}. Received: {name!r}")
    return activation
