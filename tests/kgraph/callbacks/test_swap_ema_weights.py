"""``SwapEMAWeights`` against Keras 3's: evaluation and validation with the optimizer's moving averages, the weights
swapped back after, ``swap_on_epoch``, and Keras's errors without moving averages."""
import numpy as np
import pytest

import kgraph
from kgraph import callbacks, layers, optimizers

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(5)
X = RNG.normal(size=(24, 3)).astype("float32")
Y = RNG.normal(size=(24, 2)).astype("float32")
X_VAL = RNG.normal(size=(8, 3)).astype("float32")
Y_VAL = RNG.normal(size=(8, 2)).astype("float32")
FIT = {"batch_size": 8, "shuffle": False, "verbose": 0}


def _numpy(values):
    return [np.asarray(keras.ops.convert_to_numpy(v)) for v in values]


def _max_difference(left, right):
    assert len(left) == len(right)
    return max(float(np.abs(np.asarray(a, "float64") - np.asarray(b, "float64")).max()) for a, b in zip(left, right))


def _models(make_optimizer):
    """A kgraph model and the same Keras model (same weights), compiled with ``make_optimizer(module)``."""
    kgraph.utils.set_random_seed(2)
    ours = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(4, activation="tanh", name="hidden"),
                              layers.Dense(2, name="head")])
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh", name="hidden"),
                                keras.layers.Dense(2, name="head")])
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=make_optimizer(optimizers), loss="mse", metrics=["mae"])
    theirs.compile(optimizer=make_optimizer(keras.optimizers), loss="mse", metrics=["mae"])
    return ours, theirs


def _ema_adam(module):
    return module.Adam(0.05, use_ema=True, ema_momentum=0.7)


def test_validation_and_evaluation_use_the_averages_as_keras():
    ours, theirs = _models(_ema_adam)
    history = ours.fit(X, Y, epochs=3, validation_data=(X_VAL, Y_VAL), callbacks=[callbacks.SwapEMAWeights()],
                       **FIT).history
    keras_history = theirs.fit(X, Y, epochs=3, validation_data=(X_VAL, Y_VAL),
                               callbacks=[keras.callbacks.SwapEMAWeights()], **FIT).history
    for key in ("loss", "mae", "val_loss", "val_mae"):
        np.testing.assert_allclose(history[key], keras_history[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
    # without the callback, validation sees the raw weights: other numbers
    plain, _ = _models(_ema_adam)
    plain_history = plain.fit(X, Y, epochs=3, validation_data=(X_VAL, Y_VAL), **FIT).history
    np.testing.assert_allclose(plain_history["loss"], history["loss"], rtol=1e-6)
    assert abs(plain_history["val_loss"][0] - history["val_loss"][0]) > 1e-4

    # evaluate after more training steps: the averages, then the weights are back
    ours.train_on_batch(X[:8], Y[:8])
    theirs.train_on_batch(X[:8], Y[:8])
    weights = ours.get_weights()
    averages = [v.numpy() for v in ours.optimizer._model_variables_moving_average]
    result = ours.evaluate(X_VAL, Y_VAL, callbacks=[callbacks.SwapEMAWeights()], verbose=0, return_dict=True)
    keras_result = theirs.evaluate(X_VAL, Y_VAL, callbacks=[keras.callbacks.SwapEMAWeights()], verbose=0,
                                   return_dict=True)
    assert result == pytest.approx(keras_result, rel=1e-5)
    assert _max_difference(ours.get_weights(), weights) == 0.0
    assert _max_difference([v.numpy() for v in ours.optimizer._model_variables_moving_average], averages) == 0.0
    with_averages = ours.evaluate(X_VAL, Y_VAL, verbose=0, return_dict=True)
    ours.set_weights(averages)
    assert ours.evaluate(X_VAL, Y_VAL, verbose=0, return_dict=True) == pytest.approx(result, rel=1e-6)
    assert with_averages["loss"] != pytest.approx(result["loss"], rel=1e-4)


def test_swap_on_epoch_shows_the_averages_to_later_callbacks_as_keras():
    ours, theirs = _models(_ema_adam)
    seen, keras_seen = [], []
    ours.fit(X, Y, epochs=3, callbacks=[callbacks.SwapEMAWeights(swap_on_epoch=True), callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append(ours.get_weights()))], **FIT)
    theirs.fit(X, Y, epochs=3, callbacks=[keras.callbacks.SwapEMAWeights(swap_on_epoch=True),
                                          keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs:
                                                                         keras_seen.append(theirs.get_weights()))],
               **FIT)
    for epoch, (a, b) in enumerate(zip(seen, keras_seen)):
        assert _max_difference(a, b) < 1e-5, epoch
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
    averages = [v.numpy() for v in ours.optimizer._model_variables_moving_average]
    assert _max_difference(ours.get_weights(), averages) == 0.0 and _max_difference(seen[-1], averages) == 0.0
    # the epochs after the first trained on from the raw weights, not the averages shown at each epoch's end
    plain, _ = _models(_ema_adam)
    plain.fit(X, Y, epochs=3, **FIT)
    assert _max_difference(plain.get_weights(), ours.get_weights()) < 1e-6


def test_predict_keeps_the_averages_in_the_model_as_keras():
    ours, theirs = _models(_ema_adam)
    ours.fit(X, Y, epochs=1, **FIT)
    theirs.fit(X, Y, epochs=1, **FIT)
    ours.train_on_batch(X[:8], Y[:8])
    theirs.train_on_batch(X[:8], Y[:8])
    averages = [v.numpy() for v in ours.optimizer._model_variables_moving_average]
    swap, keras_swap = callbacks.SwapEMAWeights(), keras.callbacks.SwapEMAWeights()
    predicted = ours.predict(X_VAL, callbacks=[swap], verbose=0)
    keras_predicted = theirs.predict(X_VAL, callbacks=[keras_swap], verbose=0)
    np.testing.assert_allclose(predicted, keras_predicted, rtol=1e-5, atol=1e-5)
    # Keras 3.15's on_predict_end leaves the averages in the model
    assert _max_difference(ours.get_weights(), averages) == 0.0
    assert _max_difference(_numpy(theirs.weights), averages) < 1e-5
    # the next evaluation with the same callback swaps the weights back at its end
    ours.evaluate(X_VAL, Y_VAL, callbacks=[swap], verbose=0)
    theirs.evaluate(X_VAL, Y_VAL, callbacks=[keras_swap], verbose=0)
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
    assert _max_difference(ours.get_weights(), averages) > 1e-4


def test_evaluate_before_training_uses_the_zero_averages_as_keras():
    ours, theirs = _models(_ema_adam)
    weights = ours.get_weights()
    result = ours.evaluate(X_VAL, Y_VAL, callbacks=[callbacks.SwapEMAWeights()], verbose=0, return_dict=True)
    keras_result = theirs.evaluate(X_VAL, Y_VAL, callbacks=[keras.callbacks.SwapEMAWeights()], verbose=0,
                                   return_dict=True)
    assert result == pytest.approx(keras_result, rel=1e-5)
    assert _max_difference(ours.get_weights(), weights) == 0.0
    ours.fit(X, Y, epochs=1, **FIT)
    theirs.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5


def test_multi_and_loss_scale_optimizers_as_keras():
    def multi(module):
        mapping = module.OptimizerMap(module.SGD(0.1))
        mapping[".*head.*"] = _ema_adam(module)
        return module.MultiOptimizer(mapping)

    def loss_scaled(module):
        return module.LossScaleOptimizer(_ema_adam(module))
    for make in (multi, loss_scaled):
        ours, theirs = _models(make)
        history = ours.fit(X, Y, epochs=2, validation_data=(X_VAL, Y_VAL), callbacks=[callbacks.SwapEMAWeights()],
                           **FIT).history
        keras_history = theirs.fit(X, Y, epochs=2, validation_data=(X_VAL, Y_VAL),
                                   callbacks=[keras.callbacks.SwapEMAWeights()], **FIT).history
        np.testing.assert_allclose(history["val_loss"], keras_history["val_loss"], rtol=1e-5, err_msg=make.__name__)
        assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5


def test_errors_without_moving_averages_as_keras():
    for make, message in (
            (lambda module: module.Adam(0.05), r"SwapEMAWeights must be used when `use_ema=True` is set on the "
                                               r"optimizer. Received: use_ema=False"),
            (lambda module: module.MultiOptimizer(module.OptimizerMap(module.SGD(0.1))),
             "SwapEMAWeights must be used when at least one inner optimizer has `use_ema=True`")):
        ours, theirs = _models(make)
        with pytest.raises(ValueError, match=message):
            theirs.fit(X, Y, epochs=1, validation_data=(X_VAL, Y_VAL), callbacks=[keras.callbacks.SwapEMAWeights()],
                       **FIT)
        with pytest.raises(ValueError, match=message):
            ours.fit(X, Y, epochs=1, validation_data=(X_VAL, Y_VAL), callbacks=[callbacks.SwapEMAWeights()], **FIT)
    ours, _ = _models(_ema_adam)
    with pytest.raises(ValueError, match="not built yet"):  # Keras's predict does not build the optimizer either
        ours.predict(X_VAL, callbacks=[callbacks.SwapEMAWeights()], verbose=0)
    swap = callbacks.SwapEMAWeights()
    swap.set_model(kgraph.Sequential([kgraph.Input((3,)), layers.Dense(2)]))
    with pytest.raises(ValueError, match="needs a model compiled"):
        swap.on_test_begin()
