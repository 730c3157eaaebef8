"""A model version's instances: config.pbtxt's instance_group count as that many onnxruntime sessions."""

from __future__ import annotations

import queue

import numpy as np

from serve.runtime import ModelSession


class InstanceGroup:
    """Several sessions of one model version behind the interface of one: each run takes an idle session.

    Triton runs ``count`` instances of a model side by side; here each is an onnxruntime session
    with its own memory arena and intra-op threads, and a run waits for a free one.
    """

    def __init__(self, sessions: list[ModelSession]) -> None:
        first = sessions[0]
        self.sessions = sessions
        self.path = first.path
        self.placement = first.placement
        self.provider = first.provider
        self.inputs = first.inputs
        self.outputs = first.outputs
        self.output_names = first.output_names
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        for session in sessions:
            self._idle.put(session)

    def has_batch_axis(self) -> bool:
        """Whether every input, and every output of known rank, has a dynamic first dim."""
        return self.sessions[0].has_batch_axis()

    def warmup(self) -> None:
        """Warm every session up."""
        for session in self.sessions:
            session.warmup()

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run on the next idle session (waiting for one when all are busy)."""
        session = self._idle.get()
        try:
            return session.run(feeds)
        finally:
            self._idle.put(session)
