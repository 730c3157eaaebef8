"""Hostile requests and throughput of `python -m serve`, before and after its admission control, in one run.

"Before" is the server as committed at HEAD (its serve/ files are copied out of git into a temporary
folder and run from there); "after" is the working tree. Both serve the same repository: a 784-512-512-10
MLP ("mlp", as in serve_throughput.py) and single-head self-attention of width 64 ("attention"), whose
scores take seq^2 floats. Each hostile case is sent to each server in turn, and the server's peak
resident memory over the case (VmHWM, reset through /proc/PID/clear_refs, and VmRSS sampled every
20 ms), its memory after the case and the client's wait are printed:

- attention over budget: one binary request [1, SEQ, 64] (the scores: 4*SEQ^2 bytes)
- attention within budget: one request whose scores fit, to show what memory the server keeps
- JSON 63 MB: one JSON body just under the old 64 MiB limit, and 4 JSON bodies of 15 MB at once
- gRPC stream: 60 requests of 16 MB on one stream
- header 16 MiB: one request whose header is 16 MiB long (h11, uvicorn's other HTTP parser, is shown too)
- slow header: 100 connections sending one header byte every 0.5 s; how many are open after 11 s

Throughput (binary, JSON and gRPC single-sample requests at 8 and 32 in flight, rounds interleaved,
medians) uses serve_throughput.py's load generator. The after server runs with --max-inference-memory
(default 2 GiB: an operator's setting for a small container); every other limit is at its default.

    python benchmarks/hostile_serve.py [--quick] [--rounds N] [--seq N] [--memory-budget BYTES]
                                       [--skip-throughput] [--cases WORD ...]

This is a measurement, not a test: it never fails a build.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_throughput as st  # noqa: E402  (the load generator and MLP of the throughput benchmark)

ROOT = st.ROOT
MIB = 1 << 20
H11_SHIM = (
    "import runpy, uvicorn\n"
    "_init = uvicorn.Config.__init__\n"
    "def init(self, *a, **k):\n"
    "    k.setdefault('http', 'h11')\n"
    "    _init(self, *a, **k)\n"
    "uvicorn.Config.__init__ = init\n"
    "runpy.run_module('serve', run_name='__main__', alter_sys=True)\n"
)


def export_head_serve(folder: Path) -> Path:
    """The serve package as committed at HEAD, written under FOLDER."""
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", "HEAD", "serve"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        data = subprocess.run(["git", "show", f"HEAD:{name}"], cwd=ROOT, check=True, capture_output=True).stdout
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def attention_model(path: Path, width: int = 64) -> None:
    """x [batch, seq, width] -> softmax(q k^T / sqrt(width)) v, one head."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(6)
    weights = [numpy_helper.from_array((rng.standard_normal((width, width)) / 8).astype(np.float32), n)
               for n in ("wq", "wk", "wv")]
    nodes = [helper.make_node("MatMul", ["x", w], [o]) for w, o in (("wq", "q"), ("wk", "k"), ("wv", "v"))]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
              helper.make_node("MatMul", ["q", "kt"], ["s"]), helper.make_node("Softmax", ["s"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"])]
    graph = helper.make_graph(nodes, "attention",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", width])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True)
    onnx.save(model, str(path))


class Server:
    """A server process (REST and gRPC on free ports) and readings of its memory."""

    def __init__(self, name: str, command: list[str], cwd: Path) -> None:
        self.name = name
        self.port, self.grpc_port = st.free_port(), st.free_port()
        command = command + ["--port", str(self.port), "--grpc-port", str(self.grpc_port), "--log-level", "error"]
        self.process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        st.wait_ready(self.port, self.process, timeout=120)

    def memory(self, field: str = "VmRSS") -> float:
        """A /proc status field in MiB (nan once the process is gone)."""
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")

    def alive(self) -> bool:
        return self.process.poll() is None


def measure(server: Server, case) -> dict:
    """Run CASE(server) -> outcome text, with the server's memory before, at peak and after, and the wait."""
    try:
        Path(f"/proc/{server.process.pid}/clear_refs").write_text("5")
    except OSError:
        pass
    base = server.memory()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], server.memory())

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.perf_counter()
    try:
        outcome = case(server)
    except Exception as exc:  # a measurement records what happened, whatever it was
        outcome = f"{type(exc).__name__}: {str(exc)[:60]}"
    wait = time.perf_counter() - start
    done.set()
    sampler.join()
    time.sleep(0.5)
    peak_mib = max(peak[0], server.memory("VmHWM"))
    return {"outcome": outcome if server.alive() else f"{outcome}; SERVER DIED", "wait_s": wait,
            "base": base, "peak": peak_mib, "after": server.memory()}


def _post(server: Server, path: str, body: bytes, headers: dict[str, str], timeout: float = 300) -> str:
    import httpx

    response = httpx.post(f"http://127.0.0.1:{server.port}{path}", content=body, headers=headers, timeout=timeout)
    text = response.text
    return f"{response.status_code} {json.loads(text).get('error', '')[:70] if response.status_code != 200 else ''}"


def _binary(array: np.ndarray) -> tuple[bytes, dict[str, str]]:
    header = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(array.shape),
                                     "parameters": {"binary_data_size": array.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    return header + array.tobytes(), {"Inference-Header-Content-Length": str(len(header))}


def _json_rows(rows: int) -> bytes:
    data = np.random.default_rng(0).random((rows, st.FEATURES)).round(6).tolist()
    return json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [rows, st.FEATURES], "data": data}]}).encode()


def _attention_case(seq: int):
    x = np.random.default_rng(seq).standard_normal((1, seq, 64)).astype(np.float32)
    body, headers = _binary(x)
    return lambda server: _post(server, "/v2/models/attention/infer", body, headers)


def _json_cases():
    big = _json_rows(8100)
    medium = _json_rows(1900)

    def one(server: Server) -> str:
        return f"{len(big) / 1e6:.0f} MB: " + _post(server, "/v2/models/mlp/infer", big, {})

    def four(server: Server) -> str:
        results: list[str] = []
        threads = [threading.Thread(target=lambda: results.append(_post(server, "/v2/models/mlp/infer", medium, {})))
                   for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return f"4 x {len(medium) / 1e6:.0f} MB: " + ", ".join(sorted(r[:3] for r in results))

    return one, four


def _grpc_stream(server: Server) -> str:
    """60 requests of 16 MB on one stream, through the generated stubs in a child process."""
    script = (
        "import sys, grpc, numpy as np\n"
        "from tritonclient.grpc import service_pb2 as pb, service_pb2_grpc as rpc\n"
        "x = np.ones((5350, 784), np.float32).tobytes()\n"
        "def requests():\n"
        "    for i in range(60):\n"
        "        r = pb.ModelInferRequest(model_name='mlp', id=str(i), raw_input_contents=[x])\n"
        "        r.inputs.add(name='x', datatype='FP32', shape=[5350, 784])\n"
        "        yield r\n"
        "opts = [('grpc.max_send_message_length', -1), ('grpc.max_receive_message_length', -1)]\n"
        "with grpc.insecure_channel(sys.argv[1], options=opts) as ch:\n"
        "    answers = list(rpc.GRPCInferenceServiceStub(ch).ModelStreamInfer(requests(), timeout=600))\n"
        "print(len(answers), 'answers,', sum(1 for a in answers if a.error_message), 'errors')\n"
    )
    out = subprocess.run([sys.executable, "-c", script, f"127.0.0.1:{server.grpc_port}"], capture_output=True,
                         text=True, timeout=900)
    return (out.stdout.strip() or out.stderr.strip()[-80:])


def _large_header(server: Server) -> str:
    payload = b"GET /v2/health/live HTTP/1.1\r\nHost: b\r\nX-Filler: " + b"a" * (16 * MIB) + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=600) as sock:
        try:
            sock.sendall(payload)
        except OSError:
            pass
        try:
            answer = sock.recv(64)
        except OSError as exc:
            return type(exc).__name__
    return answer.split(b"\r\n")[0].decode(errors="replace") or "closed"


def _slow_headers(server: Server, count: int = 100, seconds: float = 11.0) -> str:
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(count)]
    line = b"GET /v2/health/live HTTP/1.1\r\nHost: b\r\nX-Slow: " + b"a" * 1000
    try:
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            for sock in socks:
                try:
                    sock.send(line[i:i + 1])
                except OSError:
                    pass
            i += 1
            time.sleep(0.5)
        still_open = 0
        for sock in socks:
            sock.setblocking(False)
            try:
                sock.recv(1)  # an answer (408) or the end of the stream: the server let go
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
        return f"{still_open} of {count} still open after {seconds:g} s"
    finally:
        for sock in socks:
            sock.close()


def _throughput(servers: list[Server], duration: float, rounds: int, workdir: Path) -> None:
    sample = np.random.default_rng(1).random(st.FEATURES, dtype=np.float32)
    bodies = st.request_bodies(sample)
    points = [(s, enc, c) for enc in ("binary", "json", "grpc") for c in (8, 32) for s in servers
              if not (enc == "grpc" and s.name.endswith("h11"))]
    measured: dict[tuple, list[dict]] = {(s.name, e, c): [] for s, e, c in points}
    for _ in range(rounds):
        for server, encoding, c in points:
            port = server.grpc_port if encoding == "grpc" else server.port
            body, headers = (None, {"loadgen": "grpcio"}) if encoding == "grpc" else bodies[encoding]
            measured[(server.name, encoding, c)].append(st.run_load(port, body, headers, c, duration, workdir))
    print(f"\n{'server':<20}{'body':<8}{'conc':>5}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}{'x before':>10}")
    table = {point: st._median(results) for point, results in measured.items()}
    for (name, encoding, c), r in table.items():
        base = table.get(("before", encoding, c))
        ratio = r["rps"] / base["rps"] if base and base["rps"] else float("nan")
        print(f"{name:<20}{encoding:<8}{c:>5}{r['rps']:>10,.0f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}"
              f"{r['errors']:>8}{ratio:>9.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one throughput round of 1 s per point")
    parser.add_argument("--seq", type=int, default=24_000, help="sequence length of the over-budget attention case")
    parser.add_argument("--memory-budget", type=int, default=2 << 30, help="--max-inference-memory of the after server")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds over every point (medians shown)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--cases", nargs="*", help="only the cases whose label holds one of these words")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        repository = workdir / "repository"
        (repository / "mlp" / "1").mkdir(parents=True)
        st.build_mlp(repository / "mlp" / "1" / "model.onnx")
        attention_model(repository / "attention" / "1" / "model.onnx")
        before_dir = export_head_serve(workdir / "before")
        env_python = [sys.executable]
        commands = {
            "before": (env_python + ["-m", "serve", str(repository)], before_dir),
            "after": (env_python + ["-m", "serve", str(repository), "--max-inference-memory",
                                    str(args.memory_budget)], ROOT),
            "before, h11": (env_python + ["-c", H11_SHIM, str(repository)], before_dir),
        }
        print(f"{os.cpu_count()} CPU(s); after: --max-inference-memory {args.memory_budget}")
        if not args.skip_throughput:
            servers = [Server(name, *command) for name, command in commands.items()]
            try:
                _throughput(servers, 1.0 if args.quick else 2.0, 1 if args.quick else args.rounds, workdir)
            finally:
                for server in servers:
                    st.stop(server.process)
        _hostile(commands, args)


def _hostile(commands: dict[str, tuple[list[str], Path]], args: argparse.Namespace) -> None:
    """Each case against a fresh server of each kind, so that no case inherits another's memory."""
    one_json, four_json = _json_cases()
    cases = [
        (f"attention seq {args.seq // 2}", _attention_case(args.seq // 2)),
        (f"attention seq {args.seq}", _attention_case(args.seq)),
        ("JSON 63 MB", one_json),
        ("JSON 4 at once", four_json),
        ("gRPC stream 60x16MB", _grpc_stream),
        ("header 16 MiB", _large_header),
        ("slow headers x100", _slow_headers),
    ]
    print(f"\n{'case':<24}{'server':<13}{'wait s':>8}{'base':>8}{'peak':>8}{'after':>8}  outcome (MiB)")
    for label, case in cases:
        if args.cases and not any(word in label for word in args.cases):
            continue
        for name, command in commands.items():
            if name.endswith("h11") and label not in ("header 16 MiB", "slow headers x100"):
                continue
            server = Server(name, *command)
            try:
                r = measure(server, case)
            finally:
                st.stop(server.process)
            print(f"{label:<24}{name:<13}{r['wait_s']:>8.2f}{r['base']:>8.0f}{r['peak']:>8.0f}"
                  f"{r['after']:>8.0f}  {r['outcome']}", flush=True)


if __name__ == "__main__":
    main()
