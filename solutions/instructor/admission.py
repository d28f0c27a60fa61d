"""What a student hands in, admitted as data: the notebook the grading process works on.

NOTE [Admission]
A submitted file is hostile data: any JSON, any size, any metadata. Before anything of the
grading process reads it, `admit` turns each submitted notebook into a clean one under
admitted/<student>/<assignment>/, and nbgrader's autograde, the sandbox's input and every
later step read that copy, never the submission itself:
- the file is read with a bound on its size (`MAX_NOTEBOOK_BYTES`), cells and cell sizes too;
- only the cells' kind and source are taken from the submission; sources are made valid
  Unicode (a lone UTF-16 surrogate, valid JSON, cannot be written back out);
- every other piece of metadata comes from the course's release: the notebook's metadata, and
  a cell's nbgrader role only when the release has a cell of that grade_id and kind (the first
  such cell; any copy is a plain student cell); whatever else a student wrote is dropped;
- outputs are dropped (grading runs the notebook again) and cell ids are `cell-<index>`, so
  the same submission always makes the same notebook, hence the same result key.
A file that cannot be admitted (not JSON, not a version 4 notebook, too large) is "unreadable"
with the reason: it is run as the blank release (nothing of the student's) so that its feedback
says why, and then given no grade (pipeline.autograde takes it out of the gradebook; `grade`
asks the instructor to get a readable file). What admission notices (a changed kernelspec, an
edited or deleted test cell, a cell using the grading code) goes into the instructor's table as
flags.
`submitted/` keeps what the student handed in, byte for byte (its checksum is recorded at
collection).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.utils import parse_utc

from solutions.instructor.course import Course
from solutions.instructor.integrity import cells_using_grading_code, is_test_cell

MAX_NOTEBOOK_BYTES = 16 * 2**20
MAX_CELLS = 2_000
MAX_CELL_CHARS = 2**20
CELL_KINDS = {
    "code": nbformat.v4.new_code_cell,
    "markdown": nbformat.v4.new_markdown_cell,
    "raw": nbformat.v4.new_raw_cell,
}
# nbgrader's own files of a submission folder, copied next to the admitted notebooks (small).
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")
MAX_NBGRADER_FILE_BYTES = 4096

UNREADABLE = "unreadable notebook"
MISSING_NOTEBOOK = "notebook missing"
KERNELSPEC_CHANGED = "kernelspec changed"
GRADE_CELL_EDITED = "grade cell edited"
GRADE_CELL_DELETED = "grade cell deleted"
USES_GRADERS = "uses grading code"
UNREADABLE_KEY = "unreadable"
TIMESTAMP_UNREADABLE = "timestamp unreadable (ignored: not late)"


class Unusable(ValueError):
    """A submitted file that cannot be admitted; the message says why, for the instructor."""


@dataclass
class Admitted:
    """One admitted notebook (None when unusable) and the flags admission raised."""

    nb: NotebookNode | None
    flags: list[str] = field(default_factory=list)


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every lone UTF-16 surrogate (valid JSON: "\\ud800", but it cannot be
    encoded) replaced by U+FFFD. JSON's surrogate pairs are decoded as one character already."""
    return _SURROGATE.sub("\ufffd", text)


def _source(value: object, where: str) -> str:
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        value = "".join(value)
    if not isinstance(value, str):
        raise Unusable(f"{where}: its source is {type(value).__name__}, not text")
    if len(value) > MAX_CELL_CHARS:
        raise Unusable(f"{where}: {len(value):,} characters (the limit is {MAX_CELL_CHARS:,})")
    return valid_text(value)


def read_bounded(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of `path`, or Unusable when it holds more than `limit` (never read past it)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Unusable(f"larger than {limit // 2**20} MiB")
    return data


def clean(data: bytes, release: NotebookNode) -> NotebookNode:
    """The notebook to grade, made from the submitted bytes `data` and the course's `release`
    notebook (see NOTE [Admission]); Unusable when `data` is not a notebook."""
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise Unusable(f"not JSON ({str(error)[:200] or type(error).__name__})") from None
    if not isinstance(raw, dict) or raw.get("nbformat") != 4:
        raise Unusable("not a version 4 notebook")
    cells = raw.get("cells")
    if not isinstance(cells, list):
        raise Unusable("its cells are not a list")
    if len(cells) > MAX_CELLS:
        raise Unusable(f"{len(cells):,} cells (the limit is {MAX_CELLS:,})")
    roles = {}
    for cell in release.cells:
        role = cell.metadata.get("nbgrader", {})
        if role.get("grade_id"):
            roles.setdefault(role["grade_id"], (cell.cell_type, role))
    nb = nbformat.v4.new_notebook(metadata=copy.deepcopy(release.metadata))
    for index, cell in enumerate(cells):
        where = f"cell {index}"
        if not isinstance(cell, dict) or cell.get("cell_type") not in CELL_KINDS:
            raise Unusable(f"{where} is not a code, markdown or raw cell")
        admitted = CELL_KINDS[cell["cell_type"]](_source(cell.get("source", ""), where))
        admitted.id = f"cell-{index}"
        metadata = cell.get("metadata")
        role = metadata.get("nbgrader") if isinstance(metadata, dict) else None
        grade_id = role.get("grade_id") if isinstance(role, dict) else None
        if isinstance(grade_id, str) and roles.get(grade_id, ("",))[0] == admitted.cell_type:
            admitted.metadata["nbgrader"] = copy.deepcopy(roles.pop(grade_id)[1])
        nb.cells.append(admitted)
    return nb


def _kernel_name(data: bytes) -> object:
    try:
        kernelspec = json.loads(data).get("metadata", {}).get("kernelspec", {})
        return kernelspec.get("name") if isinstance(kernelspec, dict) else None
    except (ValueError, RecursionError, AttributeError):
        return None


def review(nb: NotebookNode, data: bytes, release: NotebookNode) -> list[str]:
    """Flags for the instructor: what the student changed that grading undoes or refuses."""
    flags = []
    if _kernel_name(data) != release.metadata.get("kernelspec", {}).get("name"):
        flags.append(KERNELSPEC_CHANGED)
    submitted = {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in nb.cells
        if "nbgrader" in cell.metadata
    }
    for cell in filter(is_test_cell, release.cells):
        source = submitted.get(cell.metadata["nbgrader"]["grade_id"])
        if source is None:
            flags.append(GRADE_CELL_DELETED)
        elif source.strip() != cell.source.strip():
            flags.append(GRADE_CELL_EDITED)
    if cells_using_grading_code(nb):
        flags.append(USES_GRADERS)
    return list(dict.fromkeys(flags))


def admit_file(path: Path, release: NotebookNode) -> Admitted:
    """Admit the submitted notebook at `path` (see NOTE [Admission]). A file that cannot be
    admitted gives the release itself, marked `unreadable` (`unreadable_reason`): it is graded
    without running anything; the feedback says why, and no grade is kept."""
    if not path.is_file() and not path.is_symlink():
        return Admitted(None, [MISSING_NOTEBOOK])
    try:
        if path.is_symlink():  # collection never makes one: somebody planted it
            raise Unusable("a link, not a file")
        data = read_bounded(path)
        nb = clean(data, release)
    except Unusable as problem:
        nb = clean(nbformat.writes(release).encode(), release)
        reason = f"the submitted file could not be read: {problem}"
        nb.metadata["course"] = {UNREADABLE_KEY: reason}
        note = f"**Not graded**: {reason}. Nothing in it was graded: hand in a readable notebook."
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(note, id="unreadable-note"))
        return Admitted(nb, [f"{UNREADABLE}: {problem}"])
    return Admitted(nb, review(nb, data, release))


def unreadable_reason(nb: NotebookNode) -> str | None:
    """Why admission could not read the submission `nb` stands for; None when it could. Only
    admission writes this key (it drops every piece of metadata a student wrote)."""
    course = nb.metadata.get("course")
    return course.get(UNREADABLE_KEY) if isinstance(course, dict) else None


def release_notebook(course: Course, assignment: str, notebook: str) -> NotebookNode:
    """The course's release of `notebook` (trusted: the instructor built it)."""
    path = course.folder("release", assignment) / f"{notebook}.ipynb"
    return nbformat.read(path, as_version=4)


ADMITTED = "admitted"  # beside submitted/: what nbgrader's autograde reads


def admitted_folder(course: Course, assignment: str, student: str) -> Path:
    return course.root / ADMITTED / student / assignment


def admit(course: Course, assignment: str, student: str) -> list[str]:
    """Write `student`'s admitted notebooks (and nbgrader's small files) into admitted/,
    replacing what was there; return the flags admission raised."""
    folder = admitted_folder(course, assignment, student)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    submitted = course.folder("submitted", assignment, student)
    flags: list[str] = []
    for notebook in course.notebooks(assignment):
        admitted = admit_file(submitted / f"{notebook}.ipynb", release_notebook(
            course, assignment, notebook))  # fmt: skip
        flags += [flag for flag in admitted.flags if flag not in flags]
        if admitted.nb is not None:
            nbformat.write(admitted.nb, folder / f"{notebook}.ipynb")
    for name, text in nbgrader_files(submitted).items():
        (folder / name).write_text(text)
    return flags + nbgrader_file_flags(submitted)


def nbgrader_files(submitted: Path) -> dict[str, str]:
    """nbgrader's small files of a submission folder that can be admitted: {name: text}."""
    found = {}
    for name in NBGRADER_FILES:
        path = submitted / name
        if path.is_file() and not path.is_symlink():
            text = valid_text(path.read_bytes()[:MAX_NBGRADER_FILE_BYTES].decode(errors="replace"))
            if name != "timestamp.txt" or _is_time(text):
                found[name] = text
    return found


def nbgrader_file_flags(submitted: Path) -> list[str]:
    """A timestamp that is not a time is dropped (nbgrader would stop on it): flag it."""
    exists = (submitted / "timestamp.txt").is_file()
    return (
        [TIMESTAMP_UNREADABLE]
        if exists and "timestamp.txt" not in nbgrader_files(submitted)
        else []
    )


def _is_time(text: str) -> bool:
    try:
        parse_utc(text.strip())
    except (ValueError, OverflowError):  # dateutil's ParserError is a ValueError
        return False
    return True
