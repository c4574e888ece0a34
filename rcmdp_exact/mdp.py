r"""Plain MDP solvers: the greedy policy, Howard's policy iteration, backward induction.

The building blocks of the constrained and robust solvers, public in the style of
QuantEcon's ``DiscreteDP``:

* :func:`greedy_policy`: the one-hot argmax of Q-values (ties to the lowest action), the
  greedy version of a stochastic policy;
* :func:`policy_iteration`: Howard's policy iteration for the discounted problem with the
  scalarised reward :math:`r - \lambda^\top c`, each policy evaluated exactly
  (:func:`rcmdp_exact.evaluation.evaluate`), the current action kept on ties within
  ``1e-12`` times the value scale;
* :func:`solve_mdp`: the discounted optimum by policy iteration, value iteration,
  modified policy iteration or linear programming, each with an honest convergence
  flag (a bound on the distance to the optimal values, not a silent iteration cap),
  and the T-step optimum by backward induction;
* :func:`backward_induction`: the optimal time-dependent policy of a T-step problem,

  .. math::

      Q_t(s, a) = g(s, a) + \delta \sum_{s'} P(s'|s,a) V_{t+1}(s'), \qquad
      a_t(s) = \arg\max_a Q_t(s, a), \qquad V_T = 0,

  batched over kernels, and optionally tracking the reward and the costs of the greedy
  policy beside its scalarised value (the finite-horizon Lagrangian of the CMDP LP's
  unvisited states and of Table 1's pooled bound).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ._checks import as_float_array, check_choice, check_int, check_real
from ._result import Result, Status
from .evaluation import evaluate, rescaled_budget
from .model import TabularCMDP, check_model

__all__ = ["MDP_METHODS", "backward_induction", "greedy_policy", "policy_iteration",
           "solve_mdp", "value_scale"]

#: Methods of :func:`solve_mdp` for the discounted problem.
MDP_METHODS = ("policy_iteration", "value_iteration", "modified_policy_iteration", "lp")


def greedy_policy(q) -> np.ndarray:
    """One-hot argmax over the last axis (ties to the lowest index), shape of ``q``.

    The greedy policy (S, A) of Q-values (S, A), or the greedy version of a stochastic
    policy (..., S, A) (its most likely action in every state).

    >>> greedy_policy([[0.2, 0.8], [0.5, 0.5]])
    array([[0., 1.],
           [1., 0.]])
    """
    q = np.asarray(q, dtype=np.float64)
    out = np.zeros(q.shape, dtype=np.float64)
    np.put_along_axis(out, np.argmax(q, axis=-1)[..., None], 1.0, axis=-1)
    return out


def value_scale(model: TabularCMDP, horizon: int | None = None) -> float:
    """A magnitude of values: ``max |r|, |c|`` times the effective horizon (at least 1)."""
    mag = float(np.abs(model.r).max(initial=0.0))
    if model.n_constraints:
        mag = max(mag, float(np.abs(model.c).max()))
    if horizon is not None:
        eff = float(horizon)
    else:
        eff = 1.0 / (1.0 - model.gamma) if model.gamma < 1.0 else float(model.n_states)
    return max(1.0, mag * eff)


def policy_iteration(model: TabularCMDP, lam=None, max_iter: int = 10_000) -> Result:
    r"""Optimal deterministic policy of the scalarised reward :math:`r - \lambda^\top c`.

    Howard's policy iteration with exact evaluations
    (:func:`rcmdp_exact.evaluation.evaluate`), keeping the current action on ties
    (within ``1e-12`` times the value scale).  Needs gamma < 1.

    Returns
    -------
    Result
        ``policy`` (S,) int, ``v`` (S,), ``q`` (S, A), ``value`` = p0.v,
        ``iterations``, ``converged``.
    """
    check_model(model)
    check_real(model.gamma, "gamma", 0.0, 1.0, high_open=True,
               hint="; policy iteration needs a discounted model")
    max_iter = check_int(max_iter, "max_iter", 1)
    lam = model.check_multipliers(lam)
    pi = np.argmax(model.scalarised_reward(lam), axis=1)
    tol = 1e-12 * value_scale(model)
    rows = np.arange(model.n_states)
    for it in range(1, max_iter + 1):
        ev = evaluate(model, np.eye(model.n_actions)[pi], lam, check=False)
        q = ev.q_lagrangian
        keep = q[rows, pi] >= q.max(axis=1) - tol
        if keep.all() or it == max_iter:
            break
        pi = np.where(keep, pi, np.argmax(q, axis=1))
    return Result(policy=pi, v=ev.lagrangian, q=q, value=float(model.p0 @ ev.lagrangian),
                  iterations=it, converged=bool(keep.all()))


def backward_induction(P, r, horizon: int, *, discount: float = 1.0, c=None, lam=None,
                       policy: bool = False) -> Result:
    r"""The optimal time-dependent policy of a T-step problem (module docstring).

    Parameters
    ----------
    P : array (S, A, S) or (N, S, A, S), or scipy.sparse (S*A, S)
        Transitions; a leading axis N solves N problems at once.
    r : array (S, A) or (N, S, A)
        Expected one-step reward (zero in terminal states).
    horizon : int
        T >= 1 steps.
    discount : float
        The per-step discount :math:`\delta` (1: undiscounted).
    c : array (S, A, K) or (N, S, A, K), optional
        Expected one-step costs: the greedy policy then maximises :math:`g = r -
        \lambda^\top c` and the reward and every cost of that policy are tracked
        (``q`` uses the tracked columns: :math:`Q = g + \delta(P V_r) - \lambda^\top
        \delta (P V_c)`).
    lam : float or array (K,) or (N, K), optional
        Multipliers of ``c`` (default 0).
    policy : bool
        Also return the one-hot policy (T, ..., S, A).

    Returns
    -------
    Result
        ``v`` (..., S): the scalarised value-to-go at t = 0; with ``c``, ``value``
        (..., S) and ``costs`` (..., S, K) of the greedy policy at t = 0 (``v`` =
        value - costs @ lam); with ``policy``, ``policy`` (T, ..., S, A).
    """
    T = int(horizon)
    sparse = sp.issparse(P)
    r = np.asarray(r, dtype=np.float64)
    batch = r.shape[:-2]
    S, A = r.shape[-2:]
    N = int(np.prod(batch, dtype=np.int64))
    Pf = P if sparse else np.asarray(P, dtype=np.float64).reshape(N, S * A, S)
    K = 0 if c is None else np.shape(c)[-1]
    cc = None if c is None else np.asarray(c, dtype=np.float64).reshape(N, S, A, K)
    lam_arr = np.zeros((N, K)) if lam is None else np.broadcast_to(
        np.asarray(lam, dtype=np.float64).reshape(-1, K) if K else np.zeros((1, 0)), (N, K))
    rr = r.reshape(N, S, A)
    g = rr if K == 0 else rr - np.einsum("nk,nsak->nsa", lam_arr, cc)
    W = np.zeros((N, S, 1 + K))  # [reward, costs] to go (K = 0: the value of g)
    pols = np.zeros((T, N, S, A)) if policy else None
    idx_n, idx_s = np.arange(N)[:, None], np.arange(S)[None, :]
    for t in range(T - 1, -1, -1):
        if sparse:
            nxt = (Pf @ W[0]).reshape(1, S, A, 1 + K)
        else:
            nxt = (Pf @ W).reshape(N, S, A, 1 + K)
        if discount != 1.0:
            nxt = discount * nxt
        q = g + nxt[..., 0]
        for k in range(K):
            q = q - lam_arr[:, k, None, None] * nxt[..., 1 + k]
        a = np.argmax(q, axis=2)
        if pols is not None:
            pols[t] = greedy_policy(q)
        if K == 0:
            W = q.max(axis=2)[..., None]
        else:
            W = np.concatenate([(rr[idx_n, idx_s, a] + nxt[idx_n, idx_s, a, 0])[..., None],
                                cc[idx_n, idx_s, a] + nxt[idx_n, idx_s, a, 1:]], axis=-1)
    out = Result()
    if K == 0:
        out.v = W[..., 0].reshape(*batch, S)
    else:
        value, costs = W[..., 0], W[..., 1:]
        out.update(v=(value - np.einsum("nsk,nk->ns", costs, lam_arr)).reshape(*batch, S),
                   value=value.reshape(*batch, S), costs=costs.reshape(*batch, S, K))
    if pols is not None:
        out.policy = pols.reshape(T, *batch, S, A)
    return out


def _bellman(model: TabularCMDP, g: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Q-values (S, A) of the reward g (S, A) at the state values v (S,)."""
    S, A = g.shape
    return g + model.gamma * (model.P_sparse @ v).reshape(S, A)


def _finish(model, g, v, lam, method, iterations, converged, message, error_bound):
    """The result of :func:`solve_mdp`: the greedy policy of v and the residual of v."""
    q = _bellman(model, g, v)
    tv = q.max(axis=1)
    residual = float(np.abs(tv - v).max())
    actions = q.argmax(axis=1)
    if not converged:
        warnings.warn(f"solve_mdp: {message}", RuntimeWarning, stacklevel=3)
    return Result(
        v=v, q=q, policy=greedy_policy(q), actions=actions, value=float(model.p0 @ v),
        iterations=int(iterations), residual=residual, error_bound=float(error_bound),
        converged=bool(converged), success=bool(converged),
        status=Status.CONVERGED if converged else Status.NOT_CONVERGED, message=message,
        method=method, lam=lam)


def _lp_values(model: TabularCMDP, g: np.ndarray) -> np.ndarray:
    r"""The optimal values of the LP :math:`\min p^\top v` s.t. :math:`v(s) \ge g(s, a) +
    \gamma P(s, a)^\top v` (weights p > 0 on every state: the uniform distribution),
    solved by HiGHS through ``scipy.optimize.linprog``."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    S, A = g.shape
    E = sp.kron(sp.identity(S, format="csr"), np.ones((A, 1)), format="csr")
    A_ub = sp.csr_array(model.gamma * model.P_sparse - E)
    sol = linprog(np.full(S, 1.0 / S), A_ub=A_ub, b_ub=-g.ravel(), bounds=[(None, None)] * S,
                  method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                           "dual_feasibility_tolerance": 1e-10})
    return None if sol.status != 0 else np.asarray(sol.x, dtype=np.float64)


def solve_mdp(model: TabularCMDP, method: str = "policy_iteration", *, lam=None,
              horizon=None, discount: float = 1.0, tol: float = 1e-12,
              max_iter: int = 100_000, k: int = 20, v0=None) -> Result:
    r"""The optimal policy and values of a plain MDP (the reward :math:`r - \lambda^\top c`).

    Discounted (``horizon=None``, gamma < 1), by ``method``:

    * ``"policy_iteration"``: Howard's policy iteration with exact evaluations
      (:func:`policy_iteration`); its values are exact;
    * ``"value_iteration"``: :math:`v \leftarrow \max_a Q_v` from ``v0`` (default 0);
    * ``"modified_policy_iteration"``: a greedy step, then ``k`` evaluation sweeps of the
      greedy policy, repeated;
    * ``"lp"``: the LP :math:`\min \sum_s v(s)` s.t. :math:`v \ge r + \gamma P v`
      (HiGHS through scipy), its solution polished by exact evaluation of its greedy
      policy.

    Value and modified policy iteration stop when the McQueen-Porteus bounds
    :math:`Tv + \frac{\gamma}{1-\gamma}[\min(Tv - v), \max(Tv - v)]` put the optimal
    values within ``tol`` times the value scale, and return the midpoint of the bounds.
    Every result carries ``error_bound``, a bound on :math:`\|v - v^*\|_\infty`: the
    half-width of those bounds, or for exact evaluations the contraction bound
    :math:`\|Tv - v\|_\infty / (1 - \gamma)`; ``converged`` is True only when it is
    within ``tol`` times the value scale (else a RuntimeWarning says why).

    Finite horizon (``horizon`` = T or ``"model"``): backward induction
    (:func:`backward_induction`) with the per-step ``discount`` (1 by default, the
    paper's test metric); the policy is time-dependent, (T, S, A).

    Parameters
    ----------
    model : TabularCMDP
        Dense or sparse.
    method : {"policy_iteration", "value_iteration", "modified_policy_iteration", "lp"}
    lam : float or array (K,), optional
        Multipliers of the costs (default 0: the plain reward).
    horizon : int or "model", optional
        Solve the T-step problem instead of the discounted one.
    discount : float
        Per-step discount of the T-step problem.
    tol : float
        Relative accuracy (times :func:`value_scale`).
    max_iter : int
        Iteration cap; reaching it leaves ``converged`` False.
    k : int
        Evaluation sweeps per step of modified policy iteration.
    v0 : array (S,), optional
        Start of value and modified policy iteration.

    Returns
    -------
    Result
        ``v`` (S,), ``q`` (S, A), ``policy`` (S, A) one-hot greedy (``actions`` (S,)),
        ``value`` = p0.v, ``iterations``, ``residual`` :math:`\|Tv - v\|_\infty`,
        ``error_bound``, ``converged``, ``success``, ``status``, ``message``,
        ``method``, ``lam``.  Finite horizon: ``v`` (S,) at t = 0, ``value``,
        ``policy`` (T, S, A), ``horizon``, ``status`` "optimal".

    Examples
    --------
    >>> from rcmdp_exact import domains
    >>> m = domains.garnet(6, 3, 2, n_constraints=0, seed=1)
    >>> a, b = solve_mdp(m), solve_mdp(m, "value_iteration")
    >>> bool(abs(a.value - b.value) <= 1e-9 * value_scale(m)), str(a.status), str(b.status)
    (True, 'converged', 'converged')
    """
    check_model(model)
    lam_arr = model.check_multipliers(lam)
    g = np.asarray(model.scalarised_reward(lam_arr), dtype=np.float64)
    check_real(tol, "tol", 0.0, low_open=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    if horizon is not None:
        T = model.horizon if isinstance(horizon, str) and horizon == "model" else horizon
        T = check_int(T, "horizon", 1, hint=" (or 'model', or None for the discounted problem)")
        disc = check_real(discount, "discount", 0.0, 1.0)
        res = backward_induction(model.P_sparse, g, T, discount=disc, policy=True)
        return Result(v=res.v, value=float(model.p0 @ res.v), policy=res.policy, horizon=T,
                      iterations=T, converged=True, success=True, status=Status.OPTIMAL,
                      message=f"backward induction over {T} steps", method="backward_induction",
                      lam=lam_arr, budget=rescaled_budget(model.d, model.gamma, T))
    check_choice(method, "method", MDP_METHODS,
                 hint=" (or horizon=T for backward induction)")
    check_real(model.gamma, "the model's gamma", 0.0, 1.0, high_open=True,
               hint="; solve_mdp's discounted methods need gamma < 1: give horizon=T for "
                    "the T-step problem")
    gamma, S = model.gamma, model.n_states
    scale = value_scale(model)
    target = tol * scale
    if method == "policy_iteration":
        pi = policy_iteration(model, lam_arr, max_iter)
        v = pi.v
        q = _bellman(model, g, v)
        bound = float(np.abs(q.max(axis=1) - v).max()) / (1.0 - gamma)
        ok = pi.converged and bound <= target
        msg = (f"policy iteration: stable after {pi.iterations} iterations, exact values "
               f"(error bound {bound:.2e})" if ok else
               f"policy iteration stopped after {pi.iterations} iterations (error bound "
               f"{bound:.2e} > tol * scale = {target:.2e}); raise max_iter")
        return _finish(model, g, v, lam_arr, method, pi.iterations, ok, msg, bound)
    if method == "lp":
        v = _lp_values(model, g)
        if v is None:
            return _finish(model, g, np.zeros(S), lam_arr, method, 1, False,
                           "the LP solver did not return an optimum; use method="
                           "'policy_iteration'", np.inf)
        # polish: the exact values of the LP's greedy policy (an optimal policy)
        actions = _bellman(model, g, v).argmax(axis=1)
        v = evaluate(model, np.eye(model.n_actions)[actions], lam_arr, check=False).lagrangian
        bound = float(np.abs(_bellman(model, g, v).max(axis=1) - v).max()) / (1.0 - gamma)
        ok = bound <= target
        msg = (f"LP (HiGHS), its greedy policy evaluated exactly (error bound {bound:.2e})"
               if ok else f"the LP's greedy policy is not optimal to tol (error bound "
               f"{bound:.2e}); use method='policy_iteration'")
        return _finish(model, g, v, lam_arr, method, 1, ok, msg, bound)
    check_int(k, "k", 1)
    v = np.zeros(S) if v0 is None else np.array(as_float_array(
        v0, "v0", "give one value per state", shape=(S,), axes=("s",)))
    factor = gamma / (1.0 - gamma)
    bound, it = np.inf, 0
    while it < max_iter:
        it += 1
        q = _bellman(model, g, v)
        tv = q.max(axis=1)
        diff = tv - v
        lo, hi = float(diff.min()), float(diff.max())
        bound = factor * (hi - lo) / 2.0
        mid = tv + factor * (lo + hi) / 2.0  # the centre of the McQueen-Porteus bounds
        if bound <= target or it == max_iter:
            break
        if method == "value_iteration":
            v = tv
            continue
        pol = q.argmax(axis=1)
        rows = np.arange(S) * model.n_actions + pol
        P_pi, g_pi = model.P_sparse[rows], g[np.arange(S), pol]
        v = tv
        for _ in range(int(k)):
            v = g_pi + gamma * (P_pi @ v)
    v = mid
    ok = bound <= target
    msg = (f"{method.replace('_', ' ')} met the McQueen-Porteus bound after {it} iterations "
           f"(error bound {bound:.2e})" if ok else
           f"iteration limit {max_iter} reached with error bound {bound:.2e} > tol * scale "
           f"= {target:.2e}; raise max_iter or use method='policy_iteration'")
    return _finish(model, g, v, lam_arr, method, it, ok, msg, bound)
