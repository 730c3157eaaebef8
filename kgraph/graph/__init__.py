"""The symbolic graph: KerasTensor, Operation, Node, tracing, shape inference and the iterative walks."""
