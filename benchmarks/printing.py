"""What every benchmark script prints: one machine line, markdown tables, targets checked.

    machine: AMD EPYC 7B13, 2 cores, 1 torch threads, torch 2.13.0+cpu, device cpu

    | workload | minitorch | PyTorch | minitorch / PyTorch |
    |---|---:|---:|---:|
    | a) 1,000 elementwise ops | 17.75 ms | 6.08 ms | 2.92 (target <= 3) |
    | b) MLP step | 30.13 ms | 25.04 ms | !! 1.20 (target <= 1.15) |

    targets: 1 met, 1 missed (marked !!)

A figure that has a target shows it, and is marked `!!` when it is past it, whichever library
the figure belongs to: PyTorch's own figures are held to the same targets as minitorch's.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass

import torch

MISSED = "!!"


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo), or what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line(device: str, extra: str = "") -> str:
    """`machine: <cpu>, <n> cores, <n> torch threads, torch <version>, device <d>[, GPU ...]`,
    then `extra` (e.g. "garbage collector on") after a comma."""
    gpu = f", GPU {torch.cuda.get_device_name()}" if device.startswith("cuda") else ""
    tail = f", {extra}" if extra else ""
    return (
        f"machine: {cpu_model()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch "
        f"threads, torch {torch.__version__}, device {device}{gpu}{tail}"
    )


@dataclass(frozen=True)
class Target:
    """A bound a figure must meet: `at_most` (<=) or at least (>=)."""

    bound: float
    at_most: bool = True

    def met(self, value: float) -> bool:
        return value <= self.bound if self.at_most else value >= self.bound

    def __str__(self) -> str:
        return f"target {'<=' if self.at_most else '>='} {self.bound:g}"


def at_most(bound: float) -> Target:
    return Target(bound, at_most=True)


def at_least(bound: float) -> Target:
    return Target(bound, at_most=False)


def figure(value: float, fmt: str = "{:.2f}", target: Target | None = None) -> str:
    """`value` formatted with `fmt`; with a target, `2.92 (target <= 3)` when it is met and
    `!! 1.54 (target <= 1.5)` when it is not."""
    text = fmt.format(value)
    if target is None:
        return text
    mark = "" if target.met(value) else f"{MISSED} "
    return f"{mark}{text} ({target})"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table: the first column left-aligned (names), the others right-aligned."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def targets_line(*tables: str) -> str:
    """`targets: N met, M missed (marked !!)` over the figures with a target in `tables`."""
    cells = [cell for text in tables for line in text.splitlines() for cell in line.split(" | ")]
    with_target = [cell for cell in cells if "(target " in cell]
    missed = sum(cell.strip().startswith(MISSED) for cell in with_target)
    met = len(with_target) - missed
    return f"targets: {met} met, {missed} missed" + (f" (marked {MISSED})" if missed else "")
