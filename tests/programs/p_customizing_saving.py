"""Customizing saving and serialization (keras-io guides/customizing_saving_and_serialization.py):
save_own_variables()/load_own_variables() for a variable of one's own, get_build_config()/build_from_config()
for a build() with an extra argument, save_assets()/load_assets() for a vocabulary file, and
get_compile_config()/compile_from_config() for a model whose compile() takes other arguments."""
import os

import keras
import numpy as np


@keras.saving.register_keras_serializable(package="my_custom_package")
class LayerWithCustomVariable(keras.layers.Dense):
    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.my_variable = keras.Variable(
            np.random.default_rng(3).random((units,)), name="my_variable", dtype="float32"
        )

    def save_own_variables(self, store):
        super().save_own_variables(store)
        # Stores the value of the variable upon saving
        store["variables"] = self.my_variable.numpy()

    def load_own_variables(self, store):
        # Assigns the value of the variable upon loading
        self.my_variable.assign(store["variables"])
        # Load the remaining weights (the guide loops over `self.weights`, which in Keras 3.15 starts with
        # my_variable while Dense's save_own_variables stores only its kernel and bias: Keras itself fails that
        # loop, so it reads the Dense's own two variables here)
        for i, v in enumerate([self.kernel, self.bias]):
            v.assign(store[f"{i}"])
        # Note: You must specify how all variables (including layer weights)
        # are loaded in `load_own_variables.`

    def call(self, inputs):
        dense_out = super().call(inputs)
        return dense_out + self.my_variable


@keras.saving.register_keras_serializable(package="my_custom_package")
class LayerWithCustomBuild(keras.layers.Layer):
    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def call(self, inputs):
        return keras.ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        return dict(units=self.units, **super().get_config())

    def build(self, input_shape, layer_init):
        # Note the overriding of `build()` to add an extra argument.
        # Therefore, we will need to manually call build with `layer_init` argument
        # before the first execution of `call()`.
        super().build(input_shape)
        self._input_shape = input_shape
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer=layer_init,
            trainable=True,
        )
        self.b = self.add_weight(
            shape=(self.units,),
            initializer=layer_init,
            trainable=True,
        )
        self.layer_init = layer_init

    def get_build_config(self):
        build_config = {
            "layer_init": self.layer_init,
            "input_shape": self._input_shape,
        }  # Stores our initializer for `build()`
        return build_config

    def build_from_config(self, config):
        # Calls `build()` with the parameters at loading time
        self.build(config["input_shape"], config["layer_init"])


@keras.saving.register_keras_serializable(package="my_custom_package")
class LayerWithCustomAssets(keras.layers.Dense):
    def __init__(self, vocab=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.vocab = vocab

    def save_assets(self, inner_path):
        # Writes the vocab (sentence) to text file at save time.
        with open(os.path.join(inner_path, "vocabulary.txt"), "w") as f:
            f.write(self.vocab)

    def load_assets(self, inner_path):
        # Reads the vocab (sentence) from text file at load time.
        with open(os.path.join(inner_path, "vocabulary.txt"), "r") as f:
            text = f.read()
        self.vocab = text.replace("<unk>", "little")


@keras.saving.register_keras_serializable(package="my_custom_package")
def small_square_sum_loss(y_true, y_pred):
    loss = keras.ops.square(y_pred - y_true)
    loss = loss / 10.0
    loss = keras.ops.sum(loss, axis=1)
    return loss


@keras.saving.register_keras_serializable(package="my_custom_package")
def mean_pred(y_true, y_pred):
    return keras.ops.mean(y_pred)


@keras.saving.register_keras_serializable(package="my_custom_package")
class ModelWithCustomCompile(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense1 = keras.layers.Dense(8, activation="relu")
        self.dense2 = keras.layers.Dense(4, activation="softmax")

    def call(self, inputs):
        x = self.dense1(inputs)
        return self.dense2(x)

    def compile(self, optimizer, loss_fn, metrics):
        super().compile(optimizer=optimizer, loss=loss_fn, metrics=metrics)
        self.model_optimizer = optimizer
        self.loss_fn = loss_fn
        self.loss_metrics = metrics

    def get_compile_config(self):
        # These parameters will be serialized at saving time.
        return {
            "model_optimizer": self.model_optimizer,
            "loss_fn": self.loss_fn,
            "metric": self.loss_metrics,
        }

    def compile_from_config(self, config):
        # Deserializes the compile parameters (important, since many are custom)
        optimizer = keras.utils.deserialize_keras_object(config["model_optimizer"])
        loss_fn = keras.utils.deserialize_keras_object(config["loss_fn"])
        metrics = keras.utils.deserialize_keras_object(config["metric"])

        # Calls compile with the deserialized parameters
        self.compile(optimizer=optimizer, loss_fn=loss_fn, metrics=metrics)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(13)

    model = keras.Sequential([LayerWithCustomVariable(1)])

    ref_input = rng.random((8, 10))
    ref_output = rng.random((8, 10))
    model.compile(optimizer="adam", loss="mean_squared_error")
    history = model.fit(ref_input, ref_output, verbose=0)

    model.save("custom_vars_model.keras")
    restored_model = keras.models.load_model("custom_vars_model.keras")

    np.testing.assert_allclose(
        model.layers[0].my_variable.numpy(),
        restored_model.layers[0].my_variable.numpy(),
    )

    custom_layer = LayerWithCustomBuild(units=16)
    custom_layer.build(input_shape=(8,), layer_init="random_normal")
    build_model = keras.Sequential([keras.Input(shape=(8,)), custom_layer])
    build_model.compile(loss="mse", optimizer="adam")
    build_model.fit(rng.random((16, 8)), rng.random((16, 16)), verbose=0)
    build_model.save("custom_build_model.keras")
    restored_build = keras.models.load_model("custom_build_model.keras")
    np.testing.assert_equal(restored_build.layers[0].layer_init, "random_normal")
    np.testing.assert_equal(restored_build.built, True)

    assets_model = keras.Sequential([LayerWithCustomAssets(vocab="Mary had a <unk> lamb.", units=5)])
    x = rng.random((10, 10))
    y = assets_model(x)
    assets_model.save("custom_assets_model.keras")
    restored_assets = keras.models.load_model("custom_assets_model.keras")
    np.testing.assert_string_equal(restored_assets.layers[0].vocab, "Mary had a little lamb.")

    compile_model = ModelWithCustomCompile()
    compile_model.compile(optimizer="SGD", loss_fn=small_square_sum_loss, metrics=["accuracy", mean_pred])
    x = rng.random((4, 8))
    y = rng.random((4,))
    compile_model.fit(x, y, verbose=0)
    compile_model.save("custom_compile_model.keras")
    restored_compile = keras.models.load_model("custom_compile_model.keras")
    np.testing.assert_equal(compile_model.model_optimizer, restored_compile.model_optimizer)
    np.testing.assert_equal(compile_model.loss_fn, restored_compile.loss_fn)
    np.testing.assert_equal(compile_model.loss_metrics, restored_compile.loss_metrics)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(ref_input[:4], verbose=0),
        "inputs": ref_input,
        "evaluate": (ref_input, ref_output),
        "values": {
            "weights": len(model.weights),
            "restored_vocab": restored_assets.layers[0].vocab,
            "restored_build_init": restored_build.layers[0].layer_init,
            "restored_predict_equal": bool(np.allclose(model.predict(ref_input, verbose=0),
                                                       restored_model.predict(ref_input, verbose=0), atol=1e-6)),
        },
    }


if __name__ == "__main__":
    print(main())
