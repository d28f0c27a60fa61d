"""Walk a backward graph and describe its picture the way torchviz 0.0.3 draws PyTorch graphs.

The description is a list of drawing statements (a node with a label and a fill colour, or an
edge), in the order torchviz emits them, so that graphviz resolves repeated nodes the same way
(a leaf that is also saved is drawn once, blue, with an extra undirected edge). Both renderers
(graphviz in `dot.py`, matplotlib in `matplotlib_fallback.py`) and the text view read it.

Conventions (torchviz's):
- grey boxes: backward nodes (`MulBackward0`, `AccumulateGrad`), labelled with the node's type;
- light blue: leaves that require grad, labelled with their name from `params` and their shape;
- orange: saved tensors (built-in ops' only with `show_saved=True`, custom Functions' always);
- green: the output(s); dark green: the base of an output that is a view (dotted edge).
Edges run from inputs towards the output; saved tensors hang on their node by an undirected edge.

It works on minitorch and on PyTorch graphs alike: it only uses `grad_fn`, `next_functions`,
`variable`, `_saved_*` and the tensors' shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SAVED_PREFIX = "_saved_"
OP_FILL = "lightgrey"  # graphviz's default fill for `style=filled`: torchviz sets none for ops


@dataclass
class Statement:
    """One drawing statement: a node (`head` is None) or an edge from `key` to `head`."""

    key: str
    head: str | None = None
    label: str = ""
    fill: str | None = None  # nodes: None means an op (grey); edges: unused
    attrs: dict[str, str] = field(default_factory=dict)  # edges: dir="none", style="dotted"


@dataclass
class Picture:
    """The statements describing one graph, and its nodes after repeats are resolved."""

    statements: list[Statement]

    def nodes(self) -> dict[str, Statement]:
        """Each node's final label and fill (a later statement for the same key wins), in the
        order the nodes first appear."""
        resolved: dict[str, Statement] = {}
        for s in self.statements:
            if s.head is None:
                resolved[s.key] = s
        return resolved

    def edges(self) -> list[Statement]:
        return [s for s in self.statements if s.head is not None]


def size_to_str(size: Any) -> str:
    """`(2, 3)` as torchviz writes shapes: `(2, 3)`; a scalar's is `()`."""
    return "(" + ", ".join(str(int(v)) for v in size) + ")"


def is_tensor(value: Any) -> bool:
    """A minitorch or a torch tensor."""
    import torch

    from minitorch.tensor import Tensor

    return isinstance(value, (Tensor, torch.Tensor))


def node_type_name(fn: Any) -> str:
    """The name torchviz prints: the node's type (`MulBackward0`, `AccumulateGrad`)."""
    return type(fn).__name__


def saved_attributes(fn: Any) -> list[tuple[str, Any]]:
    """`(name, value)` for every `_saved_<name>` of a built-in node, sorted by name as `dir()`
    lists them. Values that cannot be read (freed by backward) are left out.

    minitorch nodes are read without running unpack hooks; PyTorch nodes through `getattr`."""
    from minitorch.autograd.function import BackwardNode
    from minitorch.autograd.graph import saved_tensors

    if isinstance(fn, BackwardNode):
        if is_custom_function(fn):
            return []
        return sorted(saved_tensors(fn), key=lambda item: item[0])
    result = []
    for attr in dir(fn):
        if attr.startswith(SAVED_PREFIX):
            try:
                result.append((attr[len(SAVED_PREFIX) :], getattr(fn, attr)))
            except RuntimeError:  # freed by backward
                continue
    return result


def is_custom_function(fn: Any) -> bool:
    """A node recorded by a user-written Function (torchviz always shows what those save)."""
    from minitorch.autograd.function import BackwardNode

    if isinstance(fn, BackwardNode):
        return not fn._forward_cls.__module__.startswith("minitorch.")
    return hasattr(fn, "saved_tensors")


def custom_saved_tensors(fn: Any) -> list[Any]:
    """What a custom Function's node saved (empty once freed)."""
    from minitorch.autograd.function import BackwardNode
    from minitorch.autograd.graph import saved_tensors

    if isinstance(fn, BackwardNode):
        return [value for _, value in saved_tensors(fn)]
    try:
        return list(fn.saved_tensors)
    except RuntimeError:
        return []


def op_label(fn: Any, show_attrs: bool, max_attr_chars: int) -> str:
    """The node's type name, and with `show_attrs` a table of its saved values."""
    name = node_type_name(fn)
    if not show_attrs:
        return name
    attrs = {}
    for attr, value in saved_attributes(fn):
        if is_tensor(value):
            attrs[attr] = "[saved tensor]"
        elif isinstance(value, tuple) and any(is_tensor(t) for t in value):
            attrs[attr] = "[saved tensors]"
        else:
            attrs[attr] = str(value)
    if not attrs:
        return name
    max_attr_chars = max(max_attr_chars, 3)
    width1 = max(len(k) for k in attrs)
    width2 = min(max(len(v) for v in attrs.values()), max_attr_chars)
    rule = "-" * max(width1 + width2 + 2, len(name))

    def cut(text: str) -> str:
        return text[: width2 - 3] + "..." if len(text) > width2 else text

    rows = "\n".join(f"{k:<{width1}}: {cut(v):>{width2}}" for k, v in attrs.items())
    return f"{name}\n{rule}\n{rows}"


def is_view(tensor: Any) -> bool:
    flag = getattr(tensor, "_is_view", False)
    return bool(flag() if callable(flag) else flag)


class _Keys:
    """Stable statement keys (`n0`, `n1`, ...) by object identity, in order of first use, so
    that the picture's source never shows memory addresses. Keeps the objects alive meanwhile."""

    def __init__(self) -> None:
        self._keys: dict[int, str] = {}
        self._alive: list[Any] = []

    def __call__(self, obj: Any) -> str:
        key = self._keys.get(id(obj))
        if key is None:
            key = self._keys[id(obj)] = f"n{len(self._keys)}"
            self._alive.append(obj)
        return key

    def __contains__(self, obj: Any) -> bool:
        return id(obj) in self._keys


def describe(
    var: Any,
    params: dict[str, Any] | None = None,
    show_attrs: bool = False,
    show_saved: bool = False,
    max_attr_chars: int = 50,
) -> Picture:
    """The picture of the graph behind `var` (a tensor or a tuple of tensors)."""
    param_names = {id(v): k for k, v in (params or {}).items()}
    keys = _Keys()
    seen = _Keys()  # backward nodes and tensors already drawn
    out: list[Statement] = []

    def tensor_label(tensor: Any, name: str | None = None) -> str:
        if not name:
            name = param_names.get(id(tensor), "")
        return f"{name}\n {size_to_str(tensor.size())}"

    def add_nodes(root: Any) -> None:
        """torchviz's recursive walk, with an explicit stack (deep graphs need no recursion):
        a node's own statements, then each input's walk, then custom Functions' saved tensors."""
        stack = [_visit(root)]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
            elif child not in seen:
                stack.append(_visit(child))

    def _visit(fn: Any):  # a generator: yields the children to walk, in order
        seen(fn)
        if show_saved:
            for attr, value in saved_attributes(fn):
                seen(value)
                if is_tensor(value):
                    out.append(Statement(keys(fn), keys(value), attrs={"dir": "none"}))
                    out.append(Statement(keys(value), None, tensor_label(value, attr), "orange"))
                if isinstance(value, tuple):
                    for i, t in enumerate(value):
                        if is_tensor(t):
                            out.append(Statement(keys(fn), keys(t), attrs={"dir": "none"}))
                            label = tensor_label(t, f"{attr}[{i}]")
                            out.append(Statement(keys(t), None, label, "orange"))
        if hasattr(fn, "variable"):
            leaf = fn.variable
            seen(leaf)
            out.append(Statement(keys(leaf), None, tensor_label(leaf), "lightblue"))
            out.append(Statement(keys(leaf), keys(fn)))
        out.append(Statement(keys(fn), None, op_label(fn, show_attrs, max_attr_chars), None))
        for child, _ in getattr(fn, "next_functions", ()):
            if child is not None:
                out.append(Statement(keys(child), keys(fn)))
                yield child
        if is_custom_function(fn):
            for t in custom_saved_tensors(fn):
                if is_tensor(t):
                    seen(t)
                    out.append(Statement(keys(t), keys(fn), attrs={"dir": "none"}))
                    out.append(Statement(keys(t), None, tensor_label(t), "orange"))

    def add_base_tensor(tensor: Any, color: str = "darkolivegreen1") -> None:
        if tensor in seen:
            return
        seen(tensor)
        out.append(Statement(keys(tensor), None, tensor_label(tensor), color))
        if tensor.grad_fn is not None:
            if tensor.grad_fn not in seen:
                add_nodes(tensor.grad_fn)
            out.append(Statement(keys(tensor.grad_fn), keys(tensor)))
        if is_view(tensor) and tensor._base is not None:
            # Recursion depth is at most 2: a view's `_base` is never itself a view.
            add_base_tensor(tensor._base, "darkolivegreen3")
            out.append(Statement(keys(tensor._base), keys(tensor), attrs={"style": "dotted"}))

    for v in var if isinstance(var, tuple) else (var,):
        add_base_tensor(v)
    return Picture(out)
