"""Small inference requests answered by the HTTP connection itself (``serve.http_infer``): which requests take
that path, and that its answers are the ASGI path's, byte for byte, over real sockets."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import numpy as np
import pytest
import uvicorn
from uvicorn.server import ServerState

from serve.app import create_app
from serve.control import ModelControl
from serve.dataplane import Admission, DataPlane
from serve.http_guard import ConnectionLimits, guarded_protocol
from serve.http_infer import DIRECT_BODY_BYTES, DirectCycle, _sizes, infer_route
from serve.repository import Repository
from serve.runtime import InferencePool, select_providers
from tests.serve import models
from tests.serve.harness import reference

INFER = "/v2/models/classifier/infer"


def test_infer_route_names_the_model_and_version():
    assert infer_route("/v2/models/m/infer") == ("m", None)
    assert infer_route("/v2/models/m/versions/3/infer") == ("m", "3")
    for path in ("/v2/models/infer", "/v2/models//infer", "/v2/models/m/versions//infer", "/v2/models/m/ready",
                 "/v1/models/m/infer", "/v2/models/m/x/infer", "/v2/models/m/versions/3/4/infer", "/"):
        assert infer_route(path) is None, path


def test_plain_bodies_are_sized_and_encoded_ones_are_not():
    assert _sizes([(b"content-length", b"40")]) == (40, None)
    assert _sizes([(b"content-length", b"40"), (b"inference-header-content-length", b" 30 ")]) == (40, 30)
    assert _sizes([(b"content-length", b"40"), (b"content-encoding", b"identity")]) == (40, None)
    for headers in ([], [(b"content-length", b"-1")], [(b"content-length", b"4"), (b"content-length", b"4")],
                    [(b"content-length", b"40"), (b"transfer-encoding", b"chunked")],
                    [(b"content-length", b"40"), (b"content-encoding", b"gzip")],
                    [(b"content-length", b"40"), (b"inference-header-content-length", b"41")],
                    [(b"content-length", b"40"), (b"inference-header-content-length", b"x")]):
        assert _sizes(headers) is None, headers


def _binary(x: np.ndarray, extra: str = "", version: str = "1.1", binary_output: bool = True) -> bytes:
    raw = x.astype("<f4").tobytes()
    header = json.dumps({
        "inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                    "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": "y", "parameters": {"binary_data": binary_output}}],
    }).encode()
    body = header + raw
    head = (f"POST {INFER} HTTP/{version}\r\nHost: t\r\nContent-Length: {len(body)}\r\n"
            f"Inference-Header-Content-Length: {len(header)}\r\n{extra}\r\n")
    return head.encode() + body


def _chunked(request: bytes) -> bytes:
    """The same request with its body sent chunked (which only the ASGI path takes)."""
    head, body = request.split(b"\r\n\r\n", 1)
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"content-length")]
    return b"\r\n".join(lines + [b"Transfer-Encoding: chunked"]) + b"\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (
        len(body), body)


def _json(x, model: str = "classifier") -> bytes:
    body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(np.shape(x)),
                                   "data": np.asarray(x).ravel().tolist()}]}).encode()
    return (f"POST /v2/models/{model}/infer HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


class _Connection:
    """One connection to a real protocol instance of the server, over a socket pair on the running loop."""

    def __init__(self, protocol, client: socket.socket) -> None:
        self.protocol, self.client, self.buffer = protocol, client, b""

    async def send(self, data: bytes) -> None:
        self.client.sendall(data)
        await asyncio.sleep(0.01)  # the server's loop reads it

    async def response(self) -> tuple[str, dict[str, str], bytes]:
        loop = asyncio.get_running_loop()
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += await self._recv(loop)
        head, rest = self.buffer.split(b"\r\n\r\n", 1)
        status, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        length = int(headers.get("content-length", 0))
        while len(rest) < length:
            rest += await self._recv(loop)
        self.buffer = rest[length:]
        return status, headers, rest[:length]

    async def _recv(self, loop) -> bytes:
        chunk = await asyncio.wait_for(loop.sock_recv(self.client, 1 << 16), 30)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk

    async def closed(self) -> bool:
        return await asyncio.wait_for(asyncio.get_running_loop().sock_recv(self.client, 1), 30) == b""


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("direct")
    models.mlp(root / "classifier" / "1" / "model.onnx", sizes=(16, 32, 32, 5), seed=3)
    return root


def serving(root: Path, check, admission: Admission | None = None) -> None:
    """Load ROOT, then await CHECK(connect), where connect() opens a connection to a real protocol instance
    (``connect.plane`` is the data plane behind it)."""

    async def main() -> None:
        pool = InferencePool(1)
        repository = Repository(root, select_providers("cpu"), 1, pool, 8, 0)
        plane = DataPlane(repository, ModelControl(repository, "none", 1.0), admission=admission)
        await plane.control.start()
        app = create_app(plane, pool, 1 << 26, on_fatal=lambda code: None)
        config = uvicorn.Config(app, http=guarded_protocol(ConnectionLimits()), lifespan="off", log_config=None,
                                access_log=False, proxy_headers=False, server_header=False)  # as serve.__main__ sets
        config.load()
        state = ServerState()
        sockets = []

        async def connect() -> _Connection:
            server_side, client = socket.socketpair()
            client.setblocking(False)
            sockets.append(client)
            protocol = config.http_protocol_class(config=config, server_state=state, app_state={})
            await asyncio.get_running_loop().connect_accepted_socket(lambda: protocol, server_side)
            return _Connection(protocol, client)

        connect.plane = plane

        try:
            await check(connect)
        finally:
            for client in sockets:
                client.close()
            await asyncio.sleep(0.05)
            await repository.close()
            pool.shutdown()

    asyncio.run(main())


def _outputs(headers: dict[str, str], body: bytes) -> np.ndarray:
    length = int(headers["inference-header-content-length"])
    entry = json.loads(body[:length])["outputs"][0]
    return np.frombuffer(body[length:], dtype="<f4").reshape(entry["shape"])


def test_small_plain_requests_take_the_direct_path_and_others_do_not(root):
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    big = np.zeros((DIRECT_BODY_BYTES // 64 + 1, 16), np.float32)
    cases = {  # name: (request, whether it takes the direct path, the status of its answer)
        "binary": (_binary(x), True, 200),
        "json": (_json(x), True, 200),
        "version in the path": (_binary(x).replace(INFER.encode(), b"/v2/models/classifier/versions/1/infer"), True,
                                200),
        "chunked": (_chunked(_binary(x)), False, 200),
        "gzip": (_binary(x, "Content-Encoding: gzip\r\n"), False, 400),  # the body is not gzip data
        "100-continue": (_binary(x, "Expect: 100-continue\r\n"), False, 100),
        "HTTP/1.0": (_binary(x, version="1.0"), False, 200),
        "large body": (_binary(big), False, 200),
        "another route": (b"POST /v2/repository/index HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}", False,
                          200),
        "quoted path": (_binary(x).replace(b"classifier/infer", b"classifie%72/infer"), False, 200),
    }

    async def check(connect) -> None:
        for name, (request, direct, expected) in cases.items():
            connection = await connect()
            head, body = request.split(b"\r\n\r\n", 1)
            await connection.send(head + b"\r\n\r\n")
            assert isinstance(connection.protocol.cycle, DirectCycle) is direct, name
            await connection.send(body)
            status, _, _ = await connection.response()
            assert status.split()[1] == str(expected), (name, status)

    serving(root, check)


def test_direct_answers_equal_the_asgi_paths_byte_for_byte(root):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 16)).astype(np.float32)
    requests = [_binary(x), _json(x), _json(x[:, :5]), _json(x, model="missing"),
                _binary(x).replace(b'"FP32"', b'"INT8"'), _binary(x)[:-4] + b"\x00" * 4,
                _binary(x, binary_output=False),
                b'POST ' + INFER.encode() + b' HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n{"in:']

    async def check(connect) -> None:
        connection = await connect()
        for request in requests:
            await connection.send(request)
            direct = await connection.response()
            await connection.send(_chunked(request))
            asgi = await connection.response()
            assert direct[0] == asgi[0], request[:120]
            for headers in (direct[1], asgi[1]):
                headers.pop("date", None)
            assert direct[1] == asgi[1]
            assert direct[2] == asgi[2]

    serving(root, check)


def test_pipelined_requests_on_both_paths_are_answered_in_order(root, tmp_path):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((rows, 16)).astype(np.float32) for rows in (1, 2, 3, 4)]
    health = b"GET /v2/health/live HTTP/1.1\r\nHost: t\r\n\r\n"
    sequence = [_binary(xs[0]), health, _binary(xs[1]), _chunked(_binary(xs[2])), _binary(xs[3]), health]
    model = root / "classifier" / "1" / "model.onnx"

    async def check(connect) -> None:
        connection = await connect()
        await connection.send(b"".join(sequence))
        expected = iter(xs)
        for request in sequence:
            status, headers, body = await connection.response()
            assert status == "HTTP/1.1 200 OK"
            if request is health:
                assert json.loads(body) == {"live": True}
            else:
                x = next(expected)
                np.testing.assert_array_equal(_outputs(headers, body), reference(model, {"x": x})["y"])

    serving(root, check)


def test_connection_close_is_honoured_and_kept_connections_stay_open(root):
    x = np.random.default_rng(4).standard_normal((1, 16)).astype(np.float32)

    async def check(connect) -> None:
        kept = await connect()
        for _ in range(50):
            await kept.send(_binary(x))
            status, headers, _ = await kept.response()
            assert status == "HTTP/1.1 200 OK" and "connection" not in headers
        closing = await connect()
        await closing.send(_binary(x, "Connection: close\r\n"))
        status, headers, _ = await closing.response()
        assert status == "HTTP/1.1 200 OK" and headers["connection"] == "close"
        assert await closing.closed()

    serving(root, check)


def test_a_client_gone_before_its_answer_leaves_the_server_serving(root):
    rng = np.random.default_rng(5)
    model = root / "classifier" / "1" / "model.onnx"

    async def check(connect) -> None:
        for _ in range(5):
            gone = await connect()
            gone.client.sendall(_binary(rng.standard_normal((2, 16)).astype(np.float32)))
            gone.client.close()
        await asyncio.sleep(0.2)
        connection = await connect()
        x = rng.standard_normal((2, 16)).astype(np.float32)
        await connection.send(_binary(x))
        status, headers, body = await connection.response()
        assert status == "HTTP/1.1 200 OK"
        np.testing.assert_array_equal(_outputs(headers, body), reference(model, {"x": x})["y"])
        plane_stats = json.loads((await _stats(connect))[2])["model_stats"][0]
        assert plane_stats["inference_stats"]["fail"]["count"] == 0

    serving(root, check)


async def _stats(connect):
    connection = await connect()
    await connection.send(b"GET /v2/models/classifier/stats HTTP/1.1\r\nHost: t\r\n\r\n")
    return await connection.response()


def test_concurrent_direct_requests_get_their_own_rows_back(root):
    rng = np.random.default_rng(6)
    model = root / "classifier" / "1" / "model.onnx"
    xs = [rng.standard_normal((1 + i % 3, 16)).astype(np.float32) for i in range(24)]

    async def check(connect) -> None:
        connections = [await connect() for _ in xs]
        for connection, x in zip(connections, xs):
            connection.client.sendall(_binary(x))
        answers = await asyncio.gather(*(connection.response() for connection in connections))
        for (status, headers, body), x in zip(answers, xs):
            assert status == "HTTP/1.1 200 OK"
            np.testing.assert_array_equal(_outputs(headers, body), reference(model, {"x": x})["y"])
        stats = json.loads((await _stats(connect))[2])["model_stats"][0]
        assert stats["inference_stats"]["success"]["count"] == len(xs)
        assert stats["execution_count"] < len(xs)  # merged into batches

    serving(root, check)


def test_a_request_is_in_flight_from_its_headers_and_an_abandoned_one_gives_its_place_back(root):
    x = np.random.default_rng(7).standard_normal((2, 16)).astype(np.float32)
    request = _binary(x)
    head, body = request.split(b"\r\n\r\n", 1)

    async def check(connect) -> None:
        admission = connect.plane.admission
        uploading = await connect()
        await uploading.send(head + b"\r\n\r\n" + body[:10])
        assert isinstance(uploading.protocol.cycle, DirectCycle)
        assert (admission.requests, admission.bytes) == (1, len(body))
        other = await connect()
        await other.send(request)
        status, _, answer = await other.response()  # the one place is taken: refused at once
        assert status == "HTTP/1.1 503 Service Unavailable" and b"in flight" in answer
        uploading.client.close()
        await asyncio.sleep(0.05)
        assert (admission.requests, admission.bytes) == (0, 0)
        await other.send(request)
        status, headers, answer = await other.response()
        assert status == "HTTP/1.1 200 OK"
        assert (admission.requests, admission.bytes) == (0, 0)

    serving(root, check, Admission(max_requests=1))


class _CountingParser:
    """The protocol's parser, counting the reads fed to it."""

    def __init__(self, parser) -> None:
        self.parser, self.fed = parser, 0

    def feed_data(self, data: bytes) -> None:
        self.fed += 1
        self.parser.feed_data(data)

    def __getattr__(self, name: str):
        return getattr(self.parser, name)


def test_a_repeated_request_head_skips_the_parser_and_is_answered_the_same(root):
    rng = np.random.default_rng(8)
    model = root / "classifier" / "1" / "model.onnx"
    xs = [rng.standard_normal((2, 16)).astype(np.float32) for _ in range(4)]

    async def check(connect) -> None:
        connection = await connect()
        counting = connection.protocol.parser = _CountingParser(connection.protocol.parser)

        async def ask(request: bytes, x: np.ndarray, reads: int) -> None:
            fed = counting.fed
            await connection.send(request)
            status, headers, body = await connection.response()
            assert status == "HTTP/1.1 200 OK"
            np.testing.assert_array_equal(_outputs(headers, body), reference(model, {"x": x})["y"])
            assert counting.fed - fed == reads

        await ask(_binary(xs[0]), xs[0], 1)
        head = _binary(xs[0]).split(b"\r\n\r\n")[0] + b"\r\n\r\n"
        assert connection.protocol._repeat.head == head
        for x in xs[1:]:  # the same head, other values: not parsed
            await ask(_binary(x), x, 0)
        wider = rng.standard_normal((3, 16)).astype(np.float32)
        await ask(_binary(wider), wider, 1)  # another Content-Length: parsed, then remembered
        await ask(_binary(xs[1]), xs[1], 1)
        await ask(_binary(xs[2]), xs[2], 0)
        closing = _binary(xs[3], "Connection: close\r\n")
        request = _binary(xs[3])
        # Parsed: a body one byte short, a head changed by one byte, a request in two reads, two in one read.
        await connection.send(request[:-1])
        await asyncio.sleep(0.05)
        assert counting.fed and isinstance(connection.protocol.cycle, DirectCycle)
        await ask(request[-1:], xs[3], 1)
        await ask(request.replace(b"Host: t", b"Host: u"), xs[3], 1)
        await ask(request, xs[3], 1)
        fed = counting.fed
        await connection.send(request + request)
        for _ in range(2):
            status, headers, body = await connection.response()
            np.testing.assert_array_equal(_outputs(headers, body), reference(model, {"x": xs[3]})["y"])
        assert counting.fed == fed + 1
        await ask(closing, xs[3], 1)
        assert await connection.closed()

    serving(root, check)


def test_repeated_heads_answer_as_parsed_ones_byte_for_byte_and_wait_for_a_place(root):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 16)).astype(np.float32)
    requests = [_binary(x), _json(x), _json(x, model="missing"), _binary(x).replace(b'"FP32"', b'"INT8"'),
                _binary(x, binary_output=False)]

    async def check(connect) -> None:
        for request in requests:
            connection = await connect()
            counting = connection.protocol.parser = _CountingParser(connection.protocol.parser)
            await connection.send(request)
            parsed = await connection.response()
            await connection.send(request)
            repeated = await connection.response()
            assert counting.fed == 1, request[:120]
            for headers in (parsed[1], repeated[1]):
                headers.pop("date", None)
            assert parsed == repeated
        admission = connect.plane.admission
        head, body = requests[0].split(b"\r\n\r\n", 1)
        repeating = await connect()
        counting = repeating.protocol.parser = _CountingParser(repeating.protocol.parser)
        await repeating.send(requests[0])
        assert (await repeating.response())[0] == "HTTP/1.1 200 OK"
        uploading = await connect()
        await uploading.send(head + b"\r\n\r\n" + body[:10])  # takes the one place
        await repeating.send(requests[0])
        status, _, answer = await repeating.response()
        assert status == "HTTP/1.1 503 Service Unavailable" and b"in flight" in answer
        assert counting.fed == 2  # the refused repeat went through the parser and the ASGI path
        uploading.client.close()
        await asyncio.sleep(0.05)
        await repeating.send(requests[0])
        assert (await repeating.response())[0] == "HTTP/1.1 200 OK" and counting.fed == 2
        assert (admission.requests, admission.bytes) == (0, 0)

    serving(root, check, Admission(max_requests=1))
