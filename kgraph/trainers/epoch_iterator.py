"""Batches for fit/evaluate/predict from arrays, generators/iterators and PyDatasets, cut into epochs."""
from __future__ import annotations

import collections.abc
import itertools
import warnings
from typing import TYPE_CHECKING

import numpy as np

from kgraph import tree
from kgraph.random import generator
from kgraph.trainers import data_adapter as data
from kgraph.trainers.py_dataset import OrderedEnqueuer, PyDataset

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TypeAlias, TypeGuard

    from kgraph.trainers.data_adapter import ArrayData, Shuffle

    # One batch as a generator or a PyDataset yields it, and as a step receives it (arrays, packed as
    # Keras packs them): `x`, `(x,)`, `(x, y)` or `(x, y, sample_weight)`.
    Batch: TypeAlias = (ArrayData | tuple[ArrayData] | tuple[ArrayData, ArrayData | None]
                        | tuple[ArrayData, ArrayData | None, ArrayData | None])
    # All the data of arrays: `(x, y, sample_weight)`, each an array, a list or a dict of arrays, or None.
    ArrayParts: TypeAlias = tuple[ArrayData, ArrayData | None, ArrayData | None]
    # The `x` of fit / evaluate / predict: arrays, a PyDataset, or a generator or iterator of batches.
    DataSource: TypeAlias = ArrayData | PyDataset | Iterator[Batch]


def is_batch_source(x: object) -> TypeGuard[PyDataset | Iterator[Any]]:
    """Whether ``x`` yields whole batches itself (a PyDataset, a generator or another iterator, or an iterable
    of batches such as a torch DataLoader)."""
    return isinstance(x, (PyDataset, collections.abc.Iterator)) or is_batch_iterable(x)


def is_batch_iterable(x: object) -> bool:
    """An object that starts a new pass of batches each time it is iterated (a torch DataLoader, ...): iterable,
    not an iterator, and neither array data nor a container of arrays."""
    return isinstance(x, collections.abc.Iterable) and not isinstance(
        x, (collections.abc.Iterator, PyDataset, list, tuple, dict, str, bytes, np.ndarray)) and \
        not (hasattr(x, "shape") and hasattr(x, "dtype"))


def source_kind(x: PyDataset | Iterator[Any]) -> str:
    if isinstance(x, PyDataset):
        return "PyDataset"
    return f"iterable of batches ({type(x).__name__})" if is_batch_iterable(x) else "Python generator"


class ArrayAdapter:
    """Batches of in-memory (or memory-mapped) arrays ``(x, y, sample_weight)``, each part as the user shaped it."""

    def __init__(self, arrays: ArrayParts, batch_size: int, shuffle: Shuffle) -> None:
        self.arrays = arrays
        self._leaves = tree.flatten(arrays)
        self.size = len(next(a for a in self._leaves if a is not None))
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.num_batches = -(-self.size // batch_size)
        # Each part one array or None (the common case): a batch's parts are its leaves, no structure to rebuild.
        self._flat = type(arrays) is tuple and all(a is None or isinstance(a, np.ndarray) for a in arrays)

    def new_pass(self) -> Iterator[Batch]:
        for index in data.batches(self.size, self.batch_size, self.shuffle):
            parts = data.take(self._leaves, index)
            yield data.pack_x_y_sample_weight(*(parts if self._flat else tree.pack_sequence_as(self.arrays, parts)))

    def end_pass(self) -> None:
        """Nothing to do between passes over arrays."""

    def close(self) -> None:
        """Arrays hold no workers."""


class PyDatasetAdapter:
    """Batches of a PyDataset in index order (or a shuffled batch order), prefetched by its workers."""

    def __init__(self, dataset: PyDataset, shuffle: Shuffle, standardize: Callable[[Batch], Batch]) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.standardize = standardize
        self.num_batches = dataset.num_batches
        self.enqueuer = OrderedEnqueuer(dataset)

    def new_pass(self) -> Iterator[Batch]:
        self.dataset.on_epoch_begin()
        n = self.num_batches
        if n is None:
            indices = itertools.count()
        else:
            indices = map(int, generator().permutation(n)) if self.shuffle else range(n)
        for batch in self.enqueuer.get(indices):
            yield self.standardize(batch)

    def end_pass(self) -> None:
        self.dataset.on_epoch_end()

    def close(self) -> None:
        self.enqueuer.close()


class GeneratorAdapter:
    """Batches of a Python generator or iterator: one pass, shared by every epoch, never rewound."""

    num_batches = None

    def __init__(self, iterator: Iterator[Batch], standardize: Callable[[Batch], Batch]) -> None:
        self.iterator = iterator
        self.standardize = standardize

    def new_pass(self) -> Iterator[Batch]:
        for batch in self.iterator:
            yield self.standardize(batch)

    def end_pass(self) -> None:
        """A generator has no pass hooks."""

    def close(self) -> None:
        """A generator holds no workers."""


class IterableAdapter:
    """Batches of an iterable that starts a new pass each time it is iterated (a torch DataLoader, ...):
    every epoch iterates it afresh, as Keras's adapters do; its length, if it has one, is the epoch's."""

    def __init__(self, iterable: Any, standardize: Callable[[Batch], Batch]) -> None:
        self.iterable = iterable
        self.standardize = standardize
        try:
            self.num_batches = len(iterable)
        except TypeError:
            self.num_batches = None

    def new_pass(self) -> Iterator[Batch]:
        for batch in iter(self.iterable):
            yield self.standardize(batch)

    def end_pass(self) -> None:
        """An iterable has no pass hooks: the next pass iterates it again."""

    def close(self) -> None:
        """An iterable's workers are its own."""


def _capped(steps, num_batches):
    """``steps`` within ``keras.config.max_steps_per_epoch()``, with Keras's warning when the cap applies."""
    from kgraph.config import max_steps_per_epoch  # deferred: the config module sits above the trainers
    cap = max_steps_per_epoch()
    if not cap or steps and cap >= steps:
        return steps
    warnings.warn(f"Limiting steps_per_epoch to {cap}", stacklevel=3)
    # A cap beyond one pass over data of known length leaves the whole pass (Keras's ends when the data does).
    return None if steps is None and num_batches is not None and cap >= num_batches else cap


class EpochIterator:
    """Cuts a source's batches into epochs.

    Without ``steps`` an epoch is one whole pass (a generator's pass ends when it
    does, so a second epoch finds it used up: a clear error). With ``steps``
    each epoch takes that many batches, continuing where the last one stopped;
    as in Keras, a pass of arrays or a PyDataset that ends before the epoch's
    steps ends that epoch early (with Keras's warning) and the next epoch
    starts a new pass, and a generator that ends early interrupts training.
    """

    def __init__(self, adapter: ArrayAdapter | PyDatasetAdapter | GeneratorAdapter | IterableAdapter,
                 steps: int | None, what: str,
                 steps_name: str) -> None:
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise ValueError(f"`{steps_name}` must be a positive integer or None. Received: {steps_name}={steps!r}")
        if steps is None and isinstance(adapter, PyDatasetAdapter) and adapter.num_batches is None:
            raise ValueError(f"The PyDataset passed as `{what}` is endless (its `num_batches` is None), so "
                             f"`{steps_name}` must be given. Received: {steps_name}=None")
        self.adapter = adapter
        self.steps = steps = _capped(steps, adapter.num_batches)
        self.what = what
        self.steps_name = steps_name
        self.num_batches = steps or adapter.num_batches
        self.ran_out = False
        self._pass = None
        self._used_up = False

    def epoch(self) -> Iterator[Batch] | None:
        """An iterator over the next epoch's batches (packed as Keras packs them), or None when none are left."""
        if self._used_up and self.steps is None:
            raise ValueError(
                f"The Python generator passed as `{self.what}` has no more batches: without `{self.steps_name}`, "
                "a generator is read until it ends, so it is used up after one pass. Pass a generator that loops "
                f"over its data together with `{self.steps_name}` (an infinite generator always needs "
                f"`{self.steps_name}`), or a `kgraph.utils.PyDataset`.")
        batches = self._batches()
        first = next(batches, None)
        return None if first is None else itertools.chain([first], batches)

    def _batches(self):
        if self.steps is None:
            self._pass = None
        step, fresh = 0, False
        while self.steps is None or step < self.steps:
            if self._pass is None:
                if self._used_up:
                    break
                self._pass, fresh = self.adapter.new_pass(), True
            batch = next(self._pass, None)
            if batch is None:
                self._pass = None
                self.adapter.end_pass()
                self._used_up = isinstance(self.adapter, GeneratorAdapter)
                # A pass that ends within an epoch ends the epoch (Keras); one that ended with the last epoch
                # gives way to a new pass.
                if self.steps is None or fresh or (step and not self._used_up):
                    break
                continue
            fresh = False
            step += 1
            yield batch
        if self.steps is not None and step < self.steps and not self._used_up:
            warnings.warn(f"Your input ran out of data: `{self.what}` gave {step} of `{self.steps_name}="
                          f"{self.steps}` batches, so this epoch ends here; the next epoch starts a new pass over "
                          "the data (as Keras does).", stacklevel=2)
        elif self.steps is not None and step < self.steps:
            self.ran_out = True
            warnings.warn(f"`{self.what}` ran out of data after {step} of `{self.steps_name}={self.steps}` batches. "
                          f"A generator must yield at least `{self.steps_name}` batches per epoch for every "
                          "epoch; `fit` stops training here.", stacklevel=2)

    def close(self) -> None:
        """Stop prefetching workers."""
        if self._pass is not None:
            self._pass.close()
            self._pass = None
        self.adapter.close()
