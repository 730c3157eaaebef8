"""BackupAndRestore: resume an interrupted ``fit`` from its last backup."""
import os
import pickle
import shutil

import numpy as np

from kgraph import random, saving
from kgraph.callbacks.callback import Callback

FORMAT = "kgraph-backup"


def _layer_generators(model):
    """The private random generators of layers with a fixed ``seed`` (dropout), in layer order."""
    return [layer._rng for layer in model._flatten_layers() if getattr(layer, "_rng", None) is not None]


class BackupAndRestore(Callback):
    """Back up the training state to ``backup_dir`` and restore it when ``fit`` starts again.

    The state is the model's weights, the optimizer's slots, iterations and
    learning rate, the random generators (shuffling, dropout) and the epoch
    counter, in one file written atomically (a crash never leaves half a
    backup). A ``fit`` interrupted after epoch ``k`` and run again continues at
    epoch ``k + 1`` exactly as an uninterrupted run would, as long as the data
    is the same and each epoch is whole passes over it (no ``steps_per_epoch``
    cutting a pass, which a restart cannot replay).

    backup_dir: directory for the backup, used by this callback only.
    save_freq: ``"epoch"`` (a backup after every epoch), or a number of
        batches: backups are then also written every ``save_freq`` batches, and
        a restart from one of those repeats its epoch from the start with the
        backed-up weights (as in Keras; not identical to an uninterrupted run).
    delete_checkpoint: remove the backup when ``fit`` finishes.
    """

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError(f"Empty `backup_dir` argument passed. Received: backup_dir={backup_dir!r}")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 1):
            raise ValueError("Invalid value for argument `save_freq`. Expected either 'epoch' or a positive "
                             f"integer. Received: save_freq={save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self._path = os.path.join(self.backup_dir, "latest.backup.pkl")
        self._current_epoch = 0
        self._batches_since_save = 0

    def on_train_begin(self, logs=None):
        if not os.path.exists(self._path):
            return
        with open(self._path, "rb") as f:
            state = saving.safe_loads(f.read(), self._path)
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise ValueError(f"Cannot restore from '{self._path}': it is not a kgraph backup. Received a file of "
                             f"format {state.get('format') if isinstance(state, dict) else type(state).__name__!r}.")
        self._restore(state)

    def _restore(self, state):
        model, optimizer = self.model, self.model.optimizer
        model.set_weights(state["weights"])
        optimizer.set_slot_state(model.trainable_weights, state["slots"], state["iterations"])
        if state["learning_rate"] is not None:
            optimizer.learning_rate = state["learning_rate"]
        random.generator().bit_generator.state = state["generator"]
        generators = _layer_generators(model)
        if len(generators) != len(state["layer_generators"]):
            raise ValueError(f"Cannot restore from '{self._path}': the backup holds {len(state['layer_generators'])} "
                             f"seeded layer generators, model '{model.name}' has {len(generators)}.")
        for rng, rng_state in zip(generators, state["layer_generators"]):
            rng.bit_generator.state = rng_state
        model._initial_epoch = state["epoch"]
        self._current_epoch = state["epoch"]

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch
        self._batches_since_save = 0

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        self._batches_since_save += 1
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save(self._current_epoch)

    def on_epoch_end(self, epoch, logs=None):
        self._save(epoch + 1)

    def _save(self, epoch):
        model, optimizer = self.model, self.model.optimizer
        index = {id(v): i for i, v in enumerate(model.trainable_weights)}
        learning_rate = optimizer._learning_rate
        state = {
            "format": FORMAT, "epoch": epoch,
            "weights": [np.array(w) for w in model.get_weights()],
            "slots": optimizer.get_slot_state(index), "iterations": int(optimizer._step_counter().value),
            "learning_rate": float(learning_rate) if isinstance(learning_rate, (int, float)) else None,
            "generator": random.generator().bit_generator.state,
            "layer_generators": [rng.bit_generator.state for rng in _layer_generators(model)],
        }
        os.makedirs(self.backup_dir, exist_ok=True)
        saving.atomic_write(self._path, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.isdir(self.backup_dir):
            shutil.rmtree(self.backup_dir)
