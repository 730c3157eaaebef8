"""Conditional GAN (keras-io examples/generative/conditional_gan.py, its Keras 3 form): one-hot class labels
concatenated to the generator's noise and, repeated over the image (ops.repeat, ops.reshape), to the
discriminator's input channels; Sequential models starting with keras.layers.InputLayer(shape); a
ConditionalGAN Model subclass with Mean trackers, a `metrics` property, its own compile(d_optimizer,
g_optimizer, loss_fn), a SeedGenerator and a train_step with two tapes; then the example's interpolation
between two classes (keras.utils.to_categorical, ops.linspace, ops.repeat) with the trained generator.
As the example writes it for TensorFlow, with `keras.GradientTape` for `tf.GradientTape`; arrays given to fit
with batch_size stand in for its shuffled tf.data.Dataset of (images, one-hot labels). The interpolation
noise, keras.random.normal in the example, comes from NumPy here, so that both runs see the same noise.
ConditionalGAN sets `built`, which Keras 3.15's fit needs of a model without call(), and ops.repeat gets
`repeats=784` for the example's `[784]` (the same repetition; Keras's torch backend refuses the list)."""
import keras
import numpy as np
from keras import layers, ops

batch_size = 64
num_channels = 1
num_classes = 10
image_size = 28
latent_dim = 128


class ConditionalGAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(1337)
        self.gen_loss_tracker = keras.metrics.Mean(name="generator_loss")
        self.disc_loss_tracker = keras.metrics.Mean(name="discriminator_loss")
        # Not in the example: Keras 3.15's fit() builds an unbuilt model by calling it, and this one has no call().
        self.built = True

    @property
    def metrics(self):
        return [self.gen_loss_tracker, self.disc_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, data):
        # Unpack the data.
        real_images, one_hot_labels = data

        # Add dummy dimensions to the labels so that they can be concatenated with
        # the images. This is for the discriminator.
        image_one_hot_labels = one_hot_labels[:, :, None, None]
        image_one_hot_labels = ops.repeat(image_one_hot_labels, repeats=image_size * image_size)
        image_one_hot_labels = ops.reshape(image_one_hot_labels, (-1, image_size, image_size, num_classes))

        # Sample random points in the latent space and concatenate the labels.
        # This is for the generator.
        batch_size = ops.shape(real_images)[0]
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )
        random_vector_labels = ops.concatenate(
            [random_latent_vectors, one_hot_labels], axis=1
        )

        # Decode the noise (guided by labels) to fake images.
        generated_images = self.generator(random_vector_labels)

        # Combine them with real images. Note that we are concatenating the labels
        # with these images here.
        fake_image_and_labels = ops.concatenate(
            [generated_images, image_one_hot_labels], -1
        )
        real_image_and_labels = ops.concatenate([real_images, image_one_hot_labels], -1)
        combined_images = ops.concatenate(
            [fake_image_and_labels, real_image_and_labels], axis=0
        )

        # Assemble labels discriminating real from fake images.
        labels = ops.concatenate(
            [ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))], axis=0
        )

        # Train the discriminator.
        with keras.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(
            zip(grads, self.discriminator.trainable_weights)
        )

        # Sample random points in the latent space.
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )
        random_vector_labels = ops.concatenate(
            [random_latent_vectors, one_hot_labels], axis=1
        )

        # Assemble labels that say "all real images".
        misleading_labels = ops.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with keras.GradientTape() as tape:
            fake_images = self.generator(random_vector_labels)
            fake_image_and_labels = ops.concatenate(
                [fake_images, image_one_hot_labels], -1
            )
            predictions = self.discriminator(fake_image_and_labels)
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))

        # Monitor loss.
        self.gen_loss_tracker.update_state(g_loss)
        self.disc_loss_tracker.update_state(d_loss)
        return {
            "g_loss": self.gen_loss_tracker.result(),
            "d_loss": self.disc_loss_tracker.result(),
        }


def build_models():
    generator_in_channels = latent_dim + num_classes
    discriminator_in_channels = num_channels + num_classes

    # Create the discriminator.
    discriminator = keras.Sequential(
        [
            keras.layers.InputLayer((28, 28, discriminator_in_channels)),
            layers.Conv2D(64, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(128, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.GlobalMaxPooling2D(),
            layers.Dense(1),
        ],
        name="discriminator",
    )

    # Create the generator.
    generator = keras.Sequential(
        [
            keras.layers.InputLayer((generator_in_channels,)),
            # We want to generate 128 + num_classes coefficients to reshape into a
            # 7x7x(128 + num_classes) map.
            layers.Dense(7 * 7 * generator_in_channels),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((7, 7, generator_in_channels)),
            layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
        ],
        name="generator",
    )
    return discriminator, generator


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(44)

    # Stands in for keras.datasets.mnist.load_data(), train and test concatenated.
    all_digits = rng.integers(0, 256, size=(32, 28, 28), dtype=np.uint8)
    all_labels = rng.integers(0, 10, size=(32,), dtype=np.uint8)

    # Scale the pixel values to [0, 1] range, add a channel dimension to
    # the images, and one-hot encode the labels.
    all_digits = all_digits.astype("float32") / 255.0
    all_digits = np.reshape(all_digits, (-1, 28, 28, 1))
    all_labels = keras.utils.to_categorical(all_labels, 10)

    discriminator, generator = build_models()

    cond_gan = ConditionalGAN(
        discriminator=discriminator, generator=generator, latent_dim=latent_dim
    )
    cond_gan.compile(
        d_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        g_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
    )

    history = cond_gan.fit(all_digits, all_labels, batch_size=16, epochs=1, verbose=0)

    # Choose the number of intermediate images that would be generated in
    # between the interpolation + 2 (start and last images).
    num_interpolation = 9

    # Sample noise for the interpolation.
    interpolation_noise = np.random.default_rng(45).normal(size=(1, latent_dim)).astype("float32")
    interpolation_noise = ops.repeat(interpolation_noise, repeats=num_interpolation)
    interpolation_noise = ops.reshape(interpolation_noise, (num_interpolation, latent_dim))

    def interpolate_class(trained_gen, first_number, second_number):
        # Convert the start and end labels to one-hot encoded vectors.
        first_label = keras.utils.to_categorical([first_number], num_classes)
        second_label = keras.utils.to_categorical([second_number], num_classes)
        first_label = ops.cast(first_label, "float32")
        second_label = ops.cast(second_label, "float32")

        # Calculate the interpolation vector between the two labels.
        percent_second_label = ops.linspace(0, 1, num_interpolation)[:, None]
        percent_second_label = ops.cast(percent_second_label, "float32")
        interpolation_labels = (
            first_label * (1 - percent_second_label) + second_label * percent_second_label
        )

        # Combine the noise and the labels and run inference with the generator.
        noise_and_labels = ops.concatenate([interpolation_noise, interpolation_labels], 1)
        fake = trained_gen.predict(noise_and_labels, verbose=0)
        return fake

    def probe(model):
        # We first extract the trained generator from our Conditional GAN.
        fake_images = interpolate_class(model.generator, 1, 5)
        fake_images *= 255.0
        converted_images = fake_images.astype(np.uint8)
        return {"interpolated": fake_images, "converted_shape": np.array(converted_images.shape),
                "judged": model.discriminator.predict(
                    np.concatenate([all_digits[:4], np.zeros((4, 28, 28, 10), "float32")], -1), verbose=0)}

    return {
        "model": cond_gan,
        "saved_model": generator,
        "loss": history.history["d_loss"][-1],
        "probe": probe,
        "values": {"history_keys": sorted(history.history),
                   "labels": all_labels[:4], "labels_dtype": str(all_labels.dtype)},
    }


if __name__ == "__main__":
    print(main())
