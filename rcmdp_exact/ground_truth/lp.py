r"""The CMDP optimum: Altman's occupancy-measure LP, discounted and finite-horizon.

Discounted (gamma < 1)
======================
The discounted occupancy :math:`x(s, a) = \sum_t \gamma^t \Pr(s_t = s, a_t = a)` of the
stationary policies from :math:`p_0` is the polytope :math:`(E - \gamma P^\top) x = p_0,
x \ge 0`, and :math:`V = r^\top x`, :math:`C_k = c_k^\top x`, so the CMDP (the paper's
Eq. "RCMDP objective" with one known model) is the primal LP

.. math::

    \max_{x \ge 0}\; r^\top x \quad\text{s.t.}\quad
    (E - \gamma P^\top) x = p_0,\qquad c_k^\top x \le d_k\; (k = 1..K),

whose dual :math:`\min_{v, \mu \ge 0} p_0^\top v + \mu^\top d` s.t. :math:`v(s) \ge
r(s, a) - \mu^\top c(s, a) + \gamma P(s, a)^\top v` is :math:`\min_{\mu \ge 0}
\max_\pi L(\pi, \mu)` with the paper's Lagrangian :math:`L = V - \mu^\top (C - d)`
(Eq. "Lagrange").  The returned multipliers ``lam`` are :math:`\mu \ge 0`, the duals of the
cost rows (:math:`\partial V^*/\partial d_k`).  The policy is
:math:`\pi(a|s) = x(s, a)/\sum_b x(s, b)`; states with :math:`\sum_a x(s, a) \le`
``_UNVISITED_TOL`` get the greedy action of :math:`r - \mu^\top c` (``unvisited=
"lagrangian"``) or the uniform distribution.  With gamma = 1 the LP keeps the
non-terminal states (the occupancy counts visits before absorption).

Finite horizon (the paper's test metric)
========================================
Over time-dependent occupancies :math:`x_t`: :math:`\max \sum_{t<T} \delta^t r^\top x_t`
s.t. :math:`\sum_a x_0(\cdot, a) = p_0`, :math:`\sum_a x_{t+1}(s', a) = \sum_{s,a}
P(s'|s,a) x_t(s, a)`, :math:`\sum_t \delta^t c_k^\top x_t \le b_k`, with :math:`b`
the rescaled budget :math:`d\,T/\sum_{i<T}\gamma^i` by default; the policy has shape
(T, S, A).

Every answer is re-checked by exact evaluation (``check_tol`` times the value scale);
solver failures, infeasibility and inaccurate optima are statuses, never exceptions.
The default solver, HiGHS, is called through its own Python interface ``highspy`` (the
HiGHS that cvxpy called before; simplex: a vertex and exact duals, with the tolerances
of :mod:`rcmdp_exact._solvers`), so a solve does not import cvxpy (whose import takes
seconds); cvxpy is imported only for ``solver="CLARABEL"``, by
:func:`solve_occupancy_lp`.  (scipy's ``linprog`` bundles an older HiGHS whose simplex
stops with status "Not Set" on some Inventory T-step LPs at these tolerances.)
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .._checks import as_float_array, check_choice, check_int, check_real, check_shape
from .._result import Result
from .._solvers import cvxpy_options
from ..core.evaluation import evaluate, evaluate_time_dependent, rescaled_budget
from ..core.mdp import backward_induction, policy_iteration, value_scale
from ..core.model import TabularCMDP, check_model
from ..names import LP_SOLVERS

__all__ = [
    "DEFAULT_LP_SOLVER",
    "LP_SOLVERS",
    "infeasible_message",
    "max_slack_policy",
    "polish_vertex",
    "solve_cmdp",
    "solve_cmdp_finite_horizon",
    "value_scale",
]


#: The LP solver unless ``solver=`` says otherwise (HiGHS through highspy; CLARABEL
#: through cvxpy).
DEFAULT_LP_SOLVER = "HIGHS"
#: Occupancy below which a state counts as never visited.
_UNVISITED_TOL = 1e-10
#: cvxpy statuses as the toolkit's status strings.
CVX_STATUS = {
    "optimal": "optimal", "optimal_inaccurate": "optimal_inaccurate",
    "infeasible": "infeasible", "infeasible_inaccurate": "infeasible",
    "infeasible_or_unbounded": "infeasible", "unbounded": "unbounded",
    "unbounded_inaccurate": "unbounded",
}
_SOLVED = ("optimal", "optimal_inaccurate")


# =========================================================================== helpers
def cost_name(model: TabularCMDP, k: int) -> str:
    """``"k"`` or ``"k (label)"`` for messages."""
    lab = model.cost_labels
    return f"{k}" if lab is None else f"{k} ({lab[k]})"


def fmt(x: float) -> str:
    """A number with 6 significant digits (messages)."""
    return f"{float(x):.6g}"


def budget_array(budget, name: str, K: int) -> np.ndarray:
    """Finite budgets as a (K,) float64 array (one number per constraint)."""
    arr = np.reshape(as_float_array(budget, name, f"give one budget per constraint (K={K})"),
                     -1)
    check_shape(arr, (K,), name, ("k",))
    return arr


def _solver_name(solver) -> str:
    name = solver.upper() if isinstance(solver, str) else solver
    return check_choice(name, "solver", LP_SOLVERS,
                        "; HIGHS (simplex, exact vertices and duals) is the default")


def _check_lp_options(model, solver, unvisited, check_tol) -> str:
    check_model(model)
    check_choice(unvisited, "unvisited", ("lagrangian", "uniform"))
    check_real(check_tol, "check_tol", 0.0, low_open=True)
    return _solver_name(solver)


def infeasible_message(model: TabularCMDP, min_costs, budgets=None,
                       what: str = "discounted") -> str:
    """The message of an infeasible CMDP, naming each budget that cannot be met.

    ``min_costs`` (K,): the smallest achievable cost of each constraint alone;
    ``budgets`` (K,) default ``model.d``; ``what``: "discounted" or "T-step".  One
    clause "the smallest achievable <what> cost of constraint k is m > budget d[k] = b;
    raise d[k] to at least m or change the costs" per violated budget, or, when each
    budget can be met alone but not all at once, a message saying so (6 digits).
    """
    K = model.n_constraints
    fix = f"give one number per constraint (K={K})"
    m = np.reshape(as_float_array(min_costs, "min_costs", fix, finite=False), -1)
    d = model.d if budgets is None else np.reshape(
        as_float_array(budgets, "budgets", fix, finite=False), -1)
    check_shape(m, (K,), "min_costs", ("k",))
    check_shape(d, (K,), "budgets", ("k",))
    bad = [k for k in range(K) if m[k] > d[k]]
    if bad:
        return "infeasible: no policy meets the budgets; " + "; ".join(
            f"the smallest achievable {what} cost of constraint {cost_name(model, k)} is "
            f"{fmt(m[k])} > budget d[{k}] = {fmt(d[k])}; raise d[{k}] to at least "
            f"{fmt(m[k])} or change the costs" for k in bad)
    return (f"infeasible: each budget can be met on its own (smallest {what} costs "
            f"[{', '.join(map(fmt, m))}] <= budgets [{', '.join(map(fmt, d))}]) but not "
            f"all at once; the returned policy minimises the total overshoot; relax one of "
            f"the budgets")


# =========================================================================== the LP
def _problem(cp, M, r, c, b, d, objective: str, k):
    """The cvxpy problem of one occupancy LP, its variable and its cost rows."""
    x = cp.Variable(r.size, nonneg=True)
    cons, cost_con = [M @ x == b], None
    if objective == "value":
        if c.shape[1]:
            cost_con = c.T @ x <= d
            cons.append(cost_con)
        return cp.Problem(cp.Maximize(r @ x), cons), x, cost_con
    if objective == "min_cost":
        return cp.Problem(cp.Minimize(c[:, k] @ x), cons), x, None
    s = cp.Variable(c.shape[1], nonneg=True) if objective == "min_overshoot" else cp.Variable()
    if objective == "min_overshoot":
        return cp.Problem(cp.Minimize(cp.sum(s)), [*cons, c.T @ x - d <= s]), x, None
    scale = max(1.0, float(np.abs(d).max(initial=0.0)))
    return cp.Problem(cp.Maximize(s), [*cons, c.T @ x - d <= -s, s <= scale]), x, None


def _highs_problem(r, c, d, objective: str, k):
    """One occupancy LP as HiGHS takes it, beside the caller's flow rows ``M x = b``:
    ``(cost to minimise, A_ub, b_ub, column bounds (lower, upper), sign)``, where the
    LP's value is ``sign * objective`` and the columns are ``x`` then the objective's
    own (``s`` (K,) of "min_overshoot", the slack ``t`` of "max_slack")."""
    n, K = r.size, c.shape[1]
    inf = np.inf
    if objective == "value":
        return (-r, sp.csr_array(c.T), d, (np.zeros(n), np.full(n, inf)), -1.0)
    if objective == "min_cost":
        return (np.array(c[:, k], dtype=np.float64), sp.csr_array((0, n)), np.zeros(0),
                (np.zeros(n), np.full(n, inf)), 1.0)
    if objective == "min_overshoot":  # min sum(s) s.t. c^T x - s <= d, s >= 0
        A = sp.hstack([sp.csr_array(c.T), -sp.identity(K, format="csr")], format="csr")
        return (np.concatenate([np.zeros(n), np.ones(K)]), A, d,
                (np.zeros(n + K), np.full(n + K, inf)), 1.0)
    # max_slack: max t s.t. c^T x + t <= d, t <= max(1, max|d|), t free below
    scale = max(1.0, float(np.abs(d).max(initial=0.0)))
    A = sp.hstack([sp.csr_array(c.T), sp.csr_array(np.ones((K, 1)))], format="csr")
    return (np.concatenate([np.zeros(n), [-1.0]]), A, d,
            (np.append(np.zeros(n), -inf), np.append(np.full(n, inf), scale)), -1.0)


def _solve_highs(M, r, c, b, d, objective: str, k) -> Result:
    """One occupancy LP by HiGHS through ``highspy`` (no cvxpy), with the toolkit's
    tolerances (:data:`rcmdp_exact._solvers.HIGHS_OPTIONS`).

    Statuses as cvxpy reads HiGHS's: optimal; infeasible (also "unbounded or
    infeasible", which presolve may answer when the budgets cannot be met); unbounded;
    anything else a solver error naming HiGHS's status."""
    import highspy

    from .._solvers import HIGHS_OPTIONS, new_highs

    out = Result(status="solver_error", x=None, value=np.nan, duals=np.zeros(c.shape[1]),
                 error=None)
    cost, A_ub, b_ub, (lo, hi), sign = _highs_problem(r, c, d, objective, k)
    n_col = cost.size
    M = sp.csr_array(M)
    if n_col > M.shape[1]:
        M = sp.hstack([M, sp.csr_array((M.shape[0], n_col - M.shape[1]))], format="csr")
    A = sp.csc_array(sp.vstack([M, A_ub], format="csr"))
    n_eq, n_ub = M.shape[0], A_ub.shape[0]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_col, n_eq + n_ub
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_, lp.col_upper_ = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    b = np.asarray(b, dtype=np.float64)
    lp.row_lower_ = np.concatenate([b, np.full(n_ub, -np.inf)])
    lp.row_upper_ = np.concatenate([b, np.asarray(b_ub, dtype=np.float64)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n_col, n_eq + n_ub
    h = new_highs(**HIGHS_OPTIONS)
    try:
        h.passModel(lp)
        h.run()
    except (RuntimeError, ValueError, ArithmeticError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    st = h.getModelStatus()
    MS = highspy.HighsModelStatus
    status = {MS.kOptimal: "optimal", MS.kInfeasible: "infeasible",
              MS.kUnboundedOrInfeasible: "infeasible", MS.kUnbounded: "unbounded"}.get(
        st, "solver_error")
    out.status = status
    out.error = None if status != "solver_error" else h.modelStatusToString(st)
    if status == "optimal":
        sol = h.getSolution()
        out.x = np.maximum(np.asarray(sol.col_value, dtype=np.float64)[:r.size], 0.0)
        out.value = float(sign * h.getInfo().objective_function_value)
        if objective == "value" and c.shape[1]:
            # HiGHS's row duals are d objective / d bound (<= 0 for a binding <= row of a
            # minimisation); the multipliers of the maximised value are their negatives
            duals = np.asarray(sol.row_dual, dtype=np.float64)[n_eq:]
            out.duals = np.maximum(-duals, 0.0)
    return out


def solve_occupancy_lp(M, r, c, b, d, solver: str, objective: str = "value",
                       k: int | None = None) -> Result:
    r"""Build and solve one occupancy LP: HiGHS through ``highspy`` (``solver="HIGHS"``,
    the default of every caller), or cvxpy for ``"CLARABEL"`` (the only place cvxpy is
    imported).

    ``objective``: "value" (:math:`\max r^\top x` s.t. :math:`Mx = b`, :math:`c^\top x
    \le d`), "min_cost" (:math:`\min c_k^\top x`, flows only), "min_overshoot"
    (:math:`\min \sum_k \max(0, c_k^\top x - d_k)`) or "max_slack" (:math:`\max t`
    s.t. :math:`c_k^\top x \le d_k - t`, t at most max(1, max|d|)).  Returns ``status``
    (a status string), ``x``, ``value``, ``duals`` (K,) of the cost rows, ``error``.
    Both paths take their tolerances from :mod:`rcmdp_exact._solvers`.
    """
    if solver == "HIGHS":
        return _solve_highs(M, r, c, b, d, objective, k)
    return _solve_cvxpy(M, r, c, b, d, solver, objective, k)


def _solve_cvxpy(M, r, c, b, d, solver: str, objective: str, k) -> Result:
    """One occupancy LP through cvxpy with ``solver`` (its tolerances from _solvers)."""
    import cvxpy as cp

    out = Result(status="solver_error", x=None, value=np.nan, duals=np.zeros(c.shape[1]),
                 error=None)
    if solver not in cp.installed_solvers():
        out.error = (f"the LP solver {solver} is not installed in cvxpy (installed: "
                     f"{cp.installed_solvers()}); install it or pass solver=\"HIGHS\"")
        return out
    prob, x, cost_con = _problem(cp, M, r, c, b, d, objective, k)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(**cvxpy_options(solver))  # the toolkit's tolerances (_solvers)
    except (cp.error.SolverError, ValueError, ArithmeticError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    out.status = CVX_STATUS.get(prob.status, "solver_error")
    out.error = None if out.status != "solver_error" else str(prob.status)
    if out.status in _SOLVED:
        out.x = np.maximum(np.asarray(x.value, dtype=np.float64), 0.0)
        out.value = float(prob.value)
        if cost_con is not None:
            out.duals = np.maximum(np.asarray(cost_con.dual_value, dtype=np.float64), 0.0)
    return out


def max_slack_policy(model: TabularCMDP, budgets=None, solver: str = DEFAULT_LP_SOLVER):
    r"""The policy whose costs sit furthest below the budgets (largest common slack t of
    :math:`C_k \le d_k - t`), or None when that LP fails.  Trusted inputs (no checks)."""
    keep, M, r, c, b = _lp_data(model)
    d = model.d if budgets is None else np.asarray(budgets, dtype=np.float64)
    sol = solve_occupancy_lp(M, r, c, b, d, solver, "max_slack")
    if sol.x is None:
        return None
    S, A = model.n_states, model.n_actions
    xv = np.zeros((S, A))
    xv[keep] = sol.x.reshape(keep.size, A)
    return _policy_from_occupancy(xv, np.full((S, A), 1.0 / A))[0]


def _lp_data(model: TabularCMDP):
    """The kept states, flow matrix (n, n*A), rewards, costs (n*A, K) and p0 of the LP."""
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    if model.gamma < 1.0:
        keep = np.arange(S)
    else:
        keep = np.flatnonzero(~model.terminal)
        check_int(S - keep.size, "number of terminal states", 1,
                  hint="; solve_cmdp with gamma = 1 needs terminal states (the occupancy is the "
                  "number of visits before absorption); use gamma < 1 or mark terminal states")
    n = keep.size
    rows = (keep[:, None] * A + np.arange(A)[None, :]).ravel()
    Pk = sp.csr_array(model.P_sparse[rows][:, keep])
    E = sp.kron(sp.identity(n, format="csr"), np.ones((1, A)), format="csr")
    M = sp.csr_array(E - model.gamma * Pk.T)
    return keep, M, model.r[keep].ravel(), model.c[keep].reshape(n * A, K), model.p0[keep]


def _lp_policy(model: TabularCMDP, keep: np.ndarray, x: np.ndarray, default: np.ndarray):
    """The policy of an LP occupancy on the kept states: (pi, occupancy (S, A), visited,
    exact evaluation)."""
    xv = np.zeros((model.n_states, model.n_actions))
    xv[keep] = x.reshape(keep.size, model.n_actions)
    pi, visited = _policy_from_occupancy(xv, default)
    return pi, xv, visited, evaluate(model, pi)


def _policy_from_occupancy(x: np.ndarray, default: np.ndarray):
    """pi = x / sum_a x on visited states, ``default`` elsewhere; returns (pi, visited)."""
    tot = x.sum(axis=-1)
    visited = tot > _UNVISITED_TOL
    pi = np.array(default, dtype=np.float64, copy=True)
    pi[visited] = x[visited] / tot[visited][..., None]
    return pi, visited


#: Largest number of (state, action) pairs whose LP vertex :func:`polish_vertex` solves
#: (densely); larger LPs keep the solver's vertex and duals.
POLISH_MAX_PAIRS = 4000


def polish_vertex(M, c: np.ndarray, r: np.ndarray, b: np.ndarray, d: np.ndarray,
                  x: np.ndarray, duals: np.ndarray):
    r"""The LP vertex near ``x`` and its duals, solved exactly from the active set.

    A simplex solver returns a vertex only to its feasibility tolerance (1e-10 here), so
    the policy :math:`x/\sum_a x` can miss a binding budget by about that much once it is
    evaluated exactly, and the duals are as inexact.  With :math:`B` the support of
    ``x`` and :math:`J` the binding cost rows (duals > 0, or rows the solver overshot),
    the vertex and its duals solve the square systems

    .. math::  M_B x_B = p_0,\quad c_{J,B}^\top x_B = d_J, \qquad
               M_B^\top v + c_{J,B}\,\mu_J = r_B

    (primal feasibility and complementary slackness), by dense least squares.  Returns
    ``(x, mu)``: ``x`` when there are at most :data:`POLISH_MAX_PAIRS` pairs, the support
    has full column rank (a basis), the system is
    consistent (backward error below 1e-12), x >= 0 and it meets the other cost rows,
    else None; ``mu`` (K,), zero off J, when moreover the dual system is consistent,
    mu >= 0 and the reduced costs :math:`r - M^\top v - c\,\mu` are at most 1e-9 of the
    data (then x and mu are optimal by complementary slackness), else None.  The caller
    keeps the solver's answer for what is None.
    """
    n, K = x.size, c.shape[1]
    if n > POLISH_MAX_PAIRS:  # dense solves of the active set: large LPs keep the solver's
        return None, None
    supp = x > 1e-12 * max(1.0, float(x.max(initial=0.0)))
    J = np.flatnonzero((duals > 0.0) | (c.T @ x > d))
    A_full = np.vstack([M.toarray() if sp.issparse(M) else np.asarray(M), c.T[J]])
    A_b = A_full[:, supp]
    rhs = np.concatenate([b, d[J]])
    xb, _, rank, _ = np.linalg.lstsq(A_b, rhs, rcond=None)
    size = float(np.abs(A_b).max(initial=0.0))
    # backward errors: residuals relative to |A| |solution| + |right-hand side|
    tol_p = 1e-12 * max(1.0, float(np.abs(rhs).max(initial=0.0)),
                        size * float(np.abs(xb).max(initial=0.0)))
    others = np.setdiff1d(np.arange(K), J)
    out = np.zeros(n)
    out[supp] = np.maximum(xb, 0.0)
    if (rank < A_b.shape[1]  # not a basis: the active set does not fix the point
            or not np.all(np.isfinite(xb)) or np.abs(A_b @ xb - rhs).max() > tol_p
            or xb.min(initial=0.0) < -1e-12 * max(1.0, float(xb.max(initial=0.0)))
            or (others.size and np.any(c.T[others] @ out > d[others]))):
        return None, None
    y = np.linalg.lstsq(A_b.T, r[supp], rcond=None)[0]
    tol_d = 1e-12 * max(1.0, float(np.abs(r).max(initial=0.0)),
                        size * float(np.abs(y).max(initial=0.0)))
    mu = np.zeros(K)
    mu[J] = y[M.shape[0]:]
    if (not np.all(np.isfinite(y)) or np.abs(A_b.T @ y - r[supp]).max() > tol_d
            or np.any(mu < 0.0) or (r - A_full.T @ y).max(initial=0.0) > 1e3 * tol_d):
        return out, None  # the point is polished; its duals are not certified here
    return out, mu


def _failed_result(model, base: dict, status: str, message: str, shape=None) -> Result:
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    pol = np.full(shape or (S, A), 1.0 / A)
    return Result(policy=pol, value=np.nan, costs=np.full(K, np.nan), success=False,
                  status=status, message=message, **base)


def _least_overshoot(M, r, c, b, d, solver):
    """The smallest value of each cost row alone (nan where its LP fails) and the
    occupancy minimising the total overshoot (None where that LP fails or K = 0)."""
    K = c.shape[1]
    min_costs = np.full(K, np.nan)
    for k in range(K):
        sol = solve_occupancy_lp(M, r, c, b, d, solver, "min_cost", k)
        if sol.status in _SOLVED:
            min_costs[k] = sol.value
    if K == 0 or np.isnan(min_costs).all():
        return min_costs, None
    return min_costs, solve_occupancy_lp(M, r, c, b, d, solver, "min_overshoot").x


def _recheck(res: Result, ev, budget: np.ndarray, status: str, tol: float, who: str,
             how: str) -> Result:
    """Compare an LP's answer with the exact evaluation ``ev`` of its policy.

    Sets ``value``, ``costs`` from ``ev``, ``check_error`` (the
    largest of the value and cost discrepancies and the budget excess), ``status``,
    ``success``, ``message``: "check_failed" above ``tol``; "optimal_inaccurate" with a
    RuntimeWarning; else success.
    """
    costs = np.asarray(ev.costs, dtype=np.float64)
    err_v = abs(ev.value - res.lp_value)
    err_c = float(np.abs(costs - res.lp_costs).max(initial=0.0))
    over = float(np.max(costs - budget, initial=0.0))
    check_error = max(err_v, err_c, over, 0.0)
    res.update(value=ev.value, costs=costs, check_error=check_error,
               success=False, status=status)
    if check_error > tol:
        res.status = "check_failed"
        res.message = (f"{how} of the LP policy disagrees with the LP: value {ev.value!r} vs "
                       f"{res.lp_value!r}, largest cost discrepancy {err_c!r}, largest "
                       f"budget excess {over!r} (tolerance {tol:.3g}); try "
                       f"solver=\"CLARABEL\" or rescale rewards and costs")
    elif status == "optimal_inaccurate":
        warnings.warn(f"{who}: {res.solver} reports OPTIMAL_INACCURATE; the policy passed "
                      f"the re-check by {how} (error {check_error:.3g}) but is not "
                      f"certified optimal", RuntimeWarning, stacklevel=3)
        res.message = (f"{res.solver} reports an inaccurate optimum; the policy passed the "
                       f"re-check by {how} (error {check_error:.3g})")
    else:
        res.success = True
        res.message = f"optimal; re-check by {how}: error {check_error:.3g} (tolerance {tol:.3g})"
    return res


# =========================================================================== discounted
def _default_policy(model: TabularCMDP, mult: np.ndarray, unvisited: str) -> np.ndarray:
    S, A = model.n_states, model.n_actions
    if unvisited == "uniform" or model.gamma >= 1.0:
        return np.full((S, A), 1.0 / A)
    return np.eye(A)[policy_iteration(model, mult).policy]


def _infeasible_cmdp(model, data, d, solver, base) -> Result:
    keep, M, r, c, b = data
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    min_costs, x = _least_overshoot(M, r, c, b, d, solver)
    if K == 0 or np.isnan(min_costs).all():
        return _failed_result(model, base, "infeasible",
                              "infeasible: no policy satisfies the occupancy flow equations "
                              "(with gamma = 1 no policy reaches a terminal state from p0); "
                              "use gamma < 1 or add a reachable terminal state")
    pi, value, costs = np.full((S, A), 1.0 / A), np.nan, np.full(K, np.nan)
    if x is not None:
        xv = np.zeros((S, A))
        xv[keep] = x.reshape(keep.size, A)
        pi, _ = _policy_from_occupancy(xv, pi)
        ev = evaluate(model, pi)
        value, costs = ev.value, np.asarray(ev.costs, dtype=np.float64)
    return Result(policy=pi, value=value, costs=costs, success=False,
                  status="infeasible", message=infeasible_message(model, min_costs, d),
                  min_costs=min_costs, **base)


def solve_cmdp(model: TabularCMDP, *, solver: str = DEFAULT_LP_SOLVER,
               unvisited: str = "lagrangian", check_tol: float = 1e-6,
               budgets=None) -> Result:
    r"""Exact optimum of a discounted CMDP by Altman's occupancy-measure LP.

    Solves :math:`\max_\pi V_\pi(p_0)` s.t. :math:`C_{\pi,k}(p_0) \le d_k` (module
    docstring).

    Parameters
    ----------
    model : TabularCMDP
        gamma < 1, or gamma = 1 with terminal states.
    solver : {"HIGHS", "CLARABEL"}
    unvisited : {"lagrangian", "uniform"}
        Policy in states the optimal occupancy never visits.
    check_tol : float
        Relative tolerance of the re-check (times :func:`value_scale`).
    budgets : array (K,), optional
        Budgets to use instead of ``model.d`` (e.g. tightened ones).

    Returns
    -------
    Result
        ``policy`` (S, A); ``value`` and ``costs`` (K,) by exact evaluation;
        ``lam`` (K,) :math:`\mu \ge 0`;
        ``success``, ``status`` ("optimal", "optimal_inaccurate", "infeasible",
        "unbounded", "solver_error", "check_failed"), ``message``; ``lp_value``,
        ``lp_costs`` (the LP's objective and costs: the solver's, or those of the polished
        vertex when it is kept with certified duals), ``occupancy`` (S, A), ``visited``
        (S,), ``v`` (S,), ``c`` (S, K), ``check_error``, ``solver``; when infeasible
        ``min_costs`` (K,) and the policy minimising the total overshoot.

    Examples
    --------
    >>> import numpy as np
    >>> from rcmdp_exact import TabularCMDP
    >>> P = np.zeros((2, 2, 2)); P[:, 0, 0] = 1; P[:, 1, 1] = 1
    >>> m = TabularCMDP(P, R=[[0.0, 1.0], [0.0, 1.0]], C=[[[0.0], [1.0]]] * 2, d=[5.0],
    ...                 gamma=0.9)
    >>> res = solve_cmdp(m)
    >>> res.status, round(res.value, 6), round(float(res.lam[0]), 6)
    ('optimal', 5.0, 1.0)
    """
    solver = _check_lp_options(model, solver, unvisited, check_tol)
    K = model.n_constraints
    d = model.d if budgets is None else budget_array(budgets, "budgets", K)
    data = _lp_data(model)
    keep, M, r, c, b = data
    sol = solve_occupancy_lp(M, r, c, b, d, solver)
    base = dict(solver=solver, lam=np.zeros(K), lp_value=np.nan,
                lp_costs=np.full(K, np.nan))
    if sol.status == "solver_error":
        return _failed_result(model, base, "solver_error",
                              f"the LP solver {solver} failed ({sol.error}); try "
                              f"solver=\"CLARABEL\" or rescale rewards and costs")
    if sol.status == "unbounded":
        return _failed_result(model, base, "unbounded",
                              "unbounded: the occupancy LP has no finite optimum (with gamma "
                              "= 1 some policy never reaches a terminal state and earns "
                              "positive reward forever); use gamma < 1")
    if sol.status == "infeasible":
        return _infeasible_cmdp(model, data, d, solver, base)
    default = _default_policy(model, sol.duals, unvisited)
    pi, xv, visited, ev = _lp_policy(model, keep, sol.x, default)
    mult = sol.duals
    x_pol, mu_pol = polish_vertex(M, c, r, b, d, sol.x, sol.duals) \
        if sol.status == "optimal" else (None, None)
    lp_x, lp_value = sol.x, sol.value
    if x_pol is not None:
        pi_p, xv_p, visited_p, ev_p = _lp_policy(model, keep, x_pol, default)
        over, over_p = (float(np.max(np.asarray(e.costs) - d, initial=0.0)) for e in (ev, ev_p))
        if over_p <= over and mu_pol is not None:
            # the exact vertex with certified duals is the LP's optimum, even where the
            # solver's point (feasible to its tolerance only) claims more: on an
            # ill-conditioned LP a flow error of 7e-9 moved the value by 2.7e-4
            pi, xv, visited, ev, mult = pi_p, xv_p, visited_p, ev_p, mu_pol
            lp_x, lp_value = x_pol, float(r @ x_pol)
        elif over_p <= over and abs(ev_p.value - sol.value) <= check_tol * value_scale(model):
            pi, xv, visited, ev = pi_p, xv_p, visited_p, ev_p
    res = Result(policy=pi, lam=mult, lp_value=lp_value, lp_costs=c.T @ lp_x,
                 occupancy=xv, visited=visited, v=ev.v, c=ev.c, solver=solver)
    return _recheck(res, ev, d, sol.status, check_tol * value_scale(model), "solve_cmdp",
                    "the exact evaluation")


# =========================================================================== finite horizon
def _finite_horizon_greedy(model, mult, T, discount) -> np.ndarray:
    """Time-dependent greedy policy (T, S, A) of r - mu.c by backward induction."""
    return backward_induction(model.P_sparse, model.scalarised_reward(mult), T,
                              discount=discount, policy=True).policy


def _finite_horizon_budget(model, budget, T) -> np.ndarray:
    K = model.n_constraints
    if isinstance(budget, str):
        check_choice(budget, "budget", ("rescaled", "model"), f" or an array of {K} budgets")
        if budget == "model" or K == 0:
            return np.array(model.d, dtype=np.float64)
        return rescaled_budget(model.d, model.gamma, T)
    return budget_array(budget, "budget", K)


def _finite_horizon_lp(model, T, discount):
    """Flow matrix, right-hand side, rewards and costs of the time-dependent LP."""
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    E = sp.kron(sp.identity(S, format="csr"), np.ones((1, A)), format="csr")
    sub = sp.diags(np.ones(T - 1), -1, shape=(T, T), format="csr")
    Pt = sp.csr_array(model.P_sparse.T)
    M = sp.csr_array(sp.kron(sp.identity(T, format="csr"), E) - sp.kron(sub, Pt))
    rhs = np.zeros(T * S)
    rhs[:S] = model.p0
    disc = discount ** np.arange(T)
    rr = np.kron(disc, model.r.ravel())
    cc = np.kron(disc[:, None], model.c.reshape(S * A, K)) if K else np.zeros((T * S * A, 0))
    return M, rr, cc, rhs


def solve_cmdp_finite_horizon(model: TabularCMDP, horizon: int | None = None, *,
                              budget="rescaled", discount: float = 1.0,
                              solver: str = DEFAULT_LP_SOLVER,
                              unvisited: str = "lagrangian",
                              check_tol: float = 1e-6) -> Result:
    r"""Exact optimum of the T-step CMDP by the LP over time-dependent occupancies.

    Parameters
    ----------
    model : TabularCMDP
    horizon : int, optional
        T (default ``model.horizon``).
    budget : "rescaled", "model" or array (K,)
        "rescaled" (default): :math:`d\,T/\sum_{i<T}\gamma^i`; "model": ``model.d``.
    discount : float
        Per-step discount :math:`\delta` (1.0: the undiscounted test metric).
    solver, unvisited, check_tol
        As in :func:`solve_cmdp`.

    Returns
    -------
    Result
        ``policy`` (T, S, A), ``value``, ``costs`` (K,) by backward induction,
        ``budget``, ``lam``, ``success``, ``status``, ``message``,
        ``lp_value``, ``lp_costs``, ``occupancy`` (T, S, A), ``check_error``,
        ``solver``, ``horizon``; when infeasible ``min_costs`` (K,).
    """
    solver = _check_lp_options(model, solver, unvisited, check_tol)
    T = model.horizon if horizon is None else horizon
    T = check_int(T, "horizon", 1, hint="; pass horizon=T or build the model with horizon=T")
    discount = check_real(discount, "discount", 0.0, 1.0)
    bud = _finite_horizon_budget(model, budget, T)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    M, rr, cc, rhs = _finite_horizon_lp(model, T, discount)
    sol = solve_occupancy_lp(M, rr, cc, rhs, bud, solver)
    base = dict(solver=solver, lam=np.zeros(K), lp_value=np.nan,
                lp_costs=np.full(K, np.nan), budget=bud, horizon=T)
    if sol.status in ("solver_error", "unbounded"):
        return _failed_result(model, base, sol.status, f"the LP solver {solver} failed "
                              f"({sol.error or sol.status}); try solver=\"CLARABEL\"",
                              shape=(T, S, A))
    if sol.status == "infeasible":  # only through the budgets: the flows are feasible
        return _finite_horizon_infeasible(model, (M, rr, cc, rhs), bud, T, discount,
                                          solver, base)
    xv = sol.x.reshape(T, S, A)
    default = (np.full((T, S, A), 1.0 / A) if unvisited == "uniform"
               else _finite_horizon_greedy(model, sol.duals, T, discount))
    pi, visited = _policy_from_occupancy(xv, default)
    ev = evaluate_time_dependent(model, pi, discount)
    res = Result(policy=pi, lam=sol.duals, lp_value=sol.value, lp_costs=cc.T @ sol.x,
                 occupancy=xv, visited=visited, solver=solver, budget=bud, horizon=T)
    return _recheck(res, ev, bud, sol.status, check_tol * value_scale(model, T),
                    "solve_cmdp_finite_horizon", "backward induction")


def _finite_horizon_infeasible(model, lp, bud, T, discount, solver, base) -> Result:
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    min_costs, xo = _least_overshoot(*lp, bud, solver)
    pi, value, costs = np.full((T, S, A), 1.0 / A), np.nan, np.full(K, np.nan)
    if xo is not None:
        pi, _ = _policy_from_occupancy(xo.reshape(T, S, A), pi)
        ev = evaluate_time_dependent(model, pi, discount)
        value, costs = ev.value, ev.costs
    return Result(policy=pi, value=value, costs=costs, success=False,
                  status="infeasible",
                  message=infeasible_message(model, min_costs, bud, what="T-step"),
                  min_costs=min_costs, **base)
