"""Seconds `similarity` spends normalizing and fingerprinting one large answer cell.

A cell of N statements of random arithmetic (about 18 bytes each, like the 53 KB, 3,000-statement
answer of issue 30), inside a function as answer cells are; each statement reads one or two
earlier ones, so blocks mix dependent and independent statements. The work counts
(`similarity.normalize(source, work)`) grow in proportion to N: tests/test_similarity.py checks
that without timing anything.

    python3 benchmarks/bench_similarity.py [N ...]    (default 1000 2000 4000 8000)
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solutions.instructor import similarity  # noqa: E402


def large_cell(statements: int, seed: int = 0) -> str:
    """An answer cell of `statements` assignments of random arithmetic, then a return."""
    rng = random.Random(seed)
    lines = ["def answer(x):"]
    for i in range(statements - 1):
        a, b = (f"t{rng.randrange(i)}" if i and rng.random() < 0.8 else "x" for _ in "ab")
        lines.append(f"    t{i} = {a} * {rng.randint(2, 99)} + {b}")
    lines.append(f"    return t{statements - 2}")
    return "\n".join(lines) + "\n"


def main(sizes: list[int]) -> None:
    print(f"python {sys.version.split()[0]}, {similarity.__file__}")
    print("| statements | KB | fingerprint (s) | keys | key nodes | edges |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        cell, work = large_cell(n), Counter()
        start = time.perf_counter()
        similarity.fingerprint(cell)  # normalizes the cell, then takes its k-grams
        seconds = time.perf_counter() - start
        similarity.normalize(cell, work)  # again, untimed, for the counts
        print(f"| {n:,} | {len(cell) / 1000:.0f} | {seconds:.2f} | {work['keys']:,} | "
              f"{work['key_nodes']:,} | {work['edges']:,} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1000, 2000, 4000, 8000])
