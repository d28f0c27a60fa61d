"""Helpers for the course notebooks: let "Run All" run past exercises not written yet.

In a fresh student release every answer is `raise NotImplementedError()`, and Jupyter's
"Run All" stops at the first cell that raises. A test or demo cell that needs an answer wraps
its code in `with exercise(N):`. While the answer it calls is still the release's stub, the
block stops quietly with one line that says what to finish, and "Run All" goes on to the
cells after it. Every other error (a failed assert, a wrong shape) is raised as usual.

The line goes to stderr: nbgrader counts a cell that writes to stderr as failed, so Validate
still tells a student that a test whose answer is missing does not pass (and the instructor's
`validate` still sees every visible test fail on the blank release). Grading never scores
visible test cells, so the line costs no points.
"""

from __future__ import annotations

import sys
from types import TracebackType

__all__ = ["exercise", "is_unanswered"]


def is_unanswered(error: BaseException | None) -> bool:
    """True when `error` is, or was raised while handling, the bare `raise NotImplementedError()`
    of a blank release (a library may re-raise it with its own message)."""
    while error is not None:
        if isinstance(error, NotImplementedError) and not error.args:
            return True
        error = error.__cause__ or error.__context__
    return False


def _unanswered_function(error: BaseException) -> str:
    """The qualified name of the function whose stub raised `error` (`count_ops`,
    `Softplus.forward`): the innermost frame of the first bare NotImplementedError in the chain."""
    while error is not None:
        if isinstance(error, NotImplementedError) and not error.args:
            trace = error.__traceback__
            if trace is None:
                break
            while trace.tb_next is not None:
                trace = trace.tb_next
            return f"{trace.tb_frame.f_code.co_qualname}()"
        error = error.__cause__ or error.__context__
    return "an answer"


class exercise:  # noqa: N801 (used as a statement: `with exercise(3):`)
    """`with exercise(n):` runs its block; an unanswered stub ends it with a note, not an error.

    Example, in a visible test cell of exercise 2::

        with exercise(2):
            assert count_ops(out) == {"SumBackward0": 1}, "..."
            print("Visible tests passed.")

    prints `Exercise 2 needs count_ops(), which is not written yet (it raises
    NotImplementedError). Write it, then run this cell again.` while `count_ops` is a stub, and
    names `collect_nodes()` instead when it is the earlier answer that count_ops calls.
    """

    def __init__(self, number: int) -> None:
        self.number = number

    def __enter__(self) -> exercise:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool:
        if error is None or not isinstance(error, Exception) or not is_unanswered(error):
            return False
        # What the cell printed first stays first: Jupyter sends stdout and stderr as separate,
        # separately buffered streams, so without the flushes their order would vary.
        sys.stdout.flush()
        print(
            f"Exercise {self.number} needs {_unanswered_function(error)}, which is not written "
            "yet (it raises NotImplementedError). Write it, then run this cell again.",
            file=sys.stderr,
            flush=True,
        )
        return True
