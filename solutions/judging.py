"""The judge half of hidden tests: decide a verdict from plain data (NOTE [Hidden tests in two
halves] in solutions/grading.py).

`verdict(test, observed)` compares what a hidden test observed of a student's answer with what it
observes of the reference answer (computed here, once per seed) and returns the points. The
comparison is solutions/<assignment>/judge.py's function of the test's name when there is one,
`same` otherwise. This module imports the reference: it runs in the grading process, never in a
student's sandbox, and it never imports or calls student code: `observed` is data.
"""

from __future__ import annotations

import functools
import importlib
import math
from dataclasses import dataclass
from typing import Any

import torch

from solutions.grading import FAILURE_KEY, Failure, HiddenTest, through_json

RELATIVE_TOLERANCE = 1e-6
ABSOLUTE_TOLERANCE = 1e-8


@dataclass(frozen=True)
class Verdict:
    """A hidden test's result: `failed` with a message for the student, or passed with `points`
    (None for full marks, a number for partial credit) and an optional note."""

    failed: bool
    points: float | None = None
    message: str | None = None


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 5] + " ...)"


def difference(observed: Any, expected: Any, where: str = "") -> str | None:
    """The first place where `observed` differs from `expected` (plain data; floats compared
    with a tolerance), described for the student; None when they agree."""
    if isinstance(expected, float) and type(observed) in (int, float):
        close = math.isclose(
            observed, expected, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE
        )
        return None if close else f"{where}: got {observed!r}, expected {expected!r}"
    if type(observed) is not type(expected):
        return f"{where}: got {_short(observed)}, expected {_short(expected)}"
    if isinstance(expected, dict):
        for key in expected:
            if key not in observed:
                return f"{where}: {key!r} is missing"
            found = difference(observed[key], expected[key], f"{where}[{key!r}]" if where else key)
            if found:
                return found
        extra = [key for key in observed if key not in expected]
        return f"{where}: unexpected {extra[0]!r}" if extra else None
    if isinstance(expected, list):
        if len(observed) != len(expected):
            return f"{where}: got {len(observed)} items, expected {len(expected)}"
        for index, (got, want) in enumerate(zip(observed, expected)):
            found = difference(got, want, f"{where}[{index}]")
            if found:
                return found
        return None
    return (
        None
        if observed == expected
        else f"{where}: got {_short(observed)}, expected {_short(expected)}"
    )


def is_tensor(data: Any) -> bool:
    """Whether `data` is a tensor as `grading.plain` writes it."""
    return isinstance(data, dict) and set(data) == {"shape", "dtype", "values"}


def as_tensor(data: Any) -> torch.Tensor | None:
    """A tensor as `grading.plain` wrote it, back as a float64 PyTorch tensor (None stays None;
    non-finite values, written as their repr, come back as what they were)."""
    if data is None:
        return None
    values = torch.tensor([float(v) for v in data["values"]], dtype=torch.float64)
    return values.reshape([int(n) for n in data["shape"]])


def same(observed: Any, expected: Any) -> None:
    """The default judge: full marks when the data agree, else a Failure naming the first
    difference."""
    found = difference(observed, expected)
    if found:
        raise Failure(found)


@functools.cache
def _expected(assignment: str, test: str, answer: str, seed: int | None) -> Any:
    hidden = getattr(importlib.import_module(f"solutions.{assignment}.grade"), test)
    reference = importlib.import_module(f"solutions.{assignment}.reference")
    data = through_json(hidden.observe(getattr(reference, answer), seed))
    if isinstance(data, dict) and FAILURE_KEY in data:
        raise RuntimeError(f"the reference fails its own hidden test {test}: {data[FAILURE_KEY]}")
    return data


def expected(test: HiddenTest, seed: int | None = None) -> Any:
    """What `test` observes of the reference answer (computed once per seed)."""
    return _expected(test.assignment, test.test, test.answer, seed)


def judge_function(test: HiddenTest) -> Any:
    """The judge of `test`: judge.py's function of the same name, or `same`."""
    try:
        module = importlib.import_module(f"solutions.{test.assignment}.judge")
    except ModuleNotFoundError:
        return same
    return getattr(module, test.test, same)


def partial(wrong: list[str], total: int, points: float, hint: str) -> tuple[float, str]:
    """Partial credit for `total` items of which those in `wrong` are wrong: an equal share of
    `points` per right one, and a note naming the wrong ones (returned by a judge)."""
    right = total - len(wrong)
    note = f"{right} of {total} right; wrong: {', '.join(wrong)}. {hint}" if wrong else ""
    return round(points * right / total, 2), note


def verdict(test: HiddenTest, observed: Any, seed: int | None = None) -> Verdict:
    """Judge `observed` (plain data the test produced in the student's kernel).

    A judge returns None (full marks), a number of points, or (points, note); it raises Failure
    for no points."""
    if isinstance(observed, dict) and FAILURE_KEY in observed:
        return Verdict(True, None, f"{test.name}: {observed[FAILURE_KEY]}")
    reference = expected(test, seed)  # outside the try: a broken reference must stop grading
    try:
        result = judge_function(test)(observed, reference)
    except Failure as failure:
        return Verdict(True, None, f"{test.name}: {failure}")
    except Exception as error:  # data the notebook reported in a shape no answer produces
        return Verdict(
            True, None, f"{test.name}: what the notebook reported could not be judged "
            f"({type(error).__name__}: {error}). Check that it follows the exercise's contract.",
        )  # fmt: skip
    points, note = result if isinstance(result, tuple) else (result, None)
    return Verdict(False, points, f"{test.name}: {note}" if note else None)
