"""Understanding masking & padding (keras-io guides/understanding_masking_and_padding.py): pad_sequences,
masks made by Embedding(mask_zero=True) and Masking (read back from `_keras_mask`), mask propagation in the
functional API and by hand in a subclassed layer (compute_mask), layers that change the mask (TemporalSplit),
make one (CustomEmbedding), pass it on (supports_masking) or read it in call (TemporalSoftmax)."""
import keras
import numpy as np
from keras import layers, ops


class MyLayer(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.embedding = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)
        self.lstm = layers.LSTM(32)

    def call(self, inputs):
        x = self.embedding(inputs)
        # Note that you could also prepare a `mask` tensor manually.
        # It only needs to be a boolean tensor
        # with the right shape, i.e. (batch_size, timesteps).
        mask = self.embedding.compute_mask(inputs)
        output = self.lstm(x, mask=mask)  # The layer will ignore the masked values
        return output


class TemporalSplit(keras.layers.Layer):
    """Split the input tensor into 2 tensors along the time dimension."""

    def call(self, inputs):
        # Expect the input to be 3D and mask to be 2D, split the input tensor into 2
        # subtensors along the time axis (axis 1).
        return ops.split(inputs, 2, axis=1)

    def compute_mask(self, inputs, mask=None):
        # Also split the mask into 2 if it presents.
        if mask is None:
            return None
        return ops.split(mask, 2, axis=1)


class CustomEmbedding(keras.layers.Layer):
    def __init__(self, input_dim, output_dim, mask_zero=False, **kwargs):
        super().__init__(**kwargs)
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.mask_zero = mask_zero

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            shape=(self.input_dim, self.output_dim),
            initializer="random_normal",
            dtype="float32",
        )

    def call(self, inputs):
        inputs = ops.cast(inputs, "int32")
        return ops.take(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)


class MyActivation(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Signal that the layer is safe for mask propagation
        self.supports_masking = True

    def call(self, inputs):
        return ops.relu(inputs)


class TemporalSoftmax(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        assert mask is not None
        broadcast_float_mask = ops.expand_dims(ops.cast(mask, "float32"), -1)
        inputs_exp = ops.exp(inputs) * broadcast_float_mask
        inputs_sum = ops.sum(inputs_exp * broadcast_float_mask, axis=-1, keepdims=True)
        return inputs_exp / inputs_sum


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(11)

    raw_inputs = [
        [711, 632, 71],
        [73, 8, 3215, 55, 927],
        [83, 91, 1, 645, 1253, 927],
    ]
    padded_inputs = keras.utils.pad_sequences(raw_inputs, padding="post")
    pre_padded = keras.utils.pad_sequences(raw_inputs)

    embedding = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)
    masked_output = embedding(padded_inputs)
    embedding_mask = masked_output._keras_mask

    masking_layer = layers.Masking()
    # Simulate the embedding lookup by expanding the 2D input to 3D,
    # with embedding dimension of 10.
    unmasked_embedding = ops.cast(ops.tile(ops.expand_dims(padded_inputs, axis=-1), [1, 1, 10]), "float32")
    masked_embedding = masking_layer(unmasked_embedding)
    masking_mask = masked_embedding._keras_mask

    layer = MyLayer()
    x = rng.random((32, 10)) * 100
    x = x.astype("int32")
    layer(x)

    first_half, second_half = TemporalSplit()(masked_embedding)
    split_masks = [first_half._keras_mask, second_half._keras_mask]

    layer = CustomEmbedding(10, 32, mask_zero=True)
    x = rng.random((3, 10)) * 9
    x = x.astype("int32")
    y = layer(x)
    custom_mask = layer.compute_mask(x)

    # The model trained here: Embedding(mask_zero) -> a mask-passing layer -> LSTM.
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)(inputs)
    x = MyActivation()(x)  # Will pass the mask along
    mask_found = x._keras_mask is not None
    x = layers.LSTM(32)(x)  # Will receive the mask
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])

    sequences = [list(rng.integers(1, 5000, size=rng.integers(3, 12))) for _ in range(40)]
    x_train = keras.utils.pad_sequences(sequences, maxlen=12, padding="post")
    y_train = rng.integers(0, 2, size=(40, 1)).astype("float32")
    history = model.fit(x_train, y_train, batch_size=16, epochs=2, verbose=0)

    # TemporalSoftmax reads the mask in call().
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(input_dim=10, output_dim=32, mask_zero=True)(inputs)
    x = layers.Dense(1)(x)
    outputs = TemporalSoftmax()(x)
    softmax_model = keras.Model(inputs, outputs)
    softmax_model(rng.integers(0, 10, size=(32, 100)))

    def probe(model):
        fixed = np.random.default_rng(13)
        softmax_model.set_weights([fixed.normal(size=w.shape).astype("float32") for w in softmax_model.get_weights()])
        tokens = np.array([[1, 2, 0, 0], [3, 0, 4, 5]])
        # The same sequences padded at the end or at the start give the same LSTM output.
        post = model.predict(keras.utils.pad_sequences(sequences[:4], maxlen=14, padding="post"), verbose=0)
        pre = model.predict(keras.utils.pad_sequences(sequences[:4], maxlen=14), verbose=0)
        return {"temporal_softmax": softmax_model.predict(tokens, verbose=0), "post": post, "pre": pre}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_train[:4], verbose=0),
        "inputs": x_train,
        "evaluate": (x_train, y_train),
        "probe": probe,
        "values": {
            "padded_inputs": padded_inputs,
            "pre_padded": pre_padded,
            "embedding_mask": embedding_mask,
            "masking_mask": masking_mask,
            "split_masks": split_masks,
            "custom_mask": custom_mask,
            "custom_embedding_shape": list(y.shape),
            "mask_found": mask_found,
        },
    }


if __name__ == "__main__":
    print(main())
