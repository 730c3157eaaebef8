"""Losses with Keras 3's names, defaults and numerics, plus ``get``/``serialize``/``deserialize``."""
from kgraph.losses.classes import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CosineSimilarity,
    Huber,
    KLDivergence,
    MeanAbsoluteError,
    MeanSquaredError,
    SparseCategoricalCrossentropy,
)
from kgraph.losses.functions import (
    binary_crossentropy,
    categorical_crossentropy,
    cosine_similarity,
    huber,
    kl_divergence,
    mean_absolute_error,
    mean_squared_error,
    sparse_categorical_crossentropy,
)
from kgraph.losses.loss import Loss, LossFunctionWrapper, reduce_weighted_values
from kgraph.saving.object_config import deserialize_object, serialize_object

_CLASSES = {
    cls.__name__: cls
    for cls in (
        Loss,
        LossFunctionWrapper,
        MeanSquaredError,
        MeanAbsoluteError,
        Huber,
        KLDivergence,
        CosineSimilarity,
        BinaryCrossentropy,
        CategoricalCrossentropy,
        SparseCategoricalCrossentropy,
    )
}

# Every string ``get`` accepts, mapped to the class it instantiates.
_NAMES = {
    "mean_squared_error": MeanSquaredError,
    "mse": MeanSquaredError,
    "MSE": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError,
    "mae": MeanAbsoluteError,
    "MAE": MeanAbsoluteError,
    "huber": Huber,
    "huber_loss": Huber,
    "kl_divergence": KLDivergence,
    "kld": KLDivergence,
    "KLD": KLDivergence,
    "kullback_leibler_divergence": KLDivergence,
    "cosine_similarity": CosineSimilarity,
    "binary_crossentropy": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
}
_NAMES.update({name: cls for name, cls in _CLASSES.items() if cls not in (Loss, LossFunctionWrapper)})

_FUNCTIONS = {
    fn.__name__: fn
    for fn in (
        mean_squared_error,
        mean_absolute_error,
        huber,
        kl_divergence,
        cosine_similarity,
        binary_crossentropy,
        categorical_crossentropy,
        sparse_categorical_crossentropy,
    )
}


def get_function(name):
    """Return the per-sample function called ``name`` (e.g. ``"mean_squared_error"``)."""
    if name in _FUNCTIONS:
        return _FUNCTIONS[name]
    if name in _NAMES:
        return _NAMES[name]().fn
    raise ValueError(f"Unknown loss function {name!r}. Expected one of {sorted(_FUNCTIONS)}.")


def serialize(loss):
    """Return a JSON-friendly description of ``loss`` that ``deserialize`` inverts."""
    if loss is None:
        return None
    return serialize_object(loss, Loss, _FUNCTIONS, "kgraph.losses")


def deserialize(config, custom_objects=None):
    """Rebuild a loss from ``serialize``'s output; ``custom_objects`` maps names to user classes or functions."""
    return deserialize_object(config, _CLASSES, get, "loss", custom_objects)


def get(identifier):
    """Resolve ``identifier`` to a loss.

    A string gives a new ``Loss`` instance with default arguments (e.g.
    ``"mse"`` -> ``MeanSquaredError()``); a dict is deserialized; a ``Loss``
    instance or any other callable is returned as is; ``None`` gives ``None``.
    """
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _NAMES:
            raise ValueError(f"Unknown loss {identifier!r}. Valid names are: {sorted(_NAMES)}.")
        return _NAMES[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss identifier {identifier!r}: expected a string, dict, Loss or callable.")


__all__ = [
    "Loss",
    "LossFunctionWrapper",
    "MeanSquaredError",
    "MeanAbsoluteError",
    "Huber",
    "KLDivergence",
    "CosineSimilarity",
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy",
    "mean_squared_error",
    "mean_absolute_error",
    "huber",
    "kl_divergence",
    "cosine_similarity",
    "binary_crossentropy",
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
    "reduce_weighted_values",
    "get",
    "get_function",
    "serialize",
    "deserialize",
]
