"""Issue 30, sections 5 and 6, as an instructor meets them: a Canvas download graded with
`python -m solutions grade --zip --roster`.

The download holds an honest student (alice), a copy of her answers padded with a line of 400
numbers in every cell (bob), a file named after alice uploaded by mallory, a zip bomb, a `../`
member, a setuid member and a file name with terminal escape codes. The honest student and the
padded copy are graded; the pair is flagged; nothing else is collected as anyone's; nothing with
powers or of size is left in the course folder; the terminal sees no escape code. Behind
--classes (two sandboxes, about 40 s).
"""

from __future__ import annotations

import contextlib
import io
import stat
from pathlib import Path

import nbformat
import pytest
from course_support import NOTEBOOK_1, copy_course, with_answers
from similarity_class import STUDENTS
from test_uploads import bomb, make_zip, member

from solutions.instructor import report
from solutions.instructor.cli import main
from solutions.instructor.course import open_course

pytestmark = [pytest.mark.classes, pytest.mark.filterwarnings("ignore::UserWarning")]

NB = f"{NOTEBOOK_1}.ipynb"
PADDING = "_ = [" + ", ".join(str(n) for n in range(400)) + "]\n"
ROSTER = """id,first_name,last_name,lms_user_id
alice,Alice,Smith,111
bob,Bob,Doe,333
mallory,Mallory,Jones,222
"""


def test_a_hostile_canvas_download(released_course: Path, tmp_path: Path) -> None:
    course = copy_course(released_course, tmp_path / "course")
    release = nbformat.read(course / "release" / NOTEBOOK_1 / NB, as_version=4)
    answers = STUDENTS["alice"]  # her own answers (the reference's k-grams are ignored)
    alice = nbformat.writes(with_answers(release, answers)).encode()
    padded = {grade_id: PADDING + code + "\n" + PADDING for grade_id, code in answers.items()}
    bob = nbformat.writes(with_answers(release, padded)).encode()
    archive = tmp_path / "submissions.zip"
    make_zip(archive, {
        f"smithalice_111_901_{NB}": alice,
        f"doebob_333_903_{NB}": bob,
        f"jonesmallory_222_902_alice_{NB}": nbformat.writes(release).encode(),
        f"jonesmallory_222_904_{NOTEBOOK_1}.zip": bomb(200),
        member(f"../../escaped_{NB}"): alice,
        member(f"smithalice_111_905_setuid_{NB}", stat.S_IFREG | 0o4755): alice,
        f"x\x1b[2J\x1b[Hevery student scored 25_{NB}": alice,
    })  # fmt: skip
    (tmp_path / "roster.csv").write_text(ROSTER)

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["--course", str(course), "grade", NOTEBOOK_1, "--zip", str(archive),
                     "--roster", str(tmp_path / "roster.csv"), "--jobs", "2"])  # fmt: skip
    output = out.getvalue()
    assert code in (0, 1) and "Traceback" not in output, output[-4000:]
    assert "\x1b" not in output and "\\x1b[2J" in output, "escape codes are shown, not run"

    rows = {r.student: r for r in report.student_rows(open_course(course), NOTEBOOK_1)}
    assert sorted(rows) == ["alice", "bob"], output[-3000:]  # mallory's files are no one's
    assert (rows["alice"].score, rows["alice"].flags) == (25, []), rows["alice"]
    assert rows["bob"].score == 25, rows["bob"]
    table = output.split("first  ")[-1].splitlines()[1:]  # grade's similarity table
    assert any(line.split()[:2] == ["alice", "bob"] for line in table), output[-3000:]

    for path in [course, *course.rglob("*")]:
        mode = path.lstat().st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID) and not stat.S_ISLNK(mode), path
    assert not (tmp_path / f"escaped_{NB}").exists() and not (course.parent / NB).exists()
    left = [p for p in (course / "downloaded").rglob("*") if p.is_file()]
    assert left == [], left
