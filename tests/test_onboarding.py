"""Each role's documented commands, run for real on scratch copies.

- Student: `python -m solutions package-student` writes a zip and an exchange folder holding
  the wheel and the release notebooks and nothing of solutions/; its requirements install
  torch's CPU build (requirements-cuda.txt PyPI's CUDA build) and everything minitorch imports;
  the zip's `open_course.py` starts JupyterLab with Validate only (no formgrader, no Assignments
  tab: the zip flow has no exchange), says what to do when run by a Python without JupyterLab,
  and `--submit` writes the file name the LMS collection expects.
- Hub: the pre-flight refuses a Node.js older than configurable-http-proxy needs.
- Instructor: `validate` leaves the course folder byte-identical; `--course` works before and
  after the command; nbgrader started in the repository root finds the course's config.
- README: the set-up block installs every apt package .ci/run installs and gets Node.js as it
  does, the student section is five lines, environment.yml pins torch as the pip path does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from course_support import NOTEBOOK_1, REPO_ROOT, copy_course_source
from nbformat.v4 import new_code_cell, new_notebook

from solutions.instructor import leaks
from solutions.instructor.cli import build_parser, main
from solutions.instructor.course import CommandError, open_course
from solutions.instructor.student_package import PACKAGE_NAME, TORCH_CPU_INDEX

README = (REPO_ROOT / "README.md").read_text()
INSTRUCTOR_LAB_EXTENSIONS = (
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:course-list",
)
# Off in the zip flow too: the Assignments tab needs an exchange folder (the zip has none, and
# students submit with `open_course.py --submit`); the Nbgrader menu would list only that tab.
EXCHANGE_LAB_EXTENSIONS = ("@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:menu")
START_TIMEOUT_S = 60


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and folder under `root`: relative path -> SHA-256 of its bytes ("dir")."""
    return {
        str(path.relative_to(root)): (
            "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
        )
        for path in sorted(root.rglob("*"))
    }


# --- instructor: validate and --course ---------------------------------------------------------
def _tiny_course(root: Path) -> Path:
    """A one-exercise course that validates: `double(x)` with a visible and a hidden test."""
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    meta = {"schema_version": 3, "locked": False, "grade": False, "solution": True}
    answer = new_code_cell(
        "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
    )
    answer.metadata["nbgrader"] = {**meta, "grade_id": "ex1_double"}
    test = new_code_cell(
        "assert double(2) == 4\n### BEGIN HIDDEN TESTS\nassert double(21) == 42\n"
        "### END HIDDEN TESTS"
    )
    test.metadata["nbgrader"] = {
        **meta, "solution": False, "grade": True, "locked": True, "grade_id": "ex1_tests",
        "points": 1,
    }  # fmt: skip
    nb.cells = [answer, test]
    path = root / "source" / "tiny" / "tiny.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return root


@pytest.mark.parametrize("position", ["before", "after"])
def test_validate_leaves_the_course_folder_byte_identical(tmp_path: Path, position: str) -> None:
    course = _tiny_course(tmp_path / "course")
    (course / "exchange").mkdir()  # as a course that has been opened before has
    before = tree_digest(course)
    args = ["--course", str(course), "validate"]
    code = main(args if position == "before" else args[2:] + args[:2])
    assert code == 0
    assert tree_digest(course) == before  # no release/, no gradebook.db, nothing else


def test_course_option_is_accepted_before_and_after_every_command(tmp_path: Path) -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 (argparse's own)
    for name, sub in commands.items():
        if not any("--course" in action.option_strings for action in sub._actions):
            continue  # `hub` makes its own course
        positional = ["x"] if any(a.dest == "assignment" and a.nargs is None
                                  for a in sub._actions) else []  # fmt: skip
        extra = ["--results", "r"] if name == "execute" else []
        after = parser.parse_args([name, *positional, *extra, "--course", "c", "--timeout", "5"])
        before = parser.parse_args(["--course", "c", "--timeout", "5", name, *positional, *extra])
        assert (after.course, after.timeout) == (Path("c"), 5), name
        assert (before.course, before.timeout) == (Path("c"), 5), name
    assert parser.parse_args(["export"]).course is None


def test_nbgrader_in_the_repository_root_finds_the_course_config() -> None:
    """What JupyterLab's formgrader does when started in the repository root."""
    probe = (
        "from nbgrader.apps import NbGrader\n"
        "app = NbGrader(); app.load_config_file()\n"
        "print(app.config.CourseDirectory.root, app.config.CourseDirectory.course_id)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert "No nbgrader_config.py" not in result.stderr, result.stderr
    assert result.stdout.split() == [str(REPO_ROOT / "course"), "dyngraph"]


# --- student: the package ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def student_package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(course, dist): a scratch course with every assignment, packaged into dist/."""
    root = tmp_path_factory.mktemp("onboarding")
    course = copy_course_source(root / "course", sorted(
        p.name for p in (REPO_ROOT / "course" / "source").iterdir() if p.is_dir()
    ))  # fmt: skip
    assert main(["package-student", "--course", str(course), "--to", str(root / "dist")]) == 0
    return course, root / "dist"


@pytest.fixture(scope="module")
def unpacked(student_package: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The student's folder: the zip, unpacked."""
    destination = tmp_path_factory.mktemp("student")
    with zipfile.ZipFile(student_package[1] / f"{PACKAGE_NAME}.zip") as archive:
        archive.extractall(destination)
    return destination / PACKAGE_NAME


def test_student_package_holds_the_wheel_and_the_release_notebooks(
    student_package: tuple[Path, Path], unpacked: Path
) -> None:
    course, dist = student_package
    assignments = open_course(course).assignments()
    assert sorted(p.name for p in unpacked.iterdir()) == sorted([
        "README.md", "jupyter", "notebooks", "open_course.py", "requirements.txt",
        "requirements-cuda.txt", "dyngraph_minitorch-0.1.0-py3-none-any.whl",
    ])  # fmt: skip
    for assignment in assignments:
        release = course / "release" / assignment / f"{assignment}.ipynb"
        ours = unpacked / "notebooks" / assignment / f"{assignment}.ipynb"
        exchange = dist / "exchange" / "dyngraph" / "outbound" / assignment / f"{assignment}.ipynb"
        assert ours.read_bytes() == release.read_bytes() == exchange.read_bytes()
    wheel = next(unpacked.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        assert {name.split("/")[0] for name in archive.namelist()} == {
            "minitorch", "dyngraph_minitorch-0.1.0.dist-info"
        }  # fmt: skip

    def requirements(name: str) -> list[str]:
        lines = (unpacked / name).read_text().splitlines()
        return [line for line in lines if not line.startswith("#")]

    # The CPU build by default (PyPI's Linux torch is the CUDA build: gigabytes); PyPI's for
    # an NVIDIA GPU. Each file installs what minitorch imports (the [student] extra).
    assert requirements("requirements.txt") == [
        "--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0",
        f"./{wheel.name}[student]",
    ]  # fmt: skip
    assert requirements("requirements-cuda.txt") == ["torch==2.13.0", f"./{wheel.name}[student]"]


def test_student_package_reveals_nothing_of_solutions(
    student_package: tuple[Path, Path], unpacked: Path
) -> None:
    course = open_course(student_package[0])
    secret = leaks.secret_lines(course)
    solution_files = {
        hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (REPO_ROOT / "solutions").rglob("*")
        if p.is_file()
    }
    for path in sorted(p for p in unpacked.rglob("*") if p.is_file()):
        assert hashlib.sha256(path.read_bytes()).hexdigest() not in solution_files, path
        if path.suffix == ".whl":
            assert leaks.scan_wheel(path, secret) == []
            continue
        text = leaks._notebook_text(path) if path.suffix == ".ipynb" else path.read_text()
        assert leaks._scan_text(text, str(path), secret, forbid_package=True) == []
        lines = {" ".join(line.split()) for line in text.splitlines()}
        assert not lines & leaks.answer_lines(course), path


def test_a_leak_stops_the_package(tmp_path: Path) -> None:
    """A file with a reference answer line in a source folder (nbgrader releases every file of
    it) is found, and no package is written."""
    course = copy_course_source(tmp_path / "course", [NOTEBOOK_1])
    answer_line = sorted(leaks.answer_lines(open_course(course)))[0]
    (course / "source" / NOTEBOOK_1 / "notes.py").write_text(answer_line + "\n")
    code = main(["package-student", "--course", str(course), "--to", str(tmp_path / "dist")])
    assert code == 1
    assert not (tmp_path / "dist").exists()


def _load_open_course(unpacked: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("open_course", unpacked / "open_course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_submit_writes_the_file_name_the_lms_collection_expects(
    student_package: tuple[Path, Path], unpacked: Path, tmp_path: Path
) -> None:
    command = [sys.executable, str(unpacked / "open_course.py"), "--submit"]
    done = subprocess.run([*command, "ada", NOTEBOOK_1], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    submitted = unpacked / "submit" / f"ada_{NOTEBOOK_1}.ipynb"
    assert str(submitted) in done.stdout
    bad = subprocess.run([*command, "ada_lovelace", NOTEBOOK_1], capture_output=True, text=True)
    assert bad.returncode == 2 and "student id" in bad.stderr

    # The instructor collects an LMS download of that file.
    course = copy_course_source(tmp_path / "course", [NOTEBOOK_1])
    assert main(["release", NOTEBOOK_1, "--course", str(course)]) == 0
    with zipfile.ZipFile(tmp_path / "lms.zip", "w") as archive:
        archive.write(submitted, f"download/{submitted.name}")
    assert main(["collect", NOTEBOOK_1, "--zip", str(tmp_path / "lms.zip"), "--course",
                 str(course)]) == 0  # fmt: skip
    assert open_course(course).students(NOTEBOOK_1) == ["ada"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _request(url: str, token: str, data: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""
    except OSError:  # not listening yet
        return 0, ""


def test_student_jupyterlab_has_only_the_student_extensions(unpacked: Path) -> None:
    """The settings open_course.py gives JupyterLab, listed; then the real command started:
    the formgrader, course list and assignment list are not served, the page disables the
    instructor's lab extensions and the Assignments tab, and Validate runs the release notebook
    with the student's nbgrader config."""
    listed = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        env=_load_open_course(unpacked).jupyter_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    disabled = listed.stdout.split("Disabled extensions:")[-1] + listed.stderr
    disabled = disabled.split("Disabled extensions:")[-1]
    for extension in INSTRUCTOR_LAB_EXTENSIONS + EXCHANGE_LAB_EXTENSIONS:
        assert extension in disabled, listed.stdout + listed.stderr
    assert "@jupyter/nbgrader:validate-assignment" not in disabled

    port, token = _free_port(), secrets.token_hex(16)
    command = [sys.executable, str(unpacked / "open_course.py"), "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               f"--IdentityProvider.token={token}", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]  # fmt: skip
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(unpacked / "runtime")}
    log = open(unpacked / "jupyterlab.log", "w")
    server = subprocess.Popen(command, cwd=unpacked, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while _request(f"{base}/api/status", token)[0] != 200:
            assert server.poll() is None and time.monotonic() < deadline, "JupyterLab did not start"
            time.sleep(0.5)
        assert _request(f"{base}/formgrader", token)[0] == 404
        assert _request(f"{base}/formgraders", token)[0] == 404  # the course list
        # The Assignments tab's list: it answered "The exchange directory does not exist and
        # could not be created" in the zip flow; now it is not served.
        assert _request(f"{base}/assignments?course_id=dyngraph", token)[0] == 404
        status, page = _request(f"{base}/lab", token)
        config = json.loads(re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', page,
                                      re.S).group(1))  # fmt: skip
        disabled_on_page = set(config["disabledExtensions"])
        assert set(INSTRUCTOR_LAB_EXTENSIONS + EXCHANGE_LAB_EXTENSIONS) <= disabled_on_page
        path = f"{NOTEBOOK_1}/{NOTEBOOK_1}.ipynb"
        status, body = _request(
            f"{base}/assignments/validate", token, urllib.parse.urlencode({"path": path}).encode()
        )
        result = json.loads(body)
        assert status == 200 and result["success"], result
        failures = json.dumps(result["value"]["failed"])
        assert "NotImplementedError" in failures  # the blank answers fail their visible tests
        assert "ModuleNotFoundError" not in failures  # nothing needs what students lack
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_open_course_says_what_to_do_without_jupyterlab(tmp_path: Path) -> None:
    """Run by a Python without JupyterLab (a new shell, the venv not activated), open_course.py
    names the step to take instead of `No module named jupyterlab`: make the environment, then
    activate it; run by the course's own environment before its install, install into it."""
    folder = tmp_path / PACKAGE_NAME
    folder.mkdir()
    shutil.copy(REPO_ROOT / "course" / "student" / "open_course.py", folder)
    bare = tmp_path / "python-without-jupyterlab"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)

    def run(python: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python / "bin" / "python"), "open_course.py"],
            cwd=folder, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    first = run(bare)
    assert first.returncode == 2, first.stderr
    assert "No module named" not in first.stderr
    assert "has no JupyterLab" in first.stderr
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt" in (
        first.stderr
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / ".venv")],
                   check=True)  # fmt: skip
    not_activated = run(bare)
    assert not_activated.returncode == 2 and ". .venv/bin/activate" in not_activated.stderr
    assert "pip install" not in not_activated.stderr
    not_installed = run(folder / ".venv")
    assert not_installed.returncode == 2
    assert "pip install -r requirements.txt" in not_installed.stderr
    assert "venv" not in not_installed.stderr.split("has no JupyterLab", 1)[1]


def _distributions_reached(names: list[str]) -> set[str]:
    """Installed distributions that `names` (requirement strings) bring, transitively."""
    from importlib import metadata

    from packaging.requirements import Requirement

    def key(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    reached, todo = set(), [Requirement(n) for n in names]
    while todo:
        requirement = todo.pop()
        if key(requirement.name) in reached:
            continue
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue
        reached.add(key(requirement.name))
        for line in distribution.requires or []:
            child = Requirement(line)
            if child.marker is None or child.marker.evaluate({"extra": ""}):
                todo.append(child)
    return reached


def test_the_student_extra_brings_everything_minitorch_imports() -> None:
    """Every module that minitorch imports, at the top of a file or inside a function (as
    load_digits imports scikit-learn), comes with the wheel's dependencies and its [student]
    extra, which the student package's requirements install."""
    import ast
    from importlib import metadata

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    reached = _distributions_reached(
        project["dependencies"] + project["optional-dependencies"]["student"]
    )
    owners = metadata.packages_distributions()
    imported = set()
    for path in (REPO_ROOT / "minitorch").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = sorted(imported - set(sys.stdlib_module_names) - {"minitorch", "__future__"})
    assert "sklearn" in third_party  # load_digits
    for module in third_party:
        names = {re.sub(r"[-_.]+", "-", n).lower() for n in owners.get(module, [])}
        assert names & reached, f"minitorch imports {module}, which the student does not get"


def test_load_digits_without_scikit_learn_says_what_to_install() -> None:
    """A Python where scikit-learn cannot be imported (here: blocked in sys.modules)."""
    probe = (
        "import sys; sys.modules['sklearn'] = None\n"
        "from minitorch import datasets\n"
        "try:\n    datasets.load_digits()\nexcept ImportError as error:\n    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert "pip install scikit-learn" in done.stdout, done.stdout + done.stderr


# --- hub: the pre-flight's Node.js check -------------------------------------------------------
@pytest.mark.skipif(
    importlib.util.find_spec("jupyterhub") is None
    or shutil.which("configurable-http-proxy") is None
    or shutil.which("node") is None,
    reason="needs JupyterHub, configurable-http-proxy and node",
)
def test_hub_preflight_refuses_a_node_older_than_the_proxy_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This machine's node passes; a `node` first on PATH that is Debian 12's 18 (a stand-in
    script answering `--version` as Debian's nodejs 18.20.4 does: no Node.js 18 runs here)
    stops the hub with the command that fixes it."""
    from solutions.instructor import hub

    hub.check_node()  # the real node here is 20 or later
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "configurable-http-proxy").symlink_to(shutil.which("configurable-http-proxy"))
    old_node = bin_folder / "node"
    old_node.write_text("#!/bin/sh\necho v18.20.4\n")
    old_node.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}:{os.environ['PATH']}")
    with pytest.raises(CommandError) as refused:
        hub.check_requirements("127.0.0.1", 8000, tmp_path / "state")
    message = str(refused.value)
    assert "Node.js 20 or later" in message and "v18.20.4" in message, message
    assert "npm install -g node@22" in message
    assert not (tmp_path / "state").exists()


# --- the README --------------------------------------------------------------------------------
def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_setup_block_installs_what_ci_installs() -> None:
    ci_line = next(
        line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()
        if line.startswith("apt-get install")
    )  # fmt: skip
    setup = _section("Quick start").split("```\n")[1]
    apt_line = next(line for line in setup.splitlines() if "apt-get install" in line)
    packages = set(ci_line.split("-y", 1)[1].split())
    assert packages <= set(apt_line.split("-y", 1)[1].split())
    # Node.js 20 or later where Debian 12 has 18, the same line in both
    ci_node = next(line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()
                   if "npm install -g node@" in line)  # fmt: skip
    assert ci_node in setup.splitlines()
    # torch: the CPU build in the block, the CUDA build named right after it
    torch_line = next(line for line in setup.splitlines() if "pip install torch" in line)
    assert torch_line.startswith(f"pip install torch==2.13.0 --index-url {TORCH_CPU_INDEX} && ")
    after = " ".join(_section("Quick start").split("```\n")[2].split())
    assert "NVIDIA GPU, start it with `pip install torch==2.13.0` instead" in after
    assert "--allow-root" in _section("Quick start").split("```\n")[0]  # next to `jupyter lab`


def test_readme_student_section_is_five_steps() -> None:
    lines = [line for line in _section("Students").splitlines() if line.strip()]
    assert len(lines) <= 5
    assert [line.split(":")[0] for line in lines] == [
        "1. Get", "2. Install", "3. Open", "4. Validate", "5. Submit"
    ]  # fmt: skip
    assert "<student_id>_<assignment>.ipynb" in lines[4]
    assert "requirements-cuda.txt" in lines[1] and ". .venv/bin/activate" in lines[2]


def test_conda_environment_pins_torch_like_the_pip_path() -> None:
    environment = (REPO_ROOT / "environment.yml").read_text()
    assert re.search(r"^\s+- torch==2\.13\.0\b", environment, re.M), environment
    assert "conda activate minitorch" in README


# --- maintainer: what the benchmark scripts print ----------------------------------------------
BENCHMARKS = REPO_ROOT / "benchmarks"


@pytest.fixture(scope="module")
def printing() -> ModuleType:
    """benchmarks/printing.py, the helper every benchmark script prints with."""
    spec = importlib.util.spec_from_file_location("printing", BENCHMARKS / "printing.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("printing", module)  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_a_figure_past_its_target_is_marked_whoever_it_belongs_to(printing: ModuleType) -> None:
    at_most, at_least, figure = printing.at_most, printing.at_least, printing.figure
    assert figure(2.92, target=at_most(3)) == "2.92 (target <= 3)"
    assert figure(1.52, "{:.2f}x", at_most(1.5)) == "!! 1.52x (target <= 1.5)"  # PyTorch's own
    assert figure(4.26, "{:.2f}x less", at_least(4)) == "4.26x less (target >= 4)"
    assert figure(3.49, "{:.2f}x less", at_least(4)) == "!! 3.49x less (target >= 4)"
    assert figure(1.5, target=at_most(1.5)) == "1.50 (target <= 1.5)"  # on the bound: met
    assert figure(0.27) == "0.27"  # no target, no mark

    rows = [
        ["minitorch", figure(4.26, "{:.2f}x less", at_least(4)), figure(1.36, target=at_most(1.5))],
        ["PyTorch", figure(4.27, "{:.2f}x less", at_least(4)), figure(1.52, target=at_most(1.5))],
    ]
    text = printing.table(["checkpointed vs plain", "held", "time"], rows)
    assert text.splitlines() == [
        "| checkpointed vs plain | held | time |",
        "|---|---:|---:|",
        "| minitorch | 4.26x less (target >= 4) | 1.36 (target <= 1.5) |",
        "| PyTorch | 4.27x less (target >= 4) | !! 1.52 (target <= 1.5) |",
    ]
    assert printing.targets_line(text) == "targets: 3 met, 1 missed (marked !!)"
    assert printing.targets_line(printing.table(["a", "b"], [["x", "1.00"]])) == (
        "targets: 0 met, 0 missed"
    )


def test_every_benchmark_script_prints_the_machine_line_and_tables_of_the_helper(
    printing: ModuleType,
) -> None:
    """The scripts this repository's maintainers own print through printing.py; the machine
    line names the CPU, cores, torch threads, torch version and device."""
    line = printing.machine_line("cpu")
    assert re.fullmatch(
        r"machine: .+, \d+ cores, \d+ torch threads, torch \S+, device cpu", line
    ), line
    for script in ("bench_core.py", "bench_train.py", "bench_jit.py", "bench_memory.py"):
        source = (BENCHMARKS / script).read_text()
        assert "machine_line(" in source and "targets_line(" in source, script
        assert 'print("|' not in source and 'print(f"|' not in source, script  # no hand tables
