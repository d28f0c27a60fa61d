"""The folders of the running Python that every restricted view must show (NOTE [Python view]).

NOTE [Python view]
    The course runs code in restricted views of the machine: the grading sandbox (bubblewrap,
    sandbox.py), the hub's private mount namespace (hub.py) and, inside it, each student's
    server (student_server.py). Each view must run the very interpreter the command was started
    with, which may live where the view would hide it: a venv in root's home (0700), pyenv's
    Python in /root/.pyenv, a venv under /tmp (the sandbox mounts a private /tmp), a user
    site-packages in ~/.local.

    `python_folders()` is the one list of what to show: the interpreter's installation and
    venv (sys.prefix, sys.base_prefix and their exec twins) and every folder on the import
    path (site-packages, user site, PYTHONPATH, .pth entries), with nested folders folded into
    the folder above them. Each view shows exactly these folders, read-only, plus the path down
    to them, and nothing else of the folders that hold them:
    - the sandbox binds each one (those under its system folders are bound already), after its
      private /tmp, and makes the folders above it empty and enterable;
    - the hub mounts an empty tmpfs over the closed folder above them (such as /root) and binds
      each one back (`hub.show_python_to_everyone`);
    - a student's server hides the repository but keeps minitorch/ and any of these folders
      that live inside it (a venv in the clone).
    `command_path` puts the interpreter's own bin folders first on each view's PATH, so a
    venv's commands (nbgrader runs `alembic`) are found without activating it.
    The working directory (sys.path's first entry under `python -m`) is not on the list: it is
    where the command was typed, not what it imports. Neither is an import-path folder under
    `hidden`: the grading sandbox passes the repository, whose graders a student must not see
    (a venv inside it is still shown; a Python that holds the repository is refused by the
    sandbox's pre-flight).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path


def python_folders(hidden: Iterable[Path] = ()) -> list[Path]:
    """The folders a restricted view must show for this interpreter to run and import what it
    imports here, outermost only (a folder inside another listed one is left out), sorted.
    Import-path folders under `hidden` are left out (the interpreter's own prefixes are not:
    a venv in the clone is shown, the clone is not); folders that do not exist are skipped."""
    hidden = [Path(os.path.realpath(folder)) for folder in hidden]
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    here = Path.cwd()
    folders = set()
    for entry in [*prefixes, *filter(None, sys.path)]:
        path = Path(os.path.abspath(entry))
        if path.is_file():  # a zip on the import path: show the folder it is in
            path = path.parent
        if not path.is_dir() or path in (Path("/"), here):
            continue
        real = Path(os.path.realpath(path))
        if entry not in prefixes and any(real.is_relative_to(folder) for folder in hidden):
            continue
        folders.add(path)
    return outermost(folders)


def outermost(folders: Iterable[Path]) -> list[Path]:
    """`folders` without those inside another of them, sorted."""
    folders = set(folders)
    return sorted(f for f in folders if not any(f != o and f.is_relative_to(o) for o in folders))


def command_path(rest: str) -> str:
    """A PATH that finds this interpreter's commands first (a venv's `alembic`, `jupyter`; it
    need not be activated), then `rest`."""
    folders = [os.path.dirname(sys.executable)]
    folders += [os.path.join(prefix, "bin") for prefix in (sys.prefix, sys.base_prefix)]
    unique = [f for n, f in enumerate(folders) if f not in folders[:n] and os.path.isdir(f)]
    return os.pathsep.join([*unique, *([rest] if rest else [])])
