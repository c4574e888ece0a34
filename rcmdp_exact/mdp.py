r"""Plain MDP solvers: the greedy policy, Howard's policy iteration, backward induction.

The building blocks of the constrained and robust solvers, public in the style of
QuantEcon's ``DiscreteDP``:

* :func:`greedy_policy`: the one-hot argmax of Q-values (ties to the lowest action), the
  greedy version of a stochastic policy;
* :func:`policy_iteration`: Howard's policy iteration for the discounted problem with the
  scalarised reward :math:`r - \lambda^\top c`, each policy evaluated exactly
  (:func:`rcmdp_exact.evaluation.evaluate`), the current action kept on ties within
  ``1e-12`` times the value scale;
* :func:`backward_induction`: the optimal time-dependent policy of a T-step problem,

  .. math::

      Q_t(s, a) = g(s, a) + \delta \sum_{s'} P(s'|s,a) V_{t+1}(s'), \qquad
      a_t(s) = \arg\max_a Q_t(s, a), \qquad V_T = 0,

  batched over kernels, and optionally tracking the reward and the costs of the greedy
  policy beside its scalarised value (the finite-horizon Lagrangian of the CMDP LP's
  unvisited states and of Table 1's pooled bound).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._checks import check_int, check_real
from ._result import Result
from .evaluation import evaluate
from .model import TabularCMDP, check_model

__all__ = ["backward_induction", "greedy_policy", "policy_iteration", "value_scale"]


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
    """A magnitude of values: max |r|, |c| times the effective horizon (at least 1)."""
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
