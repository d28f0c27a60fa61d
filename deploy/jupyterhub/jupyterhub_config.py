"""JupyterHub configuration: this course served to a class on one machine.

Started by `python -m solutions hub` (solutions/instructor/hub.py), which prepares the state
folder and passes it in DYNGRAPH_HUB_STATE (with DYNGRAPH_HUB_IP and DYNGRAPH_HUB_PORT):

    <state>/hub/accounts.json      who may log in: {"users": {name: {"password", "role"}}} (0600)
    <state>/hub/admin-token        the API token of the `dyngraph-admin` service (0600)
    <state>/config/<role>/         the Jupyter configuration of each role's servers
    <state>/exchange/              nbgrader's exchange, shared by everyone (1777)
    <state>/home/<user>/           each user's home (0700, that user's)
    <state>/home/instructor/course/  the nbgrader course folder, gradebook included

Every user runs as their own Unix user (LocalProcessSpawner): file permissions keep students
apart. A student's server also runs in a private mount namespace in which the repository shows
only minitorch/ and the Python it runs on if that lives in the clone (an empty read-only tmpfs
hides solutions/, course/, .git and the rest; solutions/instructor/student_server.py), so a
student's kernel cannot read the graders whatever the repository's permissions.

Per-student limits (RoleSpawner below): what the kernel enforces here, and what it does not.
- Enforced, for every process of a student (server, kernels, Validate's kernel, a terminal):
  `student_address_space`, the address space of each process (RLIMIT_AS: a runaway
  allocation gets MemoryError instead of waking the machine's OOM killer), and
  `student_processes`, the processes and threads of that student's Unix user all together
  (RLIMIT_NPROC: a fork bomb stops there).
- Not enforced: a total memory per student (each of a student's processes has its own cap),
  a CPU share, disk use in the home. JupyterHub's `Spawner.mem_limit`/`cpu_limit` are only
  passed to the server as MEM_LIMIT/CPU_LIMIT by LocalProcessSpawner, so they are not set
  here. SystemdSpawner (systemd-run with MemoryMax/CPUQuota) and KubeSpawner
  (deploy/kubernetes/values.yaml: 3G, 2 CPUs per student) enforce both.

Institution login: replace the two `authenticator_class` lines below, e.g. for OAuth
(`pip install oauthenticator`):

    c.JupyterHub.authenticator_class = "generic-oauth"   # or "github", "azuread", ...
    c.GenericOAuthenticator.client_id = "..."; c.GenericOAuthenticator.client_secret = "..."
    c.Authenticator.allowed_users = {...}; c.Authenticator.admin_users = set()
    c.RoleSpawner.instructors = {"their-login"}

or for an LMS (`pip install jupyterhub-ltiauthenticator`): `c.JupyterHub.authenticator_class =
"ltiauthenticator.lti13.authenticator.LTI13Authenticator"` with its issuer, client id and key
URLs. Unix accounts for those names must exist (or `c.LocalAuthenticator.create_system_users`).
"""

from __future__ import annotations

import hmac
import json
import os
import sys
from pathlib import Path

from jupyterhub.auth import Authenticator
from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Integer, Set, Unicode

REPOSITORY = Path(__file__).resolve().parents[2]
# solutions/ is not an installed package: import it from this clone, which then leaves the
# import path (it is not a folder the students' servers import from).
sys.path.insert(0, str(REPOSITORY))
from solutions.instructor.python_view import command_path  # noqa: E402
from solutions.instructor.student_server import (  # noqa: E402
    ADDRESS_SPACE,
    PROCESSES,
    enter_student_view,
    limit_student,
    shown_in_repository,
)

sys.path.remove(str(REPOSITORY))

c = get_config()  # noqa: F821 (provided by traitlets when it reads this file)

STATE = Path(os.environ.get("DYNGRAPH_HUB_STATE", "/srv/dyngraph-hub"))
IP = os.environ.get("DYNGRAPH_HUB_IP", "127.0.0.1")
PORT = int(os.environ.get("DYNGRAPH_HUB_PORT", "8000"))
ACCOUNTS = json.loads((STATE / "hub" / "accounts.json").read_text())["users"]


class ClassListAuthenticator(Authenticator):
    """Test login for the demo and the tests: the names and passwords of accounts.json."""

    async def authenticate(self, handler, data: dict) -> str | None:
        account = ACCOUNTS.get(data.get("username", ""))
        password = data.get("password", "").encode()
        if account and hmac.compare_digest(account["password"].encode(), password):
            return data["username"]
        return None


# Institution login: change these two lines (see the docstring).
c.JupyterHub.authenticator_class = ClassListAuthenticator
c.Authenticator.allowed_users = set(ACCOUNTS)


class RoleSpawner(LocalProcessSpawner):
    """LocalProcessSpawner with the course's two roles: instructors get the formgrader and
    the repository; students get the assignment list and Validate, and see only minitorch/
    of the repository (and the Python, when it is a venv in the clone). Each role's Jupyter
    configuration is <state>/config/<role>/."""

    instructors = Set(Unicode(), config=True, help="user names with the instructor role")
    student_address_space = Integer(
        0, config=True, help="bytes of address space of each process of a student (0: no cap)"
    )
    student_processes = Integer(
        0, config=True, help="processes and threads of a student, all together (0: no cap)"
    )

    def role(self) -> str:
        return "instructor" if self.user.name in self.instructors else "student"

    def get_env(self) -> dict:
        env = super().get_env()
        env["PATH"] = command_path(env.get("PATH", "/usr/bin:/bin"))
        env["JUPYTER_CONFIG_PATH"] = str(STATE / "config" / self.role())
        env.pop("JUPYTER_CONFIG_DIR", None)
        if self.role() == "instructor":  # `python -m solutions` from a terminal finds the repo
            env["DYNGRAPH_REPOSITORY"] = str(REPOSITORY)
        return env

    def make_preexec_fn(self, name: str):
        become_user = super().make_preexec_fn(name)
        if self.role() == "instructor":
            return become_user

        address_space, processes = self.student_address_space, self.student_processes
        shown = shown_in_repository(REPOSITORY)

        def preexec() -> None:
            enter_student_view(REPOSITORY, shown)
            limit_student(address_space, processes)
            become_user()

        return preexec


c.JupyterHub.spawner_class = RoleSpawner
c.RoleSpawner.instructors = {name for name, a in ACCOUNTS.items() if a["role"] == "instructor"}
# solutions/instructor/student_server.py says why these two values.
c.RoleSpawner.student_address_space = ADDRESS_SPACE
c.RoleSpawner.student_processes = PROCESSES
# `python -m jupyterhub.singleuser`: the interpreter running the hub, not a script's shebang.
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.env_keep = ["PATH", "PYTHONPATH", "LANG", "LC_ALL"]

# One machine: the proxy listens on PORT, the hub on PORT + 1, the proxy's API on PORT + 2.
c.JupyterHub.bind_url = f"http://{IP}:{PORT}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{PORT + 1}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 2}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "hub" / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'hub' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "hub" / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # Ctrl-C stops every user's server; their files stay

# The API token of the instructor's tooling and the tests: start and stop servers, make
# tokens for users. It lives in <state>/hub/admin-token, readable by root only.
c.JupyterHub.services = [
    {"name": "dyngraph-admin", "api_token": (STATE / "hub" / "admin-token").read_text().strip()}
]
c.JupyterHub.load_roles = [
    {
        "name": "dyngraph-admin",
        "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "list:users"],
        "services": ["dyngraph-admin"],
    }
]
