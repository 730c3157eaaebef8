"""LambdaCallback: a callback assembled from plain functions."""
from kgraph.callbacks.callback import Callback


class LambdaCallback(Callback):
    """Each given function replaces the hook of the same name.

    ``on_epoch_begin``/``on_epoch_end`` take ``(epoch, logs)``,
    ``on_train_batch_begin``/``on_train_batch_end`` take ``(batch, logs)``,
    ``on_train_begin``/``on_train_end`` take ``(logs)``. Other hooks
    (e.g. ``on_test_end``) can be passed as keyword arguments.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        hooks = {
            "on_epoch_begin": on_epoch_begin,
            "on_epoch_end": on_epoch_end,
            "on_train_begin": on_train_begin,
            "on_train_end": on_train_end,
            "on_train_batch_begin": on_train_batch_begin,
            "on_train_batch_end": on_train_batch_end,
            **kwargs,
        }
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)
