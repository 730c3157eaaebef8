"""Core layers: Input, Dense, Identity, EinsumDense, Embedding, Lambda, Masking and the Wrapper base."""
