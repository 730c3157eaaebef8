"""The Open Inference Protocol gRPC service (inference.GRPCInferenceService).

Its calls arrive over serve.http2's connections on the REST server's event loop (serve.grpc_calls) and are
answered from the same data plane (repository, model control, validation, batchers and statistics); errors
carry the gRPC status matching the REST status.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from time import perf_counter_ns

import orjson
from google.protobuf import json_format

from serve.dataplane import OFFLOAD_BYTES, DataPlane
from serve.grpc_calls import Abort, Calls, Context, Listener, Method, StatusCode
from serve.grpc_codec import (
    Plan,
    RawLayout,
    encode_grpc_response,
    encode_grpc_response_bytes,
    parse_grpc_request,
    split_raw,
)
from serve.proto import inference_pb2 as pb
from serve.protocol import ProtocolError

logger = logging.getLogger("serve.grpc")

_STATUS_CODES = {
    400: StatusCode.INVALID_ARGUMENT,
    403: StatusCode.PERMISSION_DENIED,
    404: StatusCode.NOT_FOUND,
    413: StatusCode.RESOURCE_EXHAUSTED,
    503: StatusCode.UNAVAILABLE,
}

_Rpc = Callable[..., Awaitable[object]]
# Validation plans kept for repeated raw-contents requests (see InferenceServicer._validated).
_PLANS = 256


def status_code(status: int) -> StatusCode:
    """The gRPC status code matching an HTTP status of the REST API."""
    return _STATUS_CODES.get(status, StatusCode.INTERNAL)


def _abort(exc: ProtocolError) -> Abort:
    """The gRPC status and message answering a ProtocolError."""
    return Abort(StatusCode.RESOURCE_EXHAUSTED if exc.exhausted else status_code(exc.status), exc.message)


def _rpc(method: _Rpc) -> _Rpc:
    """A unary RPC that answers a ProtocolError it raises with the matching gRPC status and the message."""

    @functools.wraps(method)
    async def rpc(self: InferenceServicer, request, context: Context):
        try:
            return await method(self, request, context)
        except ProtocolError as exc:
            raise _abort(exc) from None

    return rpc


def _metadata(context: Context) -> dict:
    """A call's invocation metadata as a mapping, for the restricted-API check."""
    return dict(context.invocation_metadata() or ())


class InferenceServicer:
    """Each RPC of the service: the request message to a data plane call, its answer to the response message."""

    def __init__(self, plane: DataPlane, stream_inflight: int = 8) -> None:
        """STREAM_INFLIGHT bounds the requests of one ModelStreamInfer stream being answered at once: the
        stream's next request is read only when one finishes, so a flooding client waits on flow control."""
        self.plane = plane
        self.stream_inflight = stream_inflight
        self._plans: dict = {}
        self._layout: RawLayout | None = None  # where the last planned request kept its parts

    async def ServerLive(self, request, context):
        return pb.ServerLiveResponse(live=self.plane.live())

    async def ServerReady(self, request, context):
        return pb.ServerReadyResponse(ready=self.plane.ready())

    @_rpc
    async def ModelReady(self, request, context):
        try:
            ready = self.plane.model_ready(request.name, request.version)["ready"]
        except ProtocolError as exc:
            # As Triton answers: a loading, unavailable or unknown model (or version) is simply not ready.
            if exc.status not in (404, 503):
                raise
            ready = False
        return pb.ModelReadyResponse(ready=ready)

    async def ServerMetadata(self, request, context):
        return pb.ServerMetadataResponse(**self.plane.server_metadata())

    @_rpc
    async def ModelMetadata(self, request, context):
        metadata = orjson.loads(self.plane.model_metadata(request.name, request.version))
        # The REST metadata's 'parameters' have no field in the gRPC message.
        return json_format.ParseDict(metadata, pb.ModelMetadataResponse(), ignore_unknown_fields=True)

    async def _infer(self, request: pb.ModelInferRequest, context: object = None) -> pb.ModelInferResponse:
        """Validate, batch and run one request, counting it in the model's statistics; raises ProtocolError.

        CONTEXT is unused: it lets ModelInfer be this method under _rpc, with no coroutine between.
        """
        start = perf_counter_ns()
        plane = self.plane
        model = None
        nbytes = request.ByteSize()
        plane.admission.enter(nbytes)
        try:
            model = plane.model(request.model_name, request.model_version)
            if nbytes < OFFLOAD_BYTES:
                parsed = parse_grpc_request(request, model.signature)
            else:
                parsed = await asyncio.to_thread(parse_grpc_request, request, model.signature)
            selected = plane.outputs(model, parsed, await model.batcher.infer(parsed))
            response = encode_grpc_response(model.name, model.version, request.id, selected)
        except Exception as exc:
            raise plane.infer_failed(model, start, exc) from None
        finally:
            plane.admission.leave(nbytes)
        plane.infer_succeeded(model, start)
        return response

    ModelInfer = _rpc(_infer)

    def _validated(self, payload: bytes, parse: Callable) -> tuple:
        """``(model, validated request)`` of a ModelInferRequest's bytes. A request whose fields before its raw
        contents repeat, byte for byte, those of one validated before for the same model version (a client's
        next call, as a rule), with contents of the same sizes, takes that validation's plan."""
        last = self._layout
        raws = last.split(payload) if last is not None else None
        if raws is not None:  # laid out as the last planned request: no walk over its fields
            model = self.plane.model(last.plan.model_name, last.plan.model_version)
            if model.signature is last.plan.signature:
                return model, last.plan.request(raws)
        split = split_raw(payload)
        if split is not None and split[1]:
            key = (split[0], tuple(len(raw) for raw in split[1]))
            plan = self._plans.get(key)
            if plan is not None:
                model = self.plane.model(plan.model_name, plan.model_version)
                if model.signature is plan.signature:
                    if last is None or last.plan is not plan:
                        self._layout = RawLayout(*key, plan)
                    return model, plan.request(split[1])
        request = parse(payload)
        model = self.plane.model(request.model_name, request.model_version)
        tensors: list = []
        parsed = parse_grpc_request(request, model.signature, tensors)
        if split is not None and split[1] and len(tensors) == len(parsed.inputs):
            if len(self._plans) >= _PLANS:
                self._plans.clear()
            plan = self._plans[key] = Plan(request, model.signature, parsed, tensors)
            self._layout = RawLayout(*key, plan)
        return model, parsed

    def infer_direct(self, payload: bytes, parse: Callable, answered: Callable) -> asyncio.Future | None:
        """ModelInfer without a task of its own (``Method.direct``): validate and queue the request message in
        PAYLOAD now, call ``answered`` with the response's bytes when its batch is done, and return the
        batcher's future (a call that ends first cancels it, and a request still queued is dropped unrun).
        None for a request large enough to be parsed on a helper thread (ModelInfer's task answers it)."""
        nbytes = len(payload)
        if nbytes >= OFFLOAD_BYTES:
            return None
        start = perf_counter_ns()
        plane = self.plane
        try:
            plane.admission.enter(nbytes)
        except ProtocolError as exc:
            raise _abort(exc) from None
        model = None

        def finished(job) -> None:
            if job.future.cancelled():  # the call has ended: nothing to answer, nothing to count
                plane.admission.leave(nbytes)
                return
            try:
                selected = plane.outputs(model, parsed, model.batcher.result(job))
                payload = encode_grpc_response_bytes(model.name, model.version, parsed.id or "", selected)
            except Exception as exc:
                error = plane.infer_failed(model, start, exc)
                plane.admission.leave(nbytes)
                answered(None, _abort(error))
                return
            plane.admission.leave(nbytes)
            plane.infer_succeeded(model, start)
            answered(payload, None)

        try:
            model, parsed = self._validated(payload, parse)
            job = model.batcher.submit(parsed, finished)
        except Abort:
            plane.admission.leave(nbytes)
            raise
        except Exception as exc:
            plane.admission.leave(nbytes)
            raise _abort(plane.infer_failed(model, start, exc)) from None
        return job.future

    async def ModelStreamInfer(self, request_iterator, context):
        """Answer each request of the stream as soon as it is done (so possibly out of order: match
        them by id); a failed request is answered with its error_message and the stream goes on."""
        answers: asyncio.Queue = asyncio.Queue()

        async def answer(request: pb.ModelInferRequest) -> None:
            try:
                answers.put_nowait(pb.ModelStreamInferResponse(infer_response=await self._infer(request)))
            except ProtocolError as exc:
                failed = pb.ModelInferResponse(model_name=request.model_name, model_version=request.model_version,
                                               id=request.id)
                answers.put_nowait(pb.ModelStreamInferResponse(error_message=exc.message, infer_response=failed))

        async def read() -> None:
            running: set[asyncio.Task] = set()
            try:
                async for request in request_iterator:
                    if len(running) >= self.stream_inflight:
                        await asyncio.wait(list(running), return_when=asyncio.FIRST_COMPLETED)
                    task = asyncio.ensure_future(answer(request))
                    running.add(task)
                    task.add_done_callback(running.discard)
                if running:
                    await asyncio.wait(list(running))
            finally:
                answers.put_nowait(None)

        reader = asyncio.ensure_future(read())
        try:
            while (item := await answers.get()) is not None:
                yield item
        finally:
            reader.cancel()

    @_rpc
    async def ModelConfig(self, request, context):
        config = json_format.ParseDict(orjson.loads(self.plane.model_config(request.name, request.version)),
                                       pb.ModelConfig())
        return pb.ModelConfigResponse(config=config)

    @_rpc
    async def ModelStatistics(self, request, context):
        statistics = self.plane.model_statistics(request.name, request.version)
        return json_format.ParseDict(statistics, pb.ModelStatisticsResponse(), ignore_unknown_fields=True)

    @_rpc
    async def RepositoryIndex(self, request, context):
        self.plane.check_restricted(_metadata(context))
        entry = pb.RepositoryIndexResponse.ModelIndex
        return pb.RepositoryIndexResponse(models=[entry(**e) for e in self.plane.repository_index(request.ready)])

    @_rpc
    async def RepositoryModelLoad(self, request, context):
        self.plane.check_restricted(_metadata(context))
        await self.plane.load(request.model_name, request.parameters)
        return pb.RepositoryModelLoadResponse()

    @_rpc
    async def RepositoryModelUnload(self, request, context):
        self.plane.check_restricted(_metadata(context))
        await self.plane.unload(request.model_name)
        return pb.RepositoryModelUnloadResponse()


_SERVICE = "inference.GRPCInferenceService"


def methods(servicer: InferenceServicer) -> dict[bytes, Method]:
    """Every method of the service by its HTTP/2 path, answered by SERVICER."""
    table = {}
    for method in pb.DESCRIPTOR.services_by_name["GRPCInferenceService"].methods:
        path = f"/{_SERVICE}/{method.name}"
        direct = servicer.infer_direct if method.name == "ModelInfer" else None
        table[path.encode()] = Method(method.name, path, getattr(pb, method.input_type.name).FromString,
                                      method.client_streaming, getattr(servicer, method.name), direct)
    return table


class GrpcServer:
    """The gRPC port, started and stopped with the REST app: serve.http2 connections on the same event loop."""

    def __init__(self, servicer: InferenceServicer, host: str, port: int, max_request_bytes: int,
                 access_log: bool = False, max_connections: int = 1000, preface_timeout_s: float = 10.0) -> None:
        self.servicer = servicer
        self.address = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
        calls = Calls(methods(servicer), servicer.plane.admission, max_request_bytes, access_log)
        self._listener = Listener(calls, host, port, max_connections=max_connections,
                                  preface_timeout_s=preface_timeout_s)

    async def start(self) -> None:
        """Bind and start serving on the running event loop."""
        try:
            await self._listener.start()
        except OSError as exc:
            raise RuntimeError(f"cannot bind the gRPC port {self.address}: {exc}") from None
        logger.info("gRPC service %s on %s", _SERVICE, self.address)

    async def stop(self) -> None:
        """Finish in-flight calls (up to 30 s), refusing new ones."""
        await self._listener.stop(grace=30)
