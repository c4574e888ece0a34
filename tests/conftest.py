"""Shared test set-up: hypothesis profiles.

The ``ci`` profile is deterministic (derandomized, no deadline) and is loaded whenever
the ``CI`` environment variable is set, or explicitly with ``HYPOTHESIS_PROFILE=ci``.
"""

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# hypothesis keeps its example database and caches in ./.hypothesis of the folder the
# suite starts from, the user's; a folder under the system's temporary one instead
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "rcmdp_exact-hypothesis")

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
# 10 x the default 60; tests with their own max_examples scale by helpers.examples
settings.register_profile("thorough", deadline=None, max_examples=600)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_collection_modifyitems(config, items):
    """The tests marked ``slow`` (each tens of seconds: notebooks, the site, whole
    command-line runs) run first, the rest in their order after them: with ``--dist
    worksteal`` a worker that runs out takes queued tests from the other, so starting
    the long ones first leaves only short tests for the end, and both cores finish
    together (a long test started last kept one core busy alone)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _working_folder_of_its_own(tmp_path_factory, monkeypatch):
    """Every test runs in an empty folder of its own: a test never reads or writes the
    folder the suite was started from (the README's main job writes ./reproduction there
    before the tests run)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
