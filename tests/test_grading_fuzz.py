"""Fuzzing the whole `grade` path with mutated real submissions (issue 30, section 3).

Mutants of an honest notebook 1 submission (JSON values of other types, lone surrogates, bytes
that are not UTF-8, cut files, cells of other kinds, copied, moved or huge, odd metadata) are
graded in one class beside the honest student, with `python -m solutions grade`, then
`report` and `similarity` run again. The command never crashes, every mutant gets a row (a
grade, or a flag that says why not), and the honest student keeps full marks. The mutants are
drawn from a fixed seed, so a failure is reproduced by running the test again. Behind
--classes (about two minutes).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import nbformat
import pytest
from course_support import NOTEBOOK_1, copy_course, reference_answers, with_answers

from solutions.instructor import report
from solutions.instructor.cli import main
from solutions.instructor.course import open_course

pytestmark = [pytest.mark.classes, pytest.mark.filterwarnings("ignore::UserWarning")]

SEED = 30
MUTANTS = 24
ODD_VALUES = [None, 0, -1, 2**70, 1.5, float("inf"), True, "", "x", [], {}, [[[]]], {"a": {}},
              "\ud800", "\u202e\x1b[2J", "<script>alert(1)</script>", "y" * 100_000]  # fmt: skip


def _paths(tree: object, path: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) to a value inside `tree`."""
    found = [path]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, (*path, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found += _paths(value, (*path, index))
    return found


def _parent(tree: object, path: tuple) -> object:
    for step in path[:-1]:
        tree = tree[step]
    return tree


def _mutate_json(tree: dict, rng: random.Random) -> None:
    """One change to the notebook's JSON tree, in place."""
    cells = tree["cells"]
    kind = rng.choice(["value", "value", "delete", "surrogate", "cell", "metadata"])
    if kind in ("value", "delete"):
        path = rng.choice(_paths(tree)[1:])
        parent = _parent(tree, path)
        if kind == "value":
            parent[path[-1]] = rng.choice(ODD_VALUES)
        else:
            del parent[path[-1]]
    elif kind == "surrogate":
        cell = rng.choice(cells)
        cell["source"] = "".join(cell.get("source", "")) + rng.choice(["\ud800", "\udfff x"])
    elif kind == "cell":
        index = rng.randrange(len(cells))
        action = rng.choice(["copy", "move", "kind", "huge", "no-id"])
        if action == "copy":
            cells.insert(rng.randrange(len(cells)), json.loads(json.dumps(cells[index])))
        elif action == "move":
            cells.insert(rng.randrange(len(cells)), cells.pop(index))
        elif action == "kind":
            cells[index]["cell_type"] = rng.choice(["code", "markdown", "raw", "heading", 3])
        elif action == "huge":
            cells[index]["source"] = "# " + "z" * rng.choice([10**5, 2 * 10**6]) + "\n"
        else:
            cells[index].pop("id", None)
    else:
        target = rng.choice([tree, rng.choice(cells)])
        target["metadata"] = rng.choice(
            [[], "python3", {"kernelspec": "python3"}, {"nbgrader": {"grade": "yes"}},
             {"nbgrader": {"grade_id": ["x"], "points": "NaN", "grade": True}},
             {"course": {"hidden_test_of": rng.randrange(60)}}]
        )  # fmt: skip


def _mutant(honest: dict, rng: random.Random) -> bytes:
    """The bytes of one mutant: one to three JSON changes, then maybe a byte-level change."""
    tree = json.loads(json.dumps(honest))
    for _ in range(rng.randint(1, 3)):
        _mutate_json(tree, rng)
    data = json.dumps(tree).encode("utf-8", "surrogatepass")
    byte_change = rng.choice(["none", "none", "cut", "latin-1", "bom", "nul", "deep"])
    if byte_change == "cut":
        data = data[: rng.randrange(len(data))]
    elif byte_change == "latin-1":
        where = rng.randrange(len(data))
        data = data[:where] + b"\xe9\xff" + data[where:]
    elif byte_change == "bom":
        data = b"\xef\xbb\xbf" + data
    elif byte_change == "nul":
        data = data.replace(b'"source": "', b'"source": "\\u0000', 1)
    elif byte_change == "deep":  # nesting deeper than a recursive reader goes
        depth = rng.choice([50, 100_000])
        data = data.replace(
            b'"metadata": {', b'"metadata": {"deep": ' + b"[" * depth + b"]" * depth + b", ", 1
        )
    return data


def _run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(args))
    return code, out.getvalue()


def test_mutated_submissions_never_stop_grading(released_course: Path, tmp_path: Path) -> None:
    course = copy_course(released_course, tmp_path / "course")
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    honest = json.loads(nbformat.writes(with_answers(release, reference_answers(source))))
    inbox = tmp_path / "inbox"
    rng = random.Random(SEED)
    students = {"honest": json.dumps(honest).encode()}
    students |= {f"mutant-{k:02d}": _mutant(honest, rng) for k in range(MUTANTS)}
    for student, data in students.items():
        (inbox / student).mkdir(parents=True)
        (inbox / student / f"{NOTEBOOK_1}.ipynb").write_bytes(data)

    code, output = _run("--course", str(course), "grade", NOTEBOOK_1, "--from", str(inbox),
                        "--jobs", "2")  # fmt: skip
    assert code in (0, 1) and "Traceback" not in output, output[-4000:]
    rows = {r.student: r for r in report.student_rows(open_course(course), NOTEBOOK_1)}
    assert sorted(rows) == sorted(students)
    assert (rows["honest"].score, rows["honest"].flags) == (25, []), rows["honest"]
    for student, row in rows.items():
        if report.is_not_graded(row):  # no grade: the reason is given, and grade said so
            assert any(":" in flag for flag in row.flags), row
            assert code == 1 and student in output.split("not graded (")[-1], output[-2000:]
        else:
            assert 0 <= row.score <= 25, row
    for command in ("report", "similarity"):
        again, output = _run("--course", str(course), command, NOTEBOOK_1)
        assert again == 0 and "Traceback" not in output, output[-4000:]
