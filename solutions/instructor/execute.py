"""Autograde execution that survives a kernel crash in one cell.

nbgrader gives up on a whole notebook when the kernel dies (a student's `os._exit(1)`, a
segfault, the out-of-memory killer): every exercise scores zero. `ExecuteSurvivingCrashes`
remembers which cell was running, replaces it by a cell that raises, and runs the notebook again
in a fresh kernel, so only the exercises that depend on the crashing cell lose their points.
"""

from __future__ import annotations

from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Integer

CRASHED_CELL_NOTE = "The kernel died while running this cell"
CRASHED_CELL_SOURCE = (
    f"# {CRASHED_CELL_NOTE} during grading (os._exit, a crash, or\n"
    "# running out of memory), so it was skipped and the rest of the notebook graded.\n"
    f'raise RuntimeError("{CRASHED_CELL_NOTE.lower()}")\n'
)


class ExecuteSurvivingCrashes(Execute):
    """nbgrader's Execute, re-run with each crashing cell replaced by a raise."""

    max_crashes = Integer(
        3, help="How many crashing cells to skip before giving up on a notebook."
    ).tag(config=True)

    _running_cell: int | None = None

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int):
        self._running_cell = index
        return super().preprocess_cell(cell, resources, index)

    def preprocess(self, nb: NotebookNode, resources: dict | None = None, km=None):
        for crashes in range(self.max_crashes + 1):
            self._running_cell = None
            try:
                return super().preprocess(nb, resources, km)
            except DeadKernelError:
                if self._running_cell is None or crashes == self.max_crashes:
                    raise
                self.log.warning("Kernel died in cell %d; skipping it", self._running_cell)
                nb.cells[self._running_cell].source = CRASHED_CELL_SOURCE
                for cell in nb.cells:
                    if cell.cell_type == "code":
                        cell.outputs = []
                        cell.execution_count = None
        raise AssertionError("unreachable")
