"""kgraph.applications (VGG, ResNet, ResNetV2, MobileNet, MobileNetV2) against Keras 3's own builders.

Each architecture is built in both on a small input with ``weights=None``; layer classes, names of the layers with
weights, output shapes and parameter counts must agree, and with Keras's (randomized) weights copied over the
predictions must too. Keras's ImageNet files are Keras 2 HDF5 weight files: they are written here by Keras's own
legacy writer and read back by kgraph, from a path and through the ``weights="imagenet"`` cache.
"""
import importlib
import os

import numpy as np
import pytest

import kgraph
from kgraph import applications
from kgraph.applications import imagenet_utils
from kgraph.saving import legacy_h5_weights
from tests.kgraph.applications.names_a import NAMES

keras = pytest.importorskip("keras")

SHAPE = (32, 32, 3)
CASES = {  # id: (builder name, keyword arguments)
    "vgg16_top": ("VGG16", dict(include_top=True, classes=10)),
    "vgg19_avg": ("VGG19", dict(include_top=False, pooling="avg")),
    "resnet50_top": ("ResNet50", dict(include_top=True, classes=10)),
    "resnet50v2_max": ("ResNet50V2", dict(include_top=False, pooling="max")),
    "mobilenet_top": ("MobileNet", dict(include_top=True, classes=10, alpha=0.5)),
    "mobilenetv2_top": ("MobileNetV2", dict(include_top=True, classes=10, alpha=0.35)),
    "mobilenetv3small_top": ("MobileNetV3Small", dict(include_top=True, classes=10)),
    "mobilenetv3large_minimal": ("MobileNetV3Large", dict(include_top=False, pooling="avg", minimalistic=True)),
}
# Parameter counts of Keras 3.15.1's builds with input_shape=(32, 32, 3), classes=10 (too slow to build here).
KERAS_PARAMS = {"ResNet101": 42678666, "ResNet152": 58391434, "ResNet101V2": 42647050, "ResNet152V2": 58352138}
# keras.applications' names: dir() of Keras 3.15.1, submodules included.
KERAS_APPLICATIONS_NAMES = (
    "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtSmall", "ConvNeXtTiny", "ConvNeXtXLarge", "DenseNet121", "DenseNet169",
    "DenseNet201", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3", "EfficientNetB4",
    "EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2",
    "EfficientNetV2B3", "EfficientNetV2L", "EfficientNetV2M", "EfficientNetV2S", "InceptionResNetV2", "InceptionV3",
    "MobileNet", "MobileNetV2", "MobileNetV3Large", "MobileNetV3Small", "NASNetLarge", "NASNetMobile", "ResNet101",
    "ResNet101V2", "ResNet152", "ResNet152V2", "ResNet50", "ResNet50V2", "VGG16", "VGG19", "Xception", "convnext",
    "densenet", "efficientnet", "efficientnet_v2", "imagenet_utils", "inception_resnet_v2", "inception_v3",
    "mobilenet", "mobilenet_v2", "mobilenet_v3", "nasnet", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19",
    "xception")


def _randomize(model, seed=0):
    """Random weights for a Keras model: kernels small, batch-norm scales and variances around 1."""
    rng = np.random.default_rng(seed)
    values = []
    for w in model.weights:
        shape = tuple(w.shape)
        if "variance" in w.path or "gamma" in w.path:
            values.append(rng.uniform(0.5, 1.5, shape).astype("float32"))
        else:
            values.append(rng.standard_normal(shape, dtype=np.float32) * np.float32(0.1))
    model.set_weights(values)


def _build_pair(case):
    builder, kwargs = CASES[case]
    theirs = getattr(keras.applications, builder)(weights=None, input_shape=SHAPE, **kwargs)
    ours = getattr(applications, builder)(weights=None, input_shape=SHAPE, **kwargs)
    _randomize(theirs)
    return theirs, ours


@pytest.fixture(scope="module")
def pairs():
    return {case: _build_pair(case) for case in CASES}


def _close(ours, theirs):
    theirs = np.asarray(theirs)
    assert np.asarray(ours).shape == theirs.shape
    assert np.max(np.abs(np.asarray(ours) - theirs)) <= 1e-4 * max(np.max(np.abs(theirs)), 1e-6)


@pytest.mark.parametrize("case", list(CASES))
def test_structure_matches_keras(pairs, case):
    theirs, ours = pairs[case]
    assert ours.name == theirs.name
    assert [type(layer).__name__ for layer in ours.layers] == [type(layer).__name__ for layer in theirs.layers]
    named = [(layer.name, [tuple(w.shape) for w in layer.weights]) for layer in theirs.layers if layer.weights]
    assert [(layer.name, [tuple(w.shape) for w in layer.weights]) for layer in ours.layers if layer.weights] == named
    assert [tuple(layer.output.shape) for layer in ours.layers] == [tuple(layer.output.shape)
                                                                    for layer in theirs.layers]
    assert ours.count_params() == theirs.count_params()


@pytest.mark.parametrize("case", list(CASES))
def test_predictions_match_keras(pairs, case):
    theirs, ours = pairs[case]
    ours.set_weights(theirs.get_weights())
    x = np.random.default_rng(1).uniform(-1, 1, (1,) + SHAPE).astype("float32") * (127.5 if "v3" in case else 1)
    _close(ours.predict(x, verbose=0), keras.ops.convert_to_numpy(theirs(x, training=False)))


@pytest.mark.parametrize("builder", sorted(KERAS_PARAMS))
def test_deep_variants_build(builder):
    model = getattr(applications, builder)(weights=None, input_shape=SHAPE, classes=10)
    assert model.name == builder.lower()
    assert model.count_params() == KERAS_PARAMS[builder]
    assert tuple(model.output.shape) == (None, 10)


def _write_keras2_file(model, path, nested=False):
    """``model``'s weights in Keras 2's HDF5 layout (the ImageNet files'), by Keras's own legacy writer."""
    import h5py
    from keras.src.legacy.saving import legacy_h5_format
    with h5py.File(path, "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f.create_group("model_weights") if nested else f, model)


@pytest.mark.parametrize("nested", [False, True])
def test_keras2_weight_file_loads(pairs, tmp_path, nested):
    theirs, _ = pairs["mobilenet_top"]
    path = os.fspath(tmp_path / "weights.h5")
    _write_keras2_file(theirs, path, nested=nested)
    assert legacy_h5_weights.is_legacy_h5(path)
    ours = applications.MobileNet(weights=path, input_shape=SHAPE, classes=10, alpha=0.5)
    x = np.random.default_rng(2).uniform(-1, 1, (2,) + SHAPE).astype("float32")
    _close(ours.predict(x, verbose=0), keras.ops.convert_to_numpy(theirs(x, training=False)))


def test_keras2_weight_file_mismatch_is_refused(pairs, tmp_path):
    theirs, _ = pairs["resnet50v2_max"]
    path = os.fspath(tmp_path / "resnet.h5")
    _write_keras2_file(theirs, path)
    model = applications.MobileNet(weights=None, input_shape=SHAPE, classes=10, alpha=0.5)
    before = [np.copy(w) for w in model.get_weights()]
    with pytest.raises(ValueError, match="layer count mismatch"):
        legacy_h5_weights.load_legacy_weights(model, path)
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    keras3 = os.fspath(tmp_path / "model.weights.h5")
    model.save_weights(keras3)
    assert not legacy_h5_weights.is_legacy_h5(keras3)
    with pytest.raises(ValueError, match="not a Keras 2 HDF5 weights file"):
        legacy_h5_weights.load_legacy_weights(model, keras3)
    reloaded = applications.MobileNet(weights=keras3, input_shape=SHAPE, classes=10, alpha=0.5)
    assert all(np.array_equal(a, b) for a, b in zip(before, reloaded.get_weights()))


def test_imagenet_weights_come_from_the_keras_cache(tmp_path, monkeypatch):
    # MobileNet's files have no published hash, so a file already in KERAS_HOME/models is used as it is.
    theirs = keras.applications.MobileNet(weights=None, input_shape=(128, 128, 3), include_top=False, alpha=0.25)
    _randomize(theirs, seed=3)
    (tmp_path / "models").mkdir()
    _write_keras2_file(theirs, os.fspath(tmp_path / "models" / "mobilenet_2_5_128_tf_no_top.h5"))
    monkeypatch.setenv("KERAS_HOME", os.fspath(tmp_path))
    ours = applications.MobileNet(weights="imagenet", input_shape=(128, 128, 3), include_top=False, alpha=0.25)
    assert ours.name == "mobilenet_0.25_128"
    x = np.random.default_rng(4).uniform(-1, 1, (1, 128, 128, 3)).astype("float32")
    _close(ours.predict(x, verbose=0), keras.ops.convert_to_numpy(theirs(x, training=False)))


def test_argument_errors_match_keras():
    with pytest.raises(ValueError, match="The `weights` argument should be either"):
        applications.ResNet50(weights="no/such/file.h5")
    with pytest.raises(ValueError, match="`classes` should be 1000"):
        applications.VGG16(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="Input size must be at least 32x32"):
        applications.ResNet50(weights=None, include_top=False, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="you should specify a static `input_shape`"):
        applications.VGG16(weights=None, input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="`input_shape` should be"):
        applications.ResNet50(weights="imagenet", input_shape=(64, 64, 3))
    with pytest.raises(ValueError, match="The input must have 3 channels"):
        applications.MobileNetV2(weights="imagenet", include_top=False, input_shape=(64, 64, 1))
    with pytest.raises(ValueError, match="alpha can be one of"):
        applications.MobileNet(weights="imagenet", alpha=0.3, include_top=False)
    with pytest.raises(ValueError, match="depth multiplier must be 1"):
        applications.MobileNet(weights="imagenet", depth_multiplier=2, include_top=False)
    with pytest.raises(ValueError, match="alpha must be one of"):
        applications.MobileNetV2(weights="imagenet", alpha=0.6, include_top=False)
    with pytest.raises(ValueError, match="Only `None` and `softmax` activations"):
        applications.MobileNet(weights="imagenet", alpha=0.25, classifier_activation="relu")
    with pytest.raises(ValueError, match="input_tensor is not a Keras tensor"):
        applications.MobileNetV2(weights=None, input_tensor=np.zeros((1, 32, 32, 3)), input_shape=SHAPE)
    with pytest.raises(ValueError, match="alpha can be one of `0.75`, `1.0` for non minimalistic"):
        applications.MobileNetV3Small(weights="imagenet", alpha=0.5)
    with pytest.raises(ValueError, match="Input size must be at least 32x32"):
        applications.MobileNetV3Large(weights=None, input_shape=(31, 64, 3))
    with pytest.warns(UserWarning, match="usually expects 1 or 3 input channels"):
        applications.MobileNet(weights=None, include_top=False, input_shape=(32, 32, 4))


def test_defaults_and_input_tensor():
    model = applications.MobileNet(weights=None, alpha=0.25)
    assert model.name == "mobilenet_0.25_224" and tuple(model.input.shape) == (None, 224, 224, 3)
    assert tuple(model.output.shape) == (None, 1000)
    features = applications.ResNet50(weights=None, include_top=False)
    assert tuple(features.input.shape) == (None, None, None, 3) and tuple(features.output.shape)[-1] == 2048
    inputs = kgraph.Input((48, 48, 3))
    scaled = kgraph.layers.Rescaling(1 / 127.5, offset=-1)(inputs)
    model = applications.MobileNetV2(weights=None, input_tensor=scaled, include_top=False, pooling="avg")
    # As in Keras, the name's size comes from `input_shape`, which was left to its default: (None, None, 3).
    assert model.inputs[0] is inputs and model.name == "mobilenetv2_1.00_None"
    assert tuple(model.output.shape) == (None, 1280)


@pytest.mark.parametrize("mode", ["caffe", "tf", "torch"])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("shape", [(2, 5, 5, 3), (5, 5, 3)])
def test_preprocess_input_matches_keras(mode, data_format, shape):
    from keras.src.applications import imagenet_utils as keras_utils
    if data_format == "channels_first":
        shape = shape[:-3] + (3,) + shape[-3:-1]
    x = np.random.default_rng(5).uniform(0, 255, shape).astype("float32")
    expected = keras_utils.preprocess_input(np.copy(x), data_format=data_format, mode=mode)
    _close(imagenet_utils.preprocess_input(np.copy(x), data_format=data_format, mode=mode), expected)
    symbolic = kgraph.Input(shape[1:]) if len(shape) == 4 else None
    if symbolic is not None:
        model = kgraph.Model(symbolic, imagenet_utils.preprocess_input(symbolic, data_format=data_format, mode=mode))
        _close(model.predict(x, verbose=0), expected)


def test_module_preprocess_modes_match_keras():
    x = np.random.default_rng(6).integers(0, 256, (2, 4, 4, 3)).astype("uint8")
    for module in ("vgg16", "vgg19", "resnet", "resnet50", "resnet_v2", "mobilenet", "mobilenet_v2", "mobilenet_v3"):
        expected = getattr(keras.applications, module).preprocess_input(np.copy(x))
        ours = getattr(applications, module).preprocess_input(np.copy(x))
        assert ours.dtype == np.asarray(expected).dtype
        _close(ours, expected)
    with pytest.raises(ValueError, match="Expected mode to be one of"):
        imagenet_utils.preprocess_input(x, mode="bgr")
    with pytest.raises(ValueError, match="Expected data_format"):
        imagenet_utils.preprocess_input(x, data_format="nhwc")


def test_decode_predictions_matches_keras(monkeypatch):
    from keras.src.applications import imagenet_utils as keras_utils
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    monkeypatch.setattr(keras_utils, "CLASS_INDEX", index)
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX", index)
    preds = np.random.default_rng(7).uniform(0, 1, (3, 1000)).astype("float32")
    for module in ("vgg16", "resnet", "resnet_v2", "mobilenet", "mobilenet_v2", "mobilenet_v3", "imagenet_utils"):
        ours = getattr(applications, module).decode_predictions(preds, top=4)
        assert ours == getattr(keras.applications, module).decode_predictions(preds, top=4)
    with pytest.raises(ValueError, match=r"a 2D array of shape \(samples, 1000\)"):
        imagenet_utils.decode_predictions(preds[:, :10])


def test_names_and_submodules():
    for name in NAMES:
        assert name in KERAS_APPLICATIONS_NAMES and hasattr(applications, name), name
        ours = getattr(applications, name)
        if isinstance(ours, type(applications)):
            expected = {n for n in dir(getattr(keras.applications, name)) if not n.startswith("_")}
            assert expected <= set(dir(ours)), name
            assert importlib.import_module(f"kgraph.applications.{name}") is ours
    try:
        other = importlib.import_module("tests.kgraph.applications.names_b")
    except ModuleNotFoundError:
        pytest.skip("the other architectures' name list is not present")
    # Every name is provided by one group only, or listed (by the other group) with the reason it is not provided.
    unprovided = getattr(other, "UNPROVIDED", {})
    assert not set(NAMES) & (set(other.NAMES) | set(unprovided))
    assert all(isinstance(reason, str) and reason for reason in unprovided.values())
    missing = set(KERAS_APPLICATIONS_NAMES) - set(NAMES) - set(other.NAMES) - set(unprovided)
    assert not missing, f"keras.applications names neither provided nor listed with a reason: {sorted(missing)}"


def test_export_parity():
    from tests.export.parity import assert_parity
    model = applications.MobileNetV2(weights=None, input_shape=SHAPE, alpha=0.35, classes=10)
    rng = np.random.default_rng(8)
    model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype("float32") if "variance" in w.path
                       else rng.normal(0, 0.1, w.shape).astype("float32") for w in model.weights])
    assert_parity(model, rtol=1e-4, atol=1e-5)
