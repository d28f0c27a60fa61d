"""Helpers every grader uses: one wrapper that turns any failure into a clean AssertionError.

A grader is a function `check(student_object)` decorated with `@grader("what the student wrote")`.
Inside it, call student code through `call_student` and state expectations with `expect`. Whatever
goes wrong (an expectation, an exception in the student's code, `NotImplementedError` from the
blank release, a RecursionError, even a bug in the grader) reaches the student as one
`AssertionError` raised `from None` by the wrapper. The traceback in the notebook and in the
feedback therefore shows only the hidden test's call line and the wrapper's raise line: never the
grader's checks, never the reference solution.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import types
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch

import minitorch

LIBRARIES = (torch, minitorch)

# Deep graphs must be walked without recursion. Python's default limit is 1000; graders lower
# the limit to it while student code runs, so a raised limit does not hide a recursive walk.
DEFAULT_RECURSION_LIMIT = 1000


class Failure(Exception):
    """An expectation the student's answer did not meet; the message is shown to the student."""


def expect(condition: object, message: str) -> None:
    """Fail with `message` unless `condition` is true."""
    if not condition:
        raise Failure(message)


def lib_name(lib: Any) -> str:
    """ "PyTorch" or "minitorch", for messages."""
    return "PyTorch" if lib is torch else "minitorch"


def node_label(node: Any) -> str:
    """A node's name for messages (`None` for a missing edge)."""
    if node is None:
        return "None"
    name = getattr(node, "name", None)
    return name() if callable(name) else type(node).__name__


@contextlib.contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """Run the block with Python's recursion limit at most `limit` (restored afterwards)."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(min(previous, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def is_release_stub(error: BaseException) -> bool:
    """True for the `raise NotImplementedError()` of a blank release, also when a library
    re-raised it with context (minitorch adds the op's name and shapes to forward errors)."""
    while error is not None:
        if isinstance(error, NotImplementedError) and not error.args:
            return True
        error = error.__cause__ or error.__context__
    return False


def call_student(function: Callable, *args: Any, call: str) -> Any:
    """Call the student's `function(*args)`; turn any exception into a Failure naming `call`
    (e.g. "collect_nodes(out) on a PyTorch chain of 5,000 ops")."""
    try:
        return function(*args)
    except NotImplementedError as error:
        if is_release_stub(error):
            raise Failure(
                f"{call} raised NotImplementedError: replace `raise NotImplementedError()` "
                "with your solution."
            ) from None
        raise Failure(f"{call} raised NotImplementedError: {error}") from None
    except RecursionError:
        raise Failure(
            f"{call} raised RecursionError (maximum recursion depth exceeded). Deep graphs "
            "need an iterative walk: keep the nodes still to visit in a list or a deque "
            "instead of calling your function recursively."
        ) from None
    except Exception as error:  # the student's own bug, reported in their words
        raise Failure(f"{call} raised {type(error).__name__}: {error}") from None


def grader(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a check so that every failure reaches the student as a clean AssertionError.

    `what` names the graded object in messages, e.g. "collect_nodes". The check's return value
    is passed on: None for full marks, or a number of points for partial credit (the hidden
    test cell shows it as its result, which nbgrader reads as the cell's score).

    A check that takes `seed=` gets a fixed one derived from `what` when the caller passes none,
    so grading the same submission twice gives the same score (re-running a class's autograde
    must not change anyone's grade); tests pass other seeds to try many random cases.
    """

    def wrap(check: Callable[..., Any]) -> Callable[..., Any]:
        takes_seed = "seed" in inspect.signature(check).parameters

        @functools.wraps(check)
        def run(answer: Any, **options: Any) -> Any:
            if takes_seed and options.get("seed") is None:
                options["seed"] = zlib.crc32(what.encode())
            try:
                return check(answer, **options)
            except Failure as failure:
                message = str(failure)
            except NotImplementedError:
                message = f"{what} is not implemented yet (it raises NotImplementedError)."
            except Exception as error:  # a grader must never show its own traceback
                message = (
                    f"grading {what} stopped with {type(error).__name__}: {error}. "
                    "Check that it follows the contract stated in the exercise."
                )
            raise AssertionError(f"{what}: {message}") from None

        return run

    return wrap


def with_globals(function: Callable, **names: Any) -> Callable:
    """A copy of the student's `function` that sees `names` in place of the globals of those
    names, e.g. the reference versions of the earlier exercises it builds on, so that a mistake
    there does not cost this exercise too. Functions it defines when called see them as well."""
    namespace = dict(function.__globals__)
    namespace.update(names)
    copy = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__,
        function.__closure__,
    )  # fmt: skip
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


def check_callable(answer: Any, what: str) -> None:
    """Fail unless the student's answer is a function (or other callable)."""
    expect(
        callable(answer), f"expected a function, got {type(answer).__name__}: did you pass {what}?"
    )


# -------------------------------------------------------------------------------------------------
# Prediction exercises: the student predicts what each snippet does; the truth comes from running
# the snippet on both libraries.
# -------------------------------------------------------------------------------------------------
def predictions_for(answer: Any, function_name: str, keys: Iterable[str], what: str) -> Mapping:
    """Call the student's `function_name()` and check that it returned a dict with a prediction
    for every key (`what` names one item in messages, e.g. "snippet")."""
    check_callable(answer, function_name)
    predictions = call_student(answer, call=f"{function_name}()")
    expect(
        isinstance(predictions, Mapping),
        f"{function_name}() must return a dict, it returned {type(predictions).__name__}.",
    )
    missing = sorted(set(keys) - set(predictions))
    expect(not missing, f"no prediction for {what}(s) {', '.join(map(repr, missing))}.")
    return predictions


def observed(key: str, run: Callable[[Any], Any]) -> Any:
    """What `run(lib)` finds for item `key`, the same on PyTorch and minitorch. A difference is
    a minitorch regression, never the student's fault, so it stops the grader."""
    outcomes = {run(lib) for lib in LIBRARIES}
    if len(outcomes) != 1:
        raise RuntimeError(f"{key!r} behaves differently in PyTorch and minitorch")
    return outcomes.pop()


def partial_credit(wrong: list[str], total: int, points: float, hint: str) -> float:
    """The points for `total` predictions of which the keys in `wrong` are wrong: an equal
    share per right one. Names the wrong ones (printed: feedback, not a failure)."""
    right = total - len(wrong)
    if wrong:
        print(f"{right} of {total} predictions right; wrong: {', '.join(wrong)}. {hint}")
    return round(points * right / total, 2)
