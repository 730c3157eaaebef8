"""Finite-difference gradient checks for ops, layers and models.

``check_gradients`` compares the tape's gradients of a function of arrays with
central differences; ``check_variable_gradients`` does the same for a function
of ``Variable``s (a layer's weights). Both work in float64 and check VJPs: the
gradient of ``sum(fn(...) * c)`` for a fixed random cotangent ``c``, so every
output element is weighted differently and a transposed or mis-summed gradient
cannot pass.
"""
import numpy as np

from kgraph.backend.autodiff import GradientTape


def _weighted_sum(out, cotangent):
    return float(np.sum(np.asarray(out, dtype=np.float64) * cotangent))


def _float64_output(out, what):
    out = np.asarray(out)
    if out.dtype != np.float64:
        raise ValueError(
            f"Gradient checks need a float64 {what} output for finite differences to be accurate. "
            f"Received: output dtype={out.dtype}"
        )
    return out


def _compare(name, analytic, numeric, rtol, atol):
    if analytic is None:
        if np.any(numeric != 0):
            raise AssertionError(
                f"{name}: the tape returned no gradient (None) but finite differences are non-zero: "
                f"max |numeric|={np.max(np.abs(numeric)):.3g}"
            )
        return
    analytic = np.asarray(analytic)
    if analytic.shape != numeric.shape:
        raise AssertionError(f"{name}: gradient shape {analytic.shape} != input shape {numeric.shape}")
    if analytic.dtype != np.float64:
        raise AssertionError(f"{name}: gradient dtype {analytic.dtype} != input dtype float64")
    err = np.abs(analytic - numeric)
    bad = err > atol + rtol * np.abs(numeric)
    if np.any(bad):
        worst = np.unravel_index(np.argmax(err - rtol * np.abs(numeric)), numeric.shape)
        raise AssertionError(
            f"{name}: tape gradient differs from finite differences at {int(bad.sum())} of "
            f"{bad.size} elements; worst at index {tuple(int(i) for i in worst)}: "
            f"tape={analytic[worst]:.10g}, numeric={numeric[worst]:.10g}"
        )


def check_gradients(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Assert that the tape gradients of ``fn`` match central finite differences.

    Every input is differentiated. Keep inputs small (tens of elements): each
    element costs two extra calls of ``fn``. Avoid inputs within ``eps`` of a
    kink (relu at 0, ties of max).

    Args:
        fn: ``fn(xs) -> array``, where ``xs`` is a list of float64 arrays; it
            must compute with ``kgraph.ops`` (or Variable arithmetic) and be
            deterministic.
        inputs: the arrays to differentiate at; float64 copies are used.
        eps: the finite-difference step.
        rtol, atol: an element passes when
            ``|tape - numeric| <= atol + rtol * |numeric|``.
        seed: seed of the random cotangent.

    Returns:
        The tape gradients, one per input (``None`` where unconnected).

    Example::

        check_gradients(lambda xs: ops.matmul(xs[0], xs[1]), [a, b])
    """
    xs = [np.array(x, dtype=np.float64) for x in inputs]
    out = _float64_output(fn(xs), "fn")
    cotangent = np.random.default_rng(seed).standard_normal(out.shape)
    with GradientTape() as tape:
        tape.watch(xs)
        out = fn(xs)
    grads = tape.gradient(out, xs, output_gradients=cotangent)
    for i, x in enumerate(xs):
        numeric = np.zeros_like(x)
        flat = x.reshape(-1)
        for j in range(flat.size):
            original = flat[j]
            flat[j] = original + eps
            plus = _weighted_sum(fn(xs), cotangent)
            flat[j] = original - eps
            minus = _weighted_sum(fn(xs), cotangent)
            flat[j] = original
            numeric.reshape(-1)[j] = (plus - minus) / (2 * eps)
        _compare(f"input {i} (shape {x.shape})", grads[i], numeric, rtol, atol)
    return grads


def check_variable_gradients(fn, variables, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Assert that the tape gradients of ``fn`` w.r.t. ``variables`` match finite differences.

    Args:
        fn: ``fn() -> array`` reading the variables, e.g. ``lambda: layer(x)``.
        variables: float64 ``Variable``s (e.g. ``layer.trainable_weights``);
            they are watched even if not trainable, and restored afterwards.
        eps, rtol, atol, seed: as in ``check_gradients``.

    Returns:
        The tape gradients, one per variable.
    """
    variables = list(variables)
    for v in variables:
        if v.dtype != "float64":
            raise ValueError(
                f"check_variable_gradients needs float64 variables. Received: {v.path} of dtype {v.dtype}"
            )
    out = _float64_output(fn(), "fn")
    cotangent = np.random.default_rng(seed).standard_normal(out.shape)
    with GradientTape() as tape:
        tape.watch(variables)
        out = fn()
    grads = tape.gradient(out, variables, output_gradients=cotangent)
    for v, grad in zip(variables, grads):
        base = v.numpy()
        numeric = np.zeros_like(base)
        try:
            for j in range(base.size):
                probe = base.copy()
                probe.reshape(-1)[j] += eps
                v.assign(probe)
                plus = _weighted_sum(fn(), cotangent)
                probe.reshape(-1)[j] -= 2 * eps
                v.assign(probe)
                minus = _weighted_sum(fn(), cotangent)
                numeric.reshape(-1)[j] = (plus - minus) / (2 * eps)
        finally:
            v.assign(base)
        _compare(f"variable {v.path} (shape {base.shape})", grad, numeric, rtol, atol)
    return grads
