"""SpectralNormalization: a wrapper that keeps a layer's kernel at spectral norm 1 while training (Keras's rules)."""
import numpy as np

from kgraph import initializers
from kgraph.layers.core.wrapper import Wrapper
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer

_EPSILON = 1e-7  # Keras's backend.epsilon(), the floor of a norm that is divided by


def _normalized(x):
    """``x`` over its L2 norm (floored at ``_EPSILON``), as Keras's ``normalize(x, axis=None)``."""
    return x / max(float(np.sqrt(np.sum(np.square(x)))), _EPSILON)


class SpectralNormalization(Wrapper):
    """Runs ``layer`` after dividing its ``kernel`` (or ``embeddings``) by its spectral norm, in training only.

    The norm is estimated by ``power_iterations`` steps of power iteration
    from the non-trainable ``vector_u`` ``(1, kernel.shape[-1])``. As in
    Keras, each training call writes the normalized kernel and the new
    ``vector_u`` back (no gradient flows through the normalization; an
    all-zero kernel is left alone), inference runs the wrapped layer as it is,
    and the weights are ``[kernel, vector_u, the layer's other weights]``.
    The output keeps the wrapped layer's dtype.
    """

    def __init__(self, layer, power_iterations=1, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Layer {layer!r} supplied to SpectralNormalization isn't a supported layer type. "
                             "Please ensure wrapped layer is a valid kgraph layer.")
        if power_iterations <= 0:
            raise ValueError("`power_iterations` should be greater than zero. Received: "
                             f"`power_iterations={power_iterations}`")
        super().__init__(layer, **kwargs)
        self.power_iterations = int(power_iterations)

    def build(self, input_shape):
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True
            self.layer._build_input_shape = tuple(input_shape)
        kernel = getattr(self.layer, "kernel", None)
        kernel = getattr(self.layer, "embeddings", None) if kernel is None else kernel
        if kernel is None:
            raise ValueError(f"{type(self.layer).__name__} object has no attribute 'kernel' nor 'embeddings'")
        # Set as an attribute, the wrapped kernel becomes the wrapper's own weight too, first, as Keras tracks it.
        self.kernel = kernel
        self.vector_u = self.add_weight(shape=(1, kernel.shape[-1]),
                                        initializer=initializers.TruncatedNormal(stddev=0.02), trainable=False,
                                        name="vector_u", dtype=kernel.dtype)
        self.input_spec = InputSpec(min_ndim=1, axes={-1: input_shape[-1]})
        self.built = True

    def normalize_kernel(self):
        """Divide the kernel by its spectral norm estimate and store the advanced ``vector_u``."""
        kernel = self.kernel.numpy()
        if not np.any(kernel):
            return
        weights = kernel.reshape(-1, kernel.shape[-1])
        vector_u = self.vector_u.numpy()
        for _ in range(self.power_iterations):
            vector_v = _normalized(vector_u @ weights.T)
            vector_u = _normalized(vector_v @ weights)
        sigma = (vector_v @ weights) @ vector_u.T
        self.vector_u.assign(vector_u.astype(self.vector_u.dtype))
        self.kernel.assign((kernel / sigma).astype(kernel.dtype))

    def call(self, inputs, training=False):
        if training:
            self.normalize_kernel()
        return self.layer(inputs)

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)

    def get_config(self):
        return {**super().get_config(), "power_iterations": self.power_iterations}
