"""Every argument of a Keras layer is implemented by kgraph's layer of the same name or refused by name: the
signatures of all of ``kgraph.layers`` against Keras 3's, the refusals, and the arguments kgraph now implements
(``activity_regularizer``, ``*_constraint``, ``autocast``...) compared with Keras on the same weights."""
import inspect
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import constraints, layers, optimizers, regularizers

RNG = np.random.default_rng(7)

# Arguments of a Keras base class that the Keras subclass sets itself: a caller passing one gets Keras's TypeError
# ("multiple values"), so kgraph's class does not take them either.
KERAS_INTERNAL = {"rank", "pool_dimensions", "pool_mode"}
KERAS_INTERNAL_BY_CLASS = {"LSTM": {"cell"}, "GRU": {"cell"}, "SimpleRNN": {"cell"}}

_BOXES = {"bounding_box_format": "xyxy"}
_BOXES_AND_FACTOR = {"bounding_box_format": "xyxy", "factor": 0.5}
# Keras arguments kgraph refuses, with a value each that must raise a ValueError naming the argument. Where the
# argument is in kgraph's signature the default values (those that change nothing in Keras) are accepted.
REFUSED = {
    "Dense": {"lora_rank": 2, "lora_alpha": 2.0, "quantization_config": "int8"},
    "EinsumDense": {"lora_rank": 2, "lora_alpha": 2.0, "gptq_unpacked_column_size": 4, "quantization_config": "int8"},
    "Embedding": {"lora_rank": 2, "lora_alpha": 2.0, "quantization_config": "int8"},
    "ReversibleEmbedding": {"lora_rank": 2, "lora_alpha": 2.0, "quantization_config": "int8"},
    **{name: {"lora_rank": 2, "lora_alpha": 2.0, "data_format": "channels_first"}
       for name in ("Conv1D", "Conv2D", "Conv3D", "Convolution1D", "Convolution2D", "Convolution3D")},
    "BatchNormalization": {"renorm": True, "synchronized": True},
    "LayerNormalization": {"rms_scaling": True},
    "LSTM": {"use_cudnn": True},
    "GRU": {"use_cudnn": True},
    "MultiHeadAttention": {"sliding_window": 2, "use_gate": True, "attention_axes": (1, 2)},
    "Bidirectional": {"weights": [np.zeros((2, 2))]},
    "InputLayer": {"sparse": True, "ragged": True, "optional": True},
    "AdditiveAttention": {"score_mode": "concat"},
    **{name: dict(_BOXES) for name in (
        "AugMix", "CutMix", "RandAugment", "RandomBrightness", "RandomColorDegeneration", "RandomContrast",
        "RandomElasticTransform", "RandomErasing", "RandomGaussianBlur", "RandomGrayscale", "RandomHue",
        "RandomInvert", "RandomPerspective", "RandomPosterization", "RandomRotation", "RandomSaturation",
        "RandomSharpness")},
    **{name: dict(_BOXES_AND_FACTOR) for name in (
        "AutoContrast", "CenterCrop", "ContrastLimitedAdaptiveHistogramEqualization", "Equalization", "MixUp",
        "RandomColorJitter", "RandomCrop", "RandomFlip", "RandomShear", "RandomTranslation", "RandomZoom",
        "Resizing", "Solarization")},
    "MaxNumBoundingBoxes": {"factor": 0.5},
}

# Values of the required constructor arguments, by name (per class where a name needs another value).
SAMPLE = {"units": 2, "filters": 2, "kernel_size": 3, "input_dim": 5, "output_dim": 3, "num_heads": 2, "key_dim": 2,
          "equation": "ab,bc->ac", "output_shape": 3, "height": 2, "width": 2, "factor": 0.2, "height_factor": 0.2,
          "width_factor": 0.2, "max_number": 2, "shape": (3,), "rate": 0.5}
SAMPLE_BY_CLASS = {"RandomPosterization": {"factor": 4}, "Bidirectional": {"layer": lambda: layers.LSTM(2)},
                   "InputLayer": {"shape": (3,)}}


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def constructor_arguments(cls):
    """Names a class's constructor takes, following ``**kwargs`` up its bases."""
    names = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(vars(klass)["__init__"]).parameters
        names.update(n for n, p in params.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            break
    return names


def _kgraph_layer_classes():
    return sorted(name for name in dir(layers) if isinstance(getattr(layers, name), type)
                  and issubclass(getattr(layers, name), kgraph.Layer))


def _construct(name, **extra):
    cls = getattr(layers, name)
    required = [n for n, p in inspect.signature(cls.__init__).parameters.items()
                if n != "self" and p.default is p.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    overrides = SAMPLE_BY_CLASS.get(name, {})
    values = {**{n: SAMPLE[n] for n in required if n not in overrides}, **overrides}
    return cls(**{n: v() if callable(v) else v for n, v in values.items()}, **extra)


def test_every_keras_argument_is_accepted_or_refused(keras):
    unlisted = {}
    for name in _kgraph_layer_classes():
        theirs = getattr(keras.layers, name, None)
        if not isinstance(theirs, type):
            continue
        internal = KERAS_INTERNAL | KERAS_INTERNAL_BY_CLASS.get(name, set())
        missing = constructor_arguments(theirs) - constructor_arguments(getattr(layers, name)) - internal
        missing -= set(REFUSED.get(name, {}))
        if missing:
            unlisted[name] = sorted(missing)
    assert not unlisted, f"Keras arguments neither accepted nor refused by kgraph: {unlisted}"


@pytest.mark.parametrize("name,argument,value", [("Conv2D", "rank", 2), ("MaxPooling2D", "pool_mode", "max"),
                                                  ("GlobalAveragePooling1D", "pool_dimensions", 1),
                                                  ("LSTM", "cell", None)])
def test_internal_arguments_are_refused_by_keras_too(keras, name, argument, value):
    required = {n: SAMPLE[n] for n, p in inspect.signature(getattr(layers, name).__init__).parameters.items()
                if n != "self" and p.default is p.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    with pytest.raises(TypeError, match="multiple values"):
        getattr(keras.layers, name)(**required, **{argument: value})


@pytest.mark.parametrize("name,argument", [(n, a) for n, table in REFUSED.items() for a in table])
def test_refused_arguments_raise_naming_the_argument(name, argument):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _construct(name)  # the sample arguments alone are fine
        with pytest.raises(ValueError, match=f"`?{argument}`?"):
            _construct(name, **{argument: REFUSED[name][argument]})


def test_keras_defaults_of_refused_arguments_are_accepted():
    layers.Dense(2, lora_rank=None, lora_alpha=None, quantization_config=None)
    layers.BatchNormalization(renorm=False, renorm_clipping=None, renorm_momentum=0.99)
    layers.LSTM(2, use_cudnn="auto")
    layers.GRU(2, use_cudnn=False)
    layers.LayerNormalization(rms_scaling=False)
    layers.MultiHeadAttention(2, 2, sliding_window=None, use_gate=False, flash_attention=None)
    layers.InputLayer(shape=(3,), sparse=False, ragged=False, optional=False)


def test_every_layer_takes_the_base_arguments():
    for name in set(_kgraph_layer_classes()) - {"Pipeline"}:  # Keras's Pipeline takes `layers` and `name` only
        accepted = constructor_arguments(getattr(layers, name))
        assert {"activity_regularizer", "autocast", "trainable", "dtype", "name"} <= accepted, name


# ----- activity_regularizer ----------------------------------------------------------------------------------


def test_activity_regularizer_adds_the_penalty_over_the_batch_size_on_each_eager_call():
    dense = layers.Dense(3, activity_regularizer=regularizers.L1L2(l1=0.01, l2=0.1))
    x = RNG.standard_normal((4, 5)).astype("float32")
    y = dense(x)
    assert len(dense.losses) == 1
    expected = (0.01 * np.abs(y).sum() + 0.1 * np.square(y).sum()) / 4
    np.testing.assert_allclose(dense.losses[0], expected, rtol=1e-6)
    dense(x)
    assert len(dense.losses) == 1  # an outermost call starts afresh
    dense(kgraph.Input((5,)))
    assert len(dense.losses) == 1  # symbolic calls add nothing (as Keras)
    assert dense.get_config()["activity_regularizer"]["class_name"] == "L1L2"
    clone = layers.Dense.from_config(dense.get_config())
    assert type(clone.activity_regularizer) is regularizers.L1L2


def test_activity_regularization_layer_uses_the_base_mechanism():
    layer = layers.ActivityRegularization(l1=0.5)
    x = RNG.standard_normal((2, 3)).astype("float32")
    layer(x)
    np.testing.assert_allclose(layer.losses[0], 0.5 * np.abs(x).sum() / 2, rtol=1e-6)
    assert "activity_regularizer" not in layer.get_config()
    assert layers.ActivityRegularization.from_config(layer.get_config()).l1 == 0.5


def test_a_fused_conv_pool_pair_keeps_the_activity_penalty():
    inputs = kgraph.Input((6, 6, 2))
    conv = layers.Conv2D(2, 3, activation="relu", activity_regularizer="l2")
    model = kgraph.Model(inputs, layers.MaxPooling2D()(conv(inputs)))
    model(RNG.standard_normal((1, 6, 6, 2)).astype("float32"))
    assert len(model.losses) == 1


def _keras_twin(keras, model_fn, ours):
    theirs = model_fn(keras)
    theirs.set_weights(ours.get_weights())
    return theirs


def _dense_model(lib):
    inputs = lib.Input((5,))
    hidden = lib.layers.Dense(4, activation="tanh", activity_regularizer=lib.regularizers.L1L2(0.01, 0.02))(inputs)
    outputs = lib.layers.Conv1D(2, 2, activity_regularizer=lib.regularizers.L2(0.05))(
        lib.layers.Reshape((2, 2))(hidden))
    return lib.Model(inputs, outputs)


def test_loss_with_activity_regularizers_matches_keras(keras):
    ours = _dense_model(kgraph)
    ours.set_weights([RNG.standard_normal(w.shape).astype("float32") for w in ours.get_weights()])
    theirs = _keras_twin(keras, _dense_model, ours)
    x = RNG.standard_normal((6, 5)).astype("float32")
    y = RNG.standard_normal((6, 1, 2)).astype("float32")
    for model in (ours, theirs):
        model.compile(optimizer="sgd", loss="mse")
    ours_loss = ours.evaluate(x, y, batch_size=6, verbose=0)
    theirs_loss = theirs.evaluate(x, y, batch_size=6, verbose=0)
    np.testing.assert_allclose(ours_loss, theirs_loss, rtol=1e-5)
    plain = float(np.mean((ours.predict(x, verbose=0) - y) ** 2))
    assert ours_loss > plain + 1e-3  # the penalty is in it
    ours.fit(x, y, batch_size=6, epochs=1, verbose=0)
    theirs.fit(x, y, batch_size=6, epochs=1, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer_name,args", [("MultiHeadAttention", {"num_heads": 2, "key_dim": 3}),
                                             ("GroupQueryAttention", {"head_dim": 3, "num_query_heads": 2,
                                                                      "num_key_value_heads": 1}),
                                             ("LSTM", {"units": 3, "return_sequences": True}),
                                             ("EinsumDense", {"equation": "btd,de->bte", "output_shape": (None, 3)})])
def test_activity_penalties_of_composite_layers_match_keras(keras, layer_name, args):
    x = RNG.standard_normal((2, 4, 5)).astype("float32")
    regularizer = {"class_name": "L1L2", "config": {"l1": 0.01, "l2": 0.03}}
    ours = getattr(layers, layer_name)(**args, activity_regularizer=regularizers.get(regularizer))
    theirs = getattr(keras.layers, layer_name)(**args, activity_regularizer=keras.regularizers.get(regularizer))
    call_args = (x, x) if "Attention" in layer_name else (x,)
    ours(*call_args)
    theirs(*call_args)
    theirs.set_weights([RNG.standard_normal(w.shape).astype("float32") for w in theirs.get_weights()])
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(*call_args), keras.ops.convert_to_numpy(theirs(*call_args)), rtol=1e-4,
                               atol=1e-6)
    ours_total = sum(float(np.asarray(loss)) for loss in ours.losses)
    theirs_total = sum(float(keras.ops.convert_to_numpy(loss)) for loss in theirs.losses)
    np.testing.assert_allclose(ours_total, theirs_total, rtol=1e-5)
    assert len(ours.losses) > 0


# ----- constraints through layers ------------------------------------------------------------------------------

CONSTRAINED = [("Dense", {"units": 3}, ["kernel_constraint", "bias_constraint"], (2, 4)),
               ("Conv1D", {"filters": 2, "kernel_size": 2}, ["kernel_constraint", "bias_constraint"], (2, 5, 3)),
               ("SeparableConv1D", {"filters": 2, "kernel_size": 2},
                ["depthwise_constraint", "pointwise_constraint", "bias_constraint"], (2, 5, 3)),
               ("Embedding", {"input_dim": 6, "output_dim": 3}, ["embeddings_constraint"], None),
               ("LSTM", {"units": 2}, ["kernel_constraint", "recurrent_constraint", "bias_constraint"], (2, 3, 4)),
               ("SimpleRNNCell", {"units": 2}, ["kernel_constraint", "recurrent_constraint", "bias_constraint"],
                None),
               ("ConvLSTM1D", {"filters": 2, "kernel_size": 2},
                ["kernel_constraint", "recurrent_constraint", "bias_constraint"], (2, 3, 5, 2)),
               ("BatchNormalization", {}, ["beta_constraint", "gamma_constraint"], (2, 3)),
               ("LayerNormalization", {}, ["beta_constraint", "gamma_constraint"], (2, 3)),
               ("GroupNormalization", {"groups": 1}, ["beta_constraint", "gamma_constraint"], (2, 3)),
               ("PReLU", {}, ["alpha_constraint"], (2, 3)),
               ("EinsumDense", {"equation": "ab,bc->ac", "output_shape": 3, "bias_axes": "c"},
                ["kernel_constraint", "bias_constraint"], (2, 4)),
               ("MultiHeadAttention", {"num_heads": 2, "key_dim": 2}, ["kernel_constraint", "bias_constraint"],
                None),
               ("GroupQueryAttention", {"head_dim": 2, "num_query_heads": 2, "num_key_value_heads": 1},
                ["kernel_constraint", "bias_constraint"], None)]


def _build(layer, shape):
    if isinstance(layer, (layers.MultiHeadAttention, layers.GroupQueryAttention)):
        x = np.zeros((1, 3, 4), "float32")
        layer(x, x)
    elif isinstance(layer, layers.SimpleRNNCell):
        layer.build((None, 4))
    elif isinstance(layer, layers.Embedding):
        layer(np.zeros((1, 2), "int32"))
    else:
        layer(np.zeros(shape, "float32"))


@pytest.mark.parametrize("name,args,arguments,shape", CONSTRAINED)
def test_constraint_arguments_reach_the_weights_and_the_config(name, args, arguments, shape):
    layer = getattr(layers, name)(**args, **{a: "non_neg" for a in arguments})
    _build(layer, shape)
    assert all(type(v.constraint) is constraints.NonNeg for v in layer.trainable_weights), name
    config = layer.get_config()
    assert all(config[a]["class_name"] == "NonNeg" for a in arguments)
    clone = type(layer).from_config(config)
    _build(clone, shape)
    assert all(type(v.constraint) is constraints.NonNeg for v in clone.trainable_weights)
    optimizers.SGD(1.0).apply([np.ones(v.shape, v.dtype) for v in layer.trainable_weights], layer.trainable_weights)
    assert all(np.all(v.numpy() >= 0) for v in layer.trainable_weights)


def _constrained_model(lib):
    inputs = lib.Input((3, 4))
    x = lib.layers.Conv1D(4, 2, kernel_constraint=lib.constraints.MaxNorm(0.3, axis=[0, 1]),
                          bias_constraint=lib.constraints.NonNeg())(inputs)
    x = lib.layers.LSTM(3, recurrent_constraint=lib.constraints.UnitNorm(axis=0))(x)
    return lib.Model(inputs, lib.layers.Dense(2, kernel_constraint=lib.constraints.MinMaxNorm(0.2, 0.4))(x))


def test_weights_after_an_optimizer_step_with_constraints_match_keras(keras):
    ours = _constrained_model(kgraph)
    ours.set_weights([RNG.standard_normal(w.shape).astype("float32") for w in ours.get_weights()])
    theirs = _keras_twin(keras, _constrained_model, ours)
    x = RNG.standard_normal((4, 3, 4)).astype("float32")
    y = RNG.standard_normal((4, 2)).astype("float32")
    for model in (ours, theirs):
        model.compile(optimizer=optimizers.Adam(0.05) if model is ours else keras.optimizers.Adam(0.05), loss="mse")
        model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# ----- other base arguments --------------------------------------------------------------------------------


def test_autocast_false_keeps_the_input_dtype():
    x = np.ones((1, 2), "float64")
    assert layers.Activation("relu")(x).dtype == np.float32
    assert layers.Activation("relu", autocast=False)(x).dtype == np.float64


def test_embedding_weights_and_deprecated_arguments_as_keras():
    table = RNG.standard_normal((5, 2)).astype("float32")
    np.testing.assert_array_equal(layers.Embedding(5, 2, weights=table).embeddings.numpy(), table)
    np.testing.assert_array_equal(layers.Embedding(5, 2, weights=[table]).embeddings.numpy(), table)
    tied = layers.ReversibleEmbedding(5, 2, weights=table)
    np.testing.assert_array_equal(tied(np.array([[1]])), table[[[1]]])
    with pytest.warns(UserWarning, match="input_length"):
        layers.Embedding(5, 2, input_length=4)
    with pytest.warns(UserWarning, match="negative_slope"):
        leaky = layers.LeakyReLU(alpha=0.2)
    assert leaky.negative_slope == 0.2


def test_input_tensor_is_adopted_as_keras_does():
    existing = kgraph.KerasTensor((None, 3), dtype="float32")
    layer = layers.InputLayer(input_tensor=existing)
    assert layer.output_tensor is existing and layer.batch_shape == (None, 3)
    assert kgraph.Input(tensor=existing) is existing
    with pytest.raises(ValueError, match="incompatible `shape`"):
        layers.InputLayer(shape=(4,), input_tensor=existing)
    with pytest.raises(ValueError, match="must be a KerasTensor"):
        layers.InputLayer(input_tensor=np.zeros((1, 3)))
