"""Image filters and warps of ``keras.ops.image``: gaussian_blur, sobel_edges, elastic_transform, scale_and_translate."""

__all__ = []
