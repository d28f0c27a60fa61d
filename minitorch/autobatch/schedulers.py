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
- "agenda" is DyNet's rule (Neubig, Goldberg and Dyer 2017, "On-the-fly operation batching in
  dynamic computation graphs"): keep the ops whose producers have all run; run an unbatchable
  one if there is any, else all ready ops of the signature whose ops have the lowest average
  depth (over all ops of that signature), preferring other ops to matrix products on ties so
  that more of those gather. An op that sits at different depths in different samples (the
  output layer after sequences of different lengths) then runs once instead of once per depth.
  It is a heuristic, not always better: when one op is split into several signatures (a
  different shared weight per case) and another signature's average depth is lower, it can
  follow one chain at a time and make more calls than "depth" (tests/test_autobatch.py has
  both cases).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

SCHEDULERS = ("agenda", "depth")


def schedule(ops: Sequence[Any], scheduler: str) -> list[list[Any]]:
    """The batches, in the order to run them. Every op is in exactly one batch."""
    if scheduler == "agenda":
        return by_agenda(ops)
    if scheduler == "depth":
        return by_depth(ops)
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
    """DyNet's agenda (see the module docstring)."""
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
