"""pytest setup for the course notebooks: `python3 -m pytest` runs course/source with nbval.

Collecting course/source (it is in `testpaths`) turns on nbval in lax mode (only cells marked
`# NBVAL_CHECK_OUTPUT` in their source, tagged `nbval-check-output` when built, have their
outputs compared), in the current Python environment, with
course/nbval_sanitize.cfg removing memory addresses and graph node ids. Options given on the
command line win. The notebooks' kernels get the repository root on PYTHONPATH, so the hidden
test cells can import the graders from solutions/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

COURSE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = COURSE_ROOT.parent
SANITIZE_FILE = COURSE_ROOT / "nbval_sanitize.cfg"

_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
if str(REPO_ROOT) not in _paths:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *_paths])

collect_ignore_glob = [
    "release/*",
    "submitted/*",
    "autograded/*",
    "feedback/*",
    "exchange/*",
    "downloaded/*",
]


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("nbval"):
        return
    option = config.option
    if not (option.nbval or option.nbval_lax):
        option.nbval_lax = True
    if not option.nbval_kernel_name:
        option.nbval_current_env = True
    if option.nbval_sanitize_with is None:
        option.nbval_sanitize_with = str(SANITIZE_FILE)
