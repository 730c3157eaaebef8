"""Zoo models for Keras's activations beyond the classic ones (celu, mish, the shrinks, sparsemax...), each fused
into a layer and converted by its own ONNX emitter."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly

# Every activation with an emitter that is usable by name in a layer (threshold needs arguments; glu halves the axis
# the layer declares whole, in Keras as in kgraph, so a layer cannot carry it).
ACTIVATION_FUNCTIONS = ["celu", "hard_shrink", "hard_silu", "hard_swish", "hard_tanh", "log_sigmoid", "mish",
                        "soft_shrink", "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink"]


@register_zoo_model("dense_activation_functions")
def dense_activation_functions():
    """Each activation fused into a Dense layer, branches concatenated."""
    x = kgraph.Input(shape=(5,), name="x")
    branches = [L.Dense(4, activation=name, name=f"dense_{name}")(x) for name in ACTIVATION_FUNCTIONS]
    return train_briefly(kgraph.Model(x, L.Concatenate()(branches), name="dense_activation_functions"))


@register_zoo_model("activation_layer_functions")
def activation_layer_functions():
    """Each activation as an Activation layer on a 3-D tensor; sparsemax and mish in convolutions (whose converter
    works channels-first: sparsemax reduces over the physical channel axis)."""
    x = kgraph.Input(shape=(4, 6), name="x")
    h = L.Dense(6)(x)
    outs = [L.Activation(name, name=f"act_{name}")(h) for name in ACTIVATION_FUNCTIONS]
    image = L.Reshape((4, 6, 1))(h)
    outs.append(L.Conv2D(5, 2, activation="sparsemax", name="conv_sparsemax")(image))
    outs.append(L.Conv1D(5, 3, activation="mish", name="conv_mish")(h))
    return train_briefly(kgraph.Model(x, outs, name="activation_layer_functions"))


@register_zoo_model("float64_activation_functions")
def float64_activation_functions():
    """Each activation in double precision (computed in float32 where onnxruntime has float32 kernels only)."""
    x = kgraph.Input(shape=(5,), dtype="float64", name="x")
    branches = [L.Dense(3, activation=name, dtype="float64", name=f"dense64_{name}")(x)
                for name in ACTIVATION_FUNCTIONS]
    return train_briefly(kgraph.Model(x, L.Concatenate(dtype="float64")(branches),
                                      name="float64_activation_functions"))
