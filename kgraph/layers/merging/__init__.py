"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, Dot."""
