"""Preprocessing layers: numeric, lookup, text, hashing, image, audio and pipelines."""
