"""English-to-Spanish translation with a sequence-to-sequence Transformer (keras-io
examples/nlp/neural_machine_translation_with_transformer.py, its Keras 3 form): a PositionalEmbedding layer
(ops.shape and ops.arange in call, compute_mask giving ops.not_equal(inputs, 0)), a TransformerEncoder that
turns the padding mask it receives into MultiHeadAttention's attention_mask, a TransformerDecoder called on
[x, encoder_outputs] that receives both inputs' masks and builds a causal mask from ops.shape (ops.arange,
ops.reshape, ops.concatenate of the dynamic batch size, ops.tile), passed with query_mask and key_mask; the
end-to-end model takes a dict of two int64 inputs, is trained with sparse categorical cross-entropy ignoring
class 0, then decodes greedily token by token.
Smaller: a vocabulary of 64 words, sequences of 8 tokens, embed_dim 16, latent_dim 32, 2 heads, 48 sentence
pairs, batches of 16, one epoch. The strings and their two TextVectorization layers (which need TensorFlow's
tf.strings and tf.data here) are replaced by the integer sequences they produce: word indices >= 2 (0 is
padding, 1 is [UNK]), 2 and 3 standing for "[start]" and "[end]" in the Spanish vocabulary, zero-padded to
sequence_length (+1 for Spanish); tf.data's batching by fit's own (x as the dict of arrays). The decoding loop
takes token ids instead of strings. The probe runs the encoder sub-model, the decoder on the encoder's output
and the greedy decoding of four sentences."""
import keras
import numpy as np
from keras import layers, ops

vocab_size = 64
sequence_length = 8
batch_size = 16
START, END = 2, 3  # the indices of "[start]" and "[end]" in the Spanish vocabulary


class TransformerEncoder(layers.Layer):
    def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.dense_dim = dense_dim
        self.num_heads = num_heads
        self.attention = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=embed_dim
        )
        self.dense_proj = keras.Sequential(
            [
                layers.Dense(dense_dim, activation="relu"),
                layers.Dense(embed_dim),
            ]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            padding_mask = ops.cast(mask[:, None, :], dtype="int32")
        else:
            padding_mask = None

        attention_output = self.attention(
            query=inputs, value=inputs, key=inputs, attention_mask=padding_mask
        )
        proj_input = self.layernorm_1(inputs + attention_output)
        proj_output = self.dense_proj(proj_input)
        return self.layernorm_2(proj_input + proj_output)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embed_dim": self.embed_dim,
                "dense_dim": self.dense_dim,
                "num_heads": self.num_heads,
            }
        )
        return config


class PositionalEmbedding(layers.Layer):
    def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_embeddings = layers.Embedding(
            input_dim=vocab_size, output_dim=embed_dim
        )
        self.position_embeddings = layers.Embedding(
            input_dim=sequence_length, output_dim=embed_dim
        )
        self.sequence_length = sequence_length
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim

    def call(self, inputs):
        length = ops.shape(inputs)[-1]
        positions = ops.arange(0, length, 1)
        embedded_tokens = self.token_embeddings(inputs)
        embedded_positions = self.position_embeddings(positions)
        return embedded_tokens + embedded_positions

    def compute_mask(self, inputs, mask=None):
        return ops.not_equal(inputs, 0)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "vocab_size": self.vocab_size,
                "embed_dim": self.embed_dim,
            }
        )
        return config


class TransformerDecoder(layers.Layer):
    def __init__(self, embed_dim, latent_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.latent_dim = latent_dim
        self.num_heads = num_heads
        self.attention_1 = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=embed_dim
        )
        self.attention_2 = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=embed_dim
        )
        self.dense_proj = keras.Sequential(
            [
                layers.Dense(latent_dim, activation="relu"),
                layers.Dense(embed_dim),
            ]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.layernorm_3 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        inputs, encoder_outputs = inputs
        causal_mask = self.get_causal_attention_mask(inputs)

        if mask is None:
            inputs_padding_mask, encoder_outputs_padding_mask = None, None
        else:
            inputs_padding_mask, encoder_outputs_padding_mask = mask

        attention_output_1 = self.attention_1(
            query=inputs,
            value=inputs,
            key=inputs,
            attention_mask=causal_mask,
            query_mask=inputs_padding_mask,
        )
        out_1 = self.layernorm_1(inputs + attention_output_1)

        attention_output_2 = self.attention_2(
            query=out_1,
            value=encoder_outputs,
            key=encoder_outputs,
            query_mask=inputs_padding_mask,
            key_mask=encoder_outputs_padding_mask,
        )
        out_2 = self.layernorm_2(out_1 + attention_output_2)

        proj_output = self.dense_proj(out_2)
        return self.layernorm_3(out_2 + proj_output)

    def get_causal_attention_mask(self, inputs):
        input_shape = ops.shape(inputs)
        batch_size, sequence_length = input_shape[0], input_shape[1]
        i = ops.arange(sequence_length)[:, None]
        j = ops.arange(sequence_length)
        mask = ops.cast(i >= j, dtype="int32")
        mask = ops.reshape(mask, (1, input_shape[1], input_shape[1]))
        mult = ops.concatenate(
            [ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])],
            axis=0,
        )
        return ops.tile(mask, mult)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embed_dim": self.embed_dim,
                "latent_dim": self.latent_dim,
                "num_heads": self.num_heads,
            }
        )
        return config


def vectorized_pairs(rng, n):
    """What eng_vectorization and spa_vectorization give for n sentence pairs: word indices, zero-padded;
    the Spanish ones framed by [start] ... [end], one token longer (sequence_length + 1)."""
    eng = np.zeros((n, sequence_length), dtype="int64")
    spa = np.zeros((n, sequence_length + 1), dtype="int64")
    for k in range(n):
        m = rng.integers(3, sequence_length + 1)
        eng[k, :m] = rng.integers(4, vocab_size, size=m)
        words = rng.integers(4, vocab_size, size=rng.integers(2, sequence_length - 1))
        sentence = [START, *words, END]
        spa[k, :len(sentence)] = sentence
    return eng, spa


def format_dataset(eng, spa):
    return (
        {
            "encoder_inputs": eng,
            "decoder_inputs": spa[:, :-1],
        },
        spa[:, 1:],
    )


max_decoded_sentence_length = sequence_length


def decode_sequence(transformer, tokenized_input_sentence):
    """The example's decode_sequence on token ids: greedy decoding from [start] until [end]."""
    decoded_sentence = [START]
    for i in range(max_decoded_sentence_length):
        tokenized_target_sentence = np.zeros((1, sequence_length), dtype="int64")
        tokenized_target_sentence[0, :len(decoded_sentence)] = decoded_sentence[:sequence_length]
        predictions = transformer(
            {
                "encoder_inputs": tokenized_input_sentence,
                "decoder_inputs": tokenized_target_sentence,
            }
        )
        # ops.argmax(predictions[0, i, :]) is not a concrete value for jax here
        sampled_token_index = ops.convert_to_numpy(
            ops.argmax(predictions[0, i, :])
        ).item(0)
        decoded_sentence.append(sampled_token_index)
        if sampled_token_index == END:
            break
    return np.array(decoded_sentence)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(61)

    train_x, train_y = format_dataset(*vectorized_pairs(rng, 48))
    val_x, val_y = format_dataset(*vectorized_pairs(rng, 16))
    test_eng, _ = vectorized_pairs(rng, 4)
    print(f'inputs["encoder_inputs"].shape: {train_x["encoder_inputs"].shape}')
    print(f'inputs["decoder_inputs"].shape: {train_x["decoder_inputs"].shape}')
    print(f"targets.shape: {train_y.shape}")

    embed_dim = 16  # the example's 256
    latent_dim = 32  # 2048
    num_heads = 2  # 8

    encoder_inputs = keras.Input(shape=(None,), dtype="int64", name="encoder_inputs")
    x = PositionalEmbedding(sequence_length, vocab_size, embed_dim)(encoder_inputs)
    encoder_outputs = TransformerEncoder(embed_dim, latent_dim, num_heads)(x)
    encoder = keras.Model(encoder_inputs, encoder_outputs)

    decoder_inputs = keras.Input(shape=(None,), dtype="int64", name="decoder_inputs")
    x = PositionalEmbedding(sequence_length, vocab_size, embed_dim)(decoder_inputs)
    x = TransformerDecoder(embed_dim, latent_dim, num_heads)([x, encoder_outputs])
    x = layers.Dropout(0.5)(x)
    decoder_outputs = layers.Dense(vocab_size, activation="softmax")(x)

    transformer = keras.Model(
        {"encoder_inputs": encoder_inputs, "decoder_inputs": decoder_inputs},
        decoder_outputs,
        name="transformer",
    )

    epochs = 1  # This should be at least 30 for convergence

    transformer.summary()
    transformer.compile(
        "rmsprop",
        loss=keras.losses.SparseCategoricalCrossentropy(ignore_class=0),
        metrics=["accuracy"],
    )
    history = transformer.fit(train_x, train_y, batch_size=batch_size, epochs=epochs,
                              validation_data=(val_x, val_y), verbose=0)

    def probe(model):
        return {
            "encoder": encoder.predict(val_x["encoder_inputs"][:4], verbose=0),
            "decoded": [decode_sequence(model, test_eng[k:k + 1]) for k in range(len(test_eng))],
        }

    return {
        "model": transformer,
        "loss": history.history["loss"][-1],
        "inputs": val_x,
        "evaluate": (val_x, val_y),
        "probe": probe,
        "values": {"history_keys": sorted(history.history),
                   "weights": [list(w.shape) for w in transformer.get_weights()],
                   "padding_mask": ops.convert_to_numpy(
                       PositionalEmbedding(sequence_length, vocab_size, embed_dim).compute_mask(
                           ops.convert_to_tensor(val_x["encoder_inputs"][:4]))),
                   "causal_mask": ops.convert_to_numpy(
                       TransformerDecoder(embed_dim, latent_dim, num_heads).get_causal_attention_mask(
                           ops.zeros((3, 5, embed_dim))))},
    }


if __name__ == "__main__":
    print(main())
