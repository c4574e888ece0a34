"""Hostile inputs of ``rcmdp evaluate`` (the table's shape: tests/hostile/hostile.py)."""

from __future__ import annotations

import pytest
from hostile import INPUT_FILES, Cli, rows, run_cli, setup_files

HOSTILE = [
    # a sparse model whose column index exceeds S: scipy read out of bounds (rc 139)
    Cli("sparse-index-out-of-range", ("evaluate", "--model", "sparse_oob.npz"),
        facts=("--model 'sparse_oob.npz'", "column index 1000000", "(s=2, a=1)", "0..2"),
        setup=setup_files, unchanged=INPUT_FILES),
    # a header that claims 298 GiB: numpy allocated it before reading (a MemoryError)
    Cli("forged-header", ("evaluate", "--model", "forged.npz"),
        facts=("--model 'forged.npz'", "'P'", "(100000, 4, 100000)", "298 GiB"),
        setup=setup_files, unchanged=INPUT_FILES),
    Cli("format-version-9", ("evaluate", "--model", "v9.npz"),
        facts=("--model 'v9.npz'", "format version '9'", "reads version '1'"),
        absent=("it is a saved TabularCMDP",), setup=setup_files, unchanged=INPUT_FILES),
    Cli("float32-rows", ("evaluate", "--model", "f32.npz"),
        facts=("--model 'f32.npz'", "P[0, 0, :]", "write the file again"),
        absent=("or pass normalize=True",), setup=setup_files, unchanged=INPUT_FILES),
    Cli("empty-file", ("evaluate", "--model", "empty.npz"),
        facts=("--model 'empty.npz'", "is empty"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("a-store-as-model", ("evaluate", "--model", "other.sqlite"),
        facts=("--model 'other.sqlite'", "not an .npz archive"), setup=setup_files),
    Cli("missing", ("evaluate", "--model", "missing.npz"),
        facts=("--model 'missing.npz'", "does not exist")),
    Cli("folder", ("evaluate", "--model", "."), facts=("--model '.'", "is a folder")),
    Cli("bad-domain", ("evaluate", "--domain", "nav9"), facts=("nav9",)),
    Cli("model-and-domain", ("evaluate", "--model", "good.npz", "--domain", "nav1"),
        facts=("--domain",), setup=setup_files),
    # signals: at work, as main returns, at the interpreter's exit (never rc -2)
    Cli("sigint-busy", ("evaluate",), code=130, signal="INT", moment="busy",
        at="cli/evaluate.py:evaluate_domain", calls=2,
        facts=("rcmdp evaluate: interrupted", "nothing was written")),
    Cli("sigint-at-return", ("evaluate", "--domain", "nav2"), code=130, signal="INT",
        moment="return", facts=("rcmdp evaluate: interrupted",),
        stdout=("Safe Navigation 2",)),
    Cli("sigint-at-exit", ("evaluate", "--domain", "nav2"), code=130, signal="INT",
        moment="exit", facts=("rcmdp evaluate: interrupted",),
        stdout=("Safe Navigation 2",)),
    Cli("sigterm-at-exit", ("evaluate", "--domain", "nav2"), code=143, signal="TERM",
        moment="exit", facts=("rcmdp evaluate: terminated",),
        stdout=("Safe Navigation 2",)),
    Cli("sigterm-busy", ("evaluate",), code=143, signal="TERM", moment="busy",
        at="cli/evaluate.py:evaluate_domain", calls=2,
        facts=("rcmdp evaluate: terminated",)),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)


def test_a_busy_moment_that_never_comes_fails_the_row(tmp_path):
    """The harness itself: a row whose command never enters its ``at`` function (so no
    signal is sent and the command succeeds) fails, and says why."""
    row = Cli("never", ("evaluate", "--domain", "nav2"), code=130, signal="INT",
              moment="busy", at="no_such_function_anywhere")
    with pytest.raises(AssertionError, match=r"moment never came.*no_such_function_anywhere"):
        run_cli(row, tmp_path)
