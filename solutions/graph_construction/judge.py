"""Judges of notebook 1's hidden tests: they decide from the plain data that grade.py observed
(see NOTE [Hidden tests in two halves] in solutions/grading.py). Tests without a judge here must
observe exactly what the reference does."""

from __future__ import annotations

import functools
from typing import Any

from solutions.grading import observed
from solutions.judging import partial
from solutions.reference_cells import given

PREDICT_FLAGS_POINTS = 4
FIELDS = ("requires_grad", "is_leaf", "grad_fn")


def run_snippet(code: str, lib: Any) -> tuple[bool, bool, str | None]:
    """Run one snippet with `torch` bound to `lib`; return what the student must predict."""
    namespace: dict[str, Any] = {"torch": lib}
    exec(code, namespace)
    out = namespace["out"]
    name = out.grad_fn.name() if out.grad_fn is not None else None
    return (out.requires_grad, out.is_leaf, name)


def predict_flags(predictions: dict, expected: dict) -> tuple[float, str]:
    """Exercise 4: an equal share of the points per snippet whose three flags are all right, the
    truth being what the snippet does on PyTorch and on minitorch."""
    wrong = []
    for key, code in given("graph_construction")["SNIPPETS"].items():
        truth = list(observed(key, functools.partial(run_snippet, code)))
        guess = predictions[key]
        if not (isinstance(guess, list) and len(guess) == 3):
            wrong.append(f"{key!r} (not a tuple of 3: {guess!r})")
            continue
        fields = [f for f, want, have in zip(FIELDS, truth, guess) if want != have]
        if fields:
            wrong.append(f"{key!r} ({', '.join(fields)})")
    snippets = len(given("graph_construction")["SNIPPETS"])
    return partial(wrong, snippets, PREDICT_FLAGS_POINTS, "Run those snippets and work out why.")
