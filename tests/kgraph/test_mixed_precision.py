"""mixed_float16 as Keras 3 does it: float32 variables, float16 computation (variables read as float16 inside the
layer's call, their gradients back in float32), losses in float32, and dynamic loss scaling with
LossScaleOptimizer, which compile adds for a mixed model; saved and reloaded (.pkl, .keras, both ways with Keras),
and exported."""
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.optimizers import LossScaleOptimizer
from tests.export.parity import assert_parity


def _mixed_model():
    kgraph.config.set_dtype_policy("mixed_float16")
    try:
        inp = kgraph.Input((8,))
        x = layers.Dense(16, activation="relu")(inp)
        out = layers.Activation("softmax", dtype="float32")(layers.Dense(3)(x))
        return kgraph.Model(inp, out)
    finally:
        kgraph.config.set_dtype_policy(None)


def _data(n=128):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 8)).astype("float32")
    return x, (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0)


def test_a_mixed_layer_keeps_float32_variables_and_computes_in_float16():
    dense = layers.Dense(3, dtype="mixed_float16")
    y = dense(np.ones((2, 4), "float32"))
    assert y.dtype == np.float16 and dense.kernel.dtype == "float32"
    assert (dense.dtype, dense.compute_dtype, dense.variable_dtype) == ("float32", "float16", "float32")
    assert dense.dtype_policy.name == "mixed_float16"
    model = _mixed_model()
    assert [layer.output.dtype for layer in model.layers] == ["float32", "float16", "float16", "float32"]
    assert model.predict(np.ones((2, 8), "float32"), verbose=0).dtype == np.float32
    with pytest.raises(ValueError, match="'mixed_bfloat16': NumPy has no bfloat16"):
        layers.Dense(2, dtype="mixed_bfloat16")


def test_compile_adds_loss_scaling_and_the_model_learns():
    model = _mixed_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert isinstance(model.optimizer, LossScaleOptimizer) and model.optimizer.dynamic_scale == 2.0**15
    before = model.layers[1].kernel.numpy().copy()
    x, y = _data()
    history = model.fit(x, y, epochs=4, batch_size=32, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0] and all(np.isfinite(losses))
    assert model.layers[1].kernel.dtype == "float32" and not np.array_equal(before, model.layers[1].kernel.numpy())
    assert model.optimizer.iterations == 16
    plain = _mixed_model()
    plain.compile(optimizer="adam", loss="sparse_categorical_crossentropy", auto_scale_loss=False)
    assert not isinstance(plain.optimizer, LossScaleOptimizer)


def test_loss_scale_optimizer_skips_non_finite_steps_and_grows_its_scale():
    variable = kgraph.Variable(np.ones(3, "float32"))
    optimizer = LossScaleOptimizer(kgraph.optimizers.SGD(0.1), initial_scale=8.0, dynamic_growth_steps=2)
    optimizer.apply([np.array([np.inf, 0, 0], "float32")], [variable])
    assert optimizer.dynamic_scale == 4.0 and optimizer.iterations == 0
    np.testing.assert_array_equal(variable.numpy(), 1.0)
    optimizer.apply([np.full(3, 4.0, "float32")], [variable])  # unscaled: 1.0, so the step is 0.1
    np.testing.assert_allclose(variable.numpy(), 0.9)
    optimizer.apply([np.full(3, 4.0, "float32")], [variable])
    assert optimizer.dynamic_scale == 8.0 and optimizer.step_counter == 0 and optimizer.iterations == 2
    np.testing.assert_allclose(np.asarray(optimizer.scale_loss(np.float32(2.0))), 16.0)
    again = LossScaleOptimizer.from_config(optimizer.get_config())
    assert (again.initial_scale, again.dynamic_growth_steps, type(again.inner_optimizer)) == (8.0, 2,
                                                                                              kgraph.optimizers.SGD)
    with pytest.raises(ValueError, match="does not support `clipnorm`"):
        LossScaleOptimizer(kgraph.optimizers.SGD(), clipnorm=1.0)


@pytest.mark.parametrize("suffix", [".pkl", ".keras"])
def test_a_mixed_model_saves_and_loads_with_its_policy_and_loss_scaling(tmp_path, suffix):
    model = _mixed_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x, y = _data(64)
    model.fit(x, y, epochs=1, verbose=0)
    model.optimizer.dynamic_scale, model.optimizer.step_counter = 1024.0, 1  # as after skipped steps
    path = str(tmp_path / f"m{suffix}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.save(path)
        restored = kgraph.load_model(path)
    assert restored.layers[1].dtype_policy.name == "mixed_float16"
    assert isinstance(restored.optimizer, LossScaleOptimizer) and restored.optimizer.iterations == 2
    assert (restored.optimizer.dynamic_scale, restored.optimizer.step_counter) == (1024.0, 1)
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_mixed_model_exports():
    model = _mixed_model()
    assert_parity(model, rtol=1e-2, atol=1e-2)


def test_mixed_models_move_between_keras_and_kgraph(tmp_path):
    keras = pytest.importorskip("keras")
    assert layers.Dense(3, dtype="mixed_float16").get_config()["dtype"] == \
        keras.layers.Dense(3, dtype="mixed_float16").get_config()["dtype"]
    keras.config.set_dtype_policy("mixed_float16")
    try:
        inp = keras.Input((8,))
        x = keras.layers.Dense(16, activation="relu")(inp)
        theirs = keras.Model(inp, keras.layers.Activation("softmax", dtype="float32")(keras.layers.Dense(3)(x)))
    finally:
        keras.config.set_dtype_policy("float32")
    theirs.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x, y = _data(64)
    theirs.fit(x, y, epochs=1, verbose=0)
    theirs.save(str(tmp_path / "keras.keras"))
    # Keras's compile_config names the optimizer compile was given (Adam), not the LossScaleOptimizer it added, and
    # its Functional config carries no policy: Keras reloads its own file with a plain Adam, and so does kgraph.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = kgraph.load_model(str(tmp_path / "keras.keras"))
        mirrored = keras.models.load_model(str(tmp_path / "keras.keras"))
    assert ours.layers[1].dtype_policy.name == "mixed_float16"
    assert type(ours.optimizer).__name__ == type(mirrored.optimizer).__name__ == "Adam"
    expected = keras.ops.convert_to_numpy(theirs.predict(x, verbose=0))
    np.testing.assert_allclose(ours.predict(x, verbose=0), expected, rtol=2e-3, atol=2e-3)
    scaled = _mixed_model()  # a kgraph file keeps its LossScaleOptimizer, and Keras reads it with its state
    scaled.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    scaled.fit(x, y, epochs=2, verbose=0)
    scaled.save(str(tmp_path / "kgraph.keras"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # Keras finds its inner optimizer's own copy of the state
        back = keras.models.load_model(str(tmp_path / "kgraph.keras"))
    assert type(back.optimizer).__name__ == "LossScaleOptimizer" and int(back.optimizer.iterations) == 4
    inner = [keras.ops.convert_to_numpy(v) for v in back.optimizer.inner_optimizer.variables]
    np.testing.assert_allclose(inner[2], scaled.optimizer.inner_optimizer.variables[1].numpy())
    ours = scaled
    np.testing.assert_allclose(keras.ops.convert_to_numpy(back.predict(x, verbose=0)), ours.predict(x, verbose=0),
                               rtol=2e-3, atol=2e-3)
