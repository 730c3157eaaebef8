"""Making new layers and models via subclassing (keras-io guides/making_new_layers_and_models_via_subclassing.py),
"Putting it all together: an end-to-end example": the variational autoencoder of subclassed layers (Sampling
with a SeedGenerator, Encoder, Decoder) in a subclassed Model that adds its KL loss with add_loss, trained
with fit on MNIST-shaped data."""
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


class Encoder(layers.Layer):
    """Maps MNIST digits to a triplet (z_mean, z_log_var, z)."""

    def __init__(self, latent_dim=32, intermediate_dim=64, name="encoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean = self.dense_mean(x)
        z_log_var = self.dense_log_var(x)
        z = self.sampling((z_mean, z_log_var))
        return z_mean, z_log_var, z


class Decoder(layers.Layer):
    """Converts z, the encoded digit vector, back into a readable digit."""

    def __init__(self, original_dim, intermediate_dim=64, name="decoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_output = layers.Dense(original_dim, activation="sigmoid")

    def call(self, inputs):
        x = self.dense_proj(inputs)
        return self.dense_output(x)


class VariationalAutoEncoder(keras.Model):
    """Combines the encoder and decoder into an end-to-end model for training."""

    def __init__(self, original_dim, intermediate_dim=64, latent_dim=32, name="autoencoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.original_dim = original_dim
        self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
        self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder(z)
        # Add KL divergence regularization loss.
        kl_loss = -0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1)
        self.add_loss(kl_loss)
        return reconstructed


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(6)

    # Stands in for keras.datasets.mnist.load_data().
    x_train = rng.integers(0, 256, size=(64, 28, 28), dtype=np.uint8)
    x_train = x_train.reshape(64, 784).astype("float32") / 255

    original_dim = 784
    vae = VariationalAutoEncoder(784, 64, 32)

    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    vae.compile(optimizer, loss=keras.losses.MeanSquaredError())

    history = vae.fit(x_train, x_train, epochs=2, batch_size=64, verbose=0)

    z_fixed = np.random.default_rng(11).normal(size=(4, 32)).astype("float32")

    def probe(model):
        # The deterministic parts: the encoder's mean and log-variance, the decoder.
        z_mean, z_log_var, _ = model.encoder(x_train[:4])
        return {"z_mean": z_mean, "z_log_var": z_log_var, "decoded": model.decoder(z_fixed)}

    return {
        "model": vae,
        "loss": history.history["loss"][-1],
        "probe": probe,
        "save": "the guide's VariationalAutoEncoder defines no get_config(), so no .keras file of it can be "
                "loaded again (Keras cannot either)",
        "values": {"weights": len(vae.weights), "trainable_weights": len(vae.trainable_weights),
                   "original_dim": original_dim, "history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
