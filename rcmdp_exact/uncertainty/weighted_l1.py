r"""The weighted L1 ball and its exact inner problem.

A :class:`WeightedL1Ball` bounds a weighted L1 distance from the nominal row,

.. math::

    \mathcal P_{s,a} = \{ p \in \Delta(\Sigma_{s,a}) :
    \textstyle\sum_i w_i |p_i - \hat p_i| \le \alpha(s, a) \},
    \qquad w_i = w(s, a, i) > 0 \text{ on the support } \Sigma_{s,a};

unit weights give the :class:`~rcmdp_exact.uncertainty.L1Ball`.

**The dual.**  For one row (q the nominal, z the values, support :math:`\Sigma`), the
Lagrangian of :math:`\min_p z^\top p` with the multiplier :math:`\lambda \ge 0` of the
budget and :math:`\mu` of :math:`\mathbf 1^\top p = 1` separates over outcomes: the
minimum over :math:`p_i \ge 0` of :math:`(z_i - \mu) p_i + \lambda w_i |p_i - q_i|` is
finite iff :math:`\mu \le z_i + \lambda w_i`, and is then
:math:`q_i \min(z_i - \mu, \lambda w_i)`.  The best :math:`\mu` is
:math:`m(\lambda) = \min_{k \in \Sigma} (z_k + \lambda w_k)`, so (LP duality; p = q is
feasible)

.. math::

    V = \max_{\lambda \ge 0} \varphi(\lambda), \qquad
    \varphi(\lambda) = \sum_i q_i \min\bigl(z_i,\, m(\lambda) + \lambda w_i\bigr)
    - \lambda \alpha .

:math:`\varphi` is concave and piecewise linear.  Complementary slackness names the
optimal moves: mass leaves only *sources*, :math:`z_i \ge m(\lambda^*) + \lambda^* w_i`,
and arrives only at *receivers*, the outcomes k on the envelope,
:math:`z_k + \lambda^* w_k = m(\lambda^*)`; moving a unit from i to k costs
:math:`w_i + w_k` of the budget and gains :math:`z_i - z_k`.

**The envelope.**  :math:`m(\lambda)` is the lower envelope of the lines
:math:`z_k + \lambda w_k`: the lower convex hull of the points :math:`(w_k, z_k)`, run
from the smallest z (:math:`\lambda = 0`) to the smallest w (:math:`\lambda \to
\infty`).  Its vertices are the receivers :math:`K_0, K_1, \dots` with break points
:math:`0 = \beta_0 < \beta_1 < \dots`.  On the piece :math:`(\beta_j, \beta_{j+1})` the
receiver is :math:`K_j`, the sources are the outcomes whose *gain per unit of budget*
:math:`r_i = (z_i - z_{K_j}) / (w_i + w_{K_j})` exceeds :math:`\lambda`, and

.. math::

    \varphi'(\lambda) = \sum_{i : r_i > \lambda} q_i (w_i + w_{K_j}) - \alpha ,

which decreases in :math:`\lambda`.  :math:`\lambda^*` is where it changes sign, and
the optimal kernel follows from the case:

* :math:`\varphi'(0^+) \le 0`: the budget moves every source to :math:`K_0` (value
  :math:`\min_\Sigma z`);
* :math:`\lambda^*` inside a piece: one receiver :math:`K_j`; sources are emptied in
  decreasing :math:`r_i` until the budget :math:`\alpha` is spent (the last one
  partially): the greedy of a continuous knapsack;
* :math:`\lambda^* = \beta_{j+1}`, a break point: the sources with
  :math:`r_i > \beta_{j+1}` are emptied and their mass is split between the two
  receivers :math:`K_j` and :math:`K_{j+1}` so that the budget is exactly
  :math:`\alpha` (sources tied at :math:`\beta_{j+1}` top it up).

Each case satisfies the complementary-slackness conditions with :math:`\lambda^*`, so it
is optimal.  The best receiver is not the argmin of z when the weights differ, and one
receiver is not always enough: with q = (1, 0, 0), z = (10, 0, 5), w = (1, 10, 1) and
:math:`\alpha = 5`, sending everything to outcome 2 gives 5, sending to outcome 1 alone
gives 5.45, and the optimum sends 1/3 to outcome 1 and 2/3 to outcome 2, value 10/3
(checked in the tests against cvxpy).

**Cost.**  The order of the weights is sorted once per set (cached).  Per row: the
candidate receivers in that order (the Pareto points of :math:`(w, z)`: a running
minimum of z, exact for small batches, else exact in the first block of about 32
positions and, after it, every position below the minima of all earlier blocks, a
superset that the hull trims); their lower hull (from all pairs of candidates at once
when that is small, else a monotone chain), O(H) to O(H^2) for H candidates; the piece
of :math:`\lambda^*` by a binary search over the h break points, each step one O(n)
evaluation of :math:`\varphi'` (O(n log h)); and the greedy of that piece, the
weighted selection of :func:`~rcmdp_exact.uncertainty._rows.weighted_threshold`
(a bracket narrowed by sampling and interpolation, then a sort of the few keys left:
O(n) passes plus a small sort, O(n log n) at worst).  Every step is vectorised over
the rows of a batch.

**Two implementations.**  The steps above, vectorised over the rows in numpy, pay a
fixed cost of about a millisecond per call and read every (N, n) array several times.
:mod:`~rcmdp_exact.uncertainty.weighted_l1_numba` runs the same algorithm as one
compiled loop over the rows (the hull by a monotone chain over the Pareto points, the
binary search, the greedy by a weighted quickselect: O(n) expected per row), which
reads each row once from memory.  :func:`worst_case_weighted_l1` takes the compiled
loop for batches of at least ``COMPILED_MIN`` entries and numpy below (``backend``
overrides); the tests compare the two.

``method="lp"`` solves the LP in cvxpy (HiGHS) row by row and re-checks the answer in
numpy.
"""

from __future__ import annotations

import functools

import numpy as np

from .._checks import InputError, as_float_array, check_choice, check_real, readonly
from .._result import Result
from ._rows import (
    Frozen,
    convex_rows,
    nonzero2,
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
    nominal_kernel,
    radii,
    support_mask,
    tile,
)
from .extreme import l1_vertices

__all__ = [
    "BACKENDS",
    "COMPILED_MIN",
    "KIND",
    "WeightedL1Ball",
    "weighted_l1_violation",
    "worst_case_weighted_l1",
]

#: The kind of this file's set (``--set weighted-l1``; read by :mod:`.kinds`).
KIND = "weighted-l1"
#: What ``--radius R`` is for the set around a model (read by :mod:`.kinds`).
RADIUS = "the L1 radius of every pair (unit weights)"


# --------------------------------------------------------------------------- the solver
def _weight_order(W, sup=None):
    """The order of every row of W, supported next states first (flat indices).

    Returns ``order`` (N, n) int64, the flat positions ``r n + i`` of row r in
    increasing order of weight with the next states off the support last, and the
    number of supported next states of every row (None without a support).
    """
    N, n = W.shape
    key = W if sup is None else np.where(sup, W, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    order += np.arange(N, dtype=np.int64)[:, None] * n
    return order, None if sup is None else np.count_nonzero(sup, axis=1)


#: Up to this many entries the Pareto points are found exactly (fewer candidates).
_EXACT_PARETO = 1 << 18


@functools.lru_cache(maxsize=32)
def _block(n: int) -> int:
    """A width that divides n, near 32 (n itself when there is none)."""
    for d in sorted(range(16, 65), key=lambda d: abs(d - 32)):
        if n % d == 0:
            return d
    return n


def _candidates(zw, nsup):
    """Positions (rows, cols) in weight order that may be vertices of the envelope.

    Every Pareto point (a strict new minimum of z in increasing order of w) is kept:
    in the first block of ``_block(n)`` positions by an exact running minimum, after it
    every position below the minimum of all earlier blocks (a superset, usually a
    few more points; the hull removes the extra ones).
    """
    N, n = zw.shape
    d = _block(n) if N * n > _EXACT_PARETO else n  # small batches: exact Pareto points
    nb = n // d
    mark = np.empty((N, n), dtype=bool)
    first = zw[:, :d]
    mark[:, 0] = True
    np.less(first[:, 1:], np.minimum.accumulate(first, axis=1)[:, :-1], out=mark[:, 1:d])
    if nb > 1:
        blocks = zw.reshape(N, nb, d)
        prior = np.minimum.accumulate(blocks.min(axis=2), axis=1)[:, :-1]
        np.less(blocks[:, 1:], prior[:, :, None], out=mark[:, d:].reshape(N, nb - 1, d))
    if nsup is not None:
        mark &= np.arange(n) < nsup[:, None]
    return mark


def _envelope(Z, W, forder, nsup):
    """The receivers K (N, h) and break points beta (N, h + 1) of every row.

    ``forder`` and ``nsup`` come from :func:`_weight_order`.  Rows are independent;
    ``h`` is the largest hull size, shorter rows are padded (their break points are
    +inf).  Returns K (outcome indices), Kz, Kw, beta and the hull size of every row.

    The envelope's vertices are the lower convex hull of the points (w, z) from the
    smallest w to the smallest z: a monotone chain over the candidates of
    :func:`_candidates` in increasing w (of points with equal w only the lowest is
    kept), cut after its lowest point.
    """
    N, n = Z.shape
    R = np.arange(N)
    zw = np.take(Z, forder)  # z in increasing order of w, the support first
    mark = _candidates(zw, nsup)
    cnt = np.count_nonzero(mark, axis=1)
    H = max(int(cnt.max()), 1)
    rr, cc = nonzero2(mark)
    slot = np.arange(rr.size) - (np.cumsum(cnt) - cnt)[rr]
    cand = np.zeros((N, H), dtype=np.int64)
    valid = np.zeros((N, H), dtype=bool)
    cand[rr, slot] = forder[rr, cc] - rr * n
    valid[rr, slot] = True
    cw = np.take_along_axis(W, cand, axis=1)
    cz = np.take_along_axis(Z, cand, axis=1)
    if N * H * H <= _PAIRS:
        return _hull_by_pairs(cand, valid, cw, cz)
    # lower convex hull of (w, z) in increasing w (a monotone chain, vectorised over rows)
    stack = np.zeros((N, H), dtype=np.int64)
    top = np.zeros(N, dtype=np.int64)
    for j in range(H):
        act = valid[:, j]
        if not act.any():
            continue
        bx, by = cw[:, j], cz[:, j]
        while True:  # the top has the same w and is not lower: b replaces it
            rows = np.flatnonzero(act & (top >= 1))
            a = stack[rows, top[rows] - 1]
            same = (cw[rows, a] == bx[rows]) & (cz[rows, a] >= by[rows])
            if not same.any():
                break
            top[rows[same]] -= 1
        rows = np.flatnonzero(act & (top >= 1))
        a = stack[rows, top[rows] - 1]
        act[rows[cw[rows, a] == bx[rows]]] = False  # b lies above a point of its w
        while True:
            rows = np.flatnonzero(act & (top >= 2))
            if rows.size == 0:
                break
            o = stack[rows, top[rows] - 2]
            a = stack[rows, top[rows] - 1]
            ox, oy = cw[rows, o], cz[rows, o]
            cross = (cw[rows, a] - ox) * (by[rows] - oy) - (cz[rows, a] - oy) * (bx[rows] - ox)
            pop = rows[cross <= 0]
            if pop.size == 0:
                break
            top[pop] -= 1
        ra = np.flatnonzero(act)
        stack[ra, top[ra]] = j
        top[ra] += 1
    # cut the chain after its lowest point (the first of equal lows: the smallest w)
    H2 = max(int(top.max()), 1)
    sz = np.take_along_axis(cz, stack[:, :H2], axis=1)
    sz[np.arange(H2) >= top[:, None]] = np.inf
    top = np.argmin(sz, axis=1) + 1
    h = max(int(top.max()), 1)
    jj = np.arange(h)
    pos = np.take_along_axis(stack, np.maximum(top[:, None] - 1 - jj, 0), axis=1)
    inside = jj < top[:, None]
    K = np.where(inside, cand[R[:, None], pos], -1)
    Kz = cz[R[:, None], pos]
    Kw = cw[R[:, None], pos]
    return K, Kz, Kw, _breakpoints(Kz, Kw, inside), top


def _breakpoints(Kz, Kw, inside):
    """beta (N, h + 1): 0, the break points between consecutive receivers, +inf."""
    N, h = Kz.shape
    beta = np.full((N, h + 1), np.inf)
    beta[:, 0] = 0.0
    if h > 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            b = (Kz[:, 1:] - Kz[:, :-1]) / (Kw[:, :-1] - Kw[:, 1:])
        beta[:, 1:h] = np.where(inside[:, 1:], b, np.inf)
    np.maximum.accumulate(beta, axis=1, out=beta)  # nondecreasing despite rounding
    return beta


#: Largest N H^2 for which the hull is found from all pairs of candidates at once.
_PAIRS = 1 << 20


def _hull_by_pairs(cand, valid, cw, cz):
    r"""The envelope's receivers from every pair of candidates (no loop over them).

    Candidate j minimises :math:`z + \lambda w` for the :math:`\lambda` with
    :math:`\lambda \ge r_{jk}` for every k of larger w and :math:`\lambda \le r_{jk}` for
    every k of smaller w, :math:`r_{jk} = (z_j - z_k) / (w_k - w_j)`; it is a vertex of
    the envelope when that interval, cut to :math:`\lambda \ge 0`, has a positive length
    (and no candidate of the same w is lower, or as low with a smaller index).  The
    vertices in increasing order of the interval's start are the receivers, the starts
    are the break points.
    """
    N, H = cw.shape
    # arrays (j, k, row): the rows innermost, so that every operation is vectorised
    wT, zT = np.ascontiguousarray(cw.T), np.ascontiguousarray(cz.T)
    vk = np.ascontiguousarray(valid.T)[None, :, :]
    dw = wT[None, :, :] - wT[:, None, :]  # w_k - w_j
    dz = zT[:, None, :] - zT[None, :, :]  # z_j - z_k
    with np.errstate(divide="ignore", invalid="ignore"):
        r = dz / dw
    right = dw > 0
    right &= vk
    lo = np.where(right, r, 0.0).max(axis=1)
    np.less(dw, 0, out=right)
    right &= vk
    hi = np.where(right, r, np.inf).min(axis=1)
    vertex = (lo < hi).T
    vertex &= valid
    # candidates of equal w (adjacent in w order): only the lowest, the first of equals
    same = (cw[:, 1:] == cw[:, :-1]) & valid[:, 1:] & valid[:, :-1]
    if same.any():
        idx = np.arange(H)
        before = (idx[None, :] < idx[:, None])[:, :, None]  # k < j
        twin = vk & (dw == 0) & ((dz > 0) | ((dz == 0) & before))
        vertex &= ~twin.any(axis=1).T
    lo = lo.T
    key = np.where(vertex, lo, np.inf)
    top = np.count_nonzero(vertex, axis=1)
    h = max(int(top.max()), 1)
    order = np.argsort(key, axis=1, kind="stable")[:, :h]
    inside = np.arange(h) < top[:, None]
    K = np.where(inside, np.take_along_axis(cand, order, axis=1), -1)
    Kz = np.take_along_axis(cz, order, axis=1)
    Kw = np.take_along_axis(cw, order, axis=1)
    beta = np.full((N, h + 1), np.inf)
    beta[:, :h] = np.where(inside, np.take_along_axis(key, order, axis=1), np.inf)
    beta[:, 0] = 0.0
    np.maximum.accumulate(beta, axis=1, out=beta)
    return K, Kz, Kw, beta, top


def _slope_at(Z, W, Q, QW, Al, rows, bt, kz, kw):
    """The right derivative of phi at ``bt`` (one break point per row of ``rows``)."""
    N = Z.shape[0]
    if rows.size * 2 > N:  # every row at once, the others with an empty source set
        b = np.zeros(N)
        m = np.full(N, np.inf)
        w = np.zeros(N)
        b[rows], m[rows], w[rows] = bt, kz + bt * kw, kw
        t = W * b[:, None]
        t += m[:, None]
        src = Z > t
        return (rowdot(src, QW) + w * rowdot(src, Q))[rows] - Al[rows]
    src = Z[rows] > (kz + bt * kw)[:, None] + bt[:, None] * W[rows]
    return rowdot(src, QW[rows]) + kw * rowdot(src, Q[rows]) - Al[rows]


def _solve_rows(Q, Z, W, Al, forder, nsup):
    """The exact worst case of rows with alpha > 0 (see the module docstring).

    Next states off the support have zero nominal mass, and they are left out of the
    envelope, so they neither give nor receive mass.
    """
    N = Q.shape[0]
    R = np.arange(N)
    K, Kz, Kw, beta, h = _envelope(Z, W, forder, nsup)
    QW = Q * W
    # phi'(0+): the sources of receiver K_0 are the outcomes above the minimum of z
    src = Z > Kz[:, :1]
    D0 = rowdot(src, QW) + Kw[:, 0] * rowdot(src, Q) - Al
    # the piece of lambda*: the last break point j with phi'(beta_j+) > 0 (binary search)
    lo = np.zeros(N, dtype=np.int64)
    hi = h.copy()
    act = np.flatnonzero((D0 > 0) & (hi > 1))
    while act.size:
        mid = (lo[act] + hi[act]) // 2
        up = _slope_at(Z, W, Q, QW, Al, act, beta[act, mid], Kz[act, mid], Kw[act, mid]) > 0
        lo[act[up]] = mid[up]
        hi[act[~up]] = mid[~up]
        act = act[hi[act] - lo[act] > 1]
    j = lo
    k1, z1, w1 = K[R, j], Kz[R, j], Kw[R, j]
    zero = D0 <= 0  # lambda* = 0: every source moves to K_0
    b_lo = beta[R, j]
    b_hi = np.where(zero, 0.0, beta[R, j + 1])
    cost = W + w1[:, None]
    key = np.subtract(z1[:, None], Z)
    key /= cost  # minus the gain per unit of budget of moving mass to K_j
    c = cost
    c *= Q  # the budget of emptying each outcome
    lo_key = np.nextafter(-b_hi, -np.inf)
    full = key <= lo_key[:, None]  # gain above b_hi: emptied whatever lambda* is
    BF = rowdot(full, c)
    # lambda* at the break point beta_{j+1}: the emptied sources alone overspend
    edge = (BF >= Al) & ~zero & (b_hi < np.inf)
    # otherwise one receiver K_j: the greedy over decreasing gain, from the emptied ones
    # (keys <= lo_key) up to the gain b_lo (keys <= -b_lo)
    hi_key = -b_lo
    f_hi = rowdot(key <= hi_key[:, None], c)
    target = np.where(edge | zero, BF, Al)
    kappa, below, tied, (tr, tc) = weighted_threshold(key, c, target, finite=True,
                                                      bounds=(lo_key, BF, hi_key, f_hi))
    frac = np.divide(target - below, tied, out=np.zeros(N), where=tied > 0)
    np.clip(frac, 0.0, 1.0, out=frac)
    gone = key < kappa[:, None]
    keep = ~gone
    p = Q * keep
    part = Q[tr, tc] * frac[tr]
    p[tr, tc] -= part
    moved = rowdot(gone, Q) + np.bincount(tr, weights=part, minlength=N)
    one = ~edge
    p[R[one], k1[one]] += moved[one]
    if edge.any():
        e = np.flatnonzero(edge)
        k2, w2 = K[e, j[e] + 1], Kw[e, j[e] + 1]
        B0 = rowdot(full[e], QW[e]) + w2 * moved[e]  # everything to K_{j+1}
        a = np.clip((Al[e] - B0) / (w1[e] - w2), 0.0, moved[e])  # the share of K_j
        p[e, k1[e]] += a
        p[e, k2] += moved[e] - a
    return p


#: Batches of at least this many entries (N n) go to the compiled solver by default.
COMPILED_MIN = 1 << 14
#: The implementations of :func:`worst_case_weighted_l1`.
BACKENDS = ("auto", "numba", "numpy")


def worst_case_weighted_l1(p_hat, z, alpha, weights, support=None, *,
                           order=None, backend: str = "auto") -> Result:
    r"""The exact worst case of every row: :math:`\min\{p^\top z :
    \sum_i w_i |p_i - \hat p_i| \le \alpha,\ p \in \Delta(\Sigma)\}`.

    ``p_hat``, ``z`` and ``weights`` are (N, n) arrays, ``alpha`` (N,), ``support``
    (N, n) bool or None, all valid (no checks here: :class:`WeightedL1Ball` validates
    its input); ``order`` optionally gives :func:`_weight_order` of the weights (with
    1 off the support).  Rows with
    :math:`\alpha = 0` return the nominal row itself.  Returns ``p`` (N, n) and
    ``value`` (N,).

    ``backend`` chooses the implementation of the same algorithm: ``"numba"`` the
    compiled row loop of :mod:`~rcmdp_exact.uncertainty.weighted_l1_numba` (numba is
    imported, and the solver compiled or loaded from its cache, at the first call),
    ``"numpy"`` the batch-vectorised solver, ``"auto"`` (default) numba for batches of
    at least ``COMPILED_MIN`` = 16,384 entries (N n), numpy below (a call of about a
    millisecond, without importing numba).  The two give the same kernel to rounding
    (1e-12 in the tests).

    The example of the module docstring, where two receivers share the mass:

    >>> res = worst_case_weighted_l1([[1.0, 0.0, 0.0]], [[10.0, 0.0, 5.0]], [5.0],
    ...                              [[1.0, 10.0, 1.0]])
    >>> res.p.round(12).tolist(), round(float(res.value[0]), 12)
    ([[0.0, 0.333333333333, 0.666666666667]], 3.333333333333)
    """
    Q = np.ascontiguousarray(p_hat, dtype=np.float64)
    Z = np.ascontiguousarray(z, dtype=np.float64)
    W = np.ascontiguousarray(weights, dtype=np.float64)
    Al = np.asarray(alpha, dtype=np.float64).reshape(-1)
    sup = None if support is None else np.asarray(support, dtype=bool)
    if sup is not None:
        W = np.where(sup, W, 1.0)
        if sup.all():
            sup = None
    check_choice(backend, "backend", BACKENDS)
    forder, nsup = _weight_order(W, sup) if order is None else order
    N, n = Q.shape
    if backend == "numba" or (backend == "auto" and N * n >= COMPILED_MIN):
        from .weighted_l1_numba import solve_rows

        p = np.empty((N, n))
        solve_rows(Q, Z, W, np.ascontiguousarray(Al),
                   np.ascontiguousarray(forder, dtype=np.int64),
                   np.full(N, n, dtype=np.int64) if nsup is None
                   else np.ascontiguousarray(nsup, dtype=np.int64), p)
        return Result(p=p, value=rowdot(p, Z))
    p = Q.copy()
    pos = Al > 0
    if pos.all():
        p = _solve_rows(Q, Z, W, Al, forder, nsup)
    elif pos.any():
        r = np.flatnonzero(pos)
        local = forder[r] - (r * n)[:, None] + (np.arange(r.size) * n)[:, None]
        p[r] = _solve_rows(Q[r], Z[r], W[r], Al[r], local, None if nsup is None else nsup[r])
    return Result(p=p, value=rowdot(p, Z))


def weighted_l1_violation(p, p_hat, alpha, weights, support) -> np.ndarray:
    """Per row: the largest violation of the budget, the simplex and the support."""
    p = np.asarray(p, dtype=np.float64)
    dist = (np.where(support, weights, 0.0) * np.abs(p - p_hat)).sum(axis=1)
    return np.maximum(simplex_violation(p, support), dist - alpha)


def _lp_problem(m: int):
    import cvxpy as cp

    p = cp.Variable(m, nonneg=True)
    t = cp.Variable(m)
    wph = cp.Parameter(m)  # w * p_hat (a product of parameters is not DPP)
    w = cp.Parameter(m, nonneg=True)
    zz = cp.Parameter(m)
    al = cp.Parameter(nonneg=True)
    d = cp.multiply(w, p) - wph
    cons = [t >= d, t >= -d, cp.sum(t) <= al, cp.sum(p) == 1]
    return cp.Problem(cp.Minimize(zz @ p), cons), p, wph, w, zz, al


def _lp_rows(Q, Z, W, Al, sup):
    N, n = Q.shape

    def setup(i):
        on = np.flatnonzero(sup[i])
        prob, p, wph, w, zz, al = problem_cache("weighted_l1", on.size, _lp_problem)
        wph.value = W[i, on] * Q[i, on]
        w.value = W[i, on]
        zz.value = Z[i, on]
        al.value = float(Al[i])
        return prob, p, on

    what = "inner LP (weighted L1 ball)"
    p, ok, _ = convex_rows(N, n, setup, "HIGHS", what, progress=False)
    ok = recheck(weighted_l1_violation(p, Q, Al, W, sup), ok, 1e-8, what)
    return p, rowdot(p, Z), ok


# --------------------------------------------------------------------------- the set
class WeightedL1Ball(Frozen, SARectangularSet):
    r"""An sa-rectangular weighted L1 ball: :math:`\sum_{s'} w(s, a, s') |p(s') -
    \hat P(s'|s, a)| \le \alpha(s, a)`, rows of p distributions on the support.

    Parameters
    ----------
    nominal : array (S, A, S)
        Nominal kernel :math:`\hat P`.
    alpha : float or array (S, A)
        Budget of each ball, >= 0 (0: the nominal row).
    weights : float or array broadcastable to (S, A, S)
        Weight of each next state, > 0 on the support (values off the support are
        not used).  All ones gives the :class:`~rcmdp_exact.uncertainty.L1Ball`.
    support : bool array (S, A, S), optional
        Next states that may receive mass (default: all); ``nominal`` must be zero
        outside it.

    Examples
    --------
    >>> import numpy as np
    >>> uset = WeightedL1Ball(np.full((2, 1, 2), 0.5), 0.5, [1.0, 3.0])
    >>> uset.worst_case(np.array([1.0, 0.0])).value.round(12).tolist()
    [[0.375], [0.375]]
    """

    _SUMMARY = "alpha"
    _RADII = ("alpha",)
    kind = KIND
    note = "the Hoeffding L1 ball written as a weighted L1 ball with unit weights"
    method_hint = " ('sort': the exact solver, batched; 'lp': one cvxpy LP per row, a " \
                  "cross-check)"

    def __init__(self, nominal, alpha, weights, support=None):
        P = nominal_kernel(nominal)
        S, A, _ = P.shape
        al = radii(alpha, S, A, "alpha")
        if support is None:
            sup = np.ones(P.shape, dtype=bool)
        else:
            sup = support_mask(support, S, A, P, "nominal",
                               "put the nominal mass on the support or enlarge it")
        w = as_float_array(weights, "weights", "give a number or an array broadcastable "
                                              "to (S, A, S) of positive weights")
        try:
            w = np.array(np.broadcast_to(w, P.shape))
        except ValueError:
            raise InputError(
                f"weights has shape {w.shape}, which does not broadcast to the nominal's "
                f"shape (S, A, S) = {P.shape}; give one weight per next state"
            ) from None
        bad = sup & ~(w > 0)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(
                f"weights[{', '.join(map(str, idx))}] = {float(w[idx])!r} is not > 0 on "
                f"the support; every supported next state needs a positive weight (remove "
                f"the state from the support instead of giving it weight 0)"
            )
        self._nominal = readonly(P)
        self._alpha = readonly(al)
        self._weights = readonly(w)
        self._support = readonly(sup)
        self._w_solve = readonly(np.where(sup, w, 1.0))  # weights the solver reads
        self._order = None
        self._freeze()

    @property
    def alpha(self) -> np.ndarray:
        """Budgets (S, A)."""
        return self._alpha

    @property
    def weights(self) -> np.ndarray:
        """Weights (S, A, S)."""
        return self._weights

    def distance(self, P) -> np.ndarray:
        r""":math:`\sum_{s'} w |P - \hat P|` over the support, for every pair (S, A)."""
        d = np.abs(self._kernel(P) - self._nominal)
        return (np.where(self._support, self._weights, 0.0) * d).sum(axis=2)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``P`` lies in the ball (up to ``tol``), (S, A)."""
        P = self._kernel(P)
        return self._rows_ok(P, tol) & (self.distance(P) <= self._alpha + tol)

    def _weight_order(self, J: int):
        """:func:`_weight_order` of the batch's rows (computed once per set, cached)."""
        if self._order is None:
            S, A = self.n_states, self.n_actions
            w = self._w_solve.reshape(S * A, S)
            sup = None if self._support.all() else self._support.reshape(S * A, S)
            order, nsup = _weight_order(w, sup)
            object.__setattr__(self, "_order", (readonly(order), nsup))
        order, nsup = self._order
        if J == 1:
            return order, nsup
        M, n = order.shape
        big = (order[None] + (np.arange(J, dtype=np.int64) * M * n)[:, None, None])
        return big.reshape(J * M, n), None if nsup is None else np.tile(nsup, J)

    def _solve_rows(self, Z, J, method):
        """The exact solver of the module docstring (or one cvxpy LP per row, whose
        ``lp_success`` is False on the rows a solver marked inaccurate or whose answer
        failed the numpy re-check)."""
        Q, W, Al = tile(self._nominal, J), tile(self._w_solve, J), tile(self._alpha, J)
        sup = tile(self._support, J)
        if method == "lp":
            p, val, ok = _lp_rows(Q, Z, W, Al, sup)
            return p, val, ok, {"lp_success": ok}
        full = bool(self._support.all())
        res = worst_case_weighted_l1(Q, Z, Al, W, None if full else sup,
                                     order=self._weight_order(J))
        return res.p, res.value, True, {}

    def row_vertices(self, s: int, a: int) -> np.ndarray:
        """The vertices of the ball's row (s, a) (:func:`~rcmdp_exact.uncertainty.
        l1_vertices` with the weights)."""
        s, a = self._pair(s, a)
        sup = self._support[s, a]
        return l1_vertices(self._nominal[s, a], self._alpha[s, a], sup,
                           np.where(sup, self._weights[s, a], 1.0))

    def _absorb_arrays(self, data: dict, ts: np.ndarray) -> None:
        super()._absorb_arrays(data, ts)
        data["weights"][ts] = 1.0  # the self-loop is on the support: a positive weight

    # ----------------------------------------------------------------- the kind
    @classmethod
    def from_counts(cls, counts, *, delta: float, hoeffding_l1) -> WeightedL1Ball:
        """The kind ``weighted-l1`` of an estimation: the Hoeffding L1 ball ``hoeffding_l1`` with
        unit weights (the same set; it checks the weighted solver on the paper's
        protocol)."""
        kind_delta(delta)
        return cls(hoeffding_l1.nominal, hoeffding_l1.alpha, 1.0, support=hoeffding_l1.support)

    @classmethod
    def around(cls, model, radius: float, support: str = "nominal") -> WeightedL1Ball:
        """The kind ``weighted-l1`` around ``model``'s own kernel: the L1 ball of
        :meth:`L1Ball.around <rcmdp_exact.L1Ball.around>` with unit weights."""
        radius = kind_radius(radius)
        from .l1 import L1Ball

        uset = L1Ball.around(model, radius, support)
        return cls(uset.nominal, uset.alpha, 1.0, support=uset.support)

    @classmethod
    def strategy(cls, model, *, max_radius: float = 2.0, max_weight: float = 3.0,
                 support=("all", "nominal"), grid: int | None = 4):
        """Hypothesis strategy of weighted balls around ``model.P``: weights per entry in
        [1/grid, max_weight], budgets per pair in [0, max_radius] (0 at terminal
        states)."""
        check_strategy(grid, max_radius=max_radius)
        check_real(max_weight, "max_weight", 1.0 / (grid or 4),
                   hint=" (weights are drawn in [1/grid, max_weight])")
        from hypothesis import strategies as st

        from ._draw import grid_values, pair_radii, supports

        n = model.n_states * model.n_actions * model.n_states
        low = 1.0 / (grid or 4)
        return st.tuples(supports(model, support), grid_values(n, low, max_weight, grid),
                         pair_radii(model, max_radius, grid=grid)).map(
            lambda t: cls(model.P, t[2], t[1].reshape(model.P.shape), t[0]))

    def _arrays(self) -> dict:
        return {"nominal": self._nominal, "alpha": self._alpha, "weights": self._weights,
                "support": self._support}

    @classmethod
    def _from_arrays(cls, data: dict):
        return cls(data["nominal"], data["alpha"], data["weights"], data["support"])
