"""A lean gRPC load generator: prepared HTTP/2 frames over one connection, as many calls in flight as asked.

It is to gRPC what the benchmark's raw keep-alive client is to REST: the request (HEADERS and DATA frames)
is built once, so the load generator's own cost per call stays small beside the server's on a shared
machine. Its header blocks are what a real client sends: the first one adds the call's fields to the
server's HPACK table, the later ones refer to them by index (grpcio and grpc-go do the same).
"""

from __future__ import annotations

import asyncio
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 4, 6, 7, 8


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream_id.to_bytes(4, "big") + payload


class _Client(asyncio.Protocol):
    def __init__(self, path: str, message: bytes, concurrency: int, stop_at: float, measure_from: float,
                 limit: int) -> None:
        fields = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1"),
                  ("content-type", "application/grpc"), ("te", "trailers"), ("user-agent", "grpc-load")]
        encoder = hpack.Encoder()
        self.first_block, self.block = encoder.encode(fields), encoder.encode(fields)
        self.body = b"\x00" + len(message).to_bytes(4, "big") + message
        self.decoder = hpack.Decoder()
        self.replayable: dict[bytes, dict] = {}
        self.concurrency, self.stop_at, self.measure_from, self.limit = concurrency, stop_at, measure_from, limit
        self.next_id = 1
        self.sent_at: dict[int, float] = {}
        self.starting: list[int] = []  # calls built since the last write
        self.latencies: list[float] = []
        self.errors = self.sent = 0
        self.received = 0
        self.buffer = b""
        self.done = asyncio.get_running_loop().create_future()
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        settings = (4).to_bytes(2, "big") + (1 << 24).to_bytes(4, "big")  # INITIAL_WINDOW_SIZE
        transport.write(PREFACE + frame(SETTINGS, 0, 0, settings) + frame(WINDOW_UPDATE, 0, 0, (1 << 30).to_bytes(4, "big")))
        self._send([self._call(time.perf_counter()) for _ in range(self.concurrency)])

    def _call(self, now: float) -> bytes:
        if now >= self.stop_at or (self.limit and self.sent >= self.limit):
            return b""
        stream_id, self.next_id = self.next_id, self.next_id + 2
        self.starting.append(stream_id)
        self.sent += 1
        block = self.first_block if stream_id == 1 else self.block
        return frame(HEADERS, 0x4, stream_id, block) + frame(DATA, 0x1, stream_id, self.body)

    def _send(self, out: list[bytes]) -> None:
        """Write OUT; the calls it starts are timed from now, as the REST client times a request from its write
        (not from when the response that let it start was read: the rest of that read is the client's work)."""
        now = time.perf_counter()
        for stream_id in self.starting:
            self.sent_at[stream_id] = now
        self.starting.clear()
        if out:
            self.transport.write(b"".join(out))

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data
        out = []
        at = 0
        while len(buffer) - at >= 9:
            length = int.from_bytes(buffer[at:at + 3], "big")
            if len(buffer) - at < 9 + length:
                break
            kind, flags = buffer[at + 3], buffer[at + 4]
            stream_id = int.from_bytes(buffer[at + 5:at + 9], "big")
            payload = buffer[at + 9:at + 9 + length]
            at += 9 + length
            if kind == DATA:
                self.received += length
            elif kind == HEADERS and flags & 0x1:
                out.append(self._answered(stream_id, payload))
            elif kind == HEADERS:
                self._decode(payload)
            elif kind == SETTINGS and not flags & 0x1:
                out.append(frame(SETTINGS, 0x1, 0))
            elif kind == PING and not flags & 0x1:
                out.append(frame(PING, 0x1, 0, payload))
            elif kind == GOAWAY:
                self.errors += len(self.sent_at)
                self.transport.close()
        self.buffer = buffer[at:]
        if self.received >= 1 << 29:
            out.append(frame(WINDOW_UPDATE, 0, 0, self.received.to_bytes(4, "big")))
            self.received = 0
        self._send(out)
        if not self.sent_at and not self.done.done():
            self.done.set_result(None)

    def _answered(self, stream_id: int, trailers: bytes) -> bytes:
        now = time.perf_counter()
        sent = self.sent_at.pop(stream_id)
        if self._decode(trailers).get("grpc-status") != "0":
            self.errors += 1
            return self._call(now)
        if sent >= self.measure_from:
            self.latencies.append(now - sent)
        return self._call(now)

    def _decode(self, block: bytes) -> dict:
        """A header block's fields; a block that left the HPACK table as it was is decoded once, since
        reading it again would not change the table either."""
        fields = self.replayable.get(block)
        if fields is not None:
            return fields
        table = self.decoder.header_table.dynamic_entries
        before = list(table)
        fields = dict(self.decoder.decode(block))
        if list(table) == before:
            self.replayable[block] = fields
        else:
            self.replayable.clear()
        return fields

    def connection_lost(self, exc) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def drive(port: int, path: str, message: bytes, concurrency: int, duration: float, warmup: float,
                limit: int) -> tuple[list[float], int, int]:
    """Call PATH with MESSAGE, CONCURRENCY calls in flight, for WARMUP + DURATION seconds (or LIMIT calls):
    the latencies of the calls sent after the warm-up, the errors, and the calls sent."""
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + duration
    _, client = await loop.create_connection(
        lambda: _Client(path, message, concurrency, stop_at, measure_from, limit), "127.0.0.1", port)
    await client.done
    client.transport.close()
    return client.latencies, client.errors, client.sent
