r"""Exact evaluation of a fixed stochastic policy.

Discounted (infinite horizon)
-----------------------------
For a policy :math:`\pi` (S, A) let :math:`P_\pi(s, s') = \sum_a \pi(a|s) P(s'|s, a)`,
:math:`r_\pi(s) = \sum_a \pi(a|s) r(s, a)` and likewise :math:`c_{\pi,k}`.  Then

.. math::

    V = (I - \gamma P_\pi)^{-1} r_\pi, \qquad C_k = (I - \gamma P_\pi)^{-1} c_{\pi,k},

    Q(s, a) = r(s, a) + \gamma \sum_{s'} P(s'|s, a) V(s'),

    d_\gamma^\top = p_0^\top (I - \gamma P_\pi)^{-1}
    \quad (\textstyle\sum_s d_\gamma(s) = 1/(1-\gamma)),

and the Lagrangian of the paper (Eq. "Lagrange") at the start distribution is
:math:`L = p_0^\top V - \lambda^\top (p_0^\top C - d)`.  One sparse LU factorisation of
:math:`I - \gamma P_\pi` serves every right-hand side (V, all C_k) and, transposed, the
occupancy.  Terminal states earn nothing (their r and c are zero), so their value is 0.

With :math:`\gamma = 1` the system is solved on the non-terminal states, which needs
every state reachable under the policy to reach a terminal state; otherwise a
:class:`~rcmdp_exact.model.ModelError` names a state that never does.

Finite horizon, undiscounted (the paper's test metric)
------------------------------------------------------
:math:`V_T = 0`, :math:`V_t = r_\pi + P_\pi V_{t+1}` by backward induction;
the value and cost of the T-step episode are :math:`p_0^\top V_0` and
:math:`p_0^\top C_0`.  The budget is rescaled to :math:`d\,T / \sum_{i<T}\gamma^i`
(:func:`rescaled_budget`) and the penalised return is
:math:`R_{pen} = V - 500 \max(0, C - d')` (:func:`penalised_return`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ._result import Result
from .model import ModelError, TabularCMDP, check_policy

__all__ = [
    "PENALTY_WEIGHT",
    "evaluate",
    "evaluate_finite_horizon",
    "penalised_return",
    "policy_transition_matrix",
    "rescaled_budget",
    "check_proper",
]

#: The evaluation weight of the penalised return (the paper's maximal multiplier).
PENALTY_WEIGHT = 500.0


def policy_transition_matrix(model: TabularCMDP, policy) -> sp.csr_array:
    """Sparse :math:`P_\\pi` (S, S) with :math:`P_\\pi(s, s') = \\sum_a \\pi(a|s) P(s'|s,a)`."""
    S, A = model.n_states, model.n_actions
    pi = check_policy(policy, S, A)
    return _p_pi(model, pi)


def _p_pi(model: TabularCMDP, pi: np.ndarray) -> sp.csr_array:
    S, A = model.n_states, model.n_actions
    rows = np.repeat(np.arange(S), A)
    cols = np.arange(S * A)
    Pi = sp.csr_array((pi.ravel(), (rows, cols)), shape=(S, S * A))
    return sp.csr_array(Pi @ model.P_sparse)


def check_proper(model: TabularCMDP, P_pi: sp.sparray, what: str) -> None:
    """Raise if a state reachable from p0 under ``P_pi`` never reaches a terminal state.

    Uses networkx on the support graph of ``P_pi``.
    """
    import networkx as nx

    S = model.n_states
    coo = sp.coo_array(P_pi)
    keep = coo.data > 0
    G = nx.DiGraph()
    G.add_nodes_from(range(S))
    G.add_edges_from(zip(coo.row[keep].tolist(), coo.col[keep].tolist(), strict=True))
    starts = np.flatnonzero(model.p0 > 0)
    reach = set(starts.tolist())
    for s in starts:
        reach |= nx.descendants(G, int(s))
    terms = np.flatnonzero(model.terminal)
    good = set(terms.tolist())
    for t in terms:
        good |= nx.ancestors(G, int(t))
    bad = sorted(reach - good)
    if bad:
        s = bad[0]
        lab = model.state_labels
        name = f"{s}" if lab is None else f"{s} ({lab[s]})"
        raise ModelError(
            f"{what} has no discount and no horizon, but state {name} is reachable from "
            f"p0 under the policy and never reaches a terminal state, so the undiscounted "
            f"sums diverge ({len(bad)} such states); give a horizon "
            f"(evaluate_finite_horizon), use gamma < 1, or change the policy"
        )


def evaluate(model: TabularCMDP, policy, lam=None) -> Result:
    """Exact discounted evaluation of a stochastic policy.

    Parameters
    ----------
    model : TabularCMDP
    policy : array (S, A) of action probabilities, or int array (S,) of actions
    lam : array (K,) or float, optional
        Lagrange multipliers (default 0).

    Returns
    -------
    Result
        ``v`` (S,), ``c`` (S, K), ``lagrangian`` (S,) = v - c @ lam, ``q`` (S, A),
        ``qc`` (S, A, K), ``q_lagrangian`` (S, A), ``occupancy`` (S,) (discounted,
        from p0; with gamma = 1 the expected visits before absorption, 0 on terminal
        states), ``value`` = p0.v, ``cost`` (K,) = p0.c, ``lagrangian_p0`` =
        value - lam.(cost - d), ``policy`` and ``lam``.
    """
    if not isinstance(model, TabularCMDP):
        raise ModelError(f"model must be a TabularCMDP, got {type(model).__name__}")
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    pi = check_policy(policy, S, A)
    lam = model.check_multipliers(lam)
    gamma = model.gamma
    P_pi = _p_pi(model, pi)
    r, c = model.r, model.c
    rhs = np.empty((S, 1 + K))
    rhs[:, 0] = np.einsum("sa,sa->s", pi, r)
    rhs[:, 1:] = np.einsum("sa,sak->sk", pi, c)

    if gamma < 1.0:
        idx = None
        M = sp.identity(S, format="csc") - gamma * sp.csc_array(P_pi)
    else:
        check_proper(model, P_pi, "evaluate with gamma = 1")
        idx = np.flatnonzero(~model.terminal)
        sub = sp.csc_array(P_pi)[idx][:, idx]
        M = sp.identity(idx.size, format="csc") - sub
    lu = spla.splu(sp.csc_matrix(M))
    sol = np.zeros((S, 1 + K))
    occ = np.zeros(S)
    if idx is None:
        sol[:] = lu.solve(rhs)
        occ[:] = lu.solve(model.p0, trans="T")
    else:
        sol[idx] = lu.solve(rhs[idx])
        # with gamma = 1: expected visits to each non-terminal state before
        # absorption; terminal states are given 0 (nothing is earned there)
        occ[idx] = lu.solve(model.p0[idx], trans="T")
    v = sol[:, 0]
    cc = sol[:, 1:]
    nxt = (model.P_sparse @ sol).reshape(S, A, 1 + K)
    cont = gamma * nxt
    q = r + cont[:, :, 0]
    qc = c + cont[:, :, 1:]
    if model.terminal.any():
        q[model.terminal] = 0.0
        qc[model.terminal] = 0.0
    value = float(model.p0 @ v)
    cost = model.p0 @ cc
    return Result(
        v=v,
        c=cc,
        lagrangian=v - cc @ lam,
        q=q,
        qc=qc,
        q_lagrangian=q - qc @ lam,
        occupancy=occ,
        value=value,
        cost=cost,
        lagrangian_p0=value - float(lam @ (cost - model.d)),
        policy=pi,
        lam=lam,
    )


def evaluate_finite_horizon(model: TabularCMDP, policy, horizon: int | None = None,
                            discount: float = 1.0) -> Result:
    """Exact T-step evaluation by backward induction (the paper's test metric).

    Parameters
    ----------
    model : TabularCMDP
    policy : array (S, A) or int array (S,)
        A stationary policy (the greedy policy of a learner, for instance).
    horizon : int, optional
        Number of steps T; defaults to ``model.horizon``.
    discount : float
        Per-step discount (1.0, the default, gives the undiscounted test metric).

    Returns
    -------
    Result
        ``value`` and ``cost`` (K,) from p0, per-state ``v`` (S,) and ``c`` (S, K) at
        t = 0, ``horizon``; ``budget`` (K,) rescaled by :func:`rescaled_budget` (with
        the model's gamma), ``overshoot`` = cost - budget and ``penalised_return``.
    """
    if not isinstance(model, TabularCMDP):
        raise ModelError(f"model must be a TabularCMDP, got {type(model).__name__}")
    T = model.horizon if horizon is None else horizon
    if T is None:
        raise ModelError(
            "evaluate_finite_horizon needs a horizon: pass horizon=T or build the model "
            "with horizon=T"
        )
    if not (isinstance(T, int | np.integer) and T >= 0):
        raise ModelError(f"horizon must be a non-negative integer, got {T!r}")
    if not 0.0 <= discount <= 1.0:
        raise ModelError(f"discount must lie in [0, 1], got {discount!r}")
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    pi = check_policy(policy, S, A)
    P_pi = _p_pi(model, pi)
    rhs = np.empty((S, 1 + K))
    rhs[:, 0] = np.einsum("sa,sa->s", pi, model.r)
    rhs[:, 1:] = np.einsum("sa,sak->sk", pi, model.c)
    W = np.zeros((S, 1 + K))
    for _ in range(int(T)):
        W = rhs + discount * (P_pi @ W)
    value = float(model.p0 @ W[:, 0])
    cost = model.p0 @ W[:, 1:]
    budget = rescaled_budget(model.d, model.gamma, int(T)) if T else model.d.copy()
    return Result(
        value=value,
        cost=cost,
        v=W[:, 0],
        c=W[:, 1:],
        horizon=int(T),
        budget=budget,
        overshoot=cost - budget,
        penalised_return=penalised_return(value, cost, budget),
    )


def rescaled_budget(d, gamma: float, horizon: int) -> np.ndarray:
    """The budget of the T-step undiscounted metric: :math:`d\\,T/\\sum_{i<T}\\gamma^i`.

    >>> float(rescaled_budget([3.0], 0.99, 200)[0])  # Safe Navigation 1
    6.92...
    """
    d = np.asarray(d, dtype=np.float64)
    T = int(horizon)
    if T < 1:
        raise ModelError(f"horizon must be >= 1 to rescale a budget, got {horizon!r}")
    norm = float(T) if gamma == 1.0 else (1.0 - gamma**T) / (1.0 - gamma)
    return d * T / norm


def penalised_return(value, cost, budget, weight: float = PENALTY_WEIGHT) -> float:
    """:math:`R_{pen} = V - w \\sum_k \\max(0, C_k - d_k)` with w = 500 by default."""
    over = np.maximum(0.0, np.asarray(cost, dtype=np.float64) - np.asarray(budget))
    return float(value - weight * over.sum())
