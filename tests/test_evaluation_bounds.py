"""The one solve of I - gamma P_pi (``PolicySystem``) and ``evaluate``: the method each
system gets, the fallback a stalled iteration takes and says it took, the factorisation
an updated system reuses, and error bounds that hold against a 50-digit reference (the
exact values of the float data, in mpmath) or a refined extended-precision one."""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact.core.evaluation as E
from rcmdp_exact import TabularCMDP, evaluate
from rcmdp_exact.core.evaluation import PolicySystem, policy_matrix
from rcmdp_exact.testing import skewed_kernel

DIGITS = 50


def _exact_policy_values(P, R, C, pi, gamma, p0):
    """V (S,), the costs (S, K) and the occupancy (S,) of the stochastic policy pi of the
    float data (every float taken as an exact number), to 50 digits."""
    S, A, _ = P.shape
    K = C.shape[-1]
    with mp.workdps(DIGITS):
        g = mp.mpf(float(gamma))
        M = mp.eye(S)
        rhs = mp.matrix(S, 1 + K)
        for s in range(S):
            for a in range(A):
                w = mp.mpf(float(pi[s, a]))
                if w == 0:
                    continue
                rhs[s, 0] += w * mp.mpf(float(R[s, a]))
                for k in range(K):
                    rhs[s, 1 + k] += w * mp.mpf(float(C[s, a, k]))
                for t in range(S):
                    if P[s, a, t] != 0.0:
                        M[s, t] -= g * w * mp.mpf(float(P[s, a, t]))
        cols = [mp.lu_solve(M, rhs.column(j)) for j in range(1 + K)]
        sol = mp.matrix(S, 1 + K)
        for j, col in enumerate(cols):
            for s in range(S):
                sol[s, j] = col[s]
        occ = mp.lu_solve(M.T, mp.matrix([mp.mpf(float(x)) for x in p0]))
        return sol, occ


def _sup_error(x, ref, col):
    with mp.workdps(DIGITS):
        return max(abs(mp.mpf(float(x[s])) - ref[s, col]) for s in range(len(x)))


def _holds(err, bound):
    with mp.workdps(DIGITS):
        return err <= mp.mpf(float(bound))


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 9), A=st.integers(1, 3),
       gamma=st.sampled_from([0.5, 0.99, 0.999, 0.9999]),
       size=st.sampled_from([1e-3, 1.0, 1e6]), one_hot=st.booleans(), sparse=st.booleans(),
       method=st.sampled_from(["auto", "dense", "lu", "gmres", "iteration"]))
def test_the_error_bound_holds_against_a_50_digit_reference(seed, S, A, gamma, size, one_hot,
                                                            sparse, method):
    """On kernels whose rows look estimated (masses from 1e-15 to 1e-2 beside large ones,
    exact zeros: ``skewed_kernel``), rewards and costs up to 1e6 (values up to 1e10),
    gamma up to 0.9999 and every method, the error of v and c is at most error_bound
    and the error of the occupancy (1 norm) at most occupancy_error_bound, against the
    exact values of the float data."""
    rng = np.random.default_rng(seed)
    P = skewed_kernel(rng, S, A)
    R = rng.normal(size=(S, A)) * size
    C = rng.random((S, A, 1)) * size
    p0 = rng.dirichlet(np.ones(S))
    m = TabularCMDP(sp.csr_array(P.reshape(S * A, S)) if sparse else P, R=R, C=C,
                    d=[size], gamma=gamma, p0=p0)
    pi = (np.eye(A)[rng.integers(A, size=S)] if one_hot
          else rng.dirichlet(np.full(A, 0.5), size=S))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a stalled iteration's note
        res = evaluate(m, pi, method=method)
    sol, occ = _exact_policy_values(m.P, m.r, m.c, pi, gamma, p0)
    case = (res.solver, res.solver_note, res.error_bound)
    assert np.isfinite(res.error_bound), case
    assert _holds(_sup_error(res.v, sol, 0), res.error_bound), case
    assert _holds(_sup_error(res.c[:, 0], sol, 1), res.error_bound), case
    with mp.workdps(DIGITS):
        occ_err = mp.fsum(abs(mp.mpf(float(res.occupancy[s])) - occ[s]) for s in range(S))
    assert _holds(occ_err, res.occupancy_error_bound), case
    # and the bound is what float64 allows: a modest multiple of the rounding of the
    # residual (L + k + 8) u (|b| + 2 |x|), over 1 - gamma (an iteration may stop at its
    # own target, ITERATIVE_TOL of the value scale, where that is larger)
    L = S + A + 8
    top = max(np.abs(res.v).max(), np.abs(res.c).max()) * 2.0 + size * 4.0
    b = max(np.abs(m.r).max(), np.abs(m.c).max())
    assert res.error_bound <= (max(8.0 * L * 2.0**-53 * top, 3.0 * E.ITERATIVE_TOL * b)
                               / (1.0 - gamma) + 1e-300), case


def test_a_stalled_iteration_stops_at_once_and_says_which_method_answered():
    """Value iteration (``method="iteration"``) on a chain that mixes slowly at gamma =
    0.9999 gains almost nothing per cycle: it stops after its first cycle (not after
    thousands of sweeps) and the dense LU answers; ``solver`` names the LU and
    ``solver_note`` the iteration that stalled, and the bound still holds."""
    S = 60
    P = np.zeros((S, 1, S))
    P[np.arange(S), 0, np.minimum(np.arange(S) + 1, S - 1)] = 0.5
    P[np.arange(S), 0, np.maximum(np.arange(S) - 1, 0)] += 0.5
    R = np.linspace(-1.0, 1.0, S)[:, None]
    m = TabularCMDP(P, R=R, gamma=0.9999)
    res = evaluate(m, np.zeros(S, dtype=int), method="iteration")
    assert res.solver == "dense"
    assert "iteration stopped" in res.solver_note and "stalled" in res.solver_note
    assert "dense LAPACK" in res.solver_note
    sol, _ = _exact_policy_values(m.P, m.r, m.c, np.ones((S, 1)), 0.9999, m.p0)
    assert _holds(_sup_error(res.v, sol, 0), res.error_bound)
    system = PolicySystem(m.P[:, 0], 0.9999, method="iteration")
    system.solve(R[:, 0])
    assert system.iterations == E.GMRES_RESTART  # one cycle, then the factorisation


def test_the_method_is_chosen_by_structure_and_cost():
    """Small systems are factorised densely (a sparse one too); a banded sparse system
    (a chain) by SuperLU; a large random one (its LU would fill in) by GMRES, which
    converges there without a fallback; gamma = 1 always factorises."""
    from rcmdp_exact.domains import garnet

    small = garnet(5, 2, 2, n_constraints=0, seed=0, gamma=0.9)
    pi = np.full((5, 2), 0.5)
    assert evaluate(small, pi).solver == "dense"
    assert evaluate(small, pi, method="lu").solver == "lu"
    n = 4 * E.DENSE_ALWAYS
    chain = sp.diags_array([np.full(n - 1, 0.5), np.full(n, 0.5)], offsets=[1, 0],
                           format="csr").tolil()
    chain[n - 1, n - 1] = 1.0
    chain = sp.csr_array(chain)
    assert PolicySystem(chain, 0.99).method == "lu"
    assert PolicySystem(chain, 1.0, live=np.arange(n) < n - 1).method == "lu"
    rnd = garnet(n, 2, 3, n_constraints=0, seed=1, gamma=0.99)
    res = evaluate(rnd, np.full((n, 2), 0.5))
    assert res.solver == "gmres" and res.solver_note == ""
    assert res.error_bound <= 1e-12 * np.abs(rnd.r).max() / (1.0 - 0.99) * 10
    assert PolicySystem(np.eye(3) * 0.5, 1.0).method == "dense"


def _refined_reference(P_pi, b, gamma):
    """The solution of (I - gamma P_pi) x = b (P_pi, b exact) by a float64 LU refined with
    residuals in extended precision (numpy.longdouble): an independent arithmetic."""
    M = np.eye(P_pi.shape[0]) - gamma * P_pi
    lu = np.linalg.inv(M)
    x = (lu @ b).astype(np.longdouble)
    Pl, bl, gl = P_pi.astype(np.longdouble), b.astype(np.longdouble), np.longdouble(gamma)
    for _ in range(4):
        r = bl - x + gl * (Pl @ x)
        x = x + (lu @ r.astype(np.float64)).astype(np.longdouble)
    return x


def test_dense_2000_states_near_gamma_one_converges_within_a_work_cap(monkeypatch):
    """Issue 44: a dense random model of 2,000 states at gamma = 0.999.  Its evaluation
    used to ask every iterative solver for a residual below what even a factorisation
    attains, ran each to 10 S iterations three times and ran for minutes.  Now the method
    chosen converges without a fallback within a work cap (an iteration cap of 600: a
    regression fails instead of hanging), and the bound holds against a reference
    refined in extended precision."""
    monkeypatch.setattr(E, "ITERATION_CAP", 600)
    rng = np.random.default_rng(44)
    S, A, gamma = 2000, 5, 0.999
    P = rng.exponential(size=(S, A, S))
    P /= P.sum(axis=-1, keepdims=True)
    R = rng.standard_normal((S, A))
    m = TabularCMDP(P, R=R, gamma=gamma)
    pi = rng.dirichlet(np.ones(A), size=S)
    res = evaluate(m, pi)
    assert res.solver in ("gmres", "dense") and res.solver_note == "", res.solver_note
    system = PolicySystem(policy_matrix(P, pi), gamma)
    assert system.method == res.solver
    x = system.solve(np.einsum("sa,sa->s", pi, R))
    assert system.iterations <= 600 and system.note == ""
    # the reference of the float P_pi system, and the bound of that system
    ref = _refined_reference(policy_matrix(P, pi), np.einsum("sa,sa->s", pi, R), gamma)
    assert float(np.abs(x.astype(np.longdouble) - ref).max()) <= system.error_bound
    assert system.error_bound <= 1e-9 * np.abs(R).max() / (1.0 - gamma)
    # evaluate's bound also covers the rounding of P_pi and r_pi from the stochastic pi
    assert float(np.abs(res.v.astype(np.longdouble) - ref).max()) <= res.error_bound


def test_an_updated_system_reuses_the_factorisation_and_keeps_its_bound():
    """PolicySystem.updated: a policy that switched a few states is solved through the
    old LU and a low-rank correction; its answers (values and the transposed solve)
    equal a fresh factorisation's within both bounds, and chained updates work."""
    rng = np.random.default_rng(7)
    S, A, gamma = 400, 3, 0.99
    P = rng.dirichlet(np.ones(S), size=(S, A))
    acts = rng.integers(A, size=S)
    base = PolicySystem(P[np.arange(S), acts], gamma)
    base.solve(np.ones(S))
    assert base.method == "dense"
    for _ in range(3):
        changed = rng.choice(S, 12, replace=False)
        acts = acts.copy()
        acts[changed] = (acts[changed] + 1) % A
        P_pi = P[np.arange(S), acts]
        new = base.updated(P_pi, changed)
        assert new._base is not None  # through the factors
        fresh = PolicySystem(P_pi, gamma)
        b = rng.normal(size=(S, 2))
        x, y = new.solve(b), fresh.solve(b)
        xt, yt = new.solve(b, transpose=True), fresh.solve(b, transpose=True)
        assert new.error_bound <= 1e-10 / (1 - gamma)  # (also completes bounds[True])
        assert np.abs(x - y).max() <= new.error_bound + fresh.error_bound
        fresh.error_bound  # noqa: B018
        assert np.abs(xt - yt).sum(axis=0).max() <= new.bounds[True] + fresh.bounds[True]
        base = new
    many = base.updated(P[np.arange(S), (acts + 1) % A], np.arange(S))
    assert many._base is None  # every row changed: a new factorisation


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40), L=st.integers(1, 30),
       dense=st.booleans(), tiny=st.booleans(), low=st.booleans())
def test_the_double_double_rows_enclose_the_exact_sums(seed, n, L, dense, tiny, low):
    """core._compiled.bellman_rows: for every row, the exact g + gamma P (vh + vl) of the float
    data (mpmath) lies within e of s + c, on skewed rows, values of mixed magnitude (some
    near 1e-300) and with or without a low part."""
    from rcmdp_exact.core._compiled import bellman_rows

    rng = np.random.default_rng(seed)
    P = skewed_kernel(rng, L, n).reshape(L * n, L) if L > 1 else np.ones((n, 1))
    vh = rng.normal(size=L) * 10.0 ** rng.integers(-3, 6, size=L)
    if tiny:
        vh[rng.random(L) < 0.3] = 1e-300
    vl = vh * 2.0**-60 * rng.normal(size=L) if low else None
    g = rng.normal(size=P.shape[0]) * 100.0
    gamma = float(rng.choice([0.5, 0.99, 0.999999]))
    rows = rng.integers(P.shape[0], size=5)
    s, c, e = bellman_rows(P if dense else sp.csr_array(P), g, gamma, vh, vl, rows)
    with mp.workdps(60):
        for t, i in enumerate(rows):
            exact = mp.mpf(float(g[i])) + mp.mpf(gamma) * mp.fsum(
                mp.mpf(float(P[i, j])) * (mp.mpf(float(vh[j]))
                                          + (0 if vl is None else mp.mpf(float(vl[j]))))
                for j in range(L))
            assert abs(mp.mpf(float(s[t])) + mp.mpf(float(c[t])) - exact) <= mp.mpf(
                float(e[t])), (t, i)


def test_a_batch_is_solved_by_lapack_and_records_no_bound():
    """The dense batch of the robust engine: LAPACK per matrix, no bound bookkeeping."""
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(4), size=(3, 4))
    system = PolicySystem(P, 0.9)
    b = rng.normal(size=(3, 4))
    x = system.solve(b)
    for j in range(3):
        np.testing.assert_allclose((np.eye(4) - 0.9 * P[j]) @ x[j], b[j], atol=1e-13)
    assert system.error_bound == 0.0 and system.method == "dense"


@pytest.mark.parametrize("gamma", [0.9, 1.0])
def test_live_states_are_solved_alone(gamma):
    """live: the states outside get 0, the others solve their own block."""
    P = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    live = np.array([True, True, False])
    x = PolicySystem(P, gamma, live).solve(np.ones(3))
    np.testing.assert_allclose(x, [1.0 + gamma, 1.0, 0.0], rtol=0, atol=1e-15)
