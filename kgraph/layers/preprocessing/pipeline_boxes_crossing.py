"""Pipeline, MaxNumBoundingBoxes and HashedCrossing preprocessing layers."""
import numpy as np

from kgraph import ops, tree
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers import mask_propagation as masking
from kgraph.layers.layer import Layer
from kgraph.layers.preprocessing.hashing import StringInputLayer, fingerprint64
from kgraph.layers.preprocessing.numeric import encode_categorical, encoded_shape, validate_output_mode
from kgraph.layers.structure import structure_changed
from kgraph.saving.serialization import deserialize_layer, serialize_layer

__all__ = ["HashedCrossing", "MaxNumBoundingBoxes", "Pipeline"]


class Pipeline(Layer):
    """Applies ``layers`` one after the other, as a plain layer (not a model).

    Each layer whose ``call`` takes ``training`` receives it (``True`` unless
    given, as in Keras, so augmentation runs when the pipeline is called
    directly); a layer that takes ``mask`` receives the mask of the previous
    layer's output.
    """

    def __init__(self, layers, name=None):
        super().__init__(name=name)
        if not isinstance(layers, (list, tuple)) or not all(isinstance(layer, Layer) for layer in layers):
            raise ValueError(f"Pipeline '{self.name}' expects `layers` to be a list of kgraph Layer instances. "
                             f"Received: layers={layers!r}")
        self._pipeline_layers = list(layers)
        for layer in self._pipeline_layers:
            if not any(layer is known for known in self._layers):
                self._layers.append(layer)
                structure_changed()

    @property
    def layers(self):
        return self._pipeline_layers

    def call(self, inputs, training=True, mask=None):
        outputs = inputs
        for layer in self._pipeline_layers:
            kwargs = {}
            if layer._call_accepts_mask:
                kwargs["mask"] = mask
            if layer._call_accepts_training and training is not None:
                kwargs["training"] = training
            outputs = layer(inputs, **kwargs)
            mask = _mask_after(layer, inputs, mask, outputs)
            inputs = outputs
        return outputs

    def get_config(self):
        return {"layers": [serialize_layer(layer) for layer in self._pipeline_layers], "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        layers = config.get("layers")
        if not isinstance(layers, (list, tuple)):
            raise ValueError("A `Pipeline` config must have a `layers` key holding a list of serialized layers. "
                             f"Received: layers={layers!r}")
        config = dict(config, layers=[deserialize_layer(data, custom_objects) for data in layers])
        return cls(**config)


def _mask_after(layer, inputs, mask, outputs):
    """The mask of ``outputs`` (what the layer attached symbolically, or what it computes on arrays)."""
    if any(isinstance(t, KerasTensor) for t in tree.flatten(outputs)):
        return tree.map_structure(lambda t: getattr(t, "_keras_mask", None), outputs)
    made = masking.output_masks(layer, inputs, mask, len(tree.flatten(outputs)))
    return made[0] if len(made) == 1 else made


class MaxNumBoundingBoxes(Layer):
    """Pads or truncates the boxes of Keras's bounding-box dicts to exactly ``max_number`` per image.

    Called on ``{"images": ..., "bounding_boxes": {"boxes": (batch, n, 4),
    "labels": (batch, n)}}`` (or one image: boxes ``(n, 4)``, labels ``(n,)``),
    it keeps the first ``max_number`` boxes and labels and fills missing ones
    with ``fill_value``; boxes become float32. Images, ``labels`` and
    ``segmentation_masks`` pass unchanged, and so does a bare image tensor. As
    in Keras, boxes need a ``bounding_box_format`` (such as ``"xyxy"``).
    """

    def __init__(self, max_number, fill_value=-1, bounding_box_format=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(max_number, bool) or not isinstance(max_number, (int, np.integer)) or max_number <= 0:
            raise ValueError(f"Layer '{self.name}': `max_number` must be a positive integer. "
                             f"Received: max_number={max_number!r}")
        if isinstance(fill_value, bool) or not isinstance(fill_value, (int, float, np.number)):
            raise ValueError(f"Layer '{self.name}': `fill_value` must be a number. Received: fill_value={fill_value!r}")
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"Layer '{self.name}': `data_format` must be 'channels_last' or 'channels_first'. "
                             f"Received: data_format={data_format!r}")
        self.max_number = int(max_number)
        self.fill_value = int(fill_value)
        self.bounding_box_format = bounding_box_format
        self.data_format = data_format or "channels_last"

    def call(self, data, training=True):
        if not isinstance(data, dict):
            _batched(self, data)
            return data
        out = dict(data)
        batched = _batched(self, data["images"])
        if "bounding_boxes" in data:
            boxes = self._checked_boxes(data["bounding_boxes"])
            out["bounding_boxes"] = {**boxes, "boxes": self._fit(ops.cast(boxes["boxes"], "float32"), batched),
                                     "labels": self._fit(boxes["labels"], batched)}
        return out

    def _checked_boxes(self, boxes):
        if not self.bounding_box_format:
            raise ValueError("You passed an input with a 'bounding_boxes' key, but you didn't specify a bounding box "
                             f"format. Pass a `bounding_box_format` argument to your {type(self).__name__} layer, "
                             "e.g. `bounding_box_format='xyxy'`.")
        if not isinstance(boxes, dict) or "boxes" not in boxes or "labels" not in boxes:
            raise ValueError("Expected `bounding_boxes` argument to be a dict with keys 'boxes' and 'labels'. "
                             f"Received: bounding_boxes={boxes!r}")
        return boxes

    def _fit(self, values, batched):
        """``values`` with axis 0 (one image) or 1 (a batch) cut or filled to ``max_number`` entries."""
        widths = [[0, 0]] * len(values.shape)
        widths[1 if batched else 0] = [0, self.max_number]
        padded = ops.pad(values, widths, constant_values=self.fill_value)
        return padded[:, :self.max_number] if batched else padded[:self.max_number]

    def compute_output_spec(self, data, training=True):
        if not isinstance(data, dict):
            return KerasTensor(data.shape, dtype=data.dtype, name=self.name)
        out = dict(data)
        if "bounding_boxes" in data:
            boxes = self._checked_boxes(data["bounding_boxes"])
            extra = set(boxes) - {"boxes", "labels"}
            if extra:
                raise KeyError(f"There are unsupported keys in `bounding_boxes`: {sorted(extra)}. "
                               "Only `boxes` and `labels` are supported.")
            axis = 1 if len(data["images"].shape) == 4 else 0

            def fitted(t, dtype):
                shape = list(t.shape)
                shape[axis] = self.max_number
                return KerasTensor(tuple(shape), dtype=dtype, name=self.name)
            out["bounding_boxes"] = {"boxes": fitted(boxes["boxes"], "float32"),
                                     "labels": fitted(boxes["labels"], boxes["labels"].dtype)}
        return tree.map_structure(lambda t: KerasTensor(t.shape, dtype=t.dtype, name=self.name), out)

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "max_number": self.max_number,
                       "fill_value": self.fill_value})
        if self.bounding_box_format is not None:
            config["bounding_box_format"] = self.bounding_box_format
        return config


def _batched(layer, images):
    rank = len(images.shape)
    if rank not in (3, 4):
        raise ValueError(f"Layer '{layer.name}' expected an image tensor of rank 3 (single image) or 4 (batch of "
                         f"images). Received: data.shape={tuple(images.shape)}")
    return rank == 4


# Constants of TensorFlow's sparse feature cross (its FingerprintCat64 and default hash key), which Keras uses.
_CROSS_KEY = 0xDECAFCAFFE
_CROSS_MUL = np.uint64(0xC6A4A7935BD1E995)
_SHIFT = np.uint64(47)


def _shift_mix(value):
    return value ^ (value >> _SHIFT)


def _fingerprint_cat(first, second):
    """TensorFlow's FingerprintCat64 of two uint64 arrays (wrapping 64-bit arithmetic)."""
    result = first ^ _CROSS_MUL
    result = result ^ (_shift_mix(second * _CROSS_MUL) * _CROSS_MUL)
    result = result * _CROSS_MUL
    return _shift_mix(_shift_mix(result) * _CROSS_MUL)


def _feature_hashes(values):
    """Each feature as a uint64: an integer's two's complement, or the FarmHash Fingerprint64 of a string."""
    if values.dtype.kind in "iu":
        return values.astype(np.int64).view(np.uint64)
    flat = [fingerprint64(v if isinstance(v, bytes) else str(v).encode("utf-8")) for v in values.reshape(-1)]
    return np.asarray(flat, dtype=np.uint64).reshape(values.shape)


def cross_hash_bins(features, num_bins):
    """The bin of each crossed row: TensorFlow's ``sparse.cross_hashed`` of equal-shape features, modulo."""
    hashed = np.full(features[0].shape, _CROSS_KEY, dtype=np.uint64)
    with np.errstate(over="ignore"):  # 0-d arrays compute as NumPy scalars, which warn when they wrap
        for values in features:
            hashed = _fingerprint_cat(hashed, _feature_hashes(values))
    return (hashed % np.uint64(num_bins)).astype(np.int64)


class HashedCrossing(StringInputLayer):
    """Crosses two or more categorical features (integers or strings) into ``num_bins`` bins, as Keras does.

    The bin of a row is TensorFlow's hashed feature cross of its values, so
    bins equal Keras's (string features use FarmHash's Fingerprint64, from the
    optional package pyfarmhash). Each input is a scalar, ``(batch,)`` or
    ``(batch, 1)``; ``output_mode`` is ``"int"`` (bin indices, int64 unless
    ``dtype`` says otherwise) or ``"one_hot"``. Hashing runs in Python: the
    layer stays in the client and is refused by export.
    """

    def __init__(self, num_bins, output_mode="int", sparse=False, name=None, dtype=None, **kwargs):
        if output_mode == "int" and dtype is None:
            dtype = "int64"
        super().__init__(name=name, dtype=dtype, **kwargs)
        if isinstance(num_bins, bool) or not isinstance(num_bins, (int, np.integer)) or num_bins <= 0:
            raise ValueError(f"Layer '{self.name}': `num_bins` must be a positive integer. "
                             f"Received: num_bins={num_bins!r}")
        validate_output_mode(type(self).__name__, output_mode, ("int", "one_hot"))
        if sparse:
            raise ValueError(f"`sparse=True` cannot be used with kgraph, which has no sparse tensors. "
                             f"Received: sparse={sparse}")
        self.num_bins = int(num_bins)
        self.output_mode = output_mode
        self.sparse = sparse

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple)):
            inputs = type(inputs)(x if isinstance(x, (np.ndarray, KerasTensor)) else _as_array(x) for x in inputs)
        # Not StringInputLayer.__call__: it would merge the features into one array.
        return Layer.__call__(self, inputs, *args, **kwargs)

    def call(self, inputs):
        features = self._checked(inputs)
        for x in features:
            self.refuse_symbolic(x)
        bins = cross_hash_bins([np.asarray(x) for x in features], self.num_bins)
        if self.output_mode == "one_hot" and bins.ndim == 0:
            return encode_categorical(bins.reshape(1), self.output_mode, self.num_bins, self.dtype)[0]
        return encode_categorical(bins, self.output_mode, self.num_bins, self.dtype)

    def _checked(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"`HashedCrossing` should be called on a list or tuple of inputs. Received: "
                             f"inputs={inputs!r}")
        if len(inputs) < 2:
            raise ValueError(f"`HashedCrossing` should be called on at least two inputs. Received: inputs={inputs!r}")
        shape = tuple(inputs[0].shape)
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise ValueError("All `HashedCrossing` inputs should have shape `()`, `(batch_size)` or "
                             f"`(batch_size, 1)`. Received: shapes {[tuple(x.shape) for x in inputs]}")
        if any(tuple(x.shape) != shape for x in inputs[1:]):
            raise ValueError(f"All `HashedCrossing` inputs should have equal shape. Received: shapes "
                             f"{[tuple(x.shape) for x in inputs]}")
        kinds = [np.dtype("O" if str(x.dtype) in ("string", "str") else x.dtype).kind for x in inputs]
        if any(kind not in "iuUSO" for kind in kinds):
            raise ValueError("All `HashedCrossing` inputs should have an integer or string dtype. Received: dtypes "
                             f"{[str(x.dtype) for x in inputs]}")
        return list(inputs)

    def compute_output_shape(self, input_shape):
        return encoded_shape(input_shape[0], self.output_mode, self.num_bins)

    def compute_output_spec(self, inputs):
        self._checked(inputs)
        return KerasTensor(self.compute_output_shape([x.shape for x in inputs]), dtype=self.dtype, name=self.name)

    def get_config(self):
        return {"num_bins": self.num_bins, "output_mode": self.output_mode, "sparse": self.sparse,
                "name": self.name, "dtype": self.dtype}


def _as_array(value):
    array = np.asarray(value)
    return array.astype(object) if array.dtype.kind in "US" else array
