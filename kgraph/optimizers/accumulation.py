"""Gradient accumulation (the optimizers' ``gradient_accumulation_steps``), as Keras 3 does it.

With ``gradient_accumulation_steps=n`` the optimizer keeps one "gradient_accumulator" slot per variable. Of
every ``n`` consecutive steps the first ``n - 1`` only add their gradients into the accumulators; the ``n``-th
updates the variables with the average ``(g + accumulated) / n`` (clipped and with weight decay, as an
ordinary step) and resets the accumulators. ``iterations`` counts the updates (``steps // n``), which is the
step number an update's bias corrections and the moving averages see; a learning-rate schedule sees every step.
"""
import numpy as np

ACCUMULATOR = "gradient_accumulator"


def validate(steps):
    """``steps`` as an int >= 2, or None for no accumulation (Keras takes a false value as none)."""
    if not steps:
        return None
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 2:
        raise ValueError("`gradient_accumulation_steps` must be an integer >= 2. "
                         f"Received: gradient_accumulation_steps={steps}")
    return int(steps)


def accumulate(optimizer, grads, variables):
    """The averaged gradients on an update step (the accumulators then reset), or None on a step that only
    adds ``grads`` into the accumulators."""
    steps = optimizer.gradient_accumulation_steps
    index = optimizer._lookup()
    accumulators = [optimizer._slots[ACCUMULATOR][index[id(v)]] for v in variables]
    if (int(optimizer._iterations.value) + 1) % steps != 0:
        for gradient, accumulator in zip(grads, accumulators):
            accumulator.assign(accumulator.value + gradient)
        return None
    averaged = [(gradient + accumulator.value) / np.asarray(steps, dtype=gradient.dtype)
                for gradient, accumulator in zip(grads, accumulators)]
    for accumulator in accumulators:
        accumulator.assign(np.zeros_like(accumulator.value))
    return averaged
