"""`python -m solutions hub`: a demo class of this course on JupyterHub, on one machine.

It runs as root: it creates one Unix user per student and one for the instructor (useradd,
as nbgrader's demos do), prepares the state folder (deploy/jupyterhub/jupyterhub_config.py
names its parts), starts JupyterHub with that configuration, prints the URL and the accounts,
and runs until Ctrl-C. The state folder keeps the exchange, the instructor's course folder
(gradebook included), the homes and the passwords, so the next start goes on where this one
stopped.

The users' servers run the interpreter this command was started with. When it, its import
path or the repository lies in a folder other users cannot enter (a venv in a 0700 /root,
pyenv's /root/.pyenv), the hub runs in a mount namespace of its own that shows exactly those
folders (NOTE [Python view] in python_view.py). `--private` also makes the accounts in a
scratch copy of /etc there (with the same uids each start, recorded in the state folder):
nothing outside the state folder changes; this is how the tests run it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from solutions.instructor.course import DEFAULT_COURSE_ROOT, REPO_ROOT, CommandError
from solutions.instructor.python_view import command_path, outermost, python_folders
from solutions.instructor.student_server import (
    enter_student_view,
    limit_student,
    shown_in_repository,
)

HUB_CONFIG = REPO_ROOT / "deploy" / "jupyterhub"
DEFAULT_STATE = Path("/srv/dyngraph-hub")
COURSE_ID = "dyngraph"
INSTRUCTOR = "instructor"
IN_NAMESPACE = "DYNGRAPH_HUB_PRIVATE"  # set in the re-run inside the hub's own mount namespace


@dataclass
class Account:
    """One login of the class: a Unix user of that name runs its server."""

    name: str
    password: str
    role: str  # "instructor" or "student"
    uid: int | None = None


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `hub` with the subcommands of `python -m solutions`."""
    sub = commands.add_parser("hub", help="a demo class on JupyterHub (as root)")
    sub.add_argument("--students", type=int, default=5, help="student accounts (5)")
    sub.add_argument("--state", type=Path, default=DEFAULT_STATE, help=f"({DEFAULT_STATE})")
    sub.add_argument("--ip", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    sub.add_argument("--port", type=int, default=8000, help="uses PORT, PORT+1, PORT+2 (8000)")
    sub.add_argument(
        "--private", action="store_true",
        help="accounts in a private mount namespace: nothing outside --state changes",
    )  # fmt: skip
    sub.set_defaults(handler=cmd_hub)


def cmd_hub(course: object, args: argparse.Namespace) -> int:
    """Check, prepare and run the hub until Ctrl-C; the exit status of JupyterHub."""
    state = Path(args.state).resolve()
    if args.students < 1:
        raise CommandError("--students must be at least 1")
    check_requirements(args.ip, args.port, state)
    # A Python or a clone behind a folder closed to other users (a venv in root's home) is
    # shown to them in a mount namespace of the hub's own, with or without --private.
    hidden = any(closed_ancestor(folder) for folder in shown_to_users())
    if (args.private or hidden) and os.environ.get(IN_NAMESPACE) != "1":
        argv = ["hub", "--students", str(args.students), "--state", str(state)]
        argv += [
            "--ip",
            args.ip,
            "--port",
            str(args.port),
            *(["--private"] if args.private else []),
        ]
        return run_in_private_namespace(argv)
    if os.environ.get(IN_NAMESPACE) == "1":
        enter_hub_view(state, private_accounts=args.private)
    check_student_server()
    accounts = prepare_state(state, args.students)
    return run_hub(state, args.ip, args.port, accounts)


# --- checks -------------------------------------------------------------------------------------


def check_requirements(ip: str, port: int, state: Path) -> None:
    """Raise CommandError naming the fix for the first thing that stops the hub from running:
    JupyterHub or configurable-http-proxy missing, Node.js older than 20, not root, a port in
    use, or a state folder closed to the users' servers."""
    if importlib.util.find_spec("jupyterhub") is None:
        raise CommandError("JupyterHub is not installed: pip install -e '.[hub]'")
    if shutil.which("configurable-http-proxy") is None:
        raise CommandError(
            "configurable-http-proxy is not on PATH: npm install -g configurable-http-proxy"
        )
    check_node()
    if os.geteuid() != 0:
        raise CommandError(
            "the hub must start as root (e.g. sudo python -m solutions hub): it creates a Unix "
            "user per student and starts each user's server as that user"
        )
    for number in (port, port + 1, port + 2):
        with socket.socket() as probe:
            try:
                probe.bind((ip if number == port else "127.0.0.1", number))
            except OSError as error:
                raise CommandError(
                    f"port {number} is in use ({error.strerror}): stop what uses it, or give "
                    f"--port N (the hub uses N, N+1 and N+2)"
                ) from None
    closed = closed_ancestor(state.parent)
    if closed is not None:
        raise CommandError(
            f"students cannot reach the state folder {state}: {closed} is not open to other "
            f"users (chmod o+x {closed}, or give --state in another folder)"
        )


# What a student's server and its kernels import (jupyterhub_config.py's Spawner.cmd, the
# server extensions the student configuration enables, the course's notebooks).
SERVER_IMPORTS = (
    "jupyterhub.singleuser",
    "jupyterlab",
    "nbgrader",
    "ipykernel",
    "torch",
    "minitorch",
)
PREFLIGHT_OK = "course-preflight: a student's server can start"


def check_student_server() -> None:
    """Raise CommandError unless a student's server can start: this very interpreter, started
    as an unprivileged user (nobody) in the view and with the limits a student's server gets
    (solutions/instructor/student_server.py), imports what the server imports and cannot see
    the graders. Runs before any account is made; about 5 s."""
    nobody = pwd.getpwnam("nobody")
    shown = shown_in_repository(REPO_ROOT)

    def become_a_student() -> None:
        enter_student_view(REPO_ROOT, shown)
        limit_student()
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)

    graders = REPO_ROOT / "solutions"
    source = (
        f"import os, sys\nimport {', '.join(SERVER_IMPORTS)}\n"
        f"if os.path.exists({str(graders)!r}): sys.exit('the graders are visible')\n"
        f"print({PREFLIGHT_OK!r})\n"
    )
    keep = ("PATH", "PYTHONPATH", "LANG", "LC_ALL")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env["PATH"] = command_path(env.get("PATH", "/usr/bin:/bin"))
    with tempfile.TemporaryDirectory(prefix="course-hub-preflight-") as home:
        os.chown(home, nobody.pw_uid, nobody.pw_gid)
        env["HOME"] = home
        try:
            done = subprocess.run(
                [sys.executable, "-c", source], env=env, cwd=home, capture_output=True,
                text=True, timeout=300, preexec_fn=become_a_student,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as error:
            why = f"{type(error).__name__}: {error}"
        else:
            if PREFLIGHT_OK in done.stdout:
                return
            lines = (done.stderr or done.stdout).strip().splitlines()
            why = lines[-1] if lines else f"exit status {done.returncode}"
    if "ModuleNotFoundError" in why or "ImportError" in why:
        fix = "install the course's packages into that Python (pip install -e '.[course,hub]')"
    else:
        fix = (
            "install Python where every user can enter, or start with --private (NOTE "
            "[Python view] in solutions/instructor/python_view.py)"
        )
    raise CommandError(
        f"a student's server cannot start with {sys.executable} (run as nobody in the students' "
        f"view of this machine: {why}): {fix}"
    )


# configurable-http-proxy 5 declares Node.js >= 20 (`npm view configurable-http-proxy engines`);
# Debian 12's nodejs is 18. npm's registry has Node.js itself as the package `node`.
NODE_MAJOR_NEEDED = 20


def check_node() -> None:
    """Raise CommandError unless the `node` that configurable-http-proxy runs (its script starts
    with `#!/usr/bin/env node`: the first on PATH) is Node.js 20 or later."""
    node = shutil.which("node")
    if node is None:
        raise CommandError(
            "configurable-http-proxy needs Node.js, and node is not on PATH: install Node.js "
            f"{NODE_MAJOR_NEEDED} or later (README, Quick start)"
        )
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        major = int(version.lstrip("v").split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError):
        raise CommandError(f"{node} --version failed: is Node.js installed correctly?") from None
    if major < NODE_MAJOR_NEEDED:
        raise CommandError(
            f"configurable-http-proxy needs Node.js {NODE_MAJOR_NEEDED} or later, and {node} is "
            f"{version} (Debian 12's nodejs is 18): npm install -g node@22 puts Node.js 22 from "
            "npm's registry first on PATH (/usr/local/bin with Debian's npm); see README, Quick "
            "start"
        )


def closed_ancestor(path: Path) -> Path | None:
    """The first folder from / down to `path` that other users cannot enter (no o+x)."""
    for folder in [*reversed(path.resolve().parents), path.resolve()]:
        if folder.exists() and not folder.stat().st_mode & stat.S_IXOTH:
            return folder
    return None


# --- the private mount namespace ----------------------------------------------------------------


def run_in_private_namespace(argv: list[str]) -> int:
    """Run `python -m solutions <argv>` in a new private mount namespace; its exit status.
    Ctrl-C reaches both processes; this one waits for the other to stop the hub."""
    env = {**os.environ, IN_NAMESPACE: "1"}
    command = ["unshare", "--mount", "--propagation", "private", "--"]
    process = subprocess.Popen([*command, sys.executable, "-m", "solutions", *argv], env=env)
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            continue


def shown_to_users() -> list[Path]:
    """What every user's server must reach: the running Python's folders (NOTE [Python view])
    and the repository (minitorch/ for students, all of it for the instructor)."""
    return outermost([*python_folders(), REPO_ROOT.resolve()])


def enter_hub_view(state: Path, private_accounts: bool = True) -> None:
    """Inside the hub's own mount namespace: the folders users must reach shown to them where
    a folder above is closed, and with `private_accounts` (--private) a scratch copy of /etc,
    so that useradd changes nothing outside."""
    scratch = state / "private"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True, mode=0o700)
    if private_accounts:
        subprocess.run(["cp", "-a", "/etc", str(scratch / "etc")], check=True)
        subprocess.run(["mount", "--bind", str(scratch / "etc"), "/etc"], check=True)
    show_to_everyone(shown_to_users(), scratch)


def show_to_everyone(folders: list[Path], scratch: Path) -> None:
    """Make each of `folders` reachable by every user, as it is, and nothing else of the closed
    folders above them: each closed folder (such as a 0700 /root) gets an empty 0755 tmpfs, and
    each of `folders` under it is bound back in place. The real folders are bound aside into
    `scratch` first, since one tmpfs may hide several of them (a venv and pyenv's Python both
    in /root)."""
    closed = {c for folder in folders if (c := closed_ancestor(folder.parent)) is not None}
    tops = outermost(closed)
    hidden = [f for f in folders if any(f.is_relative_to(top) for top in tops)]
    kept = []
    for number, folder in enumerate(hidden):
        keep = scratch / f"keep{number}"
        keep.mkdir()
        subprocess.run(["mount", "--bind", str(folder), str(keep)], check=True)
        kept.append((folder, keep))
    for top in tops:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", str(top)], check=True)
    for folder, keep in kept:
        folder.mkdir(parents=True, mode=0o755)
        subprocess.run(["mount", "--bind", str(keep), str(folder)], check=True)
    for folder in folders:
        if (still := closed_ancestor(folder)) is not None:
            raise CommandError(
                f"the users' servers cannot reach {folder}: {still} is not open to other users "
                f"(chmod o+rx {still})"
            )


# --- accounts and the state folder --------------------------------------------------------------


def load_accounts(state: Path, students: int) -> dict[str, Account]:
    """The accounts kept in <state>/hub/accounts.json, with any missing ones added (a new
    password each); student names are student1 ... studentN."""
    path = state / "hub" / "accounts.json"
    known = json.loads(path.read_text())["users"] if path.is_file() else {}
    names = [INSTRUCTOR] + [f"student{i}" for i in range(1, students + 1)]
    accounts = {}
    for name in names:
        role = "instructor" if name == INSTRUCTOR else "student"
        kept = known.get(name, {})
        password = kept.get("password") or secrets.token_urlsafe(9)
        accounts[name] = Account(name, password, role, kept.get("uid"))
    for name, kept in known.items():  # a class started bigger keeps its other accounts
        accounts.setdefault(name, Account(name, kept["password"], kept["role"], kept.get("uid")))
    return accounts


def ensure_user(account: Account, home: Path) -> pwd.struct_passwd:
    """The Unix user of `account`, created with useradd when missing (with its recorded uid,
    if any); the home folder is made by prepare_state."""
    try:
        return pwd.getpwnam(account.name)
    except KeyError:
        pass
    command = ["useradd", "--no-log-init", "--no-create-home", "--user-group"]
    command += ["--home-dir", str(home), "--shell", "/bin/bash"]
    if account.uid is not None:
        command += ["--uid", str(account.uid)]
    result = subprocess.run([*command, account.name], capture_output=True, text=True)
    if result.returncode != 0:
        raise CommandError(f"useradd {account.name} failed: {result.stderr.strip()}")
    return pwd.getpwnam(account.name)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.write_text(text)
    path.chmod(mode)


def _chown_tree(path: Path, user: pwd.struct_passwd) -> None:
    for folder, dirs, files in os.walk(path):
        for name in [".", *dirs, *files]:
            os.chown(os.path.join(folder, name), user.pw_uid, user.pw_gid, follow_symlinks=False)


def prepare_state(state: Path, students: int) -> dict[str, Account]:
    """Create what is missing of the state folder, its users and their permissions; keep
    everything that is there (exchange, course folder, gradebook, homes, passwords).

    Permissions: the state folder 0755 (root); hub/ 0700 (root: passwords, tokens, the hub's
    database); exchange/ 1777 with exchange/dyngraph/ the instructor's (nbgrader's documented
    world-writable exchange, plus the sticky bit so no one renames another's folder); each
    home 0700 (its user's), the course folder home/instructor/course/ included (0700, with
    exchange/ a link to the shared one); config/ 0755 (root, read-only)."""
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o755)
    hub = state / "hub"
    hub.mkdir(exist_ok=True)
    hub.chmod(0o700)
    accounts = load_accounts(state, students)
    users = {}
    for account in accounts.values():
        home = state / "home" / account.name
        users[account.name] = user = ensure_user(account, home)
        account.uid = user.pw_uid
        home.mkdir(parents=True, exist_ok=True)
        (state / "home").chmod(0o755)
        os.chown(home, user.pw_uid, user.pw_gid)
        home.chmod(0o700)
    _write(
        hub / "accounts.json",
        json.dumps({"users": {a.name: asdict(a) for a in accounts.values()}}, indent=1),
        0o600,
    )
    if not (hub / "admin-token").is_file():
        _write(hub / "admin-token", secrets.token_hex(32), 0o600)
    instructor = users[INSTRUCTOR]

    exchange = state / "exchange"
    exchange.mkdir(exist_ok=True)
    exchange.chmod(0o1777)
    course_exchange = exchange / COURSE_ID
    course_exchange.mkdir(exist_ok=True)
    os.chown(course_exchange, instructor.pw_uid, instructor.pw_gid)

    course = state / "home" / INSTRUCTOR / "course"  # the formgrader wants it in the home
    course.mkdir(exist_ok=True)
    for source in sorted((DEFAULT_COURSE_ROOT / "source").iterdir()):
        if source.is_dir() and not (course / "source" / source.name).exists():
            shutil.copytree(source, course / "source" / source.name)
    if not (course / "exchange").is_symlink():
        (course / "exchange").symlink_to(exchange)
    _write(course / "nbgrader_config.py", instructor_nbgrader_config(state))
    _chown_tree(course, instructor)
    course.chmod(0o700)

    config = state / "config"
    shutil.rmtree(config, ignore_errors=True)
    shutil.copytree(HUB_CONFIG / "student", config / "student")
    settings = json.loads((HUB_CONFIG / "student" / "nbgrader_config.json").read_text())
    settings["Exchange"]["root"] = str(exchange)
    _write(config / "student" / "nbgrader_config.json", json.dumps(settings, indent=2))
    (config / "instructor").mkdir()
    _write(config / "instructor" / "nbgrader_config.py", instructor_nbgrader_config(state))
    for folder, _, files in os.walk(config):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return accounts


def instructor_nbgrader_config(state: Path) -> str:
    """deploy/jupyterhub/instructor/nbgrader_config.py with this repository and state."""
    lines = (HUB_CONFIG / "instructor" / "nbgrader_config.py").read_text().splitlines()
    for number, line in enumerate(lines):
        if line.startswith("REPOSITORY = "):
            lines[number] = f"REPOSITORY = {str(REPO_ROOT)!r}"
        elif line.startswith("STATE = "):
            lines[number] = f"STATE = {str(state)!r}"
    return "\n".join(lines) + "\n"


# --- running the hub ----------------------------------------------------------------------------


def run_hub(state: Path, ip: str, port: int, accounts: dict[str, Account]) -> int:
    """Start JupyterHub (its log in <state>/hub/jupyterhub.log), print the URL and the
    accounts once it answers, and wait until it stops or Ctrl-C stops it."""
    env = {
        **os.environ,
        "DYNGRAPH_HUB_STATE": str(state),
        "DYNGRAPH_HUB_IP": ip,
        "DYNGRAPH_HUB_PORT": str(port),
        "PATH": command_path(os.environ.get("PATH", "/usr/bin:/bin")),
    }
    env.pop(IN_NAMESPACE, None)
    log_path = state / "hub" / "jupyterhub.log"
    command = [sys.executable, "-m", "jupyterhub", "-f", str(HUB_CONFIG / "jupyterhub_config.py")]
    with open(log_path, "ab") as log:
        hub = subprocess.Popen(command, cwd=state / "hub", env=env, stdout=log, stderr=log)
    url = f"http://{ip}:{port}/"
    try:
        wait_until_ready(hub, url + "hub/api/", log_path)
        print(banner(url, state, accounts, log_path), flush=True)
        return hub.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the hub too: it is stopping already
        print("stopping the hub (the state folder stays)", file=sys.stderr, flush=True)
        return stop(hub, signalled=True)
    except BaseException:
        stop(hub)
        raise


def wait_until_ready(hub: subprocess.Popen, api: str, log: Path, seconds: float = 90) -> None:
    """Return once the hub's API answers through the proxy; CommandError (with the log's
    end) when the hub exits or does not answer in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if hub.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise CommandError(f"JupyterHub exited ({hub.returncode}):\n" + "\n".join(tail))
        try:
            with urllib.request.urlopen(api, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise CommandError(f"JupyterHub did not answer at {api} within {seconds:.0f} s: see {log}")


def stop(hub: subprocess.Popen, signalled: bool = False) -> int:
    """Stop JupyterHub (it stops the proxy and every user's server); its exit status.
    `signalled`: the terminal's Ctrl-C reached it already, so it is only waited for."""
    if not signalled and hub.poll() is None:
        hub.send_signal(signal.SIGINT)
    try:
        return hub.wait(timeout=60)
    except subprocess.TimeoutExpired:
        hub.kill()
        return hub.wait()


def banner(url: str, state: Path, accounts: dict[str, Account], log: Path) -> str:
    """What the instructor needs: the URL, who can log in with which password, where the
    state and the log are."""
    course = state / "home" / INSTRUCTOR / "course"
    rows = [
        f"JupyterHub for course {COURSE_ID}: {url}",
        "",
        f"  {'user':<12} {'password':<14} role",
    ]
    for account in accounts.values():
        role = "instructor (formgrader)" if account.role == "instructor" else "student"
        rows.append(f"  {account.name:<12} {account.password:<14} {role}")
    rows += [
        "",
        f"state (exchange, homes): {state}; course folder and gradebook: {course}",
        f"hub log: {log}; admin API token: {state / 'hub' / 'admin-token'}",
        "Ctrl-C stops the hub; the state folder stays for the next start.",
    ]
    return "\n".join(rows)
