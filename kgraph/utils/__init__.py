"""Utilities of ``keras.utils``: seeding, naming sessions, data helpers, plotting, PyDataset, registration."""
from kgraph.saving.registration import register_keras_serializable
from kgraph.trainers.py_dataset import PyDataset
from kgraph.utils.data import normalize, pad_sequences, to_categorical
from kgraph.utils.plotting import model_to_dot, plot_model
from kgraph.utils.session import clear_session, set_random_seed

__all__ = ["PyDataset", "clear_session", "model_to_dot", "normalize", "pad_sequences", "plot_model",
           "register_keras_serializable", "set_random_seed", "to_categorical"]
