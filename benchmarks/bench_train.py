"""Training-step time, minitorch against PyTorch, measured side by side in one run.

One training step = zero_grad + forward + loss + backward + optimizer step. The same program
runs on both libraries (it receives the library as an argument), with the same initial
weights and the same batch. Measurements alternate between the two libraries (so a busy
machine slows both alike) and the best of N is kept. Prints the machine line and a markdown
table with both times and the ratio minitorch / PyTorch (1.0 means as fast), marked `!!` when
past its target (benchmarks/printing.py).

    python3 benchmarks/bench_train.py              # CPU
    python3 benchmarks/bench_train.py --device cuda
    python3 benchmarks/bench_train.py --threads 1  # torch.set_num_threads(1) for both
    python3 benchmarks/bench_train.py --profile    # also cProfile minitorch's steps

Workloads (the issue's targets in brackets):
  1) the digits MLP: 64 -> 128 -> 10, batch 64, Adam                         [ratio <= 1.3]
  2) an LSTM over packed variable-length sequences (lengths 5-20), batch 32,
     hidden 32, last hidden state -> linear classifier, Adam                  [ratio <= 1.3]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from typing import Any

import torch
from printing import (
    at_most,
    cpu_model,  # noqa: F401 (bench_autobatch.py imports it from here)
    figure,
    machine_line,
    table,
    targets_line,
)

import minitorch
import minitorch.datasets


def interleaved_best(
    runs: dict[str, Callable[[], Any]], repeats: int, steps: int, sync: Callable[[], None]
) -> dict[str, float]:
    """Seconds per call of each run: best over `repeats` rounds of `steps` calls, after a
    warm-up; the runs take turns within each round."""
    best = {name: float("inf") for name in runs}
    for run in runs.values():
        for _ in range(3):
            run()
        sync()
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            for _ in range(steps):
                run()
            sync()
            best[name] = min(best[name], (time.perf_counter() - start) / steps)
    return best


# 1) the digits MLP ---------------------------------------------------------------------------
def mlp_step(lib: Any, device: str, batch: int = 64) -> Callable[[], Any]:
    digits = minitorch.datasets.load_digits()
    x = lib.tensor(digits.x_train[:batch].tolist(), device=device)
    y = lib.tensor(digits.y_train[:batch].tolist(), device=device)
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(64, 128), lib.nn.ReLU(), lib.nn.Linear(128, 10))
    model.to(device)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step() -> Any:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


# 2) an LSTM over packed sequences ----------------------------------------------------------------
def lstm_step(lib: Any, device: str, batch: int = 32, hidden: int = 32) -> Callable[[], Any]:
    sequences, labels = minitorch.datasets.make_sequences(
        n=batch, min_length=5, max_length=20, seed=0
    )
    padded, lengths, labels = minitorch.datasets.pad_collate(list(zip(sequences, labels)))
    padded = lib.tensor(padded.tolist(), device=device)
    lengths = lib.tensor(lengths.tolist())  # lengths stay on the CPU, as PyTorch wants them
    labels = lib.tensor(labels.tolist(), device=device)
    lib.manual_seed(0)
    lstm = lib.nn.LSTM(padded.shape[2], hidden, batch_first=True).to(device)
    head = lib.nn.Linear(hidden, 2).to(device)
    params = list(lstm.parameters()) + list(head.parameters())
    optimizer = lib.optim.Adam(params, lr=1e-3)

    def step() -> Any:
        optimizer.zero_grad()
        packed = lib.nn.utils.rnn.pack_padded_sequence(
            padded, lengths, batch_first=True, enforce_sorted=False
        )
        _, (h_n, _) = lstm(packed)
        loss = lib.nn.functional.cross_entropy(head(h_n[-1]), labels)
        loss.backward()
        optimizer.step()
        return loss

    return step


WORKLOADS = {
    "1) digits MLP 64-128-10, batch 64, Adam": (mlp_step, 20),
    "2) LSTM on packed sequences (5-20 steps), batch 32, hidden 32, Adam": (lstm_step, 5),
}
TARGET = 1.3


def profile_minitorch(device: str) -> None:
    for name, (make, steps) in WORKLOADS.items():
        step = make(minitorch, device)
        step()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(steps * 5):
            step()
        profiler.disable()
        print(f"\n### cProfile of minitorch: {name} ({steps * 5} steps)\n")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (both libraries)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    print(machine_line(device) + "\n")
    rows = []
    for name, (make, steps) in WORKLOADS.items():
        runs = {"minitorch": make(minitorch, device), "torch": make(torch, device)}
        best = interleaved_best(runs, args.repeats, steps, sync)
        ratio = best["minitorch"] / best["torch"]
        rows.append([
            name, f"{best['minitorch'] * 1e3:.2f} ms", f"{best['torch'] * 1e3:.2f} ms",
            figure(ratio, target=at_most(TARGET)),
        ])  # fmt: skip
    results = table(["workload", "minitorch", "PyTorch", "minitorch / PyTorch"], rows)
    print(results + "\n\n" + targets_line(results))
    if args.profile:
        profile_minitorch(device)


if __name__ == "__main__":
    main()
