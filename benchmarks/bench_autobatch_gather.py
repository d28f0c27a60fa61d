"""The backward of autobatch's row gathers (`SplitRows`), before and after issue 35, with one
and with two torch threads.

Before, the gradient rows of a batched result came back by `index_add_`, one call per reader.
On CPU, torch's `index_add_` on dim 0 takes a path made for graph networks (a parallel radix
sort of the index, then `parallel_for` loops of grain 1): with two torch threads every call
enters several parallel regions, however small, and on a busy machine each one waits until
the OS runs the other thread. Now (`add_rows` in minitorch/autobatch/gather.py, NOTE
[Scatter-add without index_add_]), with more than one torch thread, distinct rows are copied
with `index_copy_` and rows read more than once are added in rounds of distinct rows; with
one thread `index_add_` stays (it is the fastest there).

The first table times the alternatives on one call, shaped as the trees' batches read rows:
`index_add_`, `scatter_add_` (the same path), `index_put_(accumulate=True)` on sorted rows, a
sort + `segment_reduce`, a one-hot matrix product, `index_copy_` (distinct rows only) and
`add_rows`. The second times the real calls: the groups of rows that every `SplitRows` of one
autobatch step cuts, recorded on two tree workloads (random gradients of the same shapes):
  a) bench_autobatch.py's Tree-LSTM: 256 expression trees, hidden 128, `nn.LSTMCell`;
  b) issue 35's Tree-RNN: 256 trees, hidden 64, a leaf's input made by `minitorch.tensor`
     inside the per-sample code, a node `nn.Linear` on `cat` of its children, then `tanh`.
Each round runs both implementations on every call, with 1 and with 2 threads, taking turns;
the figures are per call (median and 99th percentile over all rounds) and per step (all the
step's calls, best and median round). The last table times the whole `loss.backward()` of
the Tree-LSTM step (a) with each implementation, and the gathers' backward inside it. With two
threads on a busy machine, every other op above torch's grain size (32,768 elements: the
matrix products, the LSTM cell's backward) can wait for the other thread too, so the whole
backward stays slower than with one thread: that is torch's threading, the same for any
model; the gathers no longer add to it more than any other op.

    python3 benchmarks/bench_autobatch_gather.py --rounds 20
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch
from printing import machine_line, table

import minitorch
from minitorch import autobatch
from minitorch.autobatch import gather
from minitorch.datasets import make_expression_trees

sys.path.insert(0, os.path.dirname(__file__))
import bench_autobatch  # noqa: E402  (the Tree-LSTM workload)


def index_add_rows(shape: torch.Size, listed: list[tuple]) -> torch.Tensor:
    """The backward before issue 35: zeros, then `index_add_` per group of rows."""
    total = listed[0][0].new_zeros(shape)
    for grad, group in listed:
        if isinstance(group, torch.Tensor):
            total.index_add_(0, group, grad)
        else:
            total[group] += grad
    return total


IMPLEMENTATIONS = {"index_add_ (before)": index_add_rows, "add_rows (now)": gather.add_rows}


# The alternatives, on one call -------------------------------------------------------------------
def alternatives(rows: int, width: int, index: torch.Tensor) -> dict[str, Callable[[], object]]:
    """Ways to compute zeros(rows, 1, width) with gradient rows added at `index` (sorted)."""
    grad = torch.randn(len(index), 1, width)
    expanded = index.view(-1, 1, 1).expand(len(index), 1, width)
    distinct = len(set(index.tolist())) == len(index)

    def segment_sum() -> torch.Tensor:  # sort (here: sorted already) + a sum per run of rows
        unique, counts = torch.unique_consecutive(index, return_counts=True)
        sums = torch.segment_reduce(grad, "sum", lengths=counts)
        return torch.zeros(rows, 1, width).index_copy_(0, unique, sums)

    found = {
        "index_add_": lambda: torch.zeros(rows, 1, width).index_add_(0, index, grad),
        "scatter_add_": lambda: torch.zeros(rows, 1, width).scatter_add_(0, expanded, grad),
        "index_put_ accumulate": lambda: torch.zeros(rows, 1, width).index_put_(
            (index,), grad, accumulate=True
        ),
        "sort + segment_reduce": segment_sum,
        "one-hot matmul": lambda: (
            torch.zeros(rows, len(index)).index_put_(
                (index, torch.arange(len(index))), torch.tensor(1.0)
            )
            @ grad.reshape(len(index), width)
        ).reshape(rows, 1, width),
        "add_rows": lambda: gather.add_rows(torch.Size((rows, 1, width)), [(grad, index)]),
    }
    if distinct:
        found["index_copy_ (distinct rows)"] = lambda: torch.zeros(rows, 1, width).index_copy_(
            0, index, grad
        )
    return found


def compare_alternatives(calls: int) -> list[list[str]]:
    rows_out = []
    generator = torch.Generator().manual_seed(0)
    distinct = torch.randperm(1703, generator=generator)[:619]
    repeated = torch.randint(0, 380, (261,), generator=generator)
    shapes = {  # (rows, width, index): as the trees' batches read them
        "1703 x 128, 619 distinct rows": (1703, 128, distinct),
        "1703 x 64, 619 distinct rows": (1703, 64, distinct),
        "380 x 64, 261 rows, some twice": (380, 64, repeated),
    }
    for shape, (rows, width, index) in shapes.items():
        index = index.sort().values
        found = alternatives(rows, width, index)
        expected = found["index_add_"]()
        times: dict[tuple, list[float]] = {}
        for run in found.values():
            torch.testing.assert_close(run(), expected, rtol=1e-5, atol=1e-5)
        for _ in range(calls // 10):
            for threads in (1, 2):
                torch.set_num_threads(threads)
                for run in found.values():  # one untimed call after the switch
                    run()
                for name, run in found.items():
                    for _ in range(10):
                        start = time.perf_counter()
                        run()
                        times.setdefault((name, threads), []).append(time.perf_counter() - start)
        for name in found:
            cells = [shape, name]
            for threads in (1, 2):
                spent = sorted(times[(name, threads)])
                cells += [ms(statistics.median(spent)), ms(spent[int(len(spent) * 0.99)]),
                          f"{sum(spent) / len(spent) * 1e3:.2f} ms"]  # fmt: skip
            rows_out.append(cells)
    return rows_out


# The workloads ------------------------------------------------------------------------------------
HIDDEN_RNN = 64


class TreeRNN(minitorch.nn.Module):
    """Issue 35's Tree-RNN, written the ordinary way."""

    def __init__(self) -> None:
        super().__init__()
        self.leaf = minitorch.nn.Linear(1, HIDDEN_RNN)
        self.node = minitorch.nn.Linear(2 * HIDDEN_RNN, HIDDEN_RNN)
        self.head = minitorch.nn.Linear(HIDDEN_RNN, 1)

    def encode(self, tree) -> minitorch.Tensor:
        if tree.is_leaf:
            return self.leaf(minitorch.tensor([[tree.value]])).tanh()
        children = minitorch.cat([self.encode(tree.left), self.encode(tree.right)], 1)
        return self.node(children).tanh()


def tree_rnn_step(samples: int = 256) -> Callable[[], minitorch.Tensor]:
    minitorch.manual_seed(0)
    model = TreeRNN()
    trees, targets = make_expression_trees(samples, seed=0)
    target = minitorch.tensor(targets.tolist()).reshape(-1, 1)

    def step() -> minitorch.Tensor:
        model.zero_grad()
        with autobatch.batch():
            roots = minitorch.cat([model.encode(tree) for tree in trees])
            loss = minitorch.nn.functional.mse_loss(model.head(roots), target)
        loss.backward()
        return loss

    return step


def recorded_calls(step: Callable[[], object]) -> list[tuple]:
    """(shape, [(grad, group)]) of every SplitRows of one step that cuts rows by an index."""
    calls = []
    forward = gather.SplitRows.forward

    def spy(ctx, source, groups):
        if any(isinstance(g, torch.Tensor) for g in groups):
            calls.append((source.shape, source.dtype, groups))
        return forward(ctx, source, groups)

    gather.SplitRows.forward = staticmethod(spy)
    try:
        step()
    finally:
        gather.SplitRows.forward = staticmethod(forward)
    generator = torch.Generator().manual_seed(0)
    out = []
    for shape, dtype, groups in calls:
        listed = []
        for group in groups:
            rows = torch.arange(shape[0])[group]
            grad_shape = (*rows.shape, *shape[1:])
            listed.append((torch.randn(grad_shape, generator=generator, dtype=dtype), group))
        out.append((shape, listed))
    return out


# Measuring ---------------------------------------------------------------------------------------
def per_call(calls: list[tuple], rounds: int) -> dict[tuple, list[list[float]]]:
    """(implementation, threads) -> per round, the seconds of each call; the results of both
    implementations are checked equal first."""
    for shape, listed in calls:
        torch.testing.assert_close(index_add_rows(shape, listed), gather.add_rows(shape, listed))
    times: dict[tuple, list[list[float]]] = {}
    for _ in range(rounds):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for implementation in IMPLEMENTATIONS.values():  # untimed, after the switch
                implementation(*calls[0])
            for name, implementation in IMPLEMENTATIONS.items():
                spent = []
                for shape, listed in calls:
                    start = time.perf_counter()
                    implementation(shape, listed)
                    spent.append(time.perf_counter() - start)
                times.setdefault((name, threads), []).append(spent)
    return times


def whole_backward(rounds: int) -> dict[tuple, list[tuple[float, float]]]:
    """(implementation, threads) -> per round, seconds of the Tree-LSTM step's `loss.backward()`
    and of the gathers' backward inside it (the two implementations alternate which goes first)."""
    step = bench_autobatch.tree_per_sample(minitorch, batched=True)
    times: dict[tuple, list[tuple[float, float]]] = {}
    original = gather.add_rows
    inside = [0.0]

    def timed(implementation: Callable) -> Callable:
        def run(shape: torch.Size, listed: list[tuple]) -> torch.Tensor:
            start = time.perf_counter()
            try:
                return implementation(shape, listed)
            finally:
                inside[0] += time.perf_counter() - start

        return run

    try:
        for number in range(rounds):
            for threads in (1, 2):
                torch.set_num_threads(threads)
                order = list(IMPLEMENTATIONS.items())
                for name, implementation in order[:: 1 if number % 2 else -1]:
                    gather.add_rows = timed(implementation)
                    with autobatch.batch():
                        loss = step.forward()
                    inside[0] = 0.0
                    start = time.perf_counter()
                    loss.backward()
                    spent = (time.perf_counter() - start, inside[0])
                    times.setdefault((name, threads), []).append(spent)
    finally:
        gather.add_rows = original
    return times


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print(machine_line("cpu", f"load average {os.getloadavg()[0]:.2f} at the start") + "\n")
    header = ["call", "implementation"] + [
        f"{what}, {threads} thread{'s' if threads > 1 else ''}"
        for threads in (1, 2)
        for what in ("median", "99th percentile", "mean")
    ]
    print("One scatter-add call, the alternatives (per call):\n")
    print(table(header, compare_alternatives(10 * args.rounds)) + "\n", flush=True)
    workloads = {
        "a) Tree-LSTM, hidden 128": lambda: bench_autobatch.tree_per_sample(minitorch, True)(),
        "b) Tree-RNN, hidden 64": tree_rnn_step(),
    }
    header = [
        "workload", "implementation", "torch threads", "calls per step", "per call: median",
        "per call: 99th percentile", "per call: slowest", "per step: best", "per step: median",
    ]  # fmt: skip
    rows = []
    for workload, step in workloads.items():
        calls = recorded_calls(step)
        sizes = [
            sum(len(torch.arange(s[0])[g].reshape(-1)) for _, g in listed) for s, listed in calls
        ]
        print(f"{workload}: {len(calls)} calls, rows read {min(sizes)}-{max(sizes)}, "
              f"source rows up to {max(s[0] for s, _ in calls)}")  # fmt: skip
        for (name, threads), spent in per_call(calls, args.rounds).items():
            flat = sorted(t for one in spent for t in one)
            steps = [sum(one) for one in spent]
            rows.append([
                workload, name, str(threads), str(len(calls)), ms(statistics.median(flat)),
                ms(flat[int(len(flat) * 0.99)]), ms(flat[-1]), ms(min(steps)),
                ms(statistics.median(steps)),
            ])  # fmt: skip
    print("\n" + table(header, rows) + "\n")
    header = ["implementation", "torch threads", "backward: best", "backward: median",
              "gathers' backward in it: median", "gathers' backward: slowest"]  # fmt: skip
    rows = []
    for (name, threads), spent in sorted(whole_backward(max(3, args.rounds // 2)).items(),
                                         key=lambda item: item[0][1]):  # fmt: skip
        totals, gathers = [t for t, _ in spent], [g for _, g in spent]
        rows.append([name, str(threads), ms(min(totals)), ms(statistics.median(totals)),
                     ms(statistics.median(gathers)), ms(max(gathers))])  # fmt: skip
    print("a) Tree-LSTM step, `loss.backward()` as a whole:\n\n" + table(header, rows))
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
