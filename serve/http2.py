"""A server-side HTTP/2 connection (RFC 9113) on the event loop, for the gRPC service.

It reads frames, keeps the streams' states and both directions' flow-control windows, decodes header
blocks with `hpack` and hands each stream's headers, data and end to a handler (serve.grpc_calls);
what it sends (header blocks, data, trailers) comes from that handler. It is an asyncio protocol, so
a connection costs no thread and a call no hand-off: the frames of many calls are read, answered and
written together in one pass of the loop.

Limits that keep a hostile peer's costs bounded: streams open at once (SETTINGS_MAX_CONCURRENT_STREAMS,
refused past it), header blocks (MAX_HEADER_BLOCK bytes with their CONTINUATION frames), frame sizes
(what we advertise), the receive windows (a peer sending past them is a connection error) and, when the
peer does not read what it asks for (pings, settings), the connection stops reading until it does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import hpack

logger = logging.getLogger("serve.grpc")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20

NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR = 0x5, 0x6, 0x7, 0x8, 0x9
ENHANCE_YOUR_CALM = 0xB

SETTINGS_HEADER_TABLE_SIZE, SETTINGS_ENABLE_PUSH, SETTINGS_MAX_CONCURRENT_STREAMS = 1, 2, 3
SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE, SETTINGS_MAX_HEADER_LIST_SIZE = 4, 5, 6

DEFAULT_WINDOW = 65535
MAX_WINDOW = (1 << 31) - 1
# What we advertise: the largest frame a peer may send us, each stream's receive window, the connection's.
MAX_FRAME = 1 << 20
STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 1 << 24
MAX_HEADER_BLOCK = 1 << 14
# Seconds a connection ended for an error keeps reading (and dropping) what its peer sends, before it closes.
LINGER_S = 1.0


class Http2Error(Exception):
    """A connection error (RFC 9113, 5.4.1): the connection ends with GOAWAY and this code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    """One frame: its 9-byte header and PAYLOAD."""
    return (len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream_id.to_bytes(4, "big")) + payload


def _settings_payload(settings: dict[int, int]) -> bytes:
    return b"".join(key.to_bytes(2, "big") + value.to_bytes(4, "big") for key, value in settings.items())


class Stream:
    """One stream's state: its headers, whether either side has ended it, its windows and unsent data."""

    __slots__ = ("id", "headers", "remote_ended", "local_ended", "send_window", "recv_window", "owed",
                 "pending", "call")

    def __init__(self, stream_id: int, send_window: int) -> None:
        self.id = stream_id
        self.headers: list[tuple[bytes, bytes]] = []
        self.remote_ended = False
        self.local_ended = False
        self.send_window = send_window
        self.recv_window = STREAM_WINDOW
        self.owed = 0  # received bytes consumed but not yet given back with WINDOW_UPDATE
        self.pending: list[list] = []  # [data, end_block] pieces waiting for send window
        self.call = None


class StreamBudget:
    """Streams open on every connection of a port, against a bound: past it a new stream is refused, so the
    headers that open streams hold stay bounded however many connections a peer opens."""

    __slots__ = ("open", "limit")

    def __init__(self, limit: int) -> None:
        self.open = 0
        self.limit = limit


class Handler:
    """What a connection calls for its streams' events (implemented by serve.grpc_calls.Calls)."""

    def opened(self, connection: Http2Connection, stream: Stream, ended: bool) -> None:
        raise NotImplementedError

    def received(self, connection: Http2Connection, stream: Stream, data: bytes) -> None:
        raise NotImplementedError

    def ended(self, connection: Http2Connection, stream: Stream) -> None:
        raise NotImplementedError

    def reset(self, connection: Http2Connection, stream: Stream) -> None:
        raise NotImplementedError


class Http2Connection(asyncio.Protocol):
    """One client connection; ON_CLOSE(connection) is called once when it ends."""

    def __init__(self, handler: Handler, max_streams: int, on_close: Callable[[Http2Connection], None],
                 refuse: str = "", preface_timeout_s: float = 10.0, budget: StreamBudget | None = None) -> None:
        """REFUSE: why this connection is to be closed at once (GOAWAY with the reason), when it is; BUDGET: the
        streams open on every connection of the port together, and their bound (this connection's alone if None)."""
        self.handler = handler
        self.budget = budget if budget is not None else StreamBudget(max_streams)
        self.refuse = refuse
        self.preface_timeout_s = preface_timeout_s
        self._preface_timer: asyncio.TimerHandle | None = None
        self.max_streams = max_streams
        self.on_close = on_close
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.streams: dict[int, Stream] = {}
        self.last_stream_id = 0
        self.decoder = hpack.Decoder()
        self.decoder.max_header_list_size = MAX_HEADER_BLOCK
        self.buffer = bytearray()
        self.preface_seen = False
        self.header_block: list | None = None  # [stream_id, flags, fragments, size] while CONTINUATION frames come
        self.peer_window = DEFAULT_WINDOW  # initial send window of new streams
        self.peer_max_frame = 16384
        self.send_window = DEFAULT_WINDOW  # the connection's
        self.recv_window = CONNECTION_WINDOW
        self.owed = 0
        self.blocked: dict[int, Stream] = {}  # streams with data waiting for send window
        self.going_away = False
        self.closed = False
        self._out: bytearray | None = None  # frames to write at the end of this pass of the loop
        self._indexed: dict[bytes, list] = {}  # header blocks of indexed fields only, decoded

    # -- asyncio.Protocol

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"ipv4:{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) == 2 else \
            f"ipv6:[{peer[0]}]:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        settings = {SETTINGS_ENABLE_PUSH: 0, SETTINGS_MAX_CONCURRENT_STREAMS: self.max_streams,
                    SETTINGS_INITIAL_WINDOW_SIZE: STREAM_WINDOW, SETTINGS_MAX_FRAME_SIZE: MAX_FRAME,
                    SETTINGS_MAX_HEADER_LIST_SIZE: MAX_HEADER_BLOCK}
        transport.write(frame(SETTINGS, 0, 0, _settings_payload(settings))
                        + frame(WINDOW_UPDATE, 0, 0, (CONNECTION_WINDOW - DEFAULT_WINDOW).to_bytes(4, "big")))
        if self.refuse:
            self._fail(REFUSED_STREAM, self.refuse)
            return
        self._preface_timer = asyncio.get_running_loop().call_later(self.preface_timeout_s, self._preface_expired)

    def _preface_expired(self) -> None:
        self._preface_timer = None
        if not self.preface_seen and not self.closed:
            self._fail(PROTOCOL_ERROR, f"no connection preface within {self.preface_timeout_s:g} s")

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self.buffer += data
            self._read_frames()
        except Http2Error as exc:
            self._fail(exc.code, str(exc))

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self._preface_timer is not None:
            self._preface_timer.cancel()
        for stream_id in list(self.streams):
            self._reset_handler(self._forget(stream_id))
        self.on_close(self)

    def pause_writing(self) -> None:
        # The peer is not reading what we send: stop reading what it sends until it does.
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        if not self.closed:
            self.transport.resume_reading()

    # -- reading

    def _read_frames(self) -> None:
        buffer = self.buffer
        if not self.preface_seen:
            if len(buffer) < len(PREFACE):
                if not PREFACE.startswith(bytes(buffer)):
                    raise Http2Error(PROTOCOL_ERROR, "not an HTTP/2 connection preface")
                return
            if buffer[:len(PREFACE)] != PREFACE:
                raise Http2Error(PROTOCOL_ERROR, "not an HTTP/2 connection preface")
            del buffer[:len(PREFACE)]
            self.preface_seen = True
            if self._preface_timer is not None:
                self._preface_timer.cancel()
                self._preface_timer = None
        start, end = 0, len(buffer)
        while end - start >= 9 and not self.closed:
            length = int.from_bytes(buffer[start:start + 3], "big")
            if length > MAX_FRAME:
                raise Http2Error(FRAME_SIZE_ERROR, f"a frame of {length} bytes, over the {MAX_FRAME} advertised")
            if end - start < 9 + length:
                break
            kind, flags = buffer[start + 3], buffer[start + 4]
            stream_id = int.from_bytes(buffer[start + 5:start + 9], "big") & 0x7FFFFFFF
            payload = bytes(buffer[start + 9:start + 9 + length])
            start += 9 + length
            if self.header_block is not None and (kind != CONTINUATION or stream_id != self.header_block[0]):
                raise Http2Error(PROTOCOL_ERROR, "a header block interrupted before END_HEADERS")
            self._frame(kind, flags, stream_id, payload)
        del buffer[:start]

    def _frame(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if kind == DATA:
            self._data(flags, stream_id, payload)
        elif kind == HEADERS or kind == CONTINUATION:
            self._header_fragment(kind, flags, stream_id, payload)
        elif kind == WINDOW_UPDATE:
            self._window_update(stream_id, payload)
        elif kind == PING:
            if stream_id or len(payload) != 8:
                raise Http2Error(PROTOCOL_ERROR if stream_id else FRAME_SIZE_ERROR, "a malformed PING")
            if not flags & ACK:
                self.write(frame(PING, ACK, 0, payload))
        elif kind == SETTINGS:
            self._settings(flags, stream_id, payload)
        elif kind == RST_STREAM:
            if not stream_id or len(payload) != 4:
                raise Http2Error(PROTOCOL_ERROR, "a malformed RST_STREAM")
            if stream_id > self.last_stream_id:
                raise Http2Error(PROTOCOL_ERROR, "RST_STREAM on an idle stream")
            stream = self._forget(stream_id)
            if stream is not None:
                self._reset_handler(stream)
        elif kind == PRIORITY:
            if not stream_id or len(payload) != 5:
                raise Http2Error(PROTOCOL_ERROR, "a malformed PRIORITY")
        elif kind == GOAWAY:
            self.going_away = True
            self._close_if_done()
        elif kind == PUSH_PROMISE:
            raise Http2Error(PROTOCOL_ERROR, "a client may not send PUSH_PROMISE")
        # Frames of unknown types are ignored (RFC 9113, 4.1).

    @staticmethod
    def _unpad(flags: int, payload: bytes) -> bytes:
        if not flags & PADDED:
            return payload
        if not payload or payload[0] >= len(payload):
            raise Http2Error(PROTOCOL_ERROR, "padding longer than its frame")
        return payload[1:len(payload) - payload[0]]

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        if not stream_id:
            raise Http2Error(PROTOCOL_ERROR, "DATA on stream 0")
        size = len(payload)
        self.recv_window -= size
        if self.recv_window < 0:
            raise Http2Error(FLOW_CONTROL_ERROR, "DATA past the connection's receive window")
        stream = self.streams.get(stream_id)
        if stream is None or stream.remote_ended:
            if stream_id > self.last_stream_id:
                raise Http2Error(PROTOCOL_ERROR, "DATA on an idle stream")
            # A stream already answered (or reset): its data still counts against the connection's window.
            self.credit(None, size)
            if stream is not None:
                self.reset_stream(stream, STREAM_CLOSED)
            return
        stream.recv_window -= size
        if stream.recv_window < 0:
            raise Http2Error(FLOW_CONTROL_ERROR, "DATA past a stream's receive window")
        data = self._unpad(flags, payload)
        if size > len(data):  # padding is flow-controlled too, and consumed at once
            self.credit(stream, size - len(data))
        if data:
            self.handler.received(self, stream, data)
        if flags & END_STREAM and stream.id in self.streams:
            stream.remote_ended = True
            self.handler.ended(self, stream)

    def _header_fragment(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if not stream_id:
            raise Http2Error(PROTOCOL_ERROR, "a header block on stream 0")
        if kind == CONTINUATION:
            if self.header_block is None:
                raise Http2Error(PROTOCOL_ERROR, "CONTINUATION without a header block")
            block = self.header_block
            block[2].append(payload)
            block[3] += len(payload)
        else:
            payload = self._unpad(flags, payload)
            if flags & PRIORITY_FLAG:
                if len(payload) < 5:
                    raise Http2Error(FRAME_SIZE_ERROR, "HEADERS too short for its priority")
                payload = payload[5:]
            block = [stream_id, flags, [payload], len(payload)]
        if block[3] > MAX_HEADER_BLOCK:
            raise Http2Error(ENHANCE_YOUR_CALM, f"a header block over {MAX_HEADER_BLOCK} bytes")
        if not flags & END_HEADERS:
            self.header_block = block
            return
        self.header_block = None
        self._headers(stream_id, block[1], self._decode(b"".join(block[2])))

    def _decode(self, data: bytes) -> list:
        """A header block's fields. A client repeating a call sends the same block of one-byte table
        references, whose meaning cannot change until a block with literals changes the table: those are
        decoded once."""
        headers = self._indexed.get(data)
        if headers is not None:
            return headers
        try:
            headers = self.decoder.decode(data, raw=True)
        except hpack.HPACKError as exc:
            raise Http2Error(COMPRESSION_ERROR, f"a header block that cannot be decoded: {exc}") from None
        if all(byte > 0x80 and byte != 0xFF for byte in data):
            if len(self._indexed) >= 64:
                self._indexed.clear()
            self._indexed[data] = headers
        else:
            self._indexed.clear()
        return headers

    def _headers(self, stream_id: int, flags: int, headers: list) -> None:
        ended = bool(flags & END_STREAM)
        stream = self.streams.get(stream_id)
        if stream is not None:
            # Trailers: they end the stream.
            if not ended or stream.remote_ended:
                raise Http2Error(PROTOCOL_ERROR, "a second header block that does not end its stream")
            stream.remote_ended = True
            self.handler.ended(self, stream)
            return
        if stream_id % 2 == 0 or stream_id <= self.last_stream_id:
            raise Http2Error(PROTOCOL_ERROR, f"a client stream with a reused or even id {stream_id}")
        self.last_stream_id = stream_id
        stream = Stream(stream_id, self.peer_window)
        stream.headers = headers
        budget = self.budget
        if self.going_away or len(self.streams) >= self.max_streams or budget.open >= budget.limit:
            self.write(frame(RST_STREAM, 0, stream_id, REFUSED_STREAM.to_bytes(4, "big")))
            return
        self.streams[stream_id] = stream
        budget.open += 1
        stream.remote_ended = ended
        self.handler.opened(self, stream, ended)

    def _settings(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id:
            raise Http2Error(PROTOCOL_ERROR, "SETTINGS on a stream")
        if flags & ACK:
            if payload:
                raise Http2Error(FRAME_SIZE_ERROR, "a SETTINGS acknowledgement with a payload")
            return
        if len(payload) % 6:
            raise Http2Error(FRAME_SIZE_ERROR, "a SETTINGS payload that is not whole settings")
        for at in range(0, len(payload), 6):
            key, value = int.from_bytes(payload[at:at + 2], "big"), int.from_bytes(payload[at + 2:at + 6], "big")
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise Http2Error(FLOW_CONTROL_ERROR, "an initial window size over 2^31 - 1")
                delta, self.peer_window = value - self.peer_window, value
                for stream in self.streams.values():
                    stream.send_window += delta
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not 16384 <= value <= (1 << 24) - 1:
                    raise Http2Error(PROTOCOL_ERROR, f"a maximum frame size of {value}")
                self.peer_max_frame = value
            elif key == SETTINGS_ENABLE_PUSH and value > 1:
                raise Http2Error(PROTOCOL_ERROR, "ENABLE_PUSH other than 0 or 1")
        self.write(frame(SETTINGS, ACK, 0))
        self._flush_blocked()

    def _window_update(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise Http2Error(FRAME_SIZE_ERROR, "a WINDOW_UPDATE that is not 4 bytes")
        increment = int.from_bytes(payload, "big") & 0x7FFFFFFF
        if not stream_id:
            if not increment:
                raise Http2Error(PROTOCOL_ERROR, "a connection WINDOW_UPDATE of 0")
            self.send_window += increment
            if self.send_window > MAX_WINDOW:
                raise Http2Error(FLOW_CONTROL_ERROR, "the connection's send window past 2^31 - 1")
            self._flush_blocked()
            return
        stream = self.streams.get(stream_id)
        if stream is None:
            if stream_id > self.last_stream_id:
                raise Http2Error(PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream")
            return
        if not increment or stream.send_window + increment > MAX_WINDOW:
            self.reset_stream(stream, PROTOCOL_ERROR if not increment else FLOW_CONTROL_ERROR)
            return
        stream.send_window += increment
        if stream.pending:
            self._flush(stream)

    # -- flow control of what we receive

    def credit(self, stream: Stream | None, size: int) -> None:
        """SIZE received bytes (of STREAM, or of the connection only) are consumed: give them back to the peer
        once half a window is owed, so small messages cost no WINDOW_UPDATE of their own."""
        if self.closed:
            return
        self.owed += size
        if self.owed >= CONNECTION_WINDOW // 2:
            self.write(frame(WINDOW_UPDATE, 0, 0, self.owed.to_bytes(4, "big")))
            self.recv_window += self.owed
            self.owed = 0
        if stream is not None and not stream.remote_ended:
            stream.owed += size
            if stream.owed >= STREAM_WINDOW // 2 and stream.id in self.streams:
                self.write(frame(WINDOW_UPDATE, 0, stream.id, stream.owed.to_bytes(4, "big")))
                stream.recv_window += stream.owed
                stream.owed = 0

    # -- writing

    def write(self, data: bytes) -> None:
        """Queue DATA to be written at the end of this pass of the loop: the answers of a batch that complete
        together leave in one system call."""
        if self._out is not None:
            self._out += data
        elif not self.closed:
            self._out = bytearray(data)
            asyncio.get_running_loop().call_soon(self._write_out)

    def _write_out(self) -> None:
        out, self._out = self._out, None
        if out and not self.closed:
            self.transport.write(out)

    def send(self, stream: Stream, head: bytes, data: bytes, end_block: bytes | None) -> None:
        """Send a header block HEAD (b"" for none), then DATA within the windows, then END_BLOCK (trailers, which
        end the stream) when given; what the windows do not allow yet waits for WINDOW_UPDATE, in order."""
        if self.closed or stream.local_ended or stream.id not in self.streams:
            return
        size, max_frame = len(data), self.peer_max_frame
        if (end_block is not None and not stream.pending and size <= max_frame and size <= stream.send_window
                and size <= self.send_window and len(head) <= max_frame and len(end_block) <= max_frame):
            # A whole answer that the windows allow (a unary call's, as a rule): its frames in one write.
            out = frame(HEADERS, END_HEADERS, stream.id, head) if head else b""
            if size:
                out += frame(DATA, 0, stream.id, data)
            out += frame(HEADERS, END_STREAM | END_HEADERS, stream.id, end_block)
            stream.send_window -= size
            self.send_window -= size
            stream.local_ended = True
            self.write(out)
            self._finish(stream)
            return
        if head:
            self.write(head_frame(stream.id, head, False, self.peer_max_frame))
        # A view: the frames cut from a large answer share its bytes instead of copying what is left each time.
        stream.pending.append([memoryview(data), end_block])
        self._flush(stream)

    def _flush(self, stream: Stream) -> None:
        out = bytearray()
        while stream.pending:
            piece = stream.pending[0]
            data = piece[0]
            while data:
                size = min(len(data), stream.send_window, self.send_window, self.peer_max_frame)
                if size <= 0:
                    break
                out += frame(DATA, 0, stream.id, data[:size])
                data = data[size:]
                stream.send_window -= size
                self.send_window -= size
            piece[0] = data
            if data:
                self.blocked[stream.id] = stream
                break
            stream.pending.pop(0)
            if piece[1] is not None:
                out += head_frame(stream.id, piece[1], True, self.peer_max_frame)
                stream.local_ended = True
        if out:
            self.write(bytes(out))
        if not stream.pending:
            self.blocked.pop(stream.id, None)
        if stream.local_ended:
            self._finish(stream)

    def _flush_blocked(self) -> None:
        for stream in list(self.blocked.values()):
            if self.send_window <= 0:
                break
            self._flush(stream)

    def _finish(self, stream: Stream) -> None:
        """We ended STREAM: forget it (asking the peer to stop sending when it has not ended it)."""
        self._forget(stream.id)
        stream.call = None  # the handler's call refers to its stream: no cycle left for the garbage collector
        if not stream.remote_ended:
            self.write(frame(RST_STREAM, 0, stream.id, NO_ERROR.to_bytes(4, "big")))
        self._close_if_done()

    def _forget(self, stream_id: int) -> Stream | None:
        """Drop a stream from the open ones (the one dropped, or None when it was not open)."""
        stream = self.streams.pop(stream_id, None)
        if stream is not None:
            self.blocked.pop(stream_id, None)
            self.budget.open -= 1
        return stream

    def reset_stream(self, stream: Stream, code: int) -> None:
        """End STREAM abruptly with CODE (its handler is told)."""
        if self._forget(stream.id) is not None:
            self.write(frame(RST_STREAM, 0, stream.id, code.to_bytes(4, "big")))
            self._reset_handler(stream)
            self._close_if_done()

    def _reset_handler(self, stream: Stream) -> None:
        """Tell the handler that STREAM, forgotten, ended abruptly; then drop the handler's call from it (the
        call refers to its stream, and the pair would otherwise wait for the cyclic garbage collector)."""
        self.handler.reset(self, stream)
        stream.call = None

    def go_away(self) -> None:
        """Accept no new streams; close once the open ones are answered."""
        if not self.closed and not self.going_away:
            self.going_away = True
            self.write(frame(GOAWAY, 0, 0, self.last_stream_id.to_bytes(4, "big") + NO_ERROR.to_bytes(4, "big")))
        self._close_if_done()

    def _close_if_done(self) -> None:
        if self.going_away and not self.streams and not self.closed:
            self._write_out()
            self.closed = True
            self.transport.close()

    def _fail(self, code: int, message: str) -> None:
        logger.info("gRPC connection from %s ended: %s", self.peer, message)
        self.write(frame(GOAWAY, 0, 0, self.last_stream_id.to_bytes(4, "big") + code.to_bytes(4, "big")
                         + message.encode()[:256]))
        self._write_out()
        self.closed = True
        # Stop sending, and read (and drop) what the peer still sends for a moment before closing: closing
        # with its bytes unread would reset the connection and could lose the GOAWAY that says why.
        transport = self.transport
        if transport.can_write_eof():
            transport.write_eof()
            self.transport.resume_reading()
            asyncio.get_running_loop().call_later(LINGER_S, transport.close)
        else:
            transport.close()


def head_frame(stream_id: int, block: bytes, end_stream: bool, max_frame: int) -> bytes:
    """HEADERS (and CONTINUATION frames when BLOCK is over the peer's frame size) carrying one header block."""
    flags = END_STREAM if end_stream else 0
    if len(block) <= max_frame:
        return frame(HEADERS, flags | END_HEADERS, stream_id, block)
    pieces = [block[at:at + max_frame] for at in range(0, len(block), max_frame)]
    frames = [frame(HEADERS, flags, stream_id, pieces[0])]
    frames += [frame(CONTINUATION, 0, stream_id, piece) for piece in pieces[1:-1]]
    frames.append(frame(CONTINUATION, END_HEADERS, stream_id, pieces[-1]))
    return b"".join(frames)


def _integer(value: int, prefix_bits: int, first: int) -> bytes:
    """HPACK's integer with a PREFIX_BITS prefix, FIRST holding the first byte's other bits (RFC 7541, 5.1)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name: bytes, value: bytes) -> bytes:
    """One header field as a literal never added to the peer's table (RFC 7541, 6.2.2): no encoder state."""
    return b"\x00" + _integer(len(name), 7, 0) + name + _integer(len(value), 7, 0) + value
