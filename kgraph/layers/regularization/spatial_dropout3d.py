"""SpatialDropout3D: drops whole channels of a volume."""
from kgraph.layers.arguments import check_data_format
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.regularization.dropout import Dropout


class SpatialDropout3D(Dropout):
    """Dropout of entire channels of a volume: one draw per example and channel."""

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, noise_shape=(None, 1, 1, 1, None), seed=seed, **kwargs)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=5)

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape", None)
        config["data_format"] = self.data_format
        return config
