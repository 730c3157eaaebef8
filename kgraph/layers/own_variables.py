"""A layer's own variables loaded from a weights store (``load_own_variables``), every key and shape checked
before any variable changes."""
import numpy as np


def assign_own(layer, variables, store, exact=True):
    """Assign ``variables`` from ``store["0"]``, ``store["1"]``, ... checking keys (and with ``exact``, that
    there are no others) and shapes first."""
    keys = [str(i) for i in range(len(variables))]
    if (exact and len(store.keys()) != len(variables)) or any(k not in store for k in keys):
        raise ValueError(f"Layer '{layer.name}' expected {len(variables)} variables under keys {keys}, but the "
                         f"saved store holds {sorted(store.keys())}.")
    for key, variable in zip(keys, variables):
        value = np.asarray(store[key])
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"Layer '{layer.name}': saved variable {key} has shape {tuple(value.shape)}, but "
                             f"'{variable.path}' has shape {tuple(variable.shape)}.")
    for key, variable in zip(keys, variables):
        variable.assign(np.asarray(store[key]))
