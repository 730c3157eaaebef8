"""onnxruntime sessions, execution providers and the inference thread pool."""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort

from serve.protocol import ONNX_TYPES, ProtocolError, TensorSpec

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
DEVICES = ("auto", "cpu", "cuda")


class RuntimeSetupError(Exception):
    """A model or device that cannot be served, with a message for the operator."""


def select_providers(device: str) -> list[str]:
    """Execution providers for a --device choice, failing when CUDA is demanded but absent."""
    available = ort.get_available_providers()
    if device == "cpu":
        return [CPU]
    if device == "cuda":
        if CUDA not in available:
            raise RuntimeSetupError(
                "--device cuda needs onnxruntime's CUDAExecutionProvider, but this onnxruntime "
                f"(version {ort.__version__}) offers only {', '.join(available)}; install onnxruntime-gpu "
                "with a matching CUDA runtime, or use --device cpu"
            )
        return [CUDA, CPU]
    if device == "auto":
        return [CUDA, CPU] if CUDA in available else [CPU]
    raise RuntimeSetupError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")


def _tensor_specs(args, path: Path, role: str) -> tuple[TensorSpec, ...]:
    specs = []
    for arg in args:
        datatype = ONNX_TYPES.get(arg.type)
        if datatype is None:
            raise RuntimeSetupError(
                f"{path}: {role} '{arg.name}' has type {arg.type}; the server carries only numeric and "
                f"boolean tensors ({', '.join(sorted(ONNX_TYPES))})"
            )
        shape = None if arg.shape is None else tuple(d if isinstance(d, int) and d >= 0 else -1 for d in arg.shape)
        specs.append(TensorSpec(arg.name, datatype, shape))
    return tuple(specs)


class ModelSession:
    """One onnxruntime InferenceSession with its tensor specs and active provider."""

    def __init__(self, path: Path, providers: list[str], intra_op_threads: int) -> None:
        options = ort.SessionOptions()
        options.log_severity_level = 4
        if intra_op_threads:
            options.intra_op_num_threads = intra_op_threads
        # Spinning pool threads keep a core busy after each run; on a server the event
        # loop and the other requests need that core more than a run needs a faster wakeup.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
        except Exception as exc:
            raise RuntimeSetupError(f"{path}: onnxruntime cannot load the model: {exc}") from None
        active = self.session.get_providers()
        if providers[0] == CUDA and CUDA not in active:
            raise RuntimeSetupError(
                f"{path}: CUDAExecutionProvider was requested but onnxruntime fell back to {', '.join(active)} "
                "(check the CUDA and cuDNN libraries onnxruntime-gpu needs)"
            )
        self.provider = active[0]
        self.inputs = _tensor_specs(self.session.get_inputs(), path, "input")
        self.outputs = _tensor_specs(self.session.get_outputs(), path, "output")
        self.output_names = [spec.name for spec in self.outputs]
        self.path = path

    def has_batch_axis(self) -> bool:
        """Whether every input, and every output of known rank, has a dynamic first dim."""

        def batched(shape) -> bool:
            return shape is not None and len(shape) >= 1 and shape[0] == -1

        return bool(self.inputs) and all(batched(s.shape) for s in self.inputs) and all(
            batched(s.shape) for s in self.outputs if s.shape is not None
        )

    def warmup(self) -> None:
        """Run the model once on zeros so the first request pays no setup cost.

        The batch dim is 1; other dynamic dims try 1, then sizes a convolution or
        pooling window fits in, since a model may refuse inputs smaller than its kernels.
        """
        error = None
        for size in (1, 32, 256):
            feeds = {
                spec.name: np.zeros(
                    tuple(d if d >= 0 else (1 if axis == 0 else size) for axis, d in enumerate(spec.shape or (1,))),
                    dtype=spec.dtype,
                )
                for spec in self.inputs
            }
            try:
                self.session.run(self.output_names, feeds)
                return
            except Exception as exc:
                error = exc
        raise RuntimeSetupError(f"{self.path}: warm-up run on zeros failed: {error}")

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run the model on named inputs, returning every output in model order."""
        return self.session.run(self.output_names, feeds)


def execution_error(exc: Exception) -> ProtocolError:
    """The client-facing error for a failed run of one validated request."""
    message = str(exc).strip() or type(exc).__name__
    # The model ran on zeros at warm-up and the request passed validation, so a failure
    # of this request alone comes from its values (an index out of range, say): a 400.
    # Provider and memory failures are the server's.
    status = 500 if type(exc).__name__ == "EPFail" or isinstance(exc, MemoryError) else 400
    return ProtocolError(f"model execution failed: {message}", status)


class InferencePool:
    """A fixed set of threads that keeps session runs off the event loop."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = [
            threading.Thread(target=self._work, name=f"serve-infer-{i}", daemon=True) for i in range(threads)
        ]
        for worker in self._workers:
            worker.start()

    def run(self, fn, *args) -> asyncio.Future:
        """Schedule fn(*args) on a pool thread and return an awaitable for its result."""
        # A bare queue and one call_soon_threadsafe per result cost the event loop a
        # fraction of what concurrent.futures' executor wrapping does per hop.
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put((loop, future, fn, args))
        return future

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            loop, future, fn, args = item
            try:
                result, error = fn(*args), None
            except Exception as exc:
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:
                # The loop closed while this ran: nobody is waiting for the result.
                pass

    def shutdown(self) -> None:
        """Let queued work finish, then stop the threads."""
        for _ in self._workers:
            self._queue.put(None)
        for worker in self._workers:
            worker.join()


def _settle(future: asyncio.Future, result, error: Exception | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def default_threads() -> int:
    """Pool size when --threads is not given: enough to overlap runs without oversubscribing."""
    return max(1, min(4, os.cpu_count() or 1))
