"""``SwapEMAWeights``: evaluate (and optionally checkpoint) with the optimizer's moving averages of the weights."""
from kgraph.callbacks.callback import Callback


class SwapEMAWeights(Callback):
    """Swaps the model's trainable weights with their moving averages (an optimizer made with ``use_ema=True``)
    for evaluation and prediction, and swaps them back after, with Keras 3's hooks.

    The swap is in place: weights and averages trade values, so nothing is copied beyond one variable at a time.
    A ``LossScaleOptimizer``'s inner optimizer is used; of a ``MultiOptimizer``, every inner optimizer with
    ``use_ema`` (at least one must have it). As Keras's ``evaluate`` builds the optimizer before its callbacks run,
    an optimizer not yet built is built on the model's trainable weights at ``on_test_begin`` (its averages start
    at zeros until the first training step).

    As Keras 3.15, ``on_predict_end`` swaps back only when the averages are not in the model, which is never the
    case after ``on_predict_begin``: after ``predict`` the model keeps the averages until the end of the next
    evaluation (or the next epoch's start, with ``swap_on_epoch``).

    swap_on_epoch: also swap at ``on_epoch_end`` (so that later callbacks, ``ModelCheckpoint`` placed after this
        one, see the averages) and back at the next ``on_epoch_begin``. At the end of the last epoch the averages
        are copied back from the model, so that ``fit``'s final ``finalize_variable_values`` leaves the model
        with the averages.
    """

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = swap_on_epoch
        self._ema_weights_in_model = False

    def _ema_optimizers(self, build=False):
        """The optimizers whose averages to use; raises Keras's errors where there are none."""
        model = self.model
        optimizer = getattr(model, "optimizer", None)
        if optimizer is None:
            raise ValueError("SwapEMAWeights needs a model compiled with an optimizer made with `use_ema=True`.")
        if build and not optimizer.built and model.trainable_weights:
            optimizer.build(model.trainable_weights)
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer's
        if hasattr(optimizer, "optimizers"):  # a MultiOptimizer's inner optimizers
            chosen = [inner for inner in optimizer.optimizers if getattr(inner, "use_ema", False)]
            if not chosen:
                raise ValueError("SwapEMAWeights must be used when at least one inner optimizer has `use_ema=True` "
                                 "set. Received a MultiOptimizer with all inner optimizers having `use_ema=False`.")
        else:
            chosen = [optimizer]
        for inner in chosen:
            if not hasattr(inner, "_model_variables_moving_average"):
                reason = " (the optimizer is not built yet: it has taken no step)" if inner.use_ema else ""
                raise ValueError("SwapEMAWeights must be used when `use_ema=True` is set on the optimizer. "
                                 f"Received: use_ema={inner.use_ema}{reason}")
        return chosen

    def _swap_variables(self, build=False):
        for optimizer in self._ema_optimizers(build):
            for variable, average in zip(optimizer._trainable_variables, optimizer._model_variables_moving_average):
                if average is None:
                    continue
                weight = variable.numpy()
                variable.assign(average.value)
                average.assign(weight)

    def _finalize_ema_values(self):
        for optimizer in self._ema_optimizers():
            for variable, average in zip(optimizer._trainable_variables, optimizer._model_variables_moving_average):
                if average is not None:
                    average.assign(variable.value)

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch and self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch and not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True
            # The averages are in the model now; at the end of training `finalize_variable_values` copies the
            # optimizer's averages into the model, so they must hold the averages again, not the raw weights.
            if epoch == self.params.get("epochs", 0) - 1:
                self._finalize_ema_values()

    def on_test_begin(self, logs=None):
        if not self._ema_weights_in_model:
            self._swap_variables(build=True)
            self._ema_weights_in_model = True

    def on_test_end(self, logs=None):
        if self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False

    def on_predict_begin(self, logs=None):
        if not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True

    def on_predict_end(self, logs=None):
        if not self._ema_weights_in_model:  # Keras 3.15's condition (see the class notes)
            self._swap_variables()
            self._ema_weights_in_model = False
