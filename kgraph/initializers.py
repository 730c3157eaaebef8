"""Weight initializers with Keras's names, arguments and defaults."""
import math

import numpy as np

from kgraph import backend
from kgraph.random import generator


class Initializer:
    """Maps ``(shape, dtype)`` to a new array."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError(f"{type(self).__name__} must define __call__(shape, dtype)")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _fans(shape, input_axes=None, output_axes=None):
    """(fan_in, fan_out) of a weight shape, as Keras counts them (the products over the given axes, if both)."""
    if input_axes is not None and output_axes is not None:
        return int(np.prod([shape[a] for a in input_axes])), int(np.prod([shape[a] for a in output_axes]))
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Zeros(Initializer):
    def __call__(self, shape, dtype=None):
        return np.zeros(shape, dtype=backend.standardize_dtype(dtype))


class Ones(Initializer):
    def __call__(self, shape, dtype=None):
        return np.ones(shape, dtype=backend.standardize_dtype(dtype))


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        return np.full(shape, self.value, dtype=backend.standardize_dtype(dtype))

    def get_config(self):
        return {"value": self.value}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def _rng(self):
        return np.random.default_rng(self.seed) if self.seed is not None else generator()

    def __call__(self, shape, dtype=None):
        return self._rng().normal(self.mean, self.stddev, size=shape).astype(backend.standardize_dtype(dtype))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(RandomNormal):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None):
        return self._rng().uniform(self.minval, self.maxval, size=shape).astype(backend.standardize_dtype(dtype))

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    def __call__(self, shape, dtype=None):
        rng = self._rng()
        values = rng.normal(0.0, 1.0, size=shape)
        bad = np.abs(values) > 2.0
        while bad.any():
            values[bad] = rng.normal(0.0, 1.0, size=int(bad.sum()))
            bad = np.abs(values) > 2.0
        return (self.mean + self.stddev * values).astype(backend.standardize_dtype(dtype))


class VarianceScaling(RandomNormal):
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, input_axes=None,
                 output_axes=None):
        self.input_axes = None if input_axes is None else [int(a) for a in input_axes]
        self.output_axes = None if output_axes is None else [int(a) for a in output_axes]
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode!r}. Expected 'fan_in', 'fan_out' or 'fan_avg'.")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}.")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None):
        fan_in, fan_out = _fans(tuple(shape), self.input_axes, self.output_axes)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * scale)
            return RandomUniform(-limit, limit, self.seed)(shape, dtype)
        if self.distribution == "untruncated_normal":
            return RandomNormal(0.0, math.sqrt(scale), self.seed)(shape, dtype)
        # 0.8796... is the stddev of a unit normal truncated to [-2, 2].
        return TruncatedNormal(0.0, math.sqrt(scale) / 0.87962566103423978, self.seed)(shape, dtype)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "input_axes": self.input_axes, "output_axes": self.output_axes}


def _scaling(name, scale, mode, distribution):
    def __init__(self, seed=None, input_axes=None, output_axes=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes, "output_axes": self.output_axes}
    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": f"VarianceScaling({scale}, {mode!r}, {distribution!r})."})


GlorotUniform = _scaling("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _scaling("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeNormal = _scaling("HeNormal", 2.0, "fan_in", "truncated_normal")
HeUniform = _scaling("HeUniform", 2.0, "fan_in", "uniform")
LecunNormal = _scaling("LecunNormal", 1.0, "fan_in", "truncated_normal")
LecunUniform = _scaling("LecunUniform", 1.0, "fan_in", "uniform")


class Orthogonal(RandomNormal):
    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None):
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        cols = shape[-1]
        a = self._rng().normal(size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q[:rows, :cols]).reshape(shape).astype(backend.standardize_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape. Received: shape={shape}")
        return (self.gain * np.eye(*shape)).astype(backend.standardize_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain}


class STFT(Initializer):
    """Keras's STFT kernel initializer: one side (``"real"`` or ``"imag"``) of the DFT basis of a
    ``(frame_length, 1, fft_length // 2 + 1)`` convolution kernel, times ``window``, scaled by the window's L2 norm
    (``scaling="density"``) or sum (``"spectrum"``).

    window: a window name ("hann", "hamming", "blackman", ...), an array of ``frame_length`` values, or None.
    """

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"side should be 'real' or 'imag', not {side}")
        if isinstance(window, str):
            from kgraph.layers.preprocessing.audio import window_values
            window_values(window, 1)  # an unknown window name fails here, as in Keras
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError("Scaling is invalid, it must be `None`, 'density' or 'spectrum'. "
                             f"Received scaling={scaling}")
        self.side, self.window, self.scaling, self.periodic = side, window, scaling, periodic

    def __call__(self, shape, dtype=None):
        from kgraph.layers.preprocessing.audio import stft_kernel
        if len(shape) != 3:
            raise ValueError(f"STFT initializer needs a shape (frame_length, channels, fft_length // 2 + 1). "
                             f"Received: shape={shape}")
        return stft_kernel(self.side, self.window, self.scaling, self.periodic, tuple(shape), dtype)

    def get_config(self):
        window = self.window.tolist() if isinstance(self.window, np.ndarray) else self.window
        return {"side": self.side, "window": window, "periodic": self.periodic, "scaling": self.scaling}


# Keras's other names for the same classes: snake_case function-style names and older class names.
IdentityInitializer = identity = Identity
OrthogonalInitializer = orthogonal = Orthogonal
STFTInitializer = stft = STFT
constant, ones, zeros = Constant, Ones, Zeros
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling, glorot_normal, glorot_uniform = VarianceScaling, GlorotNormal, GlorotUniform
he_normal, he_uniform, lecun_normal, lecun_uniform = HeNormal, HeUniform, LecunNormal, LecunUniform

_ALL = {cls.__name__: cls for cls in (Zeros, Ones, Constant, RandomNormal, RandomUniform,
                                      TruncatedNormal, VarianceScaling, GlorotUniform, GlorotNormal, HeNormal,
                                      HeUniform, LecunNormal, LecunUniform, Orthogonal, Identity, STFT)}
_ALIASES = {"zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
            "normal": RandomNormal, "random_uniform": RandomUniform, "uniform": RandomUniform,
            "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
            "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
            "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
            "identity": Identity, "stft": STFT, "one": Ones, "zero": Zeros, "IdentityInitializer": Identity,
            "OrthogonalInitializer": Orthogonal, "STFTInitializer": STFT}


def _by_name(name):
    return _ALIASES.get(name) or _ALL.get(name)


def _from_array(values):
    """An initializer returning ``values`` (cast to the dtype asked for) for their own shape only."""
    values = np.array(values)

    def initialize_fn(shape, dtype=None):
        if tuple(shape) != values.shape:
            raise ValueError(f"Expected `shape` to be {values.shape} for direct tensor as initializer. "
                             f"Received shape={tuple(shape)}")
        return values.astype(backend.standardize_dtype(dtype))
    return initialize_fn


def get(identifier):
    """An initializer from a name, a config dict, a class, an array, an instance or a callable (None stays None)."""
    if identifier is None:
        return None
    if isinstance(identifier, Initializer) or (callable(identifier) and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, type):
        if not issubclass(identifier, Initializer):
            raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
        return identifier()
    if isinstance(identifier, (np.ndarray, np.generic)):
        return _from_array(identifier)
    if isinstance(identifier, str):
        cls = _by_name(identifier)
        if cls is None:
            raise ValueError(f"Unknown initializer: {identifier!r}. Valid names: {sorted(_ALIASES)}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")


def deserialize(config, custom_objects=None):
    """The initializer ``config`` describes: ``serialize``'s dict (Keras's or kgraph's form) or a name.

    custom_objects: ``{name: class}`` for a user's initializers, looked up first.
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        cls = custom_objects.get(config) or _by_name(config)
        if cls is None:
            raise ValueError(f"Unknown initializer: {config!r}. Valid names: {sorted(_ALIASES)}")
        return cls()
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Expected an initializer name or a dict with 'class_name' and 'config'. "
                         f"Received: {config!r}")
    name = config.get("class_name")
    cls = custom_objects.get(config.get("registered_name") or "") or custom_objects.get(name) or _by_name(name)
    if cls is None:  # a user's initializer: by its registered name, then its class name
        from kgraph.saving.registration import get_registered_object
        cls = get_registered_object(config.get("registered_name") or "", None) or \
            get_registered_object(str(name), None)
    if not isinstance(cls, type) or not issubclass(cls, Initializer):
        raise ValueError(f"Unknown initializer config: {config!r}")
    return cls.from_config(dict(config.get("config") or {}))


def serialize(initializer):
    """Keras's form: ``{"module": "keras.initializers", "class_name", "config", "registered_name"}``."""
    if isinstance(initializer, Initializer):
        from kgraph.saving.registration import get_registered_name
        cls = type(initializer)
        if cls.__module__.startswith("kgraph."):
            module, registered = "keras.initializers", None
        else:
            module, registered = cls.__module__, get_registered_name(cls)
        return {"module": module, "class_name": cls.__name__, "config": initializer.get_config(),
                "registered_name": registered}
    raise ValueError(f"Cannot serialize initializer {initializer!r}: only kgraph initializers can be saved.")
