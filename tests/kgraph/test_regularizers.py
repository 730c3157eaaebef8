"""Regularizers: penalty values, gradients and (de)serialization."""
import numpy as np
import pytest

from kgraph import regularizers
from kgraph.backend.variable import Variable
from tests.gradcheck import check_gradients, check_variable_gradients

X = np.array([[0.5, -1.5], [2.0, -0.25]])


def test_values():
    assert regularizers.L1(0.1)(X) == pytest.approx(0.1 * np.abs(X).sum())
    assert regularizers.L2(0.1)(X) == pytest.approx(0.1 * np.square(X).sum())
    assert regularizers.L1L2(l1=0.1, l2=0.2)(X) == pytest.approx(0.1 * np.abs(X).sum() + 0.2 * np.square(X).sum())
    assert regularizers.L1()(X) == pytest.approx(0.01 * np.abs(X).sum())
    zero = regularizers.L1L2()(X)
    assert isinstance(zero, np.ndarray) and zero.shape == () and zero == 0.0
    assert regularizers.l1 is regularizers.L1 and regularizers.l2 is regularizers.L2
    assert regularizers.l1_l2 is regularizers.L1L2


@pytest.mark.parametrize("regularizer", [regularizers.L1(0.3), regularizers.L2(0.3), regularizers.L1L2(0.1, 0.2)])
def test_gradients(regularizer):
    check_gradients(lambda xs: regularizer(xs[0]), [X])
    variable = Variable(X, dtype="float64")
    check_variable_gradients(lambda: regularizer(variable), [variable])


def test_get_serialize_and_validation():
    assert type(regularizers.get("l2")) is regularizers.L2
    assert type(regularizers.get("l1_l2")) is regularizers.L1L2
    assert regularizers.get(None) is None
    reg = regularizers.L1L2(l1=0.5, l2=0.25)
    assert regularizers.get(reg) is reg
    assert regularizers.deserialize(regularizers.serialize(reg)).get_config() == {"l1": 0.5, "l2": 0.25}
    assert regularizers.get(regularizers.serialize(regularizers.L2(0.3))).l2 == 0.3
    with pytest.raises(ValueError, match="non-negative"):
        regularizers.L2(-1.0)
    with pytest.raises(ValueError, match="'l3'.*Valid names"):
        regularizers.get("l3")
