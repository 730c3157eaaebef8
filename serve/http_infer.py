"""Small inference requests answered by the HTTP connection itself, without an ASGI request cycle.

Through uvicorn, every request builds an ASGI scope, a request-response cycle with its event, and a task
whose coroutines await the body, the batch and two sends; on single-sample binary requests that was most
of the event loop's time, and the event loop is what bounds the server's rate. A POST to ``.../infer``
whose body is small, sized by Content-Length and not encoded, arriving on a connection with nothing else
in flight, is instead validated as its last byte arrives, handed to the model's batcher with a callback,
and answered in one write when its batch is done.

Everything else goes through the ASGI application as before: other routes and methods, chunked,
compressed or large bodies, ``Expect: 100-continue``, HTTP/1.0, requests pipelined behind one in flight,
a connection whose writes are paused (the client does not read), and servers with an access log. Both
paths share the admission bounds, validation, batching, statistics, encoding and error bodies, so a
client sees the same answers either way.
"""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from time import perf_counter_ns

from serve.dataplane import OFFLOAD_BYTES
from serve.protocol import ProtocolError, encode_infer_response, error_body, parse_infer_request

# Bodies at most this large take the direct path: they arrive in a read or two and validate in microseconds,
# so validating them on the event loop holds up no one (larger ones keep the ASGI path's early checks).
DIRECT_BODY_BYTES = 1 << 16
# A JSON body costs many times its size once parsed (a 63 MB body peaked at +958 MiB), so it counts
# this many times its size against the bytes in flight; a binary body's tensors are views of it.
JSON_WEIGHT = 16
# A connection remembers the head of its last whole direct request when it is at most this long (RepeatHead).
REPEAT_HEAD_BYTES = 4096

_STATUS_LINES: dict[int, bytes] = {}
_JSON_TYPE = b"content-type: application/json\r\n"
_BINARY_TYPE = b"content-type: application/octet-stream\r\ninference-header-content-length: "


def infer_route(path: str) -> tuple[str, str | None] | None:
    """``(model, version or None)`` when PATH is ``/v2/models/M[/versions/V]/infer``, else None."""
    parts = path.split("/")
    if parts[-1] != "infer" or parts[1:3] != ["v2", "models"] or len(parts) < 5 or not parts[3]:
        return None
    if len(parts) == 5:
        return parts[3], None
    if len(parts) == 7 and parts[4] == "versions" and parts[5]:
        return parts[3], parts[5]
    return None


class _NoEvent:
    """What uvicorn's protocol sets on a request's cycle when the connection goes: nothing waits on it here."""

    __slots__ = ()

    def set(self) -> None:
        pass


_NO_EVENT = _NoEvent()


class DirectCycle:
    """One request on the direct path, in the place of uvicorn's request-response cycle: it carries the
    attributes the protocol and the connection guard read and set on a cycle (``more_body``,
    ``response_started``, ``response_complete``, ``disconnected``, ``keep_alive``, ``message_event``)."""

    __slots__ = ("endpoint", "model_name", "version", "header_length", "start_ns", "body", "held", "size", "more_body",
                 "response_started", "response_complete", "disconnected", "keep_alive", "message_event", "transport")

    def __init__(self, endpoint, route: tuple[str, str | None], header_length: int | None, keep_alive: bool,
                 transport) -> None:
        self.endpoint = endpoint
        self.model_name, self.version = route
        self.header_length = header_length
        self.start_ns = perf_counter_ns()
        self.body: list[bytes] = []
        self.held = self.size = 0
        self.more_body = True
        self.response_started = self.response_complete = self.disconnected = False
        self.keep_alive = keep_alive
        self.message_event = _NO_EVENT
        self.transport = transport


def _sizes(headers: list[tuple[bytes, bytes]]) -> tuple[int, int | None] | None:
    """``(Content-Length, Inference-Header-Content-Length or None)`` of a plain body, or None when the request
    needs the ASGI path (no or odd Content-Length, a transfer or content encoding, an odd header length)."""
    declared = header_length = None
    for name, value in headers:
        if name == b"content-length":
            if declared is not None or not value.isdigit() or len(value) > 9:
                return None
            declared = int(value)
        elif name == b"inference-header-content-length":
            value = value.strip()
            if header_length is not None or not value.isdigit() or len(value) > 9:
                return None
            header_length = int(value)
        elif name == b"transfer-encoding" or (name == b"content-encoding" and value.strip().lower() != b"identity"):
            return None
    if declared is None or (header_length is not None and header_length > declared):
        return None
    return declared, header_length


def direct_cycle(protocol) -> DirectCycle | None:
    """A cycle for the direct path when the request whose headers PROTOCOL (uvicorn's httptools protocol,
    inside ``on_headers_complete``) has just parsed qualifies; None sends it through the ASGI application."""
    endpoint = getattr(protocol.app, "infer", None)
    if endpoint is None or not hasattr(endpoint, "plane"):
        return None
    cycle = protocol.cycle
    if (cycle is not None and not cycle.response_complete) or protocol.pipeline or protocol.expect_100_continue:
        return None
    if protocol.access_log or protocol.flow.write_paused or protocol.limit_concurrency is not None or protocol.root_path:
        return None
    parser = protocol.parser
    if parser.get_method() != b"POST" or parser.get_http_version() != "1.1" or parser.should_upgrade():
        return None
    url = protocol.url
    if b"?" in url or b"%" in url or b"#" in url or not url.startswith(b"/"):
        return None  # a query, a quoted or an absolute-form target: left to the ASGI path's parsing
    try:
        route = infer_route(url.decode("ascii"))
    except UnicodeDecodeError:
        return None
    sizes = _sizes(protocol.headers) if route is not None else None
    if sizes is None:
        return None
    declared, header_length = sizes
    limit = endpoint.limit if header_length is not None else endpoint.json_limit
    if declared > min(DIRECT_BODY_BYTES, limit) or (header_length is not None and header_length > endpoint.json_limit):
        return None
    # In flight from its headers on, holding the bytes it declares (as on the ASGI path, which answers a refusal).
    held = declared * (1 if header_length is not None else JSON_WEIGHT)
    try:
        endpoint.plane.admission.enter(held)
    except ProtocolError:
        return None
    cycle = DirectCycle(endpoint, route, header_length, parser.should_keep_alive(), protocol.transport)
    cycle.held, cycle.size = held, declared
    return cycle


class RepeatHead:
    """The request line and headers of a direct request that arrived whole in one read, and what they said.

    A client sends the same head for every request of a kind (route, sizes and headers alike), so a later
    read of these same bytes followed by exactly the body they declare is parsed the same way: the
    connection answers it without the parser's callbacks and the head's checks (the body is validated
    as ever). Each connection keeps the last such head of a keep-alive request.
    """

    __slots__ = ("head", "total", "route", "header_length", "held")

    def __init__(self, head: bytes, total: int, cycle: DirectCycle) -> None:
        self.head, self.total = head, total
        self.route = (cycle.model_name, cycle.version)
        self.header_length, self.held = cycle.header_length, cycle.held


def remember(cycle: DirectCycle, data: bytes) -> RepeatHead | None:
    """The head of CYCLE's request when DATA, one read, held that request and nothing else."""
    head_size = len(data) - cycle.size
    if not cycle.keep_alive or not 0 < head_size <= REPEAT_HEAD_BYTES:
        return None
    return RepeatHead(bytes(data[:head_size]), len(data), cycle)


def repeat_cycle(protocol, repeat: RepeatHead, data: bytes) -> DirectCycle | None:
    """A complete cycle for the read DATA when it is REPEAT's head and a body of its size and the connection
    can take the direct path now (nothing in flight, writes not paused, a place free); None parses it."""
    if len(data) != repeat.total or not data.startswith(repeat.head):
        return None
    cycle = protocol.cycle
    if (cycle is not None and not cycle.response_complete) or protocol.pipeline or protocol.flow.write_paused:
        return None
    endpoint = protocol.app.infer
    try:
        endpoint.plane.admission.enter(repeat.held)
    except ProtocolError:
        return None
    cycle = DirectCycle(endpoint, repeat.route, repeat.header_length, True, protocol.transport)
    cycle.held, cycle.size = repeat.held, repeat.total - len(repeat.head)
    cycle.body.append(data[len(repeat.head):])
    return cycle


def abandon(cycle: DirectCycle) -> None:
    """The connection of a request whose body never completed has gone: give back what the request held."""
    if cycle.more_body:
        cycle.more_body = False
        cycle.endpoint.plane.admission.leave(cycle.held)


def answer(protocol, cycle: DirectCycle) -> None:
    """Validate the complete request of CYCLE and queue it; its response is written when its batch is done
    (or at once, for a request refused or invalid)."""
    cycle.more_body = False
    plane = cycle.endpoint.plane
    body = cycle.body[0] if len(cycle.body) == 1 else b"".join(cycle.body)
    cycle.body = []
    model = None
    try:
        model = plane.model(cycle.model_name, cycle.version)
        request = parse_infer_request(body, cycle.header_length, model.signature)
        model.batcher.submit(request, lambda job: _finish(protocol, cycle, model, request, job))
    except Exception as exc:
        error = plane.infer_failed(model, cycle.start_ns, exc)
        plane.admission.leave(cycle.held)
        _respond(protocol, cycle, error.status, error_body(error.message), None)


def _finish(protocol, cycle: DirectCycle, model, request, job) -> None:
    """Encode and write the answer of a request whose batch has run."""
    plane = cycle.endpoint.plane
    try:
        selected = plane.outputs(model, request, model.batcher.result(job))
        if sum(array.nbytes for _, array, _ in selected) >= OFFLOAD_BYTES:
            # Large outputs encode on a helper thread, as on the ASGI path; uvicorn waits for the task at shutdown.
            task = asyncio.get_running_loop().create_task(_finish_large(protocol, cycle, model, request, selected))
            protocol.tasks.add(task)
            task.add_done_callback(protocol.tasks.discard)
            return
        payload, json_length = encode_infer_response(model.name, model.version, request.id, selected)
    except (Exception, asyncio.CancelledError) as exc:
        _failed(protocol, cycle, model, exc)
        return
    _succeeded(protocol, cycle, model, payload, json_length)


async def _finish_large(protocol, cycle: DirectCycle, model, request, selected) -> None:
    try:
        payload, json_length = await asyncio.to_thread(
            encode_infer_response, model.name, model.version, request.id, selected
        )
    except Exception as exc:
        _failed(protocol, cycle, model, exc)
        return
    _succeeded(protocol, cycle, model, payload, json_length)


def _succeeded(protocol, cycle: DirectCycle, model, payload: bytes, json_length: int | None) -> None:
    cycle.endpoint.plane.infer_succeeded(model, cycle.start_ns)
    cycle.endpoint.plane.admission.leave(cycle.held)
    _respond(protocol, cycle, 200, payload, json_length)


def _failed(protocol, cycle: DirectCycle, model, exc: BaseException) -> None:
    """Answer the error EXC met (call it in the except block: an unexpected error is logged there)."""
    plane = cycle.endpoint.plane
    if isinstance(exc, asyncio.CancelledError):
        exc = ProtocolError("the request was cancelled: the server is stopping", 503)
    error = plane.infer_failed(model, cycle.start_ns, exc)
    plane.admission.leave(cycle.held)
    _respond(protocol, cycle, error.status, error_body(error.message), None)


def _status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    if line is None:
        line = _STATUS_LINES[status] = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode("ascii")
    return line


def _respond(protocol, cycle: DirectCycle, status: int, payload: bytes, json_length: int | None) -> None:
    """Write the response (status line, headers and body in one write) unless the client has gone, then let
    the connection go on: the next pipelined request starts, or the keep-alive timer runs."""
    cycle.response_started = cycle.response_complete = True
    transport = protocol.transport
    if cycle.disconnected or transport.is_closing():
        return
    parts = [_status_line(status)]
    for name, value in protocol.server_state.default_headers:
        parts += [name, b": ", value, b"\r\n"]
    parts.append(_JSON_TYPE if json_length is None else b"%s%d\r\n" % (_BINARY_TYPE, json_length))
    parts.append(b"content-length: %d\r\n" % len(payload))
    if not cycle.keep_alive:
        parts.append(b"connection: close\r\n")
    parts += [b"\r\n", payload]
    transport.write(b"".join(parts))
    if not cycle.keep_alive:
        transport.close()
    protocol.on_response_complete()
