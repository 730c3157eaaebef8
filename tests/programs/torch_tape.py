"""``keras.GradientTape`` for real Keras on torch: the one name the harness adds to real Keras.

The programs of this folder write their custom ``train_step`` as keras-io's TensorFlow examples do, with
``keras.GradientTape`` where the examples write ``tf.GradientTape``. kgraph has that class; Keras 3 has none
(TensorFlow, whose tape the examples use, is not installed here), so the Keras worker of ``harness.py`` sets
``keras.GradientTape = GradientTape`` (``install``) before the programs run. The rename for kgraph adds nothing.

The class gives tf.GradientTape's semantics on torch autograd:

- a context manager; ``watch(x)`` makes a torch leaf tensor require gradients (a tensor that already requires
  them, and a trainable Keras Variable, whose ``value`` is a ``torch.nn.Parameter``, need nothing);
- ``gradient(target, sources)``: ``sources`` a Variable or tensor, or a list/tuple/dict of them, answered in the
  same structure, with None for a source the target does not depend on; a list/tuple target is summed;
- ``persistent=False`` allows one ``gradient`` call, as TensorFlow's;
- gradients are computed with ``torch.autograd.grad(..., create_graph=True)`` only while another tape records
  (nested tapes: a WGAN-GP gradient penalty is differentiated by the outer tape), otherwise detached.

torch records every operation on a tensor that requires gradients, inside a tape or not: the gradients are
TensorFlow's wherever the target is computed from the sources inside the tape, as in every program here.
Keras's torch optimizers update the weights under ``torch.no_grad()`` themselves (``TorchParallelOptimizer``'s
steps and ``Variable.assign``), so ``optimizer.apply_gradients`` takes these gradients as they are.
"""
from __future__ import annotations

import threading

import torch

_state = threading.local()


def _recording() -> list:
    if not hasattr(_state, "tapes"):
        _state.tapes = []
    return _state.tapes


def _is_variable(x) -> bool:
    return not isinstance(x, torch.Tensor) and isinstance(getattr(x, "value", None), torch.Tensor) \
        and hasattr(x, "assign")


class GradientTape:
    """tf.GradientTape's interface on torch autograd (see the module docstring)."""

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        if not watch_accessed_variables:
            raise ValueError("GradientTape(watch_accessed_variables=False) is not available on torch: torch "
                             "records every trainable variable that an operation reads")
        self._persistent = bool(persistent)
        self._used = False

    def __enter__(self):
        if any(t is self for t in _recording()):
            raise RuntimeError("This GradientTape is already recording; a tape cannot be entered twice.")
        _recording().append(self)
        return self

    def __exit__(self, *exc_info):
        tapes = _recording()
        for i, t in enumerate(tapes):
            if t is self:
                del tapes[i]
                break
        return False

    def watch(self, x) -> None:
        """Track ``x``: a torch tensor, a trainable Keras Variable, or a list/tuple of them."""
        if isinstance(x, (list, tuple)):
            for item in x:
                self.watch(item)
            return
        if _is_variable(x):
            if not x.value.requires_grad:
                raise ValueError(f"GradientTape.watch(): the Variable {x.path!r} is not trainable; torch computes "
                                 "gradients for trainable Variables only")
            return
        if not isinstance(x, torch.Tensor):
            raise TypeError("GradientTape.watch() expects a torch tensor or a Keras Variable (or a list of them); "
                            f"received {type(x).__name__}")
        if x.is_floating_point() and not x.requires_grad:
            x.requires_grad_(True)  # a leaf: only a leaf can be without requires_grad

    @staticmethod
    def _tensor(source):
        if _is_variable(source):
            return source.value
        if isinstance(source, torch.Tensor):
            return source
        raise TypeError("Gradient sources must be Keras Variables or torch tensors (or a list, tuple or dict of "
                        f"them); received {type(source).__name__}")

    def gradient(self, target, sources):
        """d(target)/d(sources) in the structure of ``sources``; None where the target does not depend on one."""
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only compute gradients once. "
                               "Use GradientTape(persistent=True) to call gradient() several times.")
        self._used = True
        if isinstance(sources, dict):
            keys, flat = list(sources), list(sources.values())
        elif isinstance(sources, (list, tuple)):
            keys, flat = None, list(sources)
        else:
            keys, flat = None, [sources]
        tensors = [self._tensor(s) for s in flat]
        targets = list(target) if isinstance(target, (list, tuple)) else [target]
        total = sum(t.sum() for t in targets)
        create_graph = any(t is not self for t in _recording())
        wanted = [i for i, t in enumerate(tensors) if t.requires_grad]
        grads = [None] * len(tensors)
        if wanted and total.requires_grad:
            # retain_graph: a tape nested in another shares its graph, which the outer gradient still needs.
            found = torch.autograd.grad(total, [tensors[i] for i in wanted], retain_graph=True,
                                        create_graph=create_graph, allow_unused=True)
            for i, g in zip(wanted, found):
                grads[i] = g if g is None or create_graph else g.detach()
        if keys is not None:
            return dict(zip(keys, grads))
        if isinstance(sources, (list, tuple)):
            return type(sources)(grads)
        return grads[0]


def install(keras_module) -> None:
    """Set ``keras.GradientTape`` (real Keras on torch only; the worker calls this before any program)."""
    if keras_module.backend.backend() != "torch":
        raise RuntimeError(f"the torch GradientTape needs Keras's torch backend, not {keras_module.backend.backend()}")
    keras_module.GradientTape = GradientTape
