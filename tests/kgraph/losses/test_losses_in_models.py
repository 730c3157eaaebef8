"""The losses of test_keras_loss_parity.py in ``compile``: by string and by instance, the same training as Keras's,
and models compiled with them saved and loaded back (``.pkl``, ``.keras``), Keras reading kgraph's ``.keras``
files and kgraph reading Keras's."""
import numpy as np
import pytest

import kgraph
from kgraph import losses
from kgraph.losses.task_functions import with_loss_mask

RNG = np.random.default_rng(3)
X = RNG.normal(size=(24, 3)).astype(np.float32)
SEQ_X = RNG.normal(size=(24, 7, 3)).astype(np.float32)
TARGETS = {
    "binary": RNG.integers(0, 2, (24, 4)).astype(np.float32),
    "positive": (RNG.random((24, 4)) + 0.1).astype(np.float32),
    "one_hot": np.eye(4, dtype=np.float32)[RNG.integers(0, 4, 24)],
    "labels": RNG.integers(0, 4, 24).astype(np.float32),
    "sequences": np.array([[1, 2, 2, 0], [3, 1, 0, 0], [2, 3, 1, 1]] * 8, dtype=np.int32),
}
FIT = {"batch_size": 8, "epochs": 2, "shuffle": False, "verbose": 0}

# (loss as compile is given it, output activation, targets); the output is "embedding" for Circle's
# L2-normalised embeddings and "sequence" for CTC's per-step logits.
CASES = [
    ("hinge", "tanh", "binary"), ("squared_hinge", "tanh", "binary"), ("categorical_hinge", None, "one_hot"),
    ("poisson", "softplus", "positive"), ("mape", "softplus", "positive"), ("msle", "softplus", "positive"),
    ("log_cosh", None, "positive"), ("logcosh", None, "positive"),
    ("binary_focal_crossentropy", "sigmoid", "binary"), ("categorical_focal_crossentropy", "softmax", "one_hot"),
    ("Dice", "sigmoid", "binary"), ("Tversky", "sigmoid", "binary"), ("circle", "embedding", "labels"),
    ("ctc", "sequence", "sequences"), ("CategoricalGeneralizedCrossEntropy", "softmax", "labels"),
]
IDS = [case[0] for case in CASES]


def _model(lib, output):
    lib.utils.set_random_seed(1)
    if output == "sequence":
        return lib.Sequential([lib.Input((7, 3)), lib.layers.Dense(5, activation="relu"), lib.layers.Dense(4)])
    last = [lib.layers.Dense(4), lib.layers.UnitNormalization()] if output == "embedding" else \
        [lib.layers.Dense(4, activation=output)]
    return lib.Sequential([lib.Input((3,)), lib.layers.Dense(5, activation="relu"), *last])


def _loss(lib, spec):
    """What compile is given: Keras's string, else (for the names Keras's `get` refuses) the class."""
    if spec == "logcosh" and lib is not kgraph:
        return "log_cosh"
    return getattr(lib.losses, spec)() if spec[0].isupper() else spec


def _inputs(output):
    return SEQ_X if output == "sequence" else X


def _max_difference(left, right):
    return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(left, right))


@pytest.mark.parametrize("spec,output,targets", CASES, ids=IDS)
def test_training_follows_keras(spec, output, targets):
    keras = pytest.importorskip("keras")
    x, y = _inputs(output), TARGETS[targets]
    ours, theirs = _model(kgraph, output), _model(keras, output)
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=kgraph.optimizers.SGD(0.05), loss=_loss(kgraph, spec))
    theirs.compile(optimizer=keras.optimizers.SGD(0.05), loss=_loss(keras, spec))
    history = ours.fit(x, y, **FIT).history["loss"]
    expected = theirs.fit(x, y, **FIT).history["loss"]
    np.testing.assert_allclose(history, expected, rtol=1e-5, atol=1e-6)
    assert _max_difference(ours.get_weights(), [keras.ops.convert_to_numpy(w) for w in theirs.weights]) < 1e-5


@pytest.mark.parametrize("spec,output,targets", CASES, ids=IDS)
def test_compiled_models_save_and_load_back(tmp_path, spec, output, targets):
    x, y = _inputs(output), TARGETS[targets]
    model = _model(kgraph, output)
    model.compile(optimizer="sgd", loss=losses.get(spec))
    model.fit(x, y, **FIT)
    expected = model.evaluate(x, y, verbose=0)
    for suffix in ("pkl", "keras"):
        model.save(tmp_path / f"model.{suffix}")
        loaded = kgraph.saving.load_model(tmp_path / f"model.{suffix}")
        assert type(loaded.loss) is type(model.loss) and loaded.loss.get_config() == model.loss.get_config()
        assert loaded.evaluate(x, y, verbose=0) == expected


@pytest.mark.parametrize("spec,output,targets", CASES, ids=IDS)
def test_keras_files_move_both_ways(tmp_path, spec, output, targets):
    keras = pytest.importorskip("keras")
    x, y = _inputs(output), TARGETS[targets]
    ours = _model(kgraph, output)
    ours.compile(optimizer="sgd", loss=losses.get(spec))
    ours.fit(x, y, **FIT)
    ours.save(tmp_path / "kgraph.keras")
    theirs = keras.saving.load_model(tmp_path / "kgraph.keras")
    assert type(theirs.loss).__name__ == type(ours.loss).__name__
    assert theirs.evaluate(x, y, verbose=0) == pytest.approx(ours.evaluate(x, y, verbose=0), rel=1e-5, abs=1e-6)
    theirs.save(tmp_path / "keras.keras")
    back = kgraph.saving.load_model(tmp_path / "keras.keras")
    assert type(back.loss) is type(ours.loss) and back.loss.get_config() == ours.loss.get_config()
    assert back.evaluate(x, y, verbose=0) == pytest.approx(theirs.evaluate(x, y, verbose=0), rel=1e-5, abs=1e-6)


def test_a_prediction_mask_leaves_its_entries_out():
    y_true, y_pred = RNG.normal(size=(4, 5, 2)), RNG.normal(size=(4, 5, 2))
    mask = np.arange(5)[None, :] < np.array([[5], [3], [1], [4]])
    per_step = np.mean((y_true - y_pred) ** 2, axis=-1)
    masked = with_loss_mask(y_pred.copy(), mask)
    np.testing.assert_allclose(losses.MeanSquaredError()(y_true, masked), per_step[mask].mean(), rtol=1e-12)
    np.testing.assert_allclose(losses.MeanSquaredError(reduction="sum")(y_true, masked), per_step[mask].sum())
    np.testing.assert_allclose(losses.MeanSquaredError()(y_true, y_pred), per_step.mean(), rtol=1e-12)


def _masked_sequence_model(lib):
    lib.utils.set_random_seed(1)
    return lib.Sequential([lib.Input((6,), dtype="int32"), lib.layers.Embedding(10, 3, mask_zero=True),
                           lib.layers.SimpleRNN(4, return_sequences=True), lib.layers.Dense(2)])


def test_masked_sequence_models_train_as_in_keras():
    keras = pytest.importorskip("keras")
    tokens = RNG.integers(1, 10, (16, 6)).astype(np.int32)
    tokens[np.arange(6)[None, :] >= RNG.integers(1, 7, (16, 1))] = 0  # padded at the end
    targets = RNG.normal(size=(16, 6, 2)).astype(np.float32)
    ours, theirs = _masked_sequence_model(kgraph), _masked_sequence_model(keras)
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=kgraph.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    assert ours.evaluate(tokens, targets, verbose=0) == pytest.approx(theirs.evaluate(tokens, targets, verbose=0),
                                                                      rel=1e-6)
    np.testing.assert_allclose(ours.fit(tokens, targets, **FIT).history["loss"],
                               theirs.fit(tokens, targets, **FIT).history["loss"], rtol=1e-5)


FUNCTION_CASES = [case for case in CASES if case[0] in ("hinge", "log_cosh", "categorical_focal_crossentropy",
                                                        "circle", "ctc")]


@pytest.mark.parametrize("spec,output,targets", FUNCTION_CASES, ids=[case[0] for case in FUNCTION_CASES])
def test_keras_files_of_models_compiled_with_loss_functions(tmp_path, spec, output, targets):
    # Keras saves a function by its name; kgraph compiles with its own function of that name.
    keras = pytest.importorskip("keras")
    x, y = _inputs(output), TARGETS[targets]
    theirs = _model(keras, output)
    theirs.compile(optimizer="sgd", loss=getattr(keras.losses, spec))
    theirs.fit(x, y, **FIT)
    theirs.save(tmp_path / "keras.keras")
    ours = kgraph.saving.load_model(tmp_path / "keras.keras")
    assert ours.loss is getattr(losses, spec)
    assert ours.evaluate(x, y, verbose=0) == pytest.approx(theirs.evaluate(x, y, verbose=0), rel=1e-5, abs=1e-6)


def test_a_mask_that_cannot_weigh_the_losses_is_a_clear_error():
    scores = kgraph.Input(shape=(3, 4))
    mask = kgraph.Input(shape=(1, 4))
    model = kgraph.Model([scores, mask], kgraph.layers.Softmax()(kgraph.layers.Dense(4)(scores), mask=mask))
    model.compile(loss="mse")
    with pytest.raises(ValueError, match=r"mask of the predictions, of shape \(8, 1, 4\).*\(8, 3\)"):
        model.fit([np.ones((8, 3, 4)), np.ones((8, 1, 4))], np.ones((8, 3, 4)), verbose=0)
