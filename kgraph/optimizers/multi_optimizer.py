"""Keras's ``OptimizerMap`` and ``MultiOptimizer``: each variable updated by the optimizer chosen for it."""
import re
from collections.abc import MutableMapping

from kgraph.optimizers.loss_scale_optimizer import LossScaleOptimizer
from kgraph.optimizers.optimizer import Optimizer, _checked_count


def _check_inner(optimizer, what):
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"{what} must be a kgraph Optimizer instance. Received: {optimizer!r}")
    if isinstance(optimizer, LossScaleOptimizer):
        raise ValueError("LossScaleOptimizer cannot be used inside a MultiOptimizer.")
    if isinstance(optimizer, MultiOptimizer):
        raise ValueError("MultiOptimizer cannot be used inside a MultiOptimizer.")


class OptimizerMap(MutableMapping):
    """Optimizers by variable path: an exact key first, else the one key that ``re.fullmatch``es the path
    (more than one is an error), else ``default_optimizer``. Calling it on a variable looks up its path."""

    def __init__(self, default_optimizer, optimizer_map=None):
        if not isinstance(default_optimizer, Optimizer):
            raise TypeError(f"default_optimizer must be a Keras Optimizer instance. Received: {default_optimizer}")
        if optimizer_map is not None and not isinstance(optimizer_map, dict):
            raise TypeError(f"optimizer_map must be a dictionary. Received: {optimizer_map}")
        self._default_optimizer = default_optimizer
        self._optimizer_map = optimizer_map or {}

    @property
    def default_optimizer(self):
        return self._default_optimizer

    def __getitem__(self, key):
        if key in self._optimizer_map:
            return self._optimizer_map[key]
        matching = [pattern for pattern in self._optimizer_map if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"Multiple optimizers assigned to variable {key}.")
        return self._optimizer_map[matching[0]] if matching else self._default_optimizer

    def __setitem__(self, key, optimizer):
        if key in self._optimizer_map:
            raise ValueError(f"'{key}' already exists in the OptimizerMap with value {self._optimizer_map[key]}. "
                             "Please make sure to not use duplicated keys.")
        if not isinstance(key, str):
            raise ValueError(f"key must be a string. Received: {key}")
        _check_inner(optimizer, "optimizer")
        self._optimizer_map[key] = optimizer

    def __delitem__(self, key):
        del self._optimizer_map[key]

    def __len__(self):
        return len(self._optimizer_map)

    def __iter__(self):
        return iter(self._optimizer_map)

    def __call__(self, variable):
        return self[getattr(variable, "path", variable.name)]

    def get_config(self):
        from kgraph.saving.serialization_lib import serialize_keras_object
        return {"default_optimizer": serialize_keras_object(self._default_optimizer),
                "optimizer_map": {key: serialize_keras_object(opt) for key, opt in self._optimizer_map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(_optimizer(config["default_optimizer"], custom_objects),
                   {key: _optimizer(spec, custom_objects) for key, spec in (config.get("optimizer_map") or {}).items()})


def _optimizer(spec, custom_objects):
    if isinstance(spec, Optimizer):
        return spec
    from kgraph.saving.serialization_lib import deserialize_keras_object
    return deserialize_keras_object(spec, custom_objects)


class MultiOptimizer(Optimizer):
    """Delegates each variable to the optimizer ``optimizer_map(variable)`` gives (an ``OptimizerMap`` or a
    callable). Each inner optimizer keeps its own slots, step count and learning rate (``optimizers``); this one
    counts the steps applied. As in Keras, ``learning_rate`` is not available on it.

    loss_scale_factor: as Keras, it replaces every inner optimizer's own (None included): a train step scales the
        loss by it (``scale_loss``) and each inner optimizer divides its gradients by it.
    """

    def __init__(self, optimizer_map, loss_scale_factor=None, name=None):
        if not callable(optimizer_map):
            raise TypeError(f"optimizer_map must be an OptimizerMap or a callable. Received: {optimizer_map!r}")
        super().__init__(learning_rate=0.0, loss_scale_factor=loss_scale_factor, name=name)
        self._learning_rate = None  # the inner optimizers' learning rates are theirs alone
        self._optimizer_map = optimizer_map
        self._inner_optimizers = []
        for optimizer in list(getattr(optimizer_map, "values", list)()) + \
                [getattr(optimizer_map, "default_optimizer", None)]:
            if optimizer is not None and not any(optimizer is o for o in self._inner_optimizers):
                optimizer.loss_scale_factor = self.loss_scale_factor
                self._inner_optimizers.append(optimizer)
        self._owner = {}  # id(variable) -> index of its inner optimizer

    @property
    def loss_scale_factor(self):
        return self.__dict__.get("_loss_scale_factor")

    @loss_scale_factor.setter
    def loss_scale_factor(self, value):
        self._loss_scale_factor = value
        for optimizer in self.__dict__.get("_inner_optimizers", ()):
            optimizer.loss_scale_factor = value

    @property
    def optimizers(self):
        return self._inner_optimizers

    @property
    def learning_rate(self):
        raise AttributeError("Learning rate cannot be accessed on a MultiOptimizer. "
                             "Access the learning rate on the individual sub-optimizers instead.")

    @learning_rate.setter
    def learning_rate(self, value):
        raise AttributeError("Learning rate cannot be set on a MultiOptimizer. "
                             "Set the learning rate on the individual sub-optimizers instead.")

    def _groups(self, variables):
        """``variables`` split by inner optimizer (choosing and checking the optimizer of new ones)."""
        groups = {}
        for variable in variables:
            index = self._owner.get(id(variable))
            if index is None:
                optimizer = self._optimizer_map(variable)
                _check_inner(optimizer, f"The optimizer for variable {getattr(variable, 'path', variable.name)}")
                if not any(optimizer is o for o in self._inner_optimizers):
                    optimizer.loss_scale_factor = self.loss_scale_factor
                    self._inner_optimizers.append(optimizer)
                index = self._owner[id(variable)] = next(
                    i for i, o in enumerate(self._inner_optimizers) if o is optimizer)
            groups.setdefault(index, []).append(variable)
        return groups

    def build(self, variables):
        variables = [v for v in variables if id(v) not in self._lookup()]
        for index, group in self._groups(variables).items():
            self._inner_optimizers[index].build(group)
        for variable in variables:
            self._lookup()[id(variable)] = len(self._trainable_variables)
            self._trainable_variables.append(variable)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._owner = {id(v): i for i, o in enumerate(self._inner_optimizers) for v in o._trainable_variables}

    @property
    def variables(self):
        return [self._iterations] + [v for optimizer in self._inner_optimizers for v in optimizer.variables]

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `trainable_variables`, the optimizer must already "
                                 "be built on a list of variables. Call `optimizer.build(trainable_variables)` first.")
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"Gradients must match trainable variables one-to-one. Received {len(grads)} "
                             f"gradients and {len(trainable_variables)} variables.")
        if not grads:
            return
        if all(g is None for g in grads):
            self._filter_empty_gradients(grads, trainable_variables)  # raises, naming the variables
        self.build(trainable_variables)
        gradient_of = {id(v): g for g, v in zip(grads, trainable_variables)}
        for index, group in self._groups(trainable_variables).items():
            if any(gradient_of[id(v)] is not None for v in group):
                self._inner_optimizers[index].apply([gradient_of[id(v)] for v in group], group)
        self._iterations.assign(self._iterations.value + 1)

    def get_slot_state(self, index):
        return [entry for optimizer in self._inner_optimizers for entry in optimizer.get_slot_state(index)]

    def set_slot_state(self, variables, state, iterations=None):
        """Restore ``get_slot_state`` output; ``iterations`` sets this optimizer's count and each inner one's."""
        variables = list(variables)
        self.build(variables)
        for k, optimizer in enumerate(self._inner_optimizers):
            mine = [p for p, v in enumerate(variables) if self._owner.get(id(v)) == k]
            local = {p: j for j, p in enumerate(mine)}
            own = [[local[p], slots] for p, slots in state if p in local]
            optimizer.set_slot_state([variables[p] for p in mine], own, iterations)
        if iterations is not None:
            self._iterations.assign(_checked_count(iterations))

    def finalize_variable_values(self, var_list):
        """Each inner optimizer's ``finalize_variable_values`` on the variables of ``var_list`` it updates."""
        groups = {}
        for variable in var_list:
            index = self._owner.get(id(variable))
            if index is None:
                raise ValueError(f"Variable '{getattr(variable, 'path', variable.name)}' is not one MultiOptimizer "
                                 f"'{self.name}' was built on.")
            groups.setdefault(index, []).append(variable)
        for index, variables in groups.items():
            self._inner_optimizers[index].finalize_variable_values(variables)

    def owned_by(self, optimizer, variables):
        """The variables of ``variables`` that ``optimizer`` (one of ``optimizers``) updates, in their order."""
        groups = self._groups(variables)
        index = next(i for i, o in enumerate(self._inner_optimizers) if o is optimizer)
        return groups.get(index, [])

    def get_config(self):
        from kgraph.saving.serialization_lib import serialize_keras_object
        return {"optimizer_map": serialize_keras_object(self._optimizer_map),
                "loss_scale_factor": self.loss_scale_factor,
                "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        spec = config.pop("optimizer_map")
        if isinstance(spec, dict) and spec.get("class_name") == "OptimizerMap" and "OptimizerMap" not in (
                custom_objects or {}):
            optimizer_map = OptimizerMap.from_config(spec.get("config", {}), custom_objects)
        else:
            optimizer_map = _optimizer(spec, custom_objects) if isinstance(spec, dict) else spec
        return cls(optimizer_map, **config)

    def __repr__(self):
        return f"<MultiOptimizer name={self.name!r} optimizers={self._inner_optimizers!r}>"
