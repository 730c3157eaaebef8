"""``keras.regularizers.OrthogonalRegularizer`` (and ``orthogonal_regularizer``): Keras's penalty and gradient, its
config and names, and a model regularized with it training and saving both ways."""
import numpy as np
import pytest

import kgraph
from kgraph import regularizers

keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")

WEIGHT = np.random.default_rng(0).normal(size=(5, 3)).astype("float32")


@pytest.mark.parametrize("mode", ["rows", "columns"])
@pytest.mark.parametrize("factor", [0.01, 0.7])
def test_penalty_and_gradient_match_keras(mode, factor):
    tensor = torch.tensor(WEIGHT, requires_grad=True)
    want = keras.regularizers.OrthogonalRegularizer(factor, mode)(tensor)
    want.backward()
    x = np.array(WEIGHT)
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        got = regularizers.OrthogonalRegularizer(factor, mode)(x)
    grad = tape.gradient(got, x)
    assert np.shape(got) == () and np.asarray(got).dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), tensor.grad.numpy(), rtol=1e-4, atol=1e-7)


def test_orthogonal_rows_cost_nothing():
    q = np.linalg.qr(np.random.default_rng(1).normal(size=(6, 6)))[0][:4].astype("float32")
    assert float(regularizers.OrthogonalRegularizer(1.0)(q)) == pytest.approx(0.0, abs=1e-6)


def test_names_config_and_serialized_forms_agree_with_keras():
    assert regularizers.orthogonal_regularizer is regularizers.OrthogonalRegularizer
    for name in ("orthogonal_regularizer", "OrthogonalRegularizer"):
        ours, theirs = regularizers.get(name), keras.regularizers.get(name)
        assert isinstance(ours, regularizers.OrthogonalRegularizer)
        # Keras keeps the factor as a float32 tensor, so its config holds 0.01 rounded to float32.
        assert ours.get_config() == {"factor": 0.01, "mode": "rows"}
        assert theirs.get_config() == {"factor": pytest.approx(0.01, rel=1e-7), "mode": "rows"}
    ours = regularizers.OrthogonalRegularizer(factor=0.5, mode="columns")
    theirs = keras.regularizers.deserialize(keras.saving.serialize_keras_object(ours))
    assert type(theirs) is keras.regularizers.OrthogonalRegularizer and theirs.get_config() == ours.get_config()
    back = regularizers.deserialize(keras.regularizers.serialize(theirs))
    assert type(back) is regularizers.OrthogonalRegularizer and back.get_config() == ours.get_config()


def test_bad_arguments_and_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="Invalid value for argument `mode`"):
        regularizers.OrthogonalRegularizer(mode="diagonal")
    with pytest.raises(ValueError, match="non-negative float"):
        regularizers.OrthogonalRegularizer(factor=-1.0)
    with pytest.raises(ValueError, match="must have rank 2"):
        regularizers.OrthogonalRegularizer()(np.ones((2, 3, 4), "float32"))
    with pytest.raises(ValueError, match="at least two columns"):
        regularizers.OrthogonalRegularizer(mode="columns")(np.ones((4, 1), "float32"))


def _model(module):
    return module.Sequential([module.Input((5,)), module.layers.Dense(
        3, kernel_regularizer=module.regularizers.OrthogonalRegularizer(0.3, "rows"), name="dense")])


def test_model_loss_and_training_match_keras():
    ours, theirs = _model(kgraph), _model(keras)
    rng = np.random.default_rng(2)
    weights = [rng.normal(size=(5, 3)).astype("float32"), np.zeros(3, "float32")]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    x, y = rng.normal(size=(16, 5)).astype("float32"), rng.normal(size=(16, 3)).astype("float32")
    ours.compile(optimizer=kgraph.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = ours.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0).history["loss"]
    expected = theirs.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(history, expected, rtol=1e-5)
    np.testing.assert_allclose(ours.get_weights()[0], np.asarray(theirs.get_weights()[0]), atol=1e-6)


def test_regularized_model_saves_as_pkl_and_keras_reads_its_keras_file(tmp_path):
    ours = _model(kgraph)
    ours.compile(optimizer="sgd", loss="mse")
    ours.save(tmp_path / "ours.pkl")
    loaded = kgraph.load_model(tmp_path / "ours.pkl").get_layer("dense").kernel_regularizer
    assert isinstance(loaded, regularizers.OrthogonalRegularizer)
    assert loaded.get_config() == {"factor": 0.3, "mode": "rows"}
    ours.save(tmp_path / "ours.keras")
    theirs = keras.saving.load_model(tmp_path / "ours.keras")
    assert theirs.get_layer("dense").kernel_regularizer.get_config() == {"factor": pytest.approx(0.3), "mode": "rows"}


def test_keras_files_with_the_regularizer_load(tmp_path):
    _model(kgraph).save(tmp_path / "ours.keras")
    loaded = kgraph.load_model(tmp_path / "ours.keras").get_layer("dense").kernel_regularizer
    assert isinstance(loaded, regularizers.OrthogonalRegularizer) and loaded.get_config()["mode"] == "rows"
    _model(keras).save(tmp_path / "theirs.keras")
    loaded = kgraph.load_model(tmp_path / "theirs.keras").get_layer("dense").kernel_regularizer
    assert isinstance(loaded, regularizers.OrthogonalRegularizer) and loaded.mode == "rows"
