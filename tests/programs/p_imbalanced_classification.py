"""Imbalanced classification: credit card fraud detection
(keras-io examples/structured_data/imbalanced_classification.py):
features standardized with their training mean and std, class weights from the class counts, a Sequential
Dense/Dropout network with a sigmoid output, the confusion-matrix metrics (FalseNegatives, FalsePositives,
TrueNegatives, TruePositives, Precision, Recall), a ModelCheckpoint per epoch, fit with class_weight."""
import keras
import numpy as np


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(38)

    # Stands in for creditcard.csv: 30 features, about 1 fraud in 8 rows here (1 in 580 in the data).
    features = rng.normal(size=(96, 30)).astype("float32") * rng.random(30).astype("float32") * 10
    targets = (rng.random(size=(96, 1)) < 0.125).astype("uint8")
    num_val_samples = 24
    train_features = features[:-num_val_samples]
    train_targets = targets[:-num_val_samples]
    val_features = features[-num_val_samples:]
    val_targets = targets[-num_val_samples:]

    counts = np.bincount(train_targets[:, 0])
    print(
        "Number of positive samples in training data: {} ({:.2f}% of total)".format(
            counts[1], 100 * float(counts[1]) / len(train_targets)
        )
    )
    weight_for_0 = 1.0 / counts[0]
    weight_for_1 = 1.0 / counts[1]

    mean = np.mean(train_features, axis=0)
    train_features -= mean
    val_features -= mean
    std = np.std(train_features, axis=0)
    train_features /= std
    val_features /= std

    model = keras.Sequential(
        [
            keras.Input(shape=train_features.shape[1:]),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.summary()

    metrics = [
        keras.metrics.FalseNegatives(name="fn"),
        keras.metrics.FalsePositives(name="fp"),
        keras.metrics.TrueNegatives(name="tn"),
        keras.metrics.TruePositives(name="tp"),
        keras.metrics.Precision(name="precision"),
        keras.metrics.Recall(name="recall"),
    ]

    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="binary_crossentropy", metrics=metrics)

    callbacks = [keras.callbacks.ModelCheckpoint("fraud_model_at_epoch_{epoch}.keras")]
    class_weight = {0: weight_for_0, 1: weight_for_1}

    history = model.fit(
        train_features,
        train_targets,
        batch_size=2048,
        epochs=2,
        verbose=0,
        callbacks=callbacks,
        validation_data=(val_features, val_targets),
        class_weight=class_weight,
    )

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(val_features[:4], verbose=0),
        "inputs": val_features,
        "evaluate": (val_features, val_targets),
        "values": {"history_keys": sorted(history.history), "counts": counts},
    }


if __name__ == "__main__":
    print(main())
