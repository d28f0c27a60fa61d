"""Nothing a student made runs in a page the course writes or serves.

NOTE [Student HTML]
The formgrader's submission page (served by the instructor's authenticated Jupyter server, so a
script there acts with the instructor's rights) and the feedback pages are nbconvert renderings
of the autograded notebook, and nbconvert puts a notebook's HTML into the page as it is: an
output's text/html and text/markdown, application/javascript inside a <script>, widget views
and the widget state (run by a widget manager the page loads), and the raw HTML of markdown
cells. In an autograded notebook everything but the release's own markdown and raw cells was
made by a student: the outputs come from the student's kernel. `NeutralizeStudentHTML` makes it
inert data, right after SandboxedAutograde puts the outputs in (course/nbgrader_config.py):
- an output keeps text/plain, PNG and JPEG images (base64 text only), SVG that
  `is_plain_drawing` accepts (graphviz's graphs; nbconvert shows SVG as an <img>, where no
  script runs anyway) and text/html passed through `clean_html`, an allowlist sanitizer (nh3:
  no script, style sheet, event handler, iframe, form or SVG; `style` with layout properties
  only; links only to http(s), mailto and #anchors; images only as data: URLs, so the page
  fetches nothing), after each inline <svg> drawing in it became such an image
  (`inline_svg_as_images`: the course's side-by-side graphs are HTML holding graphviz's SVG);
  text/markdown becomes such HTML; every other type (application/javascript, widget views,
  LaTeX, PDF, ...) is dropped, and an output left with nothing to show says what was dropped.
  Streams and errors stay text; a prompt number that is not a number is cleared;
- a markdown cell that is not one of the release's is rendered here by nbconvert's own markdown
  renderer with its raw HTML escaped (shown as text), sanitized by `clean_html`, and kept as
  one line of HTML that markdown renderers pass through unchanged (`neutral_markdown`); its
  attachments become data: images inside it;
- a raw cell that is not one of the release's has each `<` written `&lt;`;
- the notebook's widget state (metadata.widgets) is dropped.
Every page rendered with the course's configuration runs the preprocessor again
(`HTMLExporter.preprocessors`: the feedback and the formgrader's pages), so a notebook
autograded before it existed is safe too; on a notebook it already made inert it changes
nothing. What else of a notebook the templates print, nbconvert escapes: code (pygments),
stream and error text (ansi2html), cell tags and ids, the notebook's title; nbgrader's cell
metadata is checked against its schema before grading (a grade_id is letters, digits, _ and -).
nbconvert's own `HTMLExporter.sanitize_html` is not used: its bleach allowlist shows <p>, <th>
or <img> as text, and nbgrader's templates do not apply it to markdown cells.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import re
from pathlib import Path
from typing import Any

import nbformat
import nh3
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbformat import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from pygments.token import STANDARD_TYPES

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|svg\+xml);base64,[A-Za-z0-9+/=\s]*", re.I)
_SAFE_LINK = re.compile(r"(https?:|mailto:|#)", re.I)
IMAGE_TYPES = ("image/png", "image/jpeg")
ATTACHMENT_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")


def _keep_safe_urls(tag: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: images only from data: URLs of images (nothing is fetched), links
    only to the web, mail or an anchor of the page."""
    if attribute == "src":
        return value if _DATA_IMAGE.fullmatch(value) else None
    if attribute in ("href", "cite"):
        return value if _SAFE_LINK.match(value) else None
    return value


# Layout and colour only: no property that takes an image or a URL (background, content, ...).
STYLE_PROPERTIES = frozenset(
    ("display", "flex-direction", "flex-wrap", "align-items", "justify-content", "gap",
     "margin", "margin-top", "margin-right", "margin-bottom", "margin-left", "padding",
     "text-align", "vertical-align", "white-space", "font-weight", "font-style", "color",
     "background-color", "width", "max-width")
)  # fmt: skip
_CLEANER = nh3.Cleaner(
    attributes={**nh3.ALLOWED_ATTRIBUTES, "*": {"style"}},
    filter_style_properties=set(STYLE_PROPERTIES),
    url_schemes={"http", "https", "mailto", "data"},
    attribute_filter=_keep_safe_urls,
    # pygments' classes colour highlighted code; no other class (e.g. "mermaid") is kept.
    allowed_classes={"span": set(STANDARD_TYPES.values()) - {""}, "div": {"highlight"}},
)


def clean_html(text: str) -> str:
    """`text` reduced to nh3's allowlist of HTML (ammonia's default tags and attributes: text,
    tables, lists, links, images; and `style` with STYLE_PROPERTIES) with `_keep_safe_urls`:
    nothing in it can run or fetch anything."""
    return _CLEANER.clean(text)


def _text(value: Any) -> str:
    """A notebook text field as a string (nbformat allows a list of lines)."""
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return "".join(value)
    return value if isinstance(value, str) else str(value)


# --- markdown ---------------------------------------------------------------------------------
MARKDOWN_OPEN = '<div class="student-markdown">'
MARKDOWN_CLOSE = "</div>"


def render_markdown(source: str, attachments: dict | None = None) -> str:
    """`source` rendered by nbconvert's markdown renderer, its raw HTML escaped (shown as text),
    its `attachment:` images inlined; a source it cannot render is its text in a <pre>."""
    images = {}
    for name, bundle in attachments.items() if isinstance(attachments, dict) else ():
        if isinstance(bundle, dict):
            kept = {m: _text(bundle[m]) for m in ATTACHMENT_TYPES if m in bundle}
            images[str(name)] = kept or {"image/png": ""}
    renderer = IPythonRenderer(escape=True, allow_harmful_protocols=False, attachments=images)
    try:
        return MarkdownWithMath(renderer=renderer).render(source)
    except Exception:  # a missing attachment, a renderer bug: the text itself is still shown
        return f"<pre>{html.escape(source)}</pre>"


def _wrapped(clean: str) -> str:
    """Sanitized HTML on one line (its line breaks as character references) in the wrapper."""
    return MARKDOWN_OPEN + clean.replace("\r", "&#13;").replace("\n", "&#10;") + MARKDOWN_CLOSE


def neutral_markdown(source: str, attachments: dict | None = None) -> str:
    """A student's markdown `source` as inert HTML on one line inside MARKDOWN_OPEN/CLOSE: an
    HTML block with no blank line, which markdown renderers (nbconvert's, JupyterLab's) pass
    through unchanged. A source that already has this form is returned as it is."""
    if is_neutral_markdown(source):
        return source
    return _wrapped(clean_html(render_markdown(source, attachments)))


def is_neutral_markdown(source: str) -> bool:
    """True when `source` is what `_wrapped` makes of HTML that `clean_html` leaves unchanged:
    whoever wrote it, such a source holds nothing that runs."""
    if not (source.startswith(MARKDOWN_OPEN) and source.endswith(MARKDOWN_CLOSE)):
        return False
    inner = source[len(MARKDOWN_OPEN) : -len(MARKDOWN_CLOSE)]
    lines = inner.replace("&#13;", "\r").replace("&#10;", "\n")
    return _wrapped(clean_html(lines)) == source


# --- outputs ----------------------------------------------------------------------------------
_SVG = "{http://www.w3.org/2000/svg}"
_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
DRAWING_ELEMENTS = frozenset(
    _SVG + name
    for name in ("svg", "g", "title", "desc", "defs", "a", "polygon", "polyline", "path",
                 "ellipse", "circle", "rect", "line", "text", "tspan", "linearGradient",
                 "radialGradient", "stop", "clipPath")
)  # fmt: skip
_URL_REFERENCE = re.compile(r"url\s*\(\s*(?!#)", re.I)


def is_plain_drawing(svg: str) -> bool:
    """True when `svg` is an SVG picture made only of shapes and text (what graphviz draws): no
    script, style sheet, foreign object, image, animation or link out of the picture, and no
    event handler. Any other SVG is not kept."""
    from xml.etree import ElementTree

    lowered = svg.lower()
    if "<!entity" in lowered or "<?xml-stylesheet" in lowered:  # expansion, outside style
        return False
    try:
        root = ElementTree.fromstring(svg)
    except (ElementTree.ParseError, ValueError):
        return False
    for element in root.iter():
        if element.tag not in DRAWING_ELEMENTS:
            return False
        for name, value in element.attrib.items():
            local = name.rsplit("}", 1)[-1].lower()
            if local.startswith("on") or _URL_REFERENCE.search(value):
                return False
            if (local == "href" or name == _XLINK_HREF) and not value.startswith("#"):
                return False
    return True


_SVG_START = re.compile(r"<svg\b", re.I)
_SVG_END = re.compile(r"</svg\s*>", re.I)


def inline_svg_as_images(text: str) -> str:
    """HTML `text` with each inline <svg> element that `is_plain_drawing` accepts turned into an
    <img> of a data: URL, which `clean_html` keeps (the course's graphs are HTML outputs holding
    graphviz's SVG). An SVG shown as an image never runs a script or fetches anything."""
    parts, position = [], 0
    while (start := _SVG_START.search(text, position)) and (
        end := _SVG_END.search(text, start.end())
    ):
        svg = text[start.start() : end.end()]
        if is_plain_drawing(svg):
            svg = f'<img src="data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()}">'
        parts += [text[position : start.start()], svg]
        position = end.end()
    return "".join(parts) + text[position:]


def neutral_bundle(data: dict) -> dict[str, str]:
    """The mime bundle of a display output with only what is inert (see NOTE [Student HTML])."""
    shown: dict[str, str] = {}
    if "text/plain" in data:
        shown["text/plain"] = _text(data["text/plain"])
    for mime in IMAGE_TYPES:
        if mime in data and _BASE64.fullmatch(image := _text(data[mime])):
            shown[mime] = image
    if "image/svg+xml" in data and is_plain_drawing(svg := _text(data["image/svg+xml"])):
        shown["image/svg+xml"] = svg
    if "text/html" in data:
        page = clean_html(inline_svg_as_images(_text(data["text/html"])))
    elif "text/markdown" in data:
        page = clean_html(render_markdown(_text(data["text/markdown"])))
    else:
        page = ""
    if page.strip():
        shown["text/html"] = page
    if not shown:
        dropped = ", ".join(sorted(str(mime)[:80] for mime in data))[:400]
        shown["text/plain"] = f"[output not shown: {dropped or 'empty'}]"
    return shown


def neutral_output(output: Any) -> NotebookNode | None:
    """A code cell's output rebuilt from its inert parts; None for an unknown kind of output."""
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=_text(output.get("text", "")))
    if kind == "error":
        lines = output.get("traceback", [])
        return nbformat.v4.new_output(
            "error",
            ename=_text(output.get("ename", "")),
            evalue=_text(output.get("evalue", "")),
            traceback=[_text(line) for line in lines] if isinstance(lines, list) else [],
        )
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data")
    bundle = neutral_bundle(data if isinstance(data, dict) else {})
    if kind == "display_data":
        return nbformat.v4.new_output("display_data", data=bundle)
    count = output.get("execution_count")
    count = count if type(count) is int else None
    return nbformat.v4.new_output("execute_result", data=bundle, execution_count=count)


# --- cells ------------------------------------------------------------------------------------
def _attachments_key(cell: dict) -> str:
    return json.dumps(cell.get("attachments") or {}, sort_keys=True, default=str)


def cell_key(cell: dict) -> tuple[str, str, str]:
    """What makes a markdown or raw cell the release's: its kind, source and attachments."""
    return (cell.get("cell_type", ""), _text(cell.get("source", "")), _attachments_key(cell))


@functools.lru_cache(maxsize=32)
def _release_keys(path: str, modified_ns: int) -> frozenset[tuple[str, str, str]]:
    try:
        release = nbformat.read(path, as_version=4)
    except Exception:  # an unreadable release trusts nothing
        return frozenset()
    return frozenset(cell_key(c) for c in release.cells if c.cell_type in ("markdown", "raw"))


def release_cells(coursedir: CourseDirectory, assignment: str, notebook: str) -> frozenset:
    """`cell_key` of every markdown and raw cell of the release of `notebook` (the instructor's,
    trusted); empty when there is no release."""
    folder = coursedir.format_path(coursedir.release_directory, ".", assignment)
    path = Path(folder) / f"{notebook}.ipynb"
    try:
        modified = path.stat().st_mtime_ns
    except OSError:
        return frozenset()
    return _release_keys(str(path), modified)


def neutralize(nb: NotebookNode, trusted: frozenset = frozenset()) -> NotebookNode:
    """Make everything a student made in `nb` inert (NOTE [Student HTML]), in place; markdown
    and raw cells whose `cell_key` is in `trusted` (the release's) are left as they are."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            outputs = cell.get("outputs")
            outputs = [neutral_output(o) for o in outputs] if isinstance(outputs, list) else []
            cell.outputs = [o for o in outputs if o is not None]
            if type(cell.get("execution_count")) is not int:  # the prompt is printed unescaped
                cell.execution_count = None
        elif cell.cell_type in ("markdown", "raw") and cell_key(cell) not in trusted:
            source = _text(cell.source)
            if cell.cell_type == "markdown":
                attachments = cell.get("attachments")
                cell.source = neutral_markdown(source, attachments)
            else:
                cell.source = source.replace("<", "&lt;")
            cell.pop("attachments", None)
    return nb


def _notebook_of(resources: dict) -> tuple[str, str] | None:
    """(assignment, notebook) of the notebook being converted: nbgrader's resources (autograde,
    feedback), or the formgrader's (assignment_id, notebook_id)."""
    info = resources.get("nbgrader") or {}
    assignment = info.get("assignment") or resources.get("assignment_id")
    notebook = info.get("notebook") or resources.get("notebook_id")
    return (assignment, notebook) if assignment and notebook else None


class NeutralizeStudentHTML(NbGraderPreprocessor):
    """Make everything a student made in the notebook inert (NOTE [Student HTML]): in autograde
    after the sandbox's outputs are in, and again whenever a page is rendered from it."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        which = _notebook_of(resources)
        trusted = frozenset()
        if which is not None:
            trusted = release_cells(CourseDirectory(config=self.config), *which)
        return neutralize(nb, trusted), resources
