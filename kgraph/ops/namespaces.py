"""``kgraph.ops.numpy``, ``.nn``, ``.linalg`` and ``.image``: Keras's sub-namespaces of ``keras.ops``.

Each resolves its names in ``kgraph.ops`` when read, so it hands out the
same (symbolic-aware) functions as ``kgraph.ops`` itself.
"""
import sys
import types

# keras.ops functions that the NumPy-family modules define but keras.ops.numpy does not list.
_NOT_NUMPY = {
    "cast", "convert_to_numpy", "convert_to_tensor", "erf", "erfc", "erfinv", "getitem", "in_top_k", "logsumexp",
    "rsqrt", "scatter", "scatter_update", "shape", "slice", "slice_update", "stop_gradient", "top_k", "unstack",
}
_FAMILIES = {
    "numpy": ("math", "creation", "shape", "reductions", "numpy_math", "numpy_reductions", "numpy_shape", "numpy_index", "complex"),
    "nn": ("nn", "nn_activations", "nn_losses", "nn_attention", "nn_windows", "conv", "conv_pool", "pooling", "normalization", "patches", "ctc"),
    "linalg": ("linalg",),
    "image": ("image", "patches", "image_filters"),
}
_PATCHES = {"extract_patches", "extract_patches_3d"}
# Complex-number ops that keras.ops has but keras.ops.numpy does not list (polar is in keras.ops.nn).
_COMPLEX_NOT_NUMPY = {"polar", "view_as_complex", "view_as_real"}
_EXCLUDED = {"numpy": _NOT_NUMPY | _COMPLEX_NOT_NUMPY, "nn": {"conv_max_pool", "dense"} | _PATCHES,
             "linalg": {"logdet", "slogdet"}, "image": {"fold", "unfold"}}
_EXTRA = {"numpy": {"get_item", "i0", "slogdet", "vectorize", "view"}, "nn": {"polar"}, "linalg": set(), "image": set()}


class Namespace(types.ModuleType):
    """A read-only view of some ``kgraph.ops`` functions under a Keras sub-namespace name."""

    def __init__(self, name, names):
        super().__init__(f"kgraph.ops.{name}", f"The ``keras.ops.{name}`` functions of kgraph.")
        self._names = frozenset(names)

    def __getattr__(self, name):
        if name in self._names:
            return getattr(sys.modules["kgraph.ops"], name)
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")

    def __dir__(self):
        return sorted(self._names)


def build(name):
    """The namespace ``name`` ("numpy", "nn", "linalg" or "image") from its families' public functions."""
    names = set()
    for module in _FAMILIES[name]:
        names.update(sys.modules[f"kgraph.ops.{module}"].__all__)
    return Namespace(name, (names - _EXCLUDED[name]) | _EXTRA[name])
