"""Zoo models of the activation, merge, einsum, normalization, noise and Lambda layers of Keras's wider surface."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("activation_layer_classes")
def activation_layers():
    """ReLU variants, LeakyReLU, PReLU (shared and per-cell), ELU and Softmax on conv output (channels first),
    on its Flatten (a FeatureOrder) and on a Dense output."""
    x = kgraph.Input(shape=(6, 5, 2), name="image")
    conv = L.Conv2D(3, 3)(x)
    flat = L.Flatten()(conv)
    dense = L.Dense(4)(flat)
    outputs = [L.ReLU()(conv), L.ReLU(max_value=6.0)(conv),
               L.ReLU(max_value=0.5, negative_slope=0.1, threshold=0.2)(conv),
               L.ReLU(negative_slope=0.05)(dense), L.LeakyReLU()(conv), L.PReLU(shared_axes=[1, 2])(conv),
               L.PReLU(alpha_initializer="ones")(conv), L.Dense(2)(L.PReLU()(flat)), L.ELU(alpha=0.7)(conv),
               L.Softmax()(conv), L.Softmax(axis=[1, 2])(conv), L.Softmax(axis=1)(dense)]
    return train_briefly(kgraph.Model(x, outputs, name="activation_layer_classes"))


@register_zoo_model("masked_softmax")
def masked_softmax():
    """Softmax with a float mask given as a call argument (masked positions get probability 0)."""
    scores = kgraph.Input(shape=(3, 4), name="scores")
    mask = kgraph.Input(shape=(1, 4), name="mask")
    y = L.Softmax()(L.Dense(4)(scores), mask=mask)
    # An op node carries no mask: the (batch, 1, 4) mask given to Softmax stays out of the training loss.
    return train_briefly(kgraph.Model([scores, mask], y * 1.0, name="masked_softmax"))


@register_zoo_model("dot_and_einsum_dense")
def dot_and_einsum_dense():
    """Dot on sequences and vectors (normalized too), EinsumDense in its three equation forms (traced into ops)."""
    a = kgraph.Input(shape=(5, 4), name="a")
    b = kgraph.Input(shape=(3, 4), name="b")
    heads = L.EinsumDense("abc,cde->abde", output_shape=(5, 2, 3), bias_axes="de")(a)
    outputs = [L.Dot(axes=(2, 2))([a, b]), L.Dot(axes=1, normalize=True)([L.Flatten()(a), L.Dense(20)(L.Flatten()(b))]),
               L.EinsumDense("...c,cd->...d", output_shape=6, activation="tanh", bias_axes="d")(b), heads,
               L.EinsumDense("ab...,bc->ac...", output_shape=2)(a)]
    return train_briefly(kgraph.Model([a, b], outputs, name="dot_and_einsum_dense"))


@register_zoo_model("normalization_extra")
def normalization_extra():
    """GroupNormalization (groups, instance, on a conv), Unit- and RMSNormalization over one and two axes."""
    x = kgraph.Input(shape=(6, 4), name="x")
    image = L.Reshape((3, 2, 4))(x)
    outputs = [L.GroupNormalization(groups=2)(x), L.GroupNormalization(groups=-1, axis=1, center=False)(x),
               L.GroupNormalization(groups=2)(L.Conv2D(4, 1)(image)), L.UnitNormalization()(x),
               L.UnitNormalization(axis=[1, 2])(x), L.RMSNormalization()(x), L.RMSNormalization(axis=[1, 2])(x)]
    return train_briefly(kgraph.Model(x, outputs, name="normalization_extra"))


def _affine(x, scale=2.0):
    return x * scale + 1.0


@register_zoo_model("noise_and_lambda")
def noise_and_lambda():
    """Noise layers and ActivityRegularization (identities at inference) around Dense layers; Lambda layers traced."""
    x = kgraph.Input(shape=(6,), name="x")
    h = L.GaussianNoise(0.1)(L.Dense(8, activation="selu")(x))
    h = L.AlphaDropout(0.1)(L.GaussianDropout(0.2)(h))
    h = L.ActivityRegularization(l1=1e-3, l2=1e-3)(h)
    h = L.Lambda(_affine, arguments={"scale": 0.5})(h)
    y = L.Lambda(lambda t: t[:, :3] - t[:, 3:6], output_shape=(3,))(h)
    return train_briefly(kgraph.Model(x, [y, L.Dense(2)(h)], name="noise_and_lambda"))
