"""BackupAndRestore: an interrupted fit, run again, continues exactly as if it had never stopped."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import callbacks, layers


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    data = datasets.load_digits()
    return (data.data[:960] / 16.0).astype("float32"), data.target[:960]


def _model(seed):
    kgraph.utils.set_random_seed(seed)
    inputs = kgraph.Input(shape=(64,))
    h = layers.Dropout(0.2)(layers.Dense(32, activation="relu")(inputs))  # the global generator
    h = layers.Dropout(0.1, seed=7)(h)  # a layer's own generator
    model = kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))
    model.compile(optimizer=kgraph.optimizers.Adam(learning_rate=0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


class Interrupt(callbacks.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.at = (epoch, batch)
        self.epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise RuntimeError("interrupted")


def _fit(model, x, y, extra):
    return model.fit(x, y, batch_size=64, epochs=5, shuffle=True, verbose=0, validation_split=0.2,
                     callbacks=[callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0)] + extra)


def test_interrupted_fit_resumes_bit_identically(digits, tmp_path):
    x, y = digits
    reference = _model(seed=0)
    full = _fit(reference, x, y, [])
    backup_dir = tmp_path / "backup"
    model = _model(seed=0)
    with pytest.raises(RuntimeError, match="interrupted"):
        _fit(model, x, y, [callbacks.BackupAndRestore(backup_dir), Interrupt(epoch=3, batch=4)])
    assert os.listdir(backup_dir) == ["latest.backup.pkl"]  # one file, no temporary left behind
    restarted = _model(seed=123)  # a fresh process: other initial weights, another random state
    resumed = _fit(restarted, x, y, [callbacks.BackupAndRestore(backup_dir)])
    assert resumed.epoch == [3, 4]
    assert resumed.history["loss"] == full.history["loss"][3:]
    assert resumed.history["val_accuracy"] == full.history["val_accuracy"][3:]
    for a, b in zip(reference.get_weights(), restarted.get_weights()):
        np.testing.assert_array_equal(a, b)  # same arithmetic in the same order: exact
    for a, b in zip(reference.optimizer.variables, restarted.optimizer.variables):
        np.testing.assert_array_equal(a.value, b.value)
    assert restarted.optimizer.iterations == reference.optimizer.iterations
    assert restarted.optimizer.learning_rate == reference.optimizer.learning_rate
    assert not backup_dir.exists()  # delete_checkpoint=True once fit completes


def test_batch_frequency_keep_checkpoint_and_bad_backups(digits, tmp_path):
    x, y = digits
    backup = callbacks.BackupAndRestore(tmp_path / "b", save_freq=3, delete_checkpoint=False)
    model = _model(seed=0)
    with pytest.raises(RuntimeError):
        model.fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[backup, Interrupt(epoch=1, batch=7)])
    resumed = model.fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[backup])
    assert resumed.epoch == [1, 2]  # the batch backup inside epoch 1 restarts epoch 1
    assert (tmp_path / "b" / "latest.backup.pkl").exists()
    again = model.fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[backup])
    assert again.epoch == []  # the kept backup says all 3 epochs are done
    (tmp_path / "b" / "latest.backup.pkl").write_bytes(b"\x80\x05not a pickle")
    with pytest.raises(ValueError, match="truncated or corrupt"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[backup])
    with pytest.raises(ValueError, match="Empty `backup_dir`"):
        callbacks.BackupAndRestore("")
    with pytest.raises(ValueError, match=r"Expected either 'epoch' or a positive integer. Received: save_freq='batch'"):
        callbacks.BackupAndRestore(tmp_path, save_freq="batch")
