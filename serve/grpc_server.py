"""The Open Inference Protocol gRPC service (inference.GRPCInferenceService) on grpcio's asyncio server.

It runs on the REST server's event loop and shares its repository, model control, validation,
batchers and statistics; errors carry the gRPC status matching the REST status.
"""

from __future__ import annotations

import asyncio
import logging
from time import perf_counter_ns

import grpc
import orjson
from google.protobuf import json_format

from serve import EXTENSIONS, SERVER_NAME, __version__
from serve.config import PLATFORM
from serve.control import ModelControl, Restriction
from serve.grpc_codec import encode_grpc_response, parse_grpc_request
from serve.proto import inference_pb2 as pb
from serve.proto import inference_pb2_grpc
from serve.protocol import ProtocolError
from serve.repository import Repository

logger = logging.getLogger("serve.grpc")

_STATUS_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}
_OFFLOAD_BYTES = 1 << 20


def status_code(status: int) -> grpc.StatusCode:
    """The gRPC status code matching an HTTP status of the REST API."""
    return _STATUS_CODES.get(status, grpc.StatusCode.INTERNAL)


class InferenceServicer(inference_pb2_grpc.GRPCInferenceServiceServicer):
    """Each RPC of the service, answered from the shared repository."""

    def __init__(self, repository: Repository, control: ModelControl, restriction: Restriction | None) -> None:
        self.repository = repository
        self.control = control
        self.restriction = restriction

    def _model(self, name: str, version: str):
        return self.repository.get(name, version or None)

    def _check_restricted(self, context: grpc.aio.ServicerContext) -> None:
        if self.restriction is not None:
            supplied = dict(context.invocation_metadata() or ()).get(self.restriction.key)
            self.restriction.check(supplied)

    async def ServerLive(self, request, context):
        return pb.ServerLiveResponse(live=True)

    async def ServerReady(self, request, context):
        return pb.ServerReadyResponse(ready=self.repository.ready)

    async def ModelReady(self, request, context):
        try:
            self._model(request.name, request.version)
        except ProtocolError as exc:
            if exc.status == 503:
                return pb.ModelReadyResponse(ready=False)
            await context.abort(status_code(exc.status), exc.message)
        return pb.ModelReadyResponse(ready=self.repository.ready)

    async def ServerMetadata(self, request, context):
        return pb.ServerMetadataResponse(name=SERVER_NAME, version=__version__, extensions=EXTENSIONS)

    async def ModelMetadata(self, request, context):
        try:
            model = self._model(request.name, request.version)
        except ProtocolError as exc:
            await context.abort(status_code(exc.status), exc.message)
        tensor = pb.ModelMetadataResponse.TensorMetadata
        return pb.ModelMetadataResponse(
            name=model.name,
            versions=[str(v) for v in self.repository.models.get(model.name, {})],
            platform=PLATFORM,
            inputs=[tensor(**spec.metadata()) for spec in model.session.inputs],
            outputs=[tensor(**spec.metadata()) for spec in model.session.outputs],
        )

    async def _infer(self, request: pb.ModelInferRequest) -> pb.ModelInferResponse:
        """Validate, batch and run one request, counting it in the model's statistics; raises ProtocolError."""
        start = perf_counter_ns()
        model = None
        try:
            model = self._model(request.model_name, request.model_version)
            if sum(len(raw) for raw in request.raw_input_contents) < _OFFLOAD_BYTES:
                parsed = parse_grpc_request(request, model.signature)
            else:
                parsed = await asyncio.to_thread(parse_grpc_request, request, model.signature)
            outputs = await model.batcher.infer(parsed)
            index = model.output_index
            selected = [(name, outputs[index[name]], True) for name, _ in parsed.outputs]
            response = encode_grpc_response(model.name, model.version, request.id, selected)
        except Exception as exc:
            if model is not None:
                model.stats.record_failure(perf_counter_ns() - start)
            if isinstance(exc, ProtocolError):
                raise
            logger.exception("inference request failed")
            raise ProtocolError(f"internal server error: {type(exc).__name__}: {exc}", 500) from None
        model.stats.record_success(perf_counter_ns() - start)
        return response

    async def ModelInfer(self, request, context):
        try:
            return await self._infer(request)
        except ProtocolError as exc:
            await context.abort(status_code(exc.status), exc.message)

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

    async def ModelConfig(self, request, context):
        try:
            model = self._model(request.name, request.version)
        except ProtocolError as exc:
            await context.abort(status_code(exc.status), exc.message)
        config = json_format.ParseDict(orjson.loads(model.config_json), pb.ModelConfig())
        return pb.ModelConfigResponse(config=config)

    async def ModelStatistics(self, request, context):
        repository = self.repository
        if request.name:
            try:
                model = self._model(request.name, request.version)
            except ProtocolError as exc:
                await context.abort(status_code(exc.status), exc.message)
            models = [model] if request.version else list(repository.models[model.name].values())
        else:
            models = repository.all_versions()
        response = pb.ModelStatisticsResponse()
        for model in models:
            json_format.ParseDict(
                model.stats.to_json(model.name, model.version), response.model_stats.add(), ignore_unknown_fields=True
            )
        return response

    async def RepositoryIndex(self, request, context):
        try:
            self._check_restricted(context)
        except ProtocolError as exc:
            await context.abort(status_code(exc.status), exc.message)
        entry = pb.RepositoryIndexResponse.ModelIndex
        return pb.RepositoryIndexResponse(models=[entry(**e) for e in self.repository.index(request.ready)])

    async def RepositoryModelLoad(self, request, context):
        try:
            self._check_restricted(context)
            if request.parameters:
                raise ProtocolError(
                    f"load parameters ({', '.join(request.parameters)}) are not supported: "
                    "the server loads the files in the repository as they are"
                )
            await self.control.load(request.model_name)
        except ProtocolError as exc:
            await context.abort(status_code(exc.status), exc.message)
        return pb.RepositoryModelLoadResponse()

    async def RepositoryModelUnload(self, request, context):
        try:
            self._check_restricted(context)
            await self.control.unload(request.model_name)
        except ProtocolError as exc:
            await context.abort(status_code(exc.status), exc.message)
        return pb.RepositoryModelUnloadResponse()


class GrpcServer:
    """grpcio's asyncio server for the service, started and stopped with the REST app."""

    def __init__(self, servicer: InferenceServicer, host: str, port: int, max_request_bytes: int) -> None:
        self.servicer = servicer
        self.address = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
        self.max_request_bytes = max_request_bytes
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        """Bind and start serving on the running event loop."""
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", self.max_request_bytes),
                ("grpc.max_send_message_length", -1),
                ("grpc.so_reuseport", 0),
            ]
        )
        inference_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(self.servicer, server)
        try:
            server.add_insecure_port(self.address)
        except RuntimeError as exc:
            raise RuntimeError(f"cannot bind the gRPC port {self.address}: {exc}") from None
        await server.start()
        self._server = server
        logger.info("gRPC service inference.GRPCInferenceService on %s", self.address)

    async def stop(self) -> None:
        """Finish in-flight calls (up to 30 s), refusing new ones."""
        if self._server is not None:
            await self._server.stop(grace=30)
