"""Notebook 1's release in a real JupyterLab, driven by headless Chromium through Playwright.

Starts JupyterLab on 127.0.0.1 (random port, a token) in a temporary folder holding the release
of notebook 1, opens it, runs all cells and checks that they ran and that the nbgrader
extension's Validate button is in the notebook toolbar. Uses Debian's chromium
(`apt-get install -y chromium`, done by .ci/run); skipped where it or Playwright is missing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
NOTEBOOK = "graph_construction.ipynb"
START_TIMEOUT_S = 60
RUN_ALL_TIMEOUT_S = 120

playwright_sync = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install playwright)"
)
pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(), reason=f"chromium not found at {CHROMIUM} (apt-get install chromium)"
)


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
def jupyterlab(released_course: Path, tmp_path: Path):
    """A JupyterLab server whose root folder holds the release of notebook 1; yields its URL."""
    workdir = tmp_path / "student"
    workdir.mkdir()
    shutil.copy(released_course / "release" / "graph_construction" / NOTEBOOK, workdir)
    # The student's nbgrader config: an exchange they can write (else the server logs errors).
    (workdir / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.Exchange.root = {str(tmp_path / 'exchange')!r}\n"
    )
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
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
        yield f"{base}/lab/tree/{NOTEBOOK}?token={token}"
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
    """Each code cell of the open notebook: its execution count and output types."""
    return page.evaluate(
        """() => {
            const panel = window.jupyterapp.shell.currentWidget;
            return panel.content.model.sharedModel.cells
                .filter(cell => cell.cell_type === 'code')
                .map(cell => ({
                    count: cell.execution_count,
                    outputs: cell.outputs.map(o => o.output_type),
                    ename: (cell.outputs.find(o => o.output_type === 'error') || {}).ename || null,
                }));
        }"""
    )


def test_release_runs_in_jupyterlab_with_validate_button(jupyterlab: str) -> None:
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page()
            page.goto(jupyterlab)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=START_TIMEOUT_S * 1000)
            # Run All issued before the kernel is connected does nothing: wait for an idle kernel.
            page.wait_for_function(KERNEL_IDLE, timeout=START_TIMEOUT_S * 1000)
            validate = page.locator(".jp-NotebookPanel-toolbar").get_by_role(
                "button", name="Validate"
            )
            assert validate.count() == 1, "the nbgrader Validate button is not in the toolbar"

            # Fire and forget: awaiting the command's promise would block until the run ends.
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            deadline = time.monotonic() + RUN_ALL_TIMEOUT_S
            states = _cell_states(page)
            # Run All stops at the first error: the first blank answer raises NotImplementedError.
            while not any(s["ename"] for s in states) and time.monotonic() < deadline:
                page.wait_for_timeout(500)
                states = _cell_states(page)
            first_error = next((i for i, s in enumerate(states) if s["ename"]), None)
            assert first_error is not None, f"no cell finished within {RUN_ALL_TIMEOUT_S} s"
            assert states[first_error]["ename"] == "NotImplementedError", states[first_error]
            before = states[:first_error]
            assert before and all(s["count"] is not None for s in before), before
            assert any("stream" in s["outputs"] for s in before), "the demo cells printed nothing"
            assert any(
                "display_data" in s["outputs"] or "execute_result" in s["outputs"] for s in before
            ), "no picture or value was displayed before the first exercise"
        finally:
            browser.close()
