"""More of kgraph's layers in a replayed fit step: attention, wrappers, preprocessing, random augmentation.

Each model trains replayed (``jit_compile="auto"``) and as written (``False``): the same history and weights
(within float rounding where a compiled kernel may split a batch between two threads).
"""
import numpy as np
import pytest

import kgraph
from kgraph import layers
from tests.kgraph.trainers.test_replay import (
    _assert_same_training,
    _family_trains_as_written,
    _image_model,
    _sequence_model,
)


def _pair_model(attention):
    def build():
        x = kgraph.Input((5, 4))
        q, v = layers.Dense(4)(x), layers.Dense(4, activation="tanh")(x)
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(layers.Flatten()(attention()([q, v]))))
    return build


def _self_attention(layer):
    def build():
        x = kgraph.Input((5, 4))
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(layers.Flatten()(layer()(x, x))))
    return build


def _adapted_normalization():
    data = np.random.default_rng(8).normal(loc=2.0, scale=3.0, size=(64, 6, 6, 2)).astype("float32")
    norm = layers.Normalization()
    norm.adapt(data)
    return norm


_MODELS = {
    "multi_head_attention": _self_attention(lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3)),
    "group_query_attention": _self_attention(
        lambda: layers.GroupQueryAttention(head_dim=2, num_query_heads=2, num_key_value_heads=1)),
    "attention": _pair_model(lambda: layers.Attention(use_scale=True)),
    "additive_attention": _pair_model(layers.AdditiveAttention),
    "bidirectional_time_distributed": _sequence_model(
        lambda: layers.Bidirectional(layers.LSTM(3, return_sequences=True)),
        lambda: layers.TimeDistributed(layers.Dense(2, activation="relu"))),
    "normalization_resizing": _image_model(_adapted_normalization, lambda: layers.Normalization(mean=1.0, variance=4.0),
                                           lambda: layers.Resizing(8, 8), lambda: layers.CenterCrop(4, 4),
                                           lambda: layers.Conv2D(2, 3, activation="relu")),
}


@pytest.mark.parametrize("name", sorted(_MODELS))
def test_more_layers_train_replayed_as_written(name):
    # Bit for bit but where a compiled kernel may split a batch between two threads (the LSTM's, the convolution's).
    exact = name not in ("bidirectional_time_distributed", "normalization_resizing")
    _family_trains_as_written(_MODELS[name], seed=9, exact=exact)


_AUGMENTATIONS = {
    "flip_rotation": (lambda: layers.RandomFlip(), lambda: layers.RandomRotation(0.1)),
    "zoom_translation_constant_fill": (lambda: layers.RandomZoom(0.2, seed=1),
                                       lambda: layers.RandomTranslation(0.1, 0.2, fill_mode="constant",
                                                                        fill_value=0.5)),
    "contrast_brightness_nearest": (lambda: layers.RandomContrast(0.3, value_range=(0, 1)),
                                    lambda: layers.RandomBrightness(0.2, value_range=(0, 1)),
                                    lambda: layers.RandomRotation(0.2, interpolation="nearest", seed=2)),
}


@pytest.mark.parametrize("name", sorted(_AUGMENTATIONS))
def test_random_augmentation_layers_replay_drawing_anew_at_each_step(name):
    """Each step draws its transforms by an op of the step, from the same generator in the same order as the
    step as written: the same augmented batches, so the same training."""
    rng = np.random.default_rng(12)
    x, y = rng.random((96, 6, 6, 2), dtype=np.float32), rng.integers(0, 3, 96)
    build = _image_model(*_AUGMENTATIONS[name], lambda: layers.Conv2D(2, 3, activation="relu"))
    _assert_same_training(build, x, y, exact=False, epochs=2, batch_size=32)


def test_an_rnn_of_a_custom_cell_and_attention_dropout_run_as_written():
    class Cell(layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units, self.state_size = units, units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1] + self.units, self.units))

        def call(self, inputs, states):
            h = kgraph.ops.tanh(kgraph.ops.matmul(kgraph.ops.concatenate([inputs, states[0]], -1), self.kernel))
            return h, [h]
    rng = np.random.default_rng(10)
    x, y = rng.normal(size=(96, 5, 4)).astype("float32"), rng.integers(0, 3, 96)
    _assert_same_training(_sequence_model(lambda: layers.RNN(Cell(3), return_sequences=True)), x, y, replayed=False,
                          exact=False, epochs=2, batch_size=32)
    # Attention dropout draws a mask the size of the batch outside the ops: the trace refuses it.
    _assert_same_training(_self_attention(lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.5)),
                          x, y, replayed=False, exact=False, epochs=2, batch_size=32)


def test_several_losses_replayed_with_their_trackers_bit_for_bit():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(160, 6)).astype("float32")
    labels, target = rng.integers(0, 3, 160), rng.normal(size=(160, 2)).astype("float32")

    def build():
        inputs = kgraph.Input((6,))
        h = layers.Dense(8, activation="relu")(inputs)
        return kgraph.Model(inputs, {"kind": layers.Dense(3, activation="softmax", name="kind")(h),
                                     "score": layers.Dense(2, name="score")(h)})
    compile_kwargs = {"loss": {"kind": "sparse_categorical_crossentropy", "score": "mse"},
                      "loss_weights": {"kind": 1.0, "score": 0.5}, "metrics": {"kind": ["accuracy"], "score": ["mae"]}}
    model = _assert_same_training(build, x, {"kind": labels, "score": target}, compile_kwargs=compile_kwargs,
                                  epochs=3, batch_size=32)
    history = model.history.history
    assert {"kind_loss", "score_loss", "loss"} <= set(history)
    # Each tracker saw every batch: the epoch's tracked losses, weighted, add up to the epoch's loss.
    for epoch in range(3):
        total = history["kind_loss"][epoch] + 0.5 * history["score_loss"][epoch]
        assert abs(total - history["loss"][epoch]) < 1e-5


@pytest.mark.parametrize("mode", ["one_hot", "multi_hot", "count"])
def test_category_encoding_replays_and_checks_every_batch(mode):
    rng = np.random.default_rng(13)
    width = 1 if mode == "one_hot" else 3
    ids, y = rng.integers(0, 6, (96, width)), rng.integers(0, 3, 96)

    def build():
        x = kgraph.Input((width,), dtype="int64")
        h = layers.Flatten()(layers.CategoryEncoding(6, output_mode=mode)(x))
        return kgraph.Model(x, layers.Dense(3, activation="softmax")(layers.Dense(4, activation="relu")(h)))
    model = _assert_same_training(build, ids, y, epochs=2, batch_size=32)
    ids[90, 0] = 6  # out of range in the last batch, which the confirmed program replays
    with pytest.raises(ValueError, match="must be in the range 0 <= values < num_tokens"):
        model.fit(ids, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
