"""kgraph.applications (Xception, InceptionV3, InceptionResNetV2, DenseNet, EfficientNet, EfficientNetV2, ConvNeXt)
against Keras 3's builders.

Each architecture is built in both on a small input with ``weights=None``: layer classes and names, weight shapes,
output shapes and parameter counts must agree, and with Keras's (randomized) weights copied over, so must the
predictions, of the classifier and of the feature extractor. The deepest variants are checked by their build and
parameter counts (Keras 3.15.1's, recorded). The ImageNet path is followed with Keras 2 HDF5 files written by
Keras's own legacy writer, served from a stand-in download.
"""
import importlib
import os

import numpy as np
import pytest

import kgraph
from kgraph.applications import (
    convnext,
    densenet,
    efficientnet,
    efficientnet_v2,
    imagenet_utils,
    inception_resnet_v2,
    inception_v3,
    xception,
)
from tests.kgraph.applications.names_b import NAMES, UNPROVIDED

keras = pytest.importorskip("keras")

CASES = {  # builder: (module, input shape); Keras's smallest input for each
    "Xception": (xception, (71, 71, 3)),
    "InceptionV3": (inception_v3, (75, 75, 3)),
    "DenseNet121": (densenet, (32, 32, 3)),
    "EfficientNetB0": (efficientnet, (32, 32, 3)),
    "EfficientNetV2B0": (efficientnet_v2, (32, 32, 3)),
    "ConvNeXtTiny": (convnext, (32, 32, 3)),
}
# Keras 3.15.1's parameter counts (include_top=True, classes=1000; include_top=False), whatever the input size.
KERAS_PARAMS = {
    "Xception": (22910480, 20861480), "InceptionV3": (23851784, 21802784),
    "InceptionResNetV2": (55873736, 54336736),
    "DenseNet121": (8062504, 7037504), "DenseNet169": (14307880, 12642880), "DenseNet201": (20242984, 18321984),
    "EfficientNetB0": (5330571, 4049571), "EfficientNetB1": (7856239, 6575239),
    "EfficientNetB2": (9177569, 7768569), "EfficientNetB3": (12320535, 10783535),
    "EfficientNetB4": (19466823, 17673823), "EfficientNetB5": (30562527, 28513527),
    "EfficientNetB6": (43265143, 40960143), "EfficientNetB7": (66658687, 64097687),
    "EfficientNetV2B0": (7200312, 5919312), "EfficientNetV2B1": (8212124, 6931124),
    "EfficientNetV2B2": (10178374, 8769374), "EfficientNetV2B3": (14467622, 12930622),
    "EfficientNetV2S": (21612360, 20331360), "EfficientNetV2M": (54431388, 53150388),
    "EfficientNetV2L": (119027848, 117746848),
    "ConvNeXtTiny": (28589128, 27820128), "ConvNeXtSmall": (50223688, 49454688),
    "ConvNeXtBase": (88591464, 87566464),
}
MODULES = {"Xception": xception, "InceptionV3": inception_v3, "InceptionResNetV2": inception_resnet_v2,
           "DenseNet121": densenet, "DenseNet169": densenet, "DenseNet201": densenet,
           **{f"EfficientNetB{i}": efficientnet for i in range(8)},
           **{f"EfficientNetV2{v}": efficientnet_v2 for v in ("B0", "B1", "B2", "B3", "S", "M", "L")},
           **{f"ConvNeXt{v}": convnext for v in ("Tiny", "Small", "Base", "Large", "XLarge")}}


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


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Keras's torch ops on these small batches run on one thread: more only contend with kgraph's."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def pairs():
    built = {}
    for builder, (module, shape) in CASES.items():
        # Fresh name counters on both sides: auto-generated names (input_layer_3) then agree whatever ran before.
        keras.backend.clear_session()
        kgraph.backend.clear_session()
        theirs = getattr(keras.applications, builder)(weights=None, input_shape=shape, classes=10)
        _randomize(theirs)
        ours = getattr(module, builder)(weights=None, input_shape=shape, classes=10)
        built[builder] = theirs, ours
    return built


def _close(ours, theirs):
    theirs = keras.ops.convert_to_numpy(theirs) if not isinstance(theirs, np.ndarray) else theirs
    ours = np.asarray(ours)
    assert ours.shape == theirs.shape
    assert np.max(np.abs(ours - theirs)) <= 1e-4 * max(np.max(np.abs(theirs)), 1e-6)


def _layers(model, names=True):
    return [(type(layer).__name__, layer.name if names else None, [tuple(w.shape) for w in layer.weights],
             tuple(layer.output.shape)) for layer in model.layers]


def _images(shape, seed=1, batch=2):
    return np.random.default_rng(seed).uniform(0, 255, (batch,) + shape).astype("float32")


@pytest.mark.parametrize("builder", list(CASES))
def test_structure_and_predictions_match_keras(pairs, builder):
    theirs, ours = pairs[builder]
    assert ours.name == theirs.name
    assert _layers(ours) == _layers(theirs)
    assert ours.count_params() == theirs.count_params()
    ours.set_weights(theirs.get_weights())
    x = _images(CASES[builder][1])
    _close(ours.predict(x, verbose=0), theirs(x, training=False))


FEATURE_POOLING = {"Xception": None, "InceptionV3": "max", "DenseNet121": "avg", "EfficientNetB0": None,
                   "EfficientNetV2B0": "avg", "ConvNeXtTiny": "avg"}
# The layers of each classifier after the feature extractor: avg_pool, (top_dropout,) predictions.
HEAD = {"Xception": 2, "InceptionV3": 2, "DenseNet121": 2, "EfficientNetB0": 3, "EfficientNetV2B0": 3,
        "ConvNeXtTiny": 3}


@pytest.mark.parametrize("builder", list(CASES))
def test_feature_extractor_matches_keras(pairs, builder):
    theirs, top = pairs[builder]
    module, shape = CASES[builder]
    pooling, head = FEATURE_POOLING[builder], HEAD[builder]
    features = getattr(module, builder)(weights=None, include_top=False, input_shape=shape, pooling=pooling)
    extra = (pooling is not None) + builder.startswith("ConvNeXt")  # ConvNeXt's features end in a LayerNormalization
    body = _layers(features, names=False)[1:len(features.layers) - extra]
    assert body == _layers(top, names=False)[1:-head]  # unnamed layers count on: names compared above
    if pooling is not None:
        pool = features.layers[len(features.layers) - extra]
        assert type(pool).__name__ == f"Global{'Average' if pooling == 'avg' else 'Max'}Pooling2D"
    features.set_weights(theirs.get_weights()[:-2])
    x = _images(shape, seed=2)
    if builder.startswith("ConvNeXt"):  # global pooling and layer normalization, as the head's
        expected = keras.ops.convert_to_numpy(keras.Model(theirs.input, theirs.layers[-2].output)(x))
        return _close(features.predict(x, verbose=0), expected)
    last = keras.Model(theirs.input, theirs.layers[-head - 1].output)
    expected = keras.ops.convert_to_numpy(last(x, training=False))
    if pooling is not None:
        expected = expected.mean(axis=(1, 2)) if pooling == "avg" else expected.max(axis=(1, 2))
    _close(features.predict(x, verbose=0), expected)


def test_inception_resnet_block_matches_keras():
    from keras.src.applications import inception_resnet_v2 as keras_irv2
    for block_type, channels in (("block35", 320), ("block17", 1088), ("block8", 2080)):
        keras_in = keras.Input((5, 5, channels))
        theirs = keras.Model(keras_in, keras_irv2.inception_resnet_block(keras_in, 0.17, block_type, 1))
        _randomize(theirs, seed=3)
        ours_in = kgraph.Input((5, 5, channels))
        ours = kgraph.Model(ours_in, inception_resnet_v2.inception_resnet_block(ours_in, 0.17, block_type, 1))
        assert [type(layer).__name__ for layer in ours.layers] == [type(layer).__name__ for layer in theirs.layers]
        ours.set_weights(theirs.get_weights())
        x = np.random.default_rng(4).normal(size=(2, 5, 5, channels)).astype("float32")
        _close(ours.predict(x, verbose=0), theirs(x, training=False))
    with pytest.raises(ValueError, match="Unknown Inception-ResNet block type"):
        inception_resnet_v2.inception_resnet_block(ours_in, 0.1, "block9", 1)


# The last layer of each feature extractor (include_top=False, pooling=None).
FEATURES_END = {"Xception": "block14_sepconv2_act", "InceptionV3": "mixed10", "InceptionResNetV2": "conv_7b_ac",
                "DenseNet": "relu", "EfficientNet": "top_activation"}  # ConvNeXt: its own rule below


@pytest.mark.parametrize("builder", sorted(KERAS_PARAMS))
def test_default_builds_and_parameter_counts(builder, monkeypatch):
    module = MODULES[builder]
    # Counts and shapes do not depend on the initial values: skip drawing ~250M truncated-normal numbers.
    for family in (efficientnet, efficientnet_v2):  # ConvNeXt's builds draw glorot-uniform numbers, cheaper
        monkeypatch.setattr(family, "CONV_KERNEL_INITIALIZER", "zeros")
        monkeypatch.setattr(family, "DENSE_KERNEL_INITIALIZER", "zeros")
    if builder in ("Xception", "DenseNet121", "EfficientNetB0", "EfficientNetV2S"):  # the default input (larger
        model = getattr(module, builder)(weights=None)  # models: their build costs the same at a small input)
        default = {"Xception": 299, "EfficientNetV2S": 384}.get(builder, 224)
        assert tuple(model.input.shape) == (None, default, default, 3)
        features = getattr(module, builder)(weights=None, include_top=False)
        assert tuple(features.input.shape) == (None, None, None, 3)
        assert features.count_params() == KERAS_PARAMS[builder][1]
    else:
        model = getattr(module, builder)(weights=None, input_shape=(75, 75, 3))
    expected_name = {"InceptionV3": "inception_v3", "InceptionResNetV2": "inception_resnet_v2"}
    if builder.startswith("EfficientNetV2"):
        expected_name[builder] = "efficientnetv2-" + builder[len("EfficientNetV2"):].lower()
    if builder.startswith("ConvNeXt"):
        expected_name[builder] = "convnext_" + builder[len("ConvNeXt"):].lower()
    assert model.name == expected_name.get(builder, builder.lower())
    assert tuple(model.output.shape) == (None, 1000)
    assert model.count_params() == KERAS_PARAMS[builder][0]
    if builder.startswith("ConvNeXt"):  # the features end in a LayerNormalization as the head's
        head = [layer for layer in model.layers if layer.name.endswith("_head_dense")][0]
        assert model.count_params() - head.count_params() == KERAS_PARAMS[builder][1]
        return
    end = next(layer for family, layer in FEATURES_END.items() if builder.startswith(family))
    features = kgraph.Model(model.input, model.get_layer(end).output)
    assert features.count_params() == KERAS_PARAMS[builder][1]


def _write_keras2_file(model, path):
    """``model``'s weights in Keras 2's HDF5 layout (the ImageNet files'), by Keras's own legacy writer."""
    import h5py
    from keras.src.legacy.saving import legacy_h5_format
    with h5py.File(path, "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, model)


def _stand_in_download(monkeypatch, path, calls):
    def get_file(fname, origin, cache_subdir="datasets", file_hash=None, **kwargs):
        calls.append((fname, origin, cache_subdir, file_hash))
        return path
    monkeypatch.setattr(imagenet_utils, "get_file", get_file)


def test_imagenet_weights_file_names_and_loading(pairs, tmp_path, monkeypatch):
    top, _ = pairs["Xception"]
    theirs = keras.Model(top.input, top.get_layer("block14_sepconv2_act").output)  # the layers of the notop file
    path = os.fspath(tmp_path / "xception_notop.h5")
    _write_keras2_file(theirs, path)
    calls = []
    _stand_in_download(monkeypatch, path, calls)
    ours = xception.Xception(weights="imagenet", include_top=False, input_shape=(71, 71, 3))
    assert calls == [("xception_weights_tf_dim_ordering_tf_kernels_notop.h5",
                      "https://storage.googleapis.com/tensorflow/keras-applications/xception/"
                      "xception_weights_tf_dim_ordering_tf_kernels_notop.h5", "models",
                      "b0042744bf5b25fce3cb969f33bebb97")]
    x = _images((71, 71, 3), seed=6)
    _close(ours.predict(x, verbose=0), theirs(x, training=False))
    from_path = xception.Xception(weights=path, include_top=False, input_shape=(71, 71, 3))
    _close(from_path.predict(x, verbose=0), theirs(x, training=False))


def test_imagenet_file_names_of_each_family(pairs, tmp_path, monkeypatch):
    top, _ = pairs["EfficientNetB0"]
    theirs = keras.Model(top.input, top.get_layer("top_activation").output)  # the layers of the notop file
    path = os.fspath(tmp_path / "b0.h5")
    _write_keras2_file(theirs, path)
    calls = []
    _stand_in_download(monkeypatch, path, calls)
    ours = efficientnet.EfficientNetB0(weights="imagenet", input_shape=(32, 32, 3), include_top=False)
    assert calls[-1] == ("efficientnetb0_notop.h5",
                         "https://storage.googleapis.com/keras-applications/efficientnetb0_notop.h5", "models",
                         "50bc09e76180e00e4465e1a485ddc09d")
    # The published EfficientNet weights normalize by the variance: Keras's extra rescaling undoes it.
    rescale = [layer for layer in ours.layers if type(layer).__name__ == "Rescaling"]
    assert len(rescale) == 2
    np.testing.assert_allclose(rescale[1].scale, [1 / np.sqrt(s) for s in (0.229, 0.224, 0.225)])
    expected = theirs.get_weights()
    assert len(ours.get_weights()) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(ours.get_weights(), expected))
    expected_files = {
        densenet.DenseNet169: ("densenet169_weights_tf_dim_ordering_tf_kernels.h5",
                               "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
                               "densenet169_weights_tf_dim_ordering_tf_kernels.h5", "models",
                               "d699b8f76981ab1b30698df4c175e90b"),
        inception_v3.InceptionV3: ("inception_v3_weights_tf_dim_ordering_tf_kernels.h5",
                                   "https://storage.googleapis.com/tensorflow/keras-applications/inception_v3/"
                                   "inception_v3_weights_tf_dim_ordering_tf_kernels.h5", "models",
                                   "9a0d58056eeedaa3f26cb7ebd46da564"),
    }
    for builder, expected_call in expected_files.items():
        with pytest.raises(ValueError):  # the stand-in file holds B0's weights: the layer counts differ
            builder(weights="imagenet")
        assert calls[-1] == expected_call


def test_convnext_nested_blocks_load_from_a_keras2_file(pairs, tmp_path, monkeypatch):
    theirs, _ = pairs["ConvNeXtTiny"]
    path = os.fspath(tmp_path / "convnext_tiny.h5")
    _write_keras2_file(theirs, path)
    calls = []
    _stand_in_download(monkeypatch, path, calls)
    with pytest.raises(ValueError, match="`input_shape` should be"):  # ImageNet's classifier wants 224x224
        convnext.ConvNeXtTiny(weights="imagenet", input_shape=(32, 32, 3))
    ours = convnext.ConvNeXtTiny(weights=path, input_shape=(32, 32, 3), classes=10)
    x = _images((32, 32, 3), seed=10)
    _close(ours.predict(x, verbose=0), theirs(x, training=False))
    with pytest.raises(ValueError, match="does not match weights variant"):
        convnext.ConvNeXtTiny(weights="imagenet", include_top=False, input_shape=(32, 32, 3), name="mine")
    assert calls == []


def test_custom_convnext_and_stochastic_depth_match_keras():
    kwargs = dict(depths=[1, 1, 2, 1], projection_dims=[8, 16, 24, 32], drop_path_rate=0.3, weights=None,
                  input_shape=(32, 32, 3), classes=4)
    theirs = keras.src.applications.convnext.ConvNeXt(**kwargs)
    _randomize(theirs, seed=11)
    ours = convnext.ConvNeXt(**kwargs)
    assert _layers(ours, names=False) == _layers(theirs, names=False)
    assert [layer.name for layer in ours.layers][1:] == [layer.name for layer in theirs.layers][1:]
    ours.set_weights(theirs.get_weights())
    x = _images((32, 32, 3), seed=12)
    _close(ours.predict(x, verbose=0), theirs(x, training=False))
    layer = convnext.StochasticDepth(0.5)
    values = np.ones((64, 2, 3), "float32")
    dropped = np.asarray(layer(values, training=True))
    assert set(np.unique(dropped)) <= {0.0, 2.0} and 0 < dropped[:, 0, 0].sum() < 128
    assert np.all(np.asarray(layer(values, training=False)) == values)


def test_argument_errors_match_keras(monkeypatch):
    with pytest.raises(ValueError, match="The `weights` argument should be either"):
        xception.Xception(weights="no/such/file.h5")
    with pytest.raises(ValueError, match="`classes` should be 1000"):
        densenet.DenseNet121(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="Input size must be at least 71x71"):
        xception.Xception(weights=None, include_top=False, input_shape=(70, 70, 3))
    with pytest.raises(ValueError, match="Input size must be at least 75x75"):
        inception_v3.InceptionV3(weights=None, include_top=False, input_shape=(74, 90, 3))
    with pytest.raises(ValueError, match="`input_shape` should be"):
        efficientnet.EfficientNetB2(weights="imagenet", input_shape=(224, 224, 3))
    with pytest.raises(ValueError, match="Only `None` and `softmax` activations"):
        inception_v3.InceptionV3(weights="imagenet", classifier_activation="relu")
    with pytest.raises(ValueError, match="No ImageNet weights exist for a DenseNet"):
        densenet.DenseNet([1, 2, 3, 4], weights="imagenet", include_top=False)
    with pytest.raises(ValueError, match="must be > 0"):
        efficientnet.EfficientNet(1.0, 1.0, 224, weights=None, blocks_args=[dict(efficientnet.DEFAULT_BLOCKS_ARGS[0],
                                                                                 repeats=0)])
    with monkeypatch.context() as patch:  # kgraph computes channels-last only: the setting is stood in for
        patch.setattr(densenet.backend, "image_data_format", lambda: "channels_first")
        with pytest.raises(ValueError, match="DenseNet does not support the `channels_first`"):
            densenet.DenseNet121(weights=None)


def test_input_tensor_and_custom_densenet():
    inputs = kgraph.Input((40, 40, 3))
    scaled = kgraph.layers.Rescaling(1 / 127.5, offset=-1)(inputs)
    model = densenet.DenseNet121(weights=None, input_tensor=scaled, include_top=False, pooling="avg")
    assert model.inputs[0] is inputs and tuple(model.output.shape) == (None, 1024)
    assert model.layers[-1].name == "avg_pool"
    small = densenet.DenseNet([1, 1, 1, 1], weights=None, input_shape=(32, 32, 3), classes=5)
    assert small.name == "densenet" and tuple(small.output.shape) == (None, 5)
    effnet = efficientnet.EfficientNetB0(weights=None, input_tensor=kgraph.Input((33, 47, 3)), include_top=False)
    assert tuple(effnet.output.shape) == (None, 2, 2, 1280)


def test_preprocess_input_matches_keras():
    x = np.random.default_rng(7).integers(0, 256, (2, 4, 4, 3)).astype("float32")
    for module in ("xception", "inception_v3", "inception_resnet_v2", "densenet", "efficientnet", "efficientnet_v2",
                   "convnext"):
        ours = importlib.import_module(f"kgraph.applications.{module}").preprocess_input(np.copy(x))
        _close(ours, getattr(keras.applications, module).preprocess_input(np.copy(x)))
    channels_first = np.transpose(x, (0, 3, 1, 2))
    _close(densenet.preprocess_input(np.copy(channels_first), data_format="channels_first"),
           keras.applications.densenet.preprocess_input(np.copy(channels_first), data_format="channels_first"))
    assert efficientnet.preprocess_input(x) is x and efficientnet_v2.preprocess_input(x) is x
    symbolic = kgraph.Input((4, 4, 3))
    model = kgraph.Model(symbolic, xception.preprocess_input(symbolic))
    _close(model.predict(x, verbose=0), keras.applications.xception.preprocess_input(np.copy(x)))


def test_decode_predictions_matches_keras(monkeypatch):
    from keras.src.applications import imagenet_utils as keras_utils
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    monkeypatch.setattr(keras_utils, "CLASS_INDEX", index)
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX", index)
    preds = np.random.default_rng(8).uniform(0, 1, (3, 1000)).astype("float32")
    for module in ("xception", "inception_v3", "inception_resnet_v2", "densenet", "efficientnet", "efficientnet_v2",
                   "convnext"):
        ours = importlib.import_module(f"kgraph.applications.{module}").decode_predictions(preds, top=3)
        assert ours == getattr(keras.applications, module).decode_predictions(preds, top=3)


def test_names_are_provided():
    keras_names = {n for n in dir(keras.applications) if not n.startswith("_")}
    assert set(NAMES) <= keras_names and set(UNPROVIDED) <= keras_names
    assert not set(NAMES) & set(UNPROVIDED)
    for name in NAMES:
        if name.islower():
            module = importlib.import_module(f"kgraph.applications.{name}")
            expected = {n for n in dir(getattr(keras.applications, name)) if not n.startswith("_")}
            assert expected <= set(dir(module)), name
            assert set(expected) - {"decode_predictions", "preprocess_input"} <= set(NAMES), name
        else:
            assert callable(getattr(MODULES[name], name)), name


def test_names_on_the_package_face():
    from kgraph import applications
    for name in NAMES:
        assert hasattr(applications, name), f"kgraph.applications.{name} is not exported"
        if name.islower():
            assert getattr(applications, name) is importlib.import_module(f"kgraph.applications.{name}")
        else:
            assert getattr(applications, name) is getattr(MODULES[name], name)


@pytest.mark.parametrize("family", ["efficientnet", "convnext"])
def test_export_parity(family):
    from tests.export.parity import assert_parity
    if family == "efficientnet":
        model = efficientnet.EfficientNetB0(weights=None, input_shape=(32, 32, 3), classes=10)
    else:  # ConvNeXt's own layers (LayerScale) and its residual sums written as tensor operators
        model = convnext.ConvNeXt([1, 1, 1, 1], [8, 16, 24, 32], weights=None, input_shape=(32, 32, 3), classes=4)
    rng = np.random.default_rng(9)
    model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype("float32") if "variance" in w.path
                       else rng.normal(0, 0.1, w.shape).astype("float32") for w in model.weights])
    assert_parity(model, rtol=1e-4, atol=1e-5)
