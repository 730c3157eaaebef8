"""Zoo model of ReversibleEmbedding: token ids embedded, transformed, and projected back to vocabulary logits."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("reversible_embedding_lm")
def reversible_embedding_lm():
    """A tied ReversibleEmbedding called forward (a Gather) then in reverse (a MatMul by the transposed table and a
    tanh soft cap), beside an untied one whose masked lookup feeds a pooled output; both traced into ops."""
    ids = kgraph.Input(shape=(6,), dtype="int32", name="ids")
    tied = L.ReversibleEmbedding(20, 8, logit_soft_cap=2.0)
    untied = L.ReversibleEmbedding(20, 4, tie_weights=False, mask_zero=True)
    logits = tied(L.Dense(8, activation="tanh")(tied(ids)), reverse=True)
    embedded = untied(ids)
    pooled = L.GlobalAveragePooling1D()(embedded)
    untied_logits = untied(L.Dense(4)(embedded), reverse=True)
    return train_briefly(kgraph.Model(ids, [logits, pooled, untied_logits], name="reversible_embedding_lm"))
