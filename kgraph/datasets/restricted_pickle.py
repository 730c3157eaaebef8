"""Reading the pickles inside Keras's dataset files without letting them run code.

The CIFAR batches are Python 2 pickles of dicts holding a NumPy array, and ``imdb.npz`` and ``reuters.npz`` hold
object arrays of lists of word indices, which ``.npy`` stores as a pickle. The unpickler here imports no global
at all: the NumPy names an array's pickle uses (``_reconstruct``, ``_frombuffer``, ``ndarray``, ``dtype``) are
replaced by inert records, and the array is built afterwards from the record, the way ``numpy.frombuffer`` reads
bytes, after its dtype, shape and data size are checked. Object arrays are accepted only where the caller asks
for them, and may only hold lists of integers. Anything else (``os.system``, ``builtins.eval``, any class)
refuses the file with a ValueError.
"""
import io
import math
import pickle
import re
import zipfile

import numpy as np

_RECONSTRUCT = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct")}
_FROMBUFFER = {("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer")}
# Booleans, integers, floats and complex numbers, and Python objects where the caller allows them.
_DTYPE_SPEC = re.compile(r"[<>|=]?(b1|\?|[iu][1248]|f[248]|c8|c16|O[48]?)")


class _Refused(pickle.UnpicklingError):
    """The pickle asks for something a dataset file never holds."""


class _Global:
    """What the unpickler gives for one of NumPy's allowed names: callable as the name's checked stand-in, with
    no attributes a pickle could set (no ``__dict__``, BUILD refused) and no class to instantiate."""

    __slots__ = ("_call", "_name")

    def __init__(self, name, call):
        self._name, self._call = name, call

    def __call__(self, *args):
        if self._call is None:
            raise _Refused(f"refusing to call {self._name}: a dataset file builds arrays from its own bytes")
        return self._call(*args)

    def __setstate__(self, state):
        raise _Refused(f"refusing to set the state of {self._name}")


_NDARRAY = _Global("numpy.ndarray", None)


class _DType:
    """A dtype the pickle names; BUILD may set its byte order and nothing else."""

    __slots__ = ("dtype",)

    def __init__(self, spec):
        if isinstance(spec, bytes):
            spec = spec.decode("ascii", "replace")
        if not isinstance(spec, str) or not _DTYPE_SPEC.fullmatch(spec):
            raise _Refused(f"refusing the NumPy dtype {spec!r}: a dataset file holds numbers and lists only")
        self.dtype = np.dtype(spec)

    def __setstate__(self, state):
        order = state[1] if isinstance(state, tuple) and len(state) > 1 else None
        order = order.decode("ascii", "replace") if isinstance(order, bytes) else order
        if order not in ("<", ">", "|", "="):
            raise _Refused(f"refusing the dtype state {_short(state)}: its byte order must be '<', '>', '|' or '='")
        if order in "<>" and self.dtype.itemsize > 1:
            self.dtype = self.dtype.newbyteorder(order)


class _Array:
    """An array the pickle describes: ``_reconstruct`` makes it empty, BUILD gives shape, dtype and data."""

    __slots__ = ("allow_objects", "array")

    def __init__(self, allow_objects):
        self.allow_objects = allow_objects
        self.array = None

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[1], tuple)
                and isinstance(state[2], _DType)):
            raise _Refused(f"an array's state must be (version, shape, dtype, fortran, data); received "
                           f"{_short(state)}")
        _, shape, dtype, fortran, data = state
        self.array = _build_array(shape, dtype.dtype, data, bool(fortran), self.allow_objects)


def _short(value, limit=120):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _build_array(shape, dtype, data, fortran, allow_objects):
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise _Refused(f"an array's shape must hold non-negative integers; received {_short(shape)}")
    size, order = math.prod(shape), "F" if fortran else "C"
    if dtype.hasobject:
        if not allow_objects:
            raise _Refused("the file holds an array of Python objects where numbers are expected")
        if not isinstance(data, list) or len(data) != size:
            raise _Refused(f"an object array of shape {shape} needs a list of {size} items")
        if not all(type(item) is list and set(map(type, item)) <= {int} for item in data):
            raise _Refused("an object array of a dataset file may only hold lists of integers")
        array = np.empty(size, dtype=object)
        for i, item in enumerate(data):
            array[i] = item
        return array.reshape(shape, order=order)
    if isinstance(data, str):  # a Python 2 string read with a text encoding
        data = data.encode("latin1")
    if not isinstance(data, (bytes, bytearray)) or len(data) != size * dtype.itemsize:
        raise _Refused(f"an array of shape {shape} and dtype {dtype} needs {size * dtype.itemsize} bytes of data")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order=order).copy()


class _DatasetUnpickler(pickle.Unpickler):
    def __init__(self, file, allow_objects, **kwargs):
        super().__init__(file, **kwargs)
        self.allow_objects = allow_objects
        self._globals = {("numpy", "ndarray"): _NDARRAY, ("numpy", "dtype"): _Global("numpy.dtype", _dtype),
                         **dict.fromkeys(_RECONSTRUCT, _Global("numpy's _reconstruct", self._reconstruct)),
                         **dict.fromkeys(_FROMBUFFER, _Global("numpy's _frombuffer", self._frombuffer))}

    def find_class(self, module, name):
        found = self._globals.get((module, name))
        if found is not None:
            return found
        raise _Refused(f"refusing to load the global '{module}.{name}': a dataset file holds plain data and "
                       "NumPy arrays only")

    def _reconstruct(self, cls, shape, typecode):
        if cls is not _NDARRAY or shape != (0,) or typecode not in ("b", b"b"):
            raise _Refused(f"refusing NumPy's _reconstruct{_short((cls, shape, typecode))}: only the empty "
                           "array NumPy's own pickles start from is allowed")
        return _Array(self.allow_objects)

    def _frombuffer(self, buffer, dtype, shape, order):
        if not (isinstance(buffer, (bytes, bytearray)) and isinstance(dtype, _DType) and isinstance(shape, tuple)
                and order in ("C", "F")):
            raise _Refused(f"refusing NumPy's _frombuffer with dtype {_short(dtype)} and shape {_short(shape)}")
        record = _Array(allow_objects=False)
        record.array = _build_array(shape, dtype.dtype, bytes(buffer), order == "F", allow_objects=False)
        return record


def _dtype(spec, align=False, copy=False):
    return _DType(spec)


def _resolved(value):
    """The loaded value with NumPy's records made arrays: at the top and as the values of a top-level dict."""
    if isinstance(value, _Array):
        if value.array is None:
            raise _Refused("an array in the file is never given its data")
        return value.array
    if isinstance(value, dict):
        return {key: _resolved(item) if isinstance(item, _Array) else item for key, item in value.items()}
    return value


def load_pickle(file, source, encoding="ASCII", allow_object_arrays=False):
    """Unpickle a dataset file's pickle from the open binary ``file``; ``source`` names it in errors."""
    try:
        return _resolved(_DatasetUnpickler(file, allow_object_arrays, encoding=encoding).load())
    except _Refused as err:
        raise ValueError(f"Cannot load '{source}': {err}.") from None
    except RecursionError:
        raise ValueError(f"Cannot load '{source}': it nests values too deeply to be read.") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            UnicodeDecodeError, OverflowError, MemoryError) as err:
        raise ValueError(f"Cannot load '{source}': the file is truncated or corrupt "
                         f"({type(err).__name__}: {_short(str(err))}).") from None


def read_npy(file, source):
    """One ``.npy`` stream: numeric arrays as NumPy reads them without pickles, object arrays through
    ``load_pickle`` (lists of integers only)."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(file)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(file)
        else:
            shape, fortran, dtype = fmt.read_array_header_2_0(file)
    except ValueError as err:
        raise ValueError(f"Cannot load '{source}': it is not a NumPy .npy file ({err}).") from None
    if not dtype.hasobject:
        file.seek(0)
        try:
            return fmt.read_array(file, allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"Cannot load '{source}': {err}.") from None
    array = load_pickle(file, source, allow_object_arrays=True)
    if not isinstance(array, np.ndarray) or array.shape != shape or not array.dtype.hasobject:
        raise ValueError(f"Cannot load '{source}': its pickle does not hold the object array of shape {shape} "
                         "its header announces.")
    return array


def load_npz(path):
    """The arrays of the ``.npz`` archive at ``path`` by name, object arrays included (see ``read_npy``)."""
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if member.endswith(".npy"):
                    with archive.open(member) as raw:
                        arrays[member[:-len(".npy")]] = read_npy(io.BytesIO(raw.read()), f"{path}:{member}")
    except zipfile.BadZipFile as err:
        raise ValueError(f"Cannot load '{path}': it is not an .npz archive ({err}).") from None
    return arrays
