"""Custom train_step / test_step written as Keras's "Customizing what happens in fit()" guide writes them,
compared with Keras (torch backend) from the same weights: trackers, sample weights, test_step, GANs."""

import numpy as np
import pytest

import kgraph
from tests.kgraph.trainers.keras_contract_helpers import (
    _assert_close,
    _assert_same_weights,
    _copy_weights,
    _data,
    _dense_model,
)


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
