"""The ``switch`` fixture of the compiled-kernel tests: KGRAPH_COMPILED_KERNELS on or off, calls counted."""
import pytest

from kgraph.ops.kernels import compiled


class _Counting:
    """The compiled kernels, counting calls by kernel name (so a test knows the compiled path ran)."""

    def __init__(self, module):
        self.module = module
        self.calls = {}

    def __getattr__(self, name):
        kernel = getattr(self.module, name)

        def counted(*args):
            self.calls[name] = self.calls.get(name, 0) + 1
            return kernel(*args)
        return counted


@pytest.fixture
def switch(monkeypatch):
    """``switch(on)`` sets KGRAPH_COMPILED_KERNELS for the rest of the test; ``switch.calls`` counts the compiled
    kernels' calls by name."""
    original = compiled.kernels
    module = original()
    assert module is not None
    counting = _Counting(module)

    def kernels(work=None):
        return counting if original(work) is not None else None
    monkeypatch.setattr(compiled, "kernels", kernels)
    original_loaded = compiled.loaded
    monkeypatch.setattr(compiled, "loaded", lambda: counting if original_loaded() is not None else None)

    def set_to(on):
        monkeypatch.setenv(compiled.VARIABLE, "1" if on else "0")
    set_to.calls = counting.calls
    return set_to
