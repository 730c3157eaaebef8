"""Attention layers: Attention, AdditiveAttention, MultiHeadAttention, GroupQueryAttention."""
