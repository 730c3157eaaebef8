"""Stateful metrics with Keras 3's names, plus ``get``/``serialize``/``deserialize``."""
from kgraph.metrics.accuracy_metrics import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from kgraph.metrics.auc import AUC
from kgraph.metrics.confusion_metrics import Precision, Recall
from kgraph.metrics.metric import Mean, MeanMetricWrapper, Metric, Sum
from kgraph.metrics.regression_metrics import (
    MeanAbsoluteError,
    MeanSquaredError,
    mean_absolute_error,
    mean_squared_error,
)
from kgraph.saving.object_config import deserialize_object, serialize_object

_CLASSES = {
    cls.__name__: cls
    for cls in (
        Metric,
        Mean,
        Sum,
        MeanMetricWrapper,
        Accuracy,
        BinaryAccuracy,
        CategoricalAccuracy,
        SparseCategoricalAccuracy,
        TopKCategoricalAccuracy,
        SparseTopKCategoricalAccuracy,
        MeanSquaredError,
        MeanAbsoluteError,
        AUC,
        Precision,
        Recall,
    )
}

# Strings ``get`` accepts; the metric is named after the string, as Keras
# names compiled metrics after what the user wrote.
_NAMES = {
    "accuracy": Accuracy,
    "acc": Accuracy,
    "binary_accuracy": BinaryAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "mean_squared_error": MeanSquaredError,
    "mse": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError,
    "mae": MeanAbsoluteError,
    "auc": AUC,
    "precision": Precision,
    "recall": Recall,
}

_FUNCTIONS = {
    fn.__name__: fn
    for fn in (
        accuracy,
        binary_accuracy,
        categorical_accuracy,
        sparse_categorical_accuracy,
        top_k_categorical_accuracy,
        sparse_top_k_categorical_accuracy,
        mean_squared_error,
        mean_absolute_error,
    )
}

_ABSTRACT = (Metric, Mean, Sum, MeanMetricWrapper)


def get_function(name):
    """Return the per-sample metric function called ``name``."""
    if name not in _FUNCTIONS:
        raise ValueError(f"Unknown metric function {name!r}. Expected one of {sorted(_FUNCTIONS)}.")
    return _FUNCTIONS[name]


def _crossentropy_kind(loss):
    """``"binary"``, ``"sparse"`` or ``None``: the crossentropy a loss identifier denotes."""
    if loss is None:
        return None
    if isinstance(loss, str):
        names = [loss]
    else:
        wrapped = getattr(loss, "fn", None)
        names = [getattr(loss, "__name__", ""), type(loss).__name__, getattr(wrapped, "__name__", "")]
    normalized = {name.lower().replace("_", "") for name in names}
    if normalized & {"binarycrossentropy", "bce"}:
        return "binary"
    if "sparsecategoricalcrossentropy" in normalized:
        return "sparse"
    return None


def resolve_accuracy(name, y_true_shape, y_pred_shape, loss=None):
    """Pick the accuracy metric meant by ``"accuracy"``/``"acc"``, as Keras does.

    Binary when the prediction's last dimension is 1 or the loss is binary
    crossentropy; sparse categorical when the labels have one axis fewer than
    the predictions, or a last dimension of 1 against several classes, or the
    loss is sparse categorical crossentropy; categorical otherwise.
    Returns a new metric instance named ``name``.
    """
    y_true_shape, y_pred_shape = tuple(y_true_shape), tuple(y_pred_shape)
    loss_kind = _crossentropy_kind(loss)
    pred_last = y_pred_shape[-1] if y_pred_shape else 1
    true_last = y_true_shape[-1] if y_true_shape else 1
    if pred_last == 1 or loss_kind == "binary":
        return BinaryAccuracy(name=name)
    if (
        len(y_true_shape) < len(y_pred_shape)
        or (true_last == 1 and pred_last > 1)
        or loss_kind == "sparse"
    ):
        return SparseCategoricalAccuracy(name=name)
    return CategoricalAccuracy(name=name)


def serialize(metric):
    """Return a JSON-friendly description of ``metric`` that ``deserialize`` inverts."""
    return serialize_object(metric, Metric, _FUNCTIONS, "kgraph.metrics")


def deserialize(config, custom_objects=None):
    """Rebuild a metric from ``serialize``'s output; ``custom_objects`` maps names to user classes or functions."""
    return deserialize_object(config, _CLASSES, get, "metric", custom_objects)


def get(identifier):
    """Resolve ``identifier`` to a metric.

    A string gives a new metric named after it (``"mse"`` ->
    ``MeanSquaredError(name="mse")``; ``"accuracy"`` -> plain ``Accuracy``,
    see ``resolve_accuracy`` for the shape-based choice); a class name gives
    an instance with default arguments; a dict is deserialized; a ``Metric``
    instance or a callable is returned as is.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier in _NAMES:
            return _NAMES[identifier](name=identifier)
        if identifier in _CLASSES and _CLASSES[identifier] not in _ABSTRACT:
            return _CLASSES[identifier]()
        valid = sorted(_NAMES) + sorted(n for n, c in _CLASSES.items() if c not in _ABSTRACT)
        raise ValueError(f"Unknown metric {identifier!r}. Valid names are: {valid}.")
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier {identifier!r}: expected a string, dict, Metric or callable.")


__all__ = [
    "Metric",
    "Mean",
    "Sum",
    "MeanMetricWrapper",
    "Accuracy",
    "BinaryAccuracy",
    "CategoricalAccuracy",
    "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "MeanSquaredError",
    "MeanAbsoluteError",
    "AUC",
    "Precision",
    "Recall",
    "accuracy",
    "binary_accuracy",
    "categorical_accuracy",
    "sparse_categorical_accuracy",
    "top_k_categorical_accuracy",
    "sparse_top_k_categorical_accuracy",
    "mean_squared_error",
    "mean_absolute_error",
    "get",
    "get_function",
    "resolve_accuracy",
    "serialize",
    "deserialize",
]
