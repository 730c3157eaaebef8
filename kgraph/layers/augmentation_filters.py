"""Filtering augmentation layers of Keras 3 (Gaussian blur, elastic transform)."""

__all__ = []
