"""``model.weights.h5`` of a ``.keras`` archive <-> kgraph variables, by the h5 paths Keras 3 gives them.

Keras stores each layer's own variables at ``<path>/vars/<i>``; a model's layers sit under ``layers/<name>``
where ``<name>`` is the snake-cased class name, numbered per model in layer order (``dense``, ``dense_1``),
and sub-layers under the attribute that holds them (``lstm/cell``, ``bidirectional/forward_layer/cell``,
``multi_head_attention/query_dense``). kgraph layers keep Keras's variable order, so each group lines up. A layer
whose class defines ``save_own_variables``/``load_own_variables`` fills and reads its group itself, and the
optimizer's variables sit under ``optimizer/vars``.
"""
from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

import numpy as np

from kgraph.layers.attention.grouped_query_attention import GroupQueryAttention
from kgraph.layers.attention.multi_head_attention import MultiHeadAttention
from kgraph.layers.layer import Layer
from kgraph.layers.rnn.bidirectional import Bidirectional
from kgraph.layers.rnn.recurrent_base import RecurrentBase
from kgraph.layers.rnn.rnn import RNN
from kgraph.layers.rnn.rnn_cells import StackedRNNCells
from kgraph.saving.keras_archive import WEIGHTS

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    from kgraph.backend.variable import Variable
    from kgraph.models.model import Model

OPTIMIZER_VARS = "optimizer/vars"
_ATTENTION_GROUPS = ("query_dense", "key_dense", "value_dense", "output_dense")
_GROUPED_ATTENTION_LAYERS = ("query_dense", "key_dense", "gate_dense", "value_dense", "output_dense")
# Keras names h5 groups after its Python class, which differs from the exported name for these.
_H5_CLASS_NAMES = {"GroupQueryAttention": "GroupedQueryAttention"}


def h5py_module() -> ModuleType:
    """``h5py``, or an ImportError naming the extra that installs it."""
    try:
        import h5py
    except ImportError:
        raise ImportError("Reading and writing .keras files needs the `h5py` package: "
                          "pip install \"kgraph-engine[keras]\"") from None
    return h5py


def keras_name(class_name: str) -> str:
    """Keras's snake-cased name of a class (``MultiHeadAttention`` -> ``multi_head_attention``)."""
    name = re.sub(r"\W+", "", class_name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _join(prefix, name):
    return f"{prefix}/{name}" if prefix else name


def _own(layer):
    return list(layer._trainable_variables) + list(layer._non_trainable_variables)


def _container(layers, prefix):
    groups, counts = [], {}
    for layer in layers:
        name = keras_name(_class_name(layer))
        counts[name] = counts.get(name, -1) + 1
        groups.extend(_groups(layer, _join(prefix, name if counts[name] == 0 else f"{name}_{counts[name]}")))
    return groups


def _class_name(layer):
    return _H5_CLASS_NAMES.get(type(layer).__name__, type(layer).__name__)


def _groups(layer, prefix):
    """``[(h5 group path, [variables], owner layer or None)]`` of ``layer``, in kgraph's weight order."""
    # owner: the layer whose own group it is; None for the groups of the sub-layers kgraph folds into one layer.
    if hasattr(layer, "nodes_by_depth") or type(layer).__name__ == "Sequential":
        return [(prefix, _own(layer), layer)] + _container(layer.layers, _join(prefix, "layers"))
    if isinstance(layer, RecurrentBase):
        return [(prefix, [], layer), (_join(prefix, "cell"), _own(layer), None)]
    if isinstance(layer, RNN):
        return [(prefix, _own(layer), layer)] + _groups(layer.cell, _join(prefix, "cell"))
    if isinstance(layer, StackedRNNCells):
        return [(prefix, _own(layer), layer)] + _container(layer.cells, _join(prefix, "cells"))
    if isinstance(layer, Bidirectional):
        return [(prefix, _own(layer), layer)] + _groups(layer.forward_layer, _join(prefix, "forward_layer")) + \
            _groups(layer.backward_layer, _join(prefix, "backward_layer"))
    if isinstance(layer, MultiHeadAttention):
        own = _own(layer)
        per = 2 if layer.use_bias else 1
        return [(prefix, [], layer)] + [(_join(prefix, name), own[i * per:(i + 1) * per], None)
                                        for i, name in enumerate(_ATTENTION_GROUPS)]
    if isinstance(getattr(layer, "layer", None), Layer):  # wrappers: TimeDistributed, SpectralNormalization
        return [(prefix, _own(layer), layer)] + _groups(layer.layer, _join(prefix, "layer"))
    if isinstance(layer, GroupQueryAttention):
        return [(prefix, _own(layer), layer)] + [
            group for name in _GROUPED_ATTENTION_LAYERS if hasattr(layer, name)
            for group in _groups(getattr(layer, name), _join(prefix, f"_{name}"))]
    if not type(layer).__module__.startswith("kgraph."):
        return [(prefix, _own(layer), layer)] + _attribute_children(layer, prefix)
    return [(prefix, _own(layer), layer)]


def _attribute_children(layer, prefix):
    """The groups of the layers a user's layer or subclassed model keeps in attributes, at Keras's paths.

    Keras walks a layer's attributes by name, public ones first, each sorted (``_x`` after ``z``), and saves a
    sub-layer under its attribute name and a list, tuple or dict of layers as a container (class names, numbered).
    """
    base = _base_attributes(layer)
    groups, seen = [], set()
    for attr in sorted(vars(layer), key=lambda name: f"~{name}" if name.startswith("_") else name):
        value = vars(layer)[attr]
        if attr in base or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, Layer):
            groups.extend(_groups(value, _join(prefix, attr)))
        elif isinstance(value, (list, tuple, dict)):
            members = list(value.values()) if isinstance(value, dict) else list(value)
            if any(isinstance(member, Layer) for member in members):
                groups.extend(_container([m for m in members if isinstance(m, Layer)], _join(prefix, attr)))
    return groups


def _base_attributes(layer):
    """Attribute names every kgraph Layer (or Model) has: they hold no user sub-layers."""
    from kgraph.graph.tracing import scratch
    from kgraph.models.model import Model
    base = Model if isinstance(layer, Model) else Layer
    if base not in _BASE_ATTRIBUTES:
        with scratch():  # the bare instance's auto-name is given back
            _BASE_ATTRIBUTES[base] = set(vars(base()))
    return _BASE_ATTRIBUTES[base]


_BASE_ATTRIBUTES = {}


def weight_groups(model: Model) -> list[tuple[str, list[Variable]]]:
    """Every h5 group of ``model`` with its variables; a clear error for layers whose paths kgraph cannot name."""
    return [(path, variables) for path, variables, _ in owned_groups(model)]


def owned_groups(model: Model, complete: bool = True) -> list[tuple[str, list[Variable], Layer | None]]:
    """``weight_groups`` with each group's owner; ``complete=False`` skips the check that every weight is placed."""
    groups = _groups(model, "")
    if not complete:
        return groups
    placed = {id(v) for _, variables, _ in groups for v in variables}
    for layer in model._flatten_layers():
        missing = [v for v in _own(layer) if id(v) not in placed]
        if missing:
            raise ValueError(f"kgraph cannot place the weights of layer '{layer.name}' ({type(layer).__name__}) "
                             f"in a .keras file: no Keras h5 path is known for {[v.path for v in missing]}.")
    return groups


def user_hook(layer: Layer | None, name: str) -> Callable[..., Any] | None:
    """The layer's saving hook ``name`` (``save_own_variables``...) where its class, not kgraph's, defines it."""
    method = getattr(type(layer), name, None) if layer is not None else None
    if method is None or getattr(method, "__module__", "").startswith("kgraph."):
        return None
    return getattr(layer, name)


def read_weights(model: Model, payload: bytes | str, source: str) -> list[np.ndarray] | None:
    """Set ``model``'s weights from ``model.weights.h5`` (its bytes or its path), checked first; return the
    optimizer's saved variables."""
    # A layer with its own ``load_own_variables`` gets its group's arrays instead.
    h5py = h5py_module()
    values, read, hooks = {}, set(), []
    try:
        with h5py.File(io.BytesIO(payload) if isinstance(payload, bytes) else payload, "r") as f:
            for path, variables, owner in owned_groups(model):
                hook = user_hook(owner, "load_own_variables")
                if hook is None and not variables:
                    continue
                read.add(_join(path, "vars"))
                group = _follow(f, _join(path, "vars"), source, h5py)
                if hook is not None:
                    values.update((id(v), v.numpy()) for v in variables)
                    hooks.append((hook, _arrays(group, _join(path, "vars"), source, h5py)))
                    continue
                values.update(_layer_values(group, path, variables, source, h5py))
            unread = sorted(name for name in _weight_groups_in(f, h5py) if name not in read)
            if unread:
                raise ValueError(f"Cannot load '{source}': its {WEIGHTS} holds weights the model has no place for, "
                                 f"at {unread[:5]}: the rebuilt model has fewer weights than the saved one (a layer "
                                 "that is not built, or a different architecture).")
            optimizer = _follow(f, OPTIMIZER_VARS, source, h5py)
            saved_optimizer = list(_arrays(optimizer, OPTIMIZER_VARS, source, h5py).values()) \
                if optimizer is not None else None
    except OSError as err:
        raise ValueError(f"Cannot load '{source}': its {WEIGHTS} is not a readable HDF5 file ({err}).") from None
    model.set_weights([values[id(v)] for v in model.weights])
    for hook, arrays in hooks:
        hook(arrays)
    return saved_optimizer


def _layer_values(group, path, variables, source, h5py):
    """``{id(variable): array}`` of one layer's ``vars`` group, its keys ``0..n-1`` matching its variables."""
    keys = sorted(group.keys(), key=_index) if isinstance(group, h5py.Group) else []
    if keys != [str(i) for i in range(len(variables))]:
        raise ValueError(f"Cannot load '{source}': layer weights at '{_join(path, 'vars')}' do not match the model: "
                         f"expected {len(variables)} weights ({[v.path for v in variables]}). Received: {keys}")
    return {id(variable): _dataset(_follow(group, key, source, h5py), variable, f"{path}/vars/{key}", source, h5py)
            for key, variable in zip(keys, variables)}


def _arrays(group, path, source, h5py):
    """Every array of a ``vars`` group by key, in Keras's order (``0, 1, ..., 10``), read as plain NumPy arrays."""
    if group is None:
        return {}
    if not isinstance(group, h5py.Group):
        raise ValueError(f"Cannot load '{source}': '{path}' in {WEIGHTS} must be a group of arrays.")
    out = {}
    for key in sorted(group.keys(), key=lambda k: (_index(k) < 0, _index(k), k)):
        dataset = _follow(group, key, source, h5py)
        if not isinstance(dataset, h5py.Dataset) or dataset.dtype.kind not in "biuf":
            raise ValueError(f"Cannot load '{source}': '{path}/{key}' in {WEIGHTS} must be a numeric array.")
        if dataset.is_virtual or dataset.external:
            raise ValueError(f"Refusing to load '{source}': '{path}/{key}' in {WEIGHTS} keeps its data in other "
                             "files.")
        out[key] = np.asarray(dataset[()])
    return out


def _weight_groups_in(f, h5py):
    """The ``.../vars`` groups of the file that hold at least one weight (the optimizer's state aside)."""
    found = []

    def visit(name, node):
        if name.endswith("vars") and name.split("/")[-1] == "vars" and isinstance(node, h5py.Group) and len(node) \
                and not name.startswith("optimizer/"):
            found.append(name)
    f.visititems(visit)
    return found


def _follow(node, path, source, h5py):
    """The object at ``path`` under ``node`` (None if absent), through hard links only: HDF5 soft and external
    links could point anywhere, other files on disk included."""
    for part in path.split("/"):
        link = node.get(part, getlink=True)
        if link is None:
            return None
        if not isinstance(link, h5py.HardLink):
            where = f"{node.name.rstrip('/')}/{part}".lstrip("/")
            raise ValueError(f"Refusing to load '{source}': '{where}' in {WEIGHTS} is a link of type "
                             f"{type(link).__name__}; a .keras weights file holds plain groups and arrays only.")
        node = node[part]
    return node


def _index(key):
    return int(key) if key.isdigit() else -1


def _dataset(dataset, variable, path, source, h5py):
    if not isinstance(dataset, h5py.Dataset) or dataset.dtype.kind not in "biuf":
        raise ValueError(f"Cannot load '{source}': '{path}' must be a numeric array for weight '{variable.path}'.")
    if dataset.is_virtual or dataset.external:
        raise ValueError(f"Refusing to load '{source}': '{path}' in {WEIGHTS} keeps its data in other files.")
    if tuple(dataset.shape) != tuple(variable.shape):
        raise ValueError(f"Cannot load '{source}': weight '{variable.path}' has shape {tuple(variable.shape)}, "
                         f"but '{path}' in the file has shape {tuple(dataset.shape)}.")
    return np.asarray(dataset[()], dtype=variable.dtype)


def weights_bytes(model: Model, optimizer_variables: list[np.ndarray] | None = None) -> bytes:
    """The bytes of a ``model.weights.h5`` that Keras 3 reads, with the optimizer's variables (if given)."""
    # A layer's own ``save_own_variables`` fills its group; the optimizer's go under ``optimizer/vars``.
    h5py = h5py_module()
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        f.create_group("vars")
        for path, variables, owner in owned_groups(model):
            group = f.require_group(_join(path, "vars"))
            hook = user_hook(owner, "save_own_variables")
            store = {} if hook is not None else {str(i): v.numpy() for i, v in enumerate(variables)}
            if hook is not None:
                hook(store)
            for key, value in store.items():
                group.create_dataset(str(key), data=np.asarray(value))
        if optimizer_variables is not None:
            _write_arrays(f.require_group(OPTIMIZER_VARS), optimizer_variables)
            if _scales_loss(model):
                # Keras also stores a LossScaleOptimizer's inner optimizer on its own, after its four variables.
                _write_arrays(f.require_group("optimizer/inner_optimizer/vars"), optimizer_variables[4:])
    return buffer.getvalue()


def _write_arrays(group, arrays):
    for i, value in enumerate(arrays):
        group.create_dataset(str(i), data=np.asarray(value))


def _scales_loss(model):
    from kgraph.optimizers import LossScaleOptimizer
    return isinstance(getattr(model, "optimizer", None), LossScaleOptimizer)
