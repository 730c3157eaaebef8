"""fit's replayed training step: the same histories and weights bit for bit as the step run as written, and
replay refused wherever it could differ."""
import gc
import weakref

import numpy as np
import pytest

import kgraph
from kgraph import layers, ops
from kgraph.backend.autodiff import GradientTape
from kgraph.backend.step_trace import StepTrace
from kgraph.trainers import replay


def _blobs(n=300, features=12, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.0, size=(classes, features))
    y = rng.integers(0, classes, size=n)
    return (centers[y] + rng.normal(size=(n, features))).astype("float32"), y


def _mlp():
    x = kgraph.Input((12,))
    h = layers.Dense(16, activation="relu")(x)
    h = layers.Dense(16, activation="tanh")(h)
    return kgraph.Model(x, layers.Dense(4, activation="softmax")(h))


def _train(build, jit_compile, x, y, compile_kwargs=None, epochs=4, **fit_kwargs):
    kgraph.utils.set_random_seed(3)
    model = build()
    model.compile(**{"optimizer": "adam", "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"],
                     **(compile_kwargs or {})}, jit_compile=jit_compile)
    history = model.fit(x, y, epochs=epochs, verbose=0, **{"batch_size": 64, **fit_kwargs})
    return model, history.history, model.get_weights()


def _programs(model):
    step = replay._STEPS.get(model)
    return {} if step is None else step.programs


def _assert_same_training(build, x, y, replayed=True, exact=True, **kwargs):
    model, history, weights = _train(build, "auto", x, y, **kwargs)
    _, expected_history, expected_weights = _train(build, False, x, y, **kwargs)
    if exact:
        assert history == expected_history
        for w, e in zip(weights, expected_weights):
            np.testing.assert_array_equal(w, e)
    else:
        # The convolution's and the LSTM's compiled kernels split a batch between two threads where that was
        # timed faster, which changes a gradient's summation order: last-bit differences from run to run,
        # replayed or not.
        assert history.keys() == expected_history.keys()
        for key in history:
            np.testing.assert_allclose(history[key], expected_history[key], rtol=1e-5)
        for w, e in zip(weights, expected_weights):
            np.testing.assert_allclose(w, e, rtol=1e-4, atol=1e-6)
    confirmed = [p for p in _programs(model).values() if type(p) is not str and p.confirmed]
    assert bool(confirmed) == replayed, _programs(model)
    return model


def test_mlp_replayed_bit_for_bit_with_a_partial_last_batch():
    x, y = _blobs()  # 300 rows in batches of 64: four full batches and one of 44, two signatures
    model = _assert_same_training(_mlp, x, y)
    assert len(_programs(model)) == 2
    assert all(p.confirmed for p in _programs(model).values())


def test_sequential_with_float_labels_sample_and_class_weights():
    x, y = _blobs()
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=len(x))  # float64, cast by an op in the loss

    def build():
        return kgraph.Sequential([kgraph.Input((12,)), layers.Dense(8, activation="relu"),
                                  layers.Dense(4, activation="softmax")])
    _assert_same_training(build, x, y.astype("float32"), sample_weight=weights)
    _assert_same_training(build, x, y, class_weight={0: 1.0, 1: 3.0, 2: 0.5, 3: 1.0})
    # Sorted labels, unshuffled: the two traced batches are of class 0 only, later ones of other classes, so the
    # sum of each batch's class weights, which this reduction divides by, changes after the traced steps.
    order = np.argsort(y, kind="stable")
    loss = kgraph.losses.SparseCategoricalCrossentropy(reduction="mean_with_sample_weight")
    _assert_same_training(build, x[order], y[order], compile_kwargs={"loss": loss}, shuffle=False, batch_size=32,
                          class_weight={0: 1.0, 1: 3.0, 2: 0.5, 3: 1.0})


def test_cnn_and_lstm_replayed():
    rng = np.random.default_rng(2)
    images, labels = rng.normal(size=(96, 8, 8, 1)).astype("float32"), rng.integers(0, 3, 96)

    def cnn():
        x = kgraph.Input((8, 8, 1))
        h = layers.Conv2D(4, 3, activation="relu", padding="same")(x)
        h = layers.MaxPooling2D()(h)
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(layers.Flatten()(h)))
    _assert_same_training(cnn, images, labels, exact=False, epochs=3, batch_size=32)

    sequences = rng.normal(size=(96, 5, 3)).astype("float32")

    def lstm():
        x = kgraph.Input((5, 3))
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(layers.LSTM(6)(x)))
    _assert_same_training(lstm, sequences, labels, exact=False, epochs=3, batch_size=32)


def test_dropout_draws_a_new_mask_at_each_replayed_step():
    x, y = _blobs()

    def build(seed=None):
        inputs = kgraph.Input((12,))
        h = layers.Dropout(0.4, seed=seed)(layers.Dense(16, activation="relu")(inputs))
        return kgraph.Model(inputs, layers.Dense(4, activation="softmax")(layers.Dropout(0.2)(h)))
    model = _assert_same_training(build, x, y)  # the global generator, then the layer's own
    _assert_same_training(lambda: build(seed=7), x, y)
    # Replayed steps draw fresh masks: the steps of one epoch differ from a model whose masks were frozen.
    step = replay._STEPS[model]
    program = next(p for p in step.programs.values() if type(p) is not str)
    first, second = (program.run([x[:64], y[:64], None])[1][0] for _ in range(2))
    assert not np.array_equal(first, second)


def test_regression_losses_and_two_inputs():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(128, 5)).astype("float32"), rng.normal(size=(128, 3)).astype("float32")
    target = rng.normal(size=(128, 2))  # float64 targets, cast by the loss's ops

    def build():
        ia, ib = kgraph.Input((5,), name="a"), kgraph.Input((3,), name="b")
        h = layers.Concatenate()([layers.Dense(4, activation="relu")(ia), ib])
        return kgraph.Model({"a": ia, "b": ib}, layers.Dense(2)(h))
    for loss in ("mse", "mae", "huber"):
        _assert_same_training(build, {"a": a, "b": b}, target, compile_kwargs={"loss": loss, "metrics": ["mae"]},
                              epochs=3, batch_size=32)


@pytest.mark.parametrize("layer", [lambda: layers.Lambda(lambda t: t * 2.0), lambda: layers.GaussianNoise(0.1)])
def test_layers_with_state_or_randomness_are_not_replayed(layer):
    x, y = _blobs(n=192)

    def build():
        inputs = kgraph.Input((12,))
        return kgraph.Model(inputs, layers.Dense(4, activation="softmax")(layer()(layers.Dense(8)(inputs))))
    _assert_same_training(build, x, y, replayed=False, epochs=3)


def test_batch_normalization_replayed_with_its_moving_statistics_bit_for_bit():
    x, y = _blobs(n=256)

    def build(momentum=0.99, frozen=False):
        def model():
            inputs = kgraph.Input((12,))
            h = layers.Dense(8)(inputs)
            norm = layers.BatchNormalization(momentum=momentum)
            norm.trainable = not frozen
            h = layers.Activation("relu")(norm(h))
            return kgraph.Model(inputs, layers.Dense(4, activation="softmax")(layers.BatchNormalization()(h)))
        return model
    model = _assert_same_training(build(), x, y, epochs=3)
    moving = [v for v in model.non_trainable_weights if "moving" in v.path]
    assert len(moving) == 4 and not np.array_equal(moving[0].numpy(), np.zeros(8, "float32"))
    _assert_same_training(build(momentum=0.5), x, y, epochs=3, compile_kwargs={"metrics": ["accuracy"]})
    frozen = _assert_same_training(build(frozen=True), x, y, epochs=3)
    np.testing.assert_array_equal(frozen.layers[2].moving_mean.numpy(), np.zeros(8, "float32"))

    images, labels = np.random.default_rng(4).normal(size=(96, 6, 6, 2)).astype("float32"), y[:96]

    def convolutional():
        inputs = kgraph.Input((6, 6, 2))
        h = layers.Activation("relu")(layers.BatchNormalization()(layers.Conv2D(4, 3, padding="same")(inputs)))
        return kgraph.Model(inputs, layers.Dense(4, activation="softmax")(layers.GlobalAveragePooling2D()(h)))
    _assert_same_training(convolutional, images, labels, exact=False, epochs=3, batch_size=32)


def test_a_batch_normalization_called_twice_in_a_step_trains_as_written():
    x, y = _blobs(n=192)

    def build():
        inputs = kgraph.Input((12,))
        norm, dense = layers.BatchNormalization(), layers.Dense(12)
        h = norm(dense(norm(inputs)))  # the second call reads the statistics the first one assigned
        return kgraph.Model(inputs, layers.Dense(4, activation="softmax")(h))
    model = _assert_same_training(build, x, y, replayed=False, epochs=3)
    assert all(type(p) is str and "different ops or constants" in p for p in _programs(model).values())


def test_activity_regularizer_custom_loss_and_loss_scaling_are_not_replayed():
    x, y = _blobs(n=192)

    def regularized():
        inputs = kgraph.Input((12,))
        return kgraph.Model(inputs, layers.Dense(4, activation="softmax", activity_regularizer="l2")(inputs))
    _assert_same_training(regularized, x, y, replayed=False, epochs=3)

    def my_loss(y_true, y_pred):
        return kgraph.losses.sparse_categorical_crossentropy(y_true, y_pred)
    _assert_same_training(_mlp, x, y, replayed=False, compile_kwargs={"loss": my_loss}, epochs=3)
    _assert_same_training(_mlp, x, y, replayed=False, epochs=3, compile_kwargs={
        "optimizer": kgraph.optimizers.LossScaleOptimizer(kgraph.optimizers.SGD())})


def test_run_eagerly_jit_compile_false_and_custom_train_step_run_as_written():
    class Custom(kgraph.Model):
        def train_step(self, data):
            return super().train_step(data)

    x, y = _blobs(n=128)
    for build, kwargs in ((_mlp, {"run_eagerly": True}), (_mlp, {"jit_compile": False})):
        model = build()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", **kwargs)
        assert replay.replayed_train_step(model) == model.train_step
    inputs = kgraph.Input((12,))
    model = Custom(inputs, layers.Dense(4, activation="softmax")(inputs))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert replay.replayed_train_step(model) == model.train_step
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    calls = []

    def counting_step(data):
        calls.append(1)
        return type(model).train_step(model, data)
    model.train_step = counting_step  # replaced on the instance: every step calls it
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    assert len(calls) == 8


def _count_calls(layer, calls):
    """Replace ``layer.call`` on the instance by one that appends to ``calls`` and calls the original."""
    original = layer.call

    def call(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)
    layer.call = call


def test_a_layer_changed_between_fits_is_seen_by_the_next_fit():
    x, y = _blobs(n=192)
    kgraph.utils.set_random_seed(0)
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=64, epochs=3, verbose=0)
    assert replay._STEPS[model].replayable
    calls = []
    _count_calls(model.layers[2], calls)
    model.fit(x, y, batch_size=64, epochs=2, verbose=0)
    assert len(calls) == 6 and replay._STEPS[model].replayable is False


def test_a_layer_call_replaced_on_the_instance_is_not_replayed():
    x, y = _blobs(n=192)
    calls = []

    def build():
        model = _mlp()
        _count_calls(model.layers[2], calls)
        return model
    _assert_same_training(build, x, y, replayed=False, epochs=3)
    assert len(calls) == 2 * 3 * 3


def test_labels_out_of_range_still_raise_in_a_replayed_step():
    x, y = _blobs(n=256)
    kgraph.utils.set_random_seed(0)
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=64, epochs=2, verbose=0)
    assert all(p.confirmed for p in _programs(model).values())
    bad = y.copy()
    bad[-1] = 7
    with pytest.raises(ValueError, match=r"Expected labels in \[0, 4\)"):
        model.fit(x, bad, batch_size=64, epochs=1, shuffle=False, verbose=0)


def test_traces_kept_across_fits_until_compile_and_keyed_by_trainable_weights():
    x, y = _blobs(n=256)

    def run(jit_compile):
        kgraph.utils.set_random_seed(5)
        model = _mlp()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=jit_compile)
        model.fit(x, y, batch_size=64, epochs=2, verbose=0)
        kept = dict(_programs(model))
        model.layers[1].trainable = False  # frozen between fits: other variables, another program
        model.fit(x, y, batch_size=64, epochs=2, verbose=0)
        if jit_compile == "auto":
            assert all(_programs(model)[k] is p for k, p in kept.items())
            assert len(_programs(model)) == 2
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=jit_compile)
        assert not _programs(model)
        model.fit(x, y, batch_size=64, epochs=2, verbose=0)
        return model.get_weights()
    for w, e in zip(run("auto"), run(False)):
        np.testing.assert_array_equal(w, e)


class _FreezeAt(kgraph.callbacks.Callback):
    """Freezes (or thaws) ``layer`` after batch ``batch`` of every epoch, as a fine-tuning callback would."""

    def __init__(self, layer_index, batch, trainable):
        super().__init__()
        self.layer_index, self.batch, self.trainable = layer_index, batch, trainable

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            self.model.layers[self.layer_index].trainable = self.trainable
        elif batch == self.batch + 2:
            self.model.layers[self.layer_index].trainable = not self.trainable


@pytest.mark.parametrize("layer_index, trainable", [(1, False), (3, False), (2, True)])
def test_a_layer_frozen_or_thawed_between_batches_changes_the_next_replayed_step(layer_index, trainable):
    """The replayed step keeps the model's trainable weights between steps while no layer changed; a callback
    freezing a layer after one batch and thawing it two later is honoured at the very next step."""
    x, y = _blobs(n=640)

    def run(jit_compile):
        kgraph.utils.set_random_seed(5)
        model = _mlp()
        if trainable:
            model.layers[layer_index].trainable = False
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", jit_compile=jit_compile)
        frozen = model.layers[layer_index].get_weights()
        model.fit(x, y, batch_size=64, epochs=2, verbose=0, shuffle=False,
                  callbacks=[_FreezeAt(layer_index, 3, trainable)])
        return model, frozen

    (model, before), (expected, _) = run("auto"), run(False)
    for w, e in zip(model.get_weights(), expected.get_weights()):
        np.testing.assert_array_equal(w, e)
    assert any(type(p) is not str and p.confirmed for p in _programs(model).values())
    for w, b in zip(model.layers[layer_index].get_weights(), before):
        assert not np.array_equal(w, b)  # trained in the batches it was trainable


def test_a_trained_model_is_freed_with_its_traces():
    x, y = _blobs(n=256)
    model, _, _ = _train(_mlp, "auto", x, y, epochs=3)
    assert _programs(model)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None and not any(m is None for m in replay._STEPS)


def test_a_replayed_model_saves_and_loads(tmp_path):
    x, y = _blobs(n=256)
    model, _, weights = _train(_mlp, "auto", x, y, epochs=3)
    path = tmp_path / "model.pkl"
    model.save(path)
    loaded = kgraph.models.load_model(path)
    for w, e in zip(loaded.get_weights(), weights):
        np.testing.assert_array_equal(w, e)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


# ----- the trace itself ------------------------------------------------------------------------------------------
def _traced(fn, leaves, variables, batch_size=4):
    trace = StepTrace(leaves, variables, batch_size)
    with trace, GradientTape() as tape:
        loss = fn(*leaves)
    return trace, trace.program(loss, loss, [loss], [v for v in variables if v.trainable]), tape


def test_trace_refuses_batch_sized_arrays_no_op_made_and_assignments():
    w = kgraph.Variable(np.ones((3, 2), "float32"))
    x = np.ones((4, 3), "float32")
    trace, program, _ = _traced(lambda a: ops.sum(ops.matmul(a, w) * np.ones((4, 1), "float32")), [x], [w])
    assert program is None and "the batch's size" in trace.failed
    counter = kgraph.Variable(np.zeros((), "float32"), trainable=False)

    def counting(a):
        counter.assign(counter.value + 1)
        return ops.sum(ops.matmul(a, w))
    trace, program, _ = _traced(counting, [x], [w, counter])
    assert program is None and "assigned" in trace.failed
    trace, program, _ = _traced(lambda a: ops.sum(ops.matmul(a, w) + w.value[0]), [x], [w])  # a variable's view
    assert program is None and "viewing the batch or a variable" in trace.failed
    trace, program, _ = _traced(lambda a: ops.sum(ops.matmul(w.value.T, a.T)), [x], [w])  # the batch transposed
    assert program is None and "viewing the batch or a variable" in trace.failed
    # A recorded array's value read into Python, or NumPy that no op runs on it.
    trace, program, _ = _traced(lambda a: ops.sum(ops.matmul(a, w)) * float(ops.max(ops.matmul(a, w))), [x], [w])
    assert program is None and "`float` on a recorded array" in trace.failed
    trace, program, _ = _traced(lambda a: ops.sum(ops.matmul(a, w)[np.argmax(ops.matmul(a, w), axis=0)]), [x], [w])
    assert program is None and "numpy.argmax" in trace.failed
    other = kgraph.Variable(np.ones((2,), "float32"))
    trace, program, _ = _traced(lambda a: ops.sum(ops.matmul(a, w) + other), [x], [w])
    assert program is None and "not one of the model's" in trace.failed


def test_trace_keeps_an_op_made_assignment_of_a_non_trainable_variable():
    w = kgraph.Variable(np.ones((3, 2), "float32"))
    state = kgraph.Variable(np.zeros((2,), "float32"), trainable=False)
    stray = kgraph.Variable(np.zeros((2,), "float32"), trainable=False)

    def stepping(a, target):
        h = ops.matmul(a, w)
        target.assign(ops.stop_gradient(ops.mean(h, axis=0)) + target)  # an op's output, from the variable
        return ops.sum(h * state)
    x = np.arange(12, dtype="float32").reshape(4, 3)
    trace, program, _ = _traced(lambda a: stepping(a, state), [x], [w, state])
    assert trace.failed is None
    np.testing.assert_array_equal(state.numpy(), [16.5, 16.5])  # the mean of the row sums 3, 12, 21, 30
    loss, _, grads = program.run([x])  # assigns again, and the loss reads the value assigned
    np.testing.assert_array_equal(state.numpy(), [33.0, 33.0])
    assert float(loss) == 33.0 * 2 * 66
    np.testing.assert_array_equal(grads[0], np.broadcast_to(x.sum(axis=0)[:, None] * 33.0, (3, 2)))
    # Refused: a variable not of the model, a trainable one.

    def assigning(a, target):
        h = ops.matmul(a, w)
        target.assign(ops.stop_gradient(ops.mean(h, axis=0)))
        return ops.sum(h)
    trace, program, _ = _traced(lambda a: assigning(a, stray), [x], [w, state])
    assert program is None and "is assigned during the step" in trace.failed
    trainable = kgraph.Variable(np.zeros((2,), "float32"))
    trace, program, _ = _traced(lambda a: assigning(a, trainable), [x], [w, state, trainable])
    assert program is None and "is assigned during the step" in trace.failed


def test_program_gradients_equal_the_tapes_and_constants_are_compared():
    rng = np.random.default_rng(0)
    w = kgraph.Variable(rng.normal(size=(3, 2)).astype("float32"))
    b = kgraph.Variable(rng.normal(size=(2,)).astype("float32"))
    frozen = kgraph.Variable(rng.normal(size=(2,)).astype("float32"), trainable=False)

    def loss_fn(a, scale):
        h = ops.tanh(ops.matmul(a, w) + b)
        return ops.mean(ops.square(h * frozen + h)) * scale  # h used twice: cotangents summed

    x = rng.normal(size=(4, 3)).astype("float32")
    trace, program, _ = _traced(lambda a: loss_fn(a, np.float32(2.0)), [x], [w, b, frozen])
    assert trace.failed is None
    for _ in range(2):
        x = rng.normal(size=(4, 3)).astype("float32")
        with GradientTape() as tape:
            loss = loss_fn(x, np.float32(2.0))
        expected = tape.gradient(loss, [w, b])
        got_loss, outputs, grads = program.run([x])
        np.testing.assert_array_equal(got_loss, loss)
        for g, e in zip(grads, expected):
            np.testing.assert_array_equal(g, e)
    _, same, _ = _traced(lambda a: loss_fn(a, np.float32(2.0)), [x], [w, b, frozen])
    _, other, _ = _traced(lambda a: loss_fn(a, np.float32(3.0)), [x], [w, b, frozen])
    assert program.same_as(same) and not program.same_as(other)


def _image_model(*hidden):
    def build():
        x = kgraph.Input((6, 6, 2))
        h = x
        for layer in hidden:
            h = layer()(h)
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(layers.Flatten()(h)))
    return build


def _sequence_model(*hidden):
    def build():
        x = kgraph.Input((5, 4))
        h = x
        for layer in hidden:
            h = layer()(h)
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(layers.Flatten()(h)))
    return build


def _merge_model(merge):
    def build():
        x = kgraph.Input((6,))
        a, b = layers.Dense(4, activation="tanh")(x), layers.Dense(4)(x)
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(merge()([a, b])))
    return build


_REPLAYED_MODELS = {
    "conv2d": _image_model(lambda: layers.Conv2D(3, 3, padding="same", activation="relu")),
    "separable_depthwise": _image_model(lambda: layers.SeparableConv2D(3, 3), lambda: layers.DepthwiseConv2D(2)),
    "transpose_upsampling": _image_model(lambda: layers.Conv2DTranspose(2, 2, strides=2),
                                         lambda: layers.UpSampling2D(), lambda: layers.AveragePooling2D(4)),
    "padding_cropping": _image_model(lambda: layers.ZeroPadding2D(1), lambda: layers.Cropping2D(2),
                                     lambda: layers.MaxPooling2D()),
    "normalizations": _image_model(lambda: layers.LayerNormalization(), lambda: layers.GroupNormalization(2),
                                   lambda: layers.RMSNormalization(), lambda: layers.UnitNormalization()),
    "activations": _image_model(lambda: layers.PReLU(), lambda: layers.LeakyReLU(), lambda: layers.ELU(),
                                lambda: layers.ReLU(), lambda: layers.Softmax(), lambda: layers.Activation("gelu"),
                                lambda: layers.Rescaling(0.5, 0.1), lambda: layers.Identity()),
    "conv1d_pooling": _sequence_model(lambda: layers.Conv1D(3, 2, activation="relu"),
                                      lambda: layers.MaxPooling1D(), lambda: layers.Permute((2, 1))),
    "recurrent": _sequence_model(lambda: layers.SimpleRNN(3, return_sequences=True),
                                 lambda: layers.GRU(3, return_sequences=True)),
    "einsum_reshape": _sequence_model(lambda: layers.EinsumDense("abc,cd->abd", output_shape=(None, 3)),
                                      lambda: layers.Reshape((3, 5)), lambda: layers.GlobalAveragePooling1D(),
                                      lambda: layers.RepeatVector(2)),
    "add": _merge_model(layers.Add), "subtract": _merge_model(layers.Subtract),
    "multiply": _merge_model(layers.Multiply), "average": _merge_model(layers.Average),
    "maximum": _merge_model(layers.Maximum), "minimum": _merge_model(layers.Minimum),
    "concatenate": _merge_model(layers.Concatenate), "dot": _merge_model(lambda: layers.Dot(axes=1)),
}


def _family_trains_as_written(build, seed, exact=False):
    """``build``'s model on 96 random rows of its input shape and 3 classes, replayed and as written."""
    rng = np.random.default_rng(seed)
    shape = build().input_shape[1:]
    x, y = rng.normal(size=(96,) + shape).astype("float32"), rng.integers(0, 3, 96)
    _assert_same_training(build, x, y, exact=exact, epochs=3, batch_size=32)


@pytest.mark.parametrize("name", sorted(_REPLAYED_MODELS))
def test_each_family_of_replayed_layers_trains_as_written(name):
    _family_trains_as_written(_REPLAYED_MODELS[name], seed=6)


def test_embedding_model_replayed_bit_for_bit():
    rng = np.random.default_rng(7)
    tokens, labels = rng.integers(0, 20, size=(128, 6)), rng.integers(0, 3, 128)

    def build():
        x = kgraph.Input((6,), dtype="int64")
        h = layers.GlobalAveragePooling1D()(layers.Embedding(20, 4)(x))
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(h))
    _assert_same_training(build, tokens, labels, epochs=3, batch_size=32)


def test_describe_says_what_replayed_and_why_not():
    x, y = _blobs(n=200)
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert replay.describe(model)["fit"] == {"model": None, "signatures": {}}
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)  # 64, 64, 64, then 8 rows: two signatures
    model.predict(x[:1], verbose=0)
    described = replay.describe(model)
    assert described["fit"] == {"model": None, "signatures": {"((64, 12) float32, (64,) int64, None)": "confirmed",
                                                              "((8, 12) float32, (8,) int64, None)": "traced once"}}
    assert described["predict"]["signatures"] == {"((1, 12) float32, None, None)": "a batch of fewer than two rows"}

    class Doubled(layers.Layer):
        def call(self, inputs):
            return inputs * 2.0
    inputs = kgraph.Input((12,))
    custom = kgraph.Model(inputs, layers.Dense(4, activation="softmax")(Doubled(name="doubled")(inputs)))
    custom.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    custom.fit(x, y, batch_size=64, epochs=1, verbose=0)
    assert replay.describe(custom)["fit"] == {
        "model": "layer 'doubled' (Doubled) is not one of the layers a trace can vouch for", "signatures": {}}
    custom.compile(optimizer="adam", loss="sparse_categorical_crossentropy", run_eagerly=True)
    assert replay.describe(custom)["evaluate"]["model"] == "compiled with run_eagerly=True"
