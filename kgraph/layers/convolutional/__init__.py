"""Convolution layers in 1D, 2D and 3D: plain, transposed, depthwise and separable."""
