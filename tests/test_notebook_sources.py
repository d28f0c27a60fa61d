"""The notebook sources (course/notebooks/<a>.py) and the notebooks nbgrader reads.

See NOTE [Notebook sources] in course/build.py. For every assignment:
- the committed notebook is what its source builds (`python3 course/build.py --check`);
- the source is a jupytext percent notebook, paired with the .ipynb, that jupytext reads;
- the graders' reference cells are the notebook's answer and locked code cells, line for line;
- nbgrader's metadata is well formed: answer cells, test cells that end with the one-line hidden
  call, a locked statement per exercise, 25 points;
- no graded cell uses another exercise's answer, except the answers a later exercise is meant
  to build on (SHARED);
- every cell nbval compares has a stored, deterministic output.
"""

from __future__ import annotations

import re
import subprocess
import sys

import jupytext
import pytest
from course_notebooks import ASSIGNMENTS, REPO_ROOT, course_notebook, role

from course.build import CHECK_OUTPUT, is_checked, is_up_to_date, read_source, source_path
from solutions.reference_cells import reference_cells

# Answers that later exercises of the same notebook are meant to build on.
SHARED = {
    "graph_construction": {"ex1_collect_nodes"},
    "backward": {"ex1_topological_order", "ex2_sum_to_shape"},  # the engine reduces (ex3)
    # a tracer is built step by step; the speed-up replays with exercise 5's backward program
    "static_vs_dynamic": {"ex1_trace", "ex2_replay", "ex5_replay_with_gradients"},
    # the schedulers default to the signature, the batched model to Gather, the speed-up to both
    "batching_dynamic_graphs": {"ex1_signature", "ex4_gather", "ex5_batched_forward"},
}


def test_build_check_passes() -> None:
    """The command a maintainer runs after editing a source."""
    result = subprocess.run(
        [sys.executable, "course/build.py", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "up to date" in result.stdout


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_notebook_is_what_the_source_builds(assignment: str) -> None:
    assert is_up_to_date(assignment), f"rebuild it: python3 course/build.py {assignment}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_is_a_paired_percent_notebook(assignment: str) -> None:
    text = source_path(assignment).read_text()
    nb = jupytext.read(source_path(assignment))
    assert nb.metadata["jupytext"]["formats"] == f"py:percent,../source/{assignment}//ipynb"
    assert "# %% [markdown]" in text and len(nb.cells) > 20
    assert not (REPO_ROOT / "course" / "source" / assignment / f"{assignment}.py").exists()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_cells_are_the_notebooks_answer_and_locked_cells(assignment: str) -> None:
    """solutions/reference_cells.py reads the percent format itself: it must see what jupytext
    sees, and its line numbers must point at the cell's first line in the source."""
    expected = [
        (role(c)["grade_id"], c.source)
        for c in read_source(assignment).cells
        if c.cell_type == "code" and not role(c).get("grade", True)
    ]
    cells = reference_cells(assignment)
    assert [(c.grade_id, c.source) for c in cells] == expected
    lines = source_path(assignment).read_text().splitlines()
    for cell in cells:
        assert lines[cell.first_line - 1] == cell.source.splitlines()[0]
        assert lines[cell.first_line - 2].startswith("# %%")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_nbgrader_metadata_is_well_formed(assignment: str) -> None:
    nb = course_notebook(assignment)
    for grade_id in nb.exercises:
        assert re.fullmatch(r"ex\d_[a-z_]+", grade_id)
        assert nb.cell(grade_id).metadata["nbgrader"] == {
            "schema_version": 3,
            "grade": False,
            "solution": True,
            "locked": False,
            "grade_id": grade_id,
        }
        statement = nb.cell(f"{grade_id}_statement")
        assert statement.cell_type == "markdown" and role(statement)["locked"]
        tests = role(nb.cell(f"{grade_id}_tests"))
        assert tests["grade"] and tests["locked"] and not tests["solution"]
    graded = [role(c) for c in nb.nb.cells if role(c).get("grade")]
    assert sum(meta["points"] for meta in graded) == 25
    assert len(graded) == len(nb.exercises) >= 7


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_end_with_the_one_line_hidden_call(assignment: str) -> None:
    nb = course_notebook(assignment)
    for grade_id in nb.exercises:
        grader_name, object_name = nb.graded_object[grade_id]
        visible, hidden = nb.cell(f"{grade_id}_tests").source.split("### BEGIN HIDDEN TESTS\n")
        assert "solutions" not in visible and "assert" in visible
        assert hidden == (
            f"from solutions.{assignment} import grade\n\n"
            f"grade.{grader_name}({object_name})\n### END HIDDEN TESTS"
        )
        assert callable(getattr(nb.grade, grader_name))
    not_graded = "".join(c.source for c in nb.nb.cells if not role(c).get("grade"))
    assert "solutions" not in not_graded


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_graded_cells_use_no_other_exercises_answer(assignment: str) -> None:
    nb = course_notebook(assignment)
    graded = {
        role(c)["grade_id"]: c.source
        for c in nb.nb.cells
        if role(c).get("grade") or role(c).get("solution")
    }
    for grade_id in nb.exercises:
        if grade_id in SHARED.get(assignment, ()):
            continue
        name = nb.graded_object[grade_id][1]
        users = [
            gid
            for gid, source in graded.items()
            if not gid.startswith(grade_id) and re.search(rf"(?<![.\w]){name}\b", source)
        ]
        assert not users, f"{name} is used by {users}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_checked_outputs_are_stored_and_deterministic(assignment: str) -> None:
    cells = course_notebook(assignment).nb.cells
    checked = [c for c in cells if c.cell_type == "code" and is_checked(c)]
    assert len(checked) >= 6
    assert not any(CHECK_OUTPUT in c.source for c in cells), "students must not see nbval's mark"
    for cell in checked:
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert text, "a checked cell has no stored output: rebuild the notebook"
        assert not re.search(r"0x[0-9a-f]{6,}|\d{12,}", text), "addresses or ids in checked output"
