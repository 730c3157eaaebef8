"""The server's defaults, in a leaf module: the command line's help shows them without importing onnxruntime."""

from __future__ import annotations

import os

# Model control modes, as Triton names them.
MODES = ("none", "poll", "explicit")

# Measured on an H100 with onnxruntime-gpu 1.31 (benchmarks/gpu_check.py, README):
# - cudnn_conv_algo_search: EXHAUSTIVE (onnxruntime's default) benchmarks every cuDNN algorithm on
#   the first run of each new input shape, and dynamic batching makes many shapes: 28-32 ms for each
#   new batch size of a small CNN, against 5 ms with HEURISTIC, whose steady runs were as fast
#   (DEFAULT was 5x slower per run).
# - use_tf32: onnxruntime's default lets matrix products round their inputs to TF32, which moved
#   outputs by up to 8.5e-4 of their scale from the CPU's; with 0 they agree to 5e-7, at no
#   measurable cost for these models. A served model should give the numbers it was trained to give.
CUDA_DEFAULTS = {"cudnn_conv_algo_search": "HEURISTIC", "use_tf32": "0"}


def default_threads() -> int:
    """Pool size when --threads is not given: enough to overlap runs, leaving a core to the event loop.

    The event loop (HTTP, gRPC, validation, batching) needs a core of its own: on a 2-core machine one
    inference thread served single-sample MLP requests 12 % faster over REST and gRPC than two, with a lower
    p99 (benchmarks/serve_throughput.py), as fewer threads contend for the cores and batches grow larger.
    """
    return max(1, min(4, (os.cpu_count() or 1) - 1))
