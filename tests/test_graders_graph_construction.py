"""Notebook 1 ("graph construction"): its graders, reference solutions and wrong answers.

No kernels here: the notebook's cells are exec'd in one namespace, as a kernel would run them.
- every grader passes the reference (the notebook's own solution cells, fixed and fresh seeds);
- every grader rejects the blank release (nbgrader's own ClearSolutions stub) and every
  wrong answer in wrong_answers.py with a clean AssertionError: no chained exception, no frame
  of the grader or the reference in the traceback, no line of the reference in the message;
- the committed notebook is exactly what course/generate/graph_construction.py generates, its
  solution cells are the blocks of reference.py, and its nbgrader metadata is well formed.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from course.generate.builder import CHECK_OUTPUT, solution_sources, without_outputs  # noqa: E402
from solutions import grading  # noqa: E402
from solutions.graph_construction import grade, reference  # noqa: E402
from solutions.graph_construction.wrong_answers import WRONG_ANSWERS  # noqa: E402


def _load_generator() -> Any:
    path = REPO_ROOT / "course" / "generate" / "graph_construction.py"
    spec = importlib.util.spec_from_file_location("build_graph_construction", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = _load_generator()
NOTEBOOK = nbformat.read(generator.NOTEBOOK, as_version=4)
SOLUTIONS = solution_sources(generator.ASSIGNMENT)
EXERCISES = list(generator.GRADED_OBJECT)  # grade ids, in notebook order


def _cell(grade_id: str) -> nbformat.NotebookNode:
    (cell,) = [
        c for c in NOTEBOOK.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    ]
    return cell


def _grader_and_name(grade_id: str) -> tuple[Any, str]:
    grader_name, object_name = generator.GRADED_OBJECT[grade_id]
    return getattr(grade, grader_name), object_name


def _release_source(source: str) -> str:
    """The solution cell as students get it, made by nbgrader's own ClearSolutions."""
    from nbgrader.preprocessors import ClearSolutions

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.cells[0].metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "x"}
    nb.metadata["kernelspec"] = {"language": "python", "name": "python3"}
    ClearSolutions().preprocess(nb, {})
    return nb.cells[0].source


@pytest.fixture(scope="module")
def notebook_namespace() -> dict:
    """The notebook's setup cell and every solution cell, run in order."""
    namespace: dict[str, Any] = {}
    setup = next(c for c in NOTEBOOK.cells if c.cell_type == "code")
    exec(setup.source, namespace)
    namespace["SNIPPETS"] = reference.SNIPPETS
    for grade_id in EXERCISES:
        exec(_cell(grade_id).source, namespace)
    return namespace


def _answer(namespace: dict, grade_id: str, source: str) -> Any:
    """Run `source` in place of the exercise's solution cell; return the graded object."""
    scope = dict(namespace)
    exec(source, scope)
    return scope[_grader_and_name(grade_id)[1]]


def _reference_lines(grade_id: str) -> list[str]:
    """The non-trivial lines between BEGIN and END SOLUTION, which feedback must never show."""
    body = SOLUTIONS[grade_id].split("### BEGIN SOLUTION")[1:]
    lines = [
        line.strip() for part in body for line in part.split("### END SOLUTION")[0].split("\n")
    ]
    return [line for line in lines if len(line) >= 12]


def _assert_clean_failure(error: AssertionError, grade_id: str) -> None:
    message = str(error)
    for line in _reference_lines(grade_id):
        assert line not in message, f"the message leaks the reference line {line!r}"
    assert error.__cause__ is None and error.__suppress_context__
    frames = traceback.extract_tb(error.__traceback__)
    grader_frames = [f for f in frames if "solutions" in Path(f.filename).parts]
    assert [Path(f.filename).name for f in grader_frames] == ["grading.py"]
    assert grader_frames[0].line.startswith("raise AssertionError(")
    formatted = "".join(traceback.format_exception(error))
    assert "reference.py" not in formatted and "grade.py" not in formatted
    assert "During handling" not in formatted


# -------------------------------------------------------------------------------------------------
# Graders on the reference, the blank release and the wrong answers
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("grade_id", EXERCISES)
def test_reference_passes(grade_id: str, notebook_namespace: dict) -> None:
    grader, name = _grader_and_name(grade_id)
    options = {} if grade_id == "ex4_predict_flags" else {"seed": 1234}
    grader(notebook_namespace[name], **options)


def test_reference_passes_fresh_random_cases(notebook_namespace: dict) -> None:
    for seed in (None, 7):
        grade.collect_nodes(notebook_namespace["collect_nodes"], seed=seed)
        grade.find_leaves(notebook_namespace["find_leaves"], seed=seed)
        grade.graph_sizes(notebook_namespace["graph_sizes"], seed=seed)


@pytest.mark.parametrize("grade_id", EXERCISES)
def test_blank_release_fails_cleanly(grade_id: str, notebook_namespace: dict) -> None:
    blank = _release_source(SOLUTIONS[grade_id])
    assert "raise NotImplementedError()" in blank and "BEGIN SOLUTION" not in blank
    grader, _ = _grader_and_name(grade_id)
    with pytest.raises(AssertionError) as caught:
        grader(_answer(notebook_namespace, grade_id, blank))
    assert "NotImplementedError" in str(caught.value)
    _assert_clean_failure(caught.value, grade_id)


WRONG = [(gid, wrong) for gid, wrongs in WRONG_ANSWERS.items() for wrong in wrongs]


def test_every_exercise_has_two_wrong_answers() -> None:
    assert set(WRONG_ANSWERS) == set(EXERCISES)
    assert all(len(WRONG_ANSWERS[gid]) >= 2 for gid in EXERCISES)


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")
@pytest.mark.parametrize(("grade_id", "wrong"), WRONG, ids=[f"{g}-{w.name}" for g, w in WRONG])
def test_wrong_answer_fails_cleanly(grade_id: str, wrong: Any, notebook_namespace: dict) -> None:
    grader, _ = _grader_and_name(grade_id)
    with pytest.raises(AssertionError) as caught:
        grader(_answer(notebook_namespace, grade_id, wrong.source), **_seed(grade_id))
    _assert_clean_failure(caught.value, grade_id)


def _seed(grade_id: str) -> dict:
    return {} if grade_id == "ex4_predict_flags" else {"seed": 99}


def test_specific_mistakes_get_specific_feedback(notebook_namespace: dict) -> None:
    def message(grade_id: str, name: str) -> str:
        (wrong,) = [w for w in WRONG_ANSWERS[grade_id] if w.name == name]
        grader, _ = _grader_and_name(grade_id)
        with pytest.raises(AssertionError) as caught:
            grader(_answer(notebook_namespace, grade_id, wrong.source), **_seed(grade_id))
        return str(caught.value)

    assert "RecursionError" in message("ex1_collect_nodes", "recursive_dfs")
    assert "more than once" in message("ex1_collect_nodes", "no_seen_set")
    assert "order differs" in message("ex1_collect_nodes", "stack_order")
    assert "counted once" in message("ex2_count_ops", "every_path")
    assert "ambiguous" in message("ex3_find_leaves", "list_membership")
    assert "incorrect number of gradients" in message("ex5_softplus", "one_gradient_for_two_inputs")
    assert "SinBackward0" in message("ex6_f_and_gradients", "math_sin")
    assert "rebuilt on every forward" in message("ex7_graph_sizes", "graph_built_once")


def test_recursion_is_caught_even_with_a_raised_limit(notebook_namespace: dict) -> None:
    (wrong,) = [w for w in WRONG_ANSWERS["ex1_collect_nodes"] if w.name == "recursive_dfs"]
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(AssertionError, match="RecursionError"):
            grade.collect_nodes(_answer(notebook_namespace, "ex1_collect_nodes", wrong.source))
        assert sys.getrecursionlimit() == 100_000  # restored
    finally:
        sys.setrecursionlimit(previous)


def test_wrapper_reports_grader_bugs_and_non_callables_cleanly() -> None:
    @grading.grader("demo")
    def broken(answer: Any) -> None:
        raise KeyError("internal")

    with pytest.raises(AssertionError, match="grading demo stopped with KeyError") as caught:
        broken(None)
    assert caught.value.__suppress_context__
    with pytest.raises(AssertionError, match="expected a function, got int"):
        grade.collect_nodes(3)
    with pytest.raises(AssertionError, match="derived from minitorch.autograd.Function"):
        grade.softplus(object)


def test_a_student_notimplementederror_with_a_message_is_reported_as_such() -> None:
    def student(_: Any) -> None:
        raise NotImplementedError("complex tensors")

    with pytest.raises(AssertionError, match="NotImplementedError: complex tensors"):
        grade.collect_nodes(student)


# -------------------------------------------------------------------------------------------------
# The notebook: no drift from the generator and reference.py, well-formed nbgrader metadata
# -------------------------------------------------------------------------------------------------
def test_committed_notebook_is_what_the_generator_builds() -> None:
    built = without_outputs(generator.build_notebook())
    assert built == without_outputs(NOTEBOOK), (
        "the committed notebook drifted: run python3 course/generate/graph_construction.py"
    )


@pytest.mark.parametrize("grade_id", EXERCISES)
def test_solution_cells_are_the_reference_blocks(grade_id: str) -> None:
    cell = _cell(grade_id)
    assert cell.source == SOLUTIONS[grade_id]
    assert cell.metadata["nbgrader"] == {
        "schema_version": 3,
        "grade": False,
        "solution": True,
        "locked": False,
        "grade_id": grade_id,
    }
    assert re.fullmatch(r"ex\d_[a-z_]+", grade_id)


@pytest.mark.parametrize("grade_id", EXERCISES)
def test_test_cells_end_with_the_one_line_hidden_call(grade_id: str) -> None:
    cell = _cell(f"{grade_id}_tests")
    meta = cell.metadata["nbgrader"]
    assert meta["grade"] and meta["locked"] and not meta["solution"]
    grader_name, object_name = generator.GRADED_OBJECT[grade_id]
    visible, hidden = cell.source.split("### BEGIN HIDDEN TESTS\n")
    assert "solutions" not in visible and "assert" in visible
    assert hidden == (
        "from solutions.graph_construction import grade\n\n"
        f"grade.{grader_name}({object_name})\n### END HIDDEN TESTS"
    )
    assert callable(getattr(grade, grader_name))


def test_points_sum_to_25_and_every_exercise_has_a_locked_statement() -> None:
    graded = [c.metadata["nbgrader"] for c in NOTEBOOK.cells if "nbgrader" in c.metadata]
    assert sum(m.get("points", 0) for m in graded if m["grade"]) == 25
    for grade_id in EXERCISES:
        statement = _cell(f"{grade_id}_statement")
        assert statement.cell_type == "markdown" and statement.metadata["nbgrader"]["locked"]
    assert "solutions" not in "".join(
        c.source for c in NOTEBOOK.cells if not c.metadata.get("nbgrader", {}).get("grade")
    )


def test_only_collect_nodes_is_shared_between_graded_cells() -> None:
    """Exercises 2 to 7 are graded independently: no other graded cell uses their answers
    (exercise 1's `collect_nodes` is reused, as wrong_answers.py documents)."""
    graded = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in NOTEBOOK.cells
        if c.metadata.get("nbgrader", {}).get("grade")
        or c.metadata.get("nbgrader", {}).get("solution")
    }
    for grade_id in EXERCISES[1:]:
        name = _grader_and_name(grade_id)[1]
        users = [
            gid
            for gid, source in graded.items()
            if not gid.startswith(grade_id) and re.search(rf"\b{name}\b", source)
        ]
        assert not users, f"{name} is used by {users}"


def test_snippets_cell_matches_the_graders_snippets() -> None:
    namespace: dict[str, Any] = {}
    exec(_cell("ex4_snippets").source, namespace)
    assert namespace["SNIPPETS"] == reference.SNIPPETS


def test_checked_outputs_are_stored_and_deterministic() -> None:
    checked = [
        c for c in NOTEBOOK.cells if c.cell_type == "code" and c.source.startswith(CHECK_OUTPUT)
    ]
    assert len(checked) >= 6
    for cell in checked:
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert text, "a checked cell has no stored output: rebuild the notebook"
        assert not re.search(r"0x[0-9a-f]{6,}|\d{12,}", text), "addresses or ids in checked output"
