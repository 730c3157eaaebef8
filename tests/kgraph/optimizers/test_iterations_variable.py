"""``optimizer.iterations`` is a non-trainable int64 Variable "<optimizer name>/iteration", as in Keras 3, and a
Variable has Keras's conversions and operators (``int``, ``float``, ``%``, ``//``, comparisons, ...)."""
import operator
import pickle

import numpy as np
import pytest

import kgraph
from kgraph import GradientTape, Variable, callbacks, layers, ops, optimizers
from kgraph.optimizers import schedules
from kgraph.saving.keras_compile import optimizer_variables

RNG = np.random.default_rng(0)
X = RNG.normal(size=(12, 3)).astype("float32")
Y = RNG.normal(size=(12, 2)).astype("float32")
FIT = {"batch_size": 4, "shuffle": False, "verbose": 0}  # 3 steps an epoch


def _model(optimizer):
    kgraph.utils.set_random_seed(0)
    model = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _weights():
    return [Variable(RNG.normal(size=(3, 2)), name="w", dtype="float64"),
            Variable(RNG.normal(size=(2,)), name="b", dtype="float64")]


# --- the iteration Variable ---------------------------------------------------------------------------------------

def test_iterations_is_a_non_trainable_int64_variable_first_in_variables():
    optimizer = optimizers.Adam(name="my_adam")
    iterations = optimizer.iterations
    assert isinstance(iterations, Variable)
    assert (iterations.name, iterations.path, iterations.dtype, iterations.shape) == \
        ("iteration", "my_adam/iteration", "int64", ())
    assert iterations.trainable is False and int(iterations) == 0
    assert optimizer.variables == [iterations]  # before build: the count alone
    variables = _weights()
    optimizer.build(variables)
    assert optimizer.variables[0] is iterations and len(optimizer.variables) == 1 + 2 * len(variables)
    assert [v.path for v in optimizer.variables[1:]] == [  # Keras's order: interleaved variable by variable
        "my_adam/w_momentum", "my_adam/w_velocity", "my_adam/b_momentum", "my_adam/b_velocity"]


def test_each_apply_adds_one_to_the_same_variable():
    optimizer = optimizers.SGD(0.1)
    iterations = optimizer.iterations
    variables = _weights()
    for step in range(1, 4):
        returned = optimizer.apply_gradients([(np.ones(v.shape), v) for v in variables])
        assert returned is iterations and optimizer.iterations is iterations and int(iterations) == step
    assert iterations.value.dtype == np.int64 and iterations.numpy() == np.array(3, dtype="int64")
    optimizer.apply_gradients([])  # nothing to apply: no step
    assert int(iterations) == 3


def test_fit_counts_steps():
    model = _model(optimizers.Adam(0.01))
    model.fit(X, Y, epochs=2, **FIT)
    assert int(model.optimizer.iterations) == 6 and model.optimizer.iterations == 6


def test_setting_the_attribute_raises_as_in_keras_and_assign_sets_the_count():
    optimizer = optimizers.Adam()
    with pytest.raises(AttributeError, match="no setter.*iterations.assign"):
        optimizer.iterations = 5
    optimizer.iterations.assign(5)
    assert int(optimizer.iterations) == 5
    optimizer.apply([np.ones((2,))], [Variable(np.zeros(2), name="v")])
    assert int(optimizer.iterations) == 6
    optimizer.iterations.assign(0)
    assert int(optimizer.iterations) == 0
    with pytest.raises(ValueError, match="shape"):
        optimizer.iterations.assign([1, 2])


def test_adam_bias_correction_uses_the_assigned_count():
    lr, beta_1, beta_2, epsilon, k = 0.01, 0.9, 0.999, 1e-7, 41
    optimizer = optimizers.Adam(lr, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)
    optimizer.iterations.assign(k)
    w = Variable(np.array([1.0, -2.0]), name="w", dtype="float64")
    g = np.array([0.5, -3.0])
    optimizer.apply([g], [w])
    t = k + 1
    m, v = (1 - beta_1) * g, (1 - beta_2) * g**2
    alpha = lr * np.sqrt(1 - beta_2**t) / (1 - beta_1**t)
    np.testing.assert_allclose(w.value, np.array([1.0, -2.0]) - alpha * m / (np.sqrt(v) + epsilon), rtol=1e-12)


class _Recording(schedules.LearningRateSchedule):
    """Records the step it is called with and compares it, as a Keras schedule would."""

    def __init__(self):
        self.steps = []

    def __call__(self, step):
        self.steps.append((type(step), int(step)))
        return 0.1 if step < 2 else 0.01

    def get_config(self):
        return {}


def test_schedules_receive_the_iterations_variable():
    schedule = _Recording()
    optimizer = optimizers.SGD(schedule)
    w = Variable(np.zeros(1), name="w", dtype="float64")
    for _ in range(3):
        optimizer.apply([np.ones(1)], [w])
    assert schedule.steps == [(Variable, 0), (Variable, 1), (Variable, 2)]
    np.testing.assert_allclose(w.value, [-(0.1 + 0.1 + 0.01)])
    decay = optimizers.SGD(schedules.ExponentialDecay(0.1, 10, 0.5))
    decay.iterations.assign(5)
    assert decay.learning_rate == pytest.approx(0.1 * 0.5**0.5)
    staircase = optimizers.SGD(schedules.PiecewiseConstantDecay([3], [1.0, 0.5]))
    staircase.iterations.assign(4)
    assert staircase.learning_rate == 0.5


@pytest.mark.parametrize("count", [-1, 1.5, True, "3", 2**63, np.zeros(2, dtype="int64"), None])
def test_a_bad_restored_count_is_refused(count):
    optimizer = optimizers.SGD()
    if count is None:
        optimizer.set_slot_state([], [], None)  # no count given: unchanged
        assert int(optimizer.iterations) == 0
        return
    with pytest.raises(ValueError, match="iteration count"):
        optimizer.set_slot_state([], [], count)


@pytest.mark.parametrize("count", [3, np.int32(3), np.array(3), Variable(np.array(3, dtype="int32"))])
def test_a_restored_count_may_be_any_integer_scalar(count):
    optimizer = optimizers.SGD()
    optimizer.set_slot_state([], [], count)
    assert int(optimizer.iterations) == 3 and optimizer.iterations.dtype == "int64"


def test_loss_scale_optimizer_counts_with_its_inner_optimizer():
    inner = optimizers.SGD(0.1)
    optimizer = optimizers.LossScaleOptimizer(inner, initial_scale=4.0, dynamic_growth_steps=2)
    assert optimizer.iterations is inner.iterations
    w = Variable(np.zeros(2, dtype="float32"), name="w")
    optimizer.apply([np.ones(2, "float32")], [w])
    optimizer.apply([np.array([np.inf, 1.0], "float32")], [w])  # skipped: no step
    optimizer.apply([np.ones(2, "float32")], [w])
    assert int(optimizer.iterations) == 2 and optimizer.step_counter == 1 and optimizer.dynamic_scale == 2.0
    assert int(optimizer._iterations) == 0  # its own count stays 0, as Keras's does
    assert optimizer.variables[0] is inner.iterations
    with pytest.raises(AttributeError, match="no setter"):
        optimizer.iterations = 1
    optimizer.iterations.assign(7)
    assert int(inner.iterations) == 7


def test_loss_scale_optimizer_state_in_keras_order():
    model = _model(optimizers.LossScaleOptimizer(optimizers.SGD(0.1)))
    model.fit(X, Y, epochs=1, **FIT)
    values = optimizer_variables(model)
    # Its own count (0), learning rate 0, step counter, scale; then SGD's count and learning rate.
    assert [int(values[0]), float(values[1]), int(values[2]), float(values[3]), int(values[4])] == \
        [0, 0.0, 3, 2.0**15, 3]
    assert values[0].dtype == values[4].dtype == np.int64


# --- pickling and files -------------------------------------------------------------------------------------------

def test_pickle_keeps_the_count_and_the_variable_identity():
    optimizer = optimizers.Adam(name="opt")
    variables = _weights()
    optimizer.apply([np.ones(v.shape) for v in variables], variables)
    copy = pickle.loads(pickle.dumps(optimizer))
    assert isinstance(copy.iterations, Variable) and int(copy.iterations) == 1
    assert copy.variables[0] is copy.iterations and copy.iterations.path == "opt/iteration"


def test_an_optimizer_pickled_with_an_int_count_loads_with_a_variable():
    optimizer = optimizers.Adam(name="old")
    state = optimizer.__getstate__()
    del state["_iterations"]
    state["iterations"] = 12  # how an optimizer pickled before the count was a Variable holds it
    restored = optimizers.Adam.__new__(optimizers.Adam)
    restored.__setstate__(state)
    assert isinstance(restored.iterations, Variable) and int(restored.iterations) == 12
    assert restored.iterations.path == "old/iteration" and restored.iterations.dtype == "int64"
    restored.apply([np.ones(2)], [Variable(np.zeros(2), name="v")])
    assert int(restored.iterations) == 13
    scaling = optimizers.LossScaleOptimizer(optimizers.SGD())
    state = scaling.__getstate__()
    del state["_iterations"]  # its count was its inner optimizer's alone
    restored = optimizers.LossScaleOptimizer.__new__(optimizers.LossScaleOptimizer)
    restored.__setstate__(state)
    assert int(restored._iterations) == 0 and restored._iterations.path == "loss_scale_optimizer/iteration"
    assert restored.iterations is restored.inner_optimizer.iterations


@pytest.mark.parametrize("suffix", [".pkl", ".keras"])
def test_saved_models_keep_the_count(tmp_path, suffix):
    model = _model(optimizers.Adam(0.01, name="opt"))
    model.fit(X, Y, epochs=2, **FIT)
    model.save(tmp_path / f"model{suffix}")
    loaded = kgraph.load_model(tmp_path / f"model{suffix}")
    iterations = loaded.optimizer.iterations
    assert isinstance(iterations, Variable) and int(iterations) == 6 and iterations.dtype == "int64"
    assert iterations.path == "opt/iteration" and loaded.optimizer.variables[0] is iterations
    loaded.fit(X, Y, epochs=1, **FIT)
    assert int(iterations) == 9


def test_backup_and_restore_sets_the_existing_variable(tmp_path):
    first = _model(optimizers.SGD(0.1))
    backup = str(tmp_path / "backup")
    first.fit(X, Y, epochs=2, callbacks=[callbacks.BackupAndRestore(backup, delete_checkpoint=False)], **FIT)
    second = _model(optimizers.SGD(0.1))
    iterations = second.optimizer.iterations
    second.fit(X, Y, epochs=3, callbacks=[callbacks.BackupAndRestore(backup)], **FIT)  # resumes at epoch 2
    assert second.optimizer.iterations is iterations and int(iterations) == 9


# --- Variable conversions and operators ---------------------------------------------------------------------------

def test_scalar_conversions():
    count = Variable(np.array(7, dtype="int64"), name="count")
    assert (int(count), float(count), bool(count), operator.index(count)) == (7, 7.0, True, 7)
    assert [10, 11, 12, 13, 14, 15, 16, 17][count] == 17 and list(range(count))[-1] == 6
    assert bool(Variable(np.array(0, dtype="int64"))) is False
    assert float(Variable(2.5)) == 2.5 and int(Variable(2.5)) == 2
    matrix = Variable(np.ones((2, 3)), name="matrix")
    for convert in (int, float, bool, operator.index):
        with pytest.raises(TypeError, match="Only a scalar Variable.*'matrix' of shape \\(2, 3\\)"):
            convert(matrix)
    with pytest.raises(TypeError, match="Only an integer Variable can be used as an index"):
        [1, 2, 3][Variable(1.0)]


def test_len_and_iteration_as_numpy():
    matrix = Variable(np.arange(6.0).reshape(3, 2), name="matrix")
    assert len(matrix) == 3
    rows = list(matrix)
    assert len(rows) == 3 and all(isinstance(r, np.ndarray) for r in rows)
    np.testing.assert_array_equal(rows[2], [4.0, 5.0])
    scalar = Variable(1.0, name="s")
    with pytest.raises(TypeError, match="len\\(\\) of a scalar Variable"):
        len(scalar)
    with pytest.raises(TypeError, match="Iteration over a scalar Variable"):
        iter(scalar)


def test_operators_run_ops():
    count = Variable(np.array(7, dtype="int64"), name="count")
    cases = [(count % 3, 1), (count // 2, 3), (20 % count, 6), (20 // count, 2), (count < 7, False),
             (count <= 7, True), (count > 5, True), (count >= 8, False), (count == 7, True), (count != 7, False),
             (5 < count, True), (np.int64(9) > count, True), (~count, -8), (+count, 7), (round(Variable(2.6)), 3.0)]
    for result, expected in cases:
        assert isinstance(result, np.ndarray) and result.shape == () and result == expected
    assert (count % 3).dtype == np.int64 and (count > 5).dtype == np.bool_
    flags = Variable(np.array([True, False]), name="flags")
    np.testing.assert_array_equal(flags & [True, True], [True, False])
    np.testing.assert_array_equal(flags | [False, False], [True, False])
    np.testing.assert_array_equal(flags ^ [True, True], [False, True])
    np.testing.assert_array_equal(~flags, [False, True])
    np.testing.assert_array_equal(Variable(np.arange(4)) == np.array([0, 0, 2, 2]), [True, False, True, False])
    assert (count == None) is False and (count != None) is True  # noqa: E711  (None: Python's identity)
    if count % 7 == 0 and count > 5:
        pass
    else:
        pytest.fail("a Variable's comparisons must work in an if, as Keras users write them")


def test_keras_ops_take_the_count():
    optimizer = optimizers.SGD()
    optimizer.iterations.assign(4)
    as_float = ops.cast(optimizer.iterations, "float32")
    assert as_float.dtype == np.float32 and as_float == 4.0
    assert ops.add(optimizer.iterations, 1) == 5 and ops.convert_to_numpy(optimizer.iterations) == 4
    np.testing.assert_array_equal(np.asarray(optimizer.iterations), np.array(4, dtype="int64"))


def test_variables_hash_by_identity():
    a, b = Variable(np.zeros(3), name="a"), Variable(np.zeros(3), name="b")
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b" and len({a, b, a}) == 2
    assert a in [a] and [a, b] == [a, b]  # identity comes first in Python's containers


def test_operators_are_recorded_on_the_tape_and_in_graphs():
    v = Variable(np.array([1.5, 4.25]), name="v")
    with GradientTape() as tape:
        y = ops.sum((v % 1.0) * 3 + (v // 1.0) * 5)
    np.testing.assert_allclose(tape.gradient(y, [v])[0], [3.0, 3.0])  # floor division contributes 0
    with GradientTape() as tape:
        y = ops.sum(+v * 2)
    np.testing.assert_allclose(tape.gradient(y, [v])[0], [2.0, 2.0])
    inputs = kgraph.Input((2,))
    assert isinstance(v < inputs, kgraph.KerasTensor) and isinstance(v % inputs, kgraph.KerasTensor)
    model = kgraph.Model(inputs, [v % inputs, v >= inputs])
    remainder, at_least = model.predict(np.array([[1.0, 3.0]]), verbose=0)
    np.testing.assert_allclose(remainder, [[0.5, 1.25]])
    np.testing.assert_array_equal(at_least, [[True, True]])


# --- against Keras 3 ----------------------------------------------------------------------------------------------

def _keras_model(keras, optimizer):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _keras_int_dtype(keras):
    # Keras's dtype "int" is int64 with TensorFlow and int32 with JAX, torch and NumPy; kgraph keeps int64.
    return "int64" if keras.backend.backend() == "tensorflow" else "int32"


def _positions(variables, variable):
    return [i for i, v in enumerate(variables) if v is variable]


def test_the_same_iteration_variable_as_keras_after_fit():
    keras = pytest.importorskip("keras")
    ours = _model(optimizers.Adam(0.01, name="opt"))
    theirs = _keras_model(keras, keras.optimizers.Adam(0.01, name="opt"))
    for model in (ours, theirs):
        model.fit(X, Y, epochs=2, **FIT)
    a, b = ours.optimizer.iterations, theirs.optimizer.iterations
    assert int(a) == int(b) == 6
    assert (a.name, a.path, tuple(a.shape), a.trainable) == (b.name, b.path, tuple(b.shape), b.trainable) == \
        ("iteration", "opt/iteration", (), False)
    assert a.dtype == "int64" and b.dtype == _keras_int_dtype(keras)
    assert _positions(ours.optimizer.variables, a) == _positions(theirs.optimizer.variables, b) == [0]
    expressions = [int, float, lambda v: v % 4, lambda v: v // 4, lambda v: 20 % v, lambda v: 20 // v,
                   lambda v: v < 6, lambda v: v <= 6, lambda v: v > 5, lambda v: v >= 7, lambda v: v == 6,
                   lambda v: v != 6, lambda v: v + 1, lambda v: v * 2, lambda v: -v, lambda v: v.numpy()]
    for expression in expressions:
        got, expected = expression(a), keras.ops.convert_to_numpy(expression(b))
        assert np.asarray(got).item() == np.asarray(expected).item() and np.ndim(got) == np.ndim(expected)
    assert float(ops.cast(a, "float32")) == float(keras.ops.convert_to_numpy(keras.ops.cast(b, "float32"))) == 6.0


def test_keras_and_kgraph_read_each_other_s_iteration_count(tmp_path):
    keras = pytest.importorskip("keras")
    ours = _model(optimizers.Adam(0.01, name="opt"))
    theirs = _keras_model(keras, keras.optimizers.Adam(0.01, name="opt"))
    for model, name in ((ours, "ours"), (theirs, "theirs")):
        model.fit(X, Y, epochs=2, **FIT)
        model.save(tmp_path / f"{name}.keras")
    in_keras = keras.saving.load_model(tmp_path / "ours.keras")
    in_kgraph = kgraph.load_model(tmp_path / "theirs.keras")
    a, b = in_kgraph.optimizer.iterations, in_keras.optimizer.iterations
    assert isinstance(a, Variable) and int(a) == int(b) == 6 and a.dtype == "int64" and a.path == b.path
    assert _positions(in_kgraph.optimizer.variables, a) == _positions(in_keras.optimizer.variables, b) == [0]
    for model in (in_kgraph, in_keras):
        model.fit(X, Y, epochs=1, **FIT)
    assert int(a) == int(in_keras.optimizer.iterations) == 9


def test_a_loss_scale_optimizer_s_counts_read_by_keras(tmp_path):
    keras = pytest.importorskip("keras")
    ours = _model(optimizers.LossScaleOptimizer(optimizers.SGD(0.1)))
    ours.fit(X, Y, epochs=1, **FIT)
    ours.save(tmp_path / "ours.keras")
    theirs = keras.saving.load_model(tmp_path / "ours.keras")
    # Keras's own count of a LossScaleOptimizer stays 0; its `iterations` is its inner optimizer's.
    assert [int(v) for v in theirs.optimizer.variables if v.name == "iteration"] == [0, 3]
    assert int(theirs.optimizer.iterations) == int(ours.optimizer.iterations) == 3
    back = kgraph.load_model(tmp_path / "ours.keras")
    assert int(back.optimizer.iterations) == 3 and int(back.optimizer._iterations) == 0
