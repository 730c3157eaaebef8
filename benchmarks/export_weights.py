"""float32, float16 and int8 exports of an MLP, a CNN and an LSTM trained on scikit-learn's digits, side by side.

Used by ``export_quality.py``: file size, onnxruntime latency at batch 1 and
64 (median µs per call) and accuracy on the digits hold-out (the last 360
rows) for each model in each weight format, next to native ``predict``.
"""
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import kgraph
from export import quantize, to_onnx
from export.verify import session
from kgraph import layers

HOLD_OUT = 360
FORMATS = ("fp32", "fp16", "int8")


def _digits():
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    return (x[:-HOLD_OUT], y[:-HOLD_OUT]), (x[-HOLD_OUT:], y[-HOLD_OUT:])


def _models():
    """``{name: (model, reshape of the (n, 64) pixels)}``, untrained."""
    x = kgraph.Input(shape=(64,), name="pixels")
    mlp = kgraph.Model(x, layers.Dense(10, activation="softmax")(
        layers.Dense(128, activation="relu")(layers.Dense(256, activation="relu")(x))), name="mlp")
    image = kgraph.Input(shape=(8, 8, 1), name="image")
    h = layers.MaxPooling2D()(layers.Conv2D(32, 3, padding="same", activation="relu")(image))
    h = layers.MaxPooling2D()(layers.Conv2D(64, 3, padding="same", activation="relu")(h))
    cnn = kgraph.Model(image, layers.Dense(10, activation="softmax")(layers.Flatten()(h)), name="cnn")
    rows = kgraph.Input(shape=(8, 8), name="rows")
    lstm = kgraph.Model(rows, layers.Dense(10, activation="softmax")(layers.LSTM(64)(rows)), name="lstm")
    return {"MLP 64-256-128-10": (mlp, (64,)), "CNN 2x(Conv-MaxPool), Dense": (cnn, (8, 8, 1)),
            "LSTM(64) over 8 rows": (lstm, (8, 8))}


def _latency_us(median_seconds, sess, feed):
    return 1e6 * median_seconds(lambda: sess.run(None, feed), 300)


def report(median_seconds):
    """The weights table (Markdown) as text."""
    (x_train, y_train), (x_test, y_test) = _digits()
    lines = ["| model | weights | file KiB | ort batch 1 µs | ort batch 64 µs | hold-out accuracy |",
             "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, shape) in _models().items():
            kgraph.utils.set_random_seed(0)
            model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
            model.fit(x_train.reshape((-1,) + shape), y_train, epochs=30, batch_size=32, verbose=0)
            test = x_test.reshape((-1,) + shape)
            native = float(np.mean(model.predict(test, verbose=0).argmax(-1) == y_test))
            lines.append(f"| {name} | native predict | - | - | - | {native:.4f} |")
            fp32 = to_onnx(model)
            input_name = fp32.graph.input[0].name
            for weights in FORMATS:
                proto = fp32 if weights == "fp32" else quantize.convert(fp32, weights)
                path = os.path.join(tmp, f"{model.name}_{weights}.onnx")
                with open(path, "wb") as f:
                    f.write(proto.SerializeToString())
                sess = session(path, "ORT_ENABLE_ALL")
                accuracy = float(np.mean(sess.run(None, {input_name: test})[0].argmax(-1) == y_test))
                b1, b64 = ({input_name: test[:n]} for n in (1, 64))
                lines.append(f"| {name} | {weights} | {os.path.getsize(path) / 1024:.1f} | "
                             f"{_latency_us(median_seconds, sess, b1):.1f} | "
                             f"{_latency_us(median_seconds, sess, b64):.1f} | {accuracy:.4f} |")
    return "\n".join(lines)
