"""Each assignment's hidden tests, run the way a grading sandbox runs them (no bubblewrap here:
the same project copy, in a separate process).

The kernel half (solutions/<assignment>/grade.py) must work with only what a sandbox holds
(`sandbox.kernel_files`): no reference, no judge, no wrong answers, the notebook source reduced
to its locked cells. The notebook's own answers run there as student code, after the
definitions its other cells make (functions, classes, imports, constants: the demos themselves
are left out to keep this fast; grading a class runs whole notebooks). The observations come
back as JSON lines, and the judge half here must give them full marks.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from course_notebooks import ASSIGNMENTS

from solutions.grading import OBSERVATIONS_ENV
from solutions.instructor import leaks
from solutions.instructor.course import open_course
from solutions.instructor.sandbox import kernel_bytes, project_copy
from solutions.instructor.verdicts import read_observations
from solutions.judging import verdict
from solutions.reference_cells import MARKER, NOTEBOOKS, _role

HIDDEN_CALL = re.compile(r"^grade\.(\w+)\((\w+)\)$", re.MULTILINE)

STUDENT = """
import importlib, json, sys
try:
    importlib.import_module("solutions.{a}.reference")
except ImportError:
    pass
else:
    sys.exit("the reference is importable in the sandbox")
namespace = {{"__name__": "__main__"}}
for source in json.load(open("cells.json")):
    exec(source, namespace)
from solutions.{a} import grade
for test, answer in json.load(open("calls.json")):
    getattr(grade, test)(namespace[answer])
"""


DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)


def _definitions(source: str) -> str:
    """The imports, functions, classes and constants a demo cell defines, without the demo."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: a demo, not a definition
        return ""
    kept = [
        node
        for node in tree.body
        if isinstance(node, DEFINITIONS)
        or (isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_literal(node.value))
    ]
    return "\n".join(ast.unparse(node) for node in kept)


def _is_literal(node: ast.AST | None) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return False
    return True


def notebook_cells(assignment: str) -> list[str]:
    """What a student's kernel has run before the hidden tests: answer and locked cells whole,
    the definitions of the other code cells; no test cells."""
    lines = (NOTEBOOKS / f"{assignment}.py").read_text().splitlines()
    markers = [i for i, line in enumerate(lines) if line.startswith(MARKER)]
    cells = []
    for start, end in zip(markers, [*markers[1:], len(lines)]):
        if "[markdown]" in lines[start]:
            continue
        role = _role(lines[start]) or {}
        body = "\n".join(lines[start + 1 : end])
        if role.get("grade"):
            continue
        cells.append(body if role.get("solution") or role.get("locked") else _definitions(body))
    return cells


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_hidden_tests_run_with_only_the_kernel_half(assignment: str, tmp_path: Path) -> None:
    project = project_copy(tmp_path / "project", kernel_bytes(assignment))
    calls = HIDDEN_CALL.findall((NOTEBOOKS / f"{assignment}.py").read_text())
    (project / "cells.json").write_text(json.dumps(notebook_cells(assignment)))
    (project / "calls.json").write_text(json.dumps(calls))
    observations = tmp_path / "observations.jsonl"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(project),
        "MPLBACKEND": "Agg",
        OBSERVATIONS_ENV: str(observations),
    }
    script = STUDENT.format(a=assignment)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=project, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (project / "solutions" / assignment / "reference.py").exists()
    found = read_observations(observations.read_text())
    grade = __import__(f"solutions.{assignment}.grade", fromlist=["grade"])
    for test, _ in calls:
        assert len(found.get(test, [])) == 1, f"{test} observed {len(found.get(test, []))} times"
        result = verdict(getattr(grade, test), found[test][0])
        assert not result.failed, result.message


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_sandbox_holds_no_line_of_a_solution(assignment: str, tmp_path: Path) -> None:
    """No file a sandbox can read holds a line of an answer or hidden test (outside the one-line
    call), nor the solution markers."""
    secrets = leaks.answer_lines(open_course())
    project = project_copy(tmp_path / "project", kernel_bytes(assignment))
    found = []
    for path in sorted(project.rglob("*.py")):
        if "minitorch" not in path.parts:
            found += leaks._scan_text(path.read_text(), str(path), secrets, forbid_package=False)
    assert found == []
