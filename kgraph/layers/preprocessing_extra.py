"""Pipeline, MaxNumBoundingBoxes and HashedCrossing preprocessing layers."""

__all__ = []
