"""The exporter's defaults, in a leaf module: the command line's help shows them without importing onnx."""

MIN_OPSET = 13
DEFAULT_OPSET = 17
# Rows of one merged run in a written Triton repository's config.pbtxt.
DEFAULT_MAX_BATCH_SIZE = 64
# The distribution on the package index and its extra that brings float16 conversion.
DISTRIBUTION = "kgraph-engine"
FP16_EXTRA = "fp16"
