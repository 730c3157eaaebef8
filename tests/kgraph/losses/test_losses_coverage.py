"""Every public name of ``keras.losses`` is provided, with Keras's arguments, defaults, configs and string names.

The name lists are Keras 3.15.1's, pasted here so the checks run without Keras installed.
"""
import inspect

import pytest

from kgraph import losses, metrics

# dir(keras.losses) of Keras 3.15.1.
KERAS_LOSSES = (
    "BinaryCrossentropy", "BinaryFocalCrossentropy", "CTC", "CategoricalCrossentropy", "CategoricalFocalCrossentropy",
    "CategoricalGeneralizedCrossEntropy", "CategoricalHinge", "Circle", "CosineSimilarity", "Dice", "Hinge", "Huber",
    "KLDivergence", "LogCosh", "Loss", "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredError",
    "MeanSquaredLogarithmicError", "Poisson", "SparseCategoricalCrossentropy", "SquaredHinge", "Tversky",
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy", "categorical_focal_crossentropy",
    "categorical_generalized_cross_entropy", "categorical_hinge", "circle", "cosine_similarity", "ctc",
    "deserialize", "dice", "get", "hinge", "huber", "kl_divergence", "log_cosh", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_error", "mean_squared_logarithmic_error", "poisson", "serialize",
    "sparse_categorical_crossentropy", "squared_hinge", "tversky",
)

# Names kgraph does not provide, with the reason: none.
NOT_PROVIDED_LOSSES = {}

# The strings keras.losses.get accepts (its ALL_OBJECTS_DICT without Loss and LossFunctionWrapper).
KERAS_LOSS_STRINGS = (
    "BCE", "BinaryCrossentropy", "BinaryFocalCrossentropy", "CTC", "CategoricalCrossentropy",
    "CategoricalFocalCrossentropy", "CategoricalHinge", "Circle", "CosineSimilarity", "Dice", "Hinge", "Huber", "KLD",
    "KLDivergence", "LogCosh", "MAE", "MAPE", "MSE", "MSLE", "MeanAbsoluteError", "MeanAbsolutePercentageError",
    "MeanSquaredError", "MeanSquaredLogarithmicError", "Poisson", "SparseCategoricalCrossentropy", "SquaredHinge",
    "Tversky", "bce", "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "categorical_focal_crossentropy", "categorical_hinge", "circle", "cosine_similarity", "ctc", "dice", "hinge",
    "huber", "kl_divergence", "kld", "log_cosh", "mae", "mape", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_error", "mean_squared_logarithmic_error", "mse", "msle",
    "poisson", "sparse_categorical_crossentropy", "squared_hinge", "tversky",
)

# kgraph also accepts the tf.keras names Keras 3 keeps only in its legacy namespace, and the generalized cross
# entropy by name (Keras 3.15 leaves it out of `get`, though its files name the class and Keras loads them).
KGRAPH_EXTRA_STRINGS = {
    "huber_loss": "Huber", "kullback_leibler_divergence": "KLDivergence", "logcosh": "LogCosh",
    "CategoricalGeneralizedCrossEntropy": "CategoricalGeneralizedCrossEntropy",
    "categorical_generalized_cross_entropy": "CategoricalGeneralizedCrossEntropy",
}

# What a string gives: the class of that name, or the class whose function it names.
SHORT_NAMES = {"bce": "BinaryCrossentropy", "kld": "KLDivergence", "mae": "MeanAbsoluteError",
               "mse": "MeanSquaredError", "mape": "MeanAbsolutePercentageError", "msle": "MeanSquaredLogarithmicError",
               "huber": "Huber", "ctc": "CTC"}

NOT_CLASSES_OR_FUNCTIONS = ("get", "serialize", "deserialize")


def _class_named_by(string):
    if string in KGRAPH_EXTRA_STRINGS:
        return KGRAPH_EXTRA_STRINGS[string]
    if string.lower() in SHORT_NAMES:
        return SHORT_NAMES[string.lower()]
    if string[0].isupper():
        return string
    return next(cls.__name__ for cls in _loss_classes() if cls().fn.__name__ == string)


def _loss_classes():
    return [getattr(losses, n) for n in KERAS_LOSSES if n[0].isupper() and n not in ("Loss",)]


def test_every_keras_losses_name_is_provided_or_listed_with_a_reason():
    missing = sorted(n for n in KERAS_LOSSES if not hasattr(losses, n) and n not in NOT_PROVIDED_LOSSES)
    assert missing == [], f"keras.losses names kgraph neither has nor lists in NOT_PROVIDED_LOSSES: {missing}"
    assert len(KERAS_LOSSES) == 48 and NOT_PROVIDED_LOSSES == {}


def test_classes_are_losses_and_functions_are_functions():
    for name in KERAS_LOSSES:
        obj = getattr(losses, name)
        if name[0].isupper():
            assert inspect.isclass(obj) and issubclass(obj, losses.Loss), name
        else:
            assert inspect.isfunction(obj), name


def test_metrics_share_the_loss_formulas():
    # As in Keras, the metric functions of the same formula are the loss functions themselves.
    shared = ("binary_focal_crossentropy", "categorical_focal_crossentropy", "categorical_hinge", "hinge", "log_cosh",
              "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "poisson", "squared_hinge")
    assert [n for n in shared if getattr(metrics, n) is not getattr(losses, n)] == []


@pytest.mark.parametrize("string", KERAS_LOSS_STRINGS + tuple(KGRAPH_EXTRA_STRINGS))
def test_every_string_keras_accepts_gives_its_loss(string):
    loss = losses.get(string)
    assert isinstance(loss, losses.Loss) and type(loss).__name__ == _class_named_by(string)
    assert losses.get_function(string) is loss.fn


def test_unknown_strings_are_refused_by_name():
    with pytest.raises(ValueError, match="Unknown loss 'hingee'"):
        losses.get("hingee")
    with pytest.raises(ValueError, match="q must be in the interval"):
        losses.CategoricalGeneralizedCrossEntropy(q=1.0)


@pytest.mark.parametrize("cls", _loss_classes(), ids=lambda cls: cls.__name__)
def test_configs_round_trip(cls):
    loss = cls(reduction="sum", name="custom")
    rebuilt = losses.deserialize(losses.serialize(loss))
    assert type(rebuilt) is cls and rebuilt.get_config() == loss.get_config()
    assert cls.from_config(loss.get_config()).get_config() == loss.get_config()
    assert losses.deserialize(losses.serialize(loss.fn)).fn is loss.fn  # a function is saved by its name


def test_the_lists_are_keras_own():
    keras = pytest.importorskip("keras")
    assert tuple(sorted(n for n in dir(keras.losses) if not n.startswith("_"))) == tuple(sorted(KERAS_LOSSES))
    from keras.src.losses import ALL_OBJECTS_DICT
    assert sorted(set(ALL_OBJECTS_DICT) - {"Loss", "LossFunctionWrapper"}) == sorted(KERAS_LOSS_STRINGS)
    refused = []
    for string in KGRAPH_EXTRA_STRINGS:
        try:
            keras.losses.get(string)
        except ValueError:
            refused.append(string)
    assert refused == list(KGRAPH_EXTRA_STRINGS)


def test_arguments_and_defaults_match_keras():
    keras = pytest.importorskip("keras")
    differing = []
    for name in KERAS_LOSSES:
        if name in NOT_CLASSES_OR_FUNCTIONS:
            continue
        ours, theirs = getattr(losses, name), getattr(keras.losses, name)
        ours = ours.__init__ if inspect.isclass(ours) else ours
        theirs = theirs.__init__ if inspect.isclass(theirs) else theirs
        ours_params = [(p.name, p.default, p.kind) for p in inspect.signature(ours).parameters.values()]
        theirs_params = [(p.name, p.default, p.kind) for p in inspect.signature(theirs).parameters.values()]
        if ours_params != theirs_params:
            differing.append((name, ours_params, theirs_params))
    assert differing == []


ARGUMENTS = {
    "BinaryFocalCrossentropy": {"apply_class_balancing": True, "alpha": 0.4, "gamma": 1.5, "from_logits": True,
                                "label_smoothing": 0.1, "axis": -1},
    "CategoricalFocalCrossentropy": {"alpha": 0.5, "gamma": 3.0, "from_logits": True, "label_smoothing": 0.2},
    "CategoricalGeneralizedCrossEntropy": {"q": 0.3}, "Circle": {"gamma": 10.0, "margin": 0.25,
                                                                 "remove_diagonal": False},
    "Dice": {"axis": (1, 2)}, "Tversky": {"alpha": 0.3, "beta": 0.7, "axis": (1, 2)}, "Huber": {"delta": 2.0},
    "CosineSimilarity": {"axis": 1}, "BinaryCrossentropy": {"from_logits": True, "label_smoothing": 0.1},
    "CategoricalCrossentropy": {"from_logits": True, "label_smoothing": 0.2},
}


# Arguments Keras 3.15's get_config leaves out (so they are lost in its files); kgraph's configs keep them, and
# Keras's from_config takes them.
KERAS_OMITS = {"SparseCategoricalCrossentropy": "axis", "CosineSimilarity": "axis", "Huber": "delta"}


def _without_keras_omissions(cls, config):
    """kgraph's config as Keras writes it."""
    config = dict(config)
    config.pop(KERAS_OMITS.get(cls.__name__), None)
    return config


@pytest.mark.parametrize("cls", _loss_classes(), ids=lambda cls: cls.__name__)
def test_configs_are_keras_and_move_both_ways(cls):
    keras = pytest.importorskip("keras")
    theirs_cls = getattr(keras.losses, cls.__name__)
    kwargs = ARGUMENTS.get(cls.__name__, {})
    ours, theirs = cls(reduction="sum", name="custom", **kwargs), theirs_cls(reduction="sum", name="custom", **kwargs)
    assert _without_keras_omissions(cls, ours.get_config()) == theirs.get_config()
    assert theirs_cls.from_config(ours.get_config()).get_config() == theirs.get_config()
    assert _without_keras_omissions(cls, cls.from_config(theirs.get_config()).get_config()) == theirs.get_config()
    assert _without_keras_omissions(cls, cls().get_config()) == theirs_cls().get_config()
