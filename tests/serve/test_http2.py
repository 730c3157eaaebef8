"""The gRPC port's HTTP/2 connections, spoken frame by frame over a raw socket: calls, flow control in both
directions, and what a broken or hostile peer gets (RFC 9113's connection and stream errors)."""

from __future__ import annotations

import asyncio
import gc
import socket
import struct
import time
import weakref

import hpack
import httpx
import numpy as np
import pytest
from tritonclient.grpc import service_pb2

from serve.http2 import Handler, Http2Connection, StreamBudget
from tests.serve.harness import reference

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
PATH = "/inference.GRPCInferenceService/"


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream_id) + payload


class Peer:
    """A client connection driven by hand: frames out, frames in, header blocks through hpack."""

    def __init__(self, address: str, settings: bytes = b"", preface: bytes | None = None) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.encoder, self.decoder = hpack.Encoder(), hpack.Decoder()
        self.buffer = b""
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0, settings) if preface is None else preface)

    def send(self, *frames: bytes) -> None:
        self.sock.sendall(b"".join(frames))

    def headers(self, stream_id: int, method: str, end: bool = False, extra=(), http_method: str = "POST",
                content_type: str = "application/grpc") -> bytes:
        fields = [(":method", http_method), (":scheme", "http"), (":path", PATH + method),
                  (":authority", "localhost"), ("content-type", content_type), ("te", "trailers"), *extra]
        return frame(HEADERS, 0x4 | (0x1 if end else 0), stream_id, self.encoder.encode(fields))

    def read_frame(self) -> tuple[int, int, int, bytes]:
        while True:
            if len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) >= 9 + length:
                    head, self.buffer = self.buffer[:9 + length], self.buffer[9 + length:]
                    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, head[9:]
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk

    def until(self, kind: int, stream_id: int | None = None) -> tuple[int, int, bytes]:
        """Frames up to the first of KIND (on STREAM_ID): its flags, stream and payload; answers SETTINGS."""
        while True:
            got, flags, sid, payload = self.read_frame()
            if got == SETTINGS and not flags & 1:
                self.send(frame(SETTINGS, 1, 0))
            if got == kind and (stream_id is None or sid == stream_id):
                return flags, sid, payload

    def answer(self, stream_id: int) -> tuple[dict, bytes, dict]:
        """A call's response headers, data and trailers."""
        blocks, data = [], b""
        while True:
            got, flags, sid, payload = self.read_frame()
            if got == SETTINGS and not flags & 1:
                self.send(frame(SETTINGS, 1, 0))
            if sid != stream_id:
                continue
            if got == HEADERS:
                blocks.append(dict(self.decoder.decode(payload)))
                if flags & 1:
                    break
            elif got == DATA:
                data += payload
            elif got == RST_STREAM:
                raise AssertionError(f"stream reset with {int.from_bytes(payload, 'big')}")
        return blocks[0], data, blocks[-1]

    def goaway_code(self) -> int:
        try:
            _, _, payload = self.until(GOAWAY)
        except ConnectionError:
            return -1
        return int.from_bytes(payload[4:8], "big")

    def close(self) -> None:
        self.sock.close()


def message(payload: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", len(payload)) + payload


def infer_request(values: np.ndarray) -> bytes:
    request = service_pb2.ModelInferRequest(model_name="mlp", model_version="1",
                                            raw_input_contents=[values.astype("<f4").tobytes()])
    request.inputs.add(name="x", datatype="FP32", shape=list(values.shape))
    return request.SerializeToString()


@pytest.fixture(scope="module")
def server(start_server, repository):
    return start_server(repository)


@pytest.fixture()
def peer(server):
    made = Peer(server.grpc_address)
    yield made
    made.close()


def test_a_call_frame_by_frame_matches_onnxruntime(peer, repository):
    values = np.random.default_rng(3).standard_normal((2, 16)).astype(np.float32)
    body = message(infer_request(values))
    # The body split over three DATA frames, the last one padded and ending the stream.
    padded = bytes((4,)) + body[20:] + b"\0" * 4
    peer.send(peer.headers(1, "ModelInfer"), frame(DATA, 0, 1, body[:7]), frame(DATA, 0, 1, body[7:20]),
              frame(DATA, 0x1 | 0x8, 1, padded))
    head, data, trailer = peer.answer(1)
    assert head[":status"] == "200" and head["content-type"] == "application/grpc"
    assert trailer["grpc-status"] == "0"
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == len(data) - 5
    response = service_pb2.ModelInferResponse.FromString(data[5:])
    got = np.frombuffer(response.raw_output_contents[0], "<f4").reshape(2, -1)
    want = reference(repository / "mlp" / "1" / "model.onnx", {"x": values})
    np.testing.assert_allclose(got, next(iter(want.values())), rtol=1e-5, atol=1e-6)


def test_many_calls_in_one_write_are_all_answered(peer):
    values = np.ones((1, 16), np.float32)
    body = message(infer_request(values))
    frames = [f for sid in range(1, 41, 2) for f in (peer.headers(sid, "ModelInfer"), frame(DATA, 1, sid, body))]
    peer.send(*frames)
    for sid in range(1, 41, 2):
        assert peer.answer(sid)[2]["grpc-status"] == "0"


def test_ping_is_acknowledged_with_its_payload(peer):
    peer.send(frame(PING, 0, 0, b"12345678"))
    flags, _, payload = peer.until(PING)
    assert flags & 1 and payload == b"12345678"


@pytest.mark.parametrize(("method", "extra", "status", "words"), [
    ("NoSuchMethod", (), "12", "Method not found"),
    ("ModelInfer", (("grpc-timeout", "soon"),), "3", "grpc-timeout"),
])
def test_call_errors_are_statuses(peer, method, extra, status, words):
    peer.send(peer.headers(1, method, end=True, extra=extra))
    head, _, trailer = peer.answer(1)
    assert trailer["grpc-status"] == status and words in trailer["grpc-message"]


@pytest.mark.parametrize(("http_method", "content_type", "status"), [("GET", "application/grpc", "405"),
                                                                     ("POST", "application/json", "415")])
def test_requests_that_are_not_grpc_get_http_statuses(peer, http_method, content_type, status):
    peer.send(peer.headers(1, "ModelInfer", end=True, http_method=http_method, content_type=content_type))
    head, _, _ = peer.answer(1)
    assert head[":status"] == status


def test_compressed_and_oversized_messages_are_refused_before_the_body(peer):
    peer.send(peer.headers(1, "ModelInfer"), frame(DATA, 0, 1, b"\x01\x00\x00\x00\x04abcd"))
    assert peer.answer(1)[2]["grpc-status"] == "12"
    # A message declaring 2 GiB: refused from its 5-byte prefix, with no byte of it sent.
    peer.send(peer.headers(3, "ModelInfer"), frame(DATA, 0, 3, b"\x00\x7f\xff\xff\xff"))
    trailer = peer.answer(3)[2]
    assert trailer["grpc-status"] == "8" and "larger than max" in trailer["grpc-message"]


def test_a_message_that_is_not_the_methods_message_is_invalid_argument(peer):
    peer.send(peer.headers(1, "ModelInfer"), frame(DATA, 1, 1, message(b"\xff\xff\xff")))
    trailer = peer.answer(1)[2]
    assert trailer["grpc-status"] == "3" and "ModelInfer" in trailer["grpc-message"]


def test_answers_wait_for_the_peers_window(server):
    # The peer opens 64 bytes of window per stream: the metadata answer comes in pieces, each after a WINDOW_UPDATE.
    peer = Peer(server.grpc_address, settings=struct.pack(">HI", 4, 64))
    try:
        body = message(service_pb2.ModelMetadataRequest(name="multi").SerializeToString())
        peer.send(peer.headers(1, "ModelMetadata"), frame(DATA, 1, 1, body))
        _, _, first = peer.until(DATA, 1)
        assert len(first) == 64
        data = first
        while True:
            peer.send(frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 64)))
            got, flags, sid, payload = peer.read_frame()
            while sid != 1:
                got, flags, sid, payload = peer.read_frame()
            if got == HEADERS:
                assert dict(peer.decoder.decode(payload))["grpc-status"] == "0"
                break
            assert got == DATA and len(payload) <= 64
            data += payload
        response = service_pb2.ModelMetadataResponse.FromString(data[5:])
        assert response.name == "multi" and [t.name for t in response.inputs] == ["features", "ids"]
    finally:
        peer.close()


def test_a_reset_call_leaves_the_connection_serving(peer):
    body = message(infer_request(np.ones((1, 16), np.float32)))
    peer.send(peer.headers(1, "ModelInfer"), frame(DATA, 0, 1, body[:10]), frame(RST_STREAM, 0, 1, b"\0\0\0\x08"))
    peer.send(peer.headers(3, "ModelInfer"), frame(DATA, 1, 3, body))
    assert peer.answer(3)[2]["grpc-status"] == "0"


def test_streams_past_the_advertised_bound_are_refused(peer):
    flags, _, payload = peer.until(SETTINGS)
    settings = {int.from_bytes(payload[i:i + 2], "big"): int.from_bytes(payload[i + 2:i + 6], "big")
                for i in range(0, len(payload), 6)}
    bound = settings[3]
    peer.send(*(peer.headers(sid, "ModelInfer") for sid in range(1, 2 * bound + 3, 2)))
    _, sid, payload = peer.until(RST_STREAM)
    assert sid == 2 * bound + 1 and int.from_bytes(payload, "big") == 7  # REFUSED_STREAM


@pytest.mark.parametrize(("frames", "code"), [
    ([frame(DATA, 0, 0, b"x")], 1),  # DATA on stream 0: PROTOCOL_ERROR
    ([frame(PING, 0, 0, b"short")], 6),  # FRAME_SIZE_ERROR
    ([frame(DATA, 0, 5, b"x")], 1),  # DATA on an idle stream
    ([frame(5, 0x4, 1, b"\0\0\0\x02")], 1),  # PUSH_PROMISE from a client
    ([frame(HEADERS, 0x5, 1, b"\xff\xff\xff\xff\x0f")], 9),  # an HPACK index past every table: COMPRESSION_ERROR
    ([frame(WINDOW_UPDATE, 0, 0, b"\0\0\0\0")], 1),
    ([frame(WINDOW_UPDATE, 0, 0, b"\x7f\xff\xff\xff")], 3),  # the send window past 2^31 - 1: FLOW_CONTROL_ERROR
    ([frame(SETTINGS, 0, 0, struct.pack(">HI", 5, 100))], 1),  # a maximum frame size below 16384
    ([frame(SETTINGS, 0, 0, b"\0\0\0")], 6),
    ([frame(0xEE, 0, 0, b"ignored"), frame(DATA, 0, 0, b"x")], 1),  # unknown frame types are skipped
])
def test_connection_errors_end_with_goaway(server, frames, code):
    peer = Peer(server.grpc_address)
    try:
        peer.send(*frames)
        assert peer.goaway_code() == code
    finally:
        peer.close()


class _Holder(Handler):
    """Takes every byte and gives none back to the peer's window."""

    def opened(self, connection, stream, ended):
        pass

    def received(self, connection, stream, data):
        pass

    def ended(self, connection, stream):
        pass

    def reset(self, connection, stream):
        pass


class _Transport(asyncio.Transport):
    def __init__(self):
        super().__init__()
        self.written, self.closed = bytearray(), False

    def write(self, data):
        self.written += data

    def close(self):
        self.closed = True

    def can_write_eof(self):
        return False

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 5) if name == "peername" else default


def test_data_past_the_windows_is_a_flow_control_error():
    # The stream's window is 1 MiB: a peer that sends more than it was given breaks flow control.
    async def run() -> bytes:
        transport = _Transport()
        connection = Http2Connection(_Holder(), 8, lambda _: None)
        connection.connection_made(transport)
        encoder = hpack.Encoder()
        block = encoder.encode([(":method", "POST"), (":path", PATH + "ModelInfer")])
        connection.data_received(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, 0x4, 1, block))
        for _ in range(16):
            connection.data_received(frame(DATA, 0, 1, b"\0" * (1 << 16)))
        assert not transport.closed
        connection.data_received(frame(DATA, 0, 1, b"\0"))
        await asyncio.sleep(0)
        assert transport.closed
        return bytes(transport.written)

    written = asyncio.run(run())
    at = written.index(bytes((GOAWAY, 0, 0, 0, 0, 0)))
    assert int.from_bytes(written[at + 10:at + 14], "big") == 3  # FLOW_CONTROL_ERROR


def test_a_header_block_that_never_ends_is_cut_off(peer):
    peer.send(frame(HEADERS, 0, 1, b"\x82"), *(frame(CONTINUATION, 0, 1, b"\x82" * 8192) for _ in range(9)))
    assert peer.goaway_code() == 0xB  # ENHANCE_YOUR_CALM


def test_a_frame_over_the_advertised_size_is_a_frame_size_error(peer):
    peer.send(((1 << 20) + 1).to_bytes(3, "big") + b"\0\0\0\0\0\1")
    assert peer.goaway_code() == 6


def test_a_connection_without_the_preface_is_refused(server):
    peer = Peer(server.grpc_address, preface=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        assert peer.goaway_code() == 1
    finally:
        peer.close()


def test_the_server_serves_on_after_broken_peers(server):
    for frames in ([frame(DATA, 0, 0, b"x")], [frame(HEADERS, 0x5, 1, b"\xff\xff\xff\xff\x0f")]):
        broken = Peer(server.grpc_address)
        broken.send(*frames)
        assert broken.goaway_code() > 0
        broken.close()
    again = Peer(server.grpc_address)
    try:
        again.send(again.headers(1, "ServerLive"), frame(DATA, 1, 1, message(b"")))
        assert service_pb2.ServerLiveResponse.FromString(again.answer(1)[1][5:]).live
    finally:
        again.close()


def test_a_call_past_its_grpc_timeout_ends_deadline_exceeded(peer):
    # A stream that never sends its request: the deadline (200 ms) ends it.
    peer.send(peer.headers(1, "ModelStreamInfer", extra=(("grpc-timeout", "200m"),)))
    head, data, trailer = peer.answer(1)
    assert trailer["grpc-status"] == "4" and not data
    # The connection goes on.
    peer.send(peer.headers(3, "ServerReady"), frame(DATA, 1, 3, message(b"")))
    assert peer.answer(3)[2]["grpc-status"] == "0"


def test_silent_connections_time_out_and_connections_past_the_cap_are_refused(start_server, repository):
    server = start_server(repository, "--header-timeout", "0.5", "--max-connections", "2")
    host, port = server.grpc_address.rsplit(":", 1)
    silent = socket.create_connection((host, int(port)), timeout=10)
    try:
        silent_peer = Peer.__new__(Peer)
        silent_peer.sock, silent_peer.buffer = silent, b""
        # Nothing sent: the preface never comes, and the server says so and closes.
        _, _, payload = silent_peer.until(GOAWAY)
        assert int.from_bytes(payload[4:8], "big") == 1 and b"preface" in payload[8:]
    finally:
        silent.close()
    first, second = Peer(server.grpc_address), Peer(server.grpc_address)
    try:
        first.send(frame(PING, 0, 0, b"12345678"))
        second.send(frame(PING, 0, 0, b"12345678"))
        assert first.until(PING)[2] == second.until(PING)[2] == b"12345678"
        third = Peer(server.grpc_address)
        _, _, payload = third.until(GOAWAY)
        assert int.from_bytes(payload[4:8], "big") == 7 and b"its limit" in payload[8:]
        third.close()
    finally:
        first.close()
        second.close()


def _multi_call_body() -> bytes:
    """The DATA of a ModelInfer call of model 'multi' with one row of typed contents."""
    request = service_pb2.ModelInferRequest(model_name="multi", model_version="1")
    request.inputs.add(name="features", datatype="FP32", shape=[1, 4]).contents.fp32_contents.extend([1, 2, 3, 4])
    request.inputs.add(name="ids", datatype="INT64", shape=[1, 3]).contents.int64_contents.extend([1, 2, 3])
    return message(request.SerializeToString())


def test_calls_reset_while_queued_for_a_batch_are_never_run(start_server, repository):
    # Batches wait up to 0.4 s: twenty calls queue, their client resets them, and only the call sent after
    # them runs (a client resetting calls cannot queue work past the server's bounds).
    server = start_server(repository, "--max-queue-delay-us", "400000", "--max-batch-size", "64")
    stats = f"{server.url}/v2/models/multi/versions/1/stats"
    before = httpx.get(stats).json()["model_stats"][0]
    body = _multi_call_body()
    peer = Peer(server.grpc_address)
    try:
        peer.send(*(f for sid in range(1, 41, 2) for f in (peer.headers(sid, "ModelInfer"), frame(DATA, 1, sid, body))))
        time.sleep(0.1)
        peer.send(*(frame(RST_STREAM, 0, sid, b"\0\0\0\x08") for sid in range(1, 41, 2)))
        peer.send(peer.headers(41, "ModelInfer"), frame(DATA, 1, 41, body))
        assert peer.answer(41)[2]["grpc-status"] == "0"
    finally:
        peer.close()
    after = httpx.get(stats).json()["model_stats"][0]
    assert after["inference_count"] - before["inference_count"] == 1
    assert after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"] == 1


def test_calls_reset_or_expired_while_queued_give_their_places_back(start_server, repository):
    # Ten places in flight: ten calls queue for a slow-forming batch, five are reset and five expire, and
    # every place is free again for the ten calls after them.
    server = start_server(repository, "--max-queue-delay-us", "400000", "--max-inflight-requests", "10")
    body = _multi_call_body()
    peer = Peer(server.grpc_address)
    try:
        peer.send(*(f for sid in range(1, 11, 2) for f in (peer.headers(sid, "ModelInfer"), frame(DATA, 1, sid, body))))
        peer.send(*(f for sid in range(11, 21, 2)
                    for f in (peer.headers(sid, "ModelInfer", extra=[("grpc-timeout", "50m")]), frame(DATA, 1, sid, body))))
        time.sleep(0.1)
        peer.send(*(frame(RST_STREAM, 0, sid, b"\0\0\0\x08") for sid in range(1, 11, 2)))
        for sid in range(11, 21, 2):
            assert peer.answer(sid)[2]["grpc-status"] == "4"
        # A ping's answer leaves after the server's loop has handled the resets read before it.
        peer.send(frame(PING, 0, 0, b"12345678"))
        peer.until(PING)
        ids = range(21, 41, 2)
        peer.send(*(f for sid in ids for f in (peer.headers(sid, "ModelInfer"), frame(DATA, 1, sid, body))))
        assert [peer.answer(sid)[2]["grpc-status"] for sid in ids] == ["0"] * len(ids)
    finally:
        peer.close()


def test_unfinished_messages_count_against_the_bytes_in_flight(start_server, repository):
    # 100 kB in flight at most: one upload declaring 80 kB holds its bytes while it arrives, and a second
    # one is refused at once; the first then completes as usual.
    server = start_server(repository, "--max-inflight-bytes", "100000")
    peer = Peer(server.grpc_address)
    try:
        values = np.ones((1, 16), np.float32)
        whole = message(infer_request(values))
        declared = b"\0" + (80_000).to_bytes(4, "big")
        peer.send(peer.headers(1, "ModelInfer"), frame(DATA, 0, 1, declared + b"\0" * 10_000))
        peer.send(peer.headers(3, "ModelInfer"), frame(DATA, 0, 3, declared + b"\0" * 10_000))
        trailer = peer.answer(3)[2]
        assert trailer["grpc-status"] == "8" and "in flight" in trailer["grpc-message"]
        peer.send(frame(RST_STREAM, 0, 1, b"\0\0\0\x08"))
        # Once the first upload is gone, its bytes are free again.
        peer.send(peer.headers(5, "ModelInfer"), frame(DATA, 1, 5, whole))
        assert peer.answer(5)[2]["grpc-status"] == "0"
    finally:
        peer.close()


def test_streams_open_on_all_connections_together_are_bounded():
    async def run() -> list[bytes]:
        budget = StreamBudget(3)
        transports = [_Transport(), _Transport()]
        connections = [Http2Connection(_Holder(), 8, lambda _: None, budget=budget) for _ in transports]
        block = hpack.Encoder().encode([(":method", "POST"), (":path", PATH + "ModelInfer")])
        for connection, transport in zip(connections, transports):
            connection.connection_made(transport)
            connection.data_received(PREFACE + frame(SETTINGS, 0, 0))
        for sid in (1, 3):
            connections[0].data_received(frame(HEADERS, 0x4, sid, block))
        for sid in (1, 3):
            connections[1].data_received(frame(HEADERS, 0x4, sid, block))
        await asyncio.sleep(0)
        assert budget.open == 3
        connections[0].connection_lost(None)
        assert budget.open == 1
        return [bytes(t.written) for t in transports]

    first, second = asyncio.run(run())
    refused = frame(RST_STREAM, 0, 3, (7).to_bytes(4, "big"))
    assert refused in second and refused not in first


def test_the_server_needs_no_grpcio():
    import subprocess
    import sys

    code = "import sys; sys.modules['grpc'] = None; import serve.__main__, serve.grpc_server, serve.app"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


class _CallsThatReferToTheirStreams(Handler):
    """Attaches to each stream a call that refers back to it (as serve.grpc_calls does) and answers a stream
    as soon as the peer ends it."""

    class Call:
        def __init__(self, stream):
            self.stream = stream

    def __init__(self):
        self.calls = []

    def opened(self, connection, stream, ended):
        stream.call = self.Call(stream)
        self.calls.append(weakref.ref(stream.call))
        if ended:
            self.ended(connection, stream)

    def received(self, connection, stream, data):
        pass

    def ended(self, connection, stream):
        connection.send(stream, b"\x88", b"", b"\x88")

    def reset(self, connection, stream):
        assert stream.call is not None  # the handler still finds its call when told


def test_streams_and_their_calls_are_freed_without_the_garbage_collector():
    # A call and its stream refer to each other; a stream that ends (answered, reset by the peer, or on a
    # connection that goes) drops its call, so neither waits for a collection of cyclic garbage.
    async def run(handler) -> None:
        connection = Http2Connection(handler, 8, lambda _: None)
        connection.connection_made(_Transport())
        block = hpack.Encoder().encode([(":method", "POST"), (":path", PATH + "ModelInfer")])
        connection.data_received(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, 0x5, 1, block)
                                 + frame(HEADERS, 0x4, 3, block) + frame(HEADERS, 0x4, 5, block)
                                 + frame(RST_STREAM, 0, 3, b"\0\0\0\x08"))
        connection.connection_lost(None)

    handler = _CallsThatReferToTheirStreams()
    gc.disable()
    try:
        asyncio.run(run(handler))
        assert len(handler.calls) == 3 and all(call() is None for call in handler.calls)
    finally:
        gc.enable()


def test_repeated_header_blocks_name_their_own_method_and_deadline(peer):
    # A client's repeated block is decoded once and its method looked up once; a block naming another method
    # or carrying a deadline between repeats is read for itself.
    values = np.ones((1, 16), np.float32)
    body = message(infer_request(values))
    live = message(b"")
    sid = 1
    for method, extra, data, status in [("ModelInfer", (), body, "0"), ("ModelInfer", (), body, "0"),
                                        ("ServerLive", (), live, "0"), ("ModelInfer", (), body, "0"),
                                        ("NoSuchMethod", (), live, "12"), ("ModelInfer", (), body, "0"),
                                        ("ModelInfer", (("grpc-timeout", "soon"),), body, "3"),
                                        ("ModelInfer", (), body, "0"), ("ModelInfer", (), body, "0")]:
        peer.send(peer.headers(sid, method, extra=extra), frame(DATA, 1, sid, data))
        head, answer, trailer = peer.answer(sid)
        assert trailer["grpc-status"] == status, (method, extra, trailer)
        if method == "ServerLive":
            assert answer[5:] == service_pb2.ServerLiveResponse(live=True).SerializeToString()
        elif status == "0":
            response = service_pb2.ModelInferResponse.FromString(answer[5:])
            assert response.model_name == "mlp" and response.outputs[0].shape[0] == 1
        sid += 2
