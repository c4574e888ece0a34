r"""Ground truth: the exact CMDP optimum and a certified bracket for the RCMDP optimum.

CMDP optimum: the occupancy-measure linear program (Altman, 1999)
=================================================================
For a discounted CMDP (gamma < 1) the discounted state-action occupancy of a policy
:math:`\pi` from :math:`p_0` is :math:`x(s, a) = \sum_t \gamma^t \Pr(s_t = s, a_t = a)`.
The occupancies of all stationary policies form the polytope

.. math::

    \sum_a x(s', a) - \gamma \sum_{s, a} P(s' \mid s, a)\, x(s, a) = p_0(s')
    \quad \forall s', \qquad x \ge 0,

and :math:`V = r^\top x`, :math:`C_k = c_k^\top x` are linear in :math:`x`, so the
CMDP :math:`\max_\pi V \;\text{s.t.}\; C_k \le d_k` (the paper's Eq. "RCMDP
objective" with a single known model) is the primal LP

.. math::

    \max_{x \ge 0}\; r^\top x \quad \text{s.t.}\quad
    (E - \gamma P^\top) x = p_0,\qquad c_k^\top x \le d_k\; (k = 1..K).

Its dual is

.. math::

    \min_{v,\; \mu \ge 0}\; p_0^\top v + \mu^\top d \quad\text{s.t.}\quad
    v(s) \ge r(s, a) - \mu^\top c(s, a) + \gamma \sum_{s'} P(s' \mid s, a) v(s')
    \;\; \forall (s, a),

i.e. :math:`\min_{\mu \ge 0} \max_\pi L(\pi, \mu)` with the paper's Lagrangian
:math:`L = V - \mu^\top (C - d)` (Eq. "Lagrange").  **Sign convention**: the returned
``multipliers`` are :math:`\mu_k \ge 0`, the duals of the cost rows
:math:`c_k^\top x \le d_k`; they are the :math:`\lambda` of the paper's Lagrangian and
the sensitivity :math:`\partial V^* / \partial d_k` of the optimum to the budget.

The policy is read from the occupancy, :math:`\pi(a \mid s) = x(s, a) / \sum_b x(s, b)`.
States the optimal occupancy never visits (:math:`\sum_a x(s, a) \le` ``1e-10``) get a
documented default: ``unvisited="lagrangian"`` (default) takes the greedy action of the
optimal Q-function of the scalarised reward :math:`r - \mu^\top c` (the action the
Lagrangian-optimal agent would take there; it changes nothing from :math:`p_0`, but
matters when the policy is tested on perturbed dynamics), ``"uniform"`` the uniform
distribution.  Terminal states earn nothing (the model's ``r`` and ``c`` are zero there).
With gamma = 1 the occupancy is the expected number of visits before absorption and the
LP keeps only non-terminal states (every policy it returns reaches a terminal state).

Solver: HiGHS (through cvxpy) by default.  It is an LP solver (dual simplex with
presolve) that returns a basic solution, so the optimal policy randomises in at most K
states, and exact duals; CLARABEL (interior point) is accepted as ``solver="CLARABEL"``.
The answer is re-checked: the policy is evaluated exactly by
:func:`rcmdp_exact.evaluation.evaluate` and its value and costs must match the LP's
objective and cost rows within ``check_tol`` times the scale :math:`\max|r| / (1-\gamma)`.
``OPTIMAL_INACCURATE`` from the solver gives a :class:`RuntimeWarning` and
``success=False``.  An infeasible budget gives ``status="infeasible"`` together with the
smallest achievable cost of each constraint (one min-cost LP per constraint), the
policy that minimises the total overshoot :math:`\sum_k \max(0, C_k - d_k)`, and a
message saying which budget to raise; solver failures never escape as exceptions.

Finite horizon, undiscounted (the paper's test metric)
======================================================
With time-dependent occupancies :math:`x_t(s, a) = \Pr(s_t = s, a_t = a)`,
:math:`t = 0..T-1`:

.. math::

    \max\; \sum_t \delta^t r^\top x_t \quad\text{s.t.}\quad
    \sum_a x_0(\cdot, a) = p_0,\;\;
    \sum_a x_{t+1}(s', a) = \sum_{s,a} P(s' \mid s, a) x_t(s, a),\;\;
    \sum_t \delta^t c_k^\top x_t \le b_k,\;\; x \ge 0,

with :math:`\delta = 1` for the test metric and the budget :math:`b` rescaled to
:math:`d\,T/\sum_{i<T}\gamma^i` by default.  The optimal policy is time dependent,
:math:`\pi_t(a \mid s) = x_t(s, a) / \sum_b x_t(s, b)`, shape (T, S, A); it is re-checked
by backward induction (:func:`evaluate_time_dependent`).

RCMDP bracket
=============
See :func:`rcmdp_bracket`: weak duality makes every robust Lagrangian value
:math:`g(\lambda) = \max_\pi \min_P [V - \lambda^\top (C - d)]` an upper bound on the
RCMDP optimum :math:`\max_\pi \min_P V \;\text{s.t.}\; \max_P C_k \le d_k`, and the
worst-case value of any robust-feasible policy is a lower bound.  Both are certified:
the residual :math:`\|T W - W\|_\infty / (1 - \gamma)` of one more robust Bellman
step is added to (subtracted from) every robust value iteration and every worst-case
evaluation, so a fixed point stopped at a tolerance never overstates a bound.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp

from ._result import Result
from .evaluation import evaluate, penalised_return, rescaled_budget
from .model import ModelError, TabularCMDP, check_model, check_policy

__all__ = [
    "DEFAULT_LP_SOLVER",
    "VARIANTS",
    "evaluate_time_dependent",
    "infeasible_message",
    "lagrangian_optimal_policy",
    "rcmdp_bracket",
    "rcmdp_variant",
    "solve_cmdp",
    "solve_cmdp_finite_horizon",
]

#: The LP solver used through cvxpy unless ``solver=`` says otherwise.
DEFAULT_LP_SOLVER = "HIGHS"
_SOLVERS = ("HIGHS", "CLARABEL")
#: Tolerances passed to the solvers (tighter than their defaults, 1e-7 and 1e-8, so
#: that the optimum and the duals are accurate to about 1e-9).
_SOLVER_OPTIONS = {
    "HIGHS": {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
}
#: Occupancy below which a state counts as never visited.
UNVISITED_TOL = 1e-10


# =========================================================================== helpers
def _check_solver(solver: str) -> str:
    name = str(solver).upper()
    if name not in _SOLVERS:
        raise ModelError(
            f"solver must be one of {_SOLVERS}, got {solver!r}; HIGHS (simplex, exact "
            f"vertices and duals) is the default"
        )
    import cvxpy as cp

    if name not in cp.installed_solvers():
        raise ModelError(
            f"the LP solver {name} is not installed in cvxpy (installed: "
            f"{cp.installed_solvers()}); install it or pass solver=\"CLARABEL\""
        )
    return name


def _check_unvisited(unvisited: str) -> str:
    if unvisited not in ("lagrangian", "uniform"):
        raise ModelError(
            f"unvisited must be 'lagrangian' or 'uniform', got {unvisited!r}"
        )
    return unvisited


def _check_check_tol(check_tol) -> None:
    if isinstance(check_tol, bool) or not isinstance(check_tol, int | float) \
            or not 0.0 < check_tol < np.inf:
        raise ModelError(f"check_tol must be a positive number, got {check_tol!r}")


def _scale(model: TabularCMDP, horizon: int | None = None) -> float:
    """A magnitude of the values: max |r|, |c| times the effective horizon (>= 1)."""
    mag = 0.0
    if model.r.size:
        mag = float(np.abs(model.r).max())
    if model.n_constraints:
        mag = max(mag, float(np.abs(model.c).max()))
    if horizon is not None:
        eff = float(horizon)
    elif model.gamma < 1.0:
        eff = 1.0 / (1.0 - model.gamma)
    else:
        eff = float(model.n_states)
    return max(1.0, mag * eff)


def _cost_name(model: TabularCMDP, k: int) -> str:
    lab = model.cost_labels
    return f"{k}" if lab is None else f"{k} ({lab[k]})"


def _fmt(x: float) -> str:
    return f"{float(x):.6g}"


def infeasible_message(model: TabularCMDP, min_costs, budgets=None,
                       what: str = "discounted") -> str:
    """The message of an infeasible CMDP, naming each budget that cannot be met.

    Parameters
    ----------
    model : TabularCMDP
    min_costs : array (K,)
        The smallest achievable cost of each constraint, each minimised on its own.
    budgets : array (K,), optional
        The budgets (default ``model.d``).
    what : str
        The kind of cost ("discounted" or "T-step").

    Returns
    -------
    str
        ``"infeasible: no policy meets the budgets; the smallest achievable <what> cost
        of constraint k is m_k > budget d[k] = d_k; raise d[k] to at least m_k or change
        the costs"`` (one clause per violated constraint, joined by ``"; "``), or, when
        each budget can be met alone but not all at once, a message saying so.  Numbers
        are printed with 6 significant digits.
    """
    K = model.n_constraints
    d = model.d if budgets is None else np.asarray(budgets, dtype=np.float64).reshape(-1)
    m = np.asarray(min_costs, dtype=np.float64).reshape(-1)
    if m.shape != (K,) or d.shape != (K,):
        raise ModelError(
            f"min_costs and budgets must have one entry per constraint (K={K}), got "
            f"{m.size} and {d.size}"
        )
    bad = [k for k in range(d.size) if m[k] > d[k]]
    if bad:
        parts = [
            f"the smallest achievable {what} cost of constraint {_cost_name(model, k)} is "
            f"{_fmt(m[k])} > budget d[{k}] = {_fmt(d[k])}; raise d[{k}] to at least "
            f"{_fmt(m[k])} or change the costs"
            for k in bad
        ]
        return "infeasible: no policy meets the budgets; " + "; ".join(parts)
    costs = ", ".join(f"{_fmt(x)}" for x in m)
    budg = ", ".join(f"{_fmt(x)}" for x in d)
    return (
        f"infeasible: each budget can be met on its own (smallest {what} costs [{costs}] "
        f"<= budgets [{budg}]) but not all at once; the returned policy minimises the "
        f"total overshoot; relax one of the budgets"
    )


def _solve_lp(prob, solver: str):
    """Solve a cvxpy problem; return (status string, error text or None)."""
    import cvxpy as cp

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=solver, **_SOLVER_OPTIONS[solver])
    except cp.error.SolverError as exc:
        return "solver_error", str(exc)
    except (ValueError, ArithmeticError) as exc:  # numerical trouble inside the solver
        return "solver_error", f"{type(exc).__name__}: {exc}"
    return prob.status, None


_CVX_STATUS = {
    "optimal": "optimal",
    "optimal_inaccurate": "optimal_inaccurate",
    "infeasible": "infeasible",
    "infeasible_inaccurate": "infeasible",
    "unbounded": "unbounded",
    "unbounded_inaccurate": "unbounded",
    "infeasible_or_unbounded": "infeasible",
    "solver_error": "solver_error",
}


# ======================================================================= exact MDP
def lagrangian_optimal_policy(model: TabularCMDP, lam=None, max_iter: int = 10_000) -> Result:
    r"""Optimal deterministic policy of the scalarised reward :math:`r - \lambda^\top c`.

    Exact policy iteration (Howard): evaluate the current policy exactly
    (:func:`rcmdp_exact.evaluation.evaluate`, one sparse LU for
    :math:`(I - \gamma P_\pi) [V, C] = [r_\pi, c_\pi]`, and its Lagrangian Q-function
    :math:`Q = r - \lambda^\top c + \gamma P (V - \lambda^\top C)`), improve greedily,
    keeping the current action on ties (within ``1e-12`` times the value scale) so that
    the iteration stops.  Needs gamma < 1.

    Returns
    -------
    Result
        ``policy`` (S,) int, ``v`` (S,), ``q`` (S, A), ``value`` = p0.v, ``iterations``,
        ``converged``.
    """
    check_model(model)
    if model.gamma >= 1.0:
        raise ModelError(
            "lagrangian_optimal_policy needs gamma < 1; use a discounted model"
        )
    S = model.n_states
    lam = model.check_multipliers(lam)
    pi = np.argmax(model.scalarised_reward(lam), axis=1)
    tol = 1e-12 * _scale(model)
    rows = np.arange(S)
    converged = False
    it = 0
    while True:
        it += 1
        ev = evaluate(model, pi, lam)
        q = ev.q_lagrangian
        best = q.max(axis=1)
        keep = q[rows, pi] >= best - tol
        if keep.all():
            converged = True
            break
        if it >= max_iter:
            break
        pi = np.where(keep, pi, np.argmax(q, axis=1))
    return Result(policy=pi, v=ev.lagrangian, q=q, value=float(model.p0 @ ev.lagrangian),
                  iterations=it, converged=converged)


def _greedy_one_hot(q: np.ndarray) -> np.ndarray:
    """One-hot argmax over the last axis (ties to the lowest index), shape of ``q``."""
    out = np.zeros_like(q, dtype=np.float64)
    idx = np.argmax(q, axis=-1)
    np.put_along_axis(out, idx[..., None], 1.0, axis=-1)
    return out


# ============================================================ discounted occupancy LP
def _lp_data(model: TabularCMDP):
    """Sparse flow matrix, reward and cost rows of the occupancy LP."""
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    g = model.gamma
    if g < 1.0:
        keep = np.arange(S)
    else:
        keep = np.flatnonzero(~model.terminal)
        if keep.size == S:
            raise ModelError(
                "solve_cmdp with gamma = 1 needs terminal states (the occupancy is the "
                "number of visits before absorption); use gamma < 1 or mark terminal "
                "states"
            )
    n = keep.size
    rows = (keep[:, None] * A + np.arange(A)[None, :]).ravel()
    Pk = sp.csr_array(model.P_sparse[rows][:, keep])  # (n*A, n)
    E = sp.kron(sp.identity(n, format="csr"), np.ones((1, A)), format="csr")
    M = sp.csr_array(E - g * Pk.T)
    r = model.r[keep].ravel()
    c = model.c[keep].reshape(n * A, K)
    b = model.p0[keep]
    return keep, M, r, c, b


def _policy_from_occupancy(x: np.ndarray, default: np.ndarray):
    """pi = x / sum_a x on visited states, ``default`` elsewhere; returns (pi, visited)."""
    x = np.maximum(x, 0.0)
    tot = x.sum(axis=-1)
    visited = tot > UNVISITED_TOL
    pi = np.array(default, dtype=np.float64, copy=True)
    pi[visited] = x[visited] / tot[visited][..., None]
    return pi, visited


def _build_occupancy_problem(M, r, c, b, d, objective: str, k: int | None = None):
    import cvxpy as cp

    x = cp.Variable(r.size, nonneg=True)
    cons = [M @ x == b]
    cost_con = None
    if objective == "value":
        if c.shape[1]:
            cost_con = c.T @ x <= d
            cons.append(cost_con)
        prob = cp.Problem(cp.Maximize(r @ x), cons)
    elif objective == "min_cost":
        prob = cp.Problem(cp.Minimize(c[:, k] @ x), cons)
    else:  # "min_overshoot"
        s = cp.Variable(c.shape[1], nonneg=True)
        cons.append(c.T @ x - d <= s)
        prob = cp.Problem(cp.Minimize(cp.sum(s)), cons)
    return prob, x, cost_con


def solve_cmdp(model: TabularCMDP, *, solver: str = DEFAULT_LP_SOLVER,
               unvisited: str = "lagrangian", check_tol: float = 1e-6) -> Result:
    r"""Exact optimum of a discounted CMDP by Altman's occupancy-measure LP.

    Solves :math:`\max_\pi V_\pi(p_0)` s.t. :math:`C_{\pi,k}(p_0) \le d_k` for every
    constraint k (see the module docstring for the primal and dual LPs).

    Parameters
    ----------
    model : TabularCMDP
        gamma < 1, or gamma = 1 with terminal states.
    solver : {"HIGHS", "CLARABEL"}
        The cvxpy solver; HIGHS (default) returns a basic solution and exact duals.
    unvisited : {"lagrangian", "uniform"}
        Policy in states the optimal occupancy never visits: the greedy action of the
        optimal Q of :math:`r - \mu^\top c` (default; uniform when gamma = 1), or uniform.
    check_tol : float
        Relative tolerance of the re-check (times :math:`\max|r|/(1-\gamma)`).

    Returns
    -------
    Result
        ``policy`` (S, A); ``value`` and ``costs`` (K,) of the policy by exact
        evaluation; ``multipliers`` (K,) :math:`\mu \ge 0` (duals of the cost rows,
        :math:`\partial V^*/\partial d_k`); ``success``, ``status`` ("optimal",
        "optimal_inaccurate", "infeasible", "unbounded", "solver_error",
        "check_failed"), ``message``; ``lp_value`` and ``lp_costs`` (the solver's
        numbers), ``occupancy`` (S, A), ``visited`` (S,) bool, ``v`` (S,) and ``c``
        (S, K) of the policy, ``check_error`` (largest re-check discrepancy),
        ``solver``.  When infeasible: ``min_costs`` (K,), and ``policy``, ``value``,
        ``costs`` of the policy minimising the total overshoot.

    Examples
    --------
    >>> import numpy as np
    >>> from rcmdp_exact import TabularCMDP
    >>> P = np.zeros((2, 2, 2)); P[:, 0, 0] = 1; P[:, 1, 1] = 1
    >>> m = TabularCMDP(P, R=[[0.0, 1.0], [0.0, 1.0]], C=[[[0.0], [1.0]]] * 2, d=[5.0],
    ...                 gamma=0.9)
    >>> res = solve_cmdp(m)
    >>> res.status, round(res.value, 6), round(float(res.multipliers[0]), 6)
    ('optimal', 5.0, 1.0)
    """
    check_model(model)
    solver = _check_solver(solver)
    _check_unvisited(unvisited)
    _check_check_tol(check_tol)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    keep, M, r, c, b = _lp_data(model)
    d = np.asarray(model.d, dtype=np.float64)
    prob, x, cost_con = _build_occupancy_problem(M, r, c, b, d, "value")
    raw, err = _solve_lp(prob, solver)
    status = _CVX_STATUS.get(raw, "solver_error")
    base = dict(solver=solver, multipliers=np.zeros(K), lp_value=np.nan,
                lp_costs=np.full(K, np.nan))
    if status == "solver_error":
        return _failed_result(model, base, "solver_error",
                              f"the LP solver {solver} failed ({err or raw}); try "
                              f"solver=\"CLARABEL\" or rescale rewards and costs")
    if status == "unbounded":
        return _failed_result(model, base, "unbounded",
                              "unbounded: the occupancy LP has no finite optimum (with "
                              "gamma = 1 some policy never reaches a terminal state and "
                              "earns positive reward forever); use gamma < 1")
    if status == "infeasible":
        return _infeasible_cmdp(model, keep, M, r, c, b, d, solver, base)

    mult = np.zeros(K)
    if cost_con is not None:
        mult = np.maximum(np.asarray(cost_con.dual_value, dtype=np.float64).reshape(K), 0.0)
    xr = np.maximum(np.asarray(x.value, dtype=np.float64), 0.0)
    xv = np.zeros((S, A))
    xv[keep] = xr.reshape(keep.size, A)
    default = _default_policy(model, mult, unvisited)
    pi, visited = _policy_from_occupancy(xv, default)
    ev = evaluate(model, pi)
    res = Result(policy=pi, multipliers=mult, lp_value=float(prob.value),
                 lp_costs=c.T @ xr, occupancy=xv, visited=visited, v=ev.v, c=ev.c,
                 solver=solver)
    return _recheck(res, ev, d, status, check_tol * _scale(model), "solve_cmdp",
                    "the exact evaluation")


def _recheck(res: Result, ev, budget: np.ndarray, status: str, tol: float, who: str,
             how: str) -> Result:
    """Compare an LP's answer with the exact evaluation ``ev`` of its policy.

    Sets ``value``, ``costs`` (from ``ev``), ``check_error`` = the largest of
    |value - lp_value|, max |costs - lp_costs| and the budget excess, and ``status``,
    ``success``, ``message``: "check_failed" above ``tol``; "optimal_inaccurate" with
    a RuntimeWarning; else success.
    """
    K = budget.size
    costs = np.asarray(ev.cost, dtype=np.float64)
    err_v = abs(ev.value - res.lp_value)
    err_c = float(np.abs(costs - res.lp_costs).max()) if K else 0.0
    over = float(np.max(costs - budget)) if K else 0.0
    check_error = max(err_v, err_c, over, 0.0)
    res.update(value=ev.value, costs=costs, check_error=check_error, success=False,
               status=status)
    if check_error > tol:
        res.status = "check_failed"
        res.message = (
            f"{how} of the LP policy disagrees with the LP: value {ev.value!r} vs "
            f"{res.lp_value!r}, largest cost discrepancy {err_c!r}, largest budget excess "
            f"{over!r} (tolerance {tol:.3g}); try solver=\"CLARABEL\" or rescale rewards "
            f"and costs"
        )
    elif status == "optimal_inaccurate":
        warnings.warn(
            f"{who}: {res.solver} reports OPTIMAL_INACCURATE; the policy passed the "
            f"re-check by {how} (error {check_error:.3g}) but is not certified optimal",
            RuntimeWarning, stacklevel=3,
        )
        res.message = (f"{res.solver} reports an inaccurate optimum; the policy passed "
                       f"the re-check by {how} (error {check_error:.3g})")
    else:
        res.success = True
        res.message = (f"optimal; re-check by {how}: error {check_error:.3g} "
                       f"(tolerance {tol:.3g})")
    return res


def _default_policy(model: TabularCMDP, mult: np.ndarray, unvisited: str) -> np.ndarray:
    S, A = model.n_states, model.n_actions
    if unvisited == "uniform" or model.gamma >= 1.0:
        return np.full((S, A), 1.0 / A)
    sol = lagrangian_optimal_policy(model, mult)
    return check_policy(sol.policy, S, A)


def _failed_result(model: TabularCMDP, base: dict, status: str, message: str) -> Result:
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    return Result(policy=np.full((S, A), 1.0 / A), value=np.nan, costs=np.full(K, np.nan),
                  success=False, status=status, message=message, **base)


def _least_overshoot(M, r, c, b, d, solver):
    """For an infeasible occupancy LP: the smallest achievable value of each cost row
    (one min-cost LP each, nan where it fails) and the occupancy minimising the total
    overshoot sum_k max(0, c_k.x - d_k) (None where that LP fails or K = 0)."""
    K = c.shape[1]
    min_costs = np.full(K, np.nan)
    for k in range(K):
        prob, _, _ = _build_occupancy_problem(M, r, c, b, d, "min_cost", k)
        raw, _ = _solve_lp(prob, solver)
        if _CVX_STATUS.get(raw) in ("optimal", "optimal_inaccurate"):
            min_costs[k] = float(prob.value)
    if K == 0 or np.isnan(min_costs).all():
        return min_costs, None
    prob, x, _ = _build_occupancy_problem(M, r, c, b, d, "min_overshoot")
    raw, _ = _solve_lp(prob, solver)
    if _CVX_STATUS.get(raw) not in ("optimal", "optimal_inaccurate"):
        return min_costs, None
    return min_costs, np.maximum(np.asarray(x.value, dtype=np.float64), 0.0)


def _infeasible_cmdp(model, keep, M, r, c, b, d, solver, base) -> Result:
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    min_costs, x = _least_overshoot(M, r, c, b, d, solver)
    if K == 0 or np.isnan(min_costs).all():
        return _failed_result(
            model, base, "infeasible",
            "infeasible: no policy satisfies the occupancy flow equations (with gamma = "
            "1 no policy reaches a terminal state from p0); use gamma < 1 or add a "
            "reachable terminal state",
        )
    pi = np.full((S, A), 1.0 / A)
    value, costs = np.nan, np.full(K, np.nan)
    if x is not None:
        xv = np.zeros((S, A))
        xv[keep] = x.reshape(keep.size, A)
        pi, _ = _policy_from_occupancy(xv, pi)
        ev = evaluate(model, pi)
        value, costs = ev.value, np.asarray(ev.cost, dtype=np.float64)
    return Result(policy=pi, value=value, costs=costs, success=False, status="infeasible",
                  message=infeasible_message(model, min_costs, d), min_costs=min_costs,
                  **base)


# ============================================================ finite-horizon LP
def evaluate_time_dependent(model: TabularCMDP, policy, discount: float = 1.0) -> Result:
    r"""Exact evaluation of a time-dependent policy :math:`\pi_t`, shape (T, S, A).

    Backward induction: :math:`W_T = 0`,
    :math:`W_t = r_{\pi_t} + \delta P_{\pi_t} W_{t+1}` for the reward and every cost
    (the time-dependent form of :func:`rcmdp_exact.evaluation.evaluate_finite_horizon`,
    with the same test metrics).

    Returns
    -------
    Result
        ``value``, ``cost`` (K,) from p0, ``v`` (S,), ``c`` (S, K) at t = 0, ``horizon``
        T; ``budget`` (K,) = :func:`~rcmdp_exact.evaluation.rescaled_budget` (d,
        model.gamma, T), ``overshoot`` = cost - budget and ``penalised_return`` =
        :func:`~rcmdp_exact.evaluation.penalised_return` (value, cost, budget).
    """
    check_model(model)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    pol = np.asarray(policy, dtype=np.float64)
    if pol.ndim != 3 or pol.shape[0] < 1 or pol.shape[1:] != (S, A):
        raise ModelError(
            f"a time-dependent policy must have shape (T, S, A) with T >= 1, S={S}, A={A}, "
            f"got {pol.shape}"
        )
    disc = _check_discount(discount)
    for t in range(pol.shape[0]):
        check_policy(pol[t], S, A, name=f"policy[{t}]")
    Psp = model.P_sparse
    rc = np.concatenate([model.r[..., None], model.c], axis=2)  # (S, A, 1 + K)
    W = np.zeros((S, 1 + K))
    for t in range(pol.shape[0] - 1, -1, -1):
        nxt = (Psp @ W).reshape(S, A, 1 + K)
        W = np.einsum("sa,saj->sj", pol[t], rc + disc * nxt)
    T = int(pol.shape[0])
    value = float(model.p0 @ W[:, 0])
    cost = model.p0 @ W[:, 1:]
    budget = rescaled_budget(model.d, model.gamma, T)
    return Result(value=value, cost=cost, v=W[:, 0], c=W[:, 1:], horizon=T, budget=budget,
                  overshoot=cost - budget,
                  penalised_return=penalised_return(value, cost, budget))


def _check_discount(discount) -> float:
    if isinstance(discount, bool) or not isinstance(discount, int | float | np.number) \
            or not 0.0 <= float(discount) <= 1.0:
        raise ModelError(f"discount must be a number in [0, 1], got {discount!r}")
    return float(discount)


def _finite_horizon_lagrangian_greedy(model, mult, T, discount) -> np.ndarray:
    """Time-dependent greedy policy (T, S, A) of r - mu.c by backward induction."""
    S, A = model.n_states, model.n_actions
    reward = model.scalarised_reward(mult)
    v = np.zeros(S)
    out = np.zeros((T, S, A))
    Psp = model.P_sparse
    for t in range(T - 1, -1, -1):
        q = reward + discount * (Psp @ v).reshape(S, A)
        out[t] = _greedy_one_hot(q)
        v = q.max(axis=1)
    return out


def solve_cmdp_finite_horizon(model: TabularCMDP, horizon: int | None = None, *,
                              budget="rescaled", discount: float = 1.0,
                              solver: str = DEFAULT_LP_SOLVER,
                              unvisited: str = "lagrangian",
                              check_tol: float = 1e-6) -> Result:
    r"""Exact optimum of the T-step CMDP by the LP over time-dependent occupancies.

    Solves :math:`\max \sum_{t<T} \delta^t r^\top x_t` over the occupancies
    :math:`x_t` of all (time-dependent) policies with
    :math:`\sum_{t<T} \delta^t c_k^\top x_t \le b_k` (module docstring).

    Parameters
    ----------
    model : TabularCMDP
    horizon : int, optional
        T (default ``model.horizon``).
    budget : "rescaled", "model" or array (K,)
        "rescaled" (default): the paper's test budget
        :math:`d\,T/\sum_{i<T}\gamma^i` (:func:`rcmdp_exact.evaluation.rescaled_budget`);
        "model": ``model.d`` unchanged; or explicit budgets.
    discount : float
        Per-step discount :math:`\delta` (1.0: the undiscounted test metric).
    solver, unvisited, check_tol
        As in :func:`solve_cmdp`; the unvisited default is the backward-induction greedy
        policy of :math:`r - \mu^\top c` at the same time step.

    Returns
    -------
    Result
        ``policy`` (T, S, A), ``value``, ``costs`` (K,) by backward induction
        (:func:`evaluate_time_dependent`), ``budget`` (K,), ``multipliers`` (K,),
        ``success``, ``status``, ``message``, ``lp_value``, ``lp_costs``,
        ``occupancy`` (T, S, A), ``check_error``, ``solver``, ``horizon``; when
        infeasible ``min_costs`` (K,).
    """
    check_model(model)
    solver = _check_solver(solver)
    _check_unvisited(unvisited)
    _check_check_tol(check_tol)
    T = model.horizon if horizon is None else horizon
    if T is None or not (isinstance(T, int | np.integer) and T >= 1):
        raise ModelError(
            f"solve_cmdp_finite_horizon needs a horizon T >= 1 (pass horizon=T or build "
            f"the model with horizon=T), got {T!r}"
        )
    T = int(T)
    discount = _check_discount(discount)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    if isinstance(budget, str):
        if budget == "rescaled":
            bud = rescaled_budget(model.d, model.gamma, T) if K else np.zeros(0)
        elif budget == "model":
            bud = np.array(model.d, dtype=np.float64)
        else:
            raise ModelError(
                f"budget must be 'rescaled', 'model' or an array of {K} budgets, got "
                f"{budget!r}"
            )
    else:
        bud = np.asarray(budget, dtype=np.float64).reshape(-1)
        if bud.shape != (K,):
            raise ModelError(f"budget must have one entry per constraint (K={K}), got {bud.size}")
        if not np.isfinite(bud).all():
            raise ModelError(f"budget must be finite, got {bud.tolist()}")
    n = S * A
    E = sp.kron(sp.identity(S, format="csr"), np.ones((1, A)), format="csr")
    sub = sp.diags(np.ones(T - 1), -1, shape=(T, T), format="csr")
    Pt = sp.csr_array(model.P_sparse.T)  # (S, S*A)
    M = sp.csr_array(sp.kron(sp.identity(T, format="csr"), E) - sp.kron(sub, Pt))
    rhs = np.zeros(T * S)
    rhs[:S] = model.p0
    disc = discount ** np.arange(T)
    rr = np.kron(disc, model.r.ravel())
    cc = np.kron(disc[:, None], model.c.reshape(n, K)) if K else np.zeros((T * n, 0))
    prob, x, cost_con = _build_occupancy_problem(M, rr, cc, rhs, bud, "value")
    raw, err = _solve_lp(prob, solver)
    status = _CVX_STATUS.get(raw, "solver_error")
    base = dict(solver=solver, multipliers=np.zeros(K), lp_value=np.nan,
                lp_costs=np.full(K, np.nan), budget=bud, horizon=T)
    if status in ("solver_error", "unbounded"):
        res = _failed_result(model, base, status,
                             f"the LP solver {solver} failed ({err or raw}); try "
                             f"solver=\"CLARABEL\"")
        res.policy = np.full((T, S, A), 1.0 / A)
        return res
    if status == "infeasible":  # only through the budgets: the flows are always feasible
        min_costs, xo = _least_overshoot(M, rr, cc, rhs, bud, solver)
        pi = np.full((T, S, A), 1.0 / A)
        value, costs = np.nan, np.full(K, np.nan)
        if xo is not None:
            pi, _ = _policy_from_occupancy(xo.reshape(T, S, A), pi)
            ev = evaluate_time_dependent(model, pi, discount)
            value, costs = ev.value, ev.cost
        return Result(policy=pi, value=value, costs=costs, success=False,
                      status="infeasible",
                      message=infeasible_message(model, min_costs, bud, what="T-step"),
                      min_costs=min_costs, **base)
    mult = np.zeros(K)
    if cost_con is not None:
        mult = np.maximum(np.asarray(cost_con.dual_value, dtype=np.float64).reshape(K), 0.0)
    xr = np.maximum(np.asarray(x.value, dtype=np.float64), 0.0)
    xv = xr.reshape(T, S, A)
    if unvisited == "uniform":
        default = np.full((T, S, A), 1.0 / A)
    else:
        default = _finite_horizon_lagrangian_greedy(model, mult, T, discount)
    pi, visited = _policy_from_occupancy(xv, default)
    ev = evaluate_time_dependent(model, pi, discount)
    res = Result(policy=pi, multipliers=mult, lp_value=float(prob.value),
                 lp_costs=cc.T @ xr, occupancy=xv, visited=visited, solver=solver,
                 budget=bud, horizon=T)
    return _recheck(res, ev, bud, status, check_tol * _scale(model, T),
                    "solve_cmdp_finite_horizon", "backward induction")


# ================================================================= RCMDP bracket
#: Names of the common-worst-case variants targeted by the paper's RCPG variants.
VARIANTS = ("value", "constraint", "lagrangian")


class _RobustOracle:
    r"""Memoised certified robust numbers of one model and ball.

    Every number it returns is a bound, not an estimate: for a :math:`\gamma`-contraction
    T with fixed point :math:`W^*` and any W, :math:`\|W^* - W\|_\infty \le \|T W -
    W\|_\infty / (1 - \gamma)`, so one more application of the robust Bellman operator
    turns the (converged or not) iterate of robust value iteration into an upper bound
    on the robust optimum, and the exact evaluation of a policy under a kernel of the
    ball into a lower bound on its worst-case value (an upper bound on a worst-case
    cost).
    """

    def __init__(self, model, ball, tol, rvi_method):
        self.model = model
        self.ball = ball
        self.tol = tol
        self.rvi_method = rvi_method
        self.g_cache: dict = {}
        self.eval_cache: dict = {}
        self.cost_eval_cache: dict = {}
        self.d = np.asarray(model.d, dtype=np.float64)
        # constraint k as a reward model (reward -C_k, no constraints): its robust
        # value is minus the worst-case cost, its robust optimum minus the least one
        C = np.asarray(model.C)
        self.cost_models = [
            model.replace(R=-C[..., k], C=None, d=None, cost_labels=None)
            for k in range(model.n_constraints)
        ]

    def _error_bound(self, model, w: np.ndarray, policy=None, lam=None) -> float:
        r""":math:`\|T W - W\|_\infty / (1 - \gamma)` for the robust Bellman operator of
        ``model`` (of ``policy`` if given, the optimality operator otherwise)."""
        from .robust import robust_bellman

        obj = "value" if lam is None else "lagrangian"
        tw = robust_bellman(model, self.ball, w, policy, objective=obj, lam=lam).w
        return float(np.abs(tw - w).max()) / (1.0 - model.gamma)

    def optimum(self, model, lam=None) -> tuple[float, Result]:
        """Certified upper bound on the robust optimum of ``model`` from p0, and the
        robust value iteration result."""
        from .robust import robust_value_iteration

        rv = robust_value_iteration(model, self.ball, lam, method=self.rvi_method,
                                    tol=self.tol, progress=False)
        err = self._error_bound(model, rv.v, lam=lam)
        return float(rv.value + err), rv

    def g(self, lam: np.ndarray) -> Result:
        r"""Certified :math:`g(\lambda)`: robust VI plus the bound of its residual."""
        lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
        key = tuple(np.round(lam, 15).tolist())
        if key in self.g_cache:
            return self.g_cache[key]
        model = self.model
        bound, rv = self.optimum(model, lam)
        # slope of g at lam (where differentiable): d - C of the policy under the
        # Lagrangian worst case (envelope theorem)
        ev = evaluate(model.with_transitions(rv.P_worst), rv.policy)
        out = Result(lam=lam, g=float(bound + lam @ self.d),
                     g_estimate=float(rv.value + lam @ self.d),
                     error_bound=float(bound - rv.value),
                     policy=rv.policy, actions=rv.actions, P_worst=rv.P_worst,
                     slope=self.d - np.asarray(ev.cost), converged=bool(rv.converged))
        self.g_cache[key] = out
        return out

    def _cost_bounds(self, policy: np.ndarray, c_worst: np.ndarray) -> np.ndarray:
        """Certified worst-case costs (K,) from per-state costs under kernels of the ball."""
        p0 = self.model.p0
        return np.array([
            float(p0 @ c_worst[:, k]) + self._error_bound(mk, -c_worst[:, k], policy)
            for k, mk in enumerate(self.cost_models)
        ])

    def robust(self, policy: np.ndarray) -> Result:
        """Certified robust value (a lower bound) and worst-case costs (upper bounds).

        ``value`` = p0.v - eps and ``cost`` = p0.c_k + eps_k, with v and c_k the exact
        evaluations under the worst-case kernels found by
        :func:`rcmdp_exact.robust.robust_evaluate` and eps the residual bounds.
        """
        from .robust import robust_evaluate

        key = policy.tobytes()
        if key in self.eval_cache:
            return self.eval_cache[key]
        rv = robust_evaluate(self.model, policy, self.ball, "value", per_constraint=True,
                             tol=self.tol)
        err = self._error_bound(self.model, rv.v, policy)
        cost = self._cost_bounds(policy, rv.c_worst)
        out = Result(value=float(rv.value) - err, cost=cost, value_estimate=float(rv.value),
                     cost_estimate=np.asarray(rv.cost_worst, dtype=np.float64),
                     converged=bool(rv.converged))
        self.eval_cache[key] = out
        self.cost_eval_cache[key] = cost
        return out

    def robust_cost(self, policy: np.ndarray) -> np.ndarray:
        """Certified worst-case costs (K,) of a policy (upper bounds)."""
        from .robust import robust_evaluate

        key = policy.tobytes()
        if key not in self.cost_eval_cache:
            rc = robust_evaluate(self.model, policy, self.ball, "constraint",
                                 per_constraint=True, tol=self.tol)
            self.cost_eval_cache[key] = self._cost_bounds(policy, rc.c_worst)
        return self.cost_eval_cache[key]


def _golden(f, lo: float, hi: float, n: int) -> None:
    """Golden-section search of f on [lo, hi] for n steps (f memoises its values)."""
    invphi = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c = b - invphi * (b - a)
    e = a + invphi * (b - a)
    fc, fe = f(c), f(e)
    for _ in range(n):
        if fc <= fe:
            b, e, fe = e, c, fc
            c = b - invphi * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, e, fe
            e = a + invphi * (b - a)
            fe = f(e)


def _mix_to_boundary(oracle: _RobustOracle, safe: np.ndarray, risky: np.ndarray,
                     d: np.ndarray, feas_tol: float, steps: int):
    """A verified-feasible theta of the stationary mixture (1 - theta) safe + theta risky.

    Bisection on [0, 1] keeping ``lo`` feasible: each trial mixture is evaluated as a
    policy of its own (:meth:`_RobustOracle.robust_cost`, certified worst-case costs
    <= d + feas_tol), never by interpolating the costs of the two ends.  The worst-case
    cost of a mixture need not be monotone in theta, so the result is the last feasible
    theta met (the boundary when the cost is monotone).  Returns (theta, policy).
    """
    lo, hi = 0.0, 1.0
    best = safe
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        pol = (1.0 - mid) * safe + mid * risky
        if np.all(oracle.robust_cost(pol) <= d + feas_tol):
            lo, best = mid, pol
        else:
            hi = mid
    return lo, best


def _cutting_planes(oracle: _RobustOracle, g_of, n_cuts: int, box: float) -> None:
    r"""Kelley's cutting-plane steps on g: minimise the model :math:`\max_i [g_i +
    s_i^\top (\lambda - \lambda_i)]` over :math:`0 \le \lambda \le` box (an LP),
    evaluate g there, repeat.

    The slopes :math:`s_i = d - C_{\pi_i, P_i}` are gradients of g where it is
    differentiable.  Without robustness g is convex and piecewise linear, the cuts are
    valid and the steps reach its minimum in finitely many steps; with robustness the
    model is only a guide (every evaluated g is still an upper bound).
    """
    from scipy.optimize import linprog

    K = oracle.d.size
    for _ in range(n_cuts):
        pts = list(oracle.g_cache.values())
        G = np.array([p.g_estimate for p in pts])
        Ls = np.array([p.lam for p in pts]).reshape(len(pts), K)
        Sl = np.array([p.slope for p in pts]).reshape(len(pts), K)
        # variables (lam, t): min t s.t. s_i.lam - t <= s_i.lam_i - g_i
        c = np.zeros(K + 1)
        c[-1] = 1.0
        A_ub = np.hstack([Sl, -np.ones((len(pts), 1))])
        b_ub = np.einsum("ik,ik->i", Sl, Ls) - G
        bounds = [(0.0, box)] * K + [(None, None)]
        sol = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
        if sol.status != 0:
            return
        lam = np.maximum(sol.x[:K], 0.0)
        best = float(G.min())
        if best - sol.x[-1] <= 1e-12 * max(1.0, abs(best)):
            return
        key = tuple(np.round(lam, 15).tolist())
        if key in oracle.g_cache:
            return
        g_of(lam)


def _check_search(who: str, model, ball, n_grid, lam_range, feas_tol, **counts):
    """Validate the arguments of the lam searches; return (d, ratio, low, high).

    ``ratio`` = max|r| / max|c| (1 without rewards or costs) scales the default
    ``lam_range`` = (1e-3 ratio, 1e4 ratio).
    """
    from .robust import check_robust_inputs

    check_model(model)
    if not model.gamma < 1.0:
        raise ModelError(
            f"{who} needs gamma < 1 (robust value iteration), got {model.gamma!r}"
        )
    check_robust_inputs(model, ball)
    if isinstance(n_grid, bool) or not (isinstance(n_grid, int) and n_grid >= 2):
        raise ModelError(f"n_grid must be an integer >= 2, got {n_grid!r}")
    for name, val in counts.items():
        if isinstance(val, bool) or not (isinstance(val, int) and val >= 0):
            raise ModelError(f"{name} must be a non-negative integer, got {val!r}")
    if not (isinstance(feas_tol, int | float) and 0.0 <= feas_tol < np.inf):
        raise ModelError(f"feas_tol must be a finite number >= 0, got {feas_tol!r}")
    K = model.n_constraints
    rmax = float(np.abs(model.r).max()) if model.r.size else 0.0
    cmax = float(np.abs(model.c).max()) if K else 0.0
    ratio = rmax / cmax if cmax > 0 and rmax > 0 else 1.0
    if lam_range is None:
        lam_range = (1e-3 * ratio, 1e4 * ratio)
    try:
        lo_l, hi_l = (float(x) for x in lam_range)
    except (TypeError, ValueError):
        lo_l = hi_l = np.nan
    if not (0.0 < lo_l < hi_l and np.isfinite(hi_l)):
        raise ModelError(f"lam_range must be (low, high) with 0 < low < high, got {lam_range}")
    return np.asarray(model.d, dtype=np.float64), ratio, lo_l, hi_l


def rcmdp_bracket(model: TabularCMDP, ball, *, n_grid: int = 29,
                  lam_range: tuple[float, float] | None = None, n_refine: int = 40,
                  n_sweeps: int = 2, n_cuts: int = 30, mix_steps: int = 40, tol: float = 1e-12,
                  feas_tol: float = 0.0, rvi_method: str = "policy_iteration",
                  variants=VARIANTS, n_partners: int = 4,
                  progress: bool = True) -> Result:
    r"""A certified bracket [lower, upper] on the RCMDP optimum over an L1 ball.

    The target (the paper's Eq. "RCMDP objective" with robust constraints) is

    .. math::

        \mathrm{OPT} = \max_\pi \min_{P \in \mathcal P} V_{\pi,P}(p_0)
        \quad\text{s.t.}\quad \max_{P \in \mathcal P} C_{k,\pi,P}(p_0) \le d_k
        \;\; (k = 1..K),

    each maximum over the sa-rectangular L1 set taken separately.

    **Upper bound (weak duality).**  For every :math:`\lambda \ge 0`,

    .. math::

        g(\lambda) = \max_\pi \min_P \bigl[V_{\pi,P} - \lambda^\top (C_{\pi,P} - d)\bigr]
        \;\ge\; \mathrm{OPT},

    because for a robust-feasible :math:`\pi`,
    :math:`V_{\pi,P} - \lambda^\top C_{\pi,P} \ge \min_P V_{\pi,P} - \lambda^\top d`
    for every P.  :math:`g(\lambda) - \lambda^\top d` is the optimal value of the
    robust MDP with reward :math:`r - \lambda^\top c`, computed by
    :func:`rcmdp_exact.robust.robust_value_iteration`; the reported bound adds the
    residual bound :math:`\|Tv - v\|_\infty / (1 - \gamma)` so that it stays certified.

    **Search over** :math:`\lambda` (g need not be convex): (1) ``lam = 0`` and a
    log-spaced grid of ``n_grid`` points on ``lam_range`` (default
    :math:`[10^{-3}, 10^{4}] \cdot \max|r| / \max|c|`), the same value for every
    constraint; the grid is extended by factors of 10 while its last point is the best;
    (2) ``n_refine`` golden-section steps on each coordinate in the bracket formed by
    the neighbours of the best point (``n_sweeps`` cyclic sweeps when K > 1); (3) up to
    ``n_cuts`` cutting-plane (Kelley) steps: the next lam minimises
    :math:`\max_i [g_i + s_i^\top (\lambda - \lambda_i)]` over the evaluated points,
    with slope :math:`s_i = d - C_{\pi_i, P_i}` (envelope theorem; :math:`P_i` the
    Lagrangian worst case).  Without robustness g is convex and piecewise linear and
    these steps land on its minimum (its kink) exactly; with robustness they are a
    guide only.  Every evaluated g is an upper bound; the best
    (smallest) value met is ``upper``.

    **Lower bound (exact worst-case evaluation).**  Candidates: every robust-Lagrangian
    policy met during the search, the policies of the ``variants``, the CMDP optimum of
    the ball's nominal model (:func:`solve_cmdp`) and, per constraint, the policy
    minimising its worst-case cost.  Each is evaluated by
    :func:`rcmdp_exact.robust.robust_evaluate` (robust value, and each constraint under
    its own maximising kernel), exactly under the kernels found, and the residual bound
    of one more robust Bellman step turns these numbers into certified bounds:
    the worst-case value is at least :math:`p_0^\top v - \|T_\pi v - v\|_\infty /
    (1-\gamma)` and each worst-case cost at most :math:`p_0^\top c_k + \|T^k_\pi c_k -
    c_k\|_\infty / (1-\gamma)` (at most 6e-12 at the default ``tol`` on the paper's
    domains; the bounds also hold when a fixed point did not converge).  Then feasible
    candidates are mixed state-wise with infeasible ones, :math:`\pi_\theta = (1-\theta)\pi_f +
    \theta\pi_i`, a stationary policy evaluated as such (its value and costs are not
    the interpolation of those of :math:`\pi_f` and :math:`\pi_i`): each of the
    ``n_partners`` feasible candidates of best robust value with the infeasible one met
    at the largest lam below the best and with the ``n_partners`` infeasible ones of
    best robust value (above the lower bound), :math:`\theta` bisected (``mix_steps``
    steps) to the largest value whose certified worst-case costs meet the budgets.
    ``lower`` is the best certified robust value of a policy whose certified worst-case
    costs are :math:`\le d_k +` ``feas_tol`` (default 0: feasible with no tolerance),
    so ``lower <= OPT <= upper``.

    If the smallest achievable worst-case cost of a constraint (certified from below by
    robust VI on :math:`-c_k` plus its residual bound) exceeds :math:`d_k +`
    ``feas_tol``, the RCMDP is infeasible: ``upper = lower = -inf``.

    Parameters
    ----------
    model : TabularCMDP
        Rewards, costs, budgets, gamma < 1, p0, terminal states (its transitions are not
        used: the ball's nominal is the centre).
    ball : rcmdp_exact.uncertainty.L1Ball
    n_grid, lam_range, n_refine, n_sweeps, n_cuts : search settings (see above).
    mix_steps : int
        Bisection steps of the mixing refinement.
    n_partners : int
        Feasible and infeasible candidates paired in the mixing refinement.
    tol : float
        Tolerance of the robust fixed points (the bounds stay certified at any tol; a
        looser one only widens the bracket).
    feas_tol : float
        Budget slack allowed to the lower bound's certified worst-case costs (default
        0; with feas_tol > 0, ``lower`` bounds the optimum at budgets d + feas_tol).
    rvi_method : {"policy_iteration", "value_iteration"}
        Method of :func:`~rcmdp_exact.robust.robust_value_iteration`.
    variants : sequence of {"value", "constraint", "lagrangian"}
        Which common-worst-case variants to solve (:func:`rcmdp_variant`); ``()`` skips
        them ("constraint" is skipped when K = 0).
    progress : bool
        A tqdm bar over the lam search.

    Returns
    -------
    Result
        ``lower``, ``upper``, ``gap`` = upper - lower, ``multiplier`` (K,) the lam of
        ``upper``; ``policies`` {"lower": (S, A), "upper": (S, A)} (the certified
        robust-feasible policy, the robust-Lagrangian optimum at ``multiplier``);
        ``policy`` (= policies["lower"]); ``lower_cost`` (K,) its certified worst-case
        costs; ``mix_theta`` (theta of the lower policy when it is a mixture, else 0);
        ``upper_policy_value``, ``upper_policy_cost`` the certified robust evaluation
        of the upper policy; ``min_robust_cost`` (K,) (certified lower bounds on the
        smallest worst-case costs); ``history`` {"lam" (n, K), "g" (n,)};
        ``n_candidates``; ``variants`` {name: Result}; ``success`` (a finite bracket),
        ``status`` ("bracket", "no_feasible_policy", "infeasible"), ``message``.
    """
    from ._progress import tqdm

    d, ratio, lo_l, hi_l = _check_search(
        "rcmdp_bracket", model, ball, n_grid, lam_range, feas_tol,
        n_refine=n_refine, n_sweeps=n_sweeps, n_cuts=n_cuts, mix_steps=mix_steps,
        n_partners=n_partners)
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise ModelError(f"unknown variants {bad}; choose from {list(VARIANTS)}")
    K = model.n_constraints
    oracle = _RobustOracle(model, ball, tol, rvi_method)
    bar = tqdm(desc="rcmdp bracket", disable=not progress, leave=False)

    def g_of(lam) -> float:
        first = tuple(np.round(np.maximum(lam, 0.0), 15).tolist()) not in oracle.g_cache
        val = oracle.g(lam).g
        if first:
            bar.update(1)
        return val

    # -- robust feasibility: a certified lower bound on the smallest worst-case cost of
    # each constraint (minus the certified robust optimum of the reward -c_k)
    min_robust_cost = np.zeros(K)
    safest = []
    for k, mk in enumerate(oracle.cost_models):
        bound, rk = oracle.optimum(mk)
        min_robust_cost[k] = 0.0 - bound  # (no -0.0)
        safest.append(rk.policy)
    var_out = {}
    for name in variants:
        if name == "constraint" and K == 0:
            continue  # nothing to robustify
        var_out[name] = rcmdp_variant(model, ball, name, n_grid=n_grid,
                                      lam_range=(lo_l, hi_l), tol=tol,
                                      feas_tol=feas_tol, progress=False)
    try:
        if K and np.any(min_robust_cost > d + feas_tol):
            ks = [k for k in range(K) if min_robust_cost[k] > d[k] + feas_tol]
            msg = "; ".join(
                f"the smallest worst-case cost of constraint {_cost_name(model, k)} is "
                f"{_fmt(min_robust_cost[k])} > budget d[{k}] = {_fmt(d[k])}" for k in ks
            )
            return Result(
                lower=-np.inf, upper=-np.inf, gap=0.0, multiplier=np.full(K, np.inf),
                policies={"lower": safest[ks[0]], "upper": safest[ks[0]]},
                policy=safest[ks[0]], lower_cost=min_robust_cost.copy(), mix_theta=0.0,
                upper_policy_value=np.nan, upper_policy_cost=np.full(K, np.nan),
                min_robust_cost=min_robust_cost, history={"lam": np.zeros((0, K)),
                                                          "g": np.zeros(0)},
                n_candidates=0, variants=var_out, success=False, status="infeasible",
                message=f"infeasible: no policy meets the budgets on every model of the "
                        f"ball; {msg}; raise the budget or shrink the ball",
            )
        # -- (1) grid
        if K == 0:
            g_of(np.zeros(0))
        else:
            grid = np.concatenate([[0.0], np.geomspace(lo_l, hi_l, n_grid)])
            vals = [g_of(np.full(K, t)) for t in grid]
            while int(np.argmin(vals)) == len(grid) - 1 and grid[-1] < 1e12 * ratio:
                grid = np.append(grid, grid[-1] * 10.0)
                vals.append(g_of(np.full(K, grid[-1])))
            i = int(np.argmin(vals))
            lam_best = np.full(K, grid[i])
            step = float(grid[2] / grid[1]) if grid.size > 2 else 10.0
            # -- (2) golden section per coordinate around the best point
            for sweep in range(n_sweeps if K > 1 else 1):
                for k in range(K):
                    cur = lam_best[k]
                    if K == 1 and sweep == 0:
                        lo = grid[i - 1] if i > 0 else 0.0
                        hi = grid[i + 1] if i + 1 < grid.size else grid[i] * step
                    else:
                        lo = 0.0 if cur <= lo_l else cur / step
                        hi = max(cur, lo_l) * step
                    base = lam_best.copy()

                    def f(t, base=base, k=k):
                        lam = base.copy()
                        lam[k] = t
                        return g_of(lam)

                    _golden(f, lo, hi, n_refine)
                    lam_best = min(oracle.g_cache.values(), key=lambda r: r.g).lam.copy()
            # -- (3) cutting-plane steps
            _cutting_planes(oracle, g_of, n_cuts, box=float(grid[-1]) * step)
    finally:
        bar.close()
    evals = list(oracle.g_cache.values())
    best = min(evals, key=lambda r: r.g)
    upper = best.g

    # -- lower bound: exact robust evaluation of candidates
    cands: list[tuple[float, np.ndarray]] = []  # (lam scale, policy)
    seen = set()
    for r in sorted(evals, key=lambda r: float(r.lam.sum())):
        key = r.policy.tobytes()
        if key not in seen:
            seen.add(key)
            cands.append((float(r.lam.sum()), r.policy))
    for name in var_out:
        cands.append((float(var_out[name].multiplier.sum()), var_out[name].policy))
    nominal_model = model.with_transitions(np.asarray(ball.nominal))
    lp = solve_cmdp(nominal_model)
    if lp.status in ("optimal", "optimal_inaccurate"):
        cands.append((np.nan, lp.policy))
    for pol in safest:
        cands.append((np.inf, pol))
    rob = [oracle.robust(p) for _, p in cands]
    feasible = [bool(np.all(e.cost <= d + feas_tol)) for e in rob]
    lower, lower_pol, lower_cost = -np.inf, None, np.full(K, np.nan)
    for (_, p), e, ok in zip(cands, rob, feasible, strict=True):
        if ok and e.value > lower:
            lower, lower_pol, lower_cost = e.value, p, e.cost
    mix_theta = 0.0
    if lower_pol is not None and K:
        lam_b = float(best.lam.sum())
        risky = [(lam_t, p, e) for (lam_t, p), e, ok in zip(cands, rob, feasible, strict=True)
                 if not ok and e.value > lower]
        partners = []
        below = [t for t in risky if np.isfinite(t[0]) and t[0] <= lam_b]
        if below:
            partners.append(max(below, key=lambda t: t[0])[1])
        partners += [t[1] for t in sorted(risky, key=lambda t: -t[2].value)[:n_partners]]
        bases = [p for (_, p), e, ok in sorted(zip(cands, rob, feasible, strict=True),
                                               key=lambda t: -t[1].value) if ok][:n_partners]
        for base_pol in bases:
            for partner in partners:
                theta, pol = _mix_to_boundary(oracle, base_pol, partner, d, feas_tol,
                                              mix_steps)
                if theta > 0.0:
                    e = oracle.robust(pol)
                    if np.all(e.cost <= d + feas_tol) and e.value > lower:
                        lower, lower_pol, lower_cost, mix_theta = e.value, pol, e.cost, theta
    up_eval = oracle.robust(best.policy)
    if lower_pol is None:
        status, success = "no_feasible_policy", False
        message = (f"no candidate policy is robust-feasible; upper bound {upper:.6g} at "
                   f"lam = {best.lam.tolist()}, lower bound -inf; widen lam_range")
        lower_pol = safest[0] if safest else best.policy
    else:
        status, success = "bracket", True
        message = (f"certified bracket [{lower:.10g}, {upper:.10g}], gap "
                   f"{upper - lower:.3g}, at lam = {[float(x) for x in best.lam]}")
    return Result(
        lower=float(lower), upper=float(upper), gap=float(upper - lower),
        multiplier=best.lam.copy(),
        policies={"lower": lower_pol, "upper": best.policy},
        policy=lower_pol, lower_cost=lower_cost, mix_theta=mix_theta,
        upper_policy_value=up_eval.value, upper_policy_cost=up_eval.cost,
        min_robust_cost=min_robust_cost,
        history={"lam": np.array([r.lam for r in evals]).reshape(len(evals), K),
                 "g": np.array([r.g for r in evals])},
        n_candidates=len(cands), variants=var_out, success=success, status=status,
        message=message,
    )


def _equilibrium(model: TabularCMDP, ball, variant: str, lam: np.ndarray, tol: float,
                 max_iter: int):
    """The policy a RCPG variant converges to at a fixed lam, by alternating best responses.

    Start from the robust-Lagrangian optimum; repeat: P+ = the variant's worst case of
    the current policy (robust_evaluate), then the exactly optimal policy of the
    Lagrangian reward under P+ (:func:`lagrangian_optimal_policy`); stop when the policy
    is already optimal under its own P+ (an equilibrium) or a policy repeats.
    Returns (policy (S, A), robust_evaluate result, converged, iterations).
    """
    from .robust import robust_evaluate, robust_value_iteration

    S, A = model.n_states, model.n_actions
    pi = robust_value_iteration(model, ball, lam, tol=tol, method="policy_iteration",
                                progress=False).policy
    seen = {pi.tobytes()}
    kw = {"lam": lam} if variant == "lagrangian" else {}
    it = 0
    for it in range(1, max_iter + 1):
        re = robust_evaluate(model, pi, ball, variant, per_constraint=False, tol=tol, **kw)
        br = lagrangian_optimal_policy(model.with_transitions(re.P_worst), lam)
        cur = np.einsum("sa,sa->s", pi, br.q)
        if np.all(cur >= br.q.max(axis=1) - 1e-10 * _scale(model)):
            return pi, re, True, it
        nxt = check_policy(br.policy, S, A)
        if nxt.tobytes() in seen:
            return pi, re, False, it
        seen.add(nxt.tobytes())
        pi = nxt
    re = robust_evaluate(model, pi, ball, variant, per_constraint=False, tol=tol, **kw)
    return pi, re, False, it


def rcmdp_variant(model: TabularCMDP, ball, variant: str, *, n_grid: int = 29,
                  lam_range: tuple[float, float] | None = None, n_bisect: int = 30,
                  max_iter: int = 25, tol: float = 1e-12, feas_tol: float = 0.0,
                  progress: bool = False) -> Result:
    r"""The target of one RCPG variant: a common worst case P+ for value and cost.

    The paper's RCPG variants optimise :math:`V_{\pi,P^+}` subject to
    :math:`C_{\pi,P^+} \le d` with **one** kernel :math:`P^+(\pi)` chosen by

    * ``"value"``: :math:`\arg\min_P V_{\pi,P}` (RCPG, robust value),
    * ``"constraint"``: :math:`\arg\max_P \sum_k C_{k,\pi,P}` (RCPG, robust constraint),
    * ``"lagrangian"``: :math:`\arg\min_P [V - \lambda^\top C]_{\pi,P}` (RCPG, robust
      Lagrangian; the paper's Eq. "robustlagrangian").

    At a fixed :math:`\lambda` such a learner (a gradient step on the Lagrangian with
    :math:`P^+` held fixed) can only rest at a policy that is optimal for the
    Lagrangian reward under its own :math:`P^+(\pi)`; this equilibrium is found by
    alternating exact best responses (robust evaluation, then policy iteration under
    :math:`P^+`), starting from the robust-Lagrangian optimum (which is already an
    equilibrium for ``"lagrangian"``).  Its learner raises :math:`\lambda` while
    :math:`C_{\pi,P^+} > d`, so the search runs over ``lam = 0`` and a log-spaced grid
    (as :func:`rcmdp_bracket`), then bisects (``n_bisect`` steps, each coordinate
    scaled together) between the largest infeasible and the smallest feasible grid
    point.  The result is the equilibrium at the smallest lam met whose equilibrium
    meets the budgets under its own :math:`P^+` (the rest point of the learner's
    multiplier: lam = 0 when that equilibrium is feasible, else the crossing); every
    number is an exact evaluation (:func:`rcmdp_exact.robust.robust_evaluate`).

    Returns
    -------
    Result
        ``variant``, ``policy`` (S, A), ``multiplier`` (K,), ``value`` and ``cost``
        (K,) under the common :math:`P^+`, ``P_worst``, ``feasible`` (cost <= d +
        feas_tol), ``robust_value`` and ``robust_cost`` (K,) (each cost under its own
        maximising kernel), ``robust_feasible``, ``converged`` (an equilibrium, not a
        cycle), ``history`` {"lam", "value", "cost", "feasible", "converged"},
        ``success``, ``status`` ("ok", "no_feasible_policy"), ``message``.
    """
    from ._progress import tqdm
    from .robust import robust_evaluate

    if variant not in VARIANTS:
        raise ModelError(f"unknown variant {variant!r}; choose from {list(VARIANTS)}")
    d, _, lo_l, hi_l = _check_search("rcmdp_variant", model, ball, n_grid, lam_range,
                                     feas_tol, n_bisect=n_bisect)
    if isinstance(max_iter, bool) or not (isinstance(max_iter, int) and max_iter >= 1):
        raise ModelError(f"max_iter must be a positive integer, got {max_iter!r}")
    K = model.n_constraints
    if variant == "constraint" and K == 0:
        raise ModelError("variant 'constraint' needs a model with at least one constraint")
    rows: dict = {}
    bar = tqdm(desc=f"variant {variant}", disable=not progress, leave=False)

    def run(t: float):
        if t in rows:
            return rows[t]
        lam = np.full(K, float(t))
        pi, re, conv, _ = _equilibrium(model, ball, variant, lam, tol, max_iter)
        cost = np.asarray(re.cost, dtype=np.float64)
        rows[t] = Result(lam=lam, policy=pi, value=float(re.value), cost=cost,
                         P_worst=re.P_worst, feasible=bool(np.all(cost <= d + feas_tol)),
                         converged=conv)
        bar.update(1)
        return rows[t]

    try:
        grid = [0.0] if K == 0 else [0.0, *np.geomspace(lo_l, hi_l, n_grid).tolist()]
        for t in grid:
            run(t)
        if K:
            infeas = [t for t in grid if not rows[t].feasible]
            feas = [t for t in grid if rows[t].feasible]
            if infeas and feas and min(feas) > 0:
                lo = max([t for t in infeas if t < min(feas)], default=None)
                hi = min(feas)
                if lo is not None:
                    for _ in range(n_bisect):
                        mid = math.sqrt(lo * hi) if lo > 0 else 0.5 * hi
                        if run(mid).feasible:
                            hi = mid
                        else:
                            lo = mid
    finally:
        bar.close()
    ordered = [rows[t] for t in sorted(rows)]
    ok = [r for r in ordered if r.feasible]
    if ok:
        best = ok[0]
        status, success = "ok", True
        message = (f"smallest lam with a {variant}-feasible equilibrium: value "
                   f"{best.value:.10g} under the common worst case at lam = "
                   f"{best.lam.tolist()}")
    else:
        best = min(ordered, key=lambda r: float(np.max(r.cost - d)))
        status, success = "no_feasible_policy", False
        message = (f"no equilibrium meets the budgets under its own {variant} worst case; "
                   f"the one with the smallest overshoot is returned")
    rob = robust_evaluate(model, best.policy, ball, "value", per_constraint=True, tol=tol)
    rcost = np.asarray(rob.cost_worst, dtype=np.float64) if K else np.zeros(0)
    return Result(
        variant=variant, policy=best.policy, multiplier=best.lam, value=best.value,
        cost=best.cost, P_worst=best.P_worst, feasible=best.feasible,
        robust_value=float(rob.value), robust_cost=rcost,
        robust_feasible=bool(np.all(rcost <= d + feas_tol)), converged=best.converged,
        history={"lam": np.array([r.lam for r in ordered]).reshape(len(ordered), K),
                 "value": np.array([r.value for r in ordered]),
                 "cost": np.array([r.cost for r in ordered]).reshape(len(ordered), K),
                 "feasible": np.array([r.feasible for r in ordered]),
                 "converged": np.array([r.converged for r in ordered])},
        success=success, status=status, message=message,
    )
