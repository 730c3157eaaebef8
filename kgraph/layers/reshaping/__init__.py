"""Reshaping layers: Flatten, Reshape, Permute, RepeatVector, upsampling, padding, cropping."""
