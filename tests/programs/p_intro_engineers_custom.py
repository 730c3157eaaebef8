"""Introduction to Keras for engineers (keras-io guides/intro_to_keras_for_engineers.py), "Writing
cross-framework custom components": MyDense (add_weight with initializer objects, keras.ops), MyDropout
(keras.random.dropout with a SeedGenerator, dropping at every call as the guide writes it) and MyModel, a
subclassed Model holding a Sequential conv base; trained with fit, and trained again from a PyTorch
DataLoader as the guide shows ("Training models on arbitrary data sources")."""
import keras
import numpy as np


class MyDense(keras.layers.Layer):
    def __init__(self, units, activation=None, name=None):
        super().__init__(name=name)
        self.units = units
        self.activation = keras.activations.get(activation)

    def build(self, input_shape):
        input_dim = input_shape[-1]
        self.w = self.add_weight(
            shape=(input_dim, self.units),
            initializer=keras.initializers.GlorotNormal(),
            name="kernel",
            trainable=True,
        )

        self.b = self.add_weight(
            shape=(self.units,),
            initializer=keras.initializers.Zeros(),
            name="bias",
            trainable=True,
        )

    def call(self, inputs):
        # Use Keras ops to create backend-agnostic layers/metrics/etc.
        x = keras.ops.matmul(inputs, self.w) + self.b
        return self.activation(x)


class MyDropout(keras.layers.Layer):
    def __init__(self, rate, name=None):
        super().__init__(name=name)
        self.rate = rate
        # Use seed_generator for managing RNG state.
        # It is a state element and its seed variable is
        # tracked as part of `layer.variables`.
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        # Use `keras.random` for random ops.
        return keras.random.dropout(inputs, self.rate, seed=self.seed_generator)


class MyModel(keras.Model):
    def __init__(self, num_classes):
        super().__init__()
        self.conv_base = keras.Sequential(
            [
                keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
                keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
                keras.layers.MaxPooling2D(pool_size=(2, 2)),
                keras.layers.Conv2D(128, kernel_size=(3, 3), activation="relu"),
                keras.layers.Conv2D(128, kernel_size=(3, 3), activation="relu"),
                keras.layers.GlobalAveragePooling2D(),
            ]
        )
        self.dp = MyDropout(0.5)
        self.dense = MyDense(num_classes, activation="softmax")

    def call(self, x):
        x = self.conv_base(x)
        x = self.dp(x)
        return self.dense(x)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(24)

    x_train = np.expand_dims(rng.integers(0, 256, size=(48, 28, 28)).astype("float32") / 255, -1)
    y_train = rng.integers(0, 10, size=(48,)).astype("uint8")
    x_test = np.expand_dims(rng.integers(0, 256, size=(16, 28, 28)).astype("float32") / 255, -1)
    batch_size = 16

    model = MyModel(num_classes=10)
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(),
        optimizer=keras.optimizers.Adam(learning_rate=1e-3),
        metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="acc"),
        ],
    )
    history = model.fit(x_train, y_train, batch_size=batch_size, epochs=1, validation_split=0.15, verbose=0)

    import torch

    # Create a TensorDataset
    train_torch_dataset = torch.utils.data.TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train))
    # Create a DataLoader
    train_dataloader = torch.utils.data.DataLoader(train_torch_dataset, batch_size=batch_size, shuffle=True)
    history = model.fit(train_dataloader, epochs=1, verbose=0)

    def probe(model):
        # MyDropout drops at inference too, so the conv base and the head are compared on their own.
        features = model.conv_base.predict(x_test, verbose=0)
        return {"features": features, "head": model.dense(features)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "probe": probe,
        "save": "MyDense and MyDropout take required __init__ arguments without get_config(), so their .keras "
                "file cannot be loaded again (Keras cannot either)",
        "values": {"variables": len(model.variables) - len(model.weights),
                   "weights": [list(w.shape) for w in model.get_weights()]},
    }


if __name__ == "__main__":
    print(main())
