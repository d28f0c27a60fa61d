"""Run one submitted notebook inside a grading sandbox; print the result as JSON on stdout.

    python run_notebook.py NOTEBOOK.ipynb CELL_TIMEOUT_SECONDS ADDRESS_SPACE_BYTES

This file is copied into every sandbox (solutions/instructor/sandbox.py) and imports nothing of
the course. It executes every cell in order with nbclient, errors allowed. A cell that kills the
kernel (os._exit, a crash, the memory limit) is replaced by a cell that raises, and the notebook
is run again in a fresh kernel, so only what depends on that cell is lost. It prints one JSON
object per line as it goes, so that a run stopped by the time budget is graded with what finished:
{"cell": index, "outputs": [...], "observations": "lines the hidden tests appended"},
{"restart": index} when that cell killed the kernel, and {"done": true, "problem": ...} at the end.
Before all that it prints {"ready": true}, once its imports worked and before any student code
runs, and if it dies of an exception of its own (a kernel that cannot start included), its
last line is {"runner_error": "..."}, the traceback on stderr: either way the grading process
knows the failure is not the student's (NOTE [Grader errors] in sandbox.py).

Student code cannot reach what this process prints: the kernel and everything it starts write to
/dev/null, and this process is made non-dumpable, so its /proc entries (its file descriptors,
its memory) are closed to processes of the same user.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time

# jsonschema (under nbformat) imports rfc3987_syntax when it is installed, to check the "iri"
# string format, and that module builds a parser as it is imported: 2.1 s of every sandbox's
# start, for a format no notebook schema uses. Marking it absent makes jsonschema skip it.
sys.modules.setdefault("rfc3987_syntax", None)

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import DeadKernelError  # noqa: E402

MAX_CRASHES = 3
MAX_OUTPUT_CHARS = 20_000  # per output: feedback shows a cell's start, never megabytes
MAX_OUTPUTS_PER_CELL = 100
MAX_CELL_OUTPUT_CHARS = 4 * 2**20  # a cell's outputs together (pictures are base64 text)
PR_SET_DUMPABLE = 4
CRASHED_CELL_NOTE = "The kernel died while running this cell"
CRASHED_CELL_SOURCE = (
    f"# {CRASHED_CELL_NOTE} during grading (os._exit, a crash, or\n"
    "# running out of memory), so it was skipped and the rest of the notebook graded.\n"
    'raise RuntimeError("the kernel died while running this cell")\n'
)
KERNEL_ARGUMENTS = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.log_level=ERROR",
    # Plain tracebacks show only the failing line, not the lines around it.
    "--InteractiveShell.xmode=Plain",
]


def _trimmed(output: dict) -> dict:
    for key in ("text", "traceback"):
        value = output.get(key)
        if isinstance(value, str) and len(value) > MAX_OUTPUT_CHARS:
            output[key] = value[:MAX_OUTPUT_CHARS] + "\n... (output cut by the grader)\n"
        if isinstance(value, list):
            output[key] = [line[:MAX_OUTPUT_CHARS] for line in value[:200]]
    for mime, value in list(output.get("data", {}).items()):
        if isinstance(value, str) and len(value) > MAX_OUTPUT_CHARS * 50:
            output["data"][mime] = "(output too large, cut by the grader)"
    return output


def _bounded(outputs: list) -> list[dict]:
    """A cell's outputs, each trimmed, at most MAX_OUTPUTS_PER_CELL of them and about
    MAX_CELL_OUTPUT_CHARS in all; a note says what was left out."""
    kept, size = [], 0
    for output in outputs[:MAX_OUTPUTS_PER_CELL]:
        output = _trimmed(dict(output))
        size += len(json.dumps(output))
        if size > MAX_CELL_OUTPUT_CHARS:
            break
        kept.append(output)
    if len(kept) < len(outputs):
        note = f"... {len(outputs) - len(kept)} more outputs of this cell cut by the grader\n"
        kept.append({"output_type": "stream", "name": "stdout", "text": note})
    return kept


def emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Observations:
    """Reads what the hidden tests append to $COURSE_OBSERVATIONS, a cell at a time."""

    def __init__(self, path: str) -> None:
        self.path, self.offset = path, 0

    def new(self) -> str:
        try:
            with open(self.path) as file:
                file.seek(self.offset)
                text = file.read(16 * 2**20)
                self.offset = file.tell()
                return text
        except OSError:
            return ""


# Imported before the notebook runs, then frozen (gc.freeze): the garbage collector no longer
# walks the libraries' hundreds of thousands of objects, which made a full collection cost
# 0.1 s and a minitorch.memory scan of live objects as much (a notebook's own objects, tensors
# included, are all made later and collected as usual). The names are deleted again.
PRELOADED = (
    "import gc, matplotlib.pyplot, torch, minitorch; gc.freeze(); "
    "del gc, matplotlib, torch, minitorch"
)


def kernel_setup(limit: int) -> str:
    """The kernel argument that runs before the first cell: cap the kernel's address space at
    `limit` bytes, so that one huge allocation fails at once with a MemoryError in the student's
    cell (the sandbox's memory cgroup bounds the whole process tree, by killing), then import
    and freeze the libraries every notebook uses (PRELOADED)."""
    call = f"__import__('resource').setrlimit(__import__('resource').RLIMIT_AS, ({limit}, {limit}))"
    return f'--IPKernelApp.exec_lines=["{call}", "{PRELOADED}"]'


def _name_the_timeout(cell: nbformat.NotebookNode, timeout: int) -> None:
    """The interrupt that stopped a cell at its time limit shows as a KeyboardInterrupt: say
    what happened instead (the instructor's table flags CellTimeoutError as "timed out")."""
    for output in cell.outputs:
        if output.get("output_type") == "error" and output.get("ename") == "KeyboardInterrupt":
            output["ename"] = "CellTimeoutError"
            output["evalue"] = f"the cell ran longer than {timeout} s and was stopped"
            output["traceback"] = [f"CellTimeoutError: {output['evalue']}"]


def run(nb: nbformat.NotebookNode, timeout: int, observations: Observations, cap: int) -> None:
    """Execute `nb`, emitting each cell's outputs; re-run after a cell that kills the kernel."""
    for _ in range(MAX_CRASHES + 1):
        client = NotebookClient(
            nb,
            timeout=timeout,
            interrupt_on_timeout=True,
            allow_errors=True,
            kernel_name="python3",
            extra_arguments=[*KERNEL_ARGUMENTS, kernel_setup(cap)],
        )
        running = None
        try:
            with client.setup_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
                for index, cell in enumerate(nb.cells):
                    if cell.cell_type != "code":
                        continue
                    running = index
                    cell.outputs = []
                    start = time.monotonic()
                    client.execute_cell(cell, index)
                    if time.monotonic() - start >= timeout:
                        _name_the_timeout(cell, timeout)
                    outputs = _bounded(cell.outputs)
                    emit({"cell": index, "outputs": outputs, "observations": observations.new()})
            emit({"done": True, "problem": None})
            return
        except DeadKernelError:
            if running is None:
                break
            emit({"restart": running})
            nb.cells[running].source = CRASHED_CELL_SOURCE
            observations.new()  # what the dead run observed is dropped with its outputs
    emit({"done": True, "problem": f"the kernel died {MAX_CRASHES + 1} times"})


def main() -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    emit({"ready": True})
    try:
        path, timeout, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        nb = nbformat.read(path, as_version=4)
        run(nb, timeout, Observations(os.environ.get("COURSE_OBSERVATIONS", "")), cap)
    except Exception as error:
        emit({"runner_error": f"{type(error).__name__}: {error}"[:2000]})
        raise  # the traceback goes to stderr, which the grading process keeps


if __name__ == "__main__":
    main()
