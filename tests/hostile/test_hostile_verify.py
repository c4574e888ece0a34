"""Hostile inputs of ``rcmdp verify`` (the table's shape: tests/hostile/hostile.py)."""

from __future__ import annotations

import pytest
from hostile import INPUT_FILES, Cli, rows, run_cli, setup_files

HOSTILE = [
    Cli("sparse-index-out-of-range", ("verify", "--model", "sparse_oob.npz"),
        facts=("--model 'sparse_oob.npz'", "column index 1000000"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("forged-header", ("verify", "--model", "forged.npz"),
        facts=("--model 'forged.npz'", "298 GiB"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("empty-file", ("verify", "--model", "empty.npz"),
        facts=("--model 'empty.npz'", "is empty"), setup=setup_files),
    Cli("negative-count", ("verify", "--random", "-1"), facts=("--random", "-1")),
    Cli("episodes-above-the-limit", ("verify", "--episodes", "99999999999"),
        facts=("--episodes", "10^7")),
    Cli("hidden-above-the-limit", ("verify", "--hidden", "99999999"),
        facts=("--hidden", "10^4")),
    # inside the check of the first model (its adversary being made): the same unwinding
    # through verify_suite and verify_theorems as after a whole model (the second entry
    # into verify_theorems, 8 s of CPU), in 1.4 s
    Cli("sigint-busy", ("verify", "--no-progress"), code=130, signal="INT",
        moment="busy", at="make_adversary", calls=1,
        facts=("rcmdp verify: interrupted", "nothing was written")),
    Cli("sigterm-at-exit", ("verify", "--model", "good.npz", "--tabular-only",
                            "--no-progress"), code=143, signal="TERM", moment="exit",
        setup=setup_files, facts=("rcmdp verify: terminated",)),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)
