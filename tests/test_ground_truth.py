"""Ground truth: the occupancy-measure LP, its finite-horizon variant and the RCMDP bracket.

Every expected number is derived independently of the code under test: value iteration
and linear solves written here, QuantEcon's DiscreteDP, scipy's scalar minimiser on the
convex Lagrangian dual, backward induction, hand-computed closed forms, and kernels
sampled from the L1 ball.
"""

import re
import warnings

import numpy as np
import pytest
import quantecon as qe
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize_scalar

import rcmdp_exact.ground_truth as gt
from rcmdp_exact import TabularCMDP
from rcmdp_exact.domains import garnet
from rcmdp_exact.evaluation import rescaled_budget
from rcmdp_exact.ground_truth import (
    evaluate_time_dependent,
    infeasible_message,
    lagrangian_optimal_policy,
    rcmdp_bracket,
    rcmdp_variant,
    solve_cmdp,
    solve_cmdp_finite_horizon,
)
from rcmdp_exact.model import ModelError
from rcmdp_exact.uncertainty import l1_ball


# --------------------------------------------------------------------------- helpers
def vi(P, reward, gamma, tol=1e-13):
    """Independent value iteration: optimal v (S,) and q (S, A) of ``reward`` (S, A)."""
    v = np.zeros(P.shape[0])
    while True:
        q = reward + gamma * P @ v
        nv = q.max(axis=1)
        if np.abs(nv - v).max() < tol * (1 - gamma):
            return nv, reward + gamma * P @ nv
        v = nv


def policy_values(P, r, c, gamma, pi):
    """Independent exact evaluation by a dense solve: v (S,), C (S, K)."""
    S = P.shape[0]
    P_pi = np.einsum("sa,sat->st", pi, P)
    rhs = np.column_stack([np.einsum("sa,sa->s", pi, r), np.einsum("sa,sak->sk", pi, c)])
    sol = np.linalg.solve(np.eye(S) - gamma * P_pi, rhs)
    return sol[:, 0], sol[:, 1:]


def dual_function(model, lam):
    """D(lam) = max_pi [V - lam.C](p0) + lam.d by value iteration (convex in lam)."""
    lam = np.atleast_1d(np.asarray(lam, dtype=float))
    v, _ = vi(model.P, model.r - model.c @ lam, model.gamma)
    return float(model.p0 @ v + lam @ model.d)


def backward_induction(model, reward, T):
    """Optimal T-step undiscounted value of ``reward`` (S, A) from p0."""
    v = np.zeros(model.n_states)
    for _ in range(T):
        v = (reward + model.P @ v).max(axis=1)
    return float(model.p0 @ v)


def scale(model):
    return max(1.0, np.abs(model.r).max(), np.abs(model.c).max()) / (1 - model.gamma)


@st.composite
def cmdps(draw, max_states=6, max_constraints=2):
    """A Garnet CMDP whose budgets are feasible with slack and often binding.

    d = (1 - f) C(pi_rand) + f C(pi_unconstrained) + slack: the occupancy mixture of the
    two policies meets it, so the LP is feasible and Slater's condition holds.
    """
    S = draw(st.integers(2, max_states))
    A = draw(st.integers(2, 3))
    K = draw(st.integers(1, max_constraints))
    seed = draw(st.integers(0, 2**31 - 1))
    gamma = draw(st.sampled_from([0.5, 0.8, 0.9]))
    f = draw(st.floats(0.0, 1.0))
    nsd = draw(st.booleans())
    m = garnet(S, A, draw(st.integers(1, S)), n_constraints=K, seed=seed, gamma=gamma,
               next_state_dependent=nsd)
    rng = np.random.default_rng(seed)
    pr = np.eye(A)[rng.integers(0, A, S)]
    _, qu = vi(m.P, m.r, gamma)
    pu = np.eye(A)[qu.argmax(axis=1)]
    cr = m.p0 @ policy_values(m.P, m.r, m.c, gamma, pr)[1]
    cu = m.p0 @ policy_values(m.P, m.r, m.c, gamma, pu)[1]
    d = (1 - f) * cr + f * cu + 0.05 * np.abs(m.c).max() / (1 - gamma)
    return m.replace(d=d)


# --------------------------------------------------------------------------- the LP
@settings(max_examples=40)
@given(cmdps())
def test_lp_policy_is_feasible_and_matches_the_lp(model):
    res = solve_cmdp(model)
    assert res.success and res.status == "optimal", res.message
    v, C = policy_values(model.P, model.r, model.c, model.gamma, res.policy)
    tol = 1e-6  # absolute, on values of size up to 1 / (1 - gamma) = 10
    # the exact evaluation (independent solve) matches the solver's objective and rows
    assert abs(model.p0 @ v - res.lp_value) <= tol
    np.testing.assert_allclose(model.p0 @ C, res.lp_costs, atol=tol)
    assert abs(model.p0 @ v - res.value) <= 1e-9 * scale(model)
    assert np.all(model.p0 @ C <= model.d + tol)
    assert np.all(res.multipliers >= 0)


@settings(max_examples=40)
@given(cmdps())
def test_lp_optimum_equals_the_lagrangian_dual_optimum(model):
    """Strong duality: min_{lam >= 0} D(lam) = LP optimum, D by value iteration."""
    res = solve_cmdp(model)
    assert res.success, res.message
    tol = 1e-6  # absolute, on values of size up to 1 / (1 - gamma) = 10
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    # the dual LP min p0.v + mu.d s.t. v(s) >= r(s,a) - mu.c(s,a) + gamma P(s,a).v,
    # mu >= 0 (= min_mu max_pi L), written here and solved by scipy's linprog
    A_ub = np.hstack([model.gamma * model.P.reshape(S * A, S)
                      - np.repeat(np.eye(S), A, axis=0), -model.c.reshape(S * A, K)])
    dual = linprog(np.concatenate([model.p0, model.d]), A_ub=A_ub, b_ub=-model.r.ravel(),
                   bounds=[(None, None)] * S + [(0, None)] * K, method="highs")
    assert dual.status == 0
    assert abs(dual.fun - res.value) <= tol
    # the LP's multipliers are dual optimal: D(mu) equals the value of the policy, which
    # is feasible (independent evaluation), and weak duality D(lam) >= OPT holds at
    # random lam
    _, C = policy_values(model.P, model.r, model.c, model.gamma, res.policy)
    assert np.all(model.p0 @ C <= model.d + tol)
    assert abs(dual_function(model, res.multipliers) - res.value) <= tol
    rng = np.random.default_rng(0)
    for lam in rng.exponential(2.0, size=(5, model.n_constraints)):
        assert dual_function(model, lam) >= res.value - tol
    if model.n_constraints == 1:
        # independent minimisation of the convex piecewise-linear dual; Slater's slack
        # bounds the optimal multiplier by (range of V) / slack
        v_span = (model.r.max() - model.r.min()) / (1 - model.gamma)
        slack = 0.05 * np.abs(model.c).max() / (1 - model.gamma)
        opt = minimize_scalar(lambda t: dual_function(model, t), bounds=(0.0, v_span / slack + 1),
                              method="bounded", options={"xatol": 1e-12, "maxiter": 500})
        assert abs(opt.fun - res.value) <= tol


@settings(max_examples=30)
@given(cmdps())
def test_slack_budget_gives_the_value_iteration_optimum(model):
    big = np.abs(model.c).max() / (1 - model.gamma) + 1.0
    m = model.replace(d=np.full(model.n_constraints, big))
    res = solve_cmdp(m)
    v, _ = vi(m.P, m.r, m.gamma)
    assert abs(res.value - m.p0 @ v) <= 1e-6 * scale(m)
    np.testing.assert_allclose(res.multipliers, 0.0, atol=1e-9)
    # QuantEcon as a third opinion
    ddp = qe.markov.DiscreteDP(np.array(m.r), np.array(m.P), m.gamma)
    sol = ddp.solve(method="policy_iteration")
    assert abs(res.value - m.p0 @ sol.v) <= 1e-6 * scale(m)
    # and without any constraint (K = 0)
    free = solve_cmdp(m.replace(C=None, d=None, cost_labels=None))
    assert free.success and free.multipliers.shape == (0,)
    assert abs(free.value - m.p0 @ v) <= 1e-6 * scale(m)


def test_hand_computed_two_state_cmdp():
    """Two absorbing states; action 1 earns 1 and costs 1 per step, action 0 nothing.

    With p0 = (1/2, 1/2) and gamma = 0.9 any policy's cost is its reward, so
    V* = min(d, 10) and the multiplier is 1 while the budget binds.
    """
    P = np.zeros((2, 2, 2))
    P[0, :, 0] = P[1, :, 1] = 1.0
    R = np.array([[0.0, 1.0], [0.0, 1.0]])
    C = np.array([[[0.0], [1.0]], [[0.0], [1.0]]])
    for d, v, mu in [(4.0, 4.0, 1.0), (12.0, 10.0, 0.0)]:
        m = TabularCMDP(P, R, C, d=[d], gamma=0.9, p0=np.array([0.5, 0.5]))
        res = solve_cmdp(m)
        assert res.status == "optimal"
        assert res.value == pytest.approx(v, abs=1e-9)
        assert res.multipliers[0] == pytest.approx(mu, abs=1e-9)


def test_clarabel_agrees_with_highs():
    m = garnet(6, 3, 3, n_constraints=2, seed=3, gamma=0.9).replace(d=[3.0, 3.5])
    a = solve_cmdp(m, solver="HIGHS")
    b = solve_cmdp(m, solver="CLARABEL")
    assert a.success and b.success
    assert a.value == pytest.approx(b.value, abs=1e-6)
    np.testing.assert_allclose(a.multipliers, b.multipliers, atol=1e-5)


# --------------------------------------------------------------------------- unvisited
def unreachable_model():
    """States 0, 1 form a closed class from p0 = state 0; state 2 is never visited."""
    P = np.zeros((3, 2, 3))
    P[0, 0, 0] = P[0, 1, 1] = P[1, :, 0] = 1.0
    P[2, 0, 2] = 1.0
    P[2, 1, 0] = 1.0
    R = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 5.0]])
    C = np.array([[[1.0], [0.0]], [[0.0], [0.0]], [[0.0], [3.0]]])
    return TabularCMDP(P, R, C, d=[4.0], gamma=0.9, p0=0)


def test_unvisited_states_get_the_lagrangian_greedy_action_or_uniform():
    m = unreachable_model()
    res = solve_cmdp(m)
    assert res.success
    assert not res.visited[2] and res.visited[0]
    _, q = vi(m.P, m.r - m.c @ res.multipliers, m.gamma)
    np.testing.assert_array_equal(res.policy[2], np.eye(2)[q[2].argmax()])
    uni = solve_cmdp(m, unvisited="uniform")
    np.testing.assert_allclose(uni.policy[2], [0.5, 0.5])
    assert uni.value == pytest.approx(res.value, abs=1e-12)


def test_lagrangian_optimal_policy_matches_value_iteration():
    m = garnet(7, 3, 4, n_constraints=1, seed=11, gamma=0.95)
    sol = lagrangian_optimal_policy(m, [0.7])
    v, q = vi(m.P, m.r - 0.7 * m.c[:, :, 0], m.gamma)
    assert sol.converged
    np.testing.assert_allclose(sol.v, v, atol=1e-9)
    np.testing.assert_array_equal(sol.policy, q.argmax(axis=1))


# --------------------------------------------------------------------------- infeasible
def constant_cost_model(d):
    """Every step costs 1, so every policy's discounted cost is 1 / (1 - 0.9) = 10."""
    m = garnet(4, 2, 2, n_constraints=1, seed=5, gamma=0.9)
    return m.replace(C=np.ones((4, 2, 1)), d=[d])


def test_infeasible_budget_gives_status_and_exact_message():
    res = solve_cmdp(constant_cost_model(5.0))
    assert res.status == "infeasible" and not res.success
    expected = ("infeasible: no policy meets the budgets; the smallest achievable "
                "discounted cost of constraint 0 is 10 > budget d[0] = 5; raise d[0] to at "
                "least 10 or change the costs")
    assert re.fullmatch(re.escape(expected), res.message)
    assert res.min_costs[0] == pytest.approx(10.0, abs=1e-8)
    assert res.costs[0] == pytest.approx(10.0, abs=1e-8)


def test_jointly_infeasible_budgets_message():
    """Cost 0 = action 0, cost 1 = action 1: each can be zero alone, not both."""
    m = garnet(3, 2, 2, n_constraints=2, seed=1, gamma=0.9)
    C = np.zeros((3, 2, 2))
    C[:, 0, 0] = 1.0
    C[:, 1, 1] = 1.0
    res = solve_cmdp(m.replace(C=C, d=[2.0, 2.0]))
    assert res.status == "infeasible"
    expected = ("infeasible: each budget can be met on its own (smallest discounted costs "
                "[0, 0] <= budgets [2, 2]) but not all at once; the returned policy "
                "minimises the total overshoot; relax one of the budgets")
    assert res.message == expected
    # the least-overshoot policy splits the 10 units of cost: total overshoot 10 - 4 = 6
    assert np.maximum(res.costs - 2.0, 0).sum() == pytest.approx(6.0, abs=1e-7)


@settings(max_examples=25)
@given(cmdps(max_constraints=1), st.floats(0.01, 0.5))
def test_infeasible_budget_reports_the_smallest_cost(model, below):
    v, _ = vi(model.P, -model.c[:, :, 0], model.gamma)
    cmin = -float(model.p0 @ v)
    d = cmin - below * max(cmin, 1e-3)
    res = solve_cmdp(model.replace(d=[d]))
    assert res.status == "infeasible"
    assert res.min_costs[0] == pytest.approx(cmin, abs=1e-7 * scale(model))
    assert res.message.startswith(
        "infeasible: no policy meets the budgets; the smallest achievable discounted cost "
        f"of constraint 0 is {res.min_costs[0]:.6g} > budget d[0] = {d:.6g}; ")
    assert res.message == infeasible_message(model, res.min_costs, [d])


def test_solver_trouble_is_a_status_not_an_exception(monkeypatch):
    m = garnet(4, 2, 2, n_constraints=1, seed=2, gamma=0.9)
    monkeypatch.setattr(gt, "_solve_lp", lambda prob, solver: ("solver_error", "boom"))
    res = solve_cmdp(m)
    assert res.status == "solver_error" and not res.success
    assert res.message == ('the LP solver HIGHS failed (boom); try solver="CLARABEL" or '
                           'rescale rewards and costs')


def test_optimal_inaccurate_is_a_warning_not_a_success(monkeypatch):
    m = garnet(4, 2, 2, n_constraints=1, seed=2, gamma=0.9)
    real = gt._solve_lp

    def inaccurate(prob, solver):
        real(prob, solver)
        return "optimal_inaccurate", None

    monkeypatch.setattr(gt, "_solve_lp", inaccurate)
    with pytest.warns(RuntimeWarning, match="OPTIMAL_INACCURATE"):
        res = solve_cmdp(m)
    assert res.status == "optimal_inaccurate" and not res.success


def test_recheck_failure_is_a_status():
    """A tolerance below the rounding of the exact evaluation makes the re-check fail:
    status check_failed, success False, the discrepancies in the message."""
    m = garnet(4, 2, 2, n_constraints=1, seed=2, gamma=0.9).replace(horizon=5)
    for res, how in ((solve_cmdp(m, check_tol=1e-300), "the exact evaluation"),
                     (solve_cmdp_finite_horizon(m, check_tol=1e-300), "backward induction")):
        assert res.status == "check_failed" and not res.success
        assert res.check_error > 0
        assert res.message.startswith(
            f"{how} of the LP policy disagrees with the LP: value {res.value!r} vs "
            f"{res.lp_value!r}, largest cost discrepancy ")
        assert res.value == pytest.approx(res.lp_value, abs=1e-9)  # only rounding


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"solver": "GLPK"}, "solver must be one of ('HIGHS', 'CLARABEL'), got 'GLPK'; "
                             "HIGHS (simplex, exact vertices and duals) is the default"),
        ({"unvisited": "random"}, "unvisited must be 'lagrangian' or 'uniform', got 'random'"),
        ({"check_tol": 0.0}, "check_tol must be a positive number, got 0.0"),
    ],
)
def test_bad_arguments(kwargs, message):
    m = garnet(3, 2, 2, seed=0)
    with pytest.raises(ModelError, match=re.escape(message)):
        solve_cmdp(m, **kwargs)


def test_undiscounted_without_terminal_states_is_refused():
    m = garnet(3, 2, 2, seed=0, gamma=1.0)
    with pytest.raises(ModelError, match=re.escape(
            "solve_cmdp with gamma = 1 needs terminal states")):
        solve_cmdp(m)


def test_undiscounted_chain_with_terminal_state():
    """A chain 0 -> 1 -> 2 (terminal): 'go' moves on, 'stay' stays; reward -1 per step.

    Leaving state 1 ('go') costs 1 and every policy that terminates must do it once, so
    the smallest cost is 1; with d = 1 the fastest policy (2 steps, V* = -2) is optimal.
    """
    S, A = 3, 2
    P = np.zeros((S, A, S))
    P[0, 0, 1] = P[1, 0, 2] = P[2, :, 2] = 1.0
    P[0, 1, 0] = P[1, 1, 1] = 1.0
    R = np.full((S, A), -1.0)
    C = np.zeros((S, A, 1))
    C[1, 0, 0] = 1.0
    m = TabularCMDP(P, R, C, d=[1.0], gamma=1.0, terminal=[False, False, True])
    res = solve_cmdp(m)
    assert res.success, res.message
    assert res.value == pytest.approx(-2.0, abs=1e-9)
    infeasible = solve_cmdp(m.replace(d=[0.5]))
    assert infeasible.status == "infeasible"
    assert infeasible.min_costs[0] == pytest.approx(1.0, abs=1e-9)


# --------------------------------------------------------------------------- finite horizon
@settings(max_examples=25)
@given(cmdps(max_states=5), st.integers(1, 8))
def test_finite_horizon_lp_equals_backward_induction_when_unconstrained(model, T):
    big = np.abs(model.c).max() * T + 1.0
    res = solve_cmdp_finite_horizon(model, T, budget=np.full(model.n_constraints, big))
    assert res.success, res.message
    assert res.policy.shape == (T, model.n_states, model.n_actions)
    assert res.value == pytest.approx(backward_induction(model, model.r, T), abs=1e-7 * T)


@settings(max_examples=25)
@given(cmdps(max_states=5, max_constraints=1), st.integers(2, 8), st.floats(0.1, 0.9))
def test_finite_horizon_lp_with_binding_budget(model, T, frac):
    lo = -backward_induction(model, -model.c[:, :, 0], T)  # smallest T-step cost
    hi = backward_induction(model, model.c[:, :, 0], T)
    budget = np.array([lo + frac * (hi - lo) + 1e-3])
    res = solve_cmdp_finite_horizon(model, T, budget=budget)
    assert res.success, res.message
    ev = evaluate_time_dependent(model, res.policy)
    assert ev.value == pytest.approx(res.lp_value, abs=1e-7 * T)
    assert ev.cost[0] <= budget[0] + 1e-7 * T
    # the T-step dual at the LP's multiplier equals the optimum (strong duality)
    mu = res.multipliers[0]
    dual = backward_induction(model, model.r - mu * model.c[:, :, 0], T) + mu * budget[0]
    assert dual == pytest.approx(res.value, abs=1e-6 * T)


def test_finite_horizon_default_budget_is_the_rescaled_one():
    m = garnet(4, 2, 2, seed=4, gamma=0.99).replace(horizon=6)
    res = solve_cmdp_finite_horizon(m)
    np.testing.assert_allclose(res.budget, rescaled_budget(m.d, 0.99, 6))


def test_evaluate_time_dependent_matches_a_stationary_policy():
    from rcmdp_exact.evaluation import evaluate_finite_horizon

    m = garnet(5, 3, 3, seed=8, gamma=0.9)
    pi = np.random.default_rng(0).dirichlet(np.ones(3), size=5)
    a = evaluate_time_dependent(m, np.broadcast_to(pi, (7, 5, 3)))
    b = evaluate_finite_horizon(m, pi, 7)
    assert a.value == pytest.approx(b.value, abs=1e-12)
    np.testing.assert_allclose(a.cost, b.cost, atol=1e-12)


def test_finite_horizon_infeasible():
    m = constant_cost_model(5.0)
    res = solve_cmdp_finite_horizon(m, 4, budget=[2.0])
    assert res.status == "infeasible"
    assert res.message == (
        "infeasible: no policy meets the budgets; the smallest achievable T-step cost of "
        "constraint 0 is 4 > budget d[0] = 2; raise d[0] to at least 4 or change the costs"
    )


# --------------------------------------------------------------------------- bracket
@st.composite
def robust_cases(draw):
    model = draw(cmdps(max_states=5, max_constraints=2))
    seed = draw(st.integers(0, 2**31 - 1))
    top = draw(st.sampled_from([0.0, 0.2, 1.0]))
    rng = np.random.default_rng(seed)
    ball = l1_ball(model, rng.uniform(0, top, size=(model.n_states, model.n_actions)),
                   support="all")
    # the budget is rescaled by 0.5 + frac in the test (infeasible cases included)
    return model, ball, draw(st.floats(0.0, 1.0))


def inner_min(p_hat, z, alpha):
    """min p.z over the L1 ball (radius alpha, full support) by the PROTOCOL's rule:
    move min(alpha/2, 1 - p_hat[k]) onto an argmin k of z, taken from the largest z."""
    p = np.array(p_hat, dtype=float)
    k = int(np.argmin(z))
    eps = min(alpha / 2.0, 1.0 - p[k])
    p[k] += eps
    for j in np.argsort(-z, kind="stable"):
        if eps <= 0:
            break
        if j != k:
            take = min(eps, p[j])
            p[j] -= take
            eps -= take
    return float(p @ z)


def robust_fixed_point(ball, g, gamma, p0, policy=None, tol=1e-13):
    """Independent robust value iteration: W = sum_a pi(a|s) min_p p.(g + gamma W), or
    max_a of it without a policy; plain loops over (s, a) and the rule above."""
    S, A, _ = ball.nominal.shape
    w = np.zeros(S)
    while True:
        q = np.array([[inner_min(ball.nominal[s, a], g[s, a] + gamma * w, ball.alpha[s, a])
                       for a in range(A)] for s in range(S)])
        nw = q.max(axis=1) if policy is None else (policy * q).sum(axis=1)
        if np.abs(nw - w).max() < tol * (1 - gamma):
            return float(p0 @ nw)
        w = nw


def robust_numbers(model, ball, policy):
    """Independent worst-case value and worst-case costs (K,) of a stationary policy."""
    R, C = np.asarray(model.R), np.asarray(model.C)
    value = robust_fixed_point(ball, R, model.gamma, model.p0, policy)
    costs = np.array([-robust_fixed_point(ball, -C[..., k], model.gamma, model.p0, policy)
                      for k in range(model.n_constraints)])
    return value, costs


@settings(max_examples=20)
@given(robust_cases())
def test_bracket_lower_is_at_most_upper_and_is_certified(case):
    model, ball, frac = case
    d = model.d * (0.5 + frac)
    model = model.replace(d=d)
    res = rcmdp_bracket(model, ball, n_grid=9, n_refine=15, n_cuts=10, variants=(),
                        progress=False)
    tol = 1e-9 * scale(model)
    if res.status == "infeasible":
        # certified: even the policy of least worst-case cost k (independent robust
        # evaluation) exceeds d_k
        k = int(np.flatnonzero(res.min_robust_cost > d)[0])
        _, c_safe = robust_numbers(model, ball, res.policies["lower"])
        assert c_safe[k] >= res.min_robust_cost[k] - tol
        return
    assert res.lower <= res.upper + tol
    if res.status == "bracket":
        # the lower policy (a mixture or not), evaluated independently as a stationary
        # policy: its worst-case value is the reported lower bound (not less, not more)
        # and its worst-case cost meets the budget with no tolerance beyond rounding
        value, costs = robust_numbers(model, ball, res.policies["lower"])
        assert res.lower <= value + tol
        assert value - res.lower <= 1e-7 * scale(model)
        assert np.all(costs <= d + tol)
        np.testing.assert_allclose(res.lower_cost, costs, atol=1e-7 * scale(model))
        assert res.upper >= value - tol


@settings(max_examples=20)
@given(cmdps(max_states=5))
def test_bracket_collapses_to_the_cmdp_optimum_at_alpha_zero(model):
    ball = l1_ball(model, 0.0, support="all")
    res = rcmdp_bracket(model, ball, variants=(), progress=False)
    lp = solve_cmdp(model)
    v_ref = lp.value
    tol = 1e-6 * scale(model)
    assert res.status == "bracket"
    assert res.lower == pytest.approx(v_ref, abs=tol)
    assert res.upper == pytest.approx(v_ref, abs=tol)


def test_bracket_infeasible_when_the_worst_case_cost_exceeds_the_budget():
    m = constant_cost_model(5.0)
    ball = l1_ball(m, 0.3, support="all")
    res = rcmdp_bracket(m, ball, progress=False)
    assert res.status == "infeasible" and res.upper == -np.inf
    assert res.message == (
        "infeasible: no policy meets the budgets on every model of the ball; the smallest "
        "worst-case cost of constraint 0 is 10 > budget d[0] = 5; raise the budget or "
        "shrink the ball"
    )


def test_bracket_upper_bounds_every_robust_feasible_deterministic_policy():
    """Enumerate all deterministic policies of a small model: upper >= best feasible."""
    import itertools

    m = garnet(3, 2, 3, n_constraints=1, seed=21, gamma=0.8)
    ball = l1_ball(m, 0.4, support="all")
    vals = []
    for acts in itertools.product(range(2), repeat=3):
        value, costs = robust_numbers(m, ball, np.eye(2)[list(acts)])
        vals.append((value, costs[0]))
    costs = sorted(c for _, c in vals)
    d = 0.5 * (costs[0] + costs[-1])
    m = m.replace(d=[d])
    res = rcmdp_bracket(m, ball, progress=False)
    best = max(v for v, c in vals if c <= d)
    assert res.status == "bracket"
    assert res.upper >= best - 1e-9
    assert res.lower >= best - 1e-9  # deterministic candidates are all met or beaten
    for name, var in res.variants.items():
        assert var.variant == name


def positive_reward_model(seed, n_constraints=0):
    m = garnet(6, 3, 3, n_constraints=n_constraints, seed=seed, gamma=0.9)
    return m.replace(R=np.abs(np.asarray(m.R)) + 1.0)


@pytest.mark.parametrize("rvi_method", ["value_iteration", "policy_iteration"])
def test_bracket_stays_certified_with_a_loose_tolerance(rvi_method):
    """K = 0: OPT is the robust optimum (independent robust VI).  With tol = 0.1 the
    fixed points stop far from convergence (robust VI from 0 with positive rewards
    stops below V*, the adversary's iteration above the worst case), and only the
    residual bounds keep lower <= OPT <= upper."""
    m = positive_reward_model(0)
    ball = l1_ball(m, 0.6, support="all")
    opt = robust_fixed_point(ball, np.asarray(m.R), m.gamma, m.p0)
    res = rcmdp_bracket(m, ball, tol=0.1, rvi_method=rvi_method, progress=False)
    assert res.status == "bracket"
    assert res.lower <= opt + 1e-9
    assert res.upper >= opt - 1e-9
    tight = rcmdp_bracket(m, ball, progress=False)
    assert tight.lower == pytest.approx(opt, abs=1e-9)
    assert tight.upper == pytest.approx(opt, abs=1e-9)


def enumerate_deterministic(model, ball):
    """Independent worst-case (value, costs) of every deterministic policy."""
    import itertools

    S, A = model.n_states, model.n_actions
    return [robust_numbers(model, ball, np.eye(A)[list(a)])
            for a in itertools.product(range(A), repeat=S)]


def mid_budget_model(seed, alpha):
    """A 4-state model with the budget halfway between the least and the largest
    worst-case cost of its deterministic policies; returns (model, ball, their numbers)."""
    m = garnet(4, 2, 3, n_constraints=1, seed=seed, gamma=0.9)
    m = m.replace(R=np.abs(np.asarray(m.R)) + 1.0)
    ball = l1_ball(m, alpha, support="all")
    vals = enumerate_deterministic(m, ball)
    costs = [c[0] for _, c in vals]
    return m.replace(d=[0.5 * (min(costs) + max(costs))]), ball, vals


def test_bracket_lower_policy_is_feasible_with_a_loose_tolerance():
    """K = 1, tol = 0.1: the lower policy's independent worst-case cost meets d, its
    value is above the bound, and the upper bound is above every feasible
    deterministic policy."""
    m, ball, vals = mid_budget_model(1, 0.5)
    d = m.d[0]
    res = rcmdp_bracket(m, ball, tol=0.1, variants=(), progress=False)
    assert res.status == "bracket"
    value, costs = robust_numbers(m, ball, res.policies["lower"])
    assert costs[0] <= d + 1e-9
    assert res.lower <= value + 1e-9
    assert res.upper >= max(v for v, c in vals if c[0] <= d) - 1e-9


def test_mixed_lower_policy_is_evaluated_as_a_stationary_policy():
    """A model whose lower bound is a state-wise mixture (0 < theta < 1) of two
    policies: the reported bound is the mixture's own worst-case value and cost
    (independent robust evaluation), feasible, and above every feasible deterministic
    policy."""
    m, ball, vals = mid_budget_model(2, 0.3)
    d = m.d[0]
    res = rcmdp_bracket(m, ball, variants=(), progress=False)
    assert res.status == "bracket"
    assert 0.0 < res.mix_theta < 1.0
    pol = res.policies["lower"]
    assert (pol.max(axis=1) < 1.0).any()  # genuinely stochastic
    value, cst = robust_numbers(m, ball, pol)
    assert res.lower == pytest.approx(value, abs=1e-9)
    assert res.lower_cost[0] == pytest.approx(cst[0], abs=1e-9)
    assert cst[0] <= d + 1e-12
    assert res.lower >= max(v for v, c in vals if c[0] <= d) - 1e-9
    assert res.upper >= res.lower


# --------------------------------------------------------------------------- variants
def test_variants_are_exact_evaluations_under_their_own_worst_case():
    m = garnet(5, 2, 3, n_constraints=1, seed=7, gamma=0.9)
    ball = l1_ball(m, 0.5, support="all")
    for name in ("value", "constraint", "lagrangian"):
        var = rcmdp_variant(m, ball, name, n_grid=9)
        assert ball.contains(var.P_worst).all()
        P = var.P_worst
        v, C = policy_values(P, np.einsum("sat,sat->sa", P, m.R),
                             np.einsum("sat,satk->sak", P, m.C), m.gamma, var.policy)
        assert m.p0 @ v == pytest.approx(var.value, abs=1e-9)
        np.testing.assert_allclose(m.p0 @ C, var.cost, atol=1e-9)
        # P+ is the variant's own worst case for its policy (independent robust VI)
        lam = var.multiplier
        R, Cs = np.asarray(m.R), np.asarray(m.C)
        g = {"value": R, "constraint": -Cs[..., 0], "lagrangian": R - Cs @ lam}[name]
        w = {"value": var.value, "constraint": -var.cost[0],
             "lagrangian": var.value - lam @ var.cost}[name]
        assert robust_fixed_point(ball, g, m.gamma, m.p0, var.policy) == pytest.approx(
            w, abs=1e-8)
        value, costs = robust_numbers(m, ball, var.policy)
        assert var.robust_value == pytest.approx(value, abs=1e-8)
        np.testing.assert_allclose(var.robust_cost, costs, atol=1e-8)
        # an equilibrium: the policy is optimal for r - lam.c under its own P+
        assert var.converged
        _, q = vi(P, np.einsum("sat,sat->sa", P, R - Cs @ lam), m.gamma)
        assert np.all((var.policy * q).sum(axis=1) >= q.max(axis=1) - 1e-8)


def test_value_variant_with_slack_budget_is_the_robust_optimum():
    from rcmdp_exact.robust import robust_value_iteration

    m = garnet(5, 3, 3, n_constraints=1, seed=9, gamma=0.9).replace(d=[1e3])
    ball = l1_ball(m, 0.3, support="all")
    var = rcmdp_variant(m, ball, "value", n_grid=5)
    ref = robust_value_iteration(m, ball, progress=False)
    assert var.multiplier[0] == 0.0
    assert var.value == pytest.approx(ref.value, abs=1e-9)


def test_variant_and_bracket_argument_errors():
    m = garnet(3, 2, 2, seed=0)
    ball = l1_ball(m, 0.1)
    with pytest.raises(ModelError, match=re.escape(
            "unknown variant 'robust'; choose from ['value', 'constraint', 'lagrangian']")):
        rcmdp_variant(m, ball, "robust")
    with pytest.raises(ModelError, match=re.escape(
            "ball must be an L1Ball (see rcmdp_exact.uncertainty), got ndarray")):
        rcmdp_bracket(m, np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ModelError, match=re.escape("lam_range must be (low, high)")):
            rcmdp_bracket(m, ball, lam_range=(1.0, 0.5))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, b: rcmdp_bracket(m, b, feas_tol=-1e-9),
         "feas_tol must be a finite number >= 0, got -1e-09"),
        (lambda m, b: rcmdp_bracket(m, b, mix_steps=-1),
         "mix_steps must be a non-negative integer, got -1"),
        (lambda m, b: rcmdp_bracket(m, b, variants=("robust",)),
         "unknown variants ['robust']; choose from ['value', 'constraint', 'lagrangian']"),
        (lambda m, b: rcmdp_variant(m, b, "value", n_grid=0),
         "n_grid must be an integer >= 2, got 0"),
        (lambda m, b: rcmdp_variant(m, b, "value", max_iter=0),
         "max_iter must be a positive integer, got 0"),
        (lambda m, b: rcmdp_bracket(m.replace(gamma=1.0, horizon=5), b),
         "rcmdp_bracket needs gamma < 1 (robust value iteration), got 1.0"),
        (lambda m, b: solve_cmdp_finite_horizon(m, 3, discount="a"),
         "discount must be a number in [0, 1], got 'a'"),
        (lambda m, b: solve_cmdp_finite_horizon(m, 3, budget=[np.nan]),
         "budget must be finite, got [nan]"),
        (lambda m, b: solve_cmdp_finite_horizon(m, 3, budget=[1.0, 2.0]),
         "budget must have one entry per constraint (K=1), got 2"),
        (lambda m, b: solve_cmdp_finite_horizon(m, 0),
         "solve_cmdp_finite_horizon needs a horizon T >= 1 (pass horizon=T or build the "
         "model with horizon=T), got 0"),
        (lambda m, b: evaluate_time_dependent(m, np.ones((3, 2))),
         "a time-dependent policy must have shape (T, S, A) with T >= 1, S=3, A=2, got "
         "(3, 2)"),
        (lambda m, b: infeasible_message(m, [1.0, 2.0]),
         "min_costs and budgets must have one entry per constraint (K=1), got 2 and 1"),
        (lambda m, b: lagrangian_optimal_policy(m.replace(gamma=1.0, horizon=5)),
         "lagrangian_optimal_policy needs gamma < 1; use a discounted model"),
    ],
)
def test_argument_messages(call, message):
    m = garnet(3, 2, 2, n_constraints=1, seed=0)
    ball = l1_ball(m, 0.1)
    with pytest.raises(ModelError, match=re.escape(message)):
        call(m, ball)


def test_golden_section_finds_the_minimum_of_a_unimodal_function():
    seen = {}

    def f(t):
        seen[t] = abs(t - 0.3) + (t - 0.3) ** 2
        return seen[t]

    gt._golden(f, 0.0, 1.0, 40)
    assert min(seen, key=seen.get) == pytest.approx(0.3, abs=1e-7)
    assert len(seen) == 42  # two starting points and one new point per step


def test_bracket_without_constraints_is_the_robust_optimum():
    from rcmdp_exact.robust import robust_value_iteration

    m = garnet(5, 3, 3, n_constraints=0, seed=1, gamma=0.9)
    ball = l1_ball(m, 0.3, support="all")
    res = rcmdp_bracket(m, ball, progress=False)
    ref = robust_value_iteration(m, ball, progress=False)
    assert "constraint" not in res.variants
    assert res.lower == pytest.approx(ref.value, abs=1e-9)
    assert res.upper == pytest.approx(ref.value, abs=1e-9)
