"""gRPC calls over serve.http2's streams: the service's methods by path, length-prefixed messages, metadata,
deadlines, statuses in trailers, and the listener that the REST app starts and stops.

The servicer (serve.grpc_server.InferenceServicer) keeps grpcio's servicer shape: each method takes the
request message (or, for a streaming method, an async iterator of them) and a context with `abort`,
`invocation_metadata`, `peer`, `code` and `add_done_callback`.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import functools
import logging
import time
from collections.abc import Callable
from urllib.parse import quote

from google.protobuf.message import DecodeError

from serve.http2 import CANCEL, Handler, Http2Connection, Stream, StreamBudget, literal
from serve.protocol import ProtocolError

logger = logging.getLogger("serve.grpc")
access_logger = logging.getLogger("serve.access")



class StatusCode(enum.Enum):
    """gRPC's status codes (grpc/doc/statuscodes.md): the number sent in grpc-status."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


OK = StatusCode.OK
_HEAD = b"\x88" + b"\x0f\x10\x10application/grpc"  # :status 200 (static index 8), content-type (static name 31)
_OK_TRAILERS = literal(b"grpc-status", b"0")
# Headers that are the transport's, not the call's metadata.
_NOT_METADATA = frozenset((b"content-type", b"te", b"grpc-timeout", b"grpc-encoding", b"grpc-accept-encoding",
                           b"user-agent"))
_TIMEOUT_UNITS = {b"H": 3600.0, b"M": 60.0, b"S": 1.0, b"m": 1e-3, b"u": 1e-6, b"n": 1e-9}
_MAX_MESSAGE_HEADER = 5


class Abort(Exception):
    """Ends a call with a status (raised by the context's abort)."""

    def __init__(self, code: StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


def trailers(code: StatusCode, details: str = "", head: bool = False) -> bytes:
    """The header block that ends a call with CODE (and the HTTP head first, for a trailers-only answer)."""
    block = (_HEAD if head else b"") + literal(b"grpc-status", str(code.value).encode())
    if details:
        block += literal(b"grpc-message", quote(details, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~").encode())
    return block


def message(payload: bytes) -> bytes:
    """PAYLOAD as one length-prefixed, uncompressed gRPC message."""
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


class Method:
    """One method of the service: how its messages are parsed and written, and the servicer's code for it."""

    __slots__ = ("name", "path", "parse", "streaming", "behaviour", "direct")

    def __init__(self, name: str, path: str, parse: Callable, streaming: bool, behaviour: Callable,
                 direct: Callable | None = None) -> None:
        """DIRECT (unary methods only): ``direct(payload, parse, answered)`` answers a request message's bytes
        without a task of its own (``parse(payload)`` reads them as the call's message), calling
        ``answered(response bytes, None)`` or ``answered(None, exception)`` later, and returns the future to
        cancel if the call ends first (its peer resets it, or its deadline passes); None leaves the request
        to BEHAVIOUR."""
        self.name, self.path, self.parse, self.streaming, self.behaviour = name, path, parse, streaming, behaviour
        self.direct = direct


class Context:
    """What a method sees of its call (grpcio's servicer context, in the part the servicer uses)."""

    __slots__ = ("call",)

    def __init__(self, call: Call) -> None:
        self.call = call

    async def abort(self, code: StatusCode, details: str = "") -> None:
        raise Abort(code, details)

    def invocation_metadata(self) -> tuple:
        return self.call.metadata()

    def peer(self) -> str:
        return self.call.connection.peer

    def code(self) -> StatusCode | None:
        return self.call.code

    def add_done_callback(self, callback: Callable) -> None:
        self.call.done_callbacks.append(callback)


class Call:
    """One call on one stream: its method, the message bytes received so far, and the task answering it (for a
    call answered directly, the future of its work)."""

    __slots__ = ("connection", "stream", "method", "buffer", "messages", "waiter", "ended", "task", "code",
                 "timer", "done_callbacks", "started_ns", "held", "calls", "head_sent", "uncredited")

    def __init__(self, calls: Calls, connection: Http2Connection, stream: Stream, method: Method) -> None:
        self.calls = calls
        self.connection = connection
        self.stream = stream
        self.method = method
        self.buffer = bytearray()
        self.messages: list[bytes] = []
        self.waiter: asyncio.Future | None = None
        self.ended = False
        self.task: asyncio.Task | None = None
        self.code: StatusCode | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.done_callbacks: list[Callable] = []
        self.started_ns = time.perf_counter_ns()
        self.held = 0  # bytes of an unfinished large message counted by admission control
        self.head_sent = False
        self.uncredited = 0  # a stream's bytes received behind an unread message, not yet given back to the peer

    def metadata(self) -> tuple:
        pairs = []
        for name, value in self.stream.headers:
            if name[:1] == b":" or name in _NOT_METADATA:
                continue
            key = name.decode("latin-1")
            pairs.append((key, base64.b64decode(value + b"==") if key.endswith("-bin") else value.decode("latin-1")))
        return tuple(pairs)

    # -- messages in

    def received(self, data: bytes) -> None:
        """Frame the bytes into messages. They are given back to the peer's window at once, except a
        stream's while one of its messages waits to be read: a flooding client waits on flow control."""
        if self.method.streaming and self.messages:
            # A message waits unread: what comes behind it is given back only once it is read.
            self.uncredited += len(data)
        else:
            self.connection.credit(self.stream, len(data))
        buffer = self.buffer
        if not buffer and data[:1] == b"\0" and len(data) == _MAX_MESSAGE_HEADER + int.from_bytes(data[1:5], "big") \
                and len(data) - _MAX_MESSAGE_HEADER <= self.calls.max_message_bytes:
            # One whole message in one piece (a small request, as a rule): no framing buffer.
            self.messages.append(data[_MAX_MESSAGE_HEADER:])
            self._wake()
            return
        buffer += data
        while len(buffer) >= _MAX_MESSAGE_HEADER:
            if buffer[0] not in (0, 1):
                raise Abort(StatusCode.INTERNAL, f"a message with the compression flag {buffer[0]}")
            if buffer[0] == 1:
                raise Abort(StatusCode.UNIMPLEMENTED, "compressed messages are not supported; send them "
                                                           "uncompressed (grpc-encoding identity)")
            length = int.from_bytes(buffer[1:5], "big")
            limit = self.calls.max_message_bytes
            if length > limit:
                raise Abort(StatusCode.RESOURCE_EXHAUSTED,
                            f"received message larger than max ({length} vs. {limit})")
            if len(buffer) < _MAX_MESSAGE_HEADER + length:
                self._hold(length)
                break
            self.messages.append(bytes(buffer[5:5 + length]))
            del buffer[:5 + length]
            self._release()
        self._wake()

    def _hold(self, length: int) -> None:
        """Count an unfinished message's declared bytes with admission control while it arrives (as a request in
        flight), so that many slow uploads cannot hold more memory than the in-flight bounds allow; a message
        that arrives whole in one read is never counted here."""
        if not self.held:
            self.calls.admission.enter(length)
            self.held = length

    def _release(self) -> None:
        if self.held:
            self.calls.admission.leave(self.held)
            self.held = 0

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def end(self) -> None:
        self.ended = True
        self._wake()

    async def requests(self):
        """A streaming method's requests, each parsed as it is read; the stream's window reopens as they are."""
        while True:
            while not self.messages:
                if self.ended:
                    if self.buffer:
                        raise Abort(StatusCode.INTERNAL, "the stream ended inside a message")
                    return
                self.waiter = asyncio.get_running_loop().create_future()
                await self.waiter
                self.waiter = None
            payload = self.messages.pop(0)
            if not self.messages and self.uncredited:
                self.connection.credit(self.stream, self.uncredited)
                self.uncredited = 0
            yield self.parse(payload)

    def parse(self, payload: bytes):
        """The method's request message in PAYLOAD; a malformed one ends the call INVALID_ARGUMENT."""
        try:
            return self.method.parse(payload)
        except DecodeError as exc:
            raise Abort(StatusCode.INVALID_ARGUMENT,
                        f"the request is not a valid {self.method.name} request message: {exc}") from None

    def single(self) -> bytes:
        """A unary method's one request message, unparsed (``parse`` reads it)."""
        if self.buffer:
            raise Abort(StatusCode.INTERNAL, "the request ended inside a message")
        if len(self.messages) != 1:
            raise Abort(StatusCode.UNIMPLEMENTED if self.messages else StatusCode.INTERNAL,
                        f"a unary call needs exactly one request message, not {len(self.messages)}")
        return self.messages.pop()


    # -- ending

    def finish(self, code: StatusCode, details: str = "") -> None:
        """Send the status (with the answer's head when none was sent) and run the done callbacks, once."""
        if self.code is not None:
            return
        self.code = code
        self._settle()
        self.connection.send(self.stream, b"", b"", trailers(code, details, not self.head_sent))
        self._done()

    def _settle(self) -> None:
        """Stop the deadline's timer, and give back what the call held: admission bytes, unread window."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._release()
        if self.uncredited:
            self.connection.credit(None, self.uncredited)
            self.uncredited = 0

    def _done(self) -> None:
        context = Context(self)
        for callback in self.done_callbacks:
            try:
                callback(context)
            except Exception:
                logger.exception("a gRPC call's done callback failed")

    def cancelled(self) -> None:
        """The peer reset the stream (or the connection went): stop the work, answer nothing."""
        self._settle()
        if self.code is None:
            self.code = StatusCode.CANCELLED
            if self.task is not None and not self.task.done():
                self.task.cancel()
            self._done()
        self._wake()

    def expire(self) -> None:
        """The deadline passed: the call ends DEADLINE_EXCEEDED and its work is cancelled."""
        self.timer = None
        if self.code is None:
            self.finish(StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
            if self.task is not None and not self.task.done():
                self.task.cancel()


def _timeout(value: bytes) -> float | None:
    """grpc-timeout's value in seconds (None when malformed)."""
    unit = _TIMEOUT_UNITS.get(value[-1:])
    digits = value[:-1]
    if unit is None or not digits.isdigit() or len(digits) > 8:
        return None
    return int(digits) * unit


class Calls(Handler):
    """The gRPC side of every connection: a call per stream, answered by the service's methods."""

    def __init__(self, methods: dict[bytes, Method], admission, max_message_bytes: int, access_log: bool) -> None:
        self.methods = methods
        self.admission = admission
        self.max_message_bytes = max_message_bytes
        self.access_log = access_log
        self._known: tuple | None = None  # (header list, its method, its grpc-timeout) of the last call opened

    def opened(self, connection: Http2Connection, stream: Stream, ended: bool) -> None:
        known = self._known
        if known is not None and known[0] is stream.headers:
            # The same decoded header list as the last call's (a client's repeated header block, decoded once
            # by its connection): the same method and deadline.
            method, timeout = known[1], known[2]
        else:
            headers = dict(stream.headers)
            failure = self._refusal(headers)
            if failure is not None:
                connection.send(stream, b"", b"", failure)
                return
            method = self.methods.get(headers.get(b":path", b""))
            if method is None:
                path = headers.get(b":path", b"").decode("latin-1")
                connection.send(stream, b"", b"", trailers(StatusCode.UNIMPLEMENTED, f"Method not found: {path}",
                                                           head=True))
                return
            timeout = headers.get(b"grpc-timeout")
            self._known = (stream.headers, method, timeout)
        call = Call(self, connection, stream, method)
        stream.call = call
        if self.access_log:
            call.done_callbacks.append(functools.partial(_log_call, method.path))
        if timeout is not None:
            seconds = _timeout(timeout)
            if seconds is None:
                call.finish(StatusCode.INVALID_ARGUMENT, f"a malformed grpc-timeout {timeout!r}")
                return
            call.timer = asyncio.get_running_loop().call_later(seconds, call.expire)
        if method.streaming:
            call.task = asyncio.get_running_loop().create_task(self._stream(call))
        if ended:
            self.ended(connection, stream)

    @staticmethod
    def _refusal(headers: dict) -> bytes | None:
        """The answer to a request that is not a gRPC call (wrong method or content type), else None."""
        if headers.get(b":method") != b"POST":
            return b"\x08\x03405" + literal(b"allow", b"POST")
        content_type = headers.get(b"content-type", b"")
        if not content_type.startswith(b"application/grpc"):
            return b"\x08\x03415" + literal(b"content-type", b"text/plain")
        return None

    def received(self, connection: Http2Connection, stream: Stream, data: bytes) -> None:
        call = stream.call
        if call is None or call.code is not None:
            connection.credit(stream, len(data))
            return
        try:
            call.received(data)
        except Abort as exc:
            call.finish(exc.code, exc.details)
            if call.task is not None:
                call.task.cancel()
        except ProtocolError as exc:  # admission control's capacity error
            call.finish(StatusCode.RESOURCE_EXHAUSTED, exc.message)
            if call.task is not None:
                call.task.cancel()

    def ended(self, connection: Http2Connection, stream: Stream) -> None:
        call = stream.call
        if call is None or call.code is not None:
            return
        call.end()
        if not call.method.streaming:
            try:
                payload = call.single()
                if call.method.direct is not None:
                    # The work in flight, cancelled as a task would be when the call ends first.
                    call.task = call.method.direct(payload, call.parse, functools.partial(_answered, call))
                    if call.task is not None:
                        return
                request = call.parse(payload)
            except (Exception, asyncio.CancelledError) as exc:
                _failed(call, exc)
                return
            call.task = asyncio.get_running_loop().create_task(self._unary(call, request))

    def reset(self, connection: Http2Connection, stream: Stream) -> None:
        if stream.call is not None:
            stream.call.cancelled()

    async def _unary(self, call: Call, request) -> None:
        try:
            response = await call.method.behaviour(request, Context(call))
            payload = response.SerializeToString()
        except (Exception, asyncio.CancelledError) as exc:
            _failed(call, exc)
            return
        _answered(call, payload, None)

    async def _stream(self, call: Call) -> None:
        try:
            async for response in call.method.behaviour(call.requests(), Context(call)):
                if call.code is not None:
                    return
                head = b"" if call.head_sent else _HEAD
                call.head_sent = True
                call.connection.send(call.stream, head, message(response.SerializeToString()), None)
        except (Exception, asyncio.CancelledError) as exc:
            _failed(call, exc)
            return
        call.finish(OK)


def _answered(call: Call, payload: bytes | None, exc: BaseException | None) -> None:
    """End a unary CALL with its response message's bytes, or for the exception its method met (unless the call
    has ended meanwhile: its peer reset it, or its deadline passed)."""
    if exc is not None:
        _failed(call, exc)
    elif call.code is None:
        call.code = OK
        call.head_sent = True
        call._settle()
        call.connection.send(call.stream, _HEAD, message(payload), _OK_TRAILERS)
        if call.done_callbacks:
            call._done()


def _failed(call: Call, exc: BaseException) -> None:
    """End CALL for the exception its method raised: an abort's status, UNKNOWN for a bug (logged), nothing
    for a cancelled call (its peer is gone, or its deadline answered it)."""
    if isinstance(exc, Abort):
        call.finish(exc.code, exc.details)
    elif not isinstance(exc, asyncio.CancelledError):
        logger.error("gRPC %s failed", call.method.name, exc_info=exc)
        call.finish(StatusCode.UNKNOWN, f"Unexpected {type(exc).__name__}: {exc}")


def _log_call(path: str, context: Context) -> None:
    call = context.call
    code = call.code or StatusCode.UNKNOWN
    access_logger.info("%s gRPC %s %s %.3f ms", call.connection.peer, path, code.name,
                       (time.perf_counter_ns() - call.started_ns) / 1e6)


class Listener:
    """The gRPC port: a server of HTTP/2 connections on the running event loop, started and stopped with the app."""

    def __init__(self, calls: Calls, host: str, port: int, max_streams: int = 128,
                 max_connections: int = 1000, preface_timeout_s: float = 10.0, max_open_streams: int = 4096) -> None:
        """MAX_STREAMS: streams open at once on one connection, MAX_OPEN_STREAMS on all of them (more are
        refused); MAX_CONNECTIONS: connections open at once, one past it is told why (GOAWAY) and closed, as is
        one that has not sent HTTP/2's preface within PREFACE_TIMEOUT_S."""
        self.calls = calls
        self.host, self.port = host, port
        self.max_streams = max_streams
        self.max_connections = max_connections
        self.preface_timeout_s = preface_timeout_s
        self.budget = StreamBudget(max_open_streams)
        self.connections: set[Http2Connection] = set()
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        host = self.host.strip("[]")

        def connection() -> Http2Connection:
            full = len(self.connections) >= self.max_connections
            refuse = f"the server has {len(self.connections)} gRPC connections open, its limit" if full else ""
            made = Http2Connection(self.calls, self.max_streams, self.connections.discard, refuse,
                                   self.preface_timeout_s, self.budget)
            self.connections.add(made)
            return made

        self._server = await loop.create_server(connection, host, self.port, reuse_address=True)

    async def stop(self, grace: float = 30.0) -> None:
        """Refuse new calls (GOAWAY), let the calls in flight finish for up to GRACE seconds, then close."""
        if self._server is None:
            return
        self._server.close()
        for connection in list(self.connections):
            connection.go_away()
        deadline = time.monotonic() + grace
        while self.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for connection in list(self.connections):
            for stream in list(connection.streams.values()):
                connection.reset_stream(stream, CANCEL)
            connection.transport.close()
        await self._server.wait_closed()
        self._server = None
