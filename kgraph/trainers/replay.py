"""``fit``'s, ``evaluate``'s and ``predict``'s steps replayed: the ops of forward pass, loss and gradient traced,
then run again.

As Keras traces ``train_step``, ``test_step`` and ``predict_step`` into graphs
once per input signature (when ``run_eagerly`` is False), ``fit``,
``evaluate`` (and ``fit``'s validation) and ``predict`` trace the default
steps' op calls (``kgraph.backend.step_trace``) and replay them on later
batches of the same shapes and dtypes: the same op functions and VJPs in the
same order, so the same losses, weights, metrics and outputs bit for bit,
without the Python of layer calls, loss objects and tape bookkeeping. What
replaying could change is not replayed, and the step runs as written:

- a model of another class than ``Functional`` and ``Sequential``, or one whose
  steps, ``compute_loss`` or metrics methods are overridden;
  ``run_eagerly=True`` or ``jit_compile=False`` in ``compile``; an optimizer
  that scales the loss (``LossScaleOptimizer``);
- a layer outside the list below (random layers other than ``Dropout`` and
  the augmentation layers listed, which draw by ops of the step; ``Lambda``,
  custom layers and cells, whose Python no trace can vouch for), a layer with
  an activity regularizer or added losses, an activation or loss that is not
  one of kgraph's own;
- a trace that ``StepTrace`` refuses, or two traces of the same signature that
  differ (a constant that changes from step to step).

A signature is traced on its first two steps, replayed from the third; the traces
are kept from one call to the next until ``compile`` is called again.
"""
import weakref

import numpy as np

from kgraph import layers as layers_module
from kgraph import tree
from kgraph.backend.autodiff import GradientTape, is_recording
from kgraph.backend.step_trace import StepTrace
from kgraph.layers.structure import structure_version
from kgraph.trainers.data_adapter import unpack_x_y_sample_weight

__all__ = ["ReplayedPredictStep", "ReplayedStep", "ReplayedTestStep", "ReplayedTrainStep", "describe", "forget",
           "replayed_predict_step", "replayed_test_step", "replayed_train_step"]

_LAYERS = (
    "Activation Add AdditiveAttention Attention Average AveragePooling1D AveragePooling2D AveragePooling3D "
    "BatchNormalization Bidirectional CategoryEncoding CenterCrop Concatenate Conv1D Conv1DTranspose Conv2D "
    "Conv2DTranspose Conv3D Conv3DTranspose Cropping1D Cropping2D Cropping3D Dense DepthwiseConv1D DepthwiseConv2D Dot "
    "Dropout EinsumDense ELU Embedding Flatten GlobalAveragePooling1D GlobalAveragePooling2D GlobalAveragePooling3D "
    "GlobalMaxPooling1D GlobalMaxPooling2D GlobalMaxPooling3D GroupNormalization GroupQueryAttention GRU GRUCell "
    "Identity InputLayer LayerNormalization LeakyReLU LSTM LSTMCell Masking Maximum MaxPooling1D MaxPooling2D "
    "MaxPooling3D Minimum MultiHeadAttention Multiply Normalization Permute PReLU RandomBrightness RandomContrast "
    "RandomFlip RandomRotation RandomTranslation RandomZoom ReLU RepeatVector Rescaling Reshape Resizing "
    "RMSNormalization RNN SeparableConv1D SeparableConv2D SimpleRNN SimpleRNNCell Softmax StackedRNNCells Subtract "
    "TimeDistributed UnitNormalization UpSampling1D UpSampling2D UpSampling3D ZeroPadding1D ZeroPadding2D "
    "ZeroPadding3D"
).split()
_ALLOWED = []  # the classes of _LAYERS, once looked up
_MAX_SIGNATURES = 8
# Methods a model or layer may have replaced on the instance, which the step calls.
_OWN_METHODS = frozenset(["train_step", "compute_loss", "_compute_loss", "_loss_and_gradients", "_apply_gradients",
                          "compute_metrics", "_update_compiled_metrics", "get_metrics_result", "call", "__call__",
                          "test_step", "_test_loss", "_record_test", "predict_step"])


# model -> its ReplayedStep, kept from one `fit` to the next (as Keras keeps its train function) until `compile`.
_STEPS = weakref.WeakKeyDictionary()
_TEST_STEPS = weakref.WeakKeyDictionary()  # the same for evaluate's (and fit's validation's) test_step
_PREDICT_STEPS = weakref.WeakKeyDictionary()  # and for predict's predict_step


def replayed_train_step(model):
    """``model.train_step``, or a step that replays it where it may (see the module's docstring)."""
    return _replayed(model, "train_step", _STEPS, ReplayedTrainStep)


def replayed_test_step(model):
    """``model.test_step``, or a step that replays its forward pass and loss where it may."""
    return _replayed(model, "test_step", _TEST_STEPS, ReplayedTestStep)


def replayed_predict_step(model):
    """``model.predict_step``, or a step that replays its forward pass where it may."""
    return _replayed(model, "predict_step", _PREDICT_STEPS, ReplayedPredictStep)


def _replayed(model, method, steps, kind):
    if _written(model, method) is not None:
        return getattr(model, method)
    step = steps.get(model)
    if step is None:
        step = steps[model] = kind(model)
    step.replayable = None  # checked again at this call's first step: layers may have changed since the last one
    step._held = None
    return step


def _written(model, method):
    """Why every ``method`` step of ``model`` runs as written (its class, its steps, its compile settings), or
    None."""
    from kgraph.trainers.trainer import Trainer
    cls = type(model)
    # (an uncompiled model, which predict takes, has neither setting yet)
    if getattr(model, "run_eagerly", False):
        return "compiled with run_eagerly=True"
    if getattr(model, "jit_compile", "auto") is False:
        return "compiled with jit_compile=False"
    if not _model_class(cls):
        return f"a model of class {cls.__name__} (only Functional and Sequential models replay)"
    if getattr(cls, method) is not getattr(Trainer, method) or cls.compute_loss is not Trainer.compute_loss:
        return f"the model's class overrides {method} or compute_loss"
    if not _OWN_METHODS.isdisjoint(vars(model)):
        return "the model has a method replaced on the instance"
    return None


def forget(model):
    """Drop the traces of ``model`` (``compile`` calls it: a new optimizer, loss or metrics)."""
    for steps in (_STEPS, _TEST_STEPS, _PREDICT_STEPS):
        steps.pop(model, None)


def _model_class(cls):
    from kgraph.models.functional import Functional
    from kgraph.models.sequential import Sequential
    return cls is Functional or cls is Sequential


def _kgraph_callable(fn):
    module = getattr(fn, "__module__", None) or type(fn).__module__
    return module == "kgraph" or module.startswith("kgraph.")


def _allowed_layers():
    """The classes named in ``_LAYERS`` (looked up once: every ``fit``, ``evaluate`` and ``predict`` asks)."""
    if not _ALLOWED:
        _ALLOWED.append(frozenset(getattr(layers_module, name) for name in _LAYERS))
    return _ALLOWED[0]


def _refusal(model, losses=True):
    """Why ``model``'s steps run as written (a layer, the loss or the optimizer), or None where they may replay."""
    from kgraph.layers.layer import _LOSS_HOLDERS
    from kgraph.losses.loss import LossFunctionWrapper
    from kgraph.optimizers.optimizer import Optimizer
    if losses and type(model.optimizer).scale_loss is not Optimizer.scale_loss:
        return f"the optimizer {type(model.optimizer).__name__} scales the loss"
    if losses and model._compile_loss is None:
        return "the model is compiled without a loss"
    allowed = _allowed_layers()
    for layer in model._flatten_layers(include_self=True):
        name = f"layer '{layer.name}' ({type(layer).__name__})"
        if layer in _LOSS_HOLDERS or getattr(layer, "activity_regularizer", None) is not None:
            return f"{name} adds losses (an activity regularizer or add_loss)"
        if layer is not model and not (type(layer) in allowed or _model_class(type(layer))):
            return f"{name} is not one of the layers a trace can vouch for"
        if not _OWN_METHODS.isdisjoint(vars(layer)):
            return f"{name} has a method replaced on the instance"
        if getattr(layer, "stateful", False):
            return f"{name} is stateful"
        for attribute in ("activation", "recurrent_activation"):
            fn = getattr(layer, attribute, None)
            if fn is not None and not _kgraph_callable(fn):
                return f"{name} has an {attribute} of its own"
    for loss in (model._compile_loss.losses or ()) if losses else ():
        if loss is None:
            continue
        fn = loss.fn if isinstance(loss, LossFunctionWrapper) else loss
        if not _kgraph_callable(fn):
            return f"the loss {getattr(fn, '__name__', type(fn).__name__)} is not one of kgraph's"
    return None


def describe(model):
    """What ``fit``, ``evaluate`` and ``predict`` did with ``model``'s steps so far: for each, ``"model"`` (why
    its steps run as written, or None) and ``"signatures"``: each batch signature traced (the shapes and dtypes of
    ``(x, y, sample_weight)``) mapped to ``"confirmed"`` (traced twice alike: replayed from its third batch on),
    ``"traced once"``, or why its trace was refused. A call not made yet (or not since ``compile``) has no
    signatures; where the model's class, its steps or its compile settings keep every step as written, its
    ``"model"`` says so."""
    out = {}
    for call, method, steps in (("fit", "train_step", _STEPS), ("evaluate", "test_step", _TEST_STEPS),
                                ("predict", "predict_step", _PREDICT_STEPS)):
        step = steps.get(model)
        reason = _written(model, method) or (step.refused if step is not None else None)
        signatures = {} if step is None else {
            _signature_text(key[0]): entry if type(entry) is str else ("confirmed" if entry.confirmed else "traced once")
            for key, entry in step.programs.items()}
        out[call] = {"model": reason, "signatures": signatures}
    return out


class ReplayedStep:
    """A step of ``fit`` or ``evaluate``: traced twice per signature, then replayed (see the module's docstring)."""

    _method = None  # the model's step this one replays
    _losses = True  # whether the step computes the compiled loss

    def __init__(self, model):
        self._model = weakref.ref(model)  # (a strong one would keep the model, the key of _STEPS, alive forever)
        self.replayable = None  # decided at the first step, once the model is built and its loss matched
        self.refused = None     # and why not, where not
        self.programs = {}      # signature -> a first trace's Program, a confirmed one, or why it is not replayed
        self._held = None       # (layers.structure_version(), the step's variables, their ids) while it stands

    def __call__(self, data, logs=True):
        """The step's logs, as the model's step; ``logs=False``: None, the metrics' results left unread (their
        states updated all the same)."""
        model = self._model()
        if self.replayable is None:
            if not model.built or self._losses and (model._compile_loss is None or not model._compile_loss.built):
                return getattr(model, self._method)(data)
            self.refused = _refusal(model, self._losses)
            self.replayable = self.refused is None
        if not self.replayable or is_recording():  # (an outer tape records the step as written)
            return getattr(model, self._method)(data)
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        leaves = []
        signature = _signature((x, y, sample_weight), leaves)
        if signature is None:
            return getattr(model, self._method)(data)
        variables, ids = self._held_variables(model)
        key = (signature, ids)
        entry = self.programs.get(key)
        if type(entry) is str or (entry is None and len(self.programs) >= _MAX_SIGNATURES):
            return getattr(model, self._method)(data)
        if entry is not None and entry.confirmed:
            loss, outputs, grads = entry.run(leaves)
            if entry.tracked:  # the outputs' losses, which their trackers record as the step as written does
                count = len(outputs) - len(entry.tracked)
                for (tracker, size), value in zip(entry.tracked, outputs[count:]):
                    tracker.update_state(value, sample_weight=size)
                outputs = outputs[:count]
            y_pred = outputs[0] if entry.structure is None else tree.pack_sequence_as(entry.structure, outputs)
        else:
            loss, y_pred, variables, grads = self._traced(x, y, sample_weight, leaves, variables, key, entry)
        return self._finish(model, x, y, sample_weight, loss, y_pred, variables, grads, logs)

    def _held_variables(self, model):
        """``(variables, their ids)`` the step differentiates: ``_variables(model)`` once, then again only after a
        change to a layer's trainable flag, sub-layers or weights (``layers.structure_version``); listing a
        model's trainable weights walks every layer, at every step otherwise."""
        version, held = structure_version(), self._held
        if held is not None and held[0] == version:
            return held[1], held[2]
        variables = self._variables(model)
        ids = tuple([id(v) for v in variables])
        self._held = (version, variables, ids)
        return variables, ids

    def _traced(self, x, y, sample_weight, leaves, variables, key, entry):
        """The step as written, traced; the trace becomes the signature's program, or confirms or refuses it."""
        model = self._model()
        batch_size = leaves[0].shape[0] if leaves[0].ndim else 0
        trace = StepTrace(leaves, model.weights, batch_size)
        if batch_size < 2:
            trace.fail("a batch of fewer than two rows")
        compile_loss = model._compile_loss if self._losses else None
        if compile_loss is not None:
            compile_loss.deferred = []  # several losses: each output's tracker updated after the traced part
        try:
            with trace:
                scaled, loss, y_pred, traced_variables, grads = self._traced_part(model, x, y, sample_weight)
        finally:
            pending = []
            if compile_loss is not None:
                pending, compile_loss.deferred = compile_loss.deferred, None
        for tracker, value, size in pending:
            tracker.update_state(value, sample_weight=size)
        if [id(v) for v in traced_variables] != list(key[1]):
            trace.fail("the step changed the trainable variables")
        program = trace.program(scaled, loss, tree.flatten(y_pred) + [value for _, value, _ in pending],
                                traced_variables)
        tracked = [(tracker, size) for tracker, _, size in pending]
        if program is None:
            self.programs[key] = trace.failed
        elif entry is None:
            program.structure = tree.map_structure(lambda _: None, y_pred)
            program.tracked = tracked
            self.programs[key] = program
        elif entry.same_as(program) and [(id(t), s) for t, s in entry.tracked] == [(id(t), s) for t, s in tracked]:
            entry.confirmed = True
        else:
            self.programs[key] = "two steps of the same signature ran different ops or constants"
        return loss, y_pred, traced_variables, grads


class ReplayedTrainStep(ReplayedStep):
    """``fit``'s ``train_step``: forward pass, loss and gradients replayed; the optimizer and metrics as written."""

    _method = "train_step"

    @staticmethod
    def _variables(model):
        return model.trainable_weights

    @staticmethod
    def _traced_part(model, x, y, sample_weight):
        return model._loss_and_gradients(x, y, sample_weight)

    @staticmethod
    def _finish(model, x, y, sample_weight, loss, y_pred, variables, grads, logs):
        return model._apply_gradients(x, y, sample_weight, loss, y_pred, variables, grads, logs)


class ReplayedTestStep(ReplayedStep):
    """``evaluate``'s ``test_step`` (and ``fit``'s validation's): the forward pass in inference mode and the loss
    replayed (traced under a tape that takes no gradient); the loss tracker and metrics as written."""

    _method = "test_step"

    @staticmethod
    def _variables(model):
        return []

    @staticmethod
    def _traced_part(model, x, y, sample_weight):
        with GradientTape():  # a trace captures the ops a tape records: values unchanged, no gradient taken
            loss, y_pred = model._test_loss(x, y, sample_weight)
        return loss, loss, y_pred, [], None

    @staticmethod
    def _finish(model, x, y, sample_weight, loss, y_pred, variables, grads, logs):
        return model._record_test(x, y, sample_weight, loss, y_pred, logs)


class ReplayedPredictStep(ReplayedStep):
    """``predict``'s ``predict_step``: the forward pass in inference mode replayed (traced under a tape that takes
    no gradient); the model need not be compiled."""

    _method = "predict_step"
    _losses = False

    @staticmethod
    def _variables(model):
        return []

    @staticmethod
    def _traced_part(model, x, y, sample_weight):
        with GradientTape():
            return None, None, model(x, training=False), [], None

    @staticmethod
    def _finish(model, x, y, sample_weight, loss, y_pred, variables, grads, logs):
        return y_pred


def _signature_text(signature):
    """A batch signature (``_signature``) as text: ``((32, 4) float32, (32,) int64, None)``."""
    if signature[0] in ("tuple", "list"):
        return "(" + ", ".join(_signature_text(part) for part in signature[1]) + ")"
    if signature[0] == "dict":
        return "{" + ", ".join(f"{k!r}: {_signature_text(p)}" for k, p in zip(signature[1], signature[2])) + "}"
    shape, dtype = signature
    return "None" if shape is None else f"{shape} {np.dtype(dtype).name}"


def _signature(data, leaves):
    """The structure, shapes and dtypes of a batch (its arrays appended to ``leaves``); None if not all arrays."""
    if type(data) is np.ndarray:
        leaves.append(data)
        return data.shape, data.dtype.str
    if data is None:
        leaves.append(None)
        return None, None
    if type(data) in (tuple, list):
        parts = []
        for d in data:  # (a loop: a batch's signature is taken at every step)
            part = _signature(d, leaves)
            if part is None:
                return None
            parts.append(part)
        return type(data).__name__, tuple(parts)
    if type(data) is dict:
        try:
            keys = sorted(data)
        except TypeError:  # keys of several types
            return None
        parts = [_signature(data[k], leaves) for k in keys]
        return None if any(p is None for p in parts) else ("dict", tuple(keys), tuple(parts))
    return None
