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
    python3 benchmarks/bench_autobatch.py --part patterns  # only issue 35's patterns (below)

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

Per-sample code as people write it (issue 35; forward and backward, no optimizer step, three
ways: minitorch per-sample, PyTorch per-sample, minitorch autobatch; target for each: >= 8x
faster than minitorch per-sample and >= 4x faster than PyTorch per-sample):
  i-iv) a Tree-RNN over 256 `make_expression_trees` trees, hidden 64: a leaf makes its input
     with `tensor([[value]])` inside the per-sample code, then `Linear` and `tanh`; a node runs
     its operator's `Linear` on `cat` of its children, then `tanh`; a `Linear` head. Each
     sample's loss is `((prediction - value) ** 2).sum()` with its target as a Python number:
     i) forward in the block, the losses added with `+` after it; ii) forward and loss in the
     block, `total = total + loss`; iii) the losses in a list, `stack(losses).sum()`, iii')
     Python's `sum(losses)`; iv) `cat` of the roots and one batched loss;
  v) an Elman RNN written with `Linear`s and `tanh` (no fused cell) over 256 sequences of 5-50
     steps, hidden 64, each step's input made with `tensor([row])`, a head and a loss per
     sample, `total = total + loss`.
"Where the time goes" splits autobatch's step by `autobatch.stats()` (recording, scheduling,
running the batches) and the rest (the model code's own Python, backward, code after the
block); "vs PyTorch at most" is PyTorch per-sample / model code alone: the speed-up of a
recorder that cost nothing.
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


# Per-sample code as people write it (issue 35) ---------------------------------------------------
PATTERN_HIDDEN = 64
OPERATOR_LINEARS = "+-*"


def tree_rnn(lib: Any) -> Any:
    """Issue 35's Tree-RNN, written once for both libraries: a leaf makes its input with
    `lib.tensor([[value]])` inside the per-sample code, then `Linear` and `tanh`; an operator
    node runs its operator's `Linear` on `cat` of its children, then `tanh`."""

    class TreeRNN(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.leaf = lib.nn.Linear(1, PATTERN_HIDDEN)
            self.node = lib.nn.ModuleDict(
                {op: lib.nn.Linear(2 * PATTERN_HIDDEN, PATTERN_HIDDEN) for op in OPERATOR_LINEARS}
            )
            self.head = lib.nn.Linear(PATTERN_HIDDEN, 1)

        def encode(self, tree: Any) -> Any:
            if tree.is_leaf:
                return self.leaf(lib.tensor([[tree.value]])).tanh()
            children = lib.cat([self.encode(tree.left), self.encode(tree.right)], 1)
            return self.node[tree.op](children).tanh()

    lib.manual_seed(0)
    return TreeRNN()


def squared_error(lib: Any, prediction: Any, value: float) -> Any:
    """One sample's loss, written per sample: `((prediction - value) ** 2).sum()`."""
    return ((prediction - value) ** 2).sum()


def _tree_patterns(lib: Any) -> tuple[Any, dict[str, Callable[[bool], Any]]]:
    """Issue 35's patterns on the Tree-RNN: the model, and name -> forward(batched) giving the
    loss. With `batched`, the per-sample part runs inside `autobatch.batch()`, as the name
    says."""
    trees, targets = minitorch.datasets.make_expression_trees(SAMPLES, seed=0)
    values = targets.tolist()
    target = lib.tensor(values).reshape(-1, 1)
    model = tree_rnn(lib)
    block = _block(lib)

    def loss_after_block(batched: bool) -> Any:
        with block(batched):
            predictions = [model.head(model.encode(tree)) for tree in trees]
        total = squared_error(lib, predictions[0], values[0])
        for prediction, value in zip(predictions[1:], values[1:]):
            total = total + squared_error(lib, prediction, value)
        return total

    def chain_in_block(batched: bool) -> Any:
        with block(batched):
            total = 0
            for tree, value in zip(trees, values):
                loss = squared_error(lib, model.head(model.encode(tree)), value)
                total = total + loss
        return total

    def stacked_list(batched: bool) -> Any:
        with block(batched):
            losses = [
                squared_error(lib, model.head(model.encode(tree)), value)
                for tree, value in zip(trees, values)
            ]
            total = lib.stack(losses).sum()
        return total

    def python_sum(batched: bool) -> Any:
        with block(batched):
            total = sum(
                squared_error(lib, model.head(model.encode(tree)), value)
                for tree, value in zip(trees, values)
            )
        return total

    def cat_one_loss(batched: bool) -> Any:
        with block(batched):
            roots = lib.cat([model.encode(tree) for tree in trees])
            total = lib.nn.functional.mse_loss(model.head(roots), target)
        return total

    return model, {
        "i) forward in the block, per-sample losses added with + after it": loss_after_block,
        "ii) forward and loss in the block, total = total + loss": chain_in_block,
        "iii) losses in a list, stack(losses).sum()": stacked_list,
        "iii') losses in a list, Python sum(losses)": python_sum,
        "iv) forward, cat of the roots, one batched loss": cat_one_loss,
    }


def sequence_rnn(lib: Any) -> Any:
    """An Elman cell written with `Linear`s and `tanh` (not a fused cell), a head per sample."""

    class SequenceRNN(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.input = lib.nn.Linear(3, PATTERN_HIDDEN)
            self.hidden = lib.nn.Linear(PATTERN_HIDDEN, PATTERN_HIDDEN)
            self.head = lib.nn.Linear(PATTERN_HIDDEN, 1)

        def forward(self, rows: list) -> Any:
            h = lib.zeros(1, PATTERN_HIDDEN)
            for row in rows:
                h = (self.input(lib.tensor([row])) + self.hidden(h)).tanh()
            return self.head(h)

    lib.manual_seed(0)
    return SequenceRNN()


def _sequence_patterns(lib: Any) -> tuple[Any, dict[str, Callable[[bool], Any]]]:
    sequences, labels = _sequences()
    values = [float(label) for label in labels]
    model = sequence_rnn(lib)
    block = _block(lib)

    def per_step_cells(batched: bool) -> Any:
        with block(batched):
            total = 0
            for rows, value in zip(sequences, values):
                total = total + squared_error(lib, model(rows), value)
        return total

    return model, {
        "v) Elman RNN (Linear + tanh per step, inputs made per step), 5-50 steps, "
        "a head and loss per sample, total = total + loss": per_step_cells
    }


class _NoBlock:
    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: Any) -> None:
        pass


def _block(lib: Any) -> Callable[[bool], Any]:
    """`block(batched)`: `autobatch.batch()` when batched (minitorch only), else nothing."""
    return lambda batched: autobatch.batch() if batched and lib is minitorch else _NoBlock()


def pattern_steps(make: Callable[[Any], dict]) -> dict[str, dict[str, Callable[[], Any]]]:
    """pattern -> {run name -> one step (zero the gradients, forward, backward)}."""
    ours, theirs = make(minitorch), make(torch)
    steps = {}
    for name in ours[1]:
        steps[name] = {
            "minitorch per-sample": _step(ours[0], ours[1][name], batched=False),
            "PyTorch per-sample": _step(theirs[0], theirs[1][name], batched=False),
            "minitorch autobatch": _step(ours[0], ours[1][name], batched=True),
        }
    return steps


def _step(model: Any, forward: Callable[[bool], Any], batched: bool) -> Callable[[], Any]:
    def step() -> Any:
        model.zero_grad()
        loss = forward(batched)
        loss.backward()
        return loss

    step.forward = lambda: forward(False)  # for model_code_seconds
    return step


PATTERNS = (_tree_patterns, _sequence_patterns)


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
    (run once, then kept), does the same for factories (`tensor`, `zeros` ...), and reads and
    in-place writes pass through. Inside it,
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
        # A factory of numbers (`tensor([[value]])` per leaf) hands back a cached tensor too: a
        # recorder need not build each small tensor (autobatch makes them all in one call).
        key = (factory, len(args), *kwargs, *(len(a) for a in args if isinstance(a, list)))
        result = self.results.get(key)
        if result is None:
            with self.paused():
                result = self.results[key] = factory(*args, **kwargs)
        return result

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


def friendly_table(rounds: int) -> tuple[str, list[str]]:
    """The friendly workloads (a, b) four ways, and a note per workload."""
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
        best = interleaved_best(runs, rounds)
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
    return table(header, rows), notes


def patterns_table(rounds: int) -> tuple[str, list[str]]:
    """Issue 35's per-sample patterns three ways (forward + backward), and a note per pattern.

    "where the time goes" is autobatch's step split by `autobatch.stats()` (recording,
    scheduling, running the batches) and the rest (backward, code after the block); "model
    code alone" is the floor of `CachedResults`, and "vs PyTorch at most" the speed-up over
    PyTorch per-sample of a recorder that cost nothing beyond it."""
    header = [
        "pattern", "minitorch per-sample", "PyTorch per-sample", "minitorch autobatch",
        "autobatch vs minitorch", "autobatch vs PyTorch",
        "where the time goes (record / schedule / run / rest)", "ops recorded", "calls",
        "model code alone", "vs PyTorch at most",
    ]  # fmt: skip
    rows, notes = [], []
    for make in PATTERNS:
        for name, runs in pattern_steps(make).items():
            losses = {run: float(step().item()) for run, step in runs.items()}
            spread = max(losses.values()) - min(losses.values())
            best = interleaved_best(runs, rounds)
            auto_run = runs["minitorch autobatch"]
            split = {"record": [], "schedule": [], "run": [], "step": []}
            for _ in range(3):
                start = time.perf_counter()
                auto_run()
                seconds = time.perf_counter() - start
                stats = autobatch.stats()
                split["record"].append(stats.record_seconds)
                split["schedule"].append(stats.schedule_seconds)
                split["run"].append(stats.run_seconds)
                split["step"].append(seconds)
            fastest = min(range(3), key=split["step"].__getitem__)
            record, scheduling, running, whole = (split[k][fastest] for k in split)
            rest = whole - record - scheduling - running
            floor = model_code_seconds(runs["minitorch per-sample"])
            mine, theirs = best["minitorch per-sample"], best["PyTorch per-sample"]
            auto = best["minitorch autobatch"]
            rows.append([
                name, f"{mine * 1e3:.0f} ms", f"{theirs * 1e3:.0f} ms", f"{auto * 1e3:.1f} ms",
                figure(mine / auto, "{:.1f}x", at_least(8)),
                figure(theirs / auto, "{:.1f}x", at_least(4)),
                f"{record * 1e3:.1f} / {scheduling * 1e3:.1f} / {running * 1e3:.1f} / "
                f"{rest * 1e3:.1f} ms",
                f"{stats.ops_recorded:,}", f"{stats.calls:,}", f"{floor * 1e3:.1f} ms",
                f"{theirs / floor:.1f}x",
            ])  # fmt: skip
            print(" | ".join(rows[-1]), flush=True)
            notes.append(f"{name}: first-step losses agree to {spread:.1e}; {stats}")
    return table(header, rows), notes


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
    parser.add_argument(
        "--part",
        choices=("all", "friendly", "patterns"),
        default="all",
        help="the friendly workloads (a, b), issue 35's per-sample patterns, or both",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.gc_off:
        gc.disable()
    collector = "garbage collector " + ("off" if args.gc_off else "on")
    print(machine_line("cpu", collector) + "\n")
    tables, notes = [], []
    if args.part in ("all", "friendly"):
        results, more = friendly_table(args.rounds)
        tables.append(results)
        notes += more
    if args.part in ("all", "patterns"):
        results, more = patterns_table(args.rounds)
        tables.append(results)
        notes += more
    print("\n\n".join(tables))
    print("\n" + targets_line(*tables))
    print()
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
