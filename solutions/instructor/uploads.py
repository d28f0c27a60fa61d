"""An LMS download, read as hostile data: bounded extraction, and each upload bound to its uploader.

NOTE [LMS downloads]
`collect --zip` reads the zip an instructor downloads from the LMS (pipeline.collect_zip). Each
upload in it is a student's file, so each is read inside that upload's own failure boundary: a
bad one is skipped with the reason in the warnings, and the others are collected.
- **Extraction is ours, not nbgrader's.** nbgrader's zip_collect extracts every member, with its
  archived mode bits (setuid too, when root collects), and then every .zip/.gz it finds, again and
  again (`nbgrader.utils.unzip(tree=True)`), each member read whole into memory: a 0.9 MB upload
  became 770 MiB on disk and 1.8 GB of memory. Here only regular-file members are read (no
  links, devices, fifos, encrypted members), never by their own name: a kept notebook is written
  under a name of ours (staging) and then as `submitted/<student>/<assignment>/<notebook>.ipynb`,
  mode 0644 (folders 0755), so absolute or `..` names, links and modes have nothing to act on;
  such members are still named in the warnings. Only `.ipynb` members whose name maps to a
  (student, notebook) are decompressed, in 1 MiB chunks.
- **Bounds** (the constants below): a notebook is at most `MAX_NOTEBOOK_BYTES` (admission reads no
  more, and the sandbox's grading disk holds 16 MiB); the notebooks kept from one download at
  most `MAX_TOTAL_BYTES`. An upload that is itself a .zip is opened one level deep (a student
  who zipped the notebook is still collected): at most `MAX_NESTED_ZIP_BYTES` of archive, spooled
  to an unlinked temporary file, a central directory of at most `MAX_NESTED_MEMBERS` entries and
  `MAX_NESTED_DIRECTORY_BYTES` (checked before zipfile reads it), and `MAX_NESTED_READ_BYTES`
  decompressed in all; an archive inside it is not opened. Any other archive (.tar.gz, .7z...)
  is skipped. Nothing stays under `downloaded/` after collection.
- **Who uploaded it.** The student id comes from the file's name (the course's
  `FileNameCollectorPlugin.named_regexp`, applied to the name the student gave the file), so a
  student can upload a file named after another. Canvas and Moodle name the uploader:
  Canvas's bulk download names each file `<name>_[late_]<user id>_<file id>_<original name>`
  (`smithjohn_12345_67890_alice_graph_construction.ipynb`; the name is the sortable name in lower
  case without punctuation), Moodle's `<Full Name>_<participant id>_assignsubmission_file_/
  <original name>` (a folder per student) or `..._assignsubmission_file_<original name>` (flat);
  Moodle's participant id is per assignment, not the user id. The first path component that
  has such a form is the LMS's (a student's own folders and archives come after it). The
  roster says who an uploader is: the gradebook's students (`nbgrader db student add ID
  --first-name F --last-name L --lms-user-id N`, or `nbgrader db student import roster.csv`),
  and the optional roster CSV of `collect_zip` (same columns: id, first_name, last_name,
  lms_user_id). A Canvas uploader is the student with that lms_user_id, else the one student
  whose name matches; a Moodle uploader, the student whose name matches. Then:
  - uploader known as Y: a file named for X != Y is skipped (never graded as X's, nor as Y's),
    with a warning; a file named just `<notebook>.ipynb` is Y's;
  - uploader unknown: a file named for a student the roster knows (an LMS id or a name) is
    skipped the same way; a file named for anyone else is bound by its name, and the warnings
    list those bindings; an uploader with files named for two students, and a student with
    files from two uploaders, are not collected at all (submitted/ keeps what it held);
  - a plain zip (no LMS names) binds by file name, as before; two files for one student's
    notebook skip that student (they used to stop the whole run).
- **What is printed.** Names in warnings go through `shown` (non-printable characters as
  Python escapes, \\x1b; at most 200 characters); a student id must match `SAFE_ID`
  ([A-Za-z0-9._-], not starting with '.'), or the file is skipped.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import stat
import tempfile
import unicodedata
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from solutions.instructor import admission

MAX_NOTEBOOK_BYTES = admission.MAX_NOTEBOOK_BYTES  # what admission reads of a notebook
MAX_TOTAL_BYTES = 2 * 2**30  # all notebooks kept from one download
MAX_MEMBERS = 200_000  # entries of the download's own central directory
MAX_DIRECTORY_BYTES = 64 * 2**20  # the download's central directory (zipfile holds it in memory)
MAX_NESTED_ZIP_BYTES = 32 * 2**20  # an uploaded .zip, as uploaded
MAX_NESTED_MEMBERS = 1_000
MAX_NESTED_DIRECTORY_BYTES = 2**20
MAX_NESTED_READ_BYTES = 64 * 2**20  # decompressed from one uploaded .zip, all members together
# collect --from copies a file the instructor already holds: a notebook over MAX_NOTEBOOK_BYTES
# is copied (admission flags it "unreadable: larger than 16 MiB", and the student learns why),
# up to this bound.
MAX_COPIED_BYTES = 256 * 2**20
MAX_SHOWN_CHARS = 200
MAX_LISTED = 20  # names listed in one warning
CHUNK = 2**20

SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
SAFE_ID_TEXT = "[A-Za-z0-9._-], not starting with '.'"

CANVAS = re.compile(
    r"(?P<name>[^_/]+)_(?:(?P<late>[Ll][Aa][Tt][Ee])_)?(?P<user>\d+)_(?P<file>\d+)_(?P<original>.+)"
)
MOODLE_FOLDER = re.compile(r"(?P<name>[^_/]+)_(?P<user>\d+)_assignsubmission_file_")
MOODLE_FILE = re.compile(r"(?P<name>[^_/]+)_(?P<user>\d+)_assignsubmission_file_(?P<original>.+)")


def _escape(char: str) -> str:
    return char if char.isprintable() else repr(char)[1:-1]  # \x1b, \n, \u202e


def shown(text: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """`text` safe to print on a terminal: each non-printable character (escape codes, line
    breaks, bidi overrides) as a Python escape (\\x1b, \\n, \\u202e), cut after `limit`
    characters. Printable text, backslashes included, is unchanged: shown(shown(x)) == shown(x)
    for a text within the limit."""
    text = str(text)
    result = "".join(_escape(char) for char in text[: limit + 1])
    if len(result) > limit:
        result = result[:limit] + f"... ({len(text) - limit} more characters)"
    return result


def safe_id(student: object) -> bool:
    """True when `student` can name a folder and a gradebook row: SAFE_ID, nothing else."""
    return isinstance(student, str) and SAFE_ID.fullmatch(student) is not None


def unsafe_id_warning(where: str, student: str) -> str:
    return f"skipped {where}: '{shown(student)}' is not a student id ({SAFE_ID_TEXT})"


def listing(names: list[str]) -> str:
    """Up to MAX_LISTED names, comma-separated, and how many more there were."""
    more = f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""
    return ", ".join(names[:MAX_LISTED]) + more


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


# --- who uploaded a file --------------------------------------------------------------------------
@dataclass(frozen=True)
class Uploader:
    """The account an LMS names as a file's uploader."""

    lms: str  # "Canvas" or "Moodle"
    user: str  # Canvas's user id; Moodle's participant id (per assignment)
    name: str  # as the LMS wrote it in the download

    def __str__(self) -> str:
        return f"{self.lms} user '{shown(self.name)}' ({self.user})"


def lms_uploader(parts: tuple[str, ...]) -> tuple[Uploader | None, tuple[str, ...], bool]:
    """The uploader that the LMS names in a member's path, the path as the student named it,
    and whether Canvas marks it late. The first component with an LMS's form is the LMS's: the
    folders above it are the instructor's, those below it (and archives) the student's."""
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if i < last and (match := MOODLE_FOLDER.fullmatch(part)):
            return (
                Uploader("Moodle", match["user"], match["name"]),
                parts[:i] + parts[i + 1 :],
                False,
            )
        if i == last and (match := MOODLE_FILE.fullmatch(part)):
            return (
                Uploader("Moodle", match["user"], match["name"]),
                (*parts[:i], match["original"]),
                False,
            )
        if i == last and (match := CANVAS.fullmatch(part)):
            uploader = Uploader("Canvas", match["user"], match["name"])
            return uploader, (*parts[:i], match["original"]), match["late"] is not None
    return None, parts, False


def _name_key(text: str) -> str:
    """A name as both LMSs can spell it: letters and digits, no accents, in lower case."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed.casefold() if c.isalnum() and c.isascii())


@dataclass
class Roster:
    """Who is who on the LMS: the gradebook's students, and an optional roster CSV."""

    by_user: dict[str, str] = field(default_factory=dict)  # lms_user_id -> student id
    by_name: dict[str, set[str]] = field(default_factory=dict)  # name key -> student ids
    named: set[str] = field(default_factory=set)  # students with a name
    with_user: set[str] = field(default_factory=set)  # students with an lms_user_id

    def add(self, student: str, first: str | None, last: str | None, user: str | None) -> None:
        first, last, user = (str(v or "").strip() for v in (first, last, user))
        if user:
            self.by_user[user] = student
            self.with_user.add(student)
        if first or last:
            self.named.add(student)
            for key in {_name_key(first + last), _name_key(last + first)} - {""}:
                self.by_name.setdefault(key, set()).add(student)

    def knows(self, student: str, lms: str) -> bool:
        """True when the roster can tell whether an uploader of `lms` is `student`."""
        return student in self.named or (lms == "Canvas" and student in self.with_user)

    def owner(self, uploader: Uploader, claim: str | None) -> str | None:
        """The student who is `uploader`, or None when the roster cannot tell."""
        if uploader.lms == "Canvas" and uploader.user in self.by_user:
            return self.by_user[uploader.user]
        names = self.by_name.get(_name_key(uploader.name), set())
        if uploader.lms == "Canvas":  # a student with a Canvas id is found by the id alone
            names = names - self.with_user
        if claim in names:
            return claim
        return next(iter(names)) if len(names) == 1 else None

    def read_csv(self, path: Path) -> list[str]:
        """Add the rows of a roster CSV (columns id, first_name, last_name, lms_user_id; those
        of `nbgrader db student import`); return warnings for rows skipped."""
        warnings = []
        with open(path, newline="", encoding="utf-8-sig") as file:
            rows = csv.DictReader(file)
            if "id" not in (rows.fieldnames or []):
                raise ValueError(
                    "it has no 'id' column (columns: id, first_name, last_name, lms_user_id)"
                )
            for number, row in enumerate(rows, start=2):
                student = (row.get("id") or "").strip()
                if not safe_id(student):
                    warnings.append(f"roster line {number}: {unsafe_id_warning('it', student)}")
                    continue
                self.add(
                    student, row.get("first_name"), row.get("last_name"), row.get("lms_user_id")
                )
        return warnings


def roster_from(students: Iterable) -> Roster:
    """A Roster of nbgrader Student rows (id, first_name, last_name, lms_user_id)."""
    roster = Roster()
    for student in students:
        if safe_id(student.id):
            roster.add(student.id, student.first_name, student.last_name, student.lms_user_id)
    return roster


# --- reading the download -------------------------------------------------------------------------
class Rejected(Exception):
    """An upload that is not read further; the message says why, for the instructor."""


@dataclass
class Upload:
    """A notebook read from the download: where it was, whose its name says, who uploaded it."""

    where: str  # its path in the download, shown()
    notebook: str  # <notebook>.ipynb of the assignment
    claim: str | None  # the student its name gives; None for a bare <notebook>.ipynb
    uploader: Uploader | None
    late: bool
    staged: Path  # its bytes, under a name of ours


@dataclass
class Download:
    """What read_download found: the uploads kept, warnings, and names that matched nothing."""

    uploads: list[Upload] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    matched: int = 0  # members whose name matched a student's notebook (kept or not)


def _parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in re.split(r"[/\\]", name) if p not in ("", "."))


def member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a member is not read at all (a link, a device, a path leaving the archive, ...)."""
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        return "a symbolic link (links are never extracted)"
    if kind not in (0, stat.S_IFREG):
        return "not a regular file (devices, fifos and sockets are never extracted)"
    name = info.filename
    if (
        name.startswith(("/", "\\"))
        or re.match(r"[A-Za-z]:", name)
        or ".." in re.split(r"[/\\]", name)
    ):
        return "its path leaves the archive (absolute or ..); not extracted"
    if info.flag_bits & 0x1:
        return "encrypted"
    return None


def _is_folder(info: zipfile.ZipInfo) -> bool:
    return info.filename.endswith(("/", "\\")) or stat.S_ISDIR(info.external_attr >> 16)


def directory_size(file) -> tuple[int, int] | None:
    """(entries, bytes) of a zip's central directory as its end record gives them, before
    zipfile reads (and holds in memory) the whole directory; None when it cannot tell."""
    end_record = getattr(zipfile, "_EndRecData", None)  # the record zipfile itself will use
    if end_record is None:
        return None
    record = end_record(file)
    if not record:
        return None
    return record[zipfile._ECD_ENTRIES_TOTAL], record[zipfile._ECD_SIZE]


def _copy_bounded(source, destination, limit: int, why: str) -> int:
    """Copy at most `limit` bytes in CHUNKs; Rejected(why) when there are more."""
    copied = 0
    while chunk := source.read(CHUNK):
        copied += len(chunk)
        if copied > limit:
            raise Rejected(why)
        destination.write(chunk)
    return copied


class _Reader:
    """One pass over a download: members checked, notebooks staged, warnings collected."""

    def __init__(
        self,
        notebooks: set[str],
        name_of: Callable[[str], tuple[str | None, str | None]],
        staging: Path,
        prefix: str,
    ) -> None:
        self.notebooks = notebooks
        self.name_of = name_of
        self.staging = staging
        self.prefix = prefix  # where nbgrader's extraction would have put the download
        self.found = Download()
        self.total = 0  # bytes staged
        self.staged = 0  # files staged (their names)

    def warn(self, message: str) -> None:
        self.found.warnings.append(message)

    def identify(self, named: tuple[str, ...], uploader: Uploader | None):
        """(notebook, claimed student) from the name the student gave the file, or None."""
        if named[-1] in self.notebooks:  # a bare <notebook>.ipynb: whose only the LMS says
            return (named[-1], None) if uploader else None
        student, file_id = self.name_of("/".join((self.prefix, *named)))
        if not isinstance(student, str) or not isinstance(file_id, str):
            return None
        notebook = os.path.splitext(file_id)[0] + ".ipynb"
        return (notebook, student) if notebook in self.notebooks else None

    def member(self, archive: zipfile.ZipFile, info, named, uploader, late, where, budget=None):
        """Stage one notebook member when its name maps to a student's notebook. Returns None
        when it does not, else the bytes decompressed (a nested archive's budget counts them)."""
        found = self.identify(named, uploader)
        if found is None:
            return None
        self.found.matched += 1
        notebook, claim = found
        if claim is not None and not safe_id(claim):
            self.warn(unsafe_id_warning(where, claim))
            return 0
        bounds = [
            (MAX_NOTEBOOK_BYTES, f"larger than {_mib(MAX_NOTEBOOK_BYTES)} (a notebook's bound)")
        ]
        if budget is not None:
            bounds.append((budget, f"its archive expands past {_mib(MAX_NESTED_READ_BYTES)}"))
        total = f"the notebooks of this download passed {_mib(MAX_TOTAL_BYTES)}"
        bounds.append((MAX_TOTAL_BYTES - self.total, total))
        for bound, why in bounds:  # what its header says: the first bound it passes
            if info.file_size > bound:
                self.warn(f"skipped {where}: {why}; not extracted")
                return 0
        limit, why = min(bounds, key=lambda bound: bound[0])  # what it expands to
        self.staged += 1
        staged = self.staging / f"{self.staged:07d}.ipynb"
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            with os.fdopen(fd, "wb") as out, archive.open(info) as source:
                size = _copy_bounded(source, out, limit, why)
        except Exception as error:  # this upload's failure boundary
            written = staged.stat().st_size if staged.is_file() else 0
            staged.unlink(missing_ok=True)
            reason = error if isinstance(error, Rejected) else f"unreadable ({_error(error)})"
            self.warn(f"skipped {where}: {reason}")
            return limit if isinstance(error, Rejected) else written
        os.chmod(staged, 0o644)
        self.total += size
        self.found.uploads.append(Upload(where, notebook, claim, uploader, late, staged))
        return size

    def nested(self, archive: zipfile.ZipFile, info, named, uploader, late, where) -> None:
        """Open an uploaded .zip, one level deep and bounded (see NOTE [LMS downloads])."""
        if info.file_size > MAX_NESTED_ZIP_BYTES:
            self.warn(f"skipped {where}: an archive larger than {_mib(MAX_NESTED_ZIP_BYTES)}")
            return
        with tempfile.TemporaryFile(dir=self.staging) as spool:  # unlinked: gone when closed
            try:
                with archive.open(info) as source:
                    _copy_bounded(
                        source,
                        spool,
                        MAX_NESTED_ZIP_BYTES,
                        f"an archive larger than {_mib(MAX_NESTED_ZIP_BYTES)}",
                    )
                if not zipfile.is_zipfile(spool):
                    raise Rejected("not a zip archive (only .ipynb and .zip uploads are read)")
                size = directory_size(spool)
                if (
                    size is None
                    or size[0] > MAX_NESTED_MEMBERS
                    or (size[1] > MAX_NESTED_DIRECTORY_BYTES)
                ):
                    raise Rejected(
                        f"an archive of more than {MAX_NESTED_MEMBERS} files (or an unusual "
                        "zip); not opened"
                    )
                with zipfile.ZipFile(spool) as inner:
                    self.nested_members(inner, named, uploader, late, where)
            except Exception as error:  # this upload's failure boundary
                reason = error if isinstance(error, Rejected) else f"unreadable ({_error(error)})"
                self.warn(f"skipped {where}: {reason}")

    def nested_members(self, inner: zipfile.ZipFile, named, uploader, late, where) -> None:
        budget, ignored = MAX_NESTED_READ_BYTES, []
        folder = (*named[:-1], os.path.splitext(named[-1])[0])  # as nbgrader's unzip names it
        for info in inner.infolist():
            if budget <= 0:
                self.warn(
                    f"skipped the rest of {where}: it expands past {_mib(MAX_NESTED_READ_BYTES)}"
                )
                break
            if _is_folder(info):
                continue
            inner_where = f"{where}: {shown(info.filename)}"
            if problem := member_problem(info):
                self.warn(f"skipped {inner_where}: {problem}")
                continue
            parts = _parts(info.filename)
            if not parts:
                continue
            if parts[-1].lower().endswith((".zip", ".gz", ".tar", ".7z", ".rar")):
                self.warn(
                    f"skipped {inner_where}: an archive inside an uploaded archive (not opened)"
                )
                continue
            if not parts[-1].endswith(".ipynb"):
                ignored.append(shown(info.filename))
                continue
            read = self.member(inner, info, (*folder, *parts), uploader, late, inner_where, budget)
            if read is None:
                ignored.append(shown(info.filename))
            else:
                budget -= read
        if ignored:
            self.warn(f"{where}: ignored {listing(ignored)} (not <student>_<notebook>.ipynb)")


def _error(error: BaseException) -> str:
    return shown(f"{type(error).__name__}: {error}", 120)


def read_download(
    archive: Path,
    notebooks: set[str],
    name_of: Callable[[str], tuple[str | None, str | None]],
    staging: Path,
) -> Download:
    """Read the LMS download `archive`: every notebook member whose name maps to one of
    `notebooks` (`name_of(path)` gives (student, file name) from the course's collector) is
    staged under `staging` (see NOTE [LMS downloads]). ValueError when `archive` itself cannot
    be read; a bad upload is only a warning."""
    reader = _Reader(notebooks, name_of, staging, f"{staging}/{Path(archive).stem}")
    with open(archive, "rb") as file:
        size = directory_size(file)
        if size is not None and (size[0] > MAX_MEMBERS or size[1] > MAX_DIRECTORY_BYTES):
            raise ValueError(f"it lists {size[0]} files; more than {MAX_MEMBERS} are not read")
        with zipfile.ZipFile(file) as download:
            for info in download.infolist():
                if _is_folder(info):
                    continue
                where = shown(info.filename)
                if problem := member_problem(info):
                    reader.warn(f"skipped {where}: {problem}")
                    continue
                parts = _parts(info.filename)
                uploader, named, late = lms_uploader(parts)
                if not named:
                    continue
                if named[-1].lower().endswith(".zip"):
                    reader.nested(download, info, named, uploader, late, where)
                elif reader.member(download, info, named, uploader, late, where) is None:
                    reader.found.unmatched.append(shown(parts[-1]))
    return reader.found


# --- whose each upload is -------------------------------------------------------------------------
def bind(uploads: list[Upload], roster: Roster) -> tuple[dict[str, dict[str, Upload]], list[str]]:
    """Decide whose each upload is (see NOTE [LMS downloads]): {student: {notebook: upload}}
    to collect, and warnings for what is not collected and why."""
    warnings: list[str] = []
    need_roster = False  # a warning that a roster would settle
    bound: list[tuple[str, Upload, bool]] = []  # (student, upload, checked against the roster)
    for upload in uploads:
        uploader, claim = upload.uploader, upload.claim
        if uploader is None:
            bound.append((claim, upload, False))
            continue
        owner = roster.owner(uploader, claim)
        if owner is not None and not safe_id(owner):
            warnings.append(unsafe_id_warning(upload.where, owner))
        elif owner is not None and claim not in (None, owner):
            warnings.append(
                f"skipped {upload.where}: named for {claim} but uploaded by {uploader}, who is "
                f"{owner}; not collected (neither as {claim}'s nor as {owner}'s)"
            )
        elif owner is not None:
            bound.append((owner, upload, True))
        elif claim is None:
            warnings.append(
                f"skipped {upload.where}: the roster does not say who {uploader} is, and "
                "the file's name does not either"
            )
            need_roster = True
        elif roster.knows(claim, uploader.lms):
            warnings.append(
                f"skipped {upload.where}: named for {claim} but uploaded by {uploader}, who is "
                f"not {claim} by the roster; not collected"
            )
        else:
            bound.append((claim, upload, False))

    # An uploader the roster does not know must claim one student, and a student be claimed by
    # one uploader: otherwise someone uploaded a file named after someone else.
    claims: dict[Uploader, set[str]] = {}
    for student, upload, checked in bound:
        if upload.uploader is not None and not checked:
            claims.setdefault(upload.uploader, set()).add(student)
    forgers = {u for u, students in claims.items() if len(students) > 1}
    for uploader in sorted(forgers, key=str):
        warnings.append(
            f"{uploader} uploaded files named for {', '.join(sorted(claims[uploader]))}: none "
            "collected (one of them is someone else's)"
        )
        need_roster = True
    by_student: dict[str, list[Upload]] = {}
    unchecked_uploads = {id(upload) for _, upload, checked in bound if not checked}
    for student, upload, _ in bound:
        if upload.uploader not in forgers:
            by_student.setdefault(student, []).append(upload)

    chosen: dict[str, dict[str, Upload]] = {}
    unchecked = []
    for student in sorted(by_student):
        files = by_student[student]
        uploaders = {u.uploader for u in files}
        if len(uploaders) > 1:
            who = "; ".join(f"{u.uploader or 'no LMS name'}: {u.where}" for u in files)
            warnings.append(
                f"{student}: not collected (submitted/ keeps what it held): files named for "
                f"{student} come from more than one uploader ({who})"
            )
            need_roster = True
            continue
        notebooks: dict[str, Upload] = {}
        twice = None
        for upload in files:
            if upload.notebook in notebooks:
                twice = (notebooks[upload.notebook], upload)
            notebooks[upload.notebook] = upload
        if twice:
            warnings.append(
                f"{student}: not collected (submitted/ keeps what it held): two files for "
                f"{student}'s {twice[0].notebook}: {twice[0].where} and {twice[1].where}; keep "
                "one and collect again"
            )
            continue
        chosen[student] = notebooks
        for upload in files:
            if upload.late:
                warnings.append(f"{student}: {upload.uploader.lms} marks {upload.where} late")
            if upload.uploader is not None and id(upload) in unchecked_uploads:
                unchecked.append(f"{student} <- {upload.uploader}")
    if unchecked:
        warnings.append(
            "bound by file name only (the roster does not know these uploaders; check the "
            f"pairs): {listing(unchecked)}"
        )
        need_roster = True
    if need_roster:
        warnings.append(f"to bind each upload to its uploader, {_ROSTER_HINT}")
    return chosen, warnings


_ROSTER_HINT = (
    "give the roster: `cd COURSE && nbgrader db student add ID --first-name F --last-name L "
    "--lms-user-id N` (Canvas's user id; Moodle goes by names), or a roster CSV of id, "
    "first_name, last_name, lms_user_id"
)


def load_roster(
    db_url: str, course_id: str, csv_path: Path | None = None
) -> tuple[Roster, list[str]]:
    """The gradebook's students, then the rows of the roster CSV `csv_path` (if given);
    ValueError when the CSV cannot be read."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gradebook:
        roster = roster_from(gradebook.students)
    warnings = []
    if csv_path is not None:
        try:
            warnings = roster.read_csv(Path(csv_path))
        except (OSError, UnicodeDecodeError, csv.Error) as error:
            raise ValueError(_error(error)) from error
    return roster, warnings


# --- writing what is collected --------------------------------------------------------------------
def replace_folder(destination: Path) -> None:
    """Make `destination` a new empty folder (mode 0755), removing what was there."""
    if destination.is_symlink() or destination.is_file():
        destination.unlink()
    elif destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    os.chmod(destination, 0o755)


def install(files: dict[str, Path], destination: Path) -> None:
    """Move staged files into `destination` (a new folder) as `{name: staged}` says, mode 0644."""
    replace_folder(destination)
    for name, staged in files.items():
        shutil.move(staged, destination / name)
        os.chmod(destination / name, 0o644)


def copy_file(source: Path, destination: Path, limit: int = MAX_COPIED_BYTES) -> None:
    """Copy a regular file, never through a link, at most `limit` bytes (Rejected when it is
    larger or not a regular file); the copy has mode 0644."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise Rejected("not a regular file")
        out_fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            with os.fdopen(out_fd, "wb") as out:
                _copy_bounded(file, out, limit, f"larger than {_mib(limit)}")
        except BaseException:
            destination.unlink(missing_ok=True)
            raise
    os.chmod(destination, 0o644)
