"""Run one demo on several libraries and print what each printed in side-by-side columns."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


def compare(demo: Callable[[ModuleType], Any], libraries: Sequence[ModuleType]) -> None:
    """Call `demo(lib)` for each library and print their printed lines as columns.

    Each column is headed by the library's name. The gutter between two columns is `|` where
    the lines agree and `≠` where they differ, so a reader sees at once whether PyTorch and
    minitorch printed the same thing. Example::

        def grads(lib):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            (x * x).sum().backward()
            print("x.grad:", x.grad.tolist())

        compare(grads, (torch, minitorch))
        # torch                  | minitorch
        # x.grad: [2.0, 4.0]     | x.grad: [2.0, 4.0]
    """
    columns = []
    for lib in libraries:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            demo(lib)
        columns.append([lib.__name__, *buffer.getvalue().rstrip("\n").split("\n")])
    widths = [max(len(line) for line in column) for column in columns]
    for row in range(max(len(column) for column in columns)):
        cells = [column[row] if row < len(column) else "" for column in columns]
        line = cells[0].ljust(widths[0])
        for left, right, width in zip(cells, cells[1:], widths[1:]):
            gutter = "|" if row == 0 or left == right else "≠"
            line += f" {gutter} {right.ljust(width)}"
        print(line.rstrip())
