"""Converters of the complex-number ops."""
