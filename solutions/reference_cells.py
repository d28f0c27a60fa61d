"""The reference solutions are the answer cells of the course's notebook sources.

Each solution is written once, in its notebook's source course/notebooks/<assignment>.py (see
NOTE [Notebook sources] in course/build.py). `load(assignment, namespace)` executes there, in
order, every answer cell (`"solution": true`) and every locked code cell (data that exercises
and graders share, such as a prediction exercise's snippets). Each cell is compiled under the
source's file name and line numbers, so a traceback or `inspect.getsource` points at the very
line a maintainer edits.

The percent format is read here with a few lines of code instead of jupytext, which would add
more than a second to every grading kernel's start; a test checks that both read the same cells.
"""

from __future__ import annotations

import ast
import functools
import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parents[1] / "course" / "notebooks"
MARKER = "# %%"


@dataclass
class ReferenceCell:
    """One code cell of a notebook source that the graders use."""

    grade_id: str
    source: str
    first_line: int  # 1-based line number of the source's first line in the file
    solution: bool = False  # an answer cell (else a locked code cell)


def _role(marker_line: str) -> dict | None:
    """The nbgrader metadata on a code cell's marker line; None for a markdown cell or a cell
    without a role."""
    if "[markdown]" in marker_line or "nbgrader=" not in marker_line:
        return None
    text = marker_line.split("nbgrader=", 1)[1]
    role, _ = json.JSONDecoder().raw_decode(text)
    return role


def reference_cells(assignment: str) -> list[ReferenceCell]:
    """The answer cells and locked code cells of course/notebooks/<assignment>.py, in order."""
    lines = (NOTEBOOKS / f"{assignment}.py").read_text().splitlines()
    markers = [i for i, line in enumerate(lines) if line.startswith(MARKER)]
    cells = []
    for start, end in zip(markers, [*markers[1:], len(lines)]):
        role = _role(lines[start])
        if role is None or role.get("grade", False):
            continue
        if role.get("solution", False) or role.get("locked", False):
            body = "\n".join(lines[start + 1 : end]).rstrip("\n")
            cells.append(
                ReferenceCell(role["grade_id"], body, start + 2, bool(role.get("solution")))
            )
    return cells


def given(assignment: str) -> dict[str, Any]:
    """The namespace of the notebook's imports and locked code cells of `assignment` (data and
    helpers every student has in the release, e.g. a prediction exercise's snippets), executed
    once.

    Hidden tests take what they share with the notebook from here, never from the reference:
    in a grading sandbox the source holds only these lines (`without_answers`)."""
    if assignment not in _GIVEN:
        module = types.ModuleType(f"given_{assignment}")
        sys.modules[module.__name__] = module  # dataclasses look their module up
        code = compile(without_answers(assignment), str(NOTEBOOKS / f"{assignment}.py"), "exec")
        exec(code, module.__dict__)
        _GIVEN[assignment] = module.__dict__
    return _GIVEN[assignment]


_GIVEN: dict[str, dict[str, Any]] = {}


def without_answers(assignment: str) -> str:
    """The source of `assignment` reduced to the imports of its unlocked code cells and its
    locked code cells, other lines blank (so tracebacks keep their line numbers): what a grading
    sandbox may read, since nothing in it is missing from the student's release.

    Remembered per source text: grading threads call this while another thread parses, and
    CPython 3.11's parser must not run in two threads at once (see NOTE [Grading threads] in
    solutions/instructor/pipeline.py)."""
    return _without_answers((NOTEBOOKS / f"{assignment}.py").read_text())


@functools.lru_cache(maxsize=32)
def _without_answers(text: str) -> str:
    lines = text.splitlines()
    kept = [""] * len(lines)
    markers = [i for i, line in enumerate(lines) if line.startswith(MARKER)]
    for start, end in zip(markers, [*markers[1:], len(lines)]):
        kept[start] = lines[start]  # every cell's marker: this text reads the same way again
        if "[markdown]" in lines[start]:
            continue
        role = _role(lines[start]) or {}
        if role.get("grade") or role.get("solution"):
            continue
        if role.get("locked"):
            kept[start + 1 : end] = lines[start + 1 : end]
            continue
        body = [line if not line.startswith(("%", "!")) else "" for line in lines[start + 1 : end]]
        try:
            statements = ast.parse("\n".join(body)).body
        except SyntaxError:
            continue
        for statement in statements:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                first, last = start + statement.lineno, start + statement.end_lineno
                kept[first : last + 1] = lines[first : last + 1]
    return "\n".join(kept) + "\n"


def load(assignment: str, namespace: dict[str, Any]) -> None:
    """Execute the reference cells of `assignment` into `namespace` (a module's globals)."""
    path = NOTEBOOKS / f"{assignment}.py"
    for cell in reference_cells(assignment):
        padded = "\n" * (cell.first_line - 1) + cell.source
        exec(compile(padded, str(path), "exec"), namespace)
