"""Open Inference Protocol (KServe V2 / Triton, REST and gRPC) server for ONNX models on onnxruntime."""

__version__ = "0.1.0"
