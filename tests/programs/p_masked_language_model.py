"""Masked language modeling with a BERT-like encoder (keras-io examples/nlp/masked_language_modeling.py): word
and position embeddings, one Transformer encoder block of functional layers (MultiHeadAttention, Dropout,
LayerNormalization, a Sequential feed-forward network), a softmax over the vocabulary, a MaskedLanguageModel
subclass with its own train_step and a Mean loss tracker, the example's 15% BERT masking with sample weights,
then a sentiment classifier on the frozen pretrained encoder (a sub-model cut at the encoder's last layer).
The train step as the example's TensorFlow form writes it, with `keras.GradientTape` for `tf.GradientTape` and
the loss without reduction (`reduction=None` for `Reduction.NONE`). TextVectorization (which needs
tf.strings) is replaced by integer ids drawn at random, with the last id as the mask token, and tf.data by
NumPy arrays given to fit with batch_size; keras_hub's PositionEmbedding (another package) by a small layer
of this file with a trainable position table. Smaller: sequences of 16 tokens, a vocabulary of 50, 32
embedding dimensions, 4 heads, 32 reviews, one epoch each, no MaskedTextGenerator callback and no save/load
round trip. The probe runs the encoder sub-model, the position embedding layer and the top-5 predictions at
the mask of a fixed sequence, after the weight copy."""
import keras
import numpy as np
from keras import layers


class Config:
    MAX_LEN = 16  # the example's 256
    BATCH_SIZE = 8  # the example's 32
    LR = 0.001
    VOCAB_SIZE = 50  # the example's 30000
    EMBED_DIM = 32  # the example's 128
    NUM_HEAD = 4  # the example's 8
    FF_DIM = 32  # the example's 128
    NUM_LAYERS = 1


config = Config()
mask_token_id = config.VOCAB_SIZE - 1  # the last token of the vocabulary


def get_masked_input_and_labels(encoded_texts):
    # 15% BERT masking
    inp_mask = np.random.rand(*encoded_texts.shape) < 0.15
    # Do not mask special tokens
    inp_mask[encoded_texts <= 2] = False
    # Set targets to -1 by default, it means ignore
    labels = -1 * np.ones(encoded_texts.shape, dtype=int)
    # Set labels for masked tokens
    labels[inp_mask] = encoded_texts[inp_mask]

    # Prepare input
    encoded_texts_masked = np.copy(encoded_texts)
    # Set input to [MASK] which is the last token for the 90% of tokens
    # This means leaving 10% unchanged
    inp_mask_2mask = inp_mask & (np.random.rand(*encoded_texts.shape) < 0.90)
    encoded_texts_masked[inp_mask_2mask] = mask_token_id  # mask token is the last in the dict

    # Set 10% to a random token
    inp_mask_2random = inp_mask_2mask & (np.random.rand(*encoded_texts.shape) < 1 / 9)
    encoded_texts_masked[inp_mask_2random] = np.random.randint(
        3, mask_token_id, inp_mask_2random.sum()
    )

    # Prepare sample_weights to pass to .fit() method
    sample_weights = np.ones(labels.shape)
    sample_weights[labels == -1] = 0

    # y_labels would be same as encoded_texts i.e input tokens
    y_labels = np.copy(encoded_texts)

    return encoded_texts_masked, y_labels, sample_weights


class PositionEmbedding(keras.layers.Layer):
    """A trainable embedding of each position, added by the caller (keras_hub.layers.PositionEmbedding)."""

    def __init__(self, sequence_length, **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = sequence_length

    def build(self, input_shape):
        self.position_embeddings = self.add_weight(
            name="embeddings", shape=(self.sequence_length, input_shape[-1]), initializer="glorot_uniform")

    def call(self, inputs):
        length = keras.ops.shape(inputs)[-2]
        positions = self.position_embeddings[:length, :]
        return keras.ops.broadcast_to(positions, keras.ops.shape(inputs))

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length})
        return config


def bert_module(query, key, value, i):
    # Multi headed self-attention
    attention_output = layers.MultiHeadAttention(
        num_heads=config.NUM_HEAD,
        key_dim=config.EMBED_DIM // config.NUM_HEAD,
        name="encoder_{}_multiheadattention".format(i),
    )(query, key, value)
    attention_output = layers.Dropout(0.1, name="encoder_{}_att_dropout".format(i))(
        attention_output
    )
    attention_output = layers.LayerNormalization(
        epsilon=1e-6, name="encoder_{}_att_layernormalization".format(i)
    )(query + attention_output)

    # Feed-forward layer
    ffn = keras.Sequential(
        [
            layers.Dense(config.FF_DIM, activation="relu"),
            layers.Dense(config.EMBED_DIM),
        ],
        name="encoder_{}_ffn".format(i),
    )
    ffn_output = ffn(attention_output)
    ffn_output = layers.Dropout(0.1, name="encoder_{}_ffn_dropout".format(i))(
        ffn_output
    )
    sequence_output = layers.LayerNormalization(
        epsilon=1e-6, name="encoder_{}_ffn_layernormalization".format(i)
    )(attention_output + ffn_output)
    return sequence_output


loss_fn = keras.losses.SparseCategoricalCrossentropy(reduction=None)
loss_tracker = keras.metrics.Mean(name="loss")


class MaskedLanguageModel(keras.Model):
    def train_step(self, inputs):
        if len(inputs) == 3:
            features, labels, sample_weight = inputs
        else:
            features, labels = inputs
            sample_weight = None

        with keras.GradientTape() as tape:
            predictions = self(features, training=True)
            loss = loss_fn(labels, predictions, sample_weight=sample_weight)

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))

        # Compute our own metrics
        loss_tracker.update_state(loss, sample_weight=sample_weight)

        # Return a dict mapping metric names to current value
        return {"loss": loss_tracker.result()}

    @property
    def metrics(self):
        # We list our `Metric` objects here so that `reset_states()` can be
        # called automatically at the start of each epoch
        # or at the start of `evaluate()`.
        return [loss_tracker]


def create_masked_language_bert_model():
    inputs = layers.Input((config.MAX_LEN,), dtype="int64")

    word_embeddings = layers.Embedding(
        config.VOCAB_SIZE, config.EMBED_DIM, name="word_embedding"
    )(inputs)
    position_embeddings = PositionEmbedding(
        sequence_length=config.MAX_LEN, name="position_embedding"
    )(word_embeddings)
    embeddings = word_embeddings + position_embeddings

    encoder_output = embeddings
    for i in range(config.NUM_LAYERS):
        encoder_output = bert_module(encoder_output, encoder_output, encoder_output, i)

    mlm_output = layers.Dense(config.VOCAB_SIZE, name="mlm_cls", activation="softmax")(
        encoder_output
    )
    mlm_model = MaskedLanguageModel(inputs, mlm_output, name="masked_bert_model")

    optimizer = keras.optimizers.Adam(learning_rate=config.LR)
    mlm_model.compile(optimizer=optimizer)
    return mlm_model


def create_classifier_bert_model(pretrained_bert_model):
    inputs = layers.Input((config.MAX_LEN,), dtype="int64")
    sequence_output = pretrained_bert_model(inputs)
    pooled_output = layers.GlobalMaxPooling1D()(sequence_output)
    hidden_layer = layers.Dense(8, activation="relu")(pooled_output)  # the example's 64
    outputs = layers.Dense(1, activation="sigmoid")(hidden_layer)
    classifer_model = keras.Model(inputs, outputs, name="classification")
    optimizer = keras.optimizers.Adam()
    classifer_model.compile(
        optimizer=optimizer, loss="binary_crossentropy", metrics=["accuracy"]
    )
    return classifer_model


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(71)
    # Stands in for the vectorized IMDB reviews: ids 0 (padding) to VOCAB_SIZE - 2, padded at the end.
    x_all_review = rng.integers(1, config.VOCAB_SIZE - 1, size=(32, config.MAX_LEN)).astype("int64")
    x_all_review[:, 12:] = 0
    y_train = rng.integers(0, 2, size=(32,)).astype("int64")
    np.random.seed(72)  # the example's masking draws from NumPy's global generator
    x_masked_train, y_masked_labels, sample_weights = get_masked_input_and_labels(x_all_review)

    bert_masked_model = create_masked_language_bert_model()
    bert_masked_model.summary()
    history = bert_masked_model.fit(x_masked_train, y_masked_labels, sample_weight=sample_weights,
                                    batch_size=config.BATCH_SIZE, epochs=1, verbose=0)

    pretrained_bert_model = keras.Model(
        bert_masked_model.input, bert_masked_model.get_layer("encoder_0_ffn_layernormalization").output
    )
    # Freeze it
    pretrained_bert_model.trainable = False
    classifer_model = create_classifier_bert_model(pretrained_bert_model)
    classifer_model.summary()
    trainable_frozen = len(classifer_model.trainable_weights)
    clf_history = classifer_model.fit(x_all_review, y_train, batch_size=config.BATCH_SIZE, epochs=1, verbose=0)

    sample_tokens = np.array([[5, 9, 14, 21, mask_token_id, 3, 7, 30, 11, 4, 8, 6, 0, 0, 0, 0]], dtype="int64")

    def probe(model):
        prediction = model.predict(sample_tokens, verbose=0)
        masked_index = np.where(sample_tokens == mask_token_id)[1]
        mask_prediction = prediction[0][masked_index]
        top_indices = mask_prediction[0].argsort()[-5:][::-1]
        encoder = keras.Model(model.input, model.get_layer("encoder_0_ffn_layernormalization").output)
        return {"top_indices": top_indices, "top_values": mask_prediction[0][top_indices],
                "encoder": encoder.predict(sample_tokens, verbose=0),
                "positions": model.get_layer("position_embedding")(np.zeros((1, 4, config.EMBED_DIM), "float32"))}

    return {
        "model": bert_masked_model,
        "loss": history.history["loss"][-1],
        "inputs": x_masked_train[:4],
        "probe": probe,
        "values": {"masked": x_masked_train, "labels": y_masked_labels, "sample_weights": sample_weights,
                   "history_keys": sorted(history.history), "clf_history_keys": sorted(clf_history.history),
                   "classifier_trainable_frozen": trainable_frozen,
                   "mlm_weights": len(bert_masked_model.weights)},
    }


if __name__ == "__main__":
    print(main())
