"""Intersection-over-union metrics from an accumulated class confusion matrix."""
import warnings

import numpy as np

from kgraph import backend
from kgraph.metrics.metric import Metric, to_numpy
from kgraph.metrics.metrics_utils import confusion_matrix


class _IoUBase(Metric):
    """A ``(num_classes, num_classes)`` confusion matrix (rows: labels, columns: predictions), integer by default."""
    # ignore_class: a label whose entries are left out; sparse_y_true / sparse_y_pred False: one-hot labels or
    # scores, reduced by argmax along `axis`.

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(name=name, dtype=dtype or "int32")
        self.num_classes = num_classes
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_variable(name="total_confusion_matrix", shape=(num_classes, num_classes),
                                          initializer="zeros", dtype=self.dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        if not self.sparse_y_true:
            y_true = np.argmax(to_numpy(y_true), axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = np.argmax(to_numpy(y_pred), axis=self.axis)
        y_true = to_numpy(y_true).astype(self.dtype).ravel()
        y_pred = to_numpy(y_pred).astype(self.dtype).ravel()
        if sample_weight is None:
            sample_weight = 1
        elif "float" in str(getattr(sample_weight, "dtype", "")) and "int" in self.dtype:
            warnings.warn("You are passing weight as `float`, but dtype is `int`. This may result in an incorrect "
                          "weight due to type casting Consider using integer weights.", stacklevel=2)
        weight = np.broadcast_to(to_numpy(sample_weight).astype(self.dtype).ravel(), y_true.shape)
        valid = (y_true >= 0) & (y_true < self.num_classes) & (y_pred >= 0) & (y_pred < self.num_classes)
        if self.ignore_class is not None:
            valid &= y_true != self.ignore_class
        current = confusion_matrix(np.where(valid, y_true, 0), np.where(valid, y_pred, 0), self.num_classes,
                                   weights=np.where(valid, weight, 0), dtype=self.dtype)
        self.total_cm.assign(self.total_cm.value + current)


class IoU(_IoUBase):
    """The mean IoU of the classes ``target_class_ids`` (``tp / (tp + fp + fn)`` each)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(name=name, num_classes=num_classes, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred, axis=axis, dtype=dtype)
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"Target class id {max(target_class_ids)} is out of range, which is [0, {num_classes}).")
        self.target_class_ids = list(target_class_ids)

    def result(self):
        cm = self.total_cm.value.astype(np.float64)
        true_positives = np.diag(cm)
        denominator = cm.sum(axis=0) + cm.sum(axis=1) - true_positives
        true_positives = true_positives[self.target_class_ids]
        denominator = denominator[self.target_class_ids]
        valid = denominator > 1e-9
        iou = np.where(valid, true_positives / (denominator + backend.epsilon()), 0.0)
        return np.float32(np.sum(iou, axis=self.axis) / (np.sum(valid) + backend.epsilon()))

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of binary labels against ``y_pred >= threshold``."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(num_classes=2, target_class_ids=target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = to_numpy(y_pred, np.float32) >= self.threshold
        super().update_state(y_true, y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold, "name": self.name,
                "dtype": self.dtype}


class MeanIoU(IoU):
    """The IoU averaged over all ``num_classes`` classes."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(name=name, num_classes=num_classes, target_class_ids=list(range(num_classes)), axis=axis,
                         dtype=dtype, ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class OneHotIoU(IoU):
    """``IoU`` for one-hot labels (and scores, unless ``sparse_y_pred``)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes=num_classes, target_class_ids=target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "target_class_ids": self.target_class_ids, "name": self.name,
                "dtype": self.dtype, "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class OneHotMeanIoU(MeanIoU):
    """``MeanIoU`` for one-hot labels (and scores, unless ``sparse_y_pred``)."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes=num_classes, axis=axis, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}
