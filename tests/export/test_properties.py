"""Property: random valid DAGs of the core layers export and match native predict."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgraph
from kgraph import layers as L
from tests.export import zoo
from tests.export.parity import assert_parity
from tests.export.zoo_core import ACTIVATIONS

# exp of exp of ... overflows float32; exponential alone is covered by the zoo.
RANDOM_ACTIVATIONS = [a for a in ACTIVATIONS if a != "exponential"]
MERGES = [L.Add, L.Subtract, L.Multiply, L.Average, L.Maximum, L.Minimum]


class _Graph:
    """A growing pool of tensors; remembers which ones some layer consumed."""

    def __init__(self, draw):
        self.draw = draw
        self.inputs = [kgraph.Input(shape=(draw(st.sampled_from([4, 6, 8])),), name=f"in{i}")
                       for i in range(draw(st.integers(1, 2)))]
        self.pool = list(self.inputs)
        self.consumed = set()

    def pick(self, candidates=None):
        candidates = self.pool if candidates is None else candidates
        tensor = candidates[self.draw(st.integers(0, len(candidates) - 1))]
        self.consumed.add(id(tensor))
        return tensor

    def add(self, tensor):
        self.pool.append(tensor)
        return tensor

    def activation(self):
        return self.draw(st.sampled_from(RANDOM_ACTIVATIONS))

    def dense(self, source, units=None):
        units = units or self.draw(st.integers(1, 8))
        return self.add(L.Dense(units, activation=self.activation(), use_bias=self.draw(st.booleans()))(source))

    def partner(self, shape):
        """A tensor of ``shape``: one already in the pool, or a Dense of one with the same leading dims."""
        same = [t for t in self.pool if t.shape == shape]
        if same and self.draw(st.booleans()):
            return self.pick(same)
        return self.dense(self.pick([t for t in self.pool if t.shape[:-1] == shape[:-1]]), shape[-1])

    def step(self):
        kind = self.draw(st.sampled_from(["dense", "merge", "concatenate", "reshape", "dropout", "activation"]))
        source = self.pick()
        if kind == "dense":
            self.dense(source)
        elif kind == "merge":
            merge = self.draw(st.sampled_from(MERGES))
            count = 2 if merge is L.Subtract else self.draw(st.integers(2, 3))
            self.add(merge()([source] + [self.partner(source.shape) for _ in range(count - 1)]))
        elif kind == "concatenate":
            others = [self.dense(self.pick([t for t in self.pool if t.shape[:-1] == source.shape[:-1]]))
                      for _ in range(self.draw(st.integers(1, 2)))]
            self.add(L.Concatenate()([source] + others))
        elif kind == "reshape":
            if len(source.shape) == 3:
                self.add(L.Flatten()(source))
            else:
                width = source.shape[-1]
                rows = self.draw(st.sampled_from([d for d in (1, 2, 4) if width % d == 0]))
                shaped = self.add(L.Reshape((rows, -1))(source))
                if self.draw(st.booleans()):
                    self.add(L.Flatten()(self.dense(shaped)))
        elif kind == "dropout":
            self.add(L.Dropout(self.draw(st.sampled_from([0.1, 0.5])))(source))
        else:
            self.add(L.Activation(self.activation())(source))

    def model(self):
        outputs = [t for t in self.pool if id(t) not in self.consumed]
        return kgraph.Model(self.inputs, outputs)


@st.composite
def random_models(draw):
    graph = _Graph(draw)
    for _ in range(draw(st.integers(1, 8))):
        graph.step()
    return zoo.perturb(graph.model(), seed=draw(st.integers(0, 2 ** 16)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_models())
def test_random_dags_match_native_predict(model):
    assert_parity(model)
