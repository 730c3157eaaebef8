"""Text classification with Transformer (keras-io examples/nlp/text_classification_with_transformer.py): a
TransformerBlock layer (MultiHeadAttention, a Sequential feed-forward network, LayerNormalization(epsilon=1e-6),
Dropout), TokenAndPositionEmbedding (ops.shape and ops.arange in call), IMDB-shaped integer sequences padded
with keras.utils.pad_sequences to 200, GlobalAveragePooling1D and a softmax head, trained with fit.
The example's two layers take their sizes in __init__ without get_config(); get_config() (and **kwargs) are
added here, as Keras requires for saving them, so that the model can be saved and exported."""
import keras
import numpy as np
from keras import layers, ops


class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)
        self.config = {"embed_dim": embed_dim, "num_heads": num_heads, "ff_dim": ff_dim, "rate": rate}

    def call(self, inputs):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output)
        return self.layernorm2(out1 + ffn_output)

    def get_config(self):
        return {**super().get_config(), **self.config}


class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)
        self.config = {"maxlen": maxlen, "vocab_size": vocab_size, "embed_dim": embed_dim}

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions

    def get_config(self):
        return {**super().get_config(), **self.config}


def load_data(rng, n, num_words):
    """Stands in for keras.datasets.imdb.load_data(num_words=...): lists of word indices of varied lengths."""
    x = [list(rng.integers(1, num_words, size=rng.integers(20, 260))) for _ in range(n)]
    y = rng.integers(0, 2, size=(n,))
    return x, y


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(30)

    vocab_size = 20000  # Only consider the top 20k words
    maxlen = 200  # Only consider the first 200 words of each movie review
    x_train, y_train = load_data(rng, 32, vocab_size)
    x_val, y_val = load_data(rng, 16, vocab_size)
    print(len(x_train), "Training sequences")
    print(len(x_val), "Validation sequences")
    x_train = keras.utils.pad_sequences(x_train, maxlen=maxlen)
    x_val = keras.utils.pad_sequences(x_val, maxlen=maxlen)

    embed_dim = 32  # Embedding size for each token
    num_heads = 2  # Number of attention heads
    ff_dim = 32  # Hidden layer size in feed forward network inside transformer

    inputs = layers.Input(shape=(maxlen,))
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
    x = transformer_block(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)

    model = keras.Model(inputs=inputs, outputs=outputs)

    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=2, validation_data=(x_val, y_val), verbose=0)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_val[:4], verbose=0),
        "inputs": x_val,
        "evaluate": (x_val, y_val),
        "values": {"x_train_head": x_train[:2], "history_keys": sorted(history.history),
                   "weights": [list(w.shape) for w in model.get_weights()]},
    }


if __name__ == "__main__":
    print(main())
