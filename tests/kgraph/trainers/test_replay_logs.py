"""fit's replayed step reads the metrics' results only when a callback reads a batch's logs."""
import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.trainers import replay


def _data(n=320, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int64")


def _model(jit_compile="auto"):
    kgraph.utils.set_random_seed(5)
    x = kgraph.Input((6,))
    model = kgraph.Model(x, layers.Dense(2, activation="softmax")(layers.Dense(8, activation="relu")(x)))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                  jit_compile=jit_compile)
    return model


def _count_results(model):
    calls = []
    original = model.get_metrics_result

    def counted():
        calls.append(1)
        return original()
    return calls, counted


class _BatchEnd(kgraph.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_batch_end(self, batch, logs=None):
        self.seen.append(dict(logs))


def test_no_batch_logs_read_means_results_read_once_per_epoch():
    x, y = _data()
    model = _model()
    calls = []
    metric_type = type(model._loss_tracker)
    original = metric_type.result

    def counted(self):
        calls.append(1)
        return original(self)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metric_type, "result", counted)
        history = model.fit(x, y, batch_size=32, epochs=2, verbose=0).history
    # 10 batches an epoch, two metrics (the loss tracker and the accuracy, both means): their results are read
    # once at the end of each epoch, not after every batch (40 reads).
    assert len(calls) == 2 * 2
    expected = _model(jit_compile=False).fit(x, y, batch_size=32, epochs=2, verbose=0).history
    assert history == expected
    assert any(p.confirmed for p in replay._STEPS[model].programs.values())


@pytest.mark.parametrize("kind", ["subclass", "lambda"])
def test_a_callback_reading_batch_logs_gets_every_batchs_logs(kind):
    x, y = _data()
    runs = []
    for jit_compile in ("auto", False):
        model = _model(jit_compile)
        if kind == "subclass":
            callback = _BatchEnd()
            seen = callback.seen
        else:
            seen = []
            callback = kgraph.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(logs))
        model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[callback])
        runs.append(seen)
    assert len(runs[0]) == 20 and runs[0] == runs[1]
    assert set(runs[0][-1]) == {"accuracy", "loss"}


def test_batch_begin_hooks_still_run_and_stop_training_still_stops():
    x, y = _data()
    model = _model()
    begun = []

    def begin(batch, logs):
        begun.append(batch)
        if batch == 4:
            model.stop_training = True
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0,
                        callbacks=[kgraph.callbacks.LambdaCallback(on_train_batch_begin=begin)]).history
    assert begun == [0, 1, 2, 3, 4] and len(history["loss"]) == 1


def test_a_get_metrics_result_set_on_the_model_is_called_at_each_step():
    x, y = _data()
    model = _model()
    calls, counted = _count_results(model)
    model.get_metrics_result = counted
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert len(calls) >= 10  # the step as written: its logs are the results at each step
    assert replay._STEPS.get(model) is None
