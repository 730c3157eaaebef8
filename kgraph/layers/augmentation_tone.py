"""Tone-curve augmentation layers of Keras 3 (posterization, solarization, auto-contrast, histogram equalization, CLAHE)."""

__all__ = []
