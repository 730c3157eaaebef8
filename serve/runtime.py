"""onnxruntime sessions, execution providers and the inference thread pool."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from serve.defaults import CUDA_DEFAULTS
from serve.protocol import ONNX_TYPES, ProtocolError, TensorSpec

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
DEVICES = ("auto", "cpu", "cuda", "cuda:N")



class RuntimeSetupError(Exception):
    """A model or device that cannot be served, with a message for the operator."""


# Measured with benchmarks/hostile_serve.py (README, Performance): onnxruntime's CPU arena keeps the
# largest run's memory for good (+3.3 GB after one long attention request). Shrinking the arena at
# the end of every run hands it back at no measurable cost in requests per second, and one arena
# shared by every CPU session, capped at the inference memory budget, makes a run that would pass
# the budget fail at its first oversized allocation (milliseconds) instead of swapping or being killed.
_SHRINK = ort.RunOptions()
_SHRINK.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
_MEMORY = {"budget": 0}
_ALLOCATION_FAILURES = ("AllocateRawInternal", "Failed to allocate memory", "bad_alloc", "smaller than requested bytes")
# onnxruntime's messages name its source files and functions ("/onnxruntime_src/.../bfc_arena.cc:360 void* ...(...)").
_SOURCE_LOCATION = re.compile(r"(?:/[\w.+-]+)+\.(?:cc|cpp|cu|h):\d+ [^()]*\([^()]*\)\s*")


def configure_memory(budget_bytes: int) -> None:
    """Cap the memory onnxruntime's CPU arena may hold for every model together (weights and runs) at
    BUDGET_BYTES (0: no cap); call once, before any session is created."""
    if budget_bytes and not _MEMORY["budget"]:
        config = ort.OrtArenaCfg({"max_mem": budget_bytes, "arena_extend_strategy": 1})
        info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
        ort.create_and_register_allocator(info, config)
        _MEMORY["budget"] = budget_bytes


def default_memory_budget() -> int:
    """Half the memory this process may use: the cgroup's limit where one is set, else physical memory."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total // 2


@dataclass(frozen=True)
class Placement:
    """Where a model's session runs: execution providers in preference order, each with its options."""

    providers: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]

    @property
    def wants_cuda(self) -> bool:
        """Whether CUDA must run the model (no silent fallback to the CPU)."""
        return self.providers[0][0] == CUDA

    def for_onnxruntime(self) -> list[tuple[str, dict[str, str]]]:
        """The providers argument of onnxruntime.InferenceSession."""
        return [(name, dict(options)) for name, options in self.providers]

    def describe(self) -> str:
        """A log-friendly summary, e.g. 'CUDAExecutionProvider (device 0) > CPUExecutionProvider'."""
        parts = []
        for name, options in self.providers:
            device = dict(options).get("device_id")
            parts.append(f"{name} (device {device})" if device is not None else name)
        return " > ".join(parts)


def parse_device(text: str) -> tuple[str, int | None]:
    """Split a --device value into its kind and CUDA device index: 'cuda:1' -> ('cuda', 1)."""
    kind, sep, index = text.partition(":")
    if kind in ("auto", "cpu", "cuda") and not sep:
        return kind, None
    if kind == "cuda" and re.fullmatch(r"[0-9]{1,4}", index):
        return kind, int(index)
    raise RuntimeSetupError(f"unknown device {text!r}; choose one of auto, cpu, cuda or cuda:N (N a GPU index)")


def parse_cuda_options(pairs: list[str]) -> dict[str, str]:
    """--cuda-option KEY=VALUE pairs over the server's defaults; onnxruntime checks the keys and values."""
    options = dict(CUDA_DEFAULTS)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise RuntimeSetupError(f"--cuda-option expects KEY=VALUE (e.g. gpu_mem_limit=4294967296), got {pair!r}")
        if key.strip() == "device_id":
            raise RuntimeSetupError("--cuda-option device_id is set by --device cuda:N (or instance_group gpus)")
        options[key.strip()] = value.strip()
    return options


def cuda_placement(device_id: int, cuda_options: dict[str, str], asked_by: str) -> Placement:
    """CUDA on GPU DEVICE_ID first (failing loudly when it is missing), CPU for the nodes CUDA lacks."""
    available = ort.get_available_providers()
    if CUDA not in available:
        raise RuntimeSetupError(
            f"{asked_by} needs onnxruntime's CUDAExecutionProvider, but this onnxruntime "
            f"(version {ort.__version__}) offers only {', '.join(available)}; install onnxruntime-gpu "
            "with a matching CUDA runtime, or use --device cpu"
        )
    options = tuple(sorted({**cuda_options, "device_id": str(device_id)}.items()))
    return Placement(((CUDA, options), (CPU, ())))


def select_providers(device: str, cuda_options: dict[str, str] | None = None) -> Placement:
    """The server-wide placement for a --device choice, failing when CUDA is demanded but absent."""
    kind, index = parse_device(device)
    options = dict(CUDA_DEFAULTS) if cuda_options is None else cuda_options
    if kind == "cpu":
        return Placement(((CPU, ()),))
    if kind == "cuda":
        return cuda_placement(index or 0, options, f"--device {device}")
    if CUDA in ort.get_available_providers():
        return cuda_placement(0, options, "--device auto")
    return Placement(((CPU, ()),))


def model_placement(server: Placement, cuda_options: dict[str, str], kind: str | None, gpus: tuple[int, ...],
                    model: str) -> Placement:
    """A model's placement: its config.pbtxt's instance_group kind and GPU, else the server's --device."""
    if kind == "KIND_CPU":
        return Placement(((CPU, ()),))
    if kind == "KIND_GPU":
        device = gpus[0] if gpus else int(dict(server.providers[0][1]).get("device_id", 0))
        return cuda_placement(device, cuda_options, f"model '{model}' (instance_group KIND_GPU)")
    return server


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

    def __init__(self, path: Path, placement: Placement, intra_op_threads: int) -> None:
        options = ort.SessionOptions()
        options.log_severity_level = 4
        if intra_op_threads:
            options.intra_op_num_threads = intra_op_threads
        # Spinning pool threads keep a core busy after each run; on a server the event
        # loop and the other requests need that core more than a run needs a faster wakeup.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        budget = _MEMORY["budget"] if not placement.wants_cuda else 0
        if budget:
            # CUDA sessions keep their own arenas (bounded by --cuda-option gpu_mem_limit).
            # onnxruntime quietly stops enforcing the shared arena's cap for a model whose weights
            # alone pass it, so such a model is refused here.
            size = path.stat().st_size if path.is_file() else 0
            if size > budget // 2:
                raise RuntimeSetupError(
                    f"{path}: the model file is {size} bytes, more than half the inference memory budget "
                    f"({budget} bytes, --max-inference-memory)"
                )
            options.add_session_config_entry("session.use_env_allocators", "1")
        try:
            self.session = ort.InferenceSession(
                str(path), sess_options=options, providers=placement.for_onnxruntime()
            )
        except Exception as exc:
            raise RuntimeSetupError(f"{path}: onnxruntime cannot load the model: {exc}") from None
        active = self.session.get_providers()
        if placement.wants_cuda and CUDA not in active:
            raise RuntimeSetupError(
                f"{path}: CUDAExecutionProvider was requested but onnxruntime fell back to {', '.join(active)} "
                "(check the CUDA and cuDNN libraries onnxruntime-gpu needs)"
            )
        self.provider = active[0]
        self.placement = placement
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
        """Run the model on named inputs, returning every output in model order; the arena shrinks after it."""
        return self.session.run(self.output_names, feeds, _SHRINK)


def execution_error(exc: Exception) -> ProtocolError:
    """The client-facing error for a failed run of one validated request (no onnxruntime source paths)."""
    message = str(exc).strip() or type(exc).__name__
    if isinstance(exc, MemoryError) or any(mark in message for mark in _ALLOCATION_FAILURES):
        return ProtocolError(
            "model execution needs more memory than the server's inference memory budget leaves free; "
            "retry later or send a smaller request",
            503,
            exhausted=True,
        )
    message = _SOURCE_LOCATION.sub("", message)
    # The model ran on zeros at warm-up and the request passed validation, so a failure
    # of this request alone comes from its values (an index out of range, say): a 400.
    # Provider failures are the server's.
    status = 500 if type(exc).__name__ == "EPFail" else 400
    return ProtocolError(f"model execution failed: {message}", status)


class InferencePool:
    """A fixed set of threads that keeps session runs off the event loop.

    INLINE_RUN_S: with one thread, a batch whose run is expected to take at most this long runs on the event
    loop itself (``Batcher``): handing a run to a thread and its results back costs two wake-ups (35-60 µs
    each on a small virtual machine), and a short run holds the loop no longer than a busy pass of it does.
    0 keeps every run on the pool's threads.
    """

    def __init__(self, threads: int, inline_run_s: float = 0.0) -> None:
        self.threads = threads
        self.inline_run_s = inline_run_s if threads == 1 else 0.0
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = [
            threading.Thread(target=self._work, name=f"serve-infer-{i}", daemon=True) for i in range(threads)
        ]
        for worker in self._workers:
            worker.start()

    def submit(self, fn, args: tuple, done: Callable, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Run fn(*ARGS) on a pool thread, then ``done(result, error)`` on LOOP (the running one by default).

        DONE runs in the event loop's next pass after the work: nothing stands between them (an awaited
        future would add a pass to wake its task, and another for the callbacks the task's results run).
        """
        # A bare queue and one call_soon_threadsafe per result cost the event loop a
        # fraction of what concurrent.futures' executor wrapping does per hop.
        self._queue.put((loop or asyncio.get_running_loop(), done, fn, args))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            loop, done, fn, args = item
            try:
                result, error = fn(*args), None
            except Exception as exc:
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(done, result, error)
            except RuntimeError:
                # The loop closed while this ran: nobody is waiting for the result.
                pass

    def shutdown(self) -> None:
        """Let queued work finish, then stop the threads."""
        for _ in self._workers:
            self._queue.put(None)
        for worker in self._workers:
            worker.join()
