"""Augmentation policies built from other augmentation layers (RandAugment, AugMix)."""

__all__ = []
