"""A graph as indented text, for terminals, doctests and tests.

    >>> loss = (w * x + b).sum()        # w, b require grad; x does not
    >>> print_graph(loss, params={"w": w, "b": b, "x": x}, show_none=True)
    output () <- SumBackward0
    SumBackward0
    └─ AddBackward0
       ├─ MulBackward0  saved: other (3) = x
       │  ├─ AccumulateGrad  w (3)
       │  └─ (None: no grad needed)
       └─ AccumulateGrad  b (3)

Each line is one backward node: its name, the shapes of what it saved for backward (named when
`params` names them; "saved tensors freed" after backward), and for `AccumulateGrad` the leaf's
name and shape. A node
reached along several paths gets a number (`MulBackward0 #1`) and is expanded only once. The
output never contains memory addresses, so it is the same on every run.
"""

from __future__ import annotations

from typing import Any

from minitorch.viz.picture import (
    custom_saved_tensors,
    is_custom_function,
    is_tensor,
    node_type_name,
    saved_attributes,
    size_to_str,
)

MAX_INDENT = 60  # characters: beyond 20 levels lines stop moving right


def format_graph(var: Any, params: dict[str, Any] | None = None, show_saved: bool = True,
                 show_none: bool = False) -> str:  # fmt: skip
    """The text `print_graph` prints. `show_none` adds a line for each input that needs no
    grad (`next_functions` entries that are None)."""
    names = {id(v): k for k, v in (params or {}).items()}
    outputs = var if isinstance(var, tuple) else (var,)
    roots = [t.grad_fn for t in outputs if t.grad_fn is not None]
    lines = []
    for t in outputs:
        name = names.get(id(t), "output")
        source = node_type_name(t.grad_fn) if t.grad_fn is not None else "no grad_fn"
        lines.append(f"{name} {size_to_str(t.size())} <- {source}")

    shared = _shared_nodes(roots)
    number: dict[int, int] = {}
    expanded: set[int] = set()
    # (node or None, prefix for its line, prefix for its children)
    stack: list[tuple[Any, str, str]] = [(r, "", "") for r in reversed(roots)]
    while stack:
        fn, lead, child_lead = stack.pop()
        if fn is None:
            lines.append(f"{lead}(None: no grad needed)")
            continue
        text = node_type_name(fn)
        if id(fn) in shared:
            text += f" #{number.setdefault(id(fn), len(number) + 1)}"
        if id(fn) in expanded:
            lines.append(f"{lead}{text} (see above)")
            continue
        expanded.add(id(fn))
        lines.append(lead + text + _details(fn, names, show_saved))
        children = [c for c, _ in getattr(fn, "next_functions", ()) if c is not None or show_none]
        for index in reversed(range(len(children))):
            last = index == len(children) - 1
            branch, extend = ("└─ ", "   ") if last else ("├─ ", "│  ")
            if len(child_lead) >= MAX_INDENT:
                extend = ""  # deep chains continue at the same column
            stack.append((children[index], child_lead + branch, child_lead + extend))
    return "\n".join(lines)


def print_graph(var: Any, params: dict[str, Any] | None = None, show_saved: bool = True,
                show_none: bool = False) -> None:  # fmt: skip
    """Print the backward graph behind `var` (a minitorch or torch tensor, or a tuple of them)
    as an indented tree, output first. `params` names leaves, as in `make_dot`."""
    print(format_graph(var, params, show_saved, show_none))


def _details(fn: Any, names: dict[int, str], show_saved: bool) -> str:
    if hasattr(fn, "variable"):
        leaf = fn.variable
        return f"  {names.get(id(leaf), 'leaf')} {size_to_str(leaf.size())}"
    if not show_saved:
        return ""
    if _freed(fn):
        return "  saved tensors freed"
    if is_custom_function(fn):
        items = [(f"saved_tensors[{i}]", t) for i, t in enumerate(custom_saved_tensors(fn))]
    else:
        items = saved_attributes(fn)
    shown = []
    for name, value in items:
        if is_tensor(value):
            label = names.get(id(value))
            shown.append(f"{name} {size_to_str(value.size())}" + (f" = {label}" if label else ""))
        elif value is not None and not is_tensor(value) and _is_packed(fn):
            shown.append(f"{name} (packed by a hook)")
    return "  saved: " + ", ".join(shown) if shown else ""


def _freed(fn: Any) -> bool:
    """minitorch marks a freed node with `_saved = None` (torch nodes raise on access)."""
    from minitorch.autograd.function import BackwardNode

    return isinstance(fn, BackwardNode) and fn._saved is None


def _is_packed(fn: Any) -> bool:
    from minitorch.autograd.function import BackwardNode

    return isinstance(fn, BackwardNode) and any(
        s is not None and s.unpack_hook is not None for s in fn._saved or ()
    )


def _shared_nodes(roots: list[Any]) -> set[int]:
    """ids of the nodes reached along more than one edge (they get numbers)."""
    count: dict[int, int] = {}
    seen: set[int] = set()
    stack = list(roots)
    for r in roots:
        count[id(r)] = count.get(id(r), 0) + 1
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for child, _ in getattr(fn, "next_functions", ()):
            if child is not None:
                count[id(child)] = count.get(id(child), 0) + 1
                stack.append(child)
    return {k for k, c in count.items() if c > 1}
