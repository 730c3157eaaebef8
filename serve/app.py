"""ASGI routes of the Open Inference Protocol (KServe V2 / Triton REST) server, and its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Awaitable, Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from serve.control import ModelControl
from serve.dataplane import OFFLOAD_BYTES, DataPlane
from serve.http_infer import JSON_WEIGHT, infer_route
from serve.protocol import (
    ProtocolError,
    check_binary_header,
    encode_infer_response,
    error_body,
    parse_infer_request,
)
from serve.repository import Repository
from serve.runtime import InferencePool

if TYPE_CHECKING:
    from serve.grpc_server import GrpcServer
    from serve.metrics import MetricsServer

logger = logging.getLogger("serve")

# Exit statuses of a server that stops by itself (0 is a clean stop on SIGTERM or SIGINT, 2 a command-line
# or setup error, found before anything starts): no model could be loaded; a port could not be bound
# (uvicorn's own status for the HTTP port).
EXIT_NO_MODEL = 1
EXIT_PORT = 3

JSON = "application/json"
_JSON_HEADER = (b"content-type", b"application/json")
_BINARY_HEADER = (b"content-type", b"application/octet-stream")
_ADMIN_BODY_BYTES = 1 << 16
# Binary bodies at least this large have their JSON header checked before the tensors are read.
_EARLY_CHECK_BYTES = 1 << 20


class _Disconnected(Exception):
    """The client went away before its request body arrived."""


def _json(payload, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type=JSON)


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
    """POST .../infer as a bare ASGI app: admission, bounded body read, validation, batching, encoding."""

    def __init__(self, plane: DataPlane, max_request_bytes: int, max_json_bytes: int | None = None) -> None:
        self.plane = plane
        self.limit = max_request_bytes
        self.json_limit = min(max_json_bytes or max_request_bytes, max_request_bytes)

    async def __call__(self, scope, receive, send) -> None:
        admission = self.plane.admission
        try:
            admission.enter(0)
        except ProtocolError as exc:
            await _send(send, exc.status, error_body(exc.message), [_JSON_HEADER])
            return
        held = [0]
        try:
            await self._serve(scope, receive, send, held)
        finally:
            admission.leave(held[0])

    async def _serve(self, scope, receive, send, held: list[int]) -> None:
        start = perf_counter_ns()
        params = scope["path_params"]
        plane = self.plane
        model = None
        try:
            model = plane.model(params["model"], params.get("version"))
            body, header_length = await self._read(scope, receive, model, held)
            if len(body) < OFFLOAD_BYTES:
                request = parse_infer_request(body, header_length, model.signature)
            else:
                request = await asyncio.to_thread(parse_infer_request, body, header_length, model.signature)
            selected = plane.outputs(model, request, await model.batcher.infer(request))
            if sum(array.nbytes for _, array, _ in selected) < OFFLOAD_BYTES:
                payload, json_length = encode_infer_response(model.name, model.version, request.id, selected)
            else:
                payload, json_length = await asyncio.to_thread(
                    encode_infer_response, model.name, model.version, request.id, selected
                )
        except _Disconnected:
            return
        except Exception as exc:
            error = plane.infer_failed(model, start, exc)
            # An oversized body's unread rest is discarded by uvicorn once the response is
            # complete, so the connection stays usable and the client reads the 413 intact.
            await _send(send, error.status, error_body(error.message), [_JSON_HEADER])
            return
        plane.infer_succeeded(model, start)
        if json_length is None:
            await _send(send, 200, payload, [_JSON_HEADER])
        else:
            headers = [_BINARY_HEADER, (b"inference-header-content-length", str(json_length).encode())]
            await _send(send, 200, payload, headers)

    def _headers(self, scope) -> tuple[int | None, int | None, bytes | None]:
        """Content-Length, Inference-Header-Content-Length and Content-Encoding, checked against the limits."""
        declared = header_length = encoding = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"inference-header-content-length":
                header_length = value
            elif name == b"content-encoding":
                encoding = value.strip().lower()
        if header_length is not None:
            if not header_length.strip().isdigit() or len(header_length.strip()) > 19:
                raise ProtocolError(
                    f"Inference-Header-Content-Length must be a byte count, got {header_length.decode('latin-1')!r}"
                )
            header_length = int(header_length)
            if header_length > self.json_limit:
                raise ProtocolError(
                    f"the request's JSON header is {header_length} bytes, the limit is {self.json_limit} bytes", 413
                )
        limit = self.limit if header_length is not None else self.json_limit
        if declared is not None and declared.isdigit():
            if len(declared) > 19 or int(declared) > limit:
                kind = "binary" if header_length is not None else "JSON"
                raise ProtocolError(
                    f"the {kind} request body is {declared.decode()} bytes, the limit is {limit} bytes", 413
                )
            declared = int(declared)
        else:
            declared = None
        return declared, header_length, encoding

    async def _read(self, scope, receive, model, held: list[int]) -> tuple[bytes, int | None]:
        declared, header_length, encoding = self._headers(scope)
        limit = self.limit if header_length is not None else self.json_limit
        weight = 1 if header_length is not None else JSON_WEIGHT
        admission = self.plane.admission
        if declared:
            admission.grow(declared * weight)
            held[0] += declared * weight
        early = header_length is not None and declared is not None and declared >= _EARLY_CHECK_BYTES
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
            if declared is None:
                admission.grow(len(chunk) * weight)
                held[0] += len(chunk) * weight
            chunks.append(chunk)
            if early and size >= header_length and encoding in (None, b"identity"):
                early = False
                head = b"".join(chunks)[:header_length]
                announced = check_binary_header(head, model.signature)
                if header_length + announced != declared:
                    raise ProtocolError(
                        f"the request body is {declared} bytes, its JSON header ({header_length} bytes) announces "
                        f"{announced} binary bytes after it"
                    )
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


class _Endpoints:
    """The REST endpoints besides inference: parse the path and body, ask the data plane, encode its answer."""

    def __init__(self, plane: DataPlane) -> None:
        self.plane = plane

    async def live(self, request: Request) -> Response:
        return _json({"live": self.plane.live()})

    async def ready(self, request: Request) -> Response:
        ready = self.plane.ready()
        return _json({"ready": ready}, 200 if ready else 503)

    async def server_metadata(self, request: Request) -> Response:
        return _json(self.plane.server_metadata())

    async def model_metadata(self, request: Request) -> Response:
        return Response(self.plane.model_metadata(*_model_of(request)), media_type=JSON)

    async def model_ready(self, request: Request) -> Response:
        answer = self.plane.model_ready(*_model_of(request))
        return _json(answer, 200 if answer["ready"] else 503)

    async def model_config(self, request: Request) -> Response:
        return Response(self.plane.model_config(*_model_of(request)), media_type=JSON)

    async def model_statistics(self, request: Request) -> Response:
        params = request.path_params
        return _json(self.plane.model_statistics(params.get("model"), params.get("version")))

    async def repository_index(self, request: Request) -> Response:
        self.plane.check_restricted(request.headers)
        ready_only = (await _json_body(request)).get("ready", False)
        if not isinstance(ready_only, bool):
            raise ProtocolError(f"'ready' must be true or false, got {ready_only!r}")
        return _json(self.plane.repository_index(ready_only))

    async def load(self, request: Request) -> Response:
        self.plane.check_restricted(request.headers)
        parameters = (await _json_body(request)).get("parameters") or {}
        if not isinstance(parameters, dict):
            raise ProtocolError(f"'parameters' must be a JSON object, got {type(parameters).__name__}")
        await self.plane.load(request.path_params["model"], parameters)
        return _json({})

    async def unload(self, request: Request) -> Response:
        self.plane.check_restricted(request.headers)
        await _json_body(request)
        await self.plane.unload(request.path_params["model"])
        return _json({})

    async def metrics(self, request: Request) -> Response:
        return Response(await self.plane.metrics(), media_type="text/plain; version=0.0.4; charset=utf-8")


def _model_of(request: Request) -> tuple[str, str | None]:
    """The model name and version (None for the newest) in a request's path."""
    params = request.path_params
    return params["model"], params.get("version")


def _answering_errors(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """HANDLER as a route endpoint that answers a ProtocolError with its status and JSON error body."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except ProtocolError as exc:
            return Response(error_body(exc.message), status_code=exc.status, media_type=JSON)

    return endpoint


def _routes(plane: DataPlane, infer: InferEndpoint) -> list[Route]:
    """Every REST route of the protocol, in matching order."""
    rest = _Endpoints(plane)
    model_path = "/v2/models/{model}"
    version_path = "/v2/models/{model}/versions/{version}"
    table = [
        ("GET", "/v2/health/live", rest.live),
        ("GET", "/v2/health/ready", rest.ready),
        ("GET", "/v2", rest.server_metadata),
        ("GET", "/v2/models/stats", rest.model_statistics),
        ("POST", "/v2/repository/index", rest.repository_index),
        ("POST", "/v2/repository/models/{model}/load", rest.load),
        ("POST", "/v2/repository/models/{model}/unload", rest.unload),
        ("GET", "/metrics", rest.metrics),
    ]
    for path in (model_path, version_path):
        table += [
            ("GET", path, rest.model_metadata),
            ("GET", path + "/ready", rest.model_ready),
            ("GET", path + "/config", rest.model_config),
            ("GET", path + "/stats", rest.model_statistics),
        ]
    routes = [Route(path + "/infer", infer, methods=["POST"]) for path in (model_path, version_path)]
    return routes + [Route(path, _answering_errors(handler), methods=[method]) for method, path, handler in table]


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """The JSON error body of a request no route takes (404) or takes with another method (405)."""
    if exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    else:
        message = f"no such endpoint: {request.method} {request.url.path}"
    return Response(error_body(message), status_code=exc.status_code, media_type=JSON, headers=exc.headers)


def _lifespan(
    repository: Repository,
    control: ModelControl,
    pool: InferencePool,
    on_fatal: Callable[[int], None],
    listeners: list,
    http_bound: Callable[[], bool] | None,
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: the other ports (gRPC, metrics) open and loading starts with it; "server ready"
    is logged once the models are loaded and every port is bound; everything drains at its end."""
    stopping: list[bool] = []

    async def load() -> None:
        try:
            for listener in listeners:
                await listener.start()
        except Exception as exc:
            repository.state = "failed"
            logger.error("cannot serve: %s", exc)
            on_fatal(EXIT_PORT)
            return
        try:
            loaded_any = await control.start()
        except Exception as exc:
            repository.state = "failed"
            logger.error("cannot serve: %s", exc)
            on_fatal(EXIT_NO_MODEL)
            return
        if not loaded_any:
            repository.state = "failed"
            logger.error("cannot serve: no model could be loaded (see the errors above)")
            on_fatal(EXIT_NO_MODEL)
            return
        # uvicorn binds the HTTP port after the lifespan has started; when that bind fails it ends the
        # lifespan instead, and the server must not have claimed to be ready.
        while http_bound is not None and not http_bound():
            if stopping:
                return
            await asyncio.sleep(0.01)
        logger.info("server ready: %d model version(s)", len(repository.all_versions()))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        # Before the port opens: every model on disk answers 503 "loading" until it loads, never 404.
        control.announce()
        loader = asyncio.get_running_loop().create_task(load())
        try:
            yield
        finally:
            stopping.append(True)
            if not loader.done():
                await asyncio.wait([loader])
            await control.stop()
            for listener in listeners:
                await listener.stop()
            if repository.state != "failed":
                await repository.close()
            await asyncio.get_running_loop().run_in_executor(None, pool.shutdown)

    return lifespan


def create_app(
    plane: DataPlane,
    pool: InferencePool,
    max_request_bytes: int,
    on_fatal: Callable[[int], None],
    grpc_server: GrpcServer | None = None,
    max_json_bytes: int | None = None,
    metrics_server: MetricsServer | None = None,
    http_bound: Callable[[], bool] | None = None,
) -> ServeApp:
    """The ASGI application serving a data plane; the gRPC and metrics ports open and loading starts with the
    app's lifespan. ON_FATAL(exit status) stops the server; HTTP_BOUND tells whether the HTTP port is bound."""
    infer = InferEndpoint(plane, max_request_bytes, max_json_bytes)
    listeners = [server for server in (grpc_server, metrics_server) if server is not None]
    lifespan = _lifespan(plane.repository, plane.control, pool, on_fatal, listeners, http_bound)
    errors = {404: _http_error, 405: _http_error}
    starlette = Starlette(routes=_routes(plane, infer), lifespan=lifespan, exception_handlers=errors)
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
            route = infer_route(scope["path"])
            if route is not None:
                model, version = route
                scope["path_params"] = {"model": model} if version is None else {"model": model, "version": version}
                return await self.infer(scope, receive, send)
        await self.starlette(scope, receive, send)
