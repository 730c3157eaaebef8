"""``kgraph.utils``'s Config, dtype names, symbolic-tensor helpers, batch packing, legacy serialization,
``split_dataset`` and ``timeseries_dataset_from_array`` against Keras 3's."""
import json
import pickle

import numpy as np
import pytest

import kgraph
from kgraph import utils

keras = pytest.importorskip("keras")


def test_config_behaves_as_keras_s():
    ours, theirs = utils.Config(lr=0.1, name="run"), keras.utils.Config(lr=0.1, name="run")
    for config in (ours, theirs):
        config.epochs = 3
        config["batch"] = 8
        config.update({"seed": 1})
    assert ours.as_dict() == theirs.as_dict() and json.loads(ours.to_json()) == json.loads(theirs.to_json())
    assert list(ours) == list(theirs) and len(ours) == len(theirs) and ("lr" in ours) == ("lr" in theirs)
    assert ours.lr == theirs.lr == ours["lr"] and ours.get("nope", 5) == theirs.get("nope", 5) == 5
    assert repr(ours) == repr(theirs)
    for config in (ours, theirs):
        with pytest.raises(AttributeError, match="Did you mean 'epochs'"):
            config.epoch
        config.freeze()
        assert config.frozen
        for mutate in (lambda c: setattr(c, "lr", 1), lambda c: c.__setitem__("lr", 1), lambda c: c.pop("lr"),
                       lambda c: c.update(lr=2), lambda c: c.__delitem__("lr")):
            with pytest.raises(ValueError, match="frozen"):
                mutate(config)
        config.unfreeze()
        assert config.pop("seed") == 1 and not config.frozen
    again = pickle.loads(pickle.dumps(ours))
    assert again.as_dict() == ours.as_dict()


@pytest.mark.parametrize("dtype", [None, "float32", "float16", np.float64, np.dtype("int8"), "uint16", int, float,
                                   bool, str, complex, "int", "string", "bfloat16", "bool", np.int64])
def test_standardize_dtype_names_as_keras(dtype):
    assert utils.standardize_dtype(dtype) == keras.utils.standardize_dtype(dtype)


def test_standardize_dtype_torch_dtypes_and_errors():
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.int64, torch.bool):
        assert utils.standardize_dtype(dtype) == keras.utils.standardize_dtype(dtype)
    for bad in ("str", "foo", object, "float"):
        with pytest.raises(ValueError, match="Invalid dtype"):
            utils.standardize_dtype(bad)
        with pytest.raises(ValueError):
            keras.utils.standardize_dtype(bad)


def test_is_keras_tensor_and_get_source_inputs():
    a, b = kgraph.Input((2,)), kgraph.Input((2,))
    hidden = kgraph.layers.Dense(2)(b)
    out = kgraph.layers.Add()([kgraph.layers.Dense(2)(a), kgraph.layers.Multiply()([hidden, a])])
    assert utils.is_keras_tensor(out) and not utils.is_keras_tensor(np.ones(2))
    sources = utils.get_source_inputs(out)
    assert len(sources) == 2 and sources[0] is a and sources[1] is b
    assert utils.get_source_inputs(a)[0] is a
    assert utils.get_source_inputs(np.ones(2)).shape == (2,)  # no history: returned as it is
    ka, kb = keras.Input((2,)), keras.Input((2,))
    kout = keras.layers.Add()([keras.layers.Dense(2)(ka), keras.layers.Multiply()([keras.layers.Dense(2)(kb), ka])])
    assert [t is s for t, s in zip(keras.utils.get_source_inputs(kout), (ka, kb))] == [True, True]


@pytest.mark.parametrize("data", [np.ones(3), (np.ones(3),), [np.ones(3), np.zeros(3)], (1, 2, 3), {"a": 1}])
def test_unpack_and_pack_x_y_sample_weight_as_keras(data):
    ours, theirs = utils.unpack_x_y_sample_weight(data), keras.utils.unpack_x_y_sample_weight(data)
    assert len(ours) == len(theirs) == 3
    assert all(o is t for o, t in zip(ours, theirs))
    for args in ((np.ones(2),), ([np.ones(2)],), (1, 2), (1, 2, 3), (1, None, 3)):
        packed, keras_packed = utils.pack_x_y_sample_weight(*args), keras.utils.pack_x_y_sample_weight(*args)
        assert type(packed) is type(keras_packed)
    with pytest.raises(ValueError):
        utils.unpack_x_y_sample_weight((1, 2, 3, 4))


def test_legacy_serialization_matches_keras_format():
    ours = utils.legacy.serialize_keras_object(kgraph.layers.Dense(2, kernel_regularizer=kgraph.regularizers.L2(0.1),
                                                                   name="d"))
    theirs = keras.utils.legacy.serialize_keras_object(
        keras.layers.Dense(2, kernel_regularizer=keras.regularizers.L2(0.1), name="d"))
    assert ours["class_name"] == theirs["class_name"] == "Dense"
    ours_l2, theirs_l2 = ours["config"]["kernel_regularizer"], theirs["config"]["kernel_regularizer"]
    assert (ours_l2["class_name"], ours_l2["config"]) == (theirs_l2["class_name"], theirs_l2["config"])
    assert ours["config"]["units"] == theirs["config"]["units"] and set(ours) == set(theirs)
    assert utils.legacy.serialize_keras_object(kgraph.activations.relu) == "relu"
    assert keras.utils.legacy.serialize_keras_object(keras.activations.relu) == "relu"
    with pytest.raises(ValueError, match="Unknown object: 'Dense'"):
        utils.legacy.deserialize_keras_object(ours)
    layer = utils.legacy.deserialize_keras_object(ours, module_objects={"Dense": kgraph.layers.Dense})
    assert isinstance(layer, kgraph.layers.Dense) and layer.units == 2 and layer.name == "d"
    assert isinstance(layer.kernel_regularizer, kgraph.regularizers.L2)
    # Keras's own file of the Keras 2 format reads back in kgraph.
    from_keras = utils.legacy.deserialize_keras_object(theirs, module_objects=vars(kgraph.layers))
    assert from_keras.kernel_regularizer.get_config() == theirs_l2["config"] and from_keras.units == 2
    assert utils.legacy.deserialize_keras_object("relu", module_objects=vars(kgraph.activations)) is \
        kgraph.activations.relu
    with pytest.raises(ValueError, match="Could not interpret"):
        utils.legacy.deserialize_keras_object(3)


class _Tagged(kgraph.regularizers.Regularizer):
    def __init__(self, inner=None):
        self.inner = inner

    def __call__(self, x):
        return 0.0

    def get_config(self):
        return {"inner": self.inner}


def test_legacy_passive_serialization_round_trip():
    config = utils.legacy.serialize_keras_object(_Tagged(kgraph.regularizers.L1(0.5)))
    assert config["config"]["inner"] == {"class_name": "L1", "config": {"l1": 0.5}, "__passive_serialization__": True}
    objects = {"_Tagged": _Tagged, "L1": kgraph.regularizers.L1}
    back = utils.legacy.deserialize_keras_object(config, custom_objects=objects)
    assert isinstance(back.inner, kgraph.regularizers.L1) and back.inner.l1 == 0.5


@pytest.mark.parametrize("sizes, expected", [(dict(left_size=0.8), (8, 2)), (dict(right_size=3), (7, 3)),
                                             (dict(left_size=2, right_size=5), (2, 5)),
                                             (dict(left_size=0.25, right_size=0.5), (2, 5)),
                                             (dict(left_size=7), (7, 3))])
def test_split_dataset_sizes_as_keras(sizes, expected):
    data = np.arange(10)
    left, right = utils.split_dataset(data, **sizes)
    assert (len(left), len(right)) == expected
    if sum(expected) == len(data):  # Keras's torch path needs the two parts to cover the data
        keras_left, keras_right = keras.utils.split_dataset(data, **sizes)
        assert (len(left), len(right)) == (len(keras_left), len(keras_right))
    np.testing.assert_array_equal(left, data[:len(left)])  # without shuffle the order is kept
    np.testing.assert_array_equal(right, data[len(left):len(left) + len(right)])


@pytest.mark.parametrize("sizes", [dict(), dict(left_size=0), dict(left_size=1.5), dict(right_size=10),
                                   dict(left_size=0.6, right_size=0.6), dict(left_size=6, right_size=6),
                                   dict(left_size="3"), dict(left_size=0.01)])
def test_split_dataset_errors_as_keras(sizes):
    with pytest.raises((ValueError, TypeError)) as ours:
        utils.split_dataset(np.arange(10), **sizes)
    with pytest.raises((ValueError, TypeError)) as theirs:
        keras.utils.split_dataset(np.arange(10), **sizes)
    assert type(ours.value) is type(theirs.value)


def test_split_dataset_structures_shuffle_and_torch_datasets():
    x, y = np.arange(20).reshape(10, 2), np.arange(10) * 3
    (lx, ly), (rx, ry) = utils.split_dataset((x, y), left_size=0.7, shuffle=True, seed=3)
    assert lx.shape == (7, 2) and rx.shape == (3, 2)
    np.testing.assert_array_equal(lx[:, 0] // 2 * 3, ly)  # the rows stay paired
    assert sorted(np.concatenate([ly, ry]).tolist()) == y.tolist()
    again = utils.split_dataset((x, y), left_size=0.7, shuffle=True, seed=3)
    np.testing.assert_array_equal(again[0][1], ly)
    left, right = utils.split_dataset({"a": x, "b": y}, right_size=2)
    assert set(left) == {"a", "b"} and left["a"].shape == (8, 2) and right["b"].tolist() == [24, 27]
    with pytest.raises(ValueError, match="same length"):
        utils.split_dataset((x, y[:5]), left_size=2)
    with pytest.raises(TypeError, match="must be an array"):
        utils.split_dataset(iter(range(10)), left_size=2)
    with pytest.raises(TypeError):
        keras.utils.split_dataset(iter(range(10)), left_size=2)
    torch = pytest.importorskip("torch")
    dataset = torch.utils.data.TensorDataset(torch.arange(10))
    left, right = utils.split_dataset(dataset, left_size=4)
    assert isinstance(left, torch.utils.data.Subset) and (len(left), len(right)) == (4, 6)
    assert [int(left[i][0]) for i in range(4)] == [0, 1, 2, 3]


def _keras_windows(data, targets, length, stride, rate, start, end):
    """The windows and targets Keras documents: start positions ``range(0, n, stride)`` within
    ``data[start:end]``, each window taking ``length`` steps ``rate`` apart, its target at the start."""
    start, end = start or 0, end or len(data)
    count = end - start - (length - 1) * rate
    if targets is not None:
        count = min(count, len(targets[start:end]))
    windows = [data[start + s:start + s + length * rate:rate] for s in range(0, max(count, 0), stride)]
    labels = None if targets is None else [targets[start + s] for s in range(0, max(count, 0), stride)]
    return np.array(windows), labels


@pytest.mark.parametrize("args", [dict(sequence_length=5), dict(sequence_length=3, sequence_stride=4),
                                  dict(sequence_length=4, sampling_rate=3, batch_size=4),
                                  dict(sequence_length=2, start_index=10, end_index=40, batch_size=7),
                                  dict(sequence_length=6, sampling_rate=2, sequence_stride=3, start_index=5)])
def test_timeseries_windows_targets_and_batches(args):
    data = np.arange(100 * 2).reshape(100, 2).astype("float32")
    targets = np.arange(100) * 10
    dataset = utils.timeseries_dataset_from_array(data, targets, **args)
    windows, labels = _keras_windows(data, targets, args["sequence_length"], args.get("sequence_stride", 1),
                                     args.get("sampling_rate", 1), args.get("start_index"), args.get("end_index"))
    batch_size = args.get("batch_size", 128)
    assert isinstance(dataset, utils.PyDataset) and len(dataset) == -(-len(windows) // batch_size)
    got = list(dataset)
    np.testing.assert_array_equal(np.concatenate([w for w, _ in got]), windows)
    np.testing.assert_array_equal(np.concatenate([t for _, t in got]), labels)
    assert all(len(w) == batch_size for w, _ in got[:-1]) and got[0][0].dtype == np.float32


def test_timeseries_keras_docstring_examples():
    # Keras's documented example: data [0..99], sequence_length=10, sampling_rate=2, targets data[10:].
    data = np.arange(100)
    dataset = utils.timeseries_dataset_from_array(data[:-10], data[10:], sequence_length=10, sampling_rate=2,
                                                  batch_size=100)
    windows, targets = dataset[0]
    assert windows[0].tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18] and targets[0] == 10
    assert windows[1].tolist() == [1, 3, 5, 7, 9, 11, 13, 15, 17, 19] and targets[1] == 11
    # Without targets, and unbatched; predicting the next step (sequence of 10, target the 11th).
    single = utils.timeseries_dataset_from_array(data, None, sequence_length=10, batch_size=None)
    assert len(single) == 91 and single[5].tolist() == list(range(5, 15))
    nxt = utils.timeseries_dataset_from_array(data[:-10], data[10:], sequence_length=10)
    inputs, labels = nxt[0]
    assert inputs[0].tolist() == list(range(10)) and labels[0] == 10


def test_timeseries_shuffle_seed_and_training():
    data = np.random.default_rng(0).normal(size=(60, 3)).astype("float32")
    targets = data[:, 0]
    plain = np.concatenate([w for w, _ in utils.timeseries_dataset_from_array(data, targets, 4, batch_size=8)])
    shuffled = utils.timeseries_dataset_from_array(data, targets, 4, batch_size=8, shuffle=True, seed=5)
    starts = np.arange(57)
    np.random.RandomState(5).shuffle(starts)  # Keras's first shuffle of the start positions
    np.testing.assert_array_equal(np.concatenate([w for w, _ in shuffled]), plain[starts])
    model = kgraph.Sequential([kgraph.Input((4, 3)), kgraph.layers.Flatten(), kgraph.layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(shuffled, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
    with pytest.raises(ValueError, match="sampling_rate"):
        utils.timeseries_dataset_from_array(data, None, 4, sampling_rate=0)
    with pytest.raises(ValueError, match="start_index"):
        utils.timeseries_dataset_from_array(data, None, 4, start_index=100)
    with pytest.raises(ValueError, match="end_index"):
        utils.timeseries_dataset_from_array(data, None, 4, start_index=10, end_index=5)
    with pytest.raises(ValueError, match="format"):
        utils.timeseries_dataset_from_array(data, None, 4, format="numpy")
    with pytest.raises(IndexError):
        utils.timeseries_dataset_from_array(data, None, 4)[1]


def test_keras_refuses_the_tf_data_functions_without_tensorflow_as_kgraph_does():
    pytest.importorskip("keras")
    try:
        import tensorflow  # noqa: F401
        pytest.skip("TensorFlow is installed: Keras builds tf.data datasets here")
    except ImportError:
        pass
    for name in ("timeseries_dataset_from_array",):
        with pytest.raises(ImportError):
            getattr(keras.utils, name)(np.arange(10), None, 3)
    with pytest.raises(ImportError, match="TensorFlow"):
        utils.image_dataset_from_directory(".")
