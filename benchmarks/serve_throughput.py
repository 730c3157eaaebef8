"""Throughput and latency of `python -m serve` against a minimal FastAPI server, the transports' floors and
in-process onnxruntime.

Builds a 784-512-512-10 MLP (ReLU, softmax) with onnx.helper, starts each server as its own
process, and drives single-sample requests from a separate load-generator process (wrk with a Lua
script when it is on PATH, else a lean asyncio client over raw keep-alive connections). gRPC rows
send tritonclient.grpc's ModelInferRequest, serialized once, over one connection with as many calls
in flight as the concurrency: "grpc" from prepared HTTP/2 frames (benchmarks/grpc_load.py, the
counterpart of the raw REST client), "grpcio" through a grpc.aio channel (a real client's own cost).
The floors answer every request with a prepared response and no work: uvicorn with httptools on
uvloop and a bare httptools protocol on uvloop without ASGI (REST), grpcio's asyncio server on uvloop
and its thread-pool server (gRPC). The table also
shows the CPU time the server process and the load generator spent per request: what a server
costs above its floor is its own. --baseline DIR serves another revision's serve/ package from DIR
in the same run (git archive HEAD serve | tar -x -C DIR), for before/after figures side by side.
Then the server's resident memory (VmRSS) is read after a warm-up, after 100,000 REST requests
and after 100,000 gRPC requests: a leak shows as growth.

    python benchmarks/serve_throughput.py [--quick] [--rounds N] [--duration S] [--concurrency 1 8 32]
                                          [--servers minimal on off baseline floors] [--bodies grpc binary json]
                                          [--baseline DIR] [--leak-requests N]

All servers stay up while rounds interleave every point; the table shows per-point medians,
so a busy spell on a shared machine does not land on one configuration only. The minimal
server uses onnxruntime's defaults, as a first version would. The last lines give the ratios of
the serving goals: gRPC over REST binary (throughput, p99), REST binary over in-process
single-sample onnxruntime (measured in every round, median).

This is a measurement, not a test: it never fails a build.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from serve_peers import FLOOR_SERVER, MINIMAL_SERVER

ROOT = Path(__file__).resolve().parent.parent
MODEL = "mlp"
# Request kinds: gRPC from prepared HTTP/2 frames (benchmarks/grpc_load.py) and from grpcio's client, REST bodies.
BODIES = ("grpc", "grpcio", "binary", "json")
FEATURES = 784

WRK_SCRIPT = """
wrk.method = "POST"
local f = io.open("{body}", "rb")
wrk.body = f:read("*all")
f:close()
{headers}
"""


def build_mlp(path: Path, sizes=(FEATURES, 512, 512, 10), seed: int = 0) -> None:
    """Write a Gemm/ReLU MLP with a softmax head and a dynamic batch axis."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, weights, previous = [], [], "x"
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        weights += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(np.zeros(fan_out, np.float32), f"b{i}")]
        nodes.append(helper.make_node("Gemm", [previous, f"w{i}", f"b{i}"], [f"dense{i}"]))
        previous = f"dense{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [previous], [f"relu{i}"]))
            previous = f"relu{i}"
    nodes.append(helper.make_node("Softmax", [previous], ["y"], axis=-1))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", sizes[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", sizes[-1]])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def request_bodies(sample: np.ndarray) -> dict[str, tuple[bytes, dict[str, str]]]:
    """Single-sample infer request bodies and headers, binary and JSON."""
    raw = sample.astype("<f4").tobytes()
    header = json.dumps(
        {
            "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, FEATURES], "parameters": {"binary_data_size": len(raw)}}],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}],
        }
    ).encode()
    as_json = json.dumps(
        {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, FEATURES], "data": sample.ravel().tolist()}]}
    ).encode()
    return {
        "binary": (header + raw, {"Inference-Header-Content-Length": str(len(header))}),
        "json": (as_json, {"Content-Type": "application/json"}),
    }


def free_port() -> int:
    """An unused loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(port: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Block until GET /v2/health/ready answers 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server did not become ready")


def _summary(latencies: list[float], errors: int, duration: float, sent: int) -> dict:
    latencies.sort()
    count = len(latencies)
    return {
        "sent": sent,
        "requests": count,
        "errors": errors,
        "rps": count / duration,
        "p50_ms": 1000 * latencies[count // 2] if count else float("nan"),
        "p99_ms": 1000 * latencies[min(count - 1, int(count * 0.99))] if count else float("nan"),
    }


async def drive_rest(port: int, request: bytes, concurrency: int, duration: float, warmup: float, limit: int) -> dict:
    from rest_load import drive

    latencies, errors, sent = await drive(port, request, concurrency, duration, warmup, limit)
    return _summary(latencies, errors, duration, sent)


def _grpc_payload() -> bytes:
    """tritonclient.grpc's ModelInferRequest, serialized once: like the REST client's prepared bytes, this
    keeps the load generator's own cost per call low."""
    from tritonclient.grpc import service_pb2

    sample = np.random.default_rng(1).random((1, FEATURES), dtype=np.float32)
    request = service_pb2.ModelInferRequest(model_name=MODEL, raw_input_contents=[sample.astype("<f4").tobytes()])
    request.inputs.add(name="x", datatype="FP32", shape=[1, FEATURES])
    return request.SerializeToString()


async def _drive_grpc(address: str, concurrency: int, duration: float, warmup: float, limit: int) -> dict:
    import grpc
    from tritonclient.grpc import service_pb2

    payload = _grpc_payload()
    latencies: list[float] = []
    errors = 0
    sent_count = 0
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + duration

    async with grpc.aio.insecure_channel(address) as channel:
        infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")

        async def caller() -> None:
            nonlocal errors, sent_count
            while True:
                sent = time.perf_counter()
                if sent >= stop_at or (limit and sent_count >= limit):
                    return
                sent_count += 1
                try:
                    service_pb2.ModelInferResponse.FromString(await infer(payload))
                except grpc.aio.AioRpcError:
                    errors += 1
                    continue
                if sent >= measure_from:
                    latencies.append(time.perf_counter() - sent)

        await asyncio.gather(*(caller() for _ in range(concurrency)))
    return _summary(latencies, errors, duration, sent_count)


async def _drive_grpc_frames(port: int, concurrency: int, duration: float, warmup: float, limit: int) -> dict:
    from grpc_load import drive

    latencies, errors, sent = await drive(port, "/inference.GRPCInferenceService/ModelInfer", _grpc_payload(),
                                          concurrency, duration, warmup, limit)
    return _summary(latencies, errors, duration, sent)


def loadgen_main(args: argparse.Namespace) -> None:
    """Entry point of the load-generator process: prints one JSON result line."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    concurrency, limit = args.concurrency[0], args.limit
    duration = args.duration if not limit else float("inf")
    warmup = args.warmup if not limit else 0.0
    if args.request_file == "grpcio":
        result = asyncio.run(_drive_grpc(f"127.0.0.1:{args.port}", concurrency, duration, warmup, limit))
    elif args.request_file == "grpc":
        result = asyncio.run(_drive_grpc_frames(args.port, concurrency, duration, warmup, limit))
    else:
        request = Path(args.request_file).read_bytes()
        result = asyncio.run(drive_rest(args.port, request, concurrency, duration, warmup, limit))
    if limit:
        result["rps"] = float("nan")
    print(json.dumps(result))


def run_load(port: int, body: bytes | None, headers: dict[str, str], concurrency: int, duration: float, workdir: Path,
             limit: int = 0, server: subprocess.Popen | None = None) -> dict:
    """Drive a server with single-sample requests from a separate process (gRPC when body is None).

    With a limit, exactly that many requests are sent, however long they take. With SERVER, the result also
    has the CPU time the server process and the load generator spent per request sent (server_us, client_us).
    """
    path = f"/v2/models/{MODEL}/infer"
    if body is None:
        request_file = headers["loadgen"]
    elif shutil.which("wrk") and not limit:
        return _run_wrk(port, path, body, headers, concurrency, duration, workdir)
    else:
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        request_file = workdir / "request.bin"
        request_file.write_bytes(head.encode() + body)
    server_before = cpu_seconds(server.pid) if server is not None else 0.0
    client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, __file__, "--loadgen", "--port", str(port), "--request-file", str(request_file),
         "--concurrency", str(concurrency), "--duration", str(duration), "--warmup", str(min(1.0, duration / 3)),
         "--limit", str(limit)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    sent = max(1, result.get("sent", 0))
    client = client_after.ru_utime + client_after.ru_stime - client_before.ru_utime - client_before.ru_stime
    result["client_us"] = 1e6 * client / sent
    result["server_us"] = 1e6 * (cpu_seconds(server.pid) - server_before) / sent if server is not None else float("nan")
    return result


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process (all its threads) has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(process: subprocess.Popen) -> float:
    """Resident memory of a process in MiB (Linux /proc)."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _run_wrk(port: int, path: str, body: bytes, headers: dict[str, str], concurrency: int, duration: float, workdir: Path) -> dict:
    body_file = workdir / "body.bin"
    body_file.write_bytes(body)
    header_lines = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items())
    script = workdir / "post.lua"
    script.write_text(WRK_SCRIPT.format(body=body_file, headers=header_lines))
    out = subprocess.run(
        ["wrk", "-t1", f"-c{concurrency}", f"-d{max(1, round(duration))}s", "--latency", "-s", str(script),
         f"http://127.0.0.1:{port}{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = {"requests": 0, "errors": 0, "rps": float("nan"), "p50_ms": float("nan"), "p99_ms": float("nan")}
    for line in out.splitlines():
        parts = line.split()
        if line.startswith("Requests/sec:"):
            result["rps"] = float(parts[1])
        elif parts[:1] == ["50%"]:
            result["p50_ms"] = _wrk_ms(parts[1])
        elif parts[:1] == ["99%"]:
            result["p99_ms"] = _wrk_ms(parts[1])
        elif "requests in" in line:
            result["requests"] = int(parts[0])
        elif line.strip().startswith("Non-2xx"):
            result["errors"] = int(parts[-1])
    return result


def _wrk_ms(text: str) -> float:
    for unit, scale in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float(text)


def start(command: list[str], port: int, cwd: Path = ROOT, grpc_only: bool = False) -> subprocess.Popen:
    """Start a server process in CWD and wait for readiness (for GRPC_ONLY, until its port accepts)."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if grpc_only:
            wait_listening(port, process)
        else:
            wait_ready(port, process)
    except RuntimeError:
        process.kill()
        raise RuntimeError(f"{command[:4]} failed to start: {process.stderr.read().decode()[-2000:]}") from None
    return process


def wait_listening(port: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Block until the loopback PORT accepts connections."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not open its port")


def stop(process: subprocess.Popen) -> None:
    """Terminate a server process."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def in_process_ceiling(model: Path, sample: np.ndarray, duration: float) -> tuple[float, float]:
    """Single-sample runs/s and batch-32 samples/s of onnxruntime called directly."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    single = sample.reshape(1, FEATURES)
    batch = np.repeat(single, 32, axis=0)
    rates = []
    for x in (single, batch):
        for _ in range(20):
            session.run(["y"], {"x": x})
        count, begin = 0, time.perf_counter()
        while time.perf_counter() - begin < duration:
            session.run(["y"], {"x": x})
            count += 1
        rates.append(count * x.shape[0] / (time.perf_counter() - begin))
    return rates[0], rates[1]


def _median(results: list[dict]) -> dict:
    """The per-field median over repeated measurements of one point (errors are summed)."""
    keys = ("rps", "p50_ms", "p99_ms", "server_us", "client_us")
    merged = {key: float(np.median([r.get(key, float("nan")) for r in results])) for key in keys}
    merged["errors"] = sum(r["errors"] for r in results)
    merged["requests"] = sum(r["requests"] for r in results)
    return merged


SERVER_GROUPS = ("minimal", "on", "off", "baseline", "floors")


def _servers(args: argparse.Namespace, model: Path, workdir: Path) -> dict[str, dict]:
    """Each server to start: its command, working directory, ports and the request bodies it is driven with."""
    minimal_file = workdir / "minimal_server.py"
    minimal_file.write_text(MINIMAL_SERVER)
    floor_file = workdir / "floor_server.py"
    floor_file.write_text(FLOOR_SERVER)
    servers = {}

    def add(group: str, name: str, command: list[str], bodies: tuple[str, ...], rest: bool = True,
            grpc: bool = False, cwd: Path = ROOT) -> None:
        bodies = tuple(b for b in bodies if b in args.bodies)
        if group in args.servers and bodies:
            servers[name] = {"command": command, "cwd": cwd, "bodies": bodies,
                             "port": free_port() if rest else None, "grpc_port": free_port() if grpc else None}

    add("minimal", "minimal FastAPI", [sys.executable, str(minimal_file), str(model)], ("json",))
    for group, name, cwd in (("on", "serve, batching on", ROOT), ("baseline", "baseline, batching on", args.baseline)):
        command = [sys.executable, "-m", "serve", str(model), "--log-level", "warning"]
        command += ["--threads", str(args.threads)] if args.threads else []
        bodies = ("grpc", "grpcio", "binary", "json") if group == "on" else ("grpc", "grpcio", "binary")
        if cwd is not None:
            add(group, name, command, bodies, grpc=True, cwd=cwd)
    command = [sys.executable, "-m", "serve", str(model), "--log-level", "warning", "--grpc-port", "0", "--no-batching"]
    add("off", "serve, batching off", command + (["--threads", str(args.threads)] if args.threads else []),
        ("binary", "json"))
    add("floors", "floor: uvicorn", [sys.executable, str(floor_file), "rest"], ("binary",))
    add("floors", "floor: httptools", [sys.executable, str(floor_file), "protocol"], ("binary",))
    for kind in ("grpc.aio", "grpc sync"):
        add("floors", f"floor: {kind}", [sys.executable, str(floor_file), kind.replace(" ", "")], ("grpc", "grpcio"),
            rest=False, grpc=True)
    return servers


def _start_all(servers: dict[str, dict]) -> dict[str, subprocess.Popen]:
    processes = {}
    for name, server in servers.items():
        command = list(server["command"])
        if name == "minimal FastAPI":
            command.append(str(server["port"]))
        elif name.startswith("floor"):
            command.append(str(server["port"] or server["grpc_port"]))
        else:
            command += ["--port", str(server["port"]), "--grpc-port", str(server["grpc_port"] or 0)]
        rest = server["port"] is not None
        processes[name] = start(command, server["port"] or server["grpc_port"], server["cwd"], grpc_only=not rest)
    return processes


def _measure(args, servers, processes, bodies, model, sample, workdir, duration, rounds) -> tuple[dict, list]:
    """Per-point results of every round, the points interleaved within each round, and the in-process rates."""
    points = [(name, body, c) for name, server in servers.items() for body in server["bodies"] for c in args.concurrency]
    measured: dict[tuple, list[dict]] = {point: [] for point in points}
    ceilings = []
    for _ in range(rounds):
        ceilings.append(in_process_ceiling(model, sample, duration / 2))
        for name, body, c in points:
            server = servers[name]
            port = server["grpc_port"] if body.startswith("grpc") else server["port"]
            measured[(name, body, c)].append(run_load(port, *bodies[body], c, duration, workdir,
                                                      server=processes[name]))
    return measured, ceilings


def _print_table(table: dict[tuple, dict]) -> None:
    print()
    print(f"{'server':<24}{'body':<8}{'conc':>5}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
          f"{'srv us/req':>11}{'cli us/req':>11}{'x minimal':>11}")
    for (name, encoding, c), r in table.items():
        base = table.get(("minimal FastAPI", "json", c), {}).get("rps", float("nan"))
        print(
            f"{name:<24}{encoding:<8}{c:>5}{r['rps']:>10,.0f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{r['errors']:>8}"
            f"{r['server_us']:>11.0f}{r['client_us']:>11.0f}{r['rps'] / base:>10.2f}x"
        )


def _print_ratios(table: dict[tuple, dict], single_rate: float, concurrency: list[int]) -> None:
    """The goals' ratios: gRPC over REST binary (throughput and p99), REST binary over in-process onnxruntime."""
    print()
    for name in ("serve, batching on", "baseline, batching on"):
        for c in concurrency:
            binary = table.get((name, "binary", c))
            if binary is not None:
                line = f"{name}, c={c}: REST binary / in-process single-sample {binary['rps'] / single_rate:.2f}"
                for body, label in (("grpc", "gRPC"), ("grpcio", "gRPC (grpcio client)")):
                    row = table.get((name, body, c))
                    if row is not None:
                        line += (f"; {label} / REST binary {row['rps'] / binary['rps']:.2f}, "
                                 f"p99 {row['p99_ms']:.2f} vs {binary['p99_ms']:.2f} ms")
                print(line)


def _leak_check(args, servers, processes, bodies, workdir, duration) -> list[tuple[str, float]]:
    name = "serve, batching on"
    if not args.leak_requests or name not in servers:
        return []
    served, server = processes[name], servers[name]
    rss = [("after the rounds above", rss_mib(served))]
    for label, port, encoding in (("REST binary", server["port"], "binary"), ("gRPC", server["grpc_port"], "grpc")):
        result = run_load(port, *bodies[encoding], 32, duration, workdir, limit=args.leak_requests)
        rss.append((f"after {result['requests']:,} more {label} requests ({result['errors']} errors)", rss_mib(served)))
    return rss


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round (about 1 s per point)")
    parser.add_argument("--duration", type=float, default=None, help="seconds measured per point and round")
    parser.add_argument("--rounds", type=int, default=None, help="rounds over every point; the table shows medians")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--threads", type=int, default=None, help="--threads passed to python -m serve")
    parser.add_argument("--servers", nargs="+", choices=SERVER_GROUPS, default=list(SERVER_GROUPS),
                        help="which servers to run (baseline only with --baseline)")
    parser.add_argument("--bodies", nargs="+", choices=BODIES, default=list(BODIES),
                        help="which request encodings to send")
    parser.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                        help="also serve from DIR/serve, another revision's package (git archive REV serve | tar -x -C DIR)")
    parser.add_argument("--leak-requests", type=int, default=100_000,
                        help="requests per protocol between the memory readings (0: skip)")
    parser.add_argument("--loadgen", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--request-file", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=float, default=0.5, help=argparse.SUPPRESS)
    return parser


def main() -> None:
    """Run the benchmark and print the table."""
    args = _parser().parse_args()
    if args.loadgen:
        loadgen_main(args)
        return
    if args.baseline is not None and not (args.baseline / "serve" / "__main__.py").is_file():
        raise SystemExit(f"--baseline {args.baseline}: no serve package there (expected {args.baseline}/serve/__main__.py)")
    duration = args.duration or (1.0 if args.quick else 1.2)
    rounds = args.rounds or (1 if args.quick else 3)

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model = workdir / f"{MODEL}.onnx"
        build_mlp(model)
        sample = np.random.default_rng(1).random(FEATURES, dtype=np.float32)
        bodies = request_bodies(sample)
        bodies["grpc"] = (None, {"loadgen": "grpc"})
        bodies["grpcio"] = (None, {"loadgen": "grpcio"})
        servers = _servers(args, model, workdir)
        # Every server stays up (idle ones cost nothing) and the rounds interleave all
        # points, so a slow spell on a shared machine spreads over every configuration.
        processes: dict[str, subprocess.Popen] = {}
        try:
            processes = _start_all(servers)
            measured, ceilings = _measure(args, servers, processes, bodies, model, sample, workdir, duration, rounds)
            rss = _leak_check(args, servers, processes, bodies, workdir, duration)
        finally:
            for process in processes.values():
                stop(process)

    single_rate, batch_rate = (float(np.median(rates)) for rates in zip(*ceilings))
    print(f"in-process onnxruntime: single-sample {single_rate:,.0f} runs/s, batch-32 {batch_rate:,.0f} samples/s "
          "(medians over the rounds)")
    print(
        f"load generator: {'wrk' if shutil.which('wrk') else 'asyncio client process'}; {rounds} round(s) of "
        f"{duration:g} s per point, medians shown; {os.cpu_count()} CPU(s); us/req: CPU time per request sent"
    )
    table = {point: _median(results) for point, results in measured.items()}
    _print_table(table)
    _print_ratios(table, single_rate, args.concurrency)
    if rss:
        print()
        print("resident memory of serve (batching on, VmRSS):")
        for label, mib in rss:
            print(f"  {label:<58}{mib:>8.1f} MiB")


if __name__ == "__main__":
    main()
