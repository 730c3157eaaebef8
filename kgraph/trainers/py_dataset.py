"""PyDataset: batches from Python code, prefetched by worker threads or processes in index order."""
from __future__ import annotations

import collections
import concurrent.futures
import itertools
import multiprocessing
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from kgraph.trainers.epoch_iterator import Batch


class PyDataset:
    """Base class for a dataset of batches: implement ``__len__`` (batches) and ``__getitem__(index)``.

    ``__getitem__`` returns one whole batch: ``x``, ``(x,)``, ``(x, y)`` or
    ``(x, y, sample_weight)``, each part an array, a list or a dict as with
    arrays. ``on_epoch_begin()`` / ``on_epoch_end()`` run around each pass.

    workers: batches fetched ahead in parallel by ``fit``/``evaluate``/
        ``predict`` (more than 1 in threads; 1 or more in processes with
        ``use_multiprocessing``); otherwise ``__getitem__`` runs on the calling
        thread. Batches are always delivered in index order.
    use_multiprocessing: fetch in worker processes (a pool per pass over the
        data, so state changed by ``on_epoch_end`` reaches the workers). The
        dataset and its batches are pickled: keep file handles and memory maps
        out of the instance's state (open them in ``__getitem__``), and where
        the start method is ``spawn``/``forkserver`` define the class in an
        importable module and guard the script with ``if __name__ ==
        "__main__":``.
    max_queue_size: most batches fetched ahead of the one being used.
    """

    def __init__(self, workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10) -> None:
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = max_queue_size

    def __getitem__(self, index: int) -> Batch:
        """The batch at position ``index``."""
        raise NotImplementedError(f"{type(self).__name__} must implement `__getitem__(self, index)`.")

    @property
    def num_batches(self) -> int | None:
        """Batches per pass, or ``None`` for an endless dataset (``fit`` then needs ``steps_per_epoch``)."""
        if hasattr(self, "__len__"):
            return len(self)
        raise NotImplementedError(f"{type(self).__name__} must implement `__len__` (or the `num_batches` property).")

    def on_epoch_begin(self) -> None:
        """Called before each pass over the data."""

    def on_epoch_end(self) -> None:
        """Called after each pass over the data."""


_worker_dataset = None


def _set_worker_dataset(dataset):
    global _worker_dataset
    _worker_dataset = dataset


def _worker_getitem(index):
    return _worker_dataset[index]


class OrderedEnqueuer:
    """Runs ``dataset[i]`` ahead in a pool, up to ``max_queue_size`` batches, and yields them in order."""

    def __init__(self, dataset: PyDataset) -> None:
        self.dataset = dataset
        self.workers = max(int(getattr(dataset, "workers", 1) or 0), 0)
        self.use_multiprocessing = bool(getattr(dataset, "use_multiprocessing", False))
        self.max_queue_size = max(int(getattr(dataset, "max_queue_size", 10) or 1), 1)
        self._threads = None

    @property
    def parallel(self) -> bool:
        return self.workers > 1 or (self.workers > 0 and self.use_multiprocessing)

    def _pool(self):
        if self.use_multiprocessing:
            return concurrent.futures.ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context(), initializer=_set_worker_dataset,
                initargs=(self.dataset,)), _worker_getitem
        if self._threads is None:
            self._threads = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="PyDataset")
        return self._threads, self.dataset.__getitem__

    def get(self, indices: Iterable[int]) -> Iterator[Batch]:
        """Yield ``dataset[i]`` for each of ``indices`` (an iterable, possibly endless), in that order."""
        if not self.parallel:
            for index in indices:
                yield self.dataset[index]
            return
        pool, fetch = self._pool()
        pending = collections.deque()
        indices = iter(indices)
        try:
            for index in itertools.islice(indices, self.max_queue_size):
                pending.append(pool.submit(fetch, index))
            while pending:
                batch = pending.popleft().result()
                for index in itertools.islice(indices, 1):
                    pending.append(pool.submit(fetch, index))
                yield batch
        finally:
            for future in pending:
                future.cancel()
            if pool is not self._threads:
                pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        """Stop the worker threads."""
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
            self._threads = None
