"""Plausible wrong answers to notebook 6's exercises: mistakes the graders must reject.

`WRONG_ANSWERS[grade_id]` lists `WrongAnswer(name, source, why)`; `source` is a complete
replacement for that exercise's answer cell (it may use what the notebook defined before it:
the setup imports, the tree model, the graph types and earlier answers).

The schedulers take the signature as an argument, the batched model the gather, and the
speed-up the batched model and the gather; their hidden tests pass stand-ins (a table of
signature labels, minitorch's `index_rows`, a batched model made for the test's trees), so a
wrong earlier exercise costs only its own points. `RIGHT_ANSWERS` are different but correct
answers, which must earn full marks.
"""

from __future__ import annotations

from solutions.graph_construction.wrong_answers import WrongAnswer

_SIGNATURE = """\
def signature(node, nodes):
    arg_shapes = tuple(nodes[a].shape for a in node.args)
    return {value}
"""

_BY_DEPTH = """\
def schedule_by_depth(nodes, signature_of=None):
    signature_of = signature_of or signature
    depth = node_depths(nodes)
{extra}    groups = {{}}
    for node in nodes:
        groups.setdefault({key}, []).append(node.id)
    return [groups[key] for key in sorted(groups, key={order})]
"""

_AGENDA = """\
def schedule_agenda(nodes, signature_of=None):
    signature_of = signature_of or signature
    depth = node_depths(nodes)
    sig = [signature_of(node, nodes) for node in nodes]
    totals = {{}}
    for node in nodes:
        total = totals.setdefault(sig[node.id], [0, 0, int(node.op in MATMUL_LIKE), node.id])
        total[0] += depth[node.id]
        total[1] += 1
    priority = {{s: {priority} for s, t in totals.items()}}
    waiting = [len(node.args) for node in nodes]
    users = [[] for _ in nodes]
    for node in nodes:
        for a in node.args:
            users[a].append(node.id)
    ready = {{}}
    for node in nodes:
        if not node.args:
            ready.setdefault(sig[node.id], []).append(node.id)
    batches = []
    while ready:
{pick}
        for i in batch:
            for user in users[i]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    ready.setdefault(sig[user], []).append(user)
    return batches
"""

_LOWEST = """\
        batch = sorted(ready.pop(min(ready, key=priority.__getitem__)))
        batches.append(batch)"""


def _agenda(priority: str = "(t[0] / t[1], t[2], t[3])", pick: str = _LOWEST) -> str:
    return _AGENDA.format(priority=priority, pick=pick)


_GATHER = """\
class Gather(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, source, index):
        ctx.rows = source.shape[0]
        ctx.save_for_backward(index)
        return {forward}

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
{backward}
"""

_BATCHED = """\
def batched_forward(model, trees, gather=None):
    gather = gather or Gather.apply
    levels = []
    height = {{}}

    def visit(node):
        h = 0 if node.is_leaf else 1 + max(visit(node.left), visit(node.right))
        height[id(node)] = h
        levels.extend([] for _ in range(h + 1 - len(levels)))
        levels[h].append(node)
        return h

    for tree in trees:
        visit(tree)
    values = [[leaf.value] for leaf in levels[0]]
    states = model.leaf(minitorch.tensor(values, dtype={dtype})).tanh()
    row = {{id(leaf): r for r, leaf in enumerate(levels[0])}}
    for level in levels[1:]:
        left = minitorch.tensor([row[id(n.{left})] for n in level])
        right = minitorch.tensor([row[id(n.{right})] for n in level])
        ops = minitorch.tensor([OPS.index(n.op) for n in level])
        both = minitorch.cat([gather(states, left), gather(states, right)], dim=1)
        new = (model.cell(both) + {op_rows}).tanh()
        offset = len(row)
        row.update((id(n), offset + r) for r, n in enumerate(level))
        states = minitorch.cat([{kept}, new], dim=0)
    roots = minitorch.tensor([row[id(tree)] for tree in trees])
    return model.out(gather(states, roots)).reshape(len(trees))
"""


def _batched(
    left: str = "left",
    right: str = "right",
    op_rows: str = "gather(model.op_vector, ops)",
    kept: str = "states",
    dtype: str = "model.out.weight.dtype",
) -> str:
    return _BATCHED.format(left=left, right=right, op_rows=op_rows, kept=kept, dtype=dtype)


_SPEEDUP = """\
def tree_speedup(model, trees, repeat=3, batched=None, gather=None):
    batched = batched or batched_forward
    gather = gather or Gather.apply

    def best(run):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

{body}
"""

_RIGHT_PREDICTIONS = {"a": 11, "b": 32, "c": 18, "d": 20, "e": 17}


def _predictions(**changes: object) -> str:
    answer = {**_RIGHT_PREDICTIONS, **changes}
    return f"def predict_calls():\n    return {answer!r}\n"


WRONG_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_signature": [
        WrongAnswer(
            "sample_included",
            _SIGNATURE.format(value="(node.sample, node.op, node.attrs, node.param, arg_shapes)"),
            "the sample in the signature: nothing batches across samples",
        ),
        WrongAnswer(
            "param_ignored",
            _SIGNATURE.format(value="(node.op, node.attrs, node.shape, arg_shapes)"),
            "linear W and linear V would be one matrix product",
        ),
        WrongAnswer(
            "arg_shapes_ignored",
            _SIGNATURE.format(value="(node.op, node.attrs, node.param, node.shape)"),
            "sums over rows of different widths would be stacked",
        ),
        WrongAnswer(
            "attrs_ignored",
            _SIGNATURE.format(value="(node.op, node.param, node.shape, arg_shapes)"),
            "pow(x, 2) and pow(x, 3) in one call",
        ),
        WrongAnswer(
            "list_not_hashable",
            _SIGNATURE.format(value="[node.op, node.attrs, node.param, node.shape, arg_shapes]"),
            "a list cannot be a dict key",
        ),
    ],
    "ex2_schedule_by_depth": [
        WrongAnswer(
            "depth_only",
            _BY_DEPTH.format(extra="", key="depth[node.id]", order="lambda key: key"),
            "one batch per depth, whatever the ops",
        ),
        WrongAnswer(
            "signature_only",
            _BY_DEPTH.format(
                extra="", key="signature_of(node, nodes)", order="lambda key: 0"
            ),  # fmt: skip
            "one batch per signature: a node runs before its args",
        ),
        WrongAnswer(
            "position_in_sample",
            _BY_DEPTH.format(
                extra="    seen = {}\n    position = []\n    for node in nodes:\n"
                "        position.append(seen.get(node.sample, 0))\n"
                "        seen[node.sample] = position[-1] + 1\n",
                key="(position[node.id], signature_of(node, nodes))",
                order="lambda key: key[0]",
            ),
            "the node's position in its sample (a time step) instead of its depth",
        ),
        WrongAnswer(
            "ignores_signature_of",
            _BY_DEPTH.format(
                extra="", key="(depth[node.id], signature(node, nodes))", order="lambda key: key[0]"
            ),  # fmt: skip
            "groups by its own signature, not by the signature_of it was given",
        ),
        WrongAnswer(
            "height_not_depth",
            _BY_DEPTH.format(
                extra="    height = [0] * len(nodes)\n    for node in reversed(nodes):\n"
                "        for a in node.args:\n"
                "            height[a] = max(height[a], height[node.id] + 1)\n",
                key="(-height[node.id], signature_of(node, nodes))",
                order="lambda key: key[0]",
            ),
            "distance to the output instead of from the inputs",
        ),
    ],
    "ex3_schedule_agenda": [
        WrongAnswer(
            "average_over_ready_nodes",
            _agenda(
                pick="        def average(s):\n"
                "            return sum(depth[i] for i in ready[s]) / len(ready[s])\n\n"
                "        key = min(ready, key=lambda s: (average(s), *priority[s][1:]))\n"
                "        batch = sorted(ready.pop(key))\n"
                "        batches.append(batch)"
            ),
            "the average depth of the ready nodes, not of all nodes of the signature",
        ),
        WrongAnswer(
            "matmul_not_deferred",
            _agenda(priority="(t[0] / t[1], t[3])"),
            "ties broken by position only: matrix products do not wait",
        ),
        WrongAnswer(
            "largest_group_first",
            _agenda(
                pick="        key = max(ready, key=lambda s: (len(ready[s]), -priority[s][2]))\n"
                "        batch = sorted(ready.pop(key))\n"
                "        batches.append(batch)"
            ),
            "greedy: the signature with the most ready nodes",
        ),
        WrongAnswer(
            "ties_not_broken",
            _agenda(priority="(t[0] / t[1], t[2])"),
            "no first position in the priority: a tie goes to whichever signature became "
            "ready first",
        ),
        WrongAnswer(
            "ties_by_signature_value",
            _agenda(
                pick="        key = min(ready, key=lambda s: (*priority[s][:2], s))\n"
                "        batch = sorted(ready.pop(key))\n"
                "        batches.append(batch)"
            ),
            "ties broken by comparing the signatures themselves, not by first position",
        ),
        WrongAnswer(
            "ignores_signature_of",
            _AGENDA.replace(
                "    signature_of = signature_of or signature\n", "    signature_of = signature\n"
            ).format(priority="(t[0] / t[1], t[2], t[3])", pick=_LOWEST),
            "uses its own signature, not the signature_of it was given",
        ),
        WrongAnswer(
            "every_ready_signature_each_round",
            _agenda(
                pick="        for key in sorted(ready, key=priority.__getitem__):\n"
                "            batches.append(sorted(ready[key]))\n"
                "        batch = [i for key in list(ready) for i in ready.pop(key)]"
            ),
            "runs all ready signatures each round: a wavefront, by depth in disguise",
        ),
    ],
    "ex4_gather": [
        WrongAnswer(
            "overwrite_not_add",
            _GATHER.format(
                forward="source.index_select(0, index)",
                backward="        out = minitorch.zeros(ctx.rows, grad.shape[1], "
                "dtype=grad.dtype)\n"
                "        out[index] = grad\n"
                "        return out, None",
            ),
            "a row gathered twice keeps only one of its gradients",
        ),
        WrongAnswer(
            "gather_in_backward",
            _GATHER.format(
                forward="source.index_select(0, index)",
                backward="        return grad.index_select(0, index), None",
            ),
            "backward gathers again instead of scattering back",
        ),
        WrongAnswer(
            "one_hot_not_transposed",
            _GATHER.format(
                forward="source.index_select(0, index)",
                backward="        one_hot = F.one_hot(index, ctx.rows).to(grad.dtype)\n"
                "        return one_hot @ grad, None",
            ),
            "the one-hot matrix used the wrong way round",
        ),
        WrongAnswer(
            "view_for_identity_index",
            _GATHER.format(
                forward="source[:] if index.tolist() == list(range(ctx.rows)) "
                "else source.index_select(0, index)",
                backward="        one_hot = F.one_hot(index, ctx.rows).to(grad.dtype)\n"
                "        return one_hot.t() @ grad, None",
            ),
            "skips the copy when the index takes every row in order: the output is a view "
            "sharing the source's memory",
        ),
        WrongAnswer(
            "buffer_kept_in_ctx",
            _GATHER.format(
                forward="source.index_select(0, index)",
                backward="        if not hasattr(ctx, 'buffer'):\n"
                "            ctx.buffer = minitorch.zeros(ctx.rows, grad.shape[1], "
                "dtype=grad.dtype)\n"
                "        ctx.buffer += F.one_hot(index, ctx.rows).to(grad.dtype).t() @ grad\n"
                "        return ctx.buffer, None",
            ),
            "a gradient buffer kept in ctx and added into: a second backward adds twice",
        ),
        WrongAnswer(
            "scatter_into_the_source",
            """\
class Gather(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, source, index):
        ctx.source, ctx.index = source, index
        return source.index_select(0, index)

    @staticmethod
    def backward(ctx, grad):
        out = ctx.source.detach()  # reuse the source's memory for the gradient
        out.zero_()
        out += F.one_hot(ctx.index, out.shape[0]).to(grad.dtype).t() @ grad
        return out, None
""",
            "the gradient is built in the source's own memory: backward wipes the source",
        ),
        WrongAnswer(
            "float32_one_hot",
            _GATHER.format(
                forward="F.one_hot(index, ctx.rows).float() @ source.float()",
                backward="        one_hot = F.one_hot(index, ctx.rows).to(grad.dtype)\n"
                "        return one_hot.t() @ grad, None",
            ),
            "`.float()` on both sides of the one-hot product: float32 rows of a float64 source",
        ),
        WrongAnswer(
            "first_row_repeated",
            _GATHER.format(
                forward="source[index[0]].expand(len(index), source.shape[1])",
                backward="        one_hot = F.one_hot(index, ctx.rows).to(grad.dtype)\n"
                "        return one_hot.t() @ grad, None",
            ),
            "forward repeats the first indexed row",
        ),
    ],
    "ex5_batched_forward": [
        WrongAnswer(
            "per_sample_loop",
            "def batched_forward(model, trees, gather=None):\n"
            "    return minitorch.cat([model(tree) for tree in trees])\n",
            "right values, but one cell call per node: nothing is batched",
        ),
        WrongAnswer(
            "children_swapped",
            _batched(left="right", right="left"),
            "the right child's state first",
        ),
        WrongAnswer(
            "levels_detached",
            _batched(kept="states.detach()"),
            "lower levels detached: no gradient reaches the leaves",
        ),
        WrongAnswer(
            "op_vector_row_per_node",
            _batched(op_rows="minitorch.stack([model.op_vector[OPS.index(n.op)] for n in level])"),
            "right values and one cell call per height, but one indexing op per tree node",
        ),
        WrongAnswer(
            "first_operator_for_the_level",
            _batched(op_rows="model.op_vector[OPS.index(level[0].op)]"),
            "one operator's vector for the whole level",
        ),
        WrongAnswer(
            "float64_values",
            _batched(dtype="torch.float64"),
            "the leaves' values always float64: right for a float64 model only",
        ),
    ],
    "ex6_tree_speedup": [
        WrongAnswer(
            "inverted",
            _SPEEDUP.format(
                body="    per_sample = best(lambda: minitorch.cat([model(t) for t in trees]).sum()"
                ".backward())\n"
                "    at_once = best(lambda: batched(model, trees, gather).sum().backward())\n"
                "    return at_once / per_sample"
            ),
            "batched time / per-sample time",
        ),
        WrongAnswer(
            "one_tree_per_sample",
            _SPEEDUP.format(
                body="    per_sample = best(lambda: model(trees[0]).sum().backward())\n"
                "    at_once = best(lambda: batched(model, trees, gather).sum().backward())\n"
                "    return per_sample / at_once"
            ),
            "the per-sample time of one tree against the batched time of all",
        ),
        WrongAnswer(
            "check_inside_the_timing",
            _SPEEDUP.format(
                body="    def checked():\n"
                "        out = batched(model, trees, gather)\n"
                "        want = minitorch.cat([model(t) for t in trees])\n"
                "        assert minitorch.allclose(out, want)\n"
                "        out.sum().backward()\n\n"
                "    per_sample = best(lambda: minitorch.cat([model(t) for t in trees]).sum()"
                ".backward())\n"
                "    return per_sample / best(checked)"
            ),
            "the batched timing also runs the per-sample model, to check it",
        ),
        WrongAnswer(
            "forward_only",
            _SPEEDUP.format(
                body="    per_sample = best(lambda: minitorch.cat([model(t) for t in trees]))\n"
                "    at_once = best(lambda: batched(model, trees, gather))\n"
                "    return per_sample / at_once"
            ),
            "times the forward passes only, where the exercise asks for forward and backward",
        ),
        WrongAnswer(
            "backward_outside_the_timing",
            _SPEEDUP.format(
                body="    def timed(make):\n"
                "        times = []\n"
                "        for _ in range(repeat):\n"
                "            start = time.perf_counter()\n"
                "            out = make()\n"
                "            times.append(time.perf_counter() - start)\n"
                "            out.sum().backward()\n"
                "        return min(times)\n\n"
                "    per_sample = timed(lambda: minitorch.cat([model(t) for t in trees]))\n"
                "    return per_sample / timed(lambda: batched(model, trees, gather))"
            ),
            "runs backward, but after the clock stopped: forward only again",
        ),
        WrongAnswer(
            "batched_forward_only",
            _SPEEDUP.format(
                body="    per_sample = best(lambda: minitorch.cat([model(t) for t in trees]).sum()"
                ".backward())\n"
                "    at_once = best(lambda: batched(model, trees, gather))\n"
                "    return per_sample / at_once"
            ),
            "a per-sample training step against the batched forward pass alone",
        ),
    ],
    "ex7_predict_calls": [
        WrongAnswer(
            "reads_cost_nothing",
            _predictions(b=11, c=11, d=11),
            "a read does not split the batches",
        ),
        WrongAnswer(
            "depth_as_good_as_agenda",
            _predictions(e=11),
            "by depth splits the output layers of different lengths",
        ),
        WrongAnswer(
            "flushes_counted_not_calls",
            _predictions(b=4, c=2, d=2, a=1, e=1),
            "counts flushes instead of batched calls",
        ),
    ],
}


# Different but correct answers: each must earn full marks (tests/test_graders_common.py).
RIGHT_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_signature": [
        WrongAnswer(
            "a_string",
            """\
def signature(node, nodes):
    shapes = [nodes[a].shape for a in node.args]
    return f"{node.op}|{node.param}|{node.attrs}|{node.shape}|{shapes}"
""",
            "a string is hashable too",
        ),
        WrongAnswer(
            "node_without_identity",
            """\
import dataclasses


def signature(node, nodes):
    arg_shapes = tuple(nodes[a].shape for a in node.args)
    return dataclasses.replace(node, id=-1, sample=-1, args=arg_shapes)
""",
            "the node itself with its id and sample blanked and args replaced by their shapes",
        ),
    ],
    "ex2_schedule_by_depth": [
        WrongAnswer(
            "deepest_first_then_reversed",
            """\
from collections import defaultdict


def schedule_by_depth(nodes, signature_of=None):
    signature_of = signature_of or signature
    levels = defaultdict(lambda: defaultdict(list))
    for node, d in zip(nodes, node_depths(nodes)):
        levels[d][signature_of(node, nodes)].append(node.id)
    return [batch for d in sorted(levels) for batch in reversed(list(levels[d].values()))]
""",
            "nested dicts; batches of one depth in another order",
        ),
        WrongAnswer(
            "one_pass_per_depth",
            """\
def schedule_by_depth(nodes, signature_of=None):
    signature_of = signature_of or signature
    depth = node_depths(nodes)
    batches = []
    for d in range(max(depth) + 1):
        groups = {}
        for node in nodes:
            if depth[node.id] == d:
                groups.setdefault(signature_of(node, nodes), []).append(node.id)
        batches.extend(groups.values())
    return batches
""",
            "a pass over the nodes per depth",
        ),
    ],
    "ex3_schedule_agenda": [
        WrongAnswer(
            "scan_for_ready_nodes",
            """\
def schedule_agenda(nodes, signature_of=None):
    signature_of = signature_of or signature
    depth = node_depths(nodes)
    sigs = [signature_of(n, nodes) for n in nodes]
    order = {}
    for n in nodes:
        order.setdefault(sigs[n.id], []).append(n)
    key = {
        s: (sum(depth[n.id] for n in ns) / len(ns), n0.op in MATMUL_LIKE, ns[0].id)
        for s, ns in order.items()
        for n0 in ns[:1]
    }
    done, batches = set(), []
    while len(done) < len(nodes):
        ready = [n for n in nodes if n.id not in done and all(a in done for a in n.args)]
        best = min({sigs[n.id] for n in ready}, key=lambda s: key[s])
        batch = [n.id for n in ready if sigs[n.id] == best]
        batches.append(batch)
        done.update(batch)
    return batches
""",
            "rescans every node each round (slow, but the same batches)",
        ),
    ],
    "ex4_gather": [
        WrongAnswer(
            "one_hot_both_ways",
            """\
class Gather(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, source, index):
        one_hot = F.one_hot(index, source.shape[0]).to(source.dtype)
        ctx.save_for_backward(one_hot)
        return one_hot @ source

    @staticmethod
    def backward(ctx, grad):
        (one_hot,) = ctx.saved_tensors
        return one_hot.t() @ grad, None
""",
            "forward as a one-hot product too, saving the one-hot matrix",
        ),
    ],
    "ex5_batched_forward": [
        WrongAnswer(
            "recursive_heights_index_rows",
            """\
def batched_forward(model, trees, gather=None):
    gather = gather or Gather.apply
    by_height = {}

    def height(node):
        h = 0 if node.is_leaf else 1 + max(height(node.left), height(node.right))
        by_height.setdefault(h, []).append(node)
        return h

    for t in trees:
        height(t)
    rows, parts = {}, []
    for h in sorted(by_height):
        level = by_height[h]
        if h == 0:
            x = minitorch.tensor([[n.value] for n in level], dtype=model.out.weight.dtype)
            part = model.leaf(x).tanh()
        else:
            table = minitorch.cat(parts, dim=0)
            li = minitorch.tensor([rows[id(n.left)] for n in level])
            ri = minitorch.tensor([rows[id(n.right)] for n in level])
            oi = minitorch.tensor([OPS.index(n.op) for n in level])
            x = minitorch.cat([gather(table, li), gather(table, ri)], dim=1)
            part = (model.cell(x) + gather(model.op_vector, oi)).tanh()
        start = sum(p.shape[0] for p in parts)
        for r, n in enumerate(level):
            rows[id(n)] = start + r
        parts.append(part)
    table = minitorch.cat(parts, dim=0)
    out = model.out(gather(table, minitorch.tensor([rows[id(t)] for t in trees])))
    return out.reshape(-1)
""",
            "recursion for the heights, a list of level tensors",
        ),
        WrongAnswer(
            "library_depth_and_index_select",
            """\
def batched_forward(model, trees, gather=None):
    levels, stack = {}, list(trees)
    while stack:
        node = stack.pop()
        levels.setdefault(node.depth(), []).append(node)
        if not node.is_leaf:
            stack += [node.left, node.right]
    rows = {}
    states = None
    for h in sorted(levels):
        level = levels[h]
        if h == 0:
            x = minitorch.tensor([[n.value] for n in level], dtype=model.out.weight.dtype)
            new = model.leaf(x).tanh()
        else:
            left = states.index_select(0, minitorch.tensor([rows[id(n.left)] for n in level]))
            right = states.index_select(0, minitorch.tensor([rows[id(n.right)] for n in level]))
            ops = minitorch.tensor([OPS.index(n.op) for n in level])
            both = minitorch.cat([left, right], dim=1)
            new = (model.cell(both) + model.op_vector.index_select(0, ops)).tanh()
        start = 0 if states is None else states.shape[0]
        rows.update((id(n), start + r) for r, n in enumerate(level))
        states = new if states is None else minitorch.cat([states, new])
    roots = minitorch.tensor([rows[id(t)] for t in trees])
    return model.out(states.index_select(0, roots)).reshape(-1)
""",
            "heights from ExprTree.depth(), index_select instead of the gather it was given",
        ),
    ],
    "ex6_tree_speedup": [
        WrongAnswer(
            "nanoseconds_and_sorted",
            """\
def tree_speedup(model, trees, repeat=3, batched=None, gather=None):
    batched = batched or batched_forward
    gather = gather or Gather.apply

    def times(run):
        found = []
        for _ in range(repeat):
            start = time.perf_counter_ns()
            run()
            found.append(time.perf_counter_ns() - start)
        return sorted(found)

    loop = times(lambda: minitorch.cat([model(t) for t in trees]).sum().backward())
    at_once = times(lambda: batched(model, trees, gather).sum().backward())
    return float(loop[0] / at_once[0])
""",
            "integer nanoseconds, sorted lists, and the ratio made a float",
        ),
        WrongAnswer(
            "timeit_and_a_backward_per_tree",
            """\
import timeit


def tree_speedup(model, trees, repeat=3, batched=None, gather=None):
    batched = batched or batched_forward
    gather = gather or Gather.apply

    def per_sample():
        for t in trees:
            model(t).sum().backward()

    def at_once():
        batched(model, trees, gather).sum().backward()

    slow = min(timeit.repeat(per_sample, number=1, repeat=repeat))
    return slow / min(timeit.repeat(at_once, number=1, repeat=repeat))
""",
            "timeit, and one backward per tree (the same work as one backward of the sum)",
        ),
        WrongAnswer(
            "clock_imported_by_name",
            """\
from time import perf_counter


def tree_speedup(model, trees, repeat=3, batched=None, gather=None):
    batched = batched or batched_forward
    gather = gather or Gather.apply
    slow = fast = float("inf")
    for _ in range(repeat):
        start = perf_counter()
        minitorch.cat([model(t) for t in trees]).sum().backward()
        middle = perf_counter()
        batched(model, trees, gather).sum().backward()
        slow, fast = min(slow, middle - start), min(fast, perf_counter() - middle)
    return slow / fast
""",
            "perf_counter imported by name, the two sides taking turns",
        ),
    ],
    "ex7_predict_calls": [
        WrongAnswer(
            "counts_written_as_sums",
            """\
def predict_calls():
    calls = {}
    calls["a"] = 11
    calls["b"] = 5 + 7 + 9 + 11
    calls["c"] = 7 + 11
    calls["d"] = 9 + 11
    calls["e"] = 17
    return calls
""",
            "the dict filled key by key, the per-flush counts written as sums",
        ),
    ],
}
