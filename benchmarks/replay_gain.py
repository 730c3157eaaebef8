"""What replaying the steps buys, model by model: fit's, evaluate's and predict's passes replayed or as written.

Each model is compiled twice from the same weights, once with ``jit_compile="auto"`` (``fit``, ``evaluate`` and
``predict`` trace their steps and replay them, ``kgraph/trainers/replay.py``) and once with ``jit_compile=False``
(the steps as written), and the two take turns, one epoch (then one evaluate and one predict pass) each per
round, in one process; the best of each is kept. The models are
the kinds that the replay took on last: a CNN with BatchNormalization, a Transformer encoder block
(MultiHeadAttention, LayerNormalization), a model with two outputs and two losses, a text classifier over
padded token ids (``Embedding(mask_zero=True)``, an LSTM reading the mask; the ids given as integers to the
default float32 input, as Keras's text examples do), an ``RNN`` over an ``LSTMCell``, a small CNN behind
``RandomFlip`` and ``RandomRotation`` (augmented in ``fit``), and the MLP of ``train_throughput.py`` for
reference. A column says whether the step was replayed.

    python benchmarks/replay_gain.py [--rounds 5] [--models bn_cnn,attention,two_losses,masked_text,rnn_cell,
                                                            augmented_cnn,mlp]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kgraph  # noqa: E402
from kgraph import layers  # noqa: E402
from kgraph.trainers import replay  # noqa: E402

BATCH = 64


def bn_cnn():
    inputs = kgraph.Input((28, 28, 1))
    h = inputs
    for filters in (16, 32):
        h = layers.Conv2D(filters, 3, padding="same", use_bias=False)(h)
        h = layers.Activation("relu")(layers.BatchNormalization()(h))
        h = layers.MaxPooling2D()(h)
    h = layers.GlobalAveragePooling2D()(h)
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))


def attention():
    inputs = kgraph.Input((32, 32))
    h = layers.LayerNormalization()(inputs + layers.MultiHeadAttention(num_heads=4, key_dim=8)(inputs, inputs))
    h = layers.LayerNormalization()(h + layers.Dense(32)(layers.Dense(64, activation="relu")(h)))
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(layers.GlobalAveragePooling1D()(h)))


def two_losses():
    inputs = kgraph.Input((64,))
    h = layers.Dense(128, activation="relu")(layers.Dense(128, activation="relu")(inputs))
    return kgraph.Model(inputs, {"kind": layers.Dense(10, activation="softmax", name="kind")(h),
                                 "score": layers.Dense(1, name="score")(h)})


def masked_text():
    inputs = kgraph.Input((40,))
    h = layers.LSTM(32)(layers.Embedding(2000, 32, mask_zero=True)(inputs))
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))


def rnn_cell():
    inputs = kgraph.Input((20, 16))
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(layers.RNN(layers.LSTMCell(32))(inputs)))


def augmented_cnn():
    inputs = kgraph.Input((32, 32, 3))
    h = layers.Rescaling(1 / 255)(layers.RandomRotation(0.1)(layers.RandomFlip("horizontal")(inputs)))
    h = layers.MaxPooling2D()(layers.Conv2D(16, 3, activation="relu")(h))
    h = layers.GlobalAveragePooling2D()(layers.Conv2D(32, 3, activation="relu")(h))
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))


def mlp():
    inputs = kgraph.Input((784,))
    h = layers.Dense(512, activation="relu")(layers.Dense(512, activation="relu")(inputs))
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))


def _data(name, n, rng):
    labels = rng.integers(0, 10, n)
    if name == "bn_cnn":
        return rng.random((n, 28, 28, 1), dtype=np.float32), labels
    if name == "attention":
        return rng.normal(size=(n, 32, 32)).astype("float32"), labels
    if name == "two_losses":
        return rng.normal(size=(n, 64)).astype("float32"), {"kind": labels, "score": rng.normal(size=(n, 1))}
    if name == "masked_text":  # 10 to 40 tokens each, padded with id 0 at the end
        tokens = rng.integers(1, 2000, (n, 40))
        tokens[np.arange(40)[None, :] >= rng.integers(10, 41, n)[:, None]] = 0
        return tokens, labels
    if name == "rnn_cell":
        return rng.normal(size=(n, 20, 16)).astype("float32"), labels
    if name == "augmented_cnn":
        return (rng.random((n, 32, 32, 3), dtype=np.float32) * 255).round(), labels
    return rng.normal(size=(n, 784)).astype("float32"), labels


MODELS = {"bn_cnn": (bn_cnn, 1024), "attention": (attention, 1024), "two_losses": (two_losses, 4096),
          "masked_text": (masked_text, 1024), "rnn_cell": (rnn_cell, 1024), "augmented_cnn": (augmented_cnn, 512),
          "mlp": (mlp, 2048)}


def _compiled(build, weights, jit_compile, name):
    model = build()
    model.set_weights(weights)
    loss = ({"kind": "sparse_categorical_crossentropy", "score": "mse"} if name == "two_losses"
            else "sparse_categorical_crossentropy")
    model.compile(optimizer="adam", loss=loss, jit_compile=jit_compile)
    return model


def _replayed(steps, model):
    step = steps.get(model)
    return step is not None and any(type(p) is not str and p.confirmed for p in step.programs.values())


def measure(name, rounds):
    """``{(call, mode): samples/s}`` for ``fit``, ``evaluate`` and ``predict``, and whether each was replayed."""
    build, n = MODELS[name]
    x, y = _data(name, n, np.random.default_rng(0))
    kgraph.utils.set_random_seed(0)
    weights = build().get_weights()
    models = {mode: _compiled(build, weights, mode, name) for mode in ("auto", False)}
    calls = {"fit": lambda m: m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0),
             "evaluate": lambda m: m.evaluate(x, y, batch_size=BATCH, verbose=0),
             "predict": lambda m: m.predict(x, batch_size=BATCH, verbose=0)}
    best = {(call, mode): float("inf") for call in calls for mode in models}
    for model in models.values():
        for run in calls.values():
            run(model)  # traces (and warms) before the timed rounds
    for r in range(rounds):
        for call, run in calls.items():
            for mode in (("auto", False) if r % 2 == 0 else (False, "auto")):
                start = time.perf_counter()
                run(models[mode])
                best[call, mode] = min(best[call, mode], time.perf_counter() - start)
    replayed = {"fit": _replayed(replay._STEPS, models["auto"]),
                "evaluate": _replayed(replay._TEST_STEPS, models["auto"]),
                "predict": _replayed(replay._PREDICT_STEPS, models["auto"])}
    return {key: n / seconds for key, seconds in best.items()}, replayed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    print(f"samples/s of one fit epoch, evaluate and predict pass, best of {args.rounds} alternating rounds; batch "
          f"{BATCH}, Adam")
    print(f"{'model':<14}{'call':<10}{'replayed':>12}{'as written':>12}{'ratio':>8}  step replayed")
    for name in args.models.split(","):
        if name not in MODELS:
            parser.error(f"unknown model {name!r}; expected some of {', '.join(MODELS)}")
        rates, replayed = measure(name, args.rounds)
        for call in ("fit", "evaluate", "predict"):
            fast, slow = rates[call, "auto"], rates[call, False]
            print(f"{name:<14}{call:<10}{fast:>12,.0f}{slow:>12,.0f}{fast / slow:>7.2f}x  "
                  f"{'yes' if replayed[call] else 'no'}")


if __name__ == "__main__":
    main()
