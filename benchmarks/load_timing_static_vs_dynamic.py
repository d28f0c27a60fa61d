"""Notebook 5's timing exercise (exercise 7, `replay_speedup`) graded on a loaded machine.

Grading runs two sandboxes on two cores by design, so a timing exercise is always graded next
to other work. This script grades the reference answer (and the kept different-but-correct
answers) N times while a second process grades notebook 5's other hidden tests in a loop (real
grading work, on the other core or the same one), then grades each timing wrong answer under
the same load. It prints the points lost and the spread of what was measured:

    python3 benchmarks/load_timing_static_vs_dynamic.py             # N = 50, one loading process
    python3 benchmarks/load_timing_static_vs_dynamic.py -n 20 --loaders 2

It exits 1 if a correct answer lost a point or a wrong answer kept full marks.

Why a correct answer keeps its points: the judge compares the answer's ratio with the grader's
own timing of the very calls the answer made (its `fn`, tracer and replayer time themselves),
so a busy moment slows the answer's measurement and the grader's alike; no timing is compared
with a fixed figure or with another run.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRADE_ID = "ex7_replay_speedup"
POINTS = 3  # exercise 7's points (a failed hidden test loses all of them)


def _load(stop: Any, done: Any) -> None:
    """A second grading run: notebook 5's other hidden tests on the reference, until `stop`."""
    from solutions.grading import HiddenTest
    from solutions.static_vs_dynamic import grade, reference

    tests = [
        t for t in vars(grade).values() if isinstance(t, HiddenTest) and t.test != "replay_speedup"
    ]
    seed = 0
    while not stop.is_set():
        for test in tests:
            test(getattr(reference, test.answer), seed=seed)
            if stop.is_set():
                break
        seed += 1
        with done.get_lock():
            done.value += 1


def _answers() -> tuple[dict[str, Any], dict[str, Any]]:
    """(correct answers, wrong answers) of exercise 7, each a function by name."""
    from solutions.static_vs_dynamic import reference
    from solutions.static_vs_dynamic.wrong_answers import RIGHT_ANSWERS, WRONG_ANSWERS

    def compiled(source: str) -> Any:
        namespace = dict(vars(reference))
        exec(compile(source, "<answer>", "exec"), namespace)
        return namespace["replay_speedup"]

    right = {"reference": reference.replay_speedup}
    right.update({w.name: compiled(w.source) for w in RIGHT_ANSWERS.get(GRADE_ID, [])})
    wrong = {w.name: compiled(w.source) for w in WRONG_ANSWERS[GRADE_ID]}
    return right, wrong


def _grade(answer: Any) -> tuple[float, dict, str]:
    """(points, what the kernel half saw, the failure message) of one grading of `answer`."""
    from solutions.grading import through_json
    from solutions.judging import verdict
    from solutions.static_vs_dynamic import grade

    data = grade.replay_speedup.observe(answer)
    result = verdict(grade.replay_speedup, through_json(data), None)
    if result.failed:
        return 0.0, data, result.message
    return float(POINTS if result.points is None else result.points), data, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50, help="gradings of each correct answer")
    parser.add_argument("--wrong", type=int, default=10, help="gradings of each wrong answer")
    parser.add_argument("--loaders", type=int, default=1, help="loading processes")
    args = parser.parse_args()

    import torch

    right, wrong = _answers()
    context = multiprocessing.get_context("spawn")
    stop, done = context.Event(), context.Value("i", 0)
    loaders = [context.Process(target=_load, args=(stop, done)) for _ in range(args.loaders)]
    for process in loaders:
        process.start()
    time.sleep(3.0)  # let the load start (imports) before the first grading
    failures = 0
    started = time.perf_counter()
    try:
        print(f"torch threads here: {torch.get_num_threads()}, loading processes: {args.loaders}")
        for name, answer in right.items():
            lost, ratios, measured, factors, messages = 0.0, [], [], [], set()
            for _ in range(args.n):
                points, data, message = _grade(answer)
                lost += POINTS - points
                if message:
                    messages.add(message[:160])
                ratio = data.get("ratio returned")
                grader = data.get("eager step time / replay time, measured on its calls")
                if isinstance(ratio, float) and isinstance(grader, float):
                    ratios.append(ratio)
                    measured.append(grader)
                    factors.append(math.exp(abs(math.log(ratio / grader))))
            failures += lost > 0
            print(
                f"correct {name:>26}: {args.n} gradings, {lost:g} points lost; ratio returned "
                f"{min(ratios):.2f}..{max(ratios):.2f} (median {statistics.median(ratios):.2f}), "
                f"grader's own {min(measured):.2f}..{max(measured):.2f}; answer / grader within "
                f"a factor of {max(factors):.3f} (judge allows 1.5)"
            )
            for message in sorted(messages):
                print("    lost:", message)
        for name, answer in wrong.items():
            kept = 0
            messages = set()
            for _ in range(args.wrong):
                points, _, message = _grade(answer)
                kept += points == POINTS
                messages.add(message[:110])
            failures += kept > 0
            print(
                f"wrong   {name:>26}: {args.wrong} gradings, {kept} kept full marks; "
                f"feedback: {' | '.join(sorted(messages))}"
            )
    finally:
        stop.set()
        for process in loaders:
            process.join(timeout=60)
    elapsed = time.perf_counter() - started
    print(
        f"the loading process(es) ran {done.value} full passes over notebook 5's other hidden "
        f"tests in {elapsed:.0f} s"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
