"""The pipeline's last hop: a trained kgraph model, exported, served, answers like native predict."""
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

import export
import kgraph
from kgraph import layers


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A two-input, two-output kgraph model trained a few steps, and its exported ONNX file."""
    kgraph.utils.set_random_seed(0)
    image = kgraph.Input(shape=(8, 8, 1), name="image")
    extra = kgraph.Input(shape=(3,), name="extra")
    h = layers.Flatten(name="flat")(image)
    h = layers.Concatenate(name="join")([h, extra])
    h = layers.Dense(16, activation="relu", name="hidden")(h)
    probs = layers.Dense(4, activation="softmax", name="probs")(h)
    score = layers.Dense(1, name="score")(h)
    model = kgraph.Model([image, extra], [probs, score], name="two_headed")
    model.compile(optimizer="adam", loss=["sparse_categorical_crossentropy", "mse"])
    rng = np.random.default_rng(0)
    x = [rng.normal(size=(64, 8, 8, 1)).astype("float32"), rng.normal(size=(64, 3)).astype("float32")]
    model.fit(x, [rng.integers(0, 4, size=64), rng.normal(size=(64, 1)).astype("float32")], epochs=2, verbose=0)
    path = tmp_path_factory.mktemp("kgraph_model") / "two_headed.onnx"
    export.to_onnx(model, path)
    return model, path


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_tritonclient_matches_native_predict(trained, start_server, binary):
    model, path = trained
    server = start_server(path)
    rng = np.random.default_rng(1)
    image = rng.normal(size=(5, 8, 8, 1)).astype("float32")
    extra = rng.normal(size=(5, 3)).astype("float32")
    native_probs, native_score = model.predict([image, extra], verbose=0)
    client = httpclient.InferenceServerClient(server.address)
    inputs = [httpclient.InferInput("image", list(image.shape), "FP32"),
              httpclient.InferInput("extra", list(extra.shape), "FP32")]
    inputs[0].set_data_from_numpy(image, binary_data=binary)
    inputs[1].set_data_from_numpy(extra, binary_data=binary)
    outputs = [httpclient.InferRequestedOutput(name, binary_data=binary) for name in ("probs", "score")]
    result = client.infer("two_headed", inputs, outputs=outputs)
    client.close()
    # float32 end to end; onnxruntime's Gemm and NumPy's matmul may sum in different orders.
    np.testing.assert_allclose(result.as_numpy("probs"), native_probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.as_numpy("score"), native_score, rtol=1e-5, atol=1e-5)


def test_tritonclient_grpc_matches_native_predict(trained, start_server):
    model, path = trained
    server = start_server(path)
    rng = np.random.default_rng(2)
    image = rng.normal(size=(3, 8, 8, 1)).astype("float32")
    extra = rng.normal(size=(3, 3)).astype("float32")
    native_probs, native_score = model.predict([image, extra], verbose=0)
    client = grpcclient.InferenceServerClient(server.grpc_address)
    inputs = [grpcclient.InferInput("image", list(image.shape), "FP32"),
              grpcclient.InferInput("extra", list(extra.shape), "FP32")]
    inputs[0].set_data_from_numpy(image)
    inputs[1].set_data_from_numpy(extra)
    result = client.infer("two_headed", inputs, outputs=[grpcclient.InferRequestedOutput("score")])
    probs = client.infer("two_headed", inputs).as_numpy("probs")
    client.close()
    assert result.as_numpy("probs") is None
    # float32 end to end; onnxruntime's Gemm and NumPy's matmul may sum in different orders.
    np.testing.assert_allclose(probs, native_probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.as_numpy("score"), native_score, rtol=1e-5, atol=1e-5)


def test_model_metadata_describes_the_kgraph_model(trained, start_server):
    _, path = trained
    server = start_server(path)
    client = httpclient.InferenceServerClient(server.address)
    meta = client.get_model_metadata("two_headed")
    client.close()
    assert meta["platform"] == "onnxruntime_onnx"
    assert {i["name"]: i["shape"] for i in meta["inputs"]} == {"image": [-1, 8, 8, 1], "extra": [-1, 3]}
    assert {o["name"]: o["shape"] for o in meta["outputs"]} == {"probs": [-1, 4], "score": [-1, 1]}
