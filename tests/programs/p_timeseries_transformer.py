"""Timeseries classification with a Transformer model (keras-io
examples/timeseries/timeseries_classification_transformer.py): functional transformer encoder blocks
(MultiHeadAttention with dropout, Dropout, LayerNormalization(epsilon=1e-6), residual additions of
KerasTensors, a feed-forward part of two Conv1D with kernel_size=1, the second sized from inputs.shape[-1]),
GlobalAveragePooling1D(data_format="channels_last"), a Dense/Dropout head and a softmax output, trained with
sparse categorical cross-entropy, validation_split=0.2 and EarlyStopping(restore_best_weights=True).
Smaller: FordA-shaped series of 24 steps instead of 500 (float64, as np.loadtxt reads them, labels -1/1
mapped to 0/1), 40 training and 16 test series, head_size 8 instead of 256, 2 heads instead of 4, 2 blocks
instead of 4, mlp_units [16] instead of [128], batches of 16, 2 epochs instead of 200. The UCR files read with
np.loadtxt are replaced by arrays of the same layout. The probe runs a sub-model up to the pooled features."""
import keras
import numpy as np
from keras import layers


def readucr(rng, n, length):
    """Stands in for readucr(filename): np.loadtxt of a UCR .tsv file, the label in the first column."""
    data = np.concatenate([rng.choice([-1.0, 1.0], size=(n, 1)), rng.normal(size=(n, length))], axis=1)
    y = data[:, 0]
    x = data[:, 1:]
    return x, y.astype(int)


def transformer_encoder(inputs, head_size, num_heads, ff_dim, dropout=0):
    # Attention and Normalization
    x = layers.MultiHeadAttention(
        key_dim=head_size, num_heads=num_heads, dropout=dropout
    )(inputs, inputs)
    x = layers.Dropout(dropout)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    res = x + inputs

    # Feed Forward Part
    x = layers.Conv1D(filters=ff_dim, kernel_size=1, activation="relu")(res)
    x = layers.Dropout(dropout)(x)
    x = layers.Conv1D(filters=inputs.shape[-1], kernel_size=1)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    return x + res


def build_model(
    input_shape,
    head_size,
    num_heads,
    ff_dim,
    num_transformer_blocks,
    mlp_units,
    n_classes,
    dropout=0,
    mlp_dropout=0,
):
    inputs = keras.Input(shape=input_shape)
    x = inputs
    for _ in range(num_transformer_blocks):
        x = transformer_encoder(x, head_size, num_heads, ff_dim, dropout)

    x = layers.GlobalAveragePooling1D(data_format="channels_last")(x)
    for dim in mlp_units:
        x = layers.Dense(dim, activation="relu")(x)
        x = layers.Dropout(mlp_dropout)(x)
    outputs = layers.Dense(n_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(91)

    x_train, y_train = readucr(rng, 40, 24)
    x_test, y_test = readucr(rng, 16, 24)

    x_train = x_train.reshape((x_train.shape[0], x_train.shape[1], 1))
    x_test = x_test.reshape((x_test.shape[0], x_test.shape[1], 1))

    n_classes = len(np.unique(y_train))

    idx = np.random.permutation(len(x_train))
    x_train = x_train[idx]
    y_train = y_train[idx]

    y_train[y_train == -1] = 0
    y_test[y_test == -1] = 0

    input_shape = x_train.shape[1:]

    model = build_model(
        input_shape,
        head_size=8,
        num_heads=2,
        ff_dim=4,
        num_transformer_blocks=2,
        mlp_units=[16],
        n_classes=n_classes,
        mlp_dropout=0.4,
        dropout=0.25,
    )

    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=1e-4),
        metrics=["sparse_categorical_accuracy"],
    )
    model.summary()

    callbacks = [keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)]

    history = model.fit(
        x_train,
        y_train,
        validation_split=0.2,
        epochs=2,
        batch_size=16,
        callbacks=callbacks,
        verbose=0,
    )

    model.evaluate(x_test, y_test, verbose=0)

    pooled = next(layer for layer in model.layers if isinstance(layer, layers.GlobalAveragePooling1D))

    def probe(model):
        features = keras.Model(model.inputs, pooled.output)
        return {"pooled": features.predict(x_test[:4], verbose=0)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {"history_keys": sorted(history.history), "y_train": y_train, "n_classes": n_classes,
                   "weights": [list(w.shape) for w in model.get_weights()]},
    }


if __name__ == "__main__":
    print(main())
