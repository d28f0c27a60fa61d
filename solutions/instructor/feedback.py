"""Feedback shows students their errors, never the grader's stack frames; and it is quick to write.

A hidden test is a one-line call into `solutions/`, whose failures raise a clean AssertionError;
the traceback would still list the grader's frame (the file path on the grading machine and the
line that raised). `HideGraderFrames` drops the traceback entries of files under `solutions/`
from every error output before the feedback HTML is written.

`FeedbackHTMLExporter` writes the page (course/nbgrader_config.py names both).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from jinja2 import BytecodeCache, Environment
from jinja2.bccache import Bucket
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
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


NO_ALT_TEXT = "No description has been provided for this image"
_IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt\b)(?=[\s/>])", re.IGNORECASE)


def add_missing_alt(html: str) -> str:
    """Give every `<img>` tag without an `alt` attribute nbconvert's placeholder alt text."""
    return _IMG_WITHOUT_ALT.sub(f'<img alt="{NO_ALT_TEXT}"', html)


class CompiledTemplates(BytecodeCache):
    """Jinja's compiled templates, kept in memory for the life of the process. nbgrader makes a
    new exporter, so a new Jinja environment, for every student's feedback, and each one parsed
    and compiled the ten template files again. Jinja checks each file's checksum before it uses
    the compiled code, so a changed template is compiled afresh."""

    def __init__(self) -> None:
        self._compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        if bucket.key in self._compiled:
            bucket.bytecode_from_string(self._compiled[bucket.key])

    def dump_bytecode(self, bucket: Bucket) -> None:
        self._compiled[bucket.key] = bucket.bytecode_to_string()


COMPILED_TEMPLATES = CompiledTemplates()


class RememberingHighlight(Highlight2HTML):
    """nbconvert's code highlighter, remembering what it highlighted: most code cells of a
    class's feedback are the release's, the same for every student, and highlighting was 40% of
    the time a feedback page took. Forgets everything past `LIMIT` distinct cells."""

    LIMIT = 20_000
    _highlighted: ClassVar[dict[tuple, str]] = {}

    def __call__(self, source: str, language: str | None = None, metadata: Any = None) -> str:
        options = (language or self.pygments_lexer, repr(self.extra_formatter_options))
        key = (source, *options, repr(metadata))
        if key not in self._highlighted:
            if len(self._highlighted) >= self.LIMIT:
                self._highlighted.clear()
            self._highlighted[key] = super().__call__(source, language, metadata)
        return self._highlighted[key]


class FeedbackHTMLExporter(HTMLExporter):
    """nbconvert's HTML exporter, less its final pass: that pass parses the whole rendered page
    with BeautifulSoup to give images alt text and lab-template cells a tabindex, and took 0.5 s
    of the 0.85 s one student's feedback costs, in the one process that records every student
    while the sandboxes run. nbgrader's feedback template is built on the classic template, which
    has no lab cells, so only the alt text is left to add, done by `add_missing_alt`.
    tests/test_course_tools.py checks that the page is the one `HTMLExporter` writes.
    Its templates are compiled once per process (`CompiledTemplates`)."""

    def _create_environment(self) -> Environment:
        environment = super()._create_environment()
        environment.bytecode_cache = COMPILED_TEMPLATES
        return environment

    def from_notebook_node(
        self, nb: NotebookNode, resources: dict | None = None, **kw: Any
    ) -> tuple[str, dict]:
        # The two filters HTMLExporter registers for each notebook before rendering.
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        highlight = self.filters.get(
            "highlight_code", RememberingHighlight(pygments_lexer=lexer, parent=self)
        )
        self.register_filter("highlight_code", highlight)
        resources = self._init_resources(resources)
        widgets = WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources
        )
        self.register_filter("filter_data_type", widgets)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return add_missing_alt(html), resources
