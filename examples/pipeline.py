"""The whole pipeline on scikit-learn's bundled digits: train, save, export, serve, query, compare.

    python examples/pipeline.py [--workdir pipeline_out] [--epochs 20]

1. trains a kgraph MLP on 8x8 digit images (shipped inside scikit-learn, no download);
2. ``model.save("model.pkl")``;
3. ``python -m export model.pkl --verify --triton-repo repo`` (ONNX + Triton-style repository);
4. starts ``python -m serve repo`` on a free loopback port;
5. sends the held-out images with NVIDIA's ``tritonclient`` (binary tensors, concurrently);
6. prints native vs served agreement and accuracy, then stops the server with SIGTERM.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np

import kgraph
from kgraph import layers


def load_digits():
    from sklearn.datasets import load_digits as sklearn_digits
    digits = sklearn_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    order = np.random.default_rng(0).permutation(len(x))
    return x[order], y[order]


def train(x, y, epochs):
    kgraph.utils.set_random_seed(0)
    inputs = kgraph.Input(shape=(64,), name="pixels")
    h = layers.Dense(128, activation="relu", name="hidden_1")(inputs)
    h = layers.Dropout(0.1, name="dropout")(h)
    h = layers.Dense(64, activation="relu", name="hidden_2")(h)
    outputs = layers.Dense(10, activation="softmax", name="digit")(h)
    model = kgraph.Model(inputs, outputs, name="digits_mlp")
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=32, epochs=epochs, validation_split=0.1, verbose=2)
    return model


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(client, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited early with code {proc.returncode}")
        try:
            if client.is_server_ready():
                return
        except Exception:  # the socket is not accepting yet
            pass
        time.sleep(0.2)
    raise TimeoutError("the server did not become ready in time")


def query(url, model_name, x, concurrency=8):
    """Send every sample as its own binary-tensor request, ``concurrency`` in flight at a time."""
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(url, concurrency=concurrency)
    pending = []
    for index in range(len(x)):
        inp = httpclient.InferInput("pixels", [1, 64], "FP32")
        inp.set_data_from_numpy(x[index:index + 1], binary_data=True)
        out = httpclient.InferRequestedOutput("digit", binary_data=True)
        pending.append(client.async_infer(model_name, [inp], outputs=[out]))
    rows = [request.get_result().as_numpy("digit")[0] for request in pending]
    client.close()
    return np.stack(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="pipeline_out")
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    model_path = os.path.join(args.workdir, "model.pkl")
    repo = os.path.join(args.workdir, "repo")

    x, y = load_digits()
    split = int(0.8 * len(x))
    print(f"== 1. training on {split} digits, holding out {len(x) - split}")
    model = train(x[:split], y[:split], args.epochs)
    model.save(model_path)
    print(f"== 2. saved {model_path}")

    print("== 3. exporting")
    subprocess.run([sys.executable, "-m", "export", model_path, "--verify", "--triton-repo", repo,
                    "--model-name", "digits"], check=True)

    import tritonclient.http as httpclient
    port = free_port()
    print(f"== 4. serving {repo} on 127.0.0.1:{port}")
    # REST only: the example's client speaks HTTP, and the gRPC default port (8001) may be taken.
    server = subprocess.Popen([sys.executable, "-m", "serve", repo, "--port", str(port), "--grpc-port", "0"])
    try:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
        wait_ready(client, server)
        print("== 5. querying with tritonclient")
        served = query(f"127.0.0.1:{port}", "digits", x[split:])
        native = model.predict(x[split:], verbose=0)
        stats = client.get_inference_statistics("digits")["model_stats"][0]
        client.close()
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
    diff = float(np.max(np.abs(served - native)))
    agree = float(np.mean(served.argmax(1) == native.argmax(1)))
    print("== 6. results")
    print(f"held-out samples:            {len(native)}")
    print(f"native accuracy:             {np.mean(native.argmax(1) == y[split:]):.4f}")
    print(f"served accuracy:             {np.mean(served.argmax(1) == y[split:]):.4f}")
    print(f"max |native - served|:       {diff:.2e}")
    print(f"argmax agreement:            {agree:.4f}")
    print(f"server runs for {stats['inference_count']} samples: {stats['execution_count']} (dynamic batching)")
    print(f"server exit code after SIGTERM: {code}")
    if diff > 1e-4 or agree < 1.0 or code != 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
