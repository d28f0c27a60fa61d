"""A class on JupyterHub (deploy/jupyterhub/, `python -m solutions hub`).

The fast tests (default run) read the configuration and check the errors that name a fix.
The class test (`--hub`, a few minutes on 2 cores) drives a real hub end to end, as its users
would: the instructor releases notebook 1 to the exchange; students log in, fetch through the
endpoints of nbgrader's server extension that the assignment list calls, write answers with the
contents API, validate and submit (one resubmits, one hands in a blank, one submits after the
due date, one never submits); the instructor collects and grades with the sandboxed
`python -m solutions` in a kernel of their own server and releases the feedback; each student
fetches their own, the late one with nbgrader's late penalty. A student's kernel then meets its
limits (address space, processes) and tries to read another student's submission, the
instructor's course folder, the gradebook, the feedback of others and the graders; each
attempt fails. tests/test_hub_browser.py does a student's part through the browser.

What changes outside the scratch folder: nothing. The hub runs with `--private`: the accounts
are made with useradd in a scratch copy of /etc inside a private mount namespace, which ends
with the hub; the scratch folder (made in /tmp, open to the test's users) is removed at the end.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import course_support
import nbformat
import pytest
from hub_support import (
    ASSIGNMENT,
    Hub,
    free_port,
    run_as_instructor,
    scratch_folder,
    start_hub,
    write_answers,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
HUB_CONFIG = REPO_ROOT / "deploy" / "jupyterhub"
PROXY = shutil.which("configurable-http-proxy")
HAVE_JUPYTERHUB = importlib.util.find_spec("jupyterhub") is not None

needs_hub = pytest.mark.skipif(
    not (HAVE_JUPYTERHUB and PROXY),
    reason="needs JupyterHub (pip install -e '.[hub]') and configurable-http-proxy "
    "(npm install -g configurable-http-proxy)",
)


def hub_command(
    *args: str, env: dict | None = None, prefix: tuple = ()
) -> subprocess.CompletedProcess:
    command = [*prefix, sys.executable, "-m", "solutions", "hub", *args]
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=env
    )


# --- the configuration, read without running anything --------------------------------------------


def hub_config(state: Path):
    """deploy/jupyterhub/jupyterhub_config.py as JupyterHub reads it for `state`."""
    from traitlets.config import PyFileConfigLoader

    os.environ["DYNGRAPH_HUB_STATE"] = str(state)
    try:
        return PyFileConfigLoader("jupyterhub_config.py", path=str(HUB_CONFIG)).load_config()
    finally:
        del os.environ["DYNGRAPH_HUB_STATE"]


@needs_hub
def test_hub_config_loads_with_roles_and_test_login(tmp_path: Path) -> None:
    from jupyterhub.spawner import LocalProcessSpawner

    (tmp_path / "hub").mkdir()
    accounts = {"instructor": {"password": "a", "role": "instructor"},
                "student1": {"password": "b", "role": "student"}}  # fmt: skip
    (tmp_path / "hub" / "accounts.json").write_text(json.dumps({"users": accounts}))
    (tmp_path / "hub" / "admin-token").write_text("secret\n")
    config = hub_config(tmp_path)
    spawner = config.JupyterHub.spawner_class
    assert issubclass(spawner, LocalProcessSpawner)
    assert config.RoleSpawner.instructors == {"instructor"}
    assert config.Authenticator.allowed_users == {"instructor", "student1"}
    assert config.JupyterHub.services[0]["api_token"] == "secret"
    assert config.Spawner.cmd[1:] == ["-m", "jupyterhub.singleuser"]
    # Students' limits are the ones LocalProcessSpawner can enforce (rlimits, set before the
    # server becomes the student); mem_limit/cpu_limit, which it would only pass on, are unset.
    assert config.RoleSpawner.student_address_space >= 2**30
    assert config.RoleSpawner.student_processes >= 128
    assert "mem_limit" not in config.Spawner and "cpu_limit" not in config.Spawner


def test_student_configuration_hides_the_instructor_tools() -> None:
    server = json.loads((HUB_CONFIG / "student" / "jupyter_server_config.json").read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions["nbgrader.server_extensions.formgrader"] is False
    assert extensions["nbgrader.server_extensions.assignment_list"] is True
    assert extensions["nbgrader.server_extensions.validate_assignment"] is True
    page = json.loads((HUB_CONFIG / "student" / "labconfig" / "page_config.json").read_text())
    disabled = {name for name, off in page["disabledExtensions"].items() if off}
    assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"} <= disabled
    # The names are plugins of the installed JupyterLab extension of nbgrader.
    from jupyter_core.paths import jupyter_path

    scripts = [
        script.read_text(errors="ignore")
        for folder in jupyter_path("labextensions")
        for script in Path(folder, "@jupyter", "nbgrader", "static").glob("*.js")
    ]
    if scripts:
        assert all(any(f'"{name}"' in text for text in scripts) for name in disabled)


def test_instructor_configuration_is_the_course_config_with_hub_paths(tmp_path: Path) -> None:
    from traitlets.config import PyFileConfigLoader

    from solutions.instructor import hub

    (tmp_path / "nbgrader_config.py").write_text(hub.instructor_nbgrader_config(tmp_path))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert config.CourseDirectory.root == f"{tmp_path}/home/instructor/course"
    assert config.Exchange.root == f"{tmp_path}/exchange"
    assert config.CourseDirectory.course_id == "dyngraph"
    assert "solutions.instructor.verdicts.SandboxedAutograde" in (
        config.Autograde.autograde_preprocessors
    )
    # A late submission gets nbgrader's built-in penalty, recorded by AssignLatePenalties.
    assert config.LateSubmissionPlugin.penalty_method == "zero"
    assert "nbgrader.preprocessors.AssignLatePenalties" in (
        config.Autograde.autograde_preprocessors
    )


# --- errors that name the fix ---------------------------------------------------------------------


@needs_hub
def test_hub_refuses_to_start_without_root(tmp_path: Path) -> None:
    # A user namespace without a mapping: this process is uid 65534 there, not root.
    result = hub_command("--state", str(tmp_path / "state"), prefix=("unshare", "--user", "--"))
    assert result.returncode == 2, result.stderr
    assert "must start as root" in result.stderr
    assert not (tmp_path / "state").exists()


@needs_hub
def test_hub_refuses_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = hub_command("--state", str(tmp_path / "state"), "--port", str(port))
    assert result.returncode == 2, result.stderr
    assert f"port {port} is in use" in result.stderr and "--port N" in result.stderr
    assert not (tmp_path / "state").exists()


@needs_hub
def test_hub_names_the_missing_proxy(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    result = hub_command("--state", str(tmp_path / "state"), env=env)
    assert result.returncode == 2, result.stderr
    assert "npm install -g configurable-http-proxy" in result.stderr


def test_hub_refuses_no_students(tmp_path: Path) -> None:
    result = hub_command("--students", "0", "--state", str(tmp_path / "state"))
    assert result.returncode == 2 and "--students must be at least 1" in result.stderr


# --- a class through the real hub -----------------------------------------------------------------


@pytest.fixture(scope="module")
def scratch():
    """A scratch folder in /tmp that the hub's users can enter; removed at the end."""
    if os.geteuid() != 0:
        pytest.skip("the hub test runs as root (it makes a Unix user per student)")
    if not course_support.notebook_1_present():
        pytest.skip("notebook 1 or its graders are missing")
    with scratch_folder() as folder:
        yield folder


ISOLATION = """
import os
state, other = {state!r}, {state!r} + "/home/student1"
attempts = {{
    "another student's submission": lambda: os.listdir(state + "/exchange/dyngraph/inbound"),
    "another student's home": lambda: os.listdir(other),
    "another student's notebook": lambda: open(other + "/{assignment}/{assignment}.ipynb").read(),
    "the instructor's course folder": lambda: os.listdir(state + "/home/instructor/course"),
    "the gradebook": lambda: open(state + "/home/instructor/course/gradebook.db", "rb").read(),
    "the submitted copies": lambda: os.listdir(state + "/home/instructor/course/submitted"),
    "everyone's feedback": lambda: os.listdir(state + "/exchange/dyngraph/feedback"),
    "the hub's passwords": lambda: open(state + "/hub/accounts.json").read(),
    "the graders": lambda: open({grader!r}).read(),
    "the notebook sources": lambda: open({source!r}).read(),
}}
for what, attempt in attempts.items():
    try:
        attempt()
        print("READ", what)
    except OSError as error:
        print("refused", what, type(error).__name__)
"""


LIMITS = """
import os, resource
import minitorch
minitorch.randn(64, 64).matmul(minitorch.randn(64, 64)).sum()
print(resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_NPROC)[0])
try:
    too_much = bytearray({too_much})
    print("allocated")
except MemoryError:
    print("MemoryError")
peak = [line for line in open("/proc/self/status") if line.startswith("VmPeak")][0]
tasks = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if os.stat("/proc/" + pid).st_uid == os.getuid():
            tasks += len(os.listdir("/proc/" + pid + "/task"))
    except OSError:
        pass
print(peak.split()[1], tasks)
"""


@needs_hub
@pytest.mark.hub
def test_a_class_through_the_hub(scratch: Path) -> None:
    started = time.monotonic()
    state = scratch / "state"
    hub = start_hub(state, students=4, port=free_port())
    try:
        run_class(hub, state)
    except BaseException:
        print(hub.log_tail())
        raise
    finally:
        assert hub.stop() == 0, hub.log_tail()
    print(f"class through the hub: {time.monotonic() - started:.0f} s")

    # Ctrl-C kept the state: the next start has the same accounts, exchange and gradebook.
    again = start_hub(state, students=4, port=free_port())
    try:
        assert again.passwords == hub.passwords
        assert again.login("student1", hub.passwords["student1"])
        assert (state / "home" / "instructor" / "course" / "gradebook.db").is_file()
        assert list((state / "exchange" / "dyngraph" / "inbound").iterdir())
    finally:
        assert again.stop() == 0


def run_class(hub: Hub, state: Path) -> None:
    passwords = hub.passwords
    names = ["student1", "student2", "student3", "student4"]
    assert set(passwords) == {"instructor", *names}
    assert hub.login("student1", passwords["student1"])
    assert not hub.login("student1", passwords["student2"])

    # The instructor releases notebook 1 to the exchange, from their own server.
    instructor = hub.start_server("instructor")
    assert isinstance(instructor.get("formgrader/api/assignments"), list)  # the formgrader
    course = state / "home" / "instructor" / "course"
    python = "python -m solutions --course " + str(course)
    run_as_instructor(instructor, f"{python} release {ASSIGNMENT} --exchange")

    source = nbformat.read(
        course_support.COURSE_SOURCE / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4
    )
    reference = course_support.reference_answers(source)
    students = {name: hub.start_server(name) for name in names}

    for student in students.values():
        # Students get the assignment list and Validate, not the formgrader.
        with pytest.raises(Exception, match="404"):
            student.get("formgrader/api/assignments")
        assert [a["status"] for a in student.assignments()] == ["released"]
        student.assignment_action("fetch", ASSIGNMENT)
        assert [a["status"] for a in student.assignments()] == ["fetched"]
    path = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"

    # student1 submits the blank release first, then the reference answers: the later counts.
    student1, student2, student4 = students["student1"], students["student2"], students["student4"]
    student1.assignment_action("submit", ASSIGNMENT)
    time.sleep(1.1)  # nbgrader's timestamps have one-second folders
    write_answers(student1, reference)
    validation = student1.validate(path)
    assert validation["success"] and "failed" not in validation["value"], validation
    student1.assignment_action("submit", ASSIGNMENT)
    # student2 hands in the blank release (Validate says what fails: each visible test's
    # "not written yet" line goes to stderr, which nbgrader counts as a failure); student3
    # never submits.
    validation = student2.validate(path)
    assert validation["success"] and validation["value"].get("failed"), validation
    student2.assignment_action("submit", ASSIGNMENT)

    # A student's kernel that dies leaves the server working.
    died = student2.run("import os; os.kill(os.getpid(), 9)", seconds=60)
    assert died.died, died
    assert student2.run("print(6 * 7)").output.strip() == "42"

    # The due date passes: the instructor sets it to now, in the gradebook. (A class sets it
    # before the release; nbgrader compares it with each submission's timestamp only when
    # grading, so setting it here puts it between the submissions above and the next one.)
    due = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    run_as_instructor(
        instructor, f"cd {course} && nbgrader db assignment add {ASSIGNMENT} --duedate='{due}'"
    )
    # student4 submits the reference answers after the due date.
    write_answers(student4, reference)
    student4.assignment_action("submit", ASSIGNMENT)

    # The instructor collects from the exchange, grades in the sandbox, releases feedback.
    output = run_as_instructor(instructor, f"{python} collect {ASSIGNMENT} --exchange")
    assert "collected 3 submissions: student1, student2, student4" in output, output
    output = run_as_instructor(instructor, f"{python} grade {ASSIGNMENT} --jobs 2")
    print(output)
    rows = {line.split()[0]: line.split() for line in output.splitlines() if line.strip()}
    assert rows["student1"][1:3] == ["25", "25"], output
    assert rows["student2"][1] == "0", output
    assert "student4" in rows and "student3" not in rows
    # nbgrader's late penalty, as its grades export shows it: the late notebook scores 0.
    with open(course / "grades.csv", newline="") as handle:
        grades = {row["student_id"]: row for row in csv.DictReader(handle)}
    late, on_time = grades["student4"], grades["student1"]
    assert datetime.fromisoformat(late["timestamp"]) > datetime.fromisoformat(late["duedate"])
    penalty = (late["raw_score"], late["late_submission_penalty"], late["score"])
    assert penalty == ("25.0", "25.0", "0.0"), (
        f"the late submission scored {penalty} (raw, penalty, score): `python -m solutions "
        "grade` must read the course folder's nbgrader_config.py (LateSubmissionPlugin)"
    )
    assert datetime.fromisoformat(on_time["timestamp"]) < datetime.fromisoformat(on_time["duedate"])
    assert (on_time["raw_score"], on_time["late_submission_penalty"], on_time["score"]) == (
        "25.0",
        "0.0",
        "25.0",
    ), on_time
    # Our table shows the score after the penalty, and flags the late submission.
    assert rows["student4"][1] == "0" and "late" in rows["student4"][3:], output
    assert rows["student1"][3:] == ["-"], output
    run_as_instructor(instructor, f"cd {course} && nbgrader release_feedback {ASSIGNMENT}")

    # Each student fetches their own feedback, and only their own.
    scores = {}
    for name, student in students.items():
        student.assignment_action("fetch_feedback", ASSIGNMENT)
        listing = student.get(f"api/contents/{ASSIGNMENT}")
        folders = [item["name"] for item in listing["content"] if item["type"] == "directory"]
        if name == "student3":
            assert "feedback" not in folders
            continue
        feedback = student.get(f"api/contents/{ASSIGNMENT}/feedback")["content"]
        assert len(feedback) == 1  # one timestamp: the submission that counted
        html = student.get(
            f"api/contents/{ASSIGNMENT}/feedback/{quote(feedback[0]['name'])}/{ASSIGNMENT}.html"
            "?content=1&format=text&type=file"
        )["content"]
        score = "(Score: 25.0 / 25.0)" if "(Score: 25.0 / 25.0)" in html else "lower"
        scores[name] = (score, "Late submission penalty (Score: -25.0)" in html)
    assert scores == {
        "student1": ("(Score: 25.0 / 25.0)", False),
        "student2": ("lower", False),
        "student4": ("lower", True),
    }, scores

    # Limits: every process of a student has the configured address space and process caps;
    # an allocation past the cap fails in the kernel that made it.
    spawner = hub_config(state).RoleSpawner
    code = LIMITS.format(too_much=spawner.student_address_space + 2**30)
    limits = students["student3"].run(code)
    assert limits.error is None, limits
    caps, allocation, usage = limits.output.strip().splitlines()
    assert caps.split() == [str(spawner.student_address_space), str(spawner.student_processes)]
    assert allocation == "MemoryError"
    peak_kib, tasks = map(int, usage.split())
    print(f"a student's kernel after minitorch: VmPeak {peak_kib / 2**20:.2f} GiB; "
          f"the student's processes and threads: {tasks}")  # fmt: skip

    # Isolation: student2's kernel tries to read what is not theirs.
    code = ISOLATION.format(
        state=str(state), assignment=ASSIGNMENT,
        grader=str(REPO_ROOT / "solutions" / ASSIGNMENT / "grade.py"),
        source=str(REPO_ROOT / "course" / "notebooks" / f"{ASSIGNMENT}.py"),
    )  # fmt: skip
    attempts = student2.run(code)
    assert attempts.error is None, attempts
    lines = attempts.output.strip().splitlines()
    assert len(lines) == 10 and all(line.startswith("refused") for line in lines), lines


# --- Kubernetes, on paper -------------------------------------------------------------------------

KUBERNETES = REPO_ROOT / "deploy" / "kubernetes"


def test_kubernetes_files_parse_and_name_what_exists() -> None:
    import re

    import yaml

    values = yaml.safe_load((KUBERNETES / "values.yaml").read_text())
    # The hub's extra configuration is Python that compiles; the students' files say what
    # deploy/jupyterhub/student/ says (the exchange is where the volume is mounted).
    for name, code in values["hub"]["extraConfig"].items():
        compile(code, name, "exec")
    files = values["singleuser"]["extraFiles"]
    for key, relative in (("student-server", "jupyter_server_config.json"),
                          ("student-lab", "labconfig/page_config.json")):  # fmt: skip
        assert files[key]["data"] == json.loads((HUB_CONFIG / "student" / relative).read_text())
    exchange = values["singleuser"]["storage"]["extraVolumeMounts"][0]["mountPath"]
    assert files["student-nbgrader"]["data"]["Exchange"]["root"] == exchange
    # Every repository path the file names exists (tests/test_deploy_dask.py checks the
    # grading files beside it).
    text = (KUBERNETES / "values.yaml").read_text()
    named = set(re.findall(r"(?<![\w/])((?:deploy|solutions|course|tests)/[\w./-]*\w)", text))
    assert named, "the files name no repository path"
    for path in named:
        assert (REPO_ROOT / path).exists(), path
