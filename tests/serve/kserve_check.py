"""Query a running server with KServe's own Python clients; run as a separate process.

KServe's generated gRPC module registers the same protobuf names as tritonclient's, so the
two cannot be imported into one process: the tests start this script on its own.

    python tests/serve/kserve_check.py REST_URL GRPC_ADDRESS MODEL  ->  JSON on stdout
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx
import numpy as np
from kserve import InferenceGRPCClient, InferenceRESTClient, InferInput, InferRequest, RESTConfig
from kserve.protocol.rest.v2_datamodels import InferenceResponse


async def main(rest_url: str, grpc_address: str, model: str) -> dict:
    """Outputs and response ids from KServe's REST and gRPC clients, and its response model's verdicts."""
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(2, 16)
    results = {}
    rest = InferenceRESTClient(RESTConfig(protocol="v2"))
    tensor = InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=False)
    response = await rest.infer(rest_url, InferRequest(model, [tensor], request_id="k-1"), model_name=model)
    results["rest"] = {"id": response.id, "y": response.outputs[0].as_numpy().tolist()}
    await rest.close()
    # A request without 'id': KServe's response model requires the field in the answer.
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 16], "data": x.ravel().tolist()}]}
    async with httpx.AsyncClient() as http:
        raw = (await http.post(f"{rest_url}/v2/models/{model}/infer", json=body)).json()
    results["response model"] = InferenceResponse.model_validate(raw).id
    grpc_client = InferenceGRPCClient(grpc_address)
    tensor = InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    response = await grpc_client.infer(InferRequest(model, [tensor], request_id="k-2"))
    results["grpc"] = {"id": response.id, "y": response.outputs[0].as_numpy().tolist()}
    await grpc_client.close()
    return {"x": x.tolist(), "results": results}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:4]))))
