"""Losses with Keras 3's names, defaults and numerics, plus ``get``/``serialize``/``deserialize``."""
from kgraph.losses.classes import BinaryCrossentropy
from kgraph.losses.classes import CategoricalCrossentropy
from kgraph.losses.classes import CosineSimilarity
from kgraph.losses.classes import Huber
from kgraph.losses.classes import KLDivergence
from kgraph.losses.classes import MeanAbsoluteError
from kgraph.losses.classes import MeanSquaredError
from kgraph.losses.classes import SparseCategoricalCrossentropy
from kgraph.losses.functions import binary_crossentropy
from kgraph.losses.functions import categorical_crossentropy
from kgraph.losses.functions import cosine_similarity
from kgraph.losses.functions import huber
from kgraph.losses.functions import kl_divergence
from kgraph.losses.functions import mean_absolute_error
from kgraph.losses.functions import mean_squared_error
from kgraph.losses.functions import sparse_categorical_crossentropy
from kgraph.losses.loss import Loss
from kgraph.losses.loss import LossFunctionWrapper
from kgraph.losses.loss import reduce_weighted_values

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
    if isinstance(loss, Loss):
        return {"module": "kgraph.losses", "class_name": type(loss).__name__, "config": loss.get_config()}
    name = getattr(loss, "__name__", None)
    if name in _FUNCTIONS and _FUNCTIONS[name] is loss:
        return name
    raise ValueError(f"Cannot serialize {loss!r}: expected a Loss instance or a kgraph.losses function.")


def deserialize(config, custom_objects=None):
    """Rebuild a loss from ``serialize``'s output (a name string or a dict).

    custom_objects: ``{name: class_or_function}`` for user-defined losses.
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        if config in custom_objects:
            found = custom_objects[config]
            return found() if isinstance(found, type) else found
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(
            f"Expected a loss name or a dict with 'class_name' and 'config', received {config!r}."
        )
    class_name = config["class_name"]
    cls = custom_objects.get(class_name) or _CLASSES.get(class_name)
    if cls is None:
        raise ValueError(
            f"Unknown loss class {class_name!r}. Expected one of {sorted(_CLASSES)} "
            "or a name passed in custom_objects."
        )
    return cls.from_config(dict(config.get("config", {})))


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
