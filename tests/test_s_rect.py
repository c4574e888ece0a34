"""The s-rectangular L1 set: exact worst case and Bellman update vs LPs and brute force."""

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact
from rcmdp_exact import InputError, OptionError
from rcmdp_exact._io import LoadError
from rcmdp_exact.domains import garnet
from rcmdp_exact.testing import random_box, random_kernel, random_policies, random_values
from rcmdp_exact.uncertainty import (
    L1Ball,
    SRectL1Ball,
    UncertaintySet,
    check_set,
    load_set,
    worst_case_l1,
)

FEAS_TOL = 1e-9


# --------------------------------------------------------------------------- helpers
def random_nominal(rng, S, A, restricted, degenerate):
    """A nominal kernel (S, A, S) and its support (None when full): Dirichlet(0.6) rows
    with zeros, or a support of 30% to 90% of the next states; one-hot if degenerate."""
    P, sup = random_kernel(rng, S, A, density=(0.3, 0.9) if restricted else None,
                           one_hot=degenerate)
    return P, sup if restricted else None


def random_radius(rng, S, A, kind):
    if kind == "zero":
        return np.zeros(S)
    if kind == "huge":  # covers every kernel on the support
        return np.full(S, 2.0 * A + 1.0)
    r = rng.uniform(0.0, 2.0 * A, S)
    r[rng.random(S) < 0.2] = 0.0
    return r


@st.composite
def s_sets(draw, S=(1, 4), A=(1, 4)):
    """An SRectL1Ball, values z, and a policy kind, with ties, supports and radii."""
    S = draw(st.integers(*S))
    A = draw(st.integers(*A))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    P, sup = random_nominal(rng, S, A, draw(st.booleans()), draw(st.booleans()))
    radius = random_radius(rng, S, A, draw(st.sampled_from(["random", "random", "zero",
                                                            "huge"])))
    z = random_values(rng, (S, A, S), draw(st.sampled_from(["ties", "normal", "constant"])),
                      scale=3.0)
    kind = draw(st.sampled_from(["stochastic", "deterministic", "sparse"]))
    return SRectL1Ball(P, radius, sup), z, rng, kind


def scale(z):
    return 1.0 + np.abs(z).max()


def policy_value(P, z, pi):
    """sum_a pi(a|s) P(s, a, .) . z(s, a, .) for kernels P (..., S, A, S)."""
    return np.einsum("...san,...san,...sa->...s", P, np.broadcast_to(z, P.shape), pi)


def sa_policy_value(uset, z, pi, alpha):
    """The worst case of pi over the sa-rectangular product of L1 balls of radii alpha."""
    res = worst_case_l1(uset.nominal, z, alpha, uset.support)
    return np.einsum("sa,sa->s", pi, res.value), res.p


def cvxpy_saddle(nom, z, sup, r, lo, hi, **solve):
    """The min-max form of one state's Bellman update, solved by cvxpy.

    min over kernels p of the state's set of max_{lo <= d <= hi, sum d = 1} sum_a d_a
    p_a.z_a, the inner max replaced by its LP dual min u + hi.w - lo.v subject to
    p_a.z_a <= u + w_a - v_a (w, v >= 0).  Independent of the package's max-min LP
    (which dualises the adversary instead).  ``solve``: cvxpy's solve options (default
    HiGHS).
    """
    import cvxpy as cp

    A, n = nom.shape
    p = cp.Variable((A, n), nonneg=True)
    t = cp.Variable((A, n))
    u = cp.Variable()
    w = cp.Variable(A, nonneg=True)
    v = cp.Variable(A, nonneg=True)
    c = cp.sum(cp.multiply(p, z), axis=1)
    cons = [t >= p - nom, t >= nom - p, cp.sum(t) <= r, cp.sum(p, axis=1) == 1,
            c <= u + w - v]
    if sup is not None:
        cons.append(cp.multiply((~sup).astype(float), p) == 0)
    prob = cp.Problem(cp.Minimize(u + hi @ w - lo @ v), cons)
    prob.solve(**(solve or {"solver": "HIGHS"}))
    assert prob.status == cp.OPTIMAL
    return prob.value


# --------------------------------------------------------------------------- worst case
@settings(max_examples=examples(60))
@given(s_sets(S=(3, 5)), st.integers(6, 7))
def test_worst_case_matches_lp_on_many_states(case, J):
    """>= 18 (policy, state) instances per example, >= 1,080 in the default run."""
    uset, z, rng, kind = case
    S, A = uset.n_states, uset.n_actions
    pi = random_policies(rng, S, A, kind, n=J)
    exact = uset.worst_case(z, pi)
    lp = uset.worst_case(z, pi, method="lp")
    assert exact.p.shape == (J, S, A, S) and exact.value.shape == (J, S)
    assert lp.success
    np.testing.assert_allclose(exact.value, lp.value, rtol=0, atol=1e-9 * scale(z))
    for j in range(J):
        assert uset.contains(exact.p[j], FEAS_TOL).all()
        assert uset.contains(lp.p[j], FEAS_TOL).all()
    # the reported value is attained by the reported kernel
    np.testing.assert_allclose(policy_value(exact.p, z, pi), exact.value, rtol=0,
                               atol=1e-12 * scale(z))


@settings(max_examples=examples(40))
@given(s_sets())
def test_worst_case_special_radii_and_policies(case):
    uset, z, rng, kind = case
    S, A = uset.n_states, uset.n_actions
    pi = random_policies(rng, S, A, kind)
    res = uset.worst_case(z, pi)
    # radius 0: the nominal kernel
    zero = uset.with_radius(0.0).worst_case(z, pi)
    np.testing.assert_array_equal(zero.p, uset.nominal)
    np.testing.assert_allclose(zero.value, policy_value(uset.nominal, z, pi), atol=1e-12)
    # a radius that covers everything: every used action at its smallest z on the support
    full = uset.with_radius(2.0 * A + 1.0).worst_case(z, pi)
    zmin = np.where(uset.support, z, np.inf).min(axis=2)
    np.testing.assert_allclose(full.value, (pi * zmin).sum(axis=1), atol=1e-12 * scale(z))
    # monotone in the radius, between the two
    assert (full.value <= res.value + 1e-12 * scale(z)).all()
    assert (res.value <= zero.value + 1e-12 * scale(z)).all()
    # actions the policy never takes keep their nominal rows
    unused = pi == 0
    np.testing.assert_array_equal(res.p[unused], uset.nominal[unused])


@settings(max_examples=examples(40))
@given(s_sets(A=(1, 4)))
def test_deterministic_policy_spends_the_whole_budget_on_its_action(case):
    """pi = e_a: the set's worst case is the sa ball of radius kappa(s) on action a."""
    uset, z, rng, _ = case
    S, A = uset.n_states, uset.n_actions
    acts = rng.integers(0, A, S)
    res = uset.worst_case(z, np.eye(A)[acts])
    rows = np.arange(S)
    ref = worst_case_l1(uset.nominal[rows, acts], z[rows, acts], uset.radius,
                        uset.support[rows, acts])
    np.testing.assert_allclose(res.value, ref.value, rtol=0, atol=1e-12 * scale(z))


@settings(max_examples=examples(40))
@given(s_sets(A=(2, 2)))
def test_budget_split_against_brute_force_for_two_actions(case):
    """A = 2: the best split xi_0 + xi_1 = kappa of the sa responses, found on a grid of
    2,001 splits refined by a ternary search (the split's value is convex)."""
    uset, z, rng, kind = case
    S = uset.n_states
    pi = random_policies(rng, S, 2, kind)
    res = uset.worst_case(z, pi)
    for s in range(S):
        nom, zz, sup, r = uset.nominal[s], z[s], uset.support[s], uset.radius[s]

        def split(x, nom=nom, zz=zz, sup=sup, r=r, s=s):
            x = np.atleast_1d(x)
            q0 = worst_case_l1(np.broadcast_to(nom[0], (x.size, nom.shape[1])), zz[0], x,
                               sup[0]).value
            q1 = worst_case_l1(np.broadcast_to(nom[1], (x.size, nom.shape[1])), zz[1],
                               r - x, sup[1]).value
            return pi[s, 0] * q0 + pi[s, 1] * q1

        grid = np.linspace(0.0, r, 2001)
        vals = split(grid)
        k = int(np.argmin(vals))
        a, b = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
        for _ in range(100):
            m1, m2 = a + (b - a) / 3, b - (b - a) / 3
            f1, f2 = split(np.array([m1, m2]))
            a, b = (a, m2) if f1 <= f2 else (m1, b)
        best = min(vals.min(), float(split(0.5 * (a + b))[0]))
        assert res.value[s] <= vals.min() + 1e-12 * scale(z)  # no split beats the greedy
        assert res.value[s] == pytest.approx(best, abs=1e-9 * scale(z))


@settings(max_examples=examples(40))
@given(s_sets(A=(1, 1)))
def test_one_action_is_the_sa_ball(case):
    uset, z, _, _ = case
    S = uset.n_states
    sa = L1Ball(uset.nominal, uset.radius[:, None], uset.support).worst_case(z)
    res = uset.worst_case(z, np.ones((S, 1)))
    np.testing.assert_allclose(res.value, sa.value[:, 0], rtol=0, atol=1e-12 * scale(z))
    assert uset.contains(res.p, FEAS_TOL).all()  # (the minimiser need not be unique)
    best = uset.bellman_max_min(z)
    np.testing.assert_allclose(best.value, sa.value[:, 0], rtol=0, atol=1e-12 * scale(z))
    np.testing.assert_array_equal(best.policy, 1.0)


def test_worst_case_without_a_policy_is_refused():
    uset = SRectL1Ball(np.full((2, 2, 2), 0.5), 0.3)
    with raises_fact(InputError, "depends on the policy", "policy="):
        uset.worst_case(np.zeros(2))


def test_batches_and_shared_z_equal_one_call_each():
    rng = np.random.default_rng(5)
    S, A, J = 4, 3, 3
    uset = SRectL1Ball(rng.dirichlet(np.ones(S), size=(S, A)), rng.uniform(0, 2, S))
    z = rng.normal(size=(J, S, A, S))
    pi = rng.dirichlet(np.ones(A), size=(J, S))
    batch = uset.worst_case(z, pi)
    for j in range(J):
        one = uset.worst_case(z[j], pi[j])
        np.testing.assert_allclose(batch.value[j], one.value, atol=1e-14)
        np.testing.assert_allclose(batch.p[j], one.p, atol=1e-15)
    # one policy for a batch of z, one z for a batch of policies
    np.testing.assert_allclose(uset.worst_case(z, pi[0]).value[1],
                               uset.worst_case(z[1], pi[0]).value, atol=1e-14)
    np.testing.assert_allclose(uset.worst_case(z[0], pi).value[2],
                               uset.worst_case(z[0], pi[2]).value, atol=1e-14)
    # shared vectors (S,) and (J, S)
    v = rng.normal(size=(J, S))
    np.testing.assert_allclose(
        uset.worst_case(v, pi).value,
        uset.worst_case(np.broadcast_to(v[:, None, None, :], (J, S, A, S)), pi).value,
        atol=1e-14)
    np.testing.assert_allclose(
        uset.worst_case(v[0], pi[0]).value,
        uset.worst_case(np.broadcast_to(v[0], (S, A, S)), pi[0]).value, atol=1e-14)
    bb = uset.bellman_max_min(z)
    for j in range(J):
        np.testing.assert_allclose(bb.value[j], uset.bellman_max_min(z[j]).value, atol=1e-14)


# --------------------------------------------------------------------------- Bellman
def check_bellman(uset, z, res, lo=None, hi=None):
    """The returned policy is in the box, attains the value, and the value is certified."""
    S, A = uset.n_states, uset.n_actions
    lo = np.zeros((S, A)) if lo is None else lo
    hi = np.ones((S, A)) if hi is None else hi
    sc = scale(z)
    assert res.success
    np.testing.assert_allclose(res.policy.sum(axis=-1), 1.0, atol=1e-12)
    assert (res.policy >= lo - 1e-12).all() and (res.policy <= hi + 1e-12).all()
    again = uset.worst_case(z, res.policy)
    np.testing.assert_allclose(again.value, res.value, rtol=0, atol=1e-9 * sc)
    # p is the adversary's answer to the policy: inside the set, attaining the value
    assert uset.contains(res.p, FEAS_TOL).all()
    np.testing.assert_allclose(policy_value(res.p, z, res.policy), res.value, rtol=0,
                               atol=1e-9 * sc)
    assert (res.gap >= -1e-12 * sc).all() and (res.gap <= 1e-9 * sc).all()


@settings(max_examples=examples(60))
@given(s_sets(), st.booleans())
def test_bellman_agrees_with_the_lp_and_the_cvxpy_saddle_point(case, boxed):
    uset, z, rng, _ = case
    S, A = uset.n_states, uset.n_actions
    lo, hi = random_box(rng, S, A) if boxed else (None, None)
    fast = uset.bellman_max_min(z, lo, hi)
    trivial = not boxed or ((lo <= 0).all() and (hi >= 1).all())
    assert fast.method == ("level" if trivial else "dual")
    lp = uset.bellman_max_min(z, lo, hi, method="lp")
    check_bellman(uset, z, fast, lo, hi)
    check_bellman(uset, z, lp, lo, hi)
    lo_c = np.zeros((S, A)) if lo is None else lo
    hi_c = np.ones((S, A)) if hi is None else hi
    ref = [cvxpy_saddle(uset.nominal[s], z[s], None if uset.full_support else uset.support[s],
                        uset.radius[s], lo_c[s], hi_c[s]) for s in range(S)]
    np.testing.assert_allclose(fast.value, ref, rtol=0, atol=1e-9 * scale(z))
    np.testing.assert_allclose(lp.lp_value, ref, rtol=0, atol=1e-9 * scale(z))


@settings(max_examples=examples(60))
@given(s_sets(A=(1, 5)))
def test_level_and_dual_searches_agree_on_the_simplex(case):
    """Two independent algorithms for the same update: Newton on the level, and the
    chord search on the budget multiplier."""
    uset, z, _, _ = case
    level = uset.bellman_max_min(z, method="level")
    dual = uset.bellman_max_min(z, method="dual")
    np.testing.assert_allclose(level.value, dual.value, rtol=0, atol=1e-10 * scale(z))
    check_bellman(uset, z, level)
    check_bellman(uset, z, dual)


@settings(max_examples=examples(40))
@given(s_sets(A=(2, 2)), st.booleans())
def test_bellman_against_brute_force_for_two_actions(case, boxed):
    """A = 2: a grid of 2,001 policies (t, 1 - t) with the exact inner worst case, then
    a ternary search around the best (the policy's worst case is concave in t)."""
    uset, z, rng, _ = case
    S = uset.n_states
    lo, hi = random_box(rng, S, 2) if boxed else (np.zeros((S, 2)), np.ones((S, 2)))
    res = uset.bellman_max_min(z, lo, hi) if boxed else uset.bellman_max_min(z)
    t_lo = np.maximum(lo[:, 0], 1.0 - hi[:, 1])
    t_hi = np.minimum(hi[:, 0], 1.0 - lo[:, 1])

    def psi(t):  # t (J, S) -> worst-case values (J, S)
        return uset.worst_case(z, np.stack([t, 1.0 - t], axis=-1)).value

    grid = t_lo + np.linspace(0.0, 1.0, 2001)[:, None] * (t_hi - t_lo)
    vals = psi(grid)
    assert (vals.max(axis=0) <= res.value + 1e-9 * scale(z)).all()
    k = vals.argmax(axis=0)
    a = grid[np.maximum(k - 1, 0), np.arange(S)]
    b = grid[np.minimum(k + 1, 2000), np.arange(S)]
    for _ in range(100):
        m1, m2 = a + (b - a) / 3, b - (b - a) / 3
        f1, f2 = psi(np.stack([m1, m2]))
        left = f1 >= f2
        a, b = np.where(left, a, m1), np.where(left, m2, b)
    best = np.maximum(vals.max(axis=0), psi(0.5 * (a + b)[None])[0])
    np.testing.assert_allclose(res.value, best, rtol=0, atol=1e-9 * scale(z))


def two_action_example(radius=1.5):
    """One state (and an absorbing one): action 0 earns 1, action 1 earns 2, both only
    when the next state is 0, which the nominal model makes certain.  Moving mass m to
    state 1 costs 2m of budget and lowers action 0 by m and action 1 by 2m: by hand,
    q_0(xi) = 1 - xi/2 and q_1(xi) = 2 - xi (xi <= 2)."""
    nominal = np.zeros((2, 2, 2))
    nominal[:, :, 0] = 1.0
    z = np.zeros((2, 2, 2))
    z[:, 0, 0] = 1.0
    z[:, 1, 0] = 2.0
    return SRectL1Ball(nominal, radius), z


def test_the_optimal_policy_can_be_strictly_randomised():
    """By hand, budget 1.5: a deterministic policy loses the whole budget on its action,
    1 - 0.75 = 0.25 for action 0 and 2 - 1.5 = 0.5 for action 1.  Against (d, 1 - d) the
    adversary's spending is worth d/2 or (1 - d) per unit, so d = 2/3 makes it
    indifferent: 2/3 + 2/3 - 1.5/3 = 5/6 > 1/2."""
    uset, z = two_action_example()
    res = uset.bellman_max_min(z)
    np.testing.assert_allclose(res.policy[0], [2 / 3, 1 / 3], atol=1e-12)
    assert res.value[0] == pytest.approx(5 / 6, abs=1e-12)
    det = [uset.worst_case(z, np.eye(2)[[a, a]]).value[0] for a in range(2)]
    np.testing.assert_allclose(det, [0.25, 0.5], atol=1e-12)
    assert max(det) < res.value[0] - 0.3  # every deterministic policy is strictly worse
    for method in ("dual", "lp"):
        other = uset.bellman_max_min(z, method=method)
        np.testing.assert_allclose(other.policy[0], [2 / 3, 1 / 3], atol=1e-8)
    # a box that excludes 2/3 forces the best point of the box: d = 0.5 gives
    # 0.5 + 1 - 0.5 * ... = min over splits: 1.5 - 1.5 * max(0.25, 0.5) = 0.75
    boxed = uset.bellman_max_min(z, hi=[[0.5, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(boxed.policy[0], [0.5, 0.5], atol=1e-9)
    assert boxed.value[0] == pytest.approx(0.75, abs=1e-12)


def test_radius_zero_and_free_budget_cases():
    uset, z = two_action_example(0.0)
    res = uset.bellman_max_min(z)  # the nominal best action, deterministic
    np.testing.assert_allclose(res.policy[0], [0.0, 1.0])
    assert res.value[0] == pytest.approx(2.0)
    # budget 10 >= what it takes to push both actions to their minimum 0: value 0
    res = uset.with_radius(10.0).bellman_max_min(z)
    np.testing.assert_allclose(res.value, 0.0, atol=1e-15)
    assert res.success


@settings(max_examples=examples(40))
@given(s_sets(A=(1, 4)))
def test_rectangularities_nest(case):
    """The sa product with radii kappa/A lies inside the s set, which lies inside the sa
    product with radii kappa: for every policy, sa(kappa) <= s(kappa) <= sa(kappa/A), and
    the same order for the Bellman optimality update."""
    uset, z, rng, kind = case
    S, A = uset.n_states, uset.n_actions
    pi = random_policies(rng, S, A, kind)
    small = np.broadcast_to(uset.radius[:, None] / A, (S, A))
    big = np.broadcast_to(uset.radius[:, None], (S, A))
    v_small, p_small = sa_policy_value(uset, z, pi, small)
    v_big, _ = sa_policy_value(uset, z, pi, big)
    v = uset.worst_case(z, pi).value
    tol = 1e-12 * scale(z)
    assert (v_big <= v + tol).all() and (v <= v_small + tol).all()
    assert uset.contains(p_small, FEAS_TOL).all()  # the inclusion itself
    q_small = worst_case_l1(uset.nominal, z, small, uset.support).value.max(axis=1)
    q_big = worst_case_l1(uset.nominal, z, big, uset.support).value.max(axis=1)
    best = uset.bellman_max_min(z).value
    assert (q_big <= best + tol).all() and (best <= q_small + tol).all()


def test_bellman_on_a_garnet_model_with_a_batch_and_terminal_states():
    model = garnet(12, 4, 3, seed=2, gamma=0.9)
    terminal = np.zeros(12, dtype=bool)
    terminal[[3, 7]] = True
    uset = SRectL1Ball(model.P, 0.4).absorb_terminal(terminal)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(3, 12, 4, 12))
    res = uset.bellman_max_min(z)
    for j in range(3):
        check_bellman(uset, z[j], _as_result(res, j))
    # terminal states: the nominal self-loop, nothing for the adversary to move
    np.testing.assert_allclose(res.p[:, terminal], uset.nominal[terminal][None].repeat(3, 0))


def _as_result(res, j):
    out = rcmdp_exact.Result(res)
    for k in ("value", "policy", "p", "gap"):
        out[k] = res[k][j]
    return out


# --------------------------------------------------------------------------- geometry
def test_distance_contains_and_pull_inside():
    rng = np.random.default_rng(1)
    S, A = 4, 3
    P = rng.dirichlet(np.ones(S), size=(S, A))
    uset = SRectL1Ball(P, [0.0, 0.3, 1.0, 2.0])
    Q = rng.dirichlet(np.ones(S), size=(S, A))
    dist = np.abs(Q - P).sum(axis=(1, 2))
    np.testing.assert_allclose(uset.distance(Q), dist)
    np.testing.assert_array_equal(uset.contains(Q), dist <= uset.radius + 1e-9)
    assert uset.contains(P).all()
    pulled = uset.pull_inside(Q)
    assert uset.contains(pulled).all()
    outside = dist > uset.radius
    np.testing.assert_allclose(uset.distance(pulled)[outside], uset.radius[outside])
    np.testing.assert_array_equal(pulled[~outside], Q[~outside])
    # on the segment to the nominal
    for s in np.flatnonzero(outside):
        lam = uset.radius[s] / dist[s]
        np.testing.assert_allclose(pulled[s], P[s] + lam * (Q[s] - P[s]))
    kept = uset.pull_inside(Q, keep=np.array([True, False, False, False]))
    np.testing.assert_array_equal(kept[0], Q[0])
    # a kernel off the support, or not a distribution, is not contained
    bad = np.array(P)
    bad[1, 0, 0] -= 0.01
    assert not uset.contains(bad)[1]


def test_absorb_terminal_and_with_radius():
    rng = np.random.default_rng(2)
    P = rng.dirichlet(np.ones(3), size=(3, 2))
    uset = SRectL1Ball(P, 0.5)
    term = uset.absorb_terminal([False, True, False])
    np.testing.assert_array_equal(term.nominal[1], [[0, 1, 0], [0, 1, 0]])
    np.testing.assert_array_equal(term.radius, [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(term.support[1], [[False, True, False]] * 2)
    assert uset.absorb_terminal([False] * 3) is uset
    assert uset.with_radius([1, 2, 3]).radius.tolist() == [1, 2, 3]
    with pytest.raises(AttributeError, match="immutable"):
        uset.radius = 1.0
    assert not uset.nominal.flags.writeable
    assert repr(uset) == "<SRectL1Ball S=3, A=2, radius in [0.5, 0.5]>"
    assert uset.rectangularity == "s" and uset.n_states == 3 and uset.n_actions == 2


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    P, sup = random_nominal(rng, 4, 3, True, False)
    uset = SRectL1Ball(P, rng.uniform(0, 1, 4), sup)
    path = uset.save(tmp_path / "set")
    for loaded in (SRectL1Ball.load(path), UncertaintySet.load(path), load_set(path)):
        assert isinstance(loaded, SRectL1Ball)
        np.testing.assert_array_equal(loaded.nominal, uset.nominal)
        np.testing.assert_array_equal(loaded.radius, uset.radius)
        np.testing.assert_array_equal(loaded.support, uset.support)
    with pytest.raises(LoadError):
        L1Ball.load(path)


def test_the_set_follows_the_protocol():
    assert rcmdp_exact.SRectL1Ball is SRectL1Ball
    assert "SRectL1Ball" in rcmdp_exact.__all__
    model = garnet(3, 2, 2, seed=0)
    uset = SRectL1Ball(model.P, 0.2)
    check_set(uset, model)
    with raises_fact(InputError, "sa-rectangular", "SRectL1Ball"):
        check_set(uset, model, rectangularity="sa", what="this test")


# --------------------------------------------------------------------------- errors
def test_input_errors_name_the_culprit():
    P = np.full((2, 2, 2), 0.5)
    with raises_fact(InputError, "radius[1]", "negative"):
        SRectL1Ball(P, [0.1, -0.2])
    with raises_fact(InputError, "radius", "(2,)"):
        SRectL1Ball(P, np.ones((2, 2)))
    with raises_fact(InputError, "radius", "nan"):
        SRectL1Ball(P, float("nan"))
    with raises_fact(InputError, "nominal", "shape"):
        SRectL1Ball(np.full((2, 2, 3), 1 / 3), 0.1)
    bad = np.array(P)
    bad[1, 0] = [0.7, 0.7]
    with raises_fact(InputError, "nominal[1, 0, :]", "sums to"):
        SRectL1Ball(bad, 0.1)
    sup = np.ones((2, 2, 2), dtype=bool)
    sup[0, 1, 1] = False
    with raises_fact(InputError, "nominal[0, 1, 1]", "outside the support"):
        SRectL1Ball(P, 0.1, sup)
    uset = SRectL1Ball(P, 0.1)
    z = np.zeros((2, 2, 2))
    with raises_fact(InputError, "policy[1, :]", "sums to"):
        uset.worst_case(z, [[0.5, 0.5], [0.9, 0.3]])
    with raises_fact(InputError, "policy", "(s, a) = (2, 2)"):
        uset.worst_case(z, np.ones(3))
    with raises_fact(InputError, "batch of 2", "batch of 3"):
        uset.worst_case(np.zeros((2, 2, 2, 2)), np.full((3, 2, 2), 0.5))
    with raises_fact(InputError, "z", "(2, 2, 2)"):
        uset.worst_case(np.zeros((3, 3)), np.full((2, 2), 0.5))
    with raises_fact(OptionError, "'sort'", "'lp'"):
        uset.worst_case(z, np.full((2, 2), 0.5), method="simplex")
    with raises_fact(OptionError, "'level'", "'dual'"):
        uset.bellman_max_min(z, method="greedy")
    with raises_fact(InputError, "(s=0, a=0)", "lo = 0.6", "hi = 0.2"):
        uset.bellman_max_min(z, lo=[[0.6, 0.0], [0.0, 0.0]], hi=[[0.2, 1.0], [1.0, 1.0]])
    with raises_fact(InputError, "(s=1)", "sum(lo) = 1.2"):
        uset.bellman_max_min(z, lo=[[0.0, 0.0], [0.6, 0.6]])
    with raises_fact(InputError, "sum(hi) = 0.5"):
        uset.bellman_max_min(z, hi=0.25)
    with raises_fact(InputError, "method='level'", "'dual'"):
        uset.bellman_max_min(z, lo=0.1, method="level")
    # a box that is the whole simplex is solved by the level search
    assert uset.bellman_max_min(z, lo=0.0, hi=1.0).method == "level"


@settings(max_examples=examples(60))
@given(s_sets(A=(1, 10)), st.booleans())
def test_the_compiled_chord_search_is_its_numpy_oracle(case, boxed):
    """The box update's chord search is compiled (``s_l1_numba.dual_rows``); its numpy
    oracle (``s_l1._dual_numpy``) runs the same steps over arrays, every sum in the same
    order.  Through the public update, on drawn sets and values, in a box or on the whole
    simplex: the same bits (policies, values, gaps, upper bounds) with fewer than 8
    actions, the same to rounding with more (numpy sums 8 or more terms in pairs), every
    search ended alike, and both answers pass the checks of an optimal update."""
    from unittest import mock

    from rcmdp_exact.uncertainty import s_l1

    uset, z, rng, _ = case
    S, A = uset.n_states, uset.n_actions
    lo, hi = random_box(rng, S, A) if boxed else (np.zeros((S, A)), np.ones((S, A)))
    seen = {}

    def spy(fn, name):
        def run(*args):
            out = fn(*args)
            seen[name] = out
            return out
        return run

    with mock.patch.object(s_l1, "_dual", spy(s_l1._dual, "compiled")):
        fast = uset.bellman_max_min(z, lo, hi, method="dual")
    with mock.patch.object(s_l1, "_dual", spy(s_l1._dual_numpy, "numpy")):
        ref = uset.bellman_max_min(z, lo, hi, method="dual")
    tol = 1e-12 * scale(z)
    np.testing.assert_allclose(fast.value, ref.value, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.gap, ref.gap, rtol=0, atol=tol)
    (d_c, up_c, ended_c), (d_n, up_n, ended_n) = seen["compiled"], seen["numpy"]
    np.testing.assert_allclose(up_c, up_n, rtol=0, atol=tol)
    assert ended_c == ended_n
    if A < 8:
        for mine, oracle in ((d_c, d_n), (up_c, up_n), (fast.policy, ref.policy),
                             (fast.value, ref.value), (fast.gap, ref.gap)):
            np.testing.assert_array_equal(mine, oracle)
    check_bellman(uset, z, fast, lo, hi)


def test_a_chord_search_cut_short_says_so_in_both_forms():
    """With one step allowed, a search that needs more ends unfinished: the compiled
    search and its numpy oracle both say so, with the same (valid, looser) upper bounds,
    and the public update then reports no success."""
    from unittest import mock

    from rcmdp_exact.uncertainty import s_l1

    rng = np.random.default_rng(3)
    S, A = 6, 4
    P, sup = random_kernel(rng, S, A)
    uset = SRectL1Ball(P, 0.7, sup)
    z = rng.normal(size=(S, A, S))
    lo, hi = np.full((S, A), 0.05), np.full((S, A), 0.6)
    seen = {}
    for name, fn in (("compiled", s_l1._dual), ("numpy", s_l1._dual_numpy)):
        def run(*args, fn=fn, name=name):
            seen[name] = fn(*args)
            return seen[name]
        with mock.patch.object(s_l1, "_MAX_STEPS", 1), mock.patch.object(s_l1, "_dual", run):
            short = uset.bellman_max_min(z, lo, hi, method="dual")
        assert not seen[name][2], name
        assert not short.success
    np.testing.assert_array_equal(seen["compiled"][1], seen["numpy"][1])
    full = uset.bellman_max_min(z, lo, hi, method="dual")
    assert full.success
    assert (seen["compiled"][1] >= full.value + full.gap - 1e-12 * scale(z)).all()
