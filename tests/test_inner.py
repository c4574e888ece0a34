"""The L1 inner problem: exact sort-based algorithm vs cvxpy LP vs brute force."""

import math
import re
import warnings

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact.uncertainty.l1_sort as inner_mod
from rcmdp_exact.core.model_checks import ModelError
from rcmdp_exact.uncertainty import l1_vertices
from rcmdp_exact.uncertainty.l1_sort import l1_violation, worst_case_l1

FEAS_TOL = 1e-9


# --------------------------------------------------------------------------- helpers
def brute_force(p_hat, z, alpha, support=None):
    """Minimum of z.p over the vertices of the row's set, by enumeration.

    :func:`rcmdp_exact.uncertainty.l1_vertices` lists every point where the active
    constraints have full rank (every coordinate 0 or p_hat but at most two, fixed by
    the sum and the ball), which a linear function attains its minimum at; it shares
    nothing with the sort-based algorithm and is checked against linprog in
    tests/test_theory_tools.py.
    """
    V = l1_vertices(p_hat, alpha, support)
    assert len(V), "the nominal point is in the set, so there is a vertex"
    return float((V @ np.asarray(z, float)).min())


def random_row(rng, n, support_frac=0.7, degenerate=False):
    sup = rng.random(n) < support_frac
    sup[rng.integers(n)] = True
    if degenerate:
        p = np.zeros(n)
        p[rng.choice(np.flatnonzero(sup))] = 1.0
    else:
        p = rng.random(n) * sup * (rng.random(n) < 0.7)
        if p.sum() == 0:
            p = sup.astype(float)
        p /= p.sum()
    return p, sup


@st.composite
def inner_cases(draw, max_n=60):
    """Batches of inner problems with random supports, ties and degenerate p_hat."""
    n = draw(st.integers(1, max_n))
    rows = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    full = draw(st.booleans())
    degenerate = draw(st.booleans())
    ps, sups = [], []
    for _ in range(rows):
        p, sup = random_row(rng, n, 1.0 if full else rng.uniform(0.1, 1.0),
                            degenerate and rng.random() < 0.7)
        ps.append(p)
        sups.append(sup)
    p_hat, support = np.array(ps), np.array(sups)
    tie_kind = draw(st.sampled_from(["ties", "continuous", "constant"]))
    if tie_kind == "ties":
        z = rng.integers(-2, 3, size=(rows, n)).astype(float)
    elif tie_kind == "continuous":
        z = rng.normal(scale=5.0, size=(rows, n))
    else:
        z = np.full((rows, n), 1.5)
    if draw(st.booleans()):
        z = z[0]  # shared by all rows
    alpha = np.array([draw(st.floats(0.0, 3.0)) for _ in range(rows)])
    if draw(st.booleans()):
        alpha[rng.integers(rows)] = draw(st.sampled_from([0.0, 2.0, 3.0]))
    return p_hat, z, alpha, (None if full else support)


# --------------------------------------------------------------------------- hand case
@pytest.mark.parametrize("method", ["sort", "lp"])
@pytest.mark.parametrize(
    ("alpha", "value", "p"),
    [
        (0.0, 2.3, [0.4, 0.3, 0.1, 0.2]),
        # eps = min(1/2, 0.6) = 0.5 moves to z=1; removed: 0.1 (z=5), 0.2 (z=4), 0.2 (z=2)
        (1.0, 1.1, [0.9, 0.1, 0.0, 0.0]),
        # eps = min(1, 0.6) = 0.6: everything moves to z=1
        (2.0, 1.0, [1.0, 0.0, 0.0, 0.0]),
    ],
)
def test_protocol_hand_checked_case(method, alpha, value, p):
    res = worst_case_l1([0.4, 0.3, 0.1, 0.2], [1.0, 2.0, 5.0, 4.0], alpha, method=method)
    assert res.value == pytest.approx(value, abs=1e-12)
    np.testing.assert_allclose(res.p, p, atol=1e-12)
    assert res.success


# --------------------------------------------------------------------------- sort vs LP
@settings(max_examples=examples(60))
@given(inner_cases())
def test_sort_matches_lp_and_both_feasible(case):
    p_hat, z, alpha, support = case
    s = worst_case_l1(p_hat, z, alpha, support, method="sort")
    lp = worst_case_l1(p_hat, z, alpha, support, method="lp")
    assert lp.success
    np.testing.assert_allclose(s.value, lp.value, atol=1e-8, rtol=0)
    assert (l1_violation(s.p, p_hat, alpha, support) <= FEAS_TOL).all()
    assert (l1_violation(lp.p, p_hat, alpha, support) <= FEAS_TOL).all()
    zz = np.broadcast_to(z, p_hat.shape)
    # the reported value is the objective of the reported distribution
    np.testing.assert_allclose((s.p * zz).sum(axis=1), s.value, atol=1e-12)


@settings(max_examples=examples(40))
@given(inner_cases(max_n=6))
def test_sort_matches_vertex_enumeration(case):
    p_hat, z, alpha, support = case
    s = worst_case_l1(p_hat, z, alpha, support)
    zz = np.broadcast_to(z, p_hat.shape)
    for i in range(p_hat.shape[0]):
        ref = brute_force(p_hat[i], zz[i], alpha[i], None if support is None else support[i])
        assert s.value[i] == pytest.approx(ref, abs=1e-9)


@settings(max_examples=examples(60))
@given(inner_cases())
def test_value_is_monotone_in_alpha_and_bounded(case):
    p_hat, z, alpha, support = case
    zz = np.broadcast_to(z, p_hat.shape)
    v0 = worst_case_l1(p_hat, z, 0.0, support)
    np.testing.assert_array_equal(v0.p, p_hat)  # alpha = 0: the nominal itself
    np.testing.assert_allclose(v0.value, (p_hat * zz).sum(axis=1), atol=1e-12)
    v1 = worst_case_l1(p_hat, z, alpha, support).value
    v2 = worst_case_l1(p_hat, z, alpha + 0.25, support).value
    assert (v2 <= v1 + 1e-12).all() and (v1 <= v0.value + 1e-12).all()
    # alpha >= 2: the whole simplex on the support, the minimum of z there
    zmin = np.where(support if support is not None else True, zz, np.inf).min(axis=1)
    np.testing.assert_allclose(worst_case_l1(p_hat, z, 2.0, support).value, zmin, atol=1e-12)


# --------------------------------------------------------------------------- batching
def test_batched_equals_row_by_row_and_shared_z():
    rng = np.random.default_rng(3)
    S, A, n = 7, 3, 50
    p_hat = rng.dirichlet(np.ones(n), size=(S, A))
    z = rng.normal(size=(S, A, n))
    alpha = rng.uniform(0, 2.5, size=(S, A))
    res = worst_case_l1(p_hat, z, alpha)
    assert res.p.shape == (S, A, n) and res.value.shape == (S, A)
    for s in range(S):
        for a in range(A):
            one = worst_case_l1(p_hat[s, a], z[s, a], alpha[s, a])
            assert one.value == pytest.approx(res.value[s, a], abs=1e-13)
    shared = worst_case_l1(p_hat, z[0, 0], alpha)
    full = worst_case_l1(p_hat, np.broadcast_to(z[0, 0], (S, A, n)).copy(), alpha)
    np.testing.assert_allclose(shared.value, full.value, atol=1e-13)
    np.testing.assert_allclose(shared.p, full.p, atol=1e-15)


@pytest.mark.parametrize("n", [3, 40, 200])
def test_exact_fallback_path_matches(monkeypatch, n):
    """Near-ties (z differing in the last bits) and the exact argsort path."""
    rng = np.random.default_rng(n)
    N = 30
    p_hat = rng.dirichlet(np.full(n, 0.5), size=N)
    base = rng.normal(size=(N, 1)) * 3
    ulps = rng.integers(-2000, 2000, size=(N, n))
    z = base + ulps * np.spacing(np.abs(base))  # values a few thousand ulps apart
    z[:, : n // 3] = rng.normal(size=(N, n // 3))
    alpha = rng.uniform(0, 2, N)
    packed = worst_case_l1(p_hat, z, alpha)
    monkeypatch.setattr(inner_mod, "_PACK_LIMIT", 0)  # force np.argsort everywhere
    exact = worst_case_l1(p_hat, z, alpha)
    np.testing.assert_allclose(packed.value, exact.value, atol=1e-14, rtol=0)
    assert (l1_violation(packed.p, p_hat, alpha) <= FEAS_TOL).all()
    for i in range(N):
        assert packed.value[i] == pytest.approx(naive_row(p_hat[i], z[i], alpha[i]), abs=1e-12)


def naive_row(p_hat, z, alpha, support=None):
    """The algorithm of the module docstring written as a plain loop over one row."""
    on = np.arange(p_hat.size) if support is None else np.flatnonzero(support)
    k = on[np.argmin(z[on])]
    eps = min(alpha / 2, 1 - p_hat[k])
    p, left = p_hat.astype(float).copy(), eps
    for i in np.argsort(-z, kind="stable"):
        if i == k or left <= 0:
            continue
        take = min(p[i], left)
        p[i] -= take
        left -= take
    p[k] += eps
    return p @ z


@pytest.mark.parametrize("n", [49, 67, 257, 300, 1000])
@pytest.mark.parametrize("kind", ["continuous", "ties", "support", "shared"])
def test_long_rows_block_crossing(monkeypatch, n, kind):
    """Rows longer than the cumulative-sum limit: blocks of d | n columns or a short
    last block (n prime), dense or partial supports, ties, shared z, exact path."""
    rng = np.random.default_rng(n)
    N = 24
    sup = None
    p_hat = rng.dirichlet(np.full(n, 0.3), size=N)
    if kind == "support":
        sup = rng.random((N, n)) < 0.4
        sup[:, 0] = True
        p_hat = p_hat * sup
        p_hat /= p_hat.sum(axis=1, keepdims=True)
    z = rng.normal(size=(N, n))
    if kind == "ties":
        z = rng.integers(0, 6, size=(N, n)).astype(float)
    if kind == "shared":
        z = z[0]
    alpha = rng.uniform(0, 2.2, N)
    alpha[:3] = [0.0, 2.0, 1e-3]
    res = worst_case_l1(p_hat, z, alpha, sup)
    zz = np.broadcast_to(z, p_hat.shape)
    ref = [naive_row(p_hat[i], zz[i], alpha[i], None if sup is None else sup[i])
           for i in range(N)]
    np.testing.assert_allclose(res.value, ref, atol=1e-12)
    assert (l1_violation(res.p, p_hat, alpha, sup) <= FEAS_TOL).all()
    np.testing.assert_allclose((res.p * zz).sum(axis=1), res.value, atol=1e-12)
    lp = worst_case_l1(p_hat[:4], zz[:4], alpha[:4], None if sup is None else sup[:4],
                       method="lp")
    np.testing.assert_allclose(res.value[:4], lp.value, atol=1e-8)
    monkeypatch.setattr(inner_mod, "_PACK_LIMIT", 0)  # the exact argsort path
    exact = worst_case_l1(p_hat, z, alpha, sup)
    np.testing.assert_allclose(exact.value, ref, atol=1e-12)


# --------------------------------------------------------------------------- hard inputs
#: z values that stress the packed float keys: signed zeros, subnormals, the smallest
#: normal number, tiny and huge magnitudes.
SPECIAL_Z = (0.0, -0.0, 5e-324, -5e-324, 1e-310, -1e-310, 2.2250738585072014e-308,
             -2.2250738585072014e-308, 1e-300, -1e-300, 1.0, -1.0, 1e300, -1e300)
#: Zeros and +-1 (a -0.0 is added to each row): equal values, different bit patterns.
SIGNED_ZEROS = (0.0, 0.0, 0.0, 1.0, -1.0)
#: Centres of clusters of z values a few ulps apart (near-ties, exact ties, sign changes).
NEAR_BASES = (1.0, -3.5, 0.0, -0.0, 1e-300, 1e-310, 7e299, -1e300)


def ulp_steps(x, k):
    """``x`` moved by ``k`` ulps, entrywise (``np.nextafter`` applied ``|k|`` times)."""
    x = np.array(x, dtype=float)
    for step in range(int(np.abs(k).max(initial=0))):
        x = np.where(k > step, np.nextafter(x, np.inf), x)
        x = np.where(-k > step, np.nextafter(x, -np.inf), x)
    return x


@st.composite
def hard_cases(draw):
    """Batches whose z has signed zeros, subnormals, huge values and near-ties."""
    n = draw(st.one_of(st.integers(1, 12), st.sampled_from([47, 48, 49, 64, 97, 130])))
    rows = draw(st.integers(2, 8))  # one row of z would be shared
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    special = rng.choice(SPECIAL_Z, size=(rows, n))
    base = np.broadcast_to(rng.choice(NEAR_BASES, size=(rows, 1)), (rows, n))
    near = ulp_steps(base, rng.integers(-3, 4, size=(rows, n)))
    zeros = rng.choice(SIGNED_ZEROS, size=(rows, n))
    zeros[np.arange(rows), rng.integers(n, size=rows)] = -0.0  # often a lone -0.0
    kind = draw(st.sampled_from(["special", "near", "mixed", "zeros", "zeros"]))
    z = {"special": special, "near": near, "zeros": zeros,
         "mixed": np.where(rng.random((rows, n)) < 0.5, special, near)}[kind]
    full = draw(st.booleans())
    ps, sups = [], []
    for _ in range(rows):
        p, sup = random_row(rng, n, 1.0 if full else rng.uniform(0.2, 1.0),
                            degenerate=rng.random() < 0.2)
        ps.append(p)
        sups.append(sup)
    if draw(st.sampled_from([False, False, True])):
        z = z[0]  # shared by all rows
    zz = np.broadcast_to(z, (rows, n))
    alpha = np.where(rng.random(rows) < 0.5, rng.uniform(0, 3, rows),
                     rng.choice([0.0, 1e-12, 2.0, 3.0, 1e300], rows))
    for i in range(rows):
        if rng.random() < 0.6:
            alpha[i] = crossing_alpha(rng, ps[i], zz[i], sups[i] | full)
    return np.array(ps), z, alpha, None if full else np.array(sups)


def crossing_alpha(rng, p_hat, z, support):
    """A radius whose crossing falls on a chosen position of the order of decreasing z.

    Mostly the first outcome of a run of equal bit patterns (where exact ties, near-ties
    and +0.0 next to -0.0 meet), else any position; the crossing lands at its start,
    inside it or at its end.
    """
    k = int(np.argmin(np.where(support, z, np.inf)))
    order = np.lexsort((np.signbit(z), -z))  # decreasing z, +0.0 before -0.0
    order = order[order != k]
    if order.size == 0:
        return 1.0
    bits = z[order].view(np.int64)
    starts = np.flatnonzero(np.r_[True, bits[1:] != bits[:-1]])
    pos = rng.choice(starts) if rng.random() < 0.7 else rng.integers(order.size)
    before = p_hat[order[:pos]].sum()
    return 2.0 * (before + rng.choice([0.0, 0.5, 1.0]) * p_hat[order[pos]])


def reference_greedy(p_hat, z, alpha, support=None):
    """The value of the greedy of the module docstring, in plain Python floats.

    Python's ``sorted`` (stable, IEEE comparisons: -0.0 == 0.0) gives the order of
    decreasing z; nothing of numpy's sorting or of the packed keys is used.
    """
    n = len(p_hat)
    on = [i for i in range(n) if support is None or support[i]]
    k = min(on, key=lambda i: z[i])
    eps = max(0.0, min(alpha / 2, 1.0 - p_hat[k]))
    p, left = [float(x) for x in p_hat], eps
    for i in sorted(range(n), key=lambda i: -z[i]):
        if i != k:
            take = min(p[i], left)
            p[i] -= take
            left -= take
    p[k] += eps
    return math.fsum(pi * zi for pi, zi in zip(p, z, strict=True))


def assert_optimal(p_hat, z, alpha, support, res):
    """Check ``res`` (a worst_case_l1 result) by an optimality certificate, row by row.

    A feasible p is optimal iff (C1) only minimisers of z on the support gain mass,
    (C2) every outcome that lost mass has a z at least that of every outcome holding
    mass that it did not gain (removal from the top: p is the greedy point of its moved
    mass m), and (C3) the budget is used up or all the mass sits on minimisers (m is as
    large as it may be, or the value is already min z).  C1 and C2 are checked with
    exact comparisons of z, so a wrong order anywhere shows, whatever ties are broken
    how.  The value is also compared with :func:`reference_greedy`.
    """
    zz = np.broadcast_to(z, p_hat.shape)
    sup = np.ones(p_hat.shape, bool) if support is None else support
    for i in range(p_hat.shape[0]):
        p, ph, zi, on = res.p[i], p_hat[i], zz[i], sup[i]
        zmin = zi[on].min()
        assert np.isfinite(p).all() and (p >= 0).all() and (p[~on] == 0).all()
        assert abs(p.sum() - 1.0) <= 1e-12
        dist = np.abs(p - ph).sum()
        assert dist <= alpha[i] + 1e-12
        gain = p > ph
        assert (zi[gain] == zmin).all()  # C1
        lost, held = p < ph, (p > 0) & ~gain
        if lost.any() and held.any():
            assert zi[lost].min() >= zi[held].max()  # C2
        assert dist >= alpha[i] - 1e-12 or p[zi > zmin].sum() <= 1e-12  # C3
        tol = 1e-12 * np.abs(zi).max() + 1e-320
        assert abs(res.value[i] - math.fsum(p * zi)) <= tol
        ref = reference_greedy(ph, zi, alpha[i], None if support is None else on)
        assert abs(res.value[i] - ref) <= tol


@settings(max_examples=examples(150))
@given(hard_cases())
def test_hard_z_signed_zeros_subnormals_huge_and_near_ties(case):
    """Packed keys, the exact path and the shared-z path on adversarial z."""
    p_hat, z, alpha, support = case
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warnings
        assert_optimal(p_hat, z, alpha, support, worst_case_l1(p_hat, z, alpha, support))
        saved = inner_mod._PACK_LIMIT
        inner_mod._PACK_LIMIT = 0  # the exact np.argsort path
        try:
            exact = worst_case_l1(p_hat, z, alpha, support)
        finally:
            inner_mod._PACK_LIMIT = saved
        assert_optimal(p_hat, z, alpha, support, exact)


def test_signed_zero_ties_at_the_crossing_and_the_argmin():
    """+0.0 and -0.0 are equal but have different bit patterns (and packed keys)."""
    p_hat = np.array([[0.3, 0.3, 0.4], [0.5, 0.5, 0.0]])
    z = np.array([[0.0, -0.0, -1.0], [0.0, -0.0, 1.0]])
    alpha = np.array([0.8, 2.0])
    res = worst_case_l1(p_hat, z, alpha)
    # row 0: 0.4 moves to z = -1, taken from the two zeros (0.3 + 0.1, in any split)
    assert res.value[0] == pytest.approx(-0.8, abs=1e-15)
    assert res.p[0, 2] == pytest.approx(0.8) and res.p[0, :2].sum() == pytest.approx(0.2)
    # row 1: all the mass on the zeros, nothing to gain; the point stays a distribution
    assert res.value[1] == 0.0 and res.p[1].sum() == pytest.approx(1.0, abs=1e-15)
    assert (l1_violation(res.p, p_hat, alpha) <= 1e-15).all()


def test_huge_z_does_not_overflow():
    """The value is assembled without intermediate overflow near the float maximum."""
    big = np.finfo(float).max
    p_hat = np.array([[0.05, 0.9, 0.05]] * 2)
    z = np.array([[big, big / 2, -big]] * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = worst_case_l1(p_hat, z, 1.8)
    # eps = 0.9 moves to -big: 0.05 from big, 0.85 from big / 2
    np.testing.assert_allclose(res.p, [[0.0, 0.05, 0.95]] * 2, atol=1e-15)
    expected = 0.05 * (big / 2) - 0.95 * big
    np.testing.assert_allclose(res.value, expected, rtol=1e-15)


def test_without_ieee_subnormals_the_exact_path_is_used(monkeypatch):
    """A CPU that treats subnormals as zero (DAZ) would tie the keys of zeros and
    subnormal z: then no row goes through the packed keys."""
    assert inner_mod._subnormals_ordered()  # numpy's default floating-point environment
    monkeypatch.setattr(inner_mod, "_subnormals_ordered", lambda: False)

    def packed(*args, **kwargs):
        raise AssertionError("the packed path was used")

    monkeypatch.setattr(inner_mod, "_packed_rows", packed)
    rng = np.random.default_rng(5)
    p_hat = rng.dirichlet(np.ones(9), size=5)
    z = rng.choice(SPECIAL_Z, size=(5, 9))
    alpha = rng.uniform(0, 2.5, 5)
    assert_optimal(p_hat, z, alpha, None, worst_case_l1(p_hat, z, alpha))

@pytest.mark.parametrize("n", [2, 64])
def test_alpha_zero_returns_p_hat_even_when_its_argmin_mass_rounds_above_one(n):
    """1 - p_hat[k] < 0 by rounding must not move mass (eps is clipped at 0)."""
    p_hat = np.zeros((3, n))
    p_hat[:, -1] = 1.0 + 4e-16
    z = np.tile(np.arange(n, 0, -1, dtype=float), (3, 1))  # argmin at the last outcome
    for zz in (z, z[0]):
        res = worst_case_l1(p_hat, zz, 0.0)
        np.testing.assert_array_equal(res.p, p_hat)
        res = worst_case_l1(p_hat, zz, 1.0)
        np.testing.assert_array_equal(res.p, p_hat)  # nothing elsewhere to take


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize(
    ("field", "index", "bad", "message"),
    [
        ("z", (1, 2), np.inf, "z[1, 2] = inf is not finite"),
        ("z", (1, 0), -np.inf, "z[1, 0] = -inf is not finite"),
        ("z", (0, 3), np.nan, "z[0, 3] = nan is not finite"),
        ("p_hat", (1, 1), np.inf, "p_hat[1, 1] = inf is not finite"),
        ("p_hat", (0, 2), np.nan, "p_hat[0, 2] = nan is not finite"),
        ("alpha", (1,), np.inf, "alpha[1] = inf is not finite"),
        ("alpha", (0,), np.nan, "alpha[0] = nan is not finite"),
    ],
)
def test_non_finite_input_is_rejected(monkeypatch, exact, field, index, bad, message):
    """Per-row z (packed keys, or the exact path), p_hat and alpha with inf or NaN."""
    if exact:
        monkeypatch.setattr(inner_mod, "_PACK_LIMIT", 0)
    args = dict(p_hat=np.full((2, 4), 0.25), z=np.arange(8.0).reshape(2, 4),
                alpha=np.array([0.5, 0.7]))
    args[field][index] = bad
    with raises_fact(ModelError, message):
        worst_case_l1(**args)


def test_single_outcome_and_scalar_input():
    res = worst_case_l1([1.0], [4.0], 1.5)
    assert res.value == 4.0 and res.p.tolist() == [1.0]


# --------------------------------------------------------------------------- LP status
def test_lp_optimal_inaccurate_is_a_warning(monkeypatch):
    import cvxpy as cp

    original = cp.Problem.solve

    def inaccurate(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        self._status = cp.OPTIMAL_INACCURATE
        return out

    monkeypatch.setattr(cp.Problem, "solve", inaccurate)
    with pytest.warns(RuntimeWarning, match="OPTIMAL_INACCURATE"):
        res = worst_case_l1([0.5, 0.5], [1.0, 0.0], 0.4, method="lp")
    assert not res.success and res.status == "optimal_inaccurate"
    assert res.value == pytest.approx(0.3, abs=1e-9)


def test_lp_bad_status_raises(monkeypatch):
    import cvxpy as cp

    original = cp.Problem.solve

    def infeasible(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        self._status = cp.INFEASIBLE
        return out

    monkeypatch.setattr(cp.Problem, "solve", infeasible)
    with pytest.raises(ModelError, match="ended with status 'infeasible'"):
        worst_case_l1([0.5, 0.5], [1.0, 0.0], 0.4, method="lp")


def test_lp_answer_is_rechecked_in_numpy(monkeypatch):
    """A solver answer that breaks a constraint (here the row sum) is caught."""
    import cvxpy as cp

    original = cp.Problem.solve

    def off(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        p = next(v for v in self.variables() if v.is_nonneg())
        p.value = p.value * (1 + 1e-6)
        return out

    monkeypatch.setattr(cp.Problem, "solve", off)
    with pytest.warns(RuntimeWarning, match=re.escape(
        "inner LP of row 0: the solver's answer violates the constraints by 1.00e-06 "
        "(> 1e-08) when re-checked in numpy; marked success=False"
    )):
        res = worst_case_l1([0.5, 0.5], [1.0, 0.0], 0.4, method="lp")
    assert not res.success and res.status == "optimal_inaccurate"
    assert res.violation == pytest.approx(1e-6, rel=1e-3)

def test_lp_with_clarabel_agrees():
    rng = np.random.default_rng(0)
    p_hat = rng.dirichlet(np.ones(8), size=4)
    z = rng.normal(size=(4, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = worst_case_l1(p_hat, z, 0.7, method="lp", solver="CLARABEL")
    s = worst_case_l1(p_hat, z, 0.7)
    np.testing.assert_allclose(c.value, s.value, atol=1e-7)


# --------------------------------------------------------------------------- input errors
@pytest.mark.parametrize(
    ("kwargs", "facts"),
    [
        (dict(alpha=-0.1), ("alpha = -0.1", "negative")),
        (dict(p_hat=[0.5, 0.6, 0.1]), ("p_hat", "sums to 1.2000000000000002")),
        (dict(p_hat=[1.2, -0.2, 0.0]), ("p_hat[1] = -0.2", "negative")),
        (dict(support=[True, False, True]), ("p_hat[1] = 0.3", "outside the support")),
        (dict(z=[1.0, 2.0]), ("z", "(2,)", "(3,)")),
        (dict(alpha=[0.1, 0.2]), ("alpha", "(2,)", "()")),
        (dict(z=[1.0, np.nan, 0.0]), ("z[1] = nan", "not finite")),
        (dict(p_hat=[[0.5, 0.5], [1.0]]), ("p_hat", "list")),
        (dict(alpha="wide"), ("alpha", "real numbers", "str")),
        (dict(method="simplex"), ("method", "'simplex'", "'sort'", "'lp'")),
    ],
)
def test_input_errors(kwargs, facts):
    args = dict(p_hat=[0.2, 0.3, 0.5], z=[1.0, 2.0, 3.0], alpha=0.5)
    args.update(kwargs)
    with raises_fact(ModelError, *facts):
        worst_case_l1(**args)


def test_batched_error_names_the_row():
    p_hat = np.array([[0.5, 0.5], [0.7, 0.2]])
    with raises_fact(ModelError, "p_hat[1, :]", "sums to 0.8999999999999999"):
        worst_case_l1(p_hat, [0.0, 1.0], 0.3)
    with raises_fact(ModelError, "alpha[1] = -1.0", "negative"):
        worst_case_l1(np.eye(2), [0.0, 1.0], [0.2, -1.0])


@given(
    n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    alpha=st.floats(0.0, 2.5),
    ties=st.booleans(),
)
def test_one_row_fast_path_equals_the_batched_and_lp_solutions(n, seed, alpha, ties):
    """A single 1-D row (the shared-z path, one sort) agrees with the batch and the LP."""
    rng = np.random.default_rng(seed)
    p_hat = rng.dirichlet(np.ones(n))
    z = rng.integers(0, 3, n).astype(float) if ties else rng.normal(size=n)
    one = worst_case_l1(p_hat, z, alpha)
    batch = worst_case_l1(np.stack([p_hat, p_hat]), np.stack([z, z]), [alpha, alpha])
    assert one.value == pytest.approx(float(batch.value[0]), abs=1e-12)
    assert l1_violation(one.p, p_hat, alpha) <= 1e-12
    assert one.value == pytest.approx(float(one.p @ z), abs=1e-12)
    lp = worst_case_l1(p_hat, z, alpha, method="lp")
    assert one.value == pytest.approx(float(lp.value), abs=1e-7)
