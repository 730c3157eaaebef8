"""Text generation with a miniature GPT (keras-io examples/generative/text_generation_with_miniature_gpt.py, its
Keras 3 form): a causal attention mask built from the dynamic batch size and sequence length (ops.shape,
ops.arange, ops.reshape, ops.concatenate, ops.tile) and passed to MultiHeadAttention, a TransformerBlock with
LayerNormalization(epsilon=1e-6) and Dropout, TokenAndPositionEmbedding (ops.shape and ops.arange in call), a
functional model with two outputs (the logits and the block's embeddings) compiled with the loss list
[loss_fn, None], and a TextGenerator callback that samples from the top-k logits (ops.top_k, softmax,
np.random.choice) after each epoch.
Smaller: a vocabulary of 50 words, maxlen 10, embed_dim and feed_forward_dim 16, 48 sequences, batches of 16,
one epoch, 3 generated tokens. The IMDB text and its TextVectorization layer (tf.data, tf.strings) are replaced
by the integer sequences it produces (word indices, zero-padded to maxlen + 1), split into inputs and
next-word targets as prepare_lm_inputs_labels does; the vocabulary by made-up words. The example's two layers
call super().__init__() without **kwargs and have no get_config(): **kwargs and get_config() are added here,
as Keras requires for loading them, so that the model can be saved and exported. The probe runs the
callback's top-k sampling step (its indices and softmax probabilities) on the predicted logits of a prompt."""
import keras
import numpy as np
from keras import layers, ops


def causal_attention_mask(batch_size, n_dest, n_src, dtype):
    """
    Mask the upper half of the dot product matrix in self attention.
    This prevents flow of information from future tokens to current token.
    1's in the lower triangle, counting from the lower right corner.
    """
    i = ops.arange(n_dest)[:, None]
    j = ops.arange(n_src)
    m = i >= j - n_src + n_dest
    mask = ops.cast(m, dtype)
    mask = ops.reshape(mask, [1, n_dest, n_src])
    mult = ops.concatenate(
        [ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])], 0
    )
    return ops.tile(mask, mult)


class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.att = layers.MultiHeadAttention(num_heads, embed_dim)
        self.ffn = keras.Sequential(
            [
                layers.Dense(ff_dim, activation="relu"),
                layers.Dense(embed_dim),
            ]
        )
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)
        self.config = {"embed_dim": embed_dim, "num_heads": num_heads, "ff_dim": ff_dim, "rate": rate}

    def call(self, inputs):
        input_shape = ops.shape(inputs)
        batch_size = input_shape[0]
        seq_len = input_shape[1]
        causal_mask = causal_attention_mask(batch_size, seq_len, seq_len, "bool")
        attention_output = self.att(inputs, inputs, attention_mask=causal_mask)
        attention_output = self.dropout1(attention_output)
        out1 = self.layernorm1(inputs + attention_output)
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
        positions = ops.arange(0, maxlen, 1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions

    def get_config(self):
        return {**super().get_config(), **self.config}


vocab_size = 50  # the example's 20000
maxlen = 10  # 80
embed_dim = 16  # 256
num_heads = 2  # Number of attention heads
feed_forward_dim = 16  # 256


def create_model():
    inputs = layers.Input(shape=(maxlen,), dtype="int32")
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, feed_forward_dim)
    x = transformer_block(x)
    outputs = layers.Dense(vocab_size)(x)
    model = keras.Model(inputs=inputs, outputs=[outputs, x])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(
        "adam",
        loss=[loss_fn, None],
    )  # No loss and optimization based on word embeddings from transformer block
    return model


class TextGenerator(keras.callbacks.Callback):
    """A callback to generate text from a trained model.
    1. Feed some starting prompt to the model
    2. Predict probabilities for the next token
    3. Sample the next token and add it to the next input

    Arguments:
        max_tokens: Integer, the number of tokens to be generated after prompt.
        start_tokens: List of integers, the token indices for the starting prompt.
        index_to_word: List of strings, obtained from the TextVectorization layer.
        top_k: Integer, sample from the `top_k` token predictions.
        print_every: Integer, print after this many epochs.
    """

    def __init__(
        self, max_tokens, start_tokens, index_to_word, top_k=10, print_every=1
    ):
        self.max_tokens = max_tokens
        self.start_tokens = start_tokens
        self.index_to_word = index_to_word
        self.print_every = print_every
        self.k = top_k

    def sample_from(self, logits):
        logits, indices = ops.top_k(logits, k=self.k, sorted=True)
        indices = np.asarray(indices).astype("int32")
        preds = keras.activations.softmax(ops.expand_dims(logits, 0))[0]
        preds = np.asarray(preds).astype("float32")
        return np.random.choice(indices, p=preds)

    def detokenize(self, number):
        return self.index_to_word[number]

    def on_epoch_end(self, epoch, logs=None):
        start_tokens = [_ for _ in self.start_tokens]
        if (epoch + 1) % self.print_every != 0:
            return
        num_tokens_generated = 0
        tokens_generated = []
        while num_tokens_generated <= self.max_tokens:
            pad_len = maxlen - len(start_tokens)
            sample_index = len(start_tokens) - 1
            if pad_len < 0:
                x = start_tokens[:maxlen]
                sample_index = maxlen - 1
            elif pad_len > 0:
                x = start_tokens + [0] * pad_len
            else:
                x = start_tokens
            x = np.array([x])
            y, _ = self.model.predict(x, verbose=0)
            sample_token = self.sample_from(y[0][sample_index])
            tokens_generated.append(sample_token)
            start_tokens.append(sample_token)
            num_tokens_generated = len(tokens_generated)
        txt = " ".join(
            [self.detokenize(_) for _ in self.start_tokens + tokens_generated]
        )
        print(f"generated text:\n{txt}\n")
        self.generated = tokens_generated


def vectorize(rng, n):
    """What vectorize_layer gives for n reviews: word indices >= 2 (0 pads, 1 is [UNK]), maxlen + 1 long."""
    tokenized_sentences = np.zeros((n, maxlen + 1), dtype="int64")
    for k in range(n):
        length = rng.integers(4, maxlen + 2)
        tokenized_sentences[k, :length] = rng.integers(1, vocab_size - 1, size=length)
    return tokenized_sentences


def prepare_lm_inputs_labels(tokenized_sentences):
    """
    Shift word sequences by 1 position so that the target for position (i) is
    word at position (i+1). The model will use all words up till position (i)
    to predict the next word.
    """
    x = tokenized_sentences[:, :-1]
    y = tokenized_sentences[:, 1:]
    return x, y


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(71)
    batch_size = 16  # the example's 128

    x_train, y_train = prepare_lm_inputs_labels(vectorize(rng, 48))
    x_val, y_val = prepare_lm_inputs_labels(vectorize(rng, 8))
    vocab = ["", "[UNK]", "this", "movie", "is"] + [f"word{i}" for i in range(5, vocab_size - 1)]

    # Tokenize starting prompt
    word_to_index = {}
    for index, word in enumerate(vocab):
        word_to_index[word] = index

    start_prompt = "this movie is"
    start_tokens = [word_to_index.get(_, 1) for _ in start_prompt.split()]
    num_tokens_generated = 3  # the example's 40
    text_gen_callback = TextGenerator(num_tokens_generated, start_tokens, vocab)

    model = create_model()

    history = model.fit(x_train, y_train, batch_size=batch_size, verbose=2, epochs=1, callbacks=[text_gen_callback])

    prompt = np.array([start_tokens + [0] * (maxlen - len(start_tokens))])

    def probe(model):
        y, embeddings = model.predict(prompt, verbose=0)
        logits, indices = ops.top_k(y[0][len(start_tokens) - 1], k=text_gen_callback.k, sorted=True)
        preds = keras.activations.softmax(ops.expand_dims(logits, 0))[0]
        return {"top_k_indices": np.asarray(indices).astype("int32"), "top_k_probabilities": np.asarray(preds),
                "embeddings": embeddings}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "inputs": x_val,
        "evaluate": (x_val, y_val),
        "probe": probe,
        "values": {"history_keys": sorted(history.history), "generated": len(text_gen_callback.generated),
                   "weights": [list(w.shape) for w in model.get_weights()],
                   "causal_mask": ops.convert_to_numpy(causal_attention_mask(2, 3, 4, "int32"))},
    }


if __name__ == "__main__":
    print(main())
