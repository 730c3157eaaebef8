"""Fuzzed model files: whatever is wrong with a file, ``load_model`` and the ``.keras`` reader raise a ValueError.

Each example starts from a valid file of a small compiled model (a kgraph pickle or a ``.keras`` archive) and
mutates it: bytes flipped, the file truncated, archive members swapped, dropped or changed inside (re-zipped, so
the change reaches the JSON and HDF5 readers instead of stopping at the archive's checksum), or one value of the
config replaced. A mutated file may still load; what it may not do is raise anything but a ValueError.
"""
import io
import json
import os
import tempfile
import zipfile

import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.saving import keras_archive

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("h5py")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
MEMBERS = ("config.json", "metadata.json", "model.weights.h5")


def _model():
    inputs = kgraph.Input(shape=(4,))
    hidden = layers.Dense(3, activation="relu")(inputs)
    outputs = layers.Dense(2)(layers.Dropout(0.1)(hidden))
    model = kgraph.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 4), np.float32), np.ones((4, 2), np.float32), epochs=1, verbose=0)
    return model


@pytest.fixture(scope="module")
def valid_files():
    model = _model()
    with tempfile.TemporaryDirectory() as folder:
        out = {}
        for suffix in ("pkl", "keras"):
            path = os.path.join(folder, f"model.{suffix}")
            model.save(path)
            with open(path, "rb") as f:
                out[suffix] = f.read()
    return out


def _load(data, suffix, reader=None):
    """Load ``data`` as a file; a ValueError is the one failure allowed."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"fuzzed.{suffix}")
        with open(path, "wb") as f:
            f.write(data)
        try:
            (reader or kgraph.load_model)(path)
        except ValueError:
            pass


def _flip(data, flips):
    out = bytearray(data)
    for position, value in flips:
        out[position % len(out)] ^= value
    return bytes(out)


def _members(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _zip(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buffer.getvalue()


FLIPS = st.lists(st.tuples(st.integers(0, 1 << 30), st.integers(1, 255)), min_size=1, max_size=8)


@SETTINGS
@given(suffix=st.sampled_from(["pkl", "keras"]), flips=FLIPS)
def test_flipped_bytes(valid_files, suffix, flips):
    _load(_flip(valid_files[suffix], flips), suffix)


@SETTINGS
@given(suffix=st.sampled_from(["pkl", "keras"]), fraction=st.floats(0, 1, exclude_max=True))
def test_truncated_files(valid_files, suffix, fraction):
    data = valid_files[suffix]
    _load(data[:int(len(data) * fraction)], suffix)


@SETTINGS
@given(member=st.sampled_from(MEMBERS), flips=FLIPS, cut=st.none() | st.floats(0, 1))
def test_archive_members_changed_inside(valid_files, member, flips, cut):
    members = _members(valid_files["keras"])
    payload = _flip(members[member], flips)
    members[member] = payload if cut is None else payload[:int(len(payload) * cut)]
    _load(_zip(members), "keras")


@SETTINGS
@given(order=st.permutations(MEMBERS), keep=st.lists(st.booleans(), min_size=3, max_size=3),
       reader=st.sampled_from(["load_model", "read_archive"]))
def test_archive_members_swapped_or_dropped(valid_files, order, keep, reader):
    members = _members(valid_files["keras"])
    swapped = {name: members[source] for name, source, kept in zip(MEMBERS, order, keep) if kept}
    _load(_zip(swapped), "keras", keras_archive.read_archive if reader == "read_archive" else None)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-(1 << 40), 1 << 40) | st.floats() | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                           max_leaves=6)


def _replace(config, index, value):
    """``config`` with its ``index``-th node (depth first, modulo their count) replaced by ``value``."""
    nodes = []

    def visit(node, setter):
        nodes.append(setter)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in list(items):
            visit(child, lambda v, node=node, key=key: node.__setitem__(key, v))
    root = {"config": config}
    visit(config, lambda v: root.__setitem__("config", v))
    nodes[index % len(nodes)](value)
    return root["config"]


@SETTINGS
@given(index=st.integers(0, 1 << 20), value=JSON_VALUES, suffix=st.sampled_from(["pkl", "keras"]))
def test_one_config_value_replaced(valid_files, index, value, suffix):
    if suffix == "keras":
        members = _members(valid_files["keras"])
        members["config.json"] = json.dumps(_replace(json.loads(members["config.json"]), index, value))
        _load(_zip(members), "keras")
        return
    import pickle
    payload = pickle.loads(valid_files["pkl"])
    payload["model"] = _replace(payload["model"], index, value)
    _load(pickle.dumps(payload), "pkl")
