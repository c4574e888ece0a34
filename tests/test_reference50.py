"""The benchmarks' certified reference (benchmarks/reference50.py) against mpmath's own
50-digit LU solve of the same exact data, on skewed rows near gamma = 1, and its
verdicts on answers whose errors are known."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from rcmdp_exact.testing import skewed_kernel

PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "reference50.py"


@pytest.fixture(scope="module")
def ref50():
    spec = importlib.util.spec_from_file_location("reference50", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["reference50"] = module  # (its dataclasses look their module up)
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("reference50", None)


def exact_policy_values(P, R, pi, gamma):
    """mpmath's lu_solve at 60 digits of (I - gamma P_pi) x = r_pi, P_pi = sum_a pi P
    formed from the floats as exact numbers (an independent method)."""
    ctx = mpmath.MPContext()
    ctx.dps = 60
    S, A = R.shape
    M = ctx.matrix(S, S)
    b = ctx.matrix(S, 1)
    g = ctx.mpf(float(gamma))
    for s in range(S):
        b[s] = ctx.fsum(ctx.mpf(float(pi[s, a])) * ctx.mpf(float(R[s, a])) for a in range(A))
        for t in range(S):
            pst = ctx.fsum(ctx.mpf(float(pi[s, a])) * ctx.mpf(float(P[s, a, t]))
                           for a in range(A))
            M[s, t] = (1 if s == t else 0) - g * pst
    x = ctx.lu_solve(M, b)
    return ctx, [x[s] for s in range(S)]


def exact_optimal_values(P, R, gamma, policy):
    """The values of a deterministic policy (mpmath lu_solve) and the largest advantage
    max_s max_a Q(s, a) - V(s) at 60 digits (<= 0 iff the policy is optimal)."""
    S, A = R.shape
    onehot = np.zeros((S, A))
    onehot[np.arange(S), policy] = 1.0
    ctx, v = exact_policy_values(P, R, onehot, gamma)
    g = ctx.mpf(float(gamma))
    adv = max(ctx.mpf(float(R[s, a])) + g * ctx.fsum(ctx.mpf(float(P[s, a, t])) * v[t]
                                                    for t in range(S)) - v[s]
              for s in range(S) for a in range(A))
    return ctx, v, adv


def mp_max_error(ctx, y, exact):
    return max(abs(ctx.mpf(float(ys)) - e) for ys, e in zip(y, exact, strict=True))


@pytest.mark.parametrize("sparse", [False, True])
def test_policy_reference_agrees_with_mpmath_lu_solve(ref50, sparse):
    S, A, gamma = 30, 3, 0.9999
    P = skewed_kernel(7, S, A)
    rng = np.random.default_rng(3)
    R = rng.standard_normal((S, A)) * 10.0 ** rng.uniform(-6, 3, (S, A))
    R[0, 0] = 0.0
    pi = rng.dirichlet(np.ones(A) * 0.5, size=S)
    pi[1] = [0.0, 1.0, 0.0]  # a one-hot row beside mixed ones
    data = sp.csr_array(P.reshape(S * A, S)) if sparse else P
    ref = ref50.policy_reference(data, R, pi, gamma)
    ctx, exact = exact_policy_values(P, R, pi, gamma)
    x = [ctx.mpf(float(h)) + ctx.mpf(float(lo)) for h, lo in zip(ref.hi, ref.lo, strict=True)]
    true_err = mp_max_error(ctx, x, exact)  # (x as exact numbers: a float is exact)
    true_err = max(abs(xs - e) for xs, e in zip(x, exact, strict=True))
    scale = float(max(abs(e) for e in exact))
    assert true_err <= ref.bound  # the reference's bound holds
    assert ref.bound <= 1e-25 * scale  # and is tight: ~32 digits
    # a float answer off by a known amount: its certified interval contains the truth
    y = ref.hi.copy()
    y[5] += 1e-9 * scale
    lo, hi = ref.error_interval(y)
    err = float(mp_max_error(ctx, y, exact))
    assert lo <= err <= hi and hi - lo <= 1e-20 * scale
    assert ref50.verdict((lo, hi), 2e-9 * scale) == "holds"
    assert ref50.verdict((lo, hi), 0.5e-9 * scale) == "FAILS"
    assert ref50.verdict((lo, hi), err) in ("holds", "unknown")


def test_given_matrix_reference_agrees_with_mpmath(ref50):
    """The form of PolicySystem: a given float P_pi (S, S) and b (S,)."""
    S, gamma = 30, 0.9999
    P = skewed_kernel(11, S, 1)
    b = np.random.default_rng(5).standard_normal(S) * 1e3
    ref = ref50.policy_reference(P[:, 0, :], b, None, gamma)
    ctx, exact = exact_policy_values(P, b[:, None], np.ones((S, 1)), gamma)
    x = [ctx.mpf(float(h)) + ctx.mpf(float(lo)) for h, lo in zip(ref.hi, ref.lo, strict=True)]
    assert max(abs(xs - e) for xs, e in zip(x, exact, strict=True)) <= ref.bound
    assert ref.bound <= 1e-25 * max(abs(e) for e in exact)


def test_optimal_reference_finds_the_optimum_from_a_bad_policy(ref50):
    S, A, gamma = 30, 3, 0.999
    P = skewed_kernel(13, S, A)
    R = np.random.default_rng(2).standard_normal((S, A))
    ref = ref50.optimal_reference(P, R, gamma, np.zeros(S, dtype=int))  # a poor start
    ctx, v, adv = exact_optimal_values(P, R, gamma, ref.policy)
    scale = float(max(abs(e) for e in v))
    assert adv <= 1e-40 * scale  # the policy it ends with is optimal (60 digits)
    x = [ctx.mpf(float(h)) + ctx.mpf(float(lo)) for h, lo in zip(ref.hi, ref.lo, strict=True)]
    assert max(abs(xs - e) for xs, e in zip(x, v, strict=True)) <= ref.bound
    assert ref.bound <= 1e-25 * scale


def test_row_dots_are_exact_to_the_stated_error(ref50):
    """Rows with entries from 1e-300 to 1 against values of mixed sign and magnitude:
    |mp.fdot - D_i| <= err_i (mp.fdot at 80 digits, exact here)."""
    rng = np.random.default_rng(0)
    rows = 10.0 ** rng.uniform(-300, 0, (40, 50))
    rows[rng.random(rows.shape) < 0.3] = 0.0
    hi = rng.standard_normal(50) * 10.0 ** rng.uniform(-8, 6, 50)
    lo = hi * 2.0 ** -60 * rng.standard_normal(50)
    for data in (rows, sp.csr_array(rows)):
        D, err, _ = ref50.row_dots(data, hi, lo)
        ctx = mpmath.MPContext()
        ctx.dps = 700  # products down to 1e-300 * 1e-8 * 2^-60 beside 1e6: all digits
        for i in range(rows.shape[0]):
            exact = ctx.fsum(ctx.mpf(float(p)) * (ctx.mpf(float(h)) + ctx.mpf(float(low)))
                             for p, h, low in zip(rows[i], hi, lo, strict=True))
            assert abs(ctx.mpf(D[i]) - exact) <= ctx.mpf(float(err[i]))
            assert err[i] <= 1e-28 * max(1.0, float(abs(exact)))
    assert math.isfinite(float(err.max()))
    # the row sums are bounded from above, tightly (the contraction factor beta)
    ctx = mpmath.MPContext()
    ctx.dps = 700
    for data in (rows, sp.csr_array(rows)):
        upper = ref50.row_sums_upper(data)
        for i in range(rows.shape[0]):
            exact = ctx.fsum(ctx.mpf(float(p)) for p in rows[i])
            assert exact <= ctx.mpf(float(upper[i])) <= exact * (1 + ctx.mpf(2) ** -50) + 1e-300


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), S=st.integers(1, 10), A=st.integers(1, 3),
       gamma=st.sampled_from([0.0, 0.5, 0.99, 0.9999, 1.0 - 1e-7]),
       sparse=st.booleans(), magnitude=st.sampled_from([1e-12, 1.0, 1e6]))
def test_the_reference_bound_always_holds(ref50, seed, S, A, gamma, sparse, magnitude):
    """Invariant: |x_ref - x*| <= bound, x* by mpmath's lu_solve, on skewed rows, mixed
    and one-hot policies, exact zeros among the rewards, gamma from 0 to 1 - 1e-7."""
    rng = np.random.default_rng(seed)
    P = skewed_kernel(seed, S, A)
    R = rng.standard_normal((S, A)) * magnitude * 10.0 ** rng.uniform(-4, 0, (S, A))
    R[rng.random((S, A)) < 0.2] = 0.0
    pi = rng.dirichlet(np.ones(A), size=S)
    pi[rng.random(S) < 0.3] = np.eye(A)[0]
    data = sp.csr_array(P.reshape(S * A, S)) if sparse else P
    ref = ref50.policy_reference(data, R, pi, gamma)
    ctx, exact = exact_policy_values(P, R, pi, gamma)
    x = [ctx.mpf(float(h)) + ctx.mpf(float(lo)) for h, lo in zip(ref.hi, ref.lo, strict=True)]
    assert max(abs(xs - e) for xs, e in zip(x, exact, strict=True)) <= ref.bound


def test_a_negative_matrix_is_refused(ref50):
    """The bound 1 / (1 - beta) needs nonnegative rows and weights: refused, not wrong."""
    P = np.array([[0.5, 0.5], [1.5, -0.5]])
    with pytest.raises(ValueError, match=">= 0"):
        ref50.policy_reference(P, np.ones(2), None, 0.9)
