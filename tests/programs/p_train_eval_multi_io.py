"""Training & evaluation with the built-in methods (keras-io guides/training_with_built_in_methods.py),
"Passing data to multi-input, multi-output models": an image and a timeseries in, a score and a class out;
losses and metrics as lists and as dicts by output name, loss_weights, and no loss for one output."""
import keras
import numpy as np
from keras import layers


def make_model():
    image_input = keras.Input(shape=(32, 32, 3), name="img_input")
    timeseries_input = keras.Input(shape=(None, 10), name="ts_input")

    x1 = layers.Conv2D(3, 3)(image_input)
    x1 = layers.GlobalMaxPooling2D()(x1)

    x2 = layers.Conv1D(3, 3)(timeseries_input)
    x2 = layers.GlobalMaxPooling1D()(x2)

    x = layers.concatenate([x1, x2])

    score_output = layers.Dense(1, name="score_output")(x)
    class_output = layers.Dense(5, name="class_output")(x)

    return keras.Model(inputs=[image_input, timeseries_input], outputs=[score_output, class_output])


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(9)

    model = make_model()
    model.compile(
        optimizer=keras.optimizers.RMSprop(1e-3),
        loss=[keras.losses.MeanSquaredError(), keras.losses.CategoricalCrossentropy()],
        metrics=[
            [keras.metrics.MeanAbsolutePercentageError(), keras.metrics.MeanAbsoluteError()],
            [keras.metrics.CategoricalAccuracy()],
        ],
    )

    # Generate dummy NumPy data
    img_data = rng.random(size=(40, 32, 32, 3))
    ts_data = rng.random(size=(40, 20, 10))
    score_targets = rng.random(size=(40, 1))
    class_targets = rng.random(size=(40, 5))

    # Fit on lists
    model.fit([img_data, ts_data], [score_targets, class_targets], batch_size=32, epochs=1, verbose=0)

    model.compile(
        optimizer=keras.optimizers.RMSprop(1e-3),
        loss={
            "score_output": keras.losses.MeanSquaredError(),
            "class_output": keras.losses.CategoricalCrossentropy(),
        },
        metrics={
            "score_output": [
                keras.metrics.MeanAbsolutePercentageError(),
                keras.metrics.MeanAbsoluteError(),
            ],
            "class_output": [keras.metrics.CategoricalAccuracy()],
        },
        loss_weights={"score_output": 2.0, "class_output": 1.0},
    )

    # Alternatively, fit on dicts
    history = model.fit(
        {"img_input": img_data, "ts_input": ts_data},
        {"score_output": score_targets, "class_output": class_targets},
        batch_size=32,
        epochs=1,
        verbose=0,
    )

    x_fixed = {"img_input": img_data[:8], "ts_input": ts_data[:8]}
    y_fixed = {"score_output": score_targets[:8], "class_output": class_targets[:8]}

    def probe(model):
        # No loss for the score output (in a new model: a model compiled again keeps reporting the metrics of its
        # earlier compile in Keras 3.15, and so does its clone_model copy).
        copy = make_model()
        copy.set_weights(model.get_weights())
        copy.compile(optimizer=keras.optimizers.RMSprop(1e-3), loss=[None, keras.losses.CategoricalCrossentropy()])
        return {"class_only": copy.evaluate([img_data[:8], ts_data[:8]], [score_targets[:8], class_targets[:8]],
                                            verbose=0, return_dict=True)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_fixed, verbose=0),
        "inputs": x_fixed,
        "evaluate": (x_fixed, y_fixed),
        "probe": probe,
        "values": {"history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
