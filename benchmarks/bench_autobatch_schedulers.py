"""autobatch's schedulers side by side: batched calls and step time of "depth", "agenda" (the
default: DyNet's agenda on complete levels) and "dynet" (DyNet's agenda as its source has it,
autobatch strategy 1: the default before issue 35).

One step = forward over the samples inside `autobatch.batch(scheduler)`, loss, backward. The
three schedulers take turns (a busy machine slows all alike) and the fastest step is kept.

    python3 benchmarks/bench_autobatch_schedulers.py --rounds 5

Workloads (hidden 64, one torch thread unless --threads):
  trees: issue 35's Tree-RNN over `make_expression_trees` (a leaf: `nn.Linear` on
    `minitorch.tensor([[value]])` made per sample, then `tanh`; a node: `nn.Linear` on `cat` of
    its children, then `tanh`), with one `nn.Linear` per operator (three signatures for the
    node step) or one for all, and bench_autobatch.py's Tree-LSTM (hidden 128);
  sequences: an `LSTMCell` over sequences of different lengths, each sample's last state ->
    `Linear` (so the head sits at a different depth in each sample);
  mixed: half the samples trees, half sequences, one shared head per sample, in one block;
  per-sample loss: the per-operator trees with each sample's loss added up in the block
    (`total = total + loss`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import torch
from printing import machine_line, table

import minitorch
from minitorch import autobatch
from minitorch.datasets import make_expression_trees, make_sequences

sys.path.insert(0, os.path.dirname(__file__))
import bench_autobatch  # noqa: E402  (the Tree-LSTM workload)

HIDDEN = 64
SCHEDULERS = ("depth", "agenda", "dynet")


class TreeRNN(minitorch.nn.Module):
    def __init__(self, per_operator: bool) -> None:
        super().__init__()
        self.leaf = minitorch.nn.Linear(1, HIDDEN)
        if per_operator:
            self.node = minitorch.nn.ModuleDict(
                {op: minitorch.nn.Linear(2 * HIDDEN, HIDDEN) for op in "+-*"}
            )
        else:
            self.shared = minitorch.nn.Linear(2 * HIDDEN, HIDDEN)
        self.per_operator = per_operator
        self.head = minitorch.nn.Linear(HIDDEN, 1)

    def encode(self, tree) -> minitorch.Tensor:
        if tree.is_leaf:
            return self.leaf(minitorch.tensor([[tree.value]])).tanh()
        layer = self.node[tree.op] if self.per_operator else self.shared
        return layer(minitorch.cat([self.encode(tree.left), self.encode(tree.right)], 1)).tanh()


class SequenceRNN(minitorch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = minitorch.nn.LSTMCell(3, HIDDEN)
        self.head = minitorch.nn.Linear(HIDDEN, 1)

    def encode(self, steps: list) -> minitorch.Tensor:
        state = None
        for x in steps:
            state = self.cell(x, state)
        return state[0]


def trees_step(samples: int, per_operator: bool, loss_per_sample: bool = False) -> Callable:
    minitorch.manual_seed(0)
    model = TreeRNN(per_operator)
    trees, targets = make_expression_trees(samples, seed=0)
    values = targets.tolist()
    target = minitorch.tensor(values).reshape(-1, 1)

    def forward() -> minitorch.Tensor:
        if loss_per_sample:
            total = None
            for tree, value in zip(trees, values):
                loss = ((model.head(model.encode(tree)) - value) ** 2).sum()
                total = loss if total is None else total + loss
            return total
        roots = minitorch.cat([model.encode(tree) for tree in trees])
        return minitorch.nn.functional.mse_loss(model.head(roots), target)

    return forward


def _sequences(samples: int, low: int, high: int) -> list:
    sequences, _ = make_sequences(n=samples, min_length=low, max_length=high, seed=0)
    return [[minitorch.tensor([row]) for row in s.tolist()] for s in sequences]


def sequences_step(samples: int, low: int, high: int) -> Callable:
    minitorch.manual_seed(0)
    model = SequenceRNN()
    steps = _sequences(samples, low, high)

    def forward() -> minitorch.Tensor:
        return minitorch.cat([model.head(model.encode(s)) for s in steps]).pow(2).mean()

    return forward


def mixed_step(samples: int) -> Callable:
    """Half trees (one Linear per operator), half sequences of 5-50 steps, one head."""
    minitorch.manual_seed(0)
    trees_model, sequence_model = TreeRNN(per_operator=True), SequenceRNN()
    trees, _ = make_expression_trees(samples // 2, seed=0)
    steps = _sequences(samples - samples // 2, 5, 50)
    head = minitorch.nn.Linear(HIDDEN, 1)

    def forward() -> minitorch.Tensor:
        outputs = []
        for tree, sequence in zip(trees, steps):
            outputs += [head(trees_model.encode(tree)), head(sequence_model.encode(sequence))]
        return minitorch.cat(outputs).pow(2).mean()

    return forward


def tree_lstm_step() -> Callable:
    return bench_autobatch.tree_per_sample(minitorch, batched=True).forward


WORKLOADS = {
    "trees, 64, one Linear per operator": lambda: trees_step(64, True),
    "trees, 256, one Linear per operator": lambda: trees_step(256, True),
    "trees, 256, one Linear for all": lambda: trees_step(256, False),
    "trees, 256, Tree-LSTM (bench_autobatch a, hidden 128)": tree_lstm_step,
    "sequences, 64 of lengths 3-8": lambda: sequences_step(64, 3, 8),
    "sequences, 256 of lengths 5-50": lambda: sequences_step(256, 5, 50),
    "mixed: 128 trees (per operator) + 128 sequences of 5-50": lambda: mixed_step(256),
    "trees, 64, per operator, loss per sample added in the block": lambda: trees_step(
        64, True, loss_per_sample=True
    ),
}


def run(forward: Callable, scheduler: str) -> tuple[float, object]:
    start = time.perf_counter()
    with autobatch.batch(scheduler):
        loss = forward()
    loss.backward()
    return time.perf_counter() - start, autobatch.stats()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(machine_line("cpu", f"load average {os.getloadavg()[0]:.2f} at the start") + "\n")
    header = [
        "workload", "ops", "calls: depth", "calls: agenda", "calls: dynet (before)",
        "step: depth", "step: agenda", "step: dynet (before)", "scheduling: depth / agenda",
    ]  # fmt: skip
    rows = []
    for name, make in WORKLOADS.items():
        forward = make()
        calls, ops, best = {}, 0, dict.fromkeys(SCHEDULERS, float("inf"))
        scheduling = dict.fromkeys(SCHEDULERS, float("inf"))
        for scheduler in SCHEDULERS:  # warm-up, and the counts (the same every step)
            _, stats = run(forward, scheduler)
            calls[scheduler], ops = stats.calls, stats.ops_recorded
        for _ in range(args.rounds):
            for scheduler in SCHEDULERS:
                seconds, stats = run(forward, scheduler)
                best[scheduler] = min(best[scheduler], seconds)
                scheduling[scheduler] = min(scheduling[scheduler], stats.schedule_seconds)
        rows.append([
            name, str(ops), *(str(calls[s]) for s in SCHEDULERS),
            *(f"{best[s] * 1e3:.0f} ms" for s in SCHEDULERS),
            f"{scheduling['depth'] * 1e3:.1f} / {scheduling['agenda'] * 1e3:.1f} ms",
        ])  # fmt: skip
        print(" | ".join(rows[-1]), flush=True)
    print("\n" + table(header, rows))
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
