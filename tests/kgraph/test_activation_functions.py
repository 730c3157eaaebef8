"""Keras 3's activations beyond the classic ones (celu, glu, mish, the shrinks, sparsemax...): values and gradients
against Keras's, by name in layers, and saved in configs, ``.pkl`` and ``.keras`` files (read by Keras too).

sparsemax is checked against its definition (Martins & Astudillo 2016) instead: Keras 3.15's threshold sums every
cumulative sum of the support, so its outputs do not sum to 1 once two or more entries are kept
(https://github.com/keras-team/keras/issues/23425, fixed after 3.15); kgraph computes the projection itself.
"""
import numpy as np
import pytest

import kgraph
from kgraph import activations, layers

keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")

# (name, keyword arguments): every activation kgraph added, with non-default arguments where it takes some.
CASES = [
    ("celu", {}), ("celu", {"alpha": 0.5}), ("glu", {}), ("glu", {"axis": 0}), ("hard_shrink", {}),
    ("hard_shrink", {"threshold": 1.0}), ("hard_silu", {}), ("hard_swish", {}), ("hard_tanh", {}),
    ("log_sigmoid", {}), ("mish", {}), ("soft_shrink", {}), ("soft_shrink", {"threshold": 0.25}),
    ("sparse_plus", {}), ("sparse_sigmoid", {}), ("sparsemax", {}), ("sparsemax", {"axis": 0}),
    ("squareplus", {}), ("squareplus", {"b": 1}), ("tanh_shrink", {}),
    ("threshold", {"threshold": 0.3, "default_value": -2.0}),
]
NAMES = sorted({name for name, _ in CASES if name != "threshold"})
# Points on both sides of every kink (+-0.25, +-0.5, +-1, +-3), and values far out.
GRID = np.array([[-30.0, -3.5, -3.0, -1.5, -1.0, -0.75], [-0.5, -0.4, -0.25, -0.1, 0.0, 0.1],
                 [0.3, 0.5, 0.6, 1.0, 1.2, 2.9], [3.0, 3.1, 7.0, 30.0, 0.45, -0.45]], dtype="float32")
# Gradients are compared off these points, where kgraph's ops take another (sub)gradient than torch's: at the
# corners of hard_tanh and sparse_sigmoid (Keras: 0). celu's 0 is a smooth point: its derivative, 1, is compared.
KINKS = {"hard_tanh": (-1.0, 1.0), "sparse_sigmoid": (-1.0, 1.0)}


def _sparsemax_reference(x, axis):
    """The projection onto the simplex, and the vector-Jacobian product of the weights ``w``."""
    z = np.moveaxis(np.asarray(x, "float64"), axis, -1)
    ranked = -np.sort(-z, axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    support_size = np.sum(1 + k * ranked > np.cumsum(ranked, axis=-1), axis=-1, keepdims=True)
    tau = (np.take_along_axis(np.cumsum(ranked, axis=-1), support_size - 1, axis=-1) - 1) / support_size
    out = np.maximum(z - tau, 0)

    def vjp(w):
        w = np.moveaxis(w, axis, -1)
        kept = out > 0
        grad = kept * (w - np.sum(kept * w, axis=-1, keepdims=True) / support_size)
        return np.moveaxis(grad, -1, axis)
    return np.moveaxis(out, -1, axis), vjp


def _expected_value_and_grad(name, kwargs, x):
    """Keras's value and gradient of ``sum(f(x) * cos(0, 1, 2, ...))`` (sparsemax's by its definition)."""
    if name == "sparsemax":
        out, vjp = _sparsemax_reference(x, kwargs.get("axis", -1))
        return out, vjp(np.cos(np.arange(out.size)).reshape(out.shape))
    tensor = torch.tensor(x, requires_grad=True)
    out = getattr(keras.activations, name)(tensor, **kwargs)
    (out * torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape).cos()).sum().backward()
    return out.detach().numpy(), tensor.grad.numpy()


def _kgraph_value_and_grad(name, kwargs, x):
    x = np.array(x)
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        out = getattr(activations, name)(x, **kwargs)
        weights = np.cos(np.arange(np.size(out), dtype=out.dtype)).reshape(np.shape(out))
        total = kgraph.ops.sum(kgraph.ops.multiply(out, weights))
    return np.asarray(out), np.asarray(tape.gradient(total, x))


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_values_and_gradients_match_keras(name, kwargs):
    want, want_grad = _expected_value_and_grad(name, kwargs, GRID)
    got, got_grad = _kgraph_value_and_grad(name, kwargs, GRID)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    smooth = ~np.isin(GRID, KINKS.get(name, ()))
    np.testing.assert_allclose(got_grad[smooth], want_grad[smooth], rtol=1e-5, atol=1e-6)


def test_sparsemax_agrees_with_keras_where_one_entry_is_kept_and_sums_to_one():
    x = np.array([[4.0, 0.5, -1.0, 2.0], [0.3, 0.2, 0.1, 0.0]], dtype="float32")
    got = activations.sparsemax(x)
    np.testing.assert_allclose(got[0], np.asarray(keras.activations.sparsemax(torch.tensor(x[0]))), atol=1e-7)
    np.testing.assert_allclose(got[0], [1, 0, 0, 0], atol=1e-7)
    np.testing.assert_allclose(got[1], [0.4, 0.3, 0.2, 0.1], atol=1e-6)  # Keras 3.15: [0.1, 0, 0, 0]


@pytest.mark.parametrize("name", NAMES)
def test_get_serialize_deserialize_agree_with_keras(name):
    fn = activations.get(name)
    assert fn is getattr(activations, name) and activations.deserialize(name) is fn
    assert activations.serialize(fn) == keras.activations.serialize(keras.activations.get(name))
    assert activations.deserialize(activations.serialize(fn)) is fn


def test_aliases_are_the_same_functions_and_save_under_keras_names():
    assert activations.hard_swish is activations.hard_silu and activations.get("hard_swish") is activations.hard_silu
    assert activations.serialize(activations.hard_swish) == "hard_silu"
    assert activations.get("threshold") is activations.threshold


def test_deserialize_forms_and_errors():
    saved = {"module": "keras.activations", "class_name": "function", "config": "mish", "registered_name": "function"}
    assert activations.deserialize(saved) is activations.mish

    def twice(x):
        return x * 2

    assert activations.deserialize("twice", custom_objects={"twice": twice}) is twice
    with pytest.raises(ValueError, match="Unknown activation function: 'no_such'"):
        activations.deserialize("no_such")
    with pytest.raises(ValueError, match="Could not interpret"):
        activations.deserialize(3)


@pytest.mark.parametrize("name", NAMES)
def test_dense_by_name_predicts_as_keras_and_saves_both_ways(name, tmp_path):
    if name == "glu":
        pytest.skip("glu halves the axis the layer declares whole (in Keras as in kgraph)")
    model = kgraph.Sequential([kgraph.Input((4,)), layers.Dense(6, activation=name, name="d")])
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.get_weights()])
    x = rng.normal(size=(5, 4)).astype("float32") * 2
    expected = _expected_value_and_grad(name, {}, x @ model.get_weights()[0] + model.get_weights()[1])[0]
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)
    assert model.layers[0].get_config()["activation"] == keras.activations.serialize(keras.activations.get(name))
    model.save(tmp_path / "m.pkl")
    model.save(tmp_path / "m.keras")
    for path in (tmp_path / "m.pkl", tmp_path / "m.keras"):
        np.testing.assert_allclose(kgraph.load_model(path).predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)
    theirs = keras.saving.load_model(tmp_path / "m.keras")
    in_keras = np.asarray(theirs.predict(x, verbose=0))
    if name != "sparsemax":
        np.testing.assert_allclose(in_keras, expected, rtol=1e-5, atol=1e-5)
    assert theirs.layers[0].get_config()["activation"] == model.layers[0].get_config()["activation"]
    theirs.save(tmp_path / "k.keras")
    np.testing.assert_allclose(kgraph.load_model(tmp_path / "k.keras").predict(x, verbose=0), expected,
                               rtol=1e-5, atol=1e-5)


def test_glu_and_sparsemax_in_an_activation_layer_and_training():
    x = kgraph.Input((3, 6))
    # glu's output is half the width the layer declares (as in Keras), so it ends the model.
    model = kgraph.Model(x, layers.Activation("glu")(layers.Dense(6, activation="mish")(x)))
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(1)
    data, target = rng.normal(size=(8, 3, 6)).astype("float32"), rng.normal(size=(8, 3, 3)).astype("float32")
    losses = model.fit(data, target, epochs=4, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    probabilities = layers.Activation("sparsemax")(rng.normal(size=(4, 5)).astype("float32"))
    np.testing.assert_allclose(np.sum(probabilities, axis=-1), 1.0, rtol=1e-6)
