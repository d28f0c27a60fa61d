"""Batching per-sample dynamic graphs: one training step four ways, side by side in one run.

Each workload is a model whose graph differs for every sample. One training step = zero_grad,
forward over 256 samples, loss, backward, Adam step. It runs:
- minitorch per-sample: the per-sample code, eagerly, one sample after the other;
- PyTorch per-sample: the very same code on torch;
- minitorch autobatch: the very same code inside `with minitorch.autobatch.batch():`;
- hand-batched (minitorch): code written for the batch (trees level by level, sequences
  packed into `nn.LSTM`), the best one can do by hand.
All four start from the same weights and data, and the script checks that their losses agree.
Measurements take turns (a busy machine slows all alike) and the fastest step is kept.

    python3 benchmarks/bench_autobatch.py             # one torch thread (see --threads)
    python3 benchmarks/bench_autobatch.py --threads 0  # torch's default number of threads
    python3 benchmarks/bench_autobatch.py --gc-off    # no cyclic garbage collection in any run

`autobatch.batch()` pauses Python's cyclic garbage collector inside its block (the lazy graph
is many small objects); the other runs keep it on, as a training loop does, unless --gc-off.

Workloads (the issue's targets in brackets):
  a) a Tree-LSTM over 256 `make_expression_trees` trees, hidden 128, predicting each
     expression's value: a leaf runs an LSTMCell on its number, an operator node runs
     another one on the operator (one-hot) with the sum of its children's states
     [autobatch >= 8x faster than minitorch per-sample, >= 4x faster than PyTorch per-sample,
     >= 70% of hand-batched throughput]
  b) an LSTMCell over 256 sequences of lengths 5-50 (`make_sequences`), hidden 128, the last
     hidden state -> linear classifier       [autobatch >= 70% of hand-batched throughput]
The overhead column is autobatch's own time (recording + scheduling, `autobatch.stats()`).
"Model code alone" is the per-sample forward's own Python (module calls, argument checks),
measured under a recorder that only hands back cached results (`CachedResults`): any
recorder costs at least that on top of the batched work, so hand / (hand + model code) is the
largest share of hand-batched throughput that batching the per-sample code can reach.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import torch
from printing import at_least, figure, machine_line, table, targets_line

import minitorch
import minitorch.datasets
from minitorch import autobatch
from minitorch.autograd.record import Recorder

HIDDEN = 128
SAMPLES = 256
RUNS = ("minitorch per-sample", "PyTorch per-sample", "minitorch autobatch", "hand-batched")


# a) Tree-LSTM over expression trees --------------------------------------------------------------
OPERATORS = "+-*"


def tree_model(lib: Any) -> Any:
    """The per-sample Tree-LSTM, written once for both libraries."""

    class TreeLSTM(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.leaf = lib.nn.LSTMCell(1, HIDDEN)
            self.node = lib.nn.LSTMCell(len(OPERATORS), HIDDEN)
            self.head = lib.nn.Linear(HIDDEN, 1)

        def encode(self, tree: Any, data: Any) -> tuple:
            """(h, c) of a tree's root: children first, their states summed."""
            if tree.is_leaf:
                return self.leaf(data.leaf_inputs[id(tree)], data.zero_state)
            h_left, c_left = self.encode(tree.left, data)
            h_right, c_right = self.encode(tree.right, data)
            state = (h_left + h_right, c_left + c_right)
            return self.node(data.operator_inputs[tree.op], state)

    lib.manual_seed(0)
    return TreeLSTM()


class TreeData:
    """The trees and their inputs as tensors of one library (made once, outside the step)."""

    def __init__(self, lib: Any, trees: list, targets: list[float]) -> None:
        self.trees = trees
        self.targets = lib.tensor(targets).reshape(-1, 1)
        self.leaf_inputs = {id(leaf): lib.tensor([[leaf.value]]) for leaf in _leaves(trees)}
        eye = lib.eye(len(OPERATORS))
        self.operator_inputs = {op: eye[i : i + 1].clone() for i, op in enumerate(OPERATORS)}
        self.zero_state = (lib.zeros(1, HIDDEN), lib.zeros(1, HIDDEN))


def _leaves(trees: list) -> list:
    found, stack = [], list(trees)
    while stack:
        tree = stack.pop()
        if tree.is_leaf:
            found.append(tree)
        else:
            stack += [tree.left, tree.right]
    return found


def tree_per_sample(lib: Any, batched: bool = False) -> Callable[[], Any]:
    trees, targets = minitorch.datasets.make_expression_trees(SAMPLES, seed=0)
    data = TreeData(lib, trees, targets.tolist())
    model = tree_model(lib)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)

    def forward() -> Any:
        roots = lib.cat([model.encode(tree, data)[0] for tree in trees])
        return lib.nn.functional.mse_loss(model.head(roots), data.targets)

    def step() -> Any:
        optimizer.zero_grad()
        if batched:
            with autobatch.batch():
                loss = forward()
        else:
            loss = forward()
        loss.backward()
        optimizer.step()
        return loss

    step.forward = forward  # for model_code_seconds
    return step


def tree_by_height() -> Callable[[], Any]:
    """The Tree-LSTM batched by hand: all nodes of one height in one LSTMCell call."""
    trees, targets = minitorch.datasets.make_expression_trees(SAMPLES, seed=0)
    model = tree_model(minitorch)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=1e-3)
    levels: list[list] = []  # nodes by height
    where: dict[int, int] = {}  # id(node) -> its row among all nodes, level by level

    def height(tree: Any) -> int:
        h = 0 if tree.is_leaf else 1 + max(height(tree.left), height(tree.right))
        while len(levels) <= h:
            levels.append([])
        levels[h].append(tree)
        return h

    for tree in trees:
        height(tree)
    for level in levels:
        for tree in level:
            where[id(tree)] = len(where)

    def rows(nodes: list) -> minitorch.Tensor:
        return minitorch.tensor([where[id(n)] for n in nodes])

    leaf_x = minitorch.tensor([[leaf.value] for leaf in levels[0]])
    zeros = minitorch.zeros(len(levels[0]), HIDDEN)
    plan = [
        (
            rows([n.left for n in level]),
            rows([n.right for n in level]),
            minitorch.eye(len(OPERATORS))[[OPERATORS.index(n.op) for n in level]],
        )
        for level in levels[1:]
    ]
    roots, target = rows(trees), targets.reshape(-1, 1)

    def step() -> Any:
        optimizer.zero_grad()
        h, c = model.leaf(leaf_x, (zeros, zeros))
        for left, right, x in plan:
            h_in = h.index_select(0, left) + h.index_select(0, right)
            c_in = c.index_select(0, left) + c.index_select(0, right)
            h_new, c_new = model.node(x, (h_in, c_in))
            h, c = minitorch.cat([h, h_new]), minitorch.cat([c, c_new])
        loss = minitorch.nn.functional.mse_loss(model.head(h.index_select(0, roots)), target)
        loss.backward()
        optimizer.step()
        return loss

    return step


# b) LSTM over sequences of different lengths -----------------------------------------------------
def sequence_model(lib: Any) -> tuple:
    lib.manual_seed(0)
    return lib.nn.LSTMCell(3, HIDDEN), lib.nn.Linear(HIDDEN, 2)


def _sequences() -> tuple[list, list]:
    sequences, labels = minitorch.datasets.make_sequences(
        n=SAMPLES, min_length=5, max_length=50, seed=0
    )
    return [s.tolist() for s in sequences], labels.tolist()


def sequence_per_sample(lib: Any, batched: bool = False) -> Callable[[], Any]:
    sequences, labels = _sequences()
    steps = [[lib.tensor([row]) for row in sequence] for sequence in sequences]
    labels = lib.tensor(labels)
    zero = (lib.zeros(1, HIDDEN), lib.zeros(1, HIDDEN))
    cell, head = sequence_model(lib)
    optimizer = lib.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-3)

    def encode(inputs: list) -> Any:
        h, c = zero
        for x in inputs:
            h, c = cell(x, (h, c))
        return h

    def forward() -> Any:
        last = lib.cat([encode(inputs) for inputs in steps])
        return lib.nn.functional.cross_entropy(head(last), labels)

    def step() -> Any:
        optimizer.zero_grad()
        if batched:
            with autobatch.batch():
                loss = forward()
        else:
            loss = forward()
        loss.backward()
        optimizer.step()
        return loss

    step.forward = forward  # for model_code_seconds
    return step


def sequence_packed() -> Callable[[], Any]:
    """The same model batched by hand: the sequences packed, one `nn.LSTM` call."""
    sequences, labels = _sequences()
    cell, head = sequence_model(minitorch)
    lstm = minitorch.nn.LSTM(3, HIDDEN)
    with minitorch.no_grad():  # the same weights as the cell
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(lstm, f"{name}_l0").copy_(getattr(cell, name))
    padded = minitorch.nn.utils.rnn.pad_sequence([minitorch.tensor(s) for s in sequences])
    lengths = minitorch.tensor([len(s) for s in sequences])
    labels = minitorch.tensor(labels)
    optimizer = minitorch.optim.Adam([*lstm.parameters(), *head.parameters()], lr=1e-3)

    def step() -> Any:
        optimizer.zero_grad()
        packed = minitorch.nn.utils.rnn.pack_padded_sequence(padded, lengths, enforce_sorted=False)
        _, (h_n, _) = lstm(packed)
        loss = minitorch.nn.functional.cross_entropy(head(h_n[-1]), labels)
        loss.backward()
        optimizer.step()
        return loss

    return step


WORKLOADS = {
    f"a) Tree-LSTM, {SAMPLES} expression trees, hidden {HIDDEN}": (tree_per_sample, tree_by_height),
    f"b) LSTM, {SAMPLES} sequences of 5-50 steps, hidden {HIDDEN}": (
        sequence_per_sample,
        sequence_packed,
    ),
}


# Measuring ---------------------------------------------------------------------------------------
def interleaved_best(runs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """The fastest step of each run, in seconds, over `rounds` rounds in which the runs take
    turns (after one warm-up step each). In each round a run makes at least two steps in a
    row, as a training loop does (the first one after another run is a little slower), and
    fast runs make up to five."""
    best = {name: float("inf") for name in runs}
    calls = {}
    for name, run in runs.items():
        start = time.perf_counter()
        run()
        calls[name] = max(2, min(5, int(1.0 / (time.perf_counter() - start))))
    for _ in range(rounds):
        for name, run in runs.items():
            for _ in range(calls[name]):
                start = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - start)
    return best


def overhead(run: Callable[[], Any], steps: int = 3) -> tuple[float, float]:
    """autobatch's own time in one step (recording, scheduling), best of `steps`."""
    record = schedule = float("inf")
    for _ in range(steps):
        run()
        stats = autobatch.stats()
        record = min(record, stats.record_seconds)
        schedule = min(schedule, stats.schedule_seconds)
    return record, schedule


class CachedResults(Recorder):
    """A forward record that does the least any recorder must do: give each op a result. It
    hands back what the first op of the same class on arguments of the same shapes returned
    (run once, then kept), and reads, creations and in-place writes pass through. Inside it,
    what the per-sample forward costs is its Python alone (module calls, argument checks,
    function calls): a floor under any recorder, autobatch's included."""

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[tuple, Any] = {}

    def apply(self, function: type, args: tuple) -> Any:
        key = (function, *[a.shape for a in args if isinstance(a, minitorch.Tensor)])
        result = self.results.get(key)
        if result is None:
            with self.paused():
                result = self.results[key] = function.apply(*args)
        return result

    def create(self, factory: Callable, args: tuple, kwargs: dict) -> Any:
        with self.paused():
            return factory(*args, **kwargs)

    def created(self, factory: Callable, args: tuple, kwargs: dict, result: Any) -> None:
        pass

    def read(self, tensor: Any, kind: str, reader: Callable) -> Any:
        with self.paused():
            return reader(tensor)

    def slot_of(self, t: Any) -> int:
        return 0

    def wrote(self, target: Any, source: Any) -> None:
        pass

    def opaque(self, what: str) -> None:
        pass


def model_code_seconds(per_sample_step: Callable[[], Any], steps: int = 5) -> float:
    """The fastest of `steps` runs of the per-sample forward under `CachedResults`."""
    recorder, best = CachedResults(), float("inf")
    for _ in range(steps + 1):  # the first run fills the cache
        start = time.perf_counter()
        with recorder:
            per_sample_step.forward()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads for all runs (0: torch's default); on 2 cores, two-thread timings "
        "of small ops are noisy",
    )
    parser.add_argument("--gc-off", action="store_true", help="no garbage collection in any run")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.gc_off:
        gc.disable()
    collector = "garbage collector " + ("off" if args.gc_off else "on")
    print(machine_line("cpu", collector) + "\n")
    header = [
        "workload", "minitorch per-sample", "PyTorch per-sample", "minitorch autobatch",
        "hand-batched", "autobatch vs minitorch", "autobatch vs PyTorch", "% of hand-batched",
        "overhead (record + schedule)", "model code alone", "% of hand-batched at most",
    ]  # fmt: skip
    rows, notes = [], []
    for name, (per_sample, by_hand) in WORKLOADS.items():
        runs = dict(
            zip(
                RUNS,
                (
                    per_sample(minitorch),
                    per_sample(torch),
                    per_sample(minitorch, batched=True),
                    by_hand(),
                ),
            )
        )
        losses = {run: step().item() for run, step in runs.items()}  # the first step's losses
        spread = max(losses.values()) - min(losses.values())
        best = interleaved_best(runs, args.rounds)
        record, schedule = overhead(runs["minitorch autobatch"])
        floor = model_code_seconds(runs["minitorch per-sample"])
        mine, theirs = best["minitorch per-sample"], best["PyTorch per-sample"]
        auto, hand = best["minitorch autobatch"], best["hand-batched"]
        tree = name.startswith("a)")  # the speed-up targets are for the trees
        rows.append([
            name, f"{mine * 1e3:.0f} ms", f"{theirs * 1e3:.0f} ms", f"{auto * 1e3:.1f} ms",
            f"{hand * 1e3:.1f} ms",
            figure(mine / auto, "{:.1f}x", at_least(8) if tree else None),
            figure(theirs / auto, "{:.1f}x", at_least(4) if tree else None),
            figure(hand / auto * 100, "{:.0f}%", at_least(70)),
            f"{record * 1e3:.1f} + {schedule * 1e3:.1f} ms", f"{floor * 1e3:.1f} ms",
            f"{hand / (hand + floor) * 100:.0f}%",
        ])  # fmt: skip
        notes.append(f"{name}: first-step losses agree to {spread:.1e}; {autobatch.stats()}")
    results = table(header, rows)
    print(results)
    print("\n" + targets_line(results))
    print()
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
