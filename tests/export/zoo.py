"""The export model zoo: named model builders, collected from every ``tests/export/zoo_*.py`` module.

A zoo module registers builders without editing this file::

    from tests.export.zoo import register_zoo_model, train_briefly

    @register_zoo_model("my_cnn")
    def my_cnn():
        x = kgraph.Input(shape=(8, 8, 3), name="image")
        ...
        return train_briefly(kgraph.Model(x, y))

Options: ``rtol``/``atol`` (parity tolerance for this model), ``sampler``
(input sampler, see ``export.verify.make_inputs``), ``benchmark=False`` to
keep a model out of ``benchmarks/export_quality.py``, ``min_opset`` (the
lowest opset the model exports at; below it, export must fail with an
ExportError saying "needs opset >= N").
"""
import dataclasses
import functools
import importlib
import pkgutil
import zlib

import numpy as np

_ZOO = {}
_LOADED = [False]


@dataclasses.dataclass(frozen=True)
class ZooEntry:
    """A registered zoo model: how to build it and how to check it."""

    name: str
    build: object
    rtol: float = 1e-5
    atol: float = 1e-5
    sampler: object = None
    benchmark: bool = True
    min_opset: int = 13


def register_zoo_model(name, *, rtol=1e-5, atol=1e-5, sampler=None, benchmark=True, min_opset=13):
    """Decorator registering ``build() -> model`` under ``name`` (names are unique across modules)."""
    def register(build):
        if name in _ZOO:
            raise ValueError(f"Zoo model '{name}' is registered twice ({_ZOO[name].build.__module__} and "
                             f"{build.__module__}); expected unique names.")
        _ZOO[name] = ZooEntry(name, build, rtol, atol, sampler, benchmark, min_opset)
        return build
    return register


def load_all():
    """Import every ``tests/export/zoo_*.py`` module so that their models register."""
    if not _LOADED[0]:
        package = importlib.import_module("tests.export")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            if info.name.startswith("zoo_"):
                importlib.import_module(f"tests.export.{info.name}")
        _LOADED[0] = True
    return dict(_ZOO)


def names():
    """Every zoo model name, sorted."""
    return sorted(load_all())


def entry(name):
    """The ZooEntry registered as ``name``."""
    return load_all()[name]


def build(name):
    """Build zoo model ``name`` (trained a few steps), its initial weights drawn from a seed of its own (the
    name's CRC-32), so that a model is the same whichever tests ran before it in the process."""
    import kgraph
    kgraph.utils.set_random_seed(zlib.crc32(name.encode()))
    return entry(name).build()


@functools.lru_cache(maxsize=None)
def shared(name):
    """Zoo model ``name`` built once per session, for tests that only read it."""
    return build(name)


def random_data(model, n, seed):
    """Random ``(x, y)`` for ``fit``: x by input (a dict by input name for dict models), y a list per output."""
    from export.exporter import functional_of
    from export.verify import default_sampler
    functional = functional_of(model)
    rng = np.random.default_rng(seed)
    sample = default_sampler(model)
    arrays = [sample(name, (n,) + tuple(5 if d is None else d for d in t.shape[1:]), t.dtype, rng)
              for t, name in zip(functional.inputs, functional.input_names)]
    if isinstance(functional._inputs_struct, dict):
        x = dict(zip(functional.input_names, arrays))
    else:
        x = arrays[0] if len(arrays) == 1 else arrays
    ys = [rng.standard_normal((n,) + tuple(5 if d is None else d for d in t.shape[1:])).astype(t.dtype)
          for t in functional.outputs]
    return x, ys


def perturb(model, seed=0, scale=0.1):
    """Add seeded noise to every weight (so zero-initialized biases are exercised too)."""
    rng = np.random.default_rng(seed)
    model.set_weights([w + (scale * rng.standard_normal(w.shape)).astype(w.dtype) for w in model.get_weights()])
    return model


def train_briefly(model, steps=3, batch_size=8, seed=0):
    """Perturb the weights, then train ``steps`` Adam steps on random data (MSE); return the model."""
    perturb(model, seed)
    x, y = random_data(model, steps * batch_size, seed)
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, epochs=1, batch_size=batch_size, verbose=0, shuffle=False)
    return model


__all__ = ["ZooEntry", "build", "entry", "load_all", "names", "perturb", "random_data",
           "register_zoo_model", "shared", "train_briefly"]
