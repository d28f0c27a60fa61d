"""Leak scan: release notebooks, the wheel and feedback must not reveal solutions or graders.

What counts as secret:
- every line inside `### BEGIN SOLUTION` / `### END SOLUTION` in a source notebook;
- every line inside the hidden-test markers, except the one-line call into the graders
  (`from solutions.<assignment> import grade` and `grade.<name>(...)`), which feedback may show
  in a traceback;
- every line of the judges, reference solutions and wrong answers in solutions/ (`judge.py`,
  `reference.py`, `wrong_answers.py`). The kernel half of the hidden tests (`grade.py`) is not
  secret: every grading sandbox holds it (NOTE [Grading sandbox]).
Matching is by whole line, whitespace-normalized. Lines that also appear in public code (outside
the markers in a source notebook, or in minitorch/), and short lines (fewer than
`MIN_LINE_LENGTH` characters, e.g. `return total`), are not secrets. Feedback may also show
anything the student wrote in their own submission.
Besides secret lines, the nbgrader markers themselves must not appear, and release notebooks and
the wheel must not mention the `solutions` package at all.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from solutions.instructor.course import REPO_ROOT, Course
from solutions.instructor.feedback import is_grader_frame

MIN_LINE_LENGTH = 24
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
SECRET_MODULES = ("judge.py", "reference.py", "wrong_answers.py")
_CALL_LINE = re.compile(r"^(from solutions(\.\w+)* import grade|grade\.\w+\(.*\))$")
_TRACEBACK_PREFIX = re.compile(r"^(-*> ?)?\d+ ")
_PACKAGE_MENTION = re.compile(r"\b(from|import)\s+solutions\b|solutions/")


@dataclass
class Leak:
    """A secret found where students can see it."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _normalize(line: str) -> str:
    return " ".join(line.split())


def _split_regions(source: str) -> tuple[list[str], list[str]]:
    """(secret lines, public lines) of one cell's source."""
    secret, public = [], []
    inside = False
    for line in source.splitlines():
        if "BEGIN SOLUTION" in line or "BEGIN HIDDEN TESTS" in line:
            inside = True
        elif "END SOLUTION" in line or "END HIDDEN TESTS" in line:
            inside = False
        elif inside:
            secret.append(line)
        else:
            public.append(line)
    return secret, public


def _notebook_lines(course: Course) -> tuple[set[str], set[str]]:
    """(lines inside the solution and hidden-test markers, lines outside them) of every source
    notebook, normalized."""
    hidden_lines, shown_lines = set(), set()
    for assignment in course.assignments():
        for path in course.folder("source", assignment).glob("*.ipynb"):
            for cell in nbformat.read(path, as_version=4).cells:
                hidden, shown = _split_regions(cell.source)
                hidden_lines.update(_normalize(line) for line in hidden)
                shown_lines.update(_normalize(line) for line in shown)
    return hidden_lines, shown_lines


def _module_lines(pattern: str) -> set[str]:
    return {
        _normalize(line)
        for module in REPO_ROOT.glob(pattern)
        for line in module.read_text().splitlines()
    }


def _significant(lines: set[str]) -> set[str]:
    return {
        line
        for line in lines
        if len(line) >= MIN_LINE_LENGTH and not line.startswith("#") and not _CALL_LINE.match(line)
    }


def answer_lines(course: Course) -> set[str]:
    """The normalized lines of the answers and hidden tests alone: what no file a student can
    read (a release, a sandbox, the wheel) may hold."""
    hidden, shown = _notebook_lines(course)
    return _significant(hidden - shown - _module_lines("minitorch/**/*.py"))


def secret_lines(course: Course) -> set[str]:
    """The normalized secret lines of the course (see the module docstring)."""
    hidden, shown = _notebook_lines(course)
    secret = set(hidden)
    for name in SECRET_MODULES:
        secret |= _module_lines(f"solutions/*/{name}")
    public = shown | _module_lines("minitorch/**/*.py") | _module_lines("solutions/*/grade.py")
    return _significant(secret - public - _module_lines("solutions/*.py"))


def _lines(text: str) -> set[str]:
    """Normalized lines of `text`, each also without a traceback's `---> 12` prefix."""
    lines = set()
    for line in text.splitlines():
        line = _normalize(line)
        lines.add(line)
        lines.add(_TRACEBACK_PREFIX.sub("", line))
    return lines


def _scan_text(
    text: str, where: str, secrets: set[str], forbid_package: bool, allowed: str = ""
) -> list[Leak]:
    """Leaks in `text`; markers and lines that occur in `allowed` (the student's own text) pass."""
    leaks = [
        Leak(where, f"marker {marker!r}")
        for marker in MARKERS
        if marker in text and marker not in allowed
    ]
    own = {_normalize(line) for line in allowed.splitlines()}
    leaks += [Leak(where, f"secret line {line!r}") for line in sorted(_lines(text) & secrets - own)]
    if forbid_package and _PACKAGE_MENTION.search(text):
        leaks.append(Leak(where, "mentions the solutions package"))
    return leaks


def _html_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _notebook_text(path: Path) -> str:
    """A notebook as plain text: the raw file (for markers), then every cell source and output
    line by line (JSON strings hide line breaks)."""
    raw = path.read_text()
    parts = [raw]
    for cell in nbformat.reads(raw, as_version=4).cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.extend(str(value) for value in output.get("data", {}).values())
            parts.extend(output.get("traceback", []))
    return "\n".join(parts)


def scan_release(course: Course, secrets: set[str]) -> list[Leak]:
    """Leaks in every file of every release folder: notebooks (cell sources, outputs and
    metadata) and any other file that nbgrader copied from the source folder, such as a
    notebook's percent source that was put there by mistake (see NOTE [Notebook sources])."""
    leaks = []
    for assignment in course.assignments():
        release = course.folder("release", assignment)
        for path in sorted(p for p in release.rglob("*") if p.is_file()):
            text = _notebook_text(path) if path.suffix == ".ipynb" else _file_text(path)
            leaks += _scan_text(text, str(path), secrets, forbid_package=True)
    return leaks


def _file_text(path: Path) -> str:
    """A file that is not a notebook, as text (binary files decode with replacements)."""
    return path.read_bytes().decode("utf-8", errors="replace")


def _submitted_code(course: Course, feedback_file: Path) -> str:
    """The code the student submitted, for the notebook a feedback file belongs to."""
    feedback = course.root / course.coursedir.feedback_directory
    student, assignment = feedback_file.relative_to(feedback).parts[:2]
    submitted = course.folder("submitted", assignment, student) / f"{feedback_file.stem}.ipynb"
    try:
        nb = nbformat.read(submitted, as_version=4)
    except Exception:
        return ""
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")


def scan_feedback(course: Course, secrets: set[str]) -> list[Leak]:
    """Leaks in every generated feedback HTML file.

    The call line into the graders is allowed, and so is whatever the student wrote.
    """
    feedback = course.root / course.coursedir.feedback_directory
    leaks = []
    for path in sorted(feedback.rglob("*.html")) if feedback.is_dir() else []:
        text = _html_text(path.read_text())
        own = _submitted_code(course, path)
        leaks += _scan_text(text, str(path), secrets, forbid_package=False, allowed=own)
        if any(is_grader_frame(line) for line in text.splitlines()):
            leaks.append(Leak(str(path), "traceback shows a frame of the grading code"))
    return leaks


def build_wheel(destination: Path) -> Path:
    """Build the project's wheel into `destination` with pip (no dependencies, no isolation)."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--quiet",
        "--wheel-dir",
        str(destination),
        str(REPO_ROOT),
    ]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return next(Path(destination).glob("*.whl"))


def scan_wheel(wheel: Path, secrets: set[str]) -> list[Leak]:
    """Leaks in a wheel: any file outside minitorch/ and its metadata, or secret content."""
    leaks = []
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            top = name.split("/")[0]
            if top != "minitorch" and not top.endswith(".dist-info"):
                leaks.append(Leak(f"{wheel.name}:{name}", "file outside minitorch/"))
                continue
            text = archive.read(name).decode("utf-8", errors="replace")
            # The metadata carries the README, which documents the instructor command.
            code = top == "minitorch"
            leaks += _scan_text(text, f"{wheel.name}:{name}", secrets, forbid_package=code)
    return leaks


def leak_scan(course: Course, wheel: Path | None = None, feedback: bool = True) -> list[Leak]:
    """Scan releases, feedback and the wheel (built into a temporary folder unless given)."""
    secrets = secret_lines(course)
    leaks = scan_release(course, secrets)
    if feedback:
        leaks += scan_feedback(course, secrets)
    if wheel is not None:
        return leaks + scan_wheel(wheel, secrets)
    with tempfile.TemporaryDirectory() as folder:
        return leaks + scan_wheel(build_wheel(Path(folder)), secrets)
