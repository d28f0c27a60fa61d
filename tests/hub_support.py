"""Drive a running `python -m solutions hub` as its users would: the Hub REST API (admin token),
the login form, and each user's server (the contents API, nbgrader's server extension
endpoints that the assignment list and Validate call, and code run in a kernel). Used by
tests/test_hub.py, tests/test_hub_browser.py and benchmarks/bench_hub.py.

Only the standard library, tornado and nbformat (which Jupyter installs) are used.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import course_support
import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = course_support.NOTEBOOK_1


class HubError(RuntimeError):
    """A request to the hub or a user's server failed; the message has the status and body."""


def request(
    url: str, token: str | None = None, method: str = "GET", body: object = None, timeout=120
) -> object:
    """One JSON request (`body` sent as JSON); the decoded answer ({} when empty)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"token {token}"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            text = response.read().decode()
    except urllib.error.HTTPError as error:
        raise HubError(f"{method} {url}: {error.code} {error.read().decode()[:500]}") from None
    return json.loads(text) if text.strip() else {}


@dataclass
class Hub:
    """A hub started by `python -m solutions hub --private` in its own process group."""

    process: subprocess.Popen
    url: str
    state: Path
    passwords: dict[str, str]
    output: list[str] = field(default_factory=list)

    @property
    def admin_token(self) -> str:
        return (self.state / "hub" / "admin-token").read_text().strip()

    def api(self, path: str, method: str = "GET", body: object = None) -> object:
        return request(f"{self.url}hub/api/{path}", self.admin_token, method, body)

    def log_tail(self, lines: int = 60) -> str:
        log = self.state / "hub" / "jupyterhub.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])

    def login(self, name: str, password: str) -> bool:
        """Submit the hub's login form; True when it logs the user in."""
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        opener.open(f"{self.url}hub/login", timeout=30).read()
        xsrf = next(c.value for c in jar if c.name == "_xsrf")
        form = urllib.parse.urlencode({"username": name, "password": password, "_xsrf": xsrf})
        try:
            opener.open(f"{self.url}hub/login?next=", form.encode(), timeout=30).read()
        except urllib.error.HTTPError as error:
            if error.code == 403:
                return False
            raise
        return any(c.name == "jupyterhub-session-id" for c in jar) and any(
            c.name.startswith("jupyterhub-hub-login") for c in jar
        )

    def start_server(self, name: str, seconds: float = 120) -> User:
        """Start `name`'s server through the Hub API and wait until it is ready; a User with
        a token of its own (made through the Hub API)."""
        try:
            self.api(f"users/{name}/server", "POST")
        except HubError as error:
            if "400" not in str(error):  # 400: already running
                raise
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            model = self.api(f"users/{name}")
            if model.get("servers", {}).get("", {}).get("ready"):
                break
            time.sleep(0.5)
        else:
            raise HubError(f"the server of {name} did not start:\n{self.log_tail()}")
        token = self.api(f"users/{name}/tokens", "POST", {"note": "test", "expires_in": 3600})
        return User(name, f"{self.url}user/{name}/", token["token"])

    def stop(self) -> int:
        """Ctrl-C: SIGINT to the hub's process group; its exit status."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
        try:
            return self.process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()


def free_port() -> int:
    """A port whose next two are free too (the hub uses PORT, PORT+1, PORT+2)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port < 65000 and all(_free(port + i) for i in (1, 2)):
            return port
    raise RuntimeError("no three free ports in a row")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A folder in /tmp that the hub's users can enter (pytest's tmp_path is closed to them),
    removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="dyngraph-hub-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def start_hub(
    state: Path, students: int, port: int, seconds: float = 120, python: str = sys.executable
) -> Hub:
    """`python -m solutions hub --private` with the interpreter `python`, run until it prints
    its URL and accounts."""
    command = [python, "-m", "solutions", "hub", "--private", "--students", str(students)]
    command += ["--state", str(state), "--port", str(port)]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    output: list[str] = []
    deadline = time.monotonic() + seconds
    url = None
    passwords = {}
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        output.append(line)
        if line.startswith("JupyterHub for course"):
            url = line.split(": ", 1)[1].strip()
        elif url and line.startswith("  ") and line.split()[0] != "user":
            name, password = line.split()[:2]
            passwords[name] = password
        elif line.startswith("Ctrl-C stops"):
            return Hub(process, url, state, passwords, output)
    process.kill()
    raise HubError("the hub did not start:\n" + "".join(output))


@dataclass
class User:
    """A user's own server, reached through the proxy with the user's token."""

    name: str
    url: str
    token: str

    def get(self, path: str) -> object:
        return request(self.url + path, self.token)

    def post(self, path: str, body: object = None, form: dict | None = None) -> object:
        if form is not None:
            path += "?" + urllib.parse.urlencode(form)
        return request(self.url + path, self.token, "POST", body if body is not None else {})

    def put_notebook(self, path: str, notebook: dict) -> None:
        """Save a notebook with the contents API, as JupyterLab does."""
        request(self.url + f"api/contents/{path}", self.token, "PUT",
                {"type": "notebook", "format": "json", "content": notebook})  # fmt: skip

    def get_notebook(self, path: str) -> dict:
        return self.get(f"api/contents/{path}?type=notebook&content=1")["content"]

    def assignments(self) -> list[dict]:
        """What the assignment list shows (nbgrader's /assignments endpoint)."""
        answer = self.get("assignments?course_id=dyngraph")
        assert answer["success"], answer
        return answer["value"]

    def assignment_action(self, action: str, assignment: str) -> object:
        """fetch, submit or fetch_feedback, as the assignment list's buttons do."""
        return self.post(
            f"assignments/{action}", form={"course_id": "dyngraph", "assignment_id": assignment}
        )

    def validate(self, path: str) -> dict:
        """The Validate button: nbgrader's /assignments/validate endpoint."""
        return self.post("assignments/validate", form={"path": path})

    def run(self, code: str, seconds: float = 600) -> Execution:
        """Run `code` in a new python3 kernel of this server (as this user); the kernel is
        shut down afterwards."""
        kernel = self.post("api/kernels", {"name": "python3"})
        try:
            return asyncio.run(self._execute(kernel["id"], code, seconds))
        finally:
            try:
                request(self.url + f"api/kernels/{kernel['id']}", self.token, "DELETE")
            except HubError:
                pass

    async def _execute(self, kernel: str, code: str, seconds: float) -> Execution:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        ws_url = self.url.replace("http", "ws", 1) + f"api/kernels/{kernel}/channels"
        headers = {"Authorization": f"token {self.token}"}
        connection = await websocket_connect(HTTPRequest(ws_url, headers=headers))
        msg_id = uuid.uuid4().hex
        content = {"code": code, "silent": False, "store_history": False,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}  # fmt: skip
        header = {"msg_id": msg_id, "username": self.name, "session": uuid.uuid4().hex,
                  "msg_type": "execute_request", "version": "5.3"}  # fmt: skip
        connection.write_message(json.dumps({"header": header, "parent_header": {},
            "metadata": {}, "content": content, "channel": "shell", "buffers": []}))  # fmt: skip
        result = Execution()
        deadline = time.monotonic() + seconds
        try:
            while True:
                left = deadline - time.monotonic()
                message = await asyncio.wait_for(connection.read_message(), max(left, 0.1))
                if message is None:
                    result.error = "connection closed"
                    return result
                message = json.loads(message)
                kind = message["header"]["msg_type"]
                if kind == "status" and message["content"]["execution_state"] in (
                    "restarting",
                    "dead",
                ):
                    result.died = True
                    return result
                if message.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if kind == "stream":
                    result.output += message["content"]["text"]
                elif kind == "error":
                    result.error = f"{message['content']['ename']}: {message['content']['evalue']}"
                elif kind == "status" and message["content"]["execution_state"] == "idle":
                    return result
        finally:
            connection.close()


@dataclass
class Execution:
    """What a kernel printed, its error (name: value), and whether it died."""

    output: str = ""
    error: str | None = None
    died: bool = False


def run_as_instructor(instructor: User, command: str) -> str:
    """Run a shell command in a kernel of the instructor's server (as the instructor, from
    the repository); its output. AssertionError when the command fails."""
    code = (
        "import os, subprocess\n"
        f"r = subprocess.run({command!r}, shell=True, capture_output=True, text=True,"
        " cwd=os.environ['DYNGRAPH_REPOSITORY'])\n"
        "print(r.stdout + r.stderr + f'\\nexit status {r.returncode}')\n"
    )
    result = instructor.run(code)
    assert result.error is None and "exit status 0" in result.output, result.output
    return result.output


def write_answers(student: User, answers: dict[str, str]) -> None:
    """Replace answer cells of the fetched notebook and save it, as JupyterLab would."""
    path = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    notebook = nbformat.from_dict(student.get_notebook(path))
    student.put_notebook(path, course_support.with_answers(notebook, answers))
