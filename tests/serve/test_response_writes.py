"""Responses written in one piece with their headers: whole, in order, and never holding what must go first."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from tests.serve.harness import reference

INFER = "/v2/models/classifier/infer"


@pytest.fixture(scope="module")
def server(start_server, mlp_file):
    return start_server(mlp_file)


def _binary_request(x: np.ndarray, extra_headers: str = "") -> tuple[bytes, bytes]:
    """The head and body of a binary infer request for input x."""
    raw = x.astype("<f4").tobytes()
    header = json.dumps({
        "inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}],
    }).encode()
    body = header + raw
    head = (f"POST {INFER} HTTP/1.1\r\nHost: test\r\nContent-Length: {len(body)}\r\n"
            f"Inference-Header-Content-Length: {len(header)}\r\n{extra_headers}\r\n")
    return head.encode(), body


class _Reader:
    """HTTP/1.1 responses read off a raw socket, one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError(f"the server closed the connection; unread: {self.buffer[:200]!r}")
        self.buffer += chunk

    def head(self) -> tuple[str, dict[str, str]]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status, *lines = head.decode("latin-1").split("\r\n")
        return status, {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}

    def response(self, has_body: bool = True) -> tuple[str, dict[str, str], bytes]:
        status, headers = self.head()
        length = int(headers.get("content-length", 0)) if has_body else 0
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, body


def _outputs(headers: dict[str, str], body: bytes) -> np.ndarray:
    length = int(headers["inference-header-content-length"])
    entry = json.loads(body[:length])["outputs"][0]
    return np.frombuffer(body[length:], dtype="<f4").reshape(entry["shape"])


def test_pipelined_binary_responses_arrive_whole_and_in_order(server, mlp_file):
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((rows, 16)).astype(np.float32) for rows in (1, 3, 2)]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"".join(head + body for head, body in map(_binary_request, inputs)))
        reader = _Reader(sock)
        for x in inputs:
            status, headers, body = reader.response()
            assert status == "HTTP/1.1 200 OK"
            np.testing.assert_array_equal(_outputs(headers, body), reference(mlp_file, {"x": x})["y"])


def test_100_continue_is_sent_before_the_body_arrives(server, mlp_file):
    x = np.random.default_rng(8).standard_normal((2, 16)).astype(np.float32)
    head, body = _binary_request(x, "Expect: 100-continue\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head)
        reader = _Reader(sock)
        status, _ = reader.head()
        assert status == "HTTP/1.1 100 Continue"
        sock.sendall(body)
        status, headers, answer = reader.response()
        assert status == "HTTP/1.1 200 OK"
        np.testing.assert_array_equal(_outputs(headers, answer), reference(mlp_file, {"x": x})["y"])


def test_head_request_headers_arrive_on_a_kept_connection(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        reader = _Reader(sock)
        sock.sendall(b"HEAD /v2/health/ready HTTP/1.1\r\nHost: test\r\n\r\n")
        status, headers, _ = reader.response(has_body=False)
        assert status == "HTTP/1.1 200 OK" and headers["content-type"] == "application/json"
        sock.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: test\r\n\r\n")
        status, _, body = reader.response()
        assert status == "HTTP/1.1 200 OK" and json.loads(body) == {"live": True}


def test_response_larger_than_the_joined_size_arrives_whole(start_server, mlp_file):
    server = start_server(mlp_file, "--no-batching")
    x = np.random.default_rng(9).standard_normal((20_000, 16)).astype(np.float32)
    head, body = _binary_request(x)
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head + body)
        status, headers, answer = _Reader(sock).response()
    assert status == "HTTP/1.1 200 OK" and len(answer) > 1 << 16
    np.testing.assert_array_equal(_outputs(headers, answer), reference(mlp_file, {"x": x})["y"])
