"""Judges of notebook 5's hidden tests: they decide from the plain data that grade.py observed
(see NOTE [Hidden tests in two halves] in solutions/grading.py), given what the same test observed
of the notebook's own answers (`expected`). They never see a student object.
"""

from __future__ import annotations

import functools
import io
import linecache
import logging
import math
import re
import warnings
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import torch

from solutions.grading import Failure
from solutions.judging import difference, is_tensor, partial
from solutions.reference_cells import given
from solutions.static_vs_dynamic.grade import MISMATCH_WORDS

PREDICTION_POINTS = 1  # exercise 8's points: a test checks the notebook agrees
DEPLOYMENT_POINTS = 2  # exercise 9's points
OUTPUT_TOLERANCE = 1e-10  # a replay runs the very ops eager mode runs
GRADIENT_TOLERANCE = 1e-9
SPEEDUP_FACTOR = 1.5  # the student's ratio must be within this factor of the grader's own


def fail(message: str) -> None:
    """No points, with `message` for the student."""
    raise Failure(message)


# -------------------------------------------------------------------------------------------------
# Tensors as plain data ({"shape", "dtype", "values"}, see grading.plain)
# -------------------------------------------------------------------------------------------------
def close(got: Any, want: Any, tolerance: float) -> bool:
    """Whether `got` is a tensor of `want`'s shape and dtype with the same values."""
    if not (is_tensor(got) and is_tensor(want)):
        return False
    if got["shape"] != want["shape"] or got["dtype"] != want["dtype"]:
        return False
    for a, b in zip(got["values"], want["values"]):
        if isinstance(a, str) or isinstance(b, str):  # nan, inf, -inf
            if a != b:
                return False
        elif not math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance):
            return False
    return len(got["values"]) == len(want["values"])


def show(data: Any, limit: int = 80) -> str:
    """A short description of a value for messages."""
    if is_tensor(data):
        values = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in data["values"])
        text = f"tensor({data['dtype']}{data['shape']}: [{values}])"
    elif isinstance(data, dict) and set(data) == {"type"}:
        text = f"a {data['type']}"
    else:
        text = repr(data)
    return text if len(text) <= limit else text[: limit - 4] + " ...]"


def check_outputs(got: list, want: list, where: str, call: str = "replay") -> None:
    """The tensors a replay returned equal eager's (the reference replay's)."""
    if len(got) != len(want):
        fail(f"{where}: {call} returned {len(got)} outputs, expected {len(want)}")
    for nr, (g, w) in enumerate(zip(got, want)):
        if not close(g, w, OUTPUT_TOLERANCE):
            fail(f"{where}: output {nr} differs from eager ({show(g)} instead of {show(w)})")


def check_left_alone(got: dict, where: str, call: str) -> None:
    """The replay changed neither the trace nor a tensor in place."""
    if got["slots added to trace.captured"]:
        fail(
            f"{where}: {call} added slots {got['slots added to trace.captured']} to "
            "trace.captured: keep the values of a replay in a dict of its own, e.g. "
            "dict(trace.captured); a trace is replayed many times and must not keep one call's "
            "tensors alive."
        )
    if got["trace.steps changed"]:
        fail(f"{where}: {call} changed trace.steps; a replay only reads the trace.")
    if got["tensors changed in place"]:
        fail(
            f"{where}: {call} changed {got['tensors changed in place']} of its input or captured "
            "tensors in place; a replay only reads them."
        )


# -------------------------------------------------------------------------------------------------
# Exercise 1: trace
# -------------------------------------------------------------------------------------------------
def show_arg(arg: Any) -> str:
    if "slot" in arg:
        return f"Slot({arg['slot']})"
    if "items" in arg:
        items = ", ".join(show_arg(i) for i in arg["items"])
        return (
            f"[{items}]"
            if arg["const"] == "list"
            else f"({items}{',' if len(arg['items']) == 1 else ''})"
        )
    if "value" in arg:
        return show(arg["value"], 40)
    return arg.get("repr", f"a {arg['const']}")


def show_guard(guard: dict) -> str:
    return f"Guard({guard['slot']}, {guard['kind']!r}, {guard['value']!r})"


def short_name(function: Any) -> str:
    return function.rsplit(".", 1)[-1] if isinstance(function, str) else show(function)


def slot_list(keys: Any) -> list:
    """Slot numbers (dict keys, strings after JSON) in order, as numbers where they are."""
    numbers = sorted(int(k) for k in keys if k.lstrip("-").isdigit())
    return numbers + sorted(k for k in keys if not k.lstrip("-").isdigit())


def check_captured(got: dict, want: dict, where: str) -> None:
    if slot_list(got) != slot_list(want):
        fail(
            f"{where}: captured slots {slot_list(got)}, expected {slot_list(want)} (a tensor the "
            "call did not make is captured when an op first uses it or its value is read)"
        )
    for slot in sorted(want, key=int):
        g, w = got[slot], want[slot]
        if "parameter" in w and g != w:
            fail(
                f"{where}: captured[{slot}] must be the tensor the op used, itself (by "
                "reference), not a copy: a trace must see the next optimizer step"
            )
        if "tensor" in w and not ("tensor" in g and difference(g["tensor"], w["tensor"]) is None):
            fail(f"{where}: captured[{slot}] is not the constant tensor the op used")


def check_steps(got: list, want: list, where: str) -> None:
    kinds = [next(iter(s)) for s in got]
    want_kinds = [next(iter(s)) for s in want]
    if kinds != want_kinds:
        fail(
            f"{where}: {len(kinds)} steps {kinds[:8]}..., expected {len(want_kinds)} "
            f"{want_kinds[:8]}... (every op is a Step, every read a Guard, in the order they ran)"
        )
    for nr, (g, w) in enumerate(zip(got, want)):
        if "Guard" in w:
            if difference(g["Guard"], w["Guard"]) is not None:
                fail(
                    f"{where}: step {nr} is {show_guard(g['Guard'])}, expected "
                    f"{show_guard(w['Guard'])}"
                )
            continue
        g, w = g["Step"], w["Step"]
        name = short_name(w["function"])
        if g["function"] != w["function"]:
            fail(f"{where}: step {nr} runs {short_name(g['function'])}, not {name}")
        if difference(g["args"], w["args"]) is not None:
            got_args = ", ".join(show_arg(a) for a in g["args"])
            want_args = ", ".join(show_arg(a) for a in w["args"])
            fail(f"{where}: step {nr} ({name}) has args [{got_args}], expected [{want_args}]")
        if g["outputs"] != w["outputs"]:
            fail(
                f"{where}: step {nr} ({name}) outputs {g['outputs']}, expected {w['outputs']} "
                "(each new tensor gets the next slot)"
            )


def trace(observed: dict, expected: dict) -> None:
    """Exercise 1: the student's Trace equals the reference's, slot for slot."""
    for where, want in expected.items():
        got = observed[where]
        for field in ("inputs", "input_meta"):
            if difference(got[field], want[field]) is not None:
                fail(f"{where}: {field} {got[field]}, expected {want[field]}")
        check_captured(got["captured"], want["captured"], where)
        check_steps(got["steps"], want["steps"], where)
        if got["outputs"] != want["outputs"]:
            fail(f"{where}: outputs {got['outputs']}, expected {want['outputs']}")


# -------------------------------------------------------------------------------------------------
# Exercise 2: replay
# -------------------------------------------------------------------------------------------------
def replay(observed: dict, expected: dict) -> None:
    """Exercise 2: replays equal eager on new inputs, read the captured tensors when they run,
    record no graph and change neither the trace nor a tensor."""
    for where, want in expected.items():
        got = observed[where]
        check_outputs(got["outputs"], want["outputs"], where)
        if got["graph nodes made"]:
            fail(
                f"{where}: the replay recorded a graph ({got['graph nodes made']} ops made graph "
                "nodes); run it under minitorch.no_grad(): recording no graph is where a "
                "replay's speed comes from"
            )
        check_left_alone(got, where, "replay")


# -------------------------------------------------------------------------------------------------
# Exercise 3: input_mismatch
# -------------------------------------------------------------------------------------------------
def input_mismatch(observed: dict, expected: dict) -> None:
    """Exercise 3: None for matching inputs; for each mismatch a message with the right word,
    naming the first input that differs as `input i`."""
    for name, want in MISMATCH_WORDS.items():
        got = observed[name]
        if want is None:
            if got is not None:
                fail(f"{name} must give None, not {got!r}")
            continue
        word, index = want
        if not isinstance(got, str):
            fail(f"{name} must give a message (a str), not {show(got)}")
        if word not in got:
            fail(f"the message for {name} should say {word!r}: {got!r}")
        if index is not None and not re.search(rf"\binput {index}\b", got):
            fail(
                f"the message for {name} should name the first input that differs, "
                f"'input {index}': {got!r}"
            )


# -------------------------------------------------------------------------------------------------
# Exercise 4: replay_guarded
# -------------------------------------------------------------------------------------------------
def replay_guarded(observed: dict, expected: dict) -> None:
    """Exercise 4: the same reads give eager's answer; a read that changed, however little,
    raises GuardFailed before any op after it runs."""
    for where, want in expected.items():
        got = observed[where]
        if "outputs" in want:
            if "outputs" not in got:
                fail(f"{where}: every read gives the traced value, yet it raised {got['raised']}")
            check_outputs(got["outputs"], want["outputs"], where, "replay_guarded")
            if got["graph nodes made"]:
                fail(f"{where}: the replay recorded a graph; run it under minitorch.no_grad()")
        else:
            if "outputs" in got:
                fail(f"{where}: a guard failed, yet replay_guarded returned without an error")
            if got["raised"] != "GuardFailed":
                fail(f"{where}: raise GuardFailed, not {got['raised']}")
            later = [
                name
                for name, count in got["trace ops run"].items()
                if count and not want["trace ops run"].get(name)
            ]
            if later:
                fail(
                    f"{where}: ops that come after the failed guard ran ({', '.join(later)}): "
                    "check each guard when the replay reaches it and stop there"
                )
        check_left_alone(got, where, "replay_guarded")


# -------------------------------------------------------------------------------------------------
# Exercise 5: replay_with_gradients
# -------------------------------------------------------------------------------------------------
def replay_with_gradients(observed: dict, expected: dict) -> None:
    """Exercise 5: the output and every gradient equal eager autograd's, computed by the trace's
    own backward program, without changing grad_output, the inputs or any .grad."""
    for where, want in expected.items():
        got = observed[where]
        if got["backward engine runs"]:
            fail(
                f"{where}: the answer ran minitorch's backward engine "
                f"({', '.join(got['backward engine runs'])}); call each step's "
                "function.backward(ctx, grad) yourself, in reverse order"
            )
        if not close(got["output"], want["output"], OUTPUT_TOLERANCE):
            fail(f"{where}: the output differs from eager ({show(got['output'])})")
        if slot_list(got["gradients"]) != slot_list(want["gradients"]):
            fail(
                f"{where}: gradients for slots {slot_list(got['gradients'])}, expected "
                f"{slot_list(want['gradients'])} (every input and captured tensor that requires "
                "grad and gets a gradient)"
            )
        for slot in want["gradients"]:
            if not close(got["gradients"][slot], want["gradients"][slot], GRADIENT_TOLERANCE):
                fail(f"{where}: the gradient of slot {slot} differs from eager autograd's")
        if got["grad_output changed in place"]:
            fail(
                f"{where}: grad_output was changed in place: a backward formula may return the "
                "very tensor it received (Add does), so sum gradients with a + b, not +="
            )
        if got["inputs or captured tensors changed in place"] or got[".grad set"]:
            fail(
                f"{where}: return the gradients in the dict; the inputs, the captured tensors "
                "and their .grad must stay as they were"
            )


# -------------------------------------------------------------------------------------------------
# Exercise 6: cached
# -------------------------------------------------------------------------------------------------
def same_output(got: Any, want: Any) -> bool:
    """A call's output equals eager's: one tensor, or a tuple of tensors (lists here)."""
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(got) == len(want)
            and all(close(g, w, OUTPUT_TOLERANCE) for g, w in zip(got, want))
        )
    return close(got, want, OUTPUT_TOLERANCE)


def cached(observed: dict, expected: dict) -> None:
    """Exercise 6: one trace per signature, a replay for every call, the limit and its warning;
    the same on a function of two inputs with two outputs."""
    got, want = observed["within the limit"], expected["within the limit"]
    limit = want["traces in call.cache"]
    for what, output in want["outputs"].items():
        if not close(got["outputs"][what], output, OUTPUT_TOLERANCE):
            fail(f"{what}: not fn's answer ({show(got['outputs'][what])})")
    if got["traces in call.cache"] != limit:
        fail(
            f"{limit} signatures (shape and dtype) should make {limit} traces in call.cache, "
            f"not {got['traces in call.cache']}"
        )
    if got["tracer calls"] != want["tracer calls"] or got["eager runs of fn"]:
        fail(
            f"for {limit} signatures called twice each, fn was traced {got['tracer calls']} "
            f"times and ran eagerly {got['eager runs of fn']} times: trace once per signature, "
            "then replay"
        )
    if got["replayer calls"] != want["replayer calls"]:
        fail(
            f"{want['replayer calls']} calls within the limit made {got['replayer calls']} "
            "replays: every call replays the trace of its signature"
        )
    got, want = observed["beyond the limit"], expected["beyond the limit"]
    for what, output in want["outputs"].items():
        if not close(got["outputs"][what], output, OUTPUT_TOLERANCE):
            fail(f"beyond the limit, call(x) must return fn(x): {what}")
    if got["traces in call.cache"] != limit:
        fail(f"the cache grew beyond the limit of {limit}: {got['traces in call.cache']}")
    if got["tracer calls"] or got["replayer calls"] or got["eager runs of fn"] != 3:
        fail("beyond the limit, run fn eagerly on every call (without tracing)")
    if got["RuntimeWarnings"] != 1:
        fail(
            "warn once (a RuntimeWarning) when the limit is first reached, not "
            f"{got['RuntimeWarnings']} times"
        )
    got, want = observed["two inputs, two outputs"], expected["two inputs, two outputs"]
    where = "on fn(a, b) returning two tensors"
    for what, output in want["outputs"].items():
        if not same_output(got["outputs"][what], output):
            fail(
                f"{where}: {what} did not return fn's answer, a tuple of two tensors "
                f"({show(got['outputs'][what])})"
            )
    if (
        got["traces in call.cache"] != want["traces in call.cache"]
        or got["tracer calls"] != (want["tracer calls"])
    ):
        fail(
            f"{where}: {want['traces in call.cache']} signatures (a signature has the shape and "
            f"dtype of every input) should make {want['traces in call.cache']} traces, not "
            f"{got['traces in call.cache']} traces from {got['tracer calls']} tracer calls"
        )
    if got["replayer calls"] != want["replayer calls"] or got["eager runs of fn"]:
        fail(f"{where}: every call within the limit replays the trace of its signature")


# -------------------------------------------------------------------------------------------------
# Exercise 7: replay_speedup
# -------------------------------------------------------------------------------------------------
def replay_speedup(observed: dict, expected: dict) -> None:
    """Exercise 7: forward and backward timed on both sides, and a ratio that agrees, within a
    factor of 1.5, with the grader's own measurement of the very calls the answer made (timings
    differ from run to run, so `expected` is not compared)."""
    got = observed["ratio returned"]
    measured = observed["eager step time / replay time, measured on its calls"]
    if observed["tracer calls"] != 1:
        fail(
            f"fn was traced {observed['tracer calls']} times: trace it once, before timing "
            "(tracing is not part of a replay)"
        )
    if not observed["eager calls"] or not observed["replayer calls"]:
        fail("time fn(*inputs) with its backward and replayer(trace, inputs, grad_output)")
    if not observed["eager calls whose backward ran"] or measured is None:
        # A call of fn without a graph is fine outside the timing (grad_output made under
        # no_grad, say); it is the mistake when no eager call's backward ran at all.
        if observed["eager calls that recorded no graph"]:
            fail(
                "time eager calls with the graph recorded as usual (grad mode on, the inputs "
                "as given), then its backward: that is the training step a replay replaces"
            )
        fail(
            "the eager side was timed forward only: the replayer runs forward and backward, so "
            "time eager forward and backward together against it, or the ratio compares a "
            "forward pass with a training step"
        )
    if got < 1 < measured and abs(math.log(got * measured)) < math.log(SPEEDUP_FACTOR):
        fail(
            f"your ratio is {got:.2f}, but the grader's replay is about {measured:.1f}x as fast "
            "as eager on these calls: return eager time / replay time"
        )
    if abs(math.log(got / measured)) >= math.log(SPEEDUP_FACTOR):
        fail(
            f"your ratio {got:.2f} is far from the grader's own measurement of your calls, "
            f"{measured:.2f} (eager forward + backward / replay): time forward and backward "
            "inside the same timer, and use the best (smallest) time of each"
        )


# -------------------------------------------------------------------------------------------------
# Exercise 8: predict_tracing (partial credit)
# -------------------------------------------------------------------------------------------------
@functools.cache
def traces_correctly(code: str) -> bool:
    """Whether torch.jit.trace of the snippet, on ones(3), gives f's answer on another input."""
    namespace: dict[str, Any] = {"torch": torch, "__name__": "snippet"}
    exec(code, namespace)
    f = namespace["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings: the point of the exercise
        traced = torch.jit.trace(f, torch.ones(3))
        other = -2 * torch.arange(1.0, 6.0)
        try:
            return bool(torch.equal(traced(other), f(other)))
        except Exception:
            return False


def predict_tracing(observed: dict, expected: dict) -> tuple[float, str]:
    """Exercise 8: an equal share of the points per snippet predicted right, the truth being what
    torch.jit.trace does with it."""
    snippets = given("static_vs_dynamic")["SNIPPETS"]
    wrong = [repr(k) for k, code in snippets.items() if observed[k] != traces_correctly(code)]
    hint = "Trace those snippets yourself and compare."
    return partial(wrong, len(snippets), PREDICTION_POINTS, hint)


# -------------------------------------------------------------------------------------------------
# Exercise 9: predict_deployment (partial credit)
# -------------------------------------------------------------------------------------------------
DEPLOY_EXAMPLE = (1.0, 1.0, 1.0)  # what each route is built from: torch.ones(3)
DEPLOY_INPUT = (-1.0, -2.0, 1.5)  # what it is then called on: the same shape, other values


def _snippet_function(code: str) -> Any:
    """The snippet's `f`, with its source findable (torch.jit.script reads it via linecache)."""
    filename = f"<deployment snippet {abs(hash(code))}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {"torch": torch, "__name__": "snippet"}
    exec(compile(code, filename, "exec"), namespace)
    return namespace["f"]


@functools.cache
def deploys_correctly(code: str, route: str) -> bool:
    """Whether `route` ("trace", "script" or "export") built from torch.ones(3) gives the
    snippet's own answer on another input of that shape (an error counts as no)."""
    f = _snippet_function(code)
    example, x = torch.tensor(DEPLOY_EXAMPLE), torch.tensor(DEPLOY_INPUT)

    class Module(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return f(x)

    quiet = io.StringIO()  # export prints the graph it gave up on; whether it did is the answer
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), redirect_stdout(quiet), redirect_stderr(quiet):
            warnings.simplefilter("ignore")  # deprecation and tracer warnings: not the question
            if route == "trace":
                built = torch.jit.trace(f, example)
            elif route == "script":
                built = torch.jit.script(f)
            else:
                built = torch.export.export(Module(), (example,)).module()
            return bool(torch.equal(built(x), f(x)))
    except Exception:
        return False
    finally:
        logging.disable(logging.NOTSET)


def predict_deployment(observed: dict, expected: dict) -> tuple[float, str]:
    """Exercise 9: an equal share of the points per (snippet, route) predicted right, the truth
    being what each route does with the snippet in this PyTorch."""
    shared = given("static_vs_dynamic")
    snippets, routes = shared["DEPLOY_SNIPPETS"], shared["ROUTES"]
    wrong = [
        f"{key!r} {route}"
        for key, code in snippets.items()
        for route in routes
        if (route in observed[key]) != deploys_correctly(code, route)
    ]
    hint = "Build those routes yourself and call them on the other input."
    return partial(wrong, len(snippets) * len(routes), DEPLOYMENT_POINTS, hint)
