"""Regularization layers: dropout variants, noise and activity regularization."""
