"""Differentiable array ops on NumPy arrays, with ``keras.ops`` names and arguments.

Every op accepts ndarrays, Python scalars and ``Variable``s, returns a new
ndarray, and is recorded by an active ``kgraph.backend.autodiff.GradientTape``.
Called with a KerasTensor, an op records a node of its Operation in the graph
being built and returns KerasTensors (``kgraph.ops.operations``). Each module
registers its ops where it defines them (``@operations.op``); this package only
re-exports them.
"""
from kgraph.ops.complex import *  # noqa: F401,F403
from kgraph.ops.complex import __all__ as _complex_all
from kgraph.ops.conv import *  # noqa: F401,F403
from kgraph.ops.conv import __all__ as _conv_all
from kgraph.ops.conv_pool import *  # noqa: F401,F403
from kgraph.ops.conv_pool import __all__ as _conv_pool_all
from kgraph.ops.core import *  # noqa: F401,F403
from kgraph.ops.core import __all__ as _core_all
from kgraph.ops.creation import *  # noqa: F401,F403
from kgraph.ops.creation import __all__ as _creation_all
from kgraph.ops.ctc import *  # noqa: F401,F403
from kgraph.ops.ctc import __all__ as _ctc_all
from kgraph.ops.fft import *  # noqa: F401,F403
from kgraph.ops.fft import __all__ as _fft_all
from kgraph.ops.image import *  # noqa: F401,F403
from kgraph.ops.image import __all__ as _image_all
from kgraph.ops.image_filters import *  # noqa: F401,F403
from kgraph.ops.image_filters import __all__ as _image_filters_all
from kgraph.ops.linalg import *  # noqa: F401,F403
from kgraph.ops.linalg import __all__ as _linalg_all
from kgraph.ops.math import *  # noqa: F401,F403
from kgraph.ops.math import __all__ as _math_all
from kgraph.ops.nn import *  # noqa: F401,F403
from kgraph.ops.nn import __all__ as _nn_all
from kgraph.ops.nn_activations import *  # noqa: F401,F403
from kgraph.ops.nn_activations import __all__ as _nn_activations_all
from kgraph.ops.nn_attention import *  # noqa: F401,F403
from kgraph.ops.nn_attention import __all__ as _nn_attention_all
from kgraph.ops.nn_losses import *  # noqa: F401,F403
from kgraph.ops.nn_losses import __all__ as _nn_losses_all
from kgraph.ops.nn_windows import *  # noqa: F401,F403
from kgraph.ops.nn_windows import __all__ as _nn_windows_all
from kgraph.ops.normalization import *  # noqa: F401,F403
from kgraph.ops.normalization import __all__ as _normalization_all
from kgraph.ops.numpy_index import *  # noqa: F401,F403
from kgraph.ops.numpy_index import __all__ as _numpy_index_all
from kgraph.ops.numpy_math import *  # noqa: F401,F403
from kgraph.ops.numpy_math import __all__ as _numpy_math_all
from kgraph.ops.numpy_reductions import *  # noqa: F401,F403
from kgraph.ops.numpy_reductions import __all__ as _numpy_reductions_all
from kgraph.ops.numpy_shape import *  # noqa: F401,F403
from kgraph.ops.numpy_shape import __all__ as _numpy_shape_all
from kgraph.ops.patches import *  # noqa: F401,F403
from kgraph.ops.patches import __all__ as _patches_all
from kgraph.ops.pooling import *  # noqa: F401,F403
from kgraph.ops.pooling import __all__ as _pooling_all
from kgraph.ops.rearrange import *  # noqa: F401,F403
from kgraph.ops.rearrange import __all__ as _rearrange_all
from kgraph.ops.recurrent import *  # noqa: F401,F403
from kgraph.ops.recurrent import __all__ as _recurrent_all
from kgraph.ops.reductions import *  # noqa: F401,F403
from kgraph.ops.reductions import __all__ as _reductions_all
from kgraph.ops.shape import *  # noqa: F401,F403
from kgraph.ops.shape import __all__ as _shape_all

__all__ = sorted(_conv_all + _conv_pool_all + _math_all + _creation_all + _nn_all + _normalization_all
                 + _pooling_all + _recurrent_all
                 + _reductions_all + _shape_all + _numpy_math_all
                 + _numpy_reductions_all + _numpy_shape_all
                 + _numpy_index_all + _nn_activations_all + _nn_losses_all + _nn_attention_all + _nn_windows_all
                 + _linalg_all
                 + _image_all + _core_all + _fft_all
                 + _patches_all + _rearrange_all + _ctc_all + _complex_all + _image_filters_all)

from kgraph.ops import namespaces as _namespaces  # noqa: E402

numpy, nn, linalg, image = (_namespaces.build(_ns) for _ns in ("numpy", "nn", "linalg", "image"))

# Keras's second name for indexing is the same op (one Operation class, GetItem, one converter).
get_item = getitem  # noqa: F405

# Every op's second-order rule (gradients of gradients), registered on the primitives above.
from kgraph.ops import second_order as _second_order  # noqa: E402,F401
