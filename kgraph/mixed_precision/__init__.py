"""``keras.mixed_precision``: dtype policies under their mixed-precision names, and ``LossScaleOptimizer``."""
from kgraph.dtype_policies import DTypePolicy, dtype_policy, set_dtype_policy
from kgraph.optimizers.loss_scale_optimizer import LossScaleOptimizer

Policy = DTypePolicy
global_policy = dtype_policy
set_global_policy = set_dtype_policy

__all__ = ["DTypePolicy", "LossScaleOptimizer", "Policy", "dtype_policy", "global_policy", "set_dtype_policy",
           "set_global_policy"]
