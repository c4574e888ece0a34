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

from .._checks import (
    MAX_INPUT_BYTES,
    InputError,
    as_float_array,
    check_choice,
    check_int,
    check_limit,
    check_memory,
    check_nonnegative,
    check_real,
)
from .._result import Result, Status
from ._rounding import ETA, WIDEN, U, gam
from .evaluation import rescaled_budget
from .model import TabularCMDP, check_model
from .model_checks import check_sparse_transitions, check_transition_rows

__all__ = ["MDP_METHODS", "backward_induction", "greedy_box",
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
    """A magnitude of values: ``max |r|, |c|`` times the effective horizon (at least 1):
    ``horizon`` steps, or 1 / (1 - gamma), or S when gamma = 1."""
    check_model(model)
    if horizon is not None:
        horizon = check_limit(horizon, "horizon", "horizon")
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
        engine passes its compiled equal, :func:`rcmdp_exact.robust._compiled.greedy_fill`).
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


class _Bellman:
    r"""The float Bellman operator of a model and a reward g (S, A):
    :math:`Q_v = g + \gamma P v`, by one BLAS product with the (S*A, S) array of a model
    stored densely (no sparse copy is made) or one product with ``P_sparse``.

    It also holds what the certified bounds need once per model: upper bounds
    ``sigma`` (S*A,) on the exact row sums of P (the float sums are within
    :math:`\gamma_L` of them, L the largest number of stored entries per row), the
    contraction factor :math:`\beta \ge \gamma \max \sigma` and ``ok``, False when the
    data are too large for the error-free products (:data:`_SPLIT_MAX`) or
    :math:`\beta \ge 1`.
    """

    def __init__(self, model: TabularCMDP, g: np.ndarray):
        self.S, self.A = g.shape
        self.gamma = float(model.gamma)
        self.g = np.ascontiguousarray(g, dtype=np.float64)
        self.gflat = self.g.ravel()
        self.dense = not model.is_sparse
        S, A = self.S, self.A
        self.P = model.P.reshape(S * A, S) if self.dense else sp.csr_array(model.P_sparse)
        #: the largest number of stored entries of a row (no pass over P needed)
        self.L = S if self.dense else int(np.diff(self.P.indptr).max(initial=0))
        self._sigma = None

    def q(self, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The float Q-values (S, A) at v (into ``out`` when given: a buffer reused by a
        loop costs no new pages)."""
        if self._sigma is None:  # the first product also gives the row sums
            from ._compiled import dot_and_sums

            pv, sums = dot_and_sums(self.P, v)
            self._set_stats(sums)
            pv *= self.gamma  # (g + gamma P v, in the product's array)
            pv += self.gflat
            return pv.reshape(self.S, self.A)
        if out is None:
            return self.g + self.gamma * (self.P @ v).reshape(self.S, self.A)
        flat = out.reshape(-1)
        if self.dense:  # (BLAS's product, then two passes in place)
            np.dot(self.P, v, out=flat)
            flat *= self.gamma
            flat += self.gflat
        else:
            from ._compiled import bellman_csr, csr_parts

            bellman_csr(*csr_parts(self.P), self.gflat, self.gamma,
                        np.ascontiguousarray(v, dtype=np.float64), flat)
        return out

    def _gather(self, idx: np.ndarray, idx_buf=None, val_buf=None):
        """(indptr, indices, data, nnz) of the rows ``idx`` of the CSR P (a compiled
        gather; into the buffers when they are large enough)."""
        from ._compiled import NO_INDEX, NO_VALUES, csr_parts, take_rows_csr

        ip, ix, dt = csr_parts(self.P)
        return take_rows_csr(ip, ix, dt, np.asarray(idx, dtype=np.int64),
                             NO_INDEX.astype(ix.dtype) if idx_buf is None else idx_buf,
                             NO_VALUES if val_buf is None else val_buf)

    def rows(self, idx: np.ndarray):
        """The rows ``idx`` of P: a dense copy (len(idx), S), or CSR (a compiled
        gather)."""
        if self.dense:
            return self.P[idx]
        ptr, ind, val, nnz = self._gather(idx)
        signed = self.P.indptr.dtype
        return sp.csr_array((val[:nnz], ind[:nnz].view(self.P.indices.dtype),
                             ptr.view(signed)), shape=(len(idx), self.S))

    def policy(self, actions: np.ndarray):
        """(rows, P_pi, g_pi) of the deterministic policy ``actions`` (S,)."""
        rows = np.arange(self.S) * self.A + actions
        return rows, self.rows(rows), self.gflat[rows]

    def sweeper(self):
        """A function ``sweep(actions, v, k, cut) -> v`` doing at most k sweeps
        :math:`v \\leftarrow g_\\pi + \\gamma P_\\pi v` of the deterministic policy
        ``actions`` from v, fewer once a sweep changes v by a constant up to a span of
        ``cut`` (compiled: :func:`rcmdp_exact.core._compiled.sweeps`).  The rows of a
        dense P are read in place; those of a CSR P are gathered once per new policy into
        buffers the function keeps (one allocation for the whole loop)."""
        from ._compiled import sweeps, sweeps_csr

        held = {"actions": None, "bufs": (None, None),
                "ab": (np.empty(self.S), np.empty(self.S))}

        def sweep(actions, v, k, cut):
            v = np.ascontiguousarray(v, dtype=np.float64)
            if held["actions"] is None or not np.array_equal(actions, held["actions"]):
                held["actions"] = actions
                rows = np.arange(self.S) * self.A + actions
                held["g"] = self.gflat[rows]
                if self.dense:
                    held["rows"] = rows
                else:
                    ptr, ind, val, _ = self._gather(rows, *held["bufs"])
                    held["bufs"] = (ind, val)
                    held["csr"] = (ptr, ind, val)
            if self.dense:
                return sweeps(self.P, held["rows"], held["g"], self.gamma, v, int(k),
                              float(cut), *held["ab"])[0]
            return sweeps_csr(*held["csr"], held["g"], self.gamma, v, int(k), float(cut),
                              *held["ab"])[0]
        return sweep

    def _set_stats(self, sums: np.ndarray) -> None:
        """The certificates' data from the float row sums of P (within gamma_L of the
        exact ones, in any order of summation)."""
        L = self.L
        self.sums = sums
        self._sigma = sums * (1.0 + 2.0 * gam(L + 2))
        self._beta = self.gamma * float(self._sigma.max(initial=0.0)) * (1.0 + 4.0 * U)
        self._ok = (self._beta < 1.0
                    and float(np.abs(self.gflat).max(initial=0.0)) < _SPLIT_MAX)

    def _stats(self):
        if self._sigma is None:
            self._set_stats(np.asarray(self.P.sum(axis=1)).ravel())
        return self._sigma, self._beta, self._ok

    @property
    def sigma(self) -> np.ndarray:
        return self._stats()[0]

    @property
    def beta(self) -> float:
        return self._stats()[1]

    @property
    def ok(self) -> bool:
        return self._stats()[2]

    def exact_rows(self, vh: np.ndarray, vl: np.ndarray | None, rows: np.ndarray):
        """(s, c, e) of the rows ``rows``: :math:`g + \\gamma P v` of the float data,
        exactly, lies within e of the double-double s + c (:mod:`rcmdp_exact.core._compiled`)."""
        from ._compiled import bellman_rows

        return bellman_rows(self.P, self.gflat, self.gamma, vh, vl, rows)

    def q_error(self, q: np.ndarray, vmax: float) -> np.ndarray:
        """A bound (S, A) on the rounding of :meth:`q` at values of magnitude at most
        ``vmax``: :math:`\\gamma_{L+2} (|g| + \\gamma \\sigma \\max|v|)`, rounded up."""
        sig = self.sigma.reshape(self.S, self.A)
        return (gam(self.L + 3) * (np.abs(self.g) + self.gamma * sig * vmax)
                + 4.0 * (self.L + 3) * ETA) * WIDEN


def policy_iteration(model: TabularCMDP, lam=None, max_iter: int = 10_000) -> Result:
    r"""Optimal deterministic policy of the scalarised reward :math:`r - \lambda^\top c`.

    Howard's policy iteration (:func:`box_policy_iteration` on the full box) from the
    greedy policy of the reward, each policy evaluated exactly by one solve of
    :math:`(I - \gamma P_\pi) v = g_\pi` (:class:`~rcmdp_exact.core.evaluation.PolicySystem`,
    which chooses LAPACK, a sparse LU or GMRES by cost; an iterative solve starts from
    the previous policy's values), keeping the current action unless another is better by
    more than ``1e-12`` times the value scale.  Needs gamma < 1.

    Returns
    -------
    Result
        ``policy`` (S,) int, ``v`` (S,), ``q`` (S, A), ``value`` = p0.v,
        ``iterations``, ``converged``; ``system`` the last policy's
        :class:`~rcmdp_exact.core.evaluation.PolicySystem` (its factorisation, for reuse).
    """
    check_model(model)
    check_real(model.gamma, "gamma", 0.0, 1.0, high_open=True,
               hint="; policy iteration needs a discounted model")
    max_iter = check_int(max_iter, "max_iter", 1)
    lam = model.check_multipliers(lam)
    g = np.asarray(model.scalarised_reward(lam), dtype=np.float64)
    return _howard(model, _Bellman(model, g), max_iter)


def _howard(model: TabularCMDP, bell: _Bellman, max_iter: int,
            lookahead: bool = False) -> Result:
    """:func:`policy_iteration` on the operator ``bell``, from the greedy policy of g, or
    with ``lookahead`` from the greedy policy of one Bellman step from
    :math:`\\max_a g` (QuantEcon's start: one product with P, which often saves a whole
    evaluation)."""
    from .evaluation import PolicySystem

    S, A = bell.S, bell.A
    last = {}

    def values(pi):
        actions = pi[0].argmax(axis=1)
        _, P_pi, g_pi = bell.policy(actions)
        if last:  # few states switch near the optimum: the last factorisation serves
            system = last["system"].updated(P_pi, np.flatnonzero(actions != last["a"]))
        else:
            system = PolicySystem(P_pi, bell.gamma)
        with np.errstate(over="ignore", invalid="ignore"):
            v = system.solve(g_pi, x0=last.get("v"))
            q = bell.q(v)
        last.update(v=v, a=actions, system=system)
        return v[None], q[None], system, P_pi

    if lookahead:
        with np.errstate(over="ignore", invalid="ignore"):
            start = greedy_policy(bell.q(bell.g.max(axis=1)))[None]
    else:
        start = greedy_policy(bell.g)[None]
    full = (np.zeros((1, S, A)), np.ones((1, S, A)))
    sol = box_policy_iteration(values, start, *full, max_iter=max_iter,
                               atol=1e-12 * value_scale(model))
    v = sol.w[0]
    return Result(policy=np.argmax(sol.pi[0], axis=1), v=v, q=sol.q[0],
                  value=float(model.p0 @ v), iterations=sol.rounds, converged=sol.stable,
                  system=sol.info[0], P_pi=sol.info[1])


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

    Raises
    ------
    InputError
        Before any step: a horizon above ``names.LIMITS``, a discount outside [0, 1], a
        P whose rows are not distributions or whose shape is not r's then S (a sparse P:
        (S*A, S), one problem), NaN or inf in r, c or lam, c without its cost axis K,
        negative multipliers, ``lam`` without ``c``, a ``policy`` that is not a bool, or
        values that float64 cannot hold (:math:`\max|g| \sum_t \delta^t` overflows).
    """
    T = check_limit(horizon, "horizon", "horizon")
    discount = check_real(discount, "discount", 0.0, 1.0,
                          hint=" (the per-step discount; 1: undiscounted)")
    P, r, c, lam = _check_backward_inputs(P, r, c, lam, policy)
    S, A = r.shape[-2:]
    if policy:
        N = int(np.prod(r.shape[:-2], dtype=np.int64))
        check_memory(T, 8 * N * S * A, MAX_INPUT_BYTES, "horizon", "the policy of every step",
                     "", "rcmdp_exact._checks.MAX_INPUT_BYTES")
    # every value is at most max|g| times sum_t discount^t (rows sum to 1): refuse a
    # problem whose values float64 cannot hold before any step
    g_max = float(np.abs(r).max(initial=0.0))
    if c is not None:
        g_max += float(np.abs(c).max(initial=0.0)) * (1.0 + float(np.abs(lam).sum()))
    _check_no_overflow(g_max, _steps(T, discount), "r (and c)", "or shorten the horizon")
    return _backward_induction(P, r, T, discount=discount, c=c, lam=lam, policy=policy)


def _steps(T: int, discount: float) -> float:
    r""":math:`\sum_{t<T} \delta^t`, the most a value of T steps weighs a one-step reward."""
    return float(T) if discount == 1.0 else (1.0 - discount ** T) / (1.0 - discount)


def _check_no_overflow(g_max: float, steps: float, what: str, fix: str) -> None:
    """Refuse a problem whose values, up to ``g_max * steps``, overflow float64."""
    if not np.isfinite(g_max * steps * (1.0 + 1e-6)):
        raise InputError(
            f"the values of this problem overflow float64: one-step rewards up to "
            f"{g_max:.3g} over {steps:.6g} (discounted) steps exceed "
            f"{np.finfo(np.float64).max:.3g}; rescale {what} {fix}")


def _check_backward_inputs(P, r, c, lam, policy):
    """The checked (P, r, c, lam) of :func:`backward_induction` (its Parameters)."""
    if not isinstance(policy, (bool, np.bool_)):
        raise InputError(f"policy must be True or False, got {policy!r} "
                         f"({type(policy).__name__})")
    r = as_float_array(r, "r", "give the expected one-step rewards, shape (S, A) or "
                       "(N, S, A)")
    if r.ndim < 2 or 0 in r.shape:
        raise InputError(f"r must have shape (S, A) or (N, S, A) with S, A >= 1, got "
                         f"{r.shape}; give one expected reward per state and action")
    batch, (S, A) = r.shape[:-2], r.shape[-2:]
    if sp.issparse(P):
        if batch:
            raise InputError(f"a sparse P solves one problem: r must have shape (S, A), "
                             f"got {r.shape}; give P dense (N, S, A, S) for N problems")
        P, S_p, _ = check_sparse_transitions(P, r)
        if S_p != S:
            raise InputError(f"a sparse P must have shape (S*A, S) = ({S * A}, {S}) for r "
                             f"of shape {r.shape}, got {P.shape}")
    else:
        P = as_float_array(P, "P", "give an (S, A, S) array of probabilities",
                           finite=False)
        if P.shape != (*batch, S, A, S):
            raise InputError(f"P must have shape {(*batch, S, A, S)} (the shape of r, "
                             f"{r.shape}, then S), got {P.shape}; give P[..., s, a, s'] "
                             f"the probability of s' after a in s")
        check_transition_rows(P)
    if c is None:
        if lam is not None:
            raise InputError("lam is given without c: give the costs c (S, A, K) that the "
                             "multipliers weigh, or drop lam")
        return P, r, None, None
    c = as_float_array(c, "c", "give the expected one-step costs, shape (S, A, K)")
    if c.ndim != r.ndim + 1 or c.shape[:-1] != r.shape or c.shape[-1] == 0:
        raise InputError(f"c must have shape {(*r.shape, 'K')} with K >= 1 (the shape of r, "
                         f"then one column per cost), got {c.shape}")
    K = c.shape[-1]
    if lam is not None:
        lam = as_float_array(lam, "lam", "give one multiplier per cost")
        N = int(np.prod(batch, dtype=np.int64))
        if lam.size not in (1, K, N * K):
            raise InputError(f"lam must be one number, one multiplier per cost ({K},) or "
                             f"one per problem and cost {(*batch, K)}, got shape "
                             f"{lam.shape}")
        check_nonnegative(lam, "lam", "Lagrange multipliers")
    return P, r, c, lam


def _backward_induction(P, r, T: int, *, discount: float = 1.0, c=None, lam=None,
                        policy: bool = False) -> Result:
    """:func:`backward_induction` on checked inputs (the package's own callers)."""
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


# ================================================================ certified bounds
# Float64 facts used below (IEEE 754, round to nearest): u = 2^-53 is the unit
# roundoff, eta = 2^-1074 the smallest subnormal, gamma_n = n u / (1 - n u) (Higham,
# *Accuracy and Stability of Numerical Algorithms*, Lemma 3.1).
_SPLIT_MAX = 2.0 ** 995  # beyond it the error-free products may overflow: no certificate
#: The relative accuracy of the correction solve of a certificate: any correction d
#: serves (its residual enters the bound), a rough one as well as an exact one.
_CORRECTION_TOL = 1e-3


def _two_sum(a, b):
    """s + e == a + b exactly, s = fl(a + b) (Knuth's TwoSum; exact under underflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


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
    return res, (2.0 * U * np.abs(res) + 2.0 * gam(len(terms)) ** 2 * mag
                 + 2.0 * len(terms) * ETA)


def _mp_bound(bell: _Bellman, w: np.ndarray, q: np.ndarray | None = None,
              qerr: np.ndarray | None = None, target: float | None = None):
    r"""A certified bound on :math:`\|w - v^*\|_\infty` for any w (S,), the residual
    :math:`\|Tw - w\|_\infty` and the float Q-values at w (``q``, with a bound ``qerr`` on
    their rounding, when the caller has them).

    With :math:`lo \le (Tw - w)(s) \le hi` for every s (the exact Bellman operator of
    the float data), the monotone :math:`\beta`-contraction T (:math:`\beta \ge \gamma
    \max_i \sum_j P_{ij}`) maps :math:`w + c\mathbf 1` below itself for :math:`c = hi /
    (1 - \beta)` and above itself for :math:`c = \min(lo, 0) / (1 - \beta)`, so
    :math:`v^* - w` lies between these constants (the McQueen-Porteus bounds written
    around w, valid whatever the rounding of the row sums).  With a ``target``, ``lo``
    and ``hi`` first come from the float Q-values, each within :meth:`_Bellman.q_error`
    (that bound is returned when it meets the target); otherwise from the double-double
    Q-values (:meth:`_Bellman.exact_rows`) of the float argmax action
    of every state (a lower bound of the max, and its upper bound) and of the other
    actions whose float upper bound (:meth:`_Bellman.q_error`) could exceed it (near
    ties); every other action is below them.
    """
    S, A = bell.S, bell.A
    if q is None:
        with np.errstate(over="ignore", invalid="ignore"):
            q = bell.q(w)
    if (not bell.ok or not np.all(np.isfinite(w)) or not np.all(np.isfinite(q))
            or np.abs(w).max(initial=0.0) >= _SPLIT_MAX):
        return np.inf, np.inf, q
    denom = 1.0 - bell.beta
    wmax = float(np.abs(w).max(initial=0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        gap = q - w[:, None]
        err = ((bell.q_error(q, wmax) if qerr is None else qerr * WIDEN)
               + 2.0 * U * np.abs(gap))
        upper = (gap + err) * WIDEN
        lower = gap - err * WIDEN
    if target is not None:
        # first in float (the rounding of every Q-value bounded): enough where the rows
        # are short or gamma is far from 1
        hi_f = float(upper.max(initial=-np.inf))
        lo_f = float(lower.max(axis=1).min(initial=0.0))
        bound = max(abs(hi_f), abs(min(lo_f, 0.0))) / denom * WIDEN + 4.0 * ETA
        if bound <= target:
            return bound, float(np.abs(gap.max(axis=1)).max(initial=0.0)), q
    # in double-double where float cannot decide: the states whose float bounds are
    # beyond the threshold H (target * (1 - beta); all states without a target), their
    # float argmax action first, then any other action whose float upper bound could
    # exceed that action's certified one (near ties)
    H = target * denom / WIDEN if target is not None else -np.inf
    best = q.argmax(axis=1)
    low = lower.max(axis=1)
    cand = np.flatnonzero((upper.max(axis=1) > H) | (low < -H))
    s, c, e = bell.exact_rows(w, None, cand * A + best[cand])
    dc, de = _sum([s, c, -w[cand]])
    pad = de + e + 2.0 * U * (np.abs(dc) + de + e) + 2.0 * ETA
    low[cand] = np.maximum(low[cand], dc - pad)
    lo = float(low.min(initial=0.0))
    upper[cand, best[cand]] = dc + pad
    ceiling = np.full(S, H)
    ceiling[cand] = np.maximum(H, dc + pad)
    others = upper > ceiling[:, None]
    others[cand, best[cand]] = False
    if others.any():
        si, ai = np.nonzero(others)
        s2, c2, e2 = bell.exact_rows(w, None, si * A + ai)
        d2, de2 = _sum([s2, c2, -w[si]])
        upper[si, ai] = (d2 + de2 + e2 + 2.0 * U * (np.abs(d2) + de2 + e2) + 2.0 * ETA)
    hi = float(upper.max(initial=-np.inf))
    resid = gap.max(axis=1)
    resid[cand] = dc
    bound = max(abs(hi), abs(min(lo, 0.0))) / denom * WIDEN + 4.0 * ETA
    return bound, float(np.abs(resid).max(initial=0.0)), q


def _refine(bell: _Bellman, rows, P_pi, system, v: np.ndarray, done: float):
    r"""The values of the policy with rows ``rows`` refined to a double-double, with a
    bound on their error (step 1 of :func:`_certify`).

    From (vh, vl): the residual :math:`r = g_\pi + \gamma P_\pi (v_h + v_l) - v_h - v_l`
    in double-double (within :math:`\epsilon_r`), a correction d with :math:`(I - \gamma
    P_\pi) d \approx \hat r` (``system``: any d serves, so an iterative solve is asked for
    :data:`_CORRECTION_TOL` only), and :math:`v_h + v_l + d` kept as a new double-double
    (exactly when vl = 0, else within :math:`u |v_l + d|` more).  Since
    :math:`V_\pi - v - d = (I - \gamma P_\pi)^{-1}(r - (I - \gamma P_\pi) d)`,

    .. math::

        \|V_\pi - (v + d)\|_\infty \le E' = \frac{\epsilon_r + \|\hat r - (I - \gamma
        P_\pi) d\|_\infty + \epsilon_s}{1 - \beta}

    (:math:`\epsilon_s = 2\gamma_{L+4}(|\hat r| + |d| + \gamma P_\pi |d|)`: the float
    residual of d).  Passes repeat while E' is above ``done`` and shrinks (at most 6).
    Returns (vh, vl, E) with :math:`\|V_\pi - v_h - v_l\|_\infty \le E`.
    """
    gamma, denom = bell.gamma, 1.0 - bell.beta
    L = int(np.diff(P_pi.indptr).max(initial=0)) if sp.issparse(P_pi) else bell.S
    vh, vl = np.asarray(v, dtype=np.float64), np.zeros(bell.S)
    best = (vh, vl, np.inf, np.full(bell.S, np.inf))
    first = True
    for _ in range(6):
        if (not bell.ok or not np.all(np.isfinite(vh))
                or np.abs(vh).max(initial=0.0) >= _SPLIT_MAX):
            break
        s, c, e = bell.exact_rows(vh, vl, rows)
        r, er = _sum([s, c, -vh, -vl])
        er = er + e
        with warnings.catch_warnings():
            # any d serves (its residual enters E): a solver's accuracy warning about a
            # correction would only confuse
            warnings.simplefilter("ignore", RuntimeWarning)
            d = np.asarray(system.solve(r, tol=_CORRECTION_TOL), dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            res = r - d + gamma * (P_pi @ d)
            es = (2.0 * gam(L + 4) * (np.abs(r) + np.abs(d) + gamma * (P_pi @ np.abs(d)))
                  + 4.0 * (L + 4) * ETA)
            E = float((er + np.abs(res) + es).max(initial=0.0)) / denom * WIDEN
            add = vl + d
            if not first:  # the rounding of vl + d
                E += 2.0 * U * float(np.abs(add).max(initial=0.0))
        if not np.isfinite(E):
            break
        if E >= best[2]:
            break  # refinement stalled
        nh, nl = _two_sum(vh, add)
        with np.errstate(over="ignore", invalid="ignore"):
            # the residual at vh + vl + d is res; at the float nh = that - nl
            best = (nh, nl, E, res + nl - gamma * (P_pi @ nl))
        if E <= done:
            break
        vh, vl, first = nh, nl, False
    return best


def _certify(bell: _Bellman, actions: np.ndarray, max_steps: int, target: float,
             system=None, P_pi=None, v=None, q=None) -> Result:
    r"""The exact values of a deterministic policy, refined, and a certified bound on
    their distance to the optimal values (improving the policy where an improvement is
    certain).

    1. Solve :math:`(I - \gamma P_\pi) v = g_\pi` (:class:`PolicySystem`; or take the
       ``system``, ``v`` and float Q-values ``q`` of the policy iteration that found the
       policy: its factorisation serves again) and refine v to a double-double :math:`v_h + v_l`
       within E of :math:`V_\pi` (:func:`_refine`: one pass in the usual case).
    2. The advantages :math:`A(s, a) = \tilde Q(s, a) - \tilde Q(s, \pi(s))` at :math:`v_h`:
       first in float (at v when ``q`` is given, the bound E growing by
       :math:`\|v_h + v_l - v\|`; :meth:`_Bellman.q_error` bounds their rounding); only
       where the
       float upper bound plus :math:`\gamma (\sigma_{s,a} + \sigma_{s,\pi(s)}) E'` could
       be positive (near ties) in double-double, with the exact
       :math:`\|P(s,a) - P(s,\pi(s))\|_1` (zero for identical rows).  The exact
       advantage of :math:`V_\pi` differs by at most :math:`\gamma \|P(s, a) -
       P(s, \pi(s))\|_1 E'`, with :math:`E' = \|v_l\|_\infty + E \ge \|V_\pi -
       v_h\|_\infty`.  Where its lower bound is > 0 the switch is a certain
       improvement, taken (policy iteration with a certified tie rule), at most
       ``max_steps`` times.
    3. :math:`\rho` = the largest upper bound of an advantage (or 0) bounds
       :math:`\|T V_\pi - V_\pi\|_\infty`, so :math:`\|v^* - V_\pi\|_\infty \le \rho /
       (1 - \beta)`, and the returned float :math:`v_h` is within ``bound`` :math:`=
       (\|v_l\|_\infty + E + \rho / (1 - \beta))(1 + 10^{-13})` of :math:`v^*`.
    """
    from .evaluation import PolicySystem

    S, A = bell.S, bell.A
    gamma, denom = bell.gamma, 1.0 - bell.beta
    states = np.arange(S)
    actions = np.asarray(actions, dtype=np.int64).copy()
    steps = 0
    while True:
        rows = states * A + actions
        if system is None:
            _, P_pi, g_pi = bell.policy(actions)
            system = PolicySystem(P_pi, gamma)
            with np.errstate(over="ignore", invalid="ignore"):
                v = system.solve(g_pi)
        vh, vl, E, resid = _refine(bell, rows, P_pi, system, v, 1e-3 * target)
        if not np.isfinite(E):
            return Result(v=vh, actions=actions, bound=np.inf, steps=steps, rho=np.inf,
                          E=np.inf, residual=np.inf, capped=False, q=None)
        Ev = float(np.abs(vl).max(initial=0.0)) + E  # >= ||V_pi - vh||
        if q is None:  # the float Q-values at w (at the policy iteration's v if given)
            w, Ew = vh, Ev
            with np.errstate(over="ignore", invalid="ignore"):
                q = bell.q(vh)
        else:  # ||V_pi - v|| <= E + ||vh + vl - v||
            w = v
            Ew = E + float((np.abs(vh - v) + np.abs(vl)).max(initial=0.0)) * (1.0 + 4 * U)
        sig = bell.sigma.reshape(S, A)
        err = bell.q_error(q, float(np.abs(w).max(initial=0.0)))
        adv = q - q[states, actions][:, None]
        slack = (err + err[states, actions][:, None] + 2.0 * U * np.abs(adv)
                 + gamma * (sig + sig[states, actions][:, None]) * Ew) * WIDEN
        upper = adv + slack
        upper[states, actions] = -np.inf
        near = upper > 0.0
        rho, better = 0.0, np.zeros((S, A), dtype=bool)
        lower_near = None
        if near.any():
            si, ai = np.nonzero(near)
            own = np.unique(si)
            s1, c1, e1 = bell.exact_rows(vh, vl, si * A + ai)
            s0, c0, e0 = bell.exact_rows(vh, vl, rows[own])
            pos = np.searchsorted(own, si)
            a_dd, ea = _sum([s1, c1, -s0[pos], -c0[pos]])
            ea = ea + e1 + e0[pos]
            P = bell.P
            diff = P[si * A + ai] - P[rows[si]]
            delta = np.asarray(abs(diff).sum(axis=1)).ravel() * WIDEN
            sl = (ea + gamma * delta * E) * WIDEN
            pad = 2.0 * U * (np.abs(a_dd) + sl) + 2.0 * ETA
            upper_near, lower_near = a_dd + sl + pad, a_dd - sl - pad
            rho = max(0.0, float(upper_near.max()))
            better[si, ai] = lower_near > 0.0
            adv = adv.copy()
            adv[si, ai] = a_dd
        if better.any() and steps < max_steps:
            switch = better.any(axis=1)
            cand = np.where(better, adv, -np.inf).argmax(axis=1)
            actions = np.where(switch, cand, actions)
            steps += 1
            system = q = None
            continue
        bound = (Ev + rho / denom) * WIDEN + 4.0 * ETA
        # the residual of the returned float values vh (for information)
        top = resid + np.maximum(0.0, np.max(np.where(near, adv, -np.inf), axis=1,
                                             initial=-np.inf))
        return Result(v=vh, actions=actions, bound=bound, steps=steps, rho=rho, E=Ev,
                      residual=float(np.abs(top).max(initial=0.0)), q=q,
                      capped=bool(better.any()))


def _finish(model, bell, v, lam, method, iterations, status, message, error_bound,
            residual=None, actions=None, q=None):
    """The result of :func:`solve_mdp`: the policy (by default the greedy policy of v),
    the residual of v and the status."""
    if q is None:
        with np.errstate(over="ignore", invalid="ignore"):
            q = bell.q(v)
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


def _from_certificate(model, bell, lam, method, cert, iterations, what, target, scale,
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
    return _finish(model, bell, cert.v, lam, method, iterations, status, msg, cert.bound,
                   cert.residual, cert.actions, cert.q)


def _lp_policy(bell: _Bellman, max_iter: int) -> tuple[np.ndarray | None, int, str]:
    r"""An optimal policy by the dual LP, :math:`\max \sum_{s,a} g(s,a) x(s,a)` s.t.
    :math:`\sum_a x(s', a) - \gamma \sum_{s,a} P(s'|s,a) x(s,a) = 1/S`, x >= 0 (the
    discounted occupancy of a start spread over every state, S rows and S*A columns),
    with costs scaled to a largest magnitude of 1, solved by HiGHS's primal simplex from
    the basis of the start of policy iteration, the greedy policy of one Bellman step
    from :math:`\max_a g` (columns :math:`(s, \pi_0(s))`: the basis matrix :math:`(I -
    \gamma P_{\pi_0})^\top` is invertible and its solution, an occupancy, is feasible;
    every primal simplex step then switches the action of one state, a policy-iteration
    step of one state, and stays feasible: the primal simplex answers a sparse S =
    3,000 model in seconds where the dual simplex from the same basis took a minute),
    at most ``max_iter`` simplex iterations in all.  The policy
    is the basic column of every state (its largest x).

    Returns (actions, simplex iterations, outcome): outcome "optimal"; or
    "iteration_limit" (``max_iter`` stopped HiGHS; actions the policy of its last
    basis, a feasible occupancy, or None when HiGHS gave no solution); or "failed"
    (actions None: HiGHS refused the model or found no optimum, from that basis
    and again from its own start).
    """
    import highspy

    from .._solvers import HIGHS_OPTIONS, new_highs

    S, A = bell.S, bell.A
    n = S * A
    P = sp.csr_array(bell.P) if bell.dense else bell.P
    # column (s, a): +1 in row s, -gamma P(.|s, a) in the other rows: the CSC of this
    # matrix is the CSR of its transpose, built from P's rows
    E = sp.csr_array((np.ones(n), (np.arange(n), np.repeat(np.arange(S), A))), shape=(n, S))
    cols = sp.csr_array(E - bell.gamma * P)
    cols.sum_duplicates()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, S
    top = float(np.abs(bell.gflat).max(initial=0.0))
    # (a positive scaling of the objective keeps its optimal bases: HiGHS's tolerances
    # want costs of order 1)
    lp.col_cost_ = -bell.gflat / (top if top > 0.0 else 1.0)
    lp.col_lower_, lp.col_upper_ = np.zeros(n), np.full(n, np.inf)
    lp.row_lower_ = lp.row_upper_ = np.full(S, 1.0 / S)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = cols.indptr.astype(np.int32)
    lp.a_matrix_.index_ = cols.indices.astype(np.int32)
    lp.a_matrix_.value_ = np.asarray(cols.data, dtype=np.float64)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, S
    iterations = 0
    # the start of policy iteration: the greedy policy of one Bellman step from max_a g
    # (one product with P; on random sparse models half as many states as the greedy
    # policy of g differ from the optimum, so half as many pivots)
    with np.errstate(over="ignore", invalid="ignore"):
        start = bell.q(bell.g.max(axis=1)).argmax(axis=1)
    # that basis first; HiGHS may refuse it (near gamma = 1 with nearly absorbing
    # states its matrix is near singular: status kNotset), then its own crash basis
    for warm in (True, False):
        left = max_iter - iterations
        if left <= 0:
            break
        h = new_highs(**HIGHS_OPTIONS, simplex_iteration_limit=left,
                      **({"simplex_strategy": 4} if warm else {}))  # (4: primal)
        try:
            h.passModel(lp)
            if warm:
                basis = highspy.HighsBasis()
                status = np.full(n, highspy.HighsBasisStatus.kLower)
                status[np.arange(S) * A + start] = highspy.HighsBasisStatus.kBasic
                basis.col_status = status.tolist()
                basis.row_status = [highspy.HighsBasisStatus.kLower] * S
                basis.valid = True
                # (a basis, S basic columns: HiGHS need not repair it, which would cost a
                # factorisation before the one its simplex starts with)
                basis.alien = False
                h.setBasis(basis)
            h.run()
        except (RuntimeError, ValueError, ArithmeticError):
            continue
        iterations += int(h.getInfo().simplex_iteration_count)
        model_status = h.getModelStatus()
        if model_status in (highspy.HighsModelStatus.kOptimal,
                            highspy.HighsModelStatus.kIterationLimit):
            sol = h.getSolution()
            x = (np.asarray(sol.col_value, dtype=np.float64).reshape(S, A)
                 if sol.value_valid else None)
            if model_status == highspy.HighsModelStatus.kOptimal and x is not None:
                return x.argmax(axis=1), iterations, "optimal"
            if model_status == highspy.HighsModelStatus.kIterationLimit:
                ok = x is not None and np.all(np.isfinite(x))
                return (x.argmax(axis=1) if ok else None), iterations, "iteration_limit"
    return None, iterations, ("iteration_limit" if iterations >= max_iter else "failed")


def solve_mdp(model: TabularCMDP, method: str = "policy_iteration", *, lam=None,
              horizon=None, discount: float = 1.0, tol: float = 1e-12,
              max_iter: int = 100_000, k: int = 20, v0=None) -> Result:
    r"""The optimal policy and values of a plain MDP (the reward :math:`r - \lambda^\top c`).

    Discounted (``horizon=None``, gamma < 1), by ``method``:

    * ``"policy_iteration"``: Howard's policy iteration with exact evaluations
      (:func:`policy_iteration`'s iteration, started at the greedy policy of one Bellman
      step from :math:`\max_a g`, a policy that switched few states solved through the
      last factorisation: :meth:`PolicySystem.updated`), its final policy certified
      (below) with that factorisation;
    * ``"value_iteration"``: :math:`v \leftarrow \max_a Q_v` from ``v0`` (default 0);
    * ``"modified_policy_iteration"``: a greedy step, then at most ``k`` evaluation
      sweeps of the greedy policy (fewer once a sweep changes v by a constant up to a
      span of a tenth of the target over :math:`\gamma / (1 - \gamma)`: the sweeps left
      could only add a constant, which neither the next greedy policy nor the bounds
      see), repeated;
    * ``"lp"``: the dual LP over discounted occupancies (:func:`_lp_policy`: HiGHS's
      primal simplex from the basis of policy iteration's start, at most ``max_iter``
      simplex iterations), its policy certified (below).  When HiGHS finds no optimum,
      or ``max_iter`` stops it, certified policy iteration answers from the policy of
      HiGHS's last basis (or the greedy policy) and the message says so.

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
      their own bound is limited by rounding), :func:`_certify`: the policy is evaluated
      exactly (:class:`~rcmdp_exact.core.evaluation.PolicySystem`) and refined once to a
      double-double :math:`v_h + v_l` (a correction d from the double-double residual);
      the residual of d gives E, a bound on :math:`\|V_\pi - v_h - v_l\|`; the
      advantages of the other actions, screened in float and computed in double-double
      where they could be positive, are off by at most :math:`\gamma \|P(s,a) -
      P(s,\pi(s))\|_1 E` (zero for identical rows); where one is surely positive the
      policy is improved (a certified improvement step); the largest upper bound
      :math:`\rho \ge \|T V_\pi - V_\pi\|_\infty` then gives ``error_bound``
      :math:`= (\|v_l\|_\infty + E + \rho / (1 - \beta))(1 + 10^{-13})` for the
      returned :math:`v = v_h` (the :math:`10^{-13}` covers the rounding of the bound's
      own few operations).  For a certified optimal policy (:math:`\rho = 0`) this is
      about half a unit in the last place of the largest value, at any gamma;
    * *value and modified policy iteration* stop when the float McQueen-Porteus bounds
      around the last iterate, :math:`v + [\min(Tv - v), \max(Tv - v)] / (1 - \gamma)`,
      put the optimal values within ``tol`` times the value scale, or when their
      half-width is below the rounding of the float iteration (:math:`2 (L + 3) u
      (\max|r| + 2 \max|v|) / (1 - \gamma)`: more iterations cannot shrink it), and
      return the centre w of the bounds with the certified bound :math:`\max(hi,
      -\min(lo, 0)) / (1 - \beta)`, where :math:`lo \le Tw - w \le hi`, from the float
      Q-values with their rounding bounded when that meets ``tol``, else in double-double
      where float cannot decide (:func:`_mp_bound`).  Near gamma = 1
      that bound cannot go below about :math:`2 u \max|v| / (1 - \gamma)`; when it
      misses ``tol`` (and the iteration limit was not reached), the greedy policy of w
      is certified as above and returned instead (``v`` its exact values) when its bound
      is smaller.

    ``converged`` (and ``status`` "converged") only when ``error_bound`` is within
    ``tol`` times the value scale.  Otherwise a RuntimeWarning says why and ``status``
    is "not_converged" when ``max_iter`` stopped the method (more iterations may help),
    or "tol_below_rounding" when the method had finished but float64 cannot certify
    ``tol`` at this gamma (``success`` is True, ``error_bound`` holds, the message gives
    the tol that can be certified).  An LP that HiGHS does not solve (no optimum, or
    stopped by ``max_iter``) is repaired by certified policy iteration, and the message
    says so.

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
        Iteration cap (of the simplex iterations of ``"lp"``, and of the certified
        improvement steps); reaching it leaves ``converged`` False unless the bound
        meets ``tol`` anyway.
    k : int
        At most this many evaluation sweeps per step of modified policy iteration.
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
    # (no constraint: the model's read-only r itself, no copy)
    g = np.asarray(model.r if model.n_constraints == 0 else
                   model.scalarised_reward(lam_arr), dtype=np.float64)
    check_real(tol, "tol", 0.0, low_open=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    # every option checked whatever the method (one it does not use is still no garbage)
    disc = check_real(discount, "discount", 0.0, 1.0)
    k = check_int(k, "k", 1)
    S, A = model.n_states, model.n_actions
    v = None
    if v0 is not None:
        v = np.array(as_float_array(v0, "v0", "give one value per state", shape=(S,),
                                    axes=("s",)))
    if horizon is not None:
        T = model.horizon if isinstance(horizon, str) and horizon == "model" else horizon
        T = check_limit(T, "horizon", "horizon",
                        hint=" (or 'model', or None for the discounted problem)")
        check_memory(T, 8 * S * A, MAX_INPUT_BYTES, "horizon", "the policy of every step",
                     "; or solve the discounted problem (horizon=None)",
                     "rcmdp_exact._checks.MAX_INPUT_BYTES")
        _check_no_overflow(float(np.abs(g).max(initial=0.0)), _steps(T, disc),
                           "the model's rewards and costs", "or shorten the horizon")
        res = _backward_induction(model.P_sparse, g, T, discount=disc, policy=True)
        return Result(v=res.v, value=float(model.p0 @ res.v), policy=res.policy, horizon=T,
                      iterations=T, converged=True, success=True, status=Status.OPTIMAL,
                      message=f"backward induction over {T} steps", method="backward_induction",
                      lam=lam_arr, budget=rescaled_budget(model.d, model.gamma, T))
    check_choice(method, "method", MDP_METHODS,
                 hint=" (or horizon=T for backward induction)")
    check_real(model.gamma, "the model's gamma", 0.0, 1.0, high_open=True,
               hint="; solve_mdp's discounted methods need gamma < 1: give horizon=T for "
                    "the T-step problem")
    _check_no_overflow(float(np.abs(g).max(initial=0.0)), 1.0 / (1.0 - model.gamma),
                       "the model's rewards and costs", "or lower gamma")
    scale = value_scale(model)
    target = tol * scale
    bell = _Bellman(model, g)
    if method == "policy_iteration":
        pi = _howard(model, bell, max_iter, lookahead=True)
        what = (f"policy iteration: stable after {pi.iterations} iterations" if pi.converged
                else f"policy iteration: iteration limit {max_iter} reached")
        cert = _certify(bell, pi.policy, max_iter - pi.iterations, target, pi.system,
                        pi.P_pi, pi.v, pi.q)
        return _from_certificate(model, bell, lam_arr, method, cert, pi.iterations, what,
                                 target, scale, capped=not pi.converged)
    if method == "lp":
        actions, its, outcome = _lp_policy(bell, max_iter)
        what = f"LP (HiGHS) optimal after {its} simplex iterations"
        if outcome == "iteration_limit":
            # repaired, and said: the certificate's improvement steps are policy
            # iteration, from the policy of the LP's last basis (or the greedy policy)
            start = "its last basis" if actions is not None else "the greedy policy"
            what = (f"the LP (HiGHS) stopped at its iteration limit max_iter={max_iter} "
                    f"after {its} simplex iterations; certified policy iteration from "
                    f"{start} answered instead")
        elif actions is None:
            what = (f"the LP solver (HiGHS) returned no optimum after {its} simplex "
                    f"iterations; certified policy iteration from the greedy policy "
                    f"answered instead")
        if actions is None:
            actions = bell.g.argmax(axis=1)
        cert = _certify(bell, actions, max_iter, target)
        return _from_certificate(model, bell, lam_arr, method, cert, max(its, 1), what,
                                 target, scale, capped=outcome == "iteration_limit")
    return _iterate_values(model, bell, lam_arr, method, v, max_iter, int(k), target, scale)


def _iterate_values(model, bell: _Bellman, lam, method, v, max_iter, k, target, scale):
    """Value iteration and modified policy iteration (:func:`solve_mdp`)."""
    from ._compiled import greedy_step, shifted_bound

    S = bell.S
    gamma = bell.gamma
    v = np.zeros(S) if v is None else v
    factor = gamma / (1.0 - gamma)
    # the rounding floor of the float McQueen-Porteus half-width: each component of
    # Tv - v is computed within about (L + 3) u (|g| + |v|) (L next states), so a
    # half-width below twice that over 1 - gamma says nothing more: stop there
    gmax = float(np.abs(bell.gflat).max(initial=0.0))
    L = bell.L
    half, it, floor, shift = np.inf, 0, 0.0, 0.0
    sweep = bell.sweeper() if method != "value_iteration" else None
    qbuf = np.empty((S, bell.A))
    with np.errstate(over="ignore", invalid="ignore"):
        while it < max_iter:
            it += 1
            # (at v = 0, the start by default, Q = g exactly: no product with P)
            q = bell.q(v, qbuf) if it > 1 or v.any() else bell.g.copy()
            new, tv, lo, hi, top = greedy_step(q, v)  # (one compiled pass over q)
            # v* - v lies in [lo, hi] / (1 - gamma) (McQueen-Porteus around v): the
            # centre v + shift is within half of it
            half = (hi - lo) / (2.0 * (1.0 - gamma))
            shift = (lo + hi) / (2.0 * (1.0 - gamma))
            floor = 2.0 * (L + 3) * U * (gmax + 2.0 * top) / (1.0 - gamma)
            if half <= max(target, floor) or it == max_iter or not np.isfinite(half):
                break
            if method == "value_iteration":
                v = tv
                continue
            # at most k sweeps of the greedy policy (compiled, on the rows of P where
            # they are): once a sweep changes v by a constant up to a span s, the
            # sweeps left can change it by a constant up to a span of s gamma / (1 -
            # gamma); the greedy policy and the McQueen-Porteus centre do not see
            # constants, so when that is a tenth of the target they are wasted work
            cut = 0.1 * target / factor if gamma > 0.0 else np.inf
            v = sweep(new, tv, k, cut)
        # the returned centre w = v + shift and its float Q-values from those at v
        # (Q_w = Q_v + gamma shift sigma exactly, sigma the exact row sums, within
        # gamma_L sigma of the float ones), and the certified bound of the float
        # McQueen-Porteus bounds around w (_mp_bound's first test) in one compiled pass
        # over q, which becomes Q_w (no temporary (S, A) arrays)
        w = v + shift
        bell.sigma  # noqa: B018 (the row sums, if no product has given them yet)
        vmax = float(np.abs(v).max(initial=0.0))
        q = np.ascontiguousarray(q)
        hi_f, lo_f, resid_f, finite = shifted_bound(
            q, bell.g, bell.sigma, bell.sums, gamma, shift, w, vmax, gam(L + 3),
            4.0 * (L + 3) * ETA, gam(L + 2))
        certified = (max(abs(hi_f), abs(min(lo_f, 0.0))) / (1.0 - bell.beta) * WIDEN
                     + 4.0 * ETA)
        fast = (finite and bell.ok and certified <= target
                and float(np.abs(w).max(initial=0.0)) < _SPLIT_MAX)
        if not fast:  # the double-double test of _mp_bound, on the rounding bounds of Q_w
            gs = gamma * shift * bell.sums.reshape(S, bell.A)
            err = (bell.q_error(q, vmax) + np.abs(gs) * 2.0 * gam(L + 2)
                   + 2.0 * U * (np.abs(gs) + np.abs(q)) + 2.0 * U * np.abs(shift))
    v = w
    capped = not half <= max(target, floor)  # the iteration limit stopped it
    name = method.replace("_", " ")
    if fast:
        residual = resid_f
    else:
        certified, residual, q = _mp_bound(bell, v, q, err, target=target)
    what = (f"{name} met its stopping rule after {it} iterations" if not capped else
            f"{name}: iteration limit {max_iter} reached")
    status = _verdict(certified, target, capped)
    if status == Status.CONVERGED:
        return _finish(model, bell, v, lam, method, it, status,
                       f"{what}; certified McQueen-Porteus error bound {certified:.2e}",
                       certified, residual, q=q)
    if not capped:
        # the bounds around v are limited by rounding (~ u |v| / (1 - gamma)): certify
        # the greedy policy of v by its exact values instead
        cert = _certify(bell, q.argmax(axis=1), max_iter, target)
        if cert.bound <= certified:
            return _from_certificate(model, bell, lam, method, cert, it,
                                     what + " (its bounds limited by rounding)", target,
                                     scale)
    msg = (f"{what} with a certified error bound {certified:.2e} > tol * scale = "
           f"{target:.2e}; raise max_iter or use method='policy_iteration'" if capped else
           _below_rounding_message(what, certified, target, scale, gamma))
    return _finish(model, bell, v, lam, method, it, status, msg, certified, residual, q=q)
