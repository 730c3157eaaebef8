"""Planning: the steps a Functional runs, with pairs of nodes fused into one step when the graph is mapped.

The plan is the graph's nodes deepest depth first; a convolution whose output
only a max pooling reads becomes one ``ConvMaxPool`` step in its place (see
``Layer.call_with_max_pool``). ``Functional.run_internal_graph`` stays a plain
loop: it runs a Node itself and asks any other step to run.
"""
from kgraph import tree
from kgraph.graph.keras_tensor import KerasTensor


class ConvMaxPool:
    """A convolution node and the max pooling node that alone reads it, run as one op when the layers allow."""

    __slots__ = ("conv", "pool", "source", "result")

    def __init__(self, conv, pool):
        self.conv = conv
        self.pool = pool
        self.source = conv.input_tensors[0]
        self.result = pool.output_tensors[0]

    def run(self, values, remaining):
        """Compute the pooled output from ``values``; free the input once its last reader has run."""
        conv, pool = self.conv.outbound_layer, self.pool.outbound_layer
        x = values[id(self.source)]
        # Asked at each run, so a later change to either layer (e.g. its activation) is honoured.
        values[id(self.result)] = conv.call_with_max_pool(x, pool) if conv.fuses_max_pool(pool) else pool(conv(x))
        remaining[id(self.source)] -= 1
        if remaining[id(self.source)] == 0:
            del values[id(self.source)]


def plan(nodes, uses):
    """``(steps, fusions)``: the nodes to run in order with fused pairs as single steps.

    Args:
        nodes: the graph's non-input nodes, deepest depth first.
        uses: ``{id(tensor): number of readers}``, model outputs counted as readers.
    Returns ``fusions`` as ``{id(conv node): pooling node}``.
    """
    fusions = _conv_pool_pairs(nodes, uses)
    if not fusions:
        return list(nodes), fusions
    fused_pools = {id(pool) for pool in fusions.values()}
    steps = []
    for node in nodes:
        if id(node) in fused_pools:
            continue
        steps.append(ConvMaxPool(node, fusions[id(node)]) if id(node) in fusions else node)
    return steps, fusions


def _single_input(node):
    return len(node.call_args) == 1 and not node.call_kwargs and isinstance(node.call_args[0], KerasTensor)


def _conv_pool_pairs(nodes, uses):
    """``{id(conv node): pooling node}`` for each convolution whose output only a max pooling reads.

    The convolution's output must not be a model output nor read by any other
    node (``uses`` counts both), and the layers must accept the fusion
    (``fuses_max_pool``).
    """
    readers = {}
    for node in nodes:
        if _single_input(node):
            readers.setdefault(id(node.call_args[0]), []).append(node)
    pairs = {}
    for node in nodes:
        layer = node.outbound_layer
        if not hasattr(layer, "fuses_max_pool") or not _single_input(node) or len(node.output_tensors) != 1 \
                or tree.is_nested(node.outputs):
            continue
        out = node.output_tensors[0]
        consumers = readers.get(id(out), [])
        if uses.get(id(out)) == 1 and len(consumers) == 1 and len(consumers[0].output_tensors) == 1 \
                and layer.fuses_max_pool(consumers[0].outbound_layer):
            pairs[id(node)] = consumers[0]
    return pairs
