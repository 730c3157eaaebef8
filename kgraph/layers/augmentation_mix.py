"""Augmentation layers that mix images of a batch (MixUp, CutMix)."""

__all__ = []
