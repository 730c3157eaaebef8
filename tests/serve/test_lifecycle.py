"""Process lifecycle: readiness, graceful SIGTERM drain during a burst, and startup errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx
import numpy as np
import onnxruntime as ort
import pytest

from tests.serve.harness import DEFAULT_PROVIDER, ROOT, ServeProcess


def _body(x: np.ndarray) -> bytes:
    return json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]}).encode()


async def _burst_until_refused(url: str, server: ServeProcess, senders: int) -> tuple[list[int], int]:
    """Keep `senders` clients posting; SIGTERM the server once requests are queued. Returns statuses and transport errors."""
    statuses: list[int] = []
    refused = 0
    stop = asyncio.Event()
    body = _body(np.ones((1, 16), np.float32))

    async def sender() -> None:
        nonlocal refused
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            while not stop.is_set():
                try:
                    response = await client.post("/v2/models/classifier/infer", content=body)
                except httpx.TransportError:
                    refused += 1
                    await asyncio.sleep(0.01)
                    continue
                statuses.append(response.status_code)

    async def terminator() -> None:
        while len(statuses) < 2 * senders:
            await asyncio.sleep(0.005)
        server.terminate()
        while server.process.poll() is None:
            await asyncio.sleep(0.02)
        stop.set()

    await asyncio.gather(terminator(), *(sender() for _ in range(senders)))
    return statuses, refused


def test_sigterm_during_burst_loses_no_accepted_request(mlp_file):
    # Long queue delay: at SIGTERM time most requests sit in a forming batch.
    server = ServeProcess(mlp_file, "--max-queue-delay-us", "100000", "--max-batch-size", "64").wait_ready()
    try:
        statuses, refused = asyncio.run(_burst_until_refused(server.url, server, senders=16))
        assert server.process.wait(timeout=30) == 0, server.log()
    finally:
        server.stop()
    assert statuses, "no request was answered"
    assert set(statuses) == {200}, statuses
    assert "shut down cleanly" in server.log()


def test_ready_and_live_while_serving(start_server, mlp_file):
    server = start_server(mlp_file)
    assert httpx.get(server.url + "/v2/health/live").json() == {"live": True}
    assert httpx.get(server.url + "/v2/health/ready").json() == {"ready": True}
    assert httpx.get(server.url + "/v2/models/classifier/ready").status_code == 200
    assert f"ready on {DEFAULT_PROVIDER}" in server.log()
    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < 15


@pytest.mark.skipif("CUDAExecutionProvider" in ort.get_available_providers(), reason="CUDA is available here")
def test_device_cuda_without_cuda_is_a_startup_error(mlp_file):
    result = subprocess.run(
        [sys.executable, "-m", "serve", str(mlp_file), "--device", "cuda"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "--device cuda needs onnxruntime's CUDAExecutionProvider" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["/no/such/model.onnx"], "does not exist"),
        (["{model}", "--max-batch-size", "-1"], "must be at least 0"),
        (["{model}", "--threads", "0"], "must be at least 1"),
        (["{model}", "--device", "tpu"], "unknown device 'tpu'"),
        (["{model}", "--device", "cuda:x"], "unknown device 'cuda:x'"),
        (["{model}", "--cuda-option", "gpu_mem_limit"], "--cuda-option expects KEY=VALUE"),
    ],
)
def test_bad_command_lines_exit_nonzero(mlp_file, args, message):
    argv = [a.format(model=mlp_file) for a in args]
    result = subprocess.run([sys.executable, "-m", "serve", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert message in result.stderr


def test_broken_model_fails_startup(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"this is not an onnx protobuf")
    server = ServeProcess(broken)
    assert server.process.wait(timeout=60) == 1
    assert "onnxruntime cannot load the model" in server.log()


def test_help_documents_batching_switch():
    result = subprocess.run([sys.executable, "-m", "serve", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "--no-batching" in result.stdout and "--max-batch-size" in result.stdout
