"""Student-made HTML in every page the course writes or serves, opened in headless Chromium.

A class of three is graded the way an instructor grades (`python -m solutions grade`): an
honest student (the reference answers) and two attackers, the second a copy of the first (so
the similarity report shows their answers side by side). The attackers' notebook displays
every payload of issue 30: HTML outputs with <script>, <img onerror>, <svg onload>, an iframe
and a style sheet, a JavaScript output, an SVG with a script, markdown output, printed HTML,
an error whose message is HTML, a markdown cell and a raw cell with <script>, a cell tag, a
page title and widget state. Each payload tries to call alert(), to fetch a URL of a local
HTTP server the test runs (the beacon) and to change the page (its title, an element with id
`pwned`).

Then each page is opened in Debian's chromium through Playwright (never `playwright install`):
each student's feedback (file://), the formgrader's page of an attacker's submission, served
by a real Jupyter server on the course folder with nbgrader's server extension and the
course's configuration, and the similarity report. No page may open a dialog, make a request
to the beacon (seen by the beacon and by the page), load a widget manager, or change; the
honest student's feedback and the formgrader's page still show the graphs (as SVG images). A
notebook autograded before the fix (its live HTML put back) is inert in the formgrader too.
Requests to other hosts (MathJax's CDN) are aborted: the test runs offline.

Opt-in (`--classes`): grading the class takes about a minute on 2 cores.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest
from course_support import (
    NOTEBOOK_1,
    REPO_ROOT,
    copy_course,
    reference_answers,
    with_answers,
    write_submission,
)
from nbgrader.api import Gradebook

from solutions.instructor.cli import main

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
playwright_sync = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install playwright)"
)
pytestmark = [
    pytest.mark.classes,
    pytest.mark.filterwarnings("ignore:Cell is missing an id field"),
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason=f"chromium not found at {CHROMIUM} (apt-get install chromium)",
    ),
]

HONEST, ATTACKER, COPYCAT = "honest", "mallory", "mallory-copy"
PWNED = "PWNED"
DATA_IMAGES = ("data:image/png;base64,", "data:image/jpeg;base64,", "data:image/svg+xml;base64,")
SETTLE_MS = 1500  # after load: image errors, timers and fetches have happened by then


class Beacon(http.server.ThreadingHTTPServer):
    """A local HTTP server that records the path of every request it gets."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        beacon = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                beacon.paths.append(self.path)
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


def act(beacon: str, tag: str) -> str:
    """JavaScript that shows a dialog, fetches `beacon`/tag and changes the page. Its strings
    are in backquotes, so it fits in either kind of HTML attribute and in Python strings."""
    return (
        f"alert(`{tag}`);fetch(`{beacon}/{tag}`);document.title=`{PWNED}`;"
        "document.body.append(Object.assign(document.createElement(`b`),{id:`pwned`}))"
    )


def attack_cells(beacon: str) -> list[nbformat.NotebookNode]:
    """The attacker's own cells: one per payload."""

    def a(tag: str) -> str:
        return act(beacon, tag)

    svg = f'<svg xmlns="http://www.w3.org/2000/svg"><script>{a("svg-output")}</script></svg>'
    displays = [
        f"HTML('<script>{a('html-script')}</script>')",
        f"HTML('<img src=x onerror=\"{a('html-img')}\">')",
        f"HTML('<svg onload=\"{a('html-svg')}\"></svg>')",
        f"HTML('<iframe src=\"{beacon}/html-iframe\"></iframe>')",
        f"HTML('<style>body {{background: url({beacon}/html-style)}}</style>')",
        f"HTML('<img src=\"{beacon}/html-remote-img\">')",
        f"Javascript('{a('javascript')}')",
        f"SVG('{svg}')",
        f"Markdown('<img src=x onerror=\"{a('markdown-output')}\">')",
    ]
    cells = [
        nbformat.v4.new_code_cell(
            "from IPython.display import HTML, Javascript, Markdown, SVG, display\n"
            + "".join(f"display({call})\n" for call in displays)
            + f"print('<script>{a('printed')}</script>')\n"
            + f"display({{'text/html': '<img src=x onerror=\"{a('bundle')}\">',\n"
            + "         'application/vnd.jupyter.widget-view+json': "
            + "{'model_id': 'm1', 'version_major': 2, 'version_minor': 0}}, raw=True)\n",
        ),
        nbformat.v4.new_markdown_cell(
            f"An answer in words <script>{a('markdown-script')}</script>\n\n"
            f'<img src=x onerror="{a("markdown-img")}">\n\n'
            f"![a picture]({beacon}/markdown-remote-img) [a link](javascript:{a('link')})"
        ),
        nbformat.v4.new_raw_cell(f'<img src=x onerror="{a("raw")}">'),
        nbformat.v4.new_code_cell(f"raise ValueError('<img src=x onerror=\"{a('error')}\">')"),
    ]
    cells[0].metadata["tags"] = [f'x" onmouseover="{a("tag")}']  # not valid: set afterwards
    return cells


WIDGET_STATE = {
    "application/vnd.jupyter.widget-state+json": {
        "version_major": 2,
        "version_minor": 0,
        "state": {
            "m1": {
                "model_name": "HTMLModel",
                "model_module": "@jupyter-widgets/controls",
                "model_module_version": "2.0.0",
                "state": {"value": "<img src=x onerror=alert(`widget`)>"},
            }
        },
    }
}


@dataclass
class GradedClass:
    work: Path
    course: Path
    beacon: Beacon
    output: str
    exit_code: int

    def feedback(self, student: str) -> Path:
        return self.course / "feedback" / student / NOTEBOOK_1 / f"{NOTEBOOK_1}.html"


@pytest.fixture(scope="module")
def graded_class(
    released_course: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GradedClass]:
    beacon = Beacon()
    threading.Thread(target=beacon.serve_forever, daemon=True).start()
    work = tmp_path_factory.mktemp("student-html")
    course = copy_course(released_course, work / "course")
    inbox = work / "inbox"
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    reference = reference_answers(source)
    write_submission(inbox, HONEST, NOTEBOOK_1, with_answers(release, reference))
    # The same lines of their own before each answer: the attackers pair up in the report.
    own = (
        f"_notes = ['<script>{act(beacon.url, 'similarity')}</script>']\n"
        "for _i in range(3):\n"
        f"    _notes.append(f'<img src=x{{_i}} onerror=\"{act(beacon.url, 'similarity')}\">')\n"
        "_joined = ' '.join(_notes).upper()\n"
        "_sizes = sorted(len(_note) for _note in _notes)\n"
        "_total = sum(_sizes) + len(_joined) * 2\n"
    )
    attack = with_answers(release, {gid: own + answer for gid, answer in reference.items()})
    first_code = next(i for i, c in enumerate(attack.cells) if c.cell_type == "code")
    attack.cells[first_code + 1 : first_code + 1] = attack_cells(beacon.url)
    attack.metadata["title"] = f"</title><script>{act(beacon.url, 'title')}</script>"
    attack.metadata["widgets"] = WIDGET_STATE
    for student in (ATTACKER, COPYCAT):  # as text: nbformat would refuse the tag's comma
        write_submission(inbox, student, NOTEBOOK_1, json.dumps(attack))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(
            ["--course", str(course), "--timeout", "20", "--budget", "120",
             "grade", NOTEBOOK_1, "--from", str(inbox), "--jobs", "2"]
        )  # fmt: skip
    try:
        yield GradedClass(work, course, beacon, out.getvalue(), code)
    finally:
        beacon.shutdown()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def formgrader(graded_class: GradedClass) -> Iterator[Callable[[str], str]]:
    """A Jupyter server whose root holds the graded course, with nbgrader's formgrader reading
    the course's configuration; yields the URL of a student's submission page (with the login
    token)."""
    work = graded_class.work
    (work / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"load_subconfig({str(REPO_ROOT / 'course' / 'nbgrader_config.py')!r})\n"
        f"c.CourseDirectory.root = {str(graded_class.course)!r}\n"
        f"c.Exchange.root = {str(work / 'exchange')!r}\n"
    )
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable, "-m", "jupyter", "server", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
    ]  # fmt: skip
    if os.geteuid() == 0:
        command.append("--allow-root")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(work / "runtime")}
    log = open(work / "jupyter-server.log", "w")
    server = subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Jupyter server did not start: see {log.name}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)

        def submission_page(student: str) -> str:
            with Gradebook(f"sqlite:///{graded_class.course / 'gradebook.db'}") as gradebook:
                found = gradebook.find_submission_notebook(NOTEBOOK_1, NOTEBOOK_1, student)
            return f"{base}/formgrader/submissions/{found.id}/?token={token}"

        yield submission_page
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@dataclass
class Visit:
    """What a page did while it loaded and settled."""

    url: str
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    title: str = ""
    pwned: int = 0
    images: list[dict] = field(default_factory=list)  # src (its start) and natural width
    student_markdown: int = 0  # markdown cells shown as a student's (html_safety.MARKDOWN_OPEN)

    def to_beacon(self, beacon: str) -> list[str]:
        return [url for url in self.requests if url.startswith(beacon)]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            browser.close()


def _local(url: str) -> bool:
    return url.startswith(("file:", "data:", "about:")) or urlparse(url).hostname == "127.0.0.1"


def visit(browser, url: str) -> Visit:
    """Open `url` in a fresh page, let it settle, and record what it did."""
    seen = Visit(url)
    page = browser.new_page()
    try:
        page.on("dialog", lambda dialog: (seen.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("request", lambda request: seen.requests.append(request.url))
        page.route(
            "**/*", lambda route: route.continue_() if _local(route.request.url) else route.abort()
        )
        page.goto(url, wait_until="load")
        page.wait_for_timeout(SETTLE_MS)
        seen.title = page.title()
        seen.pwned = page.locator("#pwned").count()
        seen.student_markdown = page.locator("div.student-markdown").count()
        seen.images = page.evaluate(
            """() => [...document.images].map(i => ({src: i.src.slice(0, 40),
                                                     width: i.naturalWidth}))"""
        )
    finally:
        page.close()
    return seen


def assert_inert(seen: Visit, beacon: Beacon) -> None:
    ran = {
        "dialogs": seen.dialogs,
        "requests to the beacon": seen.to_beacon(beacon.url),
        "widget manager": [u for u in seen.requests if "jupyter-widgets" in u],
        "title": seen.title if seen.title == PWNED else None,
        "elements added": seen.pwned,
    }
    assert not any(ran.values()), f"{seen.url}: student content ran: {json.dumps(ran)}"


def test_the_class_is_graded(graded_class: GradedClass) -> None:
    """Every student has feedback, and neutralizing their HTML costs the honest one nothing."""
    assert graded_class.exit_code == 0, graded_class.output[-3000:]
    for student in (HONEST, ATTACKER, COPYCAT):
        assert graded_class.feedback(student).is_file(), graded_class.output[-3000:]
    summary = graded_class.course / "reports" / NOTEBOOK_1 / "summary.csv"
    assert f"{HONEST},25.0,25.0," in summary.read_text(), summary.read_text()


def test_feedback_pages_run_nothing_a_student_made(graded_class: GradedClass, browser) -> None:
    for student in (ATTACKER, COPYCAT):
        before = len(graded_class.beacon.paths)
        seen = visit(browser, graded_class.feedback(student).as_uri())
        assert_inert(seen, graded_class.beacon)
        assert graded_class.beacon.paths[before:] == []
        assert all(not i["src"] or i["src"].startswith(DATA_IMAGES) for i in seen.images)
        assert seen.student_markdown == 1


def test_the_honest_feedback_still_shows_its_pictures(graded_class: GradedClass, browser) -> None:
    """The graphs (HTML outputs holding graphviz's SVG) are drawn, as images. (The sandbox's
    matplotlib draws on Agg, so `plt.show()` puts no plot in the autograded notebook.)"""
    seen = visit(browser, graded_class.feedback(HONEST).as_uri())
    assert_inert(seen, graded_class.beacon)
    graphs = [i for i in seen.images if i["src"].startswith("data:image/svg+xml")]
    assert len(graphs) >= 4 and all(i["width"] > 0 for i in graphs), seen.images


def test_the_formgrader_page_runs_nothing_a_student_made(
    graded_class: GradedClass, formgrader: Callable[[str], str], browser
) -> None:
    before = len(graded_class.beacon.paths)
    seen = visit(browser, formgrader(ATTACKER))
    assert seen.title == NOTEBOOK_1, seen.title  # nbgrader's page (and not changed)
    assert_inert(seen, graded_class.beacon)
    assert seen.student_markdown == 1  # theirs; the release's markdown is shown as it is
    graphs = [i for i in seen.images if i["src"].startswith("data:image/svg+xml")]
    assert len(graphs) >= 4 and all(i["width"] > 0 for i in graphs), seen.images
    assert graded_class.beacon.paths[before:] == []


def test_a_notebook_autograded_before_is_inert_in_the_formgrader(
    graded_class: GradedClass, formgrader: Callable[[str], str], browser
) -> None:
    """The formgrader renders with the course's configuration, which runs NeutralizeStudentHTML
    on every page: a notebook autograded before it existed (its live HTML put back here) is
    shown inert too."""
    path = graded_class.course / "autograded" / COPYCAT / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    run = act(graded_class.beacon.url, "old")
    shown = [{"text/html": f"<script>{run}</script>"}, {"application/javascript": run},
             {"text/html": f'<img src=x onerror="{run}">'}]  # fmt: skip
    outputs = [nbformat.v4.new_output("display_data", data=data) for data in shown]
    nb.cells += [
        nbformat.v4.new_code_cell("display(old)", outputs=outputs),
        nbformat.v4.new_markdown_cell(f'<script>{run}</script><img src=x onerror="{run}">'),
    ]
    nbformat.write(nb, path)
    before = len(graded_class.beacon.paths)
    seen = visit(browser, formgrader(COPYCAT))
    assert seen.title == NOTEBOOK_1, seen.title
    assert_inert(seen, graded_class.beacon)
    assert seen.student_markdown == 2  # the one neutralized when graded, and the old one
    assert graded_class.beacon.paths[before:] == []


def test_the_similarity_report_runs_nothing(graded_class: GradedClass, browser) -> None:
    page = graded_class.course / "reports" / NOTEBOOK_1 / "similarity.html"
    assert f"{ATTACKER} and {COPYCAT}" in page.read_text(), page  # their answers are in it
    seen = visit(browser, page.as_uri())
    assert_inert(seen, graded_class.beacon)
