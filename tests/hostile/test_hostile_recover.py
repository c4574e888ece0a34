"""Hostile inputs of ``rcmdp recover`` (the table's shape: tests/hostile/hostile.py)."""

from __future__ import annotations

import sys

import pytest
from hostile import (
    INPUT_FILES,
    SLOW_STANDIN,
    SMALL,
    STORE_FILES,
    Cli,
    holder_ready,
    holding_lock,
    marked,
    rows,
    run_cli,
    setup_files,
    setup_store,
    setup_store_marked,
    stored_jobs,
)


def _every_job_in_place(folder, out, err):
    """The sweep beside finished into the store in place: 7 jobs stored before, the
    rest computed into the same file (none into a file moved away)."""
    assert stored_jobs(folder / "runs.sqlite") == 4 * 2 + 3, "jobs lost"
    assert not (folder / "runs.sqlite.damaged").exists()


def _recovered(folder, out, err):
    assert (folder / "runs.sqlite.damaged").exists()
    assert stored_jobs(folder / "runs.sqlite") == 7


HOSTILE = [
    # another application's SQLite file: refused, not moved away and replaced
    Cli("foreign-sqlite", ("recover", "--db", "other.sqlite"),
        facts=("--db 'other.sqlite'", "another kind", "songs", "leaves it as it is"),
        setup=setup_files, unchanged=INPUT_FILES),
    Cli("zero-bytes", ("recover", "--db", "empty.sqlite"),
        facts=("--db 'empty.sqlite'", "is empty (0 bytes)", "no job to recover"),
        absent=("are gone",), setup=setup_files, unchanged=INPUT_FILES),
    Cli("a-model-file", ("recover", "--db", "good.npz"),
        facts=("--db 'good.npz'", "not a SQLite database"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("missing", ("recover", "--db", "missing.sqlite"),
        facts=("--db 'missing.sqlite'", "does not exist")),
    Cli("folder", ("recover", "--db", "."), facts=("--db '.'", "is a folder")),
    Cli("damaged-name-taken", ("recover", "--db", "runs.sqlite"),
        facts=("runs.sqlite.damaged", "exists", "move it away"),
        setup=lambda f: (setup_store(f), (f / "runs.sqlite.damaged").write_bytes(b"x")),
        unchanged=STORE_FILES),
    # a read-only folder: names the folder of --db, not a ".probe" file of its own
    Cli("read-only-folder", ("recover", "--db", "runs.sqlite"), disk="readonly",
        facts=("folder", "of --db is not writable", "copy the store"),
        absent=(".probe",), setup=setup_store, unchanged=STORE_FILES),
    # a full disk: the store is not changed, and the line names no file it deleted
    Cli("full-disk", ("recover", "--db", "runs.sqlite"), disk="full",
        facts=("cannot be written beside", "runs.sqlite", "is not changed",
               "rcmdp recover again"),
        absent=(".recovering",), setup=setup_store, unchanged=STORE_FILES),
    # concurrent runs: a sweep writing the store is not robbed of its jobs
    Cli("while-reproduce-writes", ("recover", "--db", "runs.sqlite"),
        facts=("runs.sqlite", "in use by another rcmdp command", "not changed"),
        setup=setup_store_marked, env=SLOW_STANDIN,
        beside=(sys.executable, "-m", "rcmdp_exact", "reproduce", *SMALL, "--seeds", "4",
                "--db", "runs.sqlite", "--out", "rep"),
        beside_ready=marked, after=_every_job_in_place, created=None,
        marks=("slow",)),
    Cli("while-another-recovers", ("recover", "--db", "runs.sqlite"),
        facts=("runs.sqlite", "in use by another rcmdp command"), setup=setup_store,
        beside=holding_lock("runs.sqlite"), beside_ready=holder_ready, beside_code=None,
        unchanged=STORE_FILES, created=("held",)),
    # the end: an intact store recovered, then a signal at the interpreter's exit
    Cli("sigint-at-exit", ("recover", "--db", "runs.sqlite"), code=130, signal="INT",
        moment="exit", facts=("rcmdp recover: interrupted", "holds the recovered store"),
        stdout=("recovered every job",), setup=setup_store, after=_recovered,
        created=None),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)
