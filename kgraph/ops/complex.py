"""Complex-number ops of ``keras.ops``."""

__all__ = []
