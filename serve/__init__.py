"""Open Inference Protocol (KServe V2 / Triton, REST and gRPC) server for ONNX models on onnxruntime."""

__version__ = "0.1.0"
SERVER_NAME = "kgraph-serve"
# Protocol extensions both the REST and the gRPC endpoints implement.
EXTENSIONS = ["binary_tensor_data", "statistics", "model_repository", "model_configuration"]
