"""Hashing: strings and integers to bins by FarmHash64 (or keyed SipHash-2-4 with a ``salt``), as Keras does."""
import numpy as np

from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.layer import Layer
from kgraph.layers.preprocessing.numeric import encode_categorical, encoded_shape, validate_output_mode

_MASK64 = (1 << 64) - 1


def _rotl(x, bits):
    return ((x << bits) | (x >> (64 - bits))) & _MASK64


def _sip_rounds(count, v0, v1, v2, v3):
    for _ in range(count):
        v0 = (v0 + v1) & _MASK64
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK64
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK64
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK64
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(key, data):
    """SipHash-2-4 of ``data`` (bytes) under the 128-bit key ``(k0, k1)``: TensorFlow's strong keyed hash."""
    k0, k1 = (k & _MASK64 for k in key)
    v0, v1, v2, v3 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    whole = len(data) - len(data) % 8
    words = [int.from_bytes(data[i:i + 8], "little") for i in range(0, whole, 8)]
    words.append(int.from_bytes(data[whole:], "little") | ((len(data) & 0xFF) << 56))
    for word in words:
        v3 ^= word
        v0, v1, v2, v3 = _sip_rounds(2, v0, v1, v2, v3)
        v0 ^= word
    v2 ^= 0xFF
    v0, v1, v2, v3 = _sip_rounds(4, v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def fingerprint64(data):
    """FarmHash's Fingerprint64 of ``data`` (bytes), TensorFlow's fast string hash, from ``pyfarmhash``."""
    try:
        import farmhash
    except ImportError as err:
        raise ImportError("Hashing strings without a `salt` uses FarmHash's Fingerprint64, as Keras does, which "
                          'needs the optional package pyfarmhash: `pip install "kgraph-engine[hashing]"`. A layer '
                          "given a `salt` (keyed SipHash) needs nothing more.") from err
    return farmhash.fingerprint64(data)


def as_text(value, encoding="utf-8"):
    """A string element as Python ``str`` (bytes are decoded); integers become their decimal text."""
    if isinstance(value, bytes):
        return value.decode(encoding)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


def string_array(inputs, layer):
    """``inputs`` (str or bytes arrays, lists, scalars) as an object array of ``str``."""
    values = np.asarray(inputs, dtype=object)
    if values.size and not all(isinstance(v, (str, bytes)) for v in values.flat):
        raise ValueError(f"Layer '{layer.name}' ({type(layer).__name__}) expects string inputs. Received an element "
                         f"of type {type(next(v for v in values.flat if not isinstance(v, (str, bytes)))).__name__}")
    encoding = getattr(layer, "encoding", "utf-8")
    return np.vectorize(lambda v: as_text(v, encoding), otypes=[object])(values) if values.size else values


def hash_bins(values, num_bins, salt=None):
    """Each element's bin in ``[0, num_bins)``: FarmHash64 (SipHash-2-4 keyed by ``salt``) of its text, modulo."""
    flat = [as_text(v).encode("utf-8") for v in np.asarray(values, dtype=object).reshape(-1)]
    if salt is None:
        hashed = [fingerprint64(v) % num_bins for v in flat]
    else:
        hashed = [siphash24(salt, v) % num_bins for v in flat]
    return np.asarray(hashed, dtype=np.int64).reshape(np.shape(values))


class StringInputLayer(Layer):
    """A layer whose inputs may be strings: lists and str/bytes/object arrays reach ``call`` as arrays."""

    def __call__(self, *args, **kwargs):
        if args and not isinstance(args[0], (np.ndarray, KerasTensor, dict)):
            args = (np.asarray(args[0], dtype=object if _has_text(args[0]) else None),) + args[1:]
        return super().__call__(*args, **kwargs)

    def refuse_symbolic(self, inputs):
        """The export of this layer (its ``call`` traced on KerasTensors) is an error saying why."""
        if isinstance(inputs, KerasTensor):
            raise ValueError(f"Layer '{self.name}' ({type(self).__name__}) hashes or looks up tokens in Python "
                             "(strings, vocabularies), which standard ONNX operators do not carry portably: it must "
                             "stay in the client (export the model that starts after it, and run this layer on the "
                             "client's data before sending them)")

    def _convert_input(self, x):
        if isinstance(x, np.ndarray) and x.dtype.kind in "OUS":
            return x
        return super()._convert_input(x)


def _has_text(value):
    return any(isinstance(v, (str, bytes)) for v in np.asarray(value, dtype=object).reshape(-1))


class Hashing(StringInputLayer):
    """Hashes strings or integers into ``num_bins`` bins (bin 0 kept for ``mask_value`` if one is given)."""

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError("The `num_bins` for `Hashing` cannot be `None` or non-positive values. "
                             f"Received: num_bins={num_bins}.")
        validate_output_mode(type(self).__name__, output_mode, ("int", "one_hot", "multi_hot", "count"))
        if sparse:
            raise ValueError("`sparse=True` cannot be used with kgraph, which has no sparse tensors. "
                             f"Received: sparse={sparse}")
        if salt is not None and not (isinstance(salt, int) or (isinstance(salt, (tuple, list)) and len(salt) == 2)):
            raise ValueError("The `salt` argument for `Hashing` can only be a tuple of size 2 integers, or a single "
                             f"integer. Received: salt={salt}.")
        self.num_bins = int(num_bins)
        self.mask_value = mask_value
        self.salt = None if salt is None else [salt, salt] if isinstance(salt, int) else list(salt)
        self.strong_hash = salt is not None
        self.output_mode = output_mode
        self.sparse = sparse

    @property
    def output_dtype(self):
        return "int64" if self.output_mode == "int" else self.compute_dtype

    def call(self, inputs):
        self.refuse_symbolic(inputs)
        values = np.asarray(inputs)
        hashed = values.astype(np.int64) if values.dtype.kind == "f" else values  # Keras truncates floats
        if self.mask_value is None or self.num_bins == 1:
            bins = hash_bins(hashed, self.num_bins, self.salt)
        else:
            bins = hash_bins(hashed, self.num_bins - 1, self.salt) + 1
            mask = np.vectorize(lambda v: v == self.mask_value, otypes=[bool])(values) if values.size else False
            bins = np.where(mask, 0, bins)
        return encode_categorical(bins, self.output_mode, self.num_bins, self.output_dtype)

    def compute_output_shape(self, input_shape):
        return encoded_shape(input_shape, self.output_mode, self.num_bins)

    def compute_output_spec(self, inputs):
        return KerasTensor(self.compute_output_shape(inputs.shape), dtype=self.output_dtype, name=self.name)

    def get_config(self):
        config = super().get_config()
        config.update({"num_bins": self.num_bins, "salt": self.salt, "mask_value": self.mask_value,
                       "output_mode": self.output_mode, "sparse": self.sparse})
        return config
