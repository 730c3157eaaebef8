"""CUDA against CPU for exported kgraph models: parity, latency, serving and float16, in one prepared run.

    python benchmarks/gpu_check.py [--out DIR] [--runs N] [--quick] [--cpu-stand-in]

What it does, in order:
1. Builds the check's models with kgraph (MLP, CNN, LSTM, GRU, self-attention, and an Embedding(mask_zero=True)
   -> LSTM model fed padded sequences), exports each to ONNX and writes a Triton repository.
2. Runs every model with onnxruntime's CPUExecutionProvider and CUDAExecutionProvider at batch 1 and 64 on the
   same seeded inputs and compares the outputs (tolerances below); times both (median of --runs after warm-up).
   CUDA runs twice: with onnxruntime's defaults (TF32 matrix products allowed on Ampere and later) and with
   use_tf32=0 (plain float32).
3. Measures what cudnn_conv_algo_search costs a server: the CNN's first run at a batch size it has not seen, with
   EXHAUSTIVE (onnxruntime's default) and HEURISTIC (the server's default).
4. Starts `python -m serve --device cuda:0` on the repository (one model pinned with instance_group KIND_GPU and
   gpus [0], one with KIND_CPU), queries every model with tritonclient over REST and gRPC, checks that the
   metadata, the config and /metrics name the provider that runs each model, measures served single-sample
   throughput on CUDA (REST binary and gRPC), and stops the server with SIGTERM (exit status 0 expected).
5. Converts every model to float16 (python -m export --fp16's conversion) and runs it on CUDA against the
   float32 CPU outputs.

Tolerances, as |cuda - cpu| <= atol * scale + rtol * |cpu| with scale = max |cpu| of that output:
- float32 (use_tf32=0): rtol = atol = 1e-4. Both sides round to float32 (eps 1.2e-7), but cuBLAS/cuDNN sum in
  other orders and fuse differently; over reductions of ~1,000 terms and a few layers that stays below 1e-4.
- TF32 (onnxruntime's CUDA default): rtol = atol = 1e-2. TF32 keeps 10 mantissa bits (unit roundoff 4.9e-4)
  in each product before float32 accumulation; a few layers of that stay within 1e-2 of the scale.
- float16: rtol = atol = 1e-2, with scale = max(max |cpu|, 1). float16 keeps about three decimal digits of the
  activations inside the model, and those of recurrent and normalized layers are of order 1: an output far smaller
  than them (the masked model's head gives values near 0.03) inherits their absolute error, not a relative one.
- The server runs with its defaults (use_tf32=0), so its REST and gRPC answers are held to the float32 tolerance.

--cpu-stand-in runs every step with the CPU provider in CUDA's place (and `--device cpu` for the server), so the
script itself can be checked on a machine without a GPU; its report says so. The report is DIR/gpu_check.json
and a Markdown table DIR/gpu_check.md. Exit status: 0 every check passed, 1 a check failed, 2 CUDA is missing.
This is a measurement with checks, not a test: it never runs in the test suite's timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import onnxruntime as ort  # noqa: E402

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
TOLERANCES = {"fp32": 1e-4, "tf32": 1e-2, "fp16": 1e-2}
MIN_SCALE = {"fp16": 1.0}
BATCHES = (1, 64)
THROUGHPUT_MODELS = ("mlp", "cnn", "attention")


# ---------------------------------------------------------------- models


def build_models(quick: bool) -> dict:
    """name -> (kgraph model, input sampler(batch, rng) -> {input name: array})."""
    import kgraph
    from kgraph import layers as L

    kgraph.utils.set_random_seed(0)
    seq = 16 if quick else 64
    width = 32 if quick else 128
    models = {}

    x = kgraph.Input(shape=(784,), name="x")
    h = L.Dense(512, activation="relu")(x)
    h = L.Dense(512, activation="relu")(h)
    models["mlp"] = (kgraph.Model(x, L.Dense(10, activation="softmax")(h), name="mlp"), _floats("x", (784,)))

    x = kgraph.Input(shape=(32, 32, 3), name="image")
    h = L.Conv2D(32, 3, activation="relu")(x)
    h = L.MaxPooling2D(2)(h)
    h = L.Conv2D(64, 3, activation="relu")(h)
    h = L.MaxPooling2D(2)(h)
    h = L.Dense(10, activation="softmax")(L.Flatten()(h))
    models["cnn"] = (kgraph.Model(x, h, name="cnn"), _floats("image", (32, 32, 3)))

    x = kgraph.Input(shape=(seq, 32), name="sequence")
    models["lstm"] = (kgraph.Model(x, L.Dense(10)(L.LSTM(width)(x)), name="lstm"), _floats("sequence", (seq, 32)))

    x = kgraph.Input(shape=(seq, 32), name="sequence")
    h = L.GlobalAveragePooling1D()(L.GRU(width, return_sequences=True)(x))
    models["gru"] = (kgraph.Model(x, L.Dense(10)(h), name="gru"), _floats("sequence", (seq, 32)))

    x = kgraph.Input(shape=(2 * seq, 64), name="tokens")
    attended = L.MultiHeadAttention(num_heads=4, key_dim=16)(x, x)
    h = L.LayerNormalization()(L.Add()([x, attended]))
    h = L.Dense(10)(L.GlobalAveragePooling1D()(h))
    models["attention"] = (kgraph.Model(x, h, name="attention"), _floats("tokens", (2 * seq, 64)))

    x = kgraph.Input(shape=(seq,), dtype="int32", name="ids")
    h = L.LSTM(64)(L.Embedding(1000, 64, mask_zero=True)(x))
    models["masked"] = (kgraph.Model(x, L.Dense(5)(h), name="masked"), _padded_ids("ids", seq))
    return models


def _floats(name: str, shape: tuple):
    def sample(batch: int, rng: np.random.Generator) -> dict:
        return {name: rng.standard_normal((batch, *shape)).astype(np.float32)}

    return sample


def _padded_ids(name: str, length: int):
    def sample(batch: int, rng: np.random.Generator) -> dict:
        ids = rng.integers(1, 1000, size=(batch, length)).astype(np.int32)
        for row, keep in enumerate(rng.integers(1, length + 1, size=batch)):
            ids[row, keep:] = 0  # trailing padding, masked by Embedding(mask_zero=True)
        return {name: ids}

    return sample


def export_models(models: dict, repo: Path) -> dict:
    """Export every model to repo/NAME/1/model.onnx with a config.pbtxt; name -> ONNX ModelProto."""
    from export import triton
    from export.exporter import check, to_onnx

    protos = {}
    for name, (model, _) in models.items():
        proto = to_onnx(model)
        triton.write_repository(proto, repo, name, check=check)
        protos[name] = proto
    return protos


# ---------------------------------------------------------------- in-process runs


def session(model_bytes: bytes, provider: str, options: dict | None = None) -> ort.InferenceSession:
    """An onnxruntime session on PROVIDER alone (with CPU behind CUDA for nodes CUDA lacks)."""
    providers = [(provider, options or {})] + ([CPU] if provider == CUDA else [])
    sess = ort.InferenceSession(model_bytes, providers=providers)
    if sess.get_providers()[0] != provider:
        raise RuntimeError(f"{provider} was asked for but onnxruntime runs {sess.get_providers()}")
    return sess


def compare(reference: list, candidate: list, tolerance: float, min_scale: float = 0.0) -> dict:
    """Worst differences over every output, and whether they are within the tolerance."""
    worst_abs = worst_scaled = 0.0
    ok = True
    for ref, got in zip(reference, candidate):
        ref = np.asarray(ref, np.float64)
        got = np.asarray(got, np.float64)
        scale = max(float(np.max(np.abs(ref))) if ref.size else 0.0, min_scale)
        diff = np.abs(got - ref)
        worst_abs = max(worst_abs, float(diff.max()) if diff.size else 0.0)
        worst_scaled = max(worst_scaled, float(diff.max()) / scale if diff.size and scale else 0.0)
        ok = ok and bool(np.all(np.isfinite(got))) and bool(np.all(diff <= tolerance * scale + tolerance * np.abs(ref)))
    return {"max_abs": worst_abs, "max_abs_over_scale": worst_scaled, "tolerance": tolerance, "ok": ok}


def median_ms(sess: ort.InferenceSession, feeds: dict, runs: int, warmup: int = 5) -> float:
    """Median wall time of one run (host inputs in, host outputs back), after warm-up runs."""
    for _ in range(warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def in_process(protos: dict, models: dict, accel: str, runs: int) -> dict:
    """Parity and latency of every model, CPU vs accelerator (default options and plain float32)."""
    results = {}
    for name, proto in protos.items():
        data = proto.SerializeToString()
        cpu = session(data, CPU)
        fast = session(data, accel)
        strict = session(data, accel, {"use_tf32": "0"} if accel == CUDA else None)
        rows = {}
        for batch in BATCHES:
            feeds = models[name][1](batch, np.random.default_rng(batch))
            reference = cpu.run(None, feeds)
            rows[batch] = {
                "tf32": compare(reference, fast.run(None, feeds), TOLERANCES["tf32"]),
                "fp32": compare(reference, strict.run(None, feeds), TOLERANCES["fp32"]),
                "cpu_ms": median_ms(cpu, feeds, runs),
                "accel_ms": median_ms(fast, feeds, runs),
                "accel_fp32_ms": median_ms(strict, feeds, runs),
            }
        results[name] = rows
        print(f"  {name}: " + ", ".join(
            f"batch {b}: cpu {r['cpu_ms']:.3f} ms, accel {r['accel_ms']:.3f} ms, "
            f"tf32 {r['tf32']['max_abs_over_scale']:.1e}, fp32 {r['fp32']['max_abs_over_scale']:.1e}"
            for b, r in rows.items()), flush=True)
    return results


def conv_search(proto, models: dict, accel: str) -> dict:
    """First-run latency at new batch sizes with each cudnn_conv_algo_search setting (CUDA only)."""
    if accel != CUDA:
        return {"skipped": "cudnn_conv_algo_search is a CUDA option"}
    data = proto.SerializeToString()
    out = {}
    for setting in ("EXHAUSTIVE", "HEURISTIC", "DEFAULT"):
        sess = session(data, CUDA, {"cudnn_conv_algo_search": setting})
        sess.run(None, models["cnn"][1](1, np.random.default_rng(0)))
        firsts = []
        for batch in (7, 19, 37, 64):
            feeds = models["cnn"][1](batch, np.random.default_rng(batch))
            start = time.perf_counter()
            sess.run(None, feeds)
            firsts.append(1000 * (time.perf_counter() - start))
        steady = median_ms(sess, models["cnn"][1](64, np.random.default_rng(64)), 50)
        out[setting] = {"first_run_ms_at_new_batch": firsts, "steady_batch64_ms": steady}
        print(f"  cudnn_conv_algo_search={setting}: first runs {[round(f, 2) for f in firsts]} ms, "
              f"steady batch 64 {steady:.3f} ms", flush=True)
    return out


def float16(protos: dict, models: dict, accel: str, runs: int) -> dict:
    """float16 conversions on the accelerator against float32 on the CPU, and their latency at batch 64."""
    from export import quantize

    results = {}
    for name, proto in protos.items():
        half = quantize.convert(proto, "fp16").SerializeToString()
        cpu = session(proto.SerializeToString(), CPU)
        fast = session(half, accel)
        full = session(proto.SerializeToString(), accel)
        feeds = models[name][1](64, np.random.default_rng(64))
        results[name] = {
            "parity": compare(cpu.run(None, feeds), fast.run(None, feeds), TOLERANCES["fp16"], MIN_SCALE["fp16"]),
            "fp16_ms": median_ms(fast, feeds, runs),
            "fp32_ms": median_ms(full, feeds, runs),
        }
        print(f"  {name} fp16: {results[name]['parity']['max_abs_over_scale']:.1e} of scale, "
              f"{results[name]['fp16_ms']:.3f} ms vs fp32 {results[name]['fp32_ms']:.3f} ms", flush=True)
    return results


# ---------------------------------------------------------------- the server


def pin_placements(repo: Path, gpu: bool) -> None:
    """Pin mlp to GPU 0 (when there is one) and a copy of it to the CPU through config.pbtxt's instance_group."""
    import shutil

    config = repo / "mlp" / "config.pbtxt"
    shutil.copytree(repo / "mlp", repo / "mlp_cpu")
    text = config.read_text()
    (repo / "mlp_cpu" / "config.pbtxt").write_text(
        text.replace('name: "mlp"', 'name: "mlp_cpu"') + "instance_group [ { kind: KIND_CPU } ]\n")
    if gpu:
        config.write_text(text + "instance_group [ { kind: KIND_GPU, count: 1, gpus: [ 0 ] } ]\n")


def start_server(repo: Path, device: str, log: Path):
    from serve_throughput import free_port, wait_ready

    http, grpc = free_port(), free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "serve", str(repo), "--device", device, "--port", str(http), "--grpc-port", str(grpc)],
        cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    try:
        wait_ready(http, process, timeout=300)
    except RuntimeError:
        process.kill()
        raise RuntimeError(f"the server did not start:\n{log.read_text()[-3000:]}") from None
    return process, http, grpc


def served(repo: Path, protos: dict, models: dict, accel: str, duration: float, workdir: Path) -> dict:
    """Query every model over REST and gRPC, check placements in metadata, config and /metrics, measure throughput."""
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    pin_placements(repo, accel == CUDA)
    device = "cuda:0" if accel == CUDA else "cpu"
    log = workdir / "serve.log"
    process, http_port, grpc_port = start_server(repo, device, log)
    report = {"device_flag": device, "models": {}, "throughput": {}}
    try:
        rest = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}")
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        metrics = _get(http_port, "/metrics")
        for name in [*protos, "mlp_cpu"]:
            expected = CPU if name == "mlp_cpu" else accel
            feeds = models["mlp" if name == "mlp_cpu" else name][1](3, np.random.default_rng(3))
            reference = session(protos["mlp" if name == "mlp_cpu" else name].SerializeToString(), CPU).run(None, feeds)
            metadata = rest.get_model_metadata(name)
            config = rest.get_model_config(name)
            outputs = [o["name"] for o in metadata["outputs"]]
            got_rest = _infer(httpclient, rest, name, feeds, outputs)
            got_grpc = _infer(grpcclient, grpc, name, feeds, outputs)
            kinds = [g.get("kind") for g in config.get("instance_group", [])]
            report["models"][name] = {
                "metadata_provider": metadata.get("parameters", {}).get("execution_provider"),
                "config_instance_group": config.get("instance_group"),
                "metrics_provider": f'model="{name}",version="1",provider="{expected}"' in metrics,
                "rest": compare(reference, got_rest, TOLERANCES["fp32"]),
                "grpc": compare(reference, got_grpc, TOLERANCES["fp32"]),
                "expected_provider": expected,
            }
            entry = report["models"][name]
            entry["ok"] = (entry["metadata_provider"] == expected and entry["metrics_provider"]
                           and kinds == ["KIND_GPU" if expected == CUDA else "KIND_CPU"]
                           and entry["rest"]["ok"] and entry["grpc"]["ok"])
            print(f"  served {name}: provider {entry['metadata_provider']}, instance_group {kinds}, REST "
                  f"{entry['rest']['max_abs_over_scale']:.1e}, gRPC {entry['grpc']['max_abs_over_scale']:.1e}",
                  flush=True)
        for name in THROUGHPUT_MODELS:
            report["throughput"][name] = throughput(name, models, http_port, grpc_port, duration, protos, accel)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            report["exit_status"] = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            report["exit_status"] = "killed after 60 s"
        report["log_tail"] = log.read_text(errors="replace")[-2000:]
    return report


def served_cpu(models: dict, duration: float, workdir: Path) -> dict:
    """The same models served with --device cpu on the same machine: the throughput CUDA is compared with."""
    protos = export_models({name: models[name] for name in THROUGHPUT_MODELS}, workdir / "cpu_repo")
    log = workdir / "serve_cpu.log"
    process, http_port, grpc_port = start_server(workdir / "cpu_repo", "cpu", log)
    try:
        return {name: throughput(name, models, http_port, grpc_port, duration, protos, CPU) for name in protos}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def _get(port: int, path: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        return response.read().decode()


def _infer(client_module, client, name: str, feeds: dict, outputs: list) -> list:
    inputs = []
    for key, value in feeds.items():
        tensor = client_module.InferInput(key, list(value.shape), "FP32" if value.dtype == np.float32 else "INT32")
        if client_module.__name__.endswith("http"):
            tensor.set_data_from_numpy(value, binary_data=True)
        else:
            tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    result = client.infer(name, inputs)
    return [result.as_numpy(o) for o in outputs]


def throughput(name: str, models: dict, http_port: int, grpc_port: int, duration: float, protos: dict,
               accel: str) -> dict:
    """Single-sample requests at concurrency 32: REST binary and gRPC req/s, and the in-process ceiling."""
    from serve_throughput import drive_rest

    feeds = models[name][1](1, np.random.default_rng(1))
    (key, value), = feeds.items()
    raw = value.tobytes()
    datatype = "FP32" if value.dtype == np.float32 else "INT32"
    header = json.dumps({"inputs": [{"name": key, "datatype": datatype, "shape": list(value.shape),
                                     "parameters": {"binary_data_size": len(raw)}}]}).encode()
    body = header + raw
    request = (f"POST /v2/models/{name}/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
               f"Inference-Header-Content-Length: {len(header)}\r\n\r\n").encode() + body
    rest = asyncio.run(drive_rest(http_port, request, 32, duration, min(1.0, duration / 3), 0))
    grpc = asyncio.run(_drive_grpc(grpc_port, name, key, datatype, value, 32, duration))
    from serve.runtime import CUDA_DEFAULTS

    # The server's own provider options, so that the ceiling runs the same kernels.
    sess = session(protos[name].SerializeToString(), accel, dict(CUDA_DEFAULTS) if accel == CUDA else None)
    ceiling = 1000 / median_ms(sess, feeds, 200)
    print(f"  {name} served: REST {rest['rps']:.0f} req/s (p99 {rest['p99_ms']:.2f} ms), gRPC {grpc['rps']:.0f} "
          f"req/s (p99 {grpc['p99_ms']:.2f} ms), in-process one-at-a-time {ceiling:.0f} runs/s", flush=True)
    return {"rest": rest, "grpc": grpc, "in_process_runs_per_s": ceiling}


async def _drive_grpc(port: int, model: str, key: str, datatype: str, value: np.ndarray, concurrency: int,
                      duration: float) -> dict:
    import grpc
    from tritonclient.grpc import service_pb2

    request = service_pb2.ModelInferRequest(model_name=model, raw_input_contents=[value.tobytes()])
    request.inputs.add(name=key, datatype=datatype, shape=list(value.shape))
    payload = request.SerializeToString()
    latencies, errors = [], 0
    measure_from = time.perf_counter() + min(1.0, duration / 3)
    stop_at = measure_from + duration
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")

        async def caller() -> None:
            nonlocal errors
            while (sent := time.perf_counter()) < stop_at:
                try:
                    await infer(payload)
                except grpc.aio.AioRpcError:
                    errors += sent >= measure_from
                    continue
                if sent >= measure_from:
                    latencies.append(time.perf_counter() - sent)

        await asyncio.gather(*(caller() for _ in range(concurrency)))
    latencies.sort()
    count = len(latencies)
    return {"requests": count, "errors": errors, "rps": count / duration,
            "p50_ms": 1000 * latencies[count // 2] if count else float("nan"),
            "p99_ms": 1000 * latencies[min(count - 1, int(count * 0.99))] if count else float("nan")}


# ---------------------------------------------------------------- report


def environment(accel: str) -> dict:
    info = {"onnxruntime": ort.__version__, "providers": ort.get_available_providers(), "python": platform.python_version(),
            "numpy": np.__version__, "accelerator": accel}
    try:
        info["gpu"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["gpu"] = None
    return info


def checks_passed(report: dict) -> bool:
    if any("error" in report.get(key, {"error": "missing"}) for key in ("in_process", "float16", "serve")):
        return False
    ok = all(r[k]["ok"] for rows in report["in_process"].values() for r in rows.values() for k in ("tf32", "fp32"))
    ok = ok and all(entry["parity"]["ok"] for entry in report["float16"].values())
    serve = report["serve"]
    return ok and serve.get("exit_status") == 0 and all(m["ok"] for m in serve["models"].values())


def table(report: dict) -> str:
    lines = [f"Accelerator: {report['environment']['accelerator']} ({report['environment'].get('gpu') or 'no GPU'}), "
             f"onnxruntime {report['environment']['onnxruntime']}.", "",
             "| model | batch | CPU ms | CUDA TF32 ms | CUDA fp32 ms | CPU/CUDA fp32 | TF32 diff | fp32 diff |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, rows in report["in_process"].items():
        for batch, r in rows.items():
            lines.append(f"| {name} | {batch} | {r['cpu_ms']:.3f} | {r['accel_ms']:.3f} | {r['accel_fp32_ms']:.3f} | "
                         f"{r['cpu_ms'] / r['accel_fp32_ms']:.1f}x | {r['tf32']['max_abs_over_scale']:.1e} | "
                         f"{r['fp32']['max_abs_over_scale']:.1e} |")
    lines += ["", "| model | fp16 diff | fp16 ms (batch 64) | fp32 ms |", "|---|---:|---:|---:|"]
    for name, r in report["float16"].items():
        lines.append(f"| {name} | {r['parity']['max_abs_over_scale']:.1e} | {r['fp16_ms']:.3f} | {r['fp32_ms']:.3f} |")
    lines += ["", "| served model | device | REST req/s | REST p99 ms | gRPC req/s | gRPC p99 ms | in-process runs/s |",
              "|---|---|---:|---:|---:|---:|---:|"]
    served_rows = [(report["environment"]["accelerator"], report["serve"].get("throughput", {})),
                   (CPU, report.get("serve_cpu", {}))]
    for name in THROUGHPUT_MODELS:
        for device, rows in served_rows:
            if name in rows:
                r = rows[name]
                lines.append(f"| {name} | {device.replace('ExecutionProvider', '')} | {r['rest']['rps']:.0f} | "
                             f"{r['rest']['p99_ms']:.2f} | {r['grpc']['rps']:.0f} | {r['grpc']['p99_ms']:.2f} | "
                             f"{r['in_process_runs_per_s']:.0f} |")
    search = report.get("conv_algo_search", {})
    if "skipped" not in search:
        lines += ["", "| cudnn_conv_algo_search | CNN first runs at new batch sizes (ms) | steady batch 64 ms |",
                  "|---|---|---:|"]
        for setting, r in search.items():
            lines.append(f"| {setting} | {', '.join(f'{t:.1f}' for t in r['first_run_ms_at_new_batch'])} | "
                         f"{r['steady_batch64_ms']:.3f} |")
    lines += ["", f"All checks passed: {report['passed']}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu_check_out"), help="report folder (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=100, help="timed runs per point (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per served point")
    parser.add_argument("--quick", action="store_true", help="smaller sequence models, 10 runs, 1 s of load")
    parser.add_argument("--cpu-stand-in", action="store_true", help="run on a machine without CUDA, CPU in its place")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.duration = min(args.runs, 10), min(args.duration, 1.0)
    accel = CPU if args.cpu_stand_in else CUDA
    if accel == CUDA and CUDA not in ort.get_available_providers():
        print(f"gpu_check: onnxruntime {ort.__version__} offers {ort.get_available_providers()}, no "
              f"{CUDA}; install onnxruntime-gpu, or pass --cpu-stand-in to check the script itself", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"environment": environment(accel), "tolerances": TOLERANCES, "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print("building and exporting models", flush=True)
        models = build_models(args.quick)
        protos = export_models(models, work / "repo")
        stages = [
            ("in_process", "in-process parity and latency", lambda: in_process(protos, models, accel, args.runs)),
            ("conv_algo_search", "cudnn_conv_algo_search", lambda: conv_search(protos["cnn"], models, accel)),
            ("float16", "float16", lambda: float16(protos, models, accel, args.runs)),
            ("serve", "served", lambda: served(work / "repo", protos, models, accel, args.duration, work)),
            ("serve_cpu", "served with --device cpu", lambda: served_cpu(models, args.duration, work)),
        ]
        for key, title, stage in stages:
            # A failing stage is reported and the others still run: one GPU session has to tell everything.
            print(title, flush=True)
            try:
                report[key] = stage()
            except Exception:  # noqa: BLE001
                report[key] = {"error": traceback.format_exc()}
                print(report[key]["error"], flush=True)
            (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    report["passed"] = checks_passed(report)
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    try:
        text = table(report)
    except (KeyError, TypeError):
        text = "(a stage failed; see gpu_check.json)"
    (args.out / "gpu_check.md").write_text(text + "\n")
    print(text)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
