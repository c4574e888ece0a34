"""Hostile inputs of ``rcmdp reproduce`` (the table's shape: tests/hostile/hostile.py)."""

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


def _jobs(n):
    def check(folder, out, err):
        assert stored_jobs(folder / "runs.sqlite") == n
    return check


HOSTILE = [
    Cli("foreign-sqlite", ("reproduce", *SMALL, "--db", "other.sqlite", "--out", "rep"),
        facts=("--db 'other.sqlite'", "another kind"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("a-model-file-as-db", ("reproduce", *SMALL, "--db", "good.npz", "--out", "rep"),
        facts=("--db 'good.npz'", "not a SQLite database"), setup=setup_files),
    Cli("sparse-index-out-of-range", ("reproduce", "--model", "sparse_oob.npz",
                                      "--out", "rep"),
        facts=("--model 'sparse_oob.npz'", "column index 1000000"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("forged-header", ("reproduce", "--model", "forged.npz", "--out", "rep"),
        facts=("--model 'forged.npz'", "298 GiB"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("seeds-above-the-limit", ("reproduce", "--seeds", "99999999999", "--out", "rep"),
        facts=("--seeds", "10^4")),
    # the store is being recovered: refused before any work
    Cli("while-recover-holds-the-store", ("reproduce", *SMALL, "--db", "runs.sqlite",
                                          "--out", "rep"),
        facts=("runs.sqlite", "being recovered by rcmdp recover"), setup=setup_store,
        beside=holding_lock("runs.sqlite"), beside_ready=holder_ready, beside_code=None,
        unchanged=STORE_FILES, created=("held",)),
    Cli("read-only-out", ("reproduce", *SMALL, "--out", "."), disk="readonly",
        facts=("--out '.'", "is not writable"), setup=setup_files, unchanged=INPUT_FILES),
    Cli("full-disk", ("reproduce", *SMALL, "--seeds", "3", "--db", "runs.sqlite",
                      "--out", "rep"), disk="full",
        facts=("runs.sqlite", "run the same command again"), setup=setup_store,
        created=None),
    # two sweeps into one store at once: both finish, every job stored once
    Cli("beside-another-reproduce", ("reproduce", *SMALL, "--seeds", "3", "--db",
                                     "runs.sqlite", "--out", "rep"), code=0,
        stdout=("already stored",), setup=setup_store_marked, env=SLOW_STANDIN,
        beside=(sys.executable, "-m", "rcmdp_exact", "reproduce", *SMALL, "--seeds", "3",
                "--db", "runs.sqlite", "--out", "rep2"),
        beside_ready=marked, after=_jobs(3 * 2 + 3), created=None, marks=("slow",)),
    # signals in a run and at its very end: one line, what was kept, resumable
    Cli("sigint-in-a-run", ("reproduce", *SMALL, "--seeds", "3", "--db", "runs.sqlite",
                            "--out", "rep"), code=130, signal="INT", moment="ready",
        ready=marked, env=SLOW_STANDIN, setup=setup_store_marked,
        facts=("rcmdp reproduce: interrupted", "finished jobs are kept", "runs.sqlite",
               "run the same command again"), created=None, marks=("slow",)),
    Cli("sigterm-in-a-run", ("reproduce", *SMALL, "--seeds", "3", "--db", "runs.sqlite",
                             "--out", "rep"), code=143, signal="TERM", moment="ready",
        ready=marked, env=SLOW_STANDIN, setup=setup_store_marked,
        facts=("rcmdp reproduce: terminated", "finished jobs are kept"), created=None,
        marks=("slow",)),
    Cli("sigint-at-exit", ("reproduce", *SMALL, "--db", "runs.sqlite", "--out", "rep"),
        code=130, signal="INT", moment="exit", setup=setup_store,
        facts=("rcmdp reproduce: interrupted", "every finished job is stored"),
        stdout=("0 jobs computed",), created=None),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)
