"""Iterative graph walks over Nodes: topological order and depths (no recursion)."""
import collections


def producer(tensor):
    layer, node_index, _ = tensor._keras_history
    return layer._inbound_nodes[node_index]


def topological_nodes(input_ids, outputs):
    """Nodes between ``outputs`` and the tensors whose ids are in ``input_ids``.

    Returns ``(nodes, layer_indices)``: nodes in post-order (every node after the
    nodes it consumes from) and each layer's first-visit index, for stable ties.
    A node that produces one of the inputs is a leaf: its own inputs are not visited.
    """
    order, layer_indices, visited = [], {}, set()

    def parents(node):
        if any(id(t) in input_ids for t in node.output_tensors):
            return iter(())
        return (producer(t) for t in node.input_tensors)

    for tensor in outputs:
        start = producer(tensor)
        if id(start) in visited:
            continue
        visited.add(id(start))
        layer_indices.setdefault(id(start.outbound_layer), len(layer_indices))
        stack = [(start, parents(start))]
        while stack:
            node, pending = stack[-1]
            for parent in pending:
                if id(parent) not in visited:
                    visited.add(id(parent))
                    layer_indices.setdefault(id(parent.outbound_layer), len(layer_indices))
                    stack.append((parent, parents(parent)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order, layer_indices


def depths(nodes, input_ids):
    """Keras's depth map: outputs at depth 0, each node deeper than every consumer.

    All nodes of one layer share the layer's depth (the largest of its nodes).
    Returns ``(node_depths, layer_depths)`` keyed by ``id``.
    """
    node_depths, layer_depths = {}, {}
    for node in reversed(nodes):
        depth = node_depths.setdefault(id(node), 0)
        layer = node.outbound_layer
        depth = max(depth, layer_depths.get(id(layer), 0))
        layer_depths[id(layer)] = depth
        node_depths[id(node)] = depth
        if any(id(t) in input_ids for t in node.output_tensors):
            continue
        for tensor in node.input_tensors:
            parent = producer(tensor)
            node_depths[id(parent)] = max(depth + 1, node_depths.get(id(parent), 0))
    return node_depths, layer_depths


def group_by_depth(nodes, node_depths, layer_depths, layer_indices):
    """``nodes_by_depth`` and ``layers_by_depth`` dicts, each list in stable order."""
    nodes_by_depth = collections.defaultdict(list)
    for node in nodes:
        nodes_by_depth[node_depths[id(node)]].append(node)
    layers_by_depth = collections.defaultdict(list)
    seen = set()
    for node in nodes:
        layer = node.outbound_layer
        if id(layer) not in seen:
            seen.add(id(layer))
            layers_by_depth[layer_depths[id(layer)]].append(layer)
    for depth in layers_by_depth:
        if len(layers_by_depth[depth]) > 1:
            layers_by_depth[depth].sort(key=lambda layer: layer_indices[id(layer)])
        if len(nodes_by_depth[depth]) > 1:
            nodes_by_depth[depth].sort(key=lambda node: layer_indices[id(node.outbound_layer)])
    return dict(nodes_by_depth), dict(layers_by_depth)


def check_connected(nodes_by_depth, inputs):
    """Raise a ValueError naming the first tensor that has no path to ``inputs``."""
    computable = {id(t) for t in inputs}
    done_layers = []
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            if node.is_input:
                if not any(id(t) in computable for t in node.output_tensors):
                    continue
            for tensor in node.input_tensors:
                if id(tensor) not in computable and not any(id(t) in computable for t in node.output_tensors):
                    raise ValueError(
                        f"Graph disconnected: cannot find parent for tensor {tensor!r} at layer "
                        f"\"{node.outbound_layer.name}\". The following previous layers were accessed "
                        f"without issue: {done_layers[-20:]}")
            computable.update(id(t) for t in node.output_tensors)
            done_layers.append(node.outbound_layer.name)
    return computable

