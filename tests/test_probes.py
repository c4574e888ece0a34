"""Probes of the command line and the results store: every bad input, interrupt, full
disk and damaged store is answered in one line.

A command that does work runs in a fresh process (``sys.executable -m rcmdp_exact ...``,
working directory ``tmp_path``); interrupts are real SIGINTs sent to that process.  A
refusal (exit status 2 before any work) runs the same ``main`` in this process
(``helpers.refused``), without a new interpreter's two seconds of imports.  The
reproduction runs use the deterministic stand-in trainer of
``test_experiments_standin.py`` (``RCMDP_STANDIN_SLEEP`` slows it down where a command
must still be running).  Waits poll with a deadline; nothing sleeps blindly.

Guards: a probe of a limit that today's code lacks would start the unbounded work (a
pool of 100,000 processes, 10^20 episodes).  Such probes add an argument that code
without the limit refuses right after parsing (an output folder that does not exist, a
negative tolerance or time limit), so that they fail fast, with another message, on
code without the limit, and are answered by the limit first on code with it (argparse
checks every value while parsing, before any command runs).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import HANG_GUARD, reference_store, refused

TESTS_DIR = str(Path(__file__).resolve().parent)
LABEL = "test_experiments_standin:standin_train"
#: A small reproduction with the stand-in: Safe Navigation 1 (test 1A), PG and CPG, two
#: seeds; 4 runs and 3 ground-truth jobs.
SMALL = ["--tests", "1A", "--algorithms", "pg,cpg", "--seeds", "2", "--episodes", "2",
         "--n-draws", "1", "--bracket-seeds", "1", "--trainer", LABEL, "--no-progress"]


# --------------------------------------------------------------------------- helpers
def _env(extra_path=(), **variables) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, extra_path), TESTS_DIR,
                                         env.get("PYTHONPATH", "")])
    env.pop("RCMDP_STANDIN_SLEEP", None)
    env.update({k: str(v) for k, v in variables.items()})
    return env


def _limits():
    """In the child: at most 4 GB of address space, so that a probe that code without
    a limit would let grow fails instead of filling the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def rcmdp(cwd, *args, env=None, preexec_fn=_limits):
    """``python -m rcmdp_exact ARGS`` in a fresh process in ``cwd``."""
    return subprocess.run([sys.executable, "-m", "rcmdp_exact", *map(str, args)], cwd=cwd,
                          env=env or _env(), capture_output=True, text=True,
                          timeout=HANG_GUARD, preexec_fn=preexec_fn)


def one_line(proc, code=2) -> str:
    """The single line of standard error of a finished command with exit status
    ``code`` (no traceback, no usage block)."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def has(line: str, *facts: str) -> None:
    for fact in facts:
        assert fact in line, (fact, line)


def _n(db, table="runs") -> int:
    if not Path(db).exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=HANG_GUARD)
        try:
            return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _default_sigint() -> None:
    """Ctrl-C's default action in the child (an ignored SIGINT would be inherited from a
    shell that started the tests in the background), and the memory limit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _limits()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait(condition, proc, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        assert proc.poll() is None, f"the command ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"no {what} within {HANG_GUARD} s"
        time.sleep(0.05)


def _interrupt(args, cwd, ready, env=None):
    """Start ``rcmdp ARGS``, wait until ``ready(proc)``, send SIGINT to that process
    (only: as ``kill -INT PID``), and return the finished process."""
    proc = subprocess.Popen([sys.executable, "-m", "rcmdp_exact", *map(str, args)],
                            cwd=cwd, env=env or _env(), preexec_fn=_default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _wait(lambda: ready(proc), proc, "the moment to interrupt")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:  # pragma: no cover - cleanup of a hung command
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _busy(seconds: float):
    """Ready once the process has used ``seconds`` of CPU time: past its imports and
    inside its work, whatever the machine's load."""
    return lambda proc: _cpu_seconds(proc.pid) >= seconds


@pytest.fixture(scope="module")
def reference():
    """A small store and its report, written by ``rcmdp reproduce`` with the stand-in
    (once per process: the hostile tables copy the same one)."""
    return reference_store([*SMALL, "--workers", "1"])


@pytest.fixture
def store(reference, tmp_path) -> Path:
    """A copy of the reference store in ``tmp_path/out/runs.sqlite``."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(reference / "runs.sqlite", out / "runs.sqlite")
    return out / "runs.sqlite"


def _dump(db) -> dict:
    """Every row of a store but the measured seconds."""
    from test_experiments_sweeps import _dump as dump

    return dump(db)


# --------------------------------------------------------------------------- output suffix
def test_train_refuses_an_output_with_another_suffix(tmp_path):
    line = one_line(refused(tmp_path, "train", "nav1", "pg", "--out", "a.json"))
    has(line, "'a.json'", "'.json'", ".npz", "--out")
    assert not any(tmp_path.iterdir())


def test_train_adds_the_npz_suffix(tmp_path):
    from rcmdp_exact.learners import load

    proc = rcmdp(tmp_path, "train", "inventory", "pg", "--episodes", "2", "--eval-every", "1",
                 "--no-bracket", "--no-progress", "--out", "result")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.npz"]
    assert "wrote result.npz" in proc.stdout
    res = load(tmp_path / "result")  # with or without the suffix
    assert res.algorithm == "pg" and res.episodes == 2
    line = one_line(refused(tmp_path, "train", "inventory", "pg", "--out", "result"))
    has(line, "result.npz", "--force")  # the file it would write exists


# --------------------------------------------------------------------------- limits
@pytest.mark.parametrize("args, limit", [
    (["train", "nav1", "pg", "--episodes", "99999999999999999999", "--out", "no/x"], "10^7"),
    (["train", "nav1", "pg", "--steps", "10" * 10, "--out", "no/x"], "10^10"),
    (["train", "nav1", "pg", "--eval-every", "10" * 10, "--out", "no/x"], "10^7"),
    (["reproduce", "--seeds", "99999999999999999999999", "--db", "no/x.sqlite"], "10^4"),
    (["reproduce", "--episodes", "99999999999999999999", "--db", "no/x.sqlite"], "10^7"),
    (["reproduce", "--n-draws", "10001", "--db", "no/x.sqlite"], "10^4"),
    (["reproduce", "--sampled-episodes", "100001", "--db", "no/x.sqlite"], "10^5"),
    (["reproduce", "--eval-every", "10" * 10, "--db", "no/x.sqlite"], "10^7"),
    (["reproduce", "--bracket-seeds", "10001", "--db", "no/x.sqlite"], "10^4"),
    (["verify", "--episodes", "99999999999999999999", "--tol", "-1"], "10^7"),
    (["verify", "--random", "1001", "--tol", "-1"], "10^3"),
    (["verify", "--hidden", "10001", "--tol", "-1"], "10^4"),
    (["ground-truth", "--n-draws", "10001", "--bracket-time", "-1"], "10^4"),
    (["ground-truth", "--max-boxes", "1000001", "--bracket-time", "-1"], "10^6"),
])
def test_integers_that_size_the_work_are_bounded(tmp_path, args, limit):
    """One line naming the option, the limit and why; nothing is started."""
    line = one_line(refused(tmp_path, *args))
    option = next(a for a in args if a.startswith("--"))
    has(line, option, "above the limit", limit, "give at most")
    assert "(" in line.split("above the limit", 1)[1]  # the reason
    assert not any(tmp_path.iterdir())


def test_evaluations_per_run_are_bounded(tmp_path):
    line = one_line(refused(tmp_path, "train", "nav1", "pg", "--episodes", "10000000",
                          "--eval-every", "1", "--out", "no/x"))
    has(line, "10000000 exact evaluations", "100000", "--eval-every at least 100")


def test_workers_are_capped_per_cpu(tmp_path):
    line = one_line(refused(tmp_path, "reproduce", "--workers", "100000", "--db", "no/x.sqlite"))
    top = 4 * (os.cpu_count() or 1)
    has(line, "--workers", "100000", f"limit {top}", "4 per CPU", f"give at most {top}")
    from rcmdp_exact import InputError
    from rcmdp_exact.protocol import Store, sweep

    with Store(tmp_path / "api.sqlite") as s, pytest.raises(InputError, match=str(top)):
        sweep(s, [], workers=top + 1, progress=False)


# --------------------------------------------------------------------------- empty selections
@pytest.mark.slow
def test_report_refuses_tests_the_store_lacks(store, tmp_path):
    line = one_line(refused(tmp_path, "report", "--db", store, "--out", "rep", "--tests", "2B"))
    has(line, "--tests 2B", "no run", "1A")
    assert not (tmp_path / "rep").exists()


def test_report_refuses_a_store_without_runs(tmp_path):
    from rcmdp_exact.protocol import Store

    Store(tmp_path / "empty.sqlite").close()
    line = one_line(refused(tmp_path, "report", "--db", "empty.sqlite", "--out", "rep"))
    has(line, "empty.sqlite", "no finished run")


def test_verify_refuses_a_selection_with_no_check(tmp_path):
    line = one_line(refused(tmp_path, "verify", "--domain", "none", "--random", "0",
                          "--no-variants"))
    has(line, "nothing to check", "--domain none", "--random 0", "--no-variants")


@pytest.mark.parametrize("args, facts", [
    (["ground-truth", "--variants", "value", "--no-variants", "--time-limit", "-1"],
     ["--variants value", "--no-variants", "contradict"]),
    (["verify", "--tabular-only", "--hidden", "50", "--tol", "-1"],
     ["--hidden", "--tabular-only"]),
    (["train", "nav1", "rcpg-value", "--gradient", "exact", "--critic", "exact", "--out",
      "no/x"], ["--critic", "--gradient exact"]),
    (["train", "nav1", "cpg", "--gradient", "exact", "--steps", "10", "--out", "no/x"],
     ["--steps", "--gradient exact"]),
])
def test_conflicting_options_are_refused(tmp_path, args, facts):
    has(one_line(refused(tmp_path, *args)), *facts)


def _option_pairs(applies: bool):
    from rcmdp_exact.names import ALGORITHMS, OPTION_ALGORITHMS

    values = {"critic": "exact", "inner": "lp", "multiplier_update": "sgd",
              "adversary_multiplier_signal": "visited", "adversary_form": "mixture"}
    return [(algo, name, value) for name, value in values.items() for algo in ALGORITHMS
            if (algo in OPTION_ALGORITHMS[name]) is applies]


@pytest.mark.parametrize("algo, name, value", _option_pairs(False))
def test_options_that_do_not_apply_to_the_algorithm_are_refused(tmp_path, algo, name,
                                                                value):
    from rcmdp_exact.names import OPTION_ALGORITHMS

    flag = "--" + name.replace("_", "-")
    line = one_line(refused(tmp_path, "train", "nav1", algo, flag, value, "--out", "no/x"))
    has(line, flag, f"does not apply to algorithm {algo}", ", ".join(OPTION_ALGORITHMS[name]))


@pytest.mark.parametrize("algo, name, value", _option_pairs(True))
def test_options_that_apply_are_accepted(tmp_path, algo, name, value):
    """Refused only for the missing output folder, checked after the options."""
    flag = "--" + name.replace("_", "-")
    line = one_line(refused(tmp_path, "train", "nav1", algo, flag, value, "--out", "no/x"))
    has(line, "does not exist")


def test_reproduce_refuses_an_option_none_of_its_algorithms_uses(tmp_path):
    line = one_line(refused(tmp_path, "reproduce", "--algorithms", "pg,cpg", "--critic",
                          "exact", "--db", "no/x.sqlite"))
    has(line, "--critic", "algorithms pg,cpg", "rcpg-value")
    line = one_line(refused(tmp_path, "reproduce", "--algorithms", "rcpg-value", "--train-on",
                          "data", "--db", "no/x.sqlite"))
    has(line, "--train-on", "pg, cpg")


def test_a_reader_that_goes_away_ends_the_command_silently(tmp_path):
    """``rcmdp evaluate | head -0``: exit status 141 and nothing on standard error."""
    proc = subprocess.Popen([sys.executable, "-m", "rcmdp_exact", "evaluate"], cwd=tmp_path,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_limits)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=HANG_GUARD) == 141
    assert err == b""


# --------------------------------------------------------------------------- report folder
@pytest.mark.slow
def test_report_removes_the_stale_files_of_another_report_only(store, tmp_path, reference):
    rep = tmp_path / "rep"
    rep.mkdir()
    for name in ("test_2B.png", "training_nav2.png", "table1.md"):  # another store's
        (rep / name).write_bytes(b"old")
    (rep / "notes.txt").write_text("mine")
    (rep / "test_2B.png.keep").write_text("mine")
    # the files of another report are existing outputs: refused without --force
    has(one_line(rcmdp(tmp_path, "report", "--db", store, "--out", rep, "--no-progress")),
        "--out", "report files of an unknown results store", "table1.md", "--force")
    assert (rep / "table1.md").read_bytes() == b"old"
    proc = rcmdp(tmp_path, "report", "--db", store, "--out", rep, "--no-progress", "--force")
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in rep.iterdir())
    assert names == [".rcmdp-report.json", "notes.txt", "report.md", "table1.csv", "table1.md",
                     "test_1A.png", "test_2B.png.keep", "training_nav1.png"]
    assert (rep / "notes.txt").read_text() == "mine"
    assert (rep / "table1.csv").read_bytes() == (reference / "table1.csv").read_bytes()
    assert "removed" in proc.stdout and "test_2B.png" in proc.stdout
    # written through a temporary file, with the permissions of a file written directly
    mask = os.umask(0o022)
    os.umask(mask)
    assert (rep / "report.md").stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.slow
def test_reproduce_into_a_folder_of_your_files_refuses_before_any_work(tmp_path, reference):
    """``rcmdp reproduce --out DIR`` whose new store would sit in DIR: report files that
    are there (a report.md of your own, a figure) were not written by that store, which
    does not exist yet, so they are existing outputs: one line, exit status 2, nothing
    created or touched.  The same rule as ``report`` and ``reproduce --db ELSEWHERE``."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("my own notes")
    (out / "test_1A.png").write_bytes(b"my figure")
    line = one_line(rcmdp(tmp_path, "reproduce", *SMALL, "--workers", "1", "--out", "out"))
    has(line, "--out", "report.md", "test_1A.png", "did not write", "--force")
    assert sorted(p.name for p in out.iterdir()) == ["report.md", "test_1A.png"]
    assert (out / "report.md").read_text() == "my own notes"
    # a reproduction's own folder (its store beside a report without the marker, as
    # written before the marker existed) resumes without --force
    shutil.copy(reference / "runs.sqlite", out / "runs.sqlite")
    proc = rcmdp(tmp_path, "reproduce", *SMALL, "--workers", "1", "--out", "out")
    assert proc.returncode == 0, proc.stderr
    assert "0 jobs computed" in proc.stdout
    assert (out / "report.md").read_text() == (reference / "report.md").read_text()


# --------------------------------------------------------------------------- workers
def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie, waiting for its new parent to reap it, counts as gone)."""
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                not in ("Z", "X"))
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_workers_end_when_the_driver_is_killed(tmp_path):
    """SIGKILL of ``rcmdp reproduce`` (no handler can run) while its workers are busy
    with long jobs: the workers are gone within a few seconds.  A job marks its process
    when it starts its 120 s sleep (``RCMDP_STANDIN_MARK``), so the kill lands inside it."""
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rcmdp_exact", "reproduce", *SMALL, "--workers", "2",
         "--out", "out"], cwd=tmp_path,
        env=_env(RCMDP_STANDIN_SLEEP=120, RCMDP_STANDIN_MARK=marks),
        preexec_fn=_limits, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    workers: list = []
    try:
        deadline = time.monotonic() + HANG_GUARD
        while not any(marks.iterdir()):
            assert proc.poll() is None, "the driver ended before any job started"
            assert time.monotonic() < deadline, f"no job started within {HANG_GUARD} s"
            time.sleep(0.05)
        time.sleep(0.5)  # let the other worker take its job too
        inside = {int(f.name) for f in marks.iterdir()}
        workers[:] = sorted(inside | {p for p in _children(proc.pid)
                                      if "LokyProcess" in _cmdline(p)})
        assert inside <= set(_children(proc.pid)), "a marked job runs outside the pool"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG_GUARD)
        deadline = time.monotonic() + HANG_GUARD  # they go at once: a guard only
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in workers), "workers outlived their driver"
    finally:
        for p in workers:
            if _alive(p):  # pragma: no cover - cleanup on failure
                os.kill(p, signal.SIGKILL)
        if proc.poll() is None:  # pragma: no cover
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- interrupts
@pytest.mark.parametrize("args, cpu", [
    (["train", "nav1", "cpg", "--episodes", "1000000", "--no-bracket", "--no-progress",
      "--out", "never.npz"], 2.5),
    (["ground-truth", "--no-progress", "--out", "gt"], 2.5),
    (["verify", "--episodes", "1000000", "--no-progress"], 2.5),
])
def test_ctrl_c_is_one_line_and_exit_130(tmp_path, args, cpu):
    proc = _interrupt(args, tmp_path, _busy(cpu))
    line = one_line(proc, 130)
    assert line == f"rcmdp {args[0]}: interrupted; nothing was written"
    assert not any(tmp_path.iterdir())


def test_an_interrupt_that_left_code_run_by_exec_still_exits_130(tmp_path):
    """CPython marks a KeyboardInterrupt that left code run by exec() of a string as
    unhandled even once caught, and ``python -m`` then ends by SIGINT (status -2, with
    the interrupt line printed).  scipy's and numpy's imports run such code: a Ctrl-C of
    ``rcmdp ground-truth`` at 0.5 s of CPU ended so 2 times in 6.  Here a trainer of
    one's own raises the interrupt from exec(), at a known place."""
    (tmp_path / "interrupting.py").write_text(
        "def train(*args, **kwargs):\n    exec('raise KeyboardInterrupt')\n")
    proc = rcmdp(tmp_path, "train", "nav1", "cpg", "--trainer", "interrupting:train",
                 "--episodes", "5", "--no-bracket", "--no-progress",
                 env=_env([tmp_path]))
    line = one_line(proc, 130)
    assert line == "rcmdp train: interrupted; nothing was written"


@pytest.mark.slow
def test_ctrl_c_of_reproduce_says_what_was_kept(tmp_path):
    db = tmp_path / "out" / "runs.sqlite"
    args = ["reproduce", *SMALL, "--seeds", "6", "--workers", "2", "--out", "out"]
    proc = _interrupt(args, tmp_path, lambda p: _n(db) >= 1,
                      env=_env(RCMDP_STANDIN_SLEEP=0.5))
    line = one_line(proc, 130)
    n = _n(db) + _n(db, "ground_truth")
    has(line, "rcmdp reproduce: interrupted;", f"{n} finished jobs are kept in",
        "runs.sqlite", "run the same command again to resume")
    again = rcmdp(tmp_path, *args)  # resumes
    assert again.returncode == 0, again.stderr
    assert f"{n} already stored" in again.stdout


# --------------------------------------------------------------------------- store errors
SITE_READONLY = '''\
"""Test only: open one SQLite file read-only (as SQLite opens a file it may not write)."""
import os
import sqlite3

_connect = sqlite3.connect
_TARGET = os.environ["RCMDP_TEST_STORE"]


def connect(database, *args, **kwargs):
    if os.path.abspath(str(database)) == _TARGET:
        return _connect(f"file:{_TARGET}?mode=ro", *args, **{**kwargs, "uri": True})
    return _connect(database, *args, **kwargs)


sqlite3.connect = connect
'''

SITE_FULL = '''\
"""Test only: a full disk for one SQLite file: SQLite's page limit of the connection
makes the engine answer every write beyond it with SQLITE_FULL, "database or disk is
full", exactly as when the disk is full."""
import os
import sqlite3

_connect = sqlite3.connect
_TARGET = os.environ["RCMDP_TEST_STORE"]


def connect(database, *args, **kwargs):
    conn = _connect(database, *args, **kwargs)
    if os.path.abspath(str(database)) == _TARGET:
        conn.execute(f"PRAGMA max_page_count = {int(os.environ['RCMDP_TEST_PAGES'])}")
    return conn


sqlite3.connect = connect
'''


def _site(tmp_path, text: str) -> Path:
    """A folder holding ``sitecustomize.py`` with ``text``; on the child's PYTHONPATH it
    is imported at start-up, before the command."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(text)
    return site


def test_reproduce_on_a_store_it_cannot_write(store, tmp_path):
    """The store's file and folder are made read-only; root may write them anyway, so
    the child also opens that one file read-only through a sitecustomize (SQLite then
    answers every write as for a read-only file: "attempt to write a readonly
    database")."""
    before = _dump(store)
    n = len(before["runs"]) + len(before["ground_truth"])
    folder = store.parent
    site = _site(tmp_path, SITE_READONLY)
    store.chmod(0o444)
    folder.chmod(0o555)
    try:
        proc = rcmdp(tmp_path, "reproduce", *SMALL, "--seeds", "3", "--workers", "1",
                     "--out", "out", env=_env([site], RCMDP_TEST_STORE=store.resolve()))
    finally:
        folder.chmod(0o755)
        store.chmod(0o644)
    line = one_line(proc)
    has(line, str(Path("out") / "runs.sqlite"), "cannot be written",
        f"{n} finished jobs are kept", "writable", "run the same command again")
    assert _dump(store) == before


@pytest.mark.slow
def test_reproduce_on_a_full_disk(store, tmp_path):
    """SQLite's page limit stands in for the full disk (``SITE_FULL``): the sweep stops
    at the first job that does not fit, with one line saying how many are kept; the
    same command resumes once there is room."""
    pages = sqlite3.connect(store).execute("PRAGMA page_count").fetchone()[0]
    args = ["reproduce", *SMALL, "--seeds", "12", "--workers", "1", "--out", "out"]
    site = _site(tmp_path, SITE_FULL)
    proc = rcmdp(tmp_path, *args, env=_env([site], RCMDP_TEST_STORE=store.resolve(),
                                           RCMDP_TEST_PAGES=pages + 2))
    line = one_line(proc)
    kept = _n(store) + _n(store, "ground_truth")
    has(line, "runs.sqlite", "database or disk is full", f"{kept} finished jobs are kept",
        "free space", "run the same command again")
    assert kept >= 7
    con = sqlite3.connect(store)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    again = rcmdp(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert f"{kept} already stored" in again.stdout


def _fsize_limit(limit: int):
    def apply():
        _limits()
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow
def test_report_on_a_full_disk(store, tmp_path, reference):
    """A file-size limit (RLIMIT_FSIZE) makes the kernel refuse every write beyond
    40,000 bytes (EFBIG; Python ignores SIGXFSZ), the failure a full disk (ENOSPC) is
    for the code that writes: the tables and SQLite's 32 KB -shm file fit, the first
    figure does not.  One line naming the figure; the old figure stays whole."""
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "test_1A.png").write_bytes(b"the previous figure")
    proc = rcmdp(tmp_path, "report", "--db", store, "--out", rep, "--no-progress", "--force",
                 preexec_fn=_fsize_limit(40_000))
    line = one_line(proc)
    has(line, "the report cannot be written", "File too large", "test_1A.png",
        "results store is not changed")
    assert (rep / "test_1A.png").read_bytes() == b"the previous figure"
    assert sorted(p.name for p in rep.iterdir()) == ["table1.csv", "table1.md",
                                                     "test_1A.png"]  # no temporary file
    assert (rep / "table1.csv").read_bytes() == (reference / "table1.csv").read_bytes()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_store_file_is_one_line_that_says_how_to_recover(store, tmp_path, damage):
    data = store.read_bytes()
    if damage == "truncated":
        store.write_bytes(data[:len(data) // 3])
    else:
        store.write_bytes(data[:4096] + b"garbage!" * ((len(data) - 4096) // 8))
    for args in (["report", "--db", store, "--out", "rep"],
                 ["reproduce", *SMALL, "--workers", "1", "--out", "out"]):
        line = one_line(rcmdp(tmp_path, *args))
        has(line, "runs.sqlite", "is damaged", "rcmdp recover --db", "runs.sqlite.damaged",
            "rcmdp reproduce again")


@pytest.mark.parametrize("damage", ["intact", "one page", "truncated"])
@pytest.mark.slow
def test_rcmdp_recover_keeps_the_readable_jobs_and_reproduce_recomputes_the_rest(
        store, tmp_path, reference, damage):
    """The advice of the line above, followed: ``rcmdp recover --db`` copies the jobs
    that can be read and match their checksums into a new store (through Python's
    sqlite3, not the sqlite3 program, whose ``.recover`` fails on this schema with
    sqlite3 3.40) and keeps the damaged file beside it; ``rcmdp reproduce`` then
    recomputes exactly the missing jobs, and the store and the table are the undamaged
    ones.  An intact store comes out whole."""
    data = store.read_bytes()
    page = 4096
    if damage == "one page":  # a leaf page of the runs: the jobs on it are lost
        con = sqlite3.connect(store)
        leaves = [n for (n,) in con.execute(
            "SELECT pageno FROM dbstat WHERE name = 'runs' AND pagetype = 'leaf'")]
        con.close()
        mid = leaves[len(leaves) // 2] - 1  # page numbers count from 1
        store.write_bytes(data[:mid * page] + b"garbage!" * (page // 8)
                          + data[(mid + 1) * page:])
    elif damage == "truncated":
        store.write_bytes(data[:len(data) * 2 // 3])
    damaged = store.read_bytes()
    proc = rcmdp(tmp_path, "recover", "--db", store)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    line = proc.stdout.strip()
    assert len(line.splitlines()) == 1, line
    kept = store.with_name("runs.sqlite.damaged")
    assert kept.read_bytes() == damaged  # kept as it was, only read
    assert store.exists()
    assert not list(store.parent.glob(".runs.sqlite.recovering*"))
    con = sqlite3.connect(store)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    recovered = _n(store) + _n(store, "ground_truth")
    if damage == "intact":
        has(line, "recovered every job", "7 finished jobs", "runs.sqlite.damaged")
        assert _dump(store) == _dump(reference / "runs.sqlite")
    else:
        has(line, f"recovered {recovered} finished jobs", "rcmdp reproduce",
            "runs.sqlite.damaged")
        assert recovered < 7
    again = rcmdp(tmp_path, "recover", "--db", store)  # the damaged file is kept: refused
    has(one_line(again), "runs.sqlite.damaged", "exists", "move it away")
    proc = rcmdp(tmp_path, "reproduce", *SMALL, "--workers", "1", "--out", "out")
    assert proc.returncode == 0, proc.stderr
    assert f"{7 - recovered} jobs computed, {recovered} already stored" in proc.stdout
    assert _dump(store) == _dump(reference / "runs.sqlite")
    assert (tmp_path / "out" / "table1.csv").read_bytes() == \
        (reference / "table1.csv").read_bytes()


SITE_FULL_RECOVERY = '''\
"""Test only: a full disk for the new store of rcmdp recover (SQLite's page limit)."""
import sqlite3

_connect = sqlite3.connect


def connect(database, *args, **kwargs):
    conn = _connect(database, *args, **kwargs)
    if ".recovering." in str(database):
        conn.execute("PRAGMA max_page_count = 4")
    return conn


sqlite3.connect = connect
'''


def test_rcmdp_recover_on_a_full_disk_changes_nothing(store, tmp_path):
    before = store.read_bytes()
    site = _site(tmp_path, SITE_FULL_RECOVERY)
    line = one_line(rcmdp(tmp_path, "recover", "--db", store, env=_env([site])))
    has(line, "the recovered store cannot be written", "database or disk is full",
        "is not changed", "rcmdp recover again")
    assert sorted(p.name for p in store.parent.iterdir() if "-" not in p.name) == \
        ["runs.sqlite"]
    assert store.read_bytes() == before


@pytest.mark.slow
def test_a_changed_float_is_named_left_out_and_recomputed(store, tmp_path, reference):
    """One float of a test row and one float of a ground-truth result change (SQLite's
    integrity check still passes): ``report`` names both jobs (key and kind) in one
    warning line and leaves them out; ``reproduce`` recomputes exactly those two, and
    the table and the store equal the undamaged ones."""
    con = sqlite3.connect(store)
    run_key, run_id = con.execute("SELECT key, id FROM runs ORDER BY key").fetchone()
    con.execute("UPDATE tests SET value = value + 1e-9 WHERE run = ? AND mode = 'greedy' "
                "AND setting = (SELECT MIN(setting) FROM tests WHERE run = ?)",
                (run_id, run_id))
    gt_key, result = con.execute("SELECT key, result FROM ground_truth WHERE kind = 'suite'"
                                 ).fetchone()
    doc = json.loads(result)
    doc["bound"]["bound"] += 1.0  # the bound column of Table 1
    con.execute("UPDATE ground_truth SET result = ? WHERE key = ?",
                (json.dumps(doc, sort_keys=True), gt_key))
    con.commit()
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()

    proc = rcmdp(tmp_path, "report", "--db", store, "--out", "rep", "--no-progress")
    line = one_line(proc, 0)
    has(line, "rcmdp report: warning:", "2 damaged jobs", run_key, "kind run", gt_key,
        "kind ground truth suite", "rcmdp reproduce")
    assert (tmp_path / "rep" / "table1.csv").read_bytes() != \
        (reference / "table1.csv").read_bytes()  # without the damaged jobs

    proc = rcmdp(tmp_path, "reproduce", *SMALL, "--workers", "1", "--out", "out")
    assert proc.returncode == 0, proc.stderr
    assert "2 jobs computed, 5 already stored (7 in the plan)" in proc.stdout
    assert (tmp_path / "out" / "table1.csv").read_bytes() == \
        (reference / "table1.csv").read_bytes()
    assert _dump(store) == _dump(reference / "runs.sqlite")
    assert rcmdp(tmp_path, "report", "--db", store, "--out", "rep2",
                 "--no-progress").stderr == ""  # no warning left


@pytest.mark.slow
def test_stores_without_checksums_are_read_and_upgraded(store, tmp_path, reference):
    """A store of schema version 2 (no checksums) is reported as it is; opened for
    writing, its jobs get their checksums (trusted) and nothing is recomputed."""
    con = sqlite3.connect(store)
    con.execute("DROP TABLE checksums")
    con.execute("UPDATE meta SET value = '2' WHERE name = 'schema'")
    con.commit()
    con.close()
    proc = rcmdp(tmp_path, "report", "--db", store, "--out", "rep", "--no-progress")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (tmp_path / "rep" / "table1.csv").read_bytes() == \
        (reference / "table1.csv").read_bytes()
    proc = rcmdp(tmp_path, "reproduce", *SMALL, "--workers", "1", "--out", "out")
    assert "0 jobs computed, 7 already stored" in proc.stdout, proc.stderr
    con = sqlite3.connect(store)
    assert con.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()[0] == "3"
    assert con.execute("SELECT COUNT(*) FROM checksums").fetchone()[0] == 7
    con.close()


@pytest.mark.parametrize("make, fact", [
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: None, "does not exist"),
    (lambda p: p.write_text("a table\n"), "not a SQLite database"),
])
def test_report_names_what_the_db_path_is(tmp_path, make, fact):
    make(tmp_path / "db")
    has(one_line(refused(tmp_path, "report", "--db", "db", "--out", "rep")), "--db 'db'", fact)


# --------------------------------------------------------------------------- Dask, trainer
@pytest.mark.parametrize("address, fact", [
    ("notanaddress", "no HOST:PORT"),
    ("tcp://10.0.0.1", "no HOST:PORT"),
    ("tcp://:8786", "a host name"),
    ("http://10.0.0.1:8786", "unknown scheme 'http'"),
    ("tcp://10.0.0.1:99999", "port 99999"),
])
def test_dask_address_is_checked_before_any_work(tmp_path, address, fact):
    line = one_line(refused(tmp_path, "reproduce", "--dask", address, "--out", "out"))
    has(line, "--dask", repr(address), fact, "tcp://")
    assert not any(tmp_path.iterdir())


TRAINERS = '''\
def returns_int(model, algorithm, **kwargs):
    return 3


def no_keywords(model, algorithm):
    return None
'''


def test_trainer_signature_is_checked_before_any_work(tmp_path):
    (tmp_path / "my_trainers.py").write_text(TRAINERS)
    args = [a if a != LABEL else "my_trainers:no_keywords" for a in SMALL]
    line = one_line(rcmdp(tmp_path, "reproduce", *args, "--out", "out",
                          env=_env([tmp_path])))
    has(line, "--trainer 'my_trainers:no_keywords'", "unexpected keyword argument",
        "train(model, algorithm, *, uset")
    assert not (tmp_path / "out").exists()


def test_trainer_result_type_is_checked_after_one_run(tmp_path):
    (tmp_path / "my_trainers.py").write_text(TRAINERS)
    args = [a if a != LABEL else "my_trainers:returns_int" for a in SMALL]
    line = one_line(rcmdp(tmp_path, "reproduce", *args, "--workers", "2", "--out", "out",
                          env=_env([tmp_path])))
    has(line, "my_trainers:returns_int returned int",
        "TrainResult-like object with policy_table() and records")
    db = tmp_path / "out" / "runs.sqlite"
    assert _n(db) == _n(db, "ground_truth") == 0  # before the ground truth ran


# --------------------------------------------------------------------------- loaders
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A model file, a ball file, a training result and foreign files."""
    import rcmdp_exact as rx
    from rcmdp_exact import domains
    from rcmdp_exact.learners import train

    where = tmp_path_factory.mktemp("files")
    model = domains.inventory()
    out = {"model": model.save(where / "model"),
           "ball": rx.l1_ball(model, 0.1).save(where / "ball"),
           "result": train(model, "pg", episodes=2, eval_every=1, progress=False)
           .save(where / "result")}
    np.savez(where / "foreign.npz", x=np.ones(3))
    np.save(where / "array.npy", np.ones(3))
    (where / "text.txt").write_text("hello\n")
    (where / "empty.npz").write_bytes(b"")
    np.savez(where / "objects.npz", x=np.array([{"a": 1}], dtype=object))
    data = out["model"].read_bytes()
    (where / "truncated.npz").write_bytes(data[:len(data) // 2])
    out.update({name: where / name for name in (
        "foreign.npz", "array.npy", "text.txt", "empty.npz", "objects.npz", "truncated.npz")})
    out["missing"] = where / "missing"
    out["folder"] = where
    return out


def _loaders():
    import rcmdp_exact as rx
    from rcmdp_exact import learners

    return {"model": (rx.TabularCMDP.load, "a model file written by TabularCMDP.save"),
            "ball": (rx.L1Ball.load, "an L1Ball written by L1Ball.save"),
            "result": (learners.load, "a training result written by TrainResult.save")}


@pytest.mark.parametrize("loader", ["model", "ball", "result"])
@pytest.mark.parametrize("name, fact", [
    ("missing", "does not exist"), ("folder", "is a folder"),
    ("foreign.npz", "of another kind"), ("array.npy", "single .npy array"),
    ("text.txt", "not an .npz archive"), ("empty.npz", "is empty"),
    ("objects.npz", "pickled objects"), ("truncated.npz", "truncated"),
])
def test_every_loader_answers_a_foreign_file_with_load_error(files, loader, name, fact):
    from rcmdp_exact import LoadError

    load, what = _loaders()[loader]
    with pytest.raises(LoadError) as info:
        load(files[name])
    msg = str(info.value)
    has(msg, repr(str(files[name])), fact, what)
    assert "allow_pickle" not in msg


@pytest.mark.parametrize("loader, other, kind", [
    ("model", "ball", "L1Ball"), ("model", "result", "TrainResult"),
    ("ball", "model", "TabularCMDP"), ("ball", "result", "TrainResult"),
    ("result", "model", "TabularCMDP"), ("result", "ball", "L1Ball"),
])
def test_every_loader_names_the_kind_of_a_mismatched_file(files, loader, other, kind):
    from rcmdp_exact import LoadError

    load, what = _loaders()[loader]
    with pytest.raises(LoadError) as info:
        load(files[other])
    has(str(info.value), str(files[other]), f"a saved {kind}", f"is not {what}")


def test_loaders_accept_the_path_without_its_suffix(files, tmp_path):
    import rcmdp_exact as rx
    from rcmdp_exact import learners

    for name in ("model", "result"):
        assert files[name].suffix == ".npz"
    m = rx.TabularCMDP.load(files["model"].with_suffix(""))
    assert m.n_states == rx.domains.inventory().n_states
    res = learners.load(files["result"].with_suffix(""))
    assert np.array_equal(res.policy_table(), learners.load(files["result"]).policy_table())
    # the saves add .npz to another suffix, as every artefact does
    assert res.save(tmp_path / "again.json").name == "again.json.npz"
    assert m.save(tmp_path / "m.json").name == "m.json.npz"


def test_load_error_is_exported_and_an_input_error():
    import rcmdp_exact as rx
    from rcmdp_exact._io import LoadError

    assert rx.LoadError is LoadError and "LoadError" in rx.__all__
    assert issubclass(LoadError, rx.InputError)
    import rcmdp_exact._checks as checks

    assert "LoadError" in checks.__doc__


# --------------------------------------------------------------------------- a line per stage
def test_a_bar_that_is_off_writes_a_line_per_stage(capsys, monkeypatch):
    """With stage lines on (the command line's choice when its output is not a
    terminal), a bar that is off says when its stage starts and ends; an inner bar
    (leave=False) and a run with stage lines off stay silent."""
    from rcmdp_exact import _progress

    monkeypatch.setattr(_progress, "LINE_EVERY", 0.0)
    _progress.stage_lines(True, "rcmdp test")
    try:
        for _ in _progress.tqdm(range(20), desc="outer", disable=True):
            for _ in _progress.tqdm(range(3), desc="inner", disable=True, leave=False):
                pass
        with _progress.tqdm(total=4, desc="manual", disable=True) as bar:
            bar.update(4)
    finally:
        _progress.stage_lines(False)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "rcmdp test: outer: started (20)"
    assert "rcmdp test: outer: 2/20" in err and "rcmdp test: outer: 20/20" in err
    done = [i for i, line in enumerate(err) if line.startswith("rcmdp test: outer: done 20/20 in ")]
    start = err.index("rcmdp test: manual: started (4)")
    assert done == [start - 1]  # the outer stage ends before the next one starts
    assert err[-1].startswith("rcmdp test: manual: done 4/4 in ")
    assert not any("inner" in line for line in err)
    for _ in _progress.tqdm(range(3), desc="quiet", disable=True):
        pass
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_piped_command_prints_its_stages_and_no_progress_silences_them():
    """rcmdp verify with its output in a pipe (not a terminal): one line when its stage
    starts and one when it ends, on standard error; --no-progress: none."""
    base = [sys.executable, "-m", "rcmdp_exact", "verify", "--domain", "nav1",
            "--tabular-only"]
    run = subprocess.run(base, capture_output=True, text=True, timeout=HANG_GUARD)
    assert run.returncode == 0, run.stderr
    lines = run.stderr.strip().splitlines()
    assert lines[0] == "rcmdp verify: started (6)"  # the stage named once
    assert lines[-1].startswith("rcmdp verify: done 6/6 in ")
    quiet = subprocess.run([*base, "--no-progress"], capture_output=True, text=True,
                           timeout=HANG_GUARD)
    assert quiet.returncode == 0 and quiet.stderr == ""
