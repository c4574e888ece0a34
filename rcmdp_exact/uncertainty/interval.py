r"""Interval sets (bounded-parameter MDPs).

An :class:`IntervalSet` bounds every transition probability on its own (the
bounded-parameter MDPs of Givan, Leach and Dean 2000):

.. math::

    \mathcal P_{s,a} = \{ p \in \Delta : \ell(s, a, \cdot) \le p \le u(s, a, \cdot) \},
    \qquad \textstyle\sum_{s'} \ell(s, a, s') \le 1 \le \sum_{s'} u(s, a, s').

The L-infinity ball (:mod:`.linf`) is the interval set of a nominal kernel and a radius,
and shares its solver.

**Exact solver** (``method="sort"``).  The inner problem
:math:`\min\{p^\top z : \ell \le p \le u, \mathbf 1^\top p = 1\}` is a continuous
knapsack: start at :math:`\ell`, and give the remaining mass
:math:`m = 1 - \mathbf 1^\top \ell` to the outcomes in increasing order of z, each up to
its capacity :math:`u_i - \ell_i`.  *Optimality*: with :math:`\tau` the z of the outcome
where the mass runs out, take the multiplier :math:`\tau` of the equality; every
outcome with :math:`z_i < \tau` is at its upper bound, every one with :math:`z_i > \tau` at
its lower bound, which are the KKT conditions of the LP (reduced cost
:math:`z_i - \tau` of the right sign at each bound), so the greedy point is optimal.
The implementation finds :math:`\tau` for every row of a batch at once without a full
sort (:func:`~rcmdp_exact.uncertainty._rows.weighted_threshold`: a bracket on the value
of :math:`\tau` narrowed by regula falsi on the cumulative capacity, then a sort of the
few outcomes left inside it), and writes the answer by comparing z with :math:`\tau`:
outcomes tied at :math:`\tau` share the mass left for them in proportion to their
capacities (any split of it is optimal).

``method="lp"`` solves the same LP through cvxpy (HiGHS), one row at a time, and
re-checks the answer in numpy.
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    InputError,
    as_float_array,
    check_nonnegative,
    check_shape,
    readonly,
    row_tolerance,
)
from .._result import Result
from ._counts import count_frequencies, hoeffding_box
from ._rows import (
    Frozen,
    convex_rows,
    problem_cache,
    recheck,
    rowdot,
    simplex_violation,
    weighted_threshold,
)
from .base import (
    SARectangularSet,
    check_strategy,
    kind_delta,
    kind_radius,
    membership_tol,
    nominal_kernel,
    tile,
)
from .extreme import interval_vertices

__all__ = [
    "KIND",
    "IntervalSet",
    "box_simplex_projection",
    "estimate_interval_set",
    "worst_case_interval",
]

#: The kind of this file's set (``--set interval``; read by :mod:`.kinds`).
KIND = "interval"
#: What ``--radius R`` is for the set around a model (read by :mod:`.kinds`).
RADIUS = "the per-entry radius"


# --------------------------------------------------------------------------- the solver
def worst_case_interval(lower, upper, z, capacity=None) -> Result:
    r"""The exact greedy of every row: :math:`\min\{p^\top z : \ell \le p \le u,
    \mathbf 1^\top p = 1\}`.

    ``lower``, ``upper`` and ``z`` are (N, n) float arrays of valid rows (no checks
    here: the set classes validate their input); ``capacity`` optionally gives
    ``upper - lower``.  Returns ``p`` (N, n) and ``value`` (N,) (see the module docstring
    for the algorithm).

    >>> res = worst_case_interval([[0.1, 0.2, 0.0]], [[0.6, 0.5, 0.9]], [[3.0, 1.0, 2.0]])
    >>> res.p.round(12).tolist(), round(float(res.value[0]), 12)
    ([[0.1, 0.5, 0.4]], 1.6)
    """
    L = np.asarray(lower, dtype=np.float64)
    U = np.asarray(upper, dtype=np.float64)
    Z = np.asarray(z, dtype=np.float64)
    C = U - L if capacity is None else capacity
    m = 1.0 - L.sum(axis=1)  # the mass to place above the lower bounds
    tau, below, tied, (tr, tc) = weighted_threshold(Z, C, m, finite=True)
    frac = np.divide(m - below, tied, out=np.zeros(m.size), where=tied > 0)
    np.clip(frac, 0.0, 1.0, out=frac)
    p = np.where(Z < tau[:, None], U, L)
    p[tr, tc] = L[tr, tc] + C[tr, tc] * frac[tr]
    return Result(p=p, value=rowdot(p, Z))


def _interval_violation(p, lower, upper, support) -> np.ndarray:
    """Per row: the largest violation of the bounds, of the simplex and of the support."""
    p = np.asarray(p, dtype=np.float64)
    viol = simplex_violation(p, support)
    viol = np.maximum(viol, (lower - p).max(axis=1))
    return np.maximum(viol, (p - upper).max(axis=1))


def _lp_problem(m: int):
    import cvxpy as cp

    p = cp.Variable(m)
    lo = cp.Parameter(m)
    hi = cp.Parameter(m)
    zz = cp.Parameter(m)
    prob = cp.Problem(cp.Minimize(zz @ p), [p >= lo, p <= hi, cp.sum(p) == 1])
    return prob, p, lo, hi, zz


def _lp_rows(L, U, Z, sup):
    N, n = L.shape

    def setup(i):
        on = np.flatnonzero(sup[i])
        prob, p, lo, hi, zz = problem_cache("interval", on.size, _lp_problem)
        lo.value = L[i, on]
        hi.value = U[i, on]
        zz.value = Z[i, on]
        return prob, p, on

    p, ok, _ = convex_rows(N, n, setup, "HIGHS", "inner LP (interval set)",
                           progress=False)
    ok = recheck(_interval_violation(p, L, U, sup), ok, 1e-8, "inner LP (interval set)")
    return p, rowdot(p, Z), ok


# --------------------------------------------------------------------------- projection
def box_simplex_projection(x, lower, upper) -> np.ndarray:
    r"""The Euclidean projection of each row of ``x`` onto :math:`\{\ell \le p \le u,
    \mathbf 1^\top p = 1\}`.

    The projection is :math:`p = \operatorname{clip}(x + t, \ell, u)` with the scalar t
    that makes the row sum to 1 (the KKT conditions of the projection); the sum is a
    nondecreasing piecewise-linear function of t with break points
    :math:`\ell_i - x_i` and :math:`u_i - x_i`, so t comes exactly from one sort of the
    break points and a linear interpolation.  Rows of (..., n) arrays; each row must
    have :math:`\sum \ell \le 1 \le \sum u`.

    >>> box_simplex_projection([0.5, 0.5, 0.5], [0.0, 0.0, 0.5], [1.0, 0.2, 1.0]).round(12)
    array([0.3, 0.2, 0.5])
    """
    x = np.asarray(x, dtype=np.float64)
    shape = np.broadcast_shapes(x.shape, np.shape(lower), np.shape(upper))
    n = shape[-1]
    X = np.broadcast_to(x, shape).reshape(-1, n)
    L = np.broadcast_to(np.asarray(lower, dtype=np.float64), shape).reshape(-1, n)
    U = np.broadcast_to(np.asarray(upper, dtype=np.float64), shape).reshape(-1, n)
    N = X.shape[0]
    rows = np.arange(N)
    vals = np.concatenate([L - X, U - X], axis=1)  # where each entry leaves l, reaches u
    step = np.concatenate([np.ones((N, n)), -np.ones((N, n))], axis=1)
    order = np.argsort(vals, axis=1, kind="stable")
    sv = np.take_along_axis(vals, order, axis=1)
    slope = np.cumsum(np.take_along_axis(step, order, axis=1), axis=1)
    F = np.empty((N, 2 * n))
    F[:, 0] = L.sum(axis=1)  # the sum at each break point
    np.cumsum(slope[:, :-1] * np.diff(sv, axis=1), axis=1, out=F[:, 1:])
    F[:, 1:] += F[:, :1]
    k = np.count_nonzero(F < 1.0, axis=1) - 1  # the last break point below 1
    kk = np.clip(k, 0, 2 * n - 1)
    sl = slope[rows, kk]
    t = sv[rows, kk] + np.divide(1.0 - F[rows, kk], sl, out=np.zeros(N), where=sl > 0)
    t = np.where(k < 0, sv[:, 0], t)
    p = np.clip(X + t[:, None], L, U)
    return p.reshape(shape)


# --------------------------------------------------------------------------- the set
def _bound_array(arr, name: str, shape) -> np.ndarray:
    a = np.array(as_float_array(arr, name, "give an array (S, A, S) of probabilities"))
    if a.shape != shape:
        check_shape(a, shape, name, ("s", "a", "s'"))
    return a


class IntervalSet(Frozen, SARectangularSet):
    r"""An sa-rectangular interval set: :math:`\ell \le p \le u` entrywise, rows of p
    summing to 1 (a bounded-parameter MDP).

    Parameters
    ----------
    lower, upper : array (S, A, S)
        Bounds with :math:`0 \le \ell \le u \le 1` and, for every pair,
        :math:`\sum_{s'} \ell \le 1 \le \sum_{s'} u`.
    nominal : array (S, A, S), optional
        A kernel inside the box.  Default: the Euclidean projection of the centre
        :math:`(\ell + u)/2` onto the rows that sum to 1 inside the box
        (:func:`box_simplex_projection`); the centre itself when it sums to 1.

    Attributes
    ----------
    lower, upper, nominal, support
        Read-only arrays; ``support`` is ``upper > 0``.

    Notes
    -----
    Immutable.  :meth:`distance` is the gauge of the box around the nominal (0 at the
    nominal, 1 on the boundary); :meth:`contains` checks the bounds themselves.
    """

    kind = KIND
    note = "the per-entry Hoeffding interval set (a bounded-parameter MDP)"
    title = "sa-rectangular interval set"
    method_hint = " ('sort': the exact greedy, batched; 'lp': one cvxpy LP per row, a " \
                  "cross-check)"

    def __init__(self, lower, upper, *, nominal=None):
        lo = np.array(as_float_array(lower, "lower", "give an array (S, A, S) of lower "
                                                    "bounds on the probabilities"))
        if lo.ndim != 3 or lo.shape[0] != lo.shape[2] or 0 in lo.shape:
            raise InputError(f"lower must have shape (S, A, S) with S, A >= 1, got shape "
                             f"{lo.shape}")
        up = _bound_array(upper, "upper", lo.shape)
        check_nonnegative(lo, "lower", "lower bounds of probabilities")
        over = up > 1.0
        if over.any():
            idx = tuple(int(i) for i in np.argwhere(over)[0])
            raise InputError(
                f"upper[{', '.join(map(str, idx))}] = {float(up[idx])!r} exceeds 1; upper "
                f"bounds of probabilities must be <= 1 (clip them with np.minimum(upper, 1))"
            )
        bad = lo > up
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            at = ", ".join(map(str, idx))
            raise InputError(
                f"lower[{at}] = {float(lo[idx])!r} exceeds upper[{at}] = {float(up[idx])!r}; "
                f"every lower bound must be <= its upper bound"
            )
        S = lo.shape[0]
        tol = row_tolerance(S)
        for arr, name, wrong, need in ((lo, "lower", lo.sum(axis=2) > 1.0 + tol, "<= 1"),
                                       (up, "upper", up.sum(axis=2) < 1.0 - tol, ">= 1")):
            if wrong.any():
                s, a = (int(i) for i in np.argwhere(wrong)[0])
                raise InputError(
                    f"the row {name}[{s}, {a}, :] sums to {float(arr[s, a].sum())!r}; the "
                    f"sum of the {name} bounds of a pair must be {need} (tolerance "
                    f"{tol:.1e}), or no distribution fits the box"
                )
        if nominal is None:
            nom = box_simplex_projection(0.5 * (lo + up), lo, up)
        else:
            nom = nominal_kernel(nominal)
            if nom.shape != lo.shape:
                check_shape(nom, lo.shape, "nominal", ("s", "a", "s'"))
            out = (nom < lo - tol) | (nom > up + tol)
            if out.any():
                idx = tuple(int(i) for i in np.argwhere(out)[0])
                at = ", ".join(map(str, idx))
                raise InputError(
                    f"nominal[{at}] = {float(nom[idx])!r} lies outside [lower, upper] = "
                    f"[{float(lo[idx])!r}, {float(up[idx])!r}]; give a nominal inside the box "
                    f"or leave it out (the projection of the centre is used)"
                )
        self._set(lo, up, nom)

    def _set(self, lo, up, nom) -> None:
        self._lower = readonly(lo)
        self._upper = readonly(up)
        self._nominal = readonly(nom)
        self._support = readonly(up > 0.0)
        self._capacity = readonly(up - lo)
        self._freeze()

    @property
    def lower(self) -> np.ndarray:
        """Lower bounds (S, A, S)."""
        return self._lower

    @property
    def upper(self) -> np.ndarray:
        """Upper bounds (S, A, S)."""
        return self._upper

    @property
    def support(self) -> np.ndarray:
        """Next states with a positive upper bound (S, A, S)."""
        return self._support

    def __repr__(self) -> str:
        width = (self._upper - self._lower).max(axis=2)
        return (f"<{type(self).__name__} S={self.n_states}, A={self.n_actions}, widest "
                f"interval in [{width.min():.4g}, {width.max():.4g}]>")

    def distance(self, P) -> np.ndarray:
        r"""The gauge of the box around the nominal, per pair (S, A).

        :math:`\max_i \max\bigl(\frac{(P_i - \hat p_i)_+}{u_i - \hat p_i},
        \frac{(\hat p_i - P_i)_+}{\hat p_i - \ell_i}\bigr)` (a zero numerator counts
        0, a positive one over a zero gap counts inf): 0 at the nominal, 1 on the
        boundary, > 1 outside the bounds.
        """
        P = self._kernel(P)
        d = P - self._nominal
        gap_up = np.maximum(self._upper - self._nominal, 0.0)
        gap_dn = np.maximum(self._nominal - self._lower, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(d > 0, d / gap_up, np.where(d < 0, -d / gap_dn, 0.0))
        return g.max(axis=2)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``P`` is a distribution within the bounds (up to ``tol``),
        (S, A)."""
        tol = membership_tol(tol)
        P = self._kernel(P)
        inside = ((P >= self._lower - tol) & (P <= self._upper + tol)).all(axis=2)
        return self._rows_ok(P, tol) & inside

    def _solve_rows(self, Z, J, method):
        """The exact greedy of the module docstring (or one cvxpy LP per row, whose
        ``lp_success`` is False on the rows a solver marked inaccurate or whose answer
        failed the numpy re-check)."""
        L, U = tile(self._lower, J), tile(self._upper, J)
        if method == "lp":
            p, val, ok = _lp_rows(L, U, Z, tile(self._support, J))
            return p, val, ok, {"lp_success": ok}
        res = worst_case_interval(L, U, Z, tile(self._capacity, J))
        return res.p, res.value, True, {}

    def row_vertices(self, s: int, a: int) -> np.ndarray:
        """The vertices of the row set (s, a) (:func:`~rcmdp_exact.uncertainty.
        interval_vertices` of its bounds)."""
        s, a = self._pair(s, a)
        return interval_vertices(self._lower[s, a], self._upper[s, a])

    def _absorb_arrays(self, data: dict, ts: np.ndarray) -> None:
        super()._absorb_arrays(data, ts)
        for key in ("lower", "upper"):
            if key in data:
                data[key][ts] = 0.0
                data[key][ts, :, ts] = 1.0

    # ----------------------------------------------------------------- the kind
    @classmethod
    def l1_level_radius(cls, level: float) -> float:
        r"""Half-width :math:`r / 2`: the smallest box :math:`|p_i - \hat p_i| \le
        r/2` that contains the L1 ball of radius :math:`r` (a move of mass :math:`r/2`
        changes one entry by at most :math:`r/2`)."""
        return float(level) / 2.0

    @classmethod
    def from_counts(cls, counts, *, delta: float, hoeffding_l1) -> IntervalSet:
        """The kind ``interval`` of an estimation: the per-entry Hoeffding interval set
        of the counts (:func:`~rcmdp_exact.estimate_interval_set`) on the support of the
        L1 hoeffding_l1 ``hoeffding_l1``."""
        kind_delta(delta)
        return estimate_interval_set(counts, delta, support=hoeffding_l1.support)

    @classmethod
    def around(cls, model, radius: float, support: str = "nominal") -> IntervalSet:
        r"""The kind ``interval`` around ``model``'s own kernel: :math:`[\max(0, P - R),
        \min(1, P + R)]` on the support of the L1 ball of :meth:`L1Ball.around
        <rcmdp_exact.L1Ball.around>`, 0 off it."""
        radius = kind_radius(radius)
        from .l1 import L1Ball

        P = np.asarray(model.P, dtype=np.float64)
        sup = np.asarray(L1Ball.around(model, 0.0, support).support)
        r = float(radius)
        lower = np.where(sup, np.maximum(P - r, 0.0), 0.0)
        upper = np.where(sup, np.minimum(P + r, 1.0), 0.0)
        return cls(lower, upper, nominal=P)

    @classmethod
    def strategy(cls, model, *, max_width: float = 0.5, grid: int | None = 4):
        """Hypothesis strategy of interval sets ``[P - a, P + b]`` clipped to [0, 1], with
        a, b per entry in [0, max_width] (0 at terminal states), the model's kernel
        inside."""
        check_strategy(grid, max_width=max_width)
        from hypothesis import strategies as st

        from ._draw import grid_values

        P = np.asarray(model.P)
        term = np.asarray(model.terminal, dtype=bool)

        def build(ab):
            a, b = (x.reshape(P.shape) for x in ab)
            a[term] = b[term] = 0.0
            return cls(np.clip(P - a, 0.0, 1.0), np.clip(P + b, 0.0, 1.0), nominal=P)

        return st.tuples(grid_values(P.size, 0.0, max_width, grid),
                         grid_values(P.size, 0.0, max_width, grid)).map(build)

    def _arrays(self) -> dict:
        return {"lower": self._lower, "upper": self._upper, "nominal": self._nominal}

    @classmethod
    def _from_arrays(cls, data: dict):
        return cls(data["lower"], data["upper"], nominal=data["nominal"])


# --------------------------------------------------------------------------- estimation
def estimate_interval_set(counts, delta: float = 0.1, pseudo_count: float = 1.0, *,
                          support=None) -> IntervalSet:
    r"""The Hoeffding interval set of observed counts (a bounded-parameter MDP).

    Each entry lies within :math:`\epsilon(s, a)` of its empirical frequency
    (:func:`~rcmdp_exact.uncertainty.entry_radius`, union bound over the E supported entries):
    :math:`\ell = \max(0, \hat f - \epsilon)`, :math:`u = \min(1, \hat f + \epsilon)`
    (0 off the support; [0, 1] for a pair without samples).  With probability at least
    :math:`1 - \delta` every true transition probability lies in its interval.

    Parameters
    ----------
    counts : array (S, A, S)
        Observed transitions over next states (no pseudo-counts).
    delta : float in (0, 1)
        Error probability.
    pseudo_count : float >= 0
        Added to every supported next state for the nominal point only: the nominal
        is the projection of :math:`(\text{counts} + \text{pseudo}) / (n +
        \text{pseudo}\,|\Sigma|)` onto the box (:func:`box_simplex_projection`).
    support : bool array (S, A, S), optional
        Next states that may be reached (default: all); counts outside it are an error.

    Returns
    -------
    IntervalSet
    """
    _c, sup, n, f, smooth = count_frequencies(counts, pseudo_count, support, "interval set")
    lo, up = hoeffding_box(sup, n, f, delta)
    return IntervalSet(lo, up, nominal=box_simplex_projection(smooth, lo, up))
