"""Robust evaluation and robust value iteration under sa-rectangular L1 sets."""

import itertools
import re

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact.testing as T
from rcmdp_exact.core.evaluation import evaluate
from rcmdp_exact.core.model_checks import ModelError
from rcmdp_exact.domains import garnet, grid_state, safe_navigation_1, safe_navigation_2
from rcmdp_exact.robust import (
    robust_bellman,
    robust_evaluate,
    robust_value_iteration,
    worst_case_kernel,
    worst_case_objective,
)
from rcmdp_exact.uncertainty import L1Ball, estimate, extreme_kernels, l1_ball

OBJECTIVES = ["value", "constraint", "lagrangian"]


# --------------------------------------------------------------------------- strategies
def robust_cases(max_states=6):
    """A Garnet RCMDP (S in 2..max_states, A in 1..3, K in 1..2, gamma in {0.5, 0.9,
    0.95}), an L1 ball of continuous radii in [0, 2.5) (about a fifth of the pairs
    certain; support every state or the nominal's), a Dirichlet(1) policy and
    multipliers in [0, 3): the public strategies of rcmdp_exact.testing."""
    return T.garnets(n_states=(2, max_states), n_actions=(1, 3), n_constraints=(1, 2),
                     gamma=(0.5, 0.9, 0.95)).flatmap(lambda m: st.tuples(
                         st.just(m), T.balls(m, "l1", max_radius=2.5, grid=None),
                         T.policies(m, deterministic=False, grid=None),
                         T.multipliers(m, max_value=3.0, grid=None)))


def objective_of(res, obj, lam):
    """The robustified quantity W of an evaluation result."""
    if obj == "value":
        return res.v
    if obj == "constraint":
        return -res.c.sum(axis=1)
    return res.v - res.c @ lam


# --------------------------------------------------------------------------- alpha = 0
@settings(max_examples=examples(40))
@given(robust_cases())
def test_alpha_zero_equals_nominal_evaluation(case):
    model, uset, policy, lam = case
    ball0 = uset.with_alpha(0.0)
    nominal = evaluate(model, policy, lam)
    for obj in OBJECTIVES:
        res = robust_evaluate(model, policy, ball0, obj, lam)
        assert res.converged
        np.testing.assert_array_equal(res.P_worst, model.P)
        np.testing.assert_allclose(res.v, nominal.v, atol=1e-10)
        np.testing.assert_allclose(res.c, nominal.c, atol=1e-10)
        np.testing.assert_allclose(res.lagrangian, nominal.lagrangian, atol=1e-10)
        np.testing.assert_allclose(res.c_worst, nominal.c, atol=1e-10)


# --------------------------------------------------------------------------- ordering
@settings(max_examples=examples(40))
@given(robust_cases())
def test_robust_is_at_most_nominal_and_monotone_in_alpha(case):
    model, uset, policy, lam = case
    nominal = evaluate(model, policy, lam)
    tol = 1e-9
    v = robust_evaluate(model, policy, uset, "value", lam)
    assert (v.v <= nominal.v + tol).all()
    c = robust_evaluate(model, policy, uset, "constraint", lam)
    assert (c.c.sum(axis=1) >= nominal.c.sum(axis=1) - tol).all()
    assert (c.c_worst >= nominal.c - tol).all()
    lg = robust_evaluate(model, policy, uset, "lagrangian", lam)
    assert (lg.lagrangian <= nominal.lagrangian + tol).all()
    # each robust quantity is the worst over the kernels found for the other objectives
    for other in (v, c, lg):
        assert (v.v <= other.v + tol).all()
        assert (lg.lagrangian <= other.lagrangian + tol).all()
        assert (c.c_worst >= other.c - tol).all()
    wider = robust_evaluate(model, policy, uset.with_alpha(uset.alpha + 0.3), "value", lam)
    assert (wider.v <= v.v + tol).all()


# --------------------------------------------------------------------------- fixed point
@settings(max_examples=examples(40))
@given(robust_cases(), st.sampled_from(OBJECTIVES),
       st.sampled_from(["policy_iteration", "value_iteration"]))
def test_fixed_point_satisfies_the_robust_bellman_equation(case, obj, method):
    model, uset, policy, lam = case
    res = robust_evaluate(model, policy, uset, obj, lam, method=method)
    assert res.converged and res.status == "converged"
    tw = robust_bellman(model, uset, res.w, policy, objective=obj, lam=lam)
    residual = np.abs(tw.w - res.w).max()
    assert residual <= 1e-10
    # the fixed point is the exact evaluation of the policy under P+, up to the bound of
    # a gamma-contraction, |w - w*| <= |Tw - w| / (1 - gamma), and rounding of the solve
    bound = residual / (1.0 - model.gamma) + 1e-13 * max(1.0, np.abs(res.w).max())
    np.testing.assert_allclose(objective_of(res, obj, lam), res.w, atol=max(bound, 1e-12),
                               rtol=0)
    assert uset.contains(res.P_worst).all()


# --------------------------------------------------------------------------- sort vs LP
@settings(max_examples=examples(15))
@given(robust_cases(max_states=4), st.sampled_from(OBJECTIVES))
def test_sort_operator_equals_lp_operator(case, obj):
    model, uset, policy, lam = case
    s = robust_evaluate(model, policy, uset, obj, lam, per_constraint=False)
    lp = robust_evaluate(model, policy, uset, obj, lam, per_constraint=False, inner="lp")
    np.testing.assert_allclose(lp.w, s.w, atol=1e-8)
    w = np.random.default_rng(0).normal(size=model.n_states) * 3
    qs = robust_bellman(model, uset, w, objective=obj, lam=lam).q
    ql = robust_bellman(model, uset, w, objective=obj, lam=lam, inner="lp").q
    np.testing.assert_allclose(ql, qs, atol=1e-8)


def test_sort_operator_equals_lp_operator_on_navigation():
    model = safe_navigation_1()
    uset = estimate(model, 100, seed=0, progress=False).uset
    policy = np.full((25, 4), 0.25)
    for obj in OBJECTIVES:
        res = robust_evaluate(model, policy, uset, obj, lam=2.0, per_constraint=False)
        s = robust_bellman(model, uset, res.w, policy, objective=obj, lam=2.0)
        lp = robust_bellman(model, uset, res.w, policy, objective=obj, lam=2.0, inner="lp")
        np.testing.assert_allclose(lp.q, s.q, atol=1e-8)
        np.testing.assert_allclose(lp.w, res.w, atol=1e-8)


# --------------------------------------------------------------------------- brute force
@pytest.mark.parametrize(("seed", "K"), [(0, 1), (1, 2), (2, 2)])
def test_worst_case_equals_enumeration_of_vertex_kernels(seed, K):
    """The adversary's MDP attains its optimum at vertices: enumerate them all
    (``extreme_kernels``: every combination of the rows' vertices, found by enumerating
    active constraints, independent of the sort).

    With K = 2 the "constraint" objective is the largest sum of the two costs, and
    each cost's own worst case (``c_worst``) is the largest of that cost alone.
    """
    model = garnet(3, 2, 3, n_constraints=K, seed=seed, gamma=0.9)
    rng = np.random.default_rng(seed)
    uset = l1_ball(model, rng.uniform(0.2, 1.2, size=(3, 2)))
    policy = rng.dirichlet(np.ones(2), size=3)
    lam = np.array([1.5, 0.5])[:K]
    S = 3
    P = extreme_kernels(uset, model, max_kernels=10**6)
    P_pi = np.einsum("sa,nsat->nst", policy, P)
    M = np.eye(S) - model.gamma * P_pi
    for obj in OBJECTIVES:
        res = robust_evaluate(model, policy, uset, obj, lam)
        g = worst_case_objective(obj, lam, model).transition_reward(model)
        r_pi = np.einsum("sa,nsat,sat->ns", policy, P, g)
        W = np.linalg.solve(M, r_pi[..., None])[..., 0]
        np.testing.assert_allclose(W.min(axis=0), res.w, atol=1e-10)
        # one vertex kernel attains the minimum in every state at once (rectangularity)
        assert np.abs(W - res.w).max(axis=1).min() <= 1e-10
    for k in range(K):
        r_k = np.einsum("sa,nsat,sat->ns", policy, P, model.C[..., k])
        C_k = np.linalg.solve(M, r_k[..., None])[..., 0]
        np.testing.assert_allclose(res.c_worst[:, k], C_k.max(axis=0), atol=1e-10)


# --------------------------------------------------------------------------- robust VI
@pytest.mark.parametrize("seed", [3, 4])
def test_robust_value_iteration_is_optimal_among_deterministic_policies(seed):
    model = garnet(4, 2, 3, n_constraints=1, seed=seed, gamma=0.9)
    uset = l1_ball(model, 0.6)
    lam = 0.7
    vi = robust_value_iteration(model, uset, lam, progress=False)
    pi_ = robust_value_iteration(model, uset, lam, method="policy_iteration", progress=False)
    assert vi.converged and pi_.converged
    np.testing.assert_allclose(vi.v, pi_.v, atol=1e-9)
    best = np.full(4, -np.inf)
    for actions in itertools.product(range(2), repeat=4):
        w = robust_evaluate(model, np.array(actions), uset, "lagrangian", lam,
                            per_constraint=False).w
        best = np.maximum(best, w)
    np.testing.assert_allclose(vi.v, best, atol=1e-9)
    # the greedy policy attains it, and the returned kernel is the adversary's at v
    ev = robust_evaluate(model, vi.policy, uset, "lagrangian", lam, per_constraint=False)
    np.testing.assert_allclose(ev.w, vi.v, atol=1e-9)
    tb = robust_bellman(model, uset, vi.v, objective="lagrangian", lam=lam)
    assert np.abs(tb.w - vi.v).max() <= 1e-10
    assert vi.suboptimality_bound == pytest.approx(2 * 0.9 * vi.residual / 0.1)


def test_robust_value_iteration_on_navigation():
    model = safe_navigation_2()
    uset = estimate(model, 2000, seed=0, progress=False).uset
    vi = robust_value_iteration(model, uset, lam=5.0, progress=False)
    pi_ = robust_value_iteration(model, uset, lam=5.0, method="policy_iteration",
                                 progress=False)
    np.testing.assert_allclose(vi.v, pi_.v, atol=1e-8)
    goal = grid_state(4, 4)
    assert vi.v[goal] == 0.0 and (vi.P_worst[goal, :, goal] == 1.0).all()
    # the robust optimum is below the nominal optimum of the same Lagrangian reward
    nominal = robust_value_iteration(model, uset.with_alpha(0.0), lam=5.0, progress=False)
    assert (vi.v <= nominal.v + 1e-9).all() and vi.value < nominal.value


# --------------------------------------------------------------------------- details
def test_navigation_terminal_state_stays_absorbing():
    model = safe_navigation_1()
    uset = estimate(model, 100, seed=1, progress=False).uset
    policy = np.full((25, 4), 0.25)
    res = robust_evaluate(model, policy, uset, "lagrangian", lam=1.0)
    goal = grid_state(4, 4)
    assert res.w[goal] == 0.0
    np.testing.assert_array_equal(res.P_worst[goal, :, goal], 1.0)
    nominal = evaluate(model.with_transitions(uset.nominal), policy, 1.0)
    assert res.value < nominal.value and res.costs_worst[0] > nominal.costs[0]


def test_per_constraint_worst_costs():
    model = garnet(5, 2, 4, n_constraints=2, seed=9, gamma=0.9)
    uset = l1_ball(model, 0.8)
    policy = np.full((5, 2), 0.5)
    res = robust_evaluate(model, policy, uset, "constraint")
    assert res.P_worst_cost.shape == (2, 5, 2, 5) and res.c_worst.shape == (5, 2)
    for k in range(2):
        # C_k under its own kernel, and that kernel is worse for C_k than any other
        ev = evaluate(model.with_transitions(res.P_worst_cost[k]), policy)
        np.testing.assert_allclose(ev.c[:, k], res.c_worst[:, k], atol=1e-12)
        assert (res.c_worst[:, k] >= res.c[:, k] - 1e-10).all()
    np.testing.assert_allclose(res.costs_worst, model.p0 @ res.c_worst)
    one = garnet(5, 2, 4, n_constraints=1, seed=9, gamma=0.9)
    r1 = robust_evaluate(one, policy, l1_ball(one, 0.8), "constraint")
    np.testing.assert_allclose(r1.costs_worst, r1.costs, atol=1e-12)


def test_worst_case_kernel_from_a_critic():
    model = garnet(6, 3, 4, seed=2, gamma=0.95)
    uset = l1_ball(model, 0.5)
    rng = np.random.default_rng(0)
    v, c = rng.normal(size=6), rng.normal(size=(6, 1))
    wk = worst_case_kernel(model, uset, v=v, c=c, objective="lagrangian", lam=2.0)
    ref = robust_bellman(model, uset, v - 2.0 * c[:, 0], objective="lagrangian", lam=2.0)
    np.testing.assert_allclose(wk.q, ref.q, atol=1e-14)
    np.testing.assert_array_equal(wk.P_worst, ref.P_worst)
    z = model.R - 2.0 * model.C[..., 0] + model.gamma * (v - 2.0 * c[:, 0])
    np.testing.assert_allclose(np.einsum("sat,sat->sa", wk.P_worst, z), wk.q, atol=1e-12)


def test_iteration_limit_is_reported():
    model = garnet(4, 2, 3, seed=0, gamma=0.95)
    uset = l1_ball(model, 0.5)
    with pytest.warns(RuntimeWarning, match=re.escape(
        "robust_evaluate: iteration limit 3 reached (residual"
    )):
        res = robust_evaluate(model, np.full((4, 2), 0.5), uset, method="value_iteration",
                              max_iter=3)
    assert not res.converged and not res.success and res.status == "not_converged"
    assert res.iterations == 3
    assert res.message.startswith(
        f"iteration limit 3 reached (residual {res.residual:.2e}); raise max_iter or use "
        f"method='policy_iteration'; the fixed point of cost 0: iteration limit 3 reached"
    )
    with pytest.warns(RuntimeWarning, match=re.escape(
        "robust_value_iteration: iteration limit 2 reached (residual"
    )):
        vi = robust_value_iteration(model, uset, max_iter=2, progress=False)
    assert not vi.converged and vi.status == "not_converged" and vi.iterations == 2


def test_unconverged_per_constraint_fixed_point_is_reported():
    """The objective converges at once (no reward), the cost's own worst case does not."""
    model = garnet(4, 2, 3, seed=0, gamma=0.95)
    model = model.replace(R=np.zeros((4, 2, 4)))
    uset = l1_ball(model, 0.5)
    with pytest.warns(RuntimeWarning, match=re.escape(
        "; the fixed point of cost 0: iteration limit 5 reached"
    )):
        res = robust_evaluate(model, np.full((4, 2), 0.5), uset, "value",
                              method="value_iteration", max_iter=5)
    assert res.iterations == 1 and res.residual == 0.0
    assert not res.converged and res.status == "not_converged"


def test_stalled_policy_iteration_stops_and_says_so():
    """A tolerance below the rounding error: the same kernel comes back, which would
    repeat forever; the solver stops at once with converged=False and a warning."""
    model = garnet(30, 3, 10, n_constraints=2, seed=0, gamma=0.99)
    uset = l1_ball(model, 0.7)
    policy = np.full((30, 3), 1 / 3)
    with pytest.warns(RuntimeWarning, match=re.escape(
        "robust_evaluate: policy_iteration stalled after"
    )):
        res = robust_evaluate(model, policy, uset, "value", tol=1e-18, per_constraint=False)
    assert not res.converged and res.status == "not_converged" and res.iterations < 20
    assert "the worst-case kernel no longer changes" in res.message
    # it stopped at the fixed point, up to rounding
    ok = robust_evaluate(model, policy, uset, "value", per_constraint=False)
    np.testing.assert_allclose(res.w, ok.w, atol=1e-10)
    tw = robust_bellman(model, uset, res.w, policy)
    assert np.abs(tw.w - res.w).max() <= 1e-10
    # robust policy iteration: the policy is stable, its evaluation stalls
    with pytest.warns(RuntimeWarning, match=re.escape(
        "robust_value_iteration: the policy is stable after"
    )):
        rpi = robust_value_iteration(model, uset, 0.5, method="policy_iteration",
                                     tol=1e-18, progress=False)
    assert not rpi.converged and "policy_iteration stalled after" in rpi.message


@pytest.mark.parametrize(
    ("call", "facts"),
    [
        (lambda m, b: robust_evaluate(m.replace(gamma=1.0), np.full((3, 2), 0.5), b),
         ("gamma", "[0, 1)", "1.0")),
        (lambda m, b: robust_evaluate(m, np.full((3, 2), 0.5), b, "worst"),
         ("objective", "'worst'", "'lagrangian'")),
        (lambda m, b: robust_evaluate(m, np.full((3, 2), 0.5),
                                      L1Ball(np.full((2, 2, 2), 0.5), 0.1)),
         ("uncertainty set", "(3, 2, 3)", "(2, 2, 2)")),
        (lambda m, b: robust_evaluate(m, np.full((3, 2), 0.5), b, method="newton"),
         ("method", "'newton'", "'policy_iteration'")),
        (lambda m, b: robust_evaluate(m, np.full((3, 2), 0.5), b, "lagrangian", lam=-1.0),
         ("lam[0] = -1.0", "negative")),
        (lambda m, b: robust_evaluate(garnet(3, 2, 2, n_constraints=0, seed=0),
                                      np.full((3, 2), 0.5), b, "constraint"),
         ("constraints K", "'constraint'", ">= 1")),
        (lambda m, b: robust_evaluate(m, np.full((3, 2), 0.5), "uset"),
             ("uncertainty set", "L1Ball", "str")),
    ],
)
def test_errors(call, facts):
    model = garnet(3, 2, 2, seed=0)
    uset = l1_ball(model, 0.2)
    with raises_fact(ModelError, *facts):
        call(model, uset)


def test_worst_case_objective_is_shared_and_consistent():
    model = garnet(4, 2, 3, n_constraints=2, seed=5, gamma=0.9)
    uset = l1_ball(model, 0.4)
    policy = np.full((4, 2), 0.5)
    lam = np.array([0.5, 2.0])
    ev = evaluate(model, policy, lam)
    for name in OBJECTIVES:
        obj = worst_case_objective(name, lam, model)
        np.testing.assert_allclose(obj.scalarise(ev.v, ev.c), objective_of(ev, name, lam))
        # the same object can be passed wherever an objective name is accepted
        a = robust_evaluate(model, policy, uset, obj, lam, per_constraint=False)
        b = robust_evaluate(model, policy, uset, name, lam, per_constraint=False)
        np.testing.assert_array_equal(a.w, b.w)
        # g + gamma W under the nominal kernel reproduces the nominal W (policy Bellman)
        g = obj.transition_reward(model)
        W = obj.scalarise(ev.v, ev.c)
        q = np.einsum("sat,sat->sa", model.P, g + model.gamma * W[None, None, :])
        np.testing.assert_allclose(np.einsum("sa,sa->s", policy, q), W, atol=1e-12)
    with raises_fact(ModelError, "multipliers", "(2,)", "(1,)"):
        robust_evaluate(model, policy, uset, worst_case_objective("lagrangian", 1.0))


def test_an_objective_carries_its_multipliers():
    """One multiplier, one channel: a WorstCaseObjective's lam is the lam of the result,
    and the reported Lagrangian is the one the adversary minimised (w is its fixed point,
    the exact Lagrangian under the worst-case kernel equals it)."""
    m = garnet(4, 3, 3, n_constraints=1, seed=2, gamma=0.9)
    pi = np.full((4, 3), 1.0 / 3.0)
    uset = l1_ball(m, 0.4)
    obj = worst_case_objective("lagrangian", lam=[2.0], model=m)
    res = robust_evaluate(m, pi, uset, obj)
    np.testing.assert_array_equal(res.lam, [2.0])
    assert np.abs(res.lagrangian - res.w).max() <= 1e-9 * max(1.0, np.abs(res.w).max())
    named = robust_evaluate(m, pi, uset, "lagrangian", lam=2.0)
    np.testing.assert_allclose(named.w, res.w, rtol=0, atol=1e-12)
    same = robust_evaluate(m, pi, uset, obj, lam=[2.0])  # the same numbers twice: fine
    np.testing.assert_array_equal(same.lam, [2.0])
    with raises_fact(ModelError, "lam = [1.0]", "[2.0]", "once"):
        robust_evaluate(m, pi, uset, obj, lam=1.0)
