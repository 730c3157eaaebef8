"""Elementwise optimizer updates shared between the calling thread and one worker thread.

NumPy's ufuncs run on one core and release the GIL, so the same in-place
update run on two halves of the variables at once takes about half the time
on two cores; the result is the same, element for element. Each large
variable is cut in two flat halves (the update must be elementwise: the
optimizer's ``_elementwise_update``); small updates stay in the calling thread,
where a hand-off would cost more than it saves, and ``threads.Timing`` keeps
whichever way has been faster on this machine lately.
"""
import time

from kgraph.ops.kernels import threads

# Below this many elements in all, a step's update runs in the calling thread alone.
SPLIT_ELEMENTS = 1 << 16
# The same for an update compiled into one loop (``kernels.compiled``), about four times faster per element: Adam's
# over 670k float32 elements took 0.22 ms whole and 0.19 ms in halves on two idle cores, and lost in halves
# within a training step, beside BLAS's spinning threads (0.60 against 0.36 ms); over 2M: 0.77 and 0.48 ms.
# Below it no worker thread starts, so BLAS keeps its long spin, which suits a step made of products (MLP 784-
# 512-512-10: 5 % faster than with the short spin a split sets, ``threads.shorten_blas_spin``).
FUSED_SPLIT_ELEMENTS = 1 << 20
# A variable smaller than this is updated whole, by one thread.
_PIECE_ELEMENTS = 1 << 13


def _halves(arrays):
    """Each array of one job as two flat halves, or None when one of them is not contiguous."""
    if not all(a.flags.c_contiguous for a in arrays):
        return None
    flat = [a.reshape(-1) for a in arrays]
    half = flat[0].size // 2
    return [f[:half] for f in flat], [f[half:] for f in flat]


def _split(jobs):
    """``(worker_jobs, own_jobs)``: about half of the elements each, big variables cut in two."""
    worker, own = [], []
    for gradient, value, slots, scratch in jobs:
        halves = _halves([gradient, value, scratch, *slots]) if value.size >= _PIECE_ELEMENTS else None
        if halves is None:
            own.append((gradient, value, slots, scratch))
            continue
        for part, side in zip(halves, (worker, own)):
            side.append((part[0], part[1], part[3:], part[2]))
    return worker, own


def run(update_jobs, jobs, learning_rate, timing=None, fused=False):
    """Apply ``update_jobs(jobs, learning_rate)`` (each job ``(gradient, value, slots, scratch)``) to every job, in
    two threads when the jobs are large enough and ``timing`` (a ``threads.Timing``; None: always) finds that
    faster. ``fused``: the update runs as a compiled loop (the larger threshold, ``FUSED_SPLIT_ELEMENTS``)."""
    least = FUSED_SPLIT_ELEMENTS if fused else SPLIT_ELEMENTS
    if sum(job[1].size for job in jobs) < least or threads.cores() < 2:
        update_jobs(jobs, learning_rate)
        return
    split = timing is None or timing.choose()
    start = time.perf_counter()
    worker_jobs, own_jobs = _split(jobs) if split else ([], jobs)
    if worker_jobs:
        pending = threads.worker().submit(update_jobs, worker_jobs, learning_rate)
        try:
            update_jobs(own_jobs, learning_rate)
        finally:
            pending.result()
    else:
        update_jobs(own_jobs, learning_rate)
    if timing is not None:
        timing.record(split, time.perf_counter() - start)
