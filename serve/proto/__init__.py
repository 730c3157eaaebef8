"""The Open Inference Protocol's gRPC messages and service, generated from inference.proto, and Triton's model
configuration (config.pbtxt), generated from model_config.proto.

inference_pb2.py, inference_pb2_grpc.py and model_config_pb2.py are generated; after editing a .proto,
regenerate them from the repository root with grpcio-tools 1.73.1 (its protobuf 6.31 code
runs on protobuf 6.31 and newer):

    pip install grpcio-tools==1.73.1
    python -m grpc_tools.protoc -I . --python_out=. --grpc_python_out=. serve/proto/inference.proto
    python -m grpc_tools.protoc -I . --python_out=. serve/proto/model_config.proto
"""
