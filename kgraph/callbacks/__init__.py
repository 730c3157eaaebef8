"""Training callbacks with Keras 3's names and behaviour."""
from kgraph.callbacks.backup_and_restore import BackupAndRestore
from kgraph.callbacks.callback import Callback, CallbackList
from kgraph.callbacks.csv_logger import CSVLogger
from kgraph.callbacks.early_stopping import EarlyStopping
from kgraph.callbacks.history import History
from kgraph.callbacks.lambda_callback import LambdaCallback
from kgraph.callbacks.learning_rate_scheduler import LearningRateScheduler
from kgraph.callbacks.model_checkpoint import ModelCheckpoint
from kgraph.callbacks.monitor_callback import MonitorCallback
from kgraph.callbacks.progbar import Progbar, ProgbarLogger
from kgraph.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from kgraph.callbacks.remote_monitor import RemoteMonitor
from kgraph.callbacks.swap_ema_weights import SwapEMAWeights
from kgraph.callbacks.tensorboard import TensorBoard
from kgraph.callbacks.terminate_on_nan import TerminateOnNaN
from kgraph.callbacks.unavailable import OrbaxCheckpoint

__all__ = [
    "BackupAndRestore",
    "Callback",
    "CallbackList",
    "CSVLogger",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "MonitorCallback",
    "OrbaxCheckpoint",
    "Progbar",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "RemoteMonitor",
    "SwapEMAWeights",
    "TensorBoard",
    "TerminateOnNaN",
]
