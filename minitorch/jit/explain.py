"""What minitorch.jit made of a function, in the style of `torch._dynamo.explain`.

    print(minitorch.jit.explain(fn, x))     # or print(traced.explain()) after some calls

reports the traces (each with its number of ops, its guards and the tensor values Python read),
the number of breaks, and why each retrace happened, with guard failures worded as TorchDynamo
words them (`tensor 'x' size mismatch at index 0. expected 16, actual 32`).

A *break* is a place where Python read a tensor's value (`bool(t)`, `t.item()`, `float(t)`,
`int(t)`, iteration): a static graph cannot hold what the code does next, so TorchDynamo breaks
the graph there. minitorch.jit keeps one trace and checks the value instead (on_branch="guard"),
freezes it (on_branch="bake"), or refuses the function (on_branch="error").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from minitorch.autograd.record import Program, Read

if TYPE_CHECKING:
    from minitorch.jit.trace import TracedFunction


@dataclass
class TraceReport:
    """One trace: its ops (and how many of them repeat an earlier one, which the replay runs
    once), its guards and its value reads, each as a readable line."""

    ops: int
    shared_ops: int
    guards: list[str]
    breaks: list[str]


@dataclass
class Explanation:
    """The report of `explain`; `str()` gives it as text."""

    name: str
    state: str  # what the last call did: capture, replay, retrace or eager
    traces: list[TraceReport]
    retrace_reasons: list[str]

    @property
    def trace_count(self) -> int:
        return len(self.traces)

    @property
    def break_count(self) -> int:
        return sum(len(t.breaks) for t in self.traces)

    @property
    def op_count(self) -> int:
        return sum(t.ops for t in self.traces)

    def __str__(self) -> str:
        lines = [
            f"{self.name}: {self.trace_count} trace(s), {self.break_count} break(s) (value "
            f"reads), {self.op_count} op(s), {len(self.retrace_reasons)} retrace(s); the last "
            f"call: {self.state}"
        ]
        for k, report in enumerate(self.traces):
            shared = f", {report.shared_ops} of them repeats run once" if report.shared_ops else ""
            lines.append(f"trace {k}: {report.ops} op(s){shared}; guards:")
            lines += [f"  {guard}" for guard in report.guards + report.breaks]
        lines += [f"retrace {k + 1}: {why}" for k, why in enumerate(self.retrace_reasons)]
        return "\n".join(lines)


def explanation_of(traced: TracedFunction) -> Explanation:
    """The report on a traced function's calls so far."""
    reports = []
    for trace in traced.traces:
        program = trace.program
        reads = [s for s in program.steps if isinstance(s, Read) and s.kind != "len"]
        how = "checked" if traced.on_branch == "guard" else "baked in, not checked"
        breaks = [
            f"{r.kind}({describe_slot(program, r.slot)}) == {r.value!r}  (value read at "
            f"{r.line}, {how})"
            for r in reads
        ]
        guards = str(trace.guards).splitlines()
        reports.append(TraceReport(len(program.ops), trace.runner.shared_ops, guards, breaks))
    return Explanation(traced.__name__, traced.state, reports, list(traced.reasons))


def producer(program: Program, slot: int) -> str:
    """The name of the op whose output is `slot`."""
    for op in program.ops:
        if slot in op.outputs:
            return op.function.__name__
    return "op"


def describe_slot(program: Program, slot: int) -> str:
    """A slot in words: which input, a captured tensor, or the result of which op."""
    source = program.source_of(slot)
    if source.origin == "input":
        return f"input {program.inputs.index(source.index)} (shape {list(source.shape)})"
    if source.origin == "captured":
        return f"a tensor the function did not create (shape {list(source.shape)})"
    return f"the result of {producer(program, source.index)} (shape {list(source.shape)})"
