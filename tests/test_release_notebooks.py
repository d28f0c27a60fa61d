"""What a student gets and what "Run All" does with it, for every assignment (issue 16).

Each assignment is released with nbgrader, as `python -m solutions release` does, into a
temporary course once per test session (`release_notebook`; conftest's `released_course` holds
notebook 1 only).

- Every release is clean: no nbval mark (`NBVAL`), no object address (`0x` and 6 or more hex
  digits) and no cell output longer than 40 lines.
- "Run All" on a blank release reaches the last cell: the release runs top to bottom in a fresh
  kernel (nbclient, errors not allowed), each exercise's visible test cell says in one line that
  the exercise is not written yet (`minitorch.notebook.exercise`), and what it printed is clean.
- Every cell of a source notebook that draws (`show(`, `show_side_by_side(`, `plt.show(`,
  `draw(`, `make_dot(`, ...) displays a picture. The committed notebooks keep only the outputs
  nbval compares, so the test executes each source notebook itself.

Each of the last two starts a kernel per notebook. Run All of the six blank releases took 42 s
on 2 cores (the releases 6 s more), so it runs in the default suite; the six source notebooks
took 88 s, and nbval runs them already, so their pictures are checked with `--classes`.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from course_notebooks import ASSIGNMENTS, REPO_ROOT, role
from course_support import build_release
from nbformat import NotebookNode

from course.build import notebook_path

MAX_OUTPUT_LINES = 40
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
# The line `with exercise(N):` prints while the answer it needs is the release's stub.
NOT_WRITTEN_YET = re.compile(r"^Exercise (\d+)\b.*\(\).*\bnot written yet", re.MULTILINE)
# The functions whose call draws a picture (`plt.show()` is a call of `show` too).
DRAWING_FUNCTIONS = set(
    "show show_side_by_side draw make_dot program_dot order_dot gradient_flow".split()
)
PICTURES = ("image/png", "image/svg+xml")
CELL_TIMEOUT_S = 60  # nbgrader's validation allows 30 s per cell; headroom for a busy machine


@pytest.fixture(scope="session")
def release_notebook(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """`release_notebook(assignment)`: the path of the assignment's student notebook, released
    by nbgrader into one temporary course the first time it is asked for."""
    root = tmp_path_factory.mktemp("releases") / "course"
    released: dict[str, Path] = {}

    def release(assignment: str) -> Path:
        if assignment not in released:
            build_release(root, [assignment])
            released[assignment] = root / "release" / assignment / f"{assignment}.ipynb"
        return released[assignment]

    return release


def shown_text(output: NotebookNode) -> str:
    """The text a reader sees of one output: a stream, a traceback, or a value's text/plain
    when nothing richer (a picture, HTML) is displayed instead of it."""
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "\n".join(output.traceback)
    data = output.get("data", {})
    return data.get("text/plain", "") if set(data) <= {"text/plain"} else ""


def problems(nb: NotebookNode) -> list[str]:
    """Each cell that shows students an nbval mark, an object address or a long output."""
    found = []
    for number, cell in enumerate(nb.cells):
        first_line = next(iter(cell.source.strip().splitlines()), "")
        where = f"cell {number} ({first_line[:60]!r})"
        texts = [shown_text(output) for output in cell.get("outputs", [])]
        if "NBVAL" in cell.source or any("NBVAL" in text for text in texts):
            found.append(f"{where}: an nbval mark")
        address = next((m for m in map(ADDRESS.search, [cell.source, *texts]) if m), None)
        if address:
            found.append(f"{where}: an object address {address.group()}")
        lines = sum(len(text.splitlines()) for text in texts)
        if lines > MAX_OUTPUT_LINES:
            found.append(f"{where}: {lines} lines of output (at most {MAX_OUTPUT_LINES})")
    return found


def run_all(path: Path) -> NotebookNode:
    """The notebook at `path`, executed top to bottom in a fresh kernel in its folder; the
    first cell that raises fails the test (nbclient's CellExecutionError names it)."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def exercise_number(grade_id: str) -> int:
    """3 for "ex3_find_leaves_tests"."""
    return int(re.match(r"ex(\d+)_", grade_id).group(1))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_shows_no_marks_addresses_or_long_outputs(
    assignment: str, release_notebook: Callable[[str], Path]
) -> None:
    path = release_notebook(assignment)
    assert "NBVAL" not in path.read_text(), "an nbval mark reached the release"
    found = problems(nbformat.read(path, as_version=4))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_run_all_reaches_the_end_of_a_blank_release(
    assignment: str, release_notebook: Callable[[str], Path]
) -> None:
    nb = run_all(release_notebook(assignment))
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code), "a code cell did not run"
    test_cells = [cell for cell in nb.cells if role(cell).get("grade")]
    assert test_cells, "no test cells in the release"
    for cell in test_cells:
        grade_id = role(cell)["grade_id"]
        printed = "".join(o.text for o in cell.outputs if o.output_type == "stream")
        numbers = [int(n) for n in NOT_WRITTEN_YET.findall(printed)]
        assert numbers == [exercise_number(grade_id)], (
            f"{grade_id}: its visible tests should say in one line that exercise "
            f"{exercise_number(grade_id)} is not written yet, and printed:\n{printed}"
        )
    found = problems(nb)
    assert not found, "\n".join(found)


def draws(cell: NotebookNode) -> bool:
    """Whether a code cell calls a drawing function, `plt.show()` or `minitorch.viz.show(...)`
    alike (found by name in the cell's syntax tree: comments and strings do not count)."""
    for node in ast.walk(ast.parse(cell.source)):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else None
            name = function.id if isinstance(function, ast.Name) else name
            if name in DRAWING_FUNCTIONS:
                return True
    return False


def shows_a_picture(cell: NotebookNode) -> bool:
    """Whether a cell displayed a PNG or SVG, or HTML holding an SVG (show_side_by_side)."""
    for output in cell.outputs:
        data = output.get("data", {})
        if any(kind in data for kind in PICTURES) or "<svg" in data.get("text/html", ""):
            return True
    return False


@pytest.mark.classes
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_cell_that_draws_shows_a_picture_in_the_source_notebook(
    assignment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hidden test cells import the graders: the kernel needs the repository on its path.
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    nb = run_all(notebook_path(assignment))
    drawing = [(n, cell) for n, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    drawing = [(n, cell) for n, cell in drawing if draws(cell)]
    assert drawing, "no cell draws anything"
    blank = [
        f"cell {n}: {cell.source.strip().splitlines()[-1][:70]!r}"
        for n, cell in drawing
        if not shows_a_picture(cell)
    ]
    assert not blank, "these cells draw but displayed no picture:\n" + "\n".join(blank)
