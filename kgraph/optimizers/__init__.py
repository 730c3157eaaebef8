"""Optimizers with Keras 3's names, defaults and update rules, plus ``get``/``serialize``/``deserialize``."""
from kgraph.optimizers import legacy, schedules
from kgraph.optimizers.adadelta import Adadelta
from kgraph.optimizers.adafactor import Adafactor
from kgraph.optimizers.adagrad import Adagrad
from kgraph.optimizers.adam import Adam
from kgraph.optimizers.adamax import Adamax
from kgraph.optimizers.adamw import AdamW
from kgraph.optimizers.ftrl import Ftrl
from kgraph.optimizers.lamb import Lamb
from kgraph.optimizers.lion import Lion
from kgraph.optimizers.loss_scale_optimizer import LossScaleOptimizer
from kgraph.optimizers.multi_optimizer import MultiOptimizer, OptimizerMap
from kgraph.optimizers.muon import Muon
from kgraph.optimizers.nadam import Nadam
from kgraph.optimizers.optimizer import Optimizer
from kgraph.optimizers.rmsprop import RMSprop
from kgraph.optimizers.schedule_free_adamw import ScheduleFreeAdamW
from kgraph.optimizers.sgd import SGD

_CLASSES = {cls.__name__: cls for cls in (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adafactor, Adamax, Ftrl,
                                          Lamb, Lion, Muon, Nadam, ScheduleFreeAdamW, LossScaleOptimizer,
                                          MultiOptimizer)}
_NAMES = {name.lower(): cls for name, cls in _CLASSES.items()}

def serialize(optimizer):
    """Return ``{"class_name": ..., "config": ...}`` for an optimizer (hyperparameters only)."""
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"Expected an Optimizer instance, received {optimizer!r}.")
    return {"module": "kgraph.optimizers", "class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    """Rebuild a fresh optimizer (no slot state) from ``serialize``'s output or a name.

    custom_objects: ``{class_name: class}`` for user-defined optimizers or schedules.
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(
            f"Expected an optimizer name or a dict with 'class_name' and 'config', received {config!r}."
        )
    class_name = config["class_name"]
    cls = custom_objects.get(class_name) or _CLASSES.get(class_name) or _NAMES.get(str(class_name).lower())
    if cls is None:
        raise ValueError(f"Unknown optimizer {class_name!r}. Expected one of {sorted(_CLASSES)}.")
    return cls.from_config(dict(config.get("config", {})), custom_objects=custom_objects)


def get(identifier):
    """Resolve ``identifier`` to an optimizer instance.

    A class name in any case (``"sgd"``, ``"adam"``, ``"nadam"``, ``"adamax"``, ``"lion"``, ...)
    gives a new optimizer with default arguments; a dict is
    deserialized; an ``Optimizer`` instance is returned as is.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _NAMES.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer {identifier!r}. Valid names are: {sorted(_NAMES)}.")
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        return identifier()
    raise ValueError(
        f"Could not interpret optimizer identifier {identifier!r}: expected a name, a dict or an Optimizer."
    )


__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adafactor",
    "Adamax",
    "Ftrl",
    "Lamb",
    "Lion",
    "Muon",
    "Nadam",
    "ScheduleFreeAdamW",
    "LossScaleOptimizer",
    "MultiOptimizer",
    "OptimizerMap",
    "legacy",
    "schedules",
    "get",
    "serialize",
    "deserialize",
]
