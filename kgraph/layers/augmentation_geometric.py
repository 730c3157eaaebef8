"""Geometric augmentation layers of Keras 3 (shear, perspective, erasing)."""

__all__ = []
