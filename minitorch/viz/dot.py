"""`make_dot`: a graph as a `graphviz.Digraph`, drawn as torchviz draws PyTorch's.

Building the Digraph is pure Python; showing it (Jupyter calls `_repr_mimebundle_`) or rendering
it runs graphviz's `dot` program. `minitorch.viz.show` checks that the program is there first.
"""

from __future__ import annotations

from typing import Any

from minitorch.viz.picture import Picture, describe

# torchviz's node style: small monospace text in filled boxes.
NODE_ATTR = dict(
    style="filled",
    shape="box",
    align="left",
    fontsize="10",
    ranksep="0.1",
    height="0.2",
    fontname="monospace",
)


def make_dot(
    var: Any,
    params: dict[str, Any] | None = None,
    show_attrs: bool = False,
    show_saved: bool = False,
    max_attr_chars: int = 50,
) -> Any:
    """The backward graph behind `var` (a minitorch or torch tensor, or a tuple of them) as a
    `graphviz.Digraph`, with torchviz's arguments and conventions.

    `params` names leaves (`dict(model.named_parameters())`); `show_saved` adds the tensors
    built-in nodes saved for backward (orange); `show_attrs` lists saved values in the node
    boxes. Node names in the source are `n0`, `n1`, ... (torchviz uses memory addresses), so the
    same program always gives the same source.
    """
    picture = describe(var, params, show_attrs, show_saved, max_attr_chars)
    return to_digraph(picture)


def to_digraph(picture: Picture) -> Any:
    """Replay the picture's statements into a Digraph, sized as torchviz sizes it."""
    from graphviz import Digraph

    dot = Digraph(node_attr=NODE_ATTR, graph_attr=dict(size="12,12"))
    for s in picture.statements:
        if s.head is None:
            if s.fill is None:
                dot.node(s.key, s.label)
            else:
                dot.node(s.key, s.label, fillcolor=s.fill)
        else:
            dot.edge(s.key, s.head, **s.attrs)
    resize_graph(dot)
    return dot


def resize_graph(dot: Any, size_per_element: float = 0.15, min_size: float = 12) -> None:
    """Grow the drawing with the number of statements (torchviz's rule)."""
    size = max(min_size, len(dot.body) * size_per_element)
    dot.graph_attr.update(size=f"{size},{size}")
