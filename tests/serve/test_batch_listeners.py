"""The batcher's results handed straight to each request's listener, on real onnxruntime sessions: in the pass
of the event loop that learns a batch has run, before its futures' callbacks, once per request, and also for a
request cancelled while it waited or a batch whose run failed."""

from __future__ import annotations

import asyncio

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


def _run(session, check) -> None:
    pool = InferencePool(1)

    async def main() -> None:
        batcher = Batcher(session, pool, ModelStats(), 64, 0.0, name="mlp")
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
