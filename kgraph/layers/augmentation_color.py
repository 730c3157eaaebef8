"""Random color augmentation layers of Keras 3 (hue, saturation, jitter, degeneration, grayscale, sharpness, invert)."""

__all__ = []
