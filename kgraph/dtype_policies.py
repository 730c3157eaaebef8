"""``keras.dtype_policies``: the float type a layer keeps its weights in and computes in.

A layer computes in the float type its policy names (``"float32"``, ``"float64"``,
``"float16"``, or any other dtype name a layer takes). ``"mixed_float16"`` keeps a layer's variables in float32
and computes in float16, as Keras does: inside the layer's call its float32 variables are read as float16
(``kgraph.backend.autodiff.autocast``), and the gradients reach the float32 variables cast back. Keras's
``"mixed_bfloat16"`` (NumPy has no bfloat16) and quantized policies are refused by name.
"""
from __future__ import annotations

from kgraph.backend.settings import floatx, standardize_dtype

__all__ = ["DTypePolicy", "FloatDTypePolicy", "deserialize", "dtype_policy", "get", "serialize", "set_dtype_policy"]

_MIXED = {"mixed_float16": "float16"}  # policy -> compute dtype; its variables are float32
_GLOBAL = {"policy": None}


def _refuse_unsupported(name):
    if name == "mixed_bfloat16":
        raise ValueError("kgraph does not support the dtype policy 'mixed_bfloat16': NumPy has no bfloat16 type. "
                         "Use 'mixed_float16' (float16 computation, float32 variables) or 'float32'.")
    if str(name).startswith(("int8", "int4", "float8", "gptq", "awq")):
        raise ValueError(f"kgraph does not support the dtype policy {name!r}: quantized policies are not "
                         "implemented. Use 'float32', 'float64' or 'mixed_float16'.")


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


def serialize(policy):
    """Keras's form of a policy: ``{"module": "keras", "class_name": "DTypePolicy", "config": {...}, ...}``."""
    policy = get(policy)
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
        if not str(identifier.get("class_name", "")).endswith("DTypePolicy"):
            raise ValueError(f"Cannot interpret {identifier!r} as a dtype policy: expected a DTypePolicy config.")
        return DTypePolicy(**identifier.get("config", {}))
    return DTypePolicy(identifier if isinstance(identifier, str) else standardize_dtype(identifier))


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
