"""The student package: what a student installs and opens, with nothing of solutions/ in it.

`python -m solutions package-student [ASSIGNMENT ...] [--to DIR]` releases the assignments
(every one by default, as `release` does) and writes into DIR (default: dist/):

- `dyngraph-student.zip`, one folder `dyngraph-student/` holding
    README.md, open_course.py, jupyter/   copied from course/student/: the student's steps, the
                                          command that opens JupyterLab, and its settings
                                          (nbgrader's student extensions only)
    requirements.txt                      torch, pinned to the instructor's version, its CPU
                                          build (PyTorch's CPU index), and the wheel with its
                                          [student] extra
    requirements-cuda.txt                 the same with PyPI's torch: on Linux the CUDA build,
                                          for a machine with an NVIDIA GPU (gigabytes)
    dyngraph_minitorch-<version>-*.whl    the library: minitorch/ only
    notebooks/<assignment>/<notebook>.ipynb   the release notebooks
- `exchange/<course_id>/outbound/<assignment>/`: the same release notebooks, laid out as
  nbgrader's exchange holds a released assignment (copy it into the exchange's root).

Everything is built in a scratch folder and leak-scanned first (solutions/instructor/leaks.py):
solution and hidden-test lines, nbgrader's markers, any mention of the solutions package, and
any file that is a copy of a file under solutions/. With a leak, nothing is written to DIR.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from solutions.instructor import leaks, pipeline
from solutions.instructor.course import REPO_ROOT, Course

PACKAGE_NAME = "dyngraph-student"
STUDENT_FILES = REPO_ROOT / "course" / "student"
DEFAULT_DESTINATION = REPO_ROOT / "dist"


@dataclass
class StudentPackage:
    """What `build` wrote (nothing when `leaks` is not empty)."""

    zip_file: Path
    exchange: Path
    assignments: list[str]
    leaks: list[leaks.Leak] = field(default_factory=list)


# PyTorch's index of CPU-only wheels. PyPI's Linux torch is the CUDA build, whose nvidia-*
# dependencies are gigabytes; the CPU build's version carries "+cpu", which sorts above the
# plain version, so pip picks it when both indexes offer torch==X (macOS and Windows wheels
# are CPU builds on either index).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _requirements(wheel: Path, cuda: bool = False) -> str:
    """requirements.txt (torch's CPU build) or requirements-cuda.txt (PyPI's torch, CUDA on
    Linux): torch first, pinned to the version the course was built with, then the wheel."""
    torch_version = torch.__version__.split("+")[0]
    if cuda:
        head = "# With an NVIDIA GPU on Linux: PyPI's torch, the CUDA build (gigabytes).\n"
    else:
        head = (
            "# torch's CPU build, from PyTorch's index (PyPI's Linux torch is the CUDA build:\n"
            "# gigabytes). With an NVIDIA GPU, install requirements-cuda.txt instead.\n"
            f"--extra-index-url {TORCH_CPU_INDEX}\n"
        )
    return f"{head}torch=={torch_version}\n./{wheel.name}[student]\n"


def _stage(course: Course, assignments: list[str], folder: Path) -> Path:
    """Lay the student package out in `folder`; return its top folder."""
    top = folder / PACKAGE_NAME
    shutil.copytree(STUDENT_FILES, top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheel = leaks.build_wheel(top)
    (top / "requirements.txt").write_text(_requirements(wheel))
    (top / "requirements-cuda.txt").write_text(_requirements(wheel, cuda=True))
    for assignment in assignments:
        shutil.copytree(course.folder("release", assignment), top / "notebooks" / assignment)
    return top


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scan(top: Path, secrets: set[str]) -> list[leaks.Leak]:
    """Leaks in a laid-out student package: secret lines, markers or mentions of the solutions
    package in any file (wheel metadata may mention it: it carries the README), and any file
    with the same bytes as a file under solutions/."""
    solution_files = {
        _sha256(path): path for path in (REPO_ROOT / "solutions").rglob("*") if path.is_file()
    }
    found = []
    for path in sorted(p for p in top.rglob("*") if p.is_file()):
        where = str(path.relative_to(top.parent))
        if path.suffix == ".whl":
            found += leaks.scan_wheel(path, secrets)
            continue
        copy = solution_files.get(_sha256(path))
        if copy is not None:
            found.append(leaks.Leak(where, f"a copy of {copy.relative_to(REPO_ROOT)}"))
        text = leaks._notebook_text(path) if path.suffix == ".ipynb" else leaks._file_text(path)
        found += leaks._scan_text(text, where, secrets, forbid_package=True)
    return found


def _zip(top: Path, destination: Path) -> None:
    with zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(top.rglob("*")):
            archive.write(path, path.relative_to(top.parent))


def build(course: Course, assignments: list[str], destination: Path) -> StudentPackage:
    """Release `assignments` in `course`, lay out and scan the student package, and (when the
    scan finds nothing) write the zip and the exchange folder into `destination`."""
    destination = Path(destination).resolve()
    for assignment in assignments:
        pipeline.release(course, assignment)
    package = StudentPackage(
        zip_file=destination / f"{PACKAGE_NAME}.zip",
        exchange=destination / "exchange" / course.coursedir.course_id / "outbound",
        assignments=assignments,
    )
    with tempfile.TemporaryDirectory(prefix="student-package-") as scratch:
        top = _stage(course, assignments, Path(scratch))
        package.leaks = scan(top, leaks.secret_lines(course))
        if package.leaks:
            return package
        destination.mkdir(parents=True, exist_ok=True)
        _zip(top, package.zip_file)
        for assignment in assignments:
            outbound = package.exchange / assignment
            if outbound.exists():
                shutil.rmtree(outbound)
            shutil.copytree(top / "notebooks" / assignment, outbound)
    return package
