"""Every public op is registered where its module defines it (``@op``), and the package only re-exports."""
import sys

import numpy as np

import kgraph
from kgraph import ops
from kgraph.ops import operations

PLAIN = {"shape", "ndim", "convert_to_tensor", "convert_to_numpy"}


def _op_modules():
    return [m for name, m in sys.modules.items()
            if name.startswith("kgraph.ops.") and name.count(".") == 2 and hasattr(m, "__all__")]


def test_each_public_op_is_registered_by_its_module():
    for module in _op_modules():
        for name in module.__all__:
            fn = getattr(module, name)
            assert getattr(ops, name) is fn, f"{module.__name__}.{name} is not the public kgraph.ops.{name}"
            if name in PLAIN:
                assert name not in operations._FUNCTIONS
                continue
            assert operations._FUNCTIONS.get(name) is fn, f"{module.__name__}.{name} lacks @op"
            assert hasattr(fn, "_kgraph_primitive") or fn in operations._EAGER, name


def test_a_composite_alias_records_its_own_operation():
    alias = operations.op(ops.where, name="where_alias_for_test")
    try:
        assert alias is not ops.where
        assert operations._EAGER[alias] is operations._EAGER[ops.where]  # not a wrapper of a wrapper
        x = kgraph.Input((3,))
        out = alias(ops.greater(x, 0), x, 0.0)
        assert type(out._keras_history.layer).__name__ == "WhereAliasForTest"
        np.testing.assert_array_equal(alias(np.array([True, False]), np.array([1.0, 2.0]), 0.0), [1.0, 0.0])
    finally:
        operations._FUNCTIONS.pop("where_alias_for_test", None)
        operations._CLASSES.pop("where_alias_for_test", None)
        operations._CLASSES.pop("WhereAliasForTest", None)


def test_a_primitive_alias_is_the_primitive():
    assert ops.true_divide is ops.divide and ops.absolute is ops.abs and ops.swish is ops.silu
    assert operations._FUNCTIONS["true_divide"] is ops.divide
    assert operations.op_class("true_divide").__name__ == "TrueDivide"
