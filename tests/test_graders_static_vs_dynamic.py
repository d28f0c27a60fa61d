"""Notebook 5 ("static_vs_dynamic"): what its graders check beyond what every assignment's graders
check (tests/test_graders_common.py): specific feedback for specific mistakes, the stand-ins that
replace earlier exercises, and the kernel half's independence from the reference.
"""

from __future__ import annotations

import ast
import inspect
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from course_notebooks import course_notebook

import minitorch
from solutions.grading import Failure, HiddenTest
from solutions.static_vs_dynamic import grade, judge, reference

NB = course_notebook("static_vs_dynamic")

# The feedback each wrong answer must get: the mistake named, not just "wrong".
EXPECTED_FEEDBACK = {
    ("ex1_trace", "captured_by_value"): "by reference",
    ("ex1_trace", "outputs_numbered_first"): "captured slots",
    ("ex1_trace", "reads_ignored"): "every read a Guard",
    ("ex1_trace", "single_output_only"): "outputs [2], expected [2, 4]",
    ("ex1_trace", "one_slot_per_op"): "on ops with several outputs",
    ("ex1_trace", "outputs_in_slot_order"): "outputs [0, 1, 2, 2], expected [2, 0, 1, 2]",
    ("ex1_trace", "outputs_without_repeats"): "outputs [2, 0, 1], expected [2, 0, 1, 2]",
    ("ex1_trace", "outputs_among_op_results"): "KeyError",
    ("ex1_trace", "read_tensor_not_captured"): "reads a tensor it did not make",
    ("ex2_replay", "captured_forgotten"): "KeyError",
    ("ex2_replay", "graph_recorded"): "minitorch.no_grad()",
    ("ex2_replay", "first_output_only"): "returned 1 outputs, expected 2",
    ("ex2_replay", "guards_not_skipped"): "AttributeError",
    ("ex2_replay", "trace_captured_mutated"): "to trace.captured",
    ("ex2_replay", "graph_detached_afterwards"): "recorded a graph",
    ("ex2_replay", "first_output_per_op"): "KeyError",
    ("ex3_input_mismatch", "numel_not_shape"): "a transposed first input",
    ("ex3_input_mismatch", "dtype_ignored"): "a float32 second input",
    ("ex3_input_mismatch", "count_not_checked"): "one input instead of two",
    ("ex3_input_mismatch", "bool_instead_of_message"): "must give None",
    ("ex3_input_mismatch", "size_one_dims_ignored"): "an extra dimension of size 1",
    ("ex3_input_mismatch", "last_mismatch_reported"): "a transposed first input and a float32",
    ("ex4_replay_guarded", "guards_skipped"): "returned without an error",
    ("ex4_replay_guarded", "reads_the_guard_itself"): "every read gives the traced value",
    ("ex4_replay_guarded", "wrong_exception"): "raise GuardFailed, not ValueError",
    ("ex4_replay_guarded", "bool_guards_only"): "an int() read that changed",
    ("ex4_replay_guarded", "tolerant_guards"): "changed by 1e-10",
    ("ex4_replay_guarded", "guards_checked_at_the_end"): "after the failed guard ran",
    ("ex4_replay_guarded", "item_for_every_read"): "int() and bool() of float tensors",
    ("ex5_replay_with_gradients", "fan_out_overwritten"): "the gradient of slot",
    ("ex5_replay_with_gradients", "forward_order"): "gradients for slots []",
    ("ex5_replay_with_gradients", "inputs_only"): "gradients for slots [0]",
    ("ex5_replay_with_gradients", "needs_not_propagated"): "gradients for slots []",
    ("ex5_replay_with_gradients", "in_place_accumulation"): "grad_output was changed in place",
    ("ex5_replay_with_gradients", "engine_backward"): "backward engine (autograd.grad())",
    ("ex5_replay_with_gradients", "recursive_backward"): "RecursionError",
    ("ex5_replay_with_gradients", "paths_enumerated"): "exponential time",
    ("ex5_replay_with_gradients", "dead_steps_not_skipped"): "never used",
    ("ex5_replay_with_gradients", "first_output_gradient_only"): "several outputs",
    ("ex5_replay_with_gradients", "captured_always_need_grad"): "a captured buffer",
    ("ex6_cached", "dtype_not_in_signature"): "should make",
    ("ex6_cached", "no_limit"): "grew beyond the limit",
    ("ex6_cached", "warns_every_time"): "warn once",
    ("ex6_cached", "error_beyond_limit"): "raised RuntimeError",
    ("ex6_cached", "limit_off_by_one"): "grew beyond the limit",
    ("ex6_cached", "numel_in_signature"): "should make",
    ("ex6_cached", "traces_every_call"): "trace once per signature",
    ("ex6_cached", "first_input_signature"): "every input) should make 3 traces",
    ("ex6_cached", "first_output_only"): "a tuple of two tensors",
    ("ex7_replay_speedup", "tracing_timed"): "trace it once",
    ("ex7_replay_speedup", "inverted"): "return eager time / replay time",
    ("ex7_replay_speedup", "eager_without_graph"): "graph recorded as usual",
    ("ex7_replay_speedup", "forward_only"): "timed forward only",
    ("ex7_replay_speedup", "backward_untimed"): "inside the same timer",
    ("ex8_predict_tracing", "all_true"): "5 of 10 right",
    ("ex8_predict_tracing", "shapes_are_constants"): "wrong: 'd'",
    ("ex8_predict_tracing", "len_is_recorded"): "wrong: 'e', 'k'",
    ("ex9_predict_deployment", "script_keeps_everything"): "17 of 18 right; wrong: 'c' script",
    ("ex9_predict_deployment", "export_keeps_branches"): "wrong: 'b' export, 'e' export",
    ("ex9_predict_deployment", "trace_sees_item"): "wrong: 'f' trace",
}

WRONG = [(gid, wrong) for gid, wrongs in NB.wrong_answers.items() for wrong in wrongs]
GRADE_PY = Path(inspect.getfile(grade))


def test_every_wrong_answer_has_expected_feedback() -> None:
    assert set(EXPECTED_FEEDBACK) == {(gid, w.name) for gid, w in WRONG}


@pytest.mark.parametrize(("grade_id", "wrong"), WRONG, ids=[f"{g}-{w.name}" for g, w in WRONG])
def test_wrong_answer_gets_its_expected_feedback(grade_id: str, wrong: Any) -> None:
    points, message = NB.score(grade_id, wrong.source, seed=5)
    assert points < NB.points(grade_id)
    expected = EXPECTED_FEEDBACK[(grade_id, wrong.name)]
    assert expected in message, f"expected {expected!r} in the feedback: {message}"


def test_the_kernel_half_never_imports_the_reference() -> None:
    """grade.py runs in a sandbox without reference.py, judge.py and wrong_answers.py."""
    imported = set()
    for node in ast.walk(ast.parse(GRADE_PY.read_text())):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    forbidden = ("reference", "judge", "wrong_answers")
    assert not [m for m in imported if m.split(".")[-1] in forbidden], imported
    assert "grader(" not in GRADE_PY.read_text() and "with_globals" not in GRADE_PY.read_text()


@pytest.mark.parametrize("seed", [3, 99, 1234])
def test_stand_in_traces_are_the_notebooks_traces(seed: int) -> None:
    """The traces exercises 2-5 get (minitorch's forward record, in the notebook's format) are
    what the notebook's own `trace` makes of the same calls."""
    gen = torch.Generator().manual_seed(seed)
    calls = [(c.fn, c.make_inputs(gen), c.params) for c in grade._cases(seed, grads=True)]
    calls += [
        (grade._multi_output, [grade._randn(gen, 3)], []),
        (grade._branches, [grade._branch_inputs(gen, 1.0)], []),
        (grade._branches, [grade._branch_inputs(gen, -1.0)], []),
        (grade._scaled_by_sum, [grade._branch_inputs(gen, 1.0)], []),
        (grade._own_output_fan_out, [grade._randn(gen, 4, requires_grad=True)], []),
        (grade._deep_chain, [grade._randn(gen, 3, requires_grad=True)], []),
        (grade._diamonds, [grade._randn(gen, 3, requires_grad=True)], []),
        (grade._multi_output_ops, [grade._randn(gen, 6, 3, requires_grad=True)], []),
        (grade._reordered_outputs, [grade._randn(gen, 3)], []),
        (grade._dead_step, [grade._randn(gen, 4, 3, requires_grad=True)], []),
        (grade._float_reads, [grade._branch_inputs(gen, 1.0)], []),
        (grade._len_and_index, [grade._branch_inputs(gen, 1.0, size=5)], []),
    ]
    ns = vars(reference)
    for fn, inputs, params in calls:
        stand_in = grade._library_trace(fn, inputs, ns)
        assert isinstance(stand_in, reference.Trace)
        want = grade._describe_trace(reference.trace(fn, *inputs), params, ns)
        assert grade._describe_trace(stand_in, params, ns) == want, fn.__name__
        assert stand_in.captured.keys() == reference.trace(fn, *inputs).captured.keys()


def hidden_tests() -> list[HiddenTest]:
    return [t for t in vars(grade).values() if isinstance(t, HiddenTest)]


def test_every_exercise_is_a_hidden_test() -> None:
    names = {t.test for t in hidden_tests()}
    assert names == {NB.graded_object[gid][0] for gid in NB.exercises}


@pytest.mark.parametrize(
    "name", ["trace", "replay", "input_mismatch", "cached", "predict_tracing", "predict_deployment"]
)
def test_observations_are_plain_json(name: str) -> None:
    """What the kernel half sends survives JSON unchanged, and is the same on every run."""
    test = getattr(grade, name)
    gid = next(g for g in NB.exercises if NB.graded_object[g][0] == name)
    answer = NB.namespace[NB.graded_object[gid][1]]
    data = test.observe(answer, seed=11)
    assert json.loads(json.dumps(data)) == data
    assert test.observe(answer, seed=11) == data


def test_objects_that_equal_everything_earn_nothing() -> None:
    """A replay returning objects whose __eq__ is always true is compared as what it is."""
    source = """\
class Anything:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


def replay(trace, *inputs):
    return tuple(Anything() for _ in trace.outputs)
"""
    points, message = NB.score("ex2_replay", source)
    assert points == 0 and "differs from eager" in message


def test_a_guard_failure_raised_as_a_subclass_counts() -> None:
    source = (
        NB.cell("ex4_replay_guarded")
        .source.replace(
            "def replay_guarded(", "class Changed(GuardFailed):\n    pass\n\n\ndef replay_guarded("
        )
        .replace("raise GuardFailed(", "raise Changed(")
    )
    assert NB.score("ex4_replay_guarded", source) == (NB.points("ex4_replay_guarded"), "")


def test_an_exponential_backward_is_stopped_at_the_time_bound() -> None:
    (wrong,) = [
        w for w in NB.wrong_answers["ex5_replay_with_gradients"] if w.name == "paths_enumerated"
    ]
    start = time.perf_counter()
    NB.score("ex5_replay_with_gradients", wrong.source)
    assert time.perf_counter() - start < 10 * grade.TIME_BOUND + 20


def test_prediction_truth_matches_the_notebook() -> None:
    """Exercise 8's truth, the notebook's answer, and the points of its test cell agree."""
    snippets = reference.SNIPPETS
    assert {k: judge.traces_correctly(code) for k, code in snippets.items()} == (
        reference.predict_tracing()
    )
    assert NB.points("ex8_predict_tracing") == judge.PREDICTION_POINTS


def test_prediction_partial_credit_and_types() -> None:
    right = reference.predict_tracing()
    points, feedback = NB.score(
        "ex8_predict_tracing", f"def predict_tracing():\n    return { ({**right, 'a': False})!r}"
    )
    assert points == pytest.approx(0.9) and "'a'" in feedback
    points, feedback = NB.score(
        "ex8_predict_tracing", f"def predict_tracing():\n    return { ({**right, 'a': 1})!r}"
    )
    assert points == 0 and "predict True or False" in feedback


def test_speedup_is_judged_on_the_calls_the_answer_made() -> None:
    """The judge compares the ratio with the grader's own timing of the same calls, and needs
    no expected data (timings change from run to run)."""
    observed = {
        "ratio returned": 1.8,
        "eager step time / replay time, measured on its calls": 1.7,
        "tracer calls": 1,
        "eager calls": 20,
        "eager calls that recorded no graph": 0,
        "eager calls whose backward ran": 20,
        "replayer calls": 20,
    }
    assert judge.replay_speedup(observed, {}) is None
    with pytest.raises(Failure, match="far from the grader's own measurement"):
        judge.replay_speedup({**observed, "ratio returned": 4.0}, {})
    with pytest.raises(Failure, match="time fn"):
        judge.replay_speedup({**observed, "replayer calls": 0}, {})
    with pytest.raises(Failure, match="timed forward only"):
        judge.replay_speedup({**observed, "eager calls whose backward ran": 0}, {})


def test_no_grad_decorated_answers_are_found_in_their_notebook() -> None:
    replay = minitorch.no_grad()(NB.namespace["replay"])
    assert grade.replay(replay, seed=random.Random(0).randrange(99)) is None


def test_readers_cover_every_read_kind_and_a_len_read_replays() -> None:
    """The notebook's READERS and the reads watch_ops reports are one set (issue 31: tracing
    `x * len(x)` then replay_guarded raised KeyError: 'len')."""
    from minitorch.autograd.watch import READ_KINDS

    assert set(reference.READERS) == set(READ_KINDS)
    recorded = reference.trace(lambda x: x * len(x), minitorch.ones(3, dtype=torch.float64))
    assert [s.kind for s in recorded.steps if isinstance(s, reference.Guard)] == ["len"]
    x = minitorch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    (out,) = reference.replay_guarded(recorded, x)
    assert minitorch.allclose(out, x * 3)
    with pytest.raises(reference.GuardFailed, match="len read 3 when traced, 4 now"):
        reference.replay_guarded(recorded, minitorch.ones(4, dtype=torch.float64))


def test_the_captured_zero_of_a_comparison_is_in_the_statement_and_the_trace() -> None:
    """Exercise 1's statement says a number wrapped inside the call is captured; the reference
    (which the hidden test compares with) captures it."""
    statement = NB.cell("ex1_trace_statement").source
    assert "`y.sum() > 0`" in statement and "captured" in statement

    def branchy(x):
        y = x.sin()
        return y * 2 if y.sum() > 0 else y

    recorded = reference.trace(branchy, minitorch.ones(3, dtype=torch.float64))
    assert [v.dim() for v in recorded.captured.values()] == [0]


def test_deployment_truth_matches_the_notebook() -> None:
    """Exercise 9's truth (each route run in this PyTorch), the notebook's answer, and the points
    of its test cell agree."""
    truth = {
        key: {route for route in reference.ROUTES if judge.deploys_correctly(code, route)}
        for key, code in reference.DEPLOY_SNIPPETS.items()
    }
    assert truth == reference.predict_deployment()
    assert NB.points("ex9_predict_deployment") == judge.DEPLOYMENT_POINTS


def test_an_eager_step_runs_until_the_answers_next_call() -> None:
    """Exercise 7's grader times an eager step as the answer does: from the call of fn to the
    answer's next call, counted only if its backward reached the input in between."""
    tools = grade._StepTools(grade._small_ops, minitorch.ones(2, requires_grad=True))
    tools.events = [
        ("start", 0.0),  # forward only (grad_output): no step
        ("start", 1.0),
        ("reached", 1.5),
        ("next", 3.0),  # a replay: step 1.0 -> 3.0
        ("start", 4.0),
        ("reached", 4.2),
        ("start", 5.0),  # the next eager call: step 4.0 -> 5.0
        ("reached", 5.5),
        ("next", 7.0),  # the answer returned: step 5.0 -> 7.0
    ]
    assert tools.eager_steps() == [2.0, 1.0, 2.0]
