"""A lean REST load generator: prepared request bytes over keep-alive connections, one request in flight on each.

It is to REST what grpc_load.py is to gRPC: an asyncio protocol on the running loop (uvloop when the caller
installed it) rather than streams, so the load generator's own cost per request stays small beside the
server's on a shared machine (13 to 15 µs against the streams client's 18). A request is timed from the write
that sends it to the last byte of its response.
"""

from __future__ import annotations

import asyncio
import time


class _Client(asyncio.Protocol):
    """One keep-alive connection sending REQUEST again as soon as each response has arrived whole (an asyncio
    protocol rather than streams: the load generator shares the machine with the server, so its own cost per
    request is kept small, as wrk's would be)."""

    def __init__(self, request: bytes, run: dict) -> None:
        self.request, self.run = request, run
        self.buffer = b""
        self.sent = 0.0
        self.transport = None
        self.done = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.transport = transport
        self._next()

    def _next(self) -> None:
        run = self.run
        now = time.perf_counter()
        if now >= run["stop_at"] or (run["limit"] and run["sent"] >= run["limit"]):
            self.transport.close()
            return
        run["sent"] += 1
        self.sent = now
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            self.buffer = buffer
            return
        head, length = buffer[:end], 0
        at = head.lower().find(b"\r\ncontent-length:")
        if at >= 0:
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17:stop if stop >= 0 else len(head)])
        if len(buffer) < end + 4 + length:
            self.buffer = buffer
            return
        self.buffer = buffer[end + 4 + length:]
        done = time.perf_counter()
        run = self.run
        if self.sent >= run["measure_from"]:
            if head.startswith(b"HTTP/1.1 200"):
                run["latencies"].append(done - self.sent)
            else:
                run["errors"] += 1
        self._next()

    def connection_lost(self, exc) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def drive(port: int, request: bytes, concurrency: int, duration: float, warmup: float,
                limit: int) -> tuple[list[float], int, int]:
    """Send REQUEST over CONCURRENCY connections for WARMUP + DURATION seconds (or LIMIT requests in all):
    the latencies measured after the warm-up, the errors among them and the requests sent."""
    start = time.perf_counter()
    run = {"latencies": [], "errors": 0, "sent": 0, "limit": limit, "measure_from": start + warmup,
           "stop_at": start + warmup + duration}
    loop = asyncio.get_running_loop()
    clients = [(await loop.create_connection(lambda: _Client(request, run), "127.0.0.1", port))[1]
               for _ in range(concurrency)]
    await asyncio.gather(*(client.done for client in clients))
    return run["latencies"], run["errors"], run["sent"]
