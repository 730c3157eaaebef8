"""Shared fixtures: test models on disk and a factory for real server processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.serve import models
from tests.serve.harness import ServeProcess


@pytest.fixture(scope="session")
def repository(tmp_path_factory) -> Path:
    """A Triton-style model repository holding every test model."""
    return models.build_repository(tmp_path_factory.mktemp("repository"))


@pytest.fixture(scope="session")
def mlp_file(tmp_path_factory) -> Path:
    """A single .onnx file, served as model 'classifier' version 1."""
    return models.mlp(tmp_path_factory.mktemp("single") / "classifier.onnx", sizes=(16, 32, 32, 5), seed=3)


@pytest.fixture(scope="module")
def start_server():
    """Start `python -m serve PATH FLAGS...` processes; every one still running is stopped at module end."""
    started: list[ServeProcess] = []

    def start(path: Path, *flags: str, wait: bool = True) -> ServeProcess:
        server = ServeProcess(path, *flags)
        started.append(server)
        return server.wait_ready() if wait else server

    yield start
    for server in started:
        server.stop()
