"""benchmarks/gpu_check.py, the prepared CUDA check, runs end to end with the CPU standing in for CUDA."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.serve.harness import ON_CUDA, ROOT

SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def test_stand_in_run_checks_every_stage(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--cpu-stand-in", "--out", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["passed"] is True
    assert set(report["in_process"]) == {"mlp", "cnn", "lstm", "gru", "attention", "masked"}
    assert all(set(rows) == {"1", "64"} for rows in report["in_process"].values())
    assert set(report["float16"]) == set(report["in_process"])
    served = report["serve"]
    assert served["exit_status"] == 0 and served["device_flag"] == "cpu"
    assert served["models"]["mlp_cpu"]["config_instance_group"] == [{"kind": "KIND_CPU", "count": 1}]
    assert all(entry["ok"] for entry in served["models"].values())
    assert set(report["serve_cpu"]) == {"mlp", "cnn", "attention"}
    assert all(r["rest"]["errors"] == 0 and r["rest"]["requests"] > 0 for r in report["serve_cpu"].values())
    table = (tmp_path / "gpu_check.md").read_text()
    assert "| cnn | 64 |" in table and "All checks passed: True" in table


@pytest.mark.skipif(ON_CUDA, reason="CUDA is available here")
def test_without_cuda_it_says_what_is_missing(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert "no CUDAExecutionProvider; install onnxruntime-gpu, or pass --cpu-stand-in" in result.stderr
