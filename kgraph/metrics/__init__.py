"""``keras.metrics``: stateful metrics and per-sample metric functions, plus ``get``/``serialize``/``deserialize``."""
from kgraph.losses.functions import binary_focal_crossentropy, categorical_focal_crossentropy
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
from kgraph.metrics.confusion_metrics import (
    FalseNegatives,
    FalsePositives,
    Precision,
    PrecisionAtRecall,
    Recall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
    TrueNegatives,
    TruePositives,
)
from kgraph.metrics.correlation_metrics import (
    ConcordanceCorrelation,
    PearsonCorrelation,
    concordance_correlation,
    pearson_correlation,
)
from kgraph.metrics.f_score_metrics import F1Score, FBetaScore
from kgraph.metrics.hinge_metrics import CategoricalHinge, Hinge, SquaredHinge, categorical_hinge, hinge, squared_hinge
from kgraph.metrics.iou_metrics import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from kgraph.metrics.metric import Metric, to_snake_case
from kgraph.metrics.probabilistic_metrics import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    KLDivergence,
    Poisson,
    SparseCategoricalCrossentropy,
    binary_crossentropy,
    categorical_crossentropy,
    kl_divergence,
    poisson,
    sparse_categorical_crossentropy,
)
from kgraph.metrics.reduction_metrics import Mean, MeanMetricWrapper, Sum, serialize_function
from kgraph.metrics.regression_metrics import (
    CosineSimilarity,
    LogCoshError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    R2Score,
    RootMeanSquaredError,
    huber,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
)
from kgraph.saving.registration import get_registered_name, get_registered_object

_CLASSES = {
    cls.__name__: cls
    for cls in (
        Metric, Mean, Sum, MeanMetricWrapper,
        MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
        MeanSquaredLogarithmicError, CosineSimilarity, LogCoshError, R2Score,
        AUC, FalseNegatives, FalsePositives, Precision, PrecisionAtRecall, Recall, RecallAtPrecision,
        SensitivityAtSpecificity, SpecificityAtSensitivity, TrueNegatives, TruePositives,
        ConcordanceCorrelation, PearsonCorrelation,
        Hinge, SquaredHinge, CategoricalHinge,
        KLDivergence, Poisson, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
        Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
        SparseTopKCategoricalAccuracy,
        F1Score, FBetaScore,
        IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU,
    )
}

# Keras's ALL_OBJECTS_DICT: class names, their snake_case and a few short names. "acc" is kgraph's extra.
_NAMES = {
    **_CLASSES,
    **{to_snake_case(name): cls for name, cls in _CLASSES.items()},
    "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
    "mse": MeanSquaredError, "MSE": MeanSquaredError,
    "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
    "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
    "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
    "acc": Accuracy,
}

_FUNCTIONS = {
    fn.__name__: fn
    for fn in (
        accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy, top_k_categorical_accuracy,
        sparse_top_k_categorical_accuracy,
        mean_squared_error, mean_absolute_error, mean_absolute_percentage_error, mean_squared_logarithmic_error,
        log_cosh, huber,
        hinge, squared_hinge, categorical_hinge,
        binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy, categorical_focal_crossentropy,
        sparse_categorical_crossentropy, kl_divergence, poisson,
        pearson_correlation, concordance_correlation,
    )
}


def get_function(name, custom_objects=None):
    """The metric function called ``name``: from ``custom_objects``, the registered objects, or kgraph's own."""
    fn = get_registered_object(name, custom_objects, _FUNCTIONS)
    if fn is None:
        raise ValueError(f"Unknown metric function {name!r}. Expected one of {sorted(_FUNCTIONS)}, "
                         "or a function registered with `register_keras_serializable` or passed in custom_objects.")
    return fn


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
    """The accuracy metric named ``name`` that ``"accuracy"``/``"acc"`` means for these shapes and loss."""
    # Binary when the prediction's last dimension is 1 or the loss is binary crossentropy; sparse categorical
    # when the labels have one axis fewer than the predictions, or a last dimension of 1 against several
    # classes, or the loss is sparse categorical crossentropy; categorical otherwise.
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
    """Keras's config of a metric, or of a function that ``deserialize`` finds again (kgraph's or registered)."""
    if isinstance(metric, Metric):
        cls = type(metric)
        builtin = _CLASSES.get(cls.__name__) is cls
        return {"module": "kgraph.metrics" if builtin else cls.__module__, "class_name": cls.__name__,
                "config": metric.get_config(), "registered_name": None if builtin else get_registered_name(cls)}
    name = getattr(metric, "__name__", None)
    if callable(metric) and name is not None and get_registered_object(get_registered_name(metric), None,
                                                                        _FUNCTIONS) is metric:
        return serialize_function(metric)
    raise ValueError(f"Cannot serialize {metric!r}: expected a Metric instance, a kgraph.metrics function or a "
                     "function registered with `register_keras_serializable`.")


def deserialize(config, custom_objects=None):
    """A metric (or function) from ``serialize``'s output or a name; ``custom_objects`` maps names to user objects."""
    if isinstance(config, str):
        found = get_registered_object(config, custom_objects, _NAMES)
        if found is None:
            raise ValueError(f"Unknown metric {config!r}. Valid names are: {sorted(_NAMES)}.")
        return found() if isinstance(found, type) else found
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Expected a metric name or a dict with 'class_name' and 'config', received {config!r}.")
    if config["class_name"] == "function":
        return get_function(config["config"], custom_objects)
    name = config.get("registered_name") or config["class_name"]
    cls = get_registered_object(name, custom_objects, _CLASSES) or get_registered_object(
        config["class_name"], custom_objects, _CLASSES)
    if cls is None:
        raise ValueError(f"Unknown metric class {config['class_name']!r}. Expected one of {sorted(_CLASSES)} "
                         "or a name passed in custom_objects.")
    return cls.from_config(dict(config.get("config", {})))


def get(identifier):
    """The ``Metric`` that ``identifier`` (name, config, class, instance or function) means in ``compile``."""
    # As Keras's `get`, a dict is deserialized and a class instantiated; what Keras's compile then does to the
    # result is done here too: a string names the new metric ("mse" -> MeanSquaredError(name="mse")), and a
    # plain function (or a loss) is wrapped in a MeanMetricWrapper named after it.
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier not in _NAMES:
            raise ValueError(f"Unknown metric {identifier!r}. Valid names are: {sorted(_NAMES)}.")
        return _NAMES[identifier](name=identifier)
    metric = deserialize(identifier) if isinstance(identifier, dict) else identifier
    if isinstance(metric, type):
        metric = metric()
    if isinstance(metric, Metric):
        return metric
    if callable(metric):
        name = getattr(metric, "name", None) or to_snake_case(getattr(metric, "__name__", type(metric).__name__))
        return MeanMetricWrapper(metric, name=name)
    raise ValueError(f"Could not interpret metric identifier: {identifier}")


__all__ = sorted([*_CLASSES, *_FUNCTIONS, "get", "get_function", "resolve_accuracy", "serialize", "deserialize"])
