"""Callbacks driven through their hooks on a small compiled model, plus short real fits."""
import csv
import io
import os
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import callbacks, layers


def small_model(optimizer="sgd"):
    inputs = kgraph.Input(shape=(3,))
    model = kgraph.Model(inputs, layers.Dense(1)(inputs))
    model.compile(optimizer=optimizer, loss="mse")
    return model


def drive(callback, model, epoch_logs, params=None):
    """Run ``callback`` through a fit-like sequence of epochs; returns the epochs run."""
    cbs = callbacks.CallbackList([callback], model=model, **(params or {"verbose": 0, "epochs": len(epoch_logs), "steps": 1}))
    model.stop_training = False
    cbs.on_train_begin()
    ran = []
    for epoch, logs in enumerate(epoch_logs):
        cbs.on_epoch_begin(epoch)
        cbs.on_train_batch_begin(0)
        cbs.on_train_batch_end(0, {"loss": logs.get("loss", 0.0)})
        model.layers[-1].kernel.assign(np.full((3, 1), float(epoch)))
        cbs.on_epoch_end(epoch, dict(logs))
        ran.append(epoch)
        if model.stop_training:
            break
    cbs.on_train_end()
    return ran


def test_history_records_epochs_and_sets_model_history():
    model = small_model()
    history = callbacks.History()
    drive(history, model, [{"loss": 1.0, "val_loss": 2.0}, {"loss": 0.5, "val_loss": 1.5}])
    assert history.epoch == [0, 1]
    assert history.history == {"loss": [1.0, 0.5], "val_loss": [2.0, 1.5]}
    assert model.history is history


def test_early_stopping_stops_at_the_right_epoch_and_restores_best_weights():
    model = small_model()
    stopper = callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    val_losses = [1.0, 0.5, 0.7, 0.6, 0.4, 0.3]
    ran = drive(stopper, model, [{"val_loss": v} for v in val_losses])
    assert ran == [0, 1, 2, 3]
    assert stopper.stopped_epoch == 3 and stopper.best == 0.5 and stopper.best_epoch == 1
    np.testing.assert_array_equal(model.layers[-1].kernel.value, 1.0)


def test_early_stopping_modes_min_delta_baseline_and_start_epoch():
    model = small_model()
    accuracy = callbacks.EarlyStopping(monitor="val_accuracy", patience=1)
    assert drive(accuracy, model, [{"val_accuracy": a} for a in (0.5, 0.6, 0.55, 0.58)]) == [0, 1, 2]
    delta = callbacks.EarlyStopping(monitor="loss", min_delta=0.1, patience=1)
    assert drive(delta, model, [{"loss": v} for v in (1.0, 0.95, 0.9, 0.5)]) == [0, 1]
    # Improvements that miss the baseline do not reset the wait, as in Keras.
    losses = [{"loss": v} for v in (1.0, 0.9, 0.95, 0.97, 0.99)]
    assert drive(callbacks.EarlyStopping(monitor="loss", patience=2), model, losses) == [0, 1, 2, 3]
    assert drive(callbacks.EarlyStopping(monitor="loss", baseline=0.5, patience=2), model, losses) == [0, 1, 2]
    late = callbacks.EarlyStopping(monitor="loss", patience=0, start_from_epoch=2)
    assert drive(late, model, [{"loss": v} for v in (1.0, 2.0, 3.0, 4.0, 5.0)]) == [0, 1, 2, 3]


def test_missing_monitor_warns_with_available_keys():
    model = small_model()
    with pytest.warns(UserWarning, match="`val_loss` which is not available. Available metrics are: loss"):
        drive(callbacks.EarlyStopping(), model, [{"loss": 1.0}])


def test_reduce_lr_on_plateau_lowers_after_patience_with_cooldown():
    model = small_model()
    model.optimizer.learning_rate = 1.0
    reducer = callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, cooldown=1, min_lr=0.2)
    rates = []
    history = callbacks.History()
    cbs = callbacks.CallbackList([reducer, history], model=model)
    cbs.on_train_begin()
    for epoch, val_loss in enumerate([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]):
        cbs.on_epoch_end(epoch, {"val_loss": val_loss})
        rates.append(model.optimizer.learning_rate)
    assert rates == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2]
    assert history.history["learning_rate"][:3] == [1.0, 1.0, 1.0]


def test_learning_rate_scheduler_sets_rate_each_epoch():
    model = small_model()
    scheduler = callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else 0.2)
    history = callbacks.History()
    cbs = callbacks.CallbackList([scheduler, history], model=model)
    cbs.on_train_begin()
    for epoch in range(3):
        cbs.on_epoch_begin(epoch)
        cbs.on_epoch_end(epoch, {"loss": 1.0})
    assert history.history["learning_rate"] == pytest.approx([0.2, 0.1, 0.05])
    one_argument = callbacks.LearningRateScheduler(lambda epoch: 0.3)
    one_argument.set_model(model)
    one_argument.on_epoch_begin(0)
    assert model.optimizer.learning_rate == 0.3
    bad = callbacks.LearningRateScheduler(lambda epoch, lr: "fast")
    bad.set_model(model)
    with pytest.raises(ValueError, match="should be a float"):
        bad.on_epoch_begin(0)


def test_csv_logger_writes_expected_rows(tmp_path):
    path = tmp_path / "log.csv"
    model = small_model()
    drive(callbacks.CSVLogger(path), model, [{"loss": 0.5, "accuracy": 0.25}, {"loss": 0.25, "accuracy": 0.5}])
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["epoch", "accuracy", "loss", "val_accuracy", "val_loss"],
                    ["0", "0.25", "0.5", "NA", "NA"], ["1", "0.5", "0.25", "NA", "NA"]]
    drive(callbacks.CSVLogger(path, separator=";", append=True), model, [{"loss": 0.125, "accuracy": 1.0}])
    with open(path) as f:
        lines = f.read().splitlines()
    assert lines[-1] == "0;1.0;0.125;NA;NA" and len(lines) == 4


def test_model_checkpoint_saves_only_on_improvement(tmp_path):
    model = small_model()
    pattern = os.path.join(tmp_path, "ckpt-{epoch:02d}-{val_loss:.2f}.pkl")
    checkpoint = callbacks.ModelCheckpoint(pattern, monitor="val_loss", save_best_only=True)
    drive(checkpoint, model, [{"val_loss": v} for v in (0.9, 0.95, 0.5, 0.7)])
    assert sorted(os.listdir(tmp_path)) == ["ckpt-01-0.90.pkl", "ckpt-03-0.50.pkl"]
    assert checkpoint.best == 0.5
    restored = kgraph.load_model(os.path.join(tmp_path, "ckpt-03-0.50.pkl"))
    np.testing.assert_array_equal(restored.layers[-1].kernel.value, 2.0)


def test_model_checkpoint_weights_every_n_batches(tmp_path):
    model = small_model()
    path = os.path.join(tmp_path, "sub", "w-{epoch}-{batch}.weights.pkl")
    checkpoint = callbacks.ModelCheckpoint(path, save_weights_only=True, save_freq=2)
    cbs = callbacks.CallbackList([checkpoint], model=model)
    cbs.on_train_begin()
    for epoch in range(2):
        cbs.on_epoch_begin(epoch)
        for batch in range(3):
            cbs.on_train_batch_end(batch, {"loss": 1.0})
        cbs.on_epoch_end(epoch, {"loss": 1.0})
    assert sorted(os.listdir(os.path.join(tmp_path, "sub"))) == \
        ["w-1-2.weights.pkl", "w-2-1.weights.pkl", "w-2-3.weights.pkl"]
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.ModelCheckpoint(path, save_freq="often")


def test_terminate_on_nan_and_lambda_callback():
    model = small_model()
    seen = []
    lam = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append((epoch, logs["loss"])),
                                   on_train_end=lambda logs: seen.append("end"))
    assert drive(lam, model, [{"loss": 1.0}, {"loss": 2.0}]) == [0, 1]
    assert seen == [(0, 1.0), (1, 2.0), "end"]
    assert drive(callbacks.TerminateOnNaN(), model, [{"loss": 1.0}, {"loss": float("nan")}, {"loss": 1.0}]) == [0, 1]
    with pytest.raises(RuntimeError, match="NaN or Inf loss"):
        drive(callbacks.TerminateOnNaN(raise_error=True), model, [{"loss": float("inf")}])


def test_callback_list_turns_numpy_values_into_floats():
    recorded = []
    cbs = callbacks.CallbackList([callbacks.LambdaCallback(on_epoch_end=lambda e, logs: recorded.append(logs))])
    cbs.on_epoch_end(0, {"loss": np.float32(0.5), "auc": np.array(0.25)})
    assert recorded == [{"loss": 0.5, "auc": 0.25}] and type(recorded[0]["loss"]) is float


class Interactive(io.StringIO):
    def isatty(self):
        return True


def test_progbar_verbose_1_live_and_final_lines(capsys):
    bar = callbacks.Progbar(target=32, interval=0.0, stream=Interactive())
    for step in range(1, 33):
        bar.update(step, {"loss": 0.31, "accuracy": 0.91}, finalize=step == 32)
    output = bar.stream.getvalue()
    assert output.count("\r") == 32 and output.endswith("\n")
    assert "12/32" in output and "━" in output and "/step - loss: 0.3100 - accuracy: 0.9100" in output
    model = small_model()
    drive(callbacks.ProgbarLogger(), model, [{"loss": 0.31, "accuracy": 0.91, "val_loss": 0.5}],
          params={"verbose": 1, "epochs": 2, "steps": 1})
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "Epoch 1/2" and "\r" not in out and len(lines) == 2
    assert lines[1].startswith("1/1 ━━━━━━━━━━━━━━━━━━━━ 0s ")
    assert lines[1].endswith("/step - accuracy: 0.9100 - loss: 0.3100 - val_loss: 0.5000")


def test_progbar_verbose_2_one_line_per_epoch(capsys):
    model = small_model()
    logs = [{"loss": 0.31, "accuracy": 0.91, "val_loss": 0.0001}, {"loss": 0.2, "accuracy": 0.95, "val_loss": 0.3}]
    drive(callbacks.ProgbarLogger(), model, logs, params={"verbose": 2, "epochs": 2, "steps": 32})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    assert lines[1].startswith("32/32 - 0s - ") and "s/step - accuracy: 0.9100 - loss: 0.3100" in lines[1]
    assert lines[1].endswith("val_loss: 1.0000e-04")


def test_fit_with_callbacks_end_to_end(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], dtype="float32")
    model = small_model(optimizer=kgraph.optimizers.SGD(learning_rate=0.05))
    stopper = callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=10.0)
    history = model.fit(x, y, epochs=5, batch_size=16, verbose=2,
                        callbacks=[stopper, callbacks.CSVLogger(tmp_path / "fit.csv")])
    assert history.epoch == [0, 1] and stopper.stopped_epoch == 1
    assert len(history.history["loss"]) == 2 and history.history["loss"][1] < history.history["loss"][0]
    out = capsys.readouterr().out
    assert "Epoch 1/5" in out and "4/4 - " in out and "loss: " in out
    with open(tmp_path / "fit.csv") as f:
        assert len(f.read().splitlines()) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(x, y, epochs=1, batch_size=64, verbose=0, callbacks=[callbacks.ReduceLROnPlateau(monitor="loss")])


def test_fit_validation_calls_the_test_hooks():
    class Hooks(kgraph.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.events = []

        def on_test_begin(self, logs=None):
            self.events.append("begin")

        def on_test_batch_end(self, batch, logs=None):
            self.events.append("batch")

        def on_test_end(self, logs=None):
            self.events.append(("end", sorted(logs)))

    inp = kgraph.Input((2,))
    model = kgraph.Model(inp, kgraph.layers.Dense(1)(inp))
    model.compile(optimizer="sgd", loss="mse")
    hooks = Hooks()
    x, y = np.ones((8, 2), "float32"), np.ones((8, 1), "float32")
    model.fit(x, y, validation_data=(x, y), batch_size=4, epochs=2, verbose=0, callbacks=[hooks])
    assert hooks.events == ["begin", "batch", "batch", ("end", ["loss"])] * 2
