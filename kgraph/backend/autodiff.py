"""Reverse-mode automatic differentiation on plain NumPy arrays.

Every op in ``kgraph.ops`` is a *primitive*: one function computing the forward
value and returning a vector-Jacobian product (VJP). While a ``GradientTape`` is
recording, each primitive call with at least one tracked input appends
``(output, inputs, vjp)`` to the tape. Arrays are tracked by identity: the tape
keeps a reference to every array it records, so their ids stay unique.
``tape.gradient`` walks the records backwards, accumulating cotangents by id.

A recorded op returns a ``TapeArray`` (an ndarray subclass, no copy), on which
NumPy's operators, ufuncs and functions run the matching op, so they are
recorded too, and a NumPy function with no op raises instead of dropping the
gradient (see ``kgraph.backend.tape_array``). A plain ndarray the tape tracks becomes a
TapeArray when a layer receives it (``on_tape``). A ``Variable``'s operators
call ops as well.
"""
import contextlib
import functools
import inspect
import threading

import numpy as np

from kgraph import tree
from kgraph.backend.autocast import _autocast, autocast  # noqa: F401 (autocast: part of this module's API)
from kgraph.backend.cotangents import input_cotangent, seed_cotangents, unbroadcast
from kgraph.backend.op_arguments import python_floats_as_floatx, symbolic_config
from kgraph.backend.tape_array import STEP_TRACES, TapeArray
from kgraph.backend.variable import Variable
from kgraph.graph.keras_tensor import KerasTensor

__all__ = ["GradientTape", "primitive", "value_and_grad", "unbroadcast", "is_recording", "on_tape"]

# Tapes currently recording, in any thread. A plain list keeps the no-tape check
# of every op as cheap as possible; each tape remembers its thread, so ops run
# in other threads are never recorded on it.
_active_tapes = []
# Step traces capturing every op call of this thread while a tape records (kgraph.backend.step_trace).
_step_traces = STEP_TRACES

_ndarray = np.ndarray
_EMPTY = inspect.Parameter.empty


def is_recording():
    """Return True if a ``GradientTape`` is recording in the current thread."""
    ident = threading.get_ident()
    return any(t._thread == ident for t in _active_tapes)


def _value(x):
    """The plain ndarray behind a Variable (cast inside ``autocast``) or a TapeArray (anything else unchanged)."""
    if isinstance(x, TapeArray):  # the usual case first: a recorded op's output
        return x.view(_ndarray)
    if isinstance(x, Variable):
        value = x.value
        dtype = getattr(_autocast, "dtype", None)
        if dtype is not None and value.dtype != dtype and value.dtype.kind == "f":
            return value.astype(dtype)
        return value
    return x


def _as_output(out):
    if isinstance(out, (tuple, list)):
        return type(out)(o if type(o) is _ndarray else np.asarray(o) for o in out)
    return np.asarray(out)


def no_cotangent(g):
    """The VJP of a primitive whose inputs take no gradient (a check, an integer cast, a mask): None."""
    return None


def no_inputs(g):
    """The VJP of a primitive without inputs (a random draw): no cotangents."""
    return ()


def primitive(fn=None, *, num_inputs=None, list_input=False, name=None):
    """Define a differentiable op from a function returning ``(output, vjp)``.

    The decorated function receives plain NumPy arrays (``Variable`` arguments
    are replaced by their ``.value``) and returns the forward result together
    with ``vjp(cotangent) -> tuple of input cotangents``, one per tensor input
    (``None`` where an input has no gradient). The decorator turns it into an
    op that returns only the output and, while a ``GradientTape`` records and
    an input is tracked, records the call on the tape.

    Which arguments are tensor inputs:
        - by default, the leading positional parameters that have no default
          value (``def op(x, w, *, alpha=1.0)`` has inputs ``x`` and ``w``);
        - ``num_inputs=k``: the first ``k`` parameters (use it when an input has
          a default, e.g. ``bias=None``, or a configuration parameter has none,
          e.g. ``reshape(x, newshape)`` takes ``num_inputs=1``). Inputs may also
          be passed by keyword;
        - ``list_input=True``: the elements of the first argument, a sequence
          of arrays (``concatenate(xs, axis=0)``); the VJP returns one cotangent
          per element.
    Everything else is configuration and is passed through unchanged.

    Conveniences for the VJP:
        - a cotangent may have a broadcast shape; it is summed back to the
          input's shape (and cast to the input's dtype) by the tape;
        - a cotangent may be a zero-argument callable: it is called only if that
          input needs a gradient (e.g. skip ``g @ w.T`` for a network's input);
        - a single-input op may return the cotangent alone instead of a tuple;
        - multiple outputs: return a tuple or list of arrays as the output; the
          VJP then receives a tuple of cotangents, zeros for unused outputs.
    The VJP must not modify the cotangent it receives in place, and the output
    should be a new array (returning an input is tolerated: a view is recorded).

    Example, a fused scale-and-shift (``x``: ``(batch, n)``, ``gamma`` and
    ``beta``: ``(n,)``)::

        @kgraph.backend.autodiff.primitive
        def scale_shift(x, gamma, beta):
            def vjp(g):
                # d/dgamma is (batch, n): the tape sums it to gamma's shape.
                return g * gamma, lambda: g * x, g
            return x * gamma + beta, vjp

    Args:
        fn: the function ``(*inputs, **config) -> (output, vjp)``.
        num_inputs: how many leading parameters are tensor inputs.
        list_input: whether the first argument is a sequence of tensor inputs.
        name: the op name used in error messages (default ``fn.__name__``).
    """
    if fn is None:
        return functools.partial(primitive, num_inputs=num_inputs, list_input=list_input, name=name)
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if list_input:
        num_inputs = 1
    elif num_inputs is None:
        num_inputs = 0
        while num_inputs < len(params) and params[num_inputs].default is _EMPTY:
            num_inputs += 1
    if num_inputs > len(params):
        raise ValueError(
            f"num_inputs exceeds the positional parameters of {fn.__name__}. "
            f"Received: num_inputs={num_inputs}"
        )
    input_params = params[:num_inputs]
    input_names = frozenset(p.name for p in input_params)
    op_name = name or fn.__name__

    def bind_inputs(args, kwargs):
        args = list(args)
        kwargs = dict(kwargs)
        for i, p in enumerate(input_params):
            if p.name not in kwargs:
                continue
            if i < len(args):
                raise TypeError(f"{op_name}() got multiple values for argument '{p.name}'")
            while len(args) < i:
                missing = input_params[len(args)]
                if missing.default is _EMPTY:
                    raise TypeError(f"{op_name}() missing required argument '{missing.name}'")
                args.append(missing.default)
            args.append(kwargs.pop(p.name))
        return tuple(args), kwargs

    defaults = tuple(p.default for p in input_params)
    spec = _OpSpec(fn, op_name, num_inputs, list_input, defaults)

    @functools.wraps(fn)
    def op(*args, **kwargs):
        if kwargs and not input_names.isdisjoint(kwargs):
            args, kwargs = bind_inputs(args, kwargs)
        if args and type(args[0]) is float and not list_input:
            args = python_floats_as_floatx(args, num_inputs)
        if _active_tapes:
            tapes = _tapes_of_this_thread()
            if tapes:
                return _call_and_record(spec, tapes, args, kwargs)
        if list_input:
            if args and (type(args[0]) not in (list, tuple) or any(type(a) is not _ndarray for a in args[0])):
                if any(isinstance(a, KerasTensor) for a in (args[0] if isinstance(args[0], (list, tuple)) else ())):
                    return _symbolic(spec, args, kwargs)
                args = ([_value(a) for a in args[0]],) + args[1:]
        else:
            if len(args) > num_inputs or kwargs:
                if symbolic_config(args[num_inputs:], kwargs):  # a size read when a traced graph runs
                    return _symbolic(spec, args, kwargs)
            convert = False
            for a in args[:num_inputs]:
                if type(a) is not _ndarray:
                    if isinstance(a, KerasTensor):
                        return _symbolic(spec, args, kwargs)
                    if isinstance(a, (Variable, _ndarray)):
                        convert = True
            if convert:
                args = tuple([_value(v) for v in args[:num_inputs]]) + args[num_inputs:]
        out = fn(*args, **kwargs)[0]
        return out if type(out) is _ndarray else _as_output(out)

    spec.public = op
    op._kgraph_primitive = spec
    return op


class _OpSpec:
    """What the recording path needs to know about a primitive (``zeros`` makes an unread output's cotangent)."""

    __slots__ = ("fn", "name", "num_inputs", "list_input", "defaults", "public", "linear", "rule", "zeros")

    def __init__(self, fn, name, num_inputs, list_input, defaults):
        self.public = None
        # Second-order support (kgraph.backend.higher_order): ``linear`` for an op linear in its float inputs,
        # ``rule(g, out, *inputs, *config, **kwargs)`` for a VJP written with ops (so that it is recorded).
        self.linear = False
        self.rule = None
        self.zeros = np.zeros  # or cotangents.zero_view, where an op's module opts in (see there)
        self.fn = fn
        self.name = name
        self.num_inputs = num_inputs
        self.list_input = list_input
        self.defaults = defaults


def _symbolic(spec, args, kwargs):
    """A call with KerasTensor inputs: a node of the op's Operation in the graph being built."""
    from kgraph.ops.operations import symbolic_call
    return symbolic_call(spec.name, spec.public, args, kwargs)


def _tapes_of_this_thread():
    ident = threading.get_ident()
    if len(_active_tapes) == 1:
        return _active_tapes if _active_tapes[0]._thread == ident else None
    return [t for t in _active_tapes if t._thread == ident]


def _call_and_record(spec, tapes, args, kwargs):
    n = spec.num_inputs
    if spec.list_input:
        raw = tuple(args[0])
    else:
        if len(args) < n:
            missing = spec.defaults[len(args):]
            if not any(d is _EMPTY for d in missing):
                args = args + missing
        raw = args[:n]
    inputs = values = raw
    for a in raw:
        if type(a) is not _ndarray:
            if isinstance(a, KerasTensor):
                return _symbolic(spec, args, kwargs)
            if isinstance(a, (Variable, _ndarray)):
                inputs = tuple([v.value if isinstance(v, Variable) else v for v in raw])
                values = tuple([_value(v) for v in raw])
                for v in raw:
                    if isinstance(v, Variable) and v.trainable:
                        for tape in tapes:
                            if tape._watch_accessed_variables:
                                tape._watch_variable(v)
                break
    recording = (tapes if _tracks_any(tapes[0]._tracked, inputs) else ()) if len(tapes) == 1 else [
        tape for tape in tapes if _tracks_any(tape._tracked, inputs)]  # (one tape, usually: no list built)
    if spec.list_input:
        out, vjp = spec.fn(list(values), *args[1:], **kwargs)
    else:
        out, vjp = spec.fn(*values, *args[n:], **kwargs)
    if _step_traces:  # a train step being traced for replay (kgraph.backend.step_trace)
        result = _result(spec, recording, out, vjp, inputs, args, kwargs)
        _step_traces[-1].capture(spec, raw, values, args, kwargs, out, vjp, result, recording)
        return result
    return _result(spec, recording, out, vjp, inputs, args, kwargs)


def _result(spec, recording, out, vjp, inputs, args, kwargs):
    """An op's output as its caller sees it: recorded on the tapes in ``recording`` (a TapeArray view) or not."""
    if not recording:
        return out if type(out) is _ndarray else _as_output(out)

    if type(out) is _ndarray or not isinstance(out, (tuple, list)):
        if type(out) is not _ndarray:
            out = np.asarray(out)
        if out.dtype.kind not in "fc":
            return out
        # The recorded output is a TapeArray view: NumPy code on it stays on the tape.
        result = key = out.view(TapeArray)
        float_outs = (key,)
    else:
        result = _as_output(out)
        key = tuple(o.view(TapeArray) if o.dtype.kind in "fc" else o for o in result)
        if len({id(o) for o in key}) != len(key):
            raise ValueError(f"The outputs of '{spec.name}' must be distinct arrays.")
        result = type(result)(key)
        float_outs = [o for o in key if o.dtype.kind in "fc"]
        if not float_outs:
            return result
    record = (key, inputs, vjp, spec, (args[1:] if spec.list_input else args[spec.num_inputs:], kwargs))
    for tape in recording:
        tape._records.append(record)
        tracked = tape._tracked
        for o in float_outs:
            tracked[id(o)] = o
    return result


def on_tape(x):
    """``x`` as a TapeArray if a tape of this thread tracks it (so NumPy code on it is recorded), else ``x``."""
    if type(x) is not _ndarray or not _active_tapes:
        return x
    tapes = [t for t in (_tapes_of_this_thread() or ()) if id(x) in t._tracked]
    if not tapes:
        return x
    view = x.view(TapeArray)
    if _step_traces:
        _step_traces[-1].fail("an array put on the tape by a layer")
    record = (view, (x,), _identity_vjp, ON_TAPE, ((), {}))
    for tape in tapes:
        tape._records.append(record)
        tape._tracked[id(view)] = view
    return view


def _identity_vjp(g):
    return g


ON_TAPE = _OpSpec(None, "on_tape", 1, False, ())
ON_TAPE.linear = True
ON_TAPE.public = _identity_vjp


def _tracks_any(tracked, inputs):
    for a in inputs:
        if id(a) in tracked:
            return True
    return False


class GradientTape:
    """Record ops on arrays to compute gradients with reverse-mode autodiff.

    Use as a context manager. Trainable ``Variable``s passed to ops are watched
    automatically; other arrays (or non-trainable variables) with ``watch``.
    Several tapes may record at once (nested ``with`` blocks); each op is
    recorded on every active tape of the current thread that tracks one of its
    inputs. ``gradient()`` called while another tape records computes the
    gradient with ops that tape records, so a loss built from a gradient (a
    gradient penalty) has gradients too: second order, through the ops that
    ``kgraph.backend.higher_order`` lists.

    Args:
        persistent: allow ``gradient`` to be called more than once.
        watch_accessed_variables: watch trainable variables used by ops.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._tracked = {}
        self._records = []
        self._variables = {}
        self._used = False
        self._thread = None

    def __enter__(self):
        if any(t is self for t in _active_tapes):
            raise RuntimeError("This GradientTape is already recording; a tape cannot be entered twice.")
        self._thread = threading.get_ident()
        _active_tapes.append(self)
        return self

    def __exit__(self, *exc_info):
        self._deactivate()
        return False

    def _deactivate(self):
        for i, t in enumerate(_active_tapes):
            if t is self:
                del _active_tapes[i]
                return True
        return False

    def _watch_variable(self, variable):
        entry = self._variables.get(id(variable))
        if entry is not None and entry[1] is variable.value:
            return
        value = variable.value
        self._variables[id(variable)] = (variable, value)
        if value.dtype.kind in "fc":
            self._tracked[id(value)] = value

    def watch(self, x):
        """Track ``x`` (an array, a ``Variable``, or a list/tuple of them).

        Non-float arrays are ignored: they never have gradients.
        """
        if isinstance(x, (list, tuple)):
            for item in x:
                self.watch(item)
        elif isinstance(x, Variable):
            self._watch_variable(x)
        elif isinstance(x, _ndarray):
            if x.dtype.kind in "fc":
                self._tracked[id(x)] = x
        else:
            raise TypeError(
                "GradientTape.watch() expects a NumPy array or a Variable (or a list of them); "
                f"wrap Python values with np.asarray first. Received: type(x)={type(x).__name__}"
            )

    def watched_variables(self):
        """Return the variables watched by this tape, in the order first seen."""
        return [v for v, _ in self._variables.values()]

    @contextlib.contextmanager
    def stop_recording(self):
        """Context manager in which ops are not recorded on this tape."""
        if not self._deactivate():
            raise RuntimeError("GradientTape.stop_recording() requires the tape to be recording.")
        try:
            yield
        finally:
            _active_tapes.append(self)

    def _source_array(self, s):
        if isinstance(s, Variable):
            entry = self._variables.get(id(s))
            return entry[1] if entry is not None and entry[0] is s else s.value
        if isinstance(s, _ndarray):
            return s
        raise TypeError(
            "Gradient sources must be Variables or NumPy arrays (or a list, tuple or dict of them). "
            f"Received: type(source)={type(s).__name__}"
        )

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """Return d(target)/d(sources), with the same structure as ``sources``.

        Args:
            target: an array (or a list of arrays, whose gradients are summed).
            sources: a Variable or array, or a list, tuple or dict of them.
            output_gradients: the cotangent of ``target`` (same structure);
                default ones, i.e. the gradient of ``sum(target)``.
            unconnected_gradients: ``"none"`` gives ``None`` for a source the
                target does not depend on; ``"zero"`` gives zeros.
        """
        mode = getattr(unconnected_gradients, "value", unconnected_gradients)
        if mode not in ("none", "zero"):
            raise ValueError(
                f"unconnected_gradients must be 'none' or 'zero'. Received: unconnected_gradients={mode!r}"
            )
        if self._used:
            raise RuntimeError(
                "A non-persistent GradientTape can only compute gradients once. "
                "Use GradientTape(persistent=True) to call gradient() several times."
            )
        # Any nesting of lists, tuples and dicts, as tf.GradientTape takes (a list of each model's variables);
        # a flat list (a train step's variables) is its own flattening.
        flat = type(sources) is list and not any(isinstance(s, (list, tuple, dict)) for s in sources)
        flat_sources = sources if flat else tree.flatten(sources) if isinstance(sources, (list, tuple, dict)) \
            else [sources]
        source_arrays = [self._source_array(s) for s in flat_sources]

        several = isinstance(target, (list, tuple))
        targets = [t if isinstance(t, _ndarray) else np.asarray(_value(t)) for t in (target if several else [target])]
        if output_gradients is None:
            seeds = [None] * len(targets)
        else:
            seeds = list(output_gradients) if several else [output_gradients]
            if len(seeds) != len(targets):
                raise ValueError(
                    "output_gradients must match target. "
                    f"Received: len(target)={len(targets)}, len(output_gradients)={len(seeds)}"
                )

        if not self._persistent:
            self._used = True
            self._deactivate()
        # A VJP may itself call kgraph.ops; keep those calls off this thread's tapes. Where another tape of this
        # thread records, the gradient is computed with ops it records (a gradient of a gradient).
        ident = threading.get_ident()
        suspended = [t for t in _active_tapes if t._thread == ident]
        for t in suspended:
            t._deactivate()
        outer = [t for t in suspended if t is not self]
        try:
            if outer:
                from kgraph.backend.higher_order import RecordedStep
                _active_tapes.extend(outer)
                try:
                    cotangents = self._backward(targets, seeds, source_arrays, RecordedStep(outer))
                finally:
                    for t in outer:
                        t._deactivate()
            else:
                cotangents = self._backward(targets, seeds, source_arrays)
        finally:
            _active_tapes.extend(suspended)
        if not self._persistent:
            self._records = []
            self._tracked = {}

        grads = []
        for s in source_arrays:
            g = cotangents.get(id(s))
            if g is None and mode == "zero":
                g = np.zeros_like(s)
            grads.append(g)
        if flat:
            return grads
        if isinstance(sources, (list, tuple, dict)):
            return tree.pack_sequence_as(sources, grads)
        return grads[0]

    def _backward(self, targets, seeds, source_arrays, step=None):
        """Cotangents by array id; ``step(record, g)`` computes a record's input cotangents (default: its VJP)."""
        tracked = self._tracked
        source_ids = {id(s) for s in source_arrays if id(s) in tracked}
        # Forward sweep: keep only the records through which a source reaches.
        relevant = set(source_ids)
        needed = []
        for record in self._records:
            for a in record[1]:
                if id(a) in relevant:
                    needed.append(record)
                    out = record[0]
                    if type(out) is tuple:
                        relevant.update([id(o) for o in out])
                    else:
                        relevant.add(id(out))
                    break

        cotangents = seed_cotangents(targets, seeds, relevant)

        for record in reversed(needed):
            out, inputs, vjp, spec, _ = record
            if type(out) is tuple:
                gs = [cotangents.get(id(o)) for o in out]
                if all(g is None for g in gs):
                    continue
                for o in out:
                    if id(o) not in source_ids:
                        cotangents.pop(id(o), None)
                g = tuple([spec.zeros(o.shape, o.dtype) if g is None else g for o, g in zip(out, gs)])
            else:
                g = cotangents.pop(id(out), None)
                if g is None:
                    continue
                if source_ids and id(out) in source_ids:
                    cotangents[id(out)] = g
            input_cts = vjp(g) if step is None else step(record, g)
            if type(input_cts) is not tuple and type(input_cts) is not list:
                input_cts = (input_cts,)
            if len(input_cts) < len(inputs):
                raise ValueError(
                    f"The VJP of '{spec.name}' returned {len(input_cts)} cotangents "
                    f"for {len(inputs)} inputs."
                )
            for a, ct in zip(inputs, input_cts):
                if ct is None:
                    continue
                key = id(a)
                if key not in relevant:
                    continue
                ct = input_cotangent(ct, a, spec.name)
                if ct is None:
                    continue
                prev = cotangents.get(key)
                cotangents[key] = ct if prev is None else prev + ct
        return cotangents


def value_and_grad(fn, variables, has_aux=False, unconnected_gradients="none"):
    """Return ``f(*args, **kwargs) -> (value, grads)`` for a scalar-valued ``fn``.

    Args:
        fn: the function to differentiate; it reads ``variables``.
        variables: a list of Variables (or arrays) to differentiate against;
            they are watched even if not trainable.
        has_aux: ``fn`` returns ``(value, aux)``; the gradient is of ``value``
            and the returned value is the pair.
        unconnected_gradients: ``"none"`` or ``"zero"``, as in
            ``GradientTape.gradient``.
    """
    variables = list(variables)

    def wrapped(*args, **kwargs):
        with GradientTape() as tape:
            tape.watch(variables)
            result = fn(*args, **kwargs)
        value = result[0] if has_aux else result
        grads = tape.gradient(value, variables, unconnected_gradients=unconnected_gradients)
        return result, grads

    return wrapped
