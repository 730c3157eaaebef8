"""StringLookup and IntegerLookup: vocabularies (given or learnt by ``adapt``) mapping tokens to indices."""
import collections

import numpy as np

from kgraph import backend, ops
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.preprocessing.hashing import StringInputLayer, as_text, hash_bins, string_array
from kgraph.layers.preprocessing.numeric import batches_of, validate_output_mode

LOOKUP_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


def encode_tokens(indices, output_mode, depth, idf_weights=None, keep=None):
    """Token indices as vectors over the last axis (a rank-1 input is one sample), Keras's lookup encodings.

    ``keep`` (bool, like ``indices``) drops the positions that are False (mask tokens). Written with
    ``kgraph.ops``, so that it runs on arrays and traces on KerasTensors alike.
    """
    dtype = backend.floatx()
    if len(indices.shape) == 0:
        indices = ops.expand_dims(indices, 0)
        keep = None if keep is None else ops.expand_dims(keep, 0)
    if output_mode == "one_hot" and len(indices.shape) > 1 and indices.shape[-1] == 1:
        indices = ops.squeeze(indices, -1)
        keep = None if keep is None else ops.squeeze(keep, -1)
    encoded = ops.one_hot(indices, depth, dtype=dtype)
    if keep is not None:
        encoded = ops.multiply(encoded, ops.expand_dims(ops.cast(keep, dtype), -1))
    if output_mode == "one_hot":
        return encoded
    if output_mode == "multi_hot":
        return ops.max(encoded, axis=-2)
    counts = ops.sum(encoded, axis=-2)
    return counts if output_mode == "count" else ops.multiply(counts, np.asarray(idf_weights, dtype))


class IndexLookup(StringInputLayer):
    """Shared machinery of StringLookup and IntegerLookup: special tokens, vocabulary, adapt, encodings."""

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype, vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", sparse=False, pad_to_max_tokens=False,
                 salt=None, oov_method="farmhash", **kwargs):
        super().__init__(**kwargs)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If set, `max_tokens` must be greater than 1. Received: max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError("If pad_to_max_tokens is True, must set `max_tokens`. "
                             f"Received: max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError("`num_oov_indices` must be greater than or equal to 0. "
                             f"Received: num_oov_indices={num_oov_indices}")
        output_mode = "tf_idf" if output_mode == "tf-idf" else output_mode
        validate_output_mode(type(self).__name__, output_mode, LOOKUP_MODES)
        if invert and output_mode != "int":
            raise ValueError("`output_mode` must be `'int'` when `invert` is true. "
                             f"Received: output_mode={output_mode}")
        if sparse:
            raise ValueError("`sparse=True` cannot be used with kgraph, which has no sparse tensors. "
                             f"Received: sparse={sparse}")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError("`idf_weights` should only be set if `output_mode` is `'tf_idf'`. "
                             f"Received: idf_weights={idf_weights} and output_mode={output_mode}")
        self.max_tokens, self.num_oov_indices = max_tokens, int(num_oov_indices)
        self.mask_token, self.oov_token = mask_token, oov_token
        self.vocabulary_dtype, self.invert, self.output_mode = vocabulary_dtype, bool(invert), output_mode
        self.sparse, self.pad_to_max_tokens = sparse, bool(pad_to_max_tokens)
        self.salt = None if salt is None else [salt, salt] if isinstance(salt, int) else list(salt)
        self.oov_method = oov_method
        self._tokens, self._idf = [], None
        self.input_vocabulary, self.input_idf_weights = vocabulary, idf_weights
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    def _oov_start_index(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start_index(self):
        return self._oov_start_index() + self.num_oov_indices

    def _key(self, token):
        return as_text(token) if self.vocabulary_dtype == "string" else int(token)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Set the vocabulary (with or without the leading special tokens) and, for ``tf_idf``, its weights."""
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'.")
        vocabulary = [self._key(t) for t in np.asarray(vocabulary, dtype=object).reshape(-1)]
        if not vocabulary:
            raise ValueError(f"Cannot set an empty vocabulary. Received: vocabulary={vocabulary}")
        start = self._token_start_index()
        special = [self.mask_token] * self._oov_start_index() + [self.oov_token] * self.num_oov_indices
        found_special = vocabulary[:start] == special
        tokens = vocabulary[start:] if found_special else vocabulary
        repeated = [t for t, n in collections.Counter(tokens).items() if n > 1]
        if repeated:
            raise ValueError("The passed vocabulary has at least one repeated term. Please uniquify your dataset. "
                             f"The repeated terms are: {repeated}")
        for name, token in (("mask_token", self.mask_token), ("oov_token", self.oov_token if self.invert else None)):
            if token is not None and token in tokens:
                raise ValueError(
                    f"Found reserved {'mask' if name == 'mask_token' else 'OOV'} token at unexpected location in "
                    "`vocabulary`. Note that passed `vocabulary` does not need to include the OOV and mask tokens. "
                    "Either remove all mask and OOV tokens, or include them only at the start of the vocabulary "
                    f"in precisely this order: {special}. Received: {name}={token}")
        if self.max_tokens is not None and start + len(tokens) > self.max_tokens:
            raise ValueError("Attempted to set a vocabulary larger than the maximum vocab size. Received vocabulary "
                             f"size is {start + len(tokens)}; `max_tokens` is {self.max_tokens}.")
        idf = None
        if self.output_mode == "tf_idf":
            weights = np.asarray(idf_weights, dtype=np.float64).reshape(-1)
            if len(weights) != len(vocabulary):
                raise ValueError("`idf_weights` must be the same length as vocabulary. len(idf_weights) is "
                                 f"{len(weights)}; len(vocabulary) is {len(vocabulary)}")
            idf = weights if found_special else np.concatenate([np.full(start, weights.mean()), weights])
        self._set_tokens(tokens, idf)

    def _set_tokens(self, tokens, idf=None):
        self._tokens = list(tokens)
        self._index = {t: i + self._token_start_index() for i, t in enumerate(self._tokens)}
        if idf is not None and self.pad_to_max_tokens:
            idf = np.concatenate([idf, np.zeros(self.max_tokens - len(idf))])
        self._idf = idf

    def vocabulary_size(self):
        """The size of the vocabulary, mask and OOV indices included."""
        return len(self._tokens) + self._token_start_index()

    def get_vocabulary(self, include_special_tokens=True):
        """The vocabulary; with the special tokens, a token's position is its index."""
        special = [self.mask_token] * self._oov_start_index() + [self.oov_token] * self.num_oov_indices
        return (special if include_special_tokens else []) + list(self._tokens)

    def adapt(self, data, batch_size=None, steps=None):
        """Learn the vocabulary (most frequent first) and, for ``tf_idf``, the inverse document frequencies."""
        if self.input_vocabulary is not None:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static vocabulary via "
                             "`vocabulary` argument or `set_vocabulary()` method.")
        if isinstance(data, (list, tuple, np.ndarray)):
            data = np.asarray(data, dtype=object)
            data = data.reshape(-1, 1) if data.ndim < 2 else data  # an array's elements are its documents
        counts, doc_counts, documents = collections.Counter(), collections.Counter(), 0
        for batch in batches_of(data, batch_size, steps):
            rows = np.asarray(self._keys_of(batch), dtype=object)
            rows = rows.reshape(1, -1) if rows.ndim < 2 else rows.reshape(len(rows), -1)
            for row in rows:
                keys = [self._key(t) for t in row]
                counts.update(keys)
                doc_counts.update(set(keys))
            documents += len(rows)
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        ordered = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
        if self.max_tokens:
            ordered = ordered[:self.max_tokens - self._token_start_index()]
        idf = None
        if self.output_mode == "tf_idf":
            idf = np.log1p(documents / (1 + np.array([doc_counts[t] for t in ordered], dtype=np.float64)))
            idf = np.concatenate([np.full(self._token_start_index(), idf.mean() if len(idf) else 0.0), idf])
        self._set_tokens(ordered, idf)

    def _keys_of(self, inputs):
        return string_array(inputs, self) if self.vocabulary_dtype == "string" else np.asarray(inputs, np.int64)

    def lookup(self, inputs):
        """Token indices of ``inputs`` (OOV tokens hashed over the OOV indices) and where the mask token was."""
        values = self._keys_of(inputs)
        flat = values.reshape(-1)
        is_mask = np.array([v == self.mask_token for v in flat], bool) if self.mask_token is not None \
            else np.zeros(flat.shape, bool)
        found = np.array([self._index.get(self._key(v), -1) for v in flat], dtype=np.int64)
        oov = (found < 0) & ~is_mask
        if oov.any():
            if self.num_oov_indices == 0:
                raise ValueError("When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values "
                                 f"{list(flat[oov])}, consider setting `num_oov_indices=1`.")
            if self.num_oov_indices == 1:
                buckets = np.zeros(int(oov.sum()), np.int64)
            elif self.vocabulary_dtype != "string" and self.oov_method == "floormod":
                buckets = np.mod(flat[oov].astype(np.int64), self.num_oov_indices)
            else:
                buckets = hash_bins(flat[oov], self.num_oov_indices, self.salt)
            found[oov] = self._oov_start_index() + buckets
        found[is_mask] = 0
        return found.reshape(values.shape), is_mask.reshape(values.shape)

    def _invert(self, inputs):
        vocab = self.get_vocabulary()
        indices = np.asarray(inputs, np.int64)
        tokens = [vocab[i] if 0 <= i < len(vocab) else self.oov_token for i in indices.reshape(-1)]
        return np.array(tokens, dtype=object if self.vocabulary_dtype == "string" else np.int64).reshape(indices.shape)

    def call(self, inputs):
        if isinstance(inputs, KerasTensor):
            indices, keep = self._traced_lookup(inputs)
        elif self.invert:
            return self._invert(inputs)
        else:
            indices, is_mask = self.lookup(inputs)
            keep = ~is_mask if self.mask_token is not None else None
        if self.output_mode == "int":
            return indices
        depth = self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()
        return encode_tokens(indices, self.output_mode, depth, self._idf, keep)

    def _traced_lookup(self, inputs):
        """The integer lookup as ops (comparisons with the vocabulary), which is what an export traces."""
        if self.vocabulary_dtype == "string":
            self.refuse_symbolic(inputs)
        if self.num_oov_indices == 0 or (self.num_oov_indices > 1 and self.oov_method != "floormod"):
            raise ValueError(f"Layer '{self.name}' ({type(self).__name__}) with num_oov_indices="
                             f"{self.num_oov_indices} and oov_method='{self.oov_method}' must stay in the client: "
                             "ONNX graphs cannot raise on out-of-vocabulary values or hash them as Keras does. "
                             "Expected num_oov_indices=1, or several with oov_method='floormod'.")
        x = ops.cast(inputs, "int64")
        if self.invert:
            vocabulary = np.asarray(self.get_vocabulary(), np.int64)
            inside = ops.logical_and(ops.greater_equal(x, 0), ops.less(x, len(vocabulary)))
            found = ops.take(vocabulary, ops.clip(x, 0, len(vocabulary) - 1))
            return ops.where(inside, found, np.int64(self.oov_token)), None
        oov = np.int64(self._oov_start_index())
        if self.num_oov_indices > 1:
            oov = ops.add(ops.mod(x, np.int64(self.num_oov_indices)), oov)
        indices = ops.multiply(ops.ones_like(x), oov) if self.num_oov_indices == 1 else oov
        if self._tokens:
            hits = ops.equal(ops.expand_dims(x, -1), np.asarray(self._tokens, np.int64))
            position = ops.cast(ops.argmax(ops.cast(hits, "int32"), axis=-1), "int64")
            indices = ops.where(ops.any(hits, axis=-1), ops.add(position, np.int64(self._token_start_index())),
                                indices)
        if self.mask_token is None:
            return indices, None
        is_mask = ops.equal(x, np.int64(self.mask_token))
        return ops.where(is_mask, np.int64(0), indices), ops.logical_not(is_mask)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if self.output_mode == "int":
            return input_shape
        depth = self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()
        if self.output_mode == "one_hot":
            return (input_shape[:-1] if len(input_shape) > 1 and input_shape[-1] == 1 else input_shape) + (depth,)
        return input_shape[:-1] + (depth,)

    def compute_output_spec(self, inputs):
        if self.invert:
            dtype = "str" if self.vocabulary_dtype == "string" else self.vocabulary_dtype
        else:
            dtype = "int64" if self.output_mode == "int" else backend.floatx()
        return KerasTensor(self.compute_output_shape(inputs.shape), dtype=dtype, name=self.name)

    def get_config(self):
        config = super().get_config()
        config.update({"invert": self.invert, "max_tokens": self.max_tokens, "num_oov_indices": self.num_oov_indices,
                       "oov_token": self.oov_token, "mask_token": self.mask_token, "output_mode": self.output_mode,
                       "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens,
                       "vocabulary": self.get_vocabulary() if self._tokens else None, "salt": self.salt,
                       "idf_weights": self._idf[:self.vocabulary_size()].tolist() if self._idf is not None else None})
        return config


class StringLookup(IndexLookup):
    """Maps strings to integer indices of a vocabulary (``invert=True``: indices back to strings)."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 encoding="utf-8", name=None, salt=None, **kwargs):
        kwargs.pop("vocabulary_dtype", None)
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, "string", vocabulary, idf_weights,
                         invert, output_mode, sparse, pad_to_max_tokens, salt, name=name, **kwargs)

    def get_config(self):
        config = super().get_config()
        config["encoding"] = self.encoding
        return config


class IntegerLookup(IndexLookup):
    """Maps integers to contiguous indices of a vocabulary (``invert=True``: indices back to the integers)."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, vocabulary=None,
                 vocabulary_dtype="int64", idf_weights=None, invert=False, output_mode="int", sparse=False,
                 pad_to_max_tokens=False, oov_method="floormod", salt=None, name=None, **kwargs):
        if vocabulary_dtype != "int64":
            raise ValueError(f"`vocabulary_dtype` must be 'int64'. Received: vocabulary_dtype={vocabulary_dtype}")
        if oov_method not in ("floormod", "farmhash"):
            raise ValueError(f"`oov_method` must be one of ('floormod', 'farmhash'). Received: oov_method={oov_method}")
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, salt, oov_method, name=name,
                         **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_dtype": self.vocabulary_dtype, "oov_method": self.oov_method})
        return config
