"""The gradients an optimizer's step takes: those given, checked against their variables, then clipped."""
import math
import warnings

import numpy as np

from kgraph.backend.variable import Variable


def checked(optimizer, grads, variables):
    """``(gradients, variables)``: the None gradients and their variables left out (a warning names them, once per
    variable), each gradient an array of its variable's shape and dtype."""
    for gradient in grads:
        if gradient is None:
            grads, variables = without_missing(optimizer, grads, variables)
            break
    out = []
    for gradient, variable in zip(grads, variables):
        # A Variable's own array of the same shape and dtype, as a step's gradients are: taken as it is.
        if type(gradient) is np.ndarray and isinstance(variable, Variable):
            value = variable.value
            if gradient.shape == value.shape and gradient.dtype == value.dtype:
                out.append(gradient)
                continue
        out.append(as_gradient(gradient, variable))
    return out, variables


def without_missing(optimizer, grads, variables):
    """``(grads, variables)`` without the pairs whose gradient is None; raises when every one is."""
    kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
    missing = [getattr(v, "path", v.name) for g, v in zip(grads, variables) if g is None]
    if not kept:
        raise ValueError(f"No gradients provided for any variable. Received None for: {missing}")
    new_missing = [path for path in missing if path not in optimizer._warned_missing]
    if new_missing:
        optimizer._warned_missing.update(new_missing)
        warnings.warn(
            f"Gradients do not exist for variables {new_missing} when minimizing the loss. "
            "If using `model.compile()`, did you forget to provide a `loss` argument?",
            stacklevel=4,
        )
    grads, variables = zip(*kept)
    return list(grads), list(variables)


def as_gradient(gradient, variable):
    """``gradient`` as an array of ``variable``'s dtype; raises when its shape is not the variable's."""
    gradient = np.asarray(gradient)
    if gradient.shape != tuple(variable.shape):
        raise ValueError(
            f"Gradient for variable '{getattr(variable, 'path', variable.name)}' has shape "
            f"{gradient.shape}, expected the variable's shape {tuple(variable.shape)}.")
    value = getattr(variable, "value", None)
    dtype = value.dtype if isinstance(value, np.ndarray) else np.dtype(variable.dtype)
    if gradient.dtype != dtype:
        gradient = gradient.astype(dtype)
    return gradient


def clipped(optimizer, grads):
    """``grads`` clipped by the optimizer's ``clipnorm``, ``global_clipnorm`` or ``clipvalue``.

    New arrays only: a gradient array may be shared with other gradients or with the tape, so it is never
    modified in place.
    """
    if optimizer.clipnorm and optimizer.clipnorm > 0:
        out = []
        for g in grads:
            norm = math.sqrt(float(np.dot(g.ravel(), g.ravel())))
            out.append(g * (optimizer.clipnorm / norm) if norm > optimizer.clipnorm else g)
        return out
    if optimizer.global_clipnorm and optimizer.global_clipnorm > 0:
        norm = math.sqrt(sum(float(np.dot(g.ravel(), g.ravel())) for g in grads))
        if not math.isfinite(norm):
            # Like Keras: an inf/NaN norm turns every gradient into NaN.
            return [np.full_like(g, np.nan) for g in grads]
        if norm <= optimizer.global_clipnorm:
            return grads
        scale = optimizer.global_clipnorm / norm
        return [g * scale for g in grads]
    if optimizer.clipvalue and optimizer.clipvalue > 0:
        return [np.clip(g, -optimizer.clipvalue, optimizer.clipvalue) for g in grads]
    return grads
