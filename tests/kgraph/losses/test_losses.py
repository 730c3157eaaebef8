"""Losses: values against NumPy closed forms, reductions, weights, stability and gradients."""
import pickle

import numpy as np
import pytest

from kgraph import losses
from kgraph.backend.autodiff import GradientTape
from tests.gradcheck import check_gradients

EPS = 1e-7
RNG = np.random.default_rng(0)
Y_TRUE = RNG.random((4, 3))
Y_PRED = RNG.random((4, 3))
ONE_HOT = np.eye(3)[[0, 2, 1, 2]]
LABELS = np.array([0, 2, 1, 2])
LOGITS = RNG.normal(size=(4, 3)) * 3


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_bce(z, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(z * np.log(p) + (1 - z) * np.log(1 - p))


def test_mse_mae_huber_closed_forms():
    err = Y_PRED - Y_TRUE
    np.testing.assert_allclose(losses.MeanSquaredError()(Y_TRUE, Y_PRED), np.mean(err**2), rtol=1e-12)
    np.testing.assert_allclose(losses.MeanAbsoluteError()(Y_TRUE, Y_PRED), np.mean(np.abs(err)), rtol=1e-12)
    delta = 0.3
    big = 3 * err
    expected = np.where(np.abs(big) <= delta, 0.5 * big**2, delta * np.abs(big) - 0.5 * delta**2).mean()
    np.testing.assert_allclose(losses.Huber(delta)(Y_TRUE, Y_TRUE + big), expected, rtol=1e-12)


def test_kl_divergence_and_cosine_similarity():
    t, p = np.clip(Y_TRUE, EPS, 1), np.clip(Y_PRED, EPS, 1)
    expected = np.mean(np.sum(t * np.log(t / p), axis=-1))
    np.testing.assert_allclose(losses.KLDivergence()(Y_TRUE, Y_PRED), expected, rtol=1e-12)
    a, b = Y_TRUE - 0.5, Y_PRED - 0.5
    cos = np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    np.testing.assert_allclose(losses.CosineSimilarity()(a, b), -np.mean(cos), rtol=1e-12)
    # Keras's documented example: orthogonal, identical and opposite rows.
    values = losses.cosine_similarity(np.array([[0.0, 1], [1, 1], [1, 1]]), np.array([[1.0, 0], [1, 1], [-1, -1]]))
    np.testing.assert_allclose(values, [0.0, -1.0, 1.0], atol=1e-7)


def test_binary_crossentropy_probabilities_and_logits():
    z = RNG.integers(0, 2, (4, 1)).astype(float)
    p = RNG.random((4, 1))
    np.testing.assert_allclose(losses.BinaryCrossentropy()(z, p), np.mean(np_bce(z, p)), rtol=1e-12)
    x = RNG.normal(size=(4, 1)) * 4
    expected = np.mean(np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0) - x * z)
    np.testing.assert_allclose(losses.BinaryCrossentropy(from_logits=True)(z, x), expected, rtol=1e-12)
    # Labels of shape (batch,) against predictions of shape (batch, 1).
    np.testing.assert_allclose(losses.BinaryCrossentropy()(z[:, 0], p), np.mean(np_bce(z, p)), rtol=1e-12)
    # Keras's documented example.
    values = losses.binary_crossentropy(np.array([[0.0, 1], [0, 0]]), np.array([[0.6, 0.4], [0.4, 0.6]]))
    np.testing.assert_allclose(values, [-np.log(0.4), -(np.log(0.6) + np.log(0.4)) / 2], rtol=1e-6)


def test_label_smoothing():
    z = np.array([[1.0], [0.0]])
    p = np.array([[0.8], [0.3]])
    smoothed = z * 0.8 + 0.5 * 0.2
    np.testing.assert_allclose(losses.BinaryCrossentropy(label_smoothing=0.2)(z, p), np.mean(np_bce(smoothed, p)))
    smoothed = ONE_HOT * 0.9 + 0.1 / 3
    expected = np.mean(-np.sum(smoothed * np.log(np_softmax(LOGITS)), -1))
    np.testing.assert_allclose(
        losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)(ONE_HOT, LOGITS), expected, rtol=1e-10
    )


def test_categorical_crossentropy_forms():
    probs = np_softmax(LOGITS)
    expected = np.mean(-np.log(np.clip(probs[np.arange(4), LABELS], EPS, 1 - EPS)))
    np.testing.assert_allclose(losses.CategoricalCrossentropy()(ONE_HOT, probs), expected, rtol=1e-10)
    np.testing.assert_allclose(losses.CategoricalCrossentropy(from_logits=True)(ONE_HOT, LOGITS), expected, rtol=1e-10)
    # Rows that do not sum to one are renormalised first.
    np.testing.assert_allclose(losses.CategoricalCrossentropy()(ONE_HOT, probs * 3), expected, rtol=1e-10)
    np.testing.assert_allclose(
        losses.categorical_crossentropy(np.array([[0, 1.0, 0], [0, 0, 1]]), np.array([[0.05, 0.95, 0], [0.1, 0.8, 0.1]])),
        [0.051293, 2.302585], rtol=1e-5,
    )


@pytest.mark.parametrize("labels", [LABELS, LABELS[:, None], LABELS.astype(float), LABELS[:, None].astype(np.float32)])
def test_sparse_categorical_crossentropy_label_shapes_and_types(labels):
    expected = losses.CategoricalCrossentropy(from_logits=True)(ONE_HOT, LOGITS)
    np.testing.assert_allclose(losses.SparseCategoricalCrossentropy(from_logits=True)(labels, LOGITS), expected)
    expected = losses.CategoricalCrossentropy()(ONE_HOT, np_softmax(LOGITS))
    np.testing.assert_allclose(losses.SparseCategoricalCrossentropy()(labels, np_softmax(LOGITS)), expected)


def test_sparse_ignore_class_averages_over_kept_entries():
    labels = np.array([0, -1, 1, 2])
    per_sample = -np.log(np_softmax(LOGITS))[[0, 2, 3], [0, 1, 2]]
    loss = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    np.testing.assert_allclose(loss(labels, LOGITS), per_sample.mean(), rtol=1e-10)
    values = losses.sparse_categorical_crossentropy(labels, LOGITS, from_logits=True, ignore_class=-1)
    np.testing.assert_allclose(values, [per_sample[0], 0.0, per_sample[1], per_sample[2]], rtol=1e-10)


def test_sparse_rejects_bad_labels():
    with pytest.raises(ValueError, match="labels in"):
        losses.SparseCategoricalCrossentropy()(np.array([0, 3, 1, 1]), np_softmax(LOGITS))
    with pytest.raises(ValueError, match="y_true of shape"):
        losses.SparseCategoricalCrossentropy()(np.zeros((4, 2)), np_softmax(LOGITS))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_extreme_logits_stay_finite(dtype):
    x = np.array([[100.0], [-100.0], [100.0], [-100.0]], dtype=dtype)
    z = np.array([[0.0], [1.0], [1.0], [0.0]], dtype=dtype)
    values = losses.BinaryCrossentropy(from_logits=True, reduction="none")(z, x)
    np.testing.assert_allclose(values, [100.0, 100.0, 0.0, 0.0], atol=1e-6)
    logits = np.array([[100.0, -100.0, 0.0], [-100.0, 100.0, 0.0]], dtype=dtype)
    values = losses.CategoricalCrossentropy(from_logits=True, reduction="none")(np.eye(3, dtype=dtype)[[1, 1]], logits)
    np.testing.assert_allclose(values, [200.0, 0.0], atol=1e-4)
    with GradientTape() as tape:
        tape.watch(x)
        loss = losses.BinaryCrossentropy(from_logits=True)(z, x)
    grad = tape.gradient(loss, x)
    assert np.all(np.isfinite(grad))
    # Saturated probabilities are clipped to [eps, 1 - eps] rather than giving inf.
    p = np.array([[0.0], [1.0]], dtype=dtype)
    assert np.all(np.isfinite(losses.BinaryCrossentropy(reduction="none")(np.array([[1.0], [0.0]]), p)))


def test_reductions_and_sample_weights():
    per_sample = np.mean((Y_PRED - Y_TRUE) ** 2, axis=-1)
    w = np.array([1.0, 0.0, 2.0, 0.5])
    mse = losses.MeanSquaredError
    np.testing.assert_allclose(mse(reduction="none")(Y_TRUE, Y_PRED), per_sample)
    np.testing.assert_allclose(mse(reduction="sum")(Y_TRUE, Y_PRED), per_sample.sum())
    np.testing.assert_allclose(mse()(Y_TRUE, Y_PRED, sample_weight=w), np.sum(per_sample * w) / 4)
    np.testing.assert_allclose(mse(reduction="sum")(Y_TRUE, Y_PRED, sample_weight=w), np.sum(per_sample * w))
    # As in Keras, (batch, 1) weights on (batch,) losses give (batch, 1) unreduced losses.
    np.testing.assert_allclose(mse(reduction="none")(Y_TRUE, Y_PRED, sample_weight=w[:, None]), (per_sample * w)[:, None])
    np.testing.assert_allclose(
        mse(reduction="mean_with_sample_weight")(Y_TRUE, Y_PRED, sample_weight=w), np.sum(per_sample * w) / w.sum()
    )
    # Per-sample weights also apply to sequence-shaped losses of shape (batch, steps).
    y3, p3 = RNG.random((4, 5, 2)), RNG.random((4, 5, 2))
    per_step = np.mean((p3 - y3) ** 2, axis=-1)
    np.testing.assert_allclose(mse()(y3, p3, sample_weight=w), np.mean(per_step * w[:, None]))
    with pytest.raises(ValueError, match="Invalid reduction"):
        mse(reduction="average")


def test_loss_returns_zero_d_array():
    value = losses.MeanSquaredError()(Y_TRUE.astype(np.float32), Y_PRED.astype(np.float32))
    assert isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.float32
    assert losses.MeanSquaredError()(Y_TRUE, Y_PRED).dtype == np.float64
    assert losses.MeanSquaredError(dtype="float32")(Y_TRUE, Y_PRED).dtype == np.float32


GRADIENT_CASES = [
    (losses.MeanSquaredError(), Y_TRUE),
    (losses.MeanAbsoluteError(), Y_TRUE),
    (losses.Huber(delta=0.2), Y_TRUE),
    (losses.KLDivergence(), np_softmax(LOGITS)),
    (losses.CosineSimilarity(), Y_TRUE - 0.5),
    (losses.BinaryCrossentropy(), (Y_TRUE > 0.5).astype(float)),
    (losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1), (Y_TRUE > 0.5).astype(float)),
    (losses.CategoricalCrossentropy(), ONE_HOT),
    (losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2), ONE_HOT),
    (losses.SparseCategoricalCrossentropy(), LABELS),
    (losses.SparseCategoricalCrossentropy(from_logits=True), LABELS[:, None]),
]


@pytest.mark.parametrize("loss,y_true", GRADIENT_CASES, ids=lambda c: getattr(c, "name", ""))
def test_gradients_match_finite_differences(loss, y_true):
    y_pred = Y_PRED * 0.8 + 0.1 if not getattr(loss, "from_logits", False) else LOGITS
    weights = np.array([1.0, 0.5, 2.0, 0.0])
    check_gradients(lambda xs: loss(y_true, xs[0], sample_weight=weights), [y_pred], rtol=1e-4, atol=1e-6)


def test_get_serialize_deserialize():
    for name, cls in [("mse", losses.MeanSquaredError), ("mean_squared_error", losses.MeanSquaredError),
                      ("mae", losses.MeanAbsoluteError), ("huber", losses.Huber), ("kld", losses.KLDivergence),
                      ("kl_divergence", losses.KLDivergence), ("cosine_similarity", losses.CosineSimilarity),
                      ("binary_crossentropy", losses.BinaryCrossentropy),
                      ("categorical_crossentropy", losses.CategoricalCrossentropy),
                      ("sparse_categorical_crossentropy", losses.SparseCategoricalCrossentropy)]:
        assert type(losses.get(name)) is cls
    loss = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, name="cce")
    assert losses.get(loss) is loss
    assert losses.get(losses.mean_squared_error) is losses.mean_squared_error
    rebuilt = losses.deserialize(losses.serialize(loss))
    assert type(rebuilt) is losses.CategoricalCrossentropy and rebuilt.get_config() == loss.get_config()
    huber = losses.deserialize(losses.serialize(losses.Huber(delta=2.5, reduction="sum")))
    assert huber.get_config() == {"name": "huber_loss", "reduction": "sum", "delta": 2.5}
    assert losses.deserialize(losses.serialize(losses.mean_absolute_error)) is not None
    wrapped = losses.LossFunctionWrapper(losses.mean_squared_error, reduction="sum")
    assert losses.LossFunctionWrapper.from_config(wrapped.get_config()).fn is losses.mean_squared_error
    assert pickle.loads(pickle.dumps(loss)).get_config() == loss.get_config()
    with pytest.raises(ValueError, match="'msee'.*Valid names"):
        losses.get("msee")


def test_custom_loss_subclass():
    class Scaled(losses.Loss):
        def call(self, y_true, y_pred):
            return losses.mean_squared_error(y_true, y_pred)

    assert Scaled().name == "scaled"
    np.testing.assert_allclose(Scaled(reduction="sum")(Y_TRUE, Y_PRED), losses.MeanSquaredError(reduction="sum")(Y_TRUE, Y_PRED))
    rebuilt = losses.deserialize(losses.serialize(Scaled()), custom_objects={"Scaled": Scaled})
    assert isinstance(rebuilt, Scaled)
