"""Build the notebooks that nbgrader reads from their sources, or check that they are up to date.

Each assignment's notebook is written as a jupytext percent file, course/notebooks/<a>.py (see
NOTE [Notebook sources]). This script turns it into course/source/<a>/<a>.ipynb:

    python3 course/build.py                    # build, execute and write every notebook
    python3 course/build.py memory backward    # only these
    python3 course/build.py --check            # exit 1 if a committed notebook is out of date

NOTE [Notebook sources]
    course/notebooks/<a>.py is the only place where notebook <a> is written: prose, demos,
    exercise statements, solutions, visible tests and the one-line hidden test call. A
    maintainer opens it in JupyterLab (jupytext makes it a notebook, paired with the .ipynb) and
    runs its cells while writing. It holds the solutions, so it lives outside course/source/:
    nbgrader copies every file of a source folder into the student release.

    nbgrader's role of a cell is on its marker line, as cell metadata in a short form:
        # %% [markdown] nbgrader={"grade_id": "ex1_statement", "locked": true}   statement
        # %% nbgrader={"grade_id": "ex1_walk", "solution": true}                 answer cell
        # %% nbgrader={"grade_id": "ex1_walk_tests", "grade": true, "points": 4} test cell
    `schema_version` is 3, `grade` and `solution` default to false, and `locked` defaults to
    true for a test cell (grade without solution) and false otherwise: nbgrader's own meanings
    of an "autograder tests" and an "answer" cell. `nbgrader_metadata` spells them out.

    The graders' reference solutions are those same answer cells and locked code cells:
    solutions/reference_cells.py executes them, so no solution is written twice.

A cell whose output nbval compares starts with the line `# NBVAL_CHECK_OUTPUT` in the source.
Building moves that mark into the cell's metadata (the tag `nbval-check-output`, which nbval
reads as it reads the comment), so students never see it, and keeps the outputs of those cells
only, so the committed notebook stays small and its diffs readable.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO_ROOT / "course" / "notebooks"
CHECK_OUTPUT = "# NBVAL_CHECK_OUTPUT"  # the mark in a source
CHECK_OUTPUT_TAG = "nbval-check-output"  # the mark in a built notebook
KERNEL_METADATA = {
    "kernelspec": {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    },
    "language_info": {"name": "python"},
}


def assignments() -> list[str]:
    """Every assignment that has a notebook source, in alphabetical order."""
    return sorted(path.stem for path in NOTEBOOKS.glob("*.py"))


def source_path(assignment: str) -> Path:
    """course/notebooks/<assignment>.py"""
    return NOTEBOOKS / f"{assignment}.py"


def notebook_path(assignment: str) -> Path:
    """course/source/<assignment>/<assignment>.ipynb, the notebook nbgrader reads."""
    return REPO_ROOT / "course" / "source" / assignment / f"{assignment}.ipynb"


def nbgrader_metadata(role: dict) -> dict:
    """nbgrader's full cell metadata from the short form on a marker line."""
    grade, solution = role.get("grade", False), role.get("solution", False)
    full = {"schema_version": 3, "grade": grade, "solution": solution}
    full["locked"] = grade and not solution
    full.update(role)
    return full


def read_source(assignment: str) -> nbformat.NotebookNode:
    """The notebook of `assignment` without outputs: the source's cells with deterministic ids
    and nbgrader's full metadata (any other cell metadata, e.g. jupytext's, is dropped)."""
    nb = jupytext.read(source_path(assignment))
    for number, cell in enumerate(nb.cells):
        role = cell.metadata.get("nbgrader")
        cell.metadata = {} if role is None else {"nbgrader": nbgrader_metadata(role)}
        cell["id"] = f"cell-{number:02d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if cell.source.startswith(CHECK_OUTPUT):
                cell.source = cell.source[len(CHECK_OUTPUT) :].lstrip("\n")
                cell.metadata["tags"] = [CHECK_OUTPUT_TAG]
    nb.metadata = copy.deepcopy(KERNEL_METADATA)
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def without_outputs(nb: nbformat.NotebookNode) -> list[dict]:
    """The cells' sources and metadata: what the source decides, not what running produced."""
    return [
        {"id": c.get("id"), "type": c.cell_type, "source": c.source, "metadata": dict(c.metadata)}
        for c in nb.cells
    ]


def is_up_to_date(assignment: str) -> bool:
    """Whether the committed notebook has exactly the cells its source describes."""
    path = notebook_path(assignment)
    if not path.exists():
        return False
    committed = nbformat.read(path, as_version=4)
    same_cells = without_outputs(read_source(assignment)) == without_outputs(committed)
    return same_cells and committed.metadata == KERNEL_METADATA


def execute(nb: nbformat.NotebookNode, folder: Path) -> float:
    """Run the notebook in a fresh kernel in `folder` (repository root on PYTHONPATH, so its
    hidden tests find the graders); return the seconds it took."""
    from nbclient import NotebookClient

    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return time.perf_counter() - start


def is_checked(cell: nbformat.NotebookNode) -> bool:
    """Does nbval compare this cell's outputs (a built notebook's cell)?"""
    return CHECK_OUTPUT_TAG in cell.metadata.get("tags", [])


def keep_checked_outputs(nb: nbformat.NotebookNode) -> None:
    """Drop outputs and execution counts except in the cells nbval compares (nbval needs both:
    it refuses a stored output whose cell has no execution count), and put back the notebook
    metadata the kernel changed."""
    for cell in nb.cells:
        if cell.cell_type == "code" and not is_checked(cell):
            cell.execution_count = None
            cell.outputs = []
    nb.metadata = copy.deepcopy(KERNEL_METADATA)


def build(assignment: str) -> None:
    """Read the source, execute it, and write the notebook nbgrader reads."""
    nb = read_source(assignment)
    path = notebook_path(assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    seconds = execute(nb, path.parent)
    keep_checked_outputs(nb)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    print(f"wrote {path.relative_to(REPO_ROOT)} (executed in {seconds:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignment", nargs="*", help="default: every assignment")
    parser.add_argument("--check", action="store_true", help="exit 1 if a notebook is stale")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.assignment) - set(assignments()))
    if unknown:
        parser.error(f"no notebook source course/notebooks/{unknown[0]}.py")
    chosen = args.assignment or assignments()
    if args.check:
        stale = [a for a in chosen if not is_up_to_date(a)]
        for assignment in stale:
            print(f"{notebook_path(assignment).relative_to(REPO_ROOT)} is out of date: run")
            print(f"    python3 course/build.py {assignment}")
        if not stale:
            print("up to date: " + ", ".join(chosen))
        return 1 if stale else 0
    for assignment in chosen:
        build(assignment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
