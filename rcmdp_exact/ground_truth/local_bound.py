r"""A second-order bound of a policy box with one adversary per objective.

The Lagrangian bound of a box (:func:`~rcmdp_exact.ground_truth.boxes.lagrangian_bounds`)
lets one adversary answer the value and the costs together.  Where the value's and the
costs' adversaries disagree it stays above the optimum of the box by a constant, however
small the box, so a branch and bound on it alone needs boxes of the size of the target
gap in every free coordinate.  This module bounds a box with **separate** kernels, one
per objective, and is exact to second order in the width of the box.

**The bound.**  Fix, for every objective j (the value j = 0 with reward
:math:`g_0 = r`, each cost k with reward :math:`g_k = -c_k`), a kernel :math:`P_j` of the
set and any vector :math:`w_j` (S,), and let :math:`q_j(s, a) = P_j(s, a)^\top (g_j +
\gamma w_j)`.  For every policy :math:`\pi` (the performance difference identity, exact
for any :math:`w_j`, not only a value function):

.. math::

    p_0^\top V^{g_j}_{\pi, P_j} = p_0^\top w_j + \sum_s d_j^\pi(s)\, a_j(s, \pi_s),
    \qquad a_j(s, \pi_s) = \sum_a \pi_s(a) q_j(s, a) - w_j(s),

with :math:`d_j^\pi` the discounted occupancy of :math:`(\pi, P_j)` from :math:`p_0`.
For a robust-feasible :math:`\pi`, :math:`\min_P V_{\pi,P} \le V_{\pi,P_0}` and
:math:`-C_{k,\pi,P_k} \ge -\max_P C_{k,\pi,P} \ge -d_k`, so for every :math:`\lambda
\ge 0` (:math:`\theta = (1, \lambda)`)

.. math::

    \min_P V_{\pi,P} \le \sum_j \theta_j \Bigl[p_0^\top w_j + \sum_s d_j^\pi(s)\,
    a_j(s, \pi_s)\Bigr] + \lambda^\top d .

On a box B the occupancies lie in intervals :math:`[\underline d_j, \overline d_j]`
(below), with middle :math:`m_j` and half-width :math:`h_j`, so the maximum over
:math:`\pi \in B` is at most

.. math::

    F_B(\lambda) = \sum_j \theta_j p_0^\top w_j + \lambda^\top d
    + \sum_s \max_{\pi_s \in B_s} \sum_j \theta_j m_j(s) a_j(s, \pi_s)
    + \sum_s \sum_j \theta_j h_j(s) \max_{\pi_s \in B_s} |a_j(s, \pi_s)|,

each maximum a greedy fill of the box (:func:`~rcmdp_exact.robust.engine.greedy_box`).
:math:`F_B` is convex and piecewise linear in :math:`\lambda`; it is minimised by
bisection on the sign of its slope, one coordinate at a time (any :math:`\lambda \ge 0`
gives a valid bound).  With :math:`P_j` the worst cases and :math:`w_j` the worst-case
values of a policy of the box (its robust evaluation), :math:`a_j` and :math:`h_j` are of
the order of the box's width, so :math:`F_B` exceeds the box's optimum by the width
squared where the worst cases do not change inside the box; on a box of one policy it
is that policy's robust value when it is robust-feasible.

**Occupancy intervals.**  :math:`d^\pi = p_0 + \gamma P_\pi^\top d^\pi` with
:math:`P_\pi(s, s') = \sum_a \pi_s(a) P(s'|s,a)` between :math:`\underline M(s, s') =
\min_{\pi_s \in B_s}` and :math:`\overline M(s, s') = \max_{\pi_s \in B_s}` of it
(greedy fills, one per pair (s, s')).  The solution :math:`\underline d` of
:math:`\underline d = p_0 + \gamma \underline M^\top \underline d` is below every
:math:`d^\pi` (the difference e satisfies :math:`e \ge \gamma \underline M^\top e`, and
:math:`\gamma \underline M^\top` has spectral radius below 1), and likewise
:math:`\overline d` is above when :math:`\gamma \max_s \sum_{s'} \overline M(s, s') < 1`;
otherwise, and in any case, :math:`d^\pi(s) \le \underline d(s) + 1/(1-\gamma) - \sum_{s'}
\underline d(s')` because every occupancy sums to :math:`1/(1-\gamma)`.  The solutions
are moved outwards by :math:`10^{-12}` of their size to cover the rounding of the solve.

**A budget of work.**  Each of these box MDPs costs :math:`O(S^3)` per round, 2 S of
them per kernel: where one round for one kernel would take more than
:data:`INTERVAL_FLOPS` operations (beyond S = 100 or so) the box MDPs are not solved and
the one-step intervals are used alone (a rule on the model's size, the same on every
machine; before issue 43 it was a forecast of the time left before a deadline).  The
one-step intervals are :math:`p_0(s') + \frac{\gamma}{1-\gamma}
\min_s \underline M(s, s') \le d^\pi(s') \le p_0(s') + \frac{\gamma}{1-\gamma}
\max_s \overline M(s, s')` (from :math:`d^\pi = p_0 + \gamma P_\pi^\top d^\pi` and
:math:`\sum_s d^\pi(s) = 1/(1-\gamma)`), :math:`O(S^2 A)`; both are intersected.
"""

from __future__ import annotations

import numpy as np

from .._result import Result
from ..core.evaluation import PolicySystem, policy_matrix
from ..core.mdp import box_policy_iteration, greedy_box
from ..robust.engine import RobustGame

__all__ = [ "one_step_intervals"]

#: Relative widening of the solved occupancy intervals (the rounding of the solve).
_WIDEN = 1e-12
#: The box MDPs of :func:`occupancy_intervals` are solved only where one round for one
#: kernel, about 2 S (S^3 + 2 S^2 A) operations, is at most this (S = 100, A = 4: 2.2e8;
#: S = 64: 3.8e7); beyond, the one-step intervals alone.
INTERVAL_FLOPS = 2.5e8
#: Operations per call of the compiled occupancy iteration (the safety net is looked at
#: between calls): about 0.05 s.
COMPILED_BATCH_FLOPS = 2.5e7


def one_step_intervals(game: RobustGame, P: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    r"""The one-step occupancy intervals of the boxes (see the module docstring).

    P (J, S, A, S), lo, hi (J, S, A); returns (low, high), each (J, S).
    """
    g = game.gamma
    Pt = np.swapaxes(P, 2, 3)  # (J, s, s', a)
    lob = np.broadcast_to(lo[:, :, None, :], Pt.shape)
    hib = np.broadcast_to(hi[:, :, None, :], Pt.shape)
    top = np.einsum("jsta,jsta->jst", game.greedy(Pt, lob, hib), Pt).max(axis=1)
    bottom = np.einsum("jsta,jsta->jst", game.greedy(-Pt, lob, hib), Pt).min(axis=1)
    high = (game.p0 + g / (1.0 - g) * top) * (1.0 + _WIDEN)
    low = np.maximum((game.p0 + g / (1.0 - g) * bottom) * (1.0 - _WIDEN), 0.0)
    return low, np.minimum(high, 1.0 / (1.0 - g))


def _box_max(q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max over the box rows of sum_a pi(a) q(a), batched over leading axes."""
    return np.einsum("...a,...a->...", greedy_box(q, lo, hi), q)


def occupancy_intervals(game: RobustGame, P: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                        max_iter: int = 50, *, start: np.ndarray | None = None,
                        compiled: bool | None = None, values: bool = False):
    r"""Certified intervals on the occupancy of every policy of the boxes under kernels.

    P (J, n, S, A, S): n kernels per box; lo, hi (J, S, A).  For each state s' the
    largest and the smallest :math:`d^\pi(s')` over the box is a box MDP with reward
    :math:`\pm 1\{s = s'\}`, solved by Howard's policy iteration (at most ``max_iter``
    evaluations), with the residual bound :math:`\|T V - V\|_\infty / (1 - \gamma)`
    added.  The iteration is compiled (:func:`~rcmdp_exact.ground_truth._compiled.
    occupancy_values`: every problem on its own, one dense LU per evaluation) when the
    game is (``compiled=None``: ``game.compiled``); otherwise it is
    :func:`~rcmdp_exact.core.mdp.box_policy_iteration` with every policy evaluated by
    :class:`~rcmdp_exact.core.evaluation.PolicySystem` (the numpy oracle).  Either way the
    values are only a proposal: the residual and the intervals are computed here, in
    numpy, from the values alone, so they hold whatever the values are.

    ``start`` (J, n, 2, S, S): values of the same problems (of a parent box, say) to start
    the iteration from (the first policy is greedy for them); ``values=True`` also returns
    the final values (J, n, 2, S, S) for that.  Returns (low, high), each (J, n, S).
    """
    J0, n0 = P.shape[:2]
    S, A = game.S, game.A
    P = P.reshape(J0 * n0, S, A, S)
    lo, hi = np.repeat(lo, n0, axis=0), np.repeat(hi, n0, axis=0)
    J = J0 * n0
    g = game.gamma
    low1, high1 = one_step_intervals(game, P, lo, hi)
    if 2.0 * S * (S**3 + 2 * S * A * S) > INTERVAL_FLOPS or game.late():
        out = low1.reshape(J0, n0, S), np.maximum(high1, low1).reshape(J0, n0, S)
        return (*out, None) if values else out
    v0 = None if start is None else np.asarray(start, dtype=np.float64).reshape(J, 2, S, S)
    if compiled is None:
        compiled = getattr(game, "compiled", False)
    v, done = (_values_compiled if compiled else _values_numpy)(game, P, lo, hi, v0, max_iter)
    # the certificate, from v alone: T v by greedy fills of the box, the residual bound
    r = _rewards(S)
    q = r[None, ..., None] + g * np.einsum("jsat,jxt->jxsa", P, v.reshape(J, 2 * S, S)
                                           ).reshape(J, 2, S, S, A)
    best = game.greedy(q, lo[:, None, None], hi[:, None, None])
    tv = np.einsum("jxtsa,jxtsa->jxts", best, q)
    err = np.abs(tv - v).max(axis=3) / (1.0 - g)
    val = v @ game.p0 + err  # (J, 2, S)
    high = np.where(done[:, None], np.minimum(val[:, 0] * (1.0 + _WIDEN), high1), high1)
    low = np.where(done[:, None],
                   np.maximum(np.maximum(-val[:, 1] * (1.0 - _WIDEN), 0.0), low1), low1)
    out = low.reshape(J0, n0, S), np.maximum(high, low).reshape(J0, n0, S)
    return (*out, v.reshape(J0, n0, 2, S, S)) if values else out


def _rewards(S: int) -> np.ndarray:
    """The rewards (2, S, S) of the occupancy box MDPs: sign, target, state."""
    r = np.zeros((2, S, S))
    idx = np.arange(S)
    r[0, idx, idx] = 1.0
    r[1, idx, idx] = -1.0
    return r


def _values_numpy(game, P, lo, hi, v0, max_iter):
    """The values (J, 2, S, S) of the occupancy box MDPs by the numpy Howard iteration
    (the oracle), and a mask (J,) of the kernels solved (all)."""
    J, S, A = P.shape[0], game.S, game.A
    g = game.gamma
    n = J * 2 * S
    Pb = np.broadcast_to(P[:, None, None], (J, 2, S, S, A, S)).reshape(n, S, A, S)
    lob = np.broadcast_to(lo[:, None, None], (J, 2, S, S, A)).reshape(n, S, A)
    hib = np.broadcast_to(hi[:, None, None], (J, 2, S, S, A)).reshape(n, S, A)
    r = np.broadcast_to(_rewards(S), (J, 2, S, S)).reshape(n, S)
    q0 = np.broadcast_to(r[..., None], (n, S, A)).copy()
    if v0 is not None:
        q0 = q0 + g * np.einsum("nsat,nt->nsa", Pb, v0.reshape(n, S))
    pi = game.greedy(q0, lob, hib)

    def evaluate(pi):
        v = PolicySystem(policy_matrix(Pb, pi), g).solve(r)
        return v, r[..., None] + g * np.einsum("nsat,nt->nsa", Pb, v)

    sol = box_policy_iteration(evaluate, pi, lob, hib, max_iter=max_iter, rtol=1e-13,
                               stop=game.late, greedy=game.greedy)
    return sol.w.reshape(J, 2, S, S), np.ones(J, dtype=bool)


def _values_compiled(game, P, lo, hi, v0, max_iter):
    """The values (J, 2, S, S) of the occupancy box MDPs by the compiled Howard iteration,
    in calls of :data:`COMPILED_BATCH_FLOPS` operations at most, so that the safety net
    is looked at between them; a mask (J,) of the kernels solved (the others keep the
    one-step intervals)."""
    from ._compiled import occupancy_values

    J, S, A = P.shape[0], game.S, game.A
    v = np.zeros((J, 2, S, S))
    done = np.zeros(J, dtype=bool)
    per = 2.0 * S * (S**3 / 3.0 + 2 * S * A * S) * 4  # about four rounds per problem
    step = max(1, int(COMPILED_BATCH_FLOPS // per))
    for a in range(0, J, step):
        if a and game.late():
            break
        b = min(a + step, J)
        v[a:b] = occupancy_values(P[a:b], lo[a:b], hi[a:b], game.gamma,
                                  None if v0 is None else v0[a:b], max_iter=max_iter)[0]
        done[a:b] = True
    return v, done


def _terms(q, w, lo, hi):
    """max over the box rows of |a_j(s, pi_s)|, (J, n, S)."""
    top = _box_max(q, lo[:, None], hi[:, None]) - w
    bottom = -_box_max(-q, lo[:, None], hi[:, None]) - w
    return np.maximum(top, -bottom)


def _box_vertices(lo: np.ndarray, hi: np.ndarray, max_actions: int = 6):
    """The vertices of every row's box intersected with the simplex, (J, S, C, A), with a
    mask (J, S, C) of the valid ones; None when A > ``max_actions`` (C = A 2^(A-1)).

    A vertex has every action but one (the free one) at a bound; the free one takes the
    rest of the mass and must lie within its own bounds.
    """
    J, S, A = lo.shape
    if A > max_actions:
        return None
    pats = np.array(list(np.ndindex(*([2] * (A - 1)))), dtype=bool).reshape(-1, A - 1)
    verts, masks = [], []
    for f in range(A):
        others = [a for a in range(A) if a != f]
        v = np.empty((J, S, pats.shape[0], A))
        v[..., others] = np.where(pats, hi[:, :, None, others], lo[:, :, None, others])
        v[..., f] = 1.0 - v[..., others].sum(axis=-1)
        ok = (v[..., f] >= lo[:, :, None, f] - 1e-12) & (v[..., f] <= hi[:, :, None, f] + 1e-12)
        v[..., f] = np.clip(v[..., f], lo[:, :, None, f], hi[:, :, None, f])
        verts.append(v)
        masks.append(ok)
    return np.concatenate(verts, axis=2), np.concatenate(masks, axis=2)


class _Box:
    r"""The fixed parts of F_B for a batch: q (J, n, S, A), w (J, n, S), m, h (J, n, S).

    With at most 6 actions the per-state maximum of the convex
    :math:`\sum_j \theta_j (m_j a_j + h_j |a_j|)` is taken over the vertices of the box
    row (exact); otherwise the two parts are maximised apart (a greedy fill each).
    """

    def __init__(self, game, q, w, mid, half, lo, hi):
        self.game, self.q, self.w, self.mid, self.half = game, q, w, mid, half
        self.lo, self.hi = lo, hi
        self.base = w @ game.p0  # (J, n)
        verts = _box_vertices(lo, hi)
        if verts is not None and not verts[1].any(axis=2).all():
            verts = None  # a row without a vertex found: the separate maxima are safe
        self.joint = verts is not None
        if self.joint:
            v, self.ok = verts
            self.av = np.einsum("jscb,jnsb->jnsc", v, q) - w[..., None]  # a_j at vertices
            self.terms = mid[..., None] * self.av + half[..., None] * np.abs(self.av)
            self.not_ok = ~self.ok
            J, n, S = self.terms.shape[:3]
            self.pick = (np.arange(J)[:, None, None], np.arange(n)[None, :, None],
                         np.arange(S)[None, None, :])
        else:
            self.spread = (half * _terms(q, w, lo, hi)).sum(axis=2)  # (J, n)

    def value(self, lam: np.ndarray):
        """F_B(lam) (J,) and its slope (J, K) at multipliers lam (J, K)."""
        theta = np.concatenate([np.ones((lam.shape[0], 1)), lam], axis=1)
        if self.joint:
            tot = np.einsum("jn,jnsc->jsc", theta, self.terms)
            tot[self.not_ok] = -np.inf
            c = np.argmax(tot, axis=2)  # (J, S): the best vertex of each state
            jj, nn, ss = self.pick
            per = self.base + self.terms[jj, nn, ss, c[:, None, :]].sum(axis=2)
        else:
            qq = np.einsum("jns,jnsa->jsa", theta[:, :, None] * self.mid, self.q)
            pi = greedy_box(qq, self.lo, self.hi)
            a = np.einsum("jsa,jnsa->jns", pi, self.q) - self.w
            per = self.base + (self.mid * a).sum(axis=2) + self.spread
        # the rounding allowance grows with the multipliers: a slope of rounding noise
        # cannot drive lam to 1e10 and the bound below the optimum
        slack = self.game.rounding(1.0)
        F = (theta * per).sum(axis=1) + lam @ self.game.d_bound + slack * theta.sum(axis=1)
        return F, per[:, 1:] + self.game.d_bound + slack


def _keep(best_F, best_lam, F, lam):
    better = F < best_F
    best_F[better] = F[better]
    best_lam[better] = lam[better]


def _minimise(box: _Box, lam0: np.ndarray, sweeps: int, steps: int):
    """Coordinate bisection of the convex F_B on the sign of its slope: from 0, double
    until the slope turns non-negative, then ``steps`` bisection steps; ``sweeps``
    rounds over the coordinates.  Returns the smallest F_B met and its lam."""
    lam = lam0.copy()
    J, K = lam.shape
    best_F, _ = box.value(lam)
    best_lam = lam.copy()
    unit = np.maximum(lam.max(axis=1, initial=0.0), 1e-3 * box.game.scale)
    for _ in range(sweeps if K else 0):
        for k in range(K):
            at0 = lam.copy()
            at0[:, k] = 0.0
            F0, s0 = box.value(at0)
            _keep(best_F, best_lam, F0, at0)
            down = s0[:, k] < 0.0  # F still falls after 0: bracket its minimum
            lo = np.zeros(J)
            hi = np.where(down, np.maximum(lam[:, k], unit), 0.0)
            for _ in range(40):
                t = lam.copy()
                t[:, k] = hi
                Ft, st = box.value(t)
                _keep(best_F, best_lam, Ft, t)
                more = down & (st[:, k] < 0.0) & (hi < 1e12 * unit)
                if not more.any():
                    break
                lo = np.where(more, hi, lo)
                hi = np.where(more, 2.0 * hi, hi)
            for _ in range(steps):
                mid = 0.5 * (lo + hi)
                t = lam.copy()
                t[:, k] = np.where(down, mid, 0.0)
                Ft, st = box.value(t)
                _keep(best_F, best_lam, Ft, t)
                neg = st[:, k] < 0.0
                lo, hi = np.where(neg, mid, lo), np.where(neg, hi, mid)
            lam = best_lam.copy()
    return best_F, best_lam


def local_bounds(game: RobustGame, lo, hi, ev: dict, dlo, dhi, lam0=None, *,
                 sweeps: int | None = None, steps: int = 16) -> Result:
    r"""Certified upper bounds (J,) on the robust-feasible optimum of boxes (J, S, A).

    ``ev``: :meth:`RobustGame.evaluate` of one policy per box (its worst-case values
    ``w`` (J, 1+K, S), Q-functions ``q`` and kernels ``P`` (J, 1+K, S, A, S)), which
    fix :math:`w_j`, :math:`q_j` and :math:`P_j` of :math:`F_B(\lambda)` (module
    docstring); ``dlo``, ``dhi`` (J, 1+K, S): :func:`occupancy_intervals` of the boxes
    under those kernels; ``lam0`` (J, K): where the search over lam starts (0).

    Returns ``U`` (J,) and ``lam`` (J, K).
    """
    J = lo.shape[0]
    mid, half = 0.5 * (dlo + dhi), 0.5 * (dhi - dlo)
    w = np.array(ev["w"], dtype=np.float64)
    q = np.array(ev["q"], dtype=np.float64)
    if game.term.any():  # the terminal self-loop earns nothing: q = gamma w there
        q[:, :, game.term] = game.gamma * w[:, :, game.term, None]
    box = _Box(game, q, w, mid, half, lo, hi)
    lam0 = np.zeros((J, game.K)) if lam0 is None else np.maximum(lam0, 0.0)
    U, lam = _minimise(box, lam0, (1 if game.K == 1 else 2) if sweeps is None else sweeps,
                       steps)
    return Result(U=U, lam=lam)
