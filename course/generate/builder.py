"""What every notebook generator in course/generate/ shares: the cell builder with nbgrader
metadata, reading the reference solutions, executing, writing and the `--check` for drift.

A generator describes its notebook's cells and calls `run(build_notebook, NOTEBOOK, __doc__)`:

    python3 course/generate/<assignment>.py            # build, execute, write the notebook
    python3 course/generate/<assignment>.py --check    # exit 1 if the committed file drifted

Executing keeps only the outputs of cells marked `# NBVAL_CHECK_OUTPUT` (the ones nbval compares),
so the committed notebook stays small and its diffs readable.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECK_OUTPUT = "# NBVAL_CHECK_OUTPUT"
KERNEL_METADATA = {
    "kernelspec": {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    },
    "language_info": {"name": "python"},
}


def notebook_path(assignment: str) -> Path:
    """course/source/<assignment>/<assignment>.ipynb"""
    return REPO_ROOT / "course" / "source" / assignment / f"{assignment}.ipynb"


def solution_sources(assignment: str) -> dict[str, str]:
    """The blocks of solutions/<assignment>/reference.py that start with `# %% <grade_id>`, keyed
    by grade_id: the single source of truth for the notebook's solution cells."""
    text = (REPO_ROOT / "solutions" / assignment / "reference.py").read_text()
    parts = re.split(r"^# %% (\w+)\n", text, flags=re.MULTILINE)
    return {grade_id: body.strip("\n") for grade_id, body in zip(parts[1::2], parts[2::2])}


class Builder:
    """Collects cells with deterministic ids and nbgrader metadata.

    `points[grade_id]` is an exercise's points; `graded_object[grade_id]` is `(grader, name)`:
    its hidden test calls `grade.<grader>(<name>)` from `solutions.<assignment>`.
    """

    def __init__(self, assignment: str, points: dict[str, int], graded_object: dict) -> None:
        self.assignment = assignment
        self.points = points
        self.graded_object = graded_object
        self.cells: list = []

    def _add(self, cell: nbformat.NotebookNode, nbgrader: dict | None) -> None:
        cell["id"] = f"cell-{len(self.cells):02d}"
        if nbgrader is not None:
            cell["metadata"]["nbgrader"] = {"schema_version": 3, **nbgrader}
        self.cells.append(cell)

    def md(self, text: str) -> None:
        self._add(nbformat.v4.new_markdown_cell(textwrap.dedent(text).strip("\n")), None)

    def code(self, text: str) -> None:
        self._add(nbformat.v4.new_code_cell(textwrap.dedent(text).strip("\n")), None)

    def statement(self, grade_id: str, text: str, snippets: str = "") -> None:
        """A locked markdown cell; `{snippets}` in `text` is replaced by `snippets`."""
        text = textwrap.dedent(text).strip("\n").replace("{snippets}", snippets)
        meta = {
            "grade": False,
            "solution": False,
            "locked": True,
            "grade_id": f"{grade_id}_statement",
        }
        self._add(nbformat.v4.new_markdown_cell(text), meta)

    def locked_code(self, grade_id: str, text: str) -> None:
        meta = {"grade": False, "solution": False, "locked": True, "grade_id": grade_id}
        self._add(nbformat.v4.new_code_cell(text), meta)

    def solution(self, grade_id: str, source: str) -> None:
        meta = {"grade": False, "solution": True, "locked": False, "grade_id": grade_id}
        self._add(nbformat.v4.new_code_cell(source), meta)

    def tests(self, grade_id: str, visible: str) -> None:
        grader, name = self.graded_object[grade_id]
        hidden = (
            "### BEGIN HIDDEN TESTS\n"
            f"from solutions.{self.assignment} import grade\n\n"
            f"grade.{grader}({name})\n"
            "### END HIDDEN TESTS"
        )
        source = textwrap.dedent(visible).strip("\n") + "\n\n" + hidden
        meta = {
            "grade": True,
            "solution": False,
            "locked": True,
            "grade_id": f"{grade_id}_tests",
            "points": self.points[grade_id],
        }
        self._add(nbformat.v4.new_code_cell(source), meta)

    def exercise(
        self,
        grade_id: str,
        statement: str,
        visible_tests: str,
        snippets: str = "",
        locked: tuple[str, str] | None = None,
    ) -> None:
        """Statement, an optional locked code cell `(grade_id, source)` the answer works with,
        the solution cell (from reference.py) and the test cell of one exercise."""
        self.statement(grade_id, statement, snippets)
        if locked is not None:
            self.locked_code(*locked)
        self.solution(grade_id, solution_sources(self.assignment)[grade_id])
        self.tests(grade_id, visible_tests)

    def notebook(self) -> nbformat.NotebookNode:
        """The notebook of the cells so far, without outputs."""
        nb = nbformat.v4.new_notebook(cells=self.cells)
        nb.metadata = {key: dict(value) for key, value in KERNEL_METADATA.items()}
        return nb


# -------------------------------------------------------------------------------------------------
# Executing, writing, checking
# -------------------------------------------------------------------------------------------------
def execute(nb: nbformat.NotebookNode, notebook: Path) -> float:
    """Run the notebook in a fresh kernel (repository root on PYTHONPATH); return seconds."""
    from nbclient import NotebookClient

    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(notebook.parent)}},
    )
    client.execute()
    return time.perf_counter() - start


def keep_checked_outputs(nb: nbformat.NotebookNode, metadata: dict) -> None:
    """Drop outputs and execution counts except in the cells nbval compares (nbval needs both:
    it refuses a stored output whose cell has no execution count), and put back the notebook
    metadata the kernel changed."""
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell.source.startswith(CHECK_OUTPUT):
            cell.execution_count = None
            cell.outputs = []
    nb.metadata = metadata


def without_outputs(nb: nbformat.NotebookNode) -> list[dict]:
    """The cells' sources and metadata: what the generator decides, not what running produced."""
    return [
        {"id": c.get("id"), "type": c.cell_type, "source": c.source, "metadata": dict(c.metadata)}
        for c in nb.cells
    ]


def run(build_notebook: Callable[[], nbformat.NotebookNode], notebook: Path, doc: str) -> int:
    """The command line of a generator: build, execute and write `notebook`, or `--check`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the notebook drifted")
    args = parser.parse_args()
    built = build_notebook()
    if args.check:
        committed = nbformat.read(notebook, as_version=4)
        same = without_outputs(built) == without_outputs(committed)
        print("up to date" if same else f"{notebook} differs from the generator: rebuild it")
        return 0 if same else 1
    notebook.parent.mkdir(parents=True, exist_ok=True)
    metadata = copy.deepcopy(built.metadata)  # executing adds the kernel's own
    seconds = execute(built, notebook)
    keep_checked_outputs(built, metadata)
    nbformat.validate(built)
    nbformat.write(built, notebook)
    print(f"wrote {notebook.relative_to(REPO_ROOT)} (executed in {seconds:.1f} s)")
    return 0
