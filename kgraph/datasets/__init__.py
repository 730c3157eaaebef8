"""``keras.datasets``: small NumPy datasets, downloaded once into the Keras cache (``~/.keras/datasets``)."""
from kgraph.datasets import (
    boston_housing,
    california_housing,
    cifar10,
    cifar100,
    fashion_mnist,
    imdb,
    mnist,
    reuters,
)

__all__ = ["boston_housing", "california_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist",
           "reuters"]
