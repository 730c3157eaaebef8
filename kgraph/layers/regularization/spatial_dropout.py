"""Spatial dropout: drops whole channels (feature maps) rather than single values."""
from kgraph.layers.arguments import check_data_format
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.regularization.dropout import Dropout


class SpatialDropout1D(Dropout):
    """Dropout of entire channels of ``(batch, steps, channels)``: one draw per example and channel."""

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, noise_shape=(None, 1, None), seed=seed, **kwargs)
        self.input_spec = InputSpec(ndim=3)

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape", None)
        return config


class SpatialDropout2D(Dropout):
    """Dropout of entire channels of ``(batch, rows, cols, channels)``: one draw per example and channel."""

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, noise_shape=(None, 1, 1, None), seed=seed, **kwargs)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=4)

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape", None)
        config["data_format"] = self.data_format
        return config
