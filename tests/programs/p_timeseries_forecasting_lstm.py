"""Timeseries forecasting for weather prediction (keras-io examples/timeseries/timeseries_weather_forecasting.py):
the example's normalize() on seven features, windows of 120 steps (past 720 sampled every 6) predicting the
temperature 72 steps ahead, an LSTM(32) + Dense(1) model with Adam(0.001) and mse, EarlyStopping and a
weights-only ModelCheckpoint (save_best_only) to model_checkpoint.weights.h5, loaded back with load_weights.
The example windows with keras.preprocessing.timeseries_dataset_from_array, which returns a tf.data.Dataset
(TensorFlow only); the same windows are cut with NumPy here."""
import keras
import numpy as np

split_fraction = 0.715
step = 6
past = 720
future = 72
learning_rate = 0.001
batch_size = 32
epochs = 2


def normalize(data, train_split):
    data_mean = data[:train_split].mean(axis=0)
    data_std = data[:train_split].std(axis=0)
    return (data - data_mean) / data_std


def windows(features, targets, sequence_length, sampling_rate, start, count):
    """What timeseries_dataset_from_array yields, as arrays: sampled windows and the target of each."""
    x = np.stack([features[i : i + sequence_length * sampling_rate : sampling_rate]
                  for i in range(start, start + count)])
    y = np.stack([targets[i] for i in range(start, start + count)])
    return x.astype("float32"), y.astype("float32")


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(34)

    # Stands in for the Jena climate CSV: seven selected features (pressure, temperature, ...).
    n = 1100
    t = np.arange(n)
    features = np.stack([np.sin(t / (20 + 7 * k)) * (k + 1) + rng.normal(scale=0.1, size=n) for k in range(7)], -1)
    train_split = int(split_fraction * int(features.shape[0]))
    features = normalize(features, train_split)

    sequence_length = int(past / step)
    start = past + future
    x_train, y_train = windows(features, features[:, 1:2], sequence_length, step, 0, 48)
    y_train = features[start : start + 48, 1:2].astype("float32")
    x_val, _ = windows(features, features[:, 1:2], sequence_length, step, 200, 16)
    y_val = features[200 + start : 200 + start + 16, 1:2].astype("float32")

    inputs = keras.layers.Input(shape=(x_train.shape[1], x_train.shape[2]))
    lstm_out = keras.layers.LSTM(32)(inputs)
    outputs = keras.layers.Dense(1)(lstm_out)

    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=learning_rate), loss="mse")
    model.summary()

    path_checkpoint = "model_checkpoint.weights.h5"
    es_callback = keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0, patience=5)

    modelckpt_callback = keras.callbacks.ModelCheckpoint(
        monitor="val_loss",
        filepath=path_checkpoint,
        verbose=1,
        save_weights_only=True,
        save_best_only=True,
    )

    history = model.fit(
        x_train,
        y_train,
        batch_size=batch_size,
        epochs=epochs,
        validation_data=(x_val, y_val),
        callbacks=[es_callback, modelckpt_callback],
        verbose=0,
    )
    model.load_weights(path_checkpoint)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_val[:4], verbose=0),
        "inputs": x_val,
        "evaluate": (x_val, y_val),
        "values": {"x_shape": list(x_train.shape), "history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
