"""Denoising Diffusion Implicit Models (keras-io examples/generative/ddim.py): a residual U-Net built with the
functional API from closures (ResidualBlock with a 1x1 Conv2D shortcut where the width changes,
BatchNormalization(center=False, scale=False), swish Conv2D, Add; DownBlock with AveragePooling2D and a list of
skips; UpBlock with bilinear UpSampling2D and Concatenate), a Lambda of sinusoidal noise-variance embeddings
(ops.exp of ops.linspace of logs, sin and cos concatenated) upsampled with "nearest" UpSampling2D, a zero-
initialized output Conv2D; a DiffusionModel subclass holding a Normalization layer adapted on the images, the
network and an EMA copy made with keras.models.clone_model, compile() creating Mean trackers and a KID
metric (a Metric subclass with its own encoder, polynomial kernels and a Mean inside), the `metrics` property,
a cosine diffusion schedule (ops.arccos, cos, sin), custom train_step (keras.GradientTape, the loss given to
compile called as self.loss, apply_gradients, the EMA weights updated by hand with Variable.assign) and
test_step (reverse diffusion with the EMA network, KID of generated against real images), trained with AdamW
and mean_absolute_error, validation data, a LambdaCallback and a weights-only ModelCheckpoint on val_kid
(mode "min", save_best_only), whose file is loaded back with load_weights.
Written as the example writes it for TensorFlow, with `keras.GradientTape` for `tf.GradientTape` and
keras.ops / keras.random for tf.* (the example's Keras 3 form does the same). Changed to run here: the images
are synthetic arrays in [0, 1] (the example center-crops and resizes Oxford Flowers with tf.image and
tf.data); KID's encoder, a pretrained InceptionV3 with ImageNet weights that cannot be downloaded here, is a
small Conv2D network behind the example's Rescaling and Resizing; plot_images keeps its generated images
instead of drawing them with matplotlib; Keras 3 names the optimizer keras.optimizers.AdamW and saves weights
only to a ".weights.h5" file.
Smaller: 16x16 images instead of 64x64, widths [8, 16] instead of [32, 64, 96, 128], block_depth 1, batches of
8, 16 training and 8 validation images, 3 diffusion steps for KID and 4 for the plots.
The probe, after the weight copy: the network and the EMA network on fixed noisy images, the denoised split,
and a deterministic reverse diffusion from fixed noise (EMA network, denormalized). The network holds a Lambda
of a Python function, which Keras 3.15 cannot load back and kgraph refuses to save by design, so nothing is
exported."""
import math

import keras
import numpy as np
from keras import layers, ops

# data
num_epochs = 1  # train for at least 50 epochs for good results
image_size = 16  # the example's 64
# KID = Kernel Inception Distance, see related section
kid_image_size = 24  # the example's 75 (InceptionV3's smallest input)
kid_diffusion_steps = 3  # the example's 5
plot_diffusion_steps = 4  # the example's 20

# sampling
min_signal_rate = 0.02
max_signal_rate = 0.95

# architecture
embedding_dims = 32
embedding_max_frequency = 1000.0
widths = [8, 16]  # the example's [32, 64, 96, 128]
block_depth = 1  # the example's 2

# optimization
batch_size = 8  # the example's 64
ema = 0.999
learning_rate = 1e-3
weight_decay = 1e-4


class KID(keras.metrics.Metric):
    def __init__(self, name, **kwargs):
        super().__init__(name=name, **kwargs)

        # KID is estimated per batch and is averaged across batches
        self.kid_tracker = keras.metrics.Mean(name="kid_tracker")

        # The example's encoder is a pretrained InceptionV3 without its classification layer; a small
        # convolutional network stands in for it here (its ImageNet weights cannot be downloaded).
        self.encoder = keras.Sequential(
            [
                keras.Input(shape=(image_size, image_size, 3)),
                layers.Rescaling(255.0),
                layers.Resizing(height=kid_image_size, width=kid_image_size),
                layers.Rescaling(1.0 / 127.5, offset=-1.0),
                layers.Conv2D(16, kernel_size=3, strides=2, activation="relu"),
                layers.GlobalAveragePooling2D(),
            ],
            name="inception_encoder",
        )

    def polynomial_kernel(self, features_1, features_2):
        feature_dimensions = ops.cast(ops.shape(features_1)[1], dtype="float32")
        return (
            features_1 @ ops.transpose(features_2) / feature_dimensions + 1.0
        ) ** 3.0

    def update_state(self, real_images, generated_images, sample_weight=None):
        real_features = self.encoder(real_images, training=False)
        generated_features = self.encoder(generated_images, training=False)

        # compute polynomial kernels using the two sets of features
        kernel_real = self.polynomial_kernel(real_features, real_features)
        kernel_generated = self.polynomial_kernel(
            generated_features, generated_features
        )
        kernel_cross = self.polynomial_kernel(real_features, generated_features)

        # estimate the squared maximum mean discrepancy using the average kernel values
        batch_size = real_features.shape[0]
        batch_size_f = ops.cast(batch_size, dtype="float32")
        mean_kernel_real = ops.sum(kernel_real * (1.0 - ops.eye(batch_size))) / (
            batch_size_f * (batch_size_f - 1.0)
        )
        mean_kernel_generated = ops.sum(
            kernel_generated * (1.0 - ops.eye(batch_size))
        ) / (batch_size_f * (batch_size_f - 1.0))
        mean_kernel_cross = ops.mean(kernel_cross)
        kid = mean_kernel_real + mean_kernel_generated - 2.0 * mean_kernel_cross

        # update the average KID estimate
        self.kid_tracker.update_state(kid)

    def result(self):
        return self.kid_tracker.result()

    def reset_state(self):
        self.kid_tracker.reset_state()


@keras.saving.register_keras_serializable()
def sinusoidal_embedding(x):
    embedding_min_frequency = 1.0
    frequencies = ops.exp(
        ops.linspace(
            ops.log(embedding_min_frequency),
            ops.log(embedding_max_frequency),
            embedding_dims // 2,
        )
    )
    angular_speeds = ops.cast(2.0 * math.pi * frequencies, "float32")
    embeddings = ops.concatenate(
        [ops.sin(angular_speeds * x), ops.cos(angular_speeds * x)], axis=3
    )
    return embeddings


def ResidualBlock(width):
    def apply(x):
        input_width = x.shape[3]
        if input_width == width:
            residual = x
        else:
            residual = layers.Conv2D(width, kernel_size=1)(x)
        x = layers.BatchNormalization(center=False, scale=False)(x)
        x = layers.Conv2D(
            width, kernel_size=3, padding="same", activation=keras.activations.swish
        )(x)
        x = layers.Conv2D(width, kernel_size=3, padding="same")(x)
        x = layers.Add()([x, residual])
        return x

    return apply


def DownBlock(width, block_depth):
    def apply(x):
        x, skips = x
        for _ in range(block_depth):
            x = ResidualBlock(width)(x)
            skips.append(x)
        x = layers.AveragePooling2D(pool_size=2)(x)
        return x

    return apply


def UpBlock(width, block_depth):
    def apply(x):
        x, skips = x
        x = layers.UpSampling2D(size=2, interpolation="bilinear")(x)
        for _ in range(block_depth):
            x = layers.Concatenate()([x, skips.pop()])
            x = ResidualBlock(width)(x)
        return x

    return apply


def get_network(image_size, widths, block_depth):
    noisy_images = keras.Input(shape=(image_size, image_size, 3))
    noise_variances = keras.Input(shape=(1, 1, 1))

    e = layers.Lambda(sinusoidal_embedding)(noise_variances)
    e = layers.UpSampling2D(size=image_size, interpolation="nearest")(e)

    x = layers.Conv2D(widths[0], kernel_size=1)(noisy_images)
    x = layers.Concatenate()([x, e])

    skips = []
    for width in widths[:-1]:
        x = DownBlock(width, block_depth)([x, skips])

    for _ in range(block_depth):
        x = ResidualBlock(widths[-1])(x)

    for width in reversed(widths[:-1]):
        x = UpBlock(width, block_depth)([x, skips])

    x = layers.Conv2D(3, kernel_size=1, kernel_initializer="zeros")(x)

    return keras.Model([noisy_images, noise_variances], x, name="residual_unet")


class DiffusionModel(keras.Model):
    def __init__(self, image_size, widths, block_depth):
        super().__init__()

        self.normalizer = layers.Normalization()
        self.network = get_network(image_size, widths, block_depth)
        self.ema_network = keras.models.clone_model(self.network)
        self.plotted_images = []
        # Not in the example: Keras 3.15's fit() builds an unbuilt model by calling it, and this one has no call().
        self.built = True

    def compile(self, loss=None, **kwargs):
        # Not in the example: Keras 3.15's fit() builds a compiled loss by calling the model, which has no
        # call(); the loss is kept as self.loss, which the steps call, without compiling it.
        super().compile(**kwargs)
        self.loss = loss

        self.noise_loss_tracker = keras.metrics.Mean(name="n_loss")
        self.image_loss_tracker = keras.metrics.Mean(name="i_loss")
        self.kid = KID(name="kid")

    @property
    def metrics(self):
        return [self.noise_loss_tracker, self.image_loss_tracker, self.kid]

    def denormalize(self, images):
        # convert the pixel values back to 0-1 range
        images = self.normalizer.mean + images * self.normalizer.variance**0.5
        return ops.clip(images, 0.0, 1.0)

    def diffusion_schedule(self, diffusion_times):
        # diffusion times -> angles
        start_angle = ops.cast(ops.arccos(max_signal_rate), "float32")
        end_angle = ops.cast(ops.arccos(min_signal_rate), "float32")

        diffusion_angles = start_angle + diffusion_times * (end_angle - start_angle)

        # angles -> signal and noise rates
        signal_rates = ops.cos(diffusion_angles)
        noise_rates = ops.sin(diffusion_angles)
        # note that their squared sum is always: sin^2(x) + cos^2(x) = 1

        return noise_rates, signal_rates

    def denoise(self, noisy_images, noise_rates, signal_rates, training):
        # the exponential moving average weights are used at evaluation
        if training:
            network = self.network
        else:
            network = self.ema_network

        # predict noise component and calculate the image component using it
        pred_noises = network([noisy_images, noise_rates**2], training=training)
        pred_images = (noisy_images - noise_rates * pred_noises) / signal_rates

        return pred_noises, pred_images

    def reverse_diffusion(self, initial_noise, diffusion_steps):
        # reverse diffusion = sampling
        num_images = initial_noise.shape[0]
        step_size = 1.0 / diffusion_steps

        # important line:
        # at the first sampling step, the "noisy image" is pure noise
        # but its signal rate is assumed to be nonzero (min_signal_rate)
        next_noisy_images = initial_noise
        for step in range(diffusion_steps):
            noisy_images = next_noisy_images

            # separate the current noisy image to its components
            diffusion_times = ops.ones((num_images, 1, 1, 1)) - step * step_size
            noise_rates, signal_rates = self.diffusion_schedule(diffusion_times)
            pred_noises, pred_images = self.denoise(
                noisy_images, noise_rates, signal_rates, training=False
            )
            # network used in eval mode

            # remix the predicted components using the next signal and noise rates
            next_diffusion_times = diffusion_times - step_size
            next_noise_rates, next_signal_rates = self.diffusion_schedule(
                next_diffusion_times
            )
            next_noisy_images = (
                next_signal_rates * pred_images + next_noise_rates * pred_noises
            )
            # this new noisy image will be used in the next step

        return pred_images

    def generate(self, num_images, diffusion_steps):
        # noise -> images -> denormalized images
        initial_noise = keras.random.normal(
            shape=(num_images, image_size, image_size, 3)
        )
        generated_images = self.reverse_diffusion(initial_noise, diffusion_steps)
        generated_images = self.denormalize(generated_images)
        return generated_images

    def train_step(self, images):
        # normalize images to have standard deviation of 1, like the noises
        images = self.normalizer(images, training=True)
        noises = keras.random.normal(shape=(batch_size, image_size, image_size, 3))

        # sample uniform random diffusion times
        diffusion_times = keras.random.uniform(
            shape=(batch_size, 1, 1, 1), minval=0.0, maxval=1.0
        )
        noise_rates, signal_rates = self.diffusion_schedule(diffusion_times)
        # mix the images with noises accordingly
        noisy_images = signal_rates * images + noise_rates * noises

        with keras.GradientTape() as tape:
            # train the network to separate noisy images to their components
            pred_noises, pred_images = self.denoise(
                noisy_images, noise_rates, signal_rates, training=True
            )

            noise_loss = self.loss(noises, pred_noises)  # used for training
            image_loss = self.loss(images, pred_images)  # only used as metric

        gradients = tape.gradient(noise_loss, self.network.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.network.trainable_weights))

        self.noise_loss_tracker.update_state(noise_loss)
        self.image_loss_tracker.update_state(image_loss)

        # track the exponential moving averages of weights
        for weight, ema_weight in zip(self.network.weights, self.ema_network.weights):
            ema_weight.assign(ema * ema_weight + (1 - ema) * weight)

        # KID is not measured during the training phase for computational efficiency
        return {m.name: m.result() for m in self.metrics[:-1]}

    def test_step(self, images):
        # normalize images to have standard deviation of 1, like the noises
        images = self.normalizer(images, training=False)
        noises = keras.random.normal(shape=(batch_size, image_size, image_size, 3))

        # sample uniform random diffusion times
        diffusion_times = keras.random.uniform(
            shape=(batch_size, 1, 1, 1), minval=0.0, maxval=1.0
        )
        noise_rates, signal_rates = self.diffusion_schedule(diffusion_times)
        # mix the images with noises accordingly
        noisy_images = signal_rates * images + noise_rates * noises

        # use the network to separate noisy images to their components
        pred_noises, pred_images = self.denoise(
            noisy_images, noise_rates, signal_rates, training=False
        )

        noise_loss = self.loss(noises, pred_noises)
        image_loss = self.loss(images, pred_images)

        self.image_loss_tracker.update_state(image_loss)
        self.noise_loss_tracker.update_state(noise_loss)

        # measure KID between real and generated images
        # this is computationally demanding, kid_diffusion_steps has to be small
        images = self.denormalize(images)
        generated_images = self.generate(
            num_images=batch_size, diffusion_steps=kid_diffusion_steps
        )
        self.kid.update_state(images, generated_images)

        return {m.name: m.result() for m in self.metrics}

    def plot_images(self, epoch=None, logs=None, num_rows=2, num_cols=3):
        # random generated images for visual evaluation of generation quality (the example draws them)
        generated_images = self.generate(
            num_images=num_rows * num_cols,
            diffusion_steps=plot_diffusion_steps,
        )
        self.plotted_images.append(keras.ops.convert_to_numpy(generated_images))


def load_images(rng, n):
    """Stands in for the center-cropped, resized Oxford Flowers images: smooth colour fields in [0, 1]."""
    yy, xx = np.meshgrid(np.linspace(0, 1, image_size), np.linspace(0, 1, image_size), indexing="ij")
    base = rng.uniform(0.2, 0.8, size=(n, 1, 1, 3))
    slope = rng.uniform(-0.3, 0.3, size=(n, 1, 1, 3))
    images = base + slope * (yy + xx)[None, :, :, None] + 0.05 * rng.normal(size=(n, image_size, image_size, 3))
    return np.clip(images, 0.0, 1.0).astype("float32")


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(81)
    train_images = load_images(rng, 16)
    val_images = load_images(rng, batch_size)

    # create and compile the model
    model = DiffusionModel(image_size, widths, block_depth)
    model.compile(
        optimizer=keras.optimizers.AdamW(
            learning_rate=learning_rate, weight_decay=weight_decay
        ),
        loss=keras.losses.mean_absolute_error,
    )
    # pixelwise mean absolute error is used as loss

    # save the best model based on the validation KID metric
    checkpoint_path = "checkpoints/diffusion_model.weights.h5"
    checkpoint_callback = keras.callbacks.ModelCheckpoint(
        filepath=checkpoint_path,
        save_weights_only=True,
        monitor="val_kid",
        mode="min",
        save_best_only=True,
    )

    # calculate mean and variance of training dataset for normalization
    model.normalizer.adapt(train_images)

    # run training and plot generated images periodically
    history = model.fit(
        train_images,
        batch_size=batch_size,
        epochs=num_epochs,
        validation_data=val_images,
        callbacks=[
            keras.callbacks.LambdaCallback(on_epoch_end=model.plot_images),
            checkpoint_callback,
        ],
        verbose=0,
    )

    # load the best model and generate images
    model.load_weights(checkpoint_path)
    model.plot_images()

    fixed = np.random.default_rng(82)
    noisy = fixed.normal(size=(4, image_size, image_size, 3)).astype("float32")
    times = fixed.uniform(size=(4, 1, 1, 1)).astype("float32")
    initial_noise = fixed.normal(size=(3, image_size, image_size, 3)).astype("float32")

    def probe(m):
        noise_rates, signal_rates = m.diffusion_schedule(ops.convert_to_tensor(times))
        pred_noises, pred_images = m.denoise(ops.convert_to_tensor(noisy), noise_rates, signal_rates,
                                             training=False)
        return {"network": m.network.predict([noisy, times], verbose=0),
                "ema_network": m.ema_network.predict([noisy, times], verbose=0),
                "pred_noises": pred_noises, "pred_images": pred_images,
                "normalizer": [m.normalizer.mean, m.normalizer.variance],
                "generated": m.denormalize(m.reverse_diffusion(ops.convert_to_tensor(initial_noise), 3))}

    noise_rates, signal_rates = model.diffusion_schedule(ops.convert_to_tensor(times))
    return {
        "model": model,
        "loss": history.history["n_loss"][-1],
        "probe": probe,
        "saved_model": model.network,
        "values": {"history_keys": sorted(history.history),
                   # Small inputs: near 1, the top frequency (2 pi * 1000) turns one float32 rounding of the
                   # angle (in exp/linspace, NumPy's or torch's) into ~5e-4 of sin/cos, not a formula difference.
                   "embedding": sinusoidal_embedding(ops.convert_to_tensor(times * 1e-3)),
                   "schedule": [noise_rates, signal_rates],
                   "adapted": model.normalizer.get_weights(),
                   "plotted": [list(images.shape) for images in model.plotted_images],
                   "weights": [list(w.shape) for w in model.get_weights()],
                   "metric_names": [m.name for m in model.metrics]},
    }


if __name__ == "__main__":
    print(main())
