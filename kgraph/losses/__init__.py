"""Losses with Keras 3's names, defaults and numerics, plus ``get``/``serialize``/``deserialize``."""
from kgraph.losses.classes import (
    CTC,
    BinaryCrossentropy,
    BinaryFocalCrossentropy,
    CategoricalCrossentropy,
    CategoricalFocalCrossentropy,
    CategoricalGeneralizedCrossEntropy,
    CategoricalHinge,
    Circle,
    CosineSimilarity,
    Dice,
    Hinge,
    Huber,
    KLDivergence,
    LogCosh,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    Poisson,
    SparseCategoricalCrossentropy,
    SquaredHinge,
    Tversky,
)
from kgraph.losses.functions import (
    binary_crossentropy,
    binary_focal_crossentropy,
    categorical_crossentropy,
    categorical_focal_crossentropy,
    categorical_hinge,
    cosine_similarity,
    hinge,
    huber,
    kl_divergence,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)
from kgraph.losses.loss import Loss, LossFunctionWrapper, reduce_weighted_values
from kgraph.losses.task_functions import categorical_generalized_cross_entropy, circle, ctc, dice, tversky
from kgraph.saving.object_config import deserialize_object, serialize_object

_CLASSES = {
    cls.__name__: cls
    for cls in (
        Loss, LossFunctionWrapper,
        KLDivergence, Poisson, BinaryCrossentropy, BinaryFocalCrossentropy, CategoricalCrossentropy,
        CategoricalFocalCrossentropy, SparseCategoricalCrossentropy, CategoricalGeneralizedCrossEntropy,
        MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
        CosineSimilarity, LogCosh, Huber,
        Hinge, SquaredHinge, CategoricalHinge,
        Dice, Tversky, Circle, CTC,
    )
}

_FUNCTIONS = {
    fn.__name__: fn
    for fn in (
        kl_divergence, poisson, binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy,
        categorical_focal_crossentropy, sparse_categorical_crossentropy, categorical_generalized_cross_entropy,
        mean_squared_error, mean_absolute_error, mean_absolute_percentage_error, mean_squared_logarithmic_error,
        cosine_similarity, log_cosh, huber,
        hinge, squared_hinge, categorical_hinge,
        dice, tversky, circle, ctc,
    )
}

# Every string ``get`` accepts, mapped to the class it instantiates: Keras's (class names, function names and
# the short aliases), plus the legacy names "huber_loss", "kullback_leibler_divergence" and "logcosh".
_NAMES = {name: cls for name, cls in _CLASSES.items() if cls not in (Loss, LossFunctionWrapper)}
_NAMES.update({
    fn.__name__: cls
    for fn, cls in (
        (kl_divergence, KLDivergence), (poisson, Poisson), (binary_crossentropy, BinaryCrossentropy),
        (binary_focal_crossentropy, BinaryFocalCrossentropy), (categorical_crossentropy, CategoricalCrossentropy),
        (categorical_focal_crossentropy, CategoricalFocalCrossentropy),
        (sparse_categorical_crossentropy, SparseCategoricalCrossentropy),
        (categorical_generalized_cross_entropy, CategoricalGeneralizedCrossEntropy),
        (mean_squared_error, MeanSquaredError), (mean_absolute_error, MeanAbsoluteError),
        (mean_absolute_percentage_error, MeanAbsolutePercentageError),
        (mean_squared_logarithmic_error, MeanSquaredLogarithmicError), (cosine_similarity, CosineSimilarity),
        (log_cosh, LogCosh), (huber, Huber), (hinge, Hinge), (squared_hinge, SquaredHinge),
        (categorical_hinge, CategoricalHinge), (dice, Dice), (tversky, Tversky), (circle, Circle), (ctc, CTC),
    )
})
_NAMES.update({
    "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
    "kld": KLDivergence, "KLD": KLDivergence,
    "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
    "mse": MeanSquaredError, "MSE": MeanSquaredError,
    "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
    "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
    "huber_loss": Huber, "kullback_leibler_divergence": KLDivergence, "logcosh": LogCosh,
})


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


__all__ = sorted([*_CLASSES, *_FUNCTIONS, "reduce_weighted_values", "get", "get_function", "serialize",
                  "deserialize"])
