"""The scripts of the peer servers benchmarks/serve_throughput.py starts: a minimal FastAPI server (what a first
version would be) and the transports' floors (a prepared response, no work)."""

MINIMAL_SERVER = '''
import sys

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, Request

session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
input_name = session.get_inputs()[0].name
output_names = [o.name for o in session.get_outputs()]
app = FastAPI()


@app.get("/v2/health/ready")
async def ready():
    return {"ready": True}


@app.post("/v2/models/{model}/infer")
async def infer(model: str, request: Request):
    body = await request.json()
    tensor = body["inputs"][0]
    x = np.asarray(tensor["data"], dtype=np.float32).reshape(tensor["shape"])
    outputs = session.run(output_names, {input_name: x})
    return {
        "model_name": model,
        "outputs": [
            {"name": name, "datatype": "FP32", "shape": list(y.shape), "data": y.ravel().tolist()}
            for name, y in zip(output_names, outputs)
        ],
    }


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
'''

# The transports' floors: the same protocols answering every inference request with a prepared
# response and no work at all (uvicorn with httptools on uvloop for REST, and a bare httptools protocol
# without ASGI; grpcio's asyncio server on uvloop or its thread-pool server for gRPC). What a server costs
# above them is its own.
FLOOR_SERVER = '''
import asyncio
import sys
from concurrent import futures

import grpc
import numpy as np

kind, port = sys.argv[1], int(sys.argv[2])
outputs = np.zeros(10, "<f4").tobytes()
header = (b'{"id":"","model_name":"mlp","model_version":"1","outputs":[{"name":"y","datatype":"FP32",'
          b'"shape":[1,10],"parameters":{"binary_data_size":40}}]}')
# ModelInferResponse{model_name: "mlp", model_version: "1", outputs: [{name: "y", datatype: "FP32",
# shape: [1, 10]}], raw_output_contents: [40 bytes]}, written out in protobuf's wire format.
tensor = b"\\x0a\\x01y\\x12\\x04FP32\\x1a\\x02\\x01\\x0a"
message = b"\\x0a\\x03mlp\\x12\\x011\\x2a" + bytes([len(tensor)]) + tensor + b"\\x32\\x28" + outputs


async def infer(request, context):
    return message


def infer_sync(request, context):
    return message


if kind == "rest":
    import uvicorn

    body = header + outputs
    head = [(b"content-type", b"application/octet-stream"), (b"inference-header-content-length", str(len(header)).encode()),
            (b"content-length", str(len(body)).encode())]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", http="httptools", loop="uvloop",
                lifespan="off")
elif kind == "protocol":
    # No ASGI at all: an asyncio protocol on uvloop feeding httptools' parser, answering each complete request
    # with one write (what serve's direct inference path keeps of HTTP).
    import httptools
    import uvloop

    body = header + outputs
    response = (b"HTTP/1.1 200 OK\\r\\ncontent-type: application/octet-stream\\r\\ninference-header-content-length: "
                + str(len(header)).encode() + b"\\r\\ncontent-length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)

    class Answering(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
            self.parser = httptools.HttpRequestParser(self)

        def data_received(self, data):
            self.parser.feed_data(data)

        def on_message_complete(self):
            self.transport.write(response)

    async def serve_forever():
        server = await asyncio.get_running_loop().create_server(Answering, "127.0.0.1", port)
        await server.serve_forever()

    uvloop.run(serve_forever())
else:
    handler = grpc.method_handlers_generic_handler(
        "inference.GRPCInferenceService",
        {"ModelInfer": grpc.unary_unary_rpc_method_handler(infer if kind == "grpc.aio" else infer_sync)},
    )
    if kind == "grpc.aio":
        import uvloop

        async def main():
            server = grpc.aio.server(handlers=[handler])
            server.add_insecure_port(f"127.0.0.1:{port}")
            await server.start()
            await server.wait_for_termination()

        uvloop.run(main())
    else:
        server = grpc.server(futures.ThreadPoolExecutor(8), handlers=[handler])
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        server.wait_for_termination()
'''
