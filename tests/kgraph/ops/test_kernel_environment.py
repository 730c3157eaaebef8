"""kernels.environment.read: the same answers as os.environ.get, as the environment changes."""
import os

import pytest

from kgraph.ops.kernels import compiled, environment, threads

NAME = "KGRAPH_TEST_ENVIRONMENT_READ"


def test_read_follows_setenv_and_delenv(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    assert environment.read(NAME) is None
    monkeypatch.setenv(NAME, "a value é")
    assert environment.read(NAME) == os.environ.get(NAME) == "a value é"
    os.environ[NAME] = ""
    assert environment.read(NAME) == ""
    del os.environ[NAME]
    assert environment.read(NAME) is None
    assert environment.read("PATH") == os.environ.get("PATH")


def test_read_uses_a_replaced_environ(monkeypatch):
    monkeypatch.setattr(os, "environ", {NAME: "replaced"})
    assert environment.read(NAME) == "replaced"
    assert environment.read(NAME + "_UNSET") is None


def test_the_kernel_switches_still_follow_the_environment(monkeypatch):
    monkeypatch.setenv(compiled.VARIABLE, "0")
    assert compiled.kernels() is None
    monkeypatch.setenv(compiled.VARIABLE, "bad")
    with pytest.raises(ValueError, match="KGRAPH_COMPILED_KERNELS='bad'"):
        compiled.kernels()
    monkeypatch.setenv(threads.THREADS_VARIABLE, "3")
    assert threads.cores() == 3
    monkeypatch.setenv(threads.THREADS_VARIABLE, "0")
    with pytest.raises(ValueError, match="KGRAPH_KERNEL_THREADS='0'"):
        threads.cores()
