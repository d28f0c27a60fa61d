"""What the grader tests of every assignment share: the notebook under test and its exercises.

No kernels here: a notebook's cells are exec'd in one namespace, as a kernel would run them.
`CourseNotebook(assignment)` reads the committed notebook, finds its exercises (the answer cells,
in order) and, from each test cell's one-line hidden call `grade.<grader>(<name>)`, the grader
and the name of the object it grades.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from course.build import assignments, notebook_path  # noqa: E402

ASSIGNMENTS = assignments()
_HIDDEN_CALL = re.compile(r"^grade\.(\w+)\((\w+)\)$", re.MULTILINE)


def release_source(source: str) -> str:
    """An answer cell as students get it, made by nbgrader's own ClearSolutions."""
    from nbgrader.preprocessors import ClearSolutions

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.cells[0].metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "x"}
    nb.metadata["kernelspec"] = {"language": "python", "name": "python3"}
    ClearSolutions().preprocess(nb, {})
    return nb.cells[0].source


def role(cell: nbformat.NotebookNode) -> dict:
    """A cell's nbgrader metadata ({} for a plain cell)."""
    return cell.metadata.get("nbgrader", {})


class CourseNotebook:
    """The committed notebook of one assignment, with its graders and wrong answers."""

    def __init__(self, assignment: str) -> None:
        self.assignment = assignment
        self.nb = nbformat.read(notebook_path(assignment), as_version=4)
        self.grade = importlib.import_module(f"solutions.{assignment}.grade")
        fixtures = importlib.import_module(f"solutions.{assignment}.wrong_answers")
        self.wrong_answers = fixtures.WRONG_ANSWERS
        self.right_answers = getattr(fixtures, "RIGHT_ANSWERS", {})
        self.exercises = [role(c)["grade_id"] for c in self.nb.cells if role(c).get("solution")]
        self.graded_object = {}
        for grade_id in self.exercises:
            (call,) = _HIDDEN_CALL.findall(self.cell(f"{grade_id}_tests").source)
            self.graded_object[grade_id] = call

    def cell(self, grade_id: str) -> nbformat.NotebookNode:
        (cell,) = [c for c in self.nb.cells if role(c).get("grade_id") == grade_id]
        return cell

    def grader_and_name(self, grade_id: str) -> tuple[Any, str]:
        grader_name, object_name = self.graded_object[grade_id]
        return getattr(self.grade, grader_name), object_name

    def points(self, grade_id: str) -> float:
        """The points of the exercise's test cell."""
        return role(self.cell(f"{grade_id}_tests"))["points"]

    def takes_seed(self, grade_id: str) -> bool:
        """Whether the exercise's grader draws random cases (it takes a `seed`)."""
        grader, _ = self.grader_and_name(grade_id)
        return "seed" in inspect.signature(grader).parameters

    def seed(self, grade_id: str, seed: int = 99) -> dict:
        """Keyword arguments that fix the grader's random cases, if it has any."""
        return {"seed": seed} if self.takes_seed(grade_id) else {}

    @functools.cached_property
    def namespace(self) -> dict:
        """The setup cell, the locked code cells and every answer cell, run in order."""
        namespace: dict[str, Any] = {}
        setup = next(c for c in self.nb.cells if c.cell_type == "code")
        exec(setup.source, namespace)
        for cell in self.nb.cells:
            meta = role(cell)
            locked_code = cell.cell_type == "code" and meta.get("locked") and not meta["grade"]
            if meta.get("solution") or locked_code:
                exec(cell.source, namespace)
        return namespace

    def answer(self, grade_id: str, source: str) -> Any:
        """Run `source` in place of the exercise's answer cell; return the graded object."""
        scope = dict(self.namespace)
        exec(source, scope)
        return scope[self.grader_and_name(grade_id)[1]]

    def reference_lines(self, grade_id: str) -> list[str]:
        """The non-trivial lines between BEGIN and END SOLUTION: feedback never shows them."""
        body = self.cell(grade_id).source.split("### BEGIN SOLUTION")[1:]
        lines = [
            line.strip() for part in body for line in part.split("### END SOLUTION")[0].split("\n")
        ]
        return [line for line in lines if len(line) >= 12 and not line.startswith("#")]

    def assert_clean_failure(self, error: AssertionError, grade_id: str) -> None:
        """The failure shows neither the reference nor a grader frame beyond the wrapper."""
        message = str(error)
        for line in self.reference_lines(grade_id):
            assert line not in message, f"the message leaks the reference line {line!r}"
        assert error.__cause__ is None and error.__suppress_context__
        frames = traceback.extract_tb(error.__traceback__)
        grader_frames = [f for f in frames if "solutions" in Path(f.filename).parts]
        assert [Path(f.filename).name for f in grader_frames] == ["grading.py"]
        assert grader_frames[0].line.startswith("raise AssertionError(")
        formatted = "".join(traceback.format_exception(error))
        assert "reference.py" not in formatted and "grade.py" not in formatted
        assert "course/notebooks" not in formatted
        assert "During handling" not in formatted

    def wrong_message(self, grade_id: str, name: str, seed: int = 99) -> str:
        """The feedback that the wrong answer `name` of the exercise gets."""
        import pytest

        (wrong,) = [w for w in self.wrong_answers[grade_id] if w.name == name]
        grader, _ = self.grader_and_name(grade_id)
        with pytest.raises(AssertionError) as caught:
            grader(self.answer(grade_id, wrong.source), **self.seed(grade_id, seed))
        return str(caught.value)

    def score(self, grade_id: str, source: str, seed: int = 99) -> tuple[float, str]:
        """(points, feedback) that the answer `source` earns, as nbgrader would give them: a
        clean AssertionError is 0 points, a number returned is partial credit, None is full
        marks. The feedback is the error message or what the grader printed."""
        import contextlib
        import io

        grader, _ = self.grader_and_name(grade_id)
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                result = grader(self.answer(grade_id, source), **self.seed(grade_id, seed))
        except AssertionError as error:
            self.assert_clean_failure(error, grade_id)
            return 0.0, str(error)
        points = self.points(grade_id)
        return (points if result is None else float(result)), printed.getvalue()


@functools.cache
def course_notebook(assignment: str) -> CourseNotebook:
    """One CourseNotebook per assignment for the whole test session."""
    return CourseNotebook(assignment)
