"""Tools for validating theory: robust policy gradients, the direct parametrisation,
evaluation from another start distribution, advantages, extreme kernels.

References: central differences of robust_evaluate (and of each member of a FiniteSet), dense
linear solves written here, the performance difference lemma, scipy's linprog over
each row's set.
"""

import itertools

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import rcmdp_exact.testing as T
from rcmdp_exact import (
    DirectPolicy,
    FiniteSet,
    InputError,
    IntervalSet,
    L1Ball,
    LInfBall,
    TabularCMDP,
    WeightedL1Ball,
    central_difference,
    evaluate,
    extreme_kernels,
    finite_difference,
    l1_ball,
    policy_gradient,
    robust_evaluate,
    robust_policy_gradient,
)
from rcmdp_exact.core.nn import softmax
from rcmdp_exact.theory.estimators import relative_error
from rcmdp_exact.theory.gradients import lagrangian
from rcmdp_exact.uncertainty import SRectL1Ball, interval_vertices, l1_vertices


# --------------------------------------------------------------------------- evaluate(p0=)
def dense_values(model, pi):
    """V (S,) and C (S, K) by a dense solve written here (terminal states earn nothing)."""
    live = ~np.asarray(model.terminal)
    P = np.einsum("sa,sat->st", pi, model.P) * live[:, None]
    r = np.einsum("sa,sa->s", pi, model.r) * live
    c = np.einsum("sa,sak->sk", pi, model.c) * live[:, None]
    sol = np.linalg.solve(np.eye(model.n_states) - model.gamma * P, np.column_stack([r, c]))
    return sol[:, 0], sol[:, 1:]


@settings(max_examples=examples(40))
@given(T.cmdps(n_states=(1, 4), gamma=(0.5, 0.9)).flatmap(
    lambda m: st.tuples(st.just(m), T.policies(m), T.multipliers(m))))
def test_evaluate_from_another_start_and_the_advantage(case):
    model, pi, lam = case
    S = model.n_states
    mu = np.random.default_rng(S).dirichlet(np.ones(S))
    res = evaluate(model, pi, lam, p0=mu)
    v, c = dense_values(model, pi)
    assert abs(res.value - mu @ v) <= 1e-10 * max(1.0, np.abs(v).max())
    np.testing.assert_allclose(res.costs, mu @ c,
                               atol=1e-10 * max(1.0, np.abs(c).max(initial=0.0)))
    np.testing.assert_allclose(res.p0, mu)
    # occupancy from mu: d^T (I - gamma P_pi) = mu^T, by a second dense solve
    P = np.einsum("sa,sat->st", pi, model.P)
    occ = np.linalg.solve((np.eye(S) - model.gamma * P).T, mu)
    np.testing.assert_allclose(res.occupancy, occ, atol=1e-10 * occ.max())
    # the values per state do not depend on the start
    np.testing.assert_allclose(res.v, evaluate(model, pi, lam).v, atol=0)
    # the advantage: A = Q - V, its policy average is 0 in every state
    np.testing.assert_allclose(res.advantage, res.q - res.v[:, None], atol=0)
    np.testing.assert_allclose((pi * res.advantage).sum(axis=1), 0.0,
                               atol=1e-10 * max(1.0, np.abs(res.q).max()))
    np.testing.assert_allclose(res.advantage_lagrangian,
                               res.q_lagrangian - res.lagrangian[:, None], atol=0)


@settings(max_examples=examples(60))
@given(T.cmdps(n_states=(1, 5), n_constraints=0).flatmap(
    lambda m: st.tuples(st.just(m), T.policies(m), T.policies(m))))
def test_the_performance_difference_lemma(case):
    """V^pi'(mu) - V^pi(mu) = sum_s d^pi'_mu(s) sum_a pi'(a|s) A^pi(s, a) (Kakade and
    Langford 2002, Lemma 6.1), with the unnormalised discounted occupancy of pi' from mu."""
    model, pi, pi2 = case
    mu = np.full(model.n_states, 1.0 / model.n_states)
    a, b = evaluate(model, pi, p0=mu), evaluate(model, pi2, p0=mu)
    rhs = b.occupancy @ (pi2 * a.advantage).sum(axis=1)
    assert abs((b.value - a.value) - rhs) <= 1e-10 * max(1.0, abs(b.value))


def test_evaluate_p0_is_checked():
    m = T.example(T.cmdps(n_states=3), seed=1)
    with raises_fact(InputError, "p0", "sum"):
        evaluate(m, np.full((3, m.n_actions), 1 / m.n_actions), p0=[0.5, 0.6, 0.0])
    with raises_fact(InputError, "start state p0", "5"):
        evaluate(m, np.full((3, m.n_actions), 1 / m.n_actions), p0=5)


# --------------------------------------------------------------------------- direct
@settings(max_examples=examples(40))
@given(T.cmdps(n_states=(1, 4), n_actions=(2, 3)).flatmap(
    lambda m: st.tuples(st.just(m), T.policies(m, deterministic=False),
                        T.multipliers(m))))
def test_the_direct_gradient_equals_finite_differences(case):
    """d L / d pi(a|s) = d_gamma(s) Q_lam(s, a), the partial derivatives of the formula
    p0^T (I - gamma P_pi)^-1 r_pi extended off the simplex (Agarwal et al. 2021)."""
    model, pi, lam = case
    g = policy_gradient(model, pi, lam, parametrisation="direct")
    fd = finite_difference(model, pi, lam, parametrisation="direct")
    assert relative_error(g, fd) <= 1e-6 or np.abs(g - fd).max() <= 1e-9
    ev = evaluate(model, pi, lam)
    expected = ev.occupancy[:, None] * ev.q_lagrangian
    expected[np.asarray(model.terminal)] = 0.0
    np.testing.assert_allclose(g, expected, atol=1e-12 * max(1.0, np.abs(expected).max()))


def test_probabilities_and_logits_are_not_confused():
    m = T.example(T.cmdps(n_states=3, n_actions=2), seed=2)
    probs = np.array([[0.25, 0.75], [1.0, 0.0], [0.5, 0.5]])
    with raises_fact(InputError, "look like probabilities", "direct", "np.log"):
        policy_gradient(m, probs)
    with raises_fact(InputError, "look like probabilities"):
        robust_policy_gradient(m, probs, l1_ball(m, 0.1))
    with raises_fact(InputError, "s=0", "not a distribution", "softmax"):
        policy_gradient(m, np.array([[0.3, -1.2], [0.0, 2.0], [1.0, 1.0]]),
                        parametrisation="direct")
    # logits that happen to be distributions: shifting a row changes nothing
    shifted = probs + np.array([[1.0], [0.0], [0.0]])
    np.testing.assert_allclose(policy_gradient(m, shifted),
                               policy_gradient(m, shifted - shifted.max(1, keepdims=True)))
    # one action: every row is trivially a distribution, and logits are allowed
    one = TabularCMDP(np.ones((1, 1, 1)), R=[[1.0]], gamma=0.5)
    assert policy_gradient(one, np.array([[1.0]])).shape == (1, 1)


def test_direct_policy_object():
    m = T.example(T.cmdps(n_states=2, n_actions=3), seed=3)
    par = DirectPolicy(m)
    pi = par.init(seed=0)
    np.testing.assert_allclose(pi.sum(axis=1), 1.0)
    assert np.array_equal(par.probs(pi), pi)
    G = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(par.vjp(pi, G), G)
    assert par.jacobian(pi).shape == (2, 3, 6)
    score = par.score(pi)
    np.testing.assert_allclose(np.einsum("rcp,rc->p", score, pi), np.ones(6))
    assert lagrangian(m, pi, parametrisation=par) == pytest.approx(evaluate(m, pi).lagrangian_p0)


# --------------------------------------------------------------------------- robust gradient
def robust_objective(model, uset, objective, lam, policy):
    """J(pi) from the robust evaluation (sa-sets) or the members (finite sets)."""
    if isinstance(uset, FiniteSet):
        evs = [dense_values(model.with_transitions(P, check=False), policy)
               for P in uset.members]
        vals = np.array([model.p0 @ v for v, _ in evs])
        costs = np.array([model.p0 @ c for _, c in evs])  # (m, K)
        if objective == "value":
            return vals.min()
        if objective == "constraint":
            return costs.sum(axis=1).max()
        lam_arr = np.broadcast_to(np.asarray(lam, dtype=float), (model.n_constraints,))
        return (vals - (costs - model.d) @ lam_arr).min()
    res = robust_evaluate(model, policy, uset, objective, lam, per_constraint=False)
    J = float(model.p0 @ res.w)
    return -J if objective == "constraint" else J + (
        float(lam @ model.d) if objective == "lagrangian" else 0.0)


def kernel_of(model, uset, objective, lam, policy):
    if isinstance(uset, FiniteSet):
        return robust_policy_gradient(model, np.log(np.maximum(policy, 1e-300)) + 1.0, uset,
                                      objective, lam).P_worst
    return robust_evaluate(model, policy, uset, objective, lam, per_constraint=False).P_worst


@settings(max_examples=examples(30))
@given(T.cmdps(n_states=(2, 4), n_actions=(2, 3), n_constraints=(1, 2), grid=None,
               terminal=False).flatmap(
    lambda m: st.tuples(st.just(m), T.balls(m, ("l1", "linf", "weighted-l1", "finite"),
                                            grid=None),
                        st.sampled_from(["value", "constraint", "lagrangian"]),
                        T.multipliers(m, grid=None), st.integers(0, 2**31 - 1))))
def test_the_robust_gradient_equals_finite_differences_where_the_worst_case_is_unique(
        case):
    """Danskin: where the worst-case kernel is unique and stays the same across the
    stencil, the gradient under it is the gradient of the robust objective (1e-6)."""
    model, uset, objective, lam, seed = case
    theta = np.random.default_rng(seed).normal(size=(model.n_states, model.n_actions))
    res = robust_policy_gradient(model, theta, uset, objective, lam)
    assume(res.unique)
    kernels = []

    def J(t):
        pol = softmax(t, axis=1)
        kernels.append(kernel_of(model, uset, objective, lam, pol))
        return robust_objective(model, uset, objective, lam, pol)

    fd = central_difference(J, theta)
    assume(all(np.abs(P - res.P_worst).max() <= 1e-9 for P in kernels))
    assert res.value == pytest.approx(J(theta), abs=1e-10 * max(1.0, abs(res.value)))
    assert relative_error(res.gradient, fd) <= 1e-6 or np.abs(res.gradient - fd).max() <= 1e-9


def test_the_gradient_is_one_supergradient_at_a_tie():
    """Two identical members of a finite set tie everywhere; a symmetric L1 case ties in
    the inner problem.  Both are flagged, and the message says supergradient."""
    m = T.example(T.cmdps(n_states=3, n_actions=2, n_constraints=1), seed=6)
    theta = np.zeros((3, 2))
    fs = FiniteSet([m.P, m.P])
    res = robust_policy_gradient(m, theta, fs)
    assert not res.unique and res.ties.tolist() == [0, 1] and "supergradient" in res.message
    # a pair whose two next states have the same value: every mass split is worst
    P = np.zeros((2, 1, 2))
    P[:, 0] = [0.5, 0.5]
    flat = TabularCMDP(P, R=np.ones((2, 1, 2)), gamma=0.5)
    res = robust_policy_gradient(flat, np.zeros((2, 1)), l1_ball(flat, 0.5))
    assert not res.unique and len(res.ties) == 2
    con = robust_policy_gradient(m, theta, fs, "constraint")
    assert "subgradient" in con.message


def test_robust_gradient_input_errors():
    m = T.example(T.cmdps(n_states=2, n_actions=2, n_constraints=1), seed=1)
    with raises_fact(InputError, "objective", "'cost'"):
        robust_policy_gradient(m, np.zeros((2, 2)), l1_ball(m, 0.1), "cost")
    with raises_fact(InputError, "s-rectangular", "SRectL1Ball"):
        robust_policy_gradient(m, np.zeros((2, 2)), SRectL1Ball(m.P, 0.5))


def test_central_difference_is_exported():
    import rcmdp_exact

    g = rcmdp_exact.central_difference(lambda x: float((x ** 3).sum()), np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [3.0, 12.0], rtol=1e-9)


# --------------------------------------------------------------------------- extreme kernels
def lp_min(z, A_ub, b_ub, A_eq, b_eq, bounds):
    res = linprog(z, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                  method="highs")
    assert res.status == 0
    return res.fun


def l1_lp(p_hat, alpha, support, w, z):
    """min z.p over the weighted L1 ball and the simplex, lifted to (p, t)."""
    on = np.flatnonzero(support)
    k = on.size
    eye = np.eye(k)
    A_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, k)), w[on][None]]])
    b_ub = np.concatenate([p_hat[on], -p_hat[on], [alpha]])
    A_eq = np.concatenate([np.ones(k), np.zeros(k)])[None]
    c = np.concatenate([z[on], np.zeros(k)])
    return lp_min(c, A_ub, b_ub, A_eq, [1.0], [(0, None)] * k + [(None, None)] * k)


def not_a_mixture(V, i):
    """V[i] is not a convex combination of the other rows (an LP feasibility test)."""
    others = np.delete(V, i, axis=0)
    if not len(others):
        return True
    A_eq = np.vstack([others.T, np.ones(len(others))])
    b_eq = np.concatenate([V[i], [1.0]])
    res = linprog(np.zeros(len(others)), A_eq=A_eq, b_eq=b_eq,
                  bounds=[(0, None)] * len(others), method="highs")
    return res.status == 2  # infeasible


@settings(max_examples=examples(80))
@given(st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
@example(6, 1904750, True, True)  # one vertex reached by two formulas, apart by ~1e-16
def test_l1_vertices_are_the_vertices(n, seed, weighted, restricted):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n)) * (rng.random(n) < 0.8)
    if p.sum() == 0:
        p[0] = 1.0
    p /= p.sum()
    sup = (p > 0) | (rng.random(n) < 0.5) if restricted else np.ones(n, dtype=bool)
    alpha = float(rng.choice([0.0, rng.uniform(0, 2.2), 2.0]))
    w = rng.uniform(0.5, 3.0, n) if weighted else np.ones(n)
    V = l1_vertices(p, alpha, sup, w if weighted else None)
    assert len(V) >= 1 and np.all(V[:, ~sup] == 0)
    np.testing.assert_allclose(V.sum(axis=1), 1.0, atol=1e-12)
    assert np.all((w * np.abs(V - p)).sum(axis=1) <= alpha + 1e-9)
    for _ in range(5):  # min of a linear function over the set, against linprog
        z = rng.integers(-2, 3, n).astype(float) if rng.random() < 0.5 else rng.normal(size=n)
        assert abs((V @ z).min() - l1_lp(p, alpha, sup, w, z)) <= 1e-9
    for i in range(len(V)):  # each is extreme
        assert not_a_mixture(V, i)


@settings(max_examples=examples(60))
@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_interval_vertices_are_the_vertices(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    lo = np.clip(p - rng.uniform(0, 0.4, n) * (rng.random(n) < 0.7), 0, 1)
    up = np.clip(p + rng.uniform(0, 0.4, n) * (rng.random(n) < 0.7), 0, 1)
    V = interval_vertices(lo, up)
    assert np.all(V >= lo - 1e-12) and np.all(V <= up + 1e-12)
    np.testing.assert_allclose(V.sum(axis=1), 1.0, atol=1e-12)
    for _ in range(5):
        z = rng.normal(size=n)
        ref = lp_min(z, None, None, np.ones((1, n)), [1.0], list(zip(lo, up, strict=True)))
        assert abs((V @ z).min() - ref) <= 1e-9
    for i in range(len(V)):
        assert not_a_mixture(V, i)


def test_vertices_by_hand():
    np.testing.assert_allclose(l1_vertices([0.5, 0.5], 0.5), [[0.25, 0.75], [0.75, 0.25]])
    np.testing.assert_allclose(l1_vertices([0.2, 0.3, 0.5], 2.0), np.eye(3)[::-1])
    np.testing.assert_allclose(l1_vertices([0.2, 0.3, 0.5], 0.0), [[0.2, 0.3, 0.5]])
    np.testing.assert_allclose(interval_vertices([0, 0, 0], [1, 1, 1]), np.eye(3)[::-1])


@settings(max_examples=examples(20))
@given(T.cmdps(n_states=(2, 3), n_actions=2, n_constraints=1, gamma=0.9).flatmap(
    lambda m: st.tuples(st.just(m), T.balls(m, ("l1", "weighted-l1", "linf", "interval"),
                                            grid=2), T.policies(m, deterministic=False))))
def test_the_robust_value_is_the_worst_over_the_extreme_kernels(case):
    """Each robust quantity is the min (max for costs) of exact dense evaluations over
    the extreme kernels, attained by one kernel in every state at once."""
    model, uset, pi = case
    kernels = extreme_kernels(uset, model, max_kernels=20_000)
    assert np.all(uset.contains(kernels[0]))
    vals = []
    for P in kernels:
        vals.append(dense_values(model.with_transitions(P, check=False), pi))
    V = np.array([v for v, _ in vals])
    C = np.array([c[:, 0] for _, c in vals])
    res = robust_evaluate(model, pi, uset)
    np.testing.assert_allclose(V.min(axis=0), res.w, atol=1e-10)
    np.testing.assert_allclose(C.max(axis=0), res.c_worst[:, 0], atol=1e-10)
    assert np.abs(V - res.w).max(axis=1).min() <= 1e-10


@settings(max_examples=examples(20))
@given(T.cmdps(n_states=(2, 3), n_actions=2, n_constraints=(1, 2), gamma=(0.5, 0.9)).flatmap(
    lambda m: st.tuples(st.just(m), T.balls(m, ("l1", "weighted-l1", "linf", "interval"),
                                            grid=2), T.policies(m, deterministic=False))))
def test_optimistic_nature_is_the_best_over_the_extreme_kernels(case):
    """Optimistic nature: the value is the max, each cost the min, of exact dense
    evaluations over the extreme kernels, each attained by the kernel returned."""
    model, uset, pi = case
    kernels = extreme_kernels(uset, model, max_kernels=20_000)
    vals = [dense_values(model.with_transitions(P, check=False), pi) for P in kernels]
    V = np.array([v for v, _ in vals])            # (N, S)
    C = np.array([c for _, c in vals])            # (N, S, K)
    res = robust_evaluate(model, pi, uset, nature="optimistic", cost_nature="optimistic")
    p0 = model.p0
    assert abs((V @ p0).max() - res.value) <= 1e-10
    np.testing.assert_allclose(V.max(axis=0), res.v, atol=1e-10)
    np.testing.assert_allclose(np.einsum("s,nsk->nk", p0, C).min(axis=0), res.costs_worst,
                               atol=1e-10)
    np.testing.assert_allclose(C.min(axis=0), res.c_worst, atol=1e-10)
    assert np.all(uset.contains(res.P_worst))
    best_v, _ = dense_values(model.with_transitions(res.P_worst, check=False), pi)
    np.testing.assert_allclose(best_v, res.v, atol=1e-10)
    for k in range(model.n_constraints):
        _, c = dense_values(model.with_transitions(res.P_worst_cost[k], check=False), pi)
        np.testing.assert_allclose(c[:, k], res.c_worst[:, k], atol=1e-10)
    # optimistic >= nominal >= pessimistic
    worst = robust_evaluate(model, pi, uset)
    assert worst.value - 1e-10 <= evaluate(model, pi).value <= res.value + 1e-10
    assert np.all(res.costs_worst <= worst.costs_worst + 1e-10)


def test_optimistic_nature_input_errors():
    model = T.example(T.cmdps(n_states=2, gamma=0.9), seed=0)
    with raises_fact(InputError, "nature", "optimistic"):
        robust_evaluate(model, np.full((2, model.n_actions), 1.0 / model.n_actions),
                        l1_ball(model, 0.1), nature="hopeful")


def test_extreme_kernels_count_and_errors():
    P = np.zeros((2, 1, 2))
    P[:, 0] = [0.5, 0.5]
    m = TabularCMDP(P, R=np.zeros((2, 1)), gamma=0.9)
    assert extreme_kernels(l1_ball(m, 0.5)).shape == (4, 2, 1, 2)
    assert extreme_kernels(LInfBall(P, 0.25)).shape == (4, 2, 1, 2)
    assert extreme_kernels(IntervalSet(P * 0, P * 0 + 1)).shape == (4, 2, 1, 2)
    assert extreme_kernels(WeightedL1Ball(P, 0.5, [1.0, 2.0])).shape == (4, 2, 1, 2)
    fs = FiniteSet([P, P[:, :, ::-1]])
    np.testing.assert_array_equal(extreme_kernels(fs), fs.members)
    big = l1_ball(T.example(T.cmdps(n_states=4, n_actions=3), seed=0), 1.0)
    with raises_fact(InputError, "extreme kernels", "max_kernels = 10", "(s="):
        extreme_kernels(big, max_kernels=10)
    with raises_fact(InputError, "KLBall", "curved"):
        from rcmdp_exact import KLBall

        extreme_kernels(KLBall(P, 0.1))
    # terminal rows are the model's self-loop when the model is given
    Pt = np.zeros((2, 1, 2))
    Pt[0, 0] = [0.5, 0.5]
    Pt[1, 0, 1] = 1.0
    mt = TabularCMDP(Pt, R=np.zeros((2, 1)), gamma=0.9, terminal=[1])
    uset = L1Ball(Pt, 0.5)
    assert len(extreme_kernels(uset)) > len(extreme_kernels(uset, mt)) == 2


def test_brute_force_by_hand_over_the_combinations():
    """The kernels are every combination of the rows' vertices (itertools.product)."""
    m = T.example(T.cmdps(n_states=2, n_actions=2), seed=9)
    uset = l1_ball(m, 0.5)
    from rcmdp_exact.uncertainty import extreme_rows

    rows = extreme_rows(uset)
    flat = [rows[s][a] for s in range(2) for a in range(2)]
    combos = list(itertools.product(*[range(len(v)) for v in flat]))
    K = extreme_kernels(uset)
    assert len(K) == len(combos)
    for i, c in enumerate(combos):
        np.testing.assert_array_equal(K[i].reshape(4, 2), np.stack([flat[j][c[j]]
                                                                    for j in range(4)]))
