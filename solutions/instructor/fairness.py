"""Scoring rules that nbgrader gets wrong for this course.

nbgrader scores a test cell 0 when it wrote anything to stderr. A correct answer can do that
without any fault: PyTorch and minitorch warn on stderr (`float(t)` on a tensor that requires
grad, a deprecated call), and so does any `warnings.warn` in the student's code. A warning must
never cost points, so `WarningsAreNotFailures` runs after the notebook executed and before
nbgrader scores it, and relabels the stderr streams of test cells as stdout. Nothing is hidden:
the text stays in the cell, and feedback shows it. Errors are `error` outputs, not streams, so a
failing test still scores 0.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor


class WarningsAreNotFailures(NbGraderPreprocessor):
    """Relabel stderr output of grade cells as stdout, so that nbgrader does not score it 0."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict, index: int
    ) -> tuple[NotebookNode, dict]:
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
        return cell, resources
