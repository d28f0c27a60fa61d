"""Feedback shows students their errors, never the grader's stack frames.

A hidden test is a one-line call into `solutions/`, whose failures raise a clean AssertionError;
the traceback would still list the grader's frame (the file path on the grading machine and the
line that raised). `HideGraderFrames` drops the traceback entries of files under `solutions/`
from every error output before the feedback HTML is written.
"""

from __future__ import annotations

import re

from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_GRADER_FRAME = re.compile(r"^\s*File \S*\bsolutions[/\\]\S+\.py\b")


def is_grader_frame(entry: str) -> bool:
    """True for a traceback entry (one frame, possibly with ANSI colours) in a solutions/ file."""
    return bool(_GRADER_FRAME.match(_ANSI.sub("", entry)))


class HideGraderFrames(NbGraderPreprocessor):
    """Remove grader frames from the tracebacks of error outputs."""

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output.traceback = [e for e in output.traceback if not is_grader_frame(e)]
        return cell, resources
