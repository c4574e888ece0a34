"""Hostile use of ``rcmdp suite certify / verify / score / figure / show / list``
beyond the rows of tests/test_suite_hostile.py: the new ``--fill`` against damaged
work folders and data files, a full disk, a read-only folder, signals inside the work,
two certifications of one file at once, the planner names of ``score --algorithm``.
Every run is tiny (one job of riverswim-6 with ``--max-boxes 0``).  The table's shape:
tests/hostile/hostile.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_GUARD
from hostile import SIGNAL_SITE, Cli, _child, env, rows, run_cli

#: One tiny job: the instance, set and level of every certify row.
TINY = ("--only", "riverswim-6", "--kinds", "l1", "--levels", "0.05", "--max-boxes", "0",
        "--no-progress")

_CACHE: dict = {}


def _certified() -> Path:
    """A folder holding ``v.json.gz`` and its work folder from one tiny certification
    (made once per test process, copied by every row that needs it)."""
    if "dir" not in _CACHE:
        import tempfile

        base = Path(tempfile.mkdtemp(prefix="hostile-suite-"))
        proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", "suite", "certify",
                               "--out", "v.json.gz", *TINY], cwd=base, capture_output=True,
                              text=True, timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        _CACHE["dir"] = base
    return _CACHE["dir"]


def setup_certified(folder: Path) -> None:
    """``v.json.gz`` and ``v.json.gz.work`` of a finished tiny certification, a file
    that is not JSON ``notdata.json.gz`` and the user's ``mine.txt``."""
    base = _certified()
    shutil.copy(base / "v.json.gz", folder / "v.json.gz")
    shutil.copytree(base / "v.json.gz.work", folder / "v.json.gz.work")
    (folder / "notdata.json.gz").write_text("not a data file")
    (folder / "mine.txt").write_text("the user's own file")


def setup_damaged_settings(folder: Path) -> None:
    setup_certified(folder)
    (folder / "v.json.gz.work" / "settings.json").write_text("{")


def setup_plain(folder: Path) -> None:
    (folder / "mine.txt").write_text("the user's own file")


def setup_other_instances(folder: Path) -> None:
    """The tiny certification, and ``other.json.gz``: its data file claiming another
    table of riverswim-6 (a checksum that is not the frozen one)."""
    from rcmdp_exact.suite.certify import write_data
    from rcmdp_exact.suite.store import data

    setup_certified(folder)
    payload = data(folder / "v.json.gz")
    payload["instances_sha256"] = dict(payload["instances_sha256"], **{"riverswim-6": "0" * 64})
    write_data(folder / "other.json.gz", payload)


def _same_records(name, source):
    """The data file ``name`` holds the records of ``source``, each with its bracket,
    optima and policies unchanged (its ``work`` may name a longer schedule)."""
    def check(folder, out, err):
        from rcmdp_exact.suite.store import data

        a, b = data(folder / name)["records"], data(folder / source)["records"]
        assert [r["key"] for r in a] == [r["key"] for r in b]
        for x, y in zip(a, b, strict=True):
            assert {k: v for k, v in x.items() if k != "work"} == \
                {k: v for k, v in y.items() if k != "work"}, x["key"]
    return check


def _no_work_folder(name):
    def check(folder, out, err):
        left = [p.name for p in folder.iterdir() if name in p.name]
        assert not left, left
    return check


WORK = ("v.json.gz.work/settings.json", "v.json.gz.work/riverswim-6__l1__0.05.json",
        "v.json.gz.work/riverswim-6__l1__0.05.npz")
CERTIFIED = ("v.json.gz", *WORK, "notdata.json.gz", "mine.txt")


def _data_file_whole(name, keys=("riverswim-6/l1/0.05",)):
    def check(folder, out, err):
        from rcmdp_exact.suite.store import data

        recs = data(folder / name)["records"]
        assert [r["key"] for r in recs] == list(keys), recs
    return check


def _no_output(name):
    def check(folder, out, err):
        assert not (folder / name).exists(), f"{name} was written"
        leftovers = [p.name for p in folder.iterdir() if p.name.startswith(f".{name}")
                     or p.name.endswith(".tmp")]
        assert not leftovers, leftovers
    return check


def _resumable(folder, out, err):
    """After an interrupt: the work folder has its settings, and a second run
    finishes from it."""
    proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", *INTERRUPTED],
                          cwd=folder, capture_output=True, text=True, timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr
    _data_file_whole("w.json.gz", ("riverswim-6/kl/0.1", "riverswim-6/kl/0.2"))(
        folder, out, err)


#: Two jobs (RiverSwim-6, KL, levels 0.1 and 0.2): the signal comes as the first job's
#: bracket enters its lower search, inside a job; then resumed.
INTERRUPTED = ("suite", "certify", "--out", "w.json.gz", "--only", "riverswim-6",
               "--kinds", "kl", "--levels", "0.1,0.2", "--no-progress")


def _settings_of(folder):
    return json.loads((folder / "v.json.gz.work" / "settings.json").read_text())


def _damaged(change):
    """A setup: the tiny certification and ``d.json.gz``, its data file with
    ``change(payload)`` applied (a data file damaged where the loader does not look)."""
    def setup(folder: Path) -> None:
        import copy

        from rcmdp_exact.suite.certify import write_data
        from rcmdp_exact.suite.store import data

        setup_certified(folder)
        payload = copy.deepcopy(data(folder / "v.json.gz"))
        change(payload)
        write_data(folder / "d.json.gz", payload)
    return setup


def _rec(payload):
    return payload["records"][0]


def _set(obj, field, value):
    obj[field] = value


def _without(obj, field):
    del obj[field]


def setup_truncated(folder: Path) -> None:
    setup_certified(folder)
    raw = (folder / "v.json.gz").read_bytes()
    (folder / "d.json.gz").write_bytes(raw[: len(raw) // 2])


def setup_stale_seeding(folder: Path) -> None:
    """The tiny certification and the seeding folders a SIGKILL left (the name of
    before one per process, and one of a process that is gone)."""
    import socket

    setup_certified(folder)
    for name in (".w.json.gz.work.seeding",
                 f".w.json.gz.work.seeding.{socket.gethostname()}.{2**31 - 1}"):
        (folder / name).mkdir()
        (folder / name / "settings.json").write_text("{")


def setup_data_in_seeding(folder: Path) -> None:
    setup_certified(folder)
    (folder / ".w.json.gz.work.seeding").mkdir()
    shutil.copy(folder / "v.json.gz", folder / ".w.json.gz.work.seeding" / "d.json.gz")


def _seeding_again(folder, out, err):
    """After an interrupted seeding: no folder left, and the same command then works."""
    _no_work_folder("w.json.gz")(folder, out, err)
    proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", "suite", "certify", "--out",
                           "w.json.gz", "--resume-from", "v.json.gz", *TINY], cwd=folder,
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr
    _same_records("w.json.gz", "v.json.gz")(folder, out, err)


def _verified(name):
    """``rcmdp suite verify --file name`` passes on the written file."""
    def check(folder, out, err):
        proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", "suite", "verify",
                               "--file", name, "riverswim-6", "--no-progress"], cwd=folder,
                              capture_output=True, text=True, timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "0 failed" in proc.stdout, proc.stdout
    return check


def _no_seeding_left(folder, out, err):
    left = [p.name for p in folder.iterdir() if ".seeding" in p.name]
    assert not left, left


#: The tiny job and one more (level 0.1, not in the tiny data file): a job runs after
#: the seeding.
RESUMED = (*TINY[:4], "--levels", "0.05,0.1", *TINY[6:])
DAMAGED = (*CERTIFIED, "d.json.gz")


#: One tiny job with a branch and bound of 2 boxes (open after it), and its extension.
BOXED = ("--only", "riverswim-6", "--kinds", "l1", "--levels", "0.05", "--time-limit",
         "120", "--no-progress")


def _extend_damaged(id, change):
    """A row: a work folder certified with the schedule [2] whose job file's bracket was
    damaged by ``change`` (where only the extension looks), then extended to [2, 400]:
    the job is said to be damaged, moved aside (``.damaged``) and recomputed; the file
    written verifies."""
    def setup(folder: Path) -> None:
        proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", "suite", "certify",
                               "--out", "v.json.gz", *BOXED, "--max-boxes", "2"],
                              cwd=folder, capture_output=True, text=True, timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        job = folder / "v.json.gz.work" / "riverswim-6__l1__0.05.json"
        rec = json.loads(job.read_text())
        change(rec)
        job.write_text(json.dumps(rec))
        (folder / "mine.txt").write_text("the user's own file")

    def after(folder, out, err):
        assert "is not a finished job" in err and \
            "recomputing the job riverswim-6/l1/0.05" in err, err
        work = folder / "v.json.gz.work"
        assert (work / "riverswim-6__l1__0.05.json.damaged").exists()
        assert (work / "riverswim-6__l1__0.05.npz.damaged").exists()
        _verified("v.json.gz")(folder, out, err)

    return Cli(id, ("suite", "certify", "--out", "v.json.gz", *BOXED, "--max-boxes",
                    "2,400", "--force"),
               code=0, setup=setup, unchanged=("mine.txt",), created=None, after=after)


def _last_run(rec):
    return rec["bracket"]["runs"][-1]


EXTEND_DAMAGED = [
    _extend_damaged("extend-a-job-whose-last-run-has-a-text-gap",
                    lambda r: _set(_last_run(r), "relative_gap", "x")),
    _extend_damaged("extend-a-job-whose-runs-are-numbers",
                    lambda r: _set(r["bracket"], "runs", [5])),
    _extend_damaged("extend-a-job-without-its-bracket", lambda r: r.pop("bracket")),
]


def _resume(id, source, *flags, **row):
    """A row: ``rcmdp suite certify --out w.json.gz --resume-from SOURCE FLAGS`` on the
    tiny budget (``row``: the rest of the :class:`Cli` row)."""
    return Cli(id, ("suite", "certify", "--out", "w.json.gz", "--resume-from", source,
                    *flags, *TINY), **row)


def _resume_damaged(id, change, *facts):
    """A row: --resume-from a data file damaged by ``change``: refused in one line
    naming the option, the file and ``facts``, before any folder is made."""
    return _resume(id, "d.json.gz", facts=("--resume-from", "d.json.gz", *facts),
                   setup=_damaged(change), unchanged=DAMAGED)


RESUME_DAMAGED = [
    _resume_damaged("resume-from-a-record-without-its-free-policy",
                    lambda d: _without(_rec(d), "free_policy"), "riverswim-6/l1/0.05",
                    "free_policy"),
    _resume_damaged("resume-from-a-record-without-its-least-policy",
                    lambda d: _without(_rec(d), "least_policy"), "riverswim-6/l1/0.05",
                    "least_policy"),
    _resume_damaged("resume-from-a-record-without-its-lower-policy",
                    lambda d: _without(_rec(d)["bracket"], "lower_policy"),
                    "riverswim-6/l1/0.05", "lower_policy"),
    _resume_damaged("resume-from-a-lower-side-without-its-policy",
                    lambda d: _set(_rec(d)["bracket"], "lower_policy", None),
                    "riverswim-6/l1/0.05", "lower_policy"),
    _resume_damaged("resume-from-a-bracket-that-is-a-list",
                    lambda d: _set(_rec(d), "bracket", []), "riverswim-6/l1/0.05",
                    "bracket"),
    _resume_damaged("resume-from-a-lower-policy-of-another-shape",
                    lambda d: _set(_rec(d)["bracket"], "lower_policy", [[0.5, 0.5]]),
                    "riverswim-6/l1/0.05", "lower_policy", "(6, 2)", "(1, 2)"),
    _resume_damaged("resume-from-a-lower-policy-with-nan",
                    lambda d: _set(_rec(d)["bracket"]["lower_policy"][2], 1, float("nan")),
                    "riverswim-6/l1/0.05", "lower_policy[2, 1]", "nan"),
    _resume_damaged("resume-from-a-free-policy-that-is-no-distribution",
                    lambda d: _set(_rec(d), "free_policy",
                                   [[0.25, 0.25]] * len(_rec(d)["free_policy"])),
                    "riverswim-6/l1/0.05", "free_policy", "sums to 0.5"),
    _resume_damaged("resume-from-a-free-policy-of-text",
                    lambda d: _set(_rec(d), "free_policy", "abc"), "riverswim-6/l1/0.05",
                    "free_policy"),
    _resume_damaged("resume-from-a-record-under-another-key",
                    lambda d: _set(_rec(d), "key", "riverswim-6/l1/0.1"),
                    "riverswim-6/l1/0.1", "riverswim-6/l1/0.05"),
    _resume_damaged("resume-from-a-record-of-another-instance-than-its-key",
                    lambda d: _set(_rec(d), "instance", "chain-10"), "riverswim-6/l1/0.05",
                    "chain-10/l1/0.05"),
    _resume_damaged("resume-from-a-record-of-an-unknown-instance",
                    lambda d: (_set(_rec(d), "instance", "nosuch"),
                               _set(_rec(d), "key", "nosuch/l1/0.05")), "'nosuch'"),
    _resume_damaged("resume-from-a-record-of-a-level-off-the-grid",
                    lambda d: (_set(_rec(d), "level", 0.07),
                               _set(_rec(d), "key", "riverswim-6/l1/0.07")), "0.07"),
    _resume_damaged("resume-from-a-key-that-is-a-number",
                    lambda d: _set(_rec(d), "key", 5), "key 5"),
    _resume_damaged("resume-from-a-record-twice",
                    lambda d: d["records"].append(dict(_rec(d))), "riverswim-6/l1/0.05",
                    "twice"),
    _resume_damaged("resume-from-filled-keys-that-are-no-records",
                    lambda d: _set(d, "filled", {"keys": ["riverswim-6/kl/0.1"]}),
                    "filled", "riverswim-6/kl/0.1"),
    _resume_damaged("resume-from-a-filled-header-that-is-a-list",
                    lambda d: _set(d, "filled", ["riverswim-6/l1/0.05"]), "filled"),
    _resume_damaged("resume-from-an-extends-that-is-a-number",
                    lambda d: _set(d, "extends", 5), "extends"),
    _resume_damaged("resume-from-an-extends-of-no-budgets",
                    lambda d: _set(d, "extends", [{"schedule": "x"}]), "extends",
                    "schedule"),
    _resume_damaged("resume-from-a-header-without-checksums",
                    lambda d: _without(d, "instances_sha256"), "instances_sha256"),
    _resume_damaged("resume-from-a-header-without-the-checksum-of-its-records",
                    lambda d: _set(d, "instances_sha256", {}), "checksum", "riverswim-6"),
    _resume_damaged("resume-from-checksums-that-are-a-list",
                    lambda d: _set(d, "instances_sha256", ["x"]), "instances_sha256"),
    _resume_damaged("resume-from-a-budget-without-its-schedule",
                    lambda d: _without(d["budget"], "schedule"), "no valid work budget",
                    "schedule"),
    _resume_damaged("resume-from-a-budget-that-is-text",
                    lambda d: _set(d, "budget", "x"), "no valid work budget"),
    _resume_damaged("resume-from-a-record-of-seconds-in-text",
                    lambda d: _set(_rec(d), "seconds", "x"), "riverswim-6/l1/0.05",
                    "seconds"),
    _resume_damaged("resume-from-a-record-whose-work-is-a-list",
                    lambda d: _set(_rec(d), "work", [1]), "riverswim-6/l1/0.05",
                    "work budget"),
    _resume_damaged("resume-from-a-record-of-another-work-budget",
                    lambda d: _set(_rec(d)["work"], "schedule", [5]), "riverswim-6/l1/0.05",
                    "work budget", "[5]"),
    _resume_damaged("resume-from-a-record-without-its-work",
                    lambda d: _without(_rec(d), "work"), "riverswim-6/l1/0.05",
                    "work budget"),
    _resume_damaged("resume-from-a-run-that-is-a-number",
                    lambda d: _set(_rec(d)["bracket"], "runs", [5]), "riverswim-6/l1/0.05",
                    "bracket"),
    _resume("resume-from-a-truncated-file", "d.json.gz",
        facts=("--resume-from", "d.json.gz", "not a suite data file"),
        setup=setup_truncated, unchanged=DAMAGED),
    _resume("resume-from-a-directory", "v.json.gz.work",
        facts=("--resume-from", "v.json.gz.work", "no suite data file"),
        setup=setup_certified, unchanged=CERTIFIED),
    Cli("resume-from-a-file-in-the-seeding-folder",
        ("suite", "certify", "--out", "w.json.gz", "--resume-from",
         ".w.json.gz.work.seeding/d.json.gz", *TINY),
        facts=("--resume-from", ".w.json.gz.work.seeding", "move the file out"),
        setup=setup_data_in_seeding,
        unchanged=(*CERTIFIED, ".w.json.gz.work.seeding/d.json.gz")),
    Cli("resume-from-the-file-it-replaces", ("suite", "certify", "--out", "v.json.gz",
                                             "--resume-from", "v.json.gz", "--force",
                                             *TINY),
        code=0, setup=lambda f: (setup_certified(f), shutil.rmtree(f / "v.json.gz.work")),
        unchanged=("mine.txt",), created=None,
        after=lambda f, o, e: (_data_file_whole("v.json.gz")(f, o, e),
                               _verified("v.json.gz")(f, o, e))),
    Cli("resume-from-then-verify", ("suite", "certify", "--out", "w.json.gz",
                                    "--resume-from", "v.json.gz", "--workers", "2",
                                    *RESUMED),
        code=0, setup=setup_certified, unchanged=CERTIFIED, created=None,
        after=lambda f, o, e: (_data_file_whole("w.json.gz", (
            "riverswim-6/l1/0.05", "riverswim-6/l1/0.1"))(f, o, e),
            _verified("w.json.gz")(f, o, e))),
    _resume("resume-from-beside-seeding-folders-a-sigkill-left", "v.json.gz",
        code=0, setup=setup_stale_seeding, unchanged=CERTIFIED, created=None,
        after=lambda f, o, e: (_no_seeding_left(f, o, e),
                               _same_records("w.json.gz", "v.json.gz")(f, o, e))),
    _resume("resume-from-an-unreachable-scheduler", "v.json.gz",
            "--scheduler", "tcp://127.0.0.1:1",
        facts=("--scheduler", "tcp://127.0.0.1:1", "cannot reach"), absent=("--dask",),
        setup=setup_certified, unchanged=CERTIFIED),
    _resume("resume-from-sigint-while-seeding", "v.json.gz",
        code=130, signal="INT", moment="busy", at="certify.py:_write_job",
        setup=setup_certified, unchanged=CERTIFIED, created=None, after=_seeding_again),
    _resume("resume-from-sigterm-while-seeding", "v.json.gz",
        code=143, signal="TERM", moment="busy", at="certify.py:_write_job",
        setup=setup_certified, unchanged=CERTIFIED, created=None, after=_seeding_again),
]


CERTIFY = [
    Cli("certify-on-a-full-disk", ("suite", "certify", "--out", "w.json.gz", *TINY),
        facts=("w.json.gz",), disk="full", setup=setup_plain, unchanged=("mine.txt",),
        created=None, after=_no_output("w.json.gz")),
    Cli("certify-into-a-read-only-folder", ("suite", "certify", "--out", "w.json.gz",
                                            *TINY),
        facts=("w.json.gz",), disk="readonly", setup=setup_plain, unchanged=("mine.txt",)),
    Cli("certify-sigint-inside-the-job", INTERRUPTED,
        code=130, signal="INT", moment="busy", at="_lower_search", setup=setup_plain,
        unchanged=("mine.txt",), created=None, after=_resumable, marks=("slow",)),
    Cli("certify-the-user's-file-without-force", ("suite", "certify", "--out", "mine.txt",
                                                  *TINY),
        facts=("mine.txt",), setup=setup_plain, unchanged=("mine.txt",)),
    # --fill: the data file filled from its own work folder, out == fill
    Cli("fill-from-the-file-it-replaces", ("suite", "certify", "--out", "v.json.gz",
                                           "--fill", "v.json.gz", "--force", *TINY),
        code=0, setup=setup_certified, unchanged=(*WORK, "mine.txt"),
        after=_data_file_whole("v.json.gz")),
    Cli("fill-from-a-file-that-is-not-data", ("suite", "certify", "--out", "v.json.gz",
                                              "--fill", "notdata.json.gz", "--force",
                                              *TINY),
        facts=("--fill", "notdata.json.gz"), setup=setup_certified, unchanged=CERTIFIED),
    Cli("fill-lacking-records", ("suite", "certify", "--out", "v.json.gz", "--fill",
                                 "v.json.gz", "--force", "--only", "riverswim-6",
                                 "--max-boxes", "0", "--no-progress"),
        facts=("--fill", "v.json.gz", "riverswim-6/l1/0.1"), setup=setup_certified,
        unchanged=CERTIFIED),
    Cli("fill-with-another-budget", ("suite", "certify", "--out", "v.json.gz", "--fill",
                                     "v.json.gz", "--force", "--only", "riverswim-6",
                                     "--kinds", "l1", "--levels", "0.05", "--max-boxes",
                                     "500", "--no-progress"),
        facts=("--fill", "work budget"), setup=setup_certified, unchanged=CERTIFIED),
    Cli("fill-with-damaged-settings", ("suite", "certify", "--out", "v.json.gz", "--fill",
                                       "v.json.gz", "--force", *TINY),
        facts=("settings.json", "damaged", "delete the folder"), setup=setup_damaged_settings,
        unchanged=("v.json.gz", "mine.txt")),
    Cli("fill-into-a-read-only-folder", ("suite", "certify", "--out", "v.json.gz",
                                         "--fill", "v.json.gz", "--force", *TINY),
        facts=("v.json.gz",), disk="readonly", setup=setup_certified, unchanged=CERTIFIED),
    Cli("fill-on-a-full-disk", ("suite", "certify", "--out", "x.json.gz", "--fill",
                                "v.json.gz", "--force", *TINY),
        facts=("x.json.gz",), disk="full", setup=setup_certified, unchanged=CERTIFIED,
        created=None, after=_no_output("x.json.gz")),
    # --resume-from: a work folder started from a data file
    _resume("resume-from-a-finished-file", "v.json.gz",
        code=0, setup=setup_certified, unchanged=CERTIFIED, created=None,
        after=_same_records("w.json.gz", "v.json.gz")),
    Cli("resume-from-into-an-existing-work-folder", ("suite", "certify", "--out",
                                                     "v.json.gz", "--resume-from",
                                                     "v.json.gz", "--force", *TINY),
        facts=("--resume-from", "exists", "without --resume-from"), setup=setup_certified,
        unchanged=CERTIFIED),
    _resume("resume-from-a-file-that-is-not-data", "notdata.json.gz",
        facts=("--resume-from", "notdata.json.gz", "not a suite data file"),
        setup=setup_certified, unchanged=CERTIFIED),
    _resume("resume-from-a-missing-file", "nothere.json.gz",
        facts=("--resume-from", "nothere.json.gz", "no suite data file"),
        setup=setup_certified,
        unchanged=CERTIFIED),
    _resume("resume-from-with-another-time-limit", "v.json.gz", "--time-limit", "5",
        facts=("--resume-from", "does not extend"), setup=setup_certified,
        unchanged=CERTIFIED),
    _resume("resume-from-a-file-of-other-instances", "other.json.gz",
        facts=("--resume-from", "other instances", "riverswim-6"),
        setup=setup_other_instances, unchanged=CERTIFIED),
    Cli("resume-from-and-fill", ("suite", "certify", "--out", "w.json.gz", "--resume-from",
                                 "v.json.gz", "--fill", "v.json.gz", *TINY),
        facts=("--fill", "--resume-from", "give one"), setup=setup_certified,
        unchanged=CERTIFIED),
    _resume("resume-from-on-a-full-disk", "v.json.gz",
        facts=("w.json.gz",), disk="full", setup=setup_certified, unchanged=CERTIFIED,
        created=None, after=_no_work_folder("w.json.gz")),
    _resume("resume-from-into-a-read-only-folder", "v.json.gz",
        facts=("w.json.gz",), disk="readonly", setup=setup_certified, unchanged=CERTIFIED),
    # a signal once the data file is written says so (it said "run the same command
    # again to resume", as if nothing were finished)
    Cli("certify-sigterm-as-it-returns", ("suite", "certify", "--out", "v.json.gz",
                                          "--force", *TINY),
        code=143, signal="TERM", moment="return", setup=setup_certified,
        facts=("rcmdp suite: terminated", "v.json.gz is complete"),
        unchanged=("mine.txt",), created=None,
        after=_data_file_whole("v.json.gz", ("riverswim-6/l1/0.05",))),
    Cli("fill-sigint-as-it-returns", ("suite", "certify", "--out", "v.json.gz", "--fill",
                                      "v.json.gz", "--force", *TINY),
        code=130, signal="INT", moment="return", setup=setup_certified,
        facts=("rcmdp suite: interrupted", "v.json.gz is complete"),
        unchanged=("mine.txt",), created=None),
]

SCORE = [
    Cli("score-a-planner-by-name", ("suite", "score", "--algorithm", "rnpg", "--instances",
                                    "riverswim-6", "--seeds", "1", "--episodes", "3",
                                    "--no-progress"),
        code=0, stdout=("rnpg",)),
    Cli("score-a-planner-name-and-an-unknown-one",
        ("suite", "score", "--algorithm", "rnpg,rnpgg", "--seeds", "1"),
        facts=("--algorithm", "'rnpgg'", "rnpg")),
    Cli("score-out-on-a-full-disk", ("suite", "score", "--algorithm", "uniform",
                                     "--instances", "riverswim-6", "--seeds", "1",
                                     "--out", "s.json", "--no-progress"),
        facts=("s.json",), disk="full", setup=setup_plain, unchanged=("mine.txt",),
        created=None, after=_no_output("s.json")),
    Cli("score-file-not-data", ("suite", "score", "--algorithm", "uniform", "--instances",
                                "riverswim-6", "--seeds", "1", "--file",
                                "notdata.json.gz", "--no-progress"),
        facts=("notdata.json.gz",), setup=setup_certified, unchanged=CERTIFIED),
    Cli("score-a-level-the-file-lacks", ("suite", "score", "--algorithm", "uniform",
                                         "--instances", "riverswim-6", "--seeds", "1",
                                         "--file", "v.json.gz", "--level", "0.1",
                                         "--no-progress"),
        facts=("riverswim-6", "0.1", "certify"), setup=setup_certified,
        unchanged=CERTIFIED),
]

OTHERS = [
    Cli("verify-the-tiny-file", ("suite", "verify", "--file", "v.json.gz", "riverswim-6",
                                 "--no-progress"),
        code=0, setup=setup_certified, unchanged=CERTIFIED, stdout=("0 failed",)),
    Cli("verify-an-instance-the-file-lacks", ("suite", "verify", "--file", "v.json.gz",
                                              "taxi", "--no-progress"),
        facts=("taxi", "v.json.gz"), setup=setup_certified, unchanged=CERTIFIED),
    Cli("figure-scores-not-a-scores-file", ("suite", "figure", "--out", "f.png",
                                            "--scores", "notdata.json.gz"),
        facts=("notdata.json.gz",), setup=setup_certified, unchanged=CERTIFIED),
    Cli("figure-scores-missing", ("suite", "figure", "--out", "f.png", "--scores",
                                  "s.json"),
        facts=("--scores", "s.json", "rcmdp suite score --out"),
        absent=("rcmdp suite certify",)),
    Cli("figure-into-a-read-only-folder", ("suite", "figure", "--out", "f.png", "--file",
                                           "v.json.gz"),
        facts=("f.png",), disk="readonly", setup=setup_certified, unchanged=CERTIFIED),
    Cli("figure-over-the-user's-file", ("suite", "figure", "--out", "mine.png"),
        facts=("mine.png", "--force"), setup=lambda f: (f / "mine.png").write_text("x"),
        unchanged=("mine.png",)),
    Cli("show-from-a-file-that-is-not-data", ("suite", "show", "riverswim-6", "--file",
                                              "notdata.json.gz"),
        facts=("notdata.json.gz",), setup=setup_certified, unchanged=CERTIFIED),
]

HOSTILE = [*CERTIFY, *RESUME_DAMAGED, *EXTEND_DAMAGED, *SCORE, *OTHERS]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)


def _two_at_once(args, cwd, refusal: str = "") -> None:
    """``rcmdp ARGS`` twice at once in ``cwd``: no traceback, at least one finishes, and
    one refused says so in one line (exit 2; naming ``refusal``)."""
    argv = [sys.executable, "-m", "rcmdp_exact", *args]
    procs = [subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=HANG_GUARD) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert "Traceback" not in err, err
        if p.returncode:
            assert p.returncode == 2 and len(err.strip().splitlines()) == 1, err
            assert refusal in err, err
    assert min(p.returncode for p in procs) == 0, outs


def test_two_certifications_of_one_file(tmp_path):
    """Two ``certify --out`` of the same file at once: both finish or one is refused
    with one line; the data file is whole either way and the work folder holds one
    job."""
    _two_at_once(["suite", "certify", "--out", "v.json.gz", *TINY], tmp_path)
    _data_file_whole("v.json.gz")(tmp_path, "", "")
    assert _settings_of(tmp_path)["budget"]["schedule"] == []


def test_two_resumes_of_one_file(tmp_path):
    """Two ``certify --out w.json.gz --resume-from v.json.gz`` at once: each seeds a
    folder of its own (they wrote into one and both failed, "No such file or
    directory"); one makes the work folder, the other finishes from it or is refused
    with one line; the data file holds the records of v.json.gz and no seeding folder
    is left.  The shipped file (its 200 records take long enough to seed that the two
    overlap) with its own budget: the tiny job is one of its records, kept."""
    from rcmdp_exact.suite.store import DATA_FILE

    shutil.copy(DATA_FILE, tmp_path / "v.json.gz")
    _two_at_once(["suite", "certify", "--out", "w.json.gz", "--resume-from", "v.json.gz",
                  *TINY[:6], "--no-progress"], tmp_path, refusal="without --resume-from")
    _data_file_whole("w.json.gz")(tmp_path, "", "")
    _no_seeding_left(tmp_path, "", "")


def test_an_interrupt_after_seeding_says_how_to_resume(tmp_path):
    """SIGINT in the first job a --resume-from run runs (after the folder is seeded):
    exit 130, and the interrupt's line says to run the command without --resume-from
    (it said "run the same command again", which is refused: the folder exists now);
    that command then finishes from the folder."""
    setup_certified(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SIGNAL_SITE)
    argv = [sys.executable, "-m", "rcmdp_exact", "suite", "certify", "--out", "w.json.gz",
            *RESUMED]
    proc = subprocess.run([*argv, "--resume-from", "v.json.gz"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_GUARD,
                          env=env([site], HOSTILE_MOMENT="busy", HOSTILE_SIGNAL="INT",
                                  HOSTILE_AT="certify.py:certify_job", HOSTILE_CALLS=1),
                          # Ctrl-C's default action: a shell that started the tests in
                          # the background ignores SIGINT, and its children inherit that
                          preexec_fn=_child(), start_new_session=True)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "interrupted" in last and "without --resume-from" in last, proc.stderr
    again = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                           timeout=HANG_GUARD)
    assert again.returncode == 0, again.stderr
    _data_file_whole("w.json.gz", ("riverswim-6/l1/0.05", "riverswim-6/l1/0.1"))(
        tmp_path, "", "")
