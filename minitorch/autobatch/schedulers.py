"""Schedulers: put the lazy ops into batches, each batch one call, in an order that respects
dependencies.

A scheduler reads four attributes of each op (`LazyOp` has them; tests and notebooks may use
any object that does):
- `signature`: ops with equal signatures may share a batch; None: the op always runs alone;
- `producers`: the ops whose results it reads (each of them is in `ops`, listed before it);
- `depth`: 0 for an op without producers, else 1 + the largest depth of its producers
  (`depths()` computes it for any graph);
- `matmul_like`: a matrix product, which gains most from a large batch;
and the order of `ops`, which must be an order in which they could run one by one (the order
they were recorded in is). Ops are dict keys by identity (a dataclass needs `eq=False`).

- "depth" groups ops by (depth, signature), depth being 0 for an op that reads no lazy result
  and 1 + the largest depth of its producers otherwise. Simple, but an op that sits at
  different depths in different samples (the last step of sequences of different lengths)
  runs once per depth.
- "agenda" (the default) is DyNet's rule (Neubig, Goldberg and Dyer 2017, "On-the-fly
  operation batching in dynamic computation graphs") run on those same groups: keep the groups
  whose producers' groups have all run; run an unbatchable op if one is ready, else all ready
  groups of the signature whose ops have the lowest average depth (over all ops of that
  signature), preferring other ops to matrix products on ties so that more of those gather.
  An op that sits at different depths in different samples (the output layer after sequences
  of different lengths) then runs once instead of once per depth. Each batch runs at least one
  whole group and no group is split, so it NEVER makes more calls than "depth", on any graph.
- "dynet" is DyNet's agenda node by node, as its source has it (`exec.cc`, autobatch strategy
  1), the default before issue 35: all ready nodes of the signature with the lowest average
  depth. When one step has a signature per case (a different weight per operator of a tree),
  the signatures spread over all depths (`tanh`, `cat`, the leaves' layers) have the lowest
  averages, so each time one operator's nodes finish, they are carried up a level through
  `tanh` and `cat` to that operator's next layer before the other operators' nodes of the same
  height run: one chain at a time, and each level costs several small calls where "depth"
  makes one (91 calls against 25 on 256 Tree-RNN trees with one `Linear` per operator).
  DyNet's source has a guard too (strategy 3: a signature waits while its nodes at the depth
  of its last ready node are not all ready); "agenda" goes one step further and runs whole
  (depth, signature) groups only.

Measured by benchmarks/bench_autobatch_schedulers.py (one torch thread, best of 5 steps of
forward and backward; calls agenda / depth / dynet, step agenda / depth): 256 Tree-RNN trees
with a `Linear` per operator 25 / 25 / 91 calls, 103 / 102 ms (dynet 121 ms); with one
`Linear` 17 / 17 / 17; bench_autobatch's Tree-LSTM 12 / 12 / 12, 122 / 120 ms; 256 sequences
of 5-50 steps with a head per sample 54 / 99 / 54 calls, 204 / 205 ms; 128 trees and 128
sequences in one block 76 / 119 / 133 calls, 172 / 177 ms. Scheduling those 7,750 tree ops
costs 3.2 ms by agenda against 1.0 by depth, which is why depth is 1-2% faster where the calls
are equal. The default stays "agenda": never more calls than depth, fewer wherever an op sits
at several depths, and as fast or faster there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from minitorch.autobatch.lazy import RAW, SAMPLE, SHARED, Pending
from minitorch.autobatch.rules import AddChain, Elementwise
from minitorch.autobatch.signature import OpKind
from minitorch.ops.elementwise import Add

SCHEDULERS = ("agenda", "depth", "dynet")

# NOTE [Add chains]
# `total = total + loss` over the samples (and Python's `sum(losses)`, which starts from 0) is a
# chain: each add reads the one before, so each is one depth deeper and no two can batch. A
# scheduler would run it as one call per sample. But when nobody else reads the running totals
# (the user keeps only the last one, as both patterns do: the placeholders of the others are
# gone), the chain is just a sum of its terms, in another order. `fold_add_chains` replaces it,
# before scheduling, by one `AddChain` op (rules.py) that reads every term; the executor sums
# the terms as a few gathers and one `sum(0)` per batch they come from. The gradient of each
# term is the gradient of the total, as through the chain; the float sum is the same up to
# rounding (the order differs). Only plain adds of equal shapes (no broadcasting) join a chain:
# then the sum has the total's shape, and every term gets the total's gradient as it is.
_SHORTEST_CHAIN = 3  # adds: shorter ones cost little as they are


def fold_add_chains(ops: Sequence[Any]) -> list[Any]:
    """`ops` with each chain of adds that only feeds itself (NOTE [Add chains]) run as one
    `AddChain` op: the chain's last add becomes it (so the ops that read the total still name
    their producer), and the other adds of the chain leave the list."""
    absorbed: dict[Any, list] = {}  # an add that may join a chain -> the adds it takes in
    for op in ops:
        if op.function is not Add:
            continue
        kind = op.kind
        out = kind.outputs[0]
        if not isinstance(kind.rule, Elementwise) or any(
            info.role == SHARED
            or info.role == RAW
            or (info.role == SAMPLE and (info.shape != out.shape or info.dtype != out.dtype))
            for info in kind.args
        ):
            continue
        taken = []
        for position in op.inputs:
            total = op.args[position]  # a running total, if an add made it for this op alone
            before = total.op
            if (
                before in absorbed
                and total.readers == 1
                and total.data_ref() is None
                and before.mode == op.mode
            ):
                taken.append(before)
        absorbed[op] = taken
    inside = {id(before) for taken in absorbed.values() for before in taken}
    removed: set[int] = set()
    for last, taken in absorbed.items():
        if id(last) in inside or not taken:
            continue
        chain, todo = [], [last]
        while todo:
            op = todo.pop()
            chain.append(op)
            todo += absorbed[op]
        if len(chain) >= _SHORTEST_CHAIN:
            _fold(chain)
            removed.update(id(op) for op in chain[1:])
    if not removed:
        return list(ops)
    return [op for op in ops if id(op) not in removed]


def _fold(chain: list) -> None:
    """Make `chain[0]`, the last add of a chain, the `AddChain` of all its terms."""
    last = chain[0]
    members = {id(op) for op in chain}
    terms, producers = [], []
    for op in reversed(chain):  # roughly in recorded order
        for value in op.args:
            if type(value) is Pending:
                if id(value.op) in members:
                    continue  # a running total: it is the sum itself
                producers.append(value.op)
            terms.append(value)
    for op in chain[1:]:
        op.outputs = None  # it never runs: cut its op -> Pending -> op cycle
    last.function = AddChain
    last.args = terms
    last.inputs = [i for i, term in enumerate(terms) if type(term) is Pending]
    last.producers = producers
    last.depth = 1 + max((producer.depth for producer in producers), default=-1)
    last.kind = OpKind(
        index=-1,
        name=f"Add (a chain of {len(chain)} adds, run as one sum)",
        rule=None,
        reason="a chain of adds, folded",
        args=(),
        outputs=last.kind.outputs,
        returns_tuple=False,
        matmul_like=False,
    )
    last.signature = None
    last.matmul_like = False
    last.folded = len(chain)


def schedule(ops: Sequence[Any], scheduler: str) -> list[list[Any]]:
    """The batches, in the order to run them. Every op is in exactly one batch."""
    if scheduler == "agenda":
        return by_agenda(ops)
    if scheduler == "depth":
        return by_depth(ops)
    if scheduler == "dynet":
        return by_dynet(ops)
    raise ValueError(f"unknown scheduler {scheduler!r}: choose one of {SCHEDULERS}")


def depths(ops: Sequence[Any]) -> dict[Any, int]:
    """`op -> depth`: 0 without producers, else 1 + the deepest producer's depth. (A `LazyOp`
    knows its depth already; this is the definition, for any graph.)"""
    depth: dict[Any, int] = {}
    for op in ops:
        d = 0
        for producer in op.producers:
            if depth[producer] >= d:
                d = depth[producer] + 1
        depth[op] = d
    return depth


def by_depth(ops: Sequence[Any]) -> list[list[Any]]:
    """One batch per (depth, signature); unbatchable ops alone; shallow depths first."""
    groups: dict[tuple, list] = {}
    for op in ops:
        signature = op.signature
        key = (op.depth, signature if signature is not None else ("alone", op))
        group = groups.get(key)
        if group is None:
            groups[key] = [op]
        else:
            group.append(op)
    return [groups[key] for key in sorted(groups, key=lambda key: key[0])]


def by_agenda(ops: Sequence[Any]) -> list[list[Any]]:
    """DyNet's agenda over the groups of `by_depth` (see the module docstring): each batch is
    every ready group of one signature, so there are never more batches than groups."""
    index: dict[Any, int] = {}  # (depth, signature), or an op that cannot batch -> its group
    groups: list[list] = []  # group -> its ops, in recorded order
    needs: list[set] = []  # group -> the groups its ops read from
    group_of: dict[Any, int] = {}
    for op in ops:
        signature = op.signature
        key = (op.depth, signature) if signature is not None else op
        g = index.get(key)
        if g is None:
            g = index[key] = len(groups)
            groups.append([op])
            needs.append(set())
        else:
            groups[g].append(op)
        group_of[op] = g
        producers = op.producers
        if producers:  # a producer sits at a lower depth: groups never need themselves
            need = needs[g]
            for producer in producers:
                need.add(group_of[producer])
    # Lowest average depth first; on ties, other ops before matrix products, then the first seen.
    totals: dict[Any, list] = {}  # signature -> [sum of depths, count, matmul_like, first seen]
    for members in groups:
        first = members[0]
        if first.signature is None:
            continue
        total = totals.get(first.signature)
        if total is None:
            totals[first.signature] = [first.depth * len(members), len(members),
                                       first.matmul_like, len(totals)]  # fmt: skip
        else:
            total[0] += first.depth * len(members)
            total[1] += len(members)
    priority = {s: (t[0] / t[1], t[2], t[3]) for s, t in totals.items()}
    consumers: list[list[int]] = [[] for _ in groups]
    waiting = [len(need) for need in needs]  # group -> groups it needs that have not run
    alone: deque = deque()  # ready groups of an op that cannot batch
    ready: dict[Any, list] = {}  # signature -> its ready groups
    for g, need in enumerate(needs):
        for h in need:
            consumers[h].append(g)
        if not need:
            _make_ready(g, groups[g][0].signature, alone, ready)
    batches = []
    while alone or ready:
        chosen = [alone.popleft()] if alone else ready.pop(min(ready, key=priority.__getitem__))
        batch: list = []
        for g in chosen:
            batch += groups[g]
            for consumer in consumers[g]:
                waiting[consumer] -= 1
                if not waiting[consumer]:
                    _make_ready(consumer, groups[consumer][0].signature, alone, ready)
        batches.append(batch)
    if sum(len(batch) for batch in batches) != len(ops):
        raise RuntimeError("autobatch: the lazy graph has a cycle (a producer listed after its op)")
    return batches


def _make_ready(group: int, signature: Any, alone: deque, ready: dict[Any, list]) -> None:
    if signature is None:
        alone.append(group)
    elif signature in ready:
        ready[signature].append(group)
    else:
        ready[signature] = [group]


def by_dynet(ops: Sequence[Any]) -> list[list[Any]]:
    """DyNet's agenda node by node, as its source has it (autobatch strategy 1; the module
    docstring says where it loses)."""
    totals: dict[Any, list] = {}  # signature -> [sum of depths, count, matmul_like, first seen]
    consumers: dict[Any, list] = {}  # op -> the ops that read its results
    waiting: dict[Any, int] = {}  # op -> how many of its producers have not run yet
    alone: deque = deque()  # ready ops that cannot batch
    ready: dict[Any, list] = {}  # signature -> ready ops
    for op in ops:
        signature = op.signature
        if signature is not None:
            total = totals.get(signature)
            if total is None:
                totals[signature] = [op.depth, 1, op.matmul_like, len(totals)]
            else:
                total[0] += op.depth
                total[1] += 1
        producers = op.producers
        if producers:
            waiting[op] = len(producers)
            for producer in producers:
                readers = consumers.get(producer)
                if readers is None:
                    consumers[producer] = [op]
                else:
                    readers.append(op)
        elif signature is None:
            alone.append(op)
        elif signature in ready:
            ready[signature].append(op)
        else:
            ready[signature] = [op]
    # Lowest average depth first; on ties, other ops before matrix products, then the first seen.
    priority = {s: (t[0] / t[1], t[2], t[3]) for s, t in totals.items()}
    batches = []
    while alone or ready:
        if alone:
            batch = [alone.popleft()]
        else:
            batch = ready.pop(min(ready, key=priority.__getitem__))
        batches.append(batch)
        for op in batch:
            for consumer in consumers.get(op, ()):
                left = waiting[consumer] - 1
                waiting[consumer] = left
                if left:
                    continue
                signature = consumer.signature  # the consumer is ready
                if signature is None:
                    alone.append(consumer)
                elif signature in ready:
                    ready[signature].append(consumer)
                else:
                    ready[signature] = [consumer]
    if sum(len(batch) for batch in batches) != len(ops):
        raise RuntimeError("autobatch: the lazy graph has a cycle (a producer listed after its op)")
    return batches


def check_schedule(ops: Sequence[Any], batches: Sequence[Sequence[Any]]) -> None:
    """Raise AssertionError unless `batches` runs every op exactly once, each batch holds ops
    of one signature (or a single op), and every op comes after all its producers."""
    done: set[int] = set()  # ids: ops that define == (dataclasses) need not be hashable
    for number, batch in enumerate(batches):
        signatures = {op.signature for op in batch}
        assert batch, f"batch {number} is empty"
        assert len(batch) == 1 or (len(signatures) == 1 and None not in signatures), (
            f"batch {number} mixes signatures {signatures}"
        )
        for op in batch:
            assert id(op) not in done, f"{op!r} runs twice (again in batch {number})"
            for producer in op.producers:
                assert id(producer) in done, (
                    f"{op!r} in batch {number} runs before its producer {producer!r}"
                )
        done.update(id(op) for op in batch)
    missing = [op for op in ops if id(op) not in done]
    assert not missing, f"{len(missing)} ops never run, e.g. {missing[0]!r}"
