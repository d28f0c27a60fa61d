"""Notebook 4 ("memory"): its graders, reference solutions and wrong answers.

No kernels here: the notebook's cells are exec'd in one namespace, as a kernel would run them.
- every grader passes the reference (the notebook's own solution cells, fixed and fresh seeds);
- every grader rejects the blank release (nbgrader's own ClearSolutions stub) and every
  wrong answer in wrong_answers.py with a clean AssertionError: no chained exception, no frame
  of the grader or the reference in the traceback, no line of the reference in the message;
- the graders' measurements discriminate (shared storage, parameters, peaks);
- the committed notebook is exactly what course/generate/memory.py generates, its solution
  cells are the blocks of reference.py, and its nbgrader metadata is well formed.
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

from minitorch import memory

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from course.generate.builder import CHECK_OUTPUT, solution_sources, without_outputs  # noqa: E402
from solutions.memory import grade  # noqa: E402
from solutions.memory.wrong_answers import WRONG_ANSWERS  # noqa: E402


def _load_generator() -> Any:
    path = REPO_ROOT / "course" / "generate" / "memory.py"
    spec = importlib.util.spec_from_file_location("build_memory", path)
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
    return [line for line in lines if len(line) >= 12 and not line.startswith("#")]


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
    grader(notebook_namespace[name], seed=1234)


def test_reference_passes_fresh_random_cases(notebook_namespace: dict) -> None:
    for seed in (None, 7):
        for grade_id in EXERCISES:
            grader, name = _grader_and_name(grade_id)
            grader(notebook_namespace[name], seed=seed)


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


def _wrong_message(grade_id: str, wrong: Any, namespace: dict) -> str:
    grader, _ = _grader_and_name(grade_id)
    with pytest.raises(AssertionError) as caught:
        grader(_answer(namespace, grade_id, wrong.source), seed=5)
    _assert_clean_failure(caught.value, grade_id)
    return str(caught.value)


@pytest.mark.parametrize(("grade_id", "wrong"), WRONG, ids=[f"{g}-{w.name}" for g, w in WRONG])
def test_wrong_answer_fails_cleanly(grade_id: str, wrong: Any, notebook_namespace: dict) -> None:
    message = _wrong_message(grade_id, wrong, notebook_namespace)
    expected = EXPECTED_FEEDBACK[(grade_id, wrong.name)]
    assert expected in message, f"expected {expected!r} in the feedback: {message}"


# The feedback each wrong answer must get: the mistake named, not just "wrong".
EXPECTED_FEEDBACK = {
    ("ex1_saved_bytes", "bytes_per_saved_tensor"): "you count each saved tensor's own bytes",
    ("ex1_saved_bytes", "parameters_always_counted"): "with the parameters' storages",
    ("ex1_saved_bytes", "output_node_only"): "Visit every node",
    ("ex1_saved_bytes", "data_ptr_of_each_view"): "expected",
    ("ex2_train_epoch", "validation_loss_tensors_kept"): "memory peaked at",
    ("ex2_train_epoch", "detach_in_the_wrong_place"): "more bytes allocated than after 1",
    ("ex2_train_epoch", "no_grad_around_training"): "does not require grad",
    ("ex3_evaluate", "eval_mode_only"): "model.eval()",
    ("ex3_evaluate", "pytorch_no_grad"): "torch.no_grad() is PyTorch's switch",
    ("ex3_evaluate", "detach_output"): "at its peak",
    ("ex3_evaluate", "grad_mode_left_off"): "left grad mode off",
    ("ex4_checkpoint", "saves_activations_anyway"): "still keeps the activations",
    ("ex4_checkpoint", "gradients_of_inputs_only"): "grad is None",
    ("ex4_checkpoint", "recompute_without_enable_grad"): "does not require grad",
    ("ex5_best_segments", "most_segments"): "the best choice needs",
    ("ex5_best_segments", "forward_peak_only"): "the best choice needs",
    ("ex5_best_segments", "end_memory_not_peak"): "the best choice needs",
    ("ex6_step_within_budget", "full_batch"): "over the budget",
    ("ex6_step_within_budget", "mean_of_micro_batch_means"): "its share of the batch",
    ("ex6_step_within_budget", "one_backward_at_the_end"): "over the budget",
    ("ex6_step_within_budget", "probe_gradients_kept"): "differs from the expected gradient",
    ("ex7_truncated_bptt", "one_backward_at_the_end"): "memory grows with the sequence",
    ("ex7_truncated_bptt", "detach_every_step"): "differs from the expected gradient",
    ("ex7_truncated_bptt", "retain_graph_instead_of_detach"): "differs from the expected",
    ("ex7_truncated_bptt", "last_chunk_dropped"): "expected the sum of the step losses",
    ("ex8_half_precision_hooks", "one_copy_per_save"): "one copy per tensor",
    ("ex8_half_precision_hooks", "keeps_the_original"): "at most 0.6x",
    ("ex8_half_precision_hooks", "original_kept_in_the_cache"): "keeps the original tensors",
    ("ex8_half_precision_hooks", "unpack_stays_half"): "original dtype",
}


def test_every_wrong_answer_has_expected_feedback() -> None:
    assert set(EXPECTED_FEEDBACK) == {(gid, w.name) for gid, w in WRONG}


def test_non_callables_fail_cleanly() -> None:
    for grade_id in EXERCISES:
        grader, _ = _grader_and_name(grade_id)
        with pytest.raises(AssertionError, match="expected a function, got int"):
            grader(3)


# -------------------------------------------------------------------------------------------------
# The graders' own ground truth
# -------------------------------------------------------------------------------------------------
def test_saved_bytes_cases_exercise_shared_storage_and_parameters() -> None:
    """Exercise 1's graphs tell the mistakes apart: some graph saves a storage several times,
    some saves parameters, and only the freed graph and the leaf save nothing."""
    shared = with_parameters = empty = 0
    for _, build in grade._graph_cases(3):
        out = build()
        without, including = (memory.saved_bytes(out, include_parameters=p) for p in (0, 1))
        shared += grade._saved_per_tensor(out, True) > including
        with_parameters += including > without
        empty += including == 0
    assert shared >= 3 and with_parameters >= 5 and empty == 2


def test_untyped_storage_is_pytorchs() -> None:
    """Exercise 1 identifies storages with `untyped_storage()`: views share one, whose size is
    the whole storage's, as in PyTorch."""
    import torch

    import minitorch

    for lib in (torch, minitorch):
        a = lib.zeros(4, 5, dtype=torch.float64)
        views = [a[2], a.t(), a.reshape(20)[3:], a.detach()]
        ptrs = {v.untyped_storage().data_ptr() for v in views}
        assert ptrs == {a.untyped_storage().data_ptr()}
        assert all(v.untyped_storage().nbytes() == 160 for v in views)
        assert a.clone().untyped_storage().data_ptr() != a.untyped_storage().data_ptr()


# -------------------------------------------------------------------------------------------------
# The notebook: no drift from the generator and reference.py, well-formed nbgrader metadata
# -------------------------------------------------------------------------------------------------
def test_committed_notebook_is_what_the_generator_builds() -> None:
    built = without_outputs(generator.build_notebook())
    assert built == without_outputs(NOTEBOOK), (
        "the committed notebook drifted: run python3 course/generate/memory.py"
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
        "from solutions.memory import grade\n\n"
        f"grade.{grader_name}({object_name})\n### END HIDDEN TESTS"
    )
    assert callable(getattr(grade, grader_name))


def test_points_sum_to_25_and_every_exercise_has_a_locked_statement() -> None:
    graded = [c.metadata["nbgrader"] for c in NOTEBOOK.cells if "nbgrader" in c.metadata]
    assert sum(m.get("points", 0) for m in graded if m["grade"]) == 25
    assert len(EXERCISES) == 8
    for grade_id in EXERCISES:
        statement = _cell(f"{grade_id}_statement")
        assert statement.cell_type == "markdown" and statement.metadata["nbgrader"]["locked"]
    assert "solutions" not in "".join(
        c.source for c in NOTEBOOK.cells if not c.metadata.get("nbgrader", {}).get("grade")
    )


def test_graded_cells_are_independent() -> None:
    """No graded cell uses another exercise's answer (`memory.saved_bytes`, the library's, is
    not the student's `saved_bytes`)."""
    graded = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in NOTEBOOK.cells
        if c.metadata.get("nbgrader", {}).get("grade")
        or c.metadata.get("nbgrader", {}).get("solution")
    }
    for grade_id in EXERCISES:
        name = _grader_and_name(grade_id)[1]
        users = [
            gid
            for gid, source in graded.items()
            if not gid.startswith(grade_id) and re.search(rf"(?<![.\w]){name}\b", source)
        ]
        assert not users, f"{name} is used by {users}"


def test_checked_outputs_are_stored_and_deterministic() -> None:
    checked = [
        c for c in NOTEBOOK.cells if c.cell_type == "code" and c.source.startswith(CHECK_OUTPUT)
    ]
    assert len(checked) >= 6
    for cell in checked:
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert text, "a checked cell has no stored output: rebuild the notebook"
        assert not re.search(r"0x[0-9a-f]{6,}|\d{12,}", text), "addresses or ids in checked output"
