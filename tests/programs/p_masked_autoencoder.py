"""Masked image modeling with Autoencoders (keras-io examples/vision/masked_image_modeling.py): augmentation
Sequentials (Rescaling, Resizing, RandomCrop, RandomFlip), a Patches layer (ops.image.extract_patches and a
Reshape) with reconstruct_from_patch (ops.split, ops.unstack, ops.concatenate), a PatchEncoder layer with a
trainable mask token Variable, sub-layers made in build() from the input shape, positional embeddings tiled
over the batch, random masking by ops.argsort of uniform noise, the example's tf.gather(..., batch_dims=1) as
ops.take_along_axis, mask tokens repeated with ops.repeat; a functional ViT encoder (LayerNormalization,
MultiHeadAttention with dropout, gelu MLPs, Add) on a variable number of patches, a functional decoder
(Flatten, a sigmoid Dense, Reshape to the image); a MaskedAutoencoder Model with calculate_loss, train_step
(keras.GradientTape over the five parts' variables) and test_step; a WarmUpCosine LearningRateSchedule
(ops.cos, ops.where) for AdamW; then linear probing: a Sequential of the trained Patches, PatchEncoder
(downstream=True), encoder, BatchNormalization, GlobalAveragePooling1D and a softmax Dense, all but the head
frozen, trained with SGD on the schedule and evaluated.
Written as the example writes it for TensorFlow, with `keras.GradientTape` for `tf.GradientTape` and
keras.ops / keras.random / keras.Variable for tf.* (tf.image.extract_patches, tf.gather, tf.repeat, tf.tile,
tf.Variable, ...). Changed to run on Keras 3.15 with torch: the CIFAR-10 arrays are synthetic and batched by
fit instead of tf.data; tfa.optimizers.AdamW is keras.optimizers.AdamW; Keras 3 has no compiled_loss or
compiled_metrics outside TensorFlow, so the loss is self.compute_loss(y=..., y_pred=...) and each of
self.metrics is updated with (loss_patch, loss_output), as the example's Keras 3 form writes both; the five
variable lists are joined into one flat list for the tape (the reference run's tape takes flat lists);
MaskedAutoencoder sets `built` and runs a train_step and a test_step before fit, because Keras 3.15's fit()
builds a compiled loss and metrics by calling the model, which has no call(); the plots and the TrainMonitor
callback (matplotlib) are left out.
Smaller: 8x8 images resized to 12x12 (the example's 32 and 48), 4x4 patches (9 of them, 6 masked), projection
dims 16 and 8, 2 heads, 2 encoder layers, 16 training, 8 validation and 8 test images, batches of 8, one epoch
of pretraining and one of linear probing.
The probe, after the weight copy: the test augmentation, the patches, the PatchEncoder in downstream mode, the
encoder on them, and the encoder and decoder on a fixed masking (the example's decoder input, with its mask
tokens). The ViT encoder (a variable number of patches) is saved and exported: the linear-probe model cannot
be saved, its optimizer's WarmUpCosine schedule has no get_config() (Keras raises NotImplementedError too)."""
import keras
import numpy as np
from keras import layers

# DATA
BATCH_SIZE = 8  # the example's 256
INPUT_SHAPE = (8, 8, 3)  # the example's (32, 32, 3)
NUM_CLASSES = 10

# OPTIMIZER
LEARNING_RATE = 5e-3
WEIGHT_DECAY = 1e-4

# PRETRAINING
EPOCHS = 1  # the example's 100

# AUGMENTATION
IMAGE_SIZE = 12  # We will resize input images to this size (the example's 48).
PATCH_SIZE = 4  # Size of the patches to be extracted from the input images (the example's 6).
NUM_PATCHES = (IMAGE_SIZE // PATCH_SIZE) ** 2
MASK_PROPORTION = 0.75  # We have found 75% masking to give us the best results.

# ENCODER and DECODER
LAYER_NORM_EPS = 1e-6
ENC_PROJECTION_DIM = 16  # the example's 128
DEC_PROJECTION_DIM = 8  # the example's 64
ENC_NUM_HEADS = 2  # the example's 4
ENC_LAYERS = 2  # the example's 3
DEC_NUM_HEADS = 2  # the example's 4
DEC_LAYERS = 1  # The decoder is lightweight but should be reasonably deep for reconstruction.
ENC_TRANSFORMER_UNITS = [ENC_PROJECTION_DIM * 2, ENC_PROJECTION_DIM]  # Size of the transformer layers.
DEC_TRANSFORMER_UNITS = [DEC_PROJECTION_DIM * 2, DEC_PROJECTION_DIM]


def get_train_augmentation_model():
    model = keras.Sequential(
        [
            layers.Rescaling(1 / 255.0),
            layers.Resizing(INPUT_SHAPE[0] + 20, INPUT_SHAPE[0] + 20),
            layers.RandomCrop(IMAGE_SIZE, IMAGE_SIZE),
            layers.RandomFlip("horizontal"),
        ],
        name="train_data_augmentation",
    )
    return model


def get_test_augmentation_model():
    model = keras.Sequential(
        [layers.Rescaling(1 / 255.0), layers.Resizing(IMAGE_SIZE, IMAGE_SIZE),],
        name="test_data_augmentation",
    )
    return model


class Patches(layers.Layer):
    def __init__(self, patch_size=PATCH_SIZE, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

        # Assuming the image has three channels each patch would be
        # of size (patch_size, patch_size, 3).
        self.resize = layers.Reshape((-1, patch_size * patch_size * 3))

    def call(self, images):
        # Create patches from the input images
        patches = keras.ops.image.extract_patches(
            images,
            size=(self.patch_size, self.patch_size),
            strides=(self.patch_size, self.patch_size),
            dilation_rate=1,
            padding="valid",
        )

        # Reshape the patches to (batch, num_patches, patch_area) and return it.
        patches = self.resize(patches)
        return patches

    # taken from https://stackoverflow.com/a/58082878/10319735
    def reconstruct_from_patch(self, patch):
        # This utility function takes patches from a *single* image and
        # reconstructs it back into the image. This is useful for the train
        # monitor callback.
        num_patches = patch.shape[0]
        n = int(np.sqrt(num_patches))
        patch = keras.ops.reshape(patch, (num_patches, self.patch_size, self.patch_size, 3))
        rows = keras.ops.split(patch, n, axis=0)
        rows = [keras.ops.concatenate(keras.ops.unstack(x), axis=1) for x in rows]
        reconstructed = keras.ops.concatenate(rows, axis=0)
        return reconstructed


class PatchEncoder(layers.Layer):
    def __init__(
        self,
        patch_size=PATCH_SIZE,
        projection_dim=ENC_PROJECTION_DIM,
        mask_proportion=MASK_PROPORTION,
        downstream=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.patch_size = patch_size
        self.projection_dim = projection_dim
        self.mask_proportion = mask_proportion
        self.downstream = downstream

        # This is a trainable mask token initialized randomly from a normal
        # distribution.
        self.mask_token = keras.Variable(
            keras.random.normal([1, patch_size * patch_size * 3]), trainable=True
        )

    def build(self, input_shape):
        (_, self.num_patches, self.patch_area) = input_shape

        # Create the projection layer for the patches.
        self.projection = layers.Dense(units=self.projection_dim)

        # Create the positional embedding layer.
        self.position_embedding = layers.Embedding(
            input_dim=self.num_patches, output_dim=self.projection_dim
        )

        # Number of patches that will be masked.
        self.num_mask = int(self.mask_proportion * self.num_patches)

    def call(self, patches):
        # Get the positional embeddings.
        batch_size = keras.ops.shape(patches)[0]
        positions = keras.ops.arange(start=0, stop=self.num_patches, step=1)
        pos_embeddings = self.position_embedding(positions[None, ...])
        pos_embeddings = keras.ops.tile(
            pos_embeddings, [batch_size, 1, 1]
        )  # (B, num_patches, projection_dim)

        # Embed the patches.
        patch_embeddings = (
            self.projection(patches) + pos_embeddings
        )  # (B, num_patches, projection_dim)

        if self.downstream:
            return patch_embeddings
        else:
            mask_indices, unmask_indices = self.get_random_indices(batch_size)
            # The encoder input is the unmasked patch embeddings. Here we gather
            # all the patches that should be unmasked.
            unmasked_embeddings = keras.ops.take_along_axis(
                patch_embeddings, unmask_indices[..., None], axis=1
            )  # (B, unmask_numbers, projection_dim)

            # Get the unmasked and masked position embeddings. We will need them
            # for the decoder.
            unmasked_positions = keras.ops.take_along_axis(
                pos_embeddings, unmask_indices[..., None], axis=1
            )  # (B, unmask_numbers, projection_dim)
            masked_positions = keras.ops.take_along_axis(
                pos_embeddings, mask_indices[..., None], axis=1
            )  # (B, mask_numbers, projection_dim)

            # Repeat the mask token number of mask times.
            # Mask tokens replace the masks of the image.
            mask_tokens = keras.ops.repeat(self.mask_token, repeats=self.num_mask, axis=0)
            mask_tokens = keras.ops.repeat(
                mask_tokens[None, ...], repeats=batch_size, axis=0
            )

            # Get the masked embeddings for the tokens.
            masked_embeddings = self.projection(mask_tokens) + masked_positions
            return (
                unmasked_embeddings,  # Input to the encoder.
                masked_embeddings,  # First part of input to the decoder.
                unmasked_positions,  # Added to the encoder outputs.
                mask_indices,  # The indices that were masked.
                unmask_indices,  # The indices that were unmaksed.
            )

    def get_random_indices(self, batch_size):
        # Create random indices from a uniform distribution and then split
        # it into mask and unmask indices.
        rand_indices = keras.ops.argsort(
            keras.random.uniform(shape=(batch_size, self.num_patches)), axis=-1
        )
        mask_indices = rand_indices[:, : self.num_mask]
        unmask_indices = rand_indices[:, self.num_mask :]
        return mask_indices, unmask_indices

    def generate_masked_image(self, patches, unmask_indices):
        # Choose a random patch and it corresponding unmask index.
        idx = np.random.choice(patches.shape[0])
        patch = patches[idx]
        unmask_index = unmask_indices[idx]

        # Build a numpy array of same shape as patch.
        new_patch = np.zeros_like(patch)

        # Iterate of the new_patch and plug the unmasked patches.
        for i in range(unmask_index.shape[0]):
            new_patch[unmask_index[i]] = patch[unmask_index[i]]
        return new_patch, idx


def mlp(x, dropout_rate, hidden_units):
    for units in hidden_units:
        x = layers.Dense(units, activation=keras.activations.gelu)(x)
        x = layers.Dropout(dropout_rate)(x)
    return x


def create_encoder(num_heads=ENC_NUM_HEADS, num_layers=ENC_LAYERS):
    inputs = layers.Input((None, ENC_PROJECTION_DIM))
    x = inputs

    for _ in range(num_layers):
        # Layer normalization 1.
        x1 = layers.LayerNormalization(epsilon=LAYER_NORM_EPS)(x)

        # Create a multi-head attention layer.
        attention_output = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=ENC_PROJECTION_DIM, dropout=0.1
        )(x1, x1)

        # Skip connection 1.
        x2 = layers.Add()([attention_output, x])

        # Layer normalization 2.
        x3 = layers.LayerNormalization(epsilon=LAYER_NORM_EPS)(x2)

        # MLP.
        x3 = mlp(x3, hidden_units=ENC_TRANSFORMER_UNITS, dropout_rate=0.1)

        # Skip connection 2.
        x = layers.Add()([x3, x2])

    outputs = layers.LayerNormalization(epsilon=LAYER_NORM_EPS)(x)
    return keras.Model(inputs, outputs, name="mae_encoder")


def create_decoder(num_layers=DEC_LAYERS, num_heads=DEC_NUM_HEADS, image_size=IMAGE_SIZE):
    inputs = layers.Input((NUM_PATCHES, ENC_PROJECTION_DIM))
    x = layers.Dense(DEC_PROJECTION_DIM)(inputs)

    for _ in range(num_layers):
        # Layer normalization 1.
        x1 = layers.LayerNormalization(epsilon=LAYER_NORM_EPS)(x)

        # Create a multi-head attention layer.
        attention_output = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=DEC_PROJECTION_DIM, dropout=0.1
        )(x1, x1)

        # Skip connection 1.
        x2 = layers.Add()([attention_output, x])

        # Layer normalization 2.
        x3 = layers.LayerNormalization(epsilon=LAYER_NORM_EPS)(x2)

        # MLP.
        x3 = mlp(x3, hidden_units=DEC_TRANSFORMER_UNITS, dropout_rate=0.1)

        # Skip connection 2.
        x = layers.Add()([x3, x2])

    x = layers.LayerNormalization(epsilon=LAYER_NORM_EPS)(x)
    x = layers.Flatten()(x)
    pre_final = layers.Dense(units=image_size * image_size * 3, activation="sigmoid")(x)
    outputs = layers.Reshape((image_size, image_size, 3))(pre_final)

    return keras.Model(inputs, outputs, name="mae_decoder")


class MaskedAutoencoder(keras.Model):
    def __init__(
        self,
        train_augmentation_model,
        test_augmentation_model,
        patch_layer,
        patch_encoder,
        encoder,
        decoder,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.train_augmentation_model = train_augmentation_model
        self.test_augmentation_model = test_augmentation_model
        self.patch_layer = patch_layer
        self.patch_encoder = patch_encoder
        self.encoder = encoder
        self.decoder = decoder
        # Not in the example: Keras 3.15's fit() builds an unbuilt model by calling it, and this one has no call().
        self.built = True

    def calculate_loss(self, images, test=False):
        # Augment the input images.
        if test:
            augmented_images = self.test_augmentation_model(images)
        else:
            augmented_images = self.train_augmentation_model(images)

        # Patch the augmented images.
        patches = self.patch_layer(augmented_images)

        # Encode the patches.
        (
            unmasked_embeddings,
            masked_embeddings,
            unmasked_positions,
            mask_indices,
            unmask_indices,
        ) = self.patch_encoder(patches)

        # Pass the unmaksed patche to the encoder.
        encoder_outputs = self.encoder(unmasked_embeddings)

        # Create the decoder inputs.
        encoder_outputs = encoder_outputs + unmasked_positions
        decoder_inputs = keras.ops.concatenate([encoder_outputs, masked_embeddings], axis=1)

        # Decode the inputs.
        decoder_outputs = self.decoder(decoder_inputs)
        decoder_patches = self.patch_layer(decoder_outputs)

        loss_patch = keras.ops.take_along_axis(patches, mask_indices[..., None], axis=1)
        loss_output = keras.ops.take_along_axis(decoder_patches, mask_indices[..., None], axis=1)

        # Compute the total loss.
        total_loss = self.compute_loss(y=loss_patch, y_pred=loss_output)

        return total_loss, loss_patch, loss_output

    def train_step(self, images):
        with keras.GradientTape() as tape:
            total_loss, loss_patch, loss_output = self.calculate_loss(images)

        # Apply gradients.
        train_vars = [
            *self.train_augmentation_model.trainable_variables,
            *self.patch_layer.trainable_variables,
            *self.patch_encoder.trainable_variables,
            *self.encoder.trainable_variables,
            *self.decoder.trainable_variables,
        ]
        grads = tape.gradient(total_loss, train_vars)
        self.optimizer.apply_gradients(zip(grads, train_vars))

        # Report progress.
        results = {}
        for metric in self.metrics:
            metric.update_state(loss_patch, loss_output)
            results[metric.name] = metric.result()
        return results

    def test_step(self, images):
        total_loss, loss_patch, loss_output = self.calculate_loss(images, test=True)

        # Update the trackers.
        results = {}
        for metric in self.metrics:
            metric.update_state(loss_patch, loss_output)
            results[metric.name] = metric.result()
        return results


class WarmUpCosine(keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, learning_rate_base, total_steps, warmup_learning_rate, warmup_steps):
        super(WarmUpCosine, self).__init__()

        self.learning_rate_base = learning_rate_base
        self.total_steps = total_steps
        self.warmup_learning_rate = warmup_learning_rate
        self.warmup_steps = warmup_steps
        self.pi = keras.ops.convert_to_tensor(np.pi)

    def __call__(self, step):
        if self.total_steps < self.warmup_steps:
            raise ValueError("Total_steps must be larger or equal to warmup_steps.")

        cos_annealed_lr = keras.ops.cos(
            self.pi
            * (keras.ops.cast(step, "float32") - self.warmup_steps)
            / float(self.total_steps - self.warmup_steps)
        )
        learning_rate = 0.5 * self.learning_rate_base * (1 + cos_annealed_lr)

        if self.warmup_steps > 0:
            if self.learning_rate_base < self.warmup_learning_rate:
                raise ValueError(
                    "Learning_rate_base must be larger or equal to "
                    "warmup_learning_rate."
                )
            slope = (
                self.learning_rate_base - self.warmup_learning_rate
            ) / self.warmup_steps
            warmup_rate = slope * keras.ops.cast(step, "float32") + self.warmup_learning_rate
            learning_rate = keras.ops.where(
                step < self.warmup_steps, warmup_rate, learning_rate
            )
        return keras.ops.where(step > self.total_steps, 0.0, learning_rate)


def encode_with_mask(mae, images, mask_indices, unmask_indices):
    """The example's calculate_loss on the test augmentation with given (not random) mask indices."""
    patches = mae.patch_layer(mae.test_augmentation_model(images))
    encoder = mae.patch_encoder
    encoder.downstream = True
    try:
        patch_embeddings = encoder(patches)
    finally:
        encoder.downstream = False
    pos_embeddings = encoder.position_embedding(keras.ops.arange(0, encoder.num_patches, 1)[None, ...])
    take = keras.ops.take_along_axis
    unmasked = take(patch_embeddings, unmask_indices[..., None], axis=1)
    tokens = keras.ops.repeat(keras.ops.repeat(encoder.mask_token, encoder.num_mask, axis=0)[None, ...],
                              len(images), axis=0)
    masked = encoder.projection(tokens) + take(pos_embeddings, mask_indices[..., None], axis=1)
    encoder_outputs = mae.encoder(unmasked) + take(pos_embeddings, unmask_indices[..., None], axis=1)
    decoded = mae.decoder(keras.ops.concatenate([encoder_outputs, masked], axis=1))
    return {"patches": patches, "patch_embeddings": patch_embeddings, "encoded": mae.encoder(patch_embeddings),
            "decoder_inputs_masked": masked, "decoded": decoded}


def pretrain(x_train, x_val, x_test):
    total_steps = int((len(x_train) / BATCH_SIZE) * EPOCHS)
    warmup_epoch_percentage = 0.15
    warmup_steps = int(total_steps * warmup_epoch_percentage)
    scheduled_lrs = WarmUpCosine(
        learning_rate_base=LEARNING_RATE,
        total_steps=total_steps,
        warmup_learning_rate=0.0,
        warmup_steps=warmup_steps,
    )

    mae_model = MaskedAutoencoder(
        train_augmentation_model=get_train_augmentation_model(),
        test_augmentation_model=get_test_augmentation_model(),
        patch_layer=Patches(),
        patch_encoder=PatchEncoder(),
        encoder=create_encoder(),
        decoder=create_decoder(),
    )

    optimizer = keras.optimizers.AdamW(learning_rate=scheduled_lrs, weight_decay=WEIGHT_DECAY)

    # Compile and pretrain the model.
    mae_model.compile(
        optimizer=optimizer, loss=keras.losses.MeanSquaredError(), metrics=["mae"]
    )
    # Not in the example: a train step and a test step build the augmentation layers, the compiled loss and the
    # metrics, which Keras 3.15's fit() would otherwise build by calling the model (it has no call()).
    mae_model.train_step(x_train[:BATCH_SIZE])
    mae_model.test_step(x_val)
    history = mae_model.fit(
        x_train, batch_size=BATCH_SIZE, epochs=EPOCHS, validation_data=x_val, verbose=0,
    )

    # Measure its performance.
    loss, mae = mae_model.evaluate(x_test, batch_size=BATCH_SIZE, verbose=0)
    print(f"Loss: {loss:.2f}")
    print(f"MAE: {mae:.2f}")
    return mae_model, history


def linear_probe(mae_model, x_train, y_train, x_test, y_test):
    # Extract the augmentation layers, the patchers and the encoder.
    train_augmentation_model = mae_model.train_augmentation_model
    test_augmentation_model = mae_model.test_augmentation_model
    patch_layer = mae_model.patch_layer
    patch_encoder = mae_model.patch_encoder
    patch_encoder.downstream = True  # Swtich the downstream flag to True.
    encoder = mae_model.encoder

    # Pack as a model.
    downstream_model = keras.Sequential(
        [
            layers.Input((IMAGE_SIZE, IMAGE_SIZE, 3)),
            patch_layer,
            patch_encoder,
            encoder,
            layers.BatchNormalization(),  # Refer to A.1 (Linear probing).
            layers.GlobalAveragePooling1D(),
            layers.Dense(NUM_CLASSES, activation="softmax"),
        ],
        name="linear_probe_model",
    )

    # Only the final classification layer of the `downstream_model` should be trainable.
    for layer in downstream_model.layers[:-1]:
        layer.trainable = False

    downstream_model.summary()

    # Prepare data for linear probing: the augmentation models applied batch by batch.
    train_images = np.concatenate([keras.ops.convert_to_numpy(train_augmentation_model(x_train[i:i + BATCH_SIZE]))
                                   for i in range(0, len(x_train), BATCH_SIZE)])
    test_images = keras.ops.convert_to_numpy(test_augmentation_model(x_test))

    linear_probe_epochs = 1  # the example's 50
    linear_prob_lr = 0.1
    warm_epoch_percentage = 0.1
    steps = int((len(x_train) // BATCH_SIZE) * linear_probe_epochs)

    warmup_steps = int(steps * warm_epoch_percentage)
    scheduled_lrs = WarmUpCosine(
        learning_rate_base=linear_prob_lr,
        total_steps=steps,
        warmup_learning_rate=0.0,
        warmup_steps=warmup_steps,
    )

    optimizer = keras.optimizers.SGD(learning_rate=scheduled_lrs, momentum=0.9)
    downstream_model.compile(
        optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    downstream_model.fit(train_images, y_train, batch_size=BATCH_SIZE, epochs=linear_probe_epochs, verbose=0)

    loss, accuracy = downstream_model.evaluate(test_images, y_test, verbose=0)
    accuracy = round(accuracy * 100, 2)
    print(f"Accuracy on the test set: {accuracy}%.")
    patch_encoder.downstream = False
    return downstream_model


def main():
    keras.utils.set_random_seed(42)
    rng = np.random.default_rng(91)

    # Stands in for keras.datasets.cifar10.load_data(): uint8 images and (n, 1) labels.
    x_train = rng.integers(0, 256, size=(16, *INPUT_SHAPE), dtype=np.uint8)
    y_train = rng.integers(0, NUM_CLASSES, size=(16, 1), dtype=np.uint8)
    x_val = rng.integers(0, 256, size=(8, *INPUT_SHAPE), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(8, *INPUT_SHAPE), dtype=np.uint8)
    y_test = rng.integers(0, NUM_CLASSES, size=(8, 1), dtype=np.uint8)

    mae_model, history = pretrain(x_train, x_val, x_test)
    downstream_model = linear_probe(mae_model, x_train, y_train, x_test, y_test)
    patch_layer, patch_encoder = mae_model.patch_layer, mae_model.patch_encoder

    # Fixed masks from argsort of fixed noise, as get_random_indices makes them.
    rand_indices = keras.ops.argsort(np.random.default_rng(92).uniform(size=(4, NUM_PATCHES)).astype("float32"),
                                     axis=-1)
    mask_indices, unmask_indices = rand_indices[:, : patch_encoder.num_mask], rand_indices[:, patch_encoder.num_mask:]
    fixed_patches = keras.ops.convert_to_numpy(patch_layer(mae_model.test_augmentation_model(x_test[:4])))
    masked_patch, idx = patch_encoder.generate_masked_image(fixed_patches, keras.ops.convert_to_numpy(unmask_indices))
    schedule = WarmUpCosine(learning_rate_base=0.1, total_steps=10, warmup_learning_rate=0.0, warmup_steps=3)

    def probe(mae):
        return {"test_augmented": mae.test_augmentation_model(x_test[:4]),
                **encode_with_mask(mae, x_test[:4], mask_indices, unmask_indices)}

    return {
        "model": mae_model,
        "saved_model": mae_model.encoder,
        "loss": history.history["loss"][-1],
        "probe": probe,
        "values": {"history_keys": sorted(history.history),
                   "lrs": [schedule(step) for step in range(12)],
                   "mask_indices": mask_indices, "unmask_indices": unmask_indices,
                   "reconstructed": patch_layer.reconstruct_from_patch(fixed_patches[0]),
                   "masked_patch": masked_patch, "masked_patch_index": idx,
                   "weights": [list(w.shape) for w in mae_model.get_weights()],
                   "downstream_trainable": [len(layer.trainable_weights) for layer in downstream_model.layers]},
    }


if __name__ == "__main__":
    print(main())
