"""Hostile inputs of ``rcmdp train`` (the table's shape: tests/hostile/hostile.py)."""

from __future__ import annotations

import pytest
from hostile import INPUT_FILES, Cli, rows, run_cli, setup_files

QUICK = ("--episodes", "2", "--eval-every", "1", "--no-bracket", "--no-progress")


def _written(folder, out, err):
    assert (folder / "r.npz").exists() and "wrote r.npz" in out


HOSTILE = [
    Cli("sparse-index-out-of-range", ("train", "pg", "--model", "sparse_oob.npz", *QUICK),
        facts=("--model 'sparse_oob.npz'", "column index 1000000"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("forged-header", ("train", "pg", "--model", "forged.npz", *QUICK),
        facts=("--model 'forged.npz'", "298 GiB"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("format-version-9", ("train", "pg", "--model", "v9.npz", *QUICK),
        facts=("--model 'v9.npz'", "format version '9'"), setup=setup_files),
    Cli("episodes-above-the-limit", ("train", "nav2", "pg", "--episodes", "99999999999"),
        facts=("--episodes", "10^7")),
    Cli("out-exists", ("train", "nav2", "pg", *QUICK, "--out", "good.npz"),
        facts=("good.npz", "--force"), setup=setup_files, unchanged=INPUT_FILES),
    # the result's folder is read-only (refused before training), or its disk full
    # (one line naming the file, no half-written file)
    Cli("read-only-out", ("train", "nav2", "pg", *QUICK, "--out", "r.npz"),
        disk="readonly", facts=("--out", "r.npz", "not writable"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("full-disk", ("train", "nav2", "pg", *QUICK, "--out", "r.npz"), disk="full",
        facts=("the trained result cannot be written", "r.npz", "no file was written"),
        setup=setup_files, unchanged=INPUT_FILES),
    Cli("sigint-busy", ("train", "nav2", "pg", "--episodes", "2000", "--no-bracket",
                        "--no-progress", "--out", "r.npz"), code=130, signal="INT",
        moment="busy", cpu=1.5, facts=("rcmdp train: interrupted", "nothing was written")),
    Cli("sigterm-at-exit", ("train", "nav2", "pg", *QUICK, "--out", "r.npz"), code=143,
        signal="TERM", moment="exit",
        facts=("rcmdp train: terminated", "the result was written to"),
        after=_written, created=("r.npz",)),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)
