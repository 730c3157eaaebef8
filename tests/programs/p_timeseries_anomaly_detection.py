"""Timeseries anomaly detection using an Autoencoder (keras-io examples/timeseries/timeseries_anomaly_detection.py):
a normalized univariate series cut into 288-step sequences by the example's create_sequences(), a Conv1D
(strides=2) / Conv1DTranspose reconstruction model with Dropout, Adam(0.001) and mse, EarlyStopping on
val_loss, and the MAE threshold computed from the reconstructions."""
import keras
import numpy as np
from keras import layers

TIME_STEPS = 288


# Generated training sequences for use in the model.
def create_sequences(values, time_steps=TIME_STEPS):
    output = []
    for i in range(len(values) - time_steps + 1):
        output.append(values[i : (i + time_steps)])
    return np.stack(output)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(35)

    # Stands in for the NAB "art_daily_small_noise" series (5-minute values over days).
    values = 20 + 40 * (np.sin(np.arange(288 + 40) * 2 * np.pi / 288) > 0) + rng.normal(scale=2, size=288 + 40)
    df_training_value = values[:, None]
    # Normalize and save the mean and std we get,
    # for normalizing test data.
    training_mean = df_training_value.mean()
    training_std = df_training_value.std()
    df_training_value = (df_training_value - training_mean) / training_std

    x_train = create_sequences(df_training_value)
    print("Training input shape: ", x_train.shape)

    model = keras.Sequential(
        [
            layers.Input(shape=(x_train.shape[1], x_train.shape[2])),
            layers.Conv1D(filters=32, kernel_size=7, padding="same", strides=2, activation="relu"),
            layers.Dropout(rate=0.2),
            layers.Conv1D(filters=16, kernel_size=7, padding="same", strides=2, activation="relu"),
            layers.Conv1DTranspose(filters=16, kernel_size=7, padding="same", strides=2, activation="relu"),
            layers.Dropout(rate=0.2),
            layers.Conv1DTranspose(filters=32, kernel_size=7, padding="same", strides=2, activation="relu"),
            layers.Conv1DTranspose(filters=1, kernel_size=7, padding="same"),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss="mse")
    model.summary()

    history = model.fit(
        x_train,
        x_train,
        epochs=2,
        batch_size=128,
        validation_split=0.1,
        callbacks=[keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, mode="min")],
        verbose=0,
    )

    # Get train MAE loss.
    x_train_pred = model.predict(x_train, verbose=0)
    train_mae_loss = np.mean(np.abs(x_train_pred - x_train), axis=1)
    # Get reconstruction loss threshold.
    threshold = np.max(train_mae_loss)
    print("Reconstruction error threshold: ", threshold)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": x_train_pred[:2],
        "inputs": x_train[:6],
        "evaluate": (x_train, x_train),
        "values": {"x_train_shape": list(x_train.shape), "output_shape": list(model.output_shape)},
    }


if __name__ == "__main__":
    print(main())
