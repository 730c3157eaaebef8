"""ASGI routes of the Open Inference Protocol (KServe V2 / Triton REST) server, and its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from serve import EXTENSIONS, SERVER_NAME, __version__
from serve.control import ModelControl, Restriction
from serve.metrics import prometheus_text
from serve.protocol import ProtocolError, encode_infer_response, error_body, parse_infer_request
from serve.repository import Repository
from serve.runtime import InferencePool

if TYPE_CHECKING:
    from serve.grpc_server import GrpcServer

logger = logging.getLogger("serve")

JSON = "application/json"
_JSON_HEADER = (b"content-type", b"application/json")
_BINARY_HEADER = (b"content-type", b"application/octet-stream")
# Bodies and outputs above this size are decoded and encoded on a helper thread, so a
# single large request cannot hold up health checks and other clients for long.
_OFFLOAD_BYTES = 1 << 20
_ADMIN_BODY_BYTES = 1 << 16


class _Disconnected(Exception):
    """The client went away before its request body arrived."""


def _json(payload, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type=JSON)


def _error(exc: ProtocolError) -> Response:
    return Response(error_body(exc.message), status_code=exc.status, media_type=JSON)


async def _send(send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _decompress(body: bytes, encoding: bytes, limit: int) -> bytes:
    """Undo a gzip or deflate Content-Encoding, refusing output beyond the size limit."""
    if encoding == b"gzip":
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == b"deflate":
        decoder = zlib.decompressobj(zlib.MAX_WBITS)
    else:
        raise ProtocolError(f"unsupported Content-Encoding {encoding.decode('latin-1')!r}; use gzip, deflate or none")
    try:
        data = decoder.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ProtocolError(f"the body is not valid {encoding.decode()} data: {exc}") from None
    if len(data) > limit:
        raise ProtocolError(f"the decompressed request body exceeds the limit of {limit} bytes", 413)
    if not decoder.eof:
        raise ProtocolError(f"the {encoding.decode()} body is truncated")
    return data


class InferEndpoint:
    """POST .../infer as a bare ASGI app: bounded body read, validation, batching, encoding."""

    def __init__(self, repository: Repository, max_request_bytes: int) -> None:
        self.repository = repository
        self.limit = max_request_bytes

    async def __call__(self, scope, receive, send) -> None:
        start = perf_counter_ns()
        params = scope["path_params"]
        model = None
        try:
            model = self.repository.get(params["model"], params.get("version"))
            body, header_length = await self._read(scope, receive)
            if len(body) < _OFFLOAD_BYTES:
                request = parse_infer_request(body, header_length, model.signature)
            else:
                request = await asyncio.to_thread(parse_infer_request, body, header_length, model.signature)
            outputs = await model.batcher.infer(request)
            index = model.output_index
            selected = [(name, outputs[index[name]], binary) for name, binary in request.outputs]
            if sum(array.nbytes for _, array, _ in selected) < _OFFLOAD_BYTES:
                payload, json_length = encode_infer_response(model.name, model.version, request.id, selected)
            else:
                payload, json_length = await asyncio.to_thread(
                    encode_infer_response, model.name, model.version, request.id, selected
                )
        except _Disconnected:
            return
        except ProtocolError as exc:
            if model is not None:
                model.stats.record_failure(perf_counter_ns() - start)
            # An oversized body's unread rest is discarded by uvicorn once the response is
            # complete, so the connection stays usable and the client reads the 413 intact.
            await _send(send, exc.status, error_body(exc.message), [_JSON_HEADER])
            return
        except Exception as exc:
            logger.exception("inference request failed")
            if model is not None:
                model.stats.record_failure(perf_counter_ns() - start)
            await _send(send, 500, error_body(f"internal server error: {type(exc).__name__}: {exc}"), [_JSON_HEADER])
            return
        model.stats.record_success(perf_counter_ns() - start)
        if json_length is None:
            await _send(send, 200, payload, [_JSON_HEADER])
        else:
            headers = [_BINARY_HEADER, (b"inference-header-content-length", str(json_length).encode())]
            await _send(send, 200, payload, headers)

    async def _read(self, scope, receive) -> tuple[bytes, int | None]:
        limit = self.limit
        declared = header_length = encoding = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"inference-header-content-length":
                header_length = value
            elif name == b"content-encoding":
                encoding = value.strip().lower()
        if declared is not None and declared.isdigit() and (len(declared) > 19 or int(declared) > limit):
            raise ProtocolError(f"the request body is {declared.decode()} bytes, the limit is {limit} bytes", 413)
        if header_length is not None:
            if not header_length.strip().isdigit() or len(header_length.strip()) > 19:
                raise ProtocolError(
                    f"Inference-Header-Content-Length must be a byte count, got {header_length.decode('latin-1')!r}"
                )
            header_length = int(header_length)
        chunks = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise ProtocolError(f"the request body exceeds the limit of {limit} bytes", 413)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if encoding is not None and encoding != b"identity":
            body = _decompress(body, encoding, limit)
        return body, header_length


async def _json_body(request: Request) -> dict:
    """An optional JSON object body of a repository request (empty means {})."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _ADMIN_BODY_BYTES:
            raise ProtocolError(f"a repository request body is limited to {_ADMIN_BODY_BYTES} bytes", 413)
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        return {}
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"malformed JSON in request: {exc}") from None
    if not isinstance(payload, dict):
        raise ProtocolError(f"the request must be a JSON object, got {type(payload).__name__}")
    return payload


def create_app(
    repository: Repository,
    control: ModelControl,
    pool: InferencePool,
    max_request_bytes: int,
    on_fatal: Callable[[], None],
    restriction: Restriction | None = None,
    grpc_server: GrpcServer | None = None,
) -> ServeApp:
    """The ASGI application serving a repository; loading (and the gRPC server) start with the app's lifespan."""

    def model_of(request: Request):
        params = request.path_params
        return repository.get(params["model"], params.get("version"))

    async def live(request: Request) -> Response:
        return _json({"live": True})

    async def ready(request: Request) -> Response:
        return _json({"ready": repository.ready}, 200 if repository.ready else 503)

    async def server_metadata(request: Request) -> Response:
        return _json({"name": SERVER_NAME, "version": __version__, "extensions": EXTENSIONS})

    async def model_metadata(request: Request) -> Response:
        try:
            model = model_of(request)
        except ProtocolError as exc:
            return _error(exc)
        return Response(model.metadata_json, media_type=JSON)

    async def model_ready(request: Request) -> Response:
        try:
            model = model_of(request)
        except ProtocolError as exc:
            return _error(exc)
        ok = repository.ready
        return _json({"name": model.name, "ready": ok}, 200 if ok else 503)

    async def model_config(request: Request) -> Response:
        try:
            model = model_of(request)
        except ProtocolError as exc:
            return _error(exc)
        return Response(model.config_json, media_type=JSON)

    async def model_stats(request: Request) -> Response:
        if "model" in request.path_params:
            try:
                model = model_of(request)
            except ProtocolError as exc:
                return _error(exc)
            models = [model] if "version" in request.path_params else list(repository.models[model.name].values())
        else:
            models = repository.all_versions()
        return _json({"model_stats": [m.stats.to_json(m.name, m.version) for m in models]})

    def check_restricted(request: Request) -> None:
        if restriction is not None:
            restriction.check(request.headers.get(restriction.key))

    async def repository_index(request: Request) -> Response:
        try:
            check_restricted(request)
            ready_only = (await _json_body(request)).get("ready", False)
            if not isinstance(ready_only, bool):
                raise ProtocolError(f"'ready' must be true or false, got {ready_only!r}")
        except ProtocolError as exc:
            return _error(exc)
        return _json(repository.index(ready_only))

    async def load_model(request: Request) -> Response:
        try:
            check_restricted(request)
            parameters = (await _json_body(request)).get("parameters") or {}
            if not isinstance(parameters, dict):
                raise ProtocolError(f"'parameters' must be a JSON object, got {type(parameters).__name__}")
            if parameters:
                raise ProtocolError(
                    f"load parameters ({', '.join(map(str, parameters))}) are not supported: "
                    "the server loads the files in the repository as they are"
                )
            await control.load(request.path_params["model"])
        except ProtocolError as exc:
            return _error(exc)
        return _json({})

    async def unload_model(request: Request) -> Response:
        try:
            check_restricted(request)
            await _json_body(request)
            await control.unload(request.path_params["model"])
        except ProtocolError as exc:
            return _error(exc)
        return _json({})

    async def metrics(request: Request) -> Response:
        text = prometheus_text(repository.all_versions())
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        else:
            message = f"no such endpoint: {request.method} {request.url.path}"
        return Response(error_body(message), status_code=exc.status_code, media_type=JSON, headers=exc.headers)

    async def load() -> None:
        try:
            if grpc_server is not None:
                await grpc_server.start()
            loaded_any = await control.start()
        except Exception as exc:
            repository.state = "failed"
            logger.error("cannot serve: %s", exc)
            on_fatal()
            return
        if not loaded_any:
            repository.state = "failed"
            logger.error("cannot serve: no model could be loaded (see the errors above)")
            on_fatal()
            return
        logger.info("server ready: %d model version(s)", len(repository.all_versions()))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        loader = asyncio.get_running_loop().create_task(load())
        try:
            yield
        finally:
            if not loader.done():
                await asyncio.wait([loader])
            await control.stop()
            if grpc_server is not None:
                await grpc_server.stop()
            if repository.state != "failed":
                await repository.close()
            await asyncio.get_running_loop().run_in_executor(None, pool.shutdown)

    infer = InferEndpoint(repository, max_request_bytes)
    model_path = "/v2/models/{model}"
    version_path = "/v2/models/{model}/versions/{version}"
    routes = [
        Route(model_path + "/infer", infer, methods=["POST"]),
        Route(version_path + "/infer", infer, methods=["POST"]),
        Route("/v2/health/live", live, methods=["GET"]),
        Route("/v2/health/ready", ready, methods=["GET"]),
        Route("/v2", server_metadata, methods=["GET"]),
        Route("/v2/models/stats", model_stats, methods=["GET"]),
        Route("/v2/repository/index", repository_index, methods=["POST"]),
        Route("/v2/repository/models/{model}/load", load_model, methods=["POST"]),
        Route("/v2/repository/models/{model}/unload", unload_model, methods=["POST"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    for path in (model_path, version_path):
        routes += [
            Route(path, model_metadata, methods=["GET"]),
            Route(path + "/ready", model_ready, methods=["GET"]),
            Route(path + "/config", model_config, methods=["GET"]),
            Route(path + "/stats", model_stats, methods=["GET"]),
        ]
    starlette = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: http_error, 405: http_error})
    return ServeApp(starlette, infer)


class ServeApp:
    """The server's ASGI app: inference POSTs go straight to the endpoint, everything else to Starlette."""

    def __init__(self, starlette: Starlette, infer: InferEndpoint) -> None:
        self.starlette = starlette
        self.infer = infer

    async def __call__(self, scope, receive, send) -> None:
        # The inference route is the hot path: matching it here skips Starlette's
        # middleware stack and route scan, which cost as much as validating a request.
        if scope["type"] == "http" and scope["method"] == "POST":
            parts = scope["path"].split("/")
            if parts[-1] == "infer" and parts[1:3] == ["v2", "models"] and parts[3]:
                if len(parts) == 5:
                    scope["path_params"] = {"model": parts[3]}
                    return await self.infer(scope, receive, send)
                if len(parts) == 7 and parts[4] == "versions" and parts[5]:
                    scope["path_params"] = {"model": parts[3], "version": parts[5]}
                    return await self.infer(scope, receive, send)
        await self.starlette(scope, receive, send)
