"""Layer: the unit of computation, called eagerly on arrays or symbolically on KerasTensors."""
import contextvars
import inspect
import weakref

import numpy as np

from kgraph import backend, dtype_policies, tree
from kgraph.backend import autodiff as _autodiff
from kgraph.backend.name_scope import layer_scope, weight_path
from kgraph.backend.variable import Variable
from kgraph.graph.keras_tensor import KerasTensor, shape_of
from kgraph.graph.node import Node, _unique
from kgraph.graph.operation import Operation
from kgraph.layers import mask_propagation as masking
from kgraph.layers.input_spec import assert_input_compatibility
from kgraph.layers.output_shapes import is_shape, pack_shapes, shape_leaves
from kgraph.layers.own_variables import assign_own
from kgraph.layers.structure import structure_changes as _structure_changes
from kgraph.utils import naming

_REGISTRY = {}
_call_depth = [0]
_FLAGS = frozenset([bool, type(None), int, float, str])  # keyword values that cannot hold a KerasTensor
# Live layers holding a loss or a regularized weight (added by add_loss, add_weight, unpickling, copying): while there
# are none, a call has no losses to clear, ``losses`` none to collect, and neither walks the layers (each step).
_LOSS_HOLDERS = weakref.WeakSet()
_CONTAINERS = (list, tuple, dict)
# Set while a model file is rebuilt: it counts each weight against what the file holds before it is allocated.
weight_budget = contextvars.ContextVar("weight_budget", default=None)


def get_registered_layer(class_name):
    """The kgraph layer class registered under ``class_name``, or None."""
    return _REGISTRY.get(class_name)


class Layer(Operation):
    """Base class of every layer: an Operation with weights, ``build`` and ``get_config``.

    A new layer is one small class: ``build(input_shape)`` creates weights with
    ``add_weight``, ``call(inputs, ...)`` computes with ``kgraph.ops``, operators
    or NumPy (recorded on the tape, so it trains without backward code),
    ``get_config()`` lists constructor arguments. ``compute_output_shape``
    (optional) gives the output shape for symbolic calls; without it, ``call``
    is traced on KerasTensors (see ``kgraph.graph.tracing``).
    """

    _preserves_dtype = False
    _call_accepts_training = True
    _call_accepts_mask = False
    _call_mask_arguments = ()
    _call_first_argument = "inputs"
    _spec_arguments = None  # compute_output_spec's keyword names; None: it takes any
    # Layers that pass a mask through unchanged set this (Keras's supports_masking=True in __init__).
    _masking = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY.setdefault(cls.__name__, cls)
        params = inspect.signature(cls.call).parameters
        cls._call_accepts_training = "training" in params or any(
            p.kind is p.VAR_KEYWORD for p in params.values())
        build_params = [p for p in inspect.signature(cls.build).parameters.values()
                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        cls._build_arity = len(build_params) - 1
        # As Keras: a `build(self)` taking no shape is called with none.
        cls._build_takes_shape = cls._build_arity > 0 or any(
            p.kind is p.VAR_POSITIONAL for p in inspect.signature(cls.build).parameters.values())
        cls._call_accepts_mask = "mask" in params
        cls._call_mask_arguments = tuple(name[:-5] for name in params if name.endswith("_mask") and
                                         name[:-5] in params)
        # As Keras: the first argument of `call` is the input, whether passed by position or by keyword.
        first = next((p for name, p in params.items() if name != "self"), None)
        cls._call_first_argument = first.name if first is not None and first.kind is first.POSITIONAL_OR_KEYWORD \
            else None
        spec = inspect.signature(cls.compute_output_spec).parameters
        cls._spec_arguments = None if any(p.kind is p.VAR_KEYWORD for p in spec.values()) else frozenset(spec)

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None, batch_size=None,
                 input_dim=None, batch_input_shape=None, activity_regularizer=None, autocast=True, **kwargs):
        from kgraph import regularizers
        if kwargs:
            # Keras's error: every argument a layer does not take is refused by name.
            raise ValueError(f"Unrecognized keyword arguments passed to {type(self).__name__}: {kwargs}")
        if name is not None and (not isinstance(name, str) or "/" in name or not name):
            raise ValueError(f"Argument `name` must be a non-empty string without '/'. Received: name={name!r}")
        object.__setattr__(self, "_layers", [])
        _structure_changes[0] += 1
        self.name = name or naming.uniquify(naming.to_snake_case(type(self).__name__))
        self._trainable = bool(trainable)
        self.dtype_policy = dtype  # a name, a NumPy dtype, a DTypePolicy or its dict (None: the global policy)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        # autocast=False: floating inputs keep their dtype instead of being cast to the layer's (Keras's rule).
        self.autocast = bool(autocast)
        self.built = False
        self.input_spec = None
        # As in Keras 3: a layer that defines compute_mask supports masking; others set it themselves.
        self.supports_masking = type(self)._masking or type(self).compute_mask is not Layer.compute_mask
        self._inbound_nodes = []
        self._outbound_nodes = []
        self._trainable_variables = []
        self._non_trainable_variables = []
        self._regularized = []
        self._losses = []
        self._build_input_shape = None
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        self._batch_input_shape = tuple(batch_input_shape) if batch_input_shape is not None else None

    _lists_activity_regularizer = False  # True where Keras's get_config always writes the key
    _scan_containers = True  # False where the layers are a graph's (Functional, Sequential): its order stands

    # ----- tracking -------------------------------------------------------
    def __setattr__(self, name, value):
        if name == "_trainable" or isinstance(value, (Layer, Variable)) or type(value) in _CONTAINERS:
            _structure_changes[0] += 1
        if value is None and name in ("activation", "recurrent_activation") and "_layers" in self.__dict__:
            # `layer.activation = None` after construction (keras-io's Grad-CAM drops a softmax so): no activation,
            # as Keras's layers skip a None one.
            from kgraph import activations
            value = activations.linear
        if isinstance(value, Variable) and "_trainable_variables" in self.__dict__:
            # As Keras's tracker: a Variable set as an attribute becomes one of the layer's own weights.
            own = self._trainable_variables if value.trainable else self._non_trainable_variables
            if not any(value is v for v in self._trainable_variables + self._non_trainable_variables):
                own.append(value)
        if name[0] != "_" and (isinstance(value, Layer) or (type(value) in (list, tuple) and value)):
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(item, Layer) and item is not self and not any(item is l for l in self._layers):
                    self._layers.append(item)
        if name[0] != "_" and type(value) in (list, dict) and "_layers" in self.__dict__:
            # Keras tracks layers put into a list or dict attribute later too (its TrackedList/TrackedDict).
            containers = self.__dict__.setdefault("_container_attrs", [])
            if name not in containers:
                containers.append(name)
        object.__setattr__(self, name, value)

    def _sublayers(self):
        """The layers this one tracks: those set as attributes or put into a list, tuple or dict attribute (also
        after it was set, as Keras's tracked containers)."""
        if not self._scan_containers or not self.__dict__.get("_container_attrs"):
            return self._layers
        # In the order of the attributes (as Keras tracks them, a list or dict filled just after it is set), then
        # any layer tracked otherwise.
        found = []
        for name, value in self.__dict__.items():
            if name[0] == "_" or not isinstance(value, (Layer, list, tuple, dict)):
                continue
            for item in _layers_in(value):
                if item is not self and not any(item is known for known in found):
                    found.append(item)
        found.extend(layer for layer in self._layers if not any(layer is known for known in found))
        return found

    def _flatten_layers(self, include_self=True):
        """Every layer under this one, depth first, each once."""
        out, seen = [], set()
        stack = [self] if include_self else list(reversed(self._sublayers()))
        while stack:
            layer = stack.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            stack.extend(reversed(layer._sublayers()))
        return out

    @property
    def dtype_policy(self):
        mixed = self.__dict__.get("_mixed_policy")
        return dtype_policies.DTypePolicy(mixed or self.dtype)

    @dtype_policy.setter
    def dtype_policy(self, value):
        policy = dtype_policies.layer_policy(value)
        # `dtype` is the variables' dtype (as Keras's Layer.dtype); a mixed policy computes in another one.
        self.dtype = backend.standardize_dtype(policy.variable_dtype)
        mixed = policy.name if policy.compute_dtype != policy.variable_dtype else None
        object.__setattr__(self, "_mixed_policy", mixed)
        object.__setattr__(self, "_mixed_compute", policy.compute_dtype if mixed else None)

    @property
    def compute_dtype(self):
        return self.__dict__.get("_mixed_compute") or self.dtype

    @property
    def variable_dtype(self):
        return self.dtype

    # ----- weights --------------------------------------------------------
    def add_weight(self, shape=None, initializer=None, dtype=None, trainable=True, regularizer=None,
                   constraint=None, name=None):
        """Create a weight Variable owned by this layer; an optimizer applies ``constraint`` after each update."""
        from kgraph import constraints, initializers, regularizers
        shape = tuple(int(d) for d in (shape or ()))
        dtype = backend.standardize_dtype(dtype or self.dtype)
        if weight_budget.get() is not None:
            weight_budget.get().reserve(shape, dtype, self.name)
        if initializer is None:
            initializer = "glorot_uniform" if np.issubdtype(np.dtype(dtype), np.floating) else "zeros"
        value = initializers.get(initializer)(shape, dtype=dtype)
        name = name or f"variable_{len(self._trainable_variables) + len(self._non_trainable_variables)}"
        variable = Variable(value, name=name, trainable=trainable, dtype=dtype, path=weight_path(self, name))
        variable.constraint = constraints.get(constraint)
        (self._trainable_variables if trainable else self._non_trainable_variables).append(variable)
        _structure_changes[0] += 1
        if regularizer is not None:
            _LOSS_HOLDERS.add(self)
            self._regularized.append((variable, regularizers.get(regularizer)))
        return variable

    # ----- saving hooks (Keras's defaults; a subclass may override them and call these) ----------------
    def save_own_variables(self, store):
        """Store this layer's own variables (not its sub-layers') under ``"0"``, ``"1"``, ... in weight order."""
        for i, variable in enumerate(self._trainable_variables + self._non_trainable_variables):
            store[str(i)] = variable.numpy()

    def load_own_variables(self, store):
        """Assign this layer's own variables from ``store`` as ``save_own_variables`` wrote it."""
        own = self._trainable_variables + self._non_trainable_variables
        assign_own(self, own, store)

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        for layer in self._flatten_layers():
            layer._trainable = bool(value)

    @property
    def weights(self):
        out, seen = [], set()
        for layer in self._flatten_layers():
            for v in layer._trainable_variables + layer._non_trainable_variables:
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    @property
    def variables(self):
        """The weights, then the states of the SeedGenerators the layers hold (as Keras lists them)."""
        from kgraph.random import SeedGenerator
        out, seen = self.weights, set()
        for layer in self._flatten_layers():
            for value in list(vars(layer).values()):
                if isinstance(value, SeedGenerator) and id(value) not in seen:
                    seen.add(id(value))
                    out.append(value.state)
        return out

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        out = []
        for layer in self._flatten_layers():
            if layer.trainable:
                out.extend(layer._trainable_variables)
        return _unique(out)

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @property
    def non_trainable_weights(self):
        trainable = {id(v) for v in self.trainable_weights}
        return [v for v in self.weights if id(v) not in trainable]

    @property
    def non_trainable_variables(self):
        return self.non_trainable_weights

    def get_weights(self):
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights):
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(
                f"You called `set_weights(weights)` on layer '{self.name}' with a weight list of length "
                f"{len(weights)}, but the layer was expecting {len(params)} weights.")
        for variable, value in zip(params, weights):
            value = np.asarray(value)
            if tuple(variable.shape) != value.shape:
                raise ValueError(
                    f"Layer {self.name} weight shape {tuple(variable.shape)} is not compatible with "
                    f"provided weight shape {value.shape} (weight '{variable.path}').")
        for variable, value in zip(params, weights):
            variable.assign(value)

    def count_params(self):
        if not self.built:
            raise ValueError(
                f"You tried to call `count_params` on layer '{self.name}', but the layer isn't built. "
                "You can build it manually via: `layer.build(input_shape)`.")
        return int(sum(int(np.prod(v.shape)) for v in self.weights))

    # ----- losses ---------------------------------------------------------
    def add_loss(self, loss):
        """Add a scalar loss term (computed with kgraph.ops) during ``call``."""
        _LOSS_HOLDERS.add(self)
        self._losses.append(loss)

    def __setstate__(self, state):
        """Unpickling and copying restore the attributes as they were (and note a layer holding losses)."""
        state, slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        self.__dict__.update(state or {})
        for name, value in (slots or {}).items():
            object.__setattr__(self, name, value)
        if self.__dict__.get("_losses") or self.__dict__.get("_regularized"):
            _LOSS_HOLDERS.add(self)

    @property
    def losses(self):
        """Losses added by ``add_loss`` in the last call, plus weight regularization."""
        if not _LOSS_HOLDERS:
            return []
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._losses)
            for variable, regularizer in layer._regularized:
                if layer.trainable:
                    out.append(regularizer(variable))
        return out

    # ----- building and calling -------------------------------------------
    def build(self, input_shape):
        """Keras's default: a user's layer (or subclassed model) that keeps unbuilt sub-layers builds them by
        running ``call`` once on KerasTensors of ``input_shape`` (nothing of that run stays in any graph)."""
        if not type(self).__module__.startswith("kgraph.") and \
                any(not layer.built for layer in self._flatten_layers(include_self=False)):
            self._build_sublayers_symbolically(input_shape)
        self.built = True

    def _build_sublayers_symbolically(self, input_shape):
        from kgraph.graph.tracing import scratch
        from kgraph.layers.core.input_layer import Input

        def tensors(shape):
            if isinstance(shape, (tuple, list)) and all(d is None or isinstance(d, (int, np.integer)) for d in shape):
                return Input(batch_shape=tuple(shape), dtype=self.compute_dtype)
            if isinstance(shape, dict):
                return {k: tensors(v) for k, v in shape.items()}
            return [tensors(s) for s in shape]
        try:
            with scratch():
                self.call(tensors(input_shape))
        except Exception:  # noqa: BLE001 - a call that cannot run symbolically builds its sub-layers on data later
            pass

    def _maybe_build(self, args):
        if self.built:
            return
        shapes = [tree.map_structure(shape_of, a) for a in args]
        self._build_input_shape = shapes[0]
        with layer_scope(self):  # as Keras: layers built inside another's build carry its name in their paths
            if self._build_arity >= 2 and len(shapes) >= 2:
                self._build_extra_shapes = shapes[1: self._build_arity]
                self.build(*shapes[: self._build_arity])
            elif self._build_takes_shape:
                self.build(shapes[0])
            else:
                self.build()
        self.built = True

    def call(self, inputs, *args, **kwargs):
        return inputs

    def compute_mask(self, inputs, previous_mask):
        """The mask of the outputs: by default the input's mask, passed through."""
        return previous_mask

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(
            f"Layer '{self.name}' of class {type(self).__name__} does not implement "
            "`compute_output_shape(input_shape)`, which kgraph needs to call it on symbolic "
            "KerasTensors (it never runs a layer on dummy data). Define it on the layer class.")

    def compute_output_spec(self, *args, **kwargs):
        """KerasTensors describing the outputs, from ``compute_output_shape`` or by tracing ``call``."""
        if type(self).compute_output_shape is Layer.compute_output_shape:
            from kgraph.graph import tracing
            return tracing.layer_output_spec(self, args, kwargs)
        shapes = tree.map_structure(shape_of, args[0])
        out_shape = self.compute_output_shape(shapes)
        first = tree.flatten(args[0])[0]
        dtype = first.dtype if self._preserves_dtype else self.compute_dtype
        if self._preserves_dtype and self.autocast and _both_floating(dtype, self.compute_dtype):
            dtype = self.compute_dtype  # as the eager call: floating inputs are cast to the compute dtype first
        if is_shape(out_shape):
            return KerasTensor(out_shape, dtype=dtype, name=self.name)
        leaves = shape_leaves(out_shape)
        tensors = [KerasTensor(s, dtype=dtype, name=f"{self.name}_{i}") for i, s in enumerate(leaves)]
        return pack_shapes(out_shape, iter(tensors))

    def __call__(self, *args, **kwargs):
        if not args:
            args, kwargs = self._input_from_keywords(kwargs)
        if len(args) == 1 and isinstance(args[0], np.ndarray) and all(type(v) in _FLAGS for v in kwargs.values()):
            symbolic = False  # one array (and flags such as training=): a model's eager call, at every step
        else:
            symbolic = any(isinstance(t, KerasTensor)
                           for t in tree.flatten(args[0] if len(args) == 1 and not kwargs else [list(args), kwargs]))
        assert_input_compatibility(self.input_spec, args[0], self.name)
        if "training" in kwargs and not self._call_accepts_training:
            kwargs = {k: v for k, v in kwargs.items() if k != "training"}
        if symbolic:
            return self._symbolic_call(args, kwargs)
        return self._eager_call(args, kwargs)

    def _input_from_keywords(self, kwargs):
        """``(args, kwargs)`` with the first argument of ``call``, given by keyword, moved into ``args``."""
        name = self._call_first_argument
        if name is None or name not in kwargs:
            raise ValueError(f"Layer '{self.name}' was called without inputs. Pass the inputs as the first "
                             f"argument of `call`{f' (`{name}`)' if name else ''}, by position or by keyword.")
        kwargs = dict(kwargs)
        return (kwargs.pop(name),), kwargs

    def _symbolic_call(self, args, kwargs):
        self._maybe_build(args)
        assert_input_compatibility(self.input_spec, args[0], self.name)
        previous, extra = masking.mask_arguments(self, args, kwargs, masking.keras_mask)
        # As Keras: the mask arguments that are filled in also reach the output-spec inference.
        if self._spec_arguments is not None:
            extra = {k: v for k, v in extra.items() if k in self._spec_arguments}
        with layer_scope(self):
            if self.__dict__.get("_mixed_compute") is None and _autodiff._autocast.__dict__.get("dtype") is None:
                outputs = self.compute_output_spec(*args, **kwargs, **extra)
            else:
                with _autodiff.autocast(self.__dict__.get("_mixed_compute")):
                    outputs = self.compute_output_spec(*args, **kwargs, **extra)
        Node(self, args, kwargs, outputs)
        masking.set_symbolic_masks(self, args[0], previous, outputs)
        return outputs

    def _eager_call(self, args, kwargs):
        if type(args[0]) is np.ndarray and not self._call_mask_arguments:
            previous, extra = None, None  # a plain ndarray carries no mask: the common case, kept cheap
        else:
            # Read before the inputs are converted: a converted array is a new object, without the mask.
            previous, extra = masking.mask_arguments(self, args, kwargs, masking.keras_mask)
        if extra:
            kwargs = {**kwargs, **extra}
        first = args[0]
        first = self._convert_input(first) if isinstance(first, np.ndarray) else tree.map_structure(
            self._convert_input, first)
        args = (first,) + args[1:]
        self._maybe_build(args)
        outermost = _call_depth[0] == 0
        if outermost and _LOSS_HOLDERS:
            for layer in self._flatten_layers():
                layer._losses.clear()
        _call_depth[0] += 1
        try:
            with layer_scope(self):
                if self.__dict__.get("_mixed_compute") is None and _autodiff._autocast.__dict__.get("dtype") is None:
                    outputs = self.call(*args, **kwargs)
                else:  # a mixed-policy layer, or a layer inside one: each computes in its own compute dtype
                    with _autodiff.autocast(self.__dict__.get("_mixed_compute")):
                        outputs = self.call(*args, **kwargs)
        finally:
            _call_depth[0] -= 1
        if self.activity_regularizer is not None:
            self._add_activity_losses(outputs)
        if kwargs.get("mask") is not None:
            previous = kwargs["mask"]
        elif previous is None and type(self).compute_mask is Layer.compute_mask:
            return outputs  # no mask to pass on and none of its own
        return masking.set_eager_masks(self, args[0], previous, outputs)

    def _add_activity_losses(self, outputs):
        """Keras's activity penalty: ``activity_regularizer(output) / batch_size`` for each output array."""
        from kgraph import ops
        for output in tree.flatten(outputs):
            if isinstance(output, np.ndarray):
                loss = self.activity_regularizer(output)
                if output.ndim > 0:
                    # Divided by the batch size, so the strength does not depend on it (0 for an empty batch).
                    loss = ops.divide_no_nan(loss, np.asarray(output.shape[0], dtype=np.asarray(loss).dtype))
                self.add_loss(loss)

    def _convert_input(self, x):
        if type(x) is np.ndarray and _autodiff._active_tapes:
            x = _autodiff.on_tape(x)
        if isinstance(x, (np.ndarray, Variable)):
            if self.autocast and x.dtype != self.compute_dtype and np.issubdtype(np.dtype(x.dtype), np.floating) \
                    and np.issubdtype(np.dtype(self.compute_dtype), np.floating):
                from kgraph import ops
                return ops.cast(x, self.compute_dtype)
            return x
        if x is None:
            return x
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(f"Layer '{self.name}' received an input that is not a numeric array: {x!r}")
        if np.issubdtype(arr.dtype, np.floating):
            arr = arr.astype(self.compute_dtype)
        return arr

    # ----- graph position ---------------------------------------------------
    def _single_node(self, attr):
        """The node of the layer's first call, as Keras 3 answers ``input``/``output`` (a layer called several
        times, such as a shared tower, answers for its first call)."""
        if not self._inbound_nodes:
            raise AttributeError(f"Layer '{self.name}' has never been called and thus has no defined {attr}.")
        return self._inbound_nodes[0]

    @property
    def input(self):
        node = self._single_node("input")
        return node.input_tensors[0] if len(node.input_tensors) == 1 else list(node.input_tensors)

    @property
    def output(self):
        node = self._single_node("output")
        return node.outputs

    @property
    def input_shape(self):
        node = self._single_node("input shape")
        shapes = node.input_shapes
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        return tree.map_structure(lambda t: t.shape, self._single_node("output shape").outputs)

    # ----- serialization ----------------------------------------------------
    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "dtype": dtype_policies.serialize(self.dtype_policy)}
        if self.activity_regularizer is not None or type(self)._lists_activity_regularizer:
            from kgraph import regularizers
            config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer) \
                if self.activity_regularizer is not None else None
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_build_config(self):
        if self._build_input_shape is None:
            return None
        config = {"input_shape": self._build_input_shape}
        if getattr(self, "_build_extra_shapes", None):
            config["extra_shapes"] = list(self._build_extra_shapes)
        return config

    def build_from_config(self, config):
        """Build from ``get_build_config`` output (every positional shape ``build`` took)."""
        if config and not self.built:
            if self._build_takes_shape:
                self.build(config["input_shape"], *config.get("extra_shapes", []))
            else:
                self.build()
            self._build_input_shape = config["input_shape"]
            self.built = True

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _both_floating(a, b):
    return np.issubdtype(np.dtype(a), np.floating) and np.issubdtype(np.dtype(b), np.floating)


def _layers_in(value, depth=0):
    """The Layers inside a list, tuple or dict (nested ones too), in order; not those inside a Layer."""
    if isinstance(value, Layer):
        yield value
    elif depth < 8 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _layers_in(item, depth + 1)
    elif depth < 8 and isinstance(value, dict):
        for item in value.values():
            yield from _layers_in(item, depth + 1)
