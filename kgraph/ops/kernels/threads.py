"""A second thread for NumPy work that splits in two independent halves (NumPy releases the GIL).

NumPy's ufuncs run on one core; OpenBLAS spreads one product over its own
threads. ``in_halves`` runs two halves of a job at once, one in the calling
thread and one in this process's worker, with BLAS held to one thread meanwhile
(through threadpoolctl, when installed; without it the job runs whole in the
calling thread, since two threads whose products each start BLAS threads of
their own oversubscribe the cores). Which way is faster depends on the CPU and
on what else keeps its cores busy, so callers time both with ``Timing``.

OpenBLAS's own threads spin on their cores for 2**28 cycles (about 0.1 s)
after each product before they sleep, so a second thread of ours started within
that time shares its core with a spinning one: a split LSTM step measured 40 %
slower than a whole one that way, and 25 % faster once the spin was 2**20
cycles (about 0.4 ms, still longer than the gaps between a step's products).
The first split therefore shortens it (``shorten_blas_spin``), unless
``OPENBLAS_THREAD_TIMEOUT`` is set in the environment, which then stays as set.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from kgraph.ops.kernels import environment

__all__ = ["Timing", "can_split", "cores", "in_halves", "timings", "worker"]

# OpenBLAS's spin before its threads sleep, as a power of two of CPU cycles (see the module docstring).
BLAS_SPIN_LOG2_CYCLES = 20

_lock = threading.Lock()
_splitting = threading.Lock()
_pool = None
_pool_pid = None
_controller = None


def worker():
    """The process's worker thread (a new one after a fork, whose child has no threads)."""
    global _pool, _pool_pid
    _blas_controller()  # a second thread of work: BLAS's threads should not spin beside it for long
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgraph-kernel")
            _pool_pid = os.getpid()
        return _pool


def _blas_controller():
    """threadpoolctl's controller of the loaded BLAS libraries, or None without threadpoolctl or cores."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _controller = False
        else:
            _controller = ThreadpoolController().select(user_api="blas") if cores() > 1 else False
            if _controller:
                shorten_blas_spin(_controller)
    return _controller or None


def shorten_blas_spin(controller):
    """Restart each loaded pthreads OpenBLAS's threads with a spin of ``2**BLAS_SPIN_LOG2_CYCLES`` cycles.

    OpenBLAS reads ``OPENBLAS_THREAD_TIMEOUT`` when it starts its threads, so this sets the variable (when the
    user has not), has the library read its environment again, and stops its threads: its next product starts
    them anew with the shorter spin (as after a fork). Values are unchanged; libraries without these entry
    points (other BLAS builds) are left alone, and so is everything while other Python threads run (one of
    them might be inside a product). Returns the libraries restarted.
    """
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return []
    # Stopping OpenBLAS's threads while another thread runs a product can lose that product's work (the
    # library clears its job queues): with any other Python thread alive, nothing is restarted.
    if any(t is not threading.current_thread() for t in threading.enumerate()):
        return []
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(BLAS_SPIN_LOG2_CYCLES)
    restarted = []
    for lib in controller.lib_controllers:
        if lib.internal_api != "openblas" or getattr(lib, "threading_layer", None) != "pthreads":
            continue
        read_env = getattr(lib.dynlib, "openblas_read_env", None)
        shutdown = getattr(lib.dynlib, "blas_thread_shutdown_", None)
        if read_env is None or shutdown is None:
            continue
        read_env()
        shutdown()
        restarted.append(lib.filepath)
    return restarted


# Environment variable: how many threads kgraph's kernels may use (1: every job runs whole in the calling thread).
THREADS_VARIABLE = "KGRAPH_KERNEL_THREADS"


def cores():
    """The cores kgraph's kernels may use: ``KGRAPH_KERNEL_THREADS`` when set, else those this process may run on.

    With ``KGRAPH_KERNEL_THREADS=1`` no job is split and the worker thread never starts, so no second thread's
    heap (glibc gives each thread that allocates its own arena) or BLAS buffers join the process's memory: the
    digits CNN's training step peaks at 93 MiB instead of 109, at about 1.15x its time.
    """
    value = environment.read(THREADS_VARIABLE)
    if value is not None:
        if not value.strip().isdigit() or int(value) < 1:
            raise ValueError(f"{THREADS_VARIABLE}={value!r}: expected a whole number of threads, 1 or more")
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def can_split():
    """Whether ``in_halves`` runs its halves at once (threadpoolctl installed, two cores or more)."""
    return _blas_controller() is not None


def in_halves(job, first, second):
    """Run ``job(first)`` in the worker and ``job(second)`` here, BLAS on one thread each, and wait for both.

    Without threadpoolctl (see ``can_split``), or while another thread is splitting a job, both run here,
    one after the other.
    """
    controller = _blas_controller()
    # One split at a time: BLAS's thread count is process-wide, and a second thread splitting meanwhile would
    # restore it out of order; that thread runs its job whole instead.
    if controller is None or not _splitting.acquire(blocking=False):
        job(first)
        job(second)
        return
    # BLAS's thread counts set directly: threadpoolctl's limiter object also reads every library's info, which
    # took 60 to 70 us of each split inside a training step (its setting and restoring alone, 3 us).
    # A library that cannot say how many threads it has is left as it is.
    try:
        libraries = [(library, library.get_num_threads()) for library in controller.lib_controllers]
        libraries = [(library, count) for library, count in libraries if count is not None]
        for library, _ in libraries:
            library.set_num_threads(1)
        try:
            pending = worker().submit(job, first)
            try:
                job(second)
            finally:
                pending.result()
        finally:
            for library, count in libraries:
                library.set_num_threads(count)
    finally:
        _splitting.release()


class Timing:
    """Whether to split a job in two threads, by how long each way took lately (both give the same values).

    Two threads pay on two free cores and lose where the cores are busy with other work, and BLAS's own
    threads may already use both cores well; so the choice is measured, not assumed: each way runs once to
    warm up (its first run pays one-time costs: the worker thread, BLAS's restart) and is then timed, the
    faster one is taken, and every ``RETRY``-th call retimes the other. Each way counts as the fastest of its
    last ``WINDOW`` timed runs: other work on a shared machine only ever adds time, and an average of two
    runs let one slow run pick the slower way for the next sixteen calls (an LSTM step 1.6 ms slower).
    """

    RETRY = 16
    WINDOW = 4

    def __init__(self):
        self.recent = {True: [], False: []}  # each way's last timed runs, oldest first
        self.runs = {True: 0, False: 0}
        self.steps = 0

    @property
    def seconds(self):
        """Each way's time: the fastest of its recent timed runs (None before one)."""
        return {split: min(times) if times else None for split, times in self.recent.items()}

    def choose(self):
        """True to split this call's job between two threads."""
        self.steps += 1
        seconds = self.seconds
        for split in (True, False):
            if seconds[split] is None:
                return split
        faster = seconds[True] <= seconds[False]
        return not faster if self.steps % self.RETRY == 0 else faster

    def record(self, split, seconds):
        self.runs[split] += 1
        if self.runs[split] == 1:
            return  # the warm-up run
        times = self.recent[split]
        times.append(seconds)
        del times[:-self.WINDOW]

    def add(self, split, seconds):
        """Add a later part of the call last recorded (a backward pass that follows the forward's choice)."""
        if self.recent[split] and self.runs[split] > 1:
            self.recent[split][-1] += seconds


# Most keys a table of timings keeps (call shapes may vary without bound): a full table starts again.
TABLE_KEYS = 64


def timings(table, key, count=1):
    """The split-or-not timing(s) kept in ``table`` (a dict of the caller's) for calls of ``key``: one ``Timing``,
    or a tuple of ``count`` (a forward's and a backward's). A table of ``TABLE_KEYS`` keys is emptied before a new
    key joins it."""
    if key not in table and len(table) >= TABLE_KEYS:
        table.clear()
    if key not in table:
        table[key] = Timing() if count == 1 else tuple(Timing() for _ in range(count))
    return table[key]
