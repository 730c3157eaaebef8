"""The HTTP connection guard around uvicorn's httptools protocol: header size (431), header and body read
timeouts (408), a connection cap (503), and one socket write per response (status line, headers and body)."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from http import HTTPStatus

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from serve.http_infer import DirectCycle, abandon, answer, direct_cycle, remember, repeat_cycle
from serve.protocol import error_body

logger = logging.getLogger("serve")


@dataclass(frozen=True)
class ConnectionLimits:
    """What one HTTP connection may cost: header bytes (431 beyond), seconds for a request's headers to
    arrive and between two pieces of its body (408 after), and how many connections are open at once."""

    max_header_bytes: int = 64 * 1024
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 1000


_LINGER_S = 1.0
# Files kept free of HTTP connections under the open-file limit: models, gRPC, logs, the event loop.
_SPARE_FILES = 256


def _raw_response(status: int, message: str) -> bytes:
    body = error_body(message)
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


# A response's status line and headers wait for at most this much body to leave with it in one write.
_JOIN_BYTES = 1 << 16


class _ResponseWriter:
    """The transport as one request's response cycle sees it: the status line and headers, which uvicorn
    writes on their own, wait for the body's first piece and leave with it in one write.

    One system call and one TCP segment per response instead of two: the second write was a third of the
    event loop's time on single-sample binary requests (py-spy, README's Performance section). Headers
    still go out at the next turn of the loop when the body comes later, and before anything else the
    connection writes; writes before the response starts (100 Continue) are never held.
    """

    __slots__ = ("transport", "cycle", "loop", "head", "started")

    def __init__(self, transport, cycle, loop) -> None:
        self.transport = transport
        self.cycle = cycle
        self.loop = loop
        self.head: bytes | None = None
        self.started = False

    def write(self, data: bytes) -> None:
        if not self.started and self.cycle.response_started:
            # uvicorn marks the response started just before it writes the status line and headers.
            self.started = True
            self.head = data
            self.loop.call_soon(self.flush)
            return
        head = self.head
        if head is not None:
            self.head = None
            if len(data) <= _JOIN_BYTES:
                data = head + data
            else:
                self.transport.write(head)
        self.transport.write(data)

    def flush(self) -> None:
        """Write held headers now (unless the connection is closing)."""
        head = self.head
        if head is not None:
            self.head = None
            if not self.transport.is_closing():
                self.transport.write(head)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, bounded by its LIMITS (uvicorn's own bounds none of these): counts
    header bytes and times the header and body phases of each request on the connection.

    Timers start only when a phase outlasts one read (a request that arrives whole sets none),
    and reads paused by the server's own flow control do not count against the client. Small
    inference requests take the direct path of ``serve.http_infer`` instead of an ASGI cycle.
    """

    limits = ConnectionLimits()

    def connection_made(self, transport) -> None:
        self._refused = len(self.connections) >= self.limits.max_connections
        if self._refused:
            transport.write(_raw_response(503, "the server has too many open connections; retry later"))
            transport.close()
            return
        super().connection_made(transport)
        self._lingering = False
        self._awaiting_headers = True
        self._header_bytes = 0
        self._body_seen = 0.0
        self._body_timer = None
        self._header_timer = self.loop.call_later(self.limits.header_timeout_s, self._header_expired)
        self._repeat = None  # the head of the last whole direct request (serve.http_infer.RepeatHead)
        self._begun = 0

    def connection_lost(self, exc) -> None:
        if self._refused:
            return
        self._cancel_timers()
        if isinstance(self.cycle, DirectCycle):
            abandon(self.cycle)
        super().connection_lost(exc)

    def _cancel_timers(self) -> None:
        for timer in (self._header_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._body_timer = None

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return
        fresh = self._awaiting_headers and not self._header_bytes  # the read starts a request
        if fresh and self._repeat is not None:
            cycle = repeat_cycle(self, self._repeat, data)
            if cycle is not None:
                self._unset_keepalive_if_required()
                self.cycle = cycle
                answer(self, cycle)
                return
        if self._awaiting_headers:
            self._header_bytes += len(data)
        self._begun = 0
        super().data_received(data)
        if self.transport.is_closing():
            return
        if fresh and self._begun == 1 and self._awaiting_headers and isinstance(self.cycle, DirectCycle):
            # One whole direct request and nothing else in this read: a later read may repeat its head.
            self._repeat = remember(self.cycle, data) or self._repeat
        if self._awaiting_headers:
            if self._header_bytes > self.limits.max_header_bytes:
                self._refuse(431, f"the request's headers exceed {self.limits.max_header_bytes} bytes")
            elif self._header_bytes and self._header_timer is None:
                self._header_timer = self.loop.call_later(self.limits.header_timeout_s, self._header_expired)
        elif self.cycle is not None and self.cycle.more_body:
            self._body_seen = self.loop.time()
            if self._body_timer is None:
                self._body_timer = self.loop.call_later(self.limits.body_timeout_s, self._body_expired)

    def on_message_begin(self) -> None:
        self._begun += 1
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        self._header_bytes = 0
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        self._body_seen = self.loop.time()
        direct = direct_cycle(self)
        if direct is not None:
            self.cycle = direct
            return
        previous = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not previous:
            cycle.transport = _ResponseWriter(self.transport, cycle, self.loop)

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if isinstance(cycle, DirectCycle):
            cycle.body.append(body)
        else:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._awaiting_headers = True
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        cycle = self.cycle
        if isinstance(cycle, DirectCycle):
            answer(self, cycle)
        else:
            super().on_message_complete()

    def _refuse(self, status: int, message: str) -> None:
        """Answer STATUS (unless a response of the current request has begun) and close.

        The close lingers: what the client still sends is discarded for a moment, so that its
        kernel does not meet a reset (which would drop the answer) while it finishes sending.
        """
        self._cancel_timers()
        if self.cycle is not None and isinstance(self.cycle.transport, _ResponseWriter):
            self.cycle.transport.flush()
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_raw_response(status, message))
        if self.cycle is not None:
            # The application's receive() answers a disconnect and its send() writes nothing.
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self._lingering = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_S, self.transport.close)

    def _header_expired(self) -> None:
        self._header_timer = None
        if self._awaiting_headers and not self.transport.is_closing():
            self._refuse(408, f"the request's headers did not arrive within {self.limits.header_timeout_s:g} s")

    def _body_expired(self) -> None:
        self._body_timer = None
        if self._awaiting_headers or self.transport.is_closing():
            return
        idle = self.loop.time() - self._body_seen
        if self.flow.read_paused or idle < self.limits.body_timeout_s:
            wait = self.limits.body_timeout_s - idle if not self.flow.read_paused else self.limits.body_timeout_s
            self._body_timer = self.loop.call_later(max(wait, 0.01), self._body_expired)
            return
        self._refuse(408, f"the request body stopped arriving for {self.limits.body_timeout_s:g} s")


def guarded_protocol(limits: ConnectionLimits) -> type:
    """The HTTP protocol class for uvicorn's Config(http=...), bounded by LIMITS."""
    return type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})


def raise_open_file_limit(connections: int) -> int:
    """Let the process hold CONNECTIONS sockets besides its files, as far as the hard limit allows; returns
    the connections that fit (CONNECTIONS, or fewer where the limit cannot be raised enough)."""
    try:
        import resource
    except ImportError:
        return connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + _SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and soft < wanted:
        fitted = max(1, soft - _SPARE_FILES)
        logger.warning("the open-file limit is %d: at most %d HTTP connections in all (%d wanted)",
                       soft, fitted, connections)
        return fitted
    return connections
