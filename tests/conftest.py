"""Settings for the whole suite: Keras comparisons run Keras 3 on its torch backend (the one the extra installs)."""
import os

# Before any test module imports keras: Keras reads the backend once, at its first import.
os.environ.setdefault("KERAS_BACKEND", "torch")
