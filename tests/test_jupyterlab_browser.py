"""Every release notebook in a real JupyterLab, driven by headless Chromium through Playwright.

For each assignment: starts JupyterLab on 127.0.0.1 (random port, a token) in a temporary folder
holding the assignment's release (`release_notebook` in test_release_notebooks.py), opens it,
checks that the nbgrader extension's Validate button is in the notebook toolbar, runs all cells
and waits until every code cell has run: on a blank release "Run All" must reach the last cell
(issue 16). No cell may raise, each exercise's test cell says that the exercise is not written
yet, and the demos print text and display pictures.

Screenshots: after the run, a full-page screenshot of the whole notebook is saved as
`<assignment>.png` in the folder named by the environment variable NOTEBOOK_SCREENSHOTS (CI keeps
it as an artifact), or else in the test's own `tmp_path` (pytest prints where on failure).

Uses Debian's chromium (`apt-get install -y chromium`, done by .ci/run); skipped where it or
Playwright is missing. Each notebook takes 20-35 s (the six: 3 minutes on 2 cores), so notebook
1 runs in the default suite and the other five with `--classes`.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from course_notebooks import ASSIGNMENTS
from test_release_notebooks import (
    NOT_WRITTEN_YET,
    exercise_number,
    release_notebook,  # noqa: F401 (the fixture, used by name)
)

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
START_TIMEOUT_S = 60
RUN_ALL_TIMEOUT_S = 240
VIEWPORT_WIDTH = 1280
MAX_SCREENSHOT_HEIGHT = 60_000  # pixels; a longer notebook is cut at the bottom

playwright_sync = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install playwright)"
)
pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(), reason=f"chromium not found at {CHROMIUM} (apt-get install chromium)"
)

IN_DEFAULT_SUITE = "graph_construction"
NOTEBOOKS = [
    pytest.param(a, marks=() if a == IN_DEFAULT_SUITE else pytest.mark.classes) for a in ASSIGNMENTS
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_serving(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with status {server.returncode} (see its log)")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {START_TIMEOUT_S} s")


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """The folder the screenshots go to: $NOTEBOOK_SCREENSHOTS, else the test's tmp_path."""
    folder = Path(os.environ.get("NOTEBOOK_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def jupyterlab(
    assignment: str,
    release_notebook: Callable[[str], Path],  # noqa: F811 (the imported fixture)
    tmp_path: Path,
) -> Iterator[str]:
    """A JupyterLab server whose root folder holds the release of `assignment`; yields the URL
    that opens its notebook."""
    workdir = tmp_path / "student"
    workdir.mkdir()
    notebook = shutil.copy(release_notebook(assignment), workdir)
    # The student's nbgrader config: an exchange they can write (else the server logs errors).
    (workdir / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.Exchange.root = {str(tmp_path / 'exchange')!r}\n"
    )
    # Every cell stays rendered (no windowing), so that a screenshot shows the whole notebook,
    # and no "get notified about Jupyter news?" toast covers its end.
    settings = tmp_path / "settings" / "@jupyterlab"
    for plugin, values in [
        ("notebook-extension/tracker", {"windowingMode": "none"}),
        ("apputils-extension/notification", {"fetchNews": "false"}),
    ]:
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    command = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={workdir}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI runs as root
    log = open(tmp_path / "jupyterlab.log", "w")
    server = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_serving(f"{base}/api/status?token={token}", server)
        yield f"{base}/lab/tree/{Path(notebook).name}?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


KERNEL_IDLE = """() => {
    const kernel = window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel;
    return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""


def _cell_states(page) -> list[dict]:
    """Each code cell of the open notebook: its execution count, output types, the name of the
    error it raised, what it printed, and its nbgrader grade_id if it is a test cell."""
    return page.evaluate(
        """() => {
            const panel = window.jupyterapp.shell.currentWidget;
            return panel.content.model.sharedModel.cells
                .filter(cell => cell.cell_type === 'code')
                .map(cell => {
                    const nbgrader = cell.getMetadata('nbgrader') || {};
                    return {
                        count: cell.execution_count,
                        outputs: cell.outputs.map(o => o.output_type),
                        ename: (cell.outputs.find(o => o.output_type === 'error') || {}).ename
                            || null,
                        text: cell.outputs.filter(o => o.output_type === 'stream')
                            .map(o => [].concat(o.text).join('')).join(''),
                        test: nbgrader.grade && !nbgrader.solution ? nbgrader.grade_id : null,
                    };
                });
        }"""
    )


def _run_all(page) -> list[dict]:
    """Run all cells; return the cells' states once every code cell has run and the kernel is
    idle, or as soon as a cell raised (Run All stops there)."""
    # Fire and forget: awaiting the command's promise would block until the run ends.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    deadline = time.monotonic() + RUN_ALL_TIMEOUT_S
    while time.monotonic() < deadline:
        page.wait_for_timeout(500)
        states = _cell_states(page)
        if any(s["ename"] for s in states):
            return states
        if all(s["count"] is not None for s in states) and page.evaluate(KERNEL_IDLE):
            return states
    ran = sum(s["count"] is not None for s in states)
    raise AssertionError(f"{ran} of {len(states)} code cells ran in {RUN_ALL_TIMEOUT_S} s")


def _screenshot(page, path: Path) -> None:
    """A screenshot of the whole notebook: the window made as tall as the notebook first (the
    notebook scrolls inside JupyterLab's window, so the page itself is one window high)."""
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # hide the file browser
    page.wait_for_timeout(500)  # the cells reflow to the new width
    height = page.evaluate(
        """() => {
            const notebook = window.jupyterapp.shell.currentWidget.content.node;
            const scroller = notebook.querySelector('.jp-WindowedPanel-outer');
            const cells = notebook.querySelector('.jp-WindowedPanel-inner');
            scroller.scrollTop = 0;  // Run All scrolled down to the last cell it ran
            return Math.ceil(scroller.getBoundingClientRect().top + cells.scrollHeight) + 20;
        }"""
    )
    page.set_viewport_size({"width": VIEWPORT_WIDTH, "height": min(height, MAX_SCREENSHOT_HEIGHT)})
    page.wait_for_timeout(1000)  # let the layout settle and the pictures paint
    page.screenshot(path=str(path), full_page=True)


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_run_all_reaches_the_end_of_the_release_in_jupyterlab(
    assignment: str, jupyterlab: str, screenshots: Path
) -> None:
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport={"width": VIEWPORT_WIDTH, "height": 900})
            page.goto(jupyterlab)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=START_TIMEOUT_S * 1000)
            # Run All issued before the kernel is connected does nothing: wait for an idle kernel.
            page.wait_for_function(KERNEL_IDLE, timeout=START_TIMEOUT_S * 1000)
            validate = page.locator(".jp-NotebookPanel-toolbar").get_by_role(
                "button", name="Validate"
            )
            assert validate.count() == 1, "the nbgrader Validate button is not in the toolbar"

            states = _run_all(page)
            _screenshot(page, screenshots / f"{assignment}.png")

            raised = [(i, s["ename"]) for i, s in enumerate(states) if s["ename"]]
            assert not raised, f"Run All stopped at code cell {raised[0][0]}: {raised[0][1]}"
            for state in states:
                if state["test"]:
                    numbers = [int(n) for n in NOT_WRITTEN_YET.findall(state["text"])]
                    expected = exercise_number(state["test"])
                    assert numbers == [expected], (state["test"], state["text"])
            assert any("stream" in s["outputs"] for s in states), "the demo cells printed nothing"
            assert any(
                "display_data" in s["outputs"] or "execute_result" in s["outputs"] for s in states
            ), "no picture or value was displayed"
        finally:
            browser.close()
