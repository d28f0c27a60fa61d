"""Draw a graph picture with matplotlib, for machines without graphviz's `dot` program.

The layout is a small version of what `dot` does:
1. Layers: every node goes one layer below the lowest of the nodes with an arrow into it
   (longest path from the inputs), so inputs are at the top and the output at the bottom.
   A saved tensor, tied to its node by an undirected edge only, goes one layer below it.
2. Order inside a layer: a few sweeps that move each node towards the average position of its
   neighbours in the layer above (the barycenter heuristic), which removes most crossings.
3. Boxes are sized from their text (monospace), arrows run from the bottom of a box to the top
   of the next.
"""

from __future__ import annotations

import io
from typing import Any

from minitorch.viz.picture import OP_FILL, Picture, Statement

# X11 colour names graphviz knows and matplotlib does not.
COLORS = {"darkolivegreen1": "#caff70", "darkolivegreen3": "#a2cd5a"}

FONT_SIZE = 8  # points
CHAR_WIDTH = 0.6  # of the font size: monospace advance
LINE_HEIGHT = 1.25  # of the font size
GAP_X = 2.0  # characters between boxes
GAP_Y = 2.5  # lines between layers


def layers(picture: Picture) -> list[list[str]]:
    """Node keys per layer, top (inputs) to bottom (outputs), ordered to limit crossings."""
    nodes = picture.nodes()
    arrows = [e for e in picture.edges() if e.attrs.get("dir") != "none"]
    ties = [e for e in picture.edges() if e.attrs.get("dir") == "none"]
    parents: dict[str, list[str]] = {k: [] for k in nodes}
    for e in arrows:
        if e.key in nodes and e.head in nodes and e.key != e.head:
            parents[e.head].append(e.key)

    rank = _longest_path_ranks(nodes, parents)
    tied_only = {e.head for e in ties} - {e.head for e in arrows} - {e.key for e in arrows}
    for e in ties:  # a saved tensor: just below its node, as `dot` places it
        if e.head in tied_only and e.key in rank:
            rank[e.head] = max(rank.get(e.head, 0), rank[e.key] + 1)
    for key in nodes:
        rank.setdefault(key, 0)

    rows: list[list[str]] = [[] for _ in range(max(rank.values(), default=-1) + 1)]
    for key in nodes:
        rows[rank[key]].append(key)
    neighbours = {k: list(parents[k]) for k in nodes}
    for e in ties:
        if e.head in tied_only:
            neighbours[e.head].append(e.key)
    for _ in range(4):
        position = {k: i for row in rows for i, k in enumerate(row)}
        for row in rows:
            row.sort(key=lambda k: _barycenter(k, neighbours, position))
    return rows


def _longest_path_ranks(nodes: dict, parents: dict[str, list[str]]) -> dict[str, int]:
    """rank(v) = 1 + max rank of its parents (0 without parents), without recursion. An arrow
    that closes a cycle (only possible in hand-made pictures) is ignored."""
    rank: dict[str, int] = {}
    on_path: set[str] = set()
    for start in nodes:
        if start in rank:
            continue
        stack = [(start, iter(parents[start]))]
        on_path.add(start)
        while stack:
            key, pending = stack[-1]
            for parent in pending:
                if parent not in rank and parent not in on_path:
                    on_path.add(parent)
                    stack.append((parent, iter(parents[parent])))
                    break
            else:
                stack.pop()
                on_path.discard(key)
                rank[key] = 1 + max((rank[p] for p in parents[key] if p in rank), default=-1)
    return rank


def _barycenter(key: str, neighbours: dict[str, list[str]], position: dict[str, int]) -> float:
    placed = [position[n] for n in neighbours[key] if n in position]
    return sum(placed) / len(placed) if placed else position[key]


def _graph_figure_class() -> type:
    """A matplotlib Figure that Jupyter displays as PNG on its own. It is not attached to
    pyplot, so a notebook shows it exactly once: as the cell's result or through `display()`."""
    from matplotlib.figure import Figure

    class GraphFigure(Figure):
        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=100)
            return buffer.getvalue()

    return GraphFigure


def draw(picture: Picture, title: str | None = None) -> Any:
    """A matplotlib Figure showing the picture."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    nodes = picture.nodes()
    rows = layers(picture)
    width = {k: max(len(line) for line in s.label.split("\n")) + 2 for k, s in nodes.items()}
    height = {k: len(s.label.split("\n")) + 0.6 for k, s in nodes.items()}

    # Coordinates in characters (x) and lines (y); the figure is scaled to make them square.
    centre: dict[str, tuple[float, float]] = {}
    row_widths = [sum(width[k] for k in row) + GAP_X * (len(row) - 1) for row in rows]
    total_width = max(row_widths, default=1)
    y = 0.0
    for row, row_width in zip(rows, row_widths):
        row_height = max(height[k] for k in row)
        x = (total_width - row_width) / 2
        for k in row:
            centre[k] = (x + width[k] / 2, -(y + row_height / 2))
            x += width[k] + GAP_X
        y += row_height + GAP_Y
    total_height = max(y - GAP_Y, 1)

    points = FONT_SIZE / 72  # inches per font size
    figure = _graph_figure_class()(
        figsize=(
            max(total_width * CHAR_WIDTH * points, 2),
            max(total_height * LINE_HEIGHT * points, 1) + (0.3 if title else 0),
        )
    )
    ax = figure.add_axes((0, 0, 1, 0.92 if title else 1))
    ax.set_xlim(-0.5, total_width + 0.5)
    ax.set_ylim(-total_height - 0.5, 0.5)
    ax.axis("off")
    if title:
        figure.suptitle(title, fontsize=FONT_SIZE + 1)

    for k, s in nodes.items():
        cx, cy = centre[k]
        ax.add_patch(
            FancyBboxPatch(
                (cx - width[k] / 2, cy - height[k] / 2),
                width[k],
                height[k],
                boxstyle="square,pad=0",
                facecolor=COLORS.get(s.fill, s.fill or OP_FILL),
                edgecolor="black",
                linewidth=0.8,
            )
        )
        ax.text(cx, cy, s.label, ha="center", va="center", family="monospace", size=FONT_SIZE)

    for e in picture.edges():
        if e.key in centre and e.head in centre:
            start, end = _endpoints(e, centre, width, height)
            ax.add_patch(
                FancyArrowPatch(
                    start,
                    end,
                    arrowstyle="-" if e.attrs.get("dir") == "none" else "-|>",
                    linestyle=":" if e.attrs.get("style") == "dotted" else "-",
                    mutation_scale=8,
                    linewidth=0.8,
                    color="black",
                )
            )
    return figure


def _endpoints(edge: Statement, centre: dict, width: dict, height: dict) -> tuple:
    """From the bottom of the tail's box to the top of the head's (or side to side in a row)."""
    (x1, y1), (x2, y2) = centre[edge.key], centre[edge.head]
    tail_w, tail_h = width[edge.key] / 2, height[edge.key] / 2
    head_w, head_h = width[edge.head] / 2, height[edge.head] / 2
    if abs(y1 - y2) < 1e-9:
        side = 1 if x2 > x1 else -1
        return (x1 + side * tail_w, y1), (x2 - side * head_w, y2)
    down = 1 if y1 > y2 else -1
    return (x1, y1 - down * tail_h), (x2, y2 + down * head_h)
