"""``keras.preprocessing``: image and sequence helpers, and the dataset builders of ``keras.utils``."""
from kgraph.preprocessing import image, sequence
from kgraph.utils.dataset_utils import (
    image_dataset_from_directory,
    text_dataset_from_directory,
    timeseries_dataset_from_array,
)

__all__ = ["image", "image_dataset_from_directory", "sequence", "text_dataset_from_directory",
           "timeseries_dataset_from_array"]
