"""TextVectorization: standardize, split and n-gram strings, then index them with a StringLookup."""
import re

import numpy as np

from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.preprocessing.hashing import StringInputLayer, string_array
from kgraph.layers.preprocessing.lookup import StringLookup
from kgraph.layers.preprocessing.numeric import batches_of, validate_output_mode

STRIP_PUNCTUATION = re.compile(r"[!\"#$%&()\*\+,\-\./:;<=>?@\[\\\]^_`{|}~']")
# TensorFlow's string ops, which Keras uses, lowercase ASCII only and split on ASCII whitespace.
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
ASCII_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
STANDARDIZE = (None, "lower_and_strip_punctuation", "lower", "strip_punctuation")
SPLIT = (None, "whitespace", "character")


class TextVectorization(StringInputLayer):
    """Strings to token indices (``int``) or to ``multi_hot``/``count``/``tf_idf`` vectors over a vocabulary."""

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
                 output_mode="int", output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None, **kwargs):
        kwargs.pop("vocabulary_size", None)
        super().__init__(name=name, **kwargs)
        if not (standardize in STANDARDIZE or callable(standardize)):
            raise ValueError(f"Invalid value for argument `standardize`. Expected one of {list(STANDARDIZE)} or a "
                             f"callable. Received: standardize={standardize}")
        if not (split in SPLIT or callable(split)):
            raise ValueError(f"Invalid value for argument `split`. Expected one of {list(SPLIT)} or a callable. "
                             f"Received: split={split}")
        output_mode = "tf_idf" if output_mode == "tf-idf" else output_mode
        validate_output_mode(type(self).__name__, output_mode, ("int", "multi_hot", "count", "tf_idf"))
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"`max_tokens` must be >= 1. Received: max_tokens={max_tokens}")
        if not (ngrams is None or (isinstance(ngrams, int) and ngrams > 0) or
                (isinstance(ngrams, (tuple, list)) and all(isinstance(n, int) and n > 0 for n in ngrams))):
            raise ValueError("`ngrams` must be None, an integer, or a tuple of integers. Received: "
                             f"ngrams={ngrams}")
        if output_sequence_length is not None and output_mode != "int":
            raise ValueError("`output_sequence_length` must not be set if `output_mode` is not 'int'. "
                             f"Received output_sequence_length={output_sequence_length}.")
        if ragged or sparse:
            raise ValueError("`ragged=True` and `sparse=True` cannot be used with kgraph, which has neither ragged "
                             f"nor sparse tensors. Received: ragged={ragged}, sparse={sparse}")
        self.max_tokens, self.standardize, self.split = max_tokens, standardize, split
        self.ngrams = tuple(ngrams) if isinstance(ngrams, list) else ngrams
        self.output_mode, self.output_sequence_length = output_mode, output_sequence_length
        self.pad_to_max_tokens, self.sparse, self.ragged, self.encoding = pad_to_max_tokens, sparse, ragged, encoding
        self._ngram_sizes = (tuple(range(1, ngrams + 1)) if isinstance(ngrams, int)
                             else tuple(ngrams) if ngrams else (1,))
        self._lookup_layer = StringLookup(max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
                                          pad_to_max_tokens=pad_to_max_tokens, mask_token="",
                                          output_mode=output_mode, encoding=encoding, name=f"{self.name}_lookup")

    def _standardize(self, texts):
        """Standardize an object array of strings; a callable gets them as a NumPy str array, as in Keras."""
        if callable(self.standardize):
            return np.asarray(self.standardize(texts.astype(str)), dtype=object).reshape(texts.shape)
        lower = self.standardize in ("lower", "lower_and_strip_punctuation")
        strip = self.standardize in ("strip_punctuation", "lower_and_strip_punctuation")
        out = [STRIP_PUNCTUATION.sub("", t.translate(ASCII_LOWER) if lower else t) if strip else
               (t.translate(ASCII_LOWER) if lower else t) for t in texts.reshape(-1)]
        return np.array(out, dtype=object).reshape(texts.shape)

    def _tokens(self, text):
        """The split words of one standardized string, then its n-grams of each size, as ``tf.strings`` does."""
        if callable(self.split):
            words = list(self.split(text))
        elif self.split == "whitespace":
            words = [w for w in ASCII_WHITESPACE.split(text) if w]
        else:
            words = list(text) if self.split == "character" else [text]
        return [" ".join(words[i:i + n]) for n in self._ngram_sizes for i in range(len(words) - n + 1)]

    def _documents(self, inputs):
        values = string_array(inputs, self)
        if values.ndim == 2 and values.shape[1] == 1:
            values = values[:, 0]
        if values.ndim > 1:
            raise ValueError(f"When using TextVectorization to tokenize strings, the input rank must be 1 or the "
                             f"last shape dimension must be 1. Received: inputs.shape={values.shape}")
        return [self._tokens(text) for text in self._standardize(values).reshape(-1)], values.ndim == 0

    def adapt(self, data, batch_size=None, steps=None):
        """Learn the vocabulary (and ``tf_idf`` weights) from strings: an array, a PyDataset or batches."""
        if isinstance(data, (list, tuple)):
            data = np.asarray(data, dtype=object)
        self._lookup_layer.adapt(self._token_rows(batches_of(data, batch_size, steps)))

    def _token_rows(self, batches):
        """Each batch of strings as a 2-D array of its documents' tokens, right-padded with ``""`` (the mask)."""
        for batch in batches:
            documents, _ = self._documents(batch)
            width = max((len(d) for d in documents), default=0)
            yield np.array([d + [""] * (width - len(d)) for d in documents], dtype=object).reshape(len(documents), -1)

    def get_vocabulary(self, include_special_tokens=True):
        """The vocabulary, ``""`` (padding) and ``"[UNK]"`` first in ``int`` mode."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        """The size of the vocabulary, padding and OOV indices included."""
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Set the vocabulary (and, for ``tf_idf``, its weights) directly."""
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def call(self, inputs):
        self.refuse_symbolic(inputs)
        documents, scalar = self._documents(inputs)
        if self.output_mode == "int":
            length = self.output_sequence_length or max((len(d) for d in documents), default=0)
            padded = np.array([(d + [""] * length)[:length] for d in documents], dtype=object).reshape(-1, length)
            indices = self._lookup_layer(padded)
            return indices[0] if scalar else indices
        width = max((len(d) for d in documents), default=0)
        rows = np.array([d + [""] * (width - len(d)) for d in documents], dtype=object).reshape(len(documents), -1)
        encoded = self._lookup_layer(rows)
        return encoded[0] if scalar else encoded

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return (input_shape[0], self.output_sequence_length)
        depth = self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()
        return (input_shape[0], depth)

    def compute_output_spec(self, inputs):
        dtype = "int64" if self.output_mode == "int" else self.compute_dtype
        return KerasTensor(self.compute_output_shape(inputs.shape), dtype=dtype, name=self.name)

    def get_config(self):
        config = super().get_config()
        lookup = self._lookup_layer.get_config()
        config.update({"max_tokens": self.max_tokens, "standardize": self._function_config(self.standardize),
                       "split": self._function_config(self.split),
                       "ngrams": self.ngrams, "output_mode": self.output_mode,
                       "output_sequence_length": self.output_sequence_length,
                       "pad_to_max_tokens": self.pad_to_max_tokens, "sparse": self.sparse, "ragged": self.ragged,
                       "vocabulary": lookup["vocabulary"], "idf_weights": lookup["idf_weights"],
                       "encoding": self.encoding, "vocabulary_size": self.vocabulary_size()})
        return config

    def _function_config(self, option):
        """A callable option is saved by name only (files hold no code); loading takes it from custom_objects."""
        if not callable(option):
            return option
        name = getattr(option, "__name__", None)
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Cannot save TextVectorization layer '{self.name}': {option!r} has no name to restore "
                             "it by (a Python lambda), and kgraph files hold no code. Define it with `def` and pass "
                             "it in `custom_objects` when loading.")
        return {"module": getattr(option, "__module__", None), "class_name": "function", "config": name,
                "registered_name": "function"}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuild the layer; a callable ``standardize``/``split`` comes from ``custom_objects`` by name."""
        config = dict(config)
        for argument in ("standardize", "split"):
            value = config.get(argument)
            if isinstance(value, dict) and value.get("class_name") == "function":
                found = (custom_objects or {}).get(value["config"])
                if not callable(found):
                    raise ValueError(f"Cannot load TextVectorization layer '{config.get('name')}': its `{argument}` "
                                     f"is the Python function '{value['config']}', and kgraph never loads code from "
                                     f"a model file. Pass it when loading: `custom_objects={{'{value['config']}': "
                                     f"{value['config']}}}`.")
                config[argument] = found
        return cls(**config)
