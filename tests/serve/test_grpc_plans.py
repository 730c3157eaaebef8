"""gRPC ModelInfer answered without a task per call, and the validation plans of repeated raw-contents requests:
the checks of grpc_plans_check.py, each in a process of its own (see there why)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKS = [
    "split_raw_parts_a_request_as_protobuf_writes_it",
    "split_raw_leaves_other_layouts_to_the_full_parse",
    "responses_framed_from_kept_heads_equal_protobufs_own",
    "a_raw_layout_splits_requests_laid_out_alike_and_no_others",
    "repeated_requests_are_validated_once_and_answered_from_their_own_bytes",
    "a_planned_request_still_checks_bool_bytes",
    "a_malformed_message_is_invalid_argument_and_holds_nothing",
]


@pytest.mark.parametrize("check", CHECKS)
def test_grpc_plans(check, tmp_path):
    result = subprocess.run([sys.executable, "-m", "tests.serve.grpc_plans_check", check, str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
