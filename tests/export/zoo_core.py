"""Zoo models built from the core layers: Dense, Activation, Dropout, Identity, merges, Flatten, Reshape."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly

ACTIVATIONS = ["linear", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "gelu", "elu", "selu", "softplus",
               "softsign", "silu", "swish", "leaky_relu", "hard_sigmoid", "exponential", "relu6"]


@register_zoo_model("mlp_sequential")
def mlp_sequential():
    """The 3-Dense MLP (relu, relu, softmax) as a Sequential."""
    model = kgraph.Sequential([kgraph.Input(shape=(32,), name="features"), L.Dense(64, activation="relu"),
                               L.Dense(64, activation="relu"), L.Dense(10, activation="softmax")],
                              name="mlp_sequential")
    return train_briefly(model)


@register_zoo_model("mlp_functional")
def mlp_functional():
    """A functional MLP with a bias-free layer and a linear output."""
    x = kgraph.Input(shape=(12,), name="x")
    h = L.Dense(16, activation="tanh")(x)
    h = L.Dense(16, use_bias=False, activation="relu")(h)
    return train_briefly(kgraph.Model(x, L.Dense(3)(h), name="mlp_functional"))


@register_zoo_model("multi_io")
def multi_io():
    """Two inputs, three outputs, one of them also consumed inside the graph."""
    a = kgraph.Input(shape=(6,), name="a")
    b = kgraph.Input(shape=(4,), name="b")
    h = L.Concatenate()([L.Dense(8, activation="relu")(a), b])
    score = L.Dense(1, activation="sigmoid", name="score")(h)
    logits = L.Dense(5, name="logits")(L.Concatenate()([h, score]))
    aux = L.Dense(2, name="aux")(a)
    return train_briefly(kgraph.Model([a, b], [score, logits, aux], name="multi_io"))


@register_zoo_model("dict_io")
def dict_io():
    """Inputs and outputs given as dicts."""
    inputs = {"price": kgraph.Input(shape=(3,), name="price"), "volume": kgraph.Input(shape=(5,), name="volume")}
    h = L.Concatenate()([inputs["price"], inputs["volume"]])
    h = L.Dense(8, activation="elu")(h)
    outputs = {"up": L.Dense(1, activation="sigmoid", name="up")(h), "level": L.Dense(2, name="level")(h)}
    return train_briefly(kgraph.Model(inputs, outputs, name="dict_io"))


@register_zoo_model("shared_layer")
def shared_layer():
    """One Dense applied to two inputs (one set of weights), then merged."""
    left = kgraph.Input(shape=(7,), name="left")
    right = kgraph.Input(shape=(7,), name="right")
    shared = L.Dense(5, activation="relu", name="shared")
    merged = L.Subtract()([shared(left), shared(right)])
    return train_briefly(kgraph.Model([left, right], L.Dense(1, name="distance")(merged), name="shared_layer"))


def _encoder(name):
    x = kgraph.Input(shape=(6,), name=f"{name}_in")
    h = L.Dense(8, activation="relu", name=f"{name}_hidden")(x)
    return kgraph.Model(x, L.Dense(4, activation="tanh", name=f"{name}_code")(h), name=name)


@register_zoo_model("nested_twice")
def nested_twice():
    """A nested Functional model called on two inputs (its weights shared), plus a nested model in a nested model."""
    encoder = _encoder("encoder")
    a = kgraph.Input(shape=(6,), name="query")
    b = kgraph.Input(shape=(6,), name="doc")
    inner = _encoder("inner")
    y = kgraph.Input(shape=(6,), name="outer_in")
    outer = kgraph.Model(y, L.Dense(4, name="outer_head")(inner(y)), name="outer")
    out = L.Concatenate()([encoder(a), encoder(b), outer(a)])
    return train_briefly(kgraph.Model([a, b], L.Dense(2, name="head")(out), name="nested_twice"))


@register_zoo_model("nested_sequential")
def nested_sequential():
    """A Sequential used as a layer of a Functional model."""
    block = kgraph.Sequential([kgraph.Input(shape=(10,)), L.Dense(12, activation="selu"), L.Dropout(0.3),
                               L.Dense(10, activation="softsign")], name="block")
    x = kgraph.Input(shape=(10,), name="x")
    y = L.Add()([x, block(x)])
    return train_briefly(kgraph.Model(x, L.Dense(3, activation="log_softmax")(y), name="nested_sequential"))


@register_zoo_model("diamond")
def diamond():
    """Branches that split and join at several depths."""
    x = kgraph.Input(shape=(9,), name="x")
    a = L.Dense(6, activation="relu")(x)
    b = L.Dense(6, activation="sigmoid")(x)
    c = L.Multiply()([a, b])
    d = L.Dense(6)(a)
    e = L.Maximum()([c, d, L.Dense(6)(x)])
    return train_briefly(kgraph.Model(x, L.Dense(2)(L.Concatenate()([e, a, x])), name="diamond"))


@register_zoo_model("dense_activations")
def dense_activations():
    """Every activation fused into a Dense layer, branches concatenated."""
    x = kgraph.Input(shape=(5,), name="x")
    branches = [L.Dense(3, activation=name, name=f"dense_{name}")(x) for name in ACTIVATIONS]
    return train_briefly(kgraph.Model(x, L.Concatenate()(branches), name="dense_activations"))


@register_zoo_model("activation_layers")
def activation_layers():
    """Every activation as an Activation layer, on 2-D and 3-D tensors."""
    x = kgraph.Input(shape=(4, 6), name="x")
    h = L.Dense(6)(x)
    outs = [L.Activation(name, name=f"act_{name}")(h) for name in ACTIVATIONS]
    flat = L.Dense(4)(L.Flatten()(h))
    outs += [L.Activation(name, name=f"act2d_{name}")(flat) for name in ("softmax", "log_softmax", "gelu")]
    return train_briefly(kgraph.Model(x, outs, name="activation_layers"))


@register_zoo_model("merges")
def merges():
    """Every merge layer, with two and three inputs and with broadcasting."""
    x = kgraph.Input(shape=(3, 4), name="x")
    v = kgraph.Input(shape=(1, 4), name="v")
    a, b, c = (L.Dense(4, name=f"branch_{i}")(x) for i in range(3))
    outs = [L.Add()([a, b]), L.Add()([a, b, c]), L.Subtract()([a, v]), L.Multiply()([a, b, c]),
            L.Average()([a, b, c]), L.Average()([a, v]), L.Maximum()([a, b]), L.Minimum()([a, b, c]),
            L.Minimum()([b, v]), L.Concatenate(axis=1)([a, b, v]), L.Concatenate(axis=-1)([a, c])]
    return train_briefly(kgraph.Model([x, v], outs, name="merges"))


@register_zoo_model("reshape_flatten")
def reshape_flatten():
    """Reshape (with -1) into a rank-3 Dense (MatMul + Add), Flatten back, Reshape round trip."""
    x = kgraph.Input(shape=(24,), name="x")
    h = L.Reshape((4, -1))(x)
    h = L.Dense(5, activation="relu")(h)
    h = L.Reshape((2, 2, 5))(h)
    h = L.Flatten()(h)
    return train_briefly(kgraph.Model(x, L.Dense(3)(h), name="reshape_flatten"))


@register_zoo_model("flatten_channels_first")
def flatten_channels_first():
    """Flatten(data_format="channels_first") feeds a Dense (folded into its kernel) and an output."""
    x = kgraph.Input(shape=(3, 4, 5), name="planes")
    flat = L.Flatten(data_format="channels_first")(x)
    act = L.Activation("relu")(flat)
    return train_briefly(kgraph.Model(x, [L.Dense(4, name="head")(act), L.Activation("tanh")(flat)],
                                      name="flatten_channels_first"))


@register_zoo_model("dropout_identity")
def dropout_identity():
    """Dropout and Identity (no-ops at inference) inside the graph and as outputs; an input as an output."""
    x = kgraph.Input(shape=(8,), name="x")
    h = L.Dropout(0.5)(L.Dense(8, activation="relu")(x))
    h = L.Identity()(h)
    y = L.Dense(2)(h)
    return train_briefly(kgraph.Model(x, [y, L.Dropout(0.2)(y), L.Identity()(x)], name="dropout_identity"))


@register_zoo_model("variable_length")
def variable_length():
    """A sequence input with a dynamic length axis: rank-3 Dense and softmax over features."""
    x = kgraph.Input(shape=(None, 6), name="tokens")
    h = L.Dense(8, activation="relu")(x)
    return train_briefly(kgraph.Model(x, L.Dense(4, activation="softmax")(h), name="variable_length"))


@register_zoo_model("float64")
def float64():
    """A float64 model: every activation in double precision (some through float32 where onnxruntime must)."""
    x = kgraph.Input(shape=(5,), dtype="float64", name="x")
    branches = [L.Dense(3, activation=name, dtype="float64", name=f"dense64_{name}")(x) for name in ACTIVATIONS]
    return train_briefly(kgraph.Model(x, L.Concatenate(dtype="float64")(branches), name="float64"))
