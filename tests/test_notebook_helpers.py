"""The two helpers the course notebooks print with: `minitorch.notebook.exercise`, which lets
"Run All" run past answers not written yet, and `minitorch.viz.compare`, which prints one demo's
output for several libraries in columns."""

from __future__ import annotations

import types

import pytest
import torch

import minitorch
from minitorch.notebook import exercise, is_unanswered
from minitorch.viz import compare


# --- exercise --------------------------------------------------------------------------------
def count_ops(tensor):
    """A blank release's answer: nbgrader leaves exactly this body."""
    # YOUR CODE HERE
    raise NotImplementedError()


def library_call(answer):
    """A library that catches the stub's error and raises its own (as an op's apply might)."""
    try:
        return answer(None)
    except NotImplementedError as error:
        raise RuntimeError("the function you passed failed") from error


def library_call_without_from(answer):
    """The same, re-raised while handling the stub's error (only __context__ links them)."""
    try:
        return answer(None)
    except NotImplementedError:
        raise RuntimeError("the function you passed failed")  # noqa: B904 (the point of the test)


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    """What the block printed, on stdout or stderr (the note may go to either)."""
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_a_stub_ends_the_block_with_a_note_naming_the_function_and_exercise(capsys) -> None:
    ran = []
    with exercise(2):
        ran.append("before")
        count_ops(None)
        ran.append("after")  # never reached: the block stops at the stub
    assert ran == ["before"]
    note = printed(capsys)
    assert note.count("\n") == 1, f"one line expected: {note!r}"
    assert note.startswith("Exercise 2 ") and "count_ops()" in note, note
    assert "not written yet" in note and "NotImplementedError" in note, note


@pytest.mark.parametrize("call", [library_call, library_call_without_from])
def test_a_stub_reraised_by_a_library_is_still_a_stub(call, capsys) -> None:
    with exercise(5):
        call(count_ops)
    note = printed(capsys)
    assert note.startswith("Exercise 5 ") and "count_ops()" in note, note
    assert "not written yet" in note, note


def test_a_stub_inside_a_minitorch_function_is_a_stub(capsys) -> None:
    class Gather(minitorch.autograd.Function):
        @staticmethod
        def forward(ctx, source, index):
            # YOUR CODE HERE
            raise NotImplementedError()

        @staticmethod
        def backward(ctx, grad):
            # YOUR CODE HERE
            raise NotImplementedError()

    source = minitorch.ones(3, 2, requires_grad=True)
    with exercise(4):
        Gather.apply(source, minitorch.tensor([0, 2]))
    note = printed(capsys)
    assert note.startswith("Exercise 4 ") and "Gather.forward()" in note, note
    assert "not written yet" in note, note


def test_a_block_without_errors_runs_to_the_end_and_prints_nothing(capsys) -> None:
    ran = []
    with exercise(1) as block:
        ran.append(1)
    assert ran == [1] and block.number == 1
    assert printed(capsys) == ""


def test_a_failed_assert_is_raised(capsys) -> None:
    with pytest.raises(AssertionError, match="expected 3 nodes"):
        with exercise(1):
            assert 2 == 3, "expected 3 nodes"
    assert printed(capsys) == ""


@pytest.mark.parametrize(
    "error",
    [
        ValueError("wrong shape"),
        TypeError("unhashable type: 'list'"),
        NotImplementedError("dtype int8 is not supported"),  # a library's own, with a message
    ],
    ids=["ValueError", "TypeError", "NotImplementedError-with-a-message"],
)
def test_other_errors_are_raised(error: Exception, capsys) -> None:
    with pytest.raises(type(error)) as caught:
        with exercise(3):
            raise error
    assert caught.value is error
    assert printed(capsys) == ""


def test_keyboard_interrupt_is_not_swallowed(capsys) -> None:
    with pytest.raises(KeyboardInterrupt):
        with exercise(6):
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        with exercise(6):
            try:
                count_ops(None)
            except NotImplementedError:
                raise KeyboardInterrupt  # noqa: B904 (the user pressed stop while handling it)
    assert printed(capsys) == ""


def test_is_unanswered_accepts_only_the_bare_stub() -> None:
    assert is_unanswered(NotImplementedError())
    assert not is_unanswered(NotImplementedError("not supported"))
    assert not is_unanswered(ValueError())
    assert not is_unanswered(None)
    try:
        library_call(count_ops)
    except RuntimeError as error:
        assert is_unanswered(error)


# --- compare ---------------------------------------------------------------------------------
def fake_library(name: str) -> types.ModuleType:
    return types.ModuleType(name)


def test_compare_prints_one_column_per_library_headed_by_its_name(capsys) -> None:
    def demo(lib):
        print("same line")
        print(f"x = {len(lib.__name__)}")

    compare(demo, (fake_library("torch"), fake_library("minitorch")))
    assert capsys.readouterr().out.splitlines() == [
        "torch     | minitorch",
        "same line | same line",
        "x = 5     ≠ x = 9",
    ]


def test_compare_marks_only_the_lines_that_differ(capsys) -> None:
    def demo(lib):
        print("grad: [2.0, 4.0]")
        print("torch only" if lib.__name__ == "torch" else "minitorch only")
        print("end")

    compare(demo, (fake_library("torch"), fake_library("minitorch")))
    width = len("grad: [2.0, 4.0]")  # the torch column's widest line
    gutters = [line[width + 1] for line in capsys.readouterr().out.splitlines()]
    assert gutters == ["|", "|", "≠", "|"]


def test_compare_pads_the_shorter_column_and_marks_the_missing_lines(capsys) -> None:
    def demo(lib):
        for i in range(3 if lib.__name__ == "torch" else 1):
            print(f"line {i}")

    compare(demo, (fake_library("torch"), fake_library("minitorch")))
    assert capsys.readouterr().out.splitlines() == [
        "torch  | minitorch",
        "line 0 | line 0",
        "line 1 ≠",
        "line 2 ≠",
    ]


def test_compare_runs_real_torch_and_minitorch_side_by_side(capsys) -> None:
    def grads(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        print("x.grad:", x.grad.tolist())
        print("grad_fn:", (x * x).grad_fn.name())

    compare(grads, (torch, minitorch))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["torch", "|", "minitorch"]
    assert all("≠" not in line for line in lines), lines
    assert [cell.strip() for cell in lines[1].split("|")] == ["x.grad: [2.0, 4.0]"] * 2
