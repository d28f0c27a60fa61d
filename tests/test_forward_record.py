"""The forward record (minitorch/autograd/record.py): what it captures, and that replaying it
equals eager execution.

Replays use the reference interpreter `record.run` (each op's `forward` on storage) on fresh
inputs, and are compared in float64 with eager minitorch (exactly: the same kernels run) and
with PyTorch (the same program on torch tensors). Shapes come from hypothesis.
"""

from __future__ import annotations

import dis

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import broadcast_shapes, seeds

import minitorch
from minitorch.autograd import function as function_module
from minitorch.autograd.record import (
    Alias,
    Creation,
    Op,
    Read,
    Recorder,
    Ref,
    record_call,
    run,
)

DTYPE = torch.float64


def values(shape: tuple, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=gen, dtype=DTYPE) * 4 - 2


def tensor(shape: tuple, seed: int, requires_grad: bool = False) -> minitorch.Tensor:
    return minitorch.as_tensor(values(shape, seed)).requires_grad_(requires_grad)


def assert_same(replayed, eager) -> None:
    """Replay and eager minitorch run the same kernels on the same numbers: equal exactly."""
    torch.testing.assert_close(replayed._data, eager._data, rtol=0, atol=0)


def assert_close_to_torch(mine, theirs) -> None:
    torch.testing.assert_close(mine._data, theirs.detach(), rtol=1e-10, atol=1e-12)


def copy_parameters(mine: minitorch.nn.Module, theirs: torch.nn.Module) -> None:
    """Give the PyTorch module the minitorch module's weights (same names, same shapes)."""
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(dict(mine.named_parameters())[name]._data)


# -------------------------------------------------------------------------------------------------
# MLPs and nn.Module parameters
# -------------------------------------------------------------------------------------------------
def mlp(lib, sizes: tuple) -> object:
    first, hidden, out = sizes
    layers = [lib.nn.Linear(first, hidden), lib.nn.Tanh(), lib.nn.Linear(hidden, out)]
    return lib.nn.Sequential(*layers).double()


sizes = st.tuples(*(st.integers(1, 5) for _ in range(3)))
batches = st.integers(1, 6)


@given(sizes=sizes, batch=batches, seed=seeds)
def test_mlp_replay_equals_eager_and_pytorch(sizes, batch, seed):
    minitorch.manual_seed(seed)
    model = mlp(minitorch, sizes)
    program, _ = record_call(model, tensor((batch, sizes[0]), seed))
    reference = mlp(torch, sizes)
    copy_parameters(model, reference)
    for k in range(1, 4):  # several fresh inputs
        x = values((batch, sizes[0]), seed + k)
        (replayed,) = run(program, minitorch.as_tensor(x))
        assert_same(replayed, model(minitorch.as_tensor(x)))
        assert_close_to_torch(replayed, reference(x))


def test_mlp_program_has_one_op_per_layer_and_captures_the_parameters_by_reference():
    minitorch.manual_seed(0)
    model = mlp(minitorch, (3, 4, 2))
    program, _ = record_call(model, tensor((5, 3), 0))
    assert [op.function.__name__ for op in program.ops] == ["Linear", "Tanh", "Linear"]
    captured = [slot.tensor for slot in program.captured]
    assert [id(t) for t in captured] == [id(p) for p in model.parameters()]  # the objects
    first = program.ops[0]
    assert first.args == (Ref(program.inputs[0]), Ref(1), Ref(2))
    assert first.needs_input_grad == (False, True, True)
    assert [s.origin for s in program.slots] == [
        "input",
        "captured",
        "captured",
        "op",
        "op",
        "captured",
        "captured",
        "op",
    ]
    assert program.outputs == [program.ops[-1].outputs[0]]


def test_replay_sees_an_optimizer_step_made_between_calls():
    """Parameters are captured by reference: a later replay reads their current values."""
    minitorch.manual_seed(0)
    model = mlp(minitorch, (3, 4, 2))
    opt = minitorch.optim.SGD(model.parameters(), lr=0.5)
    x = tensor((5, 3), 1)
    program, out = record_call(model, x)
    out.pow(2).sum().backward()  # the recorded call's output is an ordinary eager result
    before = run(program, x)[0]._data.clone()
    opt.step()
    (after,) = run(program, x)
    assert not torch.equal(after._data, before)
    assert_same(after, model(x))


def test_recording_does_not_change_eager_results_or_gradients():
    """The record watches: the call itself runs and builds its graph exactly as without it."""
    minitorch.manual_seed(0)
    model = mlp(minitorch, (3, 4, 2))
    x = tensor((5, 3), 2, requires_grad=True)
    _, recorded = record_call(model, x)
    recorded.sum().backward()
    grads = [p.grad._data.clone() for p in [x, *model.parameters()]]
    for p in [x, *model.parameters()]:
        p.grad = None
    plain = model(x)
    plain.sum().backward()
    assert_same(recorded, plain)
    assert recorded.grad_fn.name() == plain.grad_fn.name()
    for g, p in zip(grads, [x, *model.parameters()]):
        assert torch.equal(g, p.grad._data)


# -------------------------------------------------------------------------------------------------
# RNN cells, unrolled
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", ["RNNCell", "GRUCell", "LSTMCell"])
@given(
    steps=st.integers(1, 4),
    batch=st.integers(1, 3),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    seed=seeds,
)
def test_unrolled_rnn_cell_replay_equals_eager_and_pytorch(cell, steps, batch, sizes, seed):
    features, hidden = sizes
    minitorch.manual_seed(seed)
    mine = getattr(minitorch.nn, cell)(features, hidden).double()
    theirs = getattr(torch.nn, cell)(features, hidden).double()
    copy_parameters(mine, theirs)

    def unroll(lib, cell_module, xs):
        state = None
        for t in range(xs.shape[0]):
            state = cell_module(xs[t]) if state is None else cell_module(xs[t], state)
        return state[0] if isinstance(state, tuple) else state

    x = values((steps, batch, features), seed)
    fn = lambda xs: unroll(minitorch, mine, xs)
    program, _ = record_call(fn, tensor(x.shape, seed + 1))
    assert {id(s.tensor) for s in program.captured} <= {id(p) for p in mine.parameters()}
    (replayed,) = run(program, minitorch.as_tensor(x))
    assert_same(replayed, fn(minitorch.as_tensor(x)))
    assert_close_to_torch(replayed, unroll(torch, theirs, x))


# -------------------------------------------------------------------------------------------------
# Fan-out, diamonds and broadcasting: random expression graphs
# -------------------------------------------------------------------------------------------------
UNARY = ["tanh", "sin", "sigmoid", "exp"]
BINARY = ["add", "sub", "mul"]


@st.composite
def expression_graphs(draw):
    """Two broadcasting inputs, then 3-8 ops that each use earlier values (often the same one
    twice or more: fan-out and diamonds), with a scalar mixed in now and then."""
    shapes = draw(broadcast_shapes())
    ops = []
    for k in range(draw(st.integers(3, 8))):
        available = 2 + k
        if draw(st.booleans()):
            ops.append((draw(st.sampled_from(UNARY)), draw(st.integers(0, available - 1)), None))
        else:
            a, b = (draw(st.integers(0, available - 1)) for _ in range(2))
            scalar = draw(st.sampled_from([None, None, 0.5, -2.0]))
            ops.append((draw(st.sampled_from(BINARY)), a, scalar if scalar is not None else b))
    return shapes, ops


def evaluate(lib, ops, x, y):
    seen = [x, y]
    for name, a, b in ops:
        if b is None:
            value = getattr(lib, name)(seen[a])
        else:
            value = getattr(lib, name)(seen[a], b if isinstance(b, float) else seen[b])
        seen.append(value * 0.5)  # keep values small so exp does not overflow
    return seen[-1] + seen[2]  # the last value and the first one: one more fan-out


@given(graph=expression_graphs(), seed=seeds)
def test_random_expression_graph_replay_equals_eager_and_pytorch(graph, seed):
    (shape_x, shape_y), ops = graph
    fn = lambda x, y: evaluate(minitorch, ops, x, y)
    program, _ = record_call(fn, tensor(shape_x, seed), tensor(shape_y, seed + 1))
    assert len(program.ops) == 2 * len(ops) + 1
    assert program.captured == [] or all(s.shape == () for s in program.captured)
    x, y = values(shape_x, seed + 2), values(shape_y, seed + 3)
    (replayed,) = run(program, minitorch.as_tensor(x), minitorch.as_tensor(y))
    assert_same(replayed, fn(minitorch.as_tensor(x), minitorch.as_tensor(y)))
    assert_close_to_torch(replayed, evaluate(torch, ops, x, y))


def test_fan_out_refers_to_one_slot_several_times():
    def fn(x):
        y = x * x
        return y.sin() * y + y.cos()

    program, _ = record_call(fn, tensor((3,), 0))
    square = program.ops[0].outputs[0]
    uses = [a for op in program.ops for a in op.args if a == Ref(square)]
    assert len(uses) == 3
    assert len(program.slots) == 1 + len(program.ops)  # nothing captured, no alias


# -------------------------------------------------------------------------------------------------
# What a program holds
# -------------------------------------------------------------------------------------------------
def test_slots_describe_each_tensor_as_first_seen():
    x = tensor((2, 3), 0, requires_grad=True)
    program, _ = record_call(lambda x: x.sum(1).to(torch.float32), x)
    shapes = [(s.origin, tuple(s.shape), s.dtype, s.requires_grad) for s in program.slots]
    assert shapes == [
        ("input", (2, 3), DTYPE, True),
        ("op", (2,), DTYPE, True),
        ("op", (2,), torch.float32, True),
    ]
    assert all(s.device == x.device for s in program.slots)


def test_a_user_function_is_one_op_and_replays_through_its_forward():
    class Cube(minitorch.autograd.Function):
        @staticmethod
        def forward(ctx, x, power):
            ctx.save_for_backward(x)
            return x**power

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2, None

    fn = lambda x: Cube.apply(x, 3) + 1
    program, _ = record_call(fn, tensor((3,), 0))
    assert [op.function for op in program.ops][0] is Cube
    assert program.ops[0].args[1].value == 3
    x = tensor((3,), 1)
    assert_same(run(program, x)[0], fn(x))


def test_returning_an_input_and_tuples():
    fn = lambda x, y: (x, x + y)
    x, y = tensor((2,), 0), tensor((2,), 1)
    program, result = record_call(
        fn,
        x,
        y,
    )
    assert result[0] is x
    assert program.outputs[0] == program.inputs[0]
    out_x, out_sum = run(program, y, x)
    assert out_x is y and torch.equal(out_sum._data, (y + x)._data)


def test_non_tensor_arguments_are_constants_of_the_call():
    fn = lambda x, scale, name: getattr(x, name)() * scale
    program, _ = record_call(fn, tensor((2,), 0), 3.0, "exp")
    assert len(program.inputs) == 1
    assert [op.function.__name__ for op in program.ops] == ["Exp", "Mul"]
    assert program.ops[1].args[1].value == 3.0


def test_program_prints_as_a_listing():
    minitorch.manual_seed(0)
    model = mlp(minitorch, (3, 4, 2))

    def fn(x):
        h = model(x)
        if h.sum() > 0:
            h = h * 2
        return h + minitorch.randn(2, dtype=DTYPE) + h.detach()

    program, _ = record_call(fn, tensor((5, 3), 0))
    text = str(program)
    for expected in [
        "%0 = input float64[5, 3]",
        "%1 = captured float64[4, 3] requires_grad",
        "= Linear(%0, %1, %2)",
        "read bool(",
        "= randn(2, dtype=torch.float64)",
        "(detached)",
        "return %",
    ]:
        assert expected in text, text
    assert any(isinstance(s, Read) for s in program.steps)
    assert any(isinstance(s, Creation) for s in program.steps)
    assert any(isinstance(s, Alias) for s in program.steps)


# -------------------------------------------------------------------------------------------------
# Installing the hook: cost, nesting, errors
# -------------------------------------------------------------------------------------------------
def test_no_recorder_is_installed_outside_a_record():
    assert function_module._recorder is None
    with Recorder(tensor((2,), 0)) as recorder:
        assert function_module._recorder is recorder
    assert function_module._recorder is None


def test_apply_pays_one_global_read_when_nothing_is_recorded():
    """The hook in Function.apply is one `is not None` check of one module global."""
    code = minitorch.autograd.Function.apply.__func__.__code__
    reads = [
        i
        for i in dis.get_instructions(code)
        if i.opname == "LOAD_GLOBAL" and "_recorder" in i.argrepr
    ]
    assert len(reads) == 2  # the check, and the call in the branch taken only while recording
    first = next(i for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL")
    assert "_recorder" in first.argrepr  # before anything else


def test_a_finished_record_does_not_grow():
    x = tensor((2,), 0)
    program, _ = record_call(lambda x: x * 2, x)
    steps = len(program.steps)
    (x * 3).sin().sum().item()
    assert len(program.steps) == steps


def test_nested_records_are_refused():
    x = tensor((2,), 0)
    with Recorder(x) as outer:
        y = x * 2
        with pytest.raises(RuntimeError, match="records cannot be nested"):
            with Recorder(y):
                pass
        with pytest.raises(RuntimeError, match="records cannot be nested"):
            record_call(lambda t: t + 1, y)
        z = y + 1
    assert function_module._recorder is None
    program = outer.finish(z)
    assert [op.function.__name__ for op in program.ops] == ["Mul", "Add"]


def test_nesting_is_refused_even_while_the_outer_record_is_paused():
    """Inside an op's forward (or a backward) the hook is paused, not gone."""

    class Sneaky(minitorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with Recorder(x):
                pass
            return x * 1

    with pytest.raises(RuntimeError, match="records cannot be nested"):
        record_call(lambda x: Sneaky.apply(x), tensor((2,), 0))
    assert function_module._recorder is None


def test_an_exception_in_the_call_uninstalls_the_hook():
    def fails(x):
        x * 2
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        record_call(fails, tensor((2,), 0))
    assert function_module._recorder is None
    with pytest.raises(RuntimeError, match="mul: "):  # an op's own error, not the record's
        record_call(lambda x, y: x * y, tensor((2,), 0), tensor((3,), 0))
    assert function_module._recorder is None


def test_clear_errors_for_bad_use():
    with pytest.raises(TypeError, match="must return a tensor or a tuple of tensors.*int"):
        record_call(lambda x: 3, tensor((2,), 0))
    with pytest.raises(TypeError, match="returned an empty tuple"):
        record_call(lambda x: (), tensor((2,), 0))
    with pytest.raises(TypeError, match="inputs must be tensors, got float"):
        Recorder(1.0)
    program, _ = record_call(lambda x, y: x + y, tensor((2,), 0), tensor((2,), 1))
    with pytest.raises(TypeError, match="takes 2 input tensors, but 1 were given"):
        run(program, tensor((2,), 0))


def test_replay_builds_no_graph():
    w = tensor((3,), 0, requires_grad=True)
    program, out = record_call(lambda x: (x * w).sum(), tensor((3,), 1, requires_grad=True))
    assert out.requires_grad
    (replayed,) = run(program, tensor((3,), 2, requires_grad=True))
    assert not replayed.requires_grad and replayed.grad_fn is None


def test_ops_carry_needs_input_grad_for_a_backward_program():
    w = tensor((3,), 0, requires_grad=True)
    program, _ = record_call(lambda x: (x * w + x).sum(), tensor((3,), 1))
    assert [op.needs_input_grad for op in program.ops] == [
        (False, True),
        (True, False),
        (True, False, False, False),
    ]
    assert isinstance(program.ops[0], Op)


@pytest.mark.cuda
def test_record_and_replay_on_cuda():
    minitorch.manual_seed(0)
    model = mlp(minitorch, (3, 4, 2)).to("cuda")
    x = tensor((5, 3), 0).cuda()
    program, _ = record_call(lambda x: minitorch.nn.functional.dropout(model(x), 0.2), x)
    assert all(s.device.type == "cuda" for s in program.slots)
    x2 = tensor((5, 3), 1).cuda()
    torch.manual_seed(3)
    (replayed,) = run(program, x2)
    torch.manual_seed(3)
    assert_same(replayed, minitorch.nn.functional.dropout(model(x2), 0.2))
