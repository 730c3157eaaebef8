"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate."""
import functools

from kgraph import ops
from kgraph.layers.layer import Layer


def _broadcast_shapes(shapes, layer_name):
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(rank):
        dims = [s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"Inputs of layer '{layer_name}' have incompatible shapes: {list(shapes)}")
        out.append(known.pop() if known else (None if None in dims else 1))
    return tuple(out)


class _Merge(Layer):
    """Elementwise merge of a list of at least two same-shaped (or broadcastable) inputs."""

    _masking = True

    _min_inputs = 2

    def _check(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not input_shape or \
                not isinstance(input_shape[0], (list, tuple)):
            raise ValueError(f"A merge layer ('{self.name}') should be called on a list of inputs. "
                             f"Received: input_shape={input_shape}")
        if len(input_shape) < self._min_inputs:
            raise ValueError(f"A merge layer ('{self.name}') should be called on a list of at least "
                             f"{self._min_inputs} inputs. Got {len(input_shape)} inputs.")

    def build(self, input_shape):
        self._check(input_shape)
        _broadcast_shapes([tuple(s) for s in input_shape], self.name)
        self.built = True

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        return _broadcast_shapes([tuple(s) for s in input_shape], self.name)

    def call(self, inputs):
        return functools.reduce(self._merge, inputs)

    def compute_mask(self, inputs, previous_mask=None):
        """Keras's merge mask: a step is kept where any input keeps it (None unless every input is masked)."""
        if previous_mask is None or any(m is None for m in previous_mask):
            return None
        return functools.reduce(ops.logical_or, previous_mask)


class Add(_Merge):
    """Sums a list of inputs."""
    _merge = staticmethod(ops.add)


class Multiply(_Merge):
    """Multiplies a list of inputs elementwise."""
    _merge = staticmethod(ops.multiply)


class Maximum(_Merge):
    """Elementwise maximum of a list of inputs."""
    _merge = staticmethod(ops.maximum)


class Minimum(_Merge):
    """Elementwise minimum of a list of inputs."""
    _merge = staticmethod(ops.minimum)


class Average(_Merge):
    """Elementwise mean of a list of inputs."""

    def call(self, inputs):
        return ops.divide(functools.reduce(ops.add, inputs), len(inputs))


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def _check(self, input_shape):
        super()._check(input_shape)
        if len(input_shape) != 2:
            raise ValueError(f"A `Subtract` layer ('{self.name}') should be called on exactly 2 inputs. "
                             f"Received: {len(input_shape)} inputs.")

    def call(self, inputs):
        return ops.subtract(inputs[0], inputs[1])


class Concatenate(Layer):
    """Concatenates a list of inputs along ``axis``."""

    _masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def compute_output_shape(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not input_shape or \
                not isinstance(input_shape[0], (list, tuple)):
            raise ValueError(f"A `Concatenate` layer ('{self.name}') should be called on a list of inputs. "
                             f"Received: input_shape={input_shape}")
        shapes = [tuple(s) for s in input_shape]
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes):
            raise ValueError(f"A `Concatenate` layer ('{self.name}') requires inputs of the same rank. "
                             f"Received: input_shape={shapes}")
        axis = self.axis % rank
        out = list(shapes[0])
        for s in shapes[1:]:
            for i in range(rank):
                if i == axis:
                    continue
                if out[i] is not None and s[i] is not None and out[i] != s[i]:
                    raise ValueError(
                        f"A `Concatenate` layer ('{self.name}') requires inputs with matching shapes except "
                        f"for the concatenation axis. Received: input_shape={shapes}")
                out[i] = out[i] if out[i] is not None else s[i]
        sizes = [s[axis] for s in shapes]
        out[axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.built = True

    def call(self, inputs):
        return ops.concatenate(list(inputs), axis=self.axis)

    def compute_mask(self, inputs, previous_mask=None):
        """The inputs' masks (all-true where an input has none) joined along ``axis``, reduced over features."""
        if previous_mask is None or all(m is None for m in previous_mask):
            return None
        masks = []
        for x, m in zip(inputs, previous_mask):
            if m is None:
                masks.append(ops.ones_like(x, dtype="bool"))
            elif ops.ndim(m) < ops.ndim(x):
                masks.append(ops.broadcast_to(ops.expand_dims(m, -1), ops.shape(x)))
            else:
                masks.append(m)
        return ops.any(ops.concatenate(masks, axis=self.axis), axis=-1)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


def add(inputs, **kwargs):
    return Add(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)
