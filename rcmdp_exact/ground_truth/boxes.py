r"""The upper side of the bracket: Lagrangian bounds and branch and bound over policy boxes.

A box is :math:`B = \{\pi : l \le \pi \le u, \text{rows in the simplex}\}`.  For every
:math:`\lambda \ge 0`

.. math::

    U_B(\lambda) = \max_{\pi \in B} \min_P V_{r - \lambda^\top c}(\pi, P) + \lambda^\top d
    \;\ge\; \max_{\pi \in B,\ \text{robust-feasible}} \min_P V(\pi, P),

because for a robust-feasible :math:`\pi`, :math:`\min_P [V - \lambda^\top C] \ge
\min_P V - \lambda^\top \max_P C \ge \min_P V - \lambda^\top d`.  :math:`U_B` is the
fixed point of :math:`T_B` with reward :math:`r - \lambda^\top c`
(:class:`~rcmdp_exact.robust.engine.RobustGame`), certified by its residual bound.
By Danskin, :math:`\partial U_B / \partial \lambda_k = d_k - C_k(\pi_B, P_B)` at the
maximising pair, and :math:`\lambda` follows sign-gradient steps (the step grows after
a decrease and shrinks otherwise) from the better of the parent's :math:`\lambda` and
:math:`\lambda = 0` (U_B need not be convex in :math:`\lambda`); any
:math:`\lambda \ge 0` gives a valid bound, so a poor :math:`\lambda` costs tightness,
never correctness.

A box is dropped when some constraint cannot be met in it, :math:`\min_{\pi \in B}
\max_P C_k(\pi, P) > d_k` (the same recursion with reward :math:`-c_k`, certified from
below), or when :math:`U_B \le` lower + half the target gap (its bound is kept in the
upper side).  The box of largest :math:`U_B` is split first, on the interval
:math:`(s, a)` of largest width times the occupancy of s under the box's maximising
pair, at its middle.  ``upper`` is the largest bound over the open boxes and the boxes
dropped by the bound: a certified upper bound whatever the budget.
"""

from __future__ import annotations

import time

import numpy as np

from .._result import Result
from ..robust.engine import RobustGame
from .search import Incumbent

__all__ = ["branch_and_bound", "feasibility_bounds", "lagrangian_bounds", "split_boxes",
           "tighten"]


def lagrangian_bounds(game: RobustGame, lo, hi, lam, w=None) -> Result:
    r"""Certified :math:`U_B(\lambda)` of boxes (J, S, A) at multipliers (J, K).

    Returns ``U`` (J,), ``pi`` (J, S, A) maximisers, ``grad`` (J, K) =
    :math:`d - C(\pi_B, P_B)`, ``occ`` (J, S) occupancies under the maximising pair,
    ``w`` (J, S).
    """
    sol = game.solve(game.lagrangian(lam), lo, hi, w=w)
    U = sol["value"] + sol["err"] + lam @ game.d
    P, pi = sol["P"], sol["pi"]
    grad = game.d - game.numbers(P, pi)[1]
    return Result(U=U, pi=pi, grad=grad, occ=game.occupancy(P, pi), w=sol["w"])


def feasibility_bounds(game: RobustGame, lo, hi) -> np.ndarray:
    r"""Certified lower bounds (J, K) on :math:`\min_{\pi \in B} \max_P C_k(\pi, P)`."""
    J, K = lo.shape[0], game.K
    g = np.broadcast_to(-game.C, (J, K, game.S, game.A, game.S)).reshape(J * K, game.S,
                                                                         game.A, game.S)
    sol = game.solve(g, np.repeat(lo, K, axis=0), np.repeat(hi, K, axis=0))
    return -(sol["value"] + sol["err"]).reshape(J, K)


def tighten(lo: np.ndarray, hi: np.ndarray):
    """The tightest bounds of boxes intersected with the simplex; (lo, hi, non-empty)."""
    slo, shi = lo.sum(axis=-1, keepdims=True), hi.sum(axis=-1, keepdims=True)
    new_lo = np.maximum(lo, 1.0 - (shi - hi))
    new_hi = np.minimum(hi, 1.0 - (slo - lo))
    ok = (new_lo <= new_hi + 1e-15).all(axis=(1, 2))
    return new_lo, np.maximum(new_hi, new_lo), ok


def split_boxes(lo, hi, occ):
    """Split each box on the interval of largest width x weight, at its middle.

    The weight of a state is its occupancy plus 10% of the largest occupancy of the box.

    Returns the children (2n, S, A) lo, hi, the index of each child's parent (2n,) and
    a mask of the non-empty children.
    """
    n, S, A = lo.shape
    weight = occ + 0.1 * occ.max(axis=1, keepdims=True)  # every state is split in the end
    score = (hi - lo) * weight[..., None]
    flat = np.argmax(score.reshape(n, S * A), axis=1)
    s, a, rows = flat // A, flat % A, np.arange(n)
    mid = 0.5 * (lo[rows, s, a] + hi[rows, s, a])
    lo2, hi2 = np.concatenate([lo, lo]), np.concatenate([hi, hi])
    hi2[rows, s, a] = mid
    lo2[n + rows, s, a] = mid
    lo2, hi2, ok = tighten(lo2, hi2)
    return lo2, hi2, np.concatenate([rows, rows]), ok


def improve_lam(game: RobustGame, lo, hi, lam, delta, n_steps: int, bounds: Result):
    """Sign steps on lam for each box (Rprop); keeps the best bound of each box.

    Each coordinate moves by ``delta`` against the sign of its Danskin slope; after a
    decrease of the bound its step grows by 1.5 (or halves if the slope changed sign),
    otherwise the step halves and lam stays.  Returns (bounds, lam, delta).
    """
    best, lam, delta = bounds, lam.copy(), delta.copy()
    for _ in range(n_steps if game.K else 0):
        sign = np.sign(best.grad)
        trial = np.maximum(lam - delta * sign, 0.0)
        new = lagrangian_bounds(game, lo, hi, trial, w=best.w)
        down = new.U < best.U
        same = np.sign(new.grad) == sign
        delta = np.where(down[:, None] & same, 1.5 * delta, 0.5 * delta)
        lam = np.where(down[:, None], trial, lam)
        for key in best:
            best[key] = np.where(down.reshape(-1, *([1] * (best[key].ndim - 1))), new[key],
                                 best[key])
    return best, lam, delta


class _Open:
    """The open boxes, as arrays (``step``: the lam steps (n, K) of each box)."""

    def __init__(self, lo, hi, lam, step, bounds: Result):
        self.lo, self.hi, self.lam, self.step = lo, hi, lam, step
        self.U, self.occ = bounds.U, bounds.occ

    def keep(self, mask):
        for key in ("lo", "hi", "lam", "step", "U", "occ"):
            setattr(self, key, getattr(self, key)[mask])

    def add(self, other: _Open):
        for key in ("lo", "hi", "lam", "step", "U", "occ"):
            setattr(self, key, np.concatenate([getattr(self, key), getattr(other, key)]))


def _start_bounds(game, lo, hi, lam):
    """Bounds at the parent's lam and at lam = 0 (one batch); the better of each box."""
    J = lo.shape[0]
    both = lagrangian_bounds(game, np.concatenate([lo, lo]), np.concatenate([hi, hi]),
                             np.concatenate([lam, np.zeros_like(lam)]))
    zero = both.U[J:] < both.U[:J]
    pick = np.where(zero, np.arange(J, 2 * J), np.arange(J))
    return Result({key: val[pick] for key, val in both.items()}), np.where(
        zero[:, None], 0.0, lam)


def _children(game, inc, boxes: _Open, take, n_lam_steps, lam_unit):
    """Split the boxes ``take``, drop infeasible children, bound the rest (a new _Open)."""
    lo, hi, parent, ok = split_boxes(boxes.lo[take], boxes.hi[take], boxes.occ[take])
    if game.K and ok.any():
        ok[ok] = np.all(feasibility_bounds(game, lo[ok], hi[ok]) <= game.d, axis=1)
    lo, hi, parent = lo[ok], hi[ok], take[parent[ok]]
    if not lo.shape[0]:
        return None, 0
    lam = boxes.lam[parent]
    step = np.maximum(boxes.step[parent], 0.01 * np.maximum(lam, lam_unit))
    if game.K:
        first, lam = _start_bounds(game, lo, hi, lam)
    else:
        first = lagrangian_bounds(game, lo, hi, lam)
    bounds, lam, step = improve_lam(game, lo, hi, lam, step, n_lam_steps, first)
    inc.offer(bounds.pi, "branch and bound")
    return _Open(lo, hi, lam, step, bounds), ok.size


def branch_and_bound(game: RobustGame, inc: Incumbent, lam0, *, lam_unit: float,
                     max_boxes: int, deadline: float, gap_tol, batch: int = 32,
                     n_lam_steps: int = 2, bar=None) -> Result:
    """Best-first branch and bound from the full box at ``lam0``; feeds ``inc``.

    ``lam_unit``: a typical size of lam; a box's lam step is at least 1% of
    max(lam, lam_unit).  ``gap_tol(lower)``: the target gap at the incumbent's value.

    Returns ``upper`` (certified), ``boxes`` (evaluated), ``open_boxes``, ``closed``
    (the target gap was reached, or no box is left).
    """
    S, A = game.S, game.A
    lo, hi = np.zeros((1, S, A)), np.ones((1, S, A))
    lam = np.asarray(lam0, dtype=np.float64).reshape(1, game.K)
    step = 0.1 * np.maximum(lam, lam_unit)
    boxes = _Open(lo, hi, lam, step, lagrangian_bounds(game, lo, hi, lam))
    pruned, n_boxes = -np.inf, 1
    while boxes.U.size:
        tol = gap_tol(inc.value)
        drop = boxes.U <= inc.value + 0.5 * tol
        pruned = max(pruned, float(boxes.U[drop].max(initial=-np.inf)))
        boxes.keep(~drop)
        if not boxes.U.size or max(boxes.U.max(), pruned) - inc.value <= tol \
                or n_boxes >= max_boxes or time.perf_counter() > deadline:
            break
        take = np.argsort(-boxes.U, kind="stable")[:batch]
        kids, n_new = _children(game, inc, boxes, take, n_lam_steps, lam_unit)
        boxes.keep(np.isin(np.arange(boxes.U.size), take, invert=True))
        if kids is not None:
            boxes.add(kids)
        n_boxes += n_new
        if bar is not None:
            bar.update(n_new)
    upper = max(float(boxes.U.max(initial=-np.inf)), pruned)
    return Result(upper=upper, boxes=n_boxes, open_boxes=int(boxes.U.size),
                  closed=bool(upper - inc.value <= gap_tol(inc.value) or not boxes.U.size))
