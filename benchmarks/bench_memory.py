"""Memory with and without activation checkpointing, minitorch and PyTorch side by side.

    python3 benchmarks/bench_memory.py                 # CPU
    python3 benchmarks/bench_memory.py --device cuda

1. A 64-layer MLP (x @ w.t() + b, relu), one training step (forward and backward), without
   checkpointing and with `checkpoint_sequential` at sqrt(64) = 8 segments, in both libraries.
   For each: the bytes the graph holds after forward, the peak during the step (both above the
   memory in use before the step), and the best-of-N step time. The issue's target: at least 4x
   less memory for at most 1.5x the time.
2. Graph overhead per recorded op: a chain of ops on a 1-element tensor, memory per node.

Prints the machine line and markdown tables (benchmarks/printing.py); the target's figures are
marked `!!` when past it, PyTorch's included.

How memory is measured, the same way for both libraries:
- CUDA: `torch.cuda.memory_allocated()` / `max_memory_allocated()` (both libraries' storage
  comes from torch's caching allocator).
- CPU: the process's resident memory (VmRSS) and its high-water mark (VmHWM, reset through
  /proc/self/clear_refs before each step). Large tensors are mapped and unmapped one by one
  (the script fixes glibc's mmap threshold, re-running itself with MALLOC_MMAP_THRESHOLD_), so
  resident memory follows live tensors closely.
- minitorch's exact figures (`minitorch.memory.saved_bytes` and `track()`) are printed too.
- Per-node overhead: tracemalloc (Python's heap only: PyTorch's nodes are C++ objects it does not
  see) and resident memory (everything) over a long chain.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import torch
import torch.utils.checkpoint
from printing import at_least, at_most, figure, machine_line, table, targets_line

import minitorch
from minitorch import memory
from minitorch.utils.checkpoint import checkpoint_sequential

MMAP_THRESHOLD = "65536"
MIB = 2**20
# The target for checkpointing: at least 4x less memory held, at most 1.5x the time.
HELD_LESS, TIME_MORE = at_least(4), at_most(1.5)


# ----------------------------------------------------------------------------------------------
# Measuring
# ----------------------------------------------------------------------------------------------
def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        return int(re.search(rf"{field}:\s+(\d+)", status.read()).group(1)) * 1024


class Meter:
    """Bytes in use now and peak since `reset()`, on the benchmark's device."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")

    def reset(self) -> None:
        gc.collect()
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        else:
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")  # the high-water mark restarts from the current size

    def now(self) -> int:
        if self.cuda:
            torch.cuda.synchronize()
            return torch.cuda.memory_allocated()
        return _status("VmRSS")

    def peak(self) -> int:
        if self.cuda:
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated()
        return _status("VmHWM")


# ----------------------------------------------------------------------------------------------
# 1. The 64-layer MLP
# ----------------------------------------------------------------------------------------------
def make_mlp(lib: Any, depth: int, width: int, device: str) -> tuple[list, list]:
    """`depth` layers h -> relu(h @ w.t() + b) as plain functions, and their parameters."""
    lib.manual_seed(0)
    params, layers = [], []
    for _ in range(depth):
        w = (lib.randn(width, width, device=device) * (2 / width) ** 0.5).requires_grad_()
        b = lib.zeros(width, device=device, requires_grad=True)
        params += [w, b]
        layers.append(lambda h, w=w, b=b: (h @ w.t() + b).relu())
    return layers, params


def forward(lib: Any, layers: list, x: Any, segments: int) -> Any:
    if segments == 1:
        h = x
        for layer in layers:
            h = layer(h)
    elif lib is torch:
        h = torch.utils.checkpoint.checkpoint_sequential(layers, segments, x, use_reentrant=False)
    else:
        h = checkpoint_sequential(layers, segments, x, use_reentrant=False)
    return (h * h).mean()


def measure_memory(lib: Any, setup: tuple, segments: int, meter: Meter) -> dict:
    """Bytes held after forward and peak during the step (above the memory in use before), by
    the meter, and for minitorch also by its own exact accounting."""
    layers, params, x = setup
    for p in params:
        p.grad = None
    meter.reset()
    before = meter.now()
    loss = forward(lib, layers, x, segments)
    held = meter.now() - before
    exact = memory.saved_bytes(loss) if lib is minitorch else None
    loss.backward()
    peak = meter.peak() - before
    del loss
    exact_peak = None
    if lib is minitorch:
        for p in params:
            p.grad = None
        gc.collect()
        with memory.track() as tracked:
            forward(lib, layers, x, segments).backward()
        exact_peak = tracked.peak_bytes - tracked.start_bytes
    return dict(held=held, peak=peak, exact=exact, exact_peak=exact_peak)


def report_mlp(args: argparse.Namespace, meter: Meter) -> str:
    """Print the MLP's tables; return the one with the targets."""
    segments = round(args.depth**0.5)
    activation = args.batch * args.width * 4
    print(
        f"\n1) {args.depth}-layer MLP, batch {args.batch}, width {args.width}, float32 "
        f"(one activation = {activation / MIB:.2f} MiB), checkpoint_sequential with {segments} "
        f"segments; memory above the memory in use before the step; time: best of "
        f"{args.repeats}, the four variants interleaved"
    )
    configs = {}
    for lib, name in ((minitorch, "minitorch"), (torch, "PyTorch")):
        layers, params = make_mlp(lib, args.depth, args.width, args.device)
        x = lib.randn(args.batch, args.width, device=args.device)
        for seg, label in ((1, "plain"), (segments, "checkpointed")):
            configs[name, label] = (lib, (layers, params, x), seg)

    sync = torch.cuda.synchronize if meter.cuda else (lambda: None)
    seconds = {key: float("inf") for key in configs}
    for repeat in range(args.repeats + 1):  # the first round warms up
        for key, (lib, (layers, params, x), seg) in configs.items():
            for p in params:
                p.grad = None
            sync()
            start = time.perf_counter()
            forward(lib, layers, x, seg).backward()
            sync()
            if repeat:
                seconds[key] = min(seconds[key], time.perf_counter() - start)

    results, rows = {}, []
    for key, (lib, setup, seg) in configs.items():
        r = results[key] = measure_memory(lib, setup, seg, meter)
        r["seconds"] = seconds[key]
        rows.append([
            ", ".join(key), f"{r['held'] / MIB:.2f} MiB", f"{r['peak'] / MIB:.2f} MiB",
            f"{r['seconds'] * 1e3:.1f} ms",
        ])  # fmt: skip
    steps = table([f"{args.depth}-layer MLP step", "held after forward", "peak in step",
                   "step time"], rows)  # fmt: skip
    rows = []
    for name in ("minitorch", "PyTorch"):
        plain, ckpt = results[name, "plain"], results[name, "checkpointed"]
        rows.append([
            name,
            figure(plain["held"] / max(ckpt["held"], 1), "{:.2f}x less", HELD_LESS),
            figure(plain["peak"] / max(ckpt["peak"], 1), "{:.2f}x less"),
            figure(ckpt["seconds"] / plain["seconds"], "{:.2f}x", TIME_MORE),
        ])  # fmt: skip
    ratios = table([f"checkpointed ({segments} segments) vs plain", "held after forward",
                    "peak in step", "step time"], rows)  # fmt: skip
    print(f"\n{steps}\n\n{ratios}\n")
    plain, ckpt = results["minitorch", "plain"], results["minitorch", "checkpointed"]
    print(
        f"minitorch exact (memory.saved_bytes, memory.track): held "
        f"{plain['exact'] / MIB:.2f} -> {ckpt['exact'] / MIB:.2f} MiB "
        f"({plain['exact'] / ckpt['exact']:.2f}x), peak {plain['exact_peak'] / MIB:.2f} -> "
        f"{ckpt['exact_peak'] / MIB:.2f} MiB ({plain['exact_peak'] / ckpt['exact_peak']:.2f}x)"
    )
    for label in ("plain", "checkpointed"):
        ratio = results["minitorch", label]["seconds"] / results["PyTorch", label]["seconds"]
        print(f"time minitorch / PyTorch, {label}: {ratio:.2f}")
    return ratios


# ----------------------------------------------------------------------------------------------
# 2. Graph overhead per node
# ----------------------------------------------------------------------------------------------
def chain(lib: Any, n: int, op: str, device: str) -> tuple[Any, Any]:
    x = lib.ones(1, device=device, requires_grad=True)
    y = x
    for _ in range(n):
        y = y + 1.0 if op == "add" else y.sin()
    return x, y


def per_node(lib: Any, n: int, op: str, device: str) -> tuple[float, float]:
    """(tracemalloc bytes per node, resident bytes per node) for an n-op chain kept alive.
    Resident memory is measured first, after a short warm-up chain (first calls initialise
    caches), before any long chain was freed (its memory would be reused)."""
    chain(lib, 100, op, device)
    gc.collect()
    rss_before = _status("VmRSS")
    x, y = chain(lib, n, op, device)
    resident = _status("VmRSS") - rss_before
    del x, y
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    x, y = chain(lib, n, op, device)
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return traced / n, resident / n


def report_overhead(args: argparse.Namespace) -> None:
    """Each measurement in a fresh process, so that no library reuses memory another freed."""
    n = args.chain
    print(f"\n2) graph overhead per recorded op, {n:,}-op chain on a 1-element tensor, alive\n")
    rows = []
    for op, text in (("add", "y + 1.0 (saves nothing)"), ("sin", "y.sin() (saves its input)")):
        for name in ("minitorch", "PyTorch"):
            command = [sys.executable, __file__, "--overhead-of", name, op, "--chain", str(n)]
            traced, resident = map(float, subprocess.check_output(command, text=True).split())
            rows.append([f"{name}, {text}", f"{traced:.0f} B/op", f"{resident:.0f} B/op"])
    print(table(["recorded op", "tracemalloc", "resident"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--depth", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--chain", type=int, default=50_000)
    parser.add_argument("--overhead-of", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.overhead_of:
        name, op = args.overhead_of
        lib = minitorch if name == "minitorch" else torch
        print(*per_node(lib, args.chain, op, args.device))
        return
    if not args.device.startswith("cuda") and os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        # Re-run with a fixed mmap threshold so that freed tensors leave resident memory.
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=MMAP_THRESHOLD)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    print(machine_line(args.device))
    meter = Meter(args.device)
    ratios = report_mlp(args, meter)
    report_overhead(args)
    print("\n" + targets_line(ratios))


if __name__ == "__main__":
    main()
