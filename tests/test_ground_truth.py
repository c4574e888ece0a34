"""Ground truth, part 1: the occupancy-measure LP and its finite-horizon variant.

Every expected number is derived independently of the code under test: value iteration
and linear solves written here, QuantEcon's DiscreteDP, scipy's linprog on the dual LP
and its scalar minimiser on the convex Lagrangian dual, backward induction and
hand-computed closed forms.  The helpers and strategies at the top are shared with
``test_ground_truth_bracket.py`` and ``test_ground_truth_report.py``.
"""

import warnings

import numpy as np
import pytest
import quantecon as qe
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize_scalar

import rcmdp_exact.ground_truth.lp as lp_module
import rcmdp_exact.testing as T
from rcmdp_exact import InputError, OptionError, TabularCMDP
from rcmdp_exact.core.evaluation import (
    evaluate_finite_horizon,
    evaluate_time_dependent,
    rescaled_budget,
)
from rcmdp_exact.core.mdp import policy_iteration
from rcmdp_exact.domains import garnet
from rcmdp_exact.ground_truth import (
    infeasible_message,
    solve_cmdp,
    solve_cmdp_finite_horizon,
)


# --------------------------------------------------------------------------- helpers
def scaled(n: int):
    """``n`` examples under the ci and dev profiles, 10n or more under ``thorough``."""
    return settings(max_examples=max(n, n * settings.default.max_examples // 60))


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


def cmdps(max_states=6, max_constraints=2):
    """A Garnet CMDP whose budgets are feasible with slack and often binding.

    The public strategies of rcmdp_exact.testing: a Garnet (S in 2..max_states, A in
    2..3, K in 1..max_constraints, gamma in {0.5, 0.8, 0.9}) and budgets between the
    least cost of each constraint and the cost of the unconstrained optimum
    (``binding_budgets``), plus a slack of 5% of max|c| / (1 - gamma): the least-cost
    policy meets them strictly, so the LP is feasible and Slater's condition holds.
    """
    def with_budgets(m):
        slack = 0.05 * np.abs(m.c).max() / (1 - m.gamma)
        return T.binding_budgets(m, slack=slack).map(lambda d: m.replace(d=d))

    return T.garnets(n_states=(2, max_states), n_actions=(2, 3),
                     n_constraints=(1, max_constraints),
                     gamma=(0.5, 0.8, 0.9)).flatmap(with_budgets)


def constant_cost_model(d):
    """Every step costs 1, so every policy's discounted cost is 1 / (1 - 0.9) = 10."""
    m = garnet(4, 2, 2, n_constraints=1, seed=5, gamma=0.9)
    return m.replace(C=np.ones((4, 2, 1)), d=[d])


# --------------------------------------------------------------------------- the LP
@scaled(40)
@given(cmdps())
def test_lp_policy_is_feasible_and_matches_the_lp(model):
    res = solve_cmdp(model)
    assert res.success and res.status == "optimal", res.message
    v, C = policy_values(model.P, model.r, model.c, model.gamma, res.policy)
    tol = 1e-6  # absolute, on values of size up to 1 / (1 - gamma) = 10
    assert abs(model.p0 @ v - res.lp_value) <= tol
    np.testing.assert_allclose(model.p0 @ C, res.lp_costs, atol=tol)
    assert abs(model.p0 @ v - res.value) <= 1e-9 * scale(model)
    assert np.all(model.p0 @ C <= model.d + tol)
    assert np.all(res.lam >= 0)
    assert "cost" not in res and "multipliers" not in res  # one name per field


@scaled(40)
@given(cmdps())
def test_lp_optimum_equals_the_lagrangian_dual_optimum(model):
    """Strong duality: min_{lam >= 0} D(lam) = LP optimum, D by value iteration."""
    res = solve_cmdp(model)
    assert res.success, res.message
    tol = 1e-6
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    # the dual LP min p0.v + mu.d s.t. v(s) >= r(s,a) - mu.c(s,a) + gamma P(s,a).v,
    # mu >= 0, written here and solved by scipy's linprog
    A_ub = np.hstack([model.gamma * model.P.reshape(S * A, S)
                      - np.repeat(np.eye(S), A, axis=0), -model.c.reshape(S * A, K)])
    dual = linprog(np.concatenate([model.p0, model.d]), A_ub=A_ub, b_ub=-model.r.ravel(),
                   bounds=[(None, None)] * S + [(0, None)] * K, method="highs")
    assert dual.status == 0
    assert abs(dual.fun - res.value) <= tol
    _, C = policy_values(model.P, model.r, model.c, model.gamma, res.policy)
    assert np.all(model.p0 @ C <= model.d + tol)
    assert abs(dual_function(model, res.lam) - res.value) <= tol
    rng = np.random.default_rng(0)
    for lam in rng.exponential(2.0, size=(5, model.n_constraints)):
        assert dual_function(model, lam) >= res.value - tol
    if model.n_constraints == 1:
        v_span = (model.r.max() - model.r.min()) / (1 - model.gamma)
        slack = 0.05 * np.abs(model.c).max() / (1 - model.gamma)
        opt = minimize_scalar(lambda t: dual_function(model, t), bounds=(0.0, v_span / slack + 1),
                              method="bounded", options={"xatol": 1e-12, "maxiter": 500})
        assert abs(opt.fun - res.value) <= tol


@scaled(30)
@given(cmdps())
def test_slack_budget_gives_the_value_iteration_optimum(model):
    big = np.abs(model.c).max() / (1 - model.gamma) + 1.0
    m = model.replace(d=np.full(model.n_constraints, big))
    res = solve_cmdp(m)
    v, _ = vi(m.P, m.r, m.gamma)
    assert abs(res.value - m.p0 @ v) <= 1e-6 * scale(m)
    np.testing.assert_allclose(res.lam, 0.0, atol=1e-9)
    ddp = qe.markov.DiscreteDP(np.array(m.r), np.array(m.P), m.gamma)
    sol = ddp.solve(method="policy_iteration")
    assert abs(res.value - m.p0 @ sol.v) <= 1e-6 * scale(m)
    free = solve_cmdp(m.replace(C=None, d=None, cost_labels=None))
    assert free.success and free.lam.shape == (0,)
    assert abs(free.value - m.p0 @ v) <= 1e-6 * scale(m)


@scaled(20)
@given(cmdps(max_constraints=1), st.floats(0.0, 1.0))
def test_budgets_keyword_equals_a_model_with_those_budgets(model, frac):
    """solve_cmdp(model, budgets=b) solves the CMDP of model.replace(d=b)."""
    b = model.d * (0.8 + 0.4 * frac)
    a = solve_cmdp(model, budgets=b)
    ref = solve_cmdp(model.replace(d=b))
    assert a.status == ref.status
    if ref.success:
        assert a.value == pytest.approx(ref.value, abs=1e-9 * scale(model))


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
        assert res.lam[0] == pytest.approx(mu, abs=1e-9)


def test_an_lp_too_large_to_polish_keeps_the_solvers_vertex():
    """Above POLISH_MAX_PAIRS pairs the vertex is not polished (dense solves); the
    solver's policy and duals are returned, optimal by strong duality against value
    iteration and within the budget to the solver's tolerance."""
    S, A = lp_module.POLISH_MAX_PAIRS // 4 + 1, 4
    m = garnet(S, A, 3, n_constraints=1, seed=0, gamma=0.9)
    uniform = np.full((S, A), 1.0 / A)
    _, C = policy_values(m.P, m.r, m.c, m.gamma, uniform)
    m = m.replace(d=0.9 * (m.p0 @ C))  # binds: the uniform policy is over it
    assert lp_module.polish_vertex(None, m.c.reshape(-1, 1), m.r.ravel(), m.p0, m.d,
                                   np.ones(S * A), np.zeros(1)) == (None, None)
    res = solve_cmdp(m)
    assert res.status == "optimal", res.message
    v, C = policy_values(m.P, m.r, m.c, m.gamma, res.policy)
    assert np.all(m.p0 @ C <= m.d + 1e-8 * scale(m))
    assert res.lam[0] > 0.0
    assert abs(dual_function(m, res.lam) - res.value) <= 1e-7 * scale(m)
    assert abs(m.p0 @ v - res.value) <= 1e-8 * scale(m)


def test_clarabel_agrees_with_highs():
    m = garnet(6, 3, 3, n_constraints=2, seed=3, gamma=0.9).replace(d=[3.0, 3.5])
    a = solve_cmdp(m, solver="HIGHS")
    b = solve_cmdp(m, solver="clarabel")  # names are case-insensitive
    assert a.success and b.success and b.solver == "CLARABEL"
    assert a.value == pytest.approx(b.value, abs=1e-6)
    np.testing.assert_allclose(a.lam, b.lam, atol=1e-5)


def test_the_default_solver_does_not_import_cvxpy():
    """HiGHS is called through highspy: the default path of solve_cmdp and of its
    finite-horizon variant (and of an infeasible CMDP's least-overshoot LPs) never
    imports cvxpy, whose import takes seconds; CLARABEL still goes through cvxpy."""
    import subprocess
    import sys

    code = ("import sys, rcmdp_exact as rx\n"
            "m = rx.domains.safe_navigation_1()\n"
            "a = rx.solve_cmdp(m)\n"
            "b = rx.solve_cmdp_finite_horizon(m)\n"
            "c = rx.solve_cmdp(m.replace(d=[-1.0]))\n"
            "print(a.status, b.status, c.status, 'cvxpy' in sys.modules)\n"
            "rx.solve_cmdp(m, solver='CLARABEL')\n"
            "print('cvxpy' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["optimal", "optimal", "infeasible", "False", "True"]


def test_highspy_and_cvxpy_paths_give_the_same_optimum():
    """The same LPs through highspy and through cvxpy's HiGHS: the same statuses,
    optima, multipliers and least costs (the two called on the same data, the value
    LP with a loose and a tight budget)."""
    m = garnet(8, 3, 3, n_constraints=2, seed=4, gamma=0.9)
    for model in (m, m.replace(d=0.3 * np.asarray(m.d))):
        _keep, M, r, c, b = lp_module._lp_data(model)
        for objective, k in (("value", None), ("min_cost", 0), ("min_cost", 1),
                             ("min_overshoot", None), ("max_slack", None)):
            a = lp_module._solve_highs(M, r, c, b, model.d, objective, k)
            z = lp_module._solve_cvxpy(M, r, c, b, model.d, "HIGHS", objective, k)
            assert a.status == z.status, (objective, a.status, z.status)
            if a.status == "optimal":
                assert a.value == pytest.approx(z.value, abs=1e-8)
                np.testing.assert_allclose(a.duals, z.duals, atol=1e-8)


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
    _, q = vi(m.P, m.r - m.c @ res.lam, m.gamma)
    np.testing.assert_array_equal(res.policy[2], np.eye(2)[q[2].argmax()])
    uni = solve_cmdp(m, unvisited="uniform")
    np.testing.assert_allclose(uni.policy[2], [0.5, 0.5])
    assert uni.value == pytest.approx(res.value, abs=1e-12)


def test_policy_iteration_matches_value_iteration():
    m = garnet(7, 3, 4, n_constraints=1, seed=11, gamma=0.95)
    sol = policy_iteration(m, [0.7])
    v, q = vi(m.P, m.r - 0.7 * m.c[:, :, 0], m.gamma)
    assert sol.converged
    np.testing.assert_allclose(sol.v, v, atol=1e-9)
    np.testing.assert_array_equal(sol.policy, q.argmax(axis=1))


# --------------------------------------------------------------------------- infeasible
def test_infeasible_budget_gives_status_and_the_numbers_in_the_message():
    res = solve_cmdp(constant_cost_model(5.0))
    assert res.status == "infeasible" and not res.success
    assert res.min_costs[0] == pytest.approx(10.0, abs=1e-8)
    assert res.costs[0] == pytest.approx(10.0, abs=1e-8)
    # key facts: the constraint, the smallest cost, the budget and what to raise
    for fact in ("constraint 0", "is 10 ", "budget d[0] = 5", "raise d[0] to at least 10"):
        assert fact in res.message


def test_jointly_infeasible_budgets_message():
    """Cost 0 = action 0, cost 1 = action 1: each can be zero alone, not both."""
    m = garnet(3, 2, 2, n_constraints=2, seed=1, gamma=0.9)
    C = np.zeros((3, 2, 2))
    C[:, 0, 0] = 1.0
    C[:, 1, 1] = 1.0
    res = solve_cmdp(m.replace(C=C, d=[2.0, 2.0]))
    assert res.status == "infeasible"
    assert "each budget can be met on its own" in res.message
    assert "[0, 0] <= budgets [2, 2]" in res.message
    # the least-overshoot policy splits the 10 units of cost: total overshoot 10 - 4 = 6
    assert np.maximum(res.costs - 2.0, 0).sum() == pytest.approx(6.0, abs=1e-7)


@scaled(25)
@given(cmdps(max_constraints=1), st.floats(0.01, 0.5))
def test_infeasible_budget_reports_the_smallest_cost(model, below):
    v, _ = vi(model.P, -model.c[:, :, 0], model.gamma)
    cmin = -float(model.p0 @ v)
    d = cmin - below * max(cmin, 1e-3)
    res = solve_cmdp(model.replace(d=[d]))
    assert res.status == "infeasible"
    assert res.min_costs[0] == pytest.approx(cmin, abs=1e-7 * scale(model))
    assert f"is {res.min_costs[0]:.6g} > budget d[0] = {d:.6g}" in res.message
    assert res.message == infeasible_message(model, res.min_costs, [d])


def test_solver_trouble_is_a_status_not_an_exception(monkeypatch):
    m = garnet(4, 2, 2, n_constraints=1, seed=2, gamma=0.9)
    real = lp_module.solve_occupancy_lp

    def broken(*args, **kw):
        out = real(*args, **kw)
        out.update(status="solver_error", error="boom")
        return out

    monkeypatch.setattr(lp_module, "solve_occupancy_lp", broken)
    res = solve_cmdp(m)
    assert res.status == "solver_error" and not res.success
    assert "HIGHS" in res.message and "boom" in res.message


def test_optimal_inaccurate_is_a_warning_not_a_success(monkeypatch):
    m = garnet(4, 2, 2, n_constraints=1, seed=2, gamma=0.9)
    real = lp_module.solve_occupancy_lp

    def inaccurate(*args, **kw):
        out = real(*args, **kw)
        out.status = "optimal_inaccurate"
        return out

    monkeypatch.setattr(lp_module, "solve_occupancy_lp", inaccurate)
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
        assert res.message.startswith(f"{how} of the LP policy disagrees with the LP")
        assert repr(res.value) in res.message and repr(res.lp_value) in res.message
        assert res.value == pytest.approx(res.lp_value, abs=1e-9)  # only rounding


@pytest.mark.parametrize(
    ("kwargs", "error", "facts"),
    [
        ({"solver": "GLPK"}, OptionError, ("solver", "'GLPK'", "HIGHS", "CLARABEL")),
        ({"unvisited": "random"}, OptionError, ("unvisited", "'random'", "uniform")),
        ({"check_tol": 0.0}, InputError, ("check_tol", "0.0")),
        ({"budgets": [1.0, 2.0]}, InputError, ("budgets", "(2,)", "(1,)")),
    ],
)
def test_bad_arguments(kwargs, error, facts):
    m = garnet(3, 2, 2, seed=0)
    with pytest.raises(error) as exc:
        solve_cmdp(m, **kwargs)
    for fact in facts:
        assert fact in str(exc.value)


def test_undiscounted_without_terminal_states_is_refused():
    m = garnet(3, 2, 2, seed=0, gamma=1.0)
    with pytest.raises(InputError) as exc:
        solve_cmdp(m)
    assert "terminal states" in str(exc.value) and "gamma = 1" in str(exc.value)


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
@scaled(25)
@given(cmdps(max_states=5), st.integers(1, 8))
def test_finite_horizon_lp_equals_backward_induction_when_unconstrained(model, T):
    big = np.abs(model.c).max() * T + 1.0
    res = solve_cmdp_finite_horizon(model, T, budget=np.full(model.n_constraints, big))
    assert res.success, res.message
    assert res.policy.shape == (T, model.n_states, model.n_actions)
    assert res.value == pytest.approx(backward_induction(model, model.r, T), abs=1e-7 * T)


@scaled(25)
@given(cmdps(max_states=5, max_constraints=1), st.integers(2, 8), st.floats(0.1, 0.9))
def test_finite_horizon_lp_with_binding_budget(model, T, frac):
    lo = -backward_induction(model, -model.c[:, :, 0], T)  # smallest T-step cost
    hi = backward_induction(model, model.c[:, :, 0], T)
    budget = np.array([lo + frac * (hi - lo) + 1e-3])
    res = solve_cmdp_finite_horizon(model, T, budget=budget)
    assert res.success, res.message
    ev = evaluate_time_dependent(model, res.policy)
    assert ev.value == pytest.approx(res.lp_value, abs=1e-7 * T)
    assert ev.costs[0] <= budget[0] + 1e-7 * T
    mu = res.lam[0]
    dual = backward_induction(model, model.r - mu * model.c[:, :, 0], T) + mu * budget[0]
    assert dual == pytest.approx(res.value, abs=1e-6 * T)


def test_finite_horizon_default_budget_is_the_rescaled_one():
    m = garnet(4, 2, 2, seed=4, gamma=0.99).replace(horizon=6)
    res = solve_cmdp_finite_horizon(m)
    np.testing.assert_allclose(res.budget, rescaled_budget(m.d, 0.99, 6))
    same = solve_cmdp_finite_horizon(m, budget="model")
    np.testing.assert_allclose(same.budget, m.d)


def test_evaluate_time_dependent_matches_a_stationary_policy():
    m = garnet(5, 3, 3, seed=8, gamma=0.9)
    pi = np.random.default_rng(0).dirichlet(np.ones(3), size=5)
    a = evaluate_time_dependent(m, np.broadcast_to(pi, (7, 5, 3)))
    b = evaluate_finite_horizon(m, pi, 7)
    assert a.value == pytest.approx(b.value, abs=1e-12)
    np.testing.assert_allclose(a.costs, b.costs, atol=1e-12)


def test_finite_horizon_infeasible():
    m = constant_cost_model(5.0)
    res = solve_cmdp_finite_horizon(m, 4, budget=[2.0])
    assert res.status == "infeasible"
    for fact in ("T-step cost of constraint 0 is 4", "budget d[0] = 2", "at least 4"):
        assert fact in res.message


@pytest.mark.parametrize(
    ("call", "error", "facts"),
    [
        (lambda m: solve_cmdp_finite_horizon(m, 3, discount="a"), InputError,
         ("discount", "'a'")),
        (lambda m: solve_cmdp_finite_horizon(m, 3, budget=[np.nan]), InputError,
         ("budget", "nan")),
        (lambda m: solve_cmdp_finite_horizon(m, 3, budget=[1.0, 2.0]), InputError,
         ("budget", "(2,)")),
        (lambda m: solve_cmdp_finite_horizon(m, 3, budget="paper"), OptionError,
         ("budget", "'paper'", "rescaled")),
        (lambda m: solve_cmdp_finite_horizon(m, 0), InputError, ("horizon", "0")),
        (lambda m: solve_cmdp_finite_horizon(m), InputError, ("horizon", "None")),
        (lambda m: evaluate_time_dependent(m, np.ones((3, 2))), InputError,
         ("policy", "(3, 2)")),
        (lambda m: evaluate_time_dependent(m, np.ones((2, 3, 2))), InputError,
         ("policy[0]", "sums to 2")),
        (lambda m: infeasible_message(m, [1.0, 2.0]), InputError, ("min_costs", "(2,)")),
        (lambda m: policy_iteration(m.replace(gamma=1.0, horizon=5)), InputError,
         ("gamma", "1.0", "discounted")),
    ],
)
def test_argument_errors_name_the_argument_and_value(call, error, facts):
    m = garnet(3, 2, 2, n_constraints=1, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the error comes first, not a warning
        with pytest.raises(error) as exc:
            call(m)
    for fact in facts:
        assert fact in str(exc.value), (fact, str(exc.value))
