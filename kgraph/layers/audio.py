"""Audio preprocessing layers: STFTSpectrogram and MelSpectrogram."""

__all__ = []
