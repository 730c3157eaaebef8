"""Keras 3.15's public names against kgraph's: every name of ``keras.layers`` and ``keras.ops`` (and its
``nn``, ``numpy``, ``linalg`` and ``image`` namespaces) is provided or listed below with the reason it is not;
every module and function of ``keras.datasets`` is provided.

The name lists are ``dir()`` of Keras 3.15.1, pasted here so the check runs without Keras installed.
"""
import pytest

from kgraph import datasets, layers, ops

KERAS_LAYERS = (
    "Activation", "ActivityRegularization", "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D",
    "AdaptiveAveragePooling3D", "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D", "Add",
    "AdditiveAttention", "AlphaDropout", "Attention", "AugMix", "AutoContrast", "Average", "AveragePooling1D",
    "AveragePooling2D", "AveragePooling3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "BatchNormalization",
    "Bidirectional", "CategoryEncoding", "CenterCrop", "Concatenate",
    "ContrastLimitedAdaptiveHistogramEqualization", "Conv1D", "Conv1DTranspose", "Conv2D", "Conv2DTranspose",
    "Conv3D", "Conv3DTranspose", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "Convolution1D",
    "Convolution1DTranspose", "Convolution2D", "Convolution2DTranspose", "Convolution3D", "Convolution3DTranspose",
    "Cropping1D", "Cropping2D", "Cropping3D", "CutMix", "Dense", "DepthwiseConv1D", "DepthwiseConv2D",
    "Discretization", "Dot", "Dropout", "ELU", "EinsumDense", "Embedding", "Equalization", "Flatten", "FlaxLayer",
    "GRU", "GRUCell", "GaussianDropout", "GaussianNoise", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
    "GlobalAveragePooling3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D",
    "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
    "GroupNormalization", "GroupQueryAttention", "HashedCrossing", "Hashing", "Identity", "Input", "InputLayer",
    "InputSpec", "IntegerLookup", "JaxLayer", "LSTM", "LSTMCell", "Lambda", "Layer", "LayerNormalization",
    "LeakyReLU", "Masking", "MaxNumBoundingBoxes", "MaxPool1D", "MaxPool2D", "MaxPool3D", "MaxPooling1D",
    "MaxPooling2D", "MaxPooling3D", "Maximum", "MelSpectrogram", "Minimum", "MixUp", "MultiHeadAttention",
    "Multiply", "Normalization", "PReLU", "Permute", "Pipeline", "RMSNormalization", "RNN", "RandAugment",
    "RandomBrightness", "RandomColorDegeneration", "RandomColorJitter", "RandomContrast", "RandomCrop",
    "RandomElasticTransform", "RandomErasing", "RandomFlip", "RandomGaussianBlur", "RandomGrayscale", "RandomHue",
    "RandomInvert", "RandomPerspective", "RandomPosterization", "RandomRotation", "RandomSaturation",
    "RandomSharpness", "RandomShear", "RandomTranslation", "RandomZoom", "ReLU", "RepeatVector", "Rescaling",
    "Reshape", "Resizing", "ReversibleEmbedding", "STFTSpectrogram", "SeparableConv1D", "SeparableConv2D",
    "SeparableConvolution1D", "SeparableConvolution2D", "SimpleRNN", "SimpleRNNCell", "Softmax", "Solarization",
    "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "SpectralNormalization", "StackedRNNCells",
    "StringLookup", "Subtract", "TFSMLayer", "TextVectorization", "TimeDistributed", "TorchModuleWrapper",
    "UnitNormalization", "UpSampling1D", "UpSampling2D", "UpSampling3D", "Wrapper", "ZeroPadding1D",
    "ZeroPadding2D", "ZeroPadding3D", "add", "average", "concatenate", "deserialize", "dot", "maximum", "minimum",
    "multiply", "serialize", "subtract",
)

KERAS_OPS = (
    "abs", "absolute", "adaptive_average_pool", "adaptive_max_pool", "add", "all", "allclose", "amax", "amin",
    "angle", "any", "append", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
    "argmax", "argmin", "argpartition", "argsort", "array", "array_split", "associative_scan", "average",
    "average_pool", "bartlett", "batch_normalization", "binary_crossentropy", "bincount", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "blackman", "broadcast_to", "cast", "categorical_crossentropy", "cbrt", "cdist", "ceil", "celu", "cholesky",
    "cholesky_inverse", "clip", "concatenate", "cond", "conj", "conjugate", "conv", "conv_transpose",
    "convert_to_numpy", "convert_to_tensor", "copy", "corrcoef", "correlate", "cos", "cosh", "count_nonzero",
    "cross", "ctc_decode", "ctc_loss", "cumprod", "cumsum", "custom_gradient", "deg2rad", "depth_to_space",
    "depthwise_conv", "det", "diag", "diagflat", "diagonal", "diff", "digitize", "divide", "divide_no_nan", "dot",
    "dot_product_attention", "dsplit", "dstack", "dtype", "eig", "eigh", "einsum", "elu", "empty", "empty_like",
    "equal", "erf", "erfc", "erfinv", "exp", "exp2", "expand_dims", "expm1", "extract_sequences", "eye", "fabs",
    "fft", "fft2", "flip", "fliplr", "flipud", "floor", "floor_divide", "fmax", "fmin", "fmod", "fold", "fori_loop",
    "full", "full_like", "gcd", "gelu", "geomspace", "get_item", "glu", "greater", "greater_equal", "hamming",
    "hanning", "hard_shrink", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "heaviside", "histogram",
    "hsplit", "hstack", "hypot", "i0", "identity", "ifft2", "imag", "image", "in_top_k", "inner", "inv", "irfft",
    "is_tensor", "isclose", "isfinite", "isin", "isinf", "isnan", "isneginf", "isposinf", "isreal", "istft", "jvp",
    "kaiser", "kron", "layer_normalization", "lcm", "ldexp", "leaky_relu", "left_shift", "less", "less_equal",
    "linalg", "linspace", "log", "log10", "log1p", "log2", "log_sigmoid", "log_softmax", "logaddexp", "logaddexp2",
    "logdet", "logical_and", "logical_not", "logical_or", "logical_xor", "logspace", "logsumexp", "lstsq",
    "lu_factor", "map", "matmul", "matrix_rank", "max", "max_pool", "maximum", "mean", "median", "meshgrid", "min",
    "minimum", "mod", "moments", "moveaxis", "multi_hot", "multiply", "nan_to_num", "nanargmax", "nanargmin",
    "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod",
    "nanquantile", "nanstd", "nansum", "nanvar", "ndim", "negative", "nextafter", "nn", "nonzero", "norm",
    "normalize", "not_equal", "numpy", "one_hot", "ones", "ones_like", "outer", "pad", "percentile", "pinv",
    "polar", "power", "prod", "psnr", "ptp", "qr", "quantile", "rad2deg", "ravel", "real", "rearrange",
    "reciprocal", "relu", "relu6", "repeat", "reshape", "rfft", "right_shift", "rms_normalization", "roll", "rot90",
    "round", "rsqrt", "saturate_cast", "scan", "scatter", "scatter_update", "searchsorted", "segment_max",
    "segment_min", "segment_prod", "segment_sum", "select", "selu", "separable_conv", "shape", "sigmoid", "sign",
    "signbit", "silu", "sin", "sinc", "sinh", "size", "slice", "slice_update", "slogdet", "soft_shrink", "softmax",
    "softplus", "softsign", "solve", "solve_triangular", "sort", "space_to_depth",
    "sparse_categorical_crossentropy", "sparse_plus", "sparse_sigmoid", "sparsemax", "split", "sqrt", "square",
    "squareplus", "squeeze", "stack", "std", "stft", "stop_gradient", "subtract", "sum", "svd", "swapaxes", "swish",
    "switch", "take", "take_along_axis", "tan", "tanh", "tanh_shrink", "tensordot", "threshold", "tile", "top_k",
    "trace", "transpose", "trapezoid", "tri", "tril", "triu", "true_divide", "trunc", "unfold", "unique",
    "unravel_index", "unstack", "vander", "var", "vdot", "vectorize", "vectorized_map", "view", "view_as_complex",
    "view_as_real", "vsplit", "vstack", "where", "while_loop", "zeros", "zeros_like",
)

KERAS_OPS_NN = (
    "adaptive_average_pool", "adaptive_max_pool", "average_pool", "batch_normalization", "binary_crossentropy",
    "categorical_crossentropy", "celu", "conv", "conv_transpose", "ctc_decode", "ctc_loss", "depth_to_space",
    "depthwise_conv", "dot_product_attention", "elu", "fold", "gelu", "glu", "hard_shrink", "hard_sigmoid",
    "hard_silu", "hard_swish", "hard_tanh", "layer_normalization", "leaky_relu", "log_sigmoid", "log_softmax",
    "max_pool", "moments", "multi_hot", "normalize", "one_hot", "polar", "psnr", "relu", "relu6",
    "rms_normalization", "selu", "separable_conv", "sigmoid", "silu", "soft_shrink", "softmax", "softplus",
    "softsign", "space_to_depth", "sparse_categorical_crossentropy", "sparse_plus", "sparse_sigmoid", "sparsemax",
    "squareplus", "swish", "tanh_shrink", "threshold", "unfold",
)

KERAS_OPS_NUMPY = (
    "abs", "absolute", "add", "all", "allclose", "amax", "amin", "angle", "any", "append", "arange", "arccos",
    "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax", "argmin", "argpartition", "argsort",
    "array", "array_split", "average", "bartlett", "bincount", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "blackman",
    "broadcast_to", "cbrt", "ceil", "clip", "concatenate", "conj", "conjugate", "copy", "corrcoef", "correlate",
    "cos", "cosh", "count_nonzero", "cross", "cumprod", "cumsum", "deg2rad", "diag", "diagflat", "diagonal", "diff",
    "digitize", "divide", "divide_no_nan", "dot", "dsplit", "dstack", "einsum", "empty", "empty_like", "equal",
    "exp", "exp2", "expand_dims", "expm1", "eye", "fabs", "flip", "fliplr", "flipud", "floor", "floor_divide",
    "fmax", "fmin", "fmod", "full", "full_like", "gcd", "geomspace", "get_item", "greater", "greater_equal",
    "hamming", "hanning", "heaviside", "histogram", "hsplit", "hstack", "hypot", "i0", "identity", "imag", "inner",
    "isclose", "isfinite", "isin", "isinf", "isnan", "isneginf", "isposinf", "isreal", "kaiser", "kron", "lcm",
    "ldexp", "left_shift", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2", "logaddexp",
    "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "logspace", "matmul", "max", "maximum",
    "mean", "median", "meshgrid", "min", "minimum", "mod", "moveaxis", "multiply", "nan_to_num", "nanargmax",
    "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod",
    "nanquantile", "nanstd", "nansum", "nanvar", "ndim", "negative", "nextafter", "nonzero", "not_equal", "ones",
    "ones_like", "outer", "pad", "percentile", "power", "prod", "ptp", "quantile", "rad2deg", "ravel", "real",
    "reciprocal", "repeat", "reshape", "right_shift", "roll", "rot90", "round", "searchsorted", "select", "sign",
    "signbit", "sin", "sinc", "sinh", "size", "slogdet", "sort", "split", "sqrt", "square", "squeeze", "stack",
    "std", "subtract", "sum", "swapaxes", "take", "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace",
    "transpose", "trapezoid", "tri", "tril", "triu", "true_divide", "trunc", "unique", "unravel_index", "vander",
    "var", "vdot", "vectorize", "view", "vsplit", "vstack", "where", "zeros", "zeros_like",
)

KERAS_OPS_LINALG = (
    "cholesky", "cholesky_inverse", "det", "eig", "eigh", "inv", "jvp", "lstsq", "lu_factor", "matrix_rank", "norm",
    "pinv", "qr", "solve", "solve_triangular", "svd",
)

KERAS_OPS_IMAGE = (
    "affine_transform", "crop_images", "elastic_transform", "extract_patches", "extract_patches_3d",
    "gaussian_blur", "hsv_to_rgb", "map_coordinates", "pad_images", "perspective_transform", "resize",
    "rgb_to_grayscale", "rgb_to_hsv", "scale_and_translate", "sobel_edges", "ssim",
)

_FRAMEWORK = "wraps a model of another framework (JAX, Flax, TensorFlow, PyTorch); kgraph runs NumPy only"
NOT_PROVIDED_LAYERS = {
    "FlaxLayer": _FRAMEWORK,
    "JaxLayer": _FRAMEWORK,
    "TFSMLayer": _FRAMEWORK,
    "TorchModuleWrapper": _FRAMEWORK,
}

NOT_PROVIDED_OPS = {}

NAMESPACES = {"nn": KERAS_OPS_NN, "numpy": KERAS_OPS_NUMPY, "linalg": KERAS_OPS_LINALG, "image": KERAS_OPS_IMAGE}

KERAS_DATASETS = {
    "boston_housing": ("load_data",), "california_housing": ("load_data",), "cifar10": ("load_data",),
    "cifar100": ("load_data",), "fashion_mnist": ("load_data",), "imdb": ("get_word_index", "load_data"),
    "mnist": ("load_data",), "reuters": ("get_label_names", "get_word_index", "load_data"),
}


def test_every_keras_layer_is_provided_or_listed_with_a_reason():
    missing = sorted(n for n in KERAS_LAYERS if n not in dir(layers) and n not in NOT_PROVIDED_LAYERS)
    assert missing == [], f"keras.layers names kgraph neither has nor lists in NOT_PROVIDED_LAYERS: {missing}"


def test_every_keras_op_is_provided_or_listed_with_a_reason():
    missing = sorted(n for n in KERAS_OPS if n not in dir(ops) and n not in NOT_PROVIDED_OPS)
    assert missing == [], f"keras.ops names kgraph neither has nor lists in NOT_PROVIDED_OPS: {missing}"


@pytest.mark.parametrize("namespace", sorted(NAMESPACES))
def test_every_keras_ops_namespace_name_is_provided_or_listed(namespace):
    provided = dir(getattr(ops, namespace))
    missing = sorted(n for n in NAMESPACES[namespace] if n not in provided and n not in NOT_PROVIDED_OPS)
    assert missing == [], f"keras.ops.{namespace} names kgraph.ops.{namespace} lacks: {missing}"
    assert all(getattr(getattr(ops, namespace), n) is getattr(ops, n) for n in provided)


def test_listed_names_are_really_missing_so_the_lists_stay_current():
    namespaced = {n for names in NAMESPACES.values() for n in names}
    assert set(NOT_PROVIDED_LAYERS) <= set(KERAS_LAYERS) and set(NOT_PROVIDED_OPS) <= set(KERAS_OPS) | namespaced
    now_provided = sorted([n for n in NOT_PROVIDED_LAYERS if n in dir(layers)]
                          + [n for n in NOT_PROVIDED_OPS if n in dir(ops)
                             or any(n in dir(getattr(ops, ns)) for ns in NAMESPACES)])
    assert now_provided == [], f"listed as not provided, yet kgraph has them now: {now_provided}"
    assert all(reason.strip() for reason in {**NOT_PROVIDED_LAYERS, **NOT_PROVIDED_OPS}.values())


def test_coverage_counts():
    layer_count = sum(n in dir(layers) for n in KERAS_LAYERS)
    op_count = sum(n in dir(ops) for n in KERAS_OPS)
    assert layer_count + len(NOT_PROVIDED_LAYERS) == len(KERAS_LAYERS) == 175
    assert op_count + len([n for n in NOT_PROVIDED_OPS if n in KERAS_OPS]) == len(KERAS_OPS) == 341


def test_every_keras_datasets_name_is_provided():
    assert sorted(KERAS_DATASETS) == sorted(datasets.__all__)
    missing = sorted(f"{module}.{name}" for module, names in KERAS_DATASETS.items() for name in names
                     if not callable(getattr(getattr(datasets, module, None), name, None)))
    assert missing == [], f"keras.datasets names kgraph.datasets lacks: {missing}"
