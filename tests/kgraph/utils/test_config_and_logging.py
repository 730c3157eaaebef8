"""``kgraph.config``'s switches, the debugging caps on ``fit``, interactive logging and ``Progbar`` against
Keras 3's."""
import io
import logging
import re
import sys
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import config, utils

keras = pytest.importorskip("keras")


@pytest.fixture(autouse=True)
def _restore_switches():
    yield
    for module in (config, keras.config):
        module.set_max_epochs(None)
        module.set_max_steps_per_epoch(None)
        module.enable_interactive_logging()
        module.enable_traceback_filtering()
        module.enable_flash_attention()


def test_switches_read_as_keras_s():
    for module in (config, keras.config):
        assert module.is_flash_attention_enabled() is None and module.is_traceback_filtering_enabled() is True
        assert module.is_interactive_logging_enabled() is True and module.is_nnx_enabled() is False
        assert module.max_epochs() is None and module.max_steps_per_epoch() is None
        module.disable_flash_attention()
        module.disable_traceback_filtering()
        module.disable_interactive_logging()
    for module in (config, keras.config):
        assert module.is_flash_attention_enabled() is False and module.is_traceback_filtering_enabled() is False
        assert module.is_interactive_logging_enabled() is False
        module.enable_flash_attention()  # Keras's "enabled" is None: automatic
        assert module.is_flash_attention_enabled() is None
    assert utils.is_interactive_logging_enabled is config.is_interactive_logging_enabled
    config.set_backend("numpy")
    with pytest.raises(ValueError, match="NumPy"):
        config.set_backend("jax")
    with pytest.raises(ValueError, match="max_epochs"):
        config.set_max_epochs(0)


def test_flash_attention_switch_changes_no_value():
    q = np.random.default_rng(0).normal(size=(2, 4, 2, 8)).astype("float32")
    layer = kgraph.layers.MultiHeadAttention(2, 4)
    before = np.asarray(layer(q[0], q[0]))
    config.disable_flash_attention()
    np.testing.assert_array_equal(np.asarray(layer(q[0], q[0])), before)
    np.testing.assert_array_equal(np.asarray(kgraph.ops.dot_product_attention(q, q, q)),
                                  np.asarray(kgraph.ops.dot_product_attention(q, q, q, flash_attention=False)))


class _Counter:
    def __init__(self, base):
        class Counter(base):
            def __init__(self):
                super().__init__()
                self.train = self.test = self.predict = 0

            def on_train_batch_begin(self, batch, logs=None):
                self.train += 1

            def on_test_batch_begin(self, batch, logs=None):
                self.test += 1

            def on_predict_batch_begin(self, batch, logs=None):
                self.predict += 1
        self.cls = Counter


def _run(module, epochs, max_epochs, max_steps, steps_per_epoch=None):
    x, y = np.ones((80, 3), "float32"), np.ones((80, 1), "float32")
    module.config.set_max_epochs(max_epochs)
    module.config.set_max_steps_per_epoch(max_steps)
    model = module.Sequential([module.Input((3,)), module.layers.Dense(1)])
    model.compile("sgd", "mse")
    counter = _Counter(module.callbacks.Callback).cls()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, callbacks=[counter],
                            validation_data=(x, y), steps_per_epoch=steps_per_epoch)
        model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[counter])
        model.predict(x, batch_size=8, verbose=0, callbacks=[counter])
    messages = sorted({str(w.message) for w in caught if "Limiting" in str(w.message)})
    return len(history.history["loss"]), counter.train, counter.test, counter.predict, messages


# 10 batches a pass; an epoch of a fixed step count that runs past the end of the arrays ends early in both.
@pytest.mark.parametrize("caps", [(2, 3, None), (None, 5, None), (3, None, None), (10, 2, 5), (2, 12, 2),
                                  (None, 10, None)])
def test_max_epochs_and_steps_cap_fit_evaluate_predict_as_keras(caps):
    max_epochs, max_steps, steps_per_epoch = caps
    ours = _run(kgraph, 4, max_epochs, max_steps, steps_per_epoch)
    theirs = _run(keras, 4, max_epochs, max_steps, steps_per_epoch)
    assert ours == theirs


def test_max_epochs_from_the_environment(monkeypatch):
    import importlib
    monkeypatch.setenv("KERAS_MAX_EPOCHS", "2")
    monkeypatch.setenv("KERAS_MAX_STEPS_PER_EPOCH", "5")
    try:
        fresh = importlib.reload(config)
        assert fresh.max_epochs() == 2 and fresh.max_steps_per_epoch() == 5
    finally:
        monkeypatch.delenv("KERAS_MAX_EPOCHS")
        monkeypatch.delenv("KERAS_MAX_STEPS_PER_EPOCH")
        importlib.reload(config)
    assert config.max_epochs() is None


def test_interactive_logging_switches_fit_output(capsys, caplog):
    model = kgraph.Sequential([kgraph.Input((3,)), kgraph.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.ones((16, 3)), np.ones((16, 1))
    model.fit(x, y, epochs=2, verbose=1)
    printed = capsys.readouterr().out
    assert "Epoch 1/2" in printed and "loss:" in printed
    config.disable_interactive_logging()
    with caplog.at_level(logging.INFO, logger="kgraph"):
        model.fit(x, y, epochs=2, verbose=1)
        model.evaluate(x, y, verbose=2)
    assert capsys.readouterr().out == ""
    logged = [r.getMessage() for r in caplog.records if r.name == "kgraph"]
    assert "Epoch 2/2" in logged and sum("loss:" in m for m in logged) == 3
    config.enable_interactive_logging()
    model.fit(x, y, epochs=1, verbose=2)
    assert "loss:" in capsys.readouterr().out


def _metrics_part(text):
    line = text.strip().splitlines()[-1]
    return re.sub(r"\x1b\[[0-9;]*m", "", line).split("/step", 1)[1]


@pytest.mark.parametrize("kwargs", [{}, {"stateful_metrics": ["acc"]}, {"stateless_metrics": ["loss"]}])
def test_progbar_averages_values_as_keras(kwargs, capsys):
    updates = [(2, [("loss", 1.0), ("acc", 0.5)]), (5, [("loss", 3.0), ("acc", 0.25)]), (6, [("loss", 2.0)])]
    texts = []
    for cls in (utils.Progbar, keras.utils.Progbar):
        bar = cls(10, verbose=2, **kwargs)
        for current, values in updates:
            bar.update(current, values)
        bar.add(4)
        texts.append(capsys.readouterr().out)
    assert _metrics_part(texts[0]) == _metrics_part(texts[1])
    assert texts[0].startswith("10/10 - ")


def test_progbar_signature_errors_and_explicit_stream():
    import inspect
    assert list(inspect.signature(utils.Progbar).parameters)[:7] == list(
        inspect.signature(keras.utils.Progbar).parameters)
    with pytest.raises(ValueError, match="Only one of"):
        utils.Progbar(3, stateful_metrics=["a"], stateless_metrics=["b"])
    stream = io.StringIO()
    bar = utils.Progbar(3, verbose=1, stream=stream, stateful_metrics=["lr"])
    bar.update(3, {"lr": 0.5})
    assert "3/3" in stream.getvalue() and "lr: 0.5000" in stream.getvalue()
    assert sys.stdout is not stream
