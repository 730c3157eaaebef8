"""Gradients of gradients: ``tape.gradient`` inside another recording tape, checked against central differences
of the first-order gradient (float64) and against torch autograd (a WGAN-GP gradient penalty through Keras)."""
import numpy as np
import pytest

import kgraph
from kgraph import ops
from kgraph.backend.autodiff import GradientTape


def _penalty(f, x, params, weights):
    """``sum(weights * d/dx sum(sin(f(x, *params))))`` plus its squared norm, and its gradient w.r.t. params."""
    with GradientTape() as outer:
        outer.watch(params)
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.sum(ops.sin(f(x, *params)))
        gx = inner.gradient(y, x)
        value = ops.add(ops.sum(ops.multiply(gx, weights)), ops.sum(ops.square(gx)))
    return float(value), outer.gradient(value, params)


def _check_second_order(f, shapes, seed=0, eps=1e-6, rtol=1e-5, atol=1e-8):
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=s) for s in shapes]
    x, params = arrays[0], arrays[1:]
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.sin(f(x, *params)))
    weights = rng.normal(size=np.shape(tape.gradient(y, x)))
    _, analytic = _penalty(f, x, params, weights)
    for k, p in enumerate(params):
        numeric = np.zeros_like(p)
        for i in np.ndindex(p.shape):
            up = [q.copy() for q in params]
            down = [q.copy() for q in params]
            up[k][i] += eps
            down[k][i] -= eps
            numeric[i] = (_penalty(f, x, up, weights)[0] - _penalty(f, x, down, weights)[0]) / (2 * eps)
        got = np.zeros_like(p) if analytic[k] is None else np.asarray(analytic[k])
        np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol * max(1.0, np.abs(numeric).max()),
                                   err_msg=f"input {k + 1}")


CASES = {
    "dense": (lambda x, w, b: ops.dense(x, w, b), [(3, 4), (4, 2), (2,)]),
    "dense_3d_tanh": (lambda x, w, b: ops.tanh(ops.dense(x, w, b)), [(2, 3, 4), (4, 2), (2,)]),
    "matmul_batched": (lambda x, w: ops.matmul(x, w), [(2, 3, 4), (4, 2)]),
    "matmul_vector": (lambda x, w: ops.matmul(w, ops.matmul(x, w)), [(3, 3), (3,)]),
    "multiply_divide": (lambda x, a, b: ops.divide(ops.multiply(x, a), ops.add(ops.square(b), 1.0)),
                        [(3, 4), (4,), (3, 1)]),
    "power": (lambda x, a: ops.add(ops.power(ops.multiply(x, a), 3), ops.power(ops.exp(x), a)), [(3, 4), (4,)]),
    "maximum_clip": (lambda x, a: ops.add(ops.maximum(x, a), ops.clip(ops.multiply(x, a), -0.5, 0.5)),
                     [(3, 4), (4,)]),
    "where": (lambda x, a: ops.where(x > 0, ops.multiply(x, a), ops.exp(a)), [(3, 4), (4,)]),
    "activations": (lambda x, a: ops.add(ops.leaky_relu(ops.multiply(x, a)), ops.elu(ops.multiply(x, a))),
                    [(3, 4), (4,)]),
    "smooth_activations": (lambda x, a: ops.sigmoid(ops.silu(ops.softplus(ops.selu(ops.multiply(x, a))))),
                           [(3, 4), (4,)]),
    "gelu": (lambda x, a: ops.add(ops.gelu(ops.multiply(x, a)), ops.gelu(ops.multiply(x, a), approximate=False)),
             [(3, 4), (4,)]),
    "softmax": (lambda x, a: ops.add(ops.softmax(ops.multiply(x, a)), ops.log_softmax(ops.multiply(x, a))),
                [(3, 4), (4,)]),
    "reductions": (lambda x, a: ops.add(ops.logsumexp(ops.multiply(x, a), axis=1), ops.std(ops.multiply(x, a),
                                                                                            axis=1)),
                   [(3, 4), (4,)]),
    "max": (lambda x, a: ops.max(ops.multiply(x, a), axis=0), [(3, 4), (4,)]),
    "moments": (lambda x, a: ops.concatenate(ops.moments(ops.multiply(x, a), axes=[0]), axis=0), [(3, 4), (4,)]),
    "shape_ops": (lambda x, a: ops.reshape(ops.transpose(ops.pad(ops.multiply(x, a), ((1, 0), (0, 2)),
                                                                 constant_values=0.5))[1:, ::2], (-1,)),
                  [(3, 4), (4,)]),
    "einsum": (lambda x, a: ops.einsum("ij,jk,k->i", x, a, ops.sum(a, axis=0)), [(3, 4), (4, 2)]),
    "conv_strided_same": (lambda x, k, b: ops.conv(x, k, strides=2, padding="same", bias=b),
                          [(2, 6, 6, 2), (3, 3, 2, 3), (3,)]),
    "conv_relu_dilated": (lambda x, k, b: ops.conv(x, k, dilation_rate=2, bias=b, relu=True),
                          [(2, 7, 7, 2), (2, 2, 2, 3), (3,)]),
    "conv_grouped_1d": (lambda x, k: ops.tanh(ops.conv(x, k, padding="causal")), [(2, 6, 4), (3, 2, 4)]),
    "average_pool": (lambda x, k: ops.average_pool(ops.conv(x, k), 2, padding="same"), [(1, 5, 5, 2), (2, 2, 2, 2)]),
    "max_pool_overlapping": (lambda x, k: ops.max_pool(ops.conv(x, k, padding="same"), 3, strides=2, padding="same"),
                             [(1, 5, 5, 2), (2, 2, 2, 2)]),
    "max_pool_disjoint": (lambda x, k: ops.tanh(ops.max_pool(ops.conv(x, k), 2)), [(2, 6, 6, 1), (3, 3, 1, 2)]),
    "conv_max_pool": (lambda x, k, b: kgraph.ops.conv_max_pool(x, k, bias=b, relu=True, pool_size=2),
                      [(2, 6, 6, 2), (3, 3, 2, 3), (3,)]),
    "batch_norm": (lambda x, m, v, o, s: ops.batch_normalization(x, m, ops.square(v), 1, o, s),
                   [(3, 4), (4,), (4,), (4,), (4,)]),
    "layer_norm": (lambda x, g, b: ops.layer_normalization(x, g, b), [(3, 4), (4,), (4,)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_second_order_gradients_match_central_differences(case):
    f, shapes = CASES[case]
    _check_second_order(f, shapes)


def test_third_order_through_elementwise_ops():
    x = np.array([0.3, -1.2])
    with GradientTape() as t3:
        t3.watch(x)
        with GradientTape() as t2:
            t2.watch(x)
            with GradientTape() as t1:
                t1.watch(x)
                y = ops.sum(ops.tanh(x))
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    t = np.tanh(x)
    np.testing.assert_allclose(d1, 1 - t**2)
    np.testing.assert_allclose(d2, -2 * t * (1 - t**2))
    np.testing.assert_allclose(d3, -2 * (1 - t**2) ** 2 + 4 * t**2 * (1 - t**2))


def test_an_op_without_a_second_order_rule_is_named():
    x = np.array([[3.0, 1.0, 2.0]])
    w = np.array([1.0, 2.0, 3.0])
    with GradientTape() as outer:
        outer.watch(w)
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.sum(ops.multiply(ops.sort(ops.multiply(x, w)), w))
        with pytest.raises(NotImplementedError, match="'sort'.*no second-order rule"):
            inner.gradient(y, x)


def test_an_inner_gradient_the_outer_tape_does_not_reach_is_a_constant():
    x = np.array([1.0, 2.0])
    c = np.array([0.5, -1.0])
    with GradientTape() as outer:
        outer.watch(c)
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.sum(ops.exp(x))
        gx = inner.gradient(y, x)
        loss = ops.sum(ops.multiply(gx, c))
    assert type(gx) is np.ndarray
    np.testing.assert_allclose(outer.gradient(loss, c), np.exp(x))


def _critic(K):
    L = K.layers
    inputs = K.Input((12, 12, 1))
    x = L.ZeroPadding2D((2, 2))(inputs)
    x = L.Conv2D(4, 5, strides=2, padding="same")(x)
    x = L.LeakyReLU(0.2)(x)
    x = L.Conv2D(6, 3, strides=2, padding="same", use_bias=False)(x)
    x = L.LayerNormalization()(x)
    x = L.LeakyReLU(0.2)(x)
    x = L.Conv2D(6, 3, padding="same", activation="relu")(x)
    x = L.Dropout(0.0)(x)
    x = L.Flatten()(x)
    x = L.Dense(5, activation="tanh")(x)
    return K.Model(inputs, L.Dense(1)(x))


def test_a_wgan_gp_gradient_penalty_matches_torch_autograd():
    keras = pytest.importorskip("keras")
    torch = pytest.importorskip("torch")
    reference, critic = _critic(keras), _critic(kgraph)
    critic.set_weights(reference.get_weights())
    rng = np.random.default_rng(0)
    real, fake = rng.normal(size=(2, 3, 12, 12, 1)).astype("float32")
    alpha = rng.uniform(size=(3, 1, 1, 1)).astype("float32")
    interpolated = real + alpha * (fake - real)

    with kgraph.GradientTape() as tape:
        with kgraph.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            pred = critic(interpolated, training=True)
        grads = gp_tape.gradient(pred, [interpolated])[0]
        norm = ops.sqrt(ops.sum(ops.square(grads), axis=[1, 2, 3]))
        gp = ops.mean((norm - 1.0) ** 2)
    ours = tape.gradient(gp, critic.trainable_weights)

    x = torch.tensor(interpolated, requires_grad=True)
    g = torch.autograd.grad(reference(x, training=True).sum(), x, create_graph=True)[0]
    gp_torch = ((g.pow(2).sum(dim=(1, 2, 3)).sqrt() - 1) ** 2).mean()
    theirs = torch.autograd.grad(gp_torch, [v.value for v in reference.trainable_weights], allow_unused=True)
    np.testing.assert_allclose(float(gp), float(gp_torch.detach()), rtol=1e-5)
    for v, a, b in zip(critic.trainable_weights, ours, theirs):
        if b is None:  # the last bias does not change the input gradient
            assert a is None or not np.any(a), v.path
            continue
        b = b.detach().numpy()
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(b).max(), err_msg=v.path)


def test_the_gradient_penalty_trains_a_critic_with_apply_gradients():
    critic = _critic(kgraph)
    optimizer = kgraph.optimizers.Adam(1e-2)
    rng = np.random.default_rng(1)
    points = rng.normal(size=(8, 12, 12, 1)).astype("float32")
    penalties = []
    for _ in range(15):
        with kgraph.GradientTape() as tape:
            with kgraph.GradientTape() as gp_tape:
                gp_tape.watch(points)
                pred = critic(points, training=True)
            grads = gp_tape.gradient(pred, points)
            gp = ops.mean((ops.sqrt(ops.sum(ops.square(grads), axis=[1, 2, 3])) - 1.0) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(gp, critic.trainable_weights), critic.trainable_weights))
        penalties.append(float(gp))
    assert penalties[-1] < 0.5 * penalties[0], penalties


def test_a_weight_reached_only_through_a_piecewise_linear_activation_gets_zeros_not_none():
    # As TensorFlow and torch: relu's derivative is constant between breakpoints, yet connected to its input.
    x = np.array([[0.5, -1.0, 2.0]])
    w = kgraph.Variable(np.array([[1.0], [2.0], [-1.0]]))
    b = kgraph.Variable(np.array([0.3]))
    with GradientTape() as outer:
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.sum(ops.leaky_relu(ops.add(ops.matmul(x, w), b)))
        gx = inner.gradient(y, x)
        penalty = ops.sum(ops.square(gx))
    dw, db = outer.gradient(penalty, [w, b])
    np.testing.assert_allclose(db, [0.0])
    np.testing.assert_allclose(dw, 2 * w.numpy() * (1.0 if 0.5 - 2 - 2 + 0.3 >= 0 else 0.04))
