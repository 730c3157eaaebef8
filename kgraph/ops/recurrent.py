"""Fused recurrent sequence ops (SimpleRNN, LSTM, GRU) with backpropagation through time.

Each op runs the whole recurrence over the time axis as one recorded primitive:
the forward loop keeps what the backward needs, and the VJP runs BPTT. The
input projection ``x @ kernel + bias`` for every timestep is computed by the
caller (one matmul) and passed in as ``projection`` of shape
``(batch, timesteps, gates * units)`` with Keras's gate order; the ops add the
recurrent part ``h @ recurrent_kernel`` step by step. Outputs are batch-major
and in processing order (reversed in time when ``go_backwards``), as Keras
returns them.
"""
import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.backend.cotangents import zero_view
from kgraph.ops import gate_activations
from kgraph.ops.kernels import gru as gru_kernel
from kgraph.ops.kernels import lstm as lstm_kernel
from kgraph.ops.kernels import projection as projection_bias
from kgraph.ops.operations import op

__all__ = ["gru", "lstm", "simple_rnn"]


class _RecurrentProduct:
    """``h @ kernel`` for a ``(units, gates * units)`` kernel, each gate block seeing its own mask of ``h``."""

    def __init__(self, kernel, masks):
        self.kernel = kernel
        self.masks = masks
        self.units = kernel.shape[0]
        self.gates = kernel.shape[1] // self.units
        self.kernel_t = None
        if masks is not None:
            self.blocks = kernel.reshape(self.units, self.gates, self.units).transpose(1, 0, 2)

    def forward(self, h, out):
        """Write the product for one step's ``h`` (batch, units) into ``out`` (batch, gates * units)."""
        if self.masks is None:
            np.matmul(h, self.kernel, out=out)
            return
        product = np.matmul(h * self.masks, self.blocks)
        out.reshape(h.shape[0], self.gates, self.units)[...] = product.transpose(1, 0, 2)

    def backward(self, d_out):
        """The cotangent of one step's ``h`` given that of the product."""
        if self.masks is None:
            if self.kernel_t is None:  # once per call: each step's product with a transposed view runs slower
                self.kernel_t = np.ascontiguousarray(self.kernel.T)
            return d_out @ self.kernel_t
        batch = d_out.shape[0]
        per_gate = d_out.reshape(batch, self.gates, self.units).transpose(1, 0, 2)
        d_masked = np.matmul(per_gate, self.blocks.transpose(0, 2, 1))
        d_masked *= self.masks
        return d_masked.sum(axis=0)

    def kernel_gradient(self, hidden, d_out):
        """The kernel cotangent from every step's ``h`` (T, batch, units) and product cotangent."""
        units = self.units
        if self.masks is None:
            return hidden.reshape(-1, units).T @ d_out.reshape(-1, d_out.shape[-1])
        blocks = [(hidden * self.masks[k]).reshape(-1, units).T @ d_out[..., k * units:(k + 1) * units]
                  .reshape(-1, units) for k in range(self.gates)]
        return np.concatenate(blocks, axis=1)


def _check(name, projection, recurrent_kernel, gates, masks):
    if projection.ndim != 3 or recurrent_kernel.ndim != 2 or \
            recurrent_kernel.shape[1] != gates * recurrent_kernel.shape[0] or \
            projection.shape[-1] != recurrent_kernel.shape[1]:
        raise ValueError(
            f"{name} expects projection of shape (batch, timesteps, {gates} * units) and recurrent_kernel "
            f"of shape (units, {gates} * units). Received: projection.shape={projection.shape}, "
            f"recurrent_kernel.shape={recurrent_kernel.shape}")
    units = recurrent_kernel.shape[0]
    if masks is not None and np.shape(masks) != (gates, projection.shape[0], units):
        raise ValueError(f"{name} expects recurrent_masks of shape {(gates, projection.shape[0], units)}. "
                         f"Received: {np.shape(masks)}")


def _steps(timesteps, go_backwards):
    """Pairs (processing step, input time index)."""
    return list(enumerate(range(timesteps - 1, -1, -1) if go_backwards else range(timesteps)))


def _start(states, initial, name, argument):
    """Put an initial state into ``states[0]`` (left zero when ``initial`` is None)."""
    if initial is None:
        return
    if np.shape(initial) != states.shape[1:]:
        raise ValueError(f"{name} expects `{argument}` of shape (batch, units) = {states.shape[1:]}. "
                         f"Received: shape={np.shape(initial)}")
    states[0] = initial


def _keep(step_mask, steps, dtype):
    """``(T, batch, 1)`` 1.0 where a processing step is unmasked, 0.0 where masked (None without a mask)."""
    if step_mask is None:
        return None
    return np.stack([step_mask[:, t] for _, t in steps]).astype(dtype)[..., None]


def _carry(new, old, keep):
    """Masked rows keep the previous state (Keras's masked-step rule), in place in ``new``."""
    if keep is not None:
        np.copyto(new, old, where=keep == 0)


def _sequence(hidden, keep, zero_output_for_mask):
    """The per-step outputs, batch-major, in processing order; zeros at masked steps if asked."""
    out = hidden[1:] * keep if keep is not None and zero_output_for_mask else hidden[1:]
    return out.transpose(1, 0, 2)


def _check_mask(name, step_mask, projection):
    if step_mask is not None and np.shape(step_mask) != projection.shape[:2]:
        raise ValueError(f"{name} expects step_mask of shape (batch, timesteps) = {projection.shape[:2]}. "
                         f"Received: step_mask.shape={np.shape(step_mask)}")


def _to_input_order(per_step, go_backwards):
    """A time-major (T, batch, n) array in processing order, as batch-major in input time order."""
    return (per_step[::-1] if go_backwards else per_step).transpose(1, 0, 2)


@op
@primitive(num_inputs=3)
def simple_rnn(projection, recurrent_kernel, initial_h=None, *, go_backwards=False, recurrent_masks=None,
               activation="tanh", step_mask=None, zero_output_for_mask=False):
    """Run ``h = activation(projection_t + h @ recurrent_kernel)`` over time.

    Args:
        projection: ``(batch, timesteps, units)`` input projections.
        recurrent_kernel: ``(units, units)``.
        initial_h: optional ``(batch, units)`` starting state (zeros when None).
        go_backwards: process the sequence from the last timestep.
        recurrent_masks: optional ``(1, batch, units)`` dropout mask of ``h``.
        activation: a Keras activation name.
        step_mask: optional ``(batch, timesteps)`` booleans; a masked step keeps the previous state and
            output (Keras's rule), or outputs zeros with ``zero_output_for_mask``.

    Returns:
        ``(sequence, last_h)``: all hidden states ``(batch, timesteps, units)``
        in processing order, and the final state ``(batch, units)``.
    """
    _check("simple_rnn", projection, recurrent_kernel, 1, recurrent_masks)
    _check_mask("simple_rnn", step_mask, projection)
    act = gate_activations.get(activation)
    batch, timesteps, units = projection.shape
    product = _RecurrentProduct(recurrent_kernel, recurrent_masks)
    hidden = np.zeros((timesteps + 1, batch, units), dtype=projection.dtype)
    _start(hidden, initial_h, "simple_rnn", "initial_h")
    steps = _steps(timesteps, go_backwards)
    keep = _keep(step_mask, steps, projection.dtype)
    derivative = np.empty_like(hidden[1:]) if keep is not None else None
    for s, t in steps:
        h = hidden[s + 1]
        product.forward(hidden[s], h)
        h += projection[:, t]
        act.forward(h, h)
        if keep is not None:
            derivative[s] = act.derivative(h)
            _carry(h, hidden[s], keep[s])

    def vjp(cotangents):
        g_sequence, g_last = cotangents
        slopes = derivative if keep is not None else act.derivative(hidden[1:])
        d_pre = np.empty_like(slopes)
        dh = g_last.copy()
        for s, _ in reversed(steps):
            dh += g_sequence[:, s] * keep[s] if keep is not None and zero_output_for_mask else g_sequence[:, s]
            if keep is not None:
                skip = dh * (1 - keep[s])
                dh *= keep[s]
            np.multiply(dh, slopes[s], out=d_pre[s])
            dh = product.backward(d_pre[s])
            if keep is not None:
                dh += skip
        return (_to_input_order(d_pre, go_backwards), product.kernel_gradient(hidden[:-1], d_pre),
                None if initial_h is None else dh)

    return (_sequence(hidden, keep, zero_output_for_mask), hidden[-1].copy()), vjp


@op
@primitive(num_inputs=5)
def lstm(projection, recurrent_kernel, initial_h=None, initial_c=None, bias=None, *, go_backwards=False,
         recurrent_masks=None, activation="tanh", recurrent_activation="sigmoid", step_mask=None,
         zero_output_for_mask=False):
    """Run a Keras LSTM cell (gate order i, f, c, o) over time.

    Args:
        projection: ``(batch, timesteps, 4 * units)`` input projections, with the bias unless ``bias`` is given.
        recurrent_kernel: ``(units, 4 * units)``.
        initial_h, initial_c: optional ``(batch, units)`` starting states (zeros when None).
        bias: optional ``(4 * units,)``, added to every step's projection: the values of a projection that
            holds it, without a pass over the projection to add it (the LSTM layer passes its bias here).
        go_backwards: process the sequence from the last timestep.
        recurrent_masks: optional ``(4, batch, units)`` dropout masks of ``h``, one per gate.
        activation, recurrent_activation: Keras activation names.
        step_mask, zero_output_for_mask: as in ``simple_rnn`` (a masked step keeps ``h`` and ``c``).

    Returns:
        ``(sequence, last_h, last_c)``.
    """
    _check("lstm", projection, recurrent_kernel, 4, recurrent_masks)
    _check_mask("lstm", step_mask, projection)
    if bias is not None and np.shape(bias) != projection.shape[-1:]:
        raise ValueError(f"lstm expects bias of shape (4 * units,) = {projection.shape[-1:]}. "
                         f"Received: shape={np.shape(bias)}")
    if lstm_kernel.applies(activation, recurrent_activation, recurrent_masks, step_mask):
        return lstm_kernel.run(projection, recurrent_kernel, initial_h, initial_c, go_backwards, step_mask,
                               zero_output_for_mask, bias)
    if bias is not None:
        projection = projection_bias.with_bias(projection, bias)
    act = gate_activations.get(activation)
    gate_act = gate_activations.get(recurrent_activation)
    batch, timesteps, width = projection.shape
    u = width // 4
    product = _RecurrentProduct(recurrent_kernel, recurrent_masks)
    gates = np.empty((timesteps, batch, width), dtype=projection.dtype)
    cells = np.zeros((timesteps + 1, batch, u), dtype=projection.dtype)
    hidden = np.zeros((timesteps + 1, batch, u), dtype=projection.dtype)
    _start(hidden, initial_h, "lstm", "initial_h")
    _start(cells, initial_c, "lstm", "initial_c")
    act_cells = np.empty((timesteps, batch, u), dtype=projection.dtype)
    steps = _steps(timesteps, go_backwards)
    keep = _keep(step_mask, steps, projection.dtype)
    for s, t in steps:
        z = gates[s]
        product.forward(hidden[s], z)
        z += projection[:, t]
        gate_act.forward(z[:, :2 * u], z[:, :2 * u])
        act.forward(z[:, 2 * u:3 * u], z[:, 2 * u:3 * u])
        gate_act.forward(z[:, 3 * u:], z[:, 3 * u:])
        c = cells[s + 1]
        np.multiply(z[:, u:2 * u], cells[s], out=c)
        c += z[:, :u] * z[:, 2 * u:3 * u]
        act.forward(c, act_cells[s])
        np.multiply(z[:, 3 * u:], act_cells[s], out=hidden[s + 1])
        if keep is not None:
            _carry(c, cells[s], keep[s])
            _carry(hidden[s + 1], hidden[s], keep[s])

    def vjp(cotangents):
        g_sequence, g_h, g_c = cotangents
        derivative = np.empty_like(gates)
        derivative[..., :2 * u] = gate_act.derivative(gates[..., :2 * u])
        derivative[..., 2 * u:3 * u] = act.derivative(gates[..., 2 * u:3 * u])
        derivative[..., 3 * u:] = gate_act.derivative(gates[..., 3 * u:])
        # d h / d c at each step: o * act'(c).
        h_to_c = gates[..., 3 * u:] * act.derivative(act_cells)
        d_pre = np.empty_like(gates)
        dh = g_h.copy()
        dc = g_c.copy()
        for s, _ in reversed(steps):
            z = gates[s]
            dz = d_pre[s]
            dh += g_sequence[:, s] * keep[s] if keep is not None and zero_output_for_mask else g_sequence[:, s]
            if keep is not None:
                skip_h, skip_c = dh * (1 - keep[s]), dc * (1 - keep[s])
                dh *= keep[s]
                dc *= keep[s]
            dc += dh * h_to_c[s]
            np.multiply(dc, z[:, 2 * u:3 * u], out=dz[:, :u])
            np.multiply(dc, cells[s], out=dz[:, u:2 * u])
            np.multiply(dc, z[:, :u], out=dz[:, 2 * u:3 * u])
            np.multiply(dh, act_cells[s], out=dz[:, 3 * u:])
            dz *= derivative[s]
            dc *= z[:, u:2 * u]
            dh = product.backward(dz)
            if keep is not None:
                dh += skip_h
                dc += skip_c
        d_projection = _to_input_order(d_pre, go_backwards)
        return (d_projection, product.kernel_gradient(hidden[:-1], d_pre), None if initial_h is None else dh,
                None if initial_c is None else dc, None if bias is None else projection_bias.bias_gradient(d_projection))

    return (_sequence(hidden, keep, zero_output_for_mask), hidden[-1].copy(), cells[-1].copy()), vjp




@op
@primitive(num_inputs=5)
def gru(projection, recurrent_kernel, recurrent_bias=None, initial_h=None, bias=None, *, reset_after=True,
        go_backwards=False, recurrent_masks=None, activation="tanh", recurrent_activation="sigmoid", step_mask=None,
        zero_output_for_mask=False):
    """Run a Keras GRU cell (gate order z, r, h) over time.

    Args:
        projection: ``(batch, timesteps, 3 * units)`` input projections, with the input bias unless ``bias`` is
            given.
        recurrent_kernel: ``(units, 3 * units)``.
        recurrent_bias: optional ``(3 * units,)`` bias of the recurrent product
            (only with ``reset_after``).
        initial_h: optional ``(batch, units)`` starting state (zeros when None).
        bias: optional ``(3 * units,)`` input bias, added to every step's projection: the values of a projection
            that holds it, without a pass over the projection to add it (the GRU layer passes its input bias here).
        reset_after: apply the reset gate after the recurrent matmul (Keras's
            default) rather than to ``h`` before it.
        go_backwards: process the sequence from the last timestep.
        recurrent_masks: optional ``(3, batch, units)`` dropout masks of ``h``, one per gate.
        activation, recurrent_activation: Keras activation names.
        step_mask, zero_output_for_mask: as in ``simple_rnn``.

    Returns:
        ``(sequence, last_h)``.
    """
    _check("gru", projection, recurrent_kernel, 3, recurrent_masks)
    _check_mask("gru", step_mask, projection)
    if recurrent_bias is not None and not reset_after:
        raise ValueError("gru takes a recurrent_bias only with reset_after=True; without it the whole "
                         "bias belongs in the projection. Received: reset_after=False and a recurrent_bias")
    if bias is not None and np.shape(bias) != projection.shape[-1:]:
        raise ValueError(f"gru expects bias of shape (3 * units,) = {projection.shape[-1:]}. "
                         f"Received: shape={np.shape(bias)}")
    act = gate_activations.get(activation)
    gate_act = gate_activations.get(recurrent_activation)
    batch, timesteps, width = projection.shape
    u = width // 3
    dtype = projection.dtype
    if reset_after:
        product = _RecurrentProduct(recurrent_kernel, recurrent_masks)
    else:
        zr_masks = None if recurrent_masks is None else recurrent_masks[:2]
        product = _RecurrentProduct(recurrent_kernel[:, :2 * u], zr_masks)
        candidate_kernel = recurrent_kernel[:, 2 * u:]
    h_mask = None if recurrent_masks is None else recurrent_masks[2]
    gates = np.empty((timesteps, batch, width), dtype=dtype)
    # reset_after keeps the recurrent candidate h @ R_h + b_h; otherwise r * h.
    kept = np.empty((timesteps, batch, u), dtype=dtype)
    recurrent = np.empty((batch, product.gates * u), dtype=dtype)
    hidden = np.zeros((timesteps + 1, batch, u), dtype=dtype)
    _start(hidden, initial_h, "gru", "initial_h")
    steps = _steps(timesteps, go_backwards)
    keep = _keep(step_mask, steps, dtype)
    fused = gru_kernel.applies(reset_after, recurrent_masks, activation, recurrent_activation, projection,
                               recurrent_kernel, recurrent_bias)
    step_bias = bias if fused is not None and np.asarray(bias).dtype == dtype else None
    if bias is not None and step_bias is None:
        projection = projection_bias.with_bias(projection, bias)
    if fused is not None:  # the same operations as the loop below, in compiled loops
        compiled_state = gru_kernel.run(fused, projection, recurrent_kernel, recurrent_bias, hidden, gates, kept,
                                        keep, steps, step_bias)
    for s, t in [] if fused is not None else steps:
        z = gates[s]
        h_prev = hidden[s]
        product.forward(h_prev, recurrent)
        if recurrent_bias is not None:
            recurrent += recurrent_bias
        np.add(projection[:, t, :2 * u], recurrent[:, :2 * u], out=z[:, :2 * u])
        gate_act.forward(z[:, :2 * u], z[:, :2 * u])
        candidate = z[:, 2 * u:]
        if reset_after:
            kept[s] = recurrent[:, 2 * u:]
            np.multiply(z[:, u:2 * u], kept[s], out=candidate)
        else:
            np.multiply(z[:, u:2 * u], h_prev if h_mask is None else h_prev * h_mask, out=kept[s])
            np.matmul(kept[s], candidate_kernel, out=candidate)
        candidate += projection[:, t, 2 * u:]
        act.forward(candidate, candidate)
        h = hidden[s + 1]
        np.subtract(h_prev, candidate, out=h)
        h *= z[:, :u]
        h += candidate
        if keep is not None:
            _carry(h, h_prev, keep[s])

    def vjp(cotangents):
        if fused is not None:
            d_pre, d_recurrent, dh = gru_kernel.vjp(fused, cotangents, recurrent_kernel, gates, kept, hidden, keep,
                                                    steps, zero_output_for_mask, compiled_state)
            return _gru_gradients(product, hidden, d_pre, d_recurrent, dh, recurrent_bias, initial_h, go_backwards)
        g_sequence, g_h = cotangents
        update, reset, candidate = gates[..., :u], gates[..., u:2 * u], gates[..., 2 * u:]
        to_update = (hidden[:-1] - candidate) * gate_act.derivative(update)
        to_candidate = (1 - update) * act.derivative(candidate)
        reset_derivative = gate_act.derivative(reset)
        if reset_after:
            to_reset = kept * reset_derivative
        else:
            to_reset = (hidden[:-1] if h_mask is None else hidden[:-1] * h_mask) * reset_derivative
        d_pre = np.empty_like(gates)
        d_recurrent = np.empty((timesteps, batch, product.gates * u), dtype=dtype)
        dh = g_h.copy()
        for s, _ in reversed(steps):
            d = d_pre[s]
            dh += g_sequence[:, s] * keep[s] if keep is not None and zero_output_for_mask else g_sequence[:, s]
            skip = 0.0
            if keep is not None:
                skip = dh * (1 - keep[s])
                dh *= keep[s]
            np.multiply(dh, to_update[s], out=d[:, :u])
            np.multiply(dh, to_candidate[s], out=d[:, 2 * u:])
            if reset_after:
                d_r = d_recurrent[s]
                np.multiply(d[:, 2 * u:], to_reset[s], out=d[:, u:2 * u])
                d_r[:, :2 * u] = d[:, :2 * u]
                np.multiply(d[:, 2 * u:], reset[s], out=d_r[:, 2 * u:])
                dh = dh * update[s] + product.backward(d_r) + skip
            else:
                d_kept = d[:, 2 * u:] @ candidate_kernel.T
                np.multiply(d_kept, to_reset[s], out=d[:, u:2 * u])
                d_kept *= reset[s]
                if h_mask is not None:
                    d_kept *= h_mask
                d_recurrent[s] = d[:, :2 * u]
                dh = dh * update[s] + d_kept + product.backward(d_recurrent[s]) + skip
        if not reset_after:
            d_kernel = product.kernel_gradient(hidden[:-1], d_recurrent)
            d_candidate = kept.reshape(-1, u).T @ d_pre[..., 2 * u:].reshape(-1, u)
            d_kernel = np.concatenate([d_kernel, d_candidate], axis=1)
            d_bias = None if recurrent_bias is None else d_recurrent.sum(axis=(0, 1))
            return _to_input_order(d_pre, go_backwards), d_kernel, d_bias, None if initial_h is None else dh
        return _gru_gradients(product, hidden, d_pre, d_recurrent, dh, recurrent_bias, initial_h, go_backwards)

    def vjp_with_bias(cotangents):
        cts = vjp(cotangents)
        return cts + (None if bias is None else projection_bias.bias_gradient(cts[0]),)

    return (_sequence(hidden, keep, zero_output_for_mask), hidden[-1].copy()), vjp_with_bias


# A layer returning only its last state leaves the sequence unread: the VJPs see that without scanning zeros.
lstm._kgraph_primitive.zeros = gru._kgraph_primitive.zeros = zero_view


def _gru_gradients(product, hidden, d_pre, d_recurrent, dh, recurrent_bias, initial_h, go_backwards):
    """The ``reset_after`` GRU's VJP outputs from its per-step cotangents (processing order)."""
    d_kernel = product.kernel_gradient(hidden[:-1], d_recurrent)
    d_bias = None if recurrent_bias is None else d_recurrent.sum(axis=(0, 1))
    return _to_input_order(d_pre, go_backwards), d_kernel, d_bias, None if initial_h is None else dh
