"""The batcher's results handed straight to each request's listener, on real onnxruntime sessions: in the pass
of the event loop that learns a batch has run, before its futures' callbacks, once per request, and also for a
request cancelled while it waited or a batch whose run failed; and short runs on the event loop itself."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from serve.batcher import Batcher
from serve.metrics import ModelStats
from serve.protocol import InferRequest, ProtocolError
from serve.runtime import CPU, InferencePool, ModelSession, Placement
from tests.serve import models


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> ModelSession:
    path = models.mlp(tmp_path_factory.mktemp("listeners") / "mlp.onnx", sizes=(16, 8, 4), seed=4)
    return ModelSession(path, Placement(((CPU, ()),)), 1)


def _request(x: np.ndarray) -> InferRequest:
    return InferRequest(None, {"x": x}, [("y", False)], x.shape[0], (("x", (16,)),))


def _run(session, check, pool: InferencePool | None = None, max_rows: int = 64) -> None:
    pool = pool or InferencePool(1)

    async def main() -> None:
        batcher = Batcher(session, pool, ModelStats(), max_rows, 0.0, name="mlp")
        batcher.start()
        try:
            await check(batcher)
        finally:
            await batcher.close()

    try:
        asyncio.run(main())
    finally:
        pool.shutdown()


def test_listeners_hear_of_their_batch_before_the_futures_callbacks(session):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((rows, 16)).astype(np.float32) for rows in (1, 2, 3, 1)]

    async def check(batcher) -> None:
        heard, events = {}, []

        def listener(job) -> None:
            events.append(("listener", id(job)))
            heard[id(job)] = heard.get(id(job), 0) + 1
            assert job.future.done() and not job.future.cancelled()

        jobs = [batcher.submit(_request(x), listener) for x in xs]
        for job in jobs:
            job.future.add_done_callback(lambda _, job=job: events.append(("future", id(job))))
        await asyncio.gather(*(job.future for job in jobs))
        await asyncio.sleep(0)
        assert heard == {id(job): 1 for job in jobs}
        # Every listener ran in the pass that handed out the results, before any future's callback.
        assert [kind for kind, _ in events] == ["listener"] * 4 + ["future"] * 4
        for job, x in zip(jobs, xs):
            np.testing.assert_array_equal(batcher.result(job)[0], session.run({"x": x})[0])
        assert batcher.pending == 0 and batcher.elements == 0

    _run(session, check)


def test_a_request_cancelled_while_queued_tells_its_listener_and_never_runs(session):
    x = np.ones((1, 16), np.float32)

    async def check(batcher) -> None:
        heard = []
        first = batcher.submit(_request(np.ones((4000, 16), np.float32)), heard.append)  # keeps the one thread busy
        await asyncio.sleep(0)
        queued = batcher.submit(_request(x), heard.append)
        queued.future.cancel()
        await first.future
        await asyncio.sleep(0.05)
        assert heard == [queued, first]  # the cancelled one first: it was told when it was cancelled
        with pytest.raises(asyncio.CancelledError):
            batcher.result(queued)
        assert batcher._stats.execution_count == 1 and batcher.pending == 0

    _run(session, check)


def test_a_failed_run_reaches_every_listener_as_a_server_error(session):
    async def check(batcher) -> None:
        def broken(batch):
            raise RuntimeError("the pool's thread broke")

        batcher._execute = broken
        heard = []
        jobs = [batcher.submit(_request(np.ones((1, 16), np.float32)), heard.append) for _ in range(3)]
        await asyncio.gather(*(job.future for job in jobs))
        assert heard == jobs
        for job in jobs:
            with pytest.raises(ProtocolError) as failed:
                batcher.result(job)
            assert failed.value.status == 500 and "the pool's thread broke" in failed.value.message

    _run(session, check)


def _threads_of_runs(batcher) -> list[int]:
    """Record the thread of each of BATCHER's runs."""
    threads, execute = [], batcher._execute

    def recorded(batch):
        threads.append(threading.get_ident())
        return execute(batch)

    batcher._execute = recorded
    return threads


async def _waves(batcher, session, waves: int) -> None:
    rng = np.random.default_rng(7)
    for _ in range(waves):
        xs = [rng.standard_normal((rows, 16)).astype(np.float32) for rows in (1, 3, 2)]
        heard = []
        jobs = [batcher.submit(_request(x), heard.append) for x in xs]
        await asyncio.gather(*(job.future for job in jobs))
        assert heard == jobs
        for job, x in zip(jobs, xs):
            np.testing.assert_array_equal(batcher.result(job)[0], session.run({"x": x})[0])


def test_short_runs_run_on_the_event_loop_once_their_time_is_known(session):
    async def check(batcher) -> None:
        threads = _threads_of_runs(batcher)
        await _waves(batcher, session, 4)
        loop_thread = threading.get_ident()
        # The first run, whose time is not known yet, goes to the pool's thread; the next ones run here.
        assert len(threads) == 4 and threads[0] != loop_thread and threads[1:] == [loop_thread] * 3

    _run(session, check, InferencePool(1, inline_run_s=1.0))


def test_longer_runs_and_pools_of_several_threads_keep_runs_off_the_event_loop(session):
    async def check(batcher) -> None:
        threads = _threads_of_runs(batcher)
        await _waves(batcher, session, 3)
        assert len(threads) == 3 and threading.get_ident() not in threads

    _run(session, check, InferencePool(1, inline_run_s=1e-9))  # every run is longer than a nanosecond
    several = InferencePool(2, inline_run_s=1.0)
    assert several.inline_run_s == 0.0
    _run(session, check, several)


def test_a_request_that_cannot_be_merged_is_never_run_before_its_job_is_returned(session):
    async def check(batcher) -> None:
        threads = _threads_of_runs(batcher)
        returned = []
        for _ in range(3):
            job = batcher.submit(_request(np.ones((1, 16), np.float32)), lambda job: returned.append(job in jobs))
            jobs = [job]
            await job.future
        assert returned == [True] * 3 and threading.get_ident() not in threads

    _run(session, check, InferencePool(1, inline_run_s=1.0), max_rows=0)


def test_a_run_of_inputs_shaped_otherwise_is_timed_on_the_pool_first(session):
    # Run times are kept per batch key (the inputs' inner dims): a model with a dynamic dim may take far longer
    # on longer inputs, so a shape not timed yet never runs on the event loop.
    async def check(batcher) -> None:
        threads = _threads_of_runs(batcher)
        await _waves(batcher, session, 2)
        other = InferRequest(None, {"x": np.ones((2, 16), np.float32)}, [("y", False)], 2, (("x", (16,)), "longer"))
        for _ in range(2):
            await batcher.submit(other).future
        loop_thread = threading.get_ident()
        assert [thread == loop_thread for thread in threads] == [False, True, False, True]

    _run(session, check, InferencePool(1, inline_run_s=1.0))


def test_a_slower_run_sends_its_shape_back_to_the_pool_for_a_while(session):
    # A run whose time depends on its input values can take far longer than its shape's last runs: the estimate
    # rises to it at once and comes down slowly, so the next runs of that shape do not hold the event loop.
    async def check(batcher) -> None:
        threads = _threads_of_runs(batcher)
        key = (("x", (16,)),)
        await _waves(batcher, session, 2)  # timed on the pool, then run on the loop
        batcher._timed(key, 10.0)  # as if a run had taken 10 s a row
        await _waves(batcher, session, 3)
        loop_thread = threading.get_ident()
        assert [thread == loop_thread for thread in threads] == [False, True, False, False, False]
        assert batcher._row_s[key] > 1.0 / 3  # 10 s a row, down a tenth of the way per faster run

    _run(session, check, InferencePool(1, inline_run_s=1.0))


def test_long_runs_leave_the_event_loop_free(tmp_path):
    # Runs of milliseconds (a model doing 0.9 GFLOP a row) stay on the pool's thread: the loop keeps turning.
    path = models.heavy(tmp_path / "heavy.onnx")
    heavy = ModelSession(path, Placement(((CPU, ()),)), 1)
    rng = np.random.default_rng(3)

    async def check(batcher) -> None:
        threads = _threads_of_runs(batcher)
        ticks, running = [], True

        async def ticker() -> None:
            while running:
                ticks.append(asyncio.get_running_loop().time())
                await asyncio.sleep(0.0005)

        ticking = asyncio.get_running_loop().create_task(ticker())
        for _ in range(4):
            xs = [rng.standard_normal((1, 768)).astype(np.float32) for _ in range(3)]
            jobs = [batcher.submit(InferRequest(None, {"x": x}, [("y", False)], 1, (("x", (768,)),))) for x in xs]
            await asyncio.gather(*(job.future for job in jobs))
            for job, x in zip(jobs, xs):
                np.testing.assert_allclose(batcher.result(job)[0], heavy.run({"x": x})[0], rtol=1e-5)
        running = False
        await ticking
        assert len(threads) == 4 and threading.get_ident() not in threads
        run_s = batcher._row_s[(("x", (768,)),)] * 3
        assert run_s > 0.001  # each run was longer than the bound, so none could take the loop
        assert len(ticks) > 4 * run_s / 0.005  # the loop ticked all along (a tick at most every 5 ms)

    _run(heavy, check, InferencePool(1, inline_run_s=0.001))
