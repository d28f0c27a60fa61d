"""Plausible wrong answers to notebook 5's exercises: mistakes the graders must reject.

`WRONG_ANSWERS[grade_id]` lists `WrongAnswer(name, source, why)`; `source` is a complete
replacement for that exercise's answer cell (it may use what the notebook defined before it:
the setup imports, the trace classes and earlier answers such as `trace` and `replay`).

Exercises 6 and 7 take the tracer and the replayer as arguments (by default the student's own
`trace` and `replay`, or `replay_with_gradients` for exercise 7); their graders pass their own,
so a wrong exercise 1, 2 or 5 costs only its own points.
"""

from __future__ import annotations

from solutions.graph_construction.wrong_answers import WrongAnswer

_TRACE_HEAD = """\
def trace(fn, *inputs):
    result = Trace()
    slots = {}
    alive = []

    def slot_of(t):
        if id(t) not in slots:
            slots[id(t)] = len(alive)
            alive.append(t)
        return slots[id(t)]

    for t in inputs:
        result.inputs.append(slot_of(t))
        result.input_meta.append((t.shape, t.dtype))
"""

_TRACE_TAIL = """\
    with watch_ops(on_op, on_read):
        out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    result.outputs = [slots[id(o)] for o in outs]
    return result
"""

_ON_READ = """
    def on_read(tensor, kind, value):
        if id(tensor) not in slots:
            result.captured[slot_of(tensor)] = tensor
        result.steps.append(Guard(slot_of(tensor), kind, value))

"""


def _trace(on_op: str, on_read: str = _ON_READ, tail: str = _TRACE_TAIL) -> str:
    return _TRACE_HEAD + on_op + on_read + tail


_ON_OP = """
    def on_op(function, args, outputs):
        described = []
        for a in args:
            if isinstance(a, minitorch.Tensor):
                if id(a) not in slots:
                    result.captured[slot_of(a)] = a
                described.append(Slot(slot_of(a)))
            else:
                described.append(a)
        outs = [slot_of(o) if isinstance(o, minitorch.Tensor) else None for o in outputs]
        result.steps.append(Step(function, described, outs))
"""

_REPLAY_LOOP = """\
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    with minitorch.no_grad():
        for step in trace.steps:
            if isinstance(step, Guard):
                {guard}
            args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
            outs = step.function.apply(*args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            for slot, out in zip(step.outputs, outs):
                if slot is not None:
                    values[slot] = out
    return tuple(values[slot] for slot in trace.outputs)
"""

_GRADIENTS = """\
def replay_with_gradients(trace, inputs, grad_output):
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    needs_grad = {{slot: t.requires_grad for slot, t in values.items()}}
    done = []
    for step in trace.steps:
        if isinstance(step, Guard):
            continue
        args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
        flags = [isinstance(a, Slot) and needs_grad[a.index] for a in step.args]
        outs, ctx = forward_with_ctx(step.function, args, flags)
        for slot, out in zip(step.outputs, outs):
            if slot is not None:
                values[slot] = out
                needs_grad[slot] = {propagate}
        done.append((step, ctx, flags))
    (out_slot,) = trace.outputs
    grads = {{out_slot: grad_output}}
    for step, ctx, flags in {order}:
        out_grads = [None if s is None else grads.pop(s, None) for s in step.outputs]
        if not any(flags) or all(g is None for g in out_grads):
            continue
        out_grads = [
            minitorch.zeros_like(values[s]) if g is None and s is not None else g
            for s, g in zip(step.outputs, out_grads)
        ]
        results = step.function.backward(ctx, *out_grads)
        results = results if isinstance(results, tuple) else (results,)
        for arg, flag, grad in zip(step.args, flags, results):
            if flag and grad is not None:
                slot = arg.index
                {accumulate}
    wanted = {wanted}
    result = {{s: g for s, g in grads.items() if s in wanted and values[s].requires_grad}}
    return values[out_slot], result
"""


def _gradients(
    propagate: str = "any(flags) and out.dtype.is_floating_point",
    order: str = "reversed(done)",
    accumulate: str = "grads[slot] = grad if slot not in grads else grads[slot] + grad",
    wanted: str = "set(trace.inputs) | set(trace.captured)",
) -> str:
    return _GRADIENTS.format(propagate=propagate, order=order, accumulate=accumulate, wanted=wanted)


# A backward pass that sends each gradient down every path separately, instead of summing the
# gradients of a slot before going on: right numbers, exponential time on diamonds.
_PER_PATH = """\
def replay_with_gradients(trace, inputs, grad_output):
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    needs_grad = {{slot: t.requires_grad for slot, t in values.items()}}
    made_by = {{}}
    for step in trace.steps:
        if isinstance(step, Guard):
            continue
        args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
        flags = [isinstance(a, Slot) and needs_grad[a.index] for a in step.args]
        outs, ctx = forward_with_ctx(step.function, args, flags)
        for slot, out in zip(step.outputs, outs):
            if slot is not None:
                values[slot] = out
                needs_grad[slot] = any(flags) and out.dtype.is_floating_point
                made_by[slot] = (step, ctx, flags)
    grads = {{}}

    def backward_of(slot, grad):
        step, ctx, flags = made_by[slot]
        results = step.function.backward(ctx, *[grad if s == slot else None for s in step.outputs])
        results = results if isinstance(results, tuple) else (results,)
        return [(a.index, g) for a, f, g in zip(step.args, flags, results) if f and g is not None]

{walk}
    wanted = set(trace.inputs) | set(trace.captured)
    result = {{s: g for s, g in grads.items() if s in wanted and values[s].requires_grad}}
    return values[out_slot], result
"""

_RECURSIVE = """\
    def send(slot, grad):
        if slot in made_by:
            for arg, g in backward_of(slot, grad):
                send(arg, g)
        else:
            grads[slot] = grad if slot not in grads else grads[slot] + grad

    (out_slot,) = trace.outputs
    send(out_slot, grad_output)
"""

_STACK = """\
    (out_slot,) = trace.outputs
    pending = [(out_slot, grad_output)]
    while pending:
        slot, grad = pending.pop()
        if slot in made_by:
            pending.extend(backward_of(slot, grad))
        else:
            grads[slot] = grad if slot not in grads else grads[slot] + grad
"""


_CACHED = """\
def cached(fn, limit=3, tracer=None, replayer=None):
    tracer = tracer or trace
    replayer = replayer or replay
    cache = {{}}
    warned = False

    def call(*inputs):
        nonlocal warned
        signature = {signature}
        if signature not in cache:
            if len(cache) >= limit:
{beyond}
            cache[signature] = tracer(fn, *inputs)
        outputs = replayer(cache[signature], *inputs)
        return outputs[0] if len(outputs) == 1 else outputs

    call.cache = cache
    return call
"""

_EAGER_ONCE = """\
                if not warned:
                    warnings.warn("limit reached", RuntimeWarning, stacklevel=2)
                    warned = True
                return fn(*inputs)"""


def _cached(
    signature: str = "tuple((tuple(t.shape), t.dtype) for t in inputs)", beyond: str = _EAGER_ONCE
) -> str:
    return _CACHED.format(signature=signature, beyond=beyond)


_SPEEDUP = """\
def replay_speedup(fn, *inputs, repeat=20, tracer=None, replayer=None):
    tracer = tracer or trace
    replayer = replayer or replay_with_gradients
    recorded = tracer(fn, *inputs)
    grad_output = minitorch.ones_like(fn(*inputs))
    eager = replayed = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        {eager}
        eager = min(eager, time.perf_counter() - start)
        start = time.perf_counter()
        {replay}
        replayed = min(replayed, time.perf_counter() - start)
    return {ratio}
"""


def _speedup(
    eager: str = "fn(*inputs).backward(grad_output)",
    replay: str = "replayer(recorded, list(inputs), grad_output)",
    ratio: str = "eager / replayed",
) -> str:
    return _SPEEDUP.format(eager=eager, replay=replay, ratio=ratio)


_RIGHT_PREDICTIONS = {
    "a": True,
    "b": False,
    "c": True,
    "d": True,
    "e": False,
    "f": False,
    "g": True,
    "h": False,
    "i": True,
    "k": False,
}


_RIGHT_DEPLOYMENT = {
    "a": {"trace", "script", "export"},
    "b": {"script"},
    "c": {"export"},
    "d": {"trace", "script", "export"},
    "e": {"script"},
    "f": {"script", "export"},
}


def _deployment(**changes: set) -> str:
    answer = {key: sorted(routes) for key, routes in {**_RIGHT_DEPLOYMENT, **changes}.items()}
    lines = ",\n".join(f"        {key!r}: set({routes!r})" for key, routes in answer.items())
    return f"def predict_deployment():\n    return {{\n{lines},\n    }}\n"


def _predictions(**changes: object) -> str:
    answer = {**_RIGHT_PREDICTIONS, **changes}
    return f"def predict_tracing():\n    return {answer!r}\n"


WRONG_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_trace": [
        WrongAnswer(
            "read_tensor_not_captured",
            _trace(
                _ON_OP,
                on_read="""
    def on_read(tensor, kind, value):
        result.steps.append(Guard(slot_of(tensor), kind, value))

""",
            ),
            "a tensor read before any op used it gets a slot, but is not captured: a replay "
            "has no value for it",
        ),
        WrongAnswer(
            "captured_by_value",
            _trace(
                _ON_OP.replace(
                    "result.captured[slot_of(a)] = a",
                    "result.captured[slot_of(a)] = a.detach().clone()",
                )
            ),  # noqa: E501
            "a copy of a parameter: the trace would not see the next optimizer step",
        ),
        WrongAnswer(
            "outputs_numbered_first",
            _trace(
                _ON_OP.replace(
                    "        described = []\n",
                    "        pre = [slot_of(o) for o in outputs if isinstance(o, minitorch.Tensor)]\n"  # noqa: E501
                    "        described = []\n",
                )
            ),
            "slots given to an op's outputs before its captured arguments",
        ),
        WrongAnswer(
            "reads_ignored",
            _trace(_ON_OP, on_read="\n    on_read = None\n\n"),
            "no Guard steps: the branches Python took are forgotten",
        ),  # fmt: skip
        WrongAnswer(
            "single_output_only",
            _trace(
                _ON_OP,
                tail=_TRACE_TAIL.replace(
                    "    outs = out if isinstance(out, tuple) else (out,)\n",
                    "    outs = (out[0],) if isinstance(out, tuple) else (out,)\n",
                ),
            ),
            "a function that returns two tensors keeps only the first",
        ),
        WrongAnswer(
            "one_slot_per_op",
            _trace(
                _ON_OP.replace(
                    "        outs = [slot_of(o) if isinstance(o, minitorch.Tensor) else None "
                    "for o in outputs]\n",
                    "        outs = [slot_of(outputs[0])]\n",
                )
            ),
            "one slot per op: the second output of chunk, sort or max(dim) gets none",
        ),
        WrongAnswer(
            "outputs_in_slot_order",
            _trace(
                _ON_OP,
                tail=_TRACE_TAIL.replace(
                    "result.outputs = [slots[id(o)] for o in outs]",
                    "result.outputs = sorted(slots[id(o)] for o in outs)",
                ),
            ),
            "the returned slots sorted: outputs that were made in another order are swapped",
        ),
        WrongAnswer(
            "outputs_without_repeats",
            _trace(
                _ON_OP,
                tail=_TRACE_TAIL.replace(
                    "result.outputs = [slots[id(o)] for o in outs]",
                    "result.outputs = list(dict.fromkeys(slots[id(o)] for o in outs))",
                ),
            ),
            "a tensor returned twice is listed once",
        ),
        WrongAnswer(
            "outputs_among_op_results",
            _trace(
                _ON_OP.replace(
                    "        result.steps.append(Step(function, described, outs))\n",
                    "        result.steps.append(Step(function, described, outs))\n"
                    "        made.update((id(o), s) for o, s in zip(outputs, outs))\n",
                ),
                tail=_TRACE_TAIL.replace(
                    "result.outputs = [slots[id(o)] for o in outs]",
                    "result.outputs = [made[id(o)] for o in outs]",
                ),
            ).replace("    alive = []\n", "    alive = []\n    made = {}\n"),
            "outputs looked up among the ops' results only: a returned input is not found",
        ),
    ],
    "ex2_replay": [
        WrongAnswer(
            "captured_forgotten",
            "def replay(trace, *inputs):\n"
            + _REPLAY_LOOP.replace("dict(trace.captured)", "dict()").format(guard="continue"),
            "the parameters are not in the values: KeyError",
        ),
        WrongAnswer(
            "graph_recorded",
            "def replay(trace, *inputs):\n"
            + _REPLAY_LOOP.replace("    with minitorch.no_grad():\n", "    if True:\n").format(
                guard="continue"
            ),
            "replays with grad mode on: a graph per op, the cost a trace should save",
        ),
        WrongAnswer(
            "first_output_only",
            "def replay(trace, *inputs):\n"
            + _REPLAY_LOOP.replace(
                "return tuple(values[slot] for slot in trace.outputs)",
                "return (values[trace.outputs[0]],)",
            ).format(guard="continue"),
            "only the first output",
        ),
        WrongAnswer(
            "guards_not_skipped",
            "def replay(trace, *inputs):\n" + _REPLAY_LOOP.format(guard="pass"),
            "a Guard step is treated as an op: AttributeError",
        ),
        WrongAnswer(
            "trace_captured_mutated",
            "def replay(trace, *inputs):\n"
            + _REPLAY_LOOP.replace(
                "values = dict(trace.captured)", "values = trace.captured"
            ).format(guard="continue"),
            "adds this call's tensors to trace.captured: the trace grows and keeps them alive",
        ),
        WrongAnswer(
            "graph_detached_afterwards",
            "def replay(trace, *inputs):\n"
            + _REPLAY_LOOP.replace("    with minitorch.no_grad():\n", "    if True:\n")
            .replace(
                "return tuple(values[slot] for slot in trace.outputs)",
                "return tuple(values[slot].detach() for slot in trace.outputs)",
            )
            .format(guard="continue"),
            "records a graph for every op, then detaches the outputs: the cost is already paid",
        ),
        WrongAnswer(
            "first_output_per_op",
            "def replay(trace, *inputs):\n"
            + _REPLAY_LOOP.replace(
                "            for slot, out in zip(step.outputs, outs):\n"
                "                if slot is not None:\n"
                "                    values[slot] = out\n",
                "            values[step.outputs[0]] = outs[0]\n",
            ).format(guard="continue"),
            "stores only an op's first output: the second half of a chunk is missing",
        ),
    ],
    "ex3_input_mismatch": [
        WrongAnswer(
            "numel_not_shape",
            """\
def input_mismatch(trace, *inputs):
    if len(inputs) != len(trace.input_meta):
        return "wrong number of inputs"
    for i, (t, (shape, dtype)) in enumerate(zip(inputs, trace.input_meta)):
        if t.numel() != torch.Size(shape).numel():
            return f"input {i}: shape differs"
        if t.dtype != dtype:
            return f"input {i}: dtype differs"
    return None
""",
            "compares the number of elements: a transposed input passes",
        ),
        WrongAnswer(
            "dtype_ignored",
            """\
def input_mismatch(trace, *inputs):
    if len(inputs) != len(trace.input_meta):
        return "wrong number of inputs"
    for i, (t, (shape, dtype)) in enumerate(zip(inputs, trace.input_meta)):
        if t.shape != shape:
            return f"input {i}: shape {list(t.shape)} instead of {list(shape)}"
    return None
""",
            "a float32 input replays a float64 trace",
        ),
        WrongAnswer(
            "count_not_checked",
            """\
def input_mismatch(trace, *inputs):
    for i, (t, (shape, dtype)) in enumerate(zip(inputs, trace.input_meta)):
        if t.shape != shape:
            return f"input {i}: shape {list(t.shape)} instead of {list(shape)}"
        if t.dtype != dtype:
            return f"input {i}: dtype {t.dtype} instead of {dtype}"
    return None
""",
            "zip stops at the shorter list: a missing or extra input passes",
        ),
        WrongAnswer(
            "bool_instead_of_message",
            """\
def input_mismatch(trace, *inputs):
    if len(inputs) != len(trace.input_meta):
        return True
    return any(t.shape != s or t.dtype != d for t, (s, d) in zip(inputs, trace.input_meta))
""",
            "returns True/False, not None or a message",
        ),
        WrongAnswer(
            "size_one_dims_ignored",
            """\
def input_mismatch(trace, *inputs):
    if len(inputs) != len(trace.input_meta):
        return "wrong number of inputs"
    for i, (t, (shape, dtype)) in enumerate(zip(inputs, trace.input_meta)):
        if [n for n in t.shape if n != 1] != [n for n in shape if n != 1]:
            return f"input {i}: shape {list(t.shape)} instead of {list(shape)}"
        if t.dtype != dtype:
            return f"input {i}: dtype {t.dtype} instead of {dtype}"
    return None
""",
            "ignores dimensions of size 1: a [4, 6, 1] input replays a [4, 6] trace",
        ),
        WrongAnswer(
            "last_mismatch_reported",
            """\
def input_mismatch(trace, *inputs):
    if len(inputs) != len(trace.input_meta):
        return "wrong number of inputs"
    message = None
    for i, (t, (shape, dtype)) in enumerate(zip(inputs, trace.input_meta)):
        if t.shape != shape:
            message = f"input {i}: shape {list(t.shape)} instead of {list(shape)}"
        elif t.dtype != dtype:
            message = f"input {i}: dtype {t.dtype} instead of {dtype}"
    return message
""",
            "checks every input and reports the last mismatch, not the first",
        ),
    ],
    "ex4_replay_guarded": [
        WrongAnswer(
            "guards_skipped",
            "def replay_guarded(trace, *inputs):\n" + _REPLAY_LOOP.format(guard="continue"),
            "no guard is checked: the other branch replays silently",
        ),
        WrongAnswer(
            "reads_the_guard_itself",
            "def replay_guarded(trace, *inputs):\n"
            + _REPLAY_LOOP.format(
                guard="if READERS[step.kind](step.value) != step.value:\n"
                "                    raise GuardFailed('changed')\n"
                "                continue"
            ),
            "re-reads the recorded value instead of the replayed tensor",
        ),
        WrongAnswer(
            "wrong_exception",
            "def replay_guarded(trace, *inputs):\n"
            + _REPLAY_LOOP.format(
                guard="if READERS[step.kind](values[step.slot]) != step.value:\n"
                "                    raise ValueError('a guard failed')\n"
                "                continue"
            ),
            "raises ValueError, which a cache could not tell from a bug",
        ),
        WrongAnswer(
            "bool_guards_only",
            "def replay_guarded(trace, *inputs):\n"
            + _REPLAY_LOOP.format(
                guard="if step.kind == 'bool' and bool(values[step.slot]) != step.value:\n"
                "                    raise GuardFailed('changed')\n"
                "                continue"
            ),
            "checks `if` conditions but not item() or int() reads",
        ),
        WrongAnswer(
            "tolerant_guards",
            "import math\n\n\ndef replay_guarded(trace, *inputs):\n"
            + _REPLAY_LOOP.format(
                guard="if not math.isclose(READERS[step.kind](values[step.slot]), step.value):\n"
                "                    raise GuardFailed('changed')\n"
                "                continue"
            ),
            "a read that is only close to the traced value passes: the trace holds its constant",
        ),
        WrongAnswer(
            "guards_checked_at_the_end",
            """\
def replay_guarded(trace, *inputs):
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    changed = []
    with minitorch.no_grad():
        for step in trace.steps:
            if isinstance(step, Guard):
                now = READERS[step.kind](values[step.slot])
                if now != step.value:
                    changed.append(f"{step.kind} read {step.value!r} when traced, {now!r} now")
                continue
            args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
            outs = step.function.apply(*args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            for slot, out in zip(step.outputs, outs):
                if slot is not None:
                    values[slot] = out
    if changed:
        raise GuardFailed("; ".join(changed))
    return tuple(values[slot] for slot in trace.outputs)
""",
            "runs the ops after a failed guard (the wrong branch's ops) before raising",
        ),
        WrongAnswer(
            "item_for_every_read",
            "def replay_guarded(trace, *inputs):\n"
            + _REPLAY_LOOP.format(
                guard="if values[step.slot].item() != step.value:\n"
                "                    raise GuardFailed('changed')\n"
                "                continue"
            ),
            "reads every guard with item(): int() and bool() of a float tensor read otherwise",
        ),
    ],
    "ex5_replay_with_gradients": [
        WrongAnswer(
            "fan_out_overwritten",
            _gradients(accumulate="grads[slot] = grad"),
            "a slot used twice keeps only its last gradient",
        ),
        WrongAnswer(
            "forward_order",
            _gradients(order="done"),
            "backward steps in forward order: gradients not yet complete",
        ),
        WrongAnswer(
            "inputs_only",
            _gradients(wanted="set(trace.inputs)"),
            "the parameters' gradients are left out",
        ),
        WrongAnswer(
            "needs_not_propagated",
            _gradients(propagate="out.requires_grad"),
            "intermediate results are not marked as needing gradients",
        ),
        WrongAnswer(
            "in_place_accumulation",
            _gradients(
                accumulate="if slot in grads:\n"
                "                    grads[slot] += grad\n"
                "                else:\n"
                "                    grads[slot] = grad"
            ),
            "+= adds into a tensor that backward may have passed on as it got it: grad_output",
        ),
        WrongAnswer(
            "engine_backward",
            """\
def replay_with_gradients(trace, inputs, grad_output):
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    for step in trace.steps:
        if isinstance(step, Guard):
            continue
        args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
        outs = step.function.apply(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for slot, out in zip(step.outputs, outs):
            if slot is not None:
                values[slot] = out
    (out_slot,) = trace.outputs
    leaves = [s for s in [*trace.inputs, *trace.captured] if values[s].requires_grad]
    found = minitorch.autograd.grad(
        values[out_slot], [values[s] for s in leaves], grad_output, allow_unused=True
    )
    grads = {s: g for s, g in zip(leaves, found) if g is not None}
    return values[out_slot].detach(), grads
""",
            "records a graph and runs minitorch's engine: not the trace's own backward program",
        ),
        WrongAnswer(
            "recursive_backward",
            _PER_PATH.format(walk=_RECURSIVE),
            "recursion: deep traces overflow the stack, diamonds take exponential time",
        ),  # fmt: skip
        WrongAnswer(
            "paths_enumerated",
            _PER_PATH.format(walk=_STACK),
            "each path from the "
            "output followed separately: exponential time on a chain of diamonds",
        ),  # fmt: skip
        WrongAnswer(
            "dead_steps_not_skipped",
            _gradients()
            .replace(
                "        if not any(flags) or all(g is None for g in out_grads):\n",
                "        if not any(flags):\n",
            )
            .replace("g is None and s is not None", "False"),
            "calls the backward of a step whose outputs got no gradient, with None",
        ),
        WrongAnswer(
            "first_output_gradient_only",
            _gradients().replace(
                "[None if s is None else grads.pop(s, None) for s in step.outputs]",
                "[grads.pop(step.outputs[0], None)] + [None] * (len(step.outputs) - 1)",
            ),
            "passes backward only the first output's gradient: chunk's other half is lost",
        ),
        WrongAnswer(
            "captured_always_need_grad",
            _gradients()
            .replace(
                "{slot: t.requires_grad for slot, t in values.items()}",
                "{s: t.requires_grad or s in trace.captured for s, t in values.items()}",
            )
            .replace(" and values[s].requires_grad}", "}"),
            "every captured tensor treated as a parameter: a buffer gets a gradient",
        ),
    ],
    "ex6_cached": [
        WrongAnswer(
            "dtype_not_in_signature",
            _cached(signature="tuple(tuple(t.shape) for t in inputs)"),
            "float32 and float64 inputs share one trace",
        ),
        WrongAnswer(
            "no_limit",
            _cached(beyond="                pass"),
            "traces every new signature forever",
        ),
        WrongAnswer(
            "warns_every_time",
            _cached(
                beyond='                warnings.warn("limit", RuntimeWarning, stacklevel=2)\n'
                "                return fn(*inputs)"
            ),
            "a warning on every call beyond the limit",
        ),
        WrongAnswer(
            "error_beyond_limit",
            _cached(beyond='                raise RuntimeError("too many traces")'),
            "refuses instead of running eagerly",
        ),
        WrongAnswer(
            "limit_off_by_one",
            _cached().replace("len(cache) >= limit", "len(cache) > limit"),
            "keeps limit + 1 traces",
        ),
        WrongAnswer(
            "numel_in_signature",
            _cached(signature="tuple((t.numel(), t.dtype) for t in inputs)"),
            "a [2, 3] and a [3, 2] input share one trace",
        ),
        WrongAnswer(
            "traces_every_call",
            _cached().replace(
                "            cache[signature] = tracer(fn, *inputs)\n",
                "            pass\n        cache[signature] = tracer(fn, *inputs)\n",
            ),
            "traces again on every call: the cost a cache should save",
        ),
        WrongAnswer(
            "first_input_signature",
            _cached(signature="(tuple(inputs[0].shape), inputs[0].dtype)"),
            "the signature of the first input only: a second input of another shape replays it",
        ),
        WrongAnswer(
            "first_output_only",
            _cached().replace(
                "        return outputs[0] if len(outputs) == 1 else outputs\n",
                "        return outputs[0]\n",
            ),
            "returns the first output of a function that returns two",
        ),
    ],
    "ex7_replay_speedup": [
        WrongAnswer(
            "tracing_timed",
            _speedup(replay="replayer(tracer(fn, *inputs), list(inputs), grad_output)"),
            "traces again inside the timed replay",
        ),
        WrongAnswer(
            "inverted",
            _speedup(ratio="replayed / eager"),
            "replay time / eager time",
        ),  # fmt: skip
        WrongAnswer(
            "eager_without_graph",
            _speedup(
                eager="with minitorch.no_grad():\n            fn(*inputs)",
            ),
            "eager measured without recording its graph (and without backward)",
        ),
        WrongAnswer(
            "forward_only",
            _speedup(eager="fn(*inputs)"),
            "eager timed forward only, against a replay that runs forward and backward",
        ),
        WrongAnswer(
            "backward_untimed",
            _speedup().replace(
                "        fn(*inputs).backward(grad_output)\n"
                "        eager = min(eager, time.perf_counter() - start)\n",
                "        out = fn(*inputs)\n"
                "        eager = min(eager, time.perf_counter() - start)\n"
                "        out.backward(grad_output)\n",
            ),
            "the backward runs, but outside the eager timer",
        ),
    ],
    "ex8_predict_tracing": [
        WrongAnswer(
            "all_true",
            _predictions(**dict.fromkeys(_RIGHT_PREDICTIONS, True)),
            "tracing always works",
        ),  # fmt: skip
        WrongAnswer(
            "shapes_are_constants", _predictions(d=False), "x.shape[0] is recorded as an op"
        ),  # fmt: skip
        WrongAnswer(
            "len_is_recorded", _predictions(e=True, k=True), "len() and item() become constants"
        ),  # fmt: skip
    ],
    "ex9_predict_deployment": [
        WrongAnswer(
            "script_keeps_everything",
            _deployment(c={"script", "export"}),
            "scripting compiles any Python, torch.cond included",
        ),
        WrongAnswer(
            "export_keeps_branches",
            _deployment(b={"script", "export"}, e={"script", "export"}),
            "export keeps a Python branch or loop on a value, as torch.compile does",
        ),
        WrongAnswer(
            "trace_sees_item",
            _deployment(f={"trace", "script", "export"}),
            "item() is recorded by a trace",
        ),
    ],
}


# Different but correct answers: each must earn full marks (tests/test_graders_common.py).
RIGHT_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_trace": [
        WrongAnswer(
            "recorder_class",
            """\
class Recorder:
    def __init__(self, inputs):
        self.trace = Trace()
        self.slots = {}
        self.keep = []
        for t in inputs:
            self.trace.inputs.append(self.slot(t))
            self.trace.input_meta.append((t.shape, t.dtype))

    def slot(self, t, captured=False):
        key = id(t)
        if key not in self.slots:
            self.slots[key] = len(self.keep)
            self.keep.append(t)
            if captured:
                self.trace.captured[self.slots[key]] = t
        return self.slots[key]

    def op(self, function, args, outputs):
        described = [
            Slot(self.slot(a, captured=True)) if isinstance(a, minitorch.Tensor) else a
            for a in args
        ]
        outs = [self.slot(o) if isinstance(o, minitorch.Tensor) else None for o in outputs]
        self.trace.steps.append(Step(function, described, outs))

    def read(self, tensor, kind, value):
        self.trace.steps.append(Guard(self.slot(tensor, captured=True), kind, value))


def trace(fn, *inputs):
    recorder = Recorder(inputs)
    with watch_ops(recorder.op, recorder.read):
        result = fn(*inputs)
    results = result if isinstance(result, tuple) else [result]
    recorder.trace.outputs = [recorder.slots[id(r)] for r in results]
    return recorder.trace
""",
            "a class instead of closures",
        ),
    ],
    "ex2_replay": [
        WrongAnswer(
            "list_of_values",
            """\
def replay(trace, *inputs):
    size = 1 + max([*trace.inputs, *trace.captured, *[
        o for s in trace.steps if isinstance(s, Step) for o in s.outputs if o is not None
    ]])
    values = [None] * size
    for slot, t in [*zip(trace.inputs, inputs), *trace.captured.items()]:
        values[slot] = t
    for step in trace.steps:
        if not isinstance(step, Step):
            continue
        with minitorch.no_grad():
            result = step.function.apply(
                *(values[a.index] if isinstance(a, Slot) else a for a in step.args)
            )
        if not isinstance(result, tuple):
            result = (result,)
        for slot, value in zip(step.outputs, result):
            if slot is not None:
                values[slot] = value
    return tuple(values[s] for s in trace.outputs)
""",
            "a list of values, no_grad around each op",
        ),
        WrongAnswer(
            "no_grad_decorator",
            """\
@minitorch.no_grad()
def replay(trace, *inputs):
    values = {**trace.captured, **dict(zip(trace.inputs, inputs))}
    for step in trace.steps:
        if isinstance(step, Step):
            args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
            result = step.function.apply(*args)
            for slot, value in zip(step.outputs, result if isinstance(result, tuple) else [result]):
                if slot is not None:
                    values[slot] = value
    return tuple(map(values.__getitem__, trace.outputs))
""",
            "no_grad as a decorator, a dict built by unpacking",
        ),
    ],
    "ex3_input_mismatch": [
        WrongAnswer(
            "dtype_first",
            """\
def input_mismatch(trace, *inputs):
    if len(inputs) != len(trace.input_meta):
        return f"wrong number of inputs: {len(inputs)} instead of {len(trace.input_meta)}"
    for i, t in enumerate(inputs):
        shape, dtype = trace.input_meta[i]
        if t.dtype != dtype:
            return f"input {i} has dtype {t.dtype}; traced with {dtype}"
        if tuple(t.shape) != tuple(shape):
            return f"input {i} has shape {tuple(t.shape)}; traced with {tuple(shape)}"
""",
            "dtype checked first, falls off the end to return None",
        ),
        WrongAnswer(
            "one_message_for_both",
            """\
def input_mismatch(trace, *inputs):
    if len(inputs) != len(trace.input_meta):
        return "the number of inputs differs"
    for i, (t, meta) in enumerate(zip(inputs, trace.input_meta)):
        if (tuple(t.shape), t.dtype) != (tuple(meta[0]), meta[1]):
            return f"input {i}: shape or dtype differs ({list(t.shape)}, {t.dtype})"
    return None
""",
            "one message that names both shape and dtype",
        ),
    ],
    "ex4_replay_guarded": [
        WrongAnswer(
            "guard_check_in_a_helper",
            """\
def check(guard, values):
    now = READERS[guard.kind](values[guard.slot])
    if now != guard.value:
        raise GuardFailed(f"{guard.kind}() of slot {guard.slot}: {guard.value!r} then, {now!r} now")


def replay_guarded(trace, *inputs):
    values = dict(trace.captured)
    for slot, t in zip(trace.inputs, inputs):
        values[slot] = t
    with minitorch.no_grad():
        for step in trace.steps:
            if not isinstance(step, Step):
                check(step, values)
                continue
            result = step.function.apply(
                *(values[a.index] if isinstance(a, Slot) else a for a in step.args)
            )
            result = result if isinstance(result, tuple) else (result,)
            values.update((s, r) for s, r in zip(step.outputs, result) if s is not None)
    return tuple(values[s] for s in trace.outputs)
""",
            "the guard check in a helper, values.update with a generator",
        ),
    ],
    "ex5_replay_with_gradients": [
        WrongAnswer(
            "grad_lists",
            """\
def replay_with_gradients(trace, inputs, grad_output):
    values = {**trace.captured, **dict(zip(trace.inputs, inputs))}
    requires = {s for s, t in values.items() if t.requires_grad}
    tape = []
    for step in trace.steps:
        if isinstance(step, Guard):
            continue
        args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
        needs = [isinstance(a, Slot) and a.index in requires for a in step.args]
        outs, ctx = forward_with_ctx(step.function, args, needs)
        for slot, out in zip(step.outputs, outs):
            if slot is None:
                continue
            values[slot] = out
            if any(needs) and out.is_floating_point():
                requires.add(slot)
        tape.append((step, ctx, needs))
    pending = {trace.outputs[0]: [grad_output]}
    for step, ctx, needs in tape[::-1]:
        grads = [sum(pending.pop(s)) if s in pending else None for s in step.outputs]
        if all(g is None for g in grads) or not any(needs):
            continue
        grads = [
            values[s] * 0 if g is None and s is not None else g
            for s, g in zip(step.outputs, grads)
        ]
        back = step.function.backward(ctx, *grads)
        back = back if isinstance(back, tuple) else (back,)
        for a, need, g in zip(step.args, needs, back):
            if need and g is not None:
                pending.setdefault(a.index, []).append(g)
    leaves = [*trace.inputs, *trace.captured]
    result = {s: sum(g) for s, g in pending.items() if s in leaves and values[s].requires_grad}
    return values[trace.outputs[0]], result
""",
            "lists of gradients summed when used",
        ),
        WrongAnswer(
            "backward_without_graph",
            _gradients().replace(
                "        results = step.function.backward(ctx, *out_grads)\n",
                "        with minitorch.no_grad():\n"
                "            results = step.function.backward(ctx, *out_grads)\n",
            ),
            "the backward formulas run under no_grad (as the engine runs them)",
        ),
    ],
    "ex6_cached": [
        WrongAnswer(
            "class_with_call",
            """\
class Cached:
    def __init__(self, fn, limit, tracer, replayer):
        self.fn, self.limit, self.cache, self.warned = fn, limit, {}, False
        self.tracer, self.replayer = tracer or trace, replayer or replay

    def __call__(self, *inputs):
        key = tuple((tuple(t.shape), t.dtype) for t in inputs)
        if key in self.cache:
            outputs = self.replayer(self.cache[key], *inputs)
            return outputs if len(outputs) > 1 else outputs[0]
        if len(self.cache) == self.limit:
            if not self.warned:
                self.warned = True
                warnings.warn("recompile limit reached", RuntimeWarning, stacklevel=2)
            return self.fn(*inputs)
        self.cache[key] = self.tracer(self.fn, *inputs)
        return self(*inputs)


def cached(fn, limit=3, tracer=None, replayer=None):
    return Cached(fn, limit, tracer, replayer)
""",
            "a callable object",
        ),
        WrongAnswer(
            "size_objects_as_keys",
            _cached(signature="tuple((t.shape, t.dtype) for t in inputs)")
            .replace("    cache = {}\n", "    cache = collections.OrderedDict()\n")
            .replace("def cached(", "import collections\n\n\ndef cached(", 1),
            "torch.Size keys in an OrderedDict",
        ),
    ],
    "ex7_replay_speedup": [
        WrongAnswer(
            "timeit_two_loops",
            """\
import timeit


def replay_speedup(fn, *inputs, repeat=20, tracer=None, replayer=None):
    recorded = (tracer or trace)(fn, *inputs)
    run_replay = replayer or replay_with_gradients
    ones = minitorch.ones_like(fn(*inputs))
    eager = min(timeit.repeat(lambda: fn(*inputs).backward(ones), number=1, repeat=repeat))
    replayed = min(
        timeit.repeat(lambda: run_replay(recorded, list(inputs), ones), number=1, repeat=repeat)
    )
    return eager / replayed
""",
            "timeit, one side after the other instead of taking turns",
        ),
        WrongAnswer(
            "autograd_grad_nanoseconds",
            """\
def replay_speedup(fn, *inputs, repeat=20, tracer=None, replayer=None):
    recorded = (tracer or trace)(fn, *inputs)
    run_replay = replayer or replay_with_gradients
    grad_output = minitorch.ones_like(fn(*inputs))
    eager, replayed = [], []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        loss = fn(*inputs)
        minitorch.autograd.grad(loss, list(inputs), grad_output)
        eager.append(time.perf_counter_ns() - start)
        start = time.perf_counter_ns()
        run_replay(recorded, list(inputs), grad_output)
        replayed.append(time.perf_counter_ns() - start)
    return min(eager) / min(replayed)
""",
            "perf_counter_ns, autograd.grad instead of backward",
        ),
        WrongAnswer(
            "grad_output_made_without_graph",
            _speedup().replace(
                "    grad_output = minitorch.ones_like(fn(*inputs))\n",
                "    with minitorch.no_grad():\n"
                "        grad_output = minitorch.ones_like(fn(*inputs))\n",
            ),
            "grad_output made under no_grad, before timing (that call of fn is not timed)",
        ),
    ],
    "ex9_predict_deployment": [
        WrongAnswer(
            "routes_written_out",
            """\
def predict_deployment():
    everywhere = set(ROUTES)
    return {
        "a": everywhere,
        "b": {"script"},
        "c": {"export"},
        "d": everywhere,
        "e": {"script"},
        "f": everywhere - {"trace"},
    }
""",
            "sets built from ROUTES",
        ),
    ],
    "ex8_predict_tracing": [
        WrongAnswer(
            "the_baked_snippets_as_a_set",
            """\
def predict_tracing():
    baked_in = {"b", "e", "f", "h", "k"}  # a Python value read once at trace time
    return {key: key not in baked_in for key in SNIPPETS}
""",
            "a set of the snippets that bake a value in, and a comprehension over SNIPPETS",
        ),
    ],
}
