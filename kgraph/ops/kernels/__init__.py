"""Numeric kernels behind the ops: sliding windows, Winograd convolution, large-buffer reuse."""
