"""The Open Inference Protocol's operations on the served repository, shared by the REST and gRPC transports.

Each method takes and returns plain Python data and raises ProtocolError (message and HTTP
status) for a request it refuses; a transport only decodes requests and encodes answers.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import threading
from collections.abc import Mapping
from time import perf_counter_ns

import numpy as np

from serve import EXTENSIONS, SERVER_NAME, __version__
from serve.control import ModelControl, Restriction
from serve.metrics import Exposition
from serve.model import ModelVersion
from serve.protocol import InferRequest, ProtocolError
from serve.repository import Repository

logger = logging.getLogger("serve.dataplane")

# Requests and outputs above this size are decoded and encoded on a helper thread, so a
# single large request cannot hold up health checks and other clients for long.
OFFLOAD_BYTES = 1 << 20


def _libc_malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


# After a large request, glibc keeps the freed buffers of the threads that decoded and ran it (the
# gRPC stream case kept +600 MB for good); malloc_trim returns them. Measured in benchmarks/hostile_serve.py.
_malloc_trim = _libc_malloc_trim()
_TRIM_BYTES = 4 << 20
_TRIM_DELAY_S = 0.05


class Admission:
    """Bounds the inference requests in flight over both transports, and the bytes they hold.

    A request enters with the bytes it declares (or brings) and leaves once answered; one that
    would pass either bound is refused at once with a capacity error (503, RESOURCE_EXHAUSTED).
    One request always gets in when nothing else is in flight, so no single request is refused
    for the byte bound alone: the per-request limits handle those.
    """

    def __init__(self, max_requests: int = 0, max_bytes: int = 0) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.requests = 0
        self.bytes = 0
        self._trimming = False

    def enter(self, nbytes: int) -> None:
        """Admit a request holding NBYTES, or raise the capacity error."""
        if self.max_requests and self.requests >= self.max_requests:
            raise ProtocolError(
                f"the server has {self.requests} inference requests in flight, its limit; retry later", 503, exhausted=True
            )
        self.requests += 1
        try:
            self.grow(nbytes)
        except ProtocolError:
            self.requests -= 1
            raise

    def grow(self, nbytes: int) -> None:
        """Count NBYTES more for an admitted request (a body arriving in chunks), or raise the capacity error."""
        if self.max_bytes and self.bytes + nbytes > self.max_bytes and self.requests > 1:
            raise ProtocolError(
                f"the server holds {self.bytes} bytes of requests in flight, {nbytes} more would pass its limit of "
                f"{self.max_bytes}; retry later",
                503,
                exhausted=True,
            )
        self.bytes += nbytes

    def leave(self, nbytes: int) -> None:
        """Release an admitted request that held NBYTES in all."""
        self.requests -= 1
        self.bytes -= nbytes
        if nbytes >= _TRIM_BYTES and not self._trimming and _malloc_trim is not None:
            self._trimming = True
            asyncio.get_running_loop().call_later(_TRIM_DELAY_S, self._trim)

    def _trim(self) -> None:
        """Hand the C heap's free pages back to the system (off the event loop)."""

        def trim() -> None:
            try:
                _malloc_trim(0)
            finally:
                self._trimming = False

        threading.Thread(target=trim, name="serve-trim", daemon=True).start()


class DataPlane:
    """Health, metadata, statistics, repository control and the steps of inference, independent of transport.

    Inference is a sequence of steps rather than one method so that each transport keeps its
    hot path free of extra awaits: model() -> the transport parses the request against
    model.signature -> await model.batcher.infer(request) -> outputs() -> the transport
    encodes them -> infer_succeeded(), or infer_failed() for whatever went wrong on the way.
    """

    def __init__(self, repository: Repository, control: ModelControl, restriction: Restriction | None = None,
                 admission: Admission | None = None) -> None:
        self.repository = repository
        self.control = control
        self.restriction = restriction
        self.admission = admission or Admission()
        self.exposition = Exposition(lambda: self.repository.all_versions())

    def live(self) -> bool:
        """Whether the server process answers (always, once it does)."""
        return True

    def ready(self) -> bool:
        """Whether the server takes new work."""
        return self.repository.ready

    def server_metadata(self) -> dict:
        """The server's name, version and protocol extensions."""
        return {"name": SERVER_NAME, "version": __version__, "extensions": EXTENSIONS}

    def model(self, name: str, version: str | None = None) -> ModelVersion:
        """The served model version a request names (the newest when VERSION is empty), or a 404/503 error."""
        return self.repository.get(name, version or None)

    def model_ready(self, name: str, version: str | None = None) -> dict:
        """The model's name and whether it takes requests; a 404/503 error when it is not served."""
        return {"name": self.model(name, version).name, "ready": self.repository.ready}

    def model_metadata(self, name: str, version: str | None = None) -> bytes:
        """The model version's V2 metadata, as JSON (cached when the version loaded)."""
        return self.model(name, version).metadata_json

    def model_config(self, name: str, version: str | None = None) -> bytes:
        """The model version's configuration in Triton's JSON form (cached when the version loaded)."""
        return self.model(name, version).config_json

    def model_statistics(self, name: str | None = None, version: str | None = None) -> dict:
        """Triton's statistics of one version, of every version of model NAME, or of every model (no NAME)."""
        repository = self.repository
        if name:
            model = self.model(name, version)
            models = [model] if version else list(repository.models[model.name].values())
        else:
            models = repository.all_versions()
        return {"model_stats": [m.stats.to_json(m.name, m.version) for m in models]}

    async def metrics(self) -> str:
        """Every loaded version's statistics, latency histograms and the process's metrics, in Prometheus text format."""
        return await self.exposition.render()

    def check_restricted(self, headers: Mapping[str, str]) -> None:
        """Raise a 403 error unless HEADERS (HTTP headers or gRPC metadata) unlock the model-repository API."""
        if self.restriction is not None:
            self.restriction.check(headers.get(self.restriction.key))

    def repository_index(self, ready_only: bool = False) -> list[dict]:
        """Every model version the repository knows (only the ready ones with READY_ONLY), with its state."""
        return self.repository.index(ready_only)

    async def load(self, name: str, parameters: Mapping) -> None:
        """Load or reload model NAME; PARAMETERS (a request's load parameters) must be empty."""
        if parameters:
            raise ProtocolError(
                f"load parameters ({', '.join(map(str, parameters))}) are not supported: "
                "the server loads the files in the repository as they are"
            )
        await self.control.load(name)

    async def unload(self, name: str) -> None:
        """Unload every version of model NAME."""
        await self.control.unload(name)

    @staticmethod
    def outputs(
        model: ModelVersion, request: InferRequest, results: list[np.ndarray]
    ) -> list[tuple[str, np.ndarray, bool]]:
        """The outputs REQUEST asked for, in its order and with its binary flags, from RESULTS (in model order)."""
        index = model.output_index
        return [(name, results[index[name]], binary) for name, binary in request.outputs]

    @staticmethod
    def infer_succeeded(model: ModelVersion, start_ns: int) -> None:
        """Count an answered inference request, started at perf_counter_ns() START_NS, in the model's statistics."""
        model.stats.record_success(perf_counter_ns() - start_ns)

    @staticmethod
    def infer_failed(model: ModelVersion | None, start_ns: int, exc: Exception) -> ProtocolError:
        """Count a failed inference request (when its model was found) and return the error to answer with:
        EXC itself, or a 500 for an unexpected exception, which is logged (call it in the except block)."""
        if model is not None:
            model.stats.record_failure(perf_counter_ns() - start_ns)
        if isinstance(exc, ProtocolError):
            return exc
        logger.exception("inference request failed")
        return ProtocolError(f"internal server error: {type(exc).__name__}: {exc}", 500)
