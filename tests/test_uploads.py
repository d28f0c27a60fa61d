"""Hostile LMS downloads (issue 30): `collect --zip` reads uploads as data, bounded, each inside
its own failure boundary, and binds each file to its uploader where Canvas or Moodle names one.

Only the collect step runs (no kernels), on a real released course: see NOTE [LMS downloads] in
solutions/instructor/uploads.py.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import struct
import time
import tracemalloc
import zipfile
import zlib
from functools import lru_cache
from pathlib import Path

import nbformat
import pytest
from course_support import NOTEBOOK_1, copy_course
from nbformat.v4 import new_markdown_cell, new_notebook
from nbgrader.api import Gradebook

from solutions.instructor import uploads
from solutions.instructor.cli import main
from solutions.instructor.course import CommandError, open_course
from solutions.instructor.pipeline import collect_folder, collect_zip, prune_submissions

NB = f"{NOTEBOOK_1}.ipynb"
MiB = 2**20


@pytest.fixture
def course(released_course: Path, tmp_path: Path) -> Path:
    return copy_course(released_course, tmp_path / "course")


@lru_cache
def notebook(marker: str) -> bytes:
    """A notebook saying whose it is (collection copies bytes: any notebook will do)."""
    return nbformat.writes(
        new_notebook(cells=[new_markdown_cell(f"submitted by {marker}")])
    ).encode()


def member(name: str, mode: int = stat.S_IFREG | 0o644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2026, 12, 1, 12, 0, 0))
    info.create_system = 3  # Unix: the high 16 bits of external_attr are st_mode
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def make_zip(path: Path | None, files: dict) -> bytes:
    """A zip of `{name or ZipInfo: bytes}`; written to `path` too when given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name if isinstance(name, zipfile.ZipInfo) else member(name), data)
    if path is not None:
        path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


@lru_cache
def bomb(expanded_mib: int, claimed_size: int | None = None) -> bytes:
    """A zip whose one notebook member expands to `expanded_mib` MiB of zeros from about 1 KB
    per MiB, built without compressing them (a deflate block of 1 MiB of zeros after a full
    flush is the same bytes each time); `claimed_size`: what its headers say instead."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = compressor.compress(bytes(MiB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    data = block * expanded_mib + compressor.flush()
    crc = 0
    for _ in range(expanded_mib):
        crc = zlib.crc32(bytes(MiB), crc)
    size = expanded_mib * MiB if claimed_size is None else claimed_size
    name = f"mallory_{NB}".encode()
    local = struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 8, 0, 0x5A21, crc, len(data),
                        size, len(name), 0) + name  # fmt: skip
    central = struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, 20, 0, 0, 8, 0, 0x5A21, crc,
                          len(data), size, len(name), 0, 0, 0, 0, (stat.S_IFREG | 0o644) << 16,
                          0) + name  # fmt: skip
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(data), 0
    )
    return local + data + central + end


def collect(course: Path, archive: Path, roster: Path | None = None):
    return collect_zip(open_course(course), NOTEBOOK_1, archive, roster)


def submitted(course: Path, student: str) -> Path:
    return course / "submitted" / student / NOTEBOOK_1 / NB


def tree(root: Path) -> dict[str, os.stat_result]:
    return {str(p.relative_to(root)): p.lstat() for p in root.rglob("*")}


def assert_printable(warnings: list[str]) -> None:
    for warning in warnings:
        assert warning.isprintable(), repr(warning)


# --- members that are not plain files, or that leave the archive ----------------------------------
def test_hostile_members_are_skipped_and_honest_students_collected(
    course: Path, tmp_path: Path
) -> None:
    """A nested upload that is not an archive and a `../` member stopped `grade` with a
    traceback; links were followed and modes (setuid root) kept. Now each is skipped with its
    reason, what is kept is written 0644 under our own names, and the honest students are
    collected."""
    nested = make_zip(None, {
        member(f"cy_{NB}", stat.S_IFREG | 0o4755): notebook("cy"),
        member(f"../../escaped_{NB}"): notebook("escaped"),
        member(f"link_{NB}", stat.S_IFLNK | 0o777): b"/etc/shadow",
        member("deeper.zip"): make_zip(None, {f"deep_{NB}": notebook("deep")}),
        member("notes.txt"): b"hello",
    })  # fmt: skip
    archive = tmp_path / "lms.zip"
    make_zip(archive, {
        f"download/ann_{NB}": notebook("ann"),
        member(f"download/suid_{NB}", stat.S_IFREG | 0o4755): notebook("suid"),
        member(f"download/open_{NB}", stat.S_IFREG | 0o777): notebook("open"),
        f"download/bob_{NOTEBOOK_1}.zip": b"this is not a zip archive",
        f"download/cy_{NOTEBOOK_1}.zip": nested,
        f"../dotdot_{NB}": notebook("dotdot"),
        f"/{tmp_path}/absolute_{NB}": notebook("absolute"),
        member(f"download/link_{NB}", stat.S_IFLNK | 0o777): b"/etc/passwd",
        member("download/escape", stat.S_IFLNK | 0o777): str(tmp_path),
        f"download/escape/outside_{NB}": notebook("outside"),
        member(f"download/fifo_{NB}", stat.S_IFIFO | 0o644): b"",
        member(f"download/dev_{NB}", stat.S_IFCHR | 0o666): b"",
    })  # fmt: skip
    outside = {p.name for p in tmp_path.iterdir()}
    result = collect(course, archive)

    assert result.students == ["ann", "cy", "open", "outside", "suid"], result.warnings
    text = "\n".join(result.warnings)
    assert_printable(result.warnings)
    for name, reason in [
        (f"download/bob_{NOTEBOOK_1}.zip", "not a zip archive"),
        (f"../dotdot_{NB}", "leaves the archive"),
        (f"/{tmp_path}/absolute_{NB}", "leaves the archive"),
        (f"download/link_{NB}", "symbolic link"),
        ("download/escape", "symbolic link"),
        (f"download/fifo_{NB}", "not a regular file"),
        (f"download/dev_{NB}", "not a regular file"),
        (f"download/cy_{NOTEBOOK_1}.zip: ../../escaped_{NB}", "leaves the archive"),
        (f"download/cy_{NOTEBOOK_1}.zip: link_{NB}", "symbolic link"),
        (f"download/cy_{NOTEBOOK_1}.zip: deeper.zip", "archive inside an uploaded archive"),
    ]:
        assert f"skipped {name}: " in text and reason in text.split(f"skipped {name}: ")[1]
    assert f"download/cy_{NOTEBOOK_1}.zip: ignored notes.txt" in text
    # Nothing outside the course, nothing left in downloaded/, plain modes everywhere.
    assert {p.name for p in tmp_path.iterdir()} == outside
    assert not (course / "downloaded").exists()
    for student in result.students:
        assert submitted(course, student).read_bytes() == notebook(student)
        assert stat.S_IMODE(submitted(course, student).stat().st_mode) == 0o644
        assert stat.S_IMODE(submitted(course, student).parent.stat().st_mode) == 0o755
    for path, info in tree(course).items():
        assert not stat.S_ISLNK(info.st_mode), path
        assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWOTH), path


def test_the_command_goes_on_past_bad_uploads(course: Path, tmp_path: Path) -> None:
    """The issue's two tracebacks, through the command: exit 0, the honest student collected."""
    archive = tmp_path / "lms.zip"
    make_zip(archive, {
        f"ann_{NB}": notebook("ann"),
        f"bob_{NOTEBOOK_1}.zip": b"not an archive",
        f"../x/eve_{NB}": notebook("eve"),
    })  # fmt: skip
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--course", str(course), "collect", NOTEBOOK_1, "--zip", str(archive)])
    assert code == 0, err.getvalue()
    assert "collected 1 submission: ann" in err.getvalue()
    assert "Traceback" not in err.getvalue()


# --- bounds ---------------------------------------------------------------------------------------
def test_a_zip_bomb_is_bounded_in_disk_and_memory(course: Path, tmp_path: Path) -> None:
    """A 0.8 MB upload holding a notebook of 770 MiB of zeros used to be extracted whole
    (770 MiB under downloaded/, kept; 1.8 GB of memory). It is skipped by its header; one that
    lies about its size stops at the size it claims; a nested archive of more members than the
    bound is not opened; the notebooks of one nested archive stop at its budget."""
    many = make_zip(None, {f"p{i}_{NB}": b"{}" for i in range(uploads.MAX_NESTED_MEMBERS + 1)})
    big = 15 * MiB  # under the notebook bound; five of them pass the nested archive's budget
    budget = make_zip(None, {f"b{i}_{NB}": bytes(big) for i in range(5)})
    archive = tmp_path / "lms.zip"
    make_zip(archive, {
        f"ann_{NB}": notebook("ann"),
        f"mallory_{NOTEBOOK_1}.zip": bomb(770),
        f"liar_{NOTEBOOK_1}.zip": bomb(770, claimed_size=1000),
        f"many_{NOTEBOOK_1}.zip": many,
        f"budget_{NOTEBOOK_1}.zip": budget,
    })  # fmt: skip
    assert archive.stat().st_size < 2 * MiB
    before = sum(info.st_size for info in tree(course).values())
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = collect(course, archive)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    seconds = time.perf_counter() - start
    grown = sum(info.st_size for info in tree(course).values()) - before

    assert result.students == ["ann", "b0", "b1", "b2", "b3"], result.warnings
    text = "\n".join(result.warnings)
    assert f"skipped mallory_{NOTEBOOK_1}.zip: mallory_{NB}: larger than 16 MiB" in text
    assert f"skipped liar_{NOTEBOOK_1}.zip: mallory_{NB}: unreadable (BadZipFile" in text
    assert f"skipped many_{NOTEBOOK_1}.zip: an archive of more than 1000 files" in text
    assert f"skipped budget_{NOTEBOOK_1}.zip: b4_{NB}: its archive expands past 64 MiB" in text
    assert not (course / "downloaded").exists()
    assert grown < 4 * big + 2 * MiB  # the four notebooks collected, nothing else
    assert peak < 24 * MiB, f"peak of traced memory {peak / MiB:.1f} MiB"
    assert seconds < 10


def test_notebook_and_total_bounds(course: Path, tmp_path: Path, monkeypatch) -> None:
    """A plain member over the notebook bound, and notebooks past the download's total."""
    monkeypatch.setattr(uploads, "MAX_TOTAL_BYTES", 3 * len(notebook("x")) // 2)
    archive = tmp_path / "lms.zip"
    make_zip(archive, {
        f"ann_{NB}": notebook("ann"),
        f"big_{NB}": bytes(uploads.MAX_NOTEBOOK_BYTES + 1),
        f"zed_{NB}": notebook("zed"),
    })  # fmt: skip
    result = collect(course, archive)
    assert result.students == ["ann"]
    text = "\n".join(result.warnings)
    assert f"skipped big_{NB}: larger than 16 MiB" in text
    assert f"skipped zed_{NB}: the notebooks of this download passed" in text


# --- names ----------------------------------------------------------------------------------------
def test_names_with_escape_codes_are_escaped_and_ids_checked(course: Path, tmp_path: Path) -> None:
    """A file name holding terminal escapes was printed raw (it could forge "every student
    scored 25"); a student id of '..' named a folder outside submitted/."""
    forged = f"\x1b[2J\x1b[Hevery student scored 25\r\n\u202e_{NB}"
    archive = tmp_path / "lms.zip"
    make_zip(archive, {
        f"ann_{NB}": notebook("ann"),
        f"download/{forged}": notebook("forged"),
        f"download/.._{NB}": notebook("dotdot"),
        f"download/.hidden_{NB}": notebook("hidden"),
        f"Ev\x1bil Name_5_assignsubmission_file_/{NB}": notebook("evil"),
    })  # fmt: skip
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--course", str(course), "collect", NOTEBOOK_1, "--zip", str(archive)])
    assert code == 0, err.getvalue()
    output = err.getvalue()
    assert "\x1b" not in output and "\r" not in output and "\u202e" not in output
    assert "\\x1b[2J\\x1b[Hevery student scored 25\\r\\n\\u202e" in output
    assert "'..' is not a student id" in output and "'.hidden' is not a student id" in output
    assert "Moodle user 'Ev\\x1bil Name' (5)" in output
    assert open_course(course).students(NOTEBOOK_1) == ["ann"]
    assert not (course / NOTEBOOK_1).exists() and not (course / "submitted" / ".hidden").exists()


def test_collect_folder_checks_student_names_links_and_sizes(
    course: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The student id is a folder's name: checked and escaped like a file's; links are not
    followed; a copy has mode 0644; a file over the copy bound is skipped (one over the notebook
    bound is copied: admission flags it with the reason, tests/test_hostile_files.py)."""
    monkeypatch.setattr(uploads, "MAX_COPIED_BYTES", 2**20)
    inbox = tmp_path / "inbox"
    for student in ("ann", "al\x1bice", ".hidden", "big"):
        (inbox / student).mkdir(parents=True)
        (inbox / student / NB).write_bytes(notebook(student))
    (inbox / "big" / NB).write_bytes(bytes(2**20 + 1))
    (inbox / "ann" / f"\x1b[31mred{NB}").write_bytes(b"{}")
    os.chmod(inbox / "ann" / NB, 0o4777)
    (inbox / "linked").symlink_to(inbox / "ann")
    (inbox / "cy").mkdir()
    (inbox / "cy" / NB).symlink_to(inbox / "ann" / NB)
    result = collect_folder(open_course(course), NOTEBOOK_1, inbox)
    assert result.students == ["ann", "big", "cy"], result.warnings
    assert_printable(result.warnings)
    text = "\n".join(result.warnings)
    assert "'al\\x1bice' is not a student id" in text and "'.hidden' is not a student id" in text
    assert "linked: a link" in text and "ann: ignored \\x1b[31mred" in text
    assert f"big: skipped {NB}: larger than 1 MiB" in text and "cy: skipped" in text
    assert stat.S_IMODE(submitted(course, "ann").stat().st_mode) == 0o644
    assert not submitted(course, "cy").exists() and not submitted(course, "big").exists()


def test_exchange_submissions_are_pruned_to_plain_files(course: Path) -> None:
    folder = course / "submitted" / "ann" / NOTEBOOK_1
    folder.mkdir(parents=True)
    (folder / NB).write_bytes(notebook("ann"))
    os.chmod(folder / NB, 0o4777)
    (folder / "timestamp.txt").symlink_to("/etc/passwd")
    (folder / "\x1b[2Jjunk").write_text("x")
    warnings = prune_submissions(open_course(course), NOTEBOOK_1, ["ann"])
    assert_printable(warnings)
    assert sorted(p.name for p in folder.iterdir()) == [NB]
    assert stat.S_IMODE((folder / NB).stat().st_mode) == 0o644
    assert any("\\x1b[2Jjunk" in w for w in warnings)


# --- who uploaded a file --------------------------------------------------------------------------
def add_students(course: Path, rows: list[dict]) -> None:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "dyngraph") as gradebook:
        for row in rows:
            gradebook.update_or_create_student(row.pop("id"), **row)


CANVAS = {
    f"smithalice_111_901_alice_{NB}": notebook("alice"),
    f"jonesmallory_222_902_alice_{NB}": notebook("mallory as alice"),
    f"doebob_late_333_903_{NB}": notebook("bob"),
}
CANVAS_ROSTER = [
    {"id": "alice", "first_name": "Alice", "last_name": "Smith", "lms_user_id": "111"},
    {"id": "mallory", "first_name": "Mallory", "last_name": "Jones", "lms_user_id": "222"},
    {"id": "bob", "first_name": "Bob", "last_name": "Doe", "lms_user_id": "333"},
]


def test_canvas_uploads_are_bound_to_their_uploader(course: Path, tmp_path: Path) -> None:
    """Mallory uploads a file named after alice: with the roster (lms_user_id in the gradebook)
    it is skipped and alice's own file is collected; bob's `<notebook>.ipynb` is bob's."""
    add_students(course, [dict(row) for row in CANVAS_ROSTER])
    archive = tmp_path / "submissions.zip"
    make_zip(archive, CANVAS)
    result = collect(course, archive)
    assert result.students == ["alice", "bob"], result.warnings
    assert submitted(course, "alice").read_bytes() == notebook("alice")
    assert submitted(course, "bob").read_bytes() == notebook("bob")
    text = "\n".join(result.warnings)
    assert (
        f"skipped jonesmallory_222_902_alice_{NB}: named for alice but uploaded by Canvas user "
        "'jonesmallory' (222), who is mallory; not collected" in text
    )
    assert f"bob: Canvas marks doebob_late_333_903_{NB} late" in text


def test_canvas_roster_can_be_a_csv(course: Path, tmp_path: Path) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "id,first_name,last_name,email,lms_user_id\n"
        + "".join(
            f"{r['id']},{r['first_name']},{r['last_name']},,{r['lms_user_id']}\n"
            for r in CANVAS_ROSTER
        )  # fmt: skip
        + "bad id,X,Y,,999\n"
    )
    archive = tmp_path / "submissions.zip"
    make_zip(archive, CANVAS)
    result = collect(course, archive, roster)
    assert result.students == ["alice", "bob"], result.warnings
    assert submitted(course, "alice").read_bytes() == notebook("alice")
    assert any(
        "roster line 5" in w and "'bad id' is not a student id" in w for w in result.warnings
    )
    with pytest.raises(CommandError, match="no 'id' column"):
        (tmp_path / "bad.csv").write_text("name\nann\n")
        collect(course, archive, tmp_path / "bad.csv")


def test_canvas_without_roster_never_grades_a_forgery_as_the_victim(
    course: Path, tmp_path: Path
) -> None:
    """Without a roster the uploader still tells: a student named in files of two uploaders is
    not collected (her earlier submission stays), an uploader with files named for two students
    gets none collected, and a bare `<notebook>.ipynb` cannot be placed."""
    earlier = submitted(course, "alice")
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(notebook("alice, earlier"))
    archive = tmp_path / "submissions.zip"
    make_zip(archive, {
        **CANVAS,
        f"deecy_444_905_cy_{NB}": notebook("cy"),
        f"roedan_555_906_dan_{NB}": notebook("dan as dan"),
        f"roedan_555_907_eve_{NB}": notebook("dan as eve"),
    })  # fmt: skip
    result = collect(course, archive)
    assert result.students == ["cy"], result.warnings
    assert earlier.read_bytes() == notebook("alice, earlier")
    text = "\n".join(result.warnings)
    assert "alice: not collected (submitted/ keeps what it held): files named for alice come " \
        "from more than one uploader" in text  # fmt: skip
    assert "Canvas user 'roedan' (555) uploaded files named for dan, eve: none collected" in text
    assert f"skipped doebob_late_333_903_{NB}: the roster does not say who Canvas user " \
        "'doebob' (333) is" in text  # fmt: skip
    assert "bound by file name only" in text and "cy <- Canvas user 'deecy' (444)" in text


def test_a_forgery_of_a_student_on_the_roster_is_flagged_even_alone(
    course: Path, tmp_path: Path
) -> None:
    """The issue: a forged file was flagged only when the victim also uploaded. Alice is on the
    roster, did not upload; an uploader the roster does not know uploads a file named for her."""
    add_students(course, [dict(CANVAS_ROSTER[0])])
    archive = tmp_path / "submissions.zip"
    make_zip(archive, {f"jonesmallory_222_902_alice_{NB}": notebook("mallory as alice"),
                       f"ann_{NB}": notebook("ann")})  # fmt: skip
    result = collect(course, archive)
    assert result.students == ["ann"]
    assert any("named for alice but uploaded by Canvas user 'jonesmallory' (222), who is not "
               "alice by the roster" in w for w in result.warnings)  # fmt: skip


def test_moodle_uploads_are_bound_to_their_uploader(course: Path, tmp_path: Path) -> None:
    """Moodle's folder per submission (and its flat names): the roster's names say who is who.
    Mallory's forgeries, also in a folder of her own named like alice's and inside a zip, are
    skipped; alice's file is alice's, bob's bare notebook is bob's."""
    add_students(course, [
        {"id": "alice", "first_name": "Alice", "last_name": "Smith"},
        {"id": "mallory", "first_name": "Mallory", "last_name": "Jones"},
        {"id": "bob", "first_name": "Bob", "last_name": "Doe"},
    ])  # fmt: skip
    mallory = "Mallory Jones_18_assignsubmission_file_"
    archive = tmp_path / "moodle.zip"
    make_zip(archive, {
        f"Alice Smith_17_assignsubmission_file_/alice_{NB}": notebook("alice"),
        f"{mallory}/Alice Smith_17_assignsubmission_file_/alice_{NB}": notebook("m1"),
        f"{mallory}/work.zip": make_zip(None, {f"alice_{NB}": notebook("m2")}),
        f"Bob Doe_19_assignsubmission_file_{NB}": notebook("bob"),
        "Zed Roe_20_assignsubmission_onlinetext_onlinetext.html": b"<p>hi</p>",
    })  # fmt: skip
    result = collect(course, archive)
    assert result.students == ["alice", "bob"], result.warnings
    assert submitted(course, "alice").read_bytes() == notebook("alice")
    assert submitted(course, "bob").read_bytes() == notebook("bob")
    skipped = [w for w in result.warnings if "uploaded by Moodle user 'Mallory Jones' (18), " \
               "who is mallory" in w]  # fmt: skip
    assert len(skipped) == 2, result.warnings


def test_lms_names_are_parsed_as_documented() -> None:
    canvas = uploads.lms_uploader(("smithjohn_LATE_12345_67890_alice_x_y.ipynb",))
    assert canvas == (uploads.Uploader("Canvas", "12345", "smithjohn"), ("alice_x_y.ipynb",), True)
    moodle = uploads.lms_uploader(("dl", "John Smith_7_assignsubmission_file_", "sub", "a.ipynb"))
    assert moodle == (
        uploads.Uploader("Moodle", "7", "John Smith"),
        ("dl", "sub", "a.ipynb"),
        False,
    )
    assert uploads.lms_uploader(("ann_tiny.ipynb",)) == (None, ("ann_tiny.ipynb",), False)
    assert uploads.shown("a\x1b[2Jb\nc") == "a\\x1b[2Jb\\nc"
    assert uploads.shown(uploads.shown("\x1b\\x")) == uploads.shown("\x1b\\x")
    assert [uploads.safe_id(s) for s in ("ann", "a.b-c_d", ".a", "..", "a b", "", "a/b")] == [
        True, True, False, False, False, False, False]  # fmt: skip
