"""``keras.device``: the scope Keras runs its computations on a named device in.

kgraph computes with NumPy on the CPU, so a CPU name (``"cpu"``, ``"cpu:0"``, TensorFlow's
``"/device:CPU:0"``) is the one a scope may name; any other device is refused by name rather than
silently run on the CPU. An exported model runs on a GPU through ``python -m serve --device cuda:0``.
"""
import contextlib

__all__ = ["device"]


@contextlib.contextmanager
def device(device_name):
    """Run the enclosed computations on ``device_name`` (only the CPU in kgraph)."""
    if not isinstance(device_name, str):
        raise ValueError(f"Invalid value for argument `device_name`: expected a string such as 'cpu'. "
                         f"Received: device_name={device_name!r}")
    kind = device_name.lower().strip("/").removeprefix("device:").split(":")[0]
    if kind != "cpu":
        raise ValueError(f"kgraph computes with NumPy on the CPU and cannot run on device {device_name!r}. Use "
                         "`keras.device('cpu')`, or export the model and serve it with `python -m serve --device "
                         "cuda:0` to run it on a GPU.")
    yield
