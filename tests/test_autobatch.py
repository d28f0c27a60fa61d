"""minitorch.autobatch: per-sample code run in batches gives the eager per-sample results.

Every comparison runs the same per-sample function twice on the same weights and data:
eagerly, one sample after the other, and inside `autobatch.batch()`; outputs and gradients
must agree in float64 to 1e-10 (the batched kernels sum in another order than the per-sample
ones, so not always bit for bit).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
import torch

import minitorch
from minitorch import autobatch
from minitorch.autobatch.gather import SplitRows, add_rows
from minitorch.autobatch.schedulers import by_agenda, by_depth, by_dynet, check_schedule, depths
from minitorch.autograd import function as function_module
from minitorch.autograd.watch import watch_ops
from minitorch.datasets import make_expression_trees

DTYPE = torch.float64
SCHEDULERS = ("agenda", "depth")


def close(mine: minitorch.Tensor, expected: minitorch.Tensor) -> None:
    """Equal to 1e-10 in float64 (torch's default tolerance for other dtypes)."""
    tolerance = {"rtol": 1e-10, "atol": 1e-10} if mine.dtype == DTYPE else {}
    torch.testing.assert_close(mine._data, expected._data, **tolerance)


def run_both(per_sample, samples, parameters, scheduler="agenda", extra=()):
    """Run `per_sample(sample) -> tensor` over `samples` eagerly and batched; backward through
    the sum of the results; check values and gradients (of `parameters` and `extra` leaves)
    agree. Returns the batch recorder (for its stats)."""
    leaves = [*parameters, *extra]

    def run(batched):
        for p in leaves:
            p.grad = None
        if batched:
            with autobatch.batch(scheduler) as recorder:
                outputs = [per_sample(s) for s in samples]
                total = minitorch.stack([o.sum() for o in outputs]).sum()
        else:
            recorder = None
            outputs = [per_sample(s) for s in samples]
            total = minitorch.stack([o.sum() for o in outputs]).sum()
        total.backward(retain_graph=True)  # data made before (x0 * 1.0) is used twice
        return outputs, [p.grad.clone() for p in leaves], recorder

    expected, expected_grads, _ = run(batched=False)
    outputs, grads, recorder = run(batched=True)
    for mine, theirs in zip(outputs, expected, strict=True):
        assert mine.shape == theirs.shape
        close(mine, theirs)
    for mine, theirs in zip(grads, expected_grads, strict=True):
        close(mine, theirs)
    return recorder


# -------------------------------------------------------------------------------------------------
# Models: trees, sequences, random DAGs
# -------------------------------------------------------------------------------------------------
class TreeLSTM(minitorch.nn.Module):
    """A leaf runs an LSTMCell on its number; an operator node one on the operator, with the
    sum of its children's states."""

    def __init__(self, hidden: int = 6) -> None:
        super().__init__()
        self.leaf = minitorch.nn.LSTMCell(1, hidden, dtype=DTYPE)
        self.node = minitorch.nn.LSTMCell(3, hidden, dtype=DTYPE)
        self.head = minitorch.nn.Linear(hidden, 1, dtype=DTYPE)
        self.operators = {
            op: minitorch.eye(3, dtype=DTYPE)[i : i + 1] for i, op in enumerate("+-*")
        }

    def encode(self, tree) -> tuple:
        if tree.is_leaf:
            return self.leaf(minitorch.tensor([[tree.value]], dtype=DTYPE))  # zero state
        h_left, c_left = self.encode(tree.left)
        h_right, c_right = self.encode(tree.right)
        return self.node(self.operators[tree.op], (h_left + h_right, c_left + c_right))

    def forward(self, tree) -> minitorch.Tensor:
        return self.head(self.encode(tree)[0]).tanh()


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_tree_lstm_on_random_trees_matches_per_sample(scheduler):
    minitorch.manual_seed(0)
    model = TreeLSTM()
    trees, _ = make_expression_trees(24, max_depth=4, seed=3)
    recorder = run_both(model, trees, list(model.parameters()), scheduler)
    stats = recorder.stats
    assert stats.ops_recorded > 0 and stats.calls < stats.ops_recorded / 10
    assert stats.unbatched == {} and stats.forced_flushes == 0 and stats.flushes == 1


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_recurrent_cells_over_sequences_of_different_lengths(cell, scheduler):
    minitorch.manual_seed(1)
    rnn = getattr(minitorch.nn, cell)(3, 5, dtype=DTYPE)
    head = minitorch.nn.Linear(5, 2, dtype=DTYPE)
    gen = torch.Generator().manual_seed(2)
    sequences = [
        minitorch.as_tensor(torch.randn(int(n), 3, generator=gen, dtype=DTYPE))
        for n in torch.randint(1, 9, (12,), generator=gen)
    ]

    def per_sample(sequence):
        state = None
        for x in sequence.split(1):  # (1, 3) steps; the first one from a zero state
            state = rnn(x, state)
        h = state[0] if cell == "LSTMCell" else state
        return head(h).log_softmax(1)

    recorder = run_both(per_sample, sequences, [*rnn.parameters(), *head.parameters()], scheduler)
    assert recorder.stats.unbatched == {}


def test_layers_on_unbatched_inputs_embedding_and_cells():
    """1-D inputs (the cells unsqueeze and squeeze them), embedding lookups, a GRU and an LSTM
    cell stacked, a linear layer: everything batches."""
    minitorch.manual_seed(3)
    embedding = minitorch.nn.Embedding(7, 4, dtype=DTYPE)
    gru = minitorch.nn.GRUCell(4, 5, dtype=DTYPE)
    lstm = minitorch.nn.LSTMCell(5, 3, dtype=DTYPE)
    linear = minitorch.nn.Linear(3, 2, dtype=DTYPE)
    layers = [embedding, gru, lstm, linear]
    gen = torch.Generator().manual_seed(4)
    sentences = [torch.randint(0, 7, (int(n),), generator=gen) for n in (3, 1, 4, 2, 4)]

    def per_sample(tokens):
        h, state = None, None
        for token in tokens:
            x = embedding(minitorch.tensor(int(token)))  # (4,)
            h = gru(x, h)
            state = lstm(h, state)
        return linear(state[0])

    parameters = [p for layer in layers for p in layer.parameters()]
    recorder = run_both(per_sample, sentences, parameters)
    assert recorder.stats.unbatched == {}, recorder.stats.unbatched


@dataclass
class RandomProgram:
    """A random per-sample DAG of ops on 4-vectors: each op reads one or two earlier values
    (fan-out, diamonds, reuse), the result is the sum of the last three values."""

    ops: list = field(default_factory=list)

    @staticmethod
    def make(rng: random.Random, size: int) -> RandomProgram:
        program = RandomProgram()
        for i in range(size):
            name = rng.choice(sorted(OPS))
            program.ops.append((name, rng.randrange(i + 1), rng.randrange(i + 1)))
        return program

    def __call__(self, x, w, b):
        values = [x]
        for name, i, j in self.ops:
            values.append(OPS[name](values[i], values[j], w, b))
        return values[-1] + values[-2] + values[-3]


OPS = {
    "linear": lambda u, v, w, b: minitorch.nn.functional.linear(u, w, b),
    "matmul": lambda u, v, w, b: u @ w,
    "matmul_left": lambda u, v, w, b: w @ u,
    "add": lambda u, v, w, b: u + v,
    "mul": lambda u, v, w, b: u * v * 0.5,
    "sub_number": lambda u, v, w, b: 1 - u,
    "div": lambda u, v, w, b: u / (v * v + 1),
    "tanh": lambda u, v, w, b: u.tanh(),
    "sigmoid": lambda u, v, w, b: (u - v).sigmoid(),
    "relu": lambda u, v, w, b: u.relu() + v,
    "exp": lambda u, v, w, b: (u * 0.1).exp(),
    "pow": lambda u, v, w, b: u**2 * 0.25,
    "cat_slice": lambda u, v, w, b: minitorch.cat([u, v])[2:6],
    "stack_sum": lambda u, v, w, b: minitorch.stack([u, v], 1).sum(1),
    "sum_keepdim": lambda u, v, w, b: u.sum(0, keepdim=True) * v * 0.1,
    "mean_all": lambda u, v, w, b: u - u.mean(),
    "softmax": lambda u, v, w, b: u.softmax(0),
    "reshape_t": lambda u, v, w, b: u.reshape(2, 2).t().reshape(4),
    "unsqueeze": lambda u, v, w, b: (u.unsqueeze(0) + v.unsqueeze(1)).amax(0),
    "index": lambda u, v, w, b: minitorch.cat([u[2:], v[:2]]),
    "where": lambda u, v, w, b: minitorch.where(u > v, u, v * 2),
    "chunk": lambda u, v, w, b: minitorch.cat(list(reversed(u.chunk(2)))),
    "bias": lambda u, v, w, b: u + b,
}


@pytest.mark.parametrize("seed", range(6))
def test_random_dags_match_per_sample(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    w = minitorch.as_tensor(torch.randn(4, 4, generator=gen, dtype=DTYPE)).requires_grad_()
    b = minitorch.as_tensor(torch.randn(4, generator=gen, dtype=DTYPE)).requires_grad_()
    x0 = minitorch.as_tensor(torch.randn(10, 4, generator=gen, dtype=DTYPE)).requires_grad_()
    inputs = x0 * 1.0  # not leaves: per-sample data whose gradient must reach x0
    # A few program shapes shared by several samples, so that ops batch across samples.
    programs = [RandomProgram.make(rng, rng.randrange(3, 12)) for _ in range(3)]
    samples = [(programs[i % 3], inputs[i]) for i in range(10)]
    scheduler = SCHEDULERS[seed % 2]
    recorder = run_both(lambda s: s[0](s[1], w, b), samples, [w, b], scheduler, extra=[x0])
    assert recorder.stats.unbatched == {}, recorder.stats.unbatched


# -------------------------------------------------------------------------------------------------
# Schedulers
# -------------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Node:
    """A toy node for the schedulers: what they read of a `LazyOp`."""

    name: str
    signature: str | None
    producers: tuple = ()
    matmul_like: bool = False
    depth: int = 0

    def __post_init__(self):
        self.depth = max((p.depth + 1 for p in self.producers), default=0)

    def __repr__(self):
        return self.name


def chains(lengths: list[int]) -> list[Node]:
    """One chain per sample: `tanh` repeated, then a `linear` (matmul-like) at the end."""
    nodes = []
    for sample, length in enumerate(lengths):
        previous = ()
        for step in range(length):
            node = Node(f"tanh{sample}.{step}", "tanh", previous)
            nodes.append(node)
            previous = (node,)
        nodes.append(Node(f"linear{sample}", "linear", previous, matmul_like=True))
    return nodes


def test_agenda_makes_fewer_calls_than_depth_when_depths_differ():
    nodes = chains([1, 2])  # the linear ops sit at depths 1 and 2
    assert len(by_depth(nodes)) == 4  # tanh@0, tanh@1, linear@1, linear@2
    agenda = by_agenda(nodes)
    assert len(agenda) == 3  # tanh, tanh, then both linear ops together
    assert [n.name for n in agenda[-1]] == ["linear0", "linear1"]


@pytest.mark.parametrize(
    "lengths, depth_calls, agenda_calls",
    [([3, 3, 3], 4, 4), ([1, 2, 3, 4], 8, 5), ([2, 5], 7, 6)],
)
def test_batched_call_counts_on_fixed_graphs(lengths, depth_calls, agenda_calls):
    nodes = chains(lengths)
    assert len(by_depth(nodes)) == depth_calls
    assert len(by_agenda(nodes)) == agenda_calls
    assert agenda_calls <= depth_calls


def test_dynet_agenda_makes_more_calls_than_depth_when_a_signature_is_split_agenda_does_not():
    """Two samples alternate `add` (with a different shared weight each: two signatures, a1 and
    a2) and `tanh`; six more samples have one shallow `tanh`, which pulls tanh's average depth
    below the adds'. DyNet's agenda node by node then follows each chain alone; the agenda on
    whole depth levels does not."""
    nodes = []
    leaves = [Node(f"x{i}", "input") for i in range(8)]
    nodes += leaves
    for sample, add in ((0, "a1"), (1, "a2")):
        previous = leaves[sample]
        for step in range(2):
            a = Node(f"{add}.{step}", add, (previous,))
            previous = Node(f"tanh{sample}.{step}", "tanh", (a,))
            nodes += [a, previous]
    nodes += [Node(f"tanh{i}", "tanh", (leaves[i],)) for i in range(2, 8)]
    assert len(by_depth(nodes)) == 8
    assert len(by_dynet(nodes)) == 10
    assert len(by_agenda(nodes)) == 8


def tree_nodes(trees, per_operator: bool) -> list[Node]:
    """A Tree-RNN's graph as Nodes: a leaf is `linear leaf` then `tanh`; a node `cat` of its
    children, a `linear` (one per operator, or one for all), then `tanh`; then a head."""
    nodes = []

    def encode(tree, sample):
        if tree.is_leaf:
            x = Node(f"x{sample}", "input")
            nodes.append(x)
            inner = Node("leaf", "linear leaf", (x,), matmul_like=True)
        else:
            children = (encode(tree.left, sample), encode(tree.right, sample))
            both = Node("cat", "cat", children)
            nodes.append(both)
            weight = f"linear {tree.op}" if per_operator else "linear"
            inner = Node(weight, weight, (both,), matmul_like=True)
        nodes.append(inner)
        nodes.append(Node("tanh", "tanh", (inner,)))
        return nodes[-1]

    for sample, tree in enumerate(trees):
        nodes.append(Node("head", "head", (encode(tree, sample),), matmul_like=True))
    return nodes


@pytest.mark.parametrize("per_operator", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_agenda_never_makes_more_calls_than_depth_on_trees(per_operator, seed):
    trees, _ = make_expression_trees(64, seed=seed)
    nodes = tree_nodes(trees, per_operator)
    depth, agenda = by_depth(nodes), by_agenda(nodes)
    check_schedule(nodes, agenda)
    assert len(agenda) <= len(depth)
    if per_operator:  # the case issue 35 found: node by node, DyNet's rule races ahead
        assert len(by_dynet(nodes)) > 2 * len(depth)


@pytest.mark.parametrize("seed", range(20))
def test_agenda_never_makes_more_calls_than_depth_on_random_graphs(seed):
    """Each agenda batch runs whole (depth, signature) groups of `by_depth`: never more."""
    rng = random.Random(seed)
    nodes: list[Node] = []
    for i in range(rng.randrange(20, 200)):
        producers = tuple(rng.sample(nodes, k=min(len(nodes), rng.randrange(3))))
        signature = rng.choice(["add", "mul", "tanh", "cat", "linear", None])
        nodes.append(Node(f"n{i}", signature, producers, matmul_like=signature == "linear"))
    agenda = by_agenda(nodes)
    check_schedule(nodes, agenda)
    assert len(agenda) <= len(by_depth(nodes))


def test_agenda_runs_unbatchable_ready_nodes_first_and_defers_matmul_on_ties():
    a = Node("a", "add")
    m = Node("m", "matmul", matmul_like=True)
    u = Node("u", None)
    order = [n.name for batch in by_agenda([m, a, u]) for n in batch]
    assert order == ["u", "a", "m"]  # unbatchable first; add before matmul (equal depth)


@pytest.mark.parametrize("scheduler", autobatch.SCHEDULERS)
def test_schedulers_give_a_valid_order_running_every_node_once(scheduler):
    rng = random.Random(5)
    nodes: list[Node] = []
    for i in range(300):
        producers = tuple(rng.sample(nodes, k=min(len(nodes), rng.randrange(3))))
        signature = rng.choice(["add", "mul", "tanh", None])
        nodes.append(Node(f"n{i}", signature, producers, matmul_like=signature == "mul"))
    batches = autobatch.schedule(nodes, scheduler)
    check_schedule(nodes, batches)
    assert {id(n) for n in nodes} == {id(n) for b in batches for n in b}
    assert depths(nodes) == {n: n.depth for n in nodes}


def test_check_schedule_catches_a_wrong_order():
    nodes = chains([2])
    with pytest.raises(AssertionError, match="before its producer"):
        check_schedule(nodes, [[nodes[1]], [nodes[0]], [nodes[2]]])
    with pytest.raises(AssertionError, match="never run"):
        check_schedule(nodes, [[nodes[0]], [nodes[1]]])


@pytest.mark.parametrize("scheduler", autobatch.SCHEDULERS)
def test_recorded_graphs_schedule_validly_and_every_op_runs_once(scheduler, monkeypatch):
    seen = []
    original = autobatch.recorder.schedule

    def spy(ops, name):
        batches = original(ops, name)
        check_schedule(ops, batches)
        seen.append((len(ops), sum(len(b) for b in batches)))
        return batches

    monkeypatch.setattr(autobatch.recorder, "schedule", spy)
    minitorch.manual_seed(0)
    model = TreeLSTM()
    trees, _ = make_expression_trees(10, seed=1)
    recorder = run_both(model, trees, list(model.parameters()), scheduler)
    assert seen and all(recorded == scheduled for recorded, scheduled in seen)
    stats = recorder.stats
    assert stats.batched_ops + stats.ran_alone == stats.ops_recorded


def test_real_graph_agenda_needs_fewer_calls_than_depth():
    """Sequences of different lengths: the output layer sits at a different depth in each."""
    minitorch.manual_seed(0)
    cell = minitorch.nn.RNNCell(2, 3, dtype=DTYPE)
    head = minitorch.nn.Linear(3, 1, dtype=DTYPE)
    sequences = [minitorch.randn(n, 2, dtype=DTYPE) for n in (1, 2, 3, 4)]

    def per_sample(sequence):
        h = None
        for x in sequence.split(1):
            h = cell(x, h)
        return head(h)

    calls = {}
    for scheduler in SCHEDULERS:
        recorder = run_both(per_sample, sequences, [*cell.parameters(), *head.parameters()],
                            scheduler)  # fmt: skip
        calls[scheduler] = recorder.stats.calls
    assert calls["agenda"] < calls["depth"]


def test_real_tree_graph_with_a_layer_per_operator_agenda_no_more_calls_than_depth():
    """Issue 35's Tree-RNN (a `Linear` per operator, inputs made per sample): the agenda makes
    no more calls than depth, DyNet's node-by-node agenda many more; all give eager's values."""
    minitorch.manual_seed(0)
    leaf = minitorch.nn.Linear(1, 4, dtype=DTYPE)
    node = {op: minitorch.nn.Linear(8, 4, dtype=DTYPE) for op in "+-*"}
    head = minitorch.nn.Linear(4, 1, dtype=DTYPE)
    parameters = [p for m in (leaf, head, *node.values()) for p in m.parameters()]

    def encode(tree):
        if tree.is_leaf:
            return leaf(minitorch.tensor([[tree.value]], dtype=DTYPE)).tanh()
        return node[tree.op](minitorch.cat([encode(tree.left), encode(tree.right)], 1)).tanh()

    trees, _ = make_expression_trees(24, seed=4)
    calls = {}
    for scheduler in autobatch.SCHEDULERS:
        recorder = run_both(lambda t: head(encode(t)), trees, parameters, scheduler)
        calls[scheduler] = recorder.stats.calls
    assert calls["agenda"] <= calls["depth"] < calls["dynet"]


# -------------------------------------------------------------------------------------------------
# Flushes, unsupported ops, stats
# -------------------------------------------------------------------------------------------------
def test_a_value_read_inside_the_block_flushes_and_stays_correct():
    minitorch.manual_seed(0)
    w = minitorch.randn(3, 3, dtype=DTYPE, requires_grad=True)
    xs = [minitorch.randn(3, dtype=DTYPE) for _ in range(5)]

    def per_sample(x):
        h = (x @ w).tanh()
        if h.sum().item() > 0:  # a value read: the pending ops run now
            h = h * 2
        return (h @ w).sigmoid()

    recorder = run_both(per_sample, xs, [w])
    stats = recorder.stats
    assert stats.forced_flushes == 5  # one per sample: each read needs that sample's value now
    assert stats.flushes == 6  # and the last sample's ops after its read, at the end
    assert all(reason.startswith("item() at test_autobatch.py:") for reason in stats.flush_reasons)


def test_reads_that_need_no_value_do_not_flush():
    x = minitorch.randn(4, 3)
    with autobatch.batch() as recorder:
        y = x * 2
        assert len(y) == 4 and y.shape == (4, 3) and y.dtype == x.dtype
        assert y.requires_grad is False and y.grad_fn is None
    assert recorder.stats.forced_flushes == 0 and recorder.stats.flushes == 1
    close(y, x * 2)


def test_unsupported_ops_run_alone_and_are_reported():
    minitorch.manual_seed(0)
    w = minitorch.randn(3, 4, dtype=DTYPE, requires_grad=True)
    xs = [minitorch.randn(3, dtype=DTYPE) for _ in range(4)]
    targets = [minitorch.tensor([i % 4]) for i in range(4)]

    def per_sample(sample):
        x, target = sample
        logits = (x @ w).unsqueeze(0)
        return minitorch.nn.functional.cross_entropy(logits, target)  # no batching rule

    recorder = run_both(per_sample, list(zip(xs, targets)), [w])
    assert recorder.stats.unbatched == {"NllLoss: no batching rule": 4}
    assert "unbatched: 4 x NllLoss: no batching rule" in str(recorder.stats)


def test_ops_whose_arguments_a_rule_cannot_batch_are_reported_with_the_reason():
    xs = [minitorch.randn(3, 2, 4, dtype=DTYPE) for _ in range(3)]
    ys = [minitorch.randn(4, 5, dtype=DTYPE) for _ in range(3)]
    with autobatch.batch() as recorder:
        out = [x @ y for x, y in zip(xs, ys)]  # 3-D @ 2-D, both per sample
    for mine, x, y in zip(out, xs, ys):
        close(mine, x @ y)
    (reason,) = recorder.stats.unbatched
    assert reason.startswith("MatMul: per-sample operands that are not matrices")


@pytest.mark.parametrize("pending_mask", [True, False])
def test_an_op_whose_shape_depends_on_values_runs_at_once(pending_mask):
    xs = [minitorch.tensor([1.0, -2.0, 3.0]), minitorch.tensor([-1.0, 5.0, 6.0])]
    masks = [x > 0 for x in xs]
    with autobatch.batch() as recorder:
        # x[mask]: how many elements come out depends on the mask's values
        picked = [(x * 2)[(x * 2) > 0 if pending_mask else mask] for x, mask in zip(xs, masks)]
    assert [p.tolist() for p in picked] == [[2.0, 6.0], [10.0, 12.0]]
    (reason, *_) = recorder.stats.flush_reasons
    if pending_mask:
        assert reason == "Index: the storage of a pending tensor"
    else:
        assert reason.startswith("Index: its output shape could not be found without running it")


def test_stats_count_what_happened():
    minitorch.manual_seed(0)
    lin = minitorch.nn.Linear(4, 4)
    xs = [minitorch.randn(4) for _ in range(8)]
    with autobatch.batch("depth") as recorder:
        ys = [lin(x).relu() for x in xs]
    stats = autobatch.stats()
    assert stats is recorder.stats and stats.scheduler == "depth"
    assert stats.ops_recorded == 16 and stats.calls == 2 and stats.largest_batch == 8
    assert stats.batched_ops == 16 and stats.flushes == 1 and stats.forced_flushes == 0
    assert stats.gather_bytes == 8 * 4 * 4  # the 8 inputs stacked; relu reads linear in place
    assert stats.record_seconds > 0 and stats.schedule_seconds > 0 and stats.run_seconds > 0
    assert stats.overhead_seconds == stats.record_seconds + stats.schedule_seconds
    for y, x in zip(ys, xs):
        close(y, lin(x).relu())


def test_kept_schedules_show_which_ops_ran_together():
    w = minitorch.randn(3, 3, requires_grad=True)
    lengths = (1, 3)
    with autobatch.batch("depth", keep_schedules=True) as recorder:
        for n in lengths:
            h = minitorch.zeros(3)
            for _ in range(n):
                h = (h @ w).tanh()
    (batches,) = recorder.schedules  # one flush
    check_schedule([op for b in batches for op in b], batches)
    assert [(b[0].kind.name, len(b)) for b in batches] == [
        ("full", 2),  # minitorch.zeros(3) of each sample: one creation (rules.Creation)
        ("MatMul", 2), ("Tanh", 2), ("MatMul", 1), ("Tanh", 1), ("MatMul", 1), ("Tanh", 1)
    ]  # fmt: skip
    assert [op.row for op in batches[1]] == [0, 1] and batches[3][0].row is None


def test_shared_ops_run_once_and_are_reused():
    minitorch.manual_seed(0)
    cell = minitorch.nn.RNNCell(2, 3)
    xs = [minitorch.randn(1, 2) for _ in range(5)]
    with autobatch.batch() as recorder:
        for x in xs:
            cell(x)  # each call computes weight_ih.t(), bias_ih + bias_hh and weight_hh.t()
    assert recorder.stats.shared_ops == 3 and recorder.stats.shared_reused == 12


# -------------------------------------------------------------------------------------------------
# Autograd: rows, hooks, aliases, create_graph, grad modes
# -------------------------------------------------------------------------------------------------
def test_results_are_rows_of_a_batched_result_with_working_autograd():
    w = minitorch.randn(3, 3, requires_grad=True)
    xs = [minitorch.randn(3) for _ in range(4)]
    with autobatch.batch():
        ys = [(x @ w).tanh() for x in xs]
        assert ys[0].grad_fn.name() == "TanhBackward0"  # what eager mode shows
    assert ys[0].grad_fn.name() == "SplitRowsBackward" and ys[0]._base is ys[1]._base
    assert ys[1].untyped_storage().data_ptr() == ys[0].untyped_storage().data_ptr()
    ys[2].sum().backward()  # one row: only that sample's gradient
    expected = minitorch.autograd.grad((xs[2] @ w).tanh().sum(), [w])[0]
    close(w.grad, expected)


def test_hooks_and_retain_grad_registered_inside_the_block_survive():
    w = minitorch.randn(3, requires_grad=True)
    xs = [minitorch.randn(3) for _ in range(3)]
    seen = []
    with autobatch.batch():
        ys = [x * w for x in xs]
        ys[1].register_hook(lambda g: seen.append(g.clone()))
        ys[2].retain_grad()
        total = minitorch.stack([y.sum() for y in ys]).sum()
    total.backward()
    assert len(seen) == 1
    close(seen[0], minitorch.ones(3))
    close(ys[2].grad, minitorch.ones(3))


def test_detach_of_a_pending_tensor_shows_its_value():
    xs = [minitorch.randn(3) for _ in range(3)]
    with autobatch.batch() as recorder:
        ys = [x.exp() for x in xs]
        kept = [y.detach() for y in ys]
        del ys
    for k, x in zip(kept, xs):
        close(k, x.exp())
    assert recorder.stats.forced_flushes == 0 and recorder.stats.flushes == 1


def test_in_place_ops_inside_the_block_run_at_once_and_stay_correct():
    xs = [minitorch.randn(3) for _ in range(3)]
    with autobatch.batch() as recorder:
        ys = []
        for x in xs:
            y = x * 2
            y.add_(1)  # needs y's value now: a flush, then the add runs eagerly
            ys.append(y.tanh())
    for y, x in zip(ys, xs):
        close(y, (x * 2 + 1).tanh())
    assert recorder.stats.forced_flushes == 3 and recorder.stats.flushes == 4


@pytest.mark.parametrize("model", ["chain", "dag"])
def test_create_graph_through_batched_ops_gives_second_derivatives(model):
    gen = torch.Generator().manual_seed(7)
    w = minitorch.as_tensor(torch.randn(4, 4, generator=gen, dtype=DTYPE)).requires_grad_()
    b = minitorch.as_tensor(torch.randn(4, generator=gen, dtype=DTYPE)).requires_grad_()
    xs = [minitorch.as_tensor(torch.randn(4, generator=gen, dtype=DTYPE)) for _ in range(6)]
    rng = random.Random(7)
    programs = [RandomProgram.make(rng, 8) for _ in range(2)]  # rows gathered from many batches

    def per_sample(i, x):
        if model == "chain":
            return ((x @ w).tanh() ** 2).sum()
        return programs[i % 2](x @ w + b, w, b).sum()

    def gradients(batched):
        if batched:
            with autobatch.batch():
                total = minitorch.stack([per_sample(i, x) for i, x in enumerate(xs)]).sum()
        else:
            total = minitorch.stack([per_sample(i, x) for i, x in enumerate(xs)]).sum()
        grad_w, grad_b = minitorch.autograd.grad(
            total, [w, b], create_graph=True, allow_unused=True
        )
        size = (grad_w**2).sum() + (0 if grad_b is None else (grad_b**2).sum())  # |grad|^2
        second = minitorch.autograd.grad(size, [w, b], allow_unused=True)
        return [g for g in (grad_w, grad_b, *second) if g is not None]

    expected = gradients(False)
    assert len(expected) == (2 if model == "chain" else 4)
    for mine, theirs in zip(gradients(True), expected, strict=True):
        close(mine, theirs)


def test_no_grad_inside_the_block_records_no_graph():
    w = minitorch.randn(3, requires_grad=True)
    xs = [minitorch.randn(3) for _ in range(3)]
    with autobatch.batch():
        with minitorch.no_grad():
            ys = [x * w for x in xs]
        zs = [x * w for x in xs]
    assert all(not y.requires_grad and y.grad_fn is None for y in ys)
    assert all(z.requires_grad for z in zs)
    for y, z, x in zip(ys, zs, xs):
        close(y, x * w.detach())
        close(z, y)


def test_backward_inside_the_block_flushes_first():
    w = minitorch.randn(3, requires_grad=True)
    xs = [minitorch.randn(3) for _ in range(3)]
    with autobatch.batch() as recorder:
        total = minitorch.stack([(x * w).sum() for x in xs]).sum()
        total.backward()
    close(w.grad, sum(xs[1:], xs[0]))
    assert recorder.stats.flush_reasons == ["backward()"]
    assert recorder.stats.flushes == recorder.stats.forced_flushes == 1  # nothing left at the end


def test_flushes_count_as_exercise_7_of_notebook_6_counts_them():
    """One meaning of "flush": every time the pending ops are scheduled and run, the one at the
    end of the block included; `forced_flushes` are the ones a read forced inside it."""
    xs = [minitorch.randn(3) for _ in range(4)]
    for read, flushes, forced in ((False, 1, 0), (True, 4, 4)):
        with autobatch.batch() as recorder:
            for x in xs:
                y = (x * 2).tanh().sum()
                if read:
                    y.item()  # nothing is pending after the last read: no flush at the end
        assert (recorder.stats.flushes, recorder.stats.forced_flushes) == (flushes, forced)
    assert "flushes             4 (4 forced inside the block" in str(recorder.stats)


def test_an_error_inside_the_block_leaves_no_recorder_behind():
    with pytest.raises(ZeroDivisionError):
        with autobatch.batch():
            minitorch.randn(3) * 2
            raise ZeroDivisionError
    assert function_module._recorder is None
    assert (minitorch.ones(2) * 2).tolist() == [2.0, 2.0]


def test_shape_errors_surface_at_the_op_that_made_them():
    with autobatch.batch():
        with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
            minitorch.randn(2, 3) @ minitorch.randn(4, 5)


def test_unknown_scheduler_is_refused():
    with pytest.raises(ValueError, match="unknown scheduler 'fifo'"):
        autobatch.batch("fifo")


# -------------------------------------------------------------------------------------------------
# Nesting
# -------------------------------------------------------------------------------------------------
def test_a_batch_inside_a_batch_is_refused():
    with autobatch.batch():
        with pytest.raises(RuntimeError, match="cannot start inside another autobatch.batch"):
            with autobatch.batch():
                pass
    assert function_module._recorder is None


def test_batch_and_jit_trace_do_not_nest():
    import minitorch.jit

    traced = minitorch.jit.trace(lambda x: x * 2)
    x = minitorch.randn(3)
    with autobatch.batch():
        with pytest.raises(RuntimeError, match="records cannot be nested"):
            traced(x)

    def batched(x):
        with autobatch.batch():
            return x * 2

    with pytest.raises(RuntimeError, match="cannot start inside a forward record"):
        minitorch.jit.trace(batched)(x)
    assert function_module._recorder is None


def test_batch_inside_a_watch_is_refused():
    with watch_ops(lambda *args: None):
        with pytest.raises(RuntimeError, match=r"inside a forward record \(watch_ops"):
            autobatch.batch().__enter__()


# -------------------------------------------------------------------------------------------------
# The row gathers' backward (gather.py)
# -------------------------------------------------------------------------------------------------
SPLIT_CASES = {  # rows of the source, then the groups of SplitRows; None: a piece left unused
    "distinct rows": (9, [[5, 1, 3], [0, 7], None]),
    "a permutation of all rows": (6, [[4, 2, 0], [1, 3, 5]]),
    "a row read twice in a group": (5, [[2, 2, 4, 2], [0]]),
    "a row read by two groups": (5, [[1, 3], [3, 0, 1], [3]]),
    "empty groups": (4, [[], [3, 1], slice(2, 2), []]),
    "rows, slices and indices mixed": (6, [1, slice(0, 3), [0, 4, 4], slice(4, 6), 4]),
    "one index group": (7, [[6, 0, 3]]),
}


@pytest.fixture(params=[1, 2], ids=["1 thread", "2 threads"])
def torch_threads(request):
    """Run a test with 1 and with 2 torch threads (add_rows takes another path with one)."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("case", SPLIT_CASES)
def test_split_rows_backward_adds_each_gradient_row_where_it_came_from(case, dtype, torch_threads):
    """SplitRows' backward against PyTorch's indexing backward: the gradient of each source row
    is the sum of the gradients of every piece row cut from it (unused pieces give none)."""
    rows, groups = SPLIT_CASES[case]
    gen = torch.Generator().manual_seed(len(case))
    data = torch.randn(rows, 2, 3, generator=gen, dtype=dtype)
    groups = [g if g is None or isinstance(g, int | slice) else torch.tensor(g, dtype=torch.long)
              for g in groups]  # fmt: skip
    used = [g for g in groups if g is not None]
    weights = [torch.randn(data[g].shape, generator=gen, dtype=dtype) for g in used]
    expected = data.clone().requires_grad_()
    sum((expected[g] * w).sum() for g, w in zip(used, weights)).backward()

    source = minitorch.as_tensor(data.clone()).requires_grad_()
    with_unused = [g if g is not None else torch.tensor([0]) for g in groups]
    pieces = SplitRows.apply(source, tuple(with_unused))
    mine = [p for p, g in zip(pieces, groups) if g is not None]
    total = sum((p * minitorch.as_tensor(w)).sum() for p, w in zip(mine, weights))
    total.backward()
    tolerance = {"rtol": 1e-12, "atol": 1e-12} if dtype == torch.float64 else {}
    torch.testing.assert_close(source.grad._data, expected.grad, **tolerance)


def test_add_rows_matches_index_add_on_random_groups(torch_threads):
    gen = torch.Generator().manual_seed(0)
    for _ in range(50):
        rows = int(torch.randint(1, 30, (1,), generator=gen))
        listed = []
        for _ in range(int(torch.randint(1, 5, (1,), generator=gen))):
            group = torch.randint(0, rows, (int(torch.randint(0, 12, (1,), generator=gen)),),
                                  generator=gen)  # fmt: skip
            listed.append((torch.randn(len(group), 4, generator=gen, dtype=DTYPE), group))
        expected = torch.zeros(rows, 4, dtype=DTYPE)
        for grad, group in listed:
            expected.index_add_(0, group, grad)
        torch.testing.assert_close(add_rows(torch.Size((rows, 4)), listed), expected,
                                   rtol=1e-12, atol=1e-12)  # fmt: skip


def test_batched_backward_makes_no_index_add_with_two_threads(monkeypatch):
    """torch's CPU index_add_/scatter_add_ on rows enters several parallel regions per call,
    which stall with two threads on a busy machine (NOTE [Scatter-add without index_add_])."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)  # what add_rows asks

    def refuse(*args, **kwargs):
        raise AssertionError("the batched backward called a parallel scatter-add")

    minitorch.manual_seed(0)
    model = TreeLSTM()
    trees, _ = make_expression_trees(16, seed=2)
    for name in ("index_add_", "scatter_add_", "index_put_"):
        monkeypatch.setattr(torch.Tensor, name, refuse)
    for scheduler in autobatch.SCHEDULERS:
        model.zero_grad()
        with autobatch.batch(scheduler):
            total = minitorch.stack([model(t).sum() for t in trees]).sum()
        total.backward()
