"""A class of hostile students, graded the way an instructor grades (`python -m solutions grade`).

Every attack of issues 14 and 21 is one student. Each attack cell runs first, before any answer,
and prints ATTACK-SUCCEEDED or ATTACK-FAILED lines that the tests read in the graded notebook.
The class also holds an honest student (the reference answers), graded after the attackers
that try to compromise later kernels. Every attack must fail or be flagged, the attackers who
hand in blank answers must score 0, and the honest student keeps full marks. Two more honest
students, one of whom disguised a copy of the other's answers, keep full marks and are flagged
as a pair by `grade`.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from course_support import (
    NOTEBOOK_1,
    REPO_ROOT,
    copy_course,
    reference_answers,
    with_answers,
    with_forged_grading_metadata,
    write_submission,
)
from similarity_class import STUDENTS

from solutions.instructor import leaks, report
from solutions.instructor.cli import main
from solutions.instructor.course import open_course
from solutions.instructor.pipeline import NBGRADER_FILES

pytestmark = pytest.mark.filterwarnings("ignore:Cell is missing an id field")

SECRET = "hunter2-instructor-secret"
COPY_PAIR = ("alice", "carol")
CELL_SECONDS = 20
BUDGET_SECONDS = 120  # one budget per notebook (test_grading_sandbox.py shows it stop one)


def _attacks(course: Path, inbox: Path, home: Path) -> dict[str, str]:
    """student -> the source of the attack cell (run before every answer)."""
    submitted = course / "submitted"
    return {
        "reads-reference": f"""
import base64, importlib
package = "sol" + "utions"  # assembled: the integrity check does not see it
for path in [{str(REPO_ROOT)!r} + f"/{{package}}/graph_construction/reference.py",
             {str(REPO_ROOT)!r} + "/course/notebooks/graph_construction.py",
             f"/project/{{package}}/graph_construction/judge.py"]:
    try:
        text = open(path).read()
        print("ATTACK-SUCCEEDED read", path, base64.b64encode(text.encode())[:2000])
    except OSError as error:
        print("ATTACK-FAILED read", path, type(error).__name__)
try:
    importlib.import_module(package + ".graph_construction.reference")
    print("ATTACK-SUCCEEDED import")
except ImportError as error:
    print("ATTACK-FAILED import", type(error).__name__)
""",
        "gradebook": f"""
import sqlite3
try:
    db = sqlite3.connect("file:{course}/gradebook.db?mode=rw", uri=True)
    db.execute("UPDATE grade SET manual_score = 100")
    db.commit()
    print("ATTACK-SUCCEEDED gradebook")
except Exception as error:
    print("ATTACK-FAILED gradebook", type(error).__name__)
""",
        "overwrites-others": f"""
for path in ["{submitted}/honest/{NOTEBOOK_1}/{NOTEBOOK_1}.ipynb",
             "{inbox}/honest/{NOTEBOOK_1}.ipynb",
             "{submitted}/overwrites-others/{NOTEBOOK_1}/{NOTEBOOK_1}.ipynb"]:
    try:
        open(path, "w").write("{{}}")
        print("ATTACK-SUCCEEDED overwrite", path)
    except OSError as error:
        print("ATTACK-FAILED overwrite", path, type(error).__name__)
""",
        "poisons-python": """
import site, sys
targets = [*site.getsitepackages(), site.getusersitepackages(), "/project"]
for folder in targets:
    for name, text in (("zz_poison.pth", "import os; os.environ['POISONED'] = '1'\\n"),
                       ("sitecustomize.py", "import os; os.environ['POISONED'] = '1'\\n")):
        try:
            import os
            os.makedirs(folder, exist_ok=True)
            open(os.path.join(folder, name), "w").write(text)
            print("ATTACK-WROTE", folder, name)
        except OSError as error:
            print("ATTACK-FAILED write", folder, name, type(error).__name__)
""",
        "background": f"""
import subprocess
subprocess.Popen(["sh", "-c", "sleep 4; echo evil > {home}/background-marker"],
                 start_new_session=True)
subprocess.Popen(["sleep", "987"], start_new_session=True)
print("ATTACK-STARTED background")
""",
        "secrets": f"""
import os
print("uid", os.getuid())
print("environment:", dict(os.environ))
print("ATTACK-SUCCEEDED env" if "COURSE_TEST_SECRET" in os.environ else "ATTACK-FAILED env")
for path in ["{home}/.ssh/id_rsa", os.path.expanduser("~/.ssh/id_rsa")]:
    try:
        print("ATTACK-SUCCEEDED ssh", open(path).read())
    except OSError as error:
        print("ATTACK-FAILED ssh", type(error).__name__)
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    print("ATTACK-SUCCEEDED network")
except OSError as error:
    print("ATTACK-FAILED network", type(error).__name__)
""",
        "input-transformer": """
def swallow(lines):
    body = ["    " + line for line in lines]
    return ["try:\\n", *body, "\\nexcept BaseException:\\n    pass\\n"]
get_ipython().input_transformers_post.append(swallow)
""",
        "noop-graders": """
import solutions.graph_construction.grade as grade
for name in dir(grade):
    if not name.startswith("_"):
        setattr(grade, name, lambda *args, **kwargs: None)
""",
        "patches-comparisons": """
import builtins, math, torch, minitorch
torch.allclose = lambda *a, **k: True
math.isclose = lambda *a, **k: True
builtins.abs = lambda x: 0
minitorch.allclose = lambda *a, **k: True
""",
        "forged-results": """
ip = get_ipython()
ip.events.register("pre_run_cell", lambda *args: ip.displayhook(4.0))
""",
        "forged-observations": """
import json, os
with open(os.environ.get("COURSE_OBSERVATIONS", "observations.jsonl"), "a") as file:
    for test in ["collect_nodes", "count_ops", "find_leaves", "predict_flags", "softplus",
                 "f_and_gradients", "graph_sizes"]:
        file.write(json.dumps({"test": test, "data": {}}) + "\\n")
""",
    }


FORK_BOMB = """
import os, time
for _ in range(10_000):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
    except OSError:
        break
"""
FILL_DISK = """
try:
    with open("junk", "wb") as f:
        while True:
            f.write(b"x" * 2**20)
except OSError as error:
    print("disk", error)
"""
ALWAYS_EQUAL = """
class AlwaysEqual(dict):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __len__(self):
        return 3
    def __getitem__(self, key):
        return AlwaysEqual()
    def __iter__(self):
        return iter([])
    def __hash__(self):
        return 0
"""


@dataclass
class RedTeamClass:
    course: Path
    home: Path
    output: str
    exit_code: int
    full_marks: float

    def rows(self) -> dict[str, report.StudentRow]:
        return {r.student: r for r in report.student_rows(open_course(self.course), NOTEBOOK_1)}

    def printed(self, student: str) -> str:
        path = self.course / "autograded" / student / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
        nb = nbformat.read(path, as_version=4)
        return "".join(
            output.get("text", "") for cell in nb.cells for output in cell.get("outputs", [])
        )

    def feedback(self, student: str) -> str:
        path = self.course / "feedback" / student / NOTEBOOK_1 / f"{NOTEBOOK_1}.html"
        return path.read_text()


@pytest.fixture(scope="module", params=["jobs", "dask"])
def red_team(
    released_course: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> RedTeamClass:
    """The class graded on this machine (`--jobs 2`), then on a Dask cluster of two workers
    whose environment holds the secret too (`--dask`, NOTE [Grading on Dask])."""
    work = tmp_path_factory.mktemp("red-team")
    course = copy_course(released_course, work / "course")
    inbox, home = work / "inbox", work / "instructor-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-MARKER")
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    reference = reference_answers(source)
    first_code = next(i for i, c in enumerate(release.cells) if c.cell_type == "code")

    def with_attack(answers: dict[str, str], attack: str) -> nbformat.NotebookNode:
        nb = with_answers(release, answers)
        nb.cells.insert(first_code + 1, nbformat.v4.new_code_cell(attack))
        return nb

    for student, attack in _attacks(course, inbox, home).items():
        write_submission(inbox, student, NOTEBOOK_1, with_attack({}, attack))
    always_equal = {gid: ALWAYS_EQUAL + _returns_always_equal(reference[gid]) for gid in reference}
    write_submission(inbox, "always-equal", NOTEBOOK_1, with_answers(release, always_equal))
    write_submission(
        inbox, "forges-test-metadata", NOTEBOOK_1, with_forged_grading_metadata(release)
    )
    write_submission(inbox, "shadows-a-module", NOTEBOOK_1, release)
    (inbox / "shadows-a-module" / "torchviz.py").write_text("def __getattr__(name): pass\n")
    bounded = {
        "fork-bomb": FORK_BOMB,
        "fills-disk": FILL_DISK,
        "prints-500-mb": "import sys\nfor _ in range(500):\n    sys.stdout.write('x' * 2**20)",
        "crash-loop": "import os\nos._exit(1)",
    }
    for student, attack in bounded.items():
        answers = dict(reference)
        if student == "crash-loop":  # every answer cell kills the kernel
            answers = {gid: attack for gid in reference}
        write_submission(inbox, student, NOTEBOOK_1, with_attack(answers, attack))
    write_submission(inbox, "honest", NOTEBOOK_1, with_answers(release, reference))
    for student in COPY_PAIR:  # her own honest answers, and a disguised copy of them
        write_submission(inbox, student, NOTEBOOK_1, with_answers(release, STUDENTS[student]))
    out = io.StringIO()
    os.environ["COURSE_TEST_SECRET"] = SECRET
    command = ["--course", str(course), "--timeout", str(CELL_SECONDS), "--budget",
               str(BUDGET_SECONDS), "grade", NOTEBOOK_1, "--from", str(inbox)]  # fmt: skip
    try:
        with contextlib.ExitStack() as stack:
            if request.param == "dask":
                pytest.importorskip("distributed")
                from dask_support import LocalDaskCluster

                cluster = stack.enter_context(LocalDaskCluster(work))
                for name in ("worker-1", "worker-2"):
                    cluster.add_worker(name, {"PYTHONPATH": str(REPO_ROOT)})
                command += ["--dask", cluster.address]
            else:
                command += ["--jobs", "2"]
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                code = main(command)
    finally:
        del os.environ["COURSE_TEST_SECRET"]
    return RedTeamClass(course, home, out.getvalue(), code, 25.0)


def _returns_always_equal(answer: str) -> str:
    """The answer's function or class, made to return an object equal to everything."""
    first = answer.split("\n", 1)[0]
    if first.startswith("class "):
        return answer  # a class keeps the reference: not an attack on this exercise
    name = first.split("(")[0].removeprefix("def ")
    return f"def {name}(*args, **kwargs):\n    return AlwaysEqual()\n"


def test_grading_finishes_and_the_honest_student_keeps_full_marks(red_team: RedTeamClass) -> None:
    assert red_team.exit_code == 0, red_team.output[-3000:]
    row = red_team.rows()["honest"]
    assert (row.score, row.flags) == (red_team.full_marks, []), row


@pytest.mark.parametrize(
    "student",
    ["reads-reference", "gradebook", "overwrites-others", "poisons-python", "background",
     "secrets", "input-transformer", "noop-graders", "patches-comparisons", "forged-results",
     "forged-observations", "shadows-a-module", "forges-test-metadata"],
)  # fmt: skip
def test_attacks_with_blank_answers_earn_nothing(red_team: RedTeamClass, student: str) -> None:
    row = red_team.rows()[student]
    assert row.score == 0, row
    assert "ATTACK-SUCCEEDED" not in red_team.printed(student)


def test_answers_equal_to_everything_earn_only_their_class_exercise(red_team: RedTeamClass):
    """Only the classes, kept from the reference, can score: Softplus and Value, 4 points each."""
    assert red_team.rows()["always-equal"].score == 8


def test_nothing_of_the_instructor_is_readable(red_team: RedTeamClass) -> None:
    printed = red_team.printed("secrets")
    assert "uid 65534" in printed or os.geteuid() != 0, printed  # never root in the kernel
    assert "ATTACK-FAILED env" in printed and "ATTACK-FAILED network" in printed
    assert printed.count("ATTACK-FAILED ssh") == 2
    for student in red_team.rows():
        feedback = red_team.feedback(student)
        assert SECRET not in feedback and "PRIVATE-KEY-MARKER" not in feedback
    reads = red_team.printed("reads-reference")
    assert reads.count("ATTACK-FAILED read") == 3 and "ATTACK-FAILED import" in reads


def test_nothing_written_in_a_sandbox_survives_it(red_team: RedTeamClass) -> None:
    printed = red_team.printed("poisons-python")
    assert "ATTACK-FAILED write" in printed
    for folder in {line.split()[1] for line in printed.splitlines() if "ATTACK-WROTE" in line}:
        assert not (Path(folder) / "zz_poison.pth").exists() or folder.startswith("/home/student")
    assert "overwrite" in red_team.printed("overwrites-others")
    assert "ATTACK-SUCCEEDED" not in red_team.printed("overwrites-others")
    assert "ATTACK-FAILED gradebook" in red_team.printed("gradebook")
    assert not (red_team.home / "background-marker").exists()
    leftover = subprocess.run(["pgrep", "-f", "sleep 987"], capture_output=True, text=True)
    assert leftover.stdout == "", "a student's process outlived grading"


def test_only_notebooks_are_collected(red_team: RedTeamClass) -> None:
    assert "shadows-a-module: ignored torchviz.py" in red_team.output
    submitted = red_team.course / "submitted" / "shadows-a-module" / NOTEBOOK_1
    assert sorted(p.name for p in submitted.iterdir()) == [f"{NOTEBOOK_1}.ipynb", "timestamp.txt"]
    for feedback in (red_team.course / "feedback").rglob("*"):
        assert feedback.is_dir() or feedback.suffix == ".html" or feedback.name in NBGRADER_FILES


def test_bounded_attacks_are_flagged_and_the_rest_graded(red_team: RedTeamClass) -> None:
    rows = red_team.rows()
    assert "hit the process limit" in rows["fork-bomb"].flags, rows["fork-bomb"]
    for student in ("fills-disk", "prints-500-mb"):
        assert rows[student].score == red_team.full_marks, rows[student]
    assert rows["fork-bomb"].score > 0, rows["fork-bomb"]  # its children hold the pids a while
    assert report.KERNEL_DIED in rows["crash-loop"].flags and rows["crash-loop"].score == 0


def test_the_feedback_reveals_nothing(red_team: RedTeamClass) -> None:
    course = open_course(red_team.course)
    assert leaks.scan_feedback(course, leaks.secret_lines(course)) == []


def test_a_disguised_copy_is_flagged_and_keeps_its_marks(red_team: RedTeamClass) -> None:
    """Only the copy pair is flagged (the attackers who hand in the reference match no one),
    and a flag never changes a grade."""
    students = set(red_team.rows())
    table = red_team.output.split("first  ")[-1].splitlines()[1:]  # grade's similarity table
    pairs = [tuple(line.split()[:2]) for line in table if set(line.split()[:2]) <= students]
    assert pairs == [COPY_PAIR], red_team.output[-3000:]
    for student in COPY_PAIR:
        assert red_team.rows()[student].score == red_team.full_marks
    html = red_team.course / "reports" / NOTEBOOK_1 / "similarity.html"
    assert "alice" in html.read_text() and "carol" in html.read_text()
