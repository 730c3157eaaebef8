"""Normalization layers: batch, layer, unit, group, RMS and spectral normalization."""
