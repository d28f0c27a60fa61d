"""A student's part of a class on JupyterHub, through the browser (behind `--hub`).

Starts `python -m solutions hub --private` with one student (as tests/test_hub.py does), has
the instructor release notebook 1 to the exchange, then drives headless Chromium through
Playwright as the student would: the hub's login page, JupyterLab, nbgrader's Assignments tab
(Nbgrader menu), Fetch, the notebook opened from the list, the Validate button of its toolbar,
and Submit. The answers are the reference's, saved with the contents API as if the student had
typed them. Screenshots of each step go to `<tmp_path>/screenshots/` (the test prints where:
pytest keeps the last three runs under /tmp/pytest-of-<user>/). Uses Debian's chromium
(`apt-get install -y chromium`); skipped where it or Playwright is missing, or without root.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import course_support
import nbformat
import pytest
from hub_support import (
    ASSIGNMENT,
    free_port,
    run_as_instructor,
    scratch_folder,
    start_hub,
    write_answers,
)

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
SPAWN_S = 240  # login to a running JupyterLab on a loaded 2-core machine
STEP_S = 120  # one click's answer (fetch, submit, opening the notebook)
VALIDATE_S = 360  # Validate runs the whole notebook in the student's server

playwright_sync = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install playwright)"
)
pytestmark = [
    pytest.mark.hub,
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason=f"chromium not found at {CHROMIUM} (apt-get install chromium)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("jupyterhub") is None
        or shutil.which("configurable-http-proxy") is None,
        reason="needs JupyterHub (pip install -e '.[hub]') and configurable-http-proxy",
    ),
]


class Screenshots:
    """Numbered screenshots of a page: 01-login.png, 02-jupyterlab.png, ..."""

    def __init__(self, page, folder: Path) -> None:
        self.page, self.folder, self.count = page, folder, 0
        folder.mkdir(parents=True, exist_ok=True)

    def take(self, name: str) -> None:
        self.count += 1
        self.page.screenshot(path=str(self.folder / f"{self.count:02d}-{name}.png"))


def test_a_student_fetches_validates_and_submits_in_the_browser(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the hub test runs as root (it makes a Unix user per student)")
    if not course_support.notebook_1_present():
        pytest.skip("notebook 1 or its graders are missing")
    screenshots = tmp_path / "screenshots"
    print(f"screenshots in {screenshots}")
    source = nbformat.read(
        course_support.COURSE_SOURCE / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4
    )
    with scratch_folder() as scratch:
        state = scratch / "state"
        hub = start_hub(state, students=1, port=free_port())
        try:
            instructor = hub.start_server("instructor")
            course = state / "home" / "instructor" / "course"
            command = f"python -m solutions --course {course} release {ASSIGNMENT} --exchange"
            run_as_instructor(instructor, command)
            hub.api("users/instructor/server", "DELETE")  # its memory is the student's now

            def save_answers() -> None:
                student = hub.start_server("student1")  # running: only a token is made
                write_answers(student, course_support.reference_answers(source))

            drive_the_browser(hub.url, hub.passwords["student1"], save_answers, screenshots)
            inbound = sorted(
                p.name for p in (state / "exchange" / "dyngraph" / "inbound").iterdir()
            )
            assert len(inbound) == 1 and inbound[0].startswith(f"student1+{ASSIGNMENT}+"), inbound
        except BaseException:
            print(hub.log_tail())
            raise
        finally:
            assert hub.stop() == 0, hub.log_tail()


def drive_the_browser(url: str, password: str, save_answers, screenshots: Path) -> None:
    """Log in as student1, fetch, open, validate and submit through JupyterLab's UI."""
    expect = playwright_sync.expect
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(STEP_S * 1000)
            shot = Screenshots(page, screenshots).take

            # The hub's login page; the hub then starts the server and opens JupyterLab.
            page.goto(f"{url}hub/login")
            page.fill("#username_input", "student1")
            page.fill("#password_input", password)
            shot("login")
            page.click("#login_submit")
            menu = page.locator("#jp-menu-panel .lm-MenuBar-itemLabel", has_text="Nbgrader")
            expect(menu).to_be_visible(timeout=SPAWN_S * 1000)
            expect(page.locator(".jp-LauncherCard").first).to_be_visible()
            shot("jupyterlab")

            # nbgrader's Assignments tab lists the release; Fetch copies it into the home.
            menu.click()
            page.click('#jp-mainmenu-nbgrader li[data-command="nbgrader:open-assignment-list"]')
            released = page.locator("#released_assignments_list > .list_item")
            expect(released).to_have_count(1)
            expect(released.first.locator(".item_name")).to_have_text(ASSIGNMENT)
            shot("assignment-list")
            released.first.locator(".item_status button", has_text="Fetch").click()
            fetched = page.locator("#fetched_assignments_list > .list_item")
            expect(fetched).to_have_count(1)
            expect(page.locator("#released_assignments_list > .list_item")).to_have_count(0)
            shot("fetched")

            # The student's work (typed in a real class), then the notebook opened from the list.
            save_answers()
            page.locator("#fetched_assignments_list a", has_text=ASSIGNMENT).first.click()
            notebook_link = page.locator(
                "#fetched_assignments_list .list_item .item_name a", has_text=ASSIGNMENT
            ).last
            expect(notebook_link).to_be_visible()
            notebook_link.click()
            panel = page.locator(".jp-NotebookPanel:visible")
            expect(panel.locator(".jp-Cell").first).to_be_visible()
            expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle")  # its kernel
            shot("notebook")

            # Validate (the notebook's toolbar) saves it and runs it in the student's server.
            panel.locator(".jp-NotebookPanel-toolbar").get_by_role(
                "button", name="Validate"
            ).click()
            dialog = page.locator(".nbgrader-SuccessDialog, .nbgrader-ErrorDialog")
            expect(dialog).to_have_count(1, timeout=VALIDATE_S * 1000)
            shot("validated")
            expect(page.locator(".nbgrader-SuccessDialog")).to_have_count(1)
            expect(dialog).to_contain_text("Success! Your notebook passes all the tests.")
            dialog.locator("button.jp-Dialog-button").first.click()
            expect(dialog).to_have_count(0)

            # Back in the Assignments tab: Submit, and the submission is listed.
            page.locator(".lm-TabBar-tab", has_text="Assignments").click()
            fetched.first.locator(".item_status button", has_text="Submit").click()
            submitted = page.locator("#submitted_assignments_list > .list_item")
            expect(submitted).to_have_count(1)
            expect(submitted.first.locator(".item_name").first).to_have_text(ASSIGNMENT)
            shot("submitted")
        except BaseException:
            try:
                shot("failure")
            except Exception:
                pass
            raise
        finally:
            browser.close()
