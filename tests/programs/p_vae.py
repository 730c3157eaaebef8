"""Variational AutoEncoder (keras-io examples/generative/vae.py, its Keras 3 form): a Sampling layer with a
SeedGenerator, a convolutional functional encoder returning [z_mean, z_log_var, z], a Conv2DTranspose decoder,
and a VAE Model subclass with its own train_step (reconstruction loss from keras.losses.binary_crossentropy
plus the KL term, under a tape) and loss trackers in `metrics`, trained with fit on MNIST-shaped digits.
The train_step is the example's TensorFlow one with `keras.GradientTape` for `tf.GradientTape` (this program
used to write it for the torch backend, as the guide "Customizing what happens in fit() with PyTorch" does;
p_dcgan keeps that form). VAE defines call(), which the example's current text lacks: Keras 3.15's fit()
builds a model by calling it, and fails on a model without call()."""
import keras
import numpy as np
from keras import layers, ops


class Sampling(layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class VAE(keras.Model):
    def __init__(self, encoder, decoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
        self.reconstruction_loss_tracker = keras.metrics.Mean(name="reconstruction_loss")
        self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")

    @property
    def metrics(self):
        return [
            self.total_loss_tracker,
            self.reconstruction_loss_tracker,
            self.kl_loss_tracker,
        ]

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        return self.decoder(z)

    def train_step(self, data):
        with keras.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction = self.decoder(z)
            reconstruction_loss = ops.mean(
                ops.sum(
                    keras.losses.binary_crossentropy(data, reconstruction),
                    axis=(1, 2),
                )
            )
            kl_loss = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
            kl_loss = ops.mean(ops.sum(kl_loss, axis=1))
            total_loss = reconstruction_loss + kl_loss
        grads = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total_loss_tracker.update_state(total_loss)
        self.reconstruction_loss_tracker.update_state(reconstruction_loss)
        self.kl_loss_tracker.update_state(kl_loss)
        return {
            "loss": self.total_loss_tracker.result(),
            "reconstruction_loss": self.reconstruction_loss_tracker.result(),
            "kl_loss": self.kl_loss_tracker.result(),
        }


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(39)

    latent_dim = 2

    encoder_inputs = keras.Input(shape=(28, 28, 1))
    x = layers.Conv2D(32, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
    x = layers.Conv2D(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Flatten()(x)
    x = layers.Dense(16, activation="relu")(x)
    z_mean = layers.Dense(latent_dim, name="z_mean")(x)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
    z = Sampling()([z_mean, z_log_var])
    encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, z], name="encoder")
    encoder.summary()

    latent_inputs = keras.Input(shape=(latent_dim,))
    x = layers.Dense(7 * 7 * 64, activation="relu")(latent_inputs)
    x = layers.Reshape((7, 7, 64))(x)
    x = layers.Conv2DTranspose(64, 3, activation="relu", strides=2, padding="same")(x)
    x = layers.Conv2DTranspose(32, 3, activation="relu", strides=2, padding="same")(x)
    decoder_outputs = layers.Conv2DTranspose(1, 3, activation="sigmoid", padding="same")(x)
    decoder = keras.Model(latent_inputs, decoder_outputs, name="decoder")
    decoder.summary()

    # Stands in for keras.datasets.mnist.load_data(), train and test concatenated.
    mnist_digits = rng.integers(0, 256, size=(32, 28, 28)).astype("float32")
    mnist_digits = np.expand_dims(mnist_digits, -1).astype("float32") / 255

    vae = VAE(encoder, decoder)
    vae.compile(optimizer=keras.optimizers.Adam())
    history = vae.fit(mnist_digits, epochs=1, batch_size=16, verbose=0)

    z_fixed = np.array([[0.0, 0.0], [1.0, -1.0], [-2.0, 0.5]], dtype="float32")

    def probe(model):
        z_mean, z_log_var, _ = model.encoder.predict(mnist_digits[:4], verbose=0)
        return {"z_mean": z_mean, "z_log_var": z_log_var,
                "decoded": model.decoder.predict(z_fixed, verbose=0)}

    return {
        "model": vae,
        "saved_model": decoder,
        "loss": history.history["loss"][-1],
        "probe": probe,
        "values": {"history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
