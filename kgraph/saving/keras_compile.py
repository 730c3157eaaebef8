"""A model's compile configuration as Keras 3 writes it (``compile_config``) and back, and its optimizer's state as
the variables Keras saves under ``optimizer/`` of a weights file.

Keras orders an optimizer's variables as: ``iterations``, ``learning_rate`` (unless it is a schedule), then each
group of slots its ``build`` adds, variable by variable (with ``use_ema``, first every moving average; Adam: momentum
and velocity interleaved per variable, then ``velocity_hat`` with amsgrad; RMSprop: every velocity, then every
momentum, then every average gradient): the optimizer's ``state_groups()``, skipping a slot a variable does not have
(``initial_state`` None), then its ``trailing_variables()`` (Nadam's running product of momentum decays).
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from kgraph import optimizers
from kgraph.saving.keras_config_reader import constructor_arguments
from kgraph.saving.registration import CustomObjectScope, custom_objects_in_effect
from kgraph.saving.serialization_lib import deserialize_keras_object, serialize_dict, serialize_keras_object

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from kgraph.models.model import Model
    from kgraph.optimizers.optimizer import Optimizer
    from kgraph.saving.registration import CustomObjects

# Keras optimizer arguments that change nothing at these values.
_INERT = {("amsgrad", False)}


def compile_config(model: Model) -> dict[str, Any]:
    """Keras's ``compile_config`` of a compiled model; the model's own ``get_compile_config()`` where it has one."""
    from kgraph.trainers.trainer import Trainer
    if type(model).get_compile_config is not Trainer.get_compile_config:  # the user's own
        return serialize_dict(model.get_compile_config())
    return default_compile_config(model)


def default_compile_config(model: Model) -> dict[str, Any]:
    """What Keras's ``Model.get_compile_config()`` returns: the arguments ``compile`` was given, serialized."""
    config = model._compile_config
    return {"optimizer": serialize_keras_object(model.optimizer), "loss": serialize_keras_object(config["loss"]),
            "loss_weights": serialize_keras_object(config["loss_weights"]),
            "metrics": serialize_keras_object(config["metrics"]), "weighted_metrics": None, "run_eagerly": False,
            "steps_per_execution": 1, "jit_compile": False}


def compile_from_config(model: Model, config: Mapping[str, Any], custom_objects: CustomObjects | None = None) -> None:
    """``model.compile`` as ``config`` says; the model's own ``compile_from_config(config)`` where it has one."""
    from kgraph.trainers.trainer import Trainer
    if type(model).compile_from_config is not Trainer.compile_from_config:  # the user's own
        model.compile_from_config(config)
    elif type(model).compile is not Trainer.compile:
        model.compile_from_config(config)  # Keras's default: warns that the custom compile() is not called
    else:
        default_compile_from_config(model, config, custom_objects)


def default_compile_from_config(model: Model, config: Mapping[str, Any],
                                custom_objects: CustomObjects | None = None) -> None:
    """What Keras's ``Model.compile_from_config(config)`` does: deserialize the arguments, then ``compile``."""
    objects = custom_objects_in_effect(custom_objects)
    with CustomObjectScope(objects):
        arguments = {key: _compile_argument(config.get(key), objects)
                     for key in ("optimizer", "loss", "metrics", "loss_weights") if config.get(key) is not None}
    model.compile(**arguments)


def restore_compile(model: Model, config: Mapping[str, Any] | None, source: str,
                    custom_objects: CustomObjects | None) -> bool:
    """Compile ``model`` from a saved ``compile_config``; warn and leave it uncompiled where kgraph cannot."""
    if not config:
        return False
    try:
        compile_from_config(model, config, custom_objects)
    except (ValueError, TypeError, KeyError) as err:
        warnings.warn(f"'{source}' is loaded uncompiled: kgraph cannot use its compile configuration ({err}).",
                      stacklevel=3)
        return False
    return True


def _compile_argument(spec, objects):
    """Names stay names (``compile`` resolves them); Keras objects, or lists/dicts of them, are deserialized."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, (list, tuple)):
        return [_compile_argument(v, objects) for v in spec]
    if isinstance(spec, dict) and not ("class_name" in spec and "config" in spec):
        return {k: _compile_argument(v, objects) for k, v in spec.items()}
    return deserialize_keras_object(spec, objects)


def optimizer_from_keras(class_name: str, config: Mapping[str, Any], custom_objects: CustomObjects) -> Optimizer:
    """A kgraph optimizer from a Keras optimizer config; arguments kgraph lacks must be at values that are inert."""
    if class_name == "LossScaleOptimizer" and "LossScaleOptimizer" not in custom_objects:
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if not (isinstance(inner, dict) and "class_name" in inner):
            raise ValueError(f"LossScaleOptimizer's `inner_optimizer` must be an optimizer config. Received: {inner!r}")
        return optimizers.LossScaleOptimizer(
            optimizer_from_keras(inner["class_name"], inner.get("config", {}), custom_objects), **config)
    if class_name in ("MultiOptimizer", "OptimizerMap") and class_name not in custom_objects:
        return getattr(optimizers, class_name).from_config(dict(config), custom_objects)
    cls = custom_objects.get(class_name) or type(optimizers.get(class_name))
    accepted = constructor_arguments(cls)
    kept = {}
    for key, value in config.items():
        if key in accepted:
            kept[key] = _plain(value)
        elif value is not None and (key, value) not in _INERT:
            raise ValueError(f"optimizer {class_name} uses `{key}={value!r}`, which kgraph does not support")
    return optimizers.deserialize({"class_name": class_name, "config": kept}, custom_objects)


def _plain(value):
    """A Keras object (a learning-rate schedule) as kgraph's ``{"class_name", "config"}``."""
    if isinstance(value, dict) and "class_name" in value:
        return {"class_name": value["class_name"], "config": value.get("config", {})}
    return value


def _leading_variables(optimizer):
    """``iterations``, and ``learning_rate`` where it is a number (Keras keeps a schedule out of its variables)."""
    out = [optimizer._step_counter().numpy().astype("int64")]
    if isinstance(optimizer._learning_rate, float):
        out.append(np.asarray(optimizer.learning_rate, dtype="float32"))
    return out


def optimizer_variables(model: Model) -> list[np.ndarray]:
    """The optimizer's state as Keras's ``optimizer.variables`` of the same model, in Keras's order (a
    LossScaleOptimizer's: its own iteration count (0, as Keras leaves it: its ``iterations`` is its inner
    optimizer's), learning rate 0, step counter and scale, then its inner optimizer's)."""
    optimizer, trainable = model.optimizer, list(model.trainable_weights)
    if isinstance(optimizer, optimizers.LossScaleOptimizer):
        own = [optimizer._iterations.numpy().astype("int64"), np.asarray(0.0, dtype="float32"),
               np.asarray(optimizer.step_counter, dtype="int64"), np.asarray(optimizer.dynamic_scale, "float32")]
        return own + _variables_of(optimizer.inner_optimizer, trainable)
    return _variables_of(optimizer, trainable)


def inner_optimizer_groups(model: Model) -> dict[str, list[np.ndarray]]:
    """For a MultiOptimizer, each inner optimizer's variables under the group Keras also writes them to,
    ``optimizer/optimizers/<name>/vars`` (its ``optimizer/vars`` holds them all already); else nothing."""
    optimizer, trainable = model.optimizer, list(model.trainable_weights)
    if not isinstance(optimizer, optimizers.MultiOptimizer):
        return {}
    return {f"optimizer/optimizers/{inner.name}/vars": _variables_of(inner, optimizer.owned_by(inner, trainable))
            for inner in optimizer.optimizers}


def _variables_of(optimizer, trainable):
    if isinstance(optimizer, optimizers.MultiOptimizer):
        # Keras's: its own iteration count and learning rate (0), then each inner optimizer's variables.
        own = [optimizer._iterations.numpy().astype("int64"), np.asarray(0.0, dtype="float32")]
        return own + [value for inner in optimizer.optimizers
                      for value in _variables_of(inner, optimizer.owned_by(inner, trainable))]
    state = dict((position, slots) for position, slots in
                 optimizer.get_slot_state({id(v): i for i, v in enumerate(trainable)}))
    out = _leading_variables(optimizer)
    for group in optimizer.state_groups():
        for i, variable in enumerate(trainable):
            for name in group:
                initial = optimizer.initial_state(name, variable)
                if initial is not None:
                    out.append(np.asarray(state[i][name] if i in state else initial))
    return out + [np.asarray(value) for value in optimizer.trailing_variables()]


def set_optimizer_variables(model: Model, values: Sequence[np.ndarray], source: str) -> None:
    """Restore ``optimizer_variables`` output (Keras's or kgraph's); warn and keep a fresh state where it differs."""
    optimizer, trainable = model.optimizer, list(model.trainable_weights)
    if isinstance(optimizer, optimizers.LossScaleOptimizer):
        if len(values) < 4:
            warnings.warn(f"'{source}': the optimizer state is not restored: LossScaleOptimizer '{optimizer.name}' "
                          f"keeps 4 variables of its own, and the file holds {len(values)}.", stacklevel=3)
            return
        optimizer.step_counter, optimizer.dynamic_scale = int(values[2]), float(values[3])
        values, optimizer = values[4:], optimizer.inner_optimizer
    _set_variables_of(optimizer, trainable, values, source)


def _set_multi_variables(optimizer, trainable, values, source):
    """A MultiOptimizer's: its own two variables, then each inner optimizer's, with slots (built) or without."""
    parts = [(inner, optimizer.owned_by(inner, trainable)) for inner in optimizer.optimizers]
    leading = [len(_leading_variables(inner)) for inner, _ in parts]
    full = [len(_variables_of(inner, owned)) for inner, owned in parts]
    sizes = full if len(values) == 2 + sum(full) else leading if len(values) == 2 + sum(leading) else None
    if sizes is None:
        warnings.warn(f"'{source}': the optimizer state is not restored: MultiOptimizer '{optimizer.name}' has "
                      f"{2 + sum(full)} variables for this model, and the file holds {len(values)}.", stacklevel=3)
        return
    optimizer.build(trainable)
    start = 2
    for (inner, owned), size in zip(parts, sizes):
        _set_variables_of(inner, owned, values[start:start + size], source)
        start += size
    optimizer._iterations.assign(int(values[0]))


def _set_variables_of(optimizer, trainable, values, source):
    if isinstance(optimizer, optimizers.MultiOptimizer):
        _set_multi_variables(optimizer, trainable, values, source)
        return
    leading = len(_leading_variables(optimizer))
    layout = [(i, name, optimizer.initial_state(name, variable)) for group in optimizer.state_groups()
              for i, variable in enumerate(trainable) for name in group]
    layout = [(i, name, initial) for i, name, initial in layout if initial is not None]
    expected = leading + len(layout) + len(optimizer.trailing_variables())
    if len(values) not in (leading, expected):
        warnings.warn(f"'{source}': the optimizer state is not restored: optimizer '{optimizer.name}' has {expected} "
                      f"variables for this model, and the file holds {len(values)}.", stacklevel=3)
        return
    slots = {i: {} for i in range(len(trainable))}
    for (i, name, initial), value in zip(layout if len(values) == expected else [], values[leading:]):
        slots[i][name] = value
        if tuple(np.shape(value)) != initial.shape:
            warnings.warn(f"'{source}': the optimizer state is not restored: its {name} for weight "
                          f"'{trainable[i].path}' has shape {tuple(np.shape(value))}, expected "
                          f"{initial.shape}.", stacklevel=3)
            return
    if leading == 2 and np.float32(optimizer.learning_rate) != np.float32(values[1]):
        optimizer.learning_rate = float(values[1])  # changed since compile (a callback); else the exact value stays
    state = [[i, group] for i, group in slots.items() if group]
    optimizer.set_slot_state(trainable, state, iterations=int(values[0]))
