"""kgraph layers, with Keras's names."""
from kgraph.input_layer import Input, InputLayer
from kgraph.input_spec import InputSpec
from kgraph.layer import Layer
from kgraph.layers.core import Activation, Dense, Dropout, Identity
from kgraph.layers.merging import (Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract, add,
                                   concatenate)
from kgraph.layers.reshaping import Flatten, Reshape
from kgraph.layers.recurrent import GRU, LSTM, SimpleRNN
from kgraph.layers.rnn import RNN, TimeDistributed
from kgraph.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from kgraph.layers.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from kgraph.layers.convolutional import Conv1D, Conv2D
from kgraph.layers.depthwise_separable import DepthwiseConv2D, SeparableConv2D
from kgraph.layers.embedding import Embedding
from kgraph.layers.masking_layer import Masking
from kgraph.layers.normalization import BatchNormalization, LayerNormalization
from kgraph.layers.pooling import (AveragePooling1D, AveragePooling2D, GlobalAveragePooling1D,
                                   GlobalAveragePooling2D, GlobalMaxPooling1D, GlobalMaxPooling2D, MaxPooling1D,
                                   MaxPooling2D)
from kgraph.layers.rescaling import Rescaling
from kgraph.layers.reshaping_extra import Permute, RepeatVector
from kgraph.layers.spatial import Cropping1D, Cropping2D, UpSampling1D, UpSampling2D, ZeroPadding1D, ZeroPadding2D
from kgraph.layers.spatial_dropout import SpatialDropout1D, SpatialDropout2D
from kgraph.layers.bidirectional import Bidirectional
from kgraph.layers.multi_head_attention import MultiHeadAttention
from kgraph.layers.attention import AdditiveAttention, Attention
from kgraph.layers.activation_layers import ELU, LeakyReLU, PReLU, ReLU, Softmax
from kgraph.layers.aliases import (AvgPool1D, AvgPool2D, Convolution1D, Convolution2D, Convolution2DTranspose,
                                   GlobalAvgPool1D, GlobalAvgPool2D, GlobalMaxPool1D, GlobalMaxPool2D, MaxPool1D,
                                   MaxPool2D, SeparableConvolution2D, average, maximum, minimum, multiply, subtract)
from kgraph.layers.dot import Dot, dot
from kgraph.layers.einsum_dense import EinsumDense
from kgraph.layers.lambda_layer import Lambda
from kgraph.layers.normalization_extra import GroupNormalization, RMSNormalization, UnitNormalization
from kgraph.layers.regularization import ActivityRegularization, AlphaDropout, GaussianDropout, GaussianNoise
from kgraph.layers.convolutional3d import (AveragePooling3D, AvgPool3D, Conv3D, Convolution3D, Cropping3D,
                                           GlobalAveragePooling3D, GlobalAvgPool3D, GlobalMaxPool3D, GlobalMaxPooling3D,
                                           MaxPool3D, MaxPooling3D, SpatialDropout3D, UpSampling3D, ZeroPadding3D)
from kgraph.layers.conv_transpose import (Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, Convolution1DTranspose,
                                          Convolution3DTranspose)
from kgraph.layers.conv1d_variants import DepthwiseConv1D, SeparableConv1D, SeparableConvolution1D
from kgraph.layers.grouped_query_attention import GroupQueryAttention
from kgraph.layers.spectral_normalization import SpectralNormalization
from kgraph.layers.adaptive_pooling import (AdaptiveAveragePooling1D, AdaptiveAveragePooling2D,
                                            AdaptiveAveragePooling3D, AdaptiveMaxPooling1D, AdaptiveMaxPooling2D,
                                            AdaptiveMaxPooling3D)
from kgraph.layers.preprocessing_numeric import CategoryEncoding, Discretization, Normalization
from kgraph.layers.preprocessing_hashing import Hashing
from kgraph.layers.preprocessing_lookup import IntegerLookup, StringLookup
from kgraph.layers.preprocessing_text import TextVectorization
from kgraph.layers.preprocessing_image import CenterCrop, Resizing
from kgraph.layers.augmentation import (RandomBrightness, RandomContrast, RandomCrop, RandomFlip, RandomRotation,
                                        RandomTranslation, RandomZoom)
from kgraph.layers.augmentation_color import *  # noqa: F401,F403
from kgraph.layers.augmentation_tone import *  # noqa: F401,F403
from kgraph.layers.augmentation_filters import *  # noqa: F401,F403
from kgraph.layers.augmentation_geometric import *  # noqa: F401,F403
from kgraph.layers.augmentation_mix import *  # noqa: F401,F403
from kgraph.layers.augmentation_policies import *  # noqa: F401,F403
from kgraph.layers.preprocessing_extra import *  # noqa: F401,F403
from kgraph.layers.audio import *  # noqa: F401,F403
from kgraph.layers.wrapper import Wrapper
from kgraph.layers.serialization_api import deserialize, serialize
from kgraph.layers.embedding import ReversibleEmbedding
