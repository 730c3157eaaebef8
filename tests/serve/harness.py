"""Starting real `python -m serve` processes for tests, and in-process reference outputs."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[2]
# The provider a server started with its default --device auto runs models on: CUDA where this
# onnxruntime has it (the suite also runs on GPU machines), else the CPU.
ON_CUDA = "CUDAExecutionProvider" in ort.get_available_providers()
DEFAULT_PROVIDER = "CUDAExecutionProvider" if ON_CUDA else "CPUExecutionProvider"
# onnxruntime's CUDA kernels do not check values the CPU provider refuses: an out-of-range Gather
# index, a convolution window larger than its input. There a request may get unspecified values, not 400.
VALUES_CHECKED = not ON_CUDA


def free_port() -> int:
    """An unused loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServeProcess:
    """A `python -m serve PATH ...` child process on free loopback ports (REST and gRPC)."""

    def __init__(self, path: Path, *flags: str) -> None:
        self.port = free_port()
        self.grpc_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.address = f"127.0.0.1:{self.port}"
        self.grpc_address = f"127.0.0.1:{self.grpc_port}"
        self._log = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False)
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "serve", str(path), "--port", str(self.port), "--grpc-port", str(self.grpc_port), *flags],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        """Everything the server printed so far."""
        return Path(self._log.name).read_text(errors="replace")

    def wait_ready(self, timeout: float = 60.0) -> ServeProcess:
        """Block until GET /v2/health/ready answers 200; fail with the server log if it exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with status {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + "/v2/health/ready", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server not ready after {timeout} s:\n{self.log()}")

    def terminate(self) -> None:
        """Send SIGTERM."""
        self.process.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM the server and return its exit status."""
        if self.process.poll() is None:
            self.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode


@functools.lru_cache(maxsize=None)
def _session(model_path: str) -> ort.InferenceSession:
    return ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])


def reference(model_path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs of an ONNX model computed in-process by onnxruntime, by output name."""
    session = _session(str(model_path))
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))
