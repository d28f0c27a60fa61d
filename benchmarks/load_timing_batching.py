"""Notebook 6's timing exercise graded on a loaded machine: no correct answer may lose points.

Grading runs two sandboxes on two cores, so the timing exercise (exercise 6, `tree_speedup`) is
always graded on a busy machine. This script starts load processes doing real grading-like work,
then grades the reference answer `--runs` times (and the different-but-correct answers of
wrong_answers.RIGHT_ANSWERS), judged exactly as `python -m solutions grade` judges them, and the
exercise's wrong answers `--wrong-runs` times each. It prints the points lost and the ratios seen.

    python3 benchmarks/load_timing_batching.py                  # 50 runs, 2 grading loads
    python3 benchmarks/load_timing_batching.py --load torch     # 2 torch matmul loops instead
    python3 benchmarks/load_timing_batching.py --load none      # an idle machine, for contrast

Loads: "grading" runs notebook 6's other hidden tests on the reference in a loop (signatures,
schedulers, gather, the batched tree model: CPU-bound Python and small torch kernels, what a
second sandbox does); "torch" multiplies 512 x 512 matrices with torch's default threads.
See NOTE [Timing on a loaded machine] in solutions/batching_dynamic_graphs/grade.py.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

GRADE_ID = "ex6_tree_speedup"
POINTS = 3


def _grading_load(stop: Any) -> None:
    """Notebook 6's other hidden tests on the reference, again and again, until `stop`."""
    from solutions.batching_dynamic_graphs import grade, reference

    tests = [
        (grade.signature, reference.signature),
        (grade.schedule_by_depth, reference.schedule_by_depth),
        (grade.schedule_agenda, reference.schedule_agenda),
        (grade.gather, reference.Gather),
        (grade.batched_forward, reference.batched_forward),
    ]
    seed = 0
    while not stop.is_set():
        for test, answer in tests:
            test.observe(answer, seed=seed)
        seed += 1


def _torch_load(stop: Any) -> None:
    """Matrix products with torch's default number of threads, until `stop`."""
    import torch

    a = torch.randn(512, 512)
    while not stop.is_set():
        for _ in range(20):
            a = torch.tanh(a @ a / 512)


def _answers() -> tuple[dict[str, Any], dict[str, Any]]:
    """{name: tree_speedup} of the correct answers (the reference first) and of the wrong ones."""
    from solutions.batching_dynamic_graphs import reference, wrong_answers

    def made(source: str) -> Any:
        scope = dict(vars(reference))
        exec(source, scope)
        return scope["tree_speedup"]

    right = {"reference": reference.tree_speedup}
    right.update((w.name, made(w.source)) for w in wrong_answers.RIGHT_ANSWERS[GRADE_ID])
    wrong = {w.name: made(w.source) for w in wrong_answers.WRONG_ANSWERS[GRADE_ID]}
    return right, wrong


def grade_once(answer: Any) -> tuple[float, float | None, str]:
    """(points, the answer's ratio, feedback): the hidden test's kernel half, then its judge,
    as `python -m solutions grade` runs them (the judge in another process there)."""
    from solutions.batching_dynamic_graphs import grade, judge
    from solutions.grading import FAILURE_KEY, Failure, through_json

    data = through_json(grade.tree_speedup.observe(answer))
    if FAILURE_KEY in data:
        return 0.0, None, data[FAILURE_KEY]
    try:
        judge.tree_speedup(data, data)
    except Failure as failure:
        return 0.0, data["ratio"], str(failure)
    return float(POINTS), data["ratio"], ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="gradings of each correct answer")
    parser.add_argument("--wrong-runs", type=int, default=5, help="gradings of each wrong answer")
    parser.add_argument("--load", choices=("grading", "torch", "none"), default="grading")
    parser.add_argument("--processes", type=int, default=2, help="load processes")
    options = parser.parse_args()

    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    target = {"grading": _grading_load, "torch": _torch_load}.get(options.load)
    loads = (
        []
        if target is None
        else [context.Process(target=target, args=(stop,)) for _ in range(options.processes)]
    )
    for process in loads:
        process.start()
    time.sleep(3 if loads else 0)  # let the loads start their work
    right, wrong = _answers()
    print(f"load: {len(loads)} x {options.load}; exercise 6 is worth {POINTS} points")
    started = time.perf_counter()
    failed = False
    try:
        for name, answer in right.items():
            runs = options.runs if name == "reference" else max(options.runs // 5, 1)
            results = [grade_once(answer) for _ in range(runs)]
            lost = sum(POINTS - points for points, _, _ in results)
            ratios = [ratio for _, ratio, _ in results if ratio is not None]
            print(
                f"correct {name:<32} {runs:3} gradings, points lost {lost:4.1f}; ratio min "
                f"{min(ratios):6.2f} median {statistics.median(ratios):6.2f} max {max(ratios):6.2f}"
            )
            for points, _, message in results:
                if points < POINTS:
                    print(f"    lost: {message}")
            failed |= lost > 0
        for name, answer in wrong.items():
            results = [grade_once(answer) for _ in range(options.wrong_runs)]
            kept = sum(points for points, _, _ in results)
            ratios = [f"{ratio:.2f}" for _, ratio, _ in results if ratio is not None]
            print(
                f"wrong   {name:<32} {len(results):3} gradings, points kept {kept:4.1f}; "
                f"ratios {', '.join(ratios) or '-'}"
            )
            failed |= kept > 0
    finally:
        stop.set()
        for process in loads:
            process.join(timeout=30)
    print(f"done in {time.perf_counter() - started:.0f} s: {'FAILED' if failed else 'ok'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
