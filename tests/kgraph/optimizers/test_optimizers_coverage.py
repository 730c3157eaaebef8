"""Keras 3.15's ``keras.optimizers`` and ``keras.optimizers.schedules`` names against kgraph's: each is provided or
listed below with the reason it is not. The lists are ``dir()`` of Keras 3.15.1 (public names), pasted so the check
runs without Keras.
"""
import pytest

from kgraph import optimizers

KERAS_OPTIMIZERS = (
    "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "Ftrl", "Lamb", "Lion", "LossScaleOptimizer",
    "MultiOptimizer", "Muon", "Nadam", "Optimizer", "OptimizerMap", "RMSprop", "SGD", "ScheduleFreeAdamW",
    "deserialize", "get", "legacy", "schedules", "serialize",
)

KERAS_SCHEDULES = (
    "CosineDecay", "CosineDecayRestarts", "ExponentialDecay", "InverseTimeDecay", "LearningRateSchedule",
    "PiecewiseConstantDecay", "PolynomialDecay", "deserialize", "serialize",
)

KERAS_LEGACY = ("Adagrad", "Adam", "Ftrl", "Optimizer", "RMSprop", "SGD")

# Every name is provided; a name kgraph could not provide would be listed here with the reason.
NOT_PROVIDED = {}

# Provided as Keras 3 provides them: every name exists, and creating one raises ImportError with the reason.
REFUSED = {"legacy": "Keras 2's optimizers, which run on TensorFlow only (tf_keras); Keras 3 refuses them too"}


def test_every_keras_optimizers_name_is_provided_or_listed_with_a_reason():
    missing = sorted(n for n in KERAS_OPTIMIZERS if n not in dir(optimizers) and n not in NOT_PROVIDED)
    assert missing == [], f"keras.optimizers names kgraph neither has nor lists in NOT_PROVIDED: {missing}"


def test_listed_names_are_really_missing_so_the_list_stays_current():
    assert set(NOT_PROVIDED) | set(REFUSED) <= set(KERAS_OPTIMIZERS)
    assert sorted(n for n in NOT_PROVIDED if n in dir(optimizers)) == []
    assert all(reason.strip() for reason in {**NOT_PROVIDED, **REFUSED}.values())


def test_every_keras_schedules_name_is_provided():
    missing = sorted(n for n in KERAS_SCHEDULES if n not in dir(optimizers.schedules))
    assert missing == [], f"keras.optimizers.schedules names kgraph lacks: {missing}"
    for name in KERAS_SCHEDULES:
        if name[0].isupper() and name != "LearningRateSchedule":
            assert issubclass(getattr(optimizers.schedules, name), optimizers.schedules.LearningRateSchedule)


@pytest.mark.parametrize("name", KERAS_LEGACY)
def test_legacy_optimizers_exist_and_refuse_with_the_reason(name):
    cls = getattr(optimizers.legacy, name)
    with pytest.raises(ImportError, match="legacy.*not supported in Keras 3.*TensorFlow"):
        cls(learning_rate=0.1)


def test_every_optimizer_class_has_its_string_identifier():
    classes = [n for n in KERAS_OPTIMIZERS if n[0].isupper() and n not in NOT_PROVIDED
               and n not in ("Optimizer", "LossScaleOptimizer", "MultiOptimizer", "OptimizerMap")]  # these wrap others
    for name in classes:
        assert type(optimizers.get(name.lower())) is getattr(optimizers, name)
        restored = optimizers.deserialize(optimizers.serialize(getattr(optimizers, name)()))
        assert type(restored) is getattr(optimizers, name)


def test_coverage_counts():
    provided = sum(n in dir(optimizers) for n in KERAS_OPTIMIZERS)
    assert provided + len(NOT_PROVIDED) == len(KERAS_OPTIMIZERS) == 23
