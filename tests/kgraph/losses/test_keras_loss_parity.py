"""The losses kgraph shares with Keras 3 beyond the crossentropies and errors of test_losses.py: values against
closed forms, gradients against finite differences, and values and gradients against Keras (torch backend)."""
import warnings

import numpy as np
import pytest

from kgraph import losses, ops
from kgraph.backend.autodiff import GradientTape
from tests.gradcheck import check_gradients

RNG = np.random.default_rng(7)
N, C = 6, 4


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def _unit_rows(x):
    return _f32(x / np.linalg.norm(x, axis=1, keepdims=True))


LABELS = RNG.integers(0, C, N)
ONE_HOT = _f32(np.eye(C)[LABELS])
REG_TRUE = _f32(RNG.normal(size=(N, C)))
REG_PRED = _f32(REG_TRUE + RNG.normal(size=(N, C)) * 0.5)
POS_TRUE = _f32(RNG.random((N, C)) + 0.1)
POS_PRED = _f32(RNG.random((N, C)) * 2 + 0.05)
BINARY = _f32(RNG.integers(0, 2, (N, C)))
PROBS = _f32(RNG.random((N, C)) * 0.98 + 0.01)
LOGITS = _f32(RNG.normal(size=(N, C)) * 3)
SOFTMAX = _f32(np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True))
EMBEDDINGS = _unit_rows(RNG.normal(size=(N, 5)))
EMBEDDING_LABELS = _f32([0, 1, 1, 2, 0, 3])  # labels 2 and 3 have no positive pair: those rows are masked out
SEQ_TRUE = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [2, 0, 0, 0]], dtype=np.int32)
SEQ_LOGITS = _f32(RNG.normal(size=(3, 7, C)))
MASK_TRUE = _f32(RNG.integers(0, 2, (2, 5, 5, 1)))
MASK_PRED = _f32(RNG.random((2, 5, 5, 1)))

# (class name, constructor arguments, y_true, y_pred)
CASES = [
    ("MeanAbsolutePercentageError", {}, POS_TRUE, POS_PRED),
    ("MeanSquaredLogarithmicError", {}, POS_TRUE, POS_PRED),
    ("LogCosh", {}, REG_TRUE, REG_PRED),
    ("Poisson", {}, POS_TRUE, POS_PRED),
    ("Hinge", {}, BINARY, REG_PRED),
    ("Hinge", {}, BINARY * 2 - 1, REG_PRED),
    ("SquaredHinge", {}, BINARY, REG_PRED),
    ("CategoricalHinge", {}, ONE_HOT, REG_PRED),
    ("BinaryFocalCrossentropy", {}, BINARY, PROBS),
    ("BinaryFocalCrossentropy", {"apply_class_balancing": True, "alpha": 0.4, "gamma": 1.5, "from_logits": True,
                                 "label_smoothing": 0.1}, BINARY, LOGITS),
    ("CategoricalFocalCrossentropy", {}, ONE_HOT, SOFTMAX),
    ("CategoricalFocalCrossentropy", {"alpha": 0.5, "gamma": 3.0, "from_logits": True, "label_smoothing": 0.2},
     ONE_HOT, LOGITS),
    ("Dice", {}, MASK_TRUE, MASK_PRED),
    ("Dice", {"axis": (1, 2, 3)}, MASK_TRUE, MASK_PRED),
    ("Tversky", {"alpha": 0.3, "beta": 0.7}, MASK_TRUE, MASK_PRED),
    ("Tversky", {"axis": (1, 2)}, MASK_TRUE, MASK_PRED),
    ("Circle", {}, EMBEDDING_LABELS, EMBEDDINGS),
    ("Circle", {"gamma": 10.0, "margin": 0.25, "remove_diagonal": False}, EMBEDDING_LABELS, EMBEDDINGS),
    ("CTC", {}, SEQ_TRUE, SEQ_LOGITS),
    ("CategoricalGeneralizedCrossEntropy", {"q": 0.3}, _f32(LABELS), SOFTMAX),
]
IDS = [f"{name}-{i}" for i, (name, *_) in enumerate(CASES)]


def _weights(y_pred):
    return _f32(np.linspace(0.2, 1.5, y_pred.shape[0]))


def _ours(name, kwargs, y_true, y_pred, reduction, weights):
    loss = getattr(losses, name)(reduction=reduction, **kwargs)
    y_pred = y_pred.copy()
    with GradientTape() as tape:
        tape.watch(y_pred)
        value = loss(y_true, y_pred, sample_weight=weights)
        total = ops.sum(value)
    gradient = tape.gradient(total, y_pred)
    return np.asarray(value), np.asarray(gradient)


def _theirs(keras, name, kwargs, y_true, y_pred, reduction, weights):
    import torch
    loss = getattr(keras.losses, name)(reduction=reduction, **kwargs)
    x = torch.tensor(y_pred, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = loss(y_true, x, sample_weight=weights)
    value.sum().backward()
    return value.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=IDS)
def test_values_and_gradients_match_keras(name, kwargs, y_true, y_pred, reduction):
    keras = pytest.importorskip("keras")
    # Dice and Tversky over the whole batch give one value, which Keras weighs by no per-sample weight.
    weights = None if name in ("Dice", "Tversky") and "axis" not in kwargs else _weights(y_pred)
    value, gradient = _ours(name, kwargs, y_true, y_pred, reduction, weights)
    expected_value, expected_gradient = _theirs(keras, name, kwargs, y_true, y_pred, reduction, weights)
    assert value.shape == expected_value.shape and value.dtype == np.float32
    scale = max(1.0, float(np.max(np.abs(expected_value))))
    np.testing.assert_allclose(value, expected_value, rtol=2e-6, atol=2e-6 * scale)
    scale = max(1.0, float(np.max(np.abs(expected_gradient))))
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-5, atol=2e-6 * scale)


@pytest.mark.parametrize("name,kwargs,y_true,y_pred", CASES, ids=IDS)
def test_functions_match_keras(name, kwargs, y_true, y_pred):
    keras = pytest.importorskip("keras")
    fn = getattr(losses, name)().fn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tensors = keras.ops.convert_to_tensor(y_true), keras.ops.convert_to_tensor(y_pred)
        expected = keras.ops.convert_to_numpy(getattr(keras.losses, fn.__name__)(*tensors, **kwargs))
    ours = np.asarray(fn(y_true, y_pred, **kwargs))
    np.testing.assert_allclose(ours, expected, rtol=2e-6, atol=2e-6 * max(1.0, float(np.max(np.abs(expected)))))


def test_closed_forms():
    err = REG_PRED.astype(np.float64) - REG_TRUE
    np.testing.assert_allclose(losses.log_cosh(REG_TRUE, REG_PRED), np.mean(np.log(np.cosh(err)), -1), rtol=1e-5)
    t, p = POS_TRUE.astype(np.float64), POS_PRED.astype(np.float64)
    np.testing.assert_allclose(losses.mean_absolute_percentage_error(t, p), 100 * np.mean(np.abs((t - p) / t), -1))
    np.testing.assert_allclose(losses.mean_squared_logarithmic_error(t, p),
                               np.mean((np.log(p + 1) - np.log(t + 1)) ** 2, -1))
    np.testing.assert_allclose(losses.poisson(t, p), np.mean(p - t * np.log(p + 1e-7), -1))
    # 0/1 labels are mapped to -1/1; labels already -1/1 are used as they are.
    signs = 2.0 * BINARY - 1
    expected = np.mean(np.maximum(1 - signs * REG_PRED, 0), -1)
    np.testing.assert_allclose(losses.hinge(BINARY, REG_PRED), expected, rtol=1e-6)
    np.testing.assert_allclose(losses.hinge(signs, REG_PRED), expected, rtol=1e-6)
    np.testing.assert_allclose(losses.squared_hinge(BINARY, REG_PRED),
                               np.mean(np.maximum(1 - signs * REG_PRED, 0) ** 2, -1), rtol=1e-6)
    margin = np.max((1 - ONE_HOT) * REG_PRED, -1) - np.sum(ONE_HOT * REG_PRED, -1) + 1
    np.testing.assert_allclose(losses.categorical_hinge(ONE_HOT, REG_PRED), np.maximum(margin, 0), rtol=1e-6)
    overlap = np.sum(MASK_TRUE * MASK_PRED)
    np.testing.assert_allclose(losses.dice(MASK_TRUE, MASK_PRED),
                               1 - 2 * overlap / (MASK_TRUE.sum() + MASK_PRED.sum() + 1e-7), rtol=1e-6)
    np.testing.assert_allclose(losses.tversky(MASK_TRUE, MASK_PRED), losses.dice(MASK_TRUE, MASK_PRED), rtol=1e-6)
    picked = SOFTMAX[np.arange(N), LABELS]
    np.testing.assert_allclose(losses.categorical_generalized_cross_entropy(LABELS, SOFTMAX, q=0.4),
                               (1 - picked ** 0.4) / 0.4, rtol=1e-6)


def test_focal_losses_reduce_to_crossentropies():
    # gamma = 0 and alpha = 1 (no balancing) give back the plain crossentropies.
    np.testing.assert_allclose(losses.binary_focal_crossentropy(BINARY, PROBS, gamma=0.0),
                               losses.binary_crossentropy(BINARY, PROBS), rtol=1e-6)
    np.testing.assert_allclose(losses.categorical_focal_crossentropy(ONE_HOT, SOFTMAX, alpha=1.0, gamma=0.0),
                               losses.categorical_crossentropy(ONE_HOT, SOFTMAX), rtol=1e-5)


def test_circle_leaves_out_embeddings_without_pairs():
    values = losses.Circle(reduction="none")(EMBEDDING_LABELS, EMBEDDINGS)
    assert np.all(values[[3, 5]] == 0) and np.all(values[[0, 1, 2, 4]] > 0)
    mean = losses.Circle()(EMBEDDING_LABELS, EMBEDDINGS)
    np.testing.assert_allclose(mean, values[[0, 1, 2, 4]].mean(), rtol=1e-6)
    # The same through the function wrapped as compile wraps a plain function.
    wrapped = losses.LossFunctionWrapper(losses.circle)
    np.testing.assert_allclose(wrapped(EMBEDDING_LABELS, EMBEDDINGS), mean, rtol=1e-6)
    with GradientTape() as tape:
        x = EMBEDDINGS.copy()
        tape.watch(x)
        loss = losses.Circle()(EMBEDDING_LABELS, x)
    assert np.all(np.isfinite(tape.gradient(loss, x)))
    # Reference embeddings and labels of their own.
    refs, ref_labels = _unit_rows(RNG.normal(size=(3, 5))), np.array([0, 1, 2])
    values = losses.circle(EMBEDDING_LABELS, EMBEDDINGS, ref_labels=ref_labels, ref_embeddings=refs)
    assert values.shape == (N,) and np.all(np.isfinite(values))


def test_ctc_and_bad_inputs():
    values = losses.CTC(reduction="none")(SEQ_TRUE, SEQ_LOGITS)
    assert values.shape == (3,) and np.all(values > 0)
    with pytest.raises(ValueError, match="y_true.shape=\\(3, 4, 1\\)"):
        losses.ctc(SEQ_TRUE[..., None], SEQ_LOGITS)
    with pytest.raises(ValueError, match="y_pred.shape=\\(3, 7\\)"):
        losses.ctc(SEQ_TRUE, SEQ_LOGITS[..., 0])
    with pytest.raises(ValueError, match="`axis` must be of type `int`"):
        losses.categorical_focal_crossentropy(ONE_HOT, SOFTMAX, axis=True)


GRADIENT_CASES = [case for case in CASES if case[0] != "CTC"] + [("CTC", {}, SEQ_TRUE, SEQ_LOGITS)]


@pytest.mark.parametrize("name,kwargs,y_true,y_pred", GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_gradients_match_finite_differences(name, kwargs, y_true, y_pred):
    if name == "Circle":
        kwargs = {**kwargs, "gamma": 2.0}  # a small scale keeps the finite differences accurate
    loss = getattr(losses, name)(**kwargs)
    y_pred = y_pred.astype(np.float64)
    check_gradients(lambda xs: loss(y_true, xs[0]), [y_pred], rtol=1e-4, atol=1e-6)
