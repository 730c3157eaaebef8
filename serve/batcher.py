"""Dynamic batching: a per-model queue that merges compatible requests into one session run."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Callable
from time import perf_counter_ns

import numpy as np

from serve.metrics import ModelStats
from serve.protocol import InferRequest, ProtocolError
from serve.runtime import InferencePool, ModelSession, execution_error

logger = logging.getLogger("serve.batcher")

# Batch keys whose run times a batcher keeps (cleared when full: a model may take many input shapes).
_TIMED_KEYS = 64


class _Job:
    """One request waiting for, or taking part in, a session run."""

    __slots__ = ("request", "future", "arrival", "enqueued_ns", "result", "listener")

    def __init__(self, request: InferRequest, future: asyncio.Future | None, arrival: float,
                 listener: Callable[[_Job], None] | None = None) -> None:
        self.request = request
        self.future = future
        self.arrival = arrival
        self.enqueued_ns = perf_counter_ns()
        self.result: list[np.ndarray] | ProtocolError | None = None
        self.listener = listener


class Batcher:
    """Merges concurrent requests for one model version along axis 0 and splits the outputs back."""

    def __init__(
        self,
        session: ModelSession,
        pool: InferencePool,
        stats: ModelStats,
        max_rows: int,
        max_delay_s: float,
        max_queue_size: int = 0,
        max_elements: int = 0,
        name: str = "the model",
    ) -> None:
        """MAX_QUEUE_SIZE bounds the requests waiting for a run beyond the pool's threads, and
        MAX_ELEMENTS the input elements of every request held (queued or running); 0 turns a bound off."""
        self._session = session
        self._pool = pool
        self._stats = stats
        self.max_rows = max_rows
        self.max_delay_s = max_delay_s
        self.enabled = max_rows > 1
        # config.pbtxt's preferred_batch_size: a batch of one of these row counts runs without waiting out the delay.
        self.preferred_rows: tuple[int, ...] = ()
        self._input_names = [spec.name for spec in session.inputs]
        self._queue: deque[_Job] = deque()
        self._waiter: asyncio.Future | None = None
        self._closing = False
        self._task: asyncio.Task | None = None
        # The batching loop's event loop (asyncio.get_running_loop() makes a system call on every call).
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None
        # Seconds per row of this model's runs, per batch key (the inner dims of the inputs, which a batch's
        # requests share): how long the next run of that shape may take (see _timed).
        self._row_s: dict[tuple, float] = {}
        self.max_queue_size = max_queue_size
        self.max_elements = max_elements
        self.name = name
        self.pending = 0
        self.elements = 0

    def start(self) -> None:
        """Start the batching loop on the running event loop."""
        if self.enabled:
            self._slots = asyncio.Semaphore(self._pool.threads)
            self._loop = asyncio.get_running_loop()
            self._task = self._loop.create_task(self._batch_loop())

    async def close(self) -> None:
        """Run every queued request, wait for running batches, then stop the loop."""
        self._closing = True
        self._wake()
        if self._task is not None:
            await self._task
            for _ in range(self._pool.threads):
                await self._slots.acquire()

    async def infer(self, request: InferRequest) -> list[np.ndarray]:
        """Outputs (in model order) of a validated request, run alone or merged with its neighbours."""
        job = self.submit(request)
        await job.future
        return self.result(job)

    def submit(self, request: InferRequest, listener: Callable[[_Job], None] | None = None) -> _Job:
        """Queue a validated request (or start its run at once when it cannot be merged) and return its job,
        whose ``future`` completes once ``result(job)`` can tell the outputs. Raises the capacity errors.

        A transport may await the future (``infer``), add a done callback to it, or pass LISTENER, called
        once with the job: as soon as its batch's results reach the event loop (a pass before the future's
        own callbacks run), or when its future is cancelled. Cancelling the future before its batch forms
        drops the request unrun."""
        running = self._task is not None and not self._task.done()
        loop = self._loop if running else asyncio.get_running_loop()
        elements = self._admit(request)
        job = _Job(request, loop.create_future(), loop.time(), listener)
        self.pending += 1
        self.elements += elements
        job.future.add_done_callback(lambda future: self._settled(elements, job, future))
        if not running or request.key is None:
            self._launch([job], loop, release=False)
        else:
            self._queue.append(job)
            self._wake()
        return job

    def _settled(self, elements: int, job: _Job, future: asyncio.Future) -> None:
        self.pending -= 1
        self.elements -= elements
        if future.cancelled() and job.listener is not None:
            job.listener(job)

    @staticmethod
    def result(job: _Job) -> list[np.ndarray]:
        """The outputs of a job whose future has completed, or the error its run met (raised)."""
        if job.future.cancelled():
            raise asyncio.CancelledError
        if isinstance(job.result, ProtocolError):
            raise job.result
        if job.result is None:
            raise ProtocolError("inference could not run: its batch ended without a result", 500)
        return job.result

    def _admit(self, request: InferRequest) -> int:
        """The input elements of REQUEST, or a capacity error when the model's queue or element budget is full."""
        if self.max_queue_size and self.pending >= self.max_queue_size + self._pool.threads:
            raise ProtocolError(
                f"model '{self.name}' has {self.max_queue_size} requests waiting, its max_queue_size; retry later",
                503,
                exhausted=True,
            )
        elements = sum(array.size for array in request.inputs.values())
        if self.max_elements and self.pending and self.elements + elements > self.max_elements:
            raise ProtocolError(
                f"model '{self.name}' holds {self.elements} input elements in flight, this request's {elements} "
                f"would pass its budget of {self.max_elements}; retry later",
                503,
                exhausted=True,
            )
        return elements

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout, _release, waiter) if timeout is not None else None
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def _take(self, batch: list[_Job], rows: int) -> int:
        """Move queued jobs that can join the batch into it, keeping the others in order. Jobs whose caller
        has gone (its call cancelled while queued: a gRPC client's reset or deadline) are dropped unrun, so
        cancelling cannot queue work past the admission and queue bounds."""
        queue = self._queue
        while queue and queue[0].future.cancelled():
            queue.popleft()
        if not batch:
            if not queue:
                return 0
            head = queue.popleft()
            batch.append(head)
            rows = head.request.rows
        key = batch[0].request.key
        kept: list[_Job] = []
        while queue and rows < self.max_rows:
            job = queue.popleft()
            if job.future.cancelled():
                continue
            if job.request.key == key and rows + job.request.rows <= self.max_rows:
                batch.append(job)
                rows += job.request.rows
            else:
                kept.append(job)
        if kept:
            queue.extendleft(reversed(kept))
        return rows

    async def _batch_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            # A batch only forms once a run slot is free, so while every slot is busy
            # the queue keeps growing and the next batch takes what arrived meanwhile.
            await self._slots.acquire()
            while not self._queue:
                if self._closing:
                    self._slots.release()
                    return
                await self._wait(None)
            batch: list[_Job] = []
            rows = self._take(batch, 0)
            if not batch:
                self._slots.release()
                continue
            deadline = batch[0].arrival + self.max_delay_s
            while rows < self.max_rows and rows not in self.preferred_rows and not self._closing:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                await self._wait(remaining)
                rows = self._take(batch, rows)
            batch = [job for job in batch if not job.future.cancelled()]
            if not batch:
                self._slots.release()
                continue
            self._launch(batch, loop, release=True)

    def _launch(self, batch: list[_Job], loop: asyncio.AbstractEventLoop, release: bool) -> None:
        """Run BATCH on a pool thread, its results handed out by the callback the thread schedules; or, for a
        batch of the batching loop expected to run within the pool's ``inline_run_s``, on the event loop now
        (never from ``submit``: a request's listener is not called before its job is returned)."""
        bound = self._pool.inline_run_s
        row_s = self._row_s.get(batch[0].request.key) if bound and release else None
        if row_s is not None and row_s * sum(job.request.rows for job in batch) <= bound:
            try:
                executions, error = self._execute(batch), None
            except Exception as exc:
                executions, error = None, exc
            self._ran(batch, release, executions, error)
            return
        self._pool.submit(self._execute, (batch,), functools.partial(self._ran, batch, release), loop)

    def _ran(self, batch: list[_Job], release: bool, executions: list[tuple] | None, error: Exception | None) -> None:
        """On the event loop, once BATCH has run: count it, free its run slot, and hand each job its result."""
        try:
            if error is not None:
                raise error
            for start_ns, jobs, input_ns, infer_ns, output_ns in executions:
                queue_ns = [start_ns - job.enqueued_ns for job in jobs]
                rows = sum(job.request.rows for job in jobs)
                self._stats.record_execution(rows, len(jobs), queue_ns, input_ns, infer_ns, output_ns)
                self._timed(jobs[0].request.key, (input_ns + infer_ns + output_ns) / 1e9 / max(rows, 1))
        except Exception as exc:
            logger.exception("inference pool failed")
            for job in batch:
                if job.result is None:
                    job.result = ProtocolError(f"inference could not run: {exc}", 500)
        finally:
            if release:
                self._slots.release()
            for job in batch:
                future = job.future
                if future is None or future.done():
                    continue
                future.set_result(None)
                if job.listener is not None:
                    try:
                        job.listener(job)
                    except Exception:
                        logger.exception("an inference listener failed")

    def _timed(self, key: tuple | None, row_s: float) -> None:
        """Fold a run's seconds per row into the estimate for its batch key (a bounded table). The estimate rises
        at once to a slower run and comes down a tenth of the way per faster one: a model whose run time
        depends on its input values, not only their shape, runs on the pool's thread for a while after a
        long run instead of holding the event loop again at the next one."""
        if key is None:
            return
        known = self._row_s.get(key)
        if known is None and len(self._row_s) >= _TIMED_KEYS:
            self._row_s.clear()
        self._row_s[key] = row_s if known is None or row_s >= known else 0.9 * known + 0.1 * row_s

    def _execute(self, batch: list[_Job]) -> list[tuple]:
        """Run a batch in a pool thread; falls back to one run per job if the merged run fails."""
        if len(batch) > 1:
            execution = self._run_merged(batch)
            if execution is not None:
                return [execution]
        return [self._run_single(job) for job in batch]

    def _run_merged(self, batch: list[_Job]) -> tuple | None:
        start = perf_counter_ns()
        feeds = {name: np.concatenate([job.request.inputs[name] for job in batch]) for name in self._input_names}
        ready = perf_counter_ns()
        try:
            outputs = self._session.run(feeds)
        except Exception:
            # One request's values can make a run fail (an index out of range, say);
            # rerunning each job alone confines the error to the request that caused it.
            return None
        done = perf_counter_ns()
        total = sum(job.request.rows for job in batch)
        if any(out.ndim == 0 or out.shape[0] != total for out in outputs):
            return None
        offset = 0
        for job in batch:
            end = offset + job.request.rows
            job.result = [out[offset:end] for out in outputs]
            offset = end
        return start, batch, ready - start, done - ready, perf_counter_ns() - done

    def _run_single(self, job: _Job) -> tuple:
        start = perf_counter_ns()
        try:
            job.result = self._session.run(job.request.inputs)
        except Exception as exc:
            job.result = execution_error(exc)
        done = perf_counter_ns()
        return start, [job], 0, done - start, 0


def _release(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)
