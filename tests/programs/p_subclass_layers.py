"""Making new layers and models via subclassing (keras-io guides/making_new_layers_and_models_via_subclassing.py):
weights and add_weight, non-trainable weights, deferred build(), recursively composable layers, add_loss (and
its reset between calls), kernel regularizers of inner layers, get_config/from_config, and the `training`
argument of call()."""
import keras
import numpy as np
from keras import ops


class Linear(keras.layers.Layer):
    def __init__(self, units=32, input_dim=32):
        super().__init__()
        self.w = self.add_weight(shape=(input_dim, units), initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


class ComputeSum(keras.layers.Layer):
    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(initializer="zeros", shape=(input_dim,), trainable=False)

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return self.total


class LazyLinear(keras.layers.Layer):
    """The guide's second `Linear`: weights created in build(), from the input's shape; with get_config."""

    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal", trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


class MLPBlock(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.linear_1 = LazyLinear(32)
        self.linear_2 = LazyLinear(32)
        self.linear_3 = LazyLinear(1)

    def call(self, inputs):
        x = self.linear_1(inputs)
        x = keras.activations.relu(x)
        x = self.linear_2(x)
        x = keras.activations.relu(x)
        return self.linear_3(x)


class ActivityRegularizationLayer(keras.layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(inputs))
        return inputs


class OuterLayer(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularizationLayer(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


class OuterLayerWithKernelRegularizer(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(32, kernel_regularizer=keras.regularizers.l2(1e-3))

    def call(self, inputs):
        return self.dense(inputs)


class CustomDropout(keras.layers.Layer):
    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs, training=None):
        if training:
            return keras.random.dropout(inputs, rate=self.rate, seed=self.seed_generator)
        return inputs

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate})
        return config


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(5)

    x = ops.ones((2, 2))
    linear_layer = Linear(4, 2)
    y = linear_layer(x)
    linear_shape = list(y.shape)
    assert linear_layer.weights == [linear_layer.w, linear_layer.b]

    x = ops.ones((2, 2))
    my_sum = ComputeSum(2)
    y1 = ops.convert_to_numpy(my_sum(x))
    y2 = ops.convert_to_numpy(my_sum(x))

    mlp = MLPBlock()
    mlp(ops.ones(shape=(3, 64)))  # The first call to the `mlp` will create the weights

    layer = OuterLayer()
    losses_before = len(layer.losses)  # No losses yet since the layer has never been called
    _ = layer(ops.zeros((1, 1)))
    losses_once = len(layer.losses)  # We created one loss value
    _ = layer(ops.zeros((1, 1)))
    losses_twice = len(layer.losses)  # `layer.losses` gets reset at the start of each __call__

    layer = OuterLayerWithKernelRegularizer()
    _ = layer(ops.zeros((1, 1)))
    kernel_losses = len(layer.losses)

    inputs = keras.Input(shape=(3,))
    outputs = ActivityRegularizationLayer()(inputs)
    reg_model = keras.Model(inputs, outputs)
    # If there is a loss passed in `compile`, the regularization losses get added to it
    reg_model.compile(optimizer="adam", loss="mse")
    reg_model.fit(rng.random((2, 3)), rng.random((2, 3)), verbose=0)
    # It's also possible not to pass any loss in `compile`, since the model already has a loss to minimize
    reg_model.compile(optimizer="adam")
    reg_model.fit(rng.random((2, 3)), rng.random((2, 3)), verbose=0)

    layer = LazyLinear(64)
    config = layer.get_config()
    new_layer = LazyLinear.from_config(config)

    # A model of these layers, trained.
    model = keras.Sequential([keras.Input(shape=(64,)), LazyLinear(32), keras.layers.ReLU(), CustomDropout(0.5),
                              LazyLinear(1)])
    model.compile(optimizer="adam", loss="mse")
    x_train = rng.random((48, 64)).astype("float32")
    y_train = rng.random((48, 1)).astype("float32")
    history = model.fit(x_train, y_train, batch_size=16, epochs=2, verbose=0)

    def probe(model):
        fixed = np.random.default_rng(9).normal(size=(3, 64)).astype("float32")
        weights = [np.random.default_rng(10).normal(size=w.shape).astype("float32") * 0.1
                   for w in mlp.get_weights()]
        mlp.set_weights(weights)
        return {"mlp": mlp(fixed), "train_call": model(x_train[:2], training=False)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_train[:4], verbose=0),
        "inputs": x_train[:8],
        "evaluate": (x_train, y_train),
        "probe": probe,
        "values": {
            "linear_shape": linear_shape,
            "sum_1": y1,
            "sum_2": y2,
            "compute_sum_weights": [len(my_sum.weights), len(my_sum.non_trainable_weights),
                                    len(my_sum.trainable_weights)],
            "mlp_weights": len(mlp.weights),
            "mlp_trainable_weights": len(mlp.trainable_weights),
            "losses": [losses_before, losses_once, losses_twice, kernel_losses],
            "config_units": config["units"],
            "config_keys": sorted(config),
            "new_layer_units": new_layer.units,
        },
    }


if __name__ == "__main__":
    print(main())
