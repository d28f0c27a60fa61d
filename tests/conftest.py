"""Shared pytest setup: hypothesis profiles and the `cuda` marker.

Hypothesis profiles (pick one with the environment variable HYPOTHESIS_PROFILE):
- `default`: about 25 examples per test, derandomized, so CI runs the same cases every time;
- `thorough`: many more examples, random each run, for hunting bugs locally.

Tests marked `@pytest.mark.cuda` are skipped when no CUDA device is present.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch
from hypothesis import HealthCheck, settings

# The test modules import the shared helpers with `import oracle`, whatever pytest's import mode.
sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile(
    "default",
    max_examples=25,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def released_course(tmp_path_factory: pytest.TempPathFactory):
    """A course folder with notebook 1 released (built once per test session; copy before
    changing it). Skips while notebook 1 or its graders are missing."""
    import course_support

    if not course_support.notebook_1_present():
        pytest.skip("notebook 1 (course/source/graph_construction) or its graders are missing")
    root = tmp_path_factory.mktemp("course") / "course"
    return course_support.build_release(root, [course_support.NOTEBOOK_1])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--classes",
        action="store_true",
        help="also the slow course checks: grade a class of every assignment, run every release "
        "in JupyterLab, execute every source notebook for its pictures (minutes)",
    )
    parser.addoption(
        "--hub", action="store_true", help="also run a class through a real JupyterHub (minutes)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_cuda = pytest.mark.skip(reason="CUDA not available")
    skip_classes = pytest.mark.skip(
        reason="a slow course check (whole classes, browsers): --classes"
    )
    skip_hub = pytest.mark.skip(reason="a class through a real JupyterHub: --hub")
    for item in items:
        if "cuda" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip_cuda)
        if "classes" in item.keywords and not config.getoption("--classes"):
            item.add_marker(skip_classes)
        if "hub" in item.keywords and not config.getoption("--hub"):
            item.add_marker(skip_hub)
