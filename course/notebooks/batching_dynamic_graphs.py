# ---
# jupyter:
#   jupytext:
#     formats: py:percent,../source/batching_dynamic_graphs//ipynb
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook 6: batching dynamic graphs
#
# Notebook 3 ran models whose graph differs for every sample (trees, sequences of different
# lengths) one sample at a time, or batched them by hand with padding and masks. DyNet
# (Neubig, Goldberg and Dyer 2017, "On-the-fly operation batching in dynamic computation
# graphs") showed that a library can batch such graphs **automatically**: record each
# sample's graph without running it, group the nodes that can run together, and run each
# group as one op on stacked rows.
#
# After this notebook you will be able to:
#
# - say, measured, why per-sample graphs are slow and what padding wastes;
# - explain why `torch.func.vmap` cannot batch samples of different structure;
# - decide which nodes may share a batched call (a **signature**), and schedule a graph by
#   depth and with DyNet's **agenda**, and count the calls each makes;
# - write the **gather** op that collects rows for a batch, with its scatter-add backward;
# - batch a tree model level by level, with the gradients of the per-sample model, and
#   measure what it saves;
# - predict what reading a value in the middle of a graph (`.item()`) costs a batcher.
#
# There are **7 graded exercises (25 points)**. Each has visible tests you can run (plain
# asserts that say what went wrong); more tests run when your notebook is graded. Write
# your answers where it says `# YOUR CODE HERE` and delete the `raise NotImplementedError()`.
# "Run All" runs every cell: a test or demo whose exercise is not written yet says so in one
# line and lets the cells after it run.

# %%
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch
from graphviz import Digraph

import minitorch
import minitorch.nn.functional as F
from minitorch import nn
from minitorch.autograd.watch import watch_ops
from minitorch.datasets import ExprTree, make_expression_trees
from minitorch.notebook import exercise

torch.manual_seed(0)
_ = minitorch.manual_seed(0)  # (the generator it returns is not shown)

# %% [markdown]
# ## 1. Why per-sample graphs are slow
#
# Our running example is a **tree model** over arithmetic expressions such as
# `((0.5 * -0.2) + 0.9)`: a leaf's state is `tanh(leaf(value))`; an operator's state is
# `tanh(cell([left state, right state]) + op_vector[op])`, and the prediction is
# `out(root state)`. Every tree has its own shape, so the model builds a different graph for
# every sample. The cell below is used by the exercises too.


# %% nbgrader={"grade_id": "tree_model", "locked": true}
OPS = "+-*"  # the operators of make_expression_trees; op_vector has one row per operator


class TreeModel(nn.Module):
    """A recursive model over ExprTree: `forward(tree)` is the prediction, shape [1]."""

    def __init__(self, hidden=16):
        super().__init__()
        self.leaf = nn.Linear(1, hidden)
        self.cell = nn.Linear(2 * hidden, hidden)
        self.op_vector = nn.Parameter(minitorch.randn(len(OPS), hidden) * 0.5)
        self.out = nn.Linear(hidden, 1)

    def encode(self, tree):
        """The state of `tree`'s root, shape [1, hidden]."""
        if tree.is_leaf:
            value = minitorch.tensor([[tree.value]], dtype=self.out.weight.dtype)
            return self.leaf(value).tanh()
        both = minitorch.cat([self.encode(tree.left), self.encode(tree.right)], dim=1)
        return (self.cell(both) + self.op_vector[OPS.index(tree.op)]).tanh()

    def forward(self, tree):
        return self.out(self.encode(tree)).reshape(1)


def index_rows(source, index):
    """The rows `index` of a 2-D `source`: minitorch's own gather (the tests use it)."""
    return source.index_select(0, index)


# %% [markdown]
# Each op of each sample is one Python call into minitorch, and backward walks each node
# again. Here is how many ops one forward pass over 64 trees records:

# %%
# NBVAL_CHECK_OUTPUT
trees, targets = make_expression_trees(64, seed=1)
model = TreeModel(hidden=16).double()
counted = []
with watch_ops(lambda function, args, outputs: counted.append(function.__name__), None):
    predictions = minitorch.cat([model(tree) for tree in trees])
nodes = sum(tree.size() for tree in trees)
print(f"{len(trees)} trees, {nodes} tree nodes, {len(counted)} ops recorded")
print("most frequent ops:", sorted(set(counted), key=lambda name: (-counted.count(name), name))[:5])


# %% [markdown]
# Each of those ops works on one row of 16 or 32 numbers, so its cost is almost all
# **per-op overhead**. The same cell applied to all rows at once is a single call:


# %%
@contextmanager
def one_torch_thread():
    """Run a timing with one torch thread (steadier when other processes share the cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def best_times(runs, repeat=5):
    """The best wall-clock time of each function in `runs`, in seconds: they take turns,
    `repeat` rounds, with one torch thread, so a busy moment slows them all alike."""
    times = [[] for _ in runs]
    with one_torch_thread():
        for _ in range(repeat):
            for run, kept in zip(runs, times):
                start = time.perf_counter()
                run()
                kept.append(time.perf_counter() - start)
    return [min(kept) for kept in times]


rows = minitorch.randn(nodes, 32, dtype=torch.float64)
one_by_one, all_at_once = best_times(
    [lambda: [model.cell(rows[i : i + 1]) for i in range(nodes)], lambda: model.cell(rows)]
)
(step,) = best_times([lambda: minitorch.cat([model(t) for t in trees]).sum().backward()], 3)
print(f"cell on {nodes} rows, one call per row: {one_by_one * 1e3:6.2f} ms")
print(f"cell on {nodes} rows, one call:         {all_at_once * 1e3:6.2f} ms")
print(f"per-sample forward + backward of the model: {step * 1e3:.1f} ms, ")
print(f"    that is {step / len(counted) * 1e6:.1f} us per recorded op")

# %% [markdown]
# A per-sample model pays the overhead once per op **per sample**: the time grows with the
# number of nodes, not with the arithmetic. Batching is how every framework amortises it.
#
# ## 2. What padding wastes
#
# The usual way to batch samples of different sizes is to **pad** them to the largest: a
# sequence to the longest length, a tree to the complete tree of the largest depth. Then
# every sample has the same graph, and one batched op per step does the work. The padded
# positions are computed and thrown away:

# %%
# NBVAL_CHECK_OUTPUT
rng = random.Random(0)
lengths = [rng.randint(5, 50) for _ in range(256)]
padded_steps = len(lengths) * max(lengths)
print(f"256 sequences of 5-50 steps: {sum(lengths)} real steps, {padded_steps} padded")
print(f"    {1 - sum(lengths) / padded_steps:.0%} of the padded work is wasted")
tree_nodes = sum(t.size() for t in trees)
complete = len(trees) * (2 ** (max(t.depth() for t in trees) + 1) - 1)
print(f"64 trees: {tree_nodes} real nodes, {complete} in complete trees of the largest depth")
print(f"    {1 - tree_nodes / complete:.0%} of the padded work is wasted")

# %% [markdown]
# **Packing** (what `pack_padded_sequence` does) skips the padded positions: with the
# sequences sorted by length, step `t` runs only the first `alive[t]` rows, those still
# running. It makes the same number of calls as padding, on fewer rows. Below, an LSTM cell
# runs over the 256 sequences, forward only, padded and packed taking turns (3 rounds, the
# best of each, one torch thread), for a small and a larger hidden size:

# %%
by_length = sorted(lengths, reverse=True)
alive = [sum(n > t for n in by_length) for t in range(max(lengths))]  # rows running at step t


def run_lstm(cell, inputs, packed):
    """The cell over all sequences, forward only: every row at every step, or `alive[t]`."""
    h = c = minitorch.zeros(len(by_length), cell.hidden_size)
    with minitorch.no_grad():
        for t, running in enumerate(alive):
            rows = running if packed else len(by_length)
            h, c = cell(inputs[:rows, t], (h[:rows], c[:rows]))


print(f"packed runs {sum(alive) / (len(alive) * len(by_length)):.0%} of the padded rows")
inputs = minitorch.randn(len(by_length), len(alive), 8)
for hidden in (32, 128):
    lstm = nn.LSTMCell(8, hidden)
    runs = [lambda p=p, cell=lstm: run_lstm(cell, inputs, p) for p in (False, True)]
    padded_time, packed_time = best_times(runs, 3)
    share = packed_time / padded_time
    print(f"hidden {hidden:3}: padded {padded_time * 1e3:5.1f} ms, packed "
          f"{packed_time * 1e3:5.1f} ms: packed takes {share:.0%} of the time")  # fmt: skip

# %% [markdown]
# Packing makes the same calls on fewer rows: it saves arithmetic, not the per-op overhead
# of each call. How much time that saves depends on how much of a step is arithmetic: with
# 32 hidden units a step is mostly overhead, which packing keeps; with 128, arithmetic is
# most of it (compare the two sizes above). For sequences, padding and packing work. A
# tree's shape, though, decides **which** nodes combine, not only how many: a padded tree
# is a different tree. And padding must be written by hand for every model.
#
# ## 3. Why `vmap` cannot batch different structures
#
# `torch.func.vmap(f)` runs `f` once, on a batch dimension it hides from `f`: every sample
# goes through the **same** ops. Samples of different shapes cannot even be stacked, and a
# Python `if` on a sample's value is refused, since one run of `f` cannot take both sides:


# %%
# NBVAL_CHECK_OUTPUT
def double_if_positive(x):
    if x.sum() > 0:  # a decision per sample: a different graph per sample
        return x * 2
    return x


for name, run in [
    ("stack", lambda: torch.stack([torch.ones(3), torch.ones(5)])),
    ("vmap", lambda: torch.func.vmap(double_if_positive)(torch.randn(4, 3))),
]:
    try:
        run()
    except RuntimeError as error:
        print(f"{name}: {str(error).splitlines()[0][:100]}")

# %% [markdown]
# A tree's recursion branches on the sample's **structure**, not on a tensor's value:
# `tree.is_leaf` and the number of children are Python data, so vmap raises nothing there,
# yet it has no way to run them either: one run of `f` follows one tree's recursion, while
# each sample needs its own number of `cell` calls, wired its own way. vmap batches **one**
# graph over many samples. Dynamic models need the opposite: many graphs, with the ops
# they share found and batched after they were written down.
#
# ## 4. DyNet's idea: record, group, run
#
# 1. Run each sample's ordinary code **lazily**: record its ops as nodes, compute nothing.
# 2. Give each node a **signature**: nodes with equal signatures can run as one batched call
#    (the same op, the same parameters, the same per-sample shapes).
# 3. **Schedule**: put the nodes into batches, in an order in which each node runs after the
#    nodes it reads.
# 4. Run each batch as one op on stacked rows; **gather** the rows each batch reads from the
#    batches that made them.
#
# The exercises work on a small graph structure, defined below: a graph is a list of
# `Node`s, all samples together, where `nodes[i].id == i` and a node's `args` are the ids of
# earlier nodes. `sequence_graph(lengths)` writes down a recurrent model over sequences of
# the given lengths: per sample an input, `length` times `linear(W)` then `tanh`, then
# `linear(V)` and a `sum` (the loss).


# %% nbgrader={"grade_id": "graph_types", "locked": true}
@dataclass(frozen=True)
class Node:
    """One op of one sample's graph: `op(*args)`, args being the ids of earlier nodes."""

    id: int  # its position in the graph's list of nodes
    sample: int  # which sample's graph it belongs to
    op: str  # "input", "linear", "tanh", "add", "cat", "sum", ...
    args: tuple = ()  # ids of the nodes whose results it reads, in order
    shape: tuple = ()  # the shape of its result for one sample
    param: str | None = None  # the name of the shared parameter it uses, if any
    attrs: tuple = ()  # constant arguments, e.g. (1,) for cat along dim 1


MATMUL_LIKE = {"linear", "matmul"}  # ops that gain most from a large batch


def node_depths(nodes):
    """depth[i] of every node: 0 without args, else 1 + the largest depth of its args."""
    depth = []
    for node in nodes:
        depth.append(1 + max(depth[a] for a in node.args) if node.args else 0)
    return depth


def add_node(nodes, sample, op, args=(), shape=(), param=None, attrs=()):
    """Append a Node to the graph `nodes` and return its id."""
    nodes.append(Node(len(nodes), sample, op, tuple(args), tuple(shape), param, tuple(attrs)))
    return len(nodes) - 1


def sequence_graph(lengths, hidden=4):
    """The graph of a recurrent model over sequences of the given lengths (one per sample)."""
    nodes = []
    for sample, length in enumerate(lengths):
        h = add_node(nodes, sample, "input", shape=(hidden,))
        for _ in range(length):
            h = add_node(nodes, sample, "linear", [h], (hidden,), param="W")
            h = add_node(nodes, sample, "tanh", [h], (hidden,))
        out = add_node(nodes, sample, "linear", [h], (1,), param="V")
        add_node(nodes, sample, "sum", [out], ())
    return nodes


def op_and_param(node, nodes):
    """A signature that is enough for sequence_graph, where all shapes agree (tests use it)."""
    return (node.op, node.param)


# %% [markdown]
# The graph of two sequences, of lengths 1 and 2:

# %%
# NBVAL_CHECK_OUTPUT
for node in sequence_graph([1, 2]):
    print(node)


# %% [markdown]
# Here are three sequences, of lengths 1, 2 and 3, one column each. Before scheduling, every
# node is its own call: 21 of them. Coloured by batch (one colour per batched call), a
# scheduler that groups nodes **by depth** needs 13 calls; DyNet's **agenda** needs 9: it
# waits with the output layer `linear V` until every sample has reached it. (The pictures use
# `minitorch.autobatch`'s schedulers; in exercises 2 and 3 you write both. Every node here
# has the same shapes, so the op and its parameter suffice as signature for the picture.)

# %%
PALETTE = [
    "lightblue", "palegreen", "lightpink", "khaki", "plum", "lightsalmon", "paleturquoise",
    "wheat", "lightsteelblue", "darkseagreen1", "thistle", "peachpuff", "lightcyan",
]  # fmt: skip


def draw(nodes, batches, title):
    """Each sample's graph in a column; the nodes of batch k filled with colour k."""
    colour = {i: PALETTE[k % len(PALETTE)] for k, batch in enumerate(batches) for i in batch}
    dot = Digraph(graph_attr=dict(label=title, labelloc="t", rankdir="TB", size="4,5"))
    dot.attr("node", shape="box", style="filled,rounded", fontsize="11", height="0.3")
    for sample in sorted({n.sample for n in nodes}):
        with dot.subgraph(name=f"cluster_{sample}") as box:
            box.attr(label=f"sample {sample}", color="grey")
            for n in nodes:
                if n.sample == sample:
                    label = n.op if n.param is None else f"{n.op} {n.param}"
                    box.node(str(n.id), label, fillcolor=colour.get(n.id, "white"))
    for n in nodes:
        for a in n.args:
            dot.edge(str(a), str(n.id))
    return dot


class PictureOp:
    """What minitorch.autobatch's schedulers read of an op, for a Node."""

    def __init__(self, node, ops, depth):
        self.node, self.depth = node, depth[node.id]
        self.signature = op_and_param(node, ops)
        self.producers = [ops[a] for a in node.args]
        self.matmul_like = node.op in MATMUL_LIKE


def library_schedule(nodes, scheduler):
    ops, depth = [], node_depths(nodes)
    for node in nodes:
        ops.append(PictureOp(node, ops, depth))
    return [[op.node.id for op in batch] for batch in minitorch.autobatch.schedule(ops, scheduler)]


three = sequence_graph([1, 2, 3])
by_depth, by_agenda = library_schedule(three, "depth"), library_schedule(three, "dynet")
pictures = [
    draw(three, [[n.id] for n in three], f"one call per node: {len(three)} calls"),
    draw(three, by_depth, f"by depth: {len(by_depth)} calls"),
    draw(three, by_agenda, f"agenda: {len(by_agenda)} calls"),
]
pictures[0]

# %%
pictures[1]

# %%
pictures[2]

# %% [markdown] nbgrader={"grade_id": "ex1_signature_statement", "locked": true}
# ### Exercise 1 (3 points): the signature of a node
#
# Write `signature(node, nodes)`: a hashable value such that two nodes of the graph
# `nodes` get **equal** signatures exactly when they can run as one batched call. That is
# when they have the same `op`, the same `attrs`, the same shared `param` (two different
# weight matrices cannot be one matrix product), the same result `shape`, and their
# arguments have the same shapes, in order (rows of different widths cannot be stacked).
# Which sample a node belongs to and its id do not matter: batching across samples is the
# point.
#
# Example: in `sequence_graph([1, 2])`, the first `linear W` of both samples (nodes 1 and
# 6) have equal signatures; `linear W` and `linear V` (nodes 1 and 3) do not.
#
# *Hint:* a tuple; the shape of argument `a` is `nodes[a].shape`.


# %% nbgrader={"grade_id": "ex1_signature", "solution": true}
def signature(node, nodes):
    """A hashable value, equal for two nodes exactly when they can share a batched call."""
    ### BEGIN SOLUTION
    arg_shapes = tuple(nodes[a].shape for a in node.args)
    return (node.op, node.attrs, node.param, node.shape, arg_shapes)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex1_signature_tests", "grade": true, "points": 3}
two = sequence_graph([1, 2])
assert two[1].op == two[6].op == "linear", "the fixture changed: nodes 1 and 6 are linear W"
wide = [Node(0, 0, "input", shape=(3,)), Node(1, 1, "input", shape=(5,))]
wide += [Node(2, 0, "sum", (0,), ()), Node(3, 1, "sum", (1,), ())]
cats = [Node(0, 0, "input", shape=(2, 2)), Node(1, 0, "cat", (0, 0), (4, 2), attrs=(0,))]
cats += [Node(2, 1, "input", shape=(2, 2)), Node(3, 1, "cat", (2, 2), (2, 4), attrs=(1,))]
with exercise(1):
    hash(signature(two[1], two))  # raises TypeError if the signature is not hashable
    assert signature(two[1], two) == signature(two[6], two), "linear W of two samples must batch"
    assert signature(two[1], two) != signature(two[3], two), "linear W and linear V must not batch"
    assert signature(wide[0], wide) != signature(wide[1], wide), "inputs of shapes (3,) and (5,)"
    assert signature(wide[2], wide) != signature(wide[3], wide), "sums over rows of 3 and of 5"
    assert signature(cats[1], cats) != signature(cats[3], cats), "cat along dim 0 and along dim 1"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.batching_dynamic_graphs import grade

grade.signature(signature)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex2_schedule_by_depth_statement", "locked": true}
# ### Exercise 2 (3 points): schedule by depth
#
# Write `schedule_by_depth(nodes, signature_of=None)`: the batches, as a list of lists of
# node ids, one batch per pair **(depth, signature)** (depth from `node_depths(nodes)`,
# signature `signature_of(node, nodes)`, which defaults to your `signature`; the tests pass
# their own). Order the batches by increasing depth, so that every node runs after its
# arguments; keep each batch's ids in the order of `nodes`.
#
# Example: `sequence_graph([1, 2, 3])` gives 13 batches, the first being `[0, 5, 12]` (the
# three inputs).


# %% nbgrader={"grade_id": "ex2_schedule_by_depth", "solution": true}
def schedule_by_depth(nodes, signature_of=None):
    """One batch (a list of node ids) per (depth, signature), shallowest first."""
    ### BEGIN SOLUTION
    signature_of = signature_of or signature
    depth = node_depths(nodes)
    groups = {}
    for node in nodes:
        groups.setdefault((depth[node.id], signature_of(node, nodes)), []).append(node.id)
    return [groups[key] for key in sorted(groups, key=lambda key: key[0])]
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex2_schedule_by_depth_tests", "grade": true, "points": 3}
with exercise(2):
    batches = schedule_by_depth(three, op_and_param)
    assert isinstance(batches, list), f"return a list of batches, not {type(batches).__name__}"
    assert sorted(i for b in batches for i in b) == list(range(21)), "every node exactly once"
    assert len(batches) == 13, f"13 batches by depth for lengths 1, 2, 3, not {len(batches)}"
    assert sorted(batches[0]) == [0, 5, 12], f"first the three inputs, not {batches[0]}"
    done = set()
    for batch in batches:
        assert len({op_and_param(three[i], three) for i in batch}) == 1, f"mixed batch {batch}"
        assert all(a in done for i in batch for a in three[i].args), f"{batch} runs too early"
        done.update(batch)
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.batching_dynamic_graphs import grade

grade.schedule_by_depth(schedule_by_depth)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex3_schedule_agenda_statement", "locked": true}
# ### Exercise 3 (4 points): DyNet's agenda
#
# By depth, a node that sits at different depths in different samples (the output layer
# after sequences of different lengths) runs once per depth. DyNet's agenda waits for it.
# Write `schedule_agenda(nodes, signature_of=None)`, returning batches as in exercise 2:
#
# 1. A node is **ready** when all its args have run (a node without args is ready at once).
# 2. Give each signature a priority, computed once over the **whole** graph:
#    `(average depth of all nodes with that signature, 1 if their op is in MATMUL_LIKE else
#    0, position in nodes of the first node with that signature)`. Lower goes first.
# 3. While some node is ready: among the signatures of the ready nodes take the one with the
#    lowest priority, run **all** ready nodes of that signature as one batch (ids in the
#    order of `nodes`), and mark them done; nodes whose args have now all run become ready.
#
# A signature whose nodes lie deep on average waits, so that more of its nodes become ready
# and join one batch; on a tie, matrix products wait, since they gain most from a large
# batch. Example: on `sequence_graph([1, 2, 3])` the agenda makes 9 batches, by depth 13.
#
# *Hint:* count, for every node, how many of its args have not run yet.


# %% nbgrader={"grade_id": "ex3_schedule_agenda", "solution": true}
def schedule_agenda(nodes, signature_of=None):
    """DyNet's agenda: the ready nodes of the lowest-priority signature, batch after batch."""
    ### BEGIN SOLUTION
    signature_of = signature_of or signature
    depth = node_depths(nodes)
    sig = [signature_of(node, nodes) for node in nodes]
    totals = {}  # signature -> [sum of depths, count, matmul-like, first position]
    for node in nodes:
        total = totals.setdefault(sig[node.id], [0, 0, int(node.op in MATMUL_LIKE), node.id])
        total[0] += depth[node.id]
        total[1] += 1
    priority = {s: (t[0] / t[1], t[2], t[3]) for s, t in totals.items()}
    waiting = [len(node.args) for node in nodes]
    users = [[] for _ in nodes]
    for node in nodes:
        for a in node.args:
            users[a].append(node.id)
    ready = {}  # signature -> ready node ids
    for node in nodes:
        if not node.args:
            ready.setdefault(sig[node.id], []).append(node.id)
    batches = []
    while ready:
        batch = sorted(ready.pop(min(ready, key=priority.__getitem__)))
        batches.append(batch)
        for i in batch:
            for user in users[i]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    ready.setdefault(sig[user], []).append(user)
    return batches
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex3_schedule_agenda_tests", "grade": true, "points": 4}
with exercise(3):
    batches = schedule_agenda(three, op_and_param)
    assert isinstance(batches, list), f"return a list of batches, not {type(batches).__name__}"
    assert sorted(i for b in batches for i in b) == list(range(21)), "every node exactly once"
    done = set()
    for batch in batches:
        assert len({op_and_param(three[i], three) for i in batch}) == 1, f"mixed batch {batch}"
        assert all(a in done for i in batch for a in three[i].args), f"{batch} runs too early"
        done.update(batch)
    assert len(batches) < 13, f"{len(batches)} batches: by depth makes 13, the agenda fewer"
    assert len(batches) == 9, f"the agenda makes 9 batches on lengths 1, 2, 3, not {len(batches)}"
    outputs = [n.id for n in three if n.param == "V"]
    assert sorted(outputs) in [sorted(b) for b in batches], "the three `linear V` run as one batch"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.batching_dynamic_graphs import grade

grade.schedule_agenda(schedule_agenda)
### END HIDDEN TESTS


# %% [markdown]
# ### When the agenda loses
#
# The agenda is DyNet's rule as its source has it (`exec.cc`, autobatch strategy 1): ready
# nodes of the signature with the lowest average depth over the whole graph, matrix products
# last on a tie. It is a heuristic. The table counts the batches of both rules (the library's
# `"depth"` and `"dynet"` schedulers, which follow exercises 2 and 3) on sequences and on the
# tree model's graph, written as `Node`s by `tree_graph`. In the model, an operator node adds
# `op_vector[op]`, a different row of the parameter for each operator: one signature per
# operator, as `param` says below. Exercise 5 instead gathers the rows of all operators
# with one op: then the add has one signature.


# %%
def tree_graph(trees, add_per_operator=True, hidden=16):
    """The Nodes of TreeModel on `trees`; the add of op_vector[op] has one signature per
    operator (`param` names the row), or one for all when `add_per_operator` is False."""
    nodes = []

    def encode(sample, tree):
        if tree.is_leaf:
            value = add_node(nodes, sample, "input", shape=(1,))
            state = add_node(nodes, sample, "linear", [value], (hidden,), param="leaf")
        else:
            both = [encode(sample, tree.left), encode(sample, tree.right)]
            both = add_node(nodes, sample, "cat", both, (2 * hidden,), attrs=(1,))
            state = add_node(nodes, sample, "linear", [both], (hidden,), param="cell")
            row = f"op_vector[{tree.op!r}]" if add_per_operator else "op_vector"
            state = add_node(nodes, sample, "add", [state], (hidden,), param=row)
        return add_node(nodes, sample, "tanh", [state], (hidden,))

    for sample, tree in enumerate(trees):
        add_node(nodes, sample, "linear", [encode(sample, tree)], (1,), param="out")
    return nodes


graphs = {
    "4 sequences, lengths 1-4": sequence_graph([1, 2, 3, 4]),
    "64 sequences, lengths 5-50": sequence_graph(lengths[:64]),
    "64 trees, one add per operator": tree_graph(trees),
    "64 trees, one add for all": tree_graph(trees, add_per_operator=False),
}
print(f"{'graph':32} {'nodes':>6} {'by depth':>9} {'agenda':>7}")
for name, graph in graphs.items():
    depth, agenda = library_schedule(graph, "depth"), library_schedule(graph, "dynet")
    print(f"{name:32} {len(graph):6} {len(depth):9} {len(agenda):7}")

# %% [markdown]
# On sequences the agenda wins: it waits for `linear V` until every sample reaches it. On
# the trees with one add per operator it makes about three times the calls of by depth.
# Follow it after the first adds: `tanh`, `cat` and `linear cell` have a lower average depth
# than every add (the leaves' `tanh` and `linear` pull theirs down, and a node's `cat`
# always sits two levels below its add), so once the adds of one operator have run, the
# agenda carries those nodes up through `tanh`, their parents' `cat` and `cell`, to their
# parents' adds, before the nodes of the other operators of the same height get their turn.
# It runs the trees one operator chain at a time, and each level costs several calls of
# `tanh`, `cat` and `cell` instead of one. By depth never moves past a depth before all of
# its nodes ran. With one add for all operators the cycle has one signature per step, and
# the agenda is back to fewer calls than by depth.
#
# DyNet's answer is not a better rule: its source also has the by-depth rule (strategy 2)
# and an agenda that waits until all nodes of a signature at one depth are ready (strategy
# 3), and with `--dynet-autobatch` above 99 it times all three on the first graph and keeps
# the fastest. Count (or time) your own graphs; `minitorch.autobatch.stats()` counts the
# calls. The library's default `"agenda"` takes a step of its own in that direction (section
# 7): it applies the rule to whole levels, and never makes more calls than by depth.
#
# ## 5. Gather: collecting the rows a batch reads
#
# A batched call needs its arguments stacked: row `k` of the argument is what the `k`-th
# node of the batch reads. Those rows were made by earlier batches, in another order, some
# of them more than once (a value used by two nodes). Collecting them is a **gather**:
# `source.index_select(0, index)` takes the rows `index` of `source`. Its backward is the
# reverse, a **scatter-add**: the gradient of each gathered row goes back to the row it
# came from, and a row gathered twice receives the **sum** of both gradients.
#
# minitorch's own `index_select` shows both directions:

# %%
# NBVAL_CHECK_OUTPUT
table = minitorch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
gathered = table.index_select(0, minitorch.tensor([2, 0, 2]))
gathered.sum().backward()
print("gathered rows:", gathered.tolist(), "  node:", gathered.grad_fn.name())
print("gradient of the table:", table.grad.tolist(), "(row 2 was used twice)")


# %% [markdown]
# The same, drawn: forward copies row `index[j]` of the source to row `j` of the output;
# backward sends the gradient of row `j` back to row `index[j]`, where the gradients of a
# row gathered twice add up.


# %%
def draw_gather(rows, index):
    """Gather's forward and its scatter-add backward for a source of `rows` rows."""
    dot = Digraph(graph_attr=dict(rankdir="LR", size="6,3", nodesep="0.15"))
    dot.attr("node", shape="box", style="filled,rounded", fontsize="11", height="0.3")
    for side, label in (("f", f"forward: out = source[{index}]"), ("b", "backward: scatter-add")):
        with dot.subgraph(name=f"cluster_{side}") as box:
            box.attr(label=label, color="grey")
            for i in range(rows):
                source = "source" if side == "f" else "grad of source"
                box.node(f"{side}s{i}", f"{source} row {i}", fillcolor=PALETTE[i])
            for j, i in enumerate(index):
                out = "out" if side == "f" else "grad of out"
                box.node(f"{side}o{j}", f"{out} row {j}", fillcolor=PALETTE[i])
                if side == "f":
                    box.edge(f"fs{i}", f"fo{j}")
                else:
                    box.edge(f"bo{j}", f"bs{i}", label="+")
    return dot


draw_gather(3, [2, 0, 2])

# %% [markdown] nbgrader={"grade_id": "ex4_gather_statement", "locked": true}
# ### Exercise 4 (4 points): the gather op and its backward
#
# Write `Gather`, a `minitorch.autograd.Function` whose `Gather.apply(source, index)` takes
# a 2-D `source` of shape `[n, d]` and an int64 `index` of shape `[k]` (values in
# `0 .. n-1`, repeats allowed) and returns the `[k, d]` tensor whose row `j` is
# `source[index[j]]`. Its `backward(ctx, grad)` returns the gradient of `source`, shape
# `[n, d]`: zeros, with row `j` of `grad` **added** into row `index[j]` (scatter-add,
# PyTorch's `index_add`), and `None` for `index`, which is not differentiable.
#
# Both directions make **new** tensors, as `index_select` does: the output must not share
# memory with `source` (even when `index` takes every row in order), nothing may change
# `source`, `index` or `grad`, and a second backward (`retain_graph=True`) must give the
# same gradient again, so keep no buffer in `ctx` that backward adds into.
#
# Example: for `source` of 3 rows and `index = [2, 0, 2]`, the gradient of row 2 is
# `grad[0] + grad[2]`, that of row 1 is zeros. `minitorch.autograd.gradcheck` compares your
# backward with finite differences.
#
# *Hint:* `F.one_hot(index, n)` is a `[k, n]` matrix with one 1 per row; as float, it
# times `source` is the gather, and its transpose times `grad` is the scatter-add.
# Write backward with minitorch ops (`@`, `.t()`, `.to(dtype)`), and save what it needs
# in forward (`ctx.save_for_backward(index)`, or an attribute of `ctx`).


# %% nbgrader={"grade_id": "ex4_gather", "solution": true}
class Gather(minitorch.autograd.Function):
    """Gather.apply(source [n, d], index [k]) -> source's rows `index`, [k, d]."""

    @staticmethod
    def forward(ctx, source, index):
        ### BEGIN SOLUTION
        ctx.rows = source.shape[0]
        ctx.save_for_backward(index)
        return source.index_select(0, index)
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad):
        ### BEGIN SOLUTION
        (index,) = ctx.saved_tensors
        one_hot = F.one_hot(index, ctx.rows).to(grad.dtype)  # [k, n]
        return one_hot.t() @ grad, None
        ### END SOLUTION


# %% nbgrader={"grade_id": "ex4_gather_tests", "grade": true, "points": 4}
source = minitorch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
s64 = minitorch.randn(4, 3, dtype=torch.float64, requires_grad=True)
index = minitorch.tensor([3, 1, 3, 3, 0])
with exercise(4):
    picked = Gather.apply(source, minitorch.tensor([2, 0, 2]))
    assert picked.tolist() == [[5.0, 6.0], [1.0, 2.0], [5.0, 6.0]], f"forward gave {picked}"
    assert picked.grad_fn is not None, "the output must record a node (source requires grad)"
    picked.backward(minitorch.tensor([[1.0, 1.0], [10.0, 10.0], [100.0, 100.0]]))
    assert source.grad.tolist() == [[10.0] * 2, [0.0] * 2, [101.0] * 2], f"grad {source.grad}"
    assert minitorch.autograd.gradcheck(lambda s: Gather.apply(s, index), (s64,)), "gradcheck"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.batching_dynamic_graphs import grade

grade.gather(Gather)
### END HIDDEN TESTS


# %% [markdown]
# ## 6. A batched tree model
#
# With gather, the tree model runs **level by level**: a node's *height* is 0 for a leaf and
# 1 + the larger height of its children otherwise, so all nodes of one height, across all
# trees, depend only on lower heights. One call of `leaf` for every leaf of every tree, then
# one call of `cell` per height: the number of calls no longer grows with the number of
# trees. This is the by-depth schedule of exercise 2, written by hand for one model.

# %% [markdown]
# Three small trees, each node coloured by its height: the nodes of one colour, across all
# trees, are one call (`leaf` for height 0, `cell` for the others).


# %%
def draw_levels(trees):
    """Each tree in a box; a node's colour and label give its height."""
    dot = Digraph(graph_attr=dict(rankdir="BT", size="6,3"))
    dot.attr("node", shape="box", style="filled,rounded", fontsize="11", height="0.3")
    counter = iter(range(10_000))

    def visit(box, tree):
        name = str(next(counter))
        if tree.is_leaf:
            height = 0
            box.node(name, f"{tree.value:g}  h0", fillcolor=PALETTE[0])
            return name, height
        (left, hl), (right, hr) = visit(box, tree.left), visit(box, tree.right)
        height = 1 + max(hl, hr)
        box.node(name, f"{tree.op}  h{height}", fillcolor=PALETTE[height])
        box.edge(left, name)
        box.edge(right, name)
        return name, height

    for number, tree in enumerate(trees):
        with dot.subgraph(name=f"cluster_{number}") as box:
            box.attr(label=f"tree {number}", color="grey")
            visit(box, tree)
    return dot


draw_levels(make_expression_trees(3, max_depth=3, seed=2)[0])

# %% [markdown] nbgrader={"grade_id": "ex5_batched_forward_statement", "locked": true}
# ### Exercise 5 (5 points): the tree model, batched level by level
#
# Write `batched_forward(model, trees, gather=None)`, returning a tensor of shape
# `[len(trees)]` equal to `minitorch.cat([model(t) for t in trees])`, with the same
# gradients for every parameter of the `TreeModel`, but computed with **one** call of
# `model.leaf` (all leaves of all trees, as a `[leaves, 1]` tensor of their values) and
# **one** call of `model.cell` per height above 0. `gather(source, index)` collects rows;
# it defaults to your `Gather.apply` (the tests pass `index_rows`, minitorch's own).
#
# 1. Give every node of every tree its height, and list the nodes of each height.
# 2. Keep the states computed so far as the rows of one tensor `states` (the leaves'
#    first, then height 1, ...) and remember each node's row.
# 3. For each height: gather the rows of the left children and of the right children, `cat`
#    them along dim 1, apply `model.cell`, add the rows of `model.op_vector` of each
#    node's operator (`OPS.index(op)`, also a gather), `tanh`; append them to `states`.
# 4. Gather the roots' rows, apply `model.out`, and reshape to `[len(trees)]`.
#
# Make the values tensor with the model's dtype (`model.out.weight.dtype`; the tests use
# float64 and float32 models), and index tensors with `minitorch.tensor(list_of_ints)`.
# Do not `detach` anything: backward must reach every parameter through the gathers. A
# single leaf is a tree too.


# %% nbgrader={"grade_id": "ex5_batched_forward", "solution": true}
def batched_forward(model, trees, gather=None):
    """model's predictions for all trees, [len(trees)], with one cell call per height."""
    ### BEGIN SOLUTION
    gather = gather or Gather.apply
    levels = []  # levels[h]: the nodes of height h, across all trees
    pending = [(tree, False) for tree in reversed(trees)]
    height = {}
    while pending:  # post-order, without recursion
        node, children_done = pending.pop()
        if node.is_leaf:
            h = 0
        elif not children_done:
            pending += [(node, True), (node.right, False), (node.left, False)]
            continue
        else:
            h = 1 + max(height[id(node.left)], height[id(node.right)])
        height[id(node)] = h
        levels += [[] for _ in range(h + 1 - len(levels))]
        levels[h].append(node)
    values = [[leaf.value] for leaf in levels[0]]
    states = model.leaf(minitorch.tensor(values, dtype=model.out.weight.dtype)).tanh()
    row = {id(leaf): r for r, leaf in enumerate(levels[0])}
    for level in levels[1:]:
        left = minitorch.tensor([row[id(n.left)] for n in level])
        right = minitorch.tensor([row[id(n.right)] for n in level])
        ops = minitorch.tensor([OPS.index(n.op) for n in level])
        both = minitorch.cat([gather(states, left), gather(states, right)], dim=1)
        new = (model.cell(both) + gather(model.op_vector, ops)).tanh()
        offset = len(row)
        row.update((id(n), offset + r) for r, n in enumerate(level))
        states = minitorch.cat([states, new], dim=0)
    roots = minitorch.tensor([row[id(tree)] for tree in trees])
    return model.out(gather(states, roots)).reshape(len(trees))
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex5_batched_forward_tests", "grade": true, "points": 5}
small_trees, _ = make_expression_trees(6, seed=3)
small_trees.append(ExprTree(value=0.25))  # a tree that is a single leaf
tree_model = TreeModel(hidden=5).double()
weights = minitorch.randn(len(small_trees), dtype=torch.float64)
with exercise(5):
    got = batched_forward(tree_model, small_trees, gather=index_rows)
    want = minitorch.cat([tree_model(t) for t in small_trees])
    assert got.shape == want.shape, f"shape {list(got.shape)}, expected {list(want.shape)}"
    assert minitorch.allclose(got, want), f"batched {got.tolist()}, per sample {want.tolist()}"
    (want * weights).sum().backward()
    expected = {name: p.grad.clone() for name, p in tree_model.named_parameters()}
    tree_model.zero_grad()
    (batched_forward(tree_model, small_trees, gather=index_rows) * weights).sum().backward()
    for name, p in tree_model.named_parameters():
        assert p.grad is not None, f"no gradient reached {name}: did something get detached?"
        assert minitorch.allclose(p.grad, expected[name]), f"the gradient of {name} differs"
    single = TreeModel(hidden=3)  # float32
    got32 = batched_forward(single, small_trees, gather=index_rows)
    assert got32.dtype == torch.float32, f"a float32 model gave {got32.dtype} predictions"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.batching_dynamic_graphs import grade

grade.batched_forward(batched_forward)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex6_tree_speedup_statement", "locked": true}
# ### Exercise 6 (3 points): measure what batching saves
#
# Write `tree_speedup(model, trees, repeat=3, batched=None, gather=None)`: time one
# training step, **forward and backward**, of the **per-sample** loop,
# `minitorch.cat([model(t) for t in trees]).sum().backward()`, and of the **batched**
# model, `batched(model, trees, gather).sum().backward()`, each `repeat` times, and return
# **per-sample time / batched time**, using the best (smallest) time of each, as a float.
# Measure with `time.perf_counter()`, with nothing else inside the timed code. `batched`
# and `gather` default to your `batched_forward` and `Gather.apply` (the tests pass their
# own).
#
# Example: if the best per-sample step takes 30 ms and the best batched one 2 ms, return
# `15.0`.
#
# A ratio of two times measured on a busy machine can be off by a factor of 3, so the
# hidden test does not time real work: it passes a `model` and a `batched` whose forward
# and backward cost known times on a clock of the grader's, which stands in for `time`'s
# clocks while your function runs. Your ratio must be the one those costs give.


# %% nbgrader={"grade_id": "ex6_tree_speedup", "solution": true}
def tree_speedup(model, trees, repeat=3, batched=None, gather=None):
    """Best per-sample time / best batched time of forward + backward, measured now."""
    ### BEGIN SOLUTION
    batched = batched or batched_forward
    gather = gather or Gather.apply

    def best(run):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

    per_sample = best(lambda: minitorch.cat([model(t) for t in trees]).sum().backward())
    at_once = best(lambda: batched(model, trees, gather).sum().backward())
    return per_sample / at_once
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex6_tree_speedup_tests", "grade": true, "points": 3}
def instant(model, trees, gather):  # a "batched model" that does no work
    return minitorch.zeros(len(trees), requires_grad=True)


with exercise(6):
    ratio = tree_speedup(tree_model, small_trees, batched=instant, gather=index_rows)
    assert isinstance(ratio, float), f"return a float ratio, not {type(ratio).__name__}"
    assert ratio > 5, f"a batched model that does nothing must look much faster: {ratio:.2f}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.batching_dynamic_graphs import grade

grade.tree_speedup(tree_speedup)
### END HIDDEN TESTS

# %% [markdown]
# Your own batched model against the per-sample loop, on the 64 trees of section 1, with
# real time (one torch thread):

# %%
with exercise(6), one_torch_thread():
    print(f"batched: {tree_speedup(model, trees, gather=index_rows):.1f}x the per-sample speed")


# %% [markdown] nbgrader={"grade_id": "ex7_predict_calls_statement", "locked": true}
# ### Exercise 7 (3 points): what a mid-graph `.item()` costs
#
# A lazy batcher computes nothing until a value is needed. Python code that **reads** a
# value (`loss.item()`, `print(loss)`, `if h.sum() > 0:`) needs it now: the batcher must
# **flush**, scheduling and running every node recorded so far. Nodes recorded afterwards
# can no longer join the batches that already ran. The end of the lazy run is a flush too,
# when nodes are still pending there; a flush is every such scheduling, whatever caused it
# (`minitorch.autobatch.stats().flushes` counts them the same way).
#
# Each scenario in the cell below runs the sequence model of `sequence_graph` lazily over
# four sequences of lengths 1, 2, 3 and 4 (`loss_of(s)` records sample `s`'s nodes and
# returns its pending loss). Every flush schedules the nodes recorded since the last flush
# with the **agenda** of exercise 3 (scenario `"e"`: by depth, exercise 2), with the
# signature of exercise 1; nodes of earlier flushes count as already run. Predict, for each
# scenario, the total number of batched calls (batches), over all flushes, including the
# flush at the end. Return a dict with one int per key of `SCENARIOS` (the form, not the
# answer: `{key: 0 for key in SCENARIOS}`). Each right prediction earns a fifth of the points.
#
# *Hint:* the nodes of one sample never read another sample's. Predict first; then you can
# check with your schedulers and `sequence_graph`.

# %% nbgrader={"grade_id": "ex7_scenarios", "locked": true}
# Each scenario runs lazily over samples = [0, 1, 2, 3], of lengths 1, 2, 3, 4 (exercise 7).
SCENARIOS = {
    "a": "losses = [loss_of(s) for s in samples]\nprint(sum(l.item() for l in losses))",
    "b": "for s in samples:\n    print(loss_of(s).item())",
    "c": "losses = [loss_of(s) for s in samples[:2]]\nprint(losses[0].item())\n"
    "losses += [loss_of(s) for s in samples[2:]]\nprint(losses[-1].item())",
    "d": "for s in samples:\n    loss = loss_of(s)\n    if s == 2:\n        print(loss.item())",
    "e": "# scheduled by depth\nlosses = [loss_of(s) for s in samples]\n"
    "print(sum(l.item() for l in losses))",
}

# %%
# NBVAL_CHECK_OUTPUT
for key, code in SCENARIOS.items():
    print(f"--- {key}\n{code}")


# %% nbgrader={"grade_id": "ex7_predict_calls", "solution": true}
def predict_calls():
    """{scenario key: the number of batched calls it makes, over all its flushes}."""
    ### BEGIN SOLUTION
    return {
        "a": 11,  # one flush: the agenda over all four samples
        "b": 32,  # a flush per sample: 5 + 7 + 9 + 11 calls, nothing batches
        "c": 18,  # lengths 1, 2 (7 calls), then lengths 3, 4 (11 calls)
        "d": 20,  # lengths 1, 2, 3 (9 calls), then length 4 alone (11)
        "e": 17,  # by depth: the output layers of different lengths run apart
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex7_predict_calls_tests", "grade": true, "points": 3}
with exercise(7):
    predictions = predict_calls()
    assert isinstance(predictions, dict), f"return a dict, not {type(predictions).__name__}"
    missing = sorted(set(SCENARIOS) - set(predictions))
    assert not missing, f"no prediction for scenarios {missing}"
    for key, value in predictions.items():
        assert isinstance(value, int), f"{key!r}: predict a number of calls, not {value!r}"
    print("Your predictions are well formed; the hidden tests count the calls.")

### BEGIN HIDDEN TESTS
from solutions.batching_dynamic_graphs import grade

grade.predict_calls(predict_calls)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. The same ideas in `minitorch.autobatch`
#
# `minitorch.autobatch` does all of this for ordinary minitorch code. Inside
# `with minitorch.autobatch.batch():` every op on per-sample tensors is recorded, not run;
# leaving the block (or reading a value) schedules the lazy graph with the agenda (or
# `scheduler="depth"`, or `"dynet"`: the agenda of exercise 3), gathers the arguments of each
# batch and runs it as one ordinary minitorch op, so backward needs nothing new. The
# per-sample `TreeModel`, unchanged:

# %%
import minitorch.autobatch  # noqa: E402

demo_trees, _ = make_expression_trees(24, seed=5)
demo_model = TreeModel(hidden=8).double()
eager = minitorch.cat([demo_model(t) for t in demo_trees])
eager.sum().backward()
eager_grad = demo_model.cell.weight.grad.clone()
for scheduler in ("depth", "agenda", "dynet"):
    demo_model.zero_grad()
    with minitorch.autobatch.batch(scheduler=scheduler):
        lazy = minitorch.cat([demo_model(t) for t in demo_trees])
        total = lazy.sum()
    total.backward()
    stats = minitorch.autobatch.stats()
    same = minitorch.allclose(lazy, eager) and minitorch.allclose(
        demo_model.cell.weight.grad, eager_grad
    )
    print(f"{scheduler:>6}: {stats.ops_recorded} ops recorded, {stats.calls} calls, ", end="")
    print(f"largest batch {stats.largest_batch}; outputs and gradients equal eager: {same}")


# %% [markdown]
# All schedules give eager's outputs and gradients; the number of calls is what differs.
# This model is the case of the table after exercise 3: `self.op_vector[OPS.index(tree.op)]`
# is a different row per operator, so the add after `cell` has one signature per operator,
# and DyNet's agenda node by node (`"dynet"`, exercise 3's rule) carries one operator's nodes
# up a level before the others: more calls than by depth. The library's `"agenda"` (the
# default) applies DyNet's rule to whole levels instead of single nodes: the batches of by
# depth, one group per depth and signature, are what it schedules, and a batch is every ready
# group of one signature. It never makes more calls than by depth, since each of its calls
# runs at least one of those groups, and it still waits for an op that sits at different
# depths in different samples, which saves calls here too. (DyNet's source has a step in this
# direction, strategy 3: a signature waits while its nodes at one depth are not all ready.)

# %% [markdown]
# Reading a value inside the block forces a flush, as in exercise 7. `stats()` counts every
# flush (the one at the end of the block too) and, of them, those forced inside the block:

# %%
for read in (False, True):
    with minitorch.autobatch.batch():
        losses = []
        for tree in demo_trees:
            losses.append(demo_model(tree))
            if read:
                losses[-1].item()  # e.g. logging every sample's prediction
        minitorch.cat(losses).sum()
    stats = minitorch.autobatch.stats()
    print(f"item() per sample: {read!s:>5}: {stats.calls:4} calls, {stats.flushes:2} flushes "
          f"({stats.forced_flushes} forced by a read)")  # fmt: skip

# %% [markdown]
# `stats()` also says what lost batching, as `torch._dynamo.explain` says what broke a graph:
# per cause (a value read inside the block, a dependent chain such as `total = total + loss`,
# an op without a batching rule, shapes that differ), how often, the line of your code, and
# what to write instead (`stats().lost` holds the same records). For the block above that
# read every prediction:

# %%
print(minitorch.autobatch.stats().explain())

# %% [markdown]
# Its advice applied: the predictions stay tensors inside the block and are read after it.

# %%
with minitorch.autobatch.batch():
    predictions = minitorch.cat([demo_model(tree) for tree in demo_trees])
print(f"{predictions.shape[0]} predictions, read after the block: {predictions.sum().item():.3f}")
print(minitorch.autobatch.stats().explain())

# %% [markdown]
# And the overhead that batching adds, measured by the library itself (recording the lazy
# graph and scheduling it, next to running the batches):

# %%
with minitorch.autobatch.batch():
    minitorch.cat([demo_model(t) for t in demo_trees]).sum()
print(minitorch.autobatch.stats())

# %% [markdown]
# ## Summary
#
# - A per-sample dynamic graph pays the per-op overhead once per op per sample; on small
#   rows that overhead is almost all of the time, and it grows with the number of nodes.
# - Padding makes every sample the same graph, at the price of computing thrown-away
#   positions (a large share for sequences of 5-50 steps, most of it for trees), and it
#   must be written per model. `vmap` batches one graph, so it refuses per-sample structure.
# - DyNet's automatic batching: record each sample's graph lazily, give each node a
#   **signature** (op, attributes, shared parameters, per-sample shapes), **schedule** the
#   nodes into batches, and run each batch as one op, **gathering** its argument rows.
# - By depth is simple but splits an op that sits at different depths in different samples;
#   the **agenda** (lowest average depth first, matrix products last on ties) waits for
#   such ops, and makes fewer calls on sequences. When one step has a signature per case
#   (the tree model's `op_vector[op]`), it carries one case's nodes up a level before the
#   others and makes more calls than by depth. DyNet keeps both rules and can time them on
#   the first graph: a heuristic, so count.
# - Gather's backward is a scatter-add: a row used twice receives the sum of its gradients.
#   With it, a batched model is an ordinary graph and its gradients are the per-sample ones.
# - Reading a value in the middle (`.item()`, `print`, `if`) flushes the lazy graph and
#   loses the batches it would have joined: read values after the whole batch is recorded.
#   `autobatch.stats()` explains what lost batching: the cause, the line, what to write instead.
