"""Pictures of what backward does on one graph, for minitorch and PyTorch graphs alike.

- `gradient_flow(out, names)`: every node of the graph behind `out` with the value the forward
  pass computed (for the tensors `names` names, and `out`) and the gradient of `out` that
  reaches it; every arrow with the gradient passed along it. A node that several arrows reach
  shows their sum.
- `order_dot(out, orders)`: the same graph with its nodes numbered in one or more orders
  (breadth-first, topological, ...). An arrow is red where an order runs the input before the
  consumer that feeds it a gradient: an engine following that order would run the input too
  early, before all its gradients arrived.

Both draw the arrows the way gradients flow, from a node to each of its inputs: the output is at
the top and the leaves (blue) at the bottom. Nodes are named `n0`, `n1`, ... in breadth-first
order, so the same program always gives the same DOT source, whichever library recorded it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minitorch.viz.dot import NODE_ATTR
from minitorch.viz.picture import OP_FILL, node_type_name

LEAF_FILL = "lightblue"  # as torchviz draws leaves
OUTPUT_FILL = "darkolivegreen1"  # as torchviz draws outputs
GRADIENT_COLOR = "firebrick"
TOO_EARLY_COLOR = "red"


def _library(tensor: Any) -> Any:
    """The library that recorded `tensor`'s graph: the `torch` or the `minitorch` module."""
    import torch

    import minitorch

    return torch if isinstance(tensor, torch.Tensor) else minitorch


def _is_leaf_node(node: Any) -> bool:
    """An AccumulateGrad node (the node behind a leaf that requires grad)."""
    return hasattr(node, "variable")


def _walk(out: Any) -> tuple[list, list[tuple[Any, int, Any]]]:
    """The nodes reachable from `out.grad_fn`, in breadth-first order, and every edge as
    (consumer, input number, input node), None entries of `next_functions` skipped."""
    root = out.grad_fn
    if root is None:
        raise ValueError("the tensor has no grad_fn: no graph was recorded for it")
    nodes, seen, edges = [root], {root}, []
    for node in nodes:  # the list grows while we walk it
        for number, (child, _) in enumerate(node.next_functions):
            if child is None:
                continue
            edges.append((node, number, child))
            if child not in seen:
                seen.add(child)
                nodes.append(child)
    return nodes, edges


def _named_nodes(nodes: list, names: Mapping[str, Any]) -> dict:
    """node -> (name, tensor) for the tensors in `names`: a leaf is named on its AccumulateGrad
    node, any other tensor on its grad_fn."""
    by_id = {id(tensor): (name, tensor) for name, tensor in names.items()}
    named = {}
    for node in nodes:
        if _is_leaf_node(node) and id(node.variable) in by_id:
            named[node] = by_id[id(node.variable)]
    for name, tensor in names.items():
        if tensor.grad_fn is not None:
            named[tensor.grad_fn] = (name, tensor)
    return named


def _number(value: float) -> str:
    return f"{value + 0.0:.3g}"  # + 0.0 turns -0.0 into 0.0


def format_value(tensor: Any) -> str:
    """A short text for a tensor's values: `0.5`, `[1, 2.5]`; its shape beyond 4 elements."""
    if tensor is None:
        return "None"
    values = tensor.detach().reshape(-1).tolist()
    if tensor.dim() == 0:
        return _number(values[0])
    if len(values) <= 4:
        return "[" + ", ".join(_number(v) for v in values) + "]"
    return "shape (" + ", ".join(str(int(n)) for n in tensor.shape) + ")"


def _digraph(title: str | None) -> Any:
    from graphviz import Digraph

    dot = Digraph(node_attr=NODE_ATTR, graph_attr=dict(size="12,12"))
    if title:
        dot.attr(label=title, labelloc="t", fontsize="12")
    return dot


def gradient_flow(
    out: Any,
    names: Mapping[str, Any] | None = None,
    grad: Any = None,
    title: str | None = None,
) -> Any:
    """A `graphviz.Digraph` of the gradients flowing backward through the graph behind `out`.

    Each box is a node, with the name and value of the tensor it belongs to (`out`, the leaves,
    and the tensors that `names` maps a name to) and the gradient of `out` with respect to that
    tensor, as the node receives it (after the tensor's hooks, if it has any). Unnamed leaves
    are called `leaf`. Each arrow goes from a node to one of its inputs and is labelled with
    the gradient the node passes to that input. Where several arrows reach a node, its box shows
    their sum, e.g. `grad: 2 + 0.878 = 2.88`.

    `grad` is the gradient to start from, as in `out.backward(grad)` (required when `out` has
    more than one element). The gradients come from the library's own engine
    (`autograd.grad(..., retain_graph=True)` with a hook on every node, removed afterwards), so
    the leaves' `.grad` stay as they are and `out.backward()` still works after drawing.
    """
    nodes, edges = _walk(out)
    named = _named_nodes(nodes, names or {})
    node_grads, edge_grads = {}, {}

    def record(node: Any) -> Any:
        def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
            node_grads[node] = grad_outputs[0]
            for number, g in enumerate(grad_inputs):
                edge_grads[(node, number)] = g

        return hook

    handles = [node.register_hook(record(node)) for node in nodes if not _is_leaf_node(node)]
    leaf_nodes = [node for node in nodes if _is_leaf_node(node)]
    try:
        leaf_grads = _library(out).autograd.grad(
            out,
            [node.variable for node in leaf_nodes],
            grad_outputs=grad,
            retain_graph=True,
            allow_unused=True,
        )
    finally:
        for handle in handles:
            handle.remove()
    node_grads.update(zip(leaf_nodes, leaf_grads))

    incoming: dict[Any, list] = {node: [] for node in nodes}
    for consumer, number, child in edges:
        incoming[child].append(edge_grads.get((consumer, number)))

    dot = _digraph(title)
    keys = {node: f"n{i}" for i, node in enumerate(nodes)}
    for node in nodes:
        if node in named:
            name, tensor = named[node]
        elif _is_leaf_node(node):
            name, tensor = "leaf", node.variable
        else:
            name, tensor = ("out", out) if node is out.grad_fn else (None, None)
        lines = [] if _is_leaf_node(node) else [node_type_name(node)]
        if tensor is not None:
            lines.append(f"{name} = {format_value(tensor)}")
        total = format_value(node_grads.get(node))
        arrived = [g for g in incoming[node] if g is not None]
        if len(arrived) > 1:
            total = " + ".join(format_value(g) for g in arrived) + f" = {total}"
        lines.append(f"grad: {total}")
        fill = LEAF_FILL if _is_leaf_node(node) else OUTPUT_FILL if node is out.grad_fn else None
        extra = {} if fill is None else {"fillcolor": fill}
        dot.node(keys[node], "\n".join(lines), **extra)
    for consumer, number, child in edges:
        label = format_value(edge_grads.get((consumer, number)))
        dot.edge(keys[consumer], keys[child], label=f" {label}", color=GRADIENT_COLOR,
                 fontcolor=GRADIENT_COLOR, fontsize="10")  # fmt: skip
    return dot


def order_dot(
    out: Any,
    orders: Mapping[str, Sequence[Any]],
    names: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> Any:
    """A `graphviz.Digraph` of the graph behind `out` with its nodes numbered in each order.

    `orders` maps a label to a list of the graph's nodes, e.g. `{"breadth-first": [...],
    "topological": [...]}`; each box shows the node's step (from 1) in every order, or `-` if
    the order leaves it out. An arrow goes from a node to one of its inputs, so a valid backward
    order runs every arrow's tail before its head. Where an order runs the input first, the
    arrow is red and labelled with that order's label, and the input's box has a red border:
    run in that order, the input would start before all its gradients arrived. `names` names
    tensors (leaves or intermediate results) as in `gradient_flow`.
    """
    nodes, edges = _walk(out)
    named = _named_nodes(nodes, names or {})
    steps = {
        label: {node: step for step, node in enumerate(order, start=1)}
        for label, order in orders.items()
    }
    too_early = {}  # (consumer, input number) -> the labels of the orders that run it wrong
    for consumer, number, child in edges:
        too_early[(consumer, number)] = [
            label
            for label, step in steps.items()
            if child in step and consumer in step and step[child] < step[consumer]
        ]
    early_inputs = {child for consumer, number, child in edges if too_early[(consumer, number)]}

    dot = _digraph(title)
    keys = {node: f"n{i}" for i, node in enumerate(nodes)}
    for node in nodes:
        lines = [node_type_name(node)]
        if node in named:
            lines.append(named[node][0])
        lines += [f"{label}: {step.get(node, '-')}" for label, step in steps.items()]
        extra = {"fillcolor": LEAF_FILL if _is_leaf_node(node) else OP_FILL}
        if node in early_inputs:
            extra.update(color=TOO_EARLY_COLOR, penwidth="2")
        dot.node(keys[node], "\n".join(lines), **extra)
    for consumer, number, child in edges:
        wrong = too_early[(consumer, number)]
        if wrong:
            dot.edge(keys[consumer], keys[child], label=" " + ", ".join(wrong),
                     color=TOO_EARLY_COLOR, fontcolor=TOO_EARLY_COLOR, penwidth="2",
                     fontsize="10")  # fmt: skip
        else:
            dot.edge(keys[consumer], keys[child])
    return dot
