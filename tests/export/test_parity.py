"""Every zoo model: exported, checked, and matching native predict at batch 1 and 3, optimizations on and off."""
import functools
import os

import pytest

from export import to_onnx
from export.verify import LEVELS, verify
from tests.export import zoo
from tests.export.parity import check_file


@functools.lru_cache(maxsize=None)
def _exported(name, tmp_root):
    model = zoo.shared(name)
    path = os.path.join(tmp_root, f"{name}.onnx")
    to_onnx(model, path)
    check_file(path)
    return model, path


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("zoo"))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", zoo.names())
def test_zoo_model_parity(name, level, tmp_root):
    entry = zoo.entry(name)
    model, path = _exported(name, tmp_root)
    lines = []
    report = verify(model, path, batches=(1, 3), sampler=entry.sampler, rtol=entry.rtol, atol=entry.atol,
                    print_fn=lines.append, levels=(level,))
    assert report.ok, "\n".join(lines)
