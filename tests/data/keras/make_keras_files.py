"""Write the small Keras 3 ``.keras`` files and reference predictions that tests/kgraph/saving/test_keras_format.py reads.

Needs Keras 3 (written with Keras 3.15.1, torch backend):
``KERAS_BACKEND=torch python tests/data/keras/make_keras_files.py``. Each model is saved as ``<name>.keras`` next to
``<name>.npz`` holding its inputs (``x0``, ``x1``, ...) and Keras's predictions (``y0``, ...).
"""
import os
import zipfile

import keras
import numpy as np
from keras import layers

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp():
    inputs = keras.Input((6,), name="features")
    x = layers.Dense(8, activation="relu", kernel_regularizer=keras.regularizers.L2(0.01))(inputs)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(3, activation="softmax")(x)
    model = keras.Model(inputs, outputs, name="mlp")
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model, [(4, 6)]


def cnn():
    model = keras.Sequential([
        keras.Input((8, 8, 2)),
        layers.Conv2D(4, 3, padding="same"),
        layers.BatchNormalization(),
        layers.Activation("relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(4, 3),
        layers.BatchNormalization(),
        layers.GlobalAveragePooling2D(),
        layers.Dense(2),
    ], name="cnn")
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.9)
    model.compile(optimizer=keras.optimizers.SGD(schedule, momentum=0.9), loss=keras.losses.MeanSquaredError(),
                  metrics=[keras.metrics.MeanAbsoluteError()])
    return model, [(3, 8, 8, 2)]


def recurrent():
    inputs = keras.Input((5, 3))
    x = layers.LSTM(4, return_sequences=True)(inputs)
    x = layers.GRU(3)(x)
    outputs = layers.Dense(1)(x)
    return keras.Model(inputs, outputs, name="recurrent"), [(2, 5, 3)]


def bidirectional():
    inputs = keras.Input((6,), dtype="int32")
    x = layers.Embedding(10, 4, mask_zero=True)(inputs)
    x = layers.Bidirectional(layers.LSTM(3))(x)
    outputs = layers.Dense(2)(x)
    return keras.Model(inputs, outputs, name="bidirectional"), [(3, 6)]


def transformer():
    inputs = keras.Input((5, 8))
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=4)(inputs, inputs)
    x = layers.LayerNormalization()(inputs + attention)
    ff = layers.Dense(8)(layers.Dense(16, activation="gelu")(x))
    x = layers.LayerNormalization()(layers.Add()([x, ff]))
    outputs = layers.Dense(2)(layers.GlobalAveragePooling1D()(x))
    return keras.Model(inputs, outputs, name="transformer"), [(2, 5, 8)]


def _perturb_statistics(model, rng):
    """Move BatchNormalization's moving statistics off their initial values so that loading them is tested."""
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            layer.moving_mean.assign(rng.normal(size=layer.moving_mean.shape).astype("float32"))
            layer.moving_variance.assign(rng.uniform(0.5, 2.0, size=layer.moving_variance.shape).astype("float32"))


def _deflate(path):
    """Re-pack Keras's archive with its members deflated (Keras stores them): the same members, a tenth the size."""
    with zipfile.ZipFile(path) as zf:
        members = [(info.filename, zf.read(info.filename)) for info in zf.infolist()]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, payload in members:
            zf.writestr(name, payload)


def main():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    for build in (mlp, cnn, recurrent, bidirectional, transformer):
        model, shapes = build()
        _perturb_statistics(model, rng)
        if model.name == "bidirectional":
            inputs = [rng.integers(0, 10, size=shapes[0]).astype("int32")]
            inputs[0][0, 4:] = 0
        else:
            inputs = [rng.normal(size=s).astype("float32") for s in shapes]
        outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        path = os.path.join(HERE, f"{model.name}.keras")
        model.save(path)
        _deflate(path)
        arrays = {f"x{i}": x for i, x in enumerate(inputs)}
        arrays.update({f"y{i}": np.asarray(y) for i, y in enumerate(outputs)})
        np.savez(os.path.join(HERE, f"{model.name}.npz"), **arrays)


if __name__ == "__main__":
    main()
