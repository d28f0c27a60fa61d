"""Helpers for the course tests: build submissions from real source and release notebooks.

A submission is built the way a student would make it: start from the release notebook (locked
cells, checksums) and fill in answer cells, here from the source notebook (the reference
solution), a wrong-answer fixture, or adversarial code.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat
from nbformat import NotebookNode

REPO_ROOT = Path(__file__).resolve().parents[1]
COURSE_SOURCE = REPO_ROOT / "course" / "source"


def nbgrader_meta(cell: NotebookNode) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def answer_ids(nb: NotebookNode) -> list[str]:
    """grade_ids of the answer (solution) cells, in notebook order."""
    return [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("solution")]


def grade_cell_ids(nb: NotebookNode) -> list[str]:
    """grade_ids of the test cells (graded, not answers), in notebook order."""
    return [
        nbgrader_meta(c)["grade_id"]
        for c in nb.cells
        if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
    ]


def exercise_of(grade_id: str) -> str:
    """The exercise a cell belongs to: "ex3" for "ex3_find_leaves" and "ex3_find_leaves_tests"."""
    return grade_id.split("_", 1)[0]


def cell_by_id(nb: NotebookNode, grade_id: str) -> NotebookNode:
    return next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)


def with_answers(release: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """A copy of `release` whose answer cells `grade_id -> source` are replaced."""
    nb = copy.deepcopy(release)
    for grade_id, source in answers.items():
        cell_by_id(nb, grade_id).source = source
    return nb


def reference_answers(source: NotebookNode) -> dict[str, str]:
    """The source notebook's answer cells (the reference solution), by grade_id."""
    return {grade_id: cell_by_id(source, grade_id).source for grade_id in answer_ids(source)}


def write_submission(folder: Path, student: str, notebook: str, nb: NotebookNode | str) -> None:
    """Write `<folder>/<student>/<notebook>.ipynb` (a string is written as raw file text)."""
    path = folder / student / f"{notebook}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, str):
        path.write_text(nb)
    else:
        nbformat.write(nb, path)


def copy_course_source(destination: Path, assignments: list[str]) -> Path:
    """A fresh course folder at `destination` holding the source of `assignments`."""
    for assignment in assignments:
        shutil.copytree(COURSE_SOURCE / assignment, destination / "source" / assignment)
    return destination


NOTEBOOK_1 = "graph_construction"


def notebook_1_present() -> bool:
    """True once notebook 1 and its graders exist (they are written alongside this machinery)."""
    return (COURSE_SOURCE / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb").is_file() and (
        REPO_ROOT / "solutions" / NOTEBOOK_1 / "grade.py"
    ).is_file()


def build_release(course_root: Path, assignments: list[str]) -> Path:
    """Copy the sources of `assignments` into a fresh course at `course_root` and release them."""
    from solutions.instructor.cli import main

    copy_course_source(course_root, assignments)
    for assignment in assignments:
        assert main(["--course", str(course_root), "release", assignment]) == 0
    return course_root


def copy_course(source: Path, destination: Path) -> Path:
    """A copy of a whole course folder (source, release, gradebook, ...)."""
    shutil.copytree(source, destination)
    return destination


def with_forged_grading_metadata(release: NotebookNode) -> NotebookNode:
    """The blank `release` with a markdown cell before every test cell whose metadata imitates
    the grading process's own hidden-test cells (issue 30: it reached 25/25 once)."""
    nb = copy.deepcopy(release)
    tests = [i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("grade")]
    fakes = []
    for index in [*tests, *range(len(nb.cells))]:  # as many as there are cells
        fake = nbformat.v4.new_markdown_cell("hidden")
        fake.metadata["course"] = {"hidden_test_of": index}
        fakes.append(fake)
    nb.cells = fakes + nb.cells
    return nb
