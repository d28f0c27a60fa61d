"""minitorch against PyTorch, measured side by side in one run.

Prints the machine line and a markdown table: for each workload, the best-of-N wall time of
minitorch and of PyTorch and their ratio (minitorch / PyTorch; 1.0 means as fast), each ratio
with its target and marked `!!` when past it (benchmarks/printing.py). The same program runs
on both libraries: it only uses names the two share, and receives the library as an argument.

    python3 benchmarks/bench_core.py            # CPU
    python3 benchmarks/bench_core.py --device cuda

Workloads (the issue's targets in brackets):
  a) 1,000 small elementwise ops, forward and backward        [ratio <= 3]
  b) an MLP forward and backward, batch 512, width 1024         [ratio <= 1.15]
  c) backward through a 100,000-op chain (forward not timed)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch
from printing import at_most, figure, machine_line, table, targets_line

import minitorch


def best_time(fn: Callable[[], Any], repeats: int, sync: Callable[[], None]) -> float:
    """The fastest of `repeats` runs, in seconds, after one warm-up run."""
    fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


# a) many small elementwise ops --------------------------------------------------------------------
def elementwise_program(lib: Any, x: Any, w: Any, n_ops: int) -> Any:
    """Exactly `n_ops` recorded ops (a fixed cycle of unary, tensor-tensor and tensor-number
    ops), then one sum and backward."""
    loss = elementwise_loss(lib, x, w, n_ops)
    loss.backward()
    return loss


def elementwise_loss(lib: Any, x: Any, w: Any, n_ops: int) -> Any:
    """The forward half of `elementwise_program`: the `n_ops` ops and the sum
    (benchmarks/bench_jit.py traces it)."""
    y = x
    for i in range(n_ops):
        kind = i % 8
        if kind == 0:
            y = y * w
        elif kind == 1:
            y = y + 0.1
        elif kind == 2:
            y = lib.tanh(y)
        elif kind == 3:
            y = y - x
        elif kind == 4:
            y = lib.sigmoid(y)
        elif kind == 5:
            y = y * 2.0
        elif kind == 6:
            y = lib.sin(y)
        else:
            y = y / 1.5
    return y.sum()


def bench_elementwise(lib: Any, device: str, numel: int, n_ops: int = 1000) -> Callable[[], Any]:
    lib.manual_seed(0)
    x = lib.randn(numel, device=device, requires_grad=True)
    w = lib.randn(numel, device=device, requires_grad=True)

    def run() -> Any:
        x.grad = w.grad = None
        return elementwise_program(lib, x, w, n_ops)

    return run


# b) an MLP ---------------------------------------------------------------------------------
def bench_mlp(
    lib: Any, device: str, batch: int = 512, width: int = 1024, layers: int = 3
) -> Callable[[], Any]:
    lib.manual_seed(0)
    scale = 1.0 / width**0.5
    params = []
    for _ in range(layers):
        weight = (lib.randn(width, width, device=device) * scale).requires_grad_()
        bias = lib.zeros(width, device=device, requires_grad=True)
        params.append((weight, bias))
    x = lib.randn(batch, width, device=device)
    target = lib.randn(batch, width, device=device)

    def run() -> Any:
        for weight, bias in params:
            weight.grad = bias.grad = None
        h = x
        for i, (weight, bias) in enumerate(params):
            h = h @ weight.t() + bias
            if i < layers - 1:
                h = h.relu()
        loss = ((h - target) ** 2).mean()
        loss.backward()
        return loss

    return run


# c) a long chain ----------------------------------------------------------------------------
def bench_chain_backward(lib: Any, device: str, length: int = 100_000) -> tuple[Callable, Callable]:
    """Times only backward: each run first builds a fresh 100,000-op chain (not timed)."""
    x = lib.randn(4, device=device, requires_grad=True)
    state: dict[str, Any] = {}

    def build() -> None:
        y = x
        for _ in range(length):
            y = y * 1.0
        state["loss"] = y.sum()

    def run() -> Any:
        state["loss"].backward()
        return None

    return build, run


def time_chain(lib: Any, device: str, repeats: int, sync: Callable[[], None]) -> float:
    build, run = bench_chain_backward(lib, device)
    best = float("inf")
    for _ in range(repeats):
        build()
        sync()
        start = time.perf_counter()
        run()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


TARGETS = {"a)": at_most(3), "b)": at_most(1.15)}  # by workload letter (see the docstring)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    device = args.device
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    print(machine_line(device) + "\n")
    rows = []
    for numel in (100, 1_000, 10_000):
        rows.append(
            (
                f"a) 1,000 elementwise ops fwd+bwd, {numel:,} elements",
                best_time(bench_elementwise(minitorch, device, numel), args.repeats, sync),
                best_time(bench_elementwise(torch, device, numel), args.repeats, sync),
            )
        )
    rows.append(
        (
            "b) MLP fwd+bwd, batch 512, width 1024, 3 layers",
            best_time(bench_mlp(minitorch, device), args.repeats, sync),
            best_time(bench_mlp(torch, device), args.repeats, sync),
        )
    )
    rows.append(
        (
            "c) backward through a 100,000-op chain",
            time_chain(minitorch, device, max(2, args.repeats // 2), sync),
            time_chain(torch, device, max(2, args.repeats // 2), sync),
        )
    )
    results = table(
        ["workload", "minitorch", "PyTorch", "minitorch / PyTorch"],
        [
            [name, f"{ours * 1e3:.2f} ms", f"{theirs * 1e3:.2f} ms",
             figure(ours / theirs, target=TARGETS.get(name[:2]))]
            for name, ours, theirs in rows
        ],
    )  # fmt: skip
    print(results + "\n\n" + targets_line(results))


if __name__ == "__main__":
    main()
