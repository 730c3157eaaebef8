"""DCGAN to generate face images (keras-io examples/generative/dcgan_overriding_train_step.py, its Keras 3
form): a strided-Conv2D discriminator (LeakyReLU(negative_slope=0.2), Flatten, Dropout, sigmoid Dense) and a
Conv2DTranspose generator as Sequential models, a GAN Model subclass with its own compile(d_optimizer,
g_optimizer, loss_fn), Mean trackers made in compile, a SeedGenerator and a train_step with two tapes (noisy
labels, the discriminator then the generator updated), and the GANMonitor callback that saves images with
keras.utils.array_to_img, trained with fit on CelebA-shaped RGB images in [0, 1].
As the example writes it for TensorFlow, with `keras.GradientTape` for `tf.GradientTape` and
`keras.random.uniform(ops.shape(labels))` for `tf.random.uniform(tf.shape(labels))`; the noisy labels are
clipped to [0, 1], which Keras's torch backend needs, and GAN sets `built` (Keras 3.15's fit needs it). Smaller: 16x16 images
instead of 64x64 (the generator starts from a 2x2 map instead of 8x8; every layer is the example's), and the
callback's no-op `generated_images.numpy()` is `ops.convert_to_numpy`, which every backend has."""
import os

import keras
import numpy as np
from keras import layers, ops

latent_dim = 128
image_size = 16  # the example's 64, divided by 4


class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(1337)
        # Not in the example: Keras 3.15's fit() builds an unbuilt model by calling it, and this one has no
        # call() (the GAN of the torch guide custom_train_step_in_torch.py sets `built` so).
        self.built = True

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn
        self.d_loss_metric = keras.metrics.Mean(name="d_loss")
        self.g_loss_metric = keras.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_metric, self.g_loss_metric]

    def train_step(self, real_images):
        # Sample random points in the latent space
        batch_size = ops.shape(real_images)[0]
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Decode them to fake images
        generated_images = self.generator(random_latent_vectors)

        # Combine them with real images
        combined_images = ops.concatenate([generated_images, real_images], axis=0)

        # Assemble labels discriminating real from fake images
        labels = ops.concatenate(
            [ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))], axis=0
        )
        # Add random noise to the labels - important trick!
        labels += 0.05 * keras.random.uniform(ops.shape(labels))
        # Not in the example: Keras's torch backend computes BinaryCrossentropy() with torch's
        # binary_cross_entropy, which refuses targets above 1 (TensorFlow's takes them).
        labels = ops.clip(labels, 0.0, 1.0)

        # Train the discriminator
        with keras.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(
            zip(grads, self.discriminator.trainable_weights)
        )

        # Sample random points in the latent space
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Assemble labels that say "all real images"
        misleading_labels = ops.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with keras.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))

        # Update metrics
        self.d_loss_metric.update_state(d_loss)
        self.g_loss_metric.update_state(g_loss)
        return {
            "d_loss": self.d_loss_metric.result(),
            "g_loss": self.g_loss_metric.result(),
        }


class GANMonitor(keras.callbacks.Callback):
    def __init__(self, num_img=3, latent_dim=128):
        self.num_img = num_img
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(42)

    def on_epoch_end(self, epoch, logs=None):
        random_latent_vectors = keras.random.normal(
            shape=(self.num_img, self.latent_dim), seed=self.seed_generator
        )
        generated_images = self.model.generator(random_latent_vectors)
        generated_images *= 255
        generated_images = ops.convert_to_numpy(generated_images)
        for i in range(self.num_img):
            img = keras.utils.array_to_img(generated_images[i])
            img.save("generated_img_%03d_%d.png" % (epoch, i))


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(47)

    discriminator = keras.Sequential(
        [
            keras.Input(shape=(image_size, image_size, 3)),
            layers.Conv2D(64, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(128, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(128, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Flatten(),
            layers.Dropout(0.2),
            layers.Dense(1, activation="sigmoid"),
        ],
        name="discriminator",
    )
    discriminator.summary()

    start = image_size // 8
    generator = keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            layers.Dense(start * start * 128),
            layers.Reshape((start, start, 128)),
            layers.Conv2DTranspose(128, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(256, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(512, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(3, kernel_size=5, padding="same", activation="sigmoid"),
        ],
        name="generator",
    )
    generator.summary()

    # Stands in for image_dataset_from_directory("celeba_gan", label_mode=None, ...) mapped to [0, 1].
    faces = rng.integers(0, 256, size=(32, image_size, image_size, 3)).astype("float32") / 255.0

    epochs = 1  # In practice, use ~100 epochs

    gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
    gan.compile(
        d_optimizer=keras.optimizers.Adam(learning_rate=0.0001),
        g_optimizer=keras.optimizers.Adam(learning_rate=0.0001),
        loss_fn=keras.losses.BinaryCrossentropy(),
    )

    history = gan.fit(
        faces, batch_size=16, epochs=epochs, verbose=0,
        callbacks=[GANMonitor(num_img=3, latent_dim=latent_dim)],
    )

    latent = np.random.default_rng(48).normal(size=(3, latent_dim)).astype("float32")

    def probe(model):
        return {"generated": model.generator.predict(latent, verbose=0),
                "judged": model.discriminator.predict(faces[:4], verbose=0)}

    return {
        "model": gan,
        "saved_model": generator,
        "loss": history.history["d_loss"][-1],
        "probe": probe,
        "values": {"history_keys": sorted(history.history),
                   "saved_images": sorted(f for f in os.listdir(".") if f.endswith(".png"))},
    }


if __name__ == "__main__":
    print(main())
