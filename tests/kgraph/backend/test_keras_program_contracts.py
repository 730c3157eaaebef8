"""Small contracts Keras programs rely on: a conversion keeps the tape, nested gradient sources, Python floats
computed in floatx, and `validation_data` given as the inputs alone."""
import numpy as np

import kgraph
from kgraph import layers, ops


def test_convert_to_tensor_keeps_the_gradient():
    x = kgraph.Variable(np.ones((2, 3), "float32"))
    with kgraph.GradientTape() as tape:
        loss = ops.sum(ops.convert_to_tensor(x * 2.0)) + ops.sum(ops.convert_to_tensor(x, "float32"))
    np.testing.assert_allclose(tape.gradient(loss, x), np.full((2, 3), 3.0))


def test_gradient_sources_may_nest_as_tf_gradient_tape_takes_them():
    first, second = layers.Dense(2), layers.Dense(1)
    x = np.ones((1, 3), "float32")
    with kgraph.GradientTape(persistent=True) as tape:
        y = ops.sum(second(first(x)))
    nested = tape.gradient(y, [first.trainable_variables, {"head": second.kernel}])
    flat = tape.gradient(y, first.trainable_variables + [second.kernel])
    assert [g.shape for g in nested[0]] == [(3, 2), (2,)] and set(nested[1]) == {"head"}
    np.testing.assert_allclose(nested[1]["head"], flat[2])


def test_python_floats_alone_compute_in_floatx():
    assert np.asarray(ops.log(0.5)).dtype == np.float32
    assert ops.exp(ops.linspace(ops.log(1.0), ops.log(1000.0), 4)).dtype == np.float32
    assert ops.add(np.ones(2, "float64"), 1.0).dtype == np.float64  # beside an array, a float stays weak


def test_validation_data_may_be_the_inputs_alone():
    class ImagesOnly(kgraph.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)
            self.tracker = kgraph.metrics.Mean(name="l")

        def call(self, x):
            return self.dense(x)

        def test_step(self, images):
            self.tracker.update_state(ops.mean(ops.abs(self(images) - images)))
            return {"l": self.tracker.result()}

    model = ImagesOnly()
    model.compile(optimizer="adam", loss="mse")
    x = np.ones((4, 2), "float32")
    for validation in (x, (x,)):
        assert sorted(model.fit(x, x, validation_data=validation, verbose=0).history) == ["l", "loss", "val_l"]


def test_a_step_without_targets_finds_the_compiled_metrics_in_self_metrics():
    class Autoencoder(kgraph.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def call(self, x):
            return self.dense(x)

        def train_step(self, images):
            with kgraph.GradientTape() as tape:
                y_pred = self(images, training=True)
                loss = self.compute_loss(y=images, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(images, y_pred)
            return {m.name: m.result() for m in self.metrics}

    model = Autoencoder()
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    x = np.linspace(0, 1, 8).reshape(4, 2).astype("float32")
    assert sorted(model.fit(x, verbose=0).history) == ["loss", "mae"]
    assert [m.name for m in model.metrics] == ["loss", "mae"]


def test_augmented_assignment_on_a_recorded_loss_rebinds_it():
    # keras-io's style transfer and Deep Dream: `loss = ops.zeros(()); loss += term` inside a tape.
    x = kgraph.Variable(np.ones(3, "float32"))
    with kgraph.GradientTape() as tape:
        loss = ops.zeros(())
        loss += ops.sum(x * x)
        loss += 2.0 * ops.sum(x)
        loss -= ops.sum(x)
    np.testing.assert_allclose(tape.gradient(loss, x), np.full(3, 3.0))
    outside = ops.zeros((2,))
    outside += 1  # no tape: in place, as NumPy
    np.testing.assert_allclose(outside, [1.0, 1.0])
