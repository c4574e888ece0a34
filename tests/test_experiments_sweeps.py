"""Sweeps of rcmdp_exact.protocol: backends, interruption and resumption, the CLI.

Acceptance checks of the reproduction: joblib and a real Dask LocalCluster give the
same bits; a sweep interrupted by Ctrl-C and by SIGKILL resumes to the same tables as an
uninterrupted one, with no duplicate or partial rows; ``rcmdp reproduce --quick`` writes
the four outputs and ``rcmdp report`` rebuilds the same table from the store alone.
The learners are replaced by the stand-in of ``test_experiments_standin.py`` except in
the one test that runs the real ``--quick``.
"""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_experiments_standin import standin_train

from rcmdp_exact.cli import main
from rcmdp_exact.protocol import ReproduceSpec, Store, plan, reproduce, sweep, table1
from rcmdp_exact.protocol.table1 import table1_csv

TESTS_DIR = str(Path(__file__).resolve().parent)
LABEL = "test_experiments_standin:standin_train"


def _small_plan(**kw):
    opts = dict(tests=["1A", "1B"], algorithms=["cpg", "adversarial-rcpg"], seeds=2,
                episodes=3, quick=True, n_draws=1, eval_every=2, trainer=LABEL)
    opts.update(kw)
    return plan(opts.pop("tests"), opts.pop("algorithms"), opts.pop("seeds"),
                opts.pop("episodes"), **opts)


def _dump(path) -> dict:
    """Every row of a store, without the measured seconds."""
    con = sqlite3.connect(path)
    out = {}
    queries = {
        "runs": "SELECT key, domain, algorithm, seed, spec, info FROM runs ORDER BY key",
        "tests": "SELECT runs.key, suite, grp, setting, param, mode, value, cost, budget, "
                 "penalised FROM tests JOIN runs ON run = runs.id "
                 "ORDER BY runs.key, suite, setting, mode",
        "curves": "SELECT runs.key, name, idx, episode, value FROM curves JOIN runs ON "
                  "run = runs.id ORDER BY runs.key, name, idx",
        "ground_truth": "SELECT * FROM ground_truth ORDER BY key"}
    for table, query in queries.items():
        rows = con.execute(query).fetchall()
        clean = []
        for row in rows:
            row = list(row)
            if table in ("runs", "ground_truth"):
                doc = json.loads(row[-1])
                doc.pop("seconds", None)
                row[-1] = doc
            clean.append(row)
        out[table] = clean
    con.close()
    return out


@pytest.mark.slow
def test_serial_joblib_and_dask_give_the_same_bits(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    # the Dask worker is a separate process on TCP loopback: it imports the stand-in
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([TESTS_DIR,
                                                      os.environ.get("PYTHONPATH", "")]))
    jobs = _small_plan()
    assert len(jobs) == 2 * 2 + 2 + 1 + 1  # runs, two suites, training, one bracket
    with Store(tmp_path / "serial.sqlite") as s:
        r = sweep(s, jobs, trainer=standin_train, backend="serial", progress=False)
        assert r.computed == len(jobs) and not r.failed
    with Store(tmp_path / "joblib.sqlite") as s:
        r = sweep(s, jobs, trainer=standin_train, workers=2, progress=False)
        assert r.computed == len(jobs) and not r.failed
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, \
            Store(tmp_path / "dask.sqlite") as s:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        r = sweep(s, jobs, trainer=standin_train, client=client, progress=False)
        assert r.computed == len(jobs) and not r.failed
    ref = _dump(tmp_path / "serial.sqlite")
    assert len(ref["runs"]) == 4 and len(ref["ground_truth"]) == 4
    assert _dump(tmp_path / "joblib.sqlite") == ref
    assert _dump(tmp_path / "dask.sqlite") == ref
    texts = set()
    for name in ("serial", "joblib", "dask"):
        with Store(tmp_path / f"{name}.sqlite") as s:
            texts.add(table1_csv(table1(s)))
    assert len(texts) == 1


def test_resume_computes_only_what_is_missing(tmp_path, capsys):
    jobs = _small_plan(algorithms=["pg"])
    with Store(tmp_path / "r.sqlite") as s:
        first = sweep(s, jobs[:2], trainer=standin_train, backend="serial", progress=True)
        assert first.computed == 2
        again = sweep(s, jobs + jobs[:1], trainer=standin_train, backend="serial",
                      progress=True)
        assert again.total == len(jobs)
        assert again.stored_before == 2 and again.computed == len(jobs) - 2
        c = s.counts()
        assert c["runs"] == 2 and c["tests"] == c["distinct_test_rows"]
    err = capsys.readouterr().err
    assert "running=" in err and "left=" in err and "job/s" in err


def test_a_failing_job_is_reported_and_retried(tmp_path):
    def broken(model, algorithm, **kw):
        raise RuntimeError(f"no trainer for {algorithm}")

    jobs = _small_plan(algorithms=["pg"], ground_truth=False)
    with Store(tmp_path / "f.sqlite") as s:
        r = sweep(s, jobs, trainer=broken, backend="serial", progress=False)
        assert r.computed == 0 and len(r.failed) == len(jobs)
        assert "no trainer for pg" in r.failed[0][1]
        r = sweep(s, jobs, trainer=standin_train, backend="serial", progress=False)
        assert r.computed == len(jobs)


def test_a_crashed_worker_loses_only_its_jobs(tmp_path, monkeypatch):
    import functools

    from test_experiments_standin import crashing_train

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([TESTS_DIR,
                                                      os.environ.get("PYTHONPATH", "")]))
    crashing = functools.partial(crashing_train, flag=str(tmp_path / "crashed"))
    jobs = _small_plan(algorithms=["pg", "cpg"], seeds=2, ground_truth=False)
    with Store(tmp_path / "c.sqlite") as s:
        first = sweep(s, jobs, trainer=crashing, workers=2, progress=False)
        assert (tmp_path / "crashed").exists()
        assert first.failed and first.computed + len(first.failed) == len(jobs)
        assert any("backend failed" in msg for _, msg in first.failed)
        stored = s.counts()
        assert stored["runs"] == first.computed
        second = sweep(s, jobs, trainer=crashing, workers=2, progress=False)
        assert second.stored_before == first.computed and not second.failed
        assert s.counts()["runs"] == len(jobs)
    with Store(tmp_path / "ref.sqlite") as s:
        sweep(s, jobs, trainer=standin_train, backend="serial", progress=False)
    ref, got = _dump(tmp_path / "ref.sqlite"), _dump(tmp_path / "c.sqlite")
    for table in ("tests", "curves"):
        assert got[table] == ref[table]


# --------------------------------------------------------------------------- interruption
def _cli(db, out, *extra):
    return [sys.executable, "-m", "rcmdp_exact", "reproduce", "--tests", "1A,1B",
            "--algorithms", "pg,cpg,rcpg-value", "--seeds", "3", "--episodes", "2",
            "--n-draws", "1", "--bracket-seeds", "1", "--trainer", LABEL, "--db", str(db),
            "--out", str(out), "--no-progress", *extra]


def _env(sleep: float) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([TESTS_DIR, env.get("PYTHONPATH", "")])
    env["RCMDP_STANDIN_SLEEP"] = str(sleep)
    return env


def _n_runs(db) -> int:
    if not Path(db).exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def _default_sigint() -> None:
    """In the child before exec: Ctrl-C's default action, as in a terminal's foreground
    job.  An ignored SIGINT is inherited across exec, and a shell ignores it in the
    commands it starts in the background (``pytest ... &``, ``nohup``); Python then
    installs no KeyboardInterrupt handler and the sweep would rightly ignore Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(cmd, db, sig, at_least: int) -> subprocess.CompletedProcess:
    """Start ``cmd`` in its own process group, send ``sig`` to the whole group (as a
    terminal's Ctrl-C does) once ``at_least`` runs are stored, wait for it."""
    proc = subprocess.Popen(cmd, env=_env(0.3), start_new_session=True,
                            preexec_fn=_default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while _n_runs(db) < at_least and proc.poll() is None:
            assert time.monotonic() < deadline, "the sweep stored nothing in 120 s"
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep finished before it could be interrupted"
        os.killpg(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # pragma: no cover - cleanup of a hung sweep
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for _ in range(100):  # the workers of the group end with it
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:  # pragma: no cover
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("worker processes outlived the interrupted sweep")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.slow
def test_ctrl_c_and_sigkill_then_resume_give_the_uninterrupted_tables(tmp_path):
    # the reference: uninterrupted, in this process and serially (another backend than
    # the interrupted sweeps' joblib workers: the tables must not depend on it)
    ref_db, ref_out = tmp_path / "ref.sqlite", tmp_path / "ref"
    assert main(_cli(ref_db, ref_out, "--workers", "1")[3:]) == 0

    db, out = tmp_path / "cut.sqlite", tmp_path / "cut"
    first = _interrupt(_cli(db, out), db, signal.SIGINT, at_least=2)
    assert first.returncode == 130, first.stderr
    assert "interrupted" in first.stderr and "run the same command" in first.stderr
    n1 = _n_runs(db)
    second = _interrupt(_cli(db, out), db, signal.SIGKILL, at_least=n1 + 2)
    assert second.returncode == -signal.SIGKILL
    n2 = _n_runs(db)
    assert n1 < n2 < 9
    last = subprocess.run(_cli(db, out), env=_env(0.0), capture_output=True, text=True,
                          timeout=300)
    assert last.returncode == 0, last.stderr
    m = re.search(r"(\d+) jobs computed, (\d+) already stored \((\d+) in the plan\)",
                  last.stdout)
    assert m is not None, last.stdout
    computed, stored, total = map(int, m.groups())
    assert total == 9 + 4 and computed + stored == total and stored >= n2

    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n_runs, n_keys = con.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone()
    assert n_runs == n_keys == 9
    rows, distinct = con.execute(
        "SELECT COUNT(*), (SELECT COUNT(*) FROM (SELECT DISTINCT run, suite, setting, mode "
        "FROM tests)) FROM tests").fetchone()
    assert rows == distinct
    # no partial run: every run has all its test rows (10 settings x 2 modes)
    per_run = {n for (n,) in con.execute("SELECT COUNT(*) FROM tests GROUP BY run")}
    assert per_run == {20}
    con.close()
    assert (out / "table1.csv").read_bytes() == (ref_out / "table1.csv").read_bytes()
    assert (out / "table1.md").read_bytes() == (ref_out / "table1.md").read_bytes()
    assert _dump(db) == _dump(ref_db)


# --------------------------------------------------------------------------- command line
@pytest.mark.slow
def test_reproduce_quick_writes_the_outputs_and_report_rebuilds_them(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([TESTS_DIR,
                                                      os.environ.get("PYTHONPATH", "")]))
    out, db = tmp_path / "out", tmp_path / "runs.sqlite"
    code = main(["reproduce", "--quick", "--episodes", "2", "--trainer", LABEL,
                 "--out", str(out), "--db", str(db), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    for name in ("report.md", "table1.md", "table1.csv"):
        assert (out / name).stat().st_size > 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["test_1A.png", "test_1B.png", "test_2A.png", "test_2B.png",
                    "test_inventory.png", "training_inventory.png", "training_nav1.png",
                    "training_nav2.png"]
    assert all((out / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    lines = (out / "table1.csv").read_text().splitlines()
    assert len(lines) == 1 + 2 * 5 * 6  # greedy and stochastic x tests x algorithms
    report = (out / "report.md").read_text()
    assert "`offset_on` = `failure`" in report and "![test_1B.png](test_1B.png)" in report

    # the Python API names the trainer as --trainer does: everything is already stored
    summary = reproduce(ReproduceSpec(quick=True, episodes=2, trainer=standin_train), db,
                        workers=1, progress=False)
    assert summary.computed == 0 and summary.stored_before == summary.total == 47

    again = tmp_path / "again"
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--out", str(again), "--progress"]) == 0
    for name in ("table1.csv", "table1.md", "report.md"):
        assert (again / name).read_bytes() == (out / name).read_bytes()
    # the bar advances over every output: two tables, eight figures, the report
    err = capsys.readouterr().err
    assert "report" in err and "11/11" in err


@pytest.mark.slow
def test_reproduce_with_the_learners(tmp_path, capsys):
    """The real learners through the command line (a corner of --quick: Safe Navigation
    2 with two algorithms; the whole --quick is timed in benchmarks/bench_reproduce.py).
    """
    pytest.importorskip("rcmdp_exact.learners")
    out, db = tmp_path / "out", tmp_path / "runs.sqlite"
    assert main(["reproduce", "--quick", "--tests", "2A,2B", "--algorithms",
                 "cpg,adversarial-rcpg", "--out", str(out), "--db", str(db),
                 "--no-progress"]) == 0, capsys.readouterr().err
    assert {"report.md", "table1.md", "table1.csv"} <= {p.name for p in out.iterdir()}
    assert {p.name for p in out.glob("*.png")} == {"test_2A.png", "test_2B.png",
                                                   "training_nav2.png"}
    with Store(db, readonly=True) as s:
        rows = table1(s)
        names = {c["name"] for c in s.curves(s.runs()[0]["key"])}
    assert len(rows) == 2 * 2 * 2 and all(r["n_seeds"] == 2 for r in rows)
    # no policy beats the exact bound of the test, whatever it learned
    assert all(r["mean"] <= r["bound"] + 1e-9 for r in rows)
    assert {"return", "cost[0]", "lam[0]", "eval_true_stochastic_test_value"} <= names


@pytest.mark.parametrize("argv, fact", [
    (["reproduce", "--tests", "1A,3C"], "'3C'"),
    (["reproduce", "--algorithms", "ppo"], "'ppo'"),
    (["reproduce", "--seeds", "0"], "--seeds"),
    (["reproduce", "--episodes", "-3"], "--episodes"),
    (["reproduce", "--workers", "two"], "'two'"),
    (["reproduce", "--trainer", "no_such_module:train"], "no_such_module"),
    (["reproduce", "--dask", "tcp://127.0.0.1:1", "--workers", "2"], "--workers"),
    (["reproduce", "--offset-on", "sideways"], "'sideways'"),
    (["report", "--db", "{tmp}/missing.sqlite", "--out", "{tmp}/o"], "missing.sqlite"),
    (["report", "--db", "{tmp}/text.sqlite", "--out", "{tmp}/o"], "not a SQLite"),
    (["reproduce", "--db", "{tmp}/text.sqlite", "--out", "{tmp}/o"], "not a SQLite"),
    (["reproduce", "--db", "{tmp}", "--out", "{tmp}/o"], "is a folder"),
    (["reproduce", "--db", "{tmp}/other.sqlite", "--out", "{tmp}/o"], "not a results"),
    (["report", "--db", "{tmp}/other.sqlite", "--out", "{tmp}/o"], "not a results"),
    (["reproduce", "--out", "{tmp}/text.sqlite"], "existing file"),
    (["reproduce", "--db", "{tmp}/nodir/x.sqlite", "--out", "{tmp}/o"], "does not exist"),
])
def test_bad_arguments_fail_before_any_work(tmp_path, capsys, monkeypatch, argv, fact):
    monkeypatch.chdir(tmp_path)  # the default output folder is ./reproduction
    (tmp_path / "text.sqlite").write_text("not a database")
    other = sqlite3.connect(tmp_path / "other.sqlite")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert fact in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "reproduction").exists()


@pytest.mark.slow
def test_the_table_is_the_same_bits_in_every_backend(tmp_path):
    """Table 1 is a function of the code and the seeds, not of how it was computed: a
    corner of --quick with the real learners and the exact bracket, once through the
    command line with two worker processes and once in this process by the serial
    backend, writes the same table1.csv byte for byte (each job runs with one BLAS
    thread; before that, LAPACK's last bits followed the thread count and moved the
    bracket's bounds)."""
    argv = ["--quick", "--tests", "inventory", "--algorithms", "pg,rcpg-lagrangian",
            "--episodes", "20"]
    cli = subprocess.run([sys.executable, "-m", "rcmdp_exact", "reproduce", *argv,
                          "--workers", "2", "--out", str(tmp_path / "two"), "--no-progress"],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    reproduce(ReproduceSpec(quick=True, tests=["inventory"], episodes=20,
                            algorithms=["pg", "rcpg-lagrangian"]),
              tmp_path / "serial.sqlite", tmp_path / "one", workers=1, progress=False)
    two = (tmp_path / "two" / "table1.csv").read_bytes()
    assert two == (tmp_path / "one" / "table1.csv").read_bytes()
    # the bracket is part of what is compared (its status: closed, or the table's box
    # budget ended first)
    assert b"bracket:1" in two or b"budget_exhausted:1" in two
