r"""Branching where the bound loses most: pseudocosts of the policy boxes' coordinates.

The branch and bound (:mod:`.boxes`) splits a box on one interval :math:`(s, a)` of its
policy bounds.  The former rule took the interval of largest width times the
occupancy of :math:`s` under the box's maximising pair.  On long chains that rule
splits the wrong coordinates: on RiverSwim-6 the start state (occupancy about 17 of
the 20 of the discounted horizon) is split to widths of 1/128 while the bound is lost
elsewhere; the occupancy LP's bilinear envelopes are nearly exact on the top boxes (the
loss is the choice of one kernel per objective, and which coordinate moves the kernels
is not visible from the widths).  Splitting, on the top boxes of a run at 2,000 boxes,
each coordinate in turn showed that one (state 1) takes the bound of the worse child
from 0.284 to 0.183 where the rule's choice (state 4) leaves it at 0.265
(docs/ground_truth.md section 3.9, where the former rule's measurements are kept: it
lost everywhere it was measured, and was removed).  Its weight remains the pseudocosts'
choice before any split has been recorded.

**Pseudocosts** (as in mixed-integer branch and bound): every split of a box on
:math:`(s, a)` at width :math:`w` records the loss of bound it bought per unit width,

.. math::

    \frac{U_{\text{parent}} - \max(U_{\text{child}}, \ell)}{w}

for each child (:math:`\ell` the incumbent; a child dropped as infeasible or empty
counts as :math:`U = \ell`), and a box is split on the interval of largest width times
the mean of its coordinate's records.  A coordinate not yet split uses the mean of
all records (or, before any, the default rule's weight), so every coordinate is tried;
every mean is at least :data:`_FLOOR` times the largest, so a coordinate whose splits
never paid is still split once the others are narrow enough: every box still shrinks
to a point, and the bracket converges as with the default rule.  The rule changes only
the order of the search, never a bound: any split gives a valid branch and bound.

Deterministic: the records are updated after every round in the order of the
children, the same serially or on a Dask cluster.

**The split point** (``split_point``, :data:`SPLIT_POINTS`).  ``"middle"`` (the default)
splits the chosen interval :math:`[l, u]` at its middle.  ``"lp"`` splits it at the
value :math:`t` of the box's occupancy-LP policy (the relaxation's maximiser, as spatial
branch and bound splits at the relaxation point: the McCormick envelopes are exact on
the new faces, so that point is cut from both children's relaxations);
``"incumbent"`` at the value of the lower side's policy (the best robust-feasible
policy known).  Either point is clamped to :math:`[l + f w, u - f w]`
(:data:`SPLIT_CLAMP` f = 0.2, w = u - l), so every split still shrinks the interval by
at least a fifth and every box shrinks to a point: the bracket converges as with the
middle.  A box without such a point (its LP failed or was not solved, the incumbent
is not known) is split at the middle; ``"lp"`` with box bounds that solve no LP is
refused (:class:`~.settings.BranchAndBound`).  Like the coordinate, the point orders
the search only: any split gives a valid branch and bound.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SPLIT_POINTS", "split_on", "tighten"]

#: Every coordinate's mean gain is at least this fraction of the largest.
_FLOOR = 0.05
#: Where a chosen interval is split (module notes): its middle, the box's LP policy, the
#: incumbent's policy.
SPLIT_POINTS = ("middle", "lp", "incumbent")
#: A split point other than the middle is kept at least this fraction of the interval's
#: width from either end.
SPLIT_CLAMP = 0.2


def tighten(lo: np.ndarray, hi: np.ndarray):
    """The tightest bounds of boxes intersected with the simplex; (lo, hi, non-empty)."""
    slo, shi = lo.sum(axis=-1, keepdims=True), hi.sum(axis=-1, keepdims=True)
    new_lo = np.maximum(lo, 1.0 - (shi - hi))
    new_hi = np.minimum(hi, 1.0 - (slo - lo))
    ok = (new_lo <= new_hi + 1e-15).all(axis=(1, 2))
    return new_lo, np.maximum(new_hi, new_lo), ok


def split_on(lo, hi, s, a, at=None):
    """Split boxes (n, S, A) on the intervals (s, a) (n,) at their middle, or at the
    points ``at`` (n,) where they are finite (clamped to :data:`SPLIT_CLAMP` of the
    width from either end).

    Returns the children (2n, S, A) lo, hi, the index of each child's parent (2n,) and a
    mask of the non-empty children (the first n are the lower halves)."""
    n = lo.shape[0]
    rows = np.arange(n)
    left, right = lo[rows, s, a], hi[rows, s, a]
    mid = 0.5 * (left + right)
    if at is not None:
        at = np.asarray(at, dtype=np.float64)
        width = right - left
        clamped = np.clip(at, left + SPLIT_CLAMP * width, right - SPLIT_CLAMP * width)
        mid = np.where(np.isfinite(at), clamped, mid)
    lo2, hi2 = np.concatenate([lo, lo]), np.concatenate([hi, hi])
    hi2[rows, s, a] = mid
    lo2[n + rows, s, a] = mid
    lo2, hi2, ok = tighten(lo2, hi2)
    return lo2, hi2, np.concatenate([rows, rows]), ok


class Pseudocosts:
    """The records of the gains per unit width of each coordinate (S, A), and the split
    they choose (see the module docstring)."""

    def __init__(self, S: int, A: int):
        self.sum = np.zeros((S, A))
        self.count = np.zeros((S, A))
        self.pending = None

    def means(self) -> np.ndarray | None:
        """Mean gain per unit width (S, A), None before any record."""
        seen = self.count > 0
        if not seen.any():
            return None
        mean = np.where(seen, self.sum / np.maximum(self.count, 1), 0.0)
        overall = self.sum[seen].sum() / self.count[seen].sum()
        mean = np.where(seen, mean, overall)
        top = mean.max()
        if top <= 0.0:
            return None
        return np.maximum(mean, _FLOOR * top)

    def split(self, lo, hi, occ, U, points=None):
        """Split boxes (n, S, A) of bounds U (n,), with occupancies ``occ`` (n, S) under
        their maximising pairs (the weight before any record: occupancy plus 10% of the
        box's largest, so that every state is split in the end).  ``points`` (n, S, A)
        or None: the policies whose value splits the chosen interval (nan: the middle;
        None: the middle everywhere; module notes).  Returns the children (2n, S, A) lo,
        hi, the index of each child's parent (2n,) and a mask of the non-empty
        children."""
        n, S, A = lo.shape
        mean = self.means()
        width = hi - lo
        if mean is None:  # width x occupancy until a split has paid
            weight = occ + 0.1 * occ.max(axis=1, keepdims=True)
            score = width * weight[..., None]
        else:
            score = width * mean[None]
        flat = np.argmax(score.reshape(n, S * A), axis=1)
        s, a = flat // A, flat % A
        rows = np.arange(n)
        self.pending = (s, a, width[rows, s, a], np.asarray(U, dtype=np.float64).copy())
        at = None if points is None else np.asarray(points)[rows, s, a]
        return split_on(lo, hi, s, a, at)

    def update(self, child_U, lower: float):
        """Record the gains of the last :meth:`split` from the children's bounds
        (2n,): -inf for a child dropped or empty, nan for one not bounded (ignored)."""
        if self.pending is None:
            return
        s, a, w, U = self.pending
        self.pending = None
        n = s.size
        cu = np.asarray(child_U, dtype=np.float64).reshape(2, n)
        for half in range(2):
            c = np.minimum(cu[half], U)  # a child is bounded by its parent's bound too
            if np.isfinite(lower):
                c = np.maximum(c, lower)
            good = np.isfinite(c) & (w > 0) & np.isfinite(U)
            if not good.any():
                continue
            gain = np.maximum(U[good] - c[good], 0.0) / w[good]
            np.add.at(self.sum, (s[good], a[good]), gain)
            np.add.at(self.count, (s[good], a[good]), 1.0)
