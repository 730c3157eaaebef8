"""GradientTape semantics, the primitive decorator, value_and_grad and a small training run."""
import threading

import numpy as np
import pytest

from kgraph import ops
from kgraph.backend.autodiff import GradientTape, primitive, unbroadcast, value_and_grad
from kgraph.backend.cotangents import all_zero, zero_view
from kgraph.backend.variable import Variable
from tests.gradcheck import check_gradients, check_variable_gradients


def test_watched_array_gradient():
    x = np.array([1.0, 2.0, 3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.square(x))
    np.testing.assert_allclose(tape.gradient(y, x), 2 * x)


def test_unwatched_array_is_unconnected():
    x, c = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.multiply(x, c)
    assert tape.gradient(y, c) is None
    np.testing.assert_array_equal(tape.gradient(y, c, unconnected_gradients="zero"), [0.0, 0.0])
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, c, unconnected_gradients="nan")


def test_constant_computations_are_not_recorded():
    a = np.ones(3)
    with GradientTape() as tape:
        ops.exp(ops.add(a, 1.0))
    assert tape._records == []


def test_fan_out_accumulates():
    x = np.array([0.5, -1.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.add(ops.multiply(x, x), x)
    np.testing.assert_allclose(tape.gradient(y, x), 2 * x + 1)
    check_gradients(lambda xs: ops.multiply(ops.exp(xs[0]), ops.sin(xs[0])), [x])


def test_broadcast_gradients_are_summed_to_input_shape():
    a, b = np.ones((3, 4)), np.ones((4,))
    with GradientTape() as tape:
        tape.watch([a, b])
        y = ops.multiply(a, b)
    ga, gb = tape.gradient(y, [a, b])
    assert ga.shape == (3, 4) and gb.shape == (4,)
    np.testing.assert_array_equal(gb, [3.0] * 4)


def test_integer_inputs_get_no_gradient():
    x = np.array([1, 2, 3])
    w = np.array([0.5, 1.5, 2.5])
    with GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = ops.multiply(ops.cast(x, "float64"), w)
        i = ops.argmax(w)
    assert tape.gradient(y, x) is None
    np.testing.assert_array_equal(tape.gradient(y, w), [1.0, 2.0, 3.0])
    assert tape.gradient(i, w) is None


def test_gradient_of_float_to_int_cast_is_none():
    x = np.array([1.2, 3.4])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.cast(x, "int32")
    assert tape.gradient(y, x) is None


def test_nested_tapes_record_on_both():
    x = np.array(1.5)
    with GradientTape() as outer:
        outer.watch(x)
        y = ops.square(x)
        with GradientTape() as inner:
            inner.watch(x)
            z = ops.multiply(y, x)
        # The inner tape started after y: it treats y as a constant. The outer tape records the gradient.
        dz = inner.gradient(z, x)
        np.testing.assert_allclose(dz, x**2)
    np.testing.assert_allclose(outer.gradient([z, dz], x), 3 * x**2 + 2 * x)


def test_persistent_tape_allows_several_gradients():
    x = np.array([1.0, 2.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.square(x)
        z = ops.exp(x)
    np.testing.assert_allclose(tape.gradient(y, x), 2 * x)
    np.testing.assert_allclose(tape.gradient(z, x), np.exp(x))
    np.testing.assert_allclose(tape.gradient(y, x), 2 * x)


def test_non_persistent_tape_allows_one_gradient():
    x = np.array([1.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.square(x)
    tape.gradient(y, x)
    assert tape._records == []
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.gradient(y, x)


def test_gradient_inside_the_context_stops_a_non_persistent_tape():
    x = np.array([2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.square(x)
        g = tape.gradient(y, x)
        ops.exp(x)
    np.testing.assert_allclose(g, [4.0])


def test_stop_recording_and_stop_gradient():
    x = np.array([2.0, 3.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = ops.square(x)
        z = ops.multiply(ops.stop_gradient(ops.square(x)), x)
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(tape.gradient(z, x), x**2)
    with pytest.raises(RuntimeError, match="recording"):
        with tape.stop_recording():
            pass


def test_tape_cannot_be_entered_twice():
    tape = GradientTape()
    with tape:
        with pytest.raises(RuntimeError, match="already recording"):
            tape.__enter__()


def test_watch_rejects_python_values():
    with GradientTape() as tape:
        with pytest.raises(TypeError, match="type\\(x\\)=float"):
            tape.watch(1.0)


def test_source_structures():
    a, b = np.array([1.0]), np.array([2.0])
    with GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        y = ops.multiply(a, b)
    assert isinstance(tape.gradient(y, [a, b]), list)
    ga, gb = tape.gradient(y, (a, b))
    np.testing.assert_array_equal(ga, b)
    grads = tape.gradient(y, {"a": a, "b": b})
    assert set(grads) == {"a", "b"}
    np.testing.assert_array_equal(grads["b"], a)
    np.testing.assert_array_equal(tape.gradient(y, a), b)
    with pytest.raises(TypeError, match="type\\(source\\)=str"):
        tape.gradient(y, "a")


def test_output_gradients_and_multiple_targets():
    x = np.array([1.0, 2.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.square(x)
        z = ops.multiply(x, 3.0)
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=np.array([1.0, -1.0])), [2.0, -4.0])
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=[1.0, -1.0]), [2.0, -4.0])
    np.testing.assert_allclose(tape.gradient([y, z], x, output_gradients=[np.ones(2), np.zeros(2)]), 2 * x)
    np.testing.assert_allclose(tape.gradient([y, z], x), 2 * x + 3)
    with pytest.raises(ValueError, match="output_gradients"):
        tape.gradient(y, x, output_gradients=np.ones(3))


def test_gradient_with_respect_to_an_intermediate():
    x = np.array([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.exp(x)
        z = ops.sum(ops.square(y))
    gy, gx = tape.gradient(z, [y, x])
    np.testing.assert_allclose(gy, 2 * np.exp(x))
    np.testing.assert_allclose(gx, 2 * np.exp(2 * x))


def test_target_equal_to_source():
    x = np.array([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.gradient(x, x), [1.0, 1.0])


def test_variables_through_dunders_are_watched_automatically():
    v = Variable(np.array([1.0, 2.0]), dtype="float64")
    x = np.array([3.0, 5.0])
    with GradientTape() as tape:
        # Dunders of a Variable go through ops; the results are plain ndarrays.
        terms = [v * x, v + x, v - x, v / x, v**2, -v, v @ x]
        y = ops.sum(ops.concatenate([ops.reshape(t, (-1,)) for t in terms]))
    np.testing.assert_allclose(tape.gradient(y, v), x + 1 + 1 + 1 / x + 2 * v.value - 1 + x)
    assert tape.watched_variables() == [v]


def test_variable_reflected_dunders_with_python_scalars():
    v = Variable(np.array([2.0, 4.0]), dtype="float64")
    with GradientTape() as tape:
        y = ops.sum(ops.concatenate([1.0 - v, 2.0 * v, 8.0 / v, 3.0 + v]))
    np.testing.assert_allclose(tape.gradient(y, v), -1.0 + 2.0 - 8.0 / v.value**2 + 1.0)


def test_non_trainable_and_unwatched_variables():
    frozen = Variable(np.array([1.0]), dtype="float64", trainable=False)
    v = Variable(np.array([2.0]), dtype="float64")
    with GradientTape(persistent=True) as tape:
        y = ops.multiply(frozen, v)
    assert tape.gradient(y, frozen) is None
    np.testing.assert_array_equal(tape.gradient(y, v), [1.0])
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(frozen)
        y = ops.multiply(frozen, v)
    g_frozen, g_v = tape.gradient(y, [frozen, v])
    np.testing.assert_array_equal(g_frozen, [2.0])
    assert g_v is None


def test_variable_gradient_uses_the_value_seen_by_the_tape():
    v = Variable(np.array([3.0]), dtype="float64")
    with GradientTape() as tape:
        y = ops.square(v)
    v.assign(np.array([10.0]))
    np.testing.assert_array_equal(tape.gradient(y, v), [6.0])


def test_value_and_grad():
    w = Variable(np.array([1.0, -2.0]), dtype="float64")
    b = Variable(np.array(0.5), dtype="float64")
    unused = Variable(np.zeros(2), dtype="float64")

    def loss(x):
        return ops.sum(ops.square(ops.add(ops.multiply(w, x), b)))

    value, (gw, gb, gu) = value_and_grad(loss, [w, b, unused])(np.array([2.0, 1.0]))
    r = w.value * np.array([2.0, 1.0]) + 0.5
    np.testing.assert_allclose(value, np.sum(r**2))
    np.testing.assert_allclose(gw, 2 * r * np.array([2.0, 1.0]))
    np.testing.assert_allclose(gb, np.sum(2 * r))
    assert gu is None
    (value, aux), grads = value_and_grad(lambda: (ops.square(b), "aux"), [b], has_aux=True)()
    assert aux == "aux"
    np.testing.assert_allclose(grads[0], 1.0)
    _, grads = value_and_grad(lambda: ops.square(b), [unused], unconnected_gradients="zero")()
    np.testing.assert_array_equal(grads[0], np.zeros(2))


def test_float32_gradients_stay_float32():
    v = Variable(np.ones((3, 2)), dtype="float32")
    x = np.ones((4, 3), dtype=np.float32)
    with GradientTape() as tape:
        y = ops.mean(ops.square(ops.dense(x, v)))
    g = tape.gradient(y, v)
    assert g.dtype == np.float32
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.multiply(x, np.float64(2.0))
    assert tape.gradient(y, x).dtype == np.float32


def test_ops_in_other_threads_are_not_recorded():
    v = Variable(np.ones(2), dtype="float64")
    with GradientTape() as tape:
        worker = threading.Thread(target=lambda: ops.square(v))
        worker.start()
        worker.join()
    assert tape._records == []


def test_gradient_in_one_thread_does_not_pause_another_threads_tape():
    x = np.array([3.0])
    computed, resume = threading.Event(), threading.Event()
    result = {}

    def other_thread():
        with GradientTape() as tape:
            tape.watch(x)
            y = ops.square(x)
            computed.set()
            resume.wait()
            result["grad"] = tape.gradient(y, x)

    worker = threading.Thread(target=other_thread)
    worker.start()
    computed.wait()
    with GradientTape() as tape:
        tape.watch(x)
        z = ops.exp(x)
    np.testing.assert_allclose(tape.gradient(z, x), np.exp(x))
    resume.set()
    worker.join()
    np.testing.assert_allclose(result["grad"], [6.0])


def test_tensor_inputs_by_keyword():
    x, k, b = np.ones((2, 3)), np.ones((3, 4)), np.zeros(4)
    with GradientTape() as tape:
        tape.watch([x, k, b])
        y = ops.dense(x, kernel=k, bias=b)
        z = ops.add(x1=ops.sum(y), x2=1.0)
    gx, gk, gb = tape.gradient(z, [x, k, b])
    np.testing.assert_array_equal(gb, [2.0] * 4)
    np.testing.assert_array_equal(gk, np.full((3, 4), 2.0))
    with pytest.raises(TypeError, match="multiple values"):
        ops.add(x, x1=x)


# ------------------------------------------------------------ custom primitives

@primitive
def _scaled_cube(x, *, scale=1.0):
    """A custom op: its docstring and name survive decoration."""
    return scale * x**3, lambda g: g * (3 * scale) * x**2


def test_custom_primitive():
    assert _scaled_cube.__name__ == "_scaled_cube"
    assert "custom op" in _scaled_cube.__doc__
    check_gradients(lambda xs: _scaled_cube(xs[0], scale=2.0), [np.array([0.5, -1.0])])


calls = {"d_x": 0}


@primitive(num_inputs=3)
def _affine(x, w, b=None):
    def vjp(g):
        def d_x():
            calls["d_x"] += 1
            return g @ w.T

        return d_x, lambda: x.T @ g, None if b is None else lambda: g.sum(0)

    out = x @ w
    return (out if b is None else out + b), vjp


def test_lazy_cotangents_are_computed_only_when_needed():
    calls["d_x"] = 0
    x, w, b = np.ones((2, 3)), np.ones((3, 2)), np.zeros(2)
    with GradientTape(persistent=True) as tape:
        tape.watch([x, w, b])
        y = _affine(x, w, b)
        y_no_bias = _affine(x, w)
    tape.gradient(y, [w, b])
    assert calls["d_x"] == 0
    tape.gradient(y_no_bias, [x, w])
    assert calls["d_x"] == 1
    check_gradients(lambda xs: _affine(*xs), [np.ones((2, 3)), np.arange(6.0).reshape(3, 2), np.ones(2)])


@primitive(num_inputs=1)
def _sum_and_max(x, axis):
    s, m = np.sum(x, axis), np.max(x, axis)

    def vjp(gs):
        gs_sum, gs_max = gs
        mask = x == np.expand_dims(m, axis)
        return np.expand_dims(gs_sum, axis) + mask * np.expand_dims(gs_max, axis)

    return (s, m), vjp


def test_multi_output_primitive():
    x = np.array([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
    check_gradients(lambda xs: ops.multiply(*_sum_and_max(xs[0], 1)), [x])
    with GradientTape() as tape:
        tape.watch(x)
        _, m = _sum_and_max(x, 1)
    # The unused output's cotangent reaches the VJP as zeros.
    np.testing.assert_array_equal(tape.gradient(m, x), [[0, 1, 0], [1, 0, 0]])


_PAIR_COTANGENTS = []


@primitive(num_inputs=1)
def _pair(x):
    def vjp(gs):
        _PAIR_COTANGENTS.append(gs)
        return gs[0] + 2 * gs[1]

    return (x * 1.0, x * 2.0), vjp


@pytest.mark.parametrize("views", [False, True])
def test_zero_views_give_an_unread_output_one_read_only_zero(views):
    x = np.arange(6.0).reshape(2, 3)
    _PAIR_COTANGENTS.clear()
    _pair._kgraph_primitive.zeros = zero_view if views else np.zeros
    try:
        with GradientTape() as tape:
            tape.watch(x)
            first, _ = _pair(x)
        np.testing.assert_array_equal(tape.gradient(first, x), np.ones((2, 3)))
    finally:
        _pair._kgraph_primitive.zeros = np.zeros
    (g_first, g_second), = _PAIR_COTANGENTS
    np.testing.assert_array_equal(g_second, np.zeros((2, 3)))
    assert g_second.shape == (2, 3) and g_second.dtype == x.dtype
    # Without the flag a fresh writable array; with it one zero seen through strides of 0, read-only.
    assert (g_second.strides == (0, 0) and not g_second.flags.writeable) is views


def test_all_zero():
    assert all_zero(np.zeros((3, 4))) and all_zero(np.broadcast_to(np.float32(0), (5, 6)))
    assert all_zero(np.array([0.0, -0.0])) and all_zero(np.broadcast_to(np.float32(-0.0), (2, 2)))
    assert all_zero(np.zeros((0, 3)))
    assert not all_zero(np.broadcast_to(np.float32(np.nan), (5, 6))) and not all_zero(np.array([0.0, np.nan]))
    assert not all_zero(np.broadcast_to(np.float64(1e-300), (4,))) and not all_zero(np.array([0.0, 0.0, 2.0]))


@primitive(list_input=True)
def _weighted_sum(xs, weights):
    out = sum(w * x for w, x in zip(weights, xs))
    return out, lambda g: tuple(w * g for w in weights)


def test_list_input_primitive():
    a, b = np.ones(2), np.ones(2)
    check_gradients(lambda xs: _weighted_sum(xs, [2.0, -3.0]), [a, b])
    with GradientTape() as tape:
        tape.watch(a)
        y = _weighted_sum((v for v in [a, a]), [1.0, 2.0])
    np.testing.assert_array_equal(tape.gradient(y, a), [3.0, 3.0])


@primitive
def _identity(x):
    return x, lambda g: g


def test_primitive_returning_its_input_gets_a_distinct_output():
    x = np.ones(2)
    with GradientTape() as tape:
        tape.watch(x)
        y = _identity(x)
        z = ops.multiply(y, 2.0)
    assert y is not x
    np.testing.assert_array_equal(tape.gradient(z, x), [2.0, 2.0])


@primitive
def _bad_shape(x):
    return np.sum(x), lambda g: np.ones(5)


def test_vjp_with_wrong_shape_names_the_op():
    x = np.ones(3)
    with GradientTape() as tape:
        tape.watch(x)
        y = _bad_shape(x)
    with pytest.raises(ValueError, match="_bad_shape"):
        tape.gradient(y, x)


@primitive
def _wrong_vjp(x):
    return np.sin(x), lambda g: g * np.sin(x)


def test_gradcheck_catches_a_wrong_vjp():
    with pytest.raises(AssertionError, match="differs from finite differences"):
        check_gradients(lambda xs: _wrong_vjp(xs[0]), [np.array([0.3, 1.2])])
    with pytest.raises(AssertionError, match="no gradient"):
        check_gradients(lambda xs: ops.stop_gradient(ops.exp(xs[0])), [np.array([0.3])])


def test_check_variable_gradients():
    w = Variable(np.array([[0.5, -1.0], [2.0, 0.3]]), dtype="float64")
    b = Variable(np.array([0.1, 0.2]), dtype="float64")
    x = np.array([[1.0, 2.0], [-0.5, 0.7], [0.2, 0.2]])
    before = w.numpy()
    check_variable_gradients(lambda: ops.tanh(ops.dense(x, w, b)), [w, b])
    np.testing.assert_array_equal(w.value, before)
    with pytest.raises(ValueError, match="float64"):
        check_variable_gradients(lambda: ops.square(w), [Variable(np.ones(2), dtype="float32")])


def test_unbroadcast():
    g = np.ones((2, 3, 4))
    np.testing.assert_array_equal(unbroadcast(g, (3, 1)), np.full((3, 1), 8.0))
    assert unbroadcast(g, (2, 3, 4)) is g
    with pytest.raises(ValueError, match="shape=\\(5,\\)"):
        unbroadcast(g, (5,))


# ------------------------------------------------------------------- training

def test_two_layer_mlp_learns_with_gradient_descent():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (128, 2)).astype(np.float32)
    y = (np.sin(3 * x[:, :1]) * x[:, 1:]).astype(np.float32)
    w1 = Variable(rng.standard_normal((2, 32)) * 0.5, dtype="float32")
    b1 = Variable(np.zeros(32), dtype="float32")
    w2 = Variable(rng.standard_normal((32, 1)) * 0.2, dtype="float32")
    b2 = Variable(np.zeros(1), dtype="float32")
    params = [w1, b1, w2, b2]

    def loss_fn():
        h = ops.relu(ops.dense(x, w1, b1))
        return ops.mean(ops.square(ops.subtract(ops.dense(h, w2, b2), y)))

    step = value_and_grad(loss_fn, params)
    first, _ = step()
    for _ in range(300):
        loss, grads = step()
        for p, g in zip(params, grads):
            assert g.dtype == np.float32
            p.assign_sub(0.2 * g)
    assert loss.dtype == np.float32
    assert float(loss) < 0.25 * float(first)
