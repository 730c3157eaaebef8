"""Zoo models of GroupQueryAttention and SpectralNormalization (both exported by tracing their calls)."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("group_query_attention", rtol=1e-4)
def group_query_attention():
    """Cross-attention with a gate and returned scores; causal self-attention within a sliding window."""
    x = kgraph.Input(shape=(5, 6), name="x")
    memory = kgraph.Input(shape=(4, 3), name="memory")
    cross, scores = L.GroupQueryAttention(3, 4, 2, use_gate=True)(x, memory, return_attention_scores=True)
    own = L.GroupQueryAttention(2, 6, 3, sliding_window=2, use_bias=False)(x, x, use_causal_mask=True)
    return train_briefly(kgraph.Model([x, memory], [cross, scores, own], name="group_query_attention"))


@register_zoo_model("spectral_normalization")
def spectral_normalization():
    """SpectralNormalization around a Conv2D (channels-first inside) and a Dense."""
    x = kgraph.Input(shape=(6, 6, 2), name="image")
    h = L.SpectralNormalization(L.Conv2D(3, 3, activation="relu"))(x)
    y = L.SpectralNormalization(L.Dense(2), power_iterations=2)(L.Flatten()(h))
    return train_briefly(kgraph.Model(x, y, name="spectral_normalization"))
