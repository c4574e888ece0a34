r"""L-infinity balls: :math:`|p_i - \hat p_i| \le r(s, a)` for every next state i.

An :class:`LInfBall` is the interval set (:mod:`.interval`) of a nominal kernel and a
radius, :math:`\ell = \max(0, \hat p - r)` and :math:`u = \min(1, \hat p + r)` on the
support (0 off it), and shares its exact solver (the continuous-knapsack greedy) and its
cvxpy cross-check.
"""

from __future__ import annotations

import numpy as np

from .._checks import readonly
from ._counts import count_frequencies, entry_radius
from .base import (
    check_strategy,
    kind_delta,
    kind_radius,
    nominal_kernel,
    radii,
    support_mask,
)
from .interval import IntervalSet

__all__ = ["KIND", "LInfBall", "estimate_linf_ball"]

#: The kind of this file's set (``--set linf``; read by :mod:`.kinds`).
KIND = "linf"
#: What ``--radius R`` is for the set around a model (read by :mod:`.kinds`).
RADIUS = "the per-entry radius"


class LInfBall(IntervalSet):
    r"""An sa-rectangular L-infinity ball: :math:`|p_i - \hat p_i| \le r(s, a)` for every
    next state i, rows of p distributions on the support.

    It is the :class:`IntervalSet` with :math:`\ell = \max(0, \hat p - r)` and
    :math:`u = \min(1, \hat p + r)` on the support, 0 off it, and shares its exact
    solver.

    Parameters
    ----------
    nominal : array (S, A, S)
        Nominal kernel :math:`\hat P`.
    radius : float or array (S, A)
        Radius of each ball, >= 0 (0: the nominal row; >= 1: every distribution on the
        support).
    support : bool array (S, A, S), optional
        Next states that may receive mass (default: all); ``nominal`` must be zero
        outside it.

    Examples
    --------
    >>> import numpy as np
    >>> uset = LInfBall(np.full((2, 1, 2), 0.5), 0.25)
    >>> uset.worst_case(np.array([0.0, 1.0])).value.round(12).tolist()
    [[0.25], [0.25]]
    """

    kind = KIND
    note = "the per-entry Hoeffding L-infinity ball around the smoothed frequencies"
    title = "sa-rectangular L-infinity ball"
    _RADII = ("radius",)

    def __init__(self, nominal, radius, support=None):
        P = nominal_kernel(nominal)
        S, A, _ = P.shape
        r = radii(radius, S, A, "radius")
        sup = support_mask(support, S, A, P, "nominal",
                           "put the nominal mass on the support or enlarge it")
        rr = r[:, :, None]
        lo = np.where(sup, np.maximum(P - rr, 0.0), 0.0)
        up = np.where(sup, np.minimum(P + rr, 1.0), 0.0)
        self._radius = readonly(r)
        self._ball_support = readonly(sup)
        self._set(lo, up, P)

    @property
    def radius(self) -> np.ndarray:
        """Radii (S, A)."""
        return self._radius

    @property
    def support(self) -> np.ndarray:
        """Next states that may receive mass (S, A, S)."""
        return self._ball_support

    def __repr__(self) -> str:
        return (f"<LInfBall S={self.n_states}, A={self.n_actions}, radius in "
                f"[{self._radius.min():.4g}, {self._radius.max():.4g}]>")

    def distance(self, P) -> np.ndarray:
        r""":math:`\max_{s'} |P(s'|s,a) - \hat P(s'|s,a)|` for every pair, (S, A)."""
        return np.abs(self._kernel(P) - self._nominal).max(axis=2)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``P`` lies in the ball (up to ``tol``), (S, A)."""
        P = self._kernel(P)
        return self._rows_ok(P, tol) & (self.distance(P) <= self._radius + tol)

    def _arrays(self) -> dict:
        return {"nominal": self._nominal, "radius": self._radius,
                "support": self._ball_support}

    @classmethod
    def _from_arrays(cls, data: dict):
        return cls(data["nominal"], data["radius"], data["support"])

    # ----------------------------------------------------------------- the kind
    @classmethod
    def from_counts(cls, counts, *, delta: float, hoeffding_l1) -> LInfBall:
        """The kind ``linf`` of an estimation: the per-entry Hoeffding L-infinity ball of
        the counts around the smoothed frequencies (:func:`~rcmdp_exact.
        estimate_linf_ball`) on the support of the L1 hoeffding_l1 ``hoeffding_l1``."""
        kind_delta(delta)
        return estimate_linf_ball(counts, delta, support=hoeffding_l1.support)

    @classmethod
    def around(cls, model, radius: float, support: str = "nominal") -> LInfBall:
        """The kind ``linf`` around ``model``'s own kernel: every entry within
        ``min(radius, 1)`` of ``model.P`` on the support of the L1 ball of
        :meth:`L1Ball.around <rcmdp_exact.L1Ball.around>`."""
        radius = kind_radius(radius)
        from .l1 import L1Ball

        sup = L1Ball.around(model, 0.0, support).support
        return cls(np.asarray(model.P, dtype=np.float64), min(float(radius), 1.0),
                   support=sup)

    @classmethod
    def strategy(cls, model, *, max_radius: float = 1.0, support=("all", "nominal"),
                 grid: int | None = 4):
        """Hypothesis strategy of L-infinity balls around ``model.P``: a radius per pair
        in [0, max_radius] (0 at terminal states)."""
        check_strategy(grid, max_radius=max_radius)
        from hypothesis import strategies as st

        from ._draw import pair_radii, supports

        return st.tuples(supports(model, support), pair_radii(model, max_radius, grid=grid)
                         ).map(lambda t: cls(model.P, t[1], t[0]))


# --------------------------------------------------------------------------- estimation
def estimate_linf_ball(counts, delta: float = 0.1, pseudo_count: float = 1.0, *,
                       support=None) -> LInfBall:
    r"""The Hoeffding L-infinity ball of observed counts.

    Centre: the smoothed frequencies :math:`\hat p = (\text{counts} +
    \text{pseudo}) / (n + \text{pseudo}\,|\Sigma|)`; radius
    :math:`\epsilon(s, a) + \max_{s'} |\hat p - \hat f|`
    (:func:`~rcmdp_exact.uncertainty.entry_radius` plus the move of the centre away
    from the empirical frequencies :math:`\hat f`, by the triangle inequality; exactly
    :math:`\epsilon` with ``pseudo_count=0``), capped at 1 (1 allows every
    distribution; a pair without samples gets it).  With probability at least
    :math:`1 - \delta` the true kernel lies in the ball.

    Parameters are those of :func:`~rcmdp_exact.uncertainty.estimate_interval_set`.

    Returns
    -------
    LInfBall
    """
    _c, sup, n, f, smooth = count_frequencies(counts, pseudo_count, support, "L-infinity ball")
    eps = entry_radius(n, int(sup.sum()), delta)
    move = np.where(n > 0, np.abs(smooth - f).max(axis=2), 0.0)
    radius = np.minimum(eps + move, 1.0)
    return LInfBall(smooth, radius, None if support is None else sup)
