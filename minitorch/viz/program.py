"""`program_dot`: a recorded program (a trace) as a `graphviz.Digraph`.

A backward graph (`make_dot`) is drawn from the output back to the leaves; a program is drawn
in the order it runs: inputs and captured tensors (blue) at the top, one grey box per op, the
outputs in green, and each value read (a guard of the trace) as a yellow note on the value it
read. `guards` adds the guards checked before a replay (shapes, dtypes, ...) as one box.
"""

from __future__ import annotations

from typing import Any

from minitorch.autograd.record import Alias, Const, Creation, Op, Pack, Program, Read, Ref, Write
from minitorch.viz.dot import NODE_ATTR

INPUT_FILL = "lightblue"
OUTPUT_FILL = "darkolivegreen1"
READ_FILL = "lightyellow"


def _refs(arg: Any) -> list[int]:
    if isinstance(arg, Ref):
        return [arg.slot]
    if isinstance(arg, Pack):
        return [slot for item in arg.items for slot in _refs(item)]
    return []


def program_dot(program: Program, guards: str | None = None, title: str | None = None) -> Any:
    """The program as a Digraph: one node per input, captured tensor and step, edges from the
    step that made each value to the steps that use it. `guards` (text, one guard a line) is
    drawn as a note; `title` labels the picture."""
    from graphviz import Digraph

    dot = Digraph(node_attr=NODE_ATTR, graph_attr=dict(size="12,12", rankdir="TB"))
    if title:
        dot.attr(label=title, labelloc="t")
    maker: dict[int, str] = {}  # slot -> the node that made its value
    for slot in program.slots:
        if slot.origin in ("input", "captured"):
            key = f"s{slot.index}"
            dtype = str(slot.dtype).removeprefix("torch.")
            name = "input" if slot.origin == "input" else "captured"
            label = f"%{slot.index} {name}\n{dtype}{list(slot.shape)}"
            dot.node(key, label, fillcolor=INPUT_FILL)
            maker[slot.index] = key
    for number, step in enumerate(program.steps):
        key = f"t{number}"
        if isinstance(step, Op):
            outs = ", ".join("_" if o is None else f"%{o}" for o in step.outputs)
            consts = [str(a) for a in step.args if isinstance(a, Const)]
            detail = f"({', '.join(consts)})" if consts else ""
            dot.node(key, f"{outs} = {step.function.__name__}{detail}")
            uses = [slot for arg in step.args for slot in _refs(arg)]
            made = [o for o in step.outputs if o is not None]
        elif isinstance(step, Creation):
            dot.node(key, f"%{step.output} = {step.factory.__name__}(...)")
            uses = [slot for arg in step.args for slot in _refs(arg)]
            made = [step.output]
        elif isinstance(step, Alias):
            dot.node(key, f"%{step.output} = alias of %{step.source}")
            uses, made = [step.source], [step.output]
        elif isinstance(step, Read):
            value = Const(step.value)
            dot.node(key, f"guard: {step.kind}(%{step.slot}) == {value}", fillcolor=READ_FILL,
                     shape="note")  # fmt: skip
            uses, made = [step.slot], []
        elif isinstance(step, Write):
            dot.node(key, f"write %{step.target} <- %{step.source}")
            uses, made = [step.source], [step.target]
        else:
            dot.node(key, str(step))
            uses, made = [], []
        for slot in dict.fromkeys(uses):
            if slot in maker:
                dot.edge(maker[slot], key)
        for slot in made:
            maker[slot] = key
    for nr, slot in enumerate(program.outputs):
        key = f"out{nr}"
        dot.node(key, f"output {nr}: %{slot}", fillcolor=OUTPUT_FILL)
        if slot in maker:
            dot.edge(maker[slot], key)
    if guards:
        lines = "\\l".join(guards.splitlines()) + "\\l"
        dot.node("guards", f"guards checked before a replay:\\l{lines}", fillcolor=READ_FILL,
                 shape="note")  # fmt: skip
    return dot
