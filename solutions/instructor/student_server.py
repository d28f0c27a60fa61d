"""How a student's Jupyter server starts on the course's hub: the view of the machine it gets
and its limits. deploy/jupyterhub/jupyterhub_config.py applies them to every student's
server, and `python -m solutions hub` to its pre-flight, so the pre-flight runs what a student
will run, where it will run.

Both functions run in a forked child still running as root, between fork and exec, so they
use system calls only (no subprocess, no threads).
"""

from __future__ import annotations

import ctypes
import os
import resource
from pathlib import Path

from solutions.instructor.python_view import python_folders

# A student's kernel that has run minitorch (torch) reaches about 1.6 GiB of address space;
# the grading sandbox caps its kernels at 4 GiB too. A student's server with one kernel is
# about 20 processes and threads; torch adds one thread per core in each kernel, so raise
# the process cap on a machine with many cores.
ADDRESS_SPACE = 4 * 2**30
PROCESSES = 512

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 32, 4096, 16384, 1 << 18,
)  # fmt: skip
CLONE_NEWNS = 0x00020000


def shown_in_repository(repository: Path) -> list[Path]:
    """What a student sees of `repository`: minitorch/, and the folders of the running Python
    that live inside it (a venv in the clone; NOTE [Python view]), relative to it. Folders of
    the clone on the import path (the clone itself, its tests/) are not among them."""
    repository = Path(os.path.realpath(repository))
    folders = python_folders(hidden=[repository])  # import-path folders of the clone left out
    inside = [f for f in folders if f.resolve().is_relative_to(repository)]
    return [Path("minitorch"), *(f.resolve().relative_to(repository) for f in inside)]


def enter_student_view(repository: Path, shown: list[Path]) -> None:
    """Enter a private mount namespace in which `repository` holds only the folders `shown`
    (relative to it, read-only): an empty tmpfs hides solutions/, course/, .git and the rest.
    Raises OSError when a step fails, so the server does not start (it never runs with the
    graders visible)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def call(result: int, step: str) -> None:
        if result != 0:
            raise OSError(ctypes.get_errno(), f"hiding {repository}: {step} failed")

    call(libc.unshare(CLONE_NEWNS), "unshare")
    call(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making / private")
    kept = [(folder, os.open(repository / folder, os.O_PATH)) for folder in shown]
    root = str(repository).encode()
    call(libc.mount(b"tmpfs", root, b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755"), "tmpfs")
    for folder, handle in kept:
        os.makedirs(repository / folder, mode=0o755)
        source = f"/proc/self/fd/{handle}".encode()
        target = str(repository / folder).encode()
        call(libc.mount(source, target, None, MS_BIND | MS_REC, None), f"binding {folder}")
        os.close(handle)
    flags = MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    call(libc.mount(None, root, None, flags, None), "read-only")


def limit_student(address_space: int = ADDRESS_SPACE, processes: int = PROCESSES) -> None:
    """Cap the address space of each process and the student's number of processes (0: no
    cap), before the child becomes the student. Its children inherit both."""
    if address_space:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    if processes:
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
