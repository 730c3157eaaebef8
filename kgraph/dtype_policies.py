"""``keras.dtype_policies``: the float type a layer keeps its weights in and computes in.

A layer computes in the float type its policy names (``"float32"``, ``"float64"``,
``"float16"``, or any other dtype name a layer takes). ``"mixed_float16"`` keeps a layer's variables in float32
and computes in float16, as Keras does: inside the layer's call its float32 variables are read as float16
(``kgraph.backend.autodiff.autocast``), and the gradients reach the float32 variables cast back. Keras's
``"mixed_bfloat16"`` (NumPy has no bfloat16) and quantized policies are refused by name.
"""
from __future__ import annotations

import re
from collections.abc import MutableMapping

from kgraph.backend.settings import floatx, standardize_dtype

__all__ = ["AWQDTypePolicy", "DTypePolicy", "DTypePolicyMap", "FloatDTypePolicy", "GPTQDTypePolicy",
           "Int4DTypePolicy", "QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy", "deserialize", "dtype_policy",
           "get", "serialize", "set_dtype_policy"]
_QUANTIZED_REASON = ("quantized policies are not implemented (kgraph has no int8/int4/float8 kernels, nor GPTQ or "
                     "AWQ quantization)")

_MIXED = {"mixed_float16": "float16"}  # policy -> compute dtype; its variables are float32
_GLOBAL = {"policy": None}


def _refuse_unsupported(name):
    if name == "mixed_bfloat16":
        raise ValueError("kgraph does not support the dtype policy 'mixed_bfloat16': NumPy has no bfloat16 type. "
                         "Use 'mixed_float16' (float16 computation, float32 variables) or 'float32'.")
    if str(name).startswith(("int8", "int4", "float8", "gptq", "awq")):
        raise ValueError(f"kgraph does not support the dtype policy {name!r}: {_QUANTIZED_REASON}. Use 'float32', "
                         "'float64' or 'mixed_float16'.")


class DTypePolicy:
    """The dtype a layer's variables and computation use; ``DTypePolicy("float64")``."""

    def __init__(self, name=None):
        if name is None:
            name = floatx()
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as 'float32'. Received: name={name!r} "
                            f"(of type {type(name).__name__})")
        _refuse_unsupported(name)
        if name in _MIXED:
            self._name, self._compute, self._variable = name, _MIXED[name], "float32"
        else:
            self._name = "string" if standardize_dtype(name) == "str" else standardize_dtype(name)
            self._compute = self._variable = self._name

    name = property(lambda self: self._name)
    compute_dtype = property(lambda self: self._compute)
    variable_dtype = property(lambda self: self._variable)
    quantization_mode = property(lambda self: None)

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other.name == self.name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'


FloatDTypePolicy = DTypePolicy  # Keras 3 keeps this name as an alias


class QuantizedDTypePolicy(DTypePolicy):
    """Keras's quantized policy (``"int8_from_float32"`` ...): refused, as kgraph refuses quantized policy names."""

    def __init__(self, mode, source_name=None, **kwargs):
        raise ValueError(f"kgraph does not support {type(self).__name__}(mode={mode!r}): {_QUANTIZED_REASON}. Use "
                         "a DTypePolicy such as 'float32', 'float64' or 'mixed_float16'.")


class QuantizedFloat8DTypePolicy(QuantizedDTypePolicy):
    """Keras's float8 training policy: refused (see ``QuantizedDTypePolicy``)."""


class Int4DTypePolicy(QuantizedDTypePolicy):
    """Keras's int4 sub-channel policy: refused (see ``QuantizedDTypePolicy``)."""


class GPTQDTypePolicy(QuantizedDTypePolicy):
    """Keras's GPTQ policy: refused (see ``QuantizedDTypePolicy``)."""


class AWQDTypePolicy(QuantizedDTypePolicy):
    """Keras's AWQ policy: refused (see ``QuantizedDTypePolicy``)."""


class DTypePolicyMap(DTypePolicy, MutableMapping):
    """Policies by layer path: ``DTypePolicyMap("float32", {"model/dense": "float64", "model/conv.*": ...})``.

    ``policy_map[path]`` is the policy stored under ``path`` itself, else under the one key that matches it as a
    regular expression (``re.fullmatch``; two matching keys are an error), else the default policy. As a policy,
    the map's dtypes are the default policy's: a layer given the map computes with its default policy.
    """

    def __init__(self, default_policy=None, policy_map=None):
        if isinstance(default_policy, DTypePolicyMap):
            raise ValueError("`default_policy` cannot be a `DTypePolicyMap`.")
        if policy_map is not None and not isinstance(policy_map, dict):
            raise TypeError(f"If specified, `policy_map` must be a dict. Received: policy_map={policy_map} of "
                            f"type {type(policy_map)}")
        self._default_policy_arg = default_policy
        self._default_policy = get(default_policy)
        self._policy_map = policy_map or {}

    name = property(lambda self: f"map_{self._default_policy.name}")
    default_policy = property(lambda self: self._default_policy)
    compute_dtype = property(lambda self: self._default_policy.compute_dtype)
    variable_dtype = property(lambda self: self._default_policy.variable_dtype)
    quantization_mode = property(lambda self: self._default_policy.quantization_mode)
    _name = property(lambda self: self.name)

    def __getitem__(self, key):
        if key in self._policy_map:
            return self._policy_map[key]
        matching = [pattern for pattern in self._policy_map if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"Path '{key}' matches multiple dtype policy specification keys: {matching}. Please "
                             "make sure each path only matches at most one dtype policy specification key in the "
                             "DTypePolicyMap.")
        return self._policy_map[matching[0]] if matching else self._default_policy

    def __setitem__(self, key, policy):
        if key in self._policy_map:
            raise ValueError(f"{key} already exist in the DTypePolicyMap with value {self._policy_map[key]}. Please "
                             "make sure to not use duplicated keys.")
        try:
            policy = get(policy)
        except (TypeError, ValueError) as error:
            raise ValueError("Cannot interpret the assigned value by `kgraph.dtype_policies.get`. Received: "
                             f"{policy} of type {type(policy)} ({error})") from error
        self._policy_map[key] = policy

    def __delitem__(self, key):
        return self._policy_map.pop(key)

    def __contains__(self, key):
        return key in self._policy_map

    def __len__(self):
        return len(self._policy_map)

    def __iter__(self):
        return iter(self._policy_map)

    def __eq__(self, other):
        return (isinstance(other, DTypePolicyMap) and other.default_policy == self.default_policy
                and dict(other._policy_map) == dict(self._policy_map))

    __hash__ = None

    def get_config(self):
        """``{"default_policy": <as given>, "policy_map": {key: <policy, serialized where it is one>}}``."""
        return {"default_policy": self._default_policy_arg,
                "policy_map": {key: serialize(value) if isinstance(value, DTypePolicy) else value
                               for key, value in self._policy_map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["policy_map"] = {key: get(value) if isinstance(value, dict) else value
                                for key, value in (config.get("policy_map") or {}).items()}
        return cls(**config)

    def __repr__(self):
        mapping = [(key, getattr(value, "name", value)) for key, value in self._policy_map.items()]
        return f"<DTypePolicyMap at {hex(id(self))} default_policy={self._default_policy.name}, mapping={mapping}>"


def serialize(policy):
    """Keras's form of a policy: ``{"module": "keras", "class_name": "DTypePolicy", "config": {...}, ...}``."""
    policy = get(policy)
    if isinstance(policy, DTypePolicyMap):
        return {"module": "keras.dtype_policies", "class_name": "DTypePolicyMap", "config": policy.get_config(),
                "registered_name": None}
    return {"module": "keras", "class_name": "DTypePolicy", "config": policy.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A policy from ``serialize``'s dict (or a dtype name)."""
    return get(config)


def get(identifier):
    """A DTypePolicy from a policy, a dtype name, a NumPy dtype or ``serialize``'s dict (None: the global one)."""
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        class_name = str(identifier.get("class_name", ""))
        if class_name == "DTypePolicyMap":
            return DTypePolicyMap.from_config(identifier.get("config", {}))
        if class_name in _REFUSED:
            return _REFUSED[class_name](**identifier.get("config", {}))
        if not class_name.endswith("DTypePolicy"):
            raise ValueError(f"Cannot interpret {identifier!r} as a dtype policy: expected a DTypePolicy config.")
        return DTypePolicy(**identifier.get("config", {}))
    return DTypePolicy(identifier if isinstance(identifier, str) else standardize_dtype(identifier))


_REFUSED = {cls.__name__: cls for cls in (QuantizedDTypePolicy, QuantizedFloat8DTypePolicy, Int4DTypePolicy,
                                          GPTQDTypePolicy, AWQDTypePolicy)}


def set_dtype_policy(policy):
    """Set the policy of the layers created from now on (``keras.config.set_dtype_policy``)."""
    _GLOBAL["policy"] = None if policy is None else get(policy)


def dtype_policy():
    """The global policy (``floatx()``'s, unless ``set_dtype_policy`` set one)."""
    return _GLOBAL["policy"] or DTypePolicy(floatx())


def layer_policy(value):
    """The DTypePolicy of a layer's ``dtype=`` argument (name, NumPy dtype, policy or its dict; None: global)."""
    if value is None:
        return _GLOBAL["policy"] or DTypePolicy(floatx())
    return get(value)
