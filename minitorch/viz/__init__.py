"""Pictures of backward graphs, for minitorch and PyTorch tensors alike.

- `make_dot(t, params=None, show_saved=False)`: a `graphviz.Digraph` drawn as torchviz draws
  PyTorch graphs, so `torchviz.make_dot(torch_y)` and `minitorch.viz.make_dot(y)` look the same.
- `show(t, ...)`: what notebooks call. The Digraph when graphviz's `dot` program is installed,
  otherwise the same graph drawn with matplotlib and a one-line hint how to install graphviz.
- `draw(t, filename, ...)`: write the picture to a PNG file, with graphviz or matplotlib.
- `show_side_by_side(torch_out, minitorch_out, params)`: display the same graph recorded by
  PyTorch and by minitorch next to each other in a notebook (`titles=` pairs any two graphs).
- `program_dot(program, guards)`: a recorded program (a trace, `minitorch.jit`) in the order it
  runs, with its guards.
- `print_graph(t)` / `format_graph(t)`: the graph as indented text.
- `gradient_flow(out, names)`: the gradients flowing backward through a graph, with each node's
  value and gradient; `order_dot(out, orders)`: its nodes numbered in several orders, the arrows
  an order runs the wrong way in red.
- `compare(demo, (torch, minitorch))`: run `demo(lib)` on each library, print the outputs as columns
  (`≠` marks the lines that differ).
"""

from __future__ import annotations

import shutil
from typing import Any

from minitorch.viz.columns import compare
from minitorch.viz.dot import make_dot, to_digraph
from minitorch.viz.flow import gradient_flow, order_dot
from minitorch.viz.matplotlib_fallback import draw as draw_with_matplotlib
from minitorch.viz.picture import describe
from minitorch.viz.program import program_dot
from minitorch.viz.text import format_graph, print_graph

__all__ = [
    "compare",
    "draw",
    "format_graph",
    "gradient_flow",
    "has_graphviz",
    "make_dot",
    "order_dot",
    "print_graph",
    "program_dot",
    "show",
    "show_side_by_side",
]

INSTALL_HINT = (
    "graphviz's `dot` program is not installed, so this graph is drawn with matplotlib; for "
    "graphviz pictures run `apt-get install graphviz` (conda: `conda install graphviz`, "
    "macOS: `brew install graphviz`)."
)
_hint_shown = False  # the hint is printed once per session


def has_graphviz() -> bool:
    """True when the graphviz Python package and its `dot` program are both available."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def show(var: Any, params: dict[str, Any] | None = None, show_saved: bool = False,
         show_attrs: bool = False, title: str | None = None) -> Any:  # fmt: skip
    """The picture to display in a notebook cell: a `graphviz.Digraph` when graphviz can render
    it, else a matplotlib Figure of the same graph (the first time, after printing a one-line
    hint how to install graphviz).
    Arguments as in `make_dot`; `title` is only used by the matplotlib drawing."""
    global _hint_shown
    picture = describe(var, params, show_attrs, show_saved)
    if has_graphviz():
        return to_digraph(picture)
    if not _hint_shown:
        print(INSTALL_HINT)
        _hint_shown = True
    return draw_with_matplotlib(picture, title)


def draw(var: Any, filename: str, params: dict[str, Any] | None = None,
         show_saved: bool = False, show_attrs: bool = False) -> str:  # fmt: skip
    """Write the picture of the graph behind `var` to `filename` as PNG (graphviz if it can,
    matplotlib otherwise). Returns the file name."""
    picture = describe(var, params, show_attrs, show_saved)
    if has_graphviz():
        from graphviz import ExecutableNotFound

        try:
            with open(filename, "wb") as file:
                file.write(to_digraph(picture).pipe(format="png"))
            return filename
        except ExecutableNotFound:
            pass
    draw_with_matplotlib(picture).savefig(filename, format="png", dpi=100)
    return filename


def show_side_by_side(
    torch_out: Any,
    minitorch_out: Any,
    params: dict[str, tuple[Any, Any]] | None = None,
    titles: tuple[str, str] = ("PyTorch", "minitorch"),
) -> None:
    """Display, in a notebook, the graph behind a PyTorch tensor and the one behind a minitorch
    tensor next to each other. `params` names leaves: `{name: (torch_leaf, minitorch_leaf)}`.
    Both are drawn by `make_dot`, which draws PyTorch graphs exactly as torchviz does. Without
    the `dot` program, the two matplotlib drawings are shown one after the other.

    Any two graphs can be paired: `show_side_by_side(line_loss, parabola_loss, params,
    titles=("line", "parabola"))` shows two minitorch graphs under those titles."""
    from IPython.display import HTML, display

    params = params or {}
    graphs = [
        (titles[0], torch_out, {name: t for name, (t, _) in params.items()}),
        (titles[1], minitorch_out, {name: m for name, (_, m) in params.items()}),
    ]
    if not has_graphviz():
        for title, out, names in graphs:
            display(show(out, names, title=title))
        return
    boxes = "".join(
        f"<div style='margin-right:3em'><b>{title}</b><br>"
        f"{make_dot(out, params=names).pipe(format='svg').decode()}</div>"
        for title, out, names in graphs
    )
    display(HTML(f"<div style='display:flex;align-items:flex-start'>{boxes}</div>"))
