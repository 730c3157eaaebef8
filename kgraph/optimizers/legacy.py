"""``keras.optimizers.legacy``: Keras 2's optimizers, which need TensorFlow (``tf_keras``).

As in Keras 3, the names exist and creating any of them raises ``ImportError`` with the reason.
"""

_REASON = ("`keras.optimizers.legacy` is not supported in Keras 3, nor in kgraph: the legacy optimizers are "
           "Keras 2's, which run on TensorFlow only. Use the optimizer of the same name in `kgraph.optimizers` "
           "(or, with TensorFlow, install the `tf_keras` package and set `TF_USE_LEGACY_KERAS=True`).")


class _LegacyOptimizer:
    def __init__(self, *args, **kwargs):
        raise ImportError(_REASON)


class Optimizer(_LegacyOptimizer):
    """Keras 2's optimizer base class (not available: needs TensorFlow)."""


class SGD(_LegacyOptimizer):
    """Keras 2's SGD (not available: needs TensorFlow)."""


class Adam(_LegacyOptimizer):
    """Keras 2's Adam (not available: needs TensorFlow)."""


class Adagrad(_LegacyOptimizer):
    """Keras 2's Adagrad (not available: needs TensorFlow)."""


class Ftrl(_LegacyOptimizer):
    """Keras 2's Ftrl (not available: needs TensorFlow)."""


class RMSprop(_LegacyOptimizer):
    """Keras 2's RMSprop (not available: needs TensorFlow)."""


__all__ = ["Adagrad", "Adam", "Ftrl", "Optimizer", "RMSprop", "SGD"]
