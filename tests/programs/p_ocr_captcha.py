"""OCR model for reading Captchas (keras-io examples/vision/captcha_ocr.py, its Keras 3 form): a functional model
with two inputs (the image, transposed so that its width is the time axis, and the label as float32), two
Conv2D+MaxPooling2D blocks, a Reshape to a sequence, Dense, Dropout, two Bidirectional LSTMs (dropout=0.25), a
softmax Dense over the characters plus the CTC blank, and an "endpoint" CTCLayer that adds the CTC loss with
add_loss and returns the predictions; compiled without a loss and trained with fit on batches of dicts (no
targets), with EarlyStopping(restore_best_weights=True). At inference a prediction model cut out of the
trained one (model.input[0] to the "dense2" layer's output) is decoded greedily with ops.ctc_decode.
TensorFlow-only pieces have their closest Keras/NumPy equivalent here: the PNG files, tf.io.decode_png and
tf.image.convert_image_dtype are seeded uint8 images scaled to [0, 1] (ops.image.resize and ops.transpose as
the example has them); StringLookup (which needs TensorFlow under Keras 3) and tf.strings.unicode_split /
reduce_join are a NumPy character table with StringLookup's indices ("[UNK]" at 0 and for indices outside the
vocabulary when inverted); the tf.data pipeline is a keras.utils.PyDataset of dict batches; ctc_batch_cost's
tf.compat.v1.nn.ctc_loss on a SparseTensor (ctc_label_dense_to_sparse) is ops.ctc_loss on the dense labels,
with TensorFlow's blank, the last class, as mask_index; tf.sparse.to_dense of ctc_decode's result is left out
(Keras 3's ctc_decode returns a dense tensor padded with -1). The decoding calls ops.ctc_decode with its default
mask_index=0, as the example does. Smaller: 50x12 images (the example's 200x50), 32 training and 16 validation
captchas of 5 characters, one epoch, LSTMs of 32 and 16 units (the example's 128 and 64).
The model cannot be saved (CTCLayer's __init__ takes only `name`, so Keras cannot rebuild it from its config);
the prediction model, which holds no CTCLayer, is the one saved and exported."""
import keras
import numpy as np
from keras import layers, ops

# The characters of the captcha dataset's labels.
characters = sorted(set("2345678bcdefgmnpwxy"))

# Batch size for training and validation
batch_size = 16

# Desired image dimensions
img_width = 50  # the example's 200
img_height = 12  # the example's 50

# Factor by which the image is going to be downsampled
# by the convolutional blocks. We will be using two
# convolution blocks and each block will have
# a pooling layer which downsample the features by a factor of 2.
# Hence total downsampling factor would be 4.
downsample_factor = 4

# Maximum length of any captcha in the dataset
max_length = 5

# StringLookup(vocabulary=characters, mask_token=None).get_vocabulary(): the OOV token first.
vocabulary = ["[UNK]"] + characters


def char_to_num(chars):
    """StringLookup(vocabulary=list(characters), mask_token=None) on a sequence of characters."""
    return np.array([vocabulary.index(c) if c in characters else 0 for c in chars], dtype="int64")


def num_to_char(nums):
    """StringLookup(vocabulary=..., mask_token=None, invert=True): indices outside the vocabulary give "[UNK]"."""
    return [vocabulary[int(n)] if 0 <= int(n) < len(vocabulary) else "[UNK]" for n in nums]


def load_data(rng, n):
    """Stands in for the PNG files of captcha_images_v2: grayscale uint8 images and 5-character labels."""
    images = rng.integers(0, 256, size=(n, img_height, img_width, 1), dtype=np.uint8)
    labels = np.array(["".join(rng.choice(characters, size=max_length)) for _ in range(n)])
    return images, labels


def encode_single_sample(img, label):
    # 3. Convert to float32 in [0, 1] range
    img = img.astype("float32") / 255.0
    # 4. Resize to the desired size
    img = ops.image.resize(img, [img_height, img_width])
    # 5. Transpose the image because we want the time
    # dimension to correspond to the width of the image.
    img = ops.transpose(img, axes=[1, 0, 2])
    # 6. Map the characters in label to numbers
    label = char_to_num(list(label))
    # 7. Return a dict as our model is expecting two inputs
    return {"image": ops.convert_to_numpy(img), "label": label}


class CaptchaDataset(keras.utils.PyDataset):
    """The example's Dataset.from_tensor_slices(...).map(encode_single_sample).batch(batch_size)."""

    def __init__(self, images, labels, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.samples = [encode_single_sample(img, label) for img, label in zip(images, labels)]
        self.batch_size = batch_size

    def __len__(self):
        return -(-len(self.samples) // self.batch_size)

    def __getitem__(self, idx):
        batch = self.samples[idx * self.batch_size:(idx + 1) * self.batch_size]
        return {key: np.stack([s[key] for s in batch]) for key in ("image", "label")}


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    label_length = ops.cast(ops.squeeze(label_length, axis=-1), dtype="int32")
    input_length = ops.cast(ops.squeeze(input_length, axis=-1), dtype="int32")
    sparse_labels = ops.cast(y_true, dtype="int32")

    y_pred = ops.log(y_pred + keras.backend.epsilon())

    return ops.expand_dims(
        ops.ctc_loss(sparse_labels, y_pred, label_length, input_length, mask_index=ops.shape(y_pred)[-1] - 1),
        1,
    )


class CTCLayer(layers.Layer):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = ctc_batch_cost

    def call(self, y_true, y_pred):
        # Compute the training-time loss value and add it
        # to the layer using `self.add_loss()`.
        batch_len = ops.cast(ops.shape(y_true)[0], dtype="int64")
        input_length = ops.cast(ops.shape(y_pred)[1], dtype="int64")
        label_length = ops.cast(ops.shape(y_true)[1], dtype="int64")

        input_length = input_length * ops.ones(shape=(batch_len, 1), dtype="int64")
        label_length = label_length * ops.ones(shape=(batch_len, 1), dtype="int64")

        loss = self.loss_fn(y_true, y_pred, input_length, label_length)
        self.add_loss(loss)

        # At test time, just return the computed predictions
        return y_pred


def build_model():
    # Inputs to the model
    input_img = layers.Input(
        shape=(img_width, img_height, 1), name="image", dtype="float32"
    )
    labels = layers.Input(name="label", shape=(None,), dtype="float32")

    # First conv block
    x = layers.Conv2D(32, (3, 3), activation="relu", kernel_initializer="he_normal", padding="same",
                      name="Conv1")(input_img)
    x = layers.MaxPooling2D((2, 2), name="pool1")(x)

    # Second conv block
    x = layers.Conv2D(64, (3, 3), activation="relu", kernel_initializer="he_normal", padding="same",
                      name="Conv2")(x)
    x = layers.MaxPooling2D((2, 2), name="pool2")(x)

    # We have used two max pool with pool size and strides 2.
    # Hence, downsampled feature maps are 4x smaller. The number of
    # filters in the last layer is 64. Reshape accordingly before
    # passing the output to the RNN part of the model
    new_shape = ((img_width // 4), (img_height // 4) * 64)
    x = layers.Reshape(target_shape=new_shape, name="reshape")(x)
    x = layers.Dense(64, activation="relu", name="dense1")(x)
    x = layers.Dropout(0.2)(x)

    # RNNs
    x = layers.Bidirectional(layers.LSTM(32, return_sequences=True, dropout=0.25))(x)
    x = layers.Bidirectional(layers.LSTM(16, return_sequences=True, dropout=0.25))(x)

    # Output layer
    x = layers.Dense(len(vocabulary) + 1, activation="softmax", name="dense2")(x)

    # Add CTC layer for calculating CTC loss at each step
    output = CTCLayer(name="ctc_loss")(labels, x)

    # Define the model
    model = keras.models.Model(inputs=[input_img, labels], outputs=output, name="ocr_model_v1")
    # Optimizer
    opt = keras.optimizers.Adam()
    # Compile the model and return
    model.compile(optimizer=opt)
    return model


# A utility function to decode the output of the network
def decode_batch_predictions(pred):
    input_len = np.ones(pred.shape[0]) * pred.shape[1]
    # Use greedy search. For complex tasks, you can use beam search
    results = ops.ctc_decode(pred, sequence_lengths=input_len, strategy="greedy")[0][0]
    results = ops.convert_to_numpy(results)
    # Slice the dense tensor to keep only up to max_length
    dense_results = results[:, :max_length]
    # Iterate over the results and get back the text
    output_text = []
    for res in results:
        res = "".join(num_to_char(res))
        output_text.append(res)
    return dense_results, output_text


def fixed_values():
    """Weight-independent results: the CTC loss and the greedy decoding of fixed probabilities, a resize."""
    rng = np.random.default_rng(72)
    logits = rng.normal(size=(4, img_width // 4, len(vocabulary) + 1)) * 3
    probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype("float32")
    labels = rng.integers(1, len(vocabulary), size=(4, max_length)).astype("float32")
    ones = np.ones((4, 1), "int64")
    decoded, texts = decode_batch_predictions(probs)
    image = rng.integers(0, 256, size=(24, 100, 1)).astype("float32") / 255.0
    return {"ctc_batch_cost": ctc_batch_cost(labels, probs, ones * (img_width // 4), ones * max_length),
            "decoded": decoded, "texts": texts,
            "resized": ops.image.resize(image, [img_height, img_width])}


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(71)

    x_train, y_train = load_data(rng, 32)
    x_valid, y_valid = load_data(rng, 16)
    train_dataset = CaptchaDataset(x_train, y_train, batch_size)
    validation_dataset = CaptchaDataset(x_valid, y_valid, batch_size)

    # Get the model
    model = build_model()
    model.summary()

    epochs = 1  # the example's 100
    early_stopping_patience = 10
    # Add early stopping
    early_stopping = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=early_stopping_patience, restore_best_weights=True
    )

    # Train the model
    history = model.fit(
        train_dataset,
        validation_data=validation_dataset,
        epochs=epochs,
        callbacks=[early_stopping],
        verbose=0,
    )

    # Get the prediction model by extracting layers till the output layer
    prediction_model = keras.models.Model(
        model.input[0], model.get_layer(name="dense2").output
    )
    prediction_model.summary()

    batch = validation_dataset[0]

    def probe(m):
        cut = keras.models.Model(m.input[0], m.get_layer(name="dense2").output)
        preds = cut.predict(batch["image"], verbose=0)
        dense_results, pred_texts = decode_batch_predictions(preds)
        orig_texts = ["".join(num_to_char(label)) for label in batch["label"]]
        return {"preds": preds, "decoded": dense_results, "pred_texts": pred_texts, "orig_texts": orig_texts}

    return {
        "model": model,
        "saved_model": prediction_model,
        "loss": history.history["loss"][-1],
        "inputs": batch,
        "evaluate": (batch, None),
        "probe": probe,
        "values": {"history_keys": sorted(history.history), **fixed_values(),
                   "train_batch": train_dataset[1], "vocabulary": vocabulary,
                   "weights": [list(w.shape) for w in model.get_weights()]},
    }


if __name__ == "__main__":
    print(main())
