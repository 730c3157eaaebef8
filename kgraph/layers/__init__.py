"""kgraph layers, with Keras's names."""
from kgraph.layers.activations.activation import Activation
from kgraph.layers.activations.activation_layers import ELU, LeakyReLU, PReLU, ReLU, Softmax
from kgraph.layers.aliases import (
                                   AvgPool1D,
                                   AvgPool2D,
                                   Convolution1D,
                                   Convolution2D,
                                   Convolution2DTranspose,
                                   GlobalAvgPool1D,
                                   GlobalAvgPool2D,
                                   GlobalMaxPool1D,
                                   GlobalMaxPool2D,
                                   MaxPool1D,
                                   MaxPool2D,
                                   SeparableConvolution2D,
                                   average,
                                   maximum,
                                   minimum,
                                   multiply,
                                   subtract,
)
from kgraph.layers.attention.attention import AdditiveAttention, Attention
from kgraph.layers.attention.grouped_query_attention import GroupQueryAttention
from kgraph.layers.attention.multi_head_attention import MultiHeadAttention
from kgraph.layers.convolutional.conv import Conv1D, Conv2D
from kgraph.layers.convolutional.conv3d import Conv3D, Convolution3D
from kgraph.layers.convolutional.conv_transpose import (
                                   Conv1DTranspose,
                                   Conv2DTranspose,
                                   Conv3DTranspose,
                                   Convolution1DTranspose,
                                   Convolution3DTranspose,
)
from kgraph.layers.convolutional.depthwise_separable import (
                                   DepthwiseConv1D,
                                   DepthwiseConv2D,
                                   SeparableConv1D,
                                   SeparableConv2D,
                                   SeparableConvolution1D,
)
from kgraph.layers.core.dense import Dense
from kgraph.layers.core.einsum_dense import EinsumDense
from kgraph.layers.core.embedding import Embedding, ReversibleEmbedding
from kgraph.layers.core.identity import Identity
from kgraph.layers.core.input_layer import Input, InputLayer
from kgraph.layers.core.lambda_layer import Lambda
from kgraph.layers.core.masking import Masking
from kgraph.layers.core.wrapper import Wrapper
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.layers.merging.dot import Dot, dot
from kgraph.layers.merging.merging import (
                                   Add,
                                   Average,
                                   Concatenate,
                                   Maximum,
                                   Minimum,
                                   Multiply,
                                   Subtract,
                                   add,
                                   concatenate,
)
from kgraph.layers.normalization.batch_layer_normalization import BatchNormalization, LayerNormalization
from kgraph.layers.normalization.spectral_normalization import SpectralNormalization
from kgraph.layers.normalization.unit_group_rms_normalization import (
                                   GroupNormalization,
                                   RMSNormalization,
                                   UnitNormalization,
)
from kgraph.layers.pooling.adaptive_pooling import (
                                   AdaptiveAveragePooling1D,
                                   AdaptiveAveragePooling2D,
                                   AdaptiveAveragePooling3D,
                                   AdaptiveMaxPooling1D,
                                   AdaptiveMaxPooling2D,
                                   AdaptiveMaxPooling3D,
)
from kgraph.layers.pooling.pooling import (
                                   AveragePooling1D,
                                   AveragePooling2D,
                                   GlobalAveragePooling1D,
                                   GlobalAveragePooling2D,
                                   GlobalMaxPooling1D,
                                   GlobalMaxPooling2D,
                                   MaxPooling1D,
                                   MaxPooling2D,
)
from kgraph.layers.pooling.pooling3d import (
                                   AveragePooling3D,
                                   AvgPool3D,
                                   GlobalAveragePooling3D,
                                   GlobalAvgPool3D,
                                   GlobalMaxPool3D,
                                   GlobalMaxPooling3D,
                                   MaxPool3D,
                                   MaxPooling3D,
)
from kgraph.layers.preprocessing.audio import *  # noqa: F401,F403
from kgraph.layers.preprocessing.augmentation.basic import (
                                   RandomBrightness,
                                   RandomContrast,
                                   RandomCrop,
                                   RandomFlip,
                                   RandomRotation,
                                   RandomTranslation,
                                   RandomZoom,
)
from kgraph.layers.preprocessing.augmentation.color import *  # noqa: F401,F403
from kgraph.layers.preprocessing.augmentation.filters import *  # noqa: F401,F403
from kgraph.layers.preprocessing.augmentation.geometric import *  # noqa: F401,F403
from kgraph.layers.preprocessing.augmentation.mix import *  # noqa: F401,F403
from kgraph.layers.preprocessing.augmentation.policies import *  # noqa: F401,F403
from kgraph.layers.preprocessing.augmentation.tone import *  # noqa: F401,F403
from kgraph.layers.preprocessing.hashing import Hashing
from kgraph.layers.preprocessing.image import CenterCrop, Resizing
from kgraph.layers.preprocessing.lookup import IntegerLookup, StringLookup
from kgraph.layers.preprocessing.numeric import CategoryEncoding, Discretization, Normalization
from kgraph.layers.preprocessing.pipeline_boxes_crossing import *  # noqa: F401,F403
from kgraph.layers.preprocessing.rescaling import Rescaling
from kgraph.layers.preprocessing.text_vectorization import TextVectorization
from kgraph.layers.regularization.activity_noise import (
                                   ActivityRegularization,
                                   AlphaDropout,
                                   GaussianDropout,
                                   GaussianNoise,
)
from kgraph.layers.regularization.dropout import Dropout
from kgraph.layers.regularization.spatial_dropout import SpatialDropout1D, SpatialDropout2D
from kgraph.layers.regularization.spatial_dropout3d import SpatialDropout3D
from kgraph.layers.reshaping.flatten_reshape import Flatten, Reshape
from kgraph.layers.reshaping.permute_repeat import Permute, RepeatVector
from kgraph.layers.reshaping.spatial import (
                                   Cropping1D,
                                   Cropping2D,
                                   UpSampling1D,
                                   UpSampling2D,
                                   ZeroPadding1D,
                                   ZeroPadding2D,
)
from kgraph.layers.reshaping.spatial3d import Cropping3D, UpSampling3D, ZeroPadding3D
from kgraph.layers.rnn.bidirectional import Bidirectional
from kgraph.layers.rnn.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from kgraph.layers.rnn.recurrent import GRU, LSTM, SimpleRNN
from kgraph.layers.rnn.rnn import RNN, TimeDistributed
from kgraph.layers.rnn.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from kgraph.layers.serialization import deserialize, serialize
