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


#: The warm-up a run on several workers starts in the background (see pytest_configure).
_WARM_UP = """
import sys, warnings
from pathlib import Path
try:
    import rcmdp_exact as rx
    from rcmdp_exact import domains
    from rcmdp_exact.learners import loop, train
    from rcmdp_exact.suite.certify import warm_up
    import numpy as np
    from rcmdp_exact.uncertainty.weighted_l1 import worst_case_weighted_l1
    m = domains.garnet(3, 2, 2, n_constraints=1, seed=0).replace(horizon=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(m, "adversarial-rcpg", uset=rx.l1_ball(m, 0.1), seed=0, episodes=2,
                    eval_every=1, progress=False)
        loop.policy_table(res.policy_params, res.inputs, 100, m.n_actions)
        warm_up()
        for sparse in (False, True):  # the certified solvers' compiled rows and Krylov
            g = domains.garnet(6, 2, 2, n_constraints=1, seed=0, sparse=sparse)
            for method in ("gmres", "bicgstab", "iteration"):
                rx.evaluate(g, np.full((6, 2), 0.5), method=method)
            for method in ("policy_iteration", "value_iteration", "modified_policy_iteration"):
                rx.solve_mdp(g, method)
        worst_case_weighted_l1(np.full((2, 3), 1 / 3), np.ones((2, 3)), np.full(2, 0.1),
                               np.ones((2, 3)), backend="numba")
finally:
    Path(sys.argv[1]).touch()
"""
#: Environment variable naming the file the warm-up touches when it is done.
_WARM_UP_DONE = "RCMDP_EXACT_TEST_WARM_UP_DONE"


def pytest_configure(config):
    """In the controller of a run on several workers (``-n auto``), compile the package's
    numba code once, in a background process, while the workers run the tests that use
    none (``before_warm_up``): the learners' loop (about 30 s to compile), the bracket's
    compiled steps, the certified solvers' rows and Krylov cycles and the weighted L1
    rows (about 20 s more; compiled by each worker that met them first, they were
    compiled twice).  numba caches what it compiles next to the
    package (``cache=True``), so every worker and every command the tests start loads it
    instead of compiling it again, in parallel, in a new environment.  Every other test
    waits until the warm-up is done (:func:`pytest_runtest_setup`).  A failure of the
    warm-up is left to the tests to report."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    import subprocess
    import sys

    done = Path(tempfile.mkdtemp(prefix="rcmdp_exact-warm-up-")) / "done"
    os.environ[_WARM_UP_DONE] = str(done)  # the workers inherit it
    config._rcmdp_warm_up = subprocess.Popen(
        [sys.executable, "-c", _WARM_UP, str(done)], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)


def pytest_unconfigure(config):
    proc = getattr(config, "_rcmdp_warm_up", None)
    if proc is not None and proc.poll() is None:
        proc.kill()


#: The checkout the tests come from (a test never writes into it).
_CHECKOUT = Path(__file__).resolve().parent.parent
#: Folders of the checkout that Python, numba and environments write on their own.
_NOT_OURS = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache"}


def _checkout_files() -> set:
    """The files of the checkout, outside what Python and tools write on their own."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(_CHECKOUT):
        dirnames[:] = [d for d in dirnames if d not in _NOT_OURS
                       and not d.endswith(".egg-info")]
        out.update(os.path.join(dirpath, f) for f in filenames)
    return out


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):
        session.config._rcmdp_checkout = _checkout_files()


def pytest_sessionfinish(session, exitstatus):
    """The run fails when a test left a new file in the checkout (tests write under
    tmp_path only); under ``--cpu-times`` the tests' CPU seconds are written."""
    _sessionfinish_cpu_times(session)
    before = getattr(session.config, "_rcmdp_checkout", None)
    if before is None:
        return
    new = sorted(_checkout_files() - before)
    if new:
        shown = "\n  ".join(os.path.relpath(f, _CHECKOUT) for f in new[:20])
        print(f"\nthe tests wrote {len(new)} new file(s) into the checkout {_CHECKOUT}:"
              f"\n  {shown}\nwrite under tmp_path instead", flush=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_runtest_setup(item):
    """On a worker, wait for the controller's warm-up before a test not marked
    ``before_warm_up``: until it is done, or 10 minutes after it started (its folder's
    time), so that a warm-up that hangs delays the run once, not every test."""
    import time

    done = os.environ.get(_WARM_UP_DONE)
    if not done or item.get_closest_marker("before_warm_up") is not None:
        return
    path = Path(done)
    try:
        end = path.parent.stat().st_mtime + 600.0
    except OSError:
        return
    while not path.exists() and time.time() < end:
        time.sleep(0.2)


#: Test files whose tests call no numba code (text, names and files of the docs, the
#: vocabulary, the notebooks' format): they run while the warm-up compiles, instead of
#: both workers waiting for it.  A test here that compiled something would only compile
#: it beside the warm-up, not fail.
_BEFORE_WARM_UP_FILES = {"test_docs.py", "test_vocabulary.py", "test_notebooks.py",
                         "test_bad_inputs.py", "test_layering.py"}
#: ... except these tests of those files (the docs' code blocks train learners, and the
#: table of names trains one: run beside the warm-up, each compiled the learners' loop a
#: second time, about 15 s of CPU).
_AFTER_WARM_UP = {"test_code_blocks_run", "test_notebook_runs",
                  "test_every_name_is_where_the_page_says"}


def pytest_report_header(config):
    profile = settings.get_current_profile_name()
    slow = "run" if runs_slow(config) else "left out (python -m pytest -m slow runs them)"
    return (f"hypothesis profile: {profile} ({settings().max_examples} examples by default); "
            f"tests marked slow: {slow}; before a release: HYPOTHESIS_PROFILE=thorough "
            f"python -m pytest (ten times the examples, the deep cases and the slow tests) "
            f"and python -m pytest -m docs")


def runs_slow(config) -> bool:
    """Whether the tests marked ``slow`` run: under ``HYPOTHESIS_PROFILE=thorough`` (the
    run a developer makes before a release), or when ``-m`` names the mark (``python -m
    pytest -m slow`` runs them alone); the everyday test command leaves them out."""
    return (os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
            or "slow" in (config.getoption("markexpr", "") or ""))


def _named_tests(config) -> set:
    """The tests named on the command line (``path::test`` or ``path::test[id]``), as
    node ids: a slow test named there runs (only whole files and folders leave it out)."""
    out = set()
    for arg in config.args:
        path, sep, rest = str(arg).partition("::")
        if sep:
            try:
                rel = Path(path).resolve().relative_to(config.rootpath)
            except ValueError:
                continue
            out.add(f"{rel.as_posix()}::{rest}")
    return out


def pytest_collection_modifyitems(config, items):
    """The tests marked ``slow`` (the deep cases and whole command-line runs of a
    release check, each several seconds of CPU) are left out unless :func:`runs_slow`;
    when they run, they run first, the rest in their order after them: with ``--dist
    worksteal`` a worker that runs out takes queued tests from the other, so starting
    the long ones first leaves only short tests for the end, and both cores finish
    together (a long test started last kept one core busy alone).  The tests that may
    run during the numba warm-up (``before_warm_up``, and those of
    ``_BEFORE_WARM_UP_FILES``) come first of all."""
    if not runs_slow(config):
        named = _named_tests(config)
        slow = [item for item in items if item.get_closest_marker("slow") is not None
                and item.nodeid.split("[")[0] not in named and item.nodeid not in named]
        if slow:
            config.hook.pytest_deselected(items=slow)
            gone = {id(item) for item in slow}
            items[:] = [item for item in items if id(item) not in gone]
    for item in items:
        if (item.path.name in _BEFORE_WARM_UP_FILES
                and item.originalname not in _AFTER_WARM_UP):
            item.add_marker(pytest.mark.before_warm_up)
    items.sort(key=lambda item: (item.get_closest_marker("before_warm_up") is None,
                                 item.get_closest_marker("slow") is None))


@pytest.fixture(autouse=True)
def _working_folder_of_its_own(tmp_path_factory, monkeypatch):
    """Every test runs in an empty folder of its own: a test never reads or writes the
    folder the suite was started from (the README's main job writes ./reproduction there
    before the tests run)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


# --------------------------------------------------------------------------- CPU times
def pytest_addoption(parser):
    parser.addoption(
        "--cpu-times", metavar="FILE", default=None,
        help="write each test's CPU seconds (its process, and the processes it started "
             "and waited for) to FILE, a tab-separated line per test (node id, seconds), "
             "and print the total and the 20 most costly files: how docs/installation.md "
             "measures the test command's CPU time")


def _cpu_seconds() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under ``--cpu-times``: the CPU seconds of each test, setup and teardown included
    (a module's fixture counts in its first test)."""
    if not item.config.getoption("cpu_times"):
        yield
        return
    start = _cpu_seconds()
    yield
    item.config._rcmdp_cpu_times = getattr(item.config, "_rcmdp_cpu_times", [])
    item.config._rcmdp_cpu_times.append((item.nodeid, _cpu_seconds() - start))


def pytest_testnodedown(node, error):
    """The controller of a run on several workers gathers the workers' CPU times."""
    times = getattr(node, "workeroutput", {}).get("rcmdp_cpu_times")
    if times:
        config = node.config
        config._rcmdp_cpu_times = getattr(config, "_rcmdp_cpu_times", []) + \
            [tuple(t) for t in times]


def _write_cpu_times(config) -> None:
    """Write ``--cpu-times FILE`` atomically (in the controller, or in the one process of
    ``-n 0``) and print the total and the 20 files that cost most."""
    from collections import defaultdict

    from rcmdp_exact._io import write_atomic

    times = sorted(getattr(config, "_rcmdp_cpu_times", []), key=lambda t: -t[1])
    text = "".join(f"{nodeid}\t{seconds:.3f}\n" for nodeid, seconds in times)
    write_atomic(config.getoption("cpu_times"), lambda fh: fh.write(text.encode("utf-8")))
    per_file = defaultdict(float)
    for nodeid, seconds in times:
        per_file[nodeid.split("::")[0]] += seconds
    total = sum(per_file.values())
    lines = [f"CPU seconds of the tests: {total:.0f} ({total / 60:.1f} min) in "
             f"{len(times)} tests; the 20 files that cost most:"]
    lines += [f"  {s:8.1f}  {f}" for f, s in sorted(per_file.items(), key=lambda x: -x[1])[:20]]
    config._rcmdp_cpu_summary = lines


def _sessionfinish_cpu_times(session) -> None:
    config = session.config
    if not config.getoption("cpu_times"):
        return
    if hasattr(config, "workeroutput"):  # a worker hands its times to the controller
        config.workeroutput["rcmdp_cpu_times"] = getattr(config, "_rcmdp_cpu_times", [])
    else:
        _write_cpu_times(config)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for line in getattr(config, "_rcmdp_cpu_summary", []):
        terminalreporter.write_line(line)
