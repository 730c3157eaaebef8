"""KServe's own Python clients (REST and gRPC) and response model against the server, where kserve is installed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.serve.harness import ROOT, reference

pytestmark = pytest.mark.skipif(importlib.util.find_spec("kserve") is None, reason="kserve is not installed")


def test_kserve_clients_read_the_answers(start_server, mlp_file):
    server = start_server(mlp_file)
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "serve" / "kserve_check.py"), server.url, server.grpc_address, "classifier"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    want = reference(mlp_file, {"x": np.array(report["x"], np.float32)})["y"]
    results = report["results"]
    assert results["response model"] == ""
    for name, request_id in (("rest", "k-1"), ("grpc", "k-2")):
        assert results[name]["id"] == request_id
        # JSON carries float32 values as decimal text that round-trips exactly; gRPC sends raw bytes.
        np.testing.assert_allclose(np.array(results[name]["y"], np.float32), want, rtol=1e-6)
