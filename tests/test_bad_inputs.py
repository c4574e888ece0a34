"""Bad input is caught up front with a clear error, in the Python API and on the CLI."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from helpers import raises_fact

import rcmdp_exact as rx
from rcmdp_exact import InputError, NotFiniteError, domains
from rcmdp_exact.core.sampling import rollout


# --------------------------------------------------------------------------- overflow
@pytest.fixture(scope="module")
def huge():
    """Rewards near the largest float64: every sum of them overflows."""
    m = domains.garnet(3, 2, 2, seed=0, gamma=0.9)
    return m.replace(R=np.full((3, 2, 3), 1e308)), np.full((3, 2), 0.5)


@pytest.mark.parametrize("call", [
    lambda m, pi: rx.evaluate(m, pi),
    lambda m, pi: rx.evaluate_finite_horizon(m, pi, 10),
    lambda m, pi: rx.robust_evaluate(m, pi, rx.l1_ball(m, 0.2)),
    lambda m, pi: rx.robust_value_iteration(m, rx.l1_ball(m, 0.2), progress=False),
    lambda m, pi: rx.policy_gradient(m, np.zeros((3, 2))),
])
def test_overflow_is_an_error_naming_the_rewards(huge, call):
    model, pi = huge
    with raises_fact(NotFiniteError, "R", "1e+308", "rescale"):
        call(model, pi)


def test_overflow_of_a_cost_names_the_cost():
    m = domains.garnet(3, 2, 2, n_constraints=2, seed=0, gamma=0.9)
    C = np.zeros((3, 2, 3, 2))
    C[..., 1] = 1e308
    with raises_fact(NotFiniteError, "C[..., 1]", "1e+308"):
        rx.evaluate(m.replace(C=C), np.full((3, 2), 0.5))


def test_large_but_finite_rewards_are_fine():
    m = domains.garnet(3, 2, 2, seed=0, gamma=0.9)
    big = m.replace(R=np.asarray(m.R) * 1e290)
    pi = np.full((3, 2), 0.5)
    assert rx.evaluate(big, pi).value == pytest.approx(rx.evaluate(m, pi).value * 1e290)


# --------------------------------------------------------------------------- float32 rows
def test_float32_normalised_kernel_needs_normalize_and_is_renormalised():
    m = domains.garnet(6, 3, 4, seed=1)
    P32 = np.asarray(m.P, dtype=np.float32)
    assert np.abs(P32.astype(np.float64).sum(axis=-1) - 1).max() > 1e-12  # off by rounding
    with raises_fact(InputError, "sums to", "normalize=True"):
        rx.TabularCMDP(P32, m.R, m.C, m.d)
    fixed = rx.TabularCMDP(P32, m.R, m.C, m.d, normalize=True)
    np.testing.assert_allclose(fixed.P.sum(axis=-1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(fixed.P, m.P, atol=1e-7)  # float32 rounding only
    swapped = m.with_transitions(P32, normalize=True)
    np.testing.assert_array_equal(swapped.P, fixed.P)
    # a row that is genuinely wrong is still refused
    bad = P32.copy()
    bad[0, 0, 0] += 0.01
    with raises_fact(InputError, "P[0, 0, :]", "sums to"):
        rx.TabularCMDP(bad, m.R, m.C, m.d, normalize=True)


def test_sparse_float32_kernel_normalize():
    import scipy.sparse as sp

    m = domains.garnet(6, 3, 4, seed=2, next_state_dependent=False)
    Ps = sp.csr_array(np.asarray(m.P, dtype=np.float32).reshape(18, 6))
    with raises_fact(InputError, "normalize=True"):
        rx.TabularCMDP(Ps, m.r, m.c, m.d)
    fixed = rx.TabularCMDP(Ps, m.r, m.c, m.d, normalize=True)
    np.testing.assert_allclose(fixed.P_sparse.sum(axis=1), 1.0, atol=1e-15)


# --------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("seed", [-1, 1.5, "zero", [1, -2]])
@pytest.mark.parametrize("call", [
    lambda s: rx.estimate(domains.safe_navigation_1(), 2, seed=s),
    lambda s: rx.collect_counts(domains.inventory(), 2, seed=s),
    lambda s: domains.garnet(3, 2, 2, seed=s),
    lambda s: rollout(domains.inventory(), np.full((10, 10), 0.1), 2, s),
    lambda s: rx.TabularPolicy(domains.inventory()).init(s),
])
def test_bad_seed_is_named(call, seed):
    with raises_fact(InputError, "seed", repr(seed) if not isinstance(seed, list) else "-2"):
        call(seed)


def test_good_seeds_of_every_kind():
    m = domains.inventory()
    a = rx.collect_counts(m, 3, seed=7)
    assert np.array_equal(a, rx.collect_counts(m, 3, seed=np.random.default_rng(7)))
    assert np.array_equal(rx.collect_counts(m, 3, seed=[7, 1]),
                          rx.collect_counts(m, 3, seed=(7, 1)))


# --------------------------------------------------------------------------- command line
@pytest.mark.parametrize("args", [
    ["verify", "--random", "-1"],
    ["verify", "--seed", "-1"],
    ["verify", "--seed", "1.5"],
    ["verify", "--episodes", "-5"],
    ["verify", "--hidden", "0"],
    ["evaluate", "--domain", "nav9"],
    ["ground-truth", "--seed", "-1"],
    ["ground-truth", "--out", ""],
    ["train", "nav1", "pgx"],
    ["train", "nav1", "pg", "--episodes", "0"],
    ["train", "nav1", "pg", "--seed", "-1"],
    ["reproduce", "--seeds", "0"],
    ["reproduce", "--tests", "1C"],
    ["report", "--out", "x"],
    ["nonsense"],
])
def test_cli_bad_argument_is_one_line_and_exit_2(args):
    """One line on stderr (the error and where help is, no usage block), exit status 2."""
    out = subprocess.run([sys.executable, "-m", "rcmdp_exact", *args], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "error:" in lines[0] and "--help" in lines[0]
    assert args[-1] in lines[0] or "required" in lines[0] or args[-1] == ""


# --------------------------------------------------------------------------- refused at once
#: Runs ``rcmdp ARGS`` in this process and prints its exit status and the heavy modules
#: it imported: a refusal of an argument must come before numpy, scipy and the solvers.
REFUSE_LIGHT = """
import sys
from rcmdp_exact.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = [m for m in ("numpy", "scipy", "cvxpy", "matplotlib", "numba") if m in sys.modules]
print(code, *heavy)
"""


@pytest.mark.parametrize("args, facts", [
    (["ground-truth", "--out", ""], ["--out is empty"]),
    (["ground-truth", "--out", "afile"], ["--out 'afile'", "existing file"]),
    (["ground-truth", "--out", "gt", "--time-limit", "-1"], ["--time-limit", "-1"]),
    (["ground-truth", "--model", "missing.npz"], ["--model 'missing.npz'", "does not exist"]),
    (["train", "nav1", "pg", "--out", ""], ["--out is empty"]),
    (["train", "nav1", "pg", "--out", "folder.npz"], ["--out 'folder.npz'", "is a folder"]),
    (["train", "nav1", "pg", "--out", "no/x"], ["'no/x.npz'", "does not exist"]),
    (["train", "nav1", "pg", "--entropy", "-inf"], ["--entropy", "'-inf'", "[0, inf)"]),
    (["train", "pg", "--model", "folder"], ["--model 'folder'", "is a folder"]),
    (["reproduce", "--out", ""], ["--out is empty"]),
    (["reproduce", "--out", "afile"], ["--out 'afile'", "existing file"]),
    (["reproduce", "--db", ""], ["--db is empty"]),
    (["reproduce", "--db", "folder"], ["--db 'folder'", "is a folder"]),
    (["reproduce", "--out", "mine"], ["--out 'mine'", "report.md", "--force"]),
    (["reproduce", "--model", "m.npz", "--out", "r"], ["--model 'm.npz'", "does not exist"]),
    (["report", "--db", "", "--out", "r"], ["--db is empty"]),
    (["report", "--db", "folder", "--out", "r"], ["--db 'folder'", "is a folder"]),
    (["report", "--db", "missing", "--out", "r"], ["--db 'missing'", "does not exist"]),
    (["report", "--db", "x", "--out", "afile"], ["--out 'afile'", "existing file"]),
    (["recover", "--db", ""], ["--db is empty"]),
    (["recover", "--db", "folder"], ["--db 'folder'", "is a folder"]),
    (["recover", "--db", "missing"], ["--db 'missing'", "does not exist"]),
    (["evaluate", "--model", "missing"], ["--model 'missing'", "does not exist"]),
    (["verify", "--model", ""], ["--model is empty"]),
])
def test_a_bad_path_or_number_is_refused_before_any_heavy_import(tmp_path, args, facts):
    """Empty paths, files where folders go and back, missing inputs, numbers out of
    range: one line, exit status 2, and numpy (let alone the solvers) never imported,
    so the answer is as quick as argparse's own."""
    (tmp_path / "afile").write_text("a file")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder.npz").mkdir()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "report.md").write_text("my own notes")
    out = subprocess.run([sys.executable, "-c", REFUSE_LIGHT, *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], out.stderr
    for fact in facts:
        assert fact in lines[0], (fact, lines[0])
    assert out.stdout.split() == ["2"], out.stdout  # nothing heavy was imported
    assert (tmp_path / "mine" / "report.md").read_text() == "my own notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "folder", "folder.npz",
                                                          "mine"]


@pytest.mark.parametrize("value", ["-inf", "inf", "nan", "-0.5", "-1e-3"])
def test_entropy_takes_negative_looking_values_and_names_its_range(value):
    out = subprocess.run([sys.executable, "-m", "rcmdp_exact", "train", "nav1", "pg",
                          "--entropy", value, "--out", "no/x"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "--entropy" in lines[0] and repr(value) in lines[0] and "[0, inf)" in lines[0]
    assert "expected one argument" not in lines[0]


@pytest.mark.parametrize("value", ["0", "1e-3", "7.5"])
def test_a_valid_entropy_is_accepted(value):
    """Refused only for the missing output folder, checked after the options."""
    out = subprocess.run([sys.executable, "-m", "rcmdp_exact", "train", "nav1", "pg",
                          "--entropy", value, "--out", "no/x"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "does not exist" in out.stderr, out.stderr


# --------------------------------------------------------------------------- sizes
@pytest.mark.parametrize("n", [10**30, 10**12])
@pytest.mark.parametrize("call", [
    lambda m, n: rx.estimate(m, n, seed=0),
    lambda m, n: rx.collect_counts(m, n, seed=0),
    lambda m, n: rollout(m, np.full((m.n_states, m.n_actions), 1 / m.n_actions), n, 0),
])
def test_episodes_beyond_memory_are_refused_before_any_work(call, n):
    """A raw numpy error or a MemoryError for 36 TiB, before: now one InputError naming
    the argument, the memory it needs, the limit and the largest count within it."""
    import time

    from rcmdp_exact.core.sampling import STEP_BYTES
    from rcmdp_exact.names import MAX_ROLLOUT_BYTES

    m = domains.safe_navigation_1()
    most = MAX_ROLLOUT_BYTES // (STEP_BYTES * m.horizon)
    t0 = time.perf_counter()
    with raises_fact(InputError, "n_episodes", f"{n:,}", "TiB", "limit of 4 GiB",
                     "MAX_ROLLOUT_BYTES", f"n_episodes <= {most:,}"):
        call(m, n)
    assert time.perf_counter() - t0 < 1.0
    assert call(m, 3) is not None  # a small count runs
