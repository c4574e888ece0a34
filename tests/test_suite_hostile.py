"""Hostile input to ``rcmdp suite ...``: one row per probe (bad values, bad files, a
read-only folder, an existing output, a damaged data file, the limits of certify), each
answered by a one-line error (or a named warning) and its exit status, never a
traceback; the refusals of bad arguments come before numpy is imported."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest
from helpers import HANG_GUARD

from rcmdp_exact import suite

#: (probe, argv with {tmp} for a fresh folder, exit status, a fact of the message,
#: refused before numpy)
ROWS = [
    ("certify: a time limit of 0", ["certify", "--out", "{tmp}/v.json.gz", "--time-limit",
                                    "0"], 2, "time limit", True),
    ("certify: a negative time limit", ["certify", "--out", "{tmp}/v.json.gz",
                                        "--time-limit", "-1"], 2, "time limit", True),
    ("certify: a time limit of nan", ["certify", "--out", "{tmp}/v.json.gz",
                                      "--time-limit", "nan"], 2, "time limit", True),
    ("certify: a negative box budget", ["certify", "--out", "{tmp}/v.json.gz",
                                        "--max-boxes", "-1"], 2, "integer >= 0", True),
    ("certify: a schedule that decreases", ["certify", "--out", "{tmp}/v.json.gz",
                                            "--max-boxes", "600,200"], 2, "increasing",
     True),
    ("certify: a schedule with no boxes in it", ["certify", "--out", "{tmp}/v.json.gz",
                                                 "--max-boxes", "0,200"], 2, "'0,200'",
     True),
    ("certify: a schedule that is not numbers", ["certify", "--out", "{tmp}/v.json.gz",
                                                 "--max-boxes", "2000,lots"], 2,
     "not a box budget", True),
    ("certify: an empty selection", ["certify", "--out", "{tmp}/v.json.gz", "--only",
                                     "taxi", "--kinds", "kl"], 2, "taxi has l1", True),
    ("certify: a level off the grid", ["certify", "--out", "{tmp}/v.json.gz", "--levels",
                                       "0.3"], 2, "'0.3'", True),
    ("certify: not a JSON file", ["certify", "--out", "{tmp}/v.txt"], 2, ".json.gz", True),
    ("certify: an existing output", ["certify", "--out", "{tmp}/existing.json.gz"], 2,
     "--force", True),
    ("certify: --workers with --scheduler", ["certify", "--out", "{tmp}/v.json.gz",
                                            "--workers", "2", "--scheduler", "tcp://a:1"],
     2, "not allowed", True),
    ("certify: --fill from a missing data file", ["certify", "--out", "{tmp}/v.json.gz",
                                                 "--fill", "{tmp}/missing.json.gz"], 2,
     "is not a file", False),
    ("certify: --fill without a work folder", ["certify", "--out", "{tmp}/v.json.gz",
                                              "--fill", "{tmp}/truncated.json.gz"], 2,
     "run the certification first", False),
    ("figure: not an image", ["figure", "--out", "{tmp}/fig.txt"], 2, ".png", True),
    ("score: a name with a space", ["score", "--planner", "m:f", "--name", "my name"], 2,
     "'my name'", True),
    ("score: a name without a trainer", ["score", "--name", "mine"], 2,
     "--trainer or --planner", True),
    ("score: a trainer and a planner", ["score", "--trainer", "a:b", "--planner", "c:d"],
     2, "not both", True),
    ("score: an unknown algorithm", ["score", "--algorithm", "sarsa"], 2, "'sarsa'", True),
    ("score: a planner name beside an unknown one, refused before numpy",
     ["score", "--algorithm", "rnpg,rnpgg", "--seeds", "1"], 2, "'rnpgg'", True),
    ("score: a level off the grid", ["score", "--level", "0.3"], 2, "0.3", True),
    ("score: a planner that cannot be imported", ["score", "--planner",
                                                  "no_such_module_xyz:f"], 2,
     "cannot be imported", False),
    ("score: an output in a read-only folder", ["score", "--algorithm", "uniform",
                                               "--instances", "riverswim-6", "--seeds",
                                               "1", "--out", "{tmp}/ro/s.json"], 2, "ro",
     True),
    ("score: an output inside a file", ["score", "--algorithm", "uniform", "--instances",
                                        "riverswim-6", "--seeds", "1", "--out",
                                        "{tmp}/existing.json.gz/s.json"], 2,
     "existing.json.gz", True),
    ("verify: a missing data file", ["verify", "--file", "{tmp}/missing.json.gz"], 2,
     "is not a file", True),
    ("verify: a truncated data file", ["verify", "--file", "{tmp}/truncated.json.gz"], 2,
     "truncated.json.gz", False),
    ("verify: zero workers", ["verify", "--workers", "0"], 2, "below 1", True),
    ("show: a data file that is not JSON", ["show", "riverswim-6", "--file",
                                            "{tmp}/notjson.json"], 2, "notjson.json", False),
    ("show: an unknown instance", ["show", "nope"], 2, "'nope'", True),
    ("list: a damaged data file is named, the list still shown",
     ["list", "--file", "{tmp}/truncated.json.gz"], 0, "truncated.json.gz", False),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "existing.json.gz").write_bytes(b"the user's file")
    raw = suite.DATA_FILE.read_bytes()
    (tmp / "truncated.json.gz").write_bytes(raw[: len(raw) // 2])
    (tmp / "notjson.json").write_text("not json at all")
    (tmp / "ro").mkdir()
    os.chmod(tmp / "ro", 0o500)
    yield tmp
    os.chmod(tmp / "ro", 0o700)


CODE = ("import sys\nfrom rcmdp_exact.cli import main\ntry:\n"
        "    rc = main(['suite', *ARGV])\n"
        "except SystemExit as e:\n    rc = e.code\n"
        "print('RESULT', rc, 'numpy' in sys.modules)\n")


@pytest.mark.parametrize("probe, argv, code, fact, light", ROWS, ids=[r[0] for r in ROWS])
def test_hostile_input(folder, probe, argv, code, fact, light):
    if "read-only" in probe and os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")
    argv = [a.replace("{tmp}", str(folder)) for a in argv]
    proc = subprocess.run([sys.executable, "-c", CODE.replace("ARGV", repr(argv))],
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    result = proc.stdout.strip().splitlines()[-1].split()
    assert result[:2] == ["RESULT", str(code)], (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert lines and fact in (lines[-1] if code else proc.stderr), proc.stderr
    if code:
        assert len(lines[-1]) < 600 and lines[-1].startswith("rcmdp suite")
    if light:
        assert result[2] == "False", "numpy was imported before the refusal"
    assert (folder / "existing.json.gz").read_bytes() == b"the user's file"


def test_two_runs_cannot_both_write_one_score_file(tmp_path):
    """The second of two runs that both checked --out before it existed does not
    overwrite the first's file: it is refused with the path."""
    from rcmdp_exact import InputError
    from rcmdp_exact.cli.suite import _write_new

    out = tmp_path / "scores.json"
    first, second = {}, {}
    _write_new(out, b'{"first": 1}', False, first)
    with pytest.raises(InputError, match=r"scores\.json"):
        _write_new(out, b'{"second": 2}', False, second)
    assert out.read_bytes() == b'{"first": 1}'
    _write_new(out, b'{"first": 2}', False, first)  # its own file: replaced atomically
    assert out.read_bytes() == b'{"first": 2}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.json"]
    mask = os.umask(0o022)
    os.umask(mask)
    assert (out.stat().st_mode & 0o777) == 0o666 & ~mask  # not the temporary's 0o600


def _default_sigint():
    """In the child: Ctrl-C's default action.  A command started with SIGINT ignored
    keeps ignoring it (as a background job should), and a shell that started the tests in
    the background (``nohup ... &``) passes that on: the interrupt was then lost."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_score_keeps_its_finished_runs(tmp_path):
    """SIGINT during the runs: the --out file holds the runs finished so far (a partial
    Result), and the command says so."""
    import signal
    import time

    (tmp_path / "slow_planner.py").write_text(
        "import time\nimport numpy as np\n"
        "def plan(model, uset, *, seed, episodes, record=None, **options):\n"
        "    if seed >= 2:\n        time.sleep(60)\n"
        "    return np.asarray(record['least_policy'])\n")
    out = tmp_path / "s.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "rcmdp_exact", "suite", "score",
                             "--planner", "slow_planner:plan", "--instances", "riverswim-6",
                             "--seeds", "4", "--out", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=_default_sigint)
    end = time.monotonic() + HANG_GUARD  # a hang guard, not a measured number
    while time.monotonic() < end and not out.exists():
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and str(out) in err
    from rcmdp_exact import Result

    res = Result.load(out)
    assert not res.complete and [r["seed"] for r in res.rows] == [0, 1]
    assert all(r["feasible"] for r in res.rows)


def test_a_damaged_data_file_given_to_load_names_its_path(tmp_path):
    from rcmdp_exact import LoadError

    path = tmp_path / "bad.json.gz"
    path.write_bytes(gzip.compress(b'{"schema": 2, "records": [{"key": 1}]}'))
    with pytest.raises(LoadError, match=r"bad\.json\.gz"):
        suite.record("riverswim-6", path=path)
