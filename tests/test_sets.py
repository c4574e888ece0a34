"""The sa-rectangular sets beyond the L1 ball, and the finite set.

Each set's exact solver (``method="sort"``) is compared with its independent convex
program through cvxpy (``method="lp"``) on random batches (ties, zero radii, radii
covering the whole simplex, restricted supports); the returned kernel must lie in the
set and attain the value; zero radii give the nominal bit for bit; batched shapes agree
with row-by-row calls; errors name their facts; files round-trip exactly.  The
estimators' confidence statements are checked by Monte Carlo.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

import rcmdp_exact as rx
from rcmdp_exact.testing import random_kernel, random_radii, random_values
from rcmdp_exact.uncertainty import (
    RECTANGULARITIES,
    FiniteSet,
    IntervalSet,
    KLBall,
    L1Ball,
    LInfBall,
    UncertaintySet,
    WeightedL1Ball,
    box_simplex_projection,
    check_set,
    entry_radius,
    estimate_interval_set,
    estimate_kl_ball,
    estimate_l1_ball,
    estimate_linf_ball,
    hoeffding_radius,
    interval_vertices,
    kl_divergence,
    weissman_radius,
)
from rcmdp_exact.uncertainty._rows import rowdot, weighted_threshold
from rcmdp_exact.uncertainty.interval import worst_case_interval
from rcmdp_exact.uncertainty.weighted_l1 import (
    COMPILED_MIN,
    weighted_l1_violation,
    worst_case_weighted_l1,
)
from rcmdp_exact.uncertainty.weighted_l1 import _lp_rows as weighted_l1_lp_rows
from rcmdp_exact.uncertainty.weighted_l1_numba import MAX_ROUNDS, weighted_select

KINDS = ("weighted-l1", "linf", "interval", "kl")
#: Rows of one hypothesis example (a batch axis J makes up the difference).
MIN_ROWS = 20


# --------------------------------------------------------------------------- builders
def random_nominal(rng, S, A, restricted):
    """A kernel, its support (30% to 100% of the next states, or full) and some point
    masses (15% of the pairs)."""
    return random_kernel(rng, S, A, density=(0.3, 1.0) if restricted else 1.0,
                         point_masses=0.15)


def make_set(kind, rng, S, A):
    restricted = rng.random() < 0.5
    P, sup = random_nominal(rng, S, A, restricted)
    if kind == "weighted-l1":
        wk = rng.integers(3)
        W = (rng.integers(1, 4, (S, A, S)).astype(float) if wk == 0 else
             rng.uniform(0.1, 5.0, (S, A, S)) if wk == 1 else np.ones((S, A, S)))
        alpha = random_radii(rng, (S, A), 0.1, 2.0 * W.max())
        return WeightedL1Ball(P, alpha, W, sup if restricted else None)
    if kind == "linf":
        return LInfBall(P, random_radii(rng, (S, A), 0.05, 1.0), sup if restricted else None)
    if kind == "interval":
        below = rng.uniform(0.0, 0.5, (S, A, S)) * (rng.random((S, A, S)) < 0.7)
        above = rng.uniform(0.0, 0.5, (S, A, S)) * (rng.random((S, A, S)) < 0.7)
        lo = np.where(sup, np.clip(P - below, 0.0, 1.0), 0.0)
        up = np.where(sup, np.clip(P + above, 0.0, 1.0), 0.0)
        return IntervalSet(lo, up, nominal=P if rng.random() < 0.5 else None)
    whole = -np.log(np.min(np.where(P > 0, P, 1.0), axis=2)).max() + 0.1
    return KLBall(P, random_radii(rng, (S, A), 1e-3, whole))


@st.composite
def cases(draw, kind, max_S=9):
    S = draw(st.integers(1, max_S))
    A = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    J = math.ceil(MIN_ROWS / (S * A))
    return make_set(kind, rng, S, A), random_values(rng, (J, S, A, S))  # ties, scales, blocks


def row_scale(z):
    return np.maximum(np.abs(z).max(axis=-1), 1.0)


def pairs_value(p, z):
    return (p * z).sum(axis=-1)


# --------------------------------------------------------------------------- exact vs cvxpy
@pytest.mark.parametrize("kind", ["weighted-l1", "linf", "interval"])
@settings(max_examples=examples(30))
@given(data=st.data())
def test_polyhedral_exact_solver_matches_cvxpy(kind, data):
    """At least 30 x 20 = 600 rows per set (one LP per row, HiGHS); 6,000 under the
    thorough profile."""
    uset, z = data.draw(cases(kind))
    ex = uset.worst_case(z)
    lp = uset.worst_case(z, method="lp")
    assert ex.success and lp.success and lp.lp_success.all()
    scale = row_scale(z)
    np.testing.assert_array_less(np.abs(ex.value - lp.value), 1e-9 * scale)
    # the exact answer lies in the set and attains its value
    for j in range(z.shape[0]):
        assert uset.contains(ex.p[j]).all()
        assert uset.contains(lp.p[j], tol=1e-8).all()
    np.testing.assert_array_less(np.abs(pairs_value(ex.p, z) - ex.value), 1e-12 * scale)


def kl_dual_bound(q, z, r):
    """max over beta of -beta log E_q exp(-z/beta) - beta r (scipy), with its limits
    min z (beta -> 0) and, for r = 0, q.z (beta -> inf): a lower bound on the worst
    case by weak duality.  Written with log1p(E_q expm1(-y/beta)), accurate for large
    beta, and with log-sum-exp for small beta."""
    on = q > 0
    qq, zz = q[on], z[on]
    zmin = zz.min()
    y = zz - zmin

    def neg(lb):
        b = math.exp(lb)
        s = qq @ np.expm1(-y / b)
        lse = math.log1p(s) if s > -0.5 else logsumexp(-y / b, b=qq)
        return -(zmin - b * lse - b * r)

    best = minimize_scalar(neg, bounds=(-40.0, 40.0), method="bounded",
                           options={"xatol": 1e-12})
    return max(-best.fun, zmin, qq @ zz if r == 0 else -np.inf)


@settings(max_examples=examples(60))
@given(cases("kl"))
def test_kl_solver_matches_cvxpy_and_is_certified(case):
    """At least 1,200 rows.  CLARABEL is accurate to about 1e-7 here, so the exact
    solver is compared with it at 1e-7 of the value scale, and certified on its own at
    1e-9: its kernel is feasible (KL <= r + 1e-12) and attains the value, and an
    independent maximisation of the dual (scipy) is within 1e-9 of that value."""
    uset, z = case
    ex = uset.worst_case(z)
    assert ex.success
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # OPTIMAL_INACCURATE at tiny radii
        lp = uset.worst_case(z, method="lp")
    scale = row_scale(z)
    ok = lp.lp_success
    assert ok.mean() > 0.5
    np.testing.assert_array_less(np.abs(ex.value - lp.value)[ok], 1e-7 * scale[ok])
    q, r = uset.nominal, uset.radius
    for j in range(z.shape[0]):
        kl = kl_divergence(ex.p[j], q)
        np.testing.assert_array_less(kl, r + 1e-12)
        assert uset.contains(ex.p[j]).all()
        for s, a in np.ndindex(r.shape):
            bound = kl_dual_bound(q[s, a], z[j, s, a], r[s, a])
            assert ex.value[j, s, a] - bound <= 1e-9 * scale[j, s, a]
            assert ex.value[j, s, a] - ex.dual[j, s, a] <= 1e-9 * scale[j, s, a]
            assert ex.dual[j, s, a] <= bound + 1e-9 * scale[j, s, a]  # a lower bound too
    np.testing.assert_array_less(np.abs(pairs_value(ex.p, z) - ex.value), 1e-12 * scale)


# --------------------------------------------------------------------------- structure
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=examples(30))
@given(data=st.data())
def test_zero_radius_gives_the_nominal_bit_for_bit(kind, data):
    uset, z = data.draw(cases(kind))
    S, A = uset.n_states, uset.n_actions
    if kind == "weighted-l1":
        uset = WeightedL1Ball(uset.nominal, 0.0, uset.weights, uset.support)
    elif kind == "linf":
        uset = LInfBall(uset.nominal, 0.0, uset.support)
    elif kind == "interval":
        uset = IntervalSet(uset.nominal, uset.nominal)
    else:
        uset = KLBall(uset.nominal, 0.0)
    res = uset.worst_case(z)
    np.testing.assert_array_equal(res.p, np.broadcast_to(uset.nominal, (len(z), S, A, S)))
    np.testing.assert_array_equal(res.value, np.vecdot(res.p, z))
    assert uset.contains(uset.nominal).all()


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_batched_shapes_agree_with_row_by_row_calls(kind, data):
    uset, z = data.draw(cases(kind))
    S, A = uset.n_states, uset.n_actions
    batch = uset.worst_case(z)  # (J, S, A, S)
    assert batch.p.shape == z.shape and batch.value.shape == z.shape[:3]
    shared = z[:, 0, 0, :]  # (J, S): one vector for every pair
    by_vec = uset.worst_case(shared)
    for j in range(z.shape[0]):
        one = uset.worst_case(z[j])  # (S, A, S)
        np.testing.assert_allclose(one.value, batch.value[j], rtol=0,
                                   atol=1e-12 * row_scale(z[j]).max())
        np.testing.assert_allclose(one.p, batch.p[j], rtol=0, atol=1e-12)
        vec = uset.worst_case(shared[j])  # (S,)
        assert vec.value.shape == (S, A)
        full = uset.worst_case(np.broadcast_to(shared[j], (S, A, S)).copy())
        np.testing.assert_allclose(vec.value, full.value, rtol=0, atol=1e-12 * (
            1 + np.abs(shared[j]).max()))
        np.testing.assert_allclose(by_vec.value[j], vec.value, rtol=0, atol=1e-12 * (
            1 + np.abs(shared[j]).max()))


@pytest.mark.parametrize("kind", ["weighted-l1", "linf", "kl"])
@settings(max_examples=examples(30))
@given(data=st.data())
def test_value_decreases_with_the_radius_and_reaches_the_minimum(kind, data):
    uset, z = data.draw(cases(kind))
    nom = uset.nominal
    sup = uset.support
    zmin = np.min(np.where(sup, z, np.inf), axis=-1)
    if kind == "weighted-l1":
        r = uset.alpha
        grow = WeightedL1Ball(nom, 2 * r + 0.1, uset.weights, sup)
        whole = WeightedL1Ball(nom, 2.0 * uset.weights.max() + 1e-9, uset.weights, sup)
    elif kind == "linf":
        r = uset.radius
        grow = LInfBall(nom, np.minimum(2 * r + 0.05, 1.0), sup)
        whole = LInfBall(nom, 1.0, sup)
    else:
        r = uset.radius
        grow = KLBall(nom, 2 * r + 0.05)
        whole = KLBall(nom, -np.log(np.min(np.where(nom > 0, nom, 1.0), axis=2)))
    v0 = np.vecdot(np.broadcast_to(nom, z.shape), z)
    v1 = uset.worst_case(z).value
    v2 = grow.worst_case(z).value
    scale = row_scale(z)
    assert (v1 <= v0 + 1e-12 * scale).all() and (v2 <= v1 + 1e-12 * scale).all()
    np.testing.assert_allclose(whole.worst_case(z).value, zmin, rtol=0,
                               atol=1e-12 * scale.max())


# --------------------------------------------------------------------------- weighted L1
@settings(max_examples=examples(60))
@given(S=st.integers(1, 40), A=st.integers(1, 3), seed=st.integers(0, 2**32 - 1),
       ties=st.booleans(), restricted=st.booleans())
def test_unit_weights_give_the_l1_ball(S, A, seed, ties, restricted):
    rng = np.random.default_rng(seed)
    P, sup = random_nominal(rng, S, A, restricted)
    alpha = random_radii(rng, (S, A), 0.1, 2.0)
    z = (rng.integers(-2, 3, (S, A, S)).astype(float) if ties else
         rng.normal(size=(S, A, S)))
    l1 = L1Ball(P, alpha, sup if restricted else None).worst_case(z)
    w = WeightedL1Ball(P, alpha, 1.0, sup if restricted else None).worst_case(z)
    np.testing.assert_array_less(np.abs(w.value - l1.value), 1e-12 * row_scale(z))
    if not ties:  # a unique minimiser and unique order: the same kernel
        np.testing.assert_allclose(w.p, l1.p, rtol=0, atol=1e-12)


def test_two_receivers_can_be_needed():
    """q = (1, 0, 0), z = (10, 0, 5), w = (1, 10, 1), alpha = 5: the best single
    receiver gives 5 (outcome 2) or 60/11 (outcome 1); the optimum splits the mass,
    1/3 to outcome 1 and 2/3 to outcome 2, value 10/3 (the LP agrees)."""
    P = np.array([[[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]], [[0.0, 0.0, 1.0]]])
    uset = WeightedL1Ball(P, 5.0, np.array([1.0, 10.0, 1.0]))
    z = np.array([10.0, 0.0, 5.0])
    ex, lp = uset.worst_case(z), uset.worst_case(z, method="lp")
    assert ex.value[0, 0] == pytest.approx(10 / 3, abs=1e-12)
    assert lp.value[0, 0] == pytest.approx(10 / 3, abs=1e-9)
    np.testing.assert_allclose(ex.p[0, 0], [0.0, 1 / 3, 2 / 3], atol=1e-12)
    # each single receiver alone, by hand: 10 - gain per unit * mass moved
    assert min(10 - 5 * 1.0, 10 - 10 * 5 / 11) > 10 / 3 + 0.1


@pytest.mark.parametrize("n", [64, 200, 1000])
@pytest.mark.parametrize("hull", ["pairs", "chain"])
def test_weighted_l1_long_rows_match_cvxpy(n, hull, monkeypatch):
    """Long rows take the block path of the envelope and the bracketing search; the
    envelope's hull comes from all pairs of candidates or from the monotone chain."""
    import rcmdp_exact.uncertainty.weighted_l1 as module

    monkeypatch.setattr(module, "_EXACT_PARETO", 0)  # the block prefilter
    if hull == "chain":
        monkeypatch.setattr(module, "_PAIRS", 0)
    rng = np.random.default_rng(n)
    N = 6
    Q = rng.dirichlet(np.full(n, 0.7), size=N)
    Z = rng.normal(size=(N, n))
    Z[:, ::7] = Z[:, :1]  # ties
    W = rng.uniform(0.2, 3.0, (N, n))
    W[:, ::5] = 1.0  # equal weights
    alpha = np.array([0.01, 0.1, 0.5, 1.0, 2.0, 10.0])
    ex = worst_case_weighted_l1(Q, Z, alpha, W)
    _, lp_value, ok = weighted_l1_lp_rows(Q, Z, W, alpha, np.ones((N, n), dtype=bool))
    assert ok.all()
    np.testing.assert_allclose(ex.value, lp_value, rtol=0, atol=1e-9)
    dist = (W * np.abs(ex.p - Q)).sum(axis=1)
    assert (dist <= alpha + 1e-12).all() and (ex.p >= 0).all()
    np.testing.assert_allclose(ex.p.sum(axis=1), 1.0, atol=1e-12)


@settings(max_examples=examples(30))
@given(data=st.data())
def test_weighted_l1_hull_by_chain_equals_hull_by_pairs(data):
    """The two ways of finding the envelope give the same worst case."""
    import rcmdp_exact.uncertainty.weighted_l1 as module

    uset, z = data.draw(cases("weighted-l1", max_S=30))
    pairs = uset.worst_case(z)
    saved = module._PAIRS, module._EXACT_PARETO
    try:
        module._PAIRS, module._EXACT_PARETO = 0, 0
        chain = uset.worst_case(z)
    finally:
        module._PAIRS, module._EXACT_PARETO = saved
    np.testing.assert_array_less(np.abs(chain.value - pairs.value), 1e-12 * row_scale(z))


def test_weighted_l1_functional_form_and_zero_radius_rows():
    rng = np.random.default_rng(5)
    Q = rng.dirichlet(np.ones(30), size=4)
    Z = rng.normal(size=(4, 30))
    W = rng.uniform(0.5, 2.0, (4, 30))
    alpha = np.array([0.0, 0.3, 0.0, 1.0])
    res = worst_case_weighted_l1(Q, Z, alpha, W)
    np.testing.assert_array_equal(res.p[[0, 2]], Q[[0, 2]])
    for i in (1, 3):  # the same rows alone
        one = worst_case_weighted_l1(Q[i:i + 1], Z[i:i + 1], alpha[i:i + 1], W[i:i + 1])
        np.testing.assert_allclose(one.p[0], res.p[i], atol=1e-15)


def as_rows(uset, z):
    """A weighted ball's arrays and a batch z (J, S, A, S) as rows (N, S)."""
    J, S, A, _ = z.shape
    N = J * S * A

    def rows(a):
        return np.broadcast_to(a, (J, *a.shape)).reshape(N, *a.shape[2:])

    return (rows(uset.nominal), z.reshape(N, S), rows(uset.alpha), rows(uset.weights),
            rows(uset.support))


def check_compiled_against_numpy(Q, Z, alpha, W, sup):
    """The compiled and the numpy solver: the same kernel and value, both in the ball."""
    ref = worst_case_weighted_l1(Q, Z, alpha, W, sup, backend="numpy")
    res = worst_case_weighted_l1(Q, Z, alpha, W, sup, backend="numba")
    scale = row_scale(Z)
    np.testing.assert_array_less(np.abs(res.value - ref.value), 1e-12 * scale)
    np.testing.assert_allclose(res.p, ref.p, rtol=0, atol=1e-12)
    assert (weighted_l1_violation(res.p, Q, alpha, np.where(sup, W, 1.0), sup)
            <= 1e-12).all()
    np.testing.assert_array_less(np.abs(rowdot(res.p, Z) - res.value), 1e-12 * scale)
    zero = alpha == 0
    np.testing.assert_array_equal(res.p[zero], Q[zero])  # the nominal row, bit for bit
    return res


@settings(max_examples=examples(60))
@given(data=st.data())
def test_weighted_l1_compiled_solver_matches_numpy(data):
    """At least 60 x 20 = 1,200 rows (ties, zero and whole-simplex radii, integer,
    continuous and unit weights, restricted supports): the compiled row loop gives the
    numpy solver's kernel to 1e-12."""
    uset, z = data.draw(cases("weighted-l1", max_S=30))
    check_compiled_against_numpy(*as_rows(uset, z))


@settings(max_examples=examples(30))
@given(N=st.integers(1, 6), n=st.integers(2, 1000), seed=st.integers(0, 2**32 - 1),
       zk=st.sampled_from(["normal", "ties", "block"]),
       wk=st.sampled_from(["uniform", "integers", "ones"]), restricted=st.booleans())
def test_weighted_l1_compiled_long_rows_match_numpy(N, n, seed, zk, wk, restricted):
    """Long rows: the quickselect of the compiled greedy runs many rounds."""
    rng = np.random.default_rng(seed)
    sup = (rng.random((N, n)) < 0.5) if restricted else np.ones((N, n), dtype=bool)
    sup[:, 0] = True
    Q = rng.dirichlet(np.full(n, 0.7), size=N) * sup * (rng.random((N, n)) < 0.9)
    Q[:, 0] += Q.sum(axis=1) == 0
    Q /= Q.sum(axis=1, keepdims=True)
    Z = (rng.integers(-3, 4, (N, n)).astype(float) if zk == "ties" else
         rng.normal(size=(N, n)))
    if zk == "block":
        Z[:, : n // 2] = Z[:, :1]
    W = (rng.uniform(0.2, 3.0, (N, n)) if wk == "uniform" else
         rng.integers(1, 4, (N, n)).astype(float) if wk == "integers" else np.ones((N, n)))
    alpha = rng.uniform(0.0, 2.0 * W.max(), N) * rng.choice([0.0, 0.01, 0.1, 1.0], N)
    check_compiled_against_numpy(Q, Z, alpha, W, sup)


@pytest.mark.parametrize("n", [64, 200, 1000])
def test_weighted_l1_compiled_long_rows_match_cvxpy(n):
    rng = np.random.default_rng(n + 1)
    N = 6
    Q = rng.dirichlet(np.full(n, 0.7), size=N)
    Z = rng.normal(size=(N, n))
    Z[:, ::7] = Z[:, :1]  # ties
    W = rng.uniform(0.2, 3.0, (N, n))
    W[:, ::5] = 1.0  # equal weights
    alpha = np.array([0.01, 0.1, 0.5, 1.0, 2.0, 10.0])
    ex = worst_case_weighted_l1(Q, Z, alpha, W, backend="numba")
    _, lp_value, ok = weighted_l1_lp_rows(Q, Z, W, alpha, np.ones((N, n), dtype=bool))
    assert ok.all()
    np.testing.assert_allclose(ex.value, lp_value, rtol=0, atol=1e-9)
    dist = (W * np.abs(ex.p - Q)).sum(axis=1)
    assert (dist <= alpha + 1e-12).all() and (ex.p >= 0).all()
    np.testing.assert_allclose(ex.p.sum(axis=1), 1.0, atol=1e-12)


def test_weighted_l1_compiled_two_receivers():
    """The example of the module docstring, where the optimum splits the mass."""
    res = worst_case_weighted_l1([[1.0, 0.0, 0.0]], [[10.0, 0.0, 5.0]], [5.0],
                                 [[1.0, 10.0, 1.0]], backend="numba")
    np.testing.assert_allclose(res.p[0], [0.0, 1 / 3, 2 / 3], rtol=0, atol=1e-15)
    assert res.value[0] == pytest.approx(10 / 3, abs=1e-14)


@pytest.mark.parametrize(("S", "J", "backend"), [(8, 1, "numpy"), (30, 2, "numpy"),
                                                 (70, 1, "numba"), (40, 3, "numba")])
def test_weighted_l1_ball_chooses_its_backend_by_batch_size(S, J, backend):
    """The set answers small batches in numpy and batches of at least COMPILED_MIN
    entries with the compiled solver (bit for bit the forced backend)."""
    rng = np.random.default_rng(S)
    A = 4
    big = J * S * A * S >= COMPILED_MIN
    assert big == (backend == "numba")
    P, sup = random_nominal(rng, S, A, True)
    uset = WeightedL1Ball(P, rng.uniform(0.0, 2.0, (S, A)), rng.uniform(0.5, 2.0, (S, A, S)),
                          sup)
    z = rng.normal(size=(J, S, A, S))
    res = uset.worst_case(z)
    Q, Z, alpha, W, supr = as_rows(uset, z)
    forced = worst_case_weighted_l1(Q, Z, alpha, W, supr, backend=backend)
    np.testing.assert_array_equal(res.p.reshape(Q.shape), forced.p)
    np.testing.assert_array_equal(res.value.reshape(-1), forced.value)
    check_compiled_against_numpy(Q, Z, alpha, W, supr)


@settings(max_examples=examples(40))
@given(m=st.integers(0, 400), seed=st.integers(0, 2**32 - 1), ties=st.booleans(),
       max_rounds=st.sampled_from([0, 1, 3, MAX_ROUNDS]))
def test_weighted_select_matches_a_sort(m, seed, ties, max_rounds):
    """The compiled greedy threshold (quickselect, and its sort after max_rounds)
    against a sort: the first key value whose cumulative weight reaches the target."""
    rng = np.random.default_rng(seed)
    key = rng.integers(-5, 5, m).astype(float) if ties else rng.normal(size=m)
    c = rng.random(m) * (rng.random(m) < 0.8)
    acc = rng.random()
    total = c.sum()
    reachable = total > 0 and rng.random() < 0.85
    target = acc + (total * rng.uniform(1e-3, 0.999) if reachable else
                    total * rng.uniform(1.001, 1.1) + 1e-3)
    kappa, below, tied, found = weighted_select(key.copy(), c.copy(), np.empty(m),
                                                np.empty(m), m, acc, target, max_rounds)
    if not reachable:
        assert not found
        assert below == pytest.approx(acc + total, rel=1e-12)
        return
    assert found
    values = np.unique(key)
    reach = acc + np.array([c[key <= x].sum() for x in values])
    ref = values[np.flatnonzero(reach >= target)[0]]
    # the same key, up to keys of zero weight between the two
    assert c[(key > min(ref, kappa)) & (key < max(ref, kappa))].sum() == 0
    assert below == pytest.approx(acc + c[key < kappa].sum(), rel=1e-12)
    assert tied == pytest.approx(c[key == kappa].sum(), rel=1e-12, abs=1e-15)
    assert below <= target <= below + tied


def test_weighted_l1_backend_is_checked():
    with raises_fact(rx.InputError, "backend", "'fast'", "numba"):
        worst_case_weighted_l1([[1.0]], [[0.0]], [0.1], [[1.0]], backend="fast")


# --------------------------------------------------------------------------- interval / L-inf
def test_interval_greedy_by_hand():
    lo = np.array([[[0.1, 0.2, 0.0]]] * 3)
    up = np.array([[[0.6, 0.5, 0.9]]] * 3)
    res = IntervalSet(lo, up).worst_case(np.array([3.0, 1.0, 2.0]))
    # start at lower (mass 0.3); 0.7 left: z=1 gets 0.3 (to its upper 0.5), z=2 gets 0.4
    np.testing.assert_allclose(res.p[0, 0], [0.1, 0.5, 0.4], atol=1e-15)
    assert res.value[0, 0] == pytest.approx(0.3 + 0.5 + 0.8, abs=1e-15)


def test_linf_ball_is_the_interval_set_of_its_bounds():
    rng = np.random.default_rng(2)
    P, sup = random_nominal(rng, 6, 2, True)
    uset = LInfBall(P, 0.1, sup)
    box = IntervalSet(uset.lower, uset.upper, nominal=P)
    np.testing.assert_array_equal(uset.lower, np.where(sup, np.maximum(P - 0.1, 0), 0))
    np.testing.assert_array_equal(uset.upper, np.where(sup, np.minimum(P + 0.1, 1), 0))
    z = rng.normal(size=(6, 2, 6))
    np.testing.assert_array_equal(uset.worst_case(z).value, box.worst_case(z).value)
    assert uset.distance(P).max() == 0 and uset.contains(box.worst_case(z).p).all()


@settings(max_examples=examples(40))
@given(n=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_default_nominal_is_the_projection_of_the_centre(n, seed):
    """KKT of the projection onto {l <= p <= u, sum p = 1}: p = clip(x + t, l, u)."""
    rng = np.random.default_rng(seed)
    x = rng.dirichlet(np.ones(n))
    lo = np.clip(x - rng.uniform(0, 0.3, n), 0, 1) * (rng.random(n) < 0.8)
    up = np.clip(x + rng.uniform(0, 0.3, n), 0, 1)
    p = box_simplex_projection(0.5 * (lo + up), lo, up)
    assert abs(p.sum() - 1.0) <= 1e-12 and (p >= lo).all() and (p <= up).all()
    # p - centre is constant on the free entries (strictly inside the box)
    free = (p > lo + 1e-12) & (p < up - 1e-12)
    shift = p - 0.5 * (lo + up)
    if free.sum() > 1:
        assert np.ptp(shift[free]) <= 1e-12
    # entries at a bound are where the shifted centre leaves the box
    if free.any():
        t = shift[free][0]
        np.testing.assert_allclose(p, np.clip(0.5 * (lo + up) + t, lo, up), atol=1e-12)
    box = IntervalSet(lo[None, None].repeat(n, 0), up[None, None].repeat(n, 0))
    np.testing.assert_allclose(box.nominal[0, 0], p, atol=0)


@settings(max_examples=examples(60))
@given(N=st.integers(1, 8), n=st.integers(1, 700), seed=st.integers(0, 2**32 - 1),
       kind=st.sampled_from(["normal", "ties", "spread", "inf"]))
def test_weighted_threshold_matches_a_sort(N, n, seed, kind):
    """The bracketing search of the greedy threshold against a plain sort."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        key = rng.normal(size=(N, n))
    elif kind == "ties":
        key = rng.integers(-3, 3, (N, n)).astype(float)
    elif kind == "spread":
        key = np.exp(8 * rng.normal(size=(N, n)))
    else:
        key = rng.normal(size=(N, n))
        key[:, ::3] = np.inf
    c = rng.random((N, n)) * (rng.random((N, n)) < 0.8)
    fin = np.isfinite(key)
    total = (c * fin).sum(axis=1)
    T = total * rng.uniform(-0.1, 1.1, N)
    kappa, below, tied, (tr, tc) = weighted_threshold(key, c, T)
    for i in range(N):
        k, ci, T_i = key[i], c[i], T[i]
        if kappa[i] == -np.inf:  # nothing to take
            assert T_i <= 0
            continue
        if kappa[i] == np.inf:  # everything
            assert T_i >= total[i] * (1 - 1e-12) and below[i] == pytest.approx(total[i])
            continue
        assert 0 < T_i <= total[i] * (1 + 1e-12)
        # below and tied are the weights under and at kappa, and they bracket T
        assert abs(below[i] - ci[k < kappa[i]].sum()) <= 1e-12
        assert abs(tied[i] - ci[k == kappa[i]].sum()) <= 1e-12
        assert below[i] <= T_i + 1e-12 and T_i <= below[i] + tied[i] + 1e-12
        # the first key value whose cumulative weight (in sorted order) reaches T
        o = np.argsort(k[fin[i]], kind="stable")
        ks, cs = k[fin[i]][o], ci[fin[i]][o]
        first = np.flatnonzero(np.cumsum(cs) >= T_i)
        ref = ks[first[0]] if first.size else ks[-1]
        gap = ci[(k > min(ref, kappa[i])) & (k < max(ref, kappa[i]))].sum()
        assert gap <= 1e-12  # the same key up to zero-weight keys between them
    assert (key[tr, tc] == kappa[tr]).all()


@settings(max_examples=examples(40))
@given(N=st.integers(1, 6), n=st.integers(1, 600), seed=st.integers(0, 2**32 - 1),
       ties=st.booleans())
def test_weighted_threshold_with_a_known_bracket(N, n, seed, ties):
    """With bounds (lo, F(lo), hi, F(hi)): the greedy from the keys <= lo up to hi."""
    rng = np.random.default_rng(seed)
    key = rng.integers(-4, 4, (N, n)).astype(float) if ties else rng.normal(size=(N, n))
    c = rng.random((N, n))
    a, b = np.sort(rng.choice(np.unique(key), size=(N, 2)), axis=1).T
    lo = np.where(rng.random(N) < 0.2, -np.inf, np.nextafter(a, -np.inf))
    hi = b
    f_lo = (c * (key <= lo[:, None])).sum(axis=1)
    f_hi = (c * (key <= hi[:, None])).sum(axis=1)
    T = f_lo + (f_hi - f_lo) * rng.uniform(-0.2, 1.2, N)
    kappa, below, tied, (tr, tc) = weighted_threshold(key, c, T, finite=True,
                                                      bounds=(lo, f_lo, hi, f_hi))
    for i in range(N):
        k, ci = key[i], c[i]
        if T[i] <= f_lo[i]:  # exactly the keys <= lo
            assert ((k < kappa[i]) == (k <= lo[i])).all() and tied[i] == 0
            continue
        assert lo[i] < kappa[i] <= np.nextafter(hi[i], np.inf)
        target = min(T[i], f_hi[i])
        assert abs(below[i] - ci[k < kappa[i]].sum()) <= 1e-12
        assert abs(tied[i] - ci[k == kappa[i]].sum()) <= 1e-12
        assert below[i] <= target + 1e-12 and target <= below[i] + tied[i] + 1e-12
    assert (key[tr, tc] == kappa[tr]).all()


# --------------------------------------------------------------------------- KL
def test_kl_limits_by_hand():
    P = np.array([[[0.5, 0.25, 0.25]]] * 3)
    z = np.array([0.0, 1.0, 2.0])
    # r >= -log q0 = log 2: the minimiser of z only, value 0
    res = KLBall(P, math.log(2.0)).worst_case(z)
    np.testing.assert_array_equal(res.p[0, 0], [1.0, 0.0, 0.0])
    assert res.value[0, 0] == 0.0
    # z constant on the support: the nominal
    res = KLBall(P, 0.3).worst_case(np.ones(3))
    np.testing.assert_array_equal(res.p, P)
    # a tilted distribution q exp(-eta z) / Z with KL = r
    res = KLBall(P, 0.1).worst_case(z)
    p = res.p[0, 0]
    eta = math.log((p[0] / 0.5) / (p[1] / 0.25))
    np.testing.assert_allclose(p, P[0, 0] * np.exp(-eta * z) / (P[0, 0] @ np.exp(-eta * z)),
                               atol=1e-14)
    assert kl_divergence(p, P[0, 0]) == pytest.approx(0.1, abs=1e-13)


@pytest.mark.parametrize("shrink", [0.0, 1e-16, 1e-12, 1e-6])
def test_kl_radius_just_below_the_limit(shrink):
    """r just below -log q0: the root is at a huge eta; the answer is finite, feasible
    and close to the limit distribution."""
    P = np.array([[[0.5, 0.25, 0.25]]] * 3)
    cap = math.log(2.0)
    r = np.nextafter(cap, 0.0) * (1 - shrink)
    z = np.array([0.0, 1e-9, 2.0])
    res = KLBall(P, r).worst_case(z)
    assert res.success and np.isfinite(res.p).all()
    assert kl_divergence(res.p[0, 0], P[0, 0]) <= r + 1e-12
    assert res.value[0, 0] - res.dual[0, 0] <= 1e-12
    assert res.value[0, 0] - kl_dual_bound(P[0, 0], z, r) <= 1e-9


def test_kl_huge_values_do_not_overflow():
    P = np.full((2, 1, 2), 0.5)
    res = KLBall(P, 0.05).worst_case(np.array([1e300, -1e300]))
    assert np.isfinite(res.value).all() and np.isfinite(res.p).all()
    assert res.value[0, 0] < 0


@pytest.mark.parametrize("radius", [1e-6, 0.02, 0.5])
def test_kl_rows_of_subnormal_values_are_solved_as_their_scaled_copy(radius):
    """A row of values below 2.2e-308 (a cost value that a policy reaches with
    probability 1e-300: a mirror-descent planner's iterate) is solved and certified, and
    its answer is the answer of the same row scaled by 2^1000 (an exact scaling)."""
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(6), size=(6, 2))
    P[0, 0, :2] = 0.0
    P /= P.sum(axis=-1, keepdims=True)
    z = -np.ldexp(rng.random((6, 2, 6)), -1060)  # subnormal, a few bits each
    z[1, 1] = 0.0
    z[2, 0, 3] = -1e-300  # one normal value beside subnormal ones
    uset = KLBall(P, radius)
    res = uset.worst_case(z)
    ref = uset.worst_case(np.ldexp(z, 1000))
    assert res.success and ref.success
    np.testing.assert_allclose(res.p, ref.p, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.ldexp(res.value, 1000) <= ref.value + 1e-12, True)


# --------------------------------------------------------------------------- finite set
def test_finite_set_members_distance_and_contains():
    rng = np.random.default_rng(1)
    K = np.stack([rng.dirichlet(np.ones(3), size=(3, 2)) for _ in range(4)])
    fs = FiniteSet(K)
    assert fs.rectangularity == "none" and "none" in RECTANGULARITIES
    np.testing.assert_array_equal(fs.nominal, K[0])
    np.testing.assert_array_equal(fs.members, K)
    for m in range(4):
        assert fs.contains(K[m]).all() and fs.distance(K[m]).max() == 0.0
        assert fs.closest(K[m]) == m
    # rows of two members: not a member, the rows of the other member are False
    mix = K[1].copy()
    mix[0] = K[2][0]
    inside = fs.contains(mix)
    d = np.abs(K - mix).max(axis=(1, 2, 3))
    m = int(np.argmin(d))  # the closest member in the largest difference
    assert fs.closest(mix) == m
    np.testing.assert_array_equal(fs.distance(mix), np.abs(mix - K[m]).max(axis=2))
    np.testing.assert_array_equal(inside, (mix == K[m]).all(axis=2))
    assert not inside.all()
    # a kernel close to a member (within tol) is contained
    near = K[3] + 1e-12 * np.array([1.0, -1.0, 0.0])
    assert fs.contains(near).all() and not fs.contains(near, tol=1e-13).all()


def test_finite_set_evaluation_takes_the_worst_member():
    model = rx.domains.garnet(5, 2, 2, n_constraints=2, seed=3, gamma=0.9)
    rng = np.random.default_rng(4)
    K = np.stack([model.P] + [rng.dirichlet(np.ones(5), size=(5, 2)) for _ in range(3)])
    fs = FiniteSet(K)
    policy = rng.dirichlet(np.ones(2), size=5)
    res = rx.robust_evaluate(model, policy, fs, "value", lam=[0.5, 1.0])
    each = [rx.evaluate(model.with_transitions(P), policy, [0.5, 1.0]) for P in K]
    values = np.array([e.value for e in each])
    costs = np.array([e.costs for e in each])
    assert res.value == values.min() and res.member == int(np.argmin(values))
    np.testing.assert_array_equal(res.costs_worst, costs.max(axis=0))
    np.testing.assert_array_equal(res.cost_members, np.argmax(costs, axis=0))
    lag = rx.robust_evaluate(model, policy, fs, "lagrangian", lam=[0.5, 1.0])
    assert lag.lagrangian_p0 == min(e.lagrangian_p0 for e in each)


def test_finite_set_refuses_a_worst_case_per_pair():
    fs = FiniteSet([np.full((2, 1, 2), 0.5)])
    with raises_fact(rx.InputError, "FiniteSet is not rectangular", "robust_evaluate",
                     "rectangular set"):
        fs.worst_case(np.zeros(2))
    model = rx.domains.garnet(2, 1, 1, seed=0)
    with raises_fact(rx.InputError, "robust evaluation", "FiniteSet is not rectangular"):
        check_set(fs, model, "sa", "robust evaluation")


# --------------------------------------------------------------------------- files
@pytest.mark.parametrize("kind", [*KINDS, "finite"])
def test_save_and_load_round_trip_exactly(kind, tmp_path):
    rng = np.random.default_rng(9)
    if kind == "finite":
        uset = FiniteSet(rng.dirichlet(np.ones(4), size=(3, 4, 2)))
    else:
        uset = make_set(kind, rng, 4, 2)
    path = uset.save(tmp_path / "set")
    assert path.suffix == ".npz"
    for back in (type(uset).load(path), UncertaintySet.load(path), rx.uncertainty.load_set(path)):
        assert type(back) is type(uset)
        for k, v in uset._arrays().items():
            np.testing.assert_array_equal(back._arrays()[k], v)
    if kind != "finite":
        z = rng.normal(size=(4, 2, 4))
        np.testing.assert_array_equal(back.worst_case(z).p, uset.worst_case(z).p)
    other = L1Ball(np.full((2, 1, 2), 0.5), 0.1).save(tmp_path / "l1")
    with raises_fact(rx.LoadError, "l1.npz", "saved L1Ball", type(uset).__name__):
        type(uset).load(other)


@pytest.mark.parametrize("kind", KINDS)
def test_sets_are_immutable(kind):
    uset = make_set(kind, np.random.default_rng(0), 3, 2)
    with pytest.raises(AttributeError, match="immutable"):
        uset._nominal = None


# --------------------------------------------------------------------------- errors
P2 = np.full((2, 1, 2), 0.5)


@pytest.mark.parametrize(
    ("build", "facts"),
    [
        (lambda: WeightedL1Ball(P2, -0.5, 1.0), ("alpha[0, 0]", "-0.5", "negative")),
        (lambda: WeightedL1Ball(P2, 0.1, np.array([1.0, 0.0])),
         ("weights[0, 0, 1] = 0.0", "> 0", "support")),
        (lambda: WeightedL1Ball(P2, 0.1, np.ones(3)), ("weights", "(3,)", "(2, 1, 2)")),
        (lambda: WeightedL1Ball(np.full((2, 1, 2), 0.6), 0.1, 1.0),
         ("nominal[0, 0, :]", "sums to 1.2")),
        (lambda: WeightedL1Ball(P2, 0.1, 1.0, np.array([[[True, False]], [[True, True]]])),
         ("nominal[0, 0, 1] = 0.5", "outside the support")),
        (lambda: WeightedL1Ball(np.ones((2, 2)), 0.1, 1.0), ("nominal", "(S, A, S)", "(2, 2)")),
        (lambda: LInfBall(P2, np.ones(3)), ("radius", "(2, 1)", "(3,)")),
        (lambda: LInfBall(P2, -1.0), ("radius[0, 0]", "negative")),
        (lambda: KLBall(P2, -0.1), ("radius[0, 0]", "negative")),
        (lambda: KLBall(np.full((2, 1, 2), -0.5), 0.1), ("nominal[0, 0, 0]", "negative")),
        (lambda: IntervalSet(np.full((2, 1, 2), 0.6), np.full((2, 1, 2), 0.7)),
         ("lower[0, 0, :]", "sums to 1.2", "<= 1")),
        (lambda: IntervalSet(np.zeros((2, 1, 2)), np.full((2, 1, 2), 0.4)),
         ("upper[0, 0, :]", "sums to 0.8", ">= 1")),
        (lambda: IntervalSet(np.full((2, 1, 2), 0.5), np.full((2, 1, 2), 0.4)),
         ("lower[0, 0, 0] = 0.5", "exceeds upper[0, 0, 0] = 0.4")),
        (lambda: IntervalSet(np.zeros((2, 1, 2)), np.full((2, 1, 2), 1.5)),
         ("upper[0, 0, 0] = 1.5", "exceeds 1")),
        (lambda: IntervalSet(np.zeros((2, 1, 2)), np.ones((2, 1, 2)),
                             nominal=np.full((2, 1, 2), 0.6)),
         ("nominal[0, 0, :]", "sums to 1.2")),
        (lambda: IntervalSet(np.full((2, 1, 2), 0.4), np.full((2, 1, 2), 0.6),
                             nominal=np.array([[[0.3, 0.7]], [[0.5, 0.5]]])),
         ("nominal[0, 0, 0] = 0.3", "outside [lower, upper]")),
        (lambda: FiniteSet(np.full((2, 1, 2), 0.5)), ("kernels", "(M, S, A, S)", "(2, 1, 2)")),
        (lambda: FiniteSet(np.full((1, 2, 1, 2), 0.6)), ("kernels[0, 0, 0, :]", "sums to 1.2")),
    ],
)
def test_set_errors(build, facts):
    with raises_fact(rx.InputError, *facts):
        build()


@pytest.mark.parametrize("kind", KINDS)
def test_worst_case_input_errors(kind):
    uset = make_set(kind, np.random.default_rng(0), 3, 2)
    with raises_fact(rx.InputError, "z", "(3, 2, 3)", "got (2, 3, 3)"):
        uset.worst_case(np.zeros((2, 3, 3)))
    with raises_fact(rx.InputError, "z[1]", "nan", "not finite"):
        uset.worst_case(np.array([0.0, np.nan, 1.0]))
    with raises_fact(rx.OptionError, "method", "'sort'", "'lp'"):
        uset.worst_case(np.zeros(3), method="simplex")


# --------------------------------------------------------------------------- estimators
def coverage(build, P, n, reps, seed):
    """Fraction of seeded repetitions whose set holds the true kernel P."""
    rng = np.random.default_rng(seed)
    S, A, _ = P.shape
    hits = 0
    for _ in range(reps):
        counts = np.stack([[rng.multinomial(n, P[s, a]) for a in range(A)]
                           for s in range(S)])
        hits += bool(build(counts).contains(P).all())
    return hits / reps


def min_coverage(delta, reps):
    """1 - delta minus three binomial standard deviations."""
    return 1 - delta - 3 * math.sqrt(delta * (1 - delta) / reps)


TRUE_P = np.array([
    [[0.7, 0.2, 0.1, 0.0], [0.25, 0.25, 0.25, 0.25]],
    [[0.05, 0.05, 0.1, 0.8], [0.0, 0.0, 0.5, 0.5]],
    [[0.4, 0.3, 0.2, 0.1], [1.0, 0.0, 0.0, 0.0]],
    [[0.1, 0.6, 0.3, 0.0], [0.3, 0.3, 0.2, 0.2]],
])


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("interval", lambda c, d: estimate_interval_set(c, d)),
        ("interval, no pseudo-count", lambda c, d: estimate_interval_set(c, d, 0.0)),
        ("linf", lambda c, d: estimate_linf_ball(c, d)),
        ("linf, no pseudo-count", lambda c, d: estimate_linf_ball(c, d, 0.0)),
        ("kl box", lambda c, d: estimate_kl_ball(c, d)),
        ("l1 hoeffding", lambda c, d: estimate_l1_ball(c, d, pseudo_count=0.0)),
        ("l1 weissman", lambda c, d: estimate_l1_ball(c, d, pseudo_count=0.0,
                                                     bound="weissman")),
    ],
)
@pytest.mark.parametrize("delta", [0.1, 0.5])
def test_estimated_sets_hold_the_true_kernel_with_their_confidence(name, build, delta):
    """Monte Carlo over 200 seeded data sets of 30 samples per pair."""
    reps = 200
    cov = coverage(lambda c: build(c, delta), TRUE_P, 30, reps, seed=hash(name) % 1000)
    assert cov >= min_coverage(delta, reps), (name, cov)


def test_interval_estimate_by_hand():
    counts = np.zeros((2, 1, 2))
    counts[0, 0] = [3, 1]
    counts[1, 0] = [0, 0]
    box = estimate_interval_set(counts, 0.1, pseudo_count=1.0)
    eps = math.sqrt(math.log(2 * 4 / 0.1) / (2 * 4))  # E = 2 * 1 * 2 entries
    np.testing.assert_allclose(box.lower[0, 0], np.clip([0.75 - eps, 0.25 - eps], 0, 1))
    np.testing.assert_allclose(box.upper[0, 0], np.clip([0.75 + eps, 0.25 + eps], 0, 1))
    np.testing.assert_array_equal(box.lower[1, 0], [0.0, 0.0])  # no samples: [0, 1]
    np.testing.assert_array_equal(box.upper[1, 0], [1.0, 1.0])
    # the nominal: the smoothed frequencies (4/6, 2/6), inside the box here
    np.testing.assert_allclose(box.nominal[0, 0], [4 / 6, 2 / 6], atol=1e-15)
    assert entry_radius(4, 4, 0.1) == pytest.approx(eps)
    uset = estimate_linf_ball(counts, 0.1)
    assert uset.radius[0, 0] == pytest.approx(eps + abs(4 / 6 - 0.75))
    assert uset.radius[1, 0] == 1.0


def test_weissman_radius_closed_form():
    for n, Sp, S, A in [(100, 5, 25, 4), (37, 10, 10, 10), (50, 2, 3, 3)]:
        ref = math.sqrt(2 / n * (math.log(2**Sp - 2) + math.log(S * A / 0.1)))
        assert weissman_radius(n, Sp, S, A, 0.1) == pytest.approx(ref, rel=1e-14)
        assert weissman_radius(n, Sp, S, A, 0.1) < hoeffding_radius(n, Sp, S, A, 0.1)
    assert weissman_radius(10, 1, 2, 2) == 0.0
    counts = np.random.default_rng(0).integers(0, 9, (3, 2, 3))
    uset = estimate_l1_ball(counts, 0.2, bound="weissman")
    n = counts.sum(axis=2) + 3
    np.testing.assert_allclose(uset.alpha, weissman_radius(n, 3, 3, 2, 0.2))
    # the default is unchanged
    np.testing.assert_array_equal(estimate_l1_ball(counts, 0.2).alpha,
                                  hoeffding_radius(n, 3, 3, 2, 0.2))


@settings(max_examples=examples(30))
@given(n=st.integers(0, 60), seed=st.integers(0, 2**32 - 1), S=st.integers(2, 6))
def test_kl_box_radius_bounds_the_kl_over_the_box(n, seed, S):
    """Every vertex of box and simplex (all entries at a bound but one) has
    KL(p || nominal) <= radius: the chord bound is an upper bound."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(S))
    counts = rng.multinomial(n, p)[None, None, :].repeat(S, 0)
    uset = estimate_kl_ball(counts, 0.1)
    box = estimate_interval_set(counts, 0.1)
    lo, up, q = box.lower[0, 0], box.upper[0, 0], uset.nominal[0, 0]
    # KL(. || q) is convex, so its largest value over the box is at a vertex
    worst = max(kl_divergence(v, q) for v in interval_vertices(lo, up))
    assert worst <= uset.radius[0, 0] + 1e-12


def test_kl_types_radius_formula():
    counts = np.zeros((2, 1, 2))
    counts[0, 0] = [6, 3]
    uset = estimate_kl_ball(counts, 0.1, bound="types")
    n = 9
    assert uset.radius[0, 0] == pytest.approx((1 * math.log(n + 1) + math.log(2 / 0.1)) / n)
    assert uset.radius[1, 0] == pytest.approx(math.log(2.0))  # no samples: the simplex


@pytest.mark.parametrize(
    ("call", "facts"),
    [
        (lambda: estimate_kl_ball(np.ones((2, 1, 2)), pseudo_count=0.0),
         ("pseudo_count", "(0, 1e+12]", "centre > 0")),
        (lambda: estimate_kl_ball(np.ones((2, 1, 2)), bound="sanov"),
         ("bound", "'box'", "'types'")),
        (lambda: estimate_l1_ball(np.ones((2, 1, 2)), bound="bernstein"),
         ("bound", "'hoeffding'", "'weissman'")),
        (lambda: estimate_interval_set(np.zeros((2, 1, 2)), pseudo_count=0.0),
         ("(0, 0)", "no counts", "pseudo_count")),
        (lambda: estimate_linf_ball(-np.ones((2, 1, 2))), ("counts[0, 0, 0]", "negative")),
        (lambda: estimate_interval_set(np.ones((2, 1, 3))), ("counts", "(S, A, S)")),
        (lambda: estimate_interval_set(np.ones((2, 1, 2)), delta=1.5), ("delta", "(0, 1)")),
    ],
)
def test_estimation_errors(call, facts):
    with raises_fact(rx.InputError, *facts):
        call()


def test_public_names():
    for name in ("WeightedL1Ball", "LInfBall", "IntervalSet", "KLBall", "FiniteSet",
                 "estimate_interval_set", "estimate_linf_ball", "estimate_kl_ball"):
        assert name in rx.__all__ and getattr(rx, name) is getattr(rx.uncertainty, name)
    rows = worst_case_interval(np.zeros((1, 2)), np.ones((1, 2)), np.array([[1.0, 0.0]]))
    np.testing.assert_array_equal(rows.p, [[0.0, 1.0]])
