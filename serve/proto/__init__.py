"""The Open Inference Protocol's gRPC messages and service, generated from inference.proto.

inference_pb2.py and inference_pb2_grpc.py are generated; after editing inference.proto,
regenerate them from the repository root with grpcio-tools 1.73.1 (its protobuf 6.31 code
runs on protobuf 6.31 and newer):

    pip install grpcio-tools==1.73.1
    python -m grpc_tools.protoc -I . --python_out=. --grpc_python_out=. serve/proto/inference.proto
"""
