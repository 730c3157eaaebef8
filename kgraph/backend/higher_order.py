"""Gradients of gradients: ``tape.gradient`` computed with ops that another, outer tape records.

Where ``gradient()`` is called while another ``GradientTape`` of the same thread records (a WGAN-GP gradient
penalty, a Hessian-vector product), each record of the inner tape is differentiated in one of three ways:

- nothing the outer tape tracks reaches it (neither its cotangent nor its inputs): its VJP runs as in a
  first-order gradient, and the outer tape sees constants;
- the op is linear in its float inputs (``reshape``, ``add``, ``sum``, ``concatenate``, ...): its VJP is a linear
  map of the cotangent that does not depend on the inputs, recorded on the outer tape as one op
  (``_linear_cotangents``) whose own VJP is the original op applied to the incoming cotangents;
- otherwise the op's second-order rule (``spec.rule``, registered in ``kgraph.ops.second_order``) computes its
  input cotangents with ops, which the outer tape records. An op with no rule raises a ``NotImplementedError``
  naming it, never a silently missing term.

The outer tape records the accumulation of cotangents too (they are ``TapeArray``s), so the gradient it returns
is an ordinary recorded value. Third order goes as far as the rules' own ops have rules.
"""
import numpy as np

from kgraph.backend.autodiff import _active_tapes, primitive
from kgraph.backend.cotangents import unbroadcast
from kgraph.backend.tape_array import TapeArray

__all__ = ["RecordedStep", "piecewise_constant", "supported_ops"]


def _tracked(tapes, x):
    key = id(x)
    return any(key in t._tracked for t in tapes)


def _float_inputs(inputs):
    return [i for i, a in enumerate(inputs) if isinstance(a, np.ndarray) and a.dtype.kind in "fc"]


class RecordedStep:
    """``step(record, g)`` for ``GradientTape._backward``: input cotangents the ``outer`` tapes record."""

    def __init__(self, outer):
        self.outer = outer

    def __call__(self, record, g):
        out, inputs, vjp, spec, (rest, kwargs) = record
        gs = g if type(g) is tuple else (g,)
        g_tracked = any(isinstance(x, TapeArray) and _tracked(self.outer, x) for x in gs)
        if spec.linear:
            if not g_tracked:
                return self._plain(vjp, g)
            return _transpose_linear(gs, record)
        if not g_tracked and not any(_tracked(self.outer, a) for a in inputs):
            return self._plain(vjp, g)
        if spec.rule is None:
            raise NotImplementedError(
                f"kgraph cannot take the gradient of a gradient through the op '{spec.name}': it has no "
                "second-order rule. Ops with one: " + ", ".join(supported_ops()) + ".")
        if spec.list_input:
            return spec.rule(g, out, list(inputs), *rest, **kwargs)
        return spec.rule(g, out, *inputs, *rest, **kwargs)

    def _plain(self, vjp, g):
        """The VJP as in a first-order gradient: the outer tapes record nothing of it (its values are constants)."""
        for t in self.outer:
            t._deactivate()
        try:
            cts = vjp(g)
            if type(cts) is not tuple and type(cts) is not list:
                cts = (cts,)
            return tuple(ct() if callable(ct) and not isinstance(ct, np.ndarray) else ct for ct in cts)
        finally:
            _active_tapes.extend(self.outer)


def _transpose_linear(gs, record):
    inputs = record[1]
    floats = _float_inputs(inputs)
    outs = _linear_cotangents(list(gs), record=record)
    cts = [None] * len(inputs)
    for i, ct in zip(floats, outs):
        cts[i] = ct
    return tuple(cts)


@primitive(list_input=True)
def _linear_cotangents(gs, record):
    """The input cotangents of a linear op's record, one per float input, as one op of the outer tape."""
    out, inputs, vjp, spec, (rest, kwargs) = record
    cts = vjp(gs[0] if type(out) is not tuple else tuple(gs))
    if type(cts) is not tuple and type(cts) is not list:
        cts = (cts,)
    floats = _float_inputs(inputs)
    result = []
    for i in floats:
        ct = cts[i] if i < len(cts) else None
        if callable(ct) and not isinstance(ct, np.ndarray):
            ct = ct()
        a = inputs[i]
        if ct is None:
            ct = np.zeros(a.shape, a.dtype)
        ct = np.asarray(ct)
        if ct.shape != a.shape:
            ct = unbroadcast(ct, a.shape)
        result.append(np.array(ct, dtype=a.dtype))

    def vjp2(us):
        args = list(inputs)
        for i, u in zip(floats, us):
            args[i] = u
        config_rest, config_kwargs = rest, kwargs
        if callable(spec.linear):
            # An affine op (``x + 1.0``, a pad's fill value): its transposition drops the constant.
            args, config_rest, config_kwargs = spec.linear(args, rest, kwargs)
        if spec.list_input:
            y = spec.public(args, *config_rest, **config_kwargs)
        else:
            y = spec.public(*args, *config_rest, **config_kwargs)
        return tuple(y) if type(out) is tuple else (y,)

    return tuple(result), vjp2


def piecewise_constant(mask, like, *sources):
    """A piecewise-constant factor in ``like``'s float dtype, computed from the values of ``sources``.

    Its derivative is zero, but it stays connected to ``sources`` (an op of theirs with zero cotangents), as
    TensorFlow and torch keep it: a weight reached only through it gets a zero gradient, not None.
    """
    dtype = like.dtype if like.dtype.kind in "fc" else np.float32
    factor = np.asarray(mask).astype(dtype)
    arrays = [a for a in sources if isinstance(a, np.ndarray) and a.dtype.kind in "fc"]
    return _piecewise_constant(arrays, factor=factor) if arrays else factor


@primitive(list_input=True)
def _piecewise_constant(sources, factor):
    return factor, lambda g: tuple(np.zeros(np.shape(a), a.dtype) for a in sources)


def supported_ops():
    """The names of the ops a gradient of a gradient goes through (linear ops and ops with a rule)."""
    from kgraph.ops import second_order
    return sorted(second_order.SUPPORTED)
