"""Strict validation: every source notebook passes all its tests, every release passes none.

`nbgrader validate` prints failures but exits 0; this runs nbgrader's Validator in process and
returns the problems, so the command can exit non-zero.
"""

from __future__ import annotations

from pathlib import Path

from nbgrader.validator import Validator

from solutions.instructor.course import Course


def _validator(course: Course, invert: bool) -> Validator:
    validator = Validator(config=course.config)
    validator.invert = invert
    return validator


def check_source(course: Course, notebook: Path) -> list[str]:
    """Problems with a source notebook: each test cell that fails, with its error."""
    results = _validator(course, invert=False).validate(str(notebook))
    problems = [
        f"{notebook.name}: test fails:\n{r['source']}\n{r['raw_error']}"
        for r in results.get("failed", [])
    ]
    problems += [
        f"{notebook.name}: cell type changed: {r['source']}"
        for r in results.get("type_changed", [])
    ]
    problems += [
        f"{notebook.name}: locked cell changed: {r['source']}" for r in results.get("changed", [])
    ]
    return problems


def check_release(course: Course, notebook: Path) -> list[str]:
    """Problems with a release notebook: each test cell that passes although nothing is solved."""
    results = _validator(course, invert=True).validate(str(notebook))
    problems = [
        f"{notebook.name}: test passes on the blank release:\n{r['source']}"
        for r in results.get("passed", [])
    ]
    problems += [
        f"{notebook.name}: locked cell differs from the release checksum: {r['source']}"
        for r in results.get("changed", [])
    ]
    return problems
