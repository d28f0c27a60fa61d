"""Places that bypass or defeat the forward record, each pinned by a test.

A tracer (minitorch.jit) replays the ops of one recorded call; a lazy batcher (minitorch.autobatch)
runs them later, in batches. Both see only what reaches the record. Each test below names, in its
docstring, what a naive tracer that only watched `Function.apply` would get wrong, and checks
what the record gives instead (NOTE [Forward record] in minitorch/autograd/record.py): an op,
a creation step, a read step (a guard), a write step, an alias, or an opaque step that a tracer
must refuse. This list is also the syllabus of notebook 5 ("which functions trace correctly").
"""

from __future__ import annotations

import pytest
import torch

import minitorch
from minitorch.autograd.record import (
    Alias,
    Creation,
    Op,
    Opaque,
    Read,
    ReadMismatch,
    Ref,
    Write,
    record_call,
    run,
)
from minitorch.nn import functional as F

DTYPE = torch.float64


def data(*shape: int, seed: int = 0) -> minitorch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return minitorch.as_tensor(torch.randn(shape, generator=gen, dtype=DTYPE))


def steps_of(program, kind) -> list:
    return [s for s in program.steps if isinstance(s, kind)]


def op_names(program) -> list[str]:
    return [op.function.__name__ for op in program.ops]


def assert_replay_equals_eager(fn, program, *args) -> None:
    """`run(program, *args)` gives what `fn(*args)` gives, after the same seed."""
    torch.manual_seed(123)
    replayed = run(program, *args)
    torch.manual_seed(123)
    eager = fn(*args)
    eager = eager if isinstance(eager, tuple) else (eager,)
    assert len(replayed) == len(eager)
    for r, e in zip(replayed, eager):
        torch.testing.assert_close(r._data, e._data, rtol=0, atol=0)


# -------------------------------------------------------------------------------------------------
# Random numbers
# -------------------------------------------------------------------------------------------------
def test_dropout_mask_is_drawn_by_an_op_so_a_replay_draws_a_new_one():
    """Dropout used to build its mask directly on storage: a naive tracer would see only the
    product `x * mask`, with the mask as a captured constant, and replay the first call's mask
    forever (every later step would drop the same units)."""
    fn = lambda x: F.dropout(x, 0.5)
    x = data(200)
    program, _ = record_call(fn, x)
    assert op_names(program) == ["DropoutMask", "Mul"]
    assert program.captured == []
    first, second = run(program, x)[0], run(program, x)[0]
    assert not torch.equal(first._data, second._data), "each replay draws a new mask"
    assert_replay_equals_eager(fn, program, x)


def test_dropout_keeps_pytorchs_graph():
    """The mask op must not change the eager graph: MulBackward0 with an edge for x and (None, 0)
    for the mask, as in PyTorch."""
    x = data(5).requires_grad_()
    y = F.dropout(x, 0.3)
    assert y.grad_fn.name() == "MulBackward0"
    assert [type(n).__name__ if n else None for n, _ in y.grad_fn.next_functions] == [
        "AccumulateGrad",
        None,
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda x: minitorch.randn(3, dtype=DTYPE),
        lambda x: minitorch.rand_like(x),
        lambda x: minitorch.randn_like(x),
        lambda x: minitorch.randint(0, 10, (3,)).to(DTYPE),
        lambda x: minitorch.randperm(3).to(DTYPE),
    ],
    ids=["randn", "rand_like", "randn_like", "randint", "randperm"],
)
def test_random_creation_ops_are_creation_steps_replayed_with_fresh_numbers(make):
    """`randn` & co. are not Functions. A naive tracer would find their result as an unknown
    tensor and capture it: the "random" noise would be the same on every replay."""
    fn = lambda x: x + make(x)
    x = data(3)
    program, _ = record_call(fn, x)
    assert len(steps_of(program, Creation)) == 1
    assert program.captured == []
    assert_replay_equals_eager(fn, program, x)


# -------------------------------------------------------------------------------------------------
# Creation ops that depend on the inputs
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x + x.new_zeros(3),
        lambda x: x * x.new_ones(3),
        lambda x: x + minitorch.zeros_like(x) + minitorch.ones_like(x),
        lambda x: x + minitorch.full_like(x, 2.0),
        lambda x: minitorch.tensor([x[0], x[1] * 2]),
        lambda x: minitorch.Tensor(x) * 2,
        lambda x: minitorch.as_tensor(x, dtype=torch.float32),
    ],
    ids=[
        "new_zeros",
        "new_ones",
        "like",
        "full_like",
        "tensor_of_tensors",
        "Tensor(x)",
        "as_tensor",
    ],
)
def test_creation_ops_take_their_tensor_arguments_as_slots(fn):
    """`tensor([a, b])`, `Tensor(x)`, `x.new_zeros(...)`, `*_like(x)` read their tensor
    arguments outside any Function. A naive tracer would freeze the values (or the storage) of
    the first call."""
    program, _ = record_call(fn, data(3))
    assert steps_of(program, Creation)
    assert [s for s in program.captured if s.shape != ()] == []
    assert_replay_equals_eager(fn, program, data(3, seed=1))


# -------------------------------------------------------------------------------------------------
# Tests that gave raw results: any / all / isnan / one_hot
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["any", "all", "isnan"])
def test_any_all_isnan_are_ops(name):
    """`any()`, `all()` and `isnan()` computed on storage: a naive tracer would capture their
    result, and a mask built from it would not follow new inputs."""
    fn = lambda x: minitorch.where(getattr(x > 0, name)(), x, -x)
    if name == "isnan":
        fn = lambda x: minitorch.where(x.isnan(), 0.0, x)
    program, _ = record_call(fn, data(4))
    assert "Predicate" in op_names(program)
    assert_replay_equals_eager(fn, program, data(4, seed=2))


def test_one_hot_is_an_op():
    """one_hot worked on storage: a replay would return the first call's codes."""
    fn = lambda i: F.one_hot(i, 5).to(DTYPE)
    program, _ = record_call(fn, minitorch.tensor([0, 3, 1]))
    assert "OneHot" in op_names(program)
    assert_replay_equals_eager(fn, program, minitorch.tensor([4, 4, 2]))


# -------------------------------------------------------------------------------------------------
# Arguments passed as raw storage
# -------------------------------------------------------------------------------------------------
def test_where_condition_is_an_ordinary_argument():
    """`Where` received the condition's raw storage: a naive tracer would not know where it came
    from and would freeze the first call's condition."""
    fn = lambda x, y: minitorch.where(x > 0, x, y)
    x, y = data(6), data(6, seed=1)
    program, _ = record_call(fn, x, y)
    compare, where = program.ops
    assert where.function.__name__ == "Where"
    assert where.args[0] == Ref(compare.outputs[0])  # the condition: the comparison's result
    assert_replay_equals_eager(fn, program, data(6, seed=2), y)


def test_where_and_masked_fill_keep_pytorchs_edges():
    """The condition / mask is a proper argument now, but like PyTorch the node has no edge for
    it."""
    x = data(3).requires_grad_()
    c = x > 0
    assert len(minitorch.where(c, x, x * 2).grad_fn.next_functions) == 2
    assert len(x.masked_fill(c, 0.0).grad_fn.next_functions) == 1
    x.masked_fill(c, 0.0).sum().backward()
    torch.testing.assert_close(x.grad._data, (~c._data).to(DTYPE))


@pytest.mark.parametrize(
    "fn, make_index",
    [
        (lambda x, i: x.index_select(0, i), lambda s: minitorch.tensor([s % 4, 0, 3])),
        (lambda x, i: x.gather(0, i), lambda s: minitorch.tensor([s % 4, 1, 2])),
        (lambda x, i: x.masked_fill(i > 1, 0.0), lambda s: minitorch.tensor([s, 1, 2, 3])),
        (lambda x, i: F.embedding(i, x.reshape(2, 2)), lambda s: minitorch.tensor([s % 2, 1])),
        (lambda x, i: F.cross_entropy(x.reshape(1, 4), i), lambda s: minitorch.tensor([s % 4])),
        (lambda x, i: x[i], lambda s: minitorch.tensor([s % 4, 2])),
    ],
    ids=["index_select", "gather", "masked_fill", "embedding", "cross_entropy", "x[index]"],
)
def test_storage_arguments_are_traced_back_to_their_slot(fn, make_index):
    """index_select, gather, embedding and the losses receive indices and targets as raw
    storage. The record traces a storage back to the slot it belongs to, so a replay with new
    indices uses them instead of the first call's."""
    x = data(4)
    program, _ = record_call(fn, x, make_index(0))
    index_slot = program.inputs[1]
    assert any(index_slot == arg.slot for op in program.ops for arg in _refs(op.args))
    assert_replay_equals_eager(fn, program, x, make_index(3))


def _refs(args) -> list:
    found = []
    for a in args:
        if isinstance(a, Ref):
            found.append(a)
        elif hasattr(a, "items"):
            found += _refs(a.items)
    return found


# -------------------------------------------------------------------------------------------------
# Python reading values out of tensors
# -------------------------------------------------------------------------------------------------
def branchy(x):
    if x.sum() > 0:  # bool(tensor): the branch depends on the data
        return x * 2
    return x * 3


def test_a_branch_on_a_tensor_is_a_read_that_guards_the_replay():
    """`if x.sum() > 0:` runs Python on a value. A naive tracer bakes in the branch it saw
    (torch.jit.trace does, with a warning) and silently gives wrong results for inputs that
    take the other branch. The record has a Read step; replaying where it reads differently
    raises instead."""
    positive = minitorch.tensor([1.0, 2.0], dtype=DTYPE)
    program, _ = record_call(branchy, positive)
    (read,) = steps_of(program, Read)
    assert (read.kind, read.value) == ("bool", True)
    assert_replay_equals_eager(branchy, program, positive * 3)  # same branch: fine
    with pytest.raises(ReadMismatch, match=r"read bool\(%\d+\) = True, this call reads False"):
        run(program, -positive)


@pytest.mark.parametrize(
    "kind, fn",
    [
        ("item", lambda x: x * x.sum().item()),
        ("float", lambda x: x * float(x.sum())),
        ("int", lambda x: x * int(x.sum() > 0)),
        ("tolist", lambda x: x * max(x.tolist())),
        ("numpy", lambda x: x * float(x.numpy().max())),
        ("format", lambda x: x * float(f"{x.sum():.3f}")),
        ("index", lambda x: x * [1.0, 2.0, 3.0][minitorch.tensor(2)]),
        ("len", lambda x: x * len(x)),
        ("len", lambda x: minitorch.stack([row * 2 for row in x])),
        ("repr", lambda x: x * len(repr(x.sum()))),
    ],
    ids=["item", "float", "int", "tolist", "numpy", "format", "index", "len", "iter", "repr"],
)
def test_every_value_read_is_a_read_step(kind, fn):
    """item/float/int/tolist/numpy/format/index/len/iteration/print hand a value to Python,
    which then uses it as a constant. A naive tracer would keep the first call's value."""
    x = data(3)
    program, _ = record_call(fn, x)
    assert kind in [r.kind for r in steps_of(program, Read)]
    assert_replay_equals_eager(fn, program, x)


@pytest.mark.parametrize("compare", [minitorch.equal, minitorch.allclose])
def test_equal_and_allclose_are_an_op_and_a_read(compare):
    """`minitorch.equal` / `allclose` returned a Python bool computed on storage: a branch on it
    would be baked in with no trace of a read at all."""
    fn = lambda x, y: x * 2 if compare(x, y) else x * 3
    x = data(3)
    program, _ = record_call(fn, x, x * 1.0)
    assert "WholeCompare" in op_names(program)
    assert [(r.kind, r.value) for r in steps_of(program, Read)] == [("item", True)]
    with pytest.raises(ReadMismatch):
        run(program, x, x + 1)


def test_a_zero_dim_integer_index_is_read_as_a_python_int():
    """`x[i]` with a 0-d integer tensor `i` reads i's value (as PyTorch does) and indexes with a
    Python int: a naive tracer would keep indexing the first call's position."""
    fn = lambda x, i: x[i]
    x = data(4)
    program, _ = record_call(fn, x, minitorch.tensor(1))
    assert [(r.kind, r.value) for r in steps_of(program, Read)] == [("item", 1)]
    with pytest.raises(ReadMismatch):
        run(program, x, minitorch.tensor(2))


def test_pack_padded_sequence_reads_the_lengths():
    """pack_padded_sequence turns `lengths` into index bookkeeping on storage: the packed
    layout of the first call would be frozen. The lengths are read (a guard) instead."""
    pack = minitorch.nn.utils.rnn.pack_padded_sequence
    fn = lambda x, lengths: pack(x, lengths, enforce_sorted=False).data * 2
    x = data(4, 2, 3)
    program, _ = record_call(fn, x, minitorch.tensor([4, 2]))
    assert [(r.kind, r.value) for r in steps_of(program, Read)] == [("tolist", [4, 2])]
    assert_replay_equals_eager(fn, program, data(4, 2, 3, seed=1), minitorch.tensor([4, 2]))
    with pytest.raises(ReadMismatch):
        run(program, x, minitorch.tensor([3, 2]))


# -------------------------------------------------------------------------------------------------
# In-place ops, aliases and detach
# -------------------------------------------------------------------------------------------------
def test_in_place_ops_are_write_steps():
    """An in-place op computes out of place, then copies into the tensor's storage outside any
    Function. A naive tracer would replay the computation but not the copy: the input would
    not change, and later reads of it would see old values."""

    def fn(x):
        x.mul_(2)
        return x + 1

    program, _ = record_call(fn, data(3))
    (write,) = steps_of(program, Write)
    assert write.target == program.inputs[0]
    eager_input, replay_input = data(3, seed=4), data(3, seed=4)
    (out,) = run(program, replay_input)
    eager_out = fn(eager_input)
    torch.testing.assert_close(out._data, eager_out._data)
    torch.testing.assert_close(replay_input._data, eager_input._data)  # the input was changed


def test_in_place_on_a_view_changes_its_base():
    """`y[0] = ...` and `v.mul_(2)` on a view change the base through its storage. A replay must
    write into the same storage so that every alias sees the change."""

    def fn(x):
        y = x.clone()
        y[0] = 5.0
        row = y[1:]
        row.mul_(x[0])
        return y, row

    x = data(3).requires_grad_()
    program, _ = record_call(fn, x)
    assert len(steps_of(program, Write)) >= 2
    assert_replay_equals_eager(fn, program, data(3, seed=5).requires_grad_())


def test_in_place_on_a_captured_tensor_is_visible_as_such():
    """A function that mutates a global tensor has a side effect a replay must reproduce or
    refuse. The write's target traces back to a captured slot, so a tracer can tell."""
    counter = minitorch.zeros(3, dtype=DTYPE)

    def fn(x):
        counter.add_(x)
        return x * 2

    program, _ = record_call(fn, data(3))
    (write,) = steps_of(program, Write)
    assert program.source_of(write.target).tensor is counter


def test_detach_and_data_are_detached_aliases():
    """`x.detach()` and `x.data` make new tensor objects over x's storage, outside any
    Function. A naive tracer would capture them (freezing the first call's values); one that
    merged them with x would send gradients through them."""
    fn = lambda x: x * x.detach() + x.data
    x = data(3).requires_grad_()
    program, _ = record_call(fn, x)
    aliases = steps_of(program, Alias)
    assert [(a.source, a.detached) for a in aliases] == [(program.inputs[0], True)] * 2
    assert program.captured == []
    assert_replay_equals_eager(fn, program, data(3, seed=6).requires_grad_())


def test_ops_under_no_grad_are_marked_as_not_needing_grad():
    """Inside `no_grad()` nothing is recorded for backward. A tracer deriving backward from the
    op list must not send gradients through those ops: each op keeps its needs_input_grad."""

    def fn(x):
        with minitorch.no_grad():
            scale = x.abs().max()
        return x / scale

    program, _ = record_call(fn, data(3).requires_grad_())
    needs = [op.needs_input_grad for op in program.ops]
    assert needs == [(False,), (False, False, False), (True, False)]


# -------------------------------------------------------------------------------------------------
# Things a replay cannot do: opaque steps
# -------------------------------------------------------------------------------------------------
def test_backward_inside_the_call_is_opaque_and_its_ops_are_not_forward_ops():
    """The engine runs backward formulas through Function.apply: a naive tracer would record
    them as forward ops (of tensors it never saw) and replay them as such."""
    w = minitorch.ones(3, dtype=DTYPE, requires_grad=True)

    def fn(x):
        loss = (x * w).sin().sum()
        loss.backward()
        g = minitorch.autograd.grad((x * w).sum(), [w])[0]
        return loss + g.sum()

    program, _ = record_call(fn, data(3))
    assert [s.what for s in steps_of(program, Opaque)] == ["backward()", "autograd.grad()"]
    assert op_names(program) == ["Mul", "Sin", "SumAll", "Mul", "SumAll", "SumAll", "Add"]
    with pytest.raises(RuntimeError, match="cannot replay the program: backward"):
        run(program, data(3))


def test_an_optimizer_step_inside_the_call_is_opaque():
    """Optimizers update parameters on storage: a replay of the ops alone would never train."""
    w = minitorch.nn.Parameter(minitorch.ones(3, dtype=DTYPE))
    opt = minitorch.optim.SGD([w], lr=0.1)

    def fn(x):
        loss = (x * w).sum()
        w.grad = minitorch.ones(3, dtype=DTYPE)
        opt.step()
        return loss

    program, _ = record_call(fn, data(3))
    assert [s.what for s in steps_of(program, Opaque)] == ["SGD.step()"]


def test_a_layer_built_inside_the_call_is_opaque():
    """`nn.Linear(...)` inside the function makes new random weights on every eager call; a
    replay that kept the first call's weights would differ (pytorch-behaviour.md)."""
    fn = lambda x: minitorch.nn.Linear(3, 2).double()(x)
    program, _ = record_call(fn, data(3))
    whats = {s.what for s in steps_of(program, Opaque)}
    assert {"an nn.Parameter was created", "nn.init filled a tensor in place"} <= whats


@pytest.mark.parametrize(
    "what, fn",
    [
        ("register_hook() on a tensor", lambda x: _with_hook(x * 2)),
        ("retain_grad()", lambda x: _retained(x * 2)),
        ("assignment to .data", lambda x: _data_assigned(x)),
    ],
)
def test_graph_side_effects_are_opaque(what, fn):
    """Hooks registered on intermediate tensors, retain_grad and `.data =` change state that a
    replay of the ops does not recreate."""
    program, _ = record_call(fn, data(3).requires_grad_())
    assert what in [s.what for s in steps_of(program, Opaque)]


def _with_hook(t):
    t.register_hook(lambda g: g * 2)
    return t


def _retained(t):
    t.retain_grad()
    return t


def _data_assigned(x):
    y = x * 2
    y.data = minitorch.zeros(3, dtype=DTYPE)
    return y


# -------------------------------------------------------------------------------------------------
# Library code that made tensors on storage
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", ["RNN", "GRU", "LSTM"])
def test_rnn_initial_state_is_created_not_captured(cell):
    """A recurrent layer called without `hx` made its zero state on storage: a naive tracer
    would capture a zero tensor with the first call's batch size. Only the parameters are
    captured now."""
    minitorch.manual_seed(0)
    layer = getattr(minitorch.nn, cell)(3, 4).double()
    fn = lambda x: layer(x)[0]
    program, _ = record_call(fn, data(5, 2, 3))
    assert {id(s.tensor) for s in program.captured} <= {id(p) for p in layer.parameters()}
    assert_replay_equals_eager(fn, program, data(5, 2, 3, seed=1))


@pytest.mark.parametrize("cell", ["RNNCell", "GRUCell", "LSTMCell"])
def test_rnn_cell_initial_state_is_created_not_captured(cell):
    """Same for the cells' zero state."""
    minitorch.manual_seed(0)
    layer = getattr(minitorch.nn, cell)(3, 4).double()
    fn = lambda x: layer(x)[0] if cell == "LSTMCell" else layer(x)
    program, _ = record_call(fn, data(2, 3))
    assert {id(s.tensor) for s in program.captured} <= {id(p) for p in layer.parameters()}
    assert_replay_equals_eager(fn, program, data(2, 3, seed=1))


def test_ops_run_inside_a_function_forward_are_not_recorded_separately():
    """A Function's forward may call other ops (CopySlices calls the view op): only the
    outermost op is a step, or a replay would run the inner ones twice."""

    class Double(minitorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2  # grad mode is off in forward, but apply still runs

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    program, _ = record_call(lambda x: Double.apply(x) + 1, data(3))
    assert op_names(program) == ["Double", "Add"]
    assert isinstance(program.steps[0], Op)
