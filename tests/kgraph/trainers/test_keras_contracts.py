"""Keras 3's training contracts, kept: programs that customize `fit` run with `keras` renamed `kgraph`.

The programs follow Keras's guide "Customizing what happens in `fit()`" and the docstrings of
`Model.compute_loss` / `compute_metrics`. Where Keras is installed (torch backend, see tests/conftest.py)
the same program runs on both from the same weights, and their losses, metrics and weights are compared.
"""
import inspect
import io
import sys
import warnings

import numpy as np
import pytest

import kgraph

RTOL, ATOL = 1e-5, 1e-6  # float32 arithmetic in a different order: a few ulps per step


def _data(n=32, features=4, outputs=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    y = (x @ rng.normal(size=(features, outputs)) + 0.1 * rng.normal(size=(n, outputs))).astype("float32")
    return x, y


def _dense_model(K, cls=None, outputs=2):
    inputs = K.Input(shape=(4,))
    return (cls or K.Model)(inputs, K.layers.Dense(outputs, name="out")(K.layers.Dense(8, name="hidden")(inputs)))


def _copy_weights(source, target, sample):
    """Give ``target`` the weights of ``source`` (both built on ``sample`` first if need be)."""
    for model in (source, target):
        if not model.built or not model.weights:
            model(sample)
    target.set_weights(source.get_weights())


def _assert_close(actual, expected, rtol=RTOL, atol=ATOL):
    if isinstance(expected, dict):
        assert set(actual) == set(expected), (sorted(actual), sorted(expected))
        for key in expected:
            np.testing.assert_allclose(actual[key], expected[key], rtol=rtol, atol=atol, err_msg=key)
    else:
        np.testing.assert_allclose(np.asarray(actual, float), np.asarray(expected, float), rtol=rtol, atol=atol)


def _assert_same_weights(actual, expected, rtol=RTOL, atol=ATOL):
    for a, b in zip(actual.get_weights(), expected.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ----- 1. compile() without a loss ------------------------------------------------------------------------
def _penalized_model(K):
    class Penalized(K.Model):
        """A model whose whole objective is an `add_loss` term."""

        def __init__(self):
            super().__init__()
            self.dense = K.layers.Dense(2)

        def call(self, inputs):
            outputs = self.dense(inputs)
            self.add_loss(K.ops.mean(K.ops.square(outputs - 1.0)))
            return outputs

    return Penalized()


def test_compile_without_a_loss_trains_on_the_added_losses():
    x, _ = _data()
    model = _penalized_model(kgraph)
    model.compile(optimizer=kgraph.optimizers.SGD(0.1))
    history = model.fit(x, batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert model.evaluate(x, verbose=0) == pytest.approx(float(np.asarray(model.losses[0])), rel=1e-5)


def test_compile_without_a_loss_matches_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {}
    for K in (keras, kgraph):
        models[K] = _penalized_model(K)
        models[K].compile(optimizer=K.optimizers.SGD(0.1))
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, batch_size=8, epochs=2, shuffle=False, verbose=0).history,
                m.evaluate(x, verbose=0), m.evaluate(x, y, verbose=0)) for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1:], runs[keras][1:])
    _assert_same_weights(models[kgraph], models[keras])


def test_a_model_with_no_loss_at_all_fails_at_fit_with_the_keras_error():
    x, y = _data()
    model = _dense_model(kgraph)
    model.compile(optimizer="sgd")  # accepted, as in Keras: the loss may come from add_loss or compute_loss
    before = model.get_weights()
    for run in (lambda: model.fit(x, y, verbose=0), lambda: model.evaluate(x, y, verbose=0),
                lambda: model.train_on_batch(x, y)):
        with pytest.raises(ValueError, match=r"^No loss to compute\. Provide a `loss` argument in `compile\(\)`\.$"):
            run()
    for w, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(w, b)


# ----- 2. compute_loss / compute_metrics / metrics ----------------------------------------------------------
def test_compute_loss_has_the_keras_signature_and_sums_compiled_and_added_losses():
    keras = pytest.importorskip("keras")
    ours = inspect.signature(kgraph.Model.compute_loss).parameters
    theirs = inspect.signature(keras.Model.compute_loss).parameters
    assert [(p.name, p.default) for p in ours.values()] == [(p.name, p.default) for p in theirs.values()]
    x, y = _data(n=8)
    inputs = kgraph.Input(shape=(4,))
    model = kgraph.Model(inputs, kgraph.layers.Dense(2, kernel_regularizer=kgraph.regularizers.L2(0.5))(inputs))
    model.compile(optimizer="sgd", loss="mse")
    y_pred = model(x)
    loss = model.compute_loss(y=y, y_pred=y_pred)
    assert np.shape(loss) == ()
    expected = np.mean((y - y_pred) ** 2) + sum(float(np.asarray(term)) for term in model.losses)
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def _mae_loss_model(K, with_training=True):
    class CustomLoss(K.Model):
        """`compute_loss` overridden: a mean absolute error, doubled in training (so `training` matters)."""

        def __init__(self):
            super().__init__()
            self.dense = K.layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

        if with_training:
            def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
                return K.ops.mean(K.ops.abs(y_pred - y)) * (2.0 if training else 1.0)
        else:
            def compute_loss(self, inputs=None, targets=None, predictions=None, weights=None):  # as before Keras 3.3
                return K.ops.mean(K.ops.abs(predictions - targets))

    return CustomLoss()


@pytest.mark.parametrize("with_training", [True, False])
def test_an_overridden_compute_loss_is_what_fit_and_evaluate_use_as_in_keras(with_training):
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {K: _mae_loss_model(K, with_training) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.1))
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history, m.evaluate(x, y, verbose=0))
            for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1], runs[keras][1])


def _custom_metric_model(K):
    class WithCustomMetric(K.Model):
        """Keras's `compute_metrics` docstring example: a metric updated next to the compiled ones."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.custom_metric = K.metrics.MeanSquaredError(name="custom_metric")

        def compute_metrics(self, x, y, y_pred, sample_weight):
            results = super().compute_metrics(x, y, y_pred, sample_weight)
            self.custom_metric.update_state(y, 2.0 * y_pred)
            results["custom_metric"] = self.custom_metric.result()
            return results

    return _dense_model(K, WithCustomMetric)


def test_compute_metrics_override_and_attribute_metrics_match_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {K: _custom_metric_model(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history,
                m.evaluate(x, y, batch_size=8, verbose=0)) for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1], runs[keras][1])
    assert [m.name for m in models[kgraph].metrics] == ["loss", "mae", "custom_metric"]  # the attribute is tracked
    models[kgraph].reset_metrics()
    assert [m.result() for m in models[kgraph].metrics] == [0.0, 0.0, 0.0]


def _two_outputs(K):
    inputs = K.Input(shape=(4,))
    hidden = K.layers.Dense(8, name="hidden")(inputs)
    return K.Model(inputs, [K.layers.Dense(2, name="o1")(hidden), K.layers.Dense(3, name="o2")(hidden)])


def test_multi_output_logs_weighted_metrics_and_evaluate_order_match_keras():
    keras = pytest.importorskip("keras")
    x, y1 = _data()
    y2, weights = _data(outputs=3, seed=1)[1], np.random.default_rng(2).uniform(size=len(x)).astype("float32")
    models = {K: _two_outputs(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss=["mse", "mse"], loss_weights=[1.0, 0.5],
                      metrics=[["mae"], ["mse"]], weighted_metrics=[["mae"], ["mse"]])
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, [y1, y2], sample_weight=weights, batch_size=8, epochs=2, shuffle=False,
                      verbose=0).history,
                m.evaluate(x, [y1, y2], sample_weight=weights, verbose=0),
                m.evaluate(x, [y1, y2], sample_weight=weights, verbose=0, return_dict=True))
            for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1], runs[keras][1])  # the list's order is Keras's
    _assert_close(runs[kgraph][2], runs[keras][2])


# ----- 3. train_step / test_step / predict_step -----------------------------------------------------------
def _guide_model(K, step):
    class CustomModel(K.Model):
        """The guide's first example: compiled loss and metrics, a hand-written step."""

        def train_step(self, data):
            x, y = data
            y_pred, loss = step(self, x, y)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    return _dense_model(K, CustomModel)


def _kgraph_step(model, x, y):
    """The guide's step, word for word, with kgraph's tape."""
    with kgraph.GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model.compute_loss(y=y, y_pred=y_pred)
    grads = tape.gradient(loss, model.trainable_weights)
    model.optimizer.apply(grads, model.trainable_weights)
    return y_pred, loss


def _torch_step(model, x, y):
    """Keras's torch guide: the same step with `loss.backward()`."""
    import torch
    model.zero_grad()
    y_pred = model(x, training=True)
    loss = model.compute_loss(y=y, y_pred=y_pred)
    loss.backward()
    with torch.no_grad():
        model.optimizer.apply([v.value.grad for v in model.trainable_weights], model.trainable_weights)
    return y_pred, loss


def test_a_custom_train_step_with_gradient_tape_matches_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {keras: _guide_model(keras, _torch_step), kgraph: _guide_model(kgraph, _kgraph_step)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    _copy_weights(models[keras], models[kgraph], x[:1])
    histories = {K: m.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history for K, m in models.items()}
    _assert_close(histories[kgraph], histories[keras], rtol=1e-4)
    _assert_same_weights(models[kgraph], models[keras], rtol=1e-4, atol=1e-5)
    _assert_close(models[kgraph].evaluate(x, y, verbose=0), models[keras].evaluate(x, y, verbose=0), rtol=1e-4)


def test_apply_gradients_and_the_default_train_step_take_the_same_step():
    x, y = _data()
    reference = _dense_model(kgraph)
    reference.compile(optimizer=kgraph.optimizers.Adam(0.01), loss="mse", metrics=["mae"])

    class ZipApply(kgraph.Model):
        def train_step(self, data):
            x, y = data
            with kgraph.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
            self._loss_tracker.update_state(loss, sample_weight=len(x))
            return self.compute_metrics(x, y, y_pred)

    model = _dense_model(kgraph, ZipApply)
    model.compile(optimizer=kgraph.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    _copy_weights(reference, model, x[:1])
    expected = reference.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    assert model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history == expected
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(a, b)


def _tracker_model(K, backward):
    class CustomModel(K.Model):
        """The guide's lower-level example: trackers made in __init__, listed by a `metrics` property."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = K.metrics.Mean(name="loss")
            self.mae_metric = K.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = K.losses.MeanSquaredError()

        def train_step(self, data):
            x, y = data

            def forward():
                y_pred = self(x, training=True)
                return y_pred, self.loss_fn(y, y_pred)

            y_pred, loss = backward(self, forward)
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        @property
        def metrics(self):
            return [self.loss_tracker, self.mae_metric]

    return _dense_model(K, CustomModel)


def _kgraph_backward(model, forward):
    with kgraph.GradientTape() as tape:
        y_pred, loss = forward()
    model.optimizer.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
    return y_pred, loss


def _torch_backward(model, forward):
    import torch
    model.zero_grad()
    y_pred, loss = forward()
    loss.backward()
    with torch.no_grad():
        model.optimizer.apply([v.value.grad for v in model.trainable_weights], model.trainable_weights)
    return y_pred, loss


def test_trackers_from_init_listed_by_a_metrics_property_match_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {keras: _tracker_model(keras, _torch_backward), kgraph: _tracker_model(kgraph, _kgraph_backward)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05))
    _copy_weights(models[keras], models[kgraph], x[:1])
    histories = {K: m.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history for K, m in models.items()}
    _assert_close(histories[kgraph], histories[keras])
    _assert_same_weights(models[kgraph], models[keras])
    # The trackers are reset at each epoch: the last epoch's loss is the mean over its 4 batches only.
    assert histories[kgraph]["loss"][-1] < histories[kgraph]["loss"][0]


def _weighted_step_model(K, step):
    class CustomModel(K.Model):
        """The guide's sample-weight example: `data` is `(x, y, sample_weight)` when weights are given."""

        def train_step(self, data):
            if len(data) == 3:
                x, y, sample_weight = data
            else:
                sample_weight = None
                x, y = data
            y_pred, loss = step(self, x, y, sample_weight)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

    return _dense_model(K, CustomModel)


def _kgraph_weighted_step(model, x, y, sample_weight):
    with kgraph.GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
    model.optimizer.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
    return y_pred, loss


def _torch_weighted_step(model, x, y, sample_weight):
    import torch
    model.zero_grad()
    y_pred = model(x, training=True)
    loss = model.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
    loss.backward()
    with torch.no_grad():
        model.optimizer.apply([v.value.grad for v in model.trainable_weights], model.trainable_weights)
    return y_pred, loss


def test_a_custom_train_step_with_sample_weights_matches_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    weights = np.random.default_rng(3).uniform(size=len(x)).astype("float32")
    models = {keras: _weighted_step_model(keras, _torch_weighted_step),
              kgraph: _weighted_step_model(kgraph, _kgraph_weighted_step)}
    for K, model in models.items():
        # Keras's compiled `metrics` drop the sample weights a step passes them (its `self.metrics` holds one
        # container that routes them); kgraph lists the metrics themselves, so a weighted one is asked for here.
        model.compile(optimizer=K.optimizers.SGD(0.05), loss="mse", weighted_metrics=["mae"])
    _copy_weights(models[keras], models[kgraph], x[:1])
    histories = {K: m.fit(x, y, sample_weight=weights, batch_size=8, epochs=2, shuffle=False, verbose=0).history
                 for K, m in models.items()}
    _assert_close(histories[kgraph], histories[keras])
    _assert_same_weights(models[kgraph], models[keras])


def _test_step_model(K):
    class CustomModel(K.Model):
        """The guide's custom evaluation step."""

        def test_step(self, data):
            x, y = data
            y_pred = self(x, training=False)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            for metric in self.metrics:
                if metric.name != "loss":
                    metric.update_state(y, y_pred)
                else:
                    metric.update_state(loss)
            return {m.name: m.result() for m in self.metrics}

    return _dense_model(K, CustomModel)


def test_a_custom_test_step_matches_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {K: _test_step_model(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(loss="mse", metrics=["mae"])
    _copy_weights(models[keras], models[kgraph], x[:1])
    results = {K: (m.evaluate(x, y, batch_size=8, verbose=0), m.evaluate(x, y, verbose=0, return_dict=True))
               for K, m in models.items()}
    for ours, theirs in zip(results[kgraph], results[keras]):
        _assert_close(ours, theirs)


def _guide_gan(K, latent_dim):
    """The guide's GAN: two models, two optimizers, a custom compile(d_optimizer, g_optimizer, loss_fn)."""
    class GAN(K.Model):
        def __init__(self, discriminator, generator, latent_dim):
            super().__init__()
            self.discriminator = discriminator
            self.generator = generator
            self.latent_dim = latent_dim
            self.d_loss_tracker = K.metrics.Mean(name="d_loss")
            self.g_loss_tracker = K.metrics.Mean(name="g_loss")
            self.seed_generator = K.random.SeedGenerator(1337)

        @property
        def metrics(self):
            return [self.d_loss_tracker, self.g_loss_tracker]

        def compile(self, d_optimizer, g_optimizer, loss_fn):
            super().compile()
            self.d_optimizer = d_optimizer
            self.g_optimizer = g_optimizer
            self.loss_fn = loss_fn

        def train_step(self, real_images):
            if isinstance(real_images, tuple):
                real_images = real_images[0]
            batch_size = K.ops.shape(real_images)[0]
            latent = K.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
            combined = K.ops.concatenate([self.generator(latent), real_images], axis=0)
            labels = K.ops.concatenate([K.ops.ones((batch_size, 1)), K.ops.zeros((batch_size, 1))], axis=0)
            labels += 0.05 * K.random.uniform(K.ops.shape(labels), seed=self.seed_generator)
            with K.GradientTape() as tape:
                d_loss = self.loss_fn(labels, self.discriminator(combined))
            grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
            self.d_optimizer.apply(grads, self.discriminator.trainable_weights)
            latent = K.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
            with K.GradientTape() as tape:
                g_loss = self.loss_fn(K.ops.zeros((batch_size, 1)), self.discriminator(self.generator(latent)))
            grads = tape.gradient(g_loss, self.generator.trainable_weights)
            self.g_optimizer.apply(grads, self.generator.trainable_weights)
            self.d_loss_tracker.update_state(d_loss)
            self.g_loss_tracker.update_state(g_loss)
            return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}

    layers = K.layers
    discriminator = K.Sequential([K.Input(shape=(8, 8, 1)), layers.Conv2D(8, 3, strides=2, padding="same"),
                                  layers.LeakyReLU(negative_slope=0.2), layers.GlobalMaxPooling2D(), layers.Dense(1)],
                                 name="discriminator")
    generator = K.Sequential([K.Input(shape=(latent_dim,)), layers.Dense(4 * 4 * 8),
                              layers.LeakyReLU(negative_slope=0.2), layers.Reshape((4, 4, 8)),
                              layers.Conv2DTranspose(8, 4, strides=2, padding="same"),
                              layers.LeakyReLU(negative_slope=0.2),
                              layers.Conv2D(1, 3, padding="same", activation="sigmoid")], name="generator")
    return GAN(discriminator, generator, latent_dim)


def test_the_guide_gan_trains_two_models_with_two_optimizers():
    images = np.random.default_rng(0).uniform(size=(64, 8, 8, 1)).astype("float32")
    gan = _guide_gan(kgraph, latent_dim=4)
    gan.compile(d_optimizer=kgraph.optimizers.Adam(learning_rate=0.0003),
                g_optimizer=kgraph.optimizers.Adam(learning_rate=0.0003),
                loss_fn=kgraph.losses.BinaryCrossentropy(from_logits=True))
    d_before, g_before = gan.discriminator.get_weights(), gan.generator.get_weights()
    history = gan.fit(images, batch_size=16, epochs=2, verbose=0)
    assert set(history.history) == {"d_loss", "g_loss"} and len(history.history["d_loss"]) == 2
    assert all(np.isfinite(v) for values in history.history.values() for v in values)
    assert gan.d_optimizer.iterations == gan.g_optimizer.iterations == 8
    for before, after in ((d_before, gan.discriminator.get_weights()), (g_before, gan.generator.get_weights())):
        assert all(not np.array_equal(a, b) for a, b in zip(before, after))


def _comparable_gan(K, backward):
    """The guide's GAN with its noise taken from the batch, so that Keras and kgraph see the same numbers."""
    class GAN(K.Model):
        def __init__(self, discriminator, generator):
            super().__init__()
            self.discriminator, self.generator = discriminator, generator
            self.d_loss_tracker = K.metrics.Mean(name="d_loss")
            self.g_loss_tracker = K.metrics.Mean(name="g_loss")

        def call(self, inputs):  # Keras builds a model by calling it before fit
            return self.generator(inputs[1])

        @property
        def metrics(self):
            return [self.d_loss_tracker, self.g_loss_tracker]

        def compile(self, d_optimizer, g_optimizer, loss_fn):
            super().compile()
            self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, loss_fn

        def train_step(self, data):
            real, latent = data[0]
            n = real.shape[0]
            labels = K.ops.concatenate([K.ops.ones((n, 1)), K.ops.zeros((n, 1))], axis=0)
            combined = K.ops.concatenate([self.generator(latent), real], axis=0)
            d_loss = backward(lambda: self.loss_fn(labels, self.discriminator(combined)), self.discriminator,
                              self.d_optimizer)
            g_loss = backward(lambda: self.loss_fn(K.ops.zeros((n, 1)), self.discriminator(self.generator(latent))),
                              self.generator, self.g_optimizer)
            self.d_loss_tracker.update_state(d_loss)
            self.g_loss_tracker.update_state(g_loss)
            return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}

    def mlp(inputs, outputs, name):
        return K.Sequential([K.Input(shape=(inputs,)), K.layers.Dense(8), K.layers.LeakyReLU(negative_slope=0.2),
                             K.layers.Dense(outputs)], name=name)

    return GAN(mlp(6, 1, "discriminator"), mlp(3, 6, "generator"))


def _kgraph_gan_backward(loss_fn, model, optimizer):
    with kgraph.GradientTape() as tape:
        loss = loss_fn()
    optimizer.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
    return loss


def _torch_gan_backward(loss_fn, model, optimizer):
    import torch
    model.zero_grad()
    loss = loss_fn()
    loss.backward()
    with torch.no_grad():
        optimizer.apply([v.value.grad for v in model.trainable_weights], model.trainable_weights)
    return loss


def test_a_gan_with_two_optimizers_matches_keras():
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    real, latent = rng.normal(size=(32, 6)).astype("float32"), rng.normal(size=(32, 3)).astype("float32")
    gans = {keras: _comparable_gan(keras, _torch_gan_backward), kgraph: _comparable_gan(kgraph, _kgraph_gan_backward)}
    for K, gan in gans.items():
        gan.compile(d_optimizer=K.optimizers.Adam(0.01), g_optimizer=K.optimizers.Adam(0.02),
                    loss_fn=K.losses.BinaryCrossentropy(from_logits=True))
    for part in ("discriminator", "generator"):
        getattr(gans[kgraph], part).set_weights(getattr(gans[keras], part).get_weights())
    histories = {K: g.fit([real, latent], batch_size=8, epochs=3, shuffle=False, verbose=0).history
                 for K, g in gans.items()}
    _assert_close(histories[kgraph], histories[keras], rtol=1e-4)
    for part in ("discriminator", "generator"):
        _assert_same_weights(getattr(gans[kgraph], part), getattr(gans[keras], part), rtol=1e-4, atol=1e-5)


def test_steps_receive_batches_packed_as_keras_packs_them():
    keras = pytest.importorskip("keras")
    x, y = _data(n=8)
    weights = np.ones(8, "float32")

    def seen(K, *args, **kwargs):
        class Recorder(K.Model):
            def train_step(self, data):
                self.shapes.append(K.tree.map_structure(lambda a: tuple(a.shape), data))
                return {}

        model = _dense_model(K, Recorder)
        model.shapes = []
        model.compile(optimizer="sgd")
        model.fit(*args, batch_size=4, verbose=0, **kwargs)
        return model.shapes

    for args, kwargs in (((x,), {}), ((x, y), {}), ((x, y), {"sample_weight": weights}), (([x],), {})):
        assert seen(kgraph, *args, **kwargs) == seen(keras, *args, **kwargs)


def test_predict_step_outputs_reach_the_batch_logs_and_the_progress_bar(capsys):
    x, _ = _data(n=20)

    class Doubled(kgraph.Model):
        def predict_step(self, data):
            return {"twice": 2.0 * self(data, training=False)}

    model = _dense_model(kgraph, Doubled)
    seen = []

    class Outputs(kgraph.callbacks.Callback):
        def on_predict_batch_end(self, batch, logs=None):
            seen.append(logs["outputs"]["twice"].shape)

    out = model.predict(x, batch_size=8, callbacks=[Outputs()], verbose=0)
    np.testing.assert_allclose(out["twice"], 2.0 * model(x), rtol=1e-6)
    assert seen == [(8, 2), (8, 2), (4, 2)] and capsys.readouterr().out == ""
    model.predict(x, batch_size=8, verbose=1)
    assert "3/3 ━━━━━━━━━━━━━━━━━━━━" in capsys.readouterr().out
    model.predict(x, batch_size=8, verbose=2)
    assert capsys.readouterr().out.startswith("3/3 - ")


def test_predict_prints_the_keras_progress_bar_by_default(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    _dense_model(kgraph).predict(_data(n=40)[0], batch_size=16)
    assert stream.getvalue().startswith("3/3 ━━━━━━━━━━━━━━━━━━━━ ") and stream.getvalue().endswith("/step\n")


# ----- 4. and 5. outputs resolved at the first fit; losses for some outputs only; PyDataset batches -------------
def _two_headed(K):
    class TwoHeaded(K.Model):
        def __init__(self):
            super().__init__()
            self.first, self.second = K.layers.Dense(2), K.layers.Dense(3)

        def call(self, inputs):
            return [self.first(inputs), self.second(inputs)]

    return TwoHeaded()


def test_a_loss_list_compiled_before_a_subclassed_model_is_called_matches_keras():
    keras = pytest.importorskip("keras")
    x, y1 = _data()
    y2 = _data(outputs=3, seed=1)[1]
    models = {K: _two_headed(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss=["mse", "mae"], metrics=[["mae"], ["mse"]])
    _copy_weights(models[keras], models[kgraph], x[:1])
    histories = {K: m.fit(x, [y1, y2], batch_size=8, epochs=2, shuffle=False, verbose=0).history
                 for K, m in models.items()}
    assert set(histories[kgraph]) == {"loss", "mse_loss", "mae_loss", "mae", "mse"}
    _assert_close(histories[kgraph], histories[keras])
    _assert_close(models[kgraph].evaluate(x, [y1, y2], verbose=0), models[keras].evaluate(x, [y1, y2], verbose=0))


def test_a_none_loss_takes_targets_only_for_the_outputs_with_a_loss_as_keras():
    keras = pytest.importorskip("keras")
    x, y1 = _data()
    models = {K: _two_outputs(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss=["mse", None], metrics=[["mae"], None])
    _copy_weights(models[keras], models[kgraph], x[:1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn once: the output without a loss gets no gradient
        histories = {K: m.fit(x, y1, batch_size=8, epochs=2, shuffle=False, verbose=0).history
                     for K, m in models.items()}
    assert set(histories[kgraph]) == {"loss", "o1_mae"}
    _assert_close(histories[kgraph], histories[keras])
    _assert_close(models[kgraph].evaluate(x, y1, verbose=0), models[keras].evaluate(x, y1, verbose=0))
    _assert_same_weights(models[kgraph], models[keras])


class _Batches(kgraph.utils.PyDataset):
    def __init__(self, x, y, size):
        super().__init__()
        self.x, self.y, self.size = x, y, size

    def __len__(self):
        return -(-len(self.x) // self.size)

    def __getitem__(self, index):
        rows = slice(index * self.size, (index + 1) * self.size)
        return self.x[rows], self.y[rows]


def test_fit_on_a_pydataset_ignores_batch_size_silently_as_keras():
    x, y = _data()
    reference, model = _dense_model(kgraph), _dense_model(kgraph)
    for m in (reference, model):
        m.compile(optimizer=kgraph.optimizers.SGD(0.05), loss="mse")
    _copy_weights(reference, model, x[:1])
    expected = reference.fit(_Batches(x, y, 8), epochs=2, shuffle=False, verbose=0).history
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        history = model.fit(_Batches(x, y, 8), batch_size=3, epochs=2, shuffle=False, verbose=0).history
        loss = model.evaluate(_Batches(x, y, 8), batch_size=3, verbose=0)
    assert loss == pytest.approx(reference.evaluate(x, y, verbose=0), rel=1e-6)
    assert history == expected
