"""Hostile inputs of ``rcmdp ground-truth`` (the table's shape: tests/hostile/hostile.py).

The bracket's own budgets (``--n-grid``, ``--deep-starts``, ``--time-limit``) have the
rows of the ground truth's tests (tests/test_cli_ground_truth.py)."""

from __future__ import annotations

import pytest
from hostile import INPUT_FILES, Cli, rows, run_cli, setup_files

QUICK = ("--no-variants", "--max-boxes", "3", "--no-progress")


def _whole(folder, out, err):
    assert (folder / "gt" / "ground_truth.json").exists()


HOSTILE = [
    Cli("sparse-index-out-of-range", ("ground-truth", "--model", "sparse_oob.npz", *QUICK,
                                      "--out", "gt"),
        facts=("--model 'sparse_oob.npz'", "column index 1000000"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("forged-header", ("ground-truth", "--model", "forged.npz", *QUICK, "--out", "gt"),
        facts=("--model 'forged.npz'", "298 GiB"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("float32-rows", ("ground-truth", "--model", "f32.npz", *QUICK, "--out", "gt"),
        facts=("--model 'f32.npz'", "write the file again"), setup=setup_files),
    Cli("read-only-out", ("ground-truth", "--model", "good.npz", *QUICK, "--out", "gt"),
        disk="readonly", facts=("--out", "gt"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("full-disk", ("ground-truth", "--model", "good.npz", *QUICK, "--out", "gt"),
        disk="full", facts=("cannot be written", "gt", "whole"), setup=setup_files,
        unchanged=INPUT_FILES,
        created=None),
    Cli("sigint-busy", ("ground-truth", "--domain", "nav1", "--no-progress", "--out",
                        "gt"), code=130, signal="INT", moment="busy", at="_suite_rows",
        facts=("rcmdp ground-truth: interrupted",), created=None),
    Cli("sigterm-at-exit", ("ground-truth", "--model", "good.npz", *QUICK, "--out", "gt"),
        code=143, signal="TERM", moment="exit", setup=setup_files,
        facts=("rcmdp ground-truth: terminated", "the results were written into"),
        after=_whole, created=None),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)
