"""Pooling layers: max, average, global and adaptive pooling in 1D, 2D and 3D."""
