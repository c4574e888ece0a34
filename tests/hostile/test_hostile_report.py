"""Hostile inputs of ``rcmdp report`` (the table's shape: tests/hostile/hostile.py)."""

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
)


def _report_in_out(folder, out, err):
    assert (folder / "rep" / "table1.md").exists()


HOSTILE = [
    Cli("foreign-sqlite", ("report", "--db", "other.sqlite", "--out", "rep"),
        facts=("--db 'other.sqlite'", "another kind"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("zero-bytes", ("report", "--db", "empty.sqlite", "--out", "rep"),
        facts=("empty.sqlite",), setup=setup_files, unchanged=INPUT_FILES),
    Cli("a-model-file", ("report", "--db", "good.npz", "--out", "rep"),
        facts=("--db 'good.npz'", "not a SQLite database"), setup=setup_files),
    Cli("out-is-a-file", ("report", "--db", "runs.sqlite", "--out", "good.npz"),
        facts=("--out", "good.npz"), setup=setup_store, unchanged=STORE_FILES),
    # the report's folder is read-only, or its disk full: one line, files whole
    Cli("read-only-out", ("report", "--db", "runs.sqlite", "--out", "."),
        disk="readonly", facts=("--out",), setup=setup_store, unchanged=STORE_FILES),
    Cli("full-disk", ("report", "--db", "runs.sqlite", "--out", "."), disk="full",
        facts=("runs.sqlite", "free space on its disk"), setup=setup_store,
        unchanged=STORE_FILES),
    # writes beyond 40,000 bytes fail (EFBIG, as ENOSPC on a full disk): SQLite's -shm
    # fits, the first figure does not
    Cli("disk-full-at-the-figures", ("report", "--db", "runs.sqlite", "--out", "rep",
                                     "--no-progress"), fsize=40_000,
        facts=("the report cannot be written", "test_1A.png", "results store is not "
               "changed"), setup=setup_store, unchanged=STORE_FILES, created=None),
    # concurrent runs: a recovery holds the store; a sweep beside does not stop a report
    Cli("while-recover-holds-the-store", ("report", "--db", "runs.sqlite", "--out", "rep"),
        facts=("runs.sqlite", "being recovered by rcmdp recover"), setup=setup_store,
        beside=holding_lock("runs.sqlite"), beside_ready=holder_ready, beside_code=None,
        unchanged=STORE_FILES, created=("held",)),
    Cli("while-reproduce-writes", ("report", "--db", "runs.sqlite", "--out", "rep",
                                   "--no-progress"), code=0,
        stdout=("wrote",), setup=setup_store_marked,
        env=SLOW_STANDIN,
        beside=(sys.executable, "-m", "rcmdp_exact", "reproduce", *SMALL, "--seeds", "3",
                "--db", "runs.sqlite", "--out", "rep2"),
        beside_ready=marked, after=_report_in_out, created=None, marks=("slow",)),
    Cli("sigint-at-exit", ("report", "--db", "runs.sqlite", "--out", "rep",
                           "--no-progress"), code=130, signal="INT", moment="exit",
        facts=("rcmdp report: interrupted", "the report is complete"),
        stdout=("wrote",), setup=setup_store, unchanged=STORE_FILES, created=None),
    Cli("sigterm-busy", ("report", "--db", "runs.sqlite", "--out", "rep",
                         "--no-progress"), code=143, signal="TERM", moment="busy",
        at="_write_text", calls=2,
        facts=("rcmdp report: terminated", "results store is not changed"),
        setup=setup_store, unchanged=STORE_FILES, created=None),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)
