"""WGAN-GP overriding `Model.train_step` (keras-io examples/generative/wgan_gp.py, its Keras 3 form): a
functional critic built from conv blocks (ZeroPadding2D to 32x32, 5x5 strided Conv2D, LeakyReLU(0.2),
Dropout) and a functional generator from upsample blocks (UpSampling2D, Conv2D without bias,
BatchNormalization, Cropping2D back to 28x28), a WGAN Model subclass with its own compile(d_optimizer,
g_optimizer, d_loss_fn, g_loss_fn), three critic steps per generator step, and a gradient penalty: the
gradient of the critic's output with respect to interpolated images, taken on a tape nested in the critic's
tape, whose norm enters the critic's loss, so the critic's update needs a gradient of a gradient.
As the example writes it for TensorFlow, with `keras.GradientTape` for `tf.GradientTape` and keras.ops /
keras.random for tf.* (tf.random.uniform, tf.sqrt, tf.reduce_sum, ...). Smaller: batches of 8 instead of 512,
16 Fashion-MNIST-shaped images, one epoch and no GANMonitor (the image-saving callback, which
p_dcgan_overriding_train_step has). WGAN sets `built`, which Keras 3.15's fit needs of a model without call().
The probe takes the penalty's gradient with respect to the critic's weights on fixed images, a fixed alpha
and the critic in inference mode (no Dropout), nested tapes as in `gradient_penalty`: a second-order
gradient that the comparison checks."""
import keras
import numpy as np
from keras import layers, ops

IMG_SHAPE = (28, 28, 1)
BATCH_SIZE = 8  # the example's 512

# Size of the noise vector
noise_dim = 128


def conv_block(
    x,
    filters,
    activation,
    kernel_size=(3, 3),
    strides=(1, 1),
    padding="same",
    use_bias=True,
    use_bn=False,
    use_dropout=False,
    drop_value=0.5,
):
    x = layers.Conv2D(
        filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias
    )(x)
    if use_bn:
        x = layers.BatchNormalization()(x)
    x = activation(x)
    if use_dropout:
        x = layers.Dropout(drop_value)(x)
    return x


def get_discriminator_model():
    img_input = layers.Input(shape=IMG_SHAPE)
    # Zero pad the input to make the input images size to (32, 32, 1).
    x = layers.ZeroPadding2D((2, 2))(img_input)
    x = conv_block(x, 64, kernel_size=(5, 5), strides=(2, 2), use_bn=False, use_bias=True,
                   activation=layers.LeakyReLU(0.2), use_dropout=False, drop_value=0.3)
    x = conv_block(x, 128, kernel_size=(5, 5), strides=(2, 2), use_bn=False, activation=layers.LeakyReLU(0.2),
                   use_bias=True, use_dropout=True, drop_value=0.3)
    x = conv_block(x, 256, kernel_size=(5, 5), strides=(2, 2), use_bn=False, activation=layers.LeakyReLU(0.2),
                   use_bias=True, use_dropout=True, drop_value=0.3)
    x = conv_block(x, 512, kernel_size=(5, 5), strides=(2, 2), use_bn=False, activation=layers.LeakyReLU(0.2),
                   use_bias=True, use_dropout=False, drop_value=0.3)

    x = layers.Flatten()(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Dense(1)(x)

    d_model = keras.models.Model(img_input, x, name="discriminator")
    return d_model


def upsample_block(
    x,
    filters,
    activation,
    kernel_size=(3, 3),
    strides=(1, 1),
    up_size=(2, 2),
    padding="same",
    use_bn=False,
    use_bias=True,
    use_dropout=False,
    drop_value=0.3,
):
    x = layers.UpSampling2D(up_size)(x)
    x = layers.Conv2D(
        filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias
    )(x)

    if use_bn:
        x = layers.BatchNormalization()(x)

    if activation:
        x = activation(x)
    if use_dropout:
        x = layers.Dropout(drop_value)(x)
    return x


def get_generator_model():
    noise = layers.Input(shape=(noise_dim,))
    x = layers.Dense(4 * 4 * 256, use_bias=False)(noise)
    x = layers.BatchNormalization()(x)
    x = layers.LeakyReLU(0.2)(x)

    x = layers.Reshape((4, 4, 256))(x)
    x = upsample_block(x, 128, layers.LeakyReLU(0.2), strides=(1, 1), use_bias=False, use_bn=True,
                       padding="same", use_dropout=False)
    x = upsample_block(x, 64, layers.LeakyReLU(0.2), strides=(1, 1), use_bias=False, use_bn=True,
                       padding="same", use_dropout=False)
    x = upsample_block(x, 1, layers.Activation("tanh"), strides=(1, 1), use_bias=False, use_bn=True)
    # At this point, we have an output which has the same shape as the input, (32, 32, 1).
    # We will use a Cropping2D layer to make it (28, 28, 1).
    x = layers.Cropping2D((2, 2))(x)

    g_model = keras.models.Model(noise, x, name="generator")
    return g_model


class WGAN(keras.Model):
    def __init__(
        self,
        discriminator,
        generator,
        latent_dim,
        discriminator_extra_steps=3,
        gp_weight=10.0,
    ):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.d_steps = discriminator_extra_steps
        self.gp_weight = gp_weight
        # Not in the example: Keras 3.15's fit() builds an unbuilt model by calling it, and this one has no call().
        self.built = True

    def compile(self, d_optimizer, g_optimizer, d_loss_fn, g_loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.d_loss_fn = d_loss_fn
        self.g_loss_fn = g_loss_fn

    def gradient_penalty(self, batch_size, real_images, fake_images):
        """Calculates the gradient penalty.

        This loss is calculated on an interpolated image
        and added to the discriminator loss.
        """
        # Get the interpolated image
        alpha = keras.random.uniform([batch_size, 1, 1, 1], 0.0, 1.0)
        diff = fake_images - real_images
        interpolated = real_images + alpha * diff

        with keras.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            # 1. Get the discriminator output for this interpolated image.
            pred = self.discriminator(interpolated, training=True)

        # 2. Calculate the gradients w.r.t to this interpolated image.
        grads = gp_tape.gradient(pred, [interpolated])[0]
        # 3. Calculate the norm of the gradients.
        norm = ops.sqrt(ops.sum(ops.square(grads), axis=[1, 2, 3]))
        gp = ops.mean((norm - 1.0) ** 2)
        return gp

    def train_step(self, real_images):
        if isinstance(real_images, tuple):
            real_images = real_images[0]

        # Get the batch size
        batch_size = ops.shape(real_images)[0]

        # Train the discriminator first: three extra critic steps per generator step.
        for i in range(self.d_steps):
            # Get the latent vector
            random_latent_vectors = keras.random.normal(
                shape=(batch_size, self.latent_dim)
            )
            with keras.GradientTape() as tape:
                # Generate fake images from the latent vector
                fake_images = self.generator(random_latent_vectors, training=True)
                # Get the logits for the fake images
                fake_logits = self.discriminator(fake_images, training=True)
                # Get the logits for the real images
                real_logits = self.discriminator(real_images, training=True)

                # Calculate the discriminator loss using the fake and real image logits
                d_cost = self.d_loss_fn(real_img=real_logits, fake_img=fake_logits)
                # Calculate the gradient penalty
                gp = self.gradient_penalty(batch_size, real_images, fake_images)
                # Add the gradient penalty to the original discriminator loss
                d_loss = d_cost + gp * self.gp_weight

            # Get the gradients w.r.t the discriminator loss
            d_gradient = tape.gradient(d_loss, self.discriminator.trainable_variables)
            # Update the weights of the discriminator using the discriminator optimizer
            self.d_optimizer.apply_gradients(
                zip(d_gradient, self.discriminator.trainable_variables)
            )

        # Train the generator
        # Get the latent vector
        random_latent_vectors = keras.random.normal(shape=(batch_size, self.latent_dim))
        with keras.GradientTape() as tape:
            # Generate fake images using the generator
            generated_images = self.generator(random_latent_vectors, training=True)
            # Get the discriminator logits for fake images
            gen_img_logits = self.discriminator(generated_images, training=True)
            # Calculate the generator loss
            g_loss = self.g_loss_fn(gen_img_logits)

        # Get the gradients w.r.t the generator loss
        gen_gradient = tape.gradient(g_loss, self.generator.trainable_variables)
        # Update the weights of the generator using the generator optimizer
        self.g_optimizer.apply_gradients(
            zip(gen_gradient, self.generator.trainable_variables)
        )
        return {"d_loss": d_loss, "g_loss": g_loss}


# Define the loss functions for the discriminator,
# which should be (fake_loss - real_loss).
# We will add the gradient penalty later to this loss function.
def discriminator_loss(real_img, fake_img):
    real_loss = ops.mean(real_img)
    fake_loss = ops.mean(fake_img)
    return fake_loss - real_loss


# Define the loss functions for the generator.
def generator_loss(fake_img):
    return -ops.mean(fake_img)


def penalty_gradients(discriminator, real_images, fake_images, alpha):
    """The example's gradient_penalty with a given alpha and the critic in inference mode, differentiated with
    respect to the critic's weights on an outer tape."""
    interpolated = ops.convert_to_tensor(real_images + alpha * (fake_images - real_images))
    with keras.GradientTape() as tape:
        with keras.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            pred = discriminator(interpolated, training=False)
        grads = gp_tape.gradient(pred, [interpolated])[0]
        norm = ops.sqrt(ops.sum(ops.square(grads), axis=[1, 2, 3]))
        gp = ops.mean((norm - 1.0) ** 2)
    return {"gp": gp, "input_gradient_norm": norm,
            "gp_gradients": tape.gradient(gp, discriminator.trainable_variables)}


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(43)

    # Stands in for keras.datasets.fashion_mnist.load_data().
    train_images = rng.integers(0, 256, size=(16, 28, 28), dtype=np.uint8)
    # Reshape each sample to (28, 28, 1) and normalize the pixel values in the [-1, 1] range
    train_images = train_images.reshape(train_images.shape[0], *IMG_SHAPE).astype("float32")
    train_images = (train_images - 127.5) / 127.5

    d_model = get_discriminator_model()
    d_model.summary()
    g_model = get_generator_model()
    g_model.summary()

    # Instantiate the optimizer for both networks
    # (learning_rate=0.0002, beta_1=0.5 are recommended)
    generator_optimizer = keras.optimizers.Adam(learning_rate=0.0002, beta_1=0.5, beta_2=0.9)
    discriminator_optimizer = keras.optimizers.Adam(learning_rate=0.0002, beta_1=0.5, beta_2=0.9)

    # Set the number of epochs for training.
    epochs = 1

    # Get the wgan model
    wgan = WGAN(
        discriminator=d_model,
        generator=g_model,
        latent_dim=noise_dim,
        discriminator_extra_steps=3,
    )

    # Compile the wgan model
    wgan.compile(
        d_optimizer=discriminator_optimizer,
        g_optimizer=generator_optimizer,
        g_loss_fn=generator_loss,
        d_loss_fn=discriminator_loss,
    )

    # Start training
    history = wgan.fit(train_images, batch_size=BATCH_SIZE, epochs=epochs, verbose=0)

    latent = np.random.default_rng(44).normal(size=(4, noise_dim)).astype("float32")
    alpha = np.random.default_rng(45).uniform(size=(4, 1, 1, 1)).astype("float32")

    def probe(model):
        fake = model.generator.predict(latent, verbose=0)
        return {"generated": fake,
                "critic": model.discriminator.predict(train_images[:4], verbose=0),
                **penalty_gradients(model.discriminator, train_images[:4], fake, alpha)}

    return {
        "model": wgan,
        "saved_model": g_model,
        "loss": history.history["d_loss"][-1],
        "probe": probe,
        "values": {"history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
