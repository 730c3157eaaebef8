"""``keras.name_scope`` (weight paths as Keras 3 gives them, for each way a layer is built) and ``keras.device``."""
import numpy as np
import pytest

import kgraph


def _paths(framework):
    """Weight paths of the same structures, built with fixed names, in ``framework`` (kgraph or Keras)."""
    L = framework.layers
    x = np.zeros((1, 4, 3), "float32")
    out = {}
    seq = framework.Sequential([framework.Input((3,)), L.Dense(2, name="d1")], name="seq")
    out["sequential, with Input"] = [w.path for w in seq.weights]
    late = framework.Sequential([L.Dense(2, name="d2")], name="late")
    late(x[:, 0])
    out["sequential, built on data"] = [w.path for w in late.weights]
    inputs = framework.Input((3,))
    functional = framework.Model(inputs, L.Dense(2, name="d3")(inputs), name="func")
    out["functional"] = [w.path for w in functional.weights]

    class Outer(L.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = L.Dense(2, name="inner")

        def call(self, inputs):
            return self.inner(inputs)

    class Built(Outer):
        def build(self, shape):
            self.inner.build(shape)

    class Net(framework.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.block = Outer(name="block")
            self.head = L.Dense(1, name="head")

        def call(self, inputs):
            return self.head(self.block(inputs))

    outer = Outer(name="outer")
    outer(x[:, 0])
    out["layer in a layer's call"] = [w.path for w in outer.weights]
    built = Built(name="built")
    built(x[:, 0])
    out["layer built in a layer's build"] = [w.path for w in built.weights]
    net = Net(name="net")
    net(x[:, 0])
    out["subclassed model, nested"] = [w.path for w in net.weights]
    with framework.name_scope("scope"):
        variable = framework.Variable(np.zeros(2, "float32"), name="v")
        scoped = L.Dense(2, name="d4")
        scoped.build((None, 3))
    out["explicit scope"] = [variable.path] + [w.path for w in scoped.weights]
    rnn = L.Bidirectional(L.LSTM(2, name="lstm"), name="bi")
    rnn(x)
    out["bidirectional (outer levels)"] = sorted({"/".join(w.path.split("/")[:2]) for w in rnn.weights})
    return out


def test_weight_paths_are_keras_paths():
    keras = pytest.importorskip("keras")
    ours, theirs = _paths(kgraph), _paths(keras)
    for case in theirs:
        assert ours[case] == theirs[case], case
    assert ours["subclassed model, nested"] == ["net/block/inner/kernel", "net/block/inner/bias", "net/head/kernel",
                                                "net/head/bias"]


def test_scopes_nest_and_a_layer_keeps_the_path_it_was_first_built_under():
    with kgraph.name_scope("a"):
        with kgraph.name_scope("b"):
            assert kgraph.Variable(1.0, name="v").path == "a/b/v"
        dense = kgraph.layers.Dense(2, name="dense_in_a")
        dense.build((None, 3))
    assert kgraph.Variable(1.0, name="w").path == "w"
    with kgraph.name_scope("elsewhere"):
        dense(np.zeros((1, 3), "float32"))  # called later under another scope: its weights' paths stay
    assert [w.path for w in dense.weights] == ["a/dense_in_a/kernel", "a/dense_in_a/bias"]


@pytest.mark.parametrize("name", ["a/b", 3, None])
def test_a_scope_name_must_be_a_string_without_a_slash(name):
    with pytest.raises(ValueError, match="must be a string and cannot contain character `/`"):
        kgraph.name_scope(name)


@pytest.mark.parametrize("name", ["cpu", "CPU:0", "/device:CPU:0", "/cpu:0"])
def test_a_device_scope_on_the_cpu_runs_as_usual(name):
    with kgraph.device(name):
        out = kgraph.layers.Dense(2, kernel_initializer="ones")(np.ones((1, 3), "float32"))
    np.testing.assert_array_equal(out, [[3.0, 3.0]])


@pytest.mark.parametrize("name", ["gpu", "cuda:0", "/device:GPU:0", "mps", 0])
def test_a_device_kgraph_cannot_run_on_is_refused_by_name(name):
    with pytest.raises(ValueError, match="cannot run on device|expected a string"):
        with kgraph.device(name):
            pass
