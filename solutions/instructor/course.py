"""Opening the nbgrader course: its configuration, folders and the in-process nbgrader API."""

from __future__ import annotations

import difflib
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config, PyFileConfigLoader

from solutions.instructor import schema_once

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_COURSE_ROOT = REPO_ROOT / "course"
CONFIG_FILE = DEFAULT_COURSE_ROOT / "nbgrader_config.py"


class CommandError(RuntimeError):
    """A step of the instructor workflow failed; the message says which and why."""


@dataclass
class Course:
    """An nbgrader course folder (source/, release/, submitted/, ...) with its configuration."""

    root: Path
    config: Config
    api: NbGraderAPI

    @property
    def coursedir(self) -> CourseDirectory:
        return self.api.coursedir

    def folder(self, step: str, assignment: str, student: str = ".") -> Path:
        """The folder of `assignment` at a step: "source", "release", "submitted", ..."""
        directory = getattr(self.coursedir, f"{step}_directory")
        return Path(self.coursedir.format_path(directory, student, assignment))

    def assignments(self) -> list[str]:
        """Assignment names, from the folders under source/."""
        source = self.root / self.coursedir.source_directory
        return sorted(p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))

    def check_assignment(self, assignment: str) -> None:
        """Raise CommandError unless `assignment` has a folder under source/."""
        known = self.assignments()
        if assignment in known:
            return
        close = difflib.get_close_matches(assignment, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise CommandError(
            f"no assignment {assignment!r} in {self.root / self.coursedir.source_directory}: "
            f"{hint}(assignments: {', '.join(known) or 'none'})"
        )

    def notebooks(self, assignment: str) -> list[str]:
        """Notebook names (without .ipynb) of an assignment's source."""
        return sorted(p.stem for p in self.folder("source", assignment).glob("*.ipynb"))

    def students(self, assignment: str) -> list[str]:
        """Students with a submission folder for `assignment` under submitted/."""
        submitted = self.root / self.coursedir.submitted_directory
        if not submitted.is_dir():
            return []
        return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def load_config(
    course_root: Path, timeout: int | None = None, budget: float | None = None
) -> Config:
    """course/nbgrader_config.py, then the course folder's own nbgrader_config.py if it has one
    (the hub's instructor course sets its late-penalty policy there), pointed at `course_root`,
    with an optional per-cell timeout and per-submission budget (seconds)."""
    config = PyFileConfigLoader(CONFIG_FILE.name, path=str(CONFIG_FILE.parent)).load_config()
    own = Path(course_root) / "nbgrader_config.py"
    if own.is_file() and own.resolve() != CONFIG_FILE.resolve():
        config.merge(PyFileConfigLoader(own.name, path=str(own.parent)).load_config())
    config.CourseDirectory.root = str(course_root)
    config.Exchange.root = str(course_root / "exchange")
    if timeout is not None:
        config.Execute.timeout = timeout
        config.SandboxedAutograde.cell_seconds = timeout
    if budget is not None:
        config.SandboxedAutograde.wall_seconds = budget
    return config


def open_course(
    course_root: Path | None = None, timeout: int | None = None, budget: float | None = None
) -> Course:
    """Open the course at `course_root` (default: the repository's course/)."""
    root = Path(course_root or DEFAULT_COURSE_ROOT).resolve()
    if not (root / "source").is_dir():
        raise CommandError(f"{root} is not a course folder: it has no source/ folder")
    config = load_config(root, timeout, budget)
    (root / "exchange").mkdir(exist_ok=True)  # nbgrader logs an error when it is missing
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    schema_once.use_in_nbgrader()
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    api.log.setLevel(logging.ERROR)
    return Course(root=root, config=config, api=api)


def check(result: dict, step: str) -> str:
    """Raise CommandError with nbgrader's log when an NbGraderAPI call failed; else its log."""
    if not result.get("success"):
        details = result.get("log", "") + result.get("error", "")
        raise CommandError(f"{step} failed:\n{details}")
    return result.get("log", "")
