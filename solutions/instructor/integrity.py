"""Finding submissions that use the course's grading code, and keeping them from earning credit.

The grading kernel can import `solutions` (hidden tests call the graders there), so a student cell
could call a reference solution, or read the files under solutions/, and pass. A cell that names
the `solutions` package in an import, or in a string (a module path such as
"solutions.graph_construction" or a file path such as "../solutions/..."), is flagged; during
autograde `BlockGraderAccess` replaces it with a cell that raises, so the exercise scores zero.

A cell that builds the name at run time ("sol" + "utions") is not caught by this static check.
"""

from __future__ import annotations

import ast
import re

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

GRADING_PACKAGE = "solutions"

# "solutions" as a module path or a path component, not as an English word in prose.
_NAME_IN_STRING = re.compile(r"(?:^|[/\\])solutions(?:$|[/\\]|\.[A-Za-z_])")
_NAME_IN_CODE = re.compile(r"\bsolutions\b")

BLOCKED_CELL_SOURCE = (
    "# This cell was not run: it uses the course's grading code (the `solutions` package),\n"
    "# which submissions may not import or read.\n"
    'raise RuntimeError("this cell uses the grading code and was not run")\n'
)


def is_test_cell(cell: NotebookNode) -> bool:
    """A locked grade cell that is not an answer: its source is restored from the gradebook."""
    return utils.is_grade(cell) and utils.is_locked(cell) and not utils.is_solution(cell)


def _strip_magics(source: str) -> str:
    # IPython magics and shell escapes are not Python; blank them so the cell still parses.
    lines = source.splitlines()
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)


def uses_grading_code(source: str) -> bool:
    """True when code `source` imports the grading package or names it in a string."""
    try:
        tree = ast.parse(_strip_magics(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        # Not Python (or too deep for the parser: 200,000 unary minuses raise MemoryError):
        # the kernel will refuse it too; look for the name in the text.
        code_only = "\n".join(line.split("#", 1)[0] for line in source.splitlines())
        return bool(_NAME_IN_CODE.search(code_only))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(alias.name.split(".")[0] == GRADING_PACKAGE for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if node.module and node.module.split(".")[0] == GRADING_PACKAGE and node.level == 0:
                return True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _NAME_IN_STRING.search(node.value):
                return True
        elif isinstance(node, ast.Name) and node.id == GRADING_PACKAGE:
            return True
    return False


def cells_using_grading_code(nb: NotebookNode) -> list[int]:
    """Indices of the student-controlled code cells that use the grading code."""
    return [
        index
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and not is_test_cell(cell) and uses_grading_code(cell.source)
    ]


class BlockGraderAccess(NbGraderPreprocessor):
    """Autograde sanitizer: replace every student cell that uses the grading code by a raise.

    Runs after `OverwriteCells`, so the test cells hold the gradebook's source again and are
    trusted; every other code cell is the student's.
    """

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        for index in cells_using_grading_code(nb):
            self.log.warning("Cell %d uses the grading code; replaced by a raise", index)
            nb.cells[index].source = BLOCKED_CELL_SOURCE
        return nb, resources
