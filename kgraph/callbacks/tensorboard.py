"""TensorBoard: scalars, weight histograms and images, and the model graph as TensorBoard event files."""
import collections
import itertools
import json
import os
import struct
import time
import warnings
import zlib

import numpy as np

from kgraph.callbacks.callback import Callback

# Event files are named by the second they are opened; a counter keeps two writers opened
# in the same second (fit, then evaluate) from writing the same file.
_file_counter = itertools.count()


def _events_writer_class():
    try:
        from tensorboardX.event_file_writer import EventsWriter
    except ImportError as err:
        raise ImportError(
            "The TensorBoard callback writes event files with the `tensorboardX` package, which is not installed. "
            'Install it with `pip install "kgraph-engine[tensorboard]"` (or `pip install tensorboardX`).'
        ) from err
    return EventsWriter


class TensorBoard(Callback):
    """Write logs that ``tensorboard --logdir LOG_DIR`` shows, in ``LOG_DIR/train`` and ``LOG_DIR/validation``.

    Scalars ``epoch_<name>`` at each epoch (step = epoch, ``val_`` logs in
    ``validation/`` without the prefix, plus ``epoch_learning_rate``), and
    ``batch_<name>`` every ``update_freq`` batches (``"batch"`` = 1; step = the
    batch count since ``fit`` began). ``evaluate`` writes
    ``evaluation_<name>_vs_iterations`` at the optimizer's iteration count.
    histogram_freq: every that many epochs, a histogram per weight (tag
        ``<weight.path>/histogram``), and with ``write_images`` each 1-D to 3-D
        weight as grayscale images (``<weight.path>/image``; a 3-D kernel gives
        its first three channels).
    write_graph: the graph of layers and operations, with output shapes, in the
        Graphs tab (run graph), and the model's JSON config as the Keras
        conceptual graph (tag ``keras``).
    embeddings_freq: every that many epochs, the ``Embedding`` layers' tables as
        TSV files beside ``projector_config.pbtxt`` in ``log_dir``, which
        TensorBoard's Projector tab reads; ``embeddings_metadata`` is one
        metadata file for all of them or a dict of them by layer name, relative
        to ``log_dir`` (TensorBoard refuses files outside it).
    Profiling is not available (``profile_batch`` must be 0).
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None):
        super().__init__()
        self._events_writer = _events_writer_class()
        if update_freq not in ("batch", "epoch") and (
                isinstance(update_freq, bool) or not isinstance(update_freq, int) or update_freq < 1):
            raise ValueError(f"Unrecognized update_freq: {update_freq!r}. Expected 'batch', 'epoch' or a "
                             "positive integer.")
        if isinstance(histogram_freq, bool) or not isinstance(histogram_freq, int) or histogram_freq < 0:
            raise ValueError(f"`histogram_freq` must be a non-negative integer. Received: "
                             f"histogram_freq={histogram_freq!r}")
        if profile_batch:
            raise ValueError("Profiling is not available in kgraph. "
                             f"Received: profile_batch={profile_batch!r} (must be 0)")
        if isinstance(embeddings_freq, bool) or not isinstance(embeddings_freq, int) or embeddings_freq < 0:
            raise ValueError(f"`embeddings_freq` must be a non-negative integer. Received: "
                             f"embeddings_freq={embeddings_freq!r}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.profile_batch = profile_batch
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers = {}
        self._global_train_batch = 0
        self._should_write_graph = False
        self._batch_start_time = 0.0
        self._epoch_start_time = 0.0
        self._epoch_start_iterations = 0

    def set_model(self, model):
        self._close_writers()
        self.model = model
        self._should_write_graph = bool(self.write_graph)

    # ----- writers ------------------------------------------------------------
    def _write(self, run, step, **fields):
        """Append an event to ``run`` ("train" or "validation"), opening its event file on first use."""
        from tensorboardX.proto.event_pb2 import Event
        if run not in self._writers:
            directory = os.path.join(self.log_dir, run)
            os.makedirs(directory, exist_ok=True)
            suffix = f".{os.getpid()}.{next(_file_counter)}"
            self._writers[run] = self._events_writer(os.path.join(directory, "events"), suffix)
        self._writers[run].write_event(Event(wall_time=time.time(), step=int(step), **fields))

    def _scalars(self, run, values, step, prefix="", suffix=""):
        from tensorboardX.proto.summary_pb2 import Summary
        summary = Summary(value=[Summary.Value(tag=f"{prefix}{name}{suffix}", simple_value=float(value))
                                 for name, value in values.items() if _is_scalar(value)])
        if summary.value:
            self._write(run, step, summary=summary)

    def _flush(self):
        for writer in self._writers.values():
            writer.flush()

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    # ----- hooks ----------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._global_train_batch = 0

    def on_train_end(self, logs=None):
        self._close_writers()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start_time = time.time()
        self._epoch_start_iterations = self._iterations()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        self._batch_start_time = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if self._should_write_graph:
            self._write_graph()
            self._should_write_graph = False
        if self.update_freq == "epoch" or self._global_train_batch % self.update_freq:
            return
        values = dict(logs or {})
        if self.write_steps_per_second:
            values["steps_per_second"] = 1.0 / max(time.time() - self._batch_start_time, 1e-9)
        self._scalars("train", values, self._global_train_batch, prefix="batch_")

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and hasattr(optimizer, "learning_rate"):
            train["learning_rate"] = float(optimizer.learning_rate)
        if self.write_steps_per_second:
            seconds = max(time.time() - self._epoch_start_time, 1e-9)
            train["steps_per_second"] = (self._iterations() - self._epoch_start_iterations) / seconds
        self._scalars("train", train, epoch, prefix="epoch_")
        self._scalars("validation", {k[4:]: v for k, v in logs.items() if k.startswith("val_")}, epoch,
                      prefix="epoch_")
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            self._log_embeddings()
        self._flush()

    def on_test_end(self, logs=None):
        if getattr(self.model, "optimizer", None) is not None:
            self._scalars("validation", logs or {}, self._iterations(), prefix="evaluation_",
                          suffix="_vs_iterations")
            self._flush()

    def _iterations(self):
        optimizer = getattr(self.model, "optimizer", None)
        return int(getattr(optimizer, "iterations", 0))

    # ----- weights ----------------------------------------------------------------
    def _log_weights(self, epoch):
        from tensorboardX.proto.summary_pb2 import Summary
        from tensorboardX.summary import histogram
        seen = set()
        for layer in self.model.layers:
            for weight in layer.weights:
                if id(weight) in seen:
                    continue
                seen.add(id(weight))
                values = np.asarray(weight, dtype=np.float64).ravel()
                values = values[np.isfinite(values)]
                if not values.size:
                    continue
                # TensorFlow's histogram summaries use 30 equal-width buckets.
                self._write("train", epoch, summary=histogram(f"{weight.path}/histogram", values, bins=30))
                if self.write_images:
                    images = _weight_images(np.asarray(weight))
                    tags = [f"{weight.path}/image"] if len(images) == 1 else \
                        [f"{weight.path}/image/{i}" for i in range(len(images))]
                    summary = Summary(value=[Summary.Value(tag=tag, image=_image_proto(image))
                                             for tag, image in zip(tags, images)])
                    if summary.value:
                        self._write("train", epoch, summary=summary)

    def _log_embeddings(self):
        """Write each Embedding table as TSV and the Projector's config naming them."""
        from kgraph.layers import Embedding
        tables = [layer for layer in self.model.layers if isinstance(layer, Embedding)]
        metadata = self.embeddings_metadata
        unknown = sorted(set(metadata) - {layer.name for layer in tables}) if isinstance(metadata, dict) else []
        if unknown:
            raise ValueError("Unrecognized `Embedding` layer names passed to `kgraph.callbacks.TensorBoard` "
                             f"`embeddings_metadata` argument: {unknown}")
        os.makedirs(self.log_dir, exist_ok=True)
        entries = []
        for layer in tables:
            values = np.asarray(layer.embeddings)
            filename = f"{layer.name}_embeddings.tsv"
            np.savetxt(os.path.join(self.log_dir, filename), values, delimiter="\t", fmt="%.9g")
            fields = [("tensor_name", layer.embeddings.path), ("tensor_path", filename)]
            path = metadata.get(layer.name) if isinstance(metadata, dict) else metadata
            if path is not None:
                fields.append(("metadata_path", os.fspath(path)))
            lines = [f"  {key}: {json.dumps(value)}" for key, value in fields]
            lines += [f"  tensor_shape: {size}" for size in values.shape]
            entries.append("embeddings {\n" + "\n".join(lines) + "\n}\n")
        with open(os.path.join(self.log_dir, "projector_config.pbtxt"), "w") as f:
            f.write("".join(entries))

    # ----- graph --------------------------------------------------------------------
    def _write_graph(self):
        from kgraph.models.functional import Functional
        from kgraph.models.sequential import Sequential
        if not isinstance(self.model, (Functional, Sequential)):
            return
        self._write("train", 0, graph_def=graph_def(self.model).SerializeToString())
        try:
            config = self.model.to_json()
        except Exception as err:  # a custom layer without get_config must not stop training
            warnings.warn(f"Model failed to serialize as JSON. Ignoring... {err}", stacklevel=2)
            return
        self._write("train", 0, summary=_keras_model_summary(config))


def _is_scalar(value):
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool) \
        or isinstance(value, np.ndarray) and value.ndim == 0 and np.issubdtype(value.dtype, np.number)


def _keras_model_summary(config):
    """The model's JSON config as the tensor summary TensorBoard's Graphs tab draws as a conceptual graph."""
    from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboardX.proto.tensor_pb2 import TensorProto
    from tensorboardX.proto.types_pb2 import DT_STRING
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="graph_keras_model",
                                                                       content=b"1"))
    tensor = TensorProto(dtype=DT_STRING, string_val=[config.encode("utf-8")])
    return Summary(value=[Summary.Value(tag="keras", metadata=metadata, tensor=tensor)])


def _weight_images(weight):
    """2-D views of a weight: a vector as one row, a matrix wider than tall, a 3-D kernel one per out channel."""
    w = np.squeeze(weight)
    if w.ndim == 1:
        return [w[None, :]]
    if w.ndim == 2:
        return [w.T if w.shape[0] > w.shape[1] else w]
    if w.ndim == 3:  # channels last: one image per output channel, at most 3 as TensorFlow's image summaries
        return [w[:, :, i] for i in range(min(w.shape[2], 3))]
    return []


def _image_proto(values):
    """A ``Summary.Image`` of ``values`` scaled from their min..max to 0..255, as PNG."""
    from tensorboardX.proto.summary_pb2 import Summary
    values = np.asarray(values, dtype=np.float64)
    low, high = np.nanmin(values), np.nanmax(values)
    scaled = np.zeros(values.shape) if high <= low else (values - low) / (high - low)
    pixels = np.nan_to_num(scaled * 255.0).round().astype(np.uint8)
    height, width = pixels.shape
    return Summary.Image(height=height, width=width, colorspace=1, encoded_image_string=_png(pixels))


def _png(pixels):
    """Encode a 2-D uint8 array as an 8-bit grayscale PNG."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    height, width = pixels.shape
    rows = np.concatenate([np.zeros((height, 1), np.uint8), pixels], axis=1)  # filter byte 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes()))
            + chunk(b"IEND", b""))


def graph_def(model):
    """A TensorBoard ``GraphDef`` of ``model``: one node per call of a layer or operation.

    Node names are the operation names (``name/call_<i>`` for a layer called more
    than once in a model); a nested model's nodes sit under its name as a scope, so
    TensorBoard draws it as a group that opens. Each node carries its output shapes
    (``_output_shapes``, -1 for unknown dimensions) and dtypes.
    """
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.graph_pb2 import GraphDef
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
    graph = GraphDef()
    names = {}
    stack = [(model, "", [])]  # (model, name scope, names of the tensors its inputs are bound to)
    while stack:
        current, scope, bound = stack.pop()
        local = _local_names(current, names)
        inputs = {id(t): name for t, name in zip(current.inputs, bound)}
        for node in _nodes(current):
            op = node.outbound_layer
            name = scope + local[id(node)]
            sources = [_source(t, scope, current, names) for t in node.input_tensors]
            if _is_graph_model(op):
                stack.append((op, name + "/", sources))
                continue
            new = graph.node.add(name=name, op=type(op).__name__)
            new.input.extend(sources or [inputs[id(t)] for t in node.output_tensors if id(t) in inputs])
            shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in t.shape])
                      for t in node.output_tensors]
            new.attr["_output_shapes"].CopyFrom(AttrValue(list=AttrValue.ListValue(shape=shapes)))
            dtypes = ", ".join(str(t.dtype) for t in node.output_tensors)
            new.attr["dtype"].CopyFrom(AttrValue(s=dtypes.encode()))
    return graph


def _is_graph_model(op):
    from kgraph.models.functional import Functional
    from kgraph.models.sequential import Sequential
    return isinstance(op, (Functional, Sequential))


def _nodes(model):
    return [node for depth in sorted(model.nodes_by_depth, reverse=True) for node in model.nodes_by_depth[depth]]


def _local_names(model, cache):
    """``{id(node): name}`` for the nodes of ``model`` (cached per model in ``cache``)."""
    if id(model) not in cache:
        nodes = _nodes(model)
        calls = collections.Counter(id(node.outbound_layer) for node in nodes)
        shared = {id(node.outbound_layer): node.outbound_layer for node in nodes
                  if calls[id(node.outbound_layer)] > 1}
        call_index = {id(n): i for op in shared.values() for i, n in enumerate(op._inbound_nodes)}
        cache[id(model)] = {id(node): node.outbound_layer.name if calls[id(node.outbound_layer)] == 1
                            else f"{node.outbound_layer.name}/call_{call_index[id(node)]}" for node in nodes}
    return cache[id(model)]


def _source(tensor, scope, model, cache):
    """The GraphDef name of the node output that ``tensor`` is, looking into nested models' outputs."""
    while True:
        op, node_index, tensor_index = tensor._keras_history
        node = op._inbound_nodes[node_index]
        name = scope + _local_names(model, cache)[id(node)]
        if not _is_graph_model(op):
            return name if tensor_index == 0 else f"{name}:{tensor_index}"
        scope, model, tensor = name + "/", op, op.outputs[tensor_index]
