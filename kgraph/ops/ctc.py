"""Connectionist temporal classification: ``ctc_loss`` (forward-backward in log space) and greedy ``ctc_decode``."""
import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.ops import math as _math

# ``kgraph.ops.nn`` names Keras's namespace, not the module: the module's ops are imported by name.
from kgraph.ops.nn import log_softmax as _log_softmax
from kgraph.ops.operations import op

__all__ = ["ctc_decode", "ctc_loss"]


def _logsumexp(*terms):
    stacked = np.stack(terms)
    top = np.max(stacked, axis=0)
    safe = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(stacked - safe), axis=0)) + safe


def _shifted(values, by):
    """``values`` moved ``by`` places right along the last axis, -inf filling in."""
    out = np.full_like(values, -np.inf)
    out[..., by:] = values[..., :values.shape[-1] - by]
    return out


def _lattice(log_probs, labels, steps, blank):
    """Forward and backward log variables of one sequence over its extended label ``blank, l1, blank, ...``."""
    ext = np.full(2 * len(labels) + 1, blank)
    ext[1::2] = labels
    size = len(ext)
    skip = np.zeros(size, dtype=bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    emit = log_probs[:steps, ext]
    alpha = np.full((steps, size), -np.inf)
    alpha[0, :min(2, size)] = emit[0, :min(2, size)]
    for t in range(1, steps):
        prev = alpha[t - 1]
        alpha[t] = _logsumexp(prev, _shifted(prev, 1), np.where(skip, _shifted(prev, 2), -np.inf)) + emit[t]
    beta = np.full((steps, size), -np.inf)
    beta[-1, max(size - 2, 0):] = emit[-1, max(size - 2, 0):]
    skip_back = np.zeros(size, dtype=bool)
    skip_back[:-2] = skip[2:]
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1]
        ahead1 = np.concatenate([nxt[1:], [-np.inf]])
        ahead2 = np.concatenate([nxt[2:], [-np.inf, -np.inf]])[:size]
        beta[t] = _logsumexp(nxt, ahead1, np.where(skip_back, ahead2, -np.inf)) + emit[t]
    total = _logsumexp(*[alpha[-1, s] for s in range(max(size - 2, 0), size)])
    return ext, alpha, beta, total


@primitive(num_inputs=1)
def _ctc_nll(log_probs, target, target_length, output_length, blank):
    log_probs = np.asarray(log_probs)
    batch = log_probs.shape[0]
    losses = np.zeros(batch, dtype=log_probs.dtype)
    lattices = []
    for b in range(batch):
        labels = np.asarray(target[b][:int(target_length[b])]).astype(np.int64)
        lattice = _lattice(log_probs[b].astype(np.float64), labels, int(output_length[b]), blank)
        lattices.append(lattice)
        losses[b] = -lattice[3]

    def vjp(g):
        grad = np.zeros(log_probs.shape, dtype=g.dtype)
        for b, (ext, alpha, beta, total) in enumerate(lattices):
            if not np.isfinite(total):
                continue
            steps = alpha.shape[0]
            # d(-log p)/d log y_t(k) = -sum over positions s labelled k of alpha * beta / (y_t(k) p).
            both = alpha + beta - log_probs[b][:steps][:, ext].astype(np.float64) - total
            for k in np.unique(ext):
                grad[b, :steps, k] = -g[b] * np.exp(_logsumexp(*both[:, ext == k].T))
        return grad

    return losses, vjp


@op
def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """Per-sequence CTC negative log-likelihood of ``target`` labels under logits ``(batch, time, classes)``."""
    log_probs = _log_softmax(output, axis=-1)
    return _ctc_nll(log_probs, _math.convert_to_numpy(target), _math.convert_to_numpy(target_length),
                    _math.convert_to_numpy(output_length), blank=int(mask_index))


@op
def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1, merge_repeated=True,
               mask_index=0):
    """Greedy CTC decoding: per step the likeliest class, repeats merged, blanks dropped; -1 pads.

    Returns ``(decoded of shape (1, batch, time), scores of shape (batch, 1))``, a score being minus the sum of
    the largest logit of each step (TensorFlow's and Keras's greedy score).
    """
    if strategy != "greedy":
        raise ValueError(f"kgraph decodes CTC greedily only. Received: strategy={strategy!r}")
    logits = np.asarray(_math.convert_to_numpy(inputs))
    lengths = np.asarray(_math.convert_to_numpy(sequence_lengths)).astype(np.int64)
    best = np.argmax(logits, axis=-1)
    batch, steps = best.shape
    decoded = np.full((1, batch, steps), -1, dtype=np.int32)
    scores = np.zeros((batch, 1), dtype=logits.dtype)
    for b in range(batch):
        path = best[b, :lengths[b]]
        scores[b, 0] = -np.sum(np.max(logits[b, :lengths[b]], axis=-1))
        keep = np.ones(len(path), dtype=bool)
        if merge_repeated and len(path):
            keep[1:] = path[1:] != path[:-1]
        labels = path[keep & (path != mask_index)]
        decoded[0, b, :len(labels)] = labels
    return decoded, scores
