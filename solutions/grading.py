"""Helpers every grader uses: hidden tests in two halves, and clean failures.

NOTE [Hidden tests in two halves]
A hidden test cell is one call, `grade.collect_nodes(collect_nodes)`. `grade` is the kernel half,
solutions/<assignment>/grade.py: `@hidden_test` functions that run the student's answer on the
grader's cases and return what they saw as plain data (numbers, strings, lists, dicts; tensors
through `plain`). They never import the reference. The judge half, solutions/<assignment>/judge.py,
compares that data with what the same function observes on the reference answer and decides the
points (solutions/judging.py); without a judge function the data must simply be equal.
- When grading a class, each notebook runs in a sandbox that holds grade.py but neither judge.py
  nor the reference. The call only appends its observation to the file named by
  $COURSE_OBSERVATIONS; the grading process, which never imports student code, judges it and
  writes the cell's result itself (solutions/instructor/verdicts.py). Nothing the student's code
  does to the kernel (patched functions, objects whose `__eq__` is always true, a forged cell
  result) can change a verdict: the data crosses as JSON, and forging it means computing it.
- Anywhere else (a maintainer's kernel, the tests) the same call judges at once, in the same
  process, exactly as the grading process would: the data goes through JSON there too.
Each hidden test starts from a clean state (grad mode on, no anomaly mode, no saved-tensor hooks)
so that a state a student left behind costs nothing outside its own exercise.


Inside a kernel half, call student code through `call_student` (or `bounded_call`, with a time
bound) and state expectations with `expect`. Whatever goes wrong (an expectation, an exception in
the student's code, `NotImplementedError` from the blank release, a RecursionError) becomes the
observation's failure message; judged, it reaches the student as one `AssertionError` raised
`from None`, so the traceback in the notebook and in the feedback shows only the hidden test's
call line: never the grader's checks, never the reference solution.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import inspect
import json
import math
import os
import sys
import threading
import time
import types
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch

import minitorch
from minitorch.autograd.grad_mode import _state as _minitorch_state

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


def quiet_call(function: Callable, *args: Any, call: str) -> Any:
    """`call_student(function, *args)` with warnings silenced: a warning (e.g. PyTorch's about
    float() of a tensor that requires grad) never costs points, even where warnings are errors.
    (Graders that count the warnings an answer gives call `call_student`.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call_student(function, *args, call=call)


# -------------------------------------------------------------------------------------------------
# Time bounds. A walk without a set of visited nodes is exponential on a chain of diamonds: it
# never returns, so the call is interrupted, not only timed.
# -------------------------------------------------------------------------------------------------
class TimeLimitExceeded(BaseException):
    """Raised inside student code that runs past its time bound (a BaseException, so that an
    `except Exception` in the student's code does not swallow it)."""


def _raise_in_thread(thread_id: int, exception: type[BaseException] | None) -> None:
    """Make `thread_id` raise `exception` at its next Python instruction (None: cancel one that
    is still pending)."""
    error = ctypes.py_object(exception) if exception is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), error)


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeLimitExceeded in the block once it has run `seconds` (again every 0.1 s while
    it keeps running). Python code is interrupted between two instructions; a long call into C
    finishes first. Works in any thread, and leaves signals alone."""
    target = threading.get_ident()
    lock = threading.Lock()
    done = threading.Event()
    state = {"armed": True, "fired": False}

    def watch() -> None:
        delay = seconds
        while not done.wait(delay):
            with lock:
                if not state["armed"]:
                    return
                _raise_in_thread(target, TimeLimitExceeded)
                state["fired"] = True
            delay = 0.1

    def disarm() -> None:
        with lock:
            state["armed"] = False
            if state["fired"]:
                _raise_in_thread(target, None)
        done.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        while True:  # an interrupt that arrives while disarming is dropped, and disarming retried
            try:
                disarm()
                break
            except TimeLimitExceeded:
                continue


def bounded_call(function: Callable, *args: Any, call: str, seconds: float) -> tuple[Any, bool]:
    """`quiet_call(function, *args)` under Python's default recursion limit and a time bound:
    (result, True), or (None, False) when it ran longer than `seconds`. Fails if the student's
    code changed the recursion limit (a recursive walk must not hide behind a raised limit)."""
    start = time.perf_counter()
    try:
        with recursion_limit(DEFAULT_RECURSION_LIMIT), time_limit(seconds):
            limit = sys.getrecursionlimit()
            result = quiet_call(function, *args, call=call)
            changed = sys.getrecursionlimit() != limit
    except TimeLimitExceeded:
        return None, False
    expect(
        not changed,
        f"{call} changed Python's recursion limit. Graphs can be deeper than any limit: walk "
        "them with a loop and a deque (or a list used as a stack) instead of recursion.",
    )
    return result, time.perf_counter() - start <= seconds


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


# -------------------------------------------------------------------------------------------------
# Hidden tests in two halves (NOTE [Hidden tests in two halves] at the top of this file).
# -------------------------------------------------------------------------------------------------
OBSERVATIONS_ENV = "COURSE_OBSERVATIONS"
FAILURE_KEY = "__failure__"  # an observation that is only a failure message (no data to judge)


def default_seed(name: str) -> int:
    """The fixed seed of hidden test `name` (the same cases every time a class is graded)."""
    return zlib.crc32(name.encode())


def plain(value: Any, depth: int = 0) -> Any:
    """`value` as plain data that survives JSON: tensors of either library become
    {"shape": [...], "dtype": "float64", "values": [...]}, tuples and sets become lists (sets
    sorted), mapping keys become strings. Anything else becomes {"type": name}, which equals no
    expected value: a student's object with a custom `__eq__` compares as what it is."""
    if depth > 50:
        return {"type": "too deeply nested"}
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (torch.Tensor, minitorch.Tensor)) and type(value) in (
        torch.Tensor,
        torch.nn.Parameter,
        minitorch.Tensor,
        minitorch.nn.Parameter,
    ):
        data = value.detach()
        storage = data.data if isinstance(data, minitorch.Tensor) else data
        return {
            "shape": list(storage.shape),
            "dtype": str(storage.dtype).replace("torch.", ""),
            "values": [plain(float(v)) for v in storage.reshape(-1).cpu().tolist()],
        }
    if type(value) in (list, tuple):
        return [plain(item, depth + 1) for item in value]
    if type(value) in (set, frozenset):
        return sorted((plain(item, depth + 1) for item in value), key=repr)
    if isinstance(value, Mapping) and type(value).__module__ in ("builtins", "collections"):
        return {str(plain(k, depth + 1)): plain(v, depth + 1) for k, v in dict(value).items()}
    return {"type": type(value).__name__}


def through_json(data: Any) -> Any:
    """`data` as the judge receives it: written as JSON and read back."""
    return json.loads(json.dumps(data))


@contextlib.contextmanager
def clean_state() -> Iterator[None]:
    """Run the block with grad mode on, anomaly mode off and no saved-tensor hooks, in PyTorch
    and in minitorch; whatever was set before is restored afterwards."""
    saved = {
        name: getattr(_minitorch_state, name)
        for name in ("grad_enabled", "inference", "anomaly", "anomaly_check_nan")
    }
    saved_hooks = _minitorch_state.saved_tensors_hooks
    torch_hooks = []
    while (top := torch._C._autograd._top_saved_tensors_default_hooks(False)) is not None:
        torch_hooks.append(top)
        torch._C._autograd._pop_saved_tensors_default_hooks()
    _minitorch_state.grad_enabled, _minitorch_state.inference = True, False
    _minitorch_state.anomaly, _minitorch_state.anomaly_check_nan = False, True
    _minitorch_state.saved_tensors_hooks = ()
    try:
        with torch.enable_grad(), torch.autograd.set_detect_anomaly(False):
            yield
    finally:
        for name, value in saved.items():
            setattr(_minitorch_state, name, value)
        _minitorch_state.saved_tensors_hooks = saved_hooks
        for pack, unpack in reversed(torch_hooks):
            torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)


class HiddenTest:
    """The kernel half of one hidden test (see the NOTE above); made by `@hidden_test`."""

    def __init__(self, observe: Callable[..., Any], name: str, answer: str) -> None:
        functools.update_wrapper(self, observe)
        self.observe_answer = observe
        self.name = name  # names the graded object in messages, e.g. "collect_nodes"
        self.answer = answer  # the name of the reference answer to observe for comparison
        self.test = observe.__name__  # the judge function with this name decides
        self.assignment = observe.__module__.split(".")[1]
        self.takes_seed = "seed" in inspect.signature(observe).parameters

    def observe(self, answer: Any, seed: int | None = None) -> Any:
        """What this test sees of `answer`, as JSON-ready plain data; a Failure (or an error in
        the grader itself) becomes {FAILURE_KEY: message}."""
        options = {"seed": default_seed(self.name) if seed is None else seed}
        try:
            with clean_state():
                data = self.observe_answer(answer, **(options if self.takes_seed else {}))
            return plain(data)
        except Failure as failure:
            return {FAILURE_KEY: str(failure)}
        except NotImplementedError:
            return {
                FAILURE_KEY: f"{self.name} is not implemented yet (it raises NotImplementedError)."
            }
        except Exception as error:  # a grader must never show its own traceback
            return {
                FAILURE_KEY: f"grading {self.name} stopped with {type(error).__name__}: {error}. "
                "Check that it follows the contract stated in the exercise."
            }

    def __call__(self, answer: Any, seed: int | None = None) -> Any:
        """Observe `answer`. In a grading sandbox, append the observation to $COURSE_OBSERVATIONS
        and decide nothing; elsewhere judge it at once: AssertionError on a failure, or the points
        of a partial result (None for full marks)."""
        data = self.observe(answer, seed)
        path = os.environ.get(OBSERVATIONS_ENV)
        if path:
            with open(path, "a") as file:
                file.write(json.dumps({"test": self.test, "data": data}) + "\n")
            return None
        from solutions.judging import verdict  # only outside the sandbox (it reads the reference)

        result = verdict(self, through_json(data), seed)
        if result.failed:
            raise AssertionError(result.message) from None
        if result.message:
            print(result.message)
        return result.points


def hidden_test(name: str, answer: str | None = None) -> Callable[[Callable[..., Any]], HiddenTest]:
    """Make `observe(answer[, seed]) -> data` the kernel half of a hidden test.

    `name` names the graded object in messages; `answer` is the name of the reference object to
    compare with (default: `name`). `observe` runs the student's answer on the test's cases and
    returns what it saw; a Failure it raises (e.g. from `call_student`) fails the test with its
    message. A `seed` parameter gets a fixed seed derived from `name` unless the caller passes one.
    """
    return lambda observe: HiddenTest(observe, name, answer or name)
