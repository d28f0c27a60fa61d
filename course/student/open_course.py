"""Open the course: JupyterLab on notebooks/, with nbgrader's student tools only.

    python3 open_course.py                                 # JupyterLab opens in your browser
    python3 open_course.py --submit ada graph_construction # writes the file you upload:
                                                           #   submit/ada_graph_construction.ipynb

Any other argument goes to JupyterLab (for example `--no-browser` or `--port 8890`).

JupyterLab takes its settings from the folder jupyter/ next to this file (JUPYTER_CONFIG_DIR):
the Validate button is on; the Assignments tab (you submit with --submit instead) and the
instructor's tools (the formgrader, Create Assignment and the course list) are off.

It runs JupyterLab with the Python that runs it: the course's environment (.venv), activated
as README.md says. Run by a Python without JupyterLab, it says what to do.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE / "notebooks"
SUBMIT = HERE / "submit"
# The course collects files named <student_id>_<notebook>.ipynb; an id has no underscore.
STUDENT_ID = re.compile(r"[A-Za-z0-9.-]+")


def jupyter_env() -> dict[str, str]:
    """This process's environment, with JupyterLab's settings taken from jupyter/ only."""
    return {**os.environ, "JUPYTER_CONFIG_DIR": str(HERE / "jupyter")}


def lab_command(extra: list[str]) -> list[str]:
    """The JupyterLab command line: this Python's JupyterLab, rooted at notebooks/."""
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={NOTEBOOKS}", *extra]
    if getattr(os, "geteuid", lambda: 1)() == 0 and "--allow-root" not in extra:
        command.append("--allow-root")  # JupyterLab refuses to run as root without it
    return command


def missing_jupyterlab() -> str | None:
    """None when this Python has JupyterLab; else what to do, for the student to read."""
    if importlib.util.find_spec("jupyterlab") is not None:
        return None
    venv = HERE / ".venv"
    if Path(sys.prefix).resolve() == venv.resolve():
        step = "install the course in it (README.md, step 1):\n    pip install -r requirements.txt"
    elif venv.is_dir():
        step = (
            f"activate the course's environment first, in {HERE}:\n"
            "    . .venv/bin/activate        (Windows: .venv\\Scripts\\activate)"
        )
    else:
        step = (
            f"make the course's environment first (README.md, step 1), in {HERE}:\n"
            "    python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt"
        )
    return (
        f"this Python ({sys.executable}) has no JupyterLab: {step}\n"
        "then run python3 open_course.py again."
    )


def submit(student_id: str, assignment: str) -> list[Path]:
    """Copy the notebooks of `assignment` to submit/<student_id>_<notebook>.ipynb; return them.

    Raises ValueError for a student id the course cannot collect or an unknown assignment.
    """
    if not STUDENT_ID.fullmatch(student_id):
        raise ValueError(
            f"student id {student_id!r}: use only letters, digits, '.' and '-' (no '_' or spaces)"
        )
    folder = NOTEBOOKS / assignment
    notebooks = sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
    if not notebooks:
        known = sorted(p.name for p in NOTEBOOKS.iterdir() if p.is_dir())
        raise ValueError(f"no assignment {assignment!r} (assignments: {', '.join(known)})")
    SUBMIT.mkdir(exist_ok=True)
    written = []
    for notebook in notebooks:
        destination = SUBMIT / f"{student_id}_{notebook.name}"
        shutil.copyfile(notebook, destination)
        written.append(destination)
    return written


def main(argv: list[str] | None = None) -> int:
    """Write a submission (--submit) or start JupyterLab (this process becomes JupyterLab)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--submit", nargs=2, metavar=("STUDENT_ID", "ASSIGNMENT"),
        help="write submit/<STUDENT_ID>_<notebook>.ipynb for the LMS upload",
    )  # fmt: skip
    args, extra = parser.parse_known_args(argv)
    if args.submit:
        try:
            written = submit(*args.submit)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for path in written:
            print(f"upload this file: {path}")
        return 0
    problem = missing_jupyterlab()
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    command = lab_command(extra)
    os.execve(command[0], command, jupyter_env())  # returns only on failure (it raises)
    return 1


if __name__ == "__main__":
    sys.exit(main())
