"""Seeded batches of every kind of metric input, and the tolerance of kgraph-against-Keras comparisons."""
import numpy as np

# Tolerance: Keras computes each step in float32; kgraph computes a batch in float64 and rounds it into float32
# state. Thresholds are compared in float32 by both, so counts agree exactly, and the results differ only by
# float32 rounding of the intermediate values: rtol 1e-5 with atol 1e-6 (a few float32 ulps of values near 1)
# covers it, the logarithms of the crossentropies included.
RTOL, ATOL = 1e-5, 1e-6
N, CLASSES = 16, 5


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def one_hot(labels, classes=CLASSES):
    return np.eye(classes, dtype=np.float32)[labels]


def batch(kind, rng, integer_weights):
    """``(inputs, sample_weight)`` of one batch of ``kind``; IoU metrics count in integers, so get integer weights."""
    labels = rng.integers(0, CLASSES, N)
    scores = softmax(rng.normal(size=(N, CLASSES)) * 2)
    binary = rng.integers(0, 2, (N, 3)).astype(np.float32)
    normal = rng.normal(size=(N, 4)).astype(np.float32)
    inputs = {
        "values": (rng.normal(size=(N, 2)).astype(np.float32),),
        "ints": (rng.integers(0, 3, (N, 1)), rng.integers(0, 3, (N, 1))),
        "binary": (binary, rng.random((N, 3), dtype=np.float32)),
        "binary_1d": (binary[:, 0], rng.random(N, dtype=np.float32)),
        "binary_logits": (binary, (rng.normal(size=(N, 3)) * 3).astype(np.float32)),
        "categorical": (one_hot(labels), scores),
        "categorical_logits": (one_hot(labels), (rng.normal(size=(N, CLASSES)) * 3).astype(np.float32)),
        "sparse": (labels.astype(np.int32), scores),
        "sparse_col": (labels[:, None].astype(np.int32), scores),
        "sparse_logits": (labels.astype(np.int32), (rng.normal(size=(N, CLASSES)) * 3).astype(np.float32)),
        "sorted_ids": (labels.astype(np.int32), np.argsort(-scores, axis=-1).astype(np.int32)),
        "regression": (normal, (normal + rng.normal(size=(N, 4)) * 0.5).astype(np.float32)),
        "positive": ((rng.random((N, 4)) + 0.1).astype(np.float32), (rng.random((N, 4)) * 2).astype(np.float32)),
        "distribution": (softmax(rng.normal(size=(N, CLASSES))), scores),
        "hinge": (binary * 2 - 1, normal[:, :3]),
        "classes": (labels.astype(np.int32), rng.integers(0, CLASSES, N).astype(np.int32)),
        "onehot_scores": (one_hot(labels), scores),
    }[kind]
    if integer_weights:  # one weight per entry of y_true, as IoU flattens both
        return inputs, rng.integers(0, 3, inputs[0].shape if kind == "binary" else N).astype(np.int32)
    return inputs, rng.random(N, dtype=np.float32)


def assert_close(ours, theirs):
    theirs = getattr(theirs, "value", theirs)  # a Keras Variable holds a torch tensor
    theirs = np.asarray(theirs.detach().cpu() if hasattr(theirs, "detach") else theirs, dtype=np.float64)
    # Keras subtracts float32 sums (true negatives = negatives - false positives): its absolute error grows
    # with the size of the sums, a few ulps of the largest value.
    atol = ATOL * max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), theirs, rtol=RTOL, atol=atol)
