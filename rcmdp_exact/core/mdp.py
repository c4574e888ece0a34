r"""Plain MDP solvers: the greedy policy, Howard's policy iteration, backward induction.

The building blocks of the constrained and robust solvers, public in the style of
QuantEcon's ``DiscreteDP``:

* :func:`greedy_policy`: the one-hot argmax of Q-values (ties to the lowest action), the
  greedy version of a stochastic policy;
* :func:`policy_iteration`: Howard's policy iteration for the discounted problem with the
  scalarised reward :math:`r - \lambda^\top c`, each policy evaluated exactly
  (:func:`rcmdp_exact.core.evaluation.evaluate`), the current action kept on ties within
  ``1e-12`` times the value scale;
* :func:`solve_mdp`: the discounted optimum by policy iteration, value iteration,
  modified policy iteration or linear programming, each with an honest convergence
  flag (a certified bound on the distance to the optimal values that includes the
  rounding of float64, not a silent iteration cap), and the T-step optimum by backward
  induction;
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

from .._checks import as_float_array, check_choice, check_int, check_real
from .._result import Result, Status
from .evaluation import evaluate, rescaled_budget
from .model import TabularCMDP, check_model

__all__ = ["MDP_METHODS", "backward_induction", "box_policy_iteration", "greedy_box",
           "greedy_policy", "policy_iteration", "solve_mdp", "value_scale"]

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


def greedy_box(q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    r"""The maximiser of :math:`\sum_a \pi(a) q(a)` over :math:`\{l \le \pi \le u\} \cap \Delta`.

    Start at ``lo`` and give the remaining mass :math:`1 - \sum_a l(a)` to the actions
    in decreasing order of q (ties to the lowest index), each up to ``hi``.  Every
    leading axis is a batch axis; the box must be non-empty (:math:`\sum l \le 1 \le
    \sum u`).  With l = 0 and u = 1 it is the one-hot greedy policy of q
    (:func:`greedy_policy`).
    """
    order = np.argsort(-q, axis=-1, kind="stable")
    room = np.take_along_axis(hi - lo, order, axis=-1)
    left = np.maximum(1.0 - lo.sum(axis=-1, keepdims=True), 0.0)
    before = np.cumsum(room, axis=-1) - room
    give = np.clip(left - before, 0.0, room)
    out = lo.copy()
    np.put_along_axis(out, order, np.take_along_axis(out, order, axis=-1) + give, axis=-1)
    return out


def box_policy_iteration(evaluate, pi: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
                         max_iter: int, rtol: float = 0.0, atol=0.0, improve=None,
                         stop=None, greedy=None) -> Result:
    r"""Howard's policy iteration for a batch of J box MDPs: the one Howard iteration.

    The policy player of every fixed point of the toolkit: the plain MDP
    (:func:`policy_iteration`, one problem, the full box), the robust game
    (:meth:`~rcmdp_exact.robust.RobustGame.solve`: the adversary's fixed point is the
    evaluation), the RCPG variants' best responses and the occupancy intervals of the
    bracket's boxes (box MDPs under fixed kernels).

    Each round evaluates the policies, ``w, q = evaluate(pi)`` ((J, S) values and
    (J, S, A) action values), and takes the box maximiser ``best`` of q
    (:func:`greedy_box` over :math:`\{l \le \pi \le u\} \cap \Delta`, or ``improve(w, q,
    pi) -> (best, gain)``); a state switches to ``best`` only where its gain
    :math:`\sum_a (\text{best} - \pi)(a)\, q(a)` is above ``atol + rtol * max(1,
    max|w|)`` (the current choice is kept on near-ties, so the iteration cannot cycle on
    rounding).  It stops when no state switches (``stable``), after ``max_iter``
    evaluations, or when ``stop()`` is true; the policies are not changed after their
    last evaluation, so ``pi``, ``w`` and ``q`` belong together.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(pi) -> (w, q)`` (any further items of the tuple are kept as ``info``).
    pi, lo, hi : arrays (J, S, A)
        The starting policies (in their boxes) and the boxes.
    greedy : callable, optional
        The box maximiser, ``greedy(q, lo, hi)`` (default :func:`greedy_box`; the robust
        engine passes its compiled equal, :func:`rcmdp_exact.robust.compiled.greedy_fill`).
    atol : float or array (J,)

    Returns
    -------
    Result
        ``pi``, ``w``, ``q`` (the last evaluation), ``best`` (the box maximiser of that q),
        ``gain`` (J, S), ``info`` (the rest of the last evaluation's tuple), ``rounds``
        (evaluations), ``stable``.
    """
    atol = np.asarray(atol, dtype=np.float64)
    rounds, stable = 0, False
    while True:
        rounds += 1
        w, q, *info = evaluate(pi)
        if improve is None:
            best = (greedy or greedy_box)(q, lo, hi)
            gain = np.einsum("jsa,jsa->js", best - pi, q)
        else:
            best, gain = improve(w, q, pi)
        better = gain > (atol + rtol * np.maximum(1.0, np.abs(w).max(axis=1)))[..., None]
        if not better.any():
            stable = True
            break
        if rounds >= max_iter or (stop is not None and stop()):
            break
        pi = np.where(better[..., None], best, pi)
    return Result(pi=pi, w=w, q=q, best=best, gain=gain, info=info, rounds=rounds,
                  stable=stable)


def policy_iteration(model: TabularCMDP, lam=None, max_iter: int = 10_000) -> Result:
    r"""Optimal deterministic policy of the scalarised reward :math:`r - \lambda^\top c`.

    Howard's policy iteration (:func:`box_policy_iteration` on the full box) with exact
    evaluations (:func:`rcmdp_exact.core.evaluation.evaluate`, one sparse factorisation per
    policy), keeping the current action unless another is better by more than ``1e-12``
    times the value scale.  Needs gamma < 1.

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
    S, A = model.n_states, model.n_actions

    def values(pi):
        ev = evaluate(model, pi[0], lam, check=False)
        return ev.lagrangian[None], ev.q_lagrangian[None]

    start = greedy_policy(model.scalarised_reward(lam))[None]
    full = (np.zeros((1, S, A)), np.ones((1, S, A)))
    sol = box_policy_iteration(values, start, *full, max_iter=max_iter,
                               atol=1e-12 * value_scale(model))
    v = sol.w[0]
    return Result(policy=np.argmax(sol.pi[0], axis=1), v=v, q=sol.q[0],
                  value=float(model.p0 @ v), iterations=sol.rounds, converged=sol.stable)


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


# ================================================================ certified bounds
# Float64 facts used below (IEEE 754, round to nearest): u = 2^-53 is the unit
# roundoff, eta = 2^-1074 the smallest subnormal, gamma_n = n u / (1 - n u) (Higham,
# *Accuracy and Stability of Numerical Algorithms*, Lemma 3.1).
_U = 2.0 ** -53
_ETA = 2.0 ** -1074
_SPLITTER = 134217729.0  # 2^27 + 1 (Veltkamp's split)
_SPLIT_MAX = 2.0 ** 995  # beyond it the split may overflow: no certificate
#: Relative widening of every certified bound: covers the rounding of the few dozen
#: operations that compute the bound itself (each at most u = 1.1e-16).
_WIDEN = 1.0 + 1e-13
#: Rows of the transition matrix handled at once by the accurate sums (memory).
_CHUNK = 1 << 16


def _gam(n: int) -> float:
    return n * _U / (1.0 - n * _U)


def _two_sum(a, b):
    """s + e == a + b exactly, s = fl(a + b) (Knuth's TwoSum; exact under underflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    """x + y == a * b exactly, x = fl(a * b) (Dekker's TwoProduct with Veltkamp's split;
    with underflow |x + y - a b| <= 5 eta, Ogita, Rump and Oishi, SIAM J. Sci. Comput.
    26 (2005), Thm. 3.4)."""
    x = a * b
    c = _SPLITTER * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLITTER * b
    bh = c - (c - b)
    bl = b - bh
    return x, al * bl - (((x - ah * bh) - al * bh) - ah * bl)


def _sum(terms):
    """fl-sum of arrays by cascaded TwoSum (Ogita-Rump-Oishi's Sum2) and a bound on its
    error: ``|res - sum| <= u |sum| + gamma_{n-1}^2 sum|t|`` (their Prop. 4.5), so
    ``<= 2 u |res| + 2 gamma_n^2 sum|t|`` with the float sums of the bound itself."""
    s = terms[0]
    c = np.zeros_like(s)
    mag = np.abs(s)
    for t in terms[1:]:
        s, e = _two_sum(s, t)
        c = c + e
        mag = mag + np.abs(t)
    res = s + c
    # (+ 2 eta: the last rounding and the sum of the e, if they fall below the normal range)
    return res, (2.0 * _U * np.abs(res) + 2.0 * _gam(len(terms)) ** 2 * mag
                 + 2.0 * len(terms) * _ETA)


class _AccurateBellman:
    r"""The exact sums :math:`\tilde Q(i) = g(i) + \gamma P(i) \cdot (v_h + v_l)` of the
    float data, as double-doubles ``s + c`` with a bound on their error.

    The data (P, g, gamma) are taken as exact: the certified bounds are about the MDP that
    the float64 arrays define.  With :math:`\gamma P_{ik} = p^h_k + p^l_k` exactly and
    :math:`(x_k, y_k)` = TwoProduct(:math:`p^h_k, v_h`) (:func:`_two_prod`),

    .. math::

        \tilde Q(i) = \underbrace{g(i) + \textstyle\sum_k x_k}_{\text{TwoSum tree: }
        s + \sum e} + \textstyle\sum_k \big(y_k + p^h_k v_l + p^l_k v_h + p^l_k v_l\big).

    The tree of TwoSums is exact (``s`` plus its error terms ``e``); the N small terms
    z (the ``e``, the ``y`` and the three rounded products w) are summed in float, within
    :math:`\gamma_N \sum |z|`, and each rounded product is within :math:`u |w|`, so
    ``|s + c - Q| <= gamma_N sum|z| + u sum|w|`` (about :math:`N u^2 |Q|`), doubled for
    the rounding of the bound itself, plus :math:`16\eta (L + \sum_k |v|)` for
    underflow.
    """

    def __init__(self, model: TabularCMDP, g: np.ndarray):
        P = sp.csr_array(model.P_sparse, copy=True)
        P.sum_duplicates()  # canonical rows: identical rows give identical sums
        self.S, self.A = g.shape
        self.P = P
        self.gamma = float(model.gamma)
        self.indptr, self.indices = P.indptr, P.indices
        self.counts = np.diff(P.indptr)
        self.ph, self.pl = _two_prod(self.gamma, np.asarray(P.data, dtype=np.float64))
        self.g = np.asarray(g, dtype=np.float64).ravel()
        L = int(self.counts.max(initial=0))
        # row sums: the float sums are within gamma_L of the exact ones
        self.rowsum = np.asarray(P.sum(axis=1)).ravel() * (1.0 + 2.0 * _gam(L + 2))
        # the contraction factor: beta >= gamma * max_i sum_j P_ij
        self.beta = self.gamma * float(self.rowsum.max(initial=0.0)) * (1.0 + 4.0 * _U)
        self.ok = (self.beta < 1.0 and float(np.abs(self.g).max(initial=0.0)) < _SPLIT_MAX)

    def rows(self, vh: np.ndarray, vl: np.ndarray | None, rows: np.ndarray):
        """(s, c, err) for the given rows: the exact sum lies within err of s + c."""
        n = rows.size
        out_s, out_c, out_e = np.empty(n), np.empty(n), np.empty(n)
        L_all = int(self.counts[rows].max(initial=0))
        step = max(1, (1 << 20) // (L_all + 1))
        for lo in range(0, n, step):
            rr = rows[lo:lo + step]
            cnt = self.counts[rr]
            L = int(cnt.max(initial=0))
            k = np.arange(L)
            live = k[None, :] < cnt[:, None]
            pos = np.where(live, self.indptr[rr][:, None] + k[None, :], 0)
            ph = np.where(live, self.ph[pos], 0.0)
            pl = np.where(live, self.pl[pos], 0.0)
            j = self.indices[pos]
            bh = vh[j]
            x, y = _two_prod(ph, bh)
            w = [pl * bh]
            if vl is not None:
                bl = vl[j]
                w += [ph * bl, pl * bl]
            # the TwoSum tree of g and the x
            T = np.concatenate([self.g[rr][:, None], x], axis=1)
            small = [y, *w]
            while T.shape[1] > 1:
                if T.shape[1] % 2:
                    T = np.concatenate([T, np.zeros((T.shape[0], 1))], axis=1)
                T, e = _two_sum(T[:, 0::2], T[:, 1::2])
                small.append(e)
            z = np.concatenate(small, axis=1)
            N = z.shape[1]
            wmag = sum(np.abs(t).sum(axis=1) for t in w)
            vmag = np.abs(bh).sum(axis=1) + (0.0 if vl is None else np.abs(bl).sum(axis=1))
            out_s[lo:lo + step] = T[:, 0]
            out_c[lo:lo + step] = z.sum(axis=1)
            out_e[lo:lo + step] = (2.0 * (_gam(N + 1) * np.abs(z).sum(axis=1) + _U * wmag)
                                   + 16.0 * _ETA * (N + vmag))
        return out_s, out_c, out_e


def _mp_bound(acc: _AccurateBellman, w: np.ndarray) -> tuple[float, float]:
    r"""A certified bound on :math:`\|w - v^*\|_\infty` for any w (S,), and the
    residual :math:`\|Tw - w\|_\infty`.

    With :math:`lo \le (Tw - w)(s) \le hi` for every s (the exact Bellman operator of
    the float data, bounded through :class:`_AccurateBellman`), the monotone
    :math:`\beta`-contraction T (:math:`\beta \ge \gamma \max_i \sum_j P_{ij}`) maps
    :math:`w + c\mathbf 1` below itself for :math:`c = hi / (1 - \beta)` and above
    itself for :math:`c = \min(lo, 0) / (1 - \beta)`, so :math:`v^* - w` lies between
    these constants (the McQueen-Porteus bounds written around w, valid whatever the
    rounding of the row sums).
    """
    if not acc.ok or not np.all(np.isfinite(w)) or np.abs(w).max(initial=0.0) >= _SPLIT_MAX:
        return np.inf, np.inf
    S, A = acc.S, acc.A
    s, c, e = acc.rows(w, None, np.arange(S * A))
    ws = np.repeat(w, A)
    d, de = _sum([s, c, -ws])
    d, de = d.reshape(S, A), (de + e).reshape(S, A)
    pad = de + 2.0 * _U * (np.abs(d) + de) + 2.0 * _ETA  # with the rounding of d +- de
    hi = float((d + pad).max(axis=1).max())
    lo = float((d - pad).max(axis=1).min())
    denom = 1.0 - acc.beta
    bound = max(abs(hi), abs(min(lo, 0.0))) / denom * _WIDEN + 4.0 * _ETA
    return bound, float(np.abs(d.max(axis=1)).max())


def _certify(model: TabularCMDP, acc: _AccurateBellman, actions: np.ndarray,
             max_steps: int) -> Result:
    r"""The exact values of a deterministic policy, refined, and a certified bound on
    their distance to the optimal values (improving the policy where an improvement is
    certain).

    1. Solve :math:`(I - \gamma P_\pi) v = g_\pi` (:class:`PolicySystem`), then refine:
       the residual :math:`r = g_\pi + \gamma P_\pi v - v` of the double-double
       :math:`v = v_h + v_l` is computed in double-double (:class:`_AccurateBellman`,
       within :math:`\epsilon_r`), :math:`d` solves :math:`(I - \gamma P_\pi) d = \hat r`
       and :math:`v \leftarrow v + d`.  For any computed d,
       :math:`V_\pi - v = d + (I - \gamma P_\pi)^{-1}(r - (I - \gamma P_\pi) d)` and
       :math:`\|(I - \gamma P_\pi)^{-1}\|_\infty \le 1/(1 - \beta)`, so
       :math:`E = \|d\|_\infty + (\epsilon_r + \|\hat r - (I - \gamma P_\pi) d\|_\infty +
       \epsilon_s) / (1 - \beta)` bounds :math:`\|V_\pi - v\|_\infty` (:math:`\epsilon_s`:
       the standard :math:`\gamma_{L+4}` bound of the float residual of d).
    2. The advantages :math:`A(s, a) = \tilde Q(s, a) - \tilde Q(s, \pi(s))` at v in
       double-double: the exact advantage of :math:`V_\pi` differs by
       :math:`\gamma (P(s,a) - P(s,\pi(s))) \cdot (V_\pi - v)`, at most
       :math:`\gamma \|P(s, a) - P(s, \pi(s))\|_1 E` (zero for identical rows).  Where its
       lower bound is > 0 the switch is a certain improvement, taken (policy iteration
       with a certified tie rule), at most ``max_steps`` times.
    3. :math:`\rho` = the largest upper bound of an advantage (or 0) bounds
       :math:`\|T V_\pi - V_\pi\|_\infty`, so :math:`\|v^* - V_\pi\|_\infty \le \rho /
       (1 - \beta)`, and the returned float :math:`v_h` is within
       ``bound`` :math:`= (\|v_l\|_\infty + E + \rho / (1 - \beta))(1 + 10^{-13})` of
       :math:`v^*`.
    """
    from .evaluation import PolicySystem

    S, A = acc.S, acc.A
    gamma, denom = acc.gamma, 1.0 - acc.beta
    states = np.arange(S)
    actions = np.asarray(actions, dtype=np.int64).copy()
    all_rows = np.arange(S * A)
    steps = 0
    while True:
        rows = states * A + actions
        P_pi = sp.csr_array(acc.P[rows])
        L = int(np.diff(P_pi.indptr).max(initial=0))
        system = PolicySystem(P_pi, gamma)
        with np.errstate(over="ignore", invalid="ignore"):
            vh = np.asarray(system.solve(acc.g[rows]), dtype=np.float64)
        vl = np.zeros(S)
        best = None
        for _ in range(6):
            if (not acc.ok or not np.all(np.isfinite(vh))
                    or np.abs(vh).max(initial=0.0) >= _SPLIT_MAX):
                best = (vh, vl, np.inf)
                break
            s, c, e = acc.rows(vh, vl, rows)
            r, er = _sum([s, c, -vh, -vl])
            er = er + e
            with warnings.catch_warnings():
                # any d serves (its residual enters E): a solver's accuracy warning about
                # a correction would only confuse
                warnings.simplefilter("ignore", RuntimeWarning)
                d = np.asarray(system.solve(r), dtype=np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                res = r - d + gamma * (P_pi @ d)
                es = (2.0 * _gam(L + 4) * (np.abs(r) + np.abs(d) + gamma * (P_pi @ np.abs(d)))
                      + 4.0 * (L + 4) * _ETA)
                E = (float(np.abs(d).max(initial=0.0))
                     + float((er + np.abs(res) + es).max(initial=0.0)) / denom) * _WIDEN
            if not np.isfinite(E):
                E = np.inf
            if best is None or E < best[2]:
                best = (vh, vl, E)
            elif E >= best[2]:
                break  # refinement stalled
            if E <= 1e-3 * _U * float(np.abs(vh).max(initial=0.0)):
                break  # far below the rounding of the values to float
            vh, vl = _two_sum(vh, vl + d)
        vh, vl, E = best
        if not np.isfinite(E):
            return Result(v=vh, actions=actions, bound=np.inf, steps=steps, rho=np.inf,
                          E=np.inf, residual=np.inf, capped=False)
        # advantages of every action against the policy's, in double-double
        s, c, e = acc.rows(vh, vl, all_rows)
        s, c, e = s.reshape(S, A), c.reshape(S, A), e.reshape(S, A)
        sp_, cp_, ep_ = s[states, actions][:, None], c[states, actions][:, None], \
            e[states, actions][:, None]
        adv, ea = _sum([s, c, -np.broadcast_to(sp_, s.shape), -np.broadcast_to(cp_, s.shape)])
        ea = ea + e + ep_
        # |P(s,a) - P(s,pi(s))|_1 <= its row sums; exactly (zero for identical rows) only
        # where an advantage could be positive
        sig = acc.rowsum.reshape(S, A)
        delta = sig + sig[states, actions][:, None]
        near = adv + ea + gamma * delta * E > 0.0
        near[states, actions] = False
        if near.any():
            si, ai = np.nonzero(near)
            diff = acc.P[si * A + ai] - acc.P[rows[si]]
            delta[si, ai] = np.asarray(abs(diff).sum(axis=1)).ravel() * _WIDEN
        slack = (ea + gamma * delta * E) * _WIDEN
        pad = 2.0 * _U * (np.abs(adv) + slack) + 2.0 * _ETA  # the rounding of adv +- slack
        upper, lower = adv + slack + pad, adv - slack - pad
        upper[states, actions] = -np.inf
        lower[states, actions] = -np.inf
        better = lower > 0.0
        if better.any() and steps < max_steps:
            switch = better.any(axis=1)
            cand = np.where(better, adv, -np.inf).argmax(axis=1)
            actions = np.where(switch, cand, actions)
            steps += 1
            continue
        rho = max(0.0, float(upper.max(initial=-np.inf)))
        bound = (float(np.abs(vl).max(initial=0.0)) + E + rho / denom) * _WIDEN + 4.0 * _ETA
        # the residual of the returned float values vh (for information)
        tv, _ = _sum([s, c, -np.broadcast_to(vh[:, None], s.shape)])
        return Result(v=vh, actions=actions, bound=bound, steps=steps, rho=rho, E=E,
                      residual=float(np.abs(tv.max(axis=1)).max()),
                      capped=bool(better.any()))


def _finish(model, g, v, lam, method, iterations, status, message, error_bound,
            residual=None, actions=None):
    """The result of :func:`solve_mdp`: the policy (by default the greedy policy of v),
    the residual of v and the status."""
    q = _bellman(model, g, v)
    if residual is None or not np.isfinite(residual):
        residual = float(np.abs(q.max(axis=1) - v).max())
    if actions is None:
        actions = q.argmax(axis=1)
    converged = status == Status.CONVERGED
    if not converged:
        warnings.warn(f"solve_mdp: {message}", RuntimeWarning, stacklevel=3)
    return Result(
        v=v, q=q, policy=np.eye(q.shape[1])[actions], actions=actions, value=float(model.p0 @ v),
        iterations=int(iterations), residual=float(residual), error_bound=float(error_bound),
        converged=converged, success=status in (Status.CONVERGED, Status.TOL_BELOW_ROUNDING),
        status=status, message=message, method=method, lam=lam)


def _verdict(bound: float, target: float, capped: bool) -> Status:
    """converged when the certified bound meets the target; else not_converged when an
    iteration limit stopped the method, tol_below_rounding when it had finished."""
    if bound <= target:
        return Status.CONVERGED
    return Status.NOT_CONVERGED if capped else Status.TOL_BELOW_ROUNDING


def _below_rounding_message(what: str, bound: float, target: float, scale: float,
                            gamma: float) -> str:
    return (f"{what}, but the error bound that float64 certifies, {bound:.2e}, is above "
            f"tol * scale = {target:.2e}: at gamma = {gamma:.10g} the rounding of values "
            f"of size up to {scale:.2e} does not allow a finer certificate (more iterations "
            f"cannot help); the returned values are within error_bound of the optimum; "
            f"use tol >= {bound / scale:.1e}")


def _certified_finish(model, g, lam, method, acc, actions, max_steps, iterations, what,
                      target, scale, capped=False):
    """Certify the policy ``actions`` (:func:`_certify`) and build the result."""
    cert = _certify(model, acc, actions, max_steps)
    return _from_certificate(model, g, lam, method, cert, iterations, what, target, scale,
                             capped)


def _from_certificate(model, g, lam, method, cert, iterations, what, target, scale,
                      capped=False):
    """The result of a certified policy (:func:`_certify`)."""
    capped = capped or cert.capped
    status = _verdict(cert.bound, target, capped)
    extra = (f"; {cert.steps} certified improvement step(s) after it" if cert.steps else "")
    if status == Status.CONVERGED:
        msg = (f"{what}{extra}; the greedy policy evaluated exactly and certified: error "
               f"bound {cert.bound:.2e}")
    elif status == Status.NOT_CONVERGED:
        msg = (f"{what}{extra}: stopped at the iteration limit with a certified error bound "
               f"{cert.bound:.2e} > tol * scale = {target:.2e}; raise max_iter")
    else:
        msg = _below_rounding_message(what + extra, cert.bound, target, scale, model.gamma)
    if method == "policy_iteration":
        iterations += cert.steps
    return _finish(model, g, cert.v, lam, method, iterations, status, msg, cert.bound,
                   cert.residual, cert.actions)


def _lp_values(model: TabularCMDP, g: np.ndarray) -> np.ndarray:
    r"""The optimal values of the LP :math:`\min p^\top v` s.t. :math:`v(s) \ge g(s, a) +
    \gamma P(s, a)^\top v` (weights p > 0 on every state: the uniform distribution),
    solved by HiGHS through ``scipy.optimize.linprog``."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    S, A = g.shape
    E = sp.kron(sp.identity(S, format="csr"), np.ones((A, 1)), format="csr")
    A_ub = sp.csr_array(model.gamma * model.P_sparse - E)
    from .._solvers import HIGHS_OPTIONS

    sol = linprog(np.full(S, 1.0 / S), A_ub=A_ub, b_ub=-g.ravel(), bounds=[(None, None)] * S,
                  method="highs", options=HIGHS_OPTIONS)
    return None if sol.status != 0 else np.asarray(sol.x, dtype=np.float64)


def solve_mdp(model: TabularCMDP, method: str = "policy_iteration", *, lam=None,
              horizon=None, discount: float = 1.0, tol: float = 1e-12,
              max_iter: int = 100_000, k: int = 20, v0=None) -> Result:
    r"""The optimal policy and values of a plain MDP (the reward :math:`r - \lambda^\top c`).

    Discounted (``horizon=None``, gamma < 1), by ``method``:

    * ``"policy_iteration"``: Howard's policy iteration with exact evaluations
      (:func:`policy_iteration`), its final policy certified (below);
    * ``"value_iteration"``: :math:`v \leftarrow \max_a Q_v` from ``v0`` (default 0);
    * ``"modified_policy_iteration"``: a greedy step, then ``k`` evaluation sweeps of the
      greedy policy, repeated;
    * ``"lp"``: the LP :math:`\min \sum_s v(s)` s.t. :math:`v \ge r + \gamma P v`
      (HiGHS through scipy), its greedy policy certified (below).

    **The error bound includes rounding.**  Every result carries ``error_bound``, a
    bound on :math:`\|v - v^*\|_\infty` for the optimal values :math:`v^*` of the MDP
    that the float64 arrays define (each float taken as an exact number), which holds
    with the rounding of every float operation accounted for (IEEE double, round to
    nearest; underflow covered by an absolute term).  A float computation of
    :math:`Tv - v` is only accurate to about :math:`L u (|r| + |v|)` (u = 1.1e-16, L
    next states), and a bound :math:`\|Tv - v\| / (1 - \gamma)` built on it is off by
    about :math:`L u \max|r| / (1 - \gamma)^2`, which near gamma = 1 exceeds any
    tolerance; so the bounds are built in double-double arithmetic (error-free
    TwoSum/TwoProduct sums of the Bellman operator, with a bound on their own error) and
    :math:`\beta = \gamma \max_i \sum_j P_{ij}` (rounded up) replaces gamma:

    * *certified policy* (policy iteration, LP, and value/modified policy iteration when
      their own bound is limited by rounding): the policy is evaluated exactly
      (:class:`~rcmdp_exact.core.evaluation.PolicySystem`) and refined to a double-double
      :math:`v_h + v_l`; one more correction d (a solve with the double-double
      residual) gives :math:`E = \|d\| + \|\text{residual of } d\| / (1 - \beta)
      \ge \|V_\pi - v_h - v_l\|`; the advantages of the other actions, in double-double,
      are off by at most :math:`\gamma \|P(s,a) - P(s,\pi(s))\|_1 E` (zero for identical
      rows); where one is surely positive the policy is improved (a certified
      improvement step); the largest upper bound :math:`\rho \ge \|T V_\pi -
      V_\pi\|_\infty` then gives ``error_bound`` :math:`= (\|v_l\|_\infty + E + \rho /
      (1 - \beta))(1 + 10^{-13})` for the returned :math:`v = v_h` (the
      :math:`10^{-13}` covers the rounding of the bound's own few operations).  For a
      certified optimal policy (:math:`\rho = 0`) this is about half a unit in the last
      place of the largest value, at any gamma;
    * *value and modified policy iteration* stop when the float McQueen-Porteus bounds
      :math:`Tv + \frac{\gamma}{1-\gamma}[\min(Tv - v), \max(Tv - v)]` put the optimal
      values within ``tol`` times the value scale, or when their half-width is below the
      rounding of the float iteration (:math:`\frac{\gamma}{1-\gamma} 2 (L + 3) u
      (\max|r| + 2 \max|v|)`: more iterations cannot shrink it), and return the
      midpoint w of the bounds with the certified bound :math:`\max(hi, -\min(lo, 0)) /
      (1 - \beta)`, where :math:`lo \le Tw - w \le hi` in double-double.  Near gamma = 1
      that bound cannot go below about :math:`2 u \max|v| / (1 - \gamma)`; when it
      misses ``tol`` (and the iteration limit was not reached), the greedy policy of w
      is certified as above and returned instead (``v`` its exact values) when its bound
      is smaller.

    ``converged`` (and ``status`` "converged") only when ``error_bound`` is within
    ``tol`` times the value scale.  Otherwise a RuntimeWarning says why and ``status``
    is "not_converged" when ``max_iter`` stopped the method (more iterations may help),
    or "tol_below_rounding" when the method had finished but float64 cannot certify
    ``tol`` at this gamma (``success`` is True, ``error_bound`` holds, the message gives
    the tol that can be certified).  A failed LP solve gives "solver_error".

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
        Relative accuracy (times :func:`value_scale`) that ``error_bound`` must meet.
    max_iter : int
        Iteration cap (also of the certified improvement steps); reaching it leaves
        ``converged`` False unless the bound meets ``tol`` anyway.
    k : int
        Evaluation sweeps per step of modified policy iteration.
    v0 : array (S,), optional
        Start of value and modified policy iteration.

    Returns
    -------
    Result
        ``v`` (S,), ``q`` (S, A), ``policy`` (S, A) one-hot (``actions`` (S,)): the
        certified policy, or for a midpoint of value iteration its greedy policy (ties to
        the lowest action), ``value`` = p0.v, ``iterations``, ``residual``
        :math:`\|Tv - v\|_\infty` (in double-double where certified), ``error_bound``
        (certified, above), ``converged``, ``success``, ``status``, ``message``,
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
    acc = _AccurateBellman(model, g)
    if method == "policy_iteration":
        pi = policy_iteration(model, lam_arr, max_iter)
        what = (f"policy iteration: stable after {pi.iterations} iterations" if pi.converged
                else f"policy iteration: iteration limit {max_iter} reached")
        return _certified_finish(model, g, lam_arr, method, acc, pi.policy,
                                 max_iter - pi.iterations, pi.iterations, what, target,
                                 scale, capped=not pi.converged)
    if method == "lp":
        v = _lp_values(model, g)
        if v is None:
            return _finish(model, g, np.zeros(S), lam_arr, method, 1, Status.SOLVER_ERROR,
                           "the LP solver did not return an optimum; use method="
                           "'policy_iteration'", np.inf)
        return _certified_finish(model, g, lam_arr, method, acc,
                                 _bellman(model, g, v).argmax(axis=1), max_iter, 1,
                                 "LP (HiGHS) optimal", target, scale)
    check_int(k, "k", 1)
    v = np.zeros(S) if v0 is None else np.array(as_float_array(
        v0, "v0", "give one value per state", shape=(S,), axes=("s",)))
    factor = gamma / (1.0 - gamma)
    # the rounding floor of the float McQueen-Porteus half-width: each component of
    # Tv - v is computed within about (L + 3) u (|g| + |v|) (L next states), so a
    # half-width below factor times twice that says nothing more: stop there
    L = int(np.diff(acc.indptr).max(initial=0))
    gmax = float(np.abs(g).max(initial=0.0))
    bound, it, floor = np.inf, 0, 0.0
    while it < max_iter:
        it += 1
        q = _bellman(model, g, v)
        tv = q.max(axis=1)
        diff = tv - v
        lo, hi = float(diff.min()), float(diff.max())
        bound = factor * (hi - lo) / 2.0
        mid = tv + factor * (lo + hi) / 2.0  # the centre of the McQueen-Porteus bounds
        floor = factor * 2.0 * (L + 3) * _U * (gmax + 2.0 * float(np.abs(tv).max()))
        if bound <= max(target, floor) or it == max_iter:
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
    capped = bound > max(target, floor)  # the iteration limit stopped it
    name = method.replace("_", " ")
    certified, residual = _mp_bound(acc, v)
    what = (f"{name} met its stopping rule after {it} iterations" if not capped else
            f"{name}: iteration limit {max_iter} reached")
    status = _verdict(certified, target, capped)
    if status == Status.CONVERGED:
        return _finish(model, g, v, lam_arr, method, it, status,
                       f"{what}; certified McQueen-Porteus error bound {certified:.2e}",
                       certified, residual)
    if not capped:
        # the bounds around v are limited by rounding (~ u |v| / (1 - gamma)): certify
        # the greedy policy of v by its exact values instead
        cert = _certify(model, acc, _bellman(model, g, v).argmax(axis=1), max_iter)
        if cert.bound <= certified:
            return _from_certificate(model, g, lam_arr, method, cert, it,
                                     what + " (its bounds limited by rounding)", target,
                                     scale)
    msg = (f"{what} with a certified error bound {certified:.2e} > tol * scale = "
           f"{target:.2e}; raise max_iter or use method='policy_iteration'" if capped else
           _below_rounding_message(what, certified, target, scale, gamma))
    return _finish(model, g, v, lam_arr, method, it, status, msg, certified, residual)
