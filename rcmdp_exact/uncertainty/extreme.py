r"""The extreme kernels of a polyhedral sa-rectangular set, for brute-force checks.

A linear function of a row attains its minimum over a polytope at a vertex, and the
adversary of an sa-rectangular set picks each row on its own; so the robust value of a
policy is the minimum of its exact values over the kernels whose rows are all vertices
(the adversary's MDP has a deterministic optimal policy among the vertices).  On small
models that is a brute-force reference that shares nothing with the sets' solvers.

* :func:`l1_vertices`: the vertices of :math:`\{p \in \Delta : \sum_i w_i |p_i - \hat
  p_i| \le \alpha,\ p = 0 \text{ off the support}\}` (the L1 ball, weighted or not);
* :func:`interval_vertices`: the vertices of :math:`\{p : \ell \le p \le u, \sum p =
  1\}` (interval sets and L-infinity balls);
* :func:`extreme_rows`: the vertices of every row of a polyhedral sa-rectangular set,
  from the set's own :meth:`~.SARectangularSet.row_vertices` (the L1 ball, weighted or
  not, with :func:`l1_vertices`; interval sets and L-infinity balls with
  :func:`interval_vertices`);
* :func:`extreme_kernels`: all their combinations over the pairs, (N, S, A, S), with a
  clear error past ``max_kernels``; the members of a set of whole kernels
  (:class:`~.KernelSet`, e.g. :class:`~.FiniteSet`).

How the vertices are found (independent of the sort-based solvers).  On the m entries
of the support, a vertex is a point of the set where the active constraints have rank
m.  For the weighted L1 ball every coordinate of a vertex is 0 or :math:`\hat p_i`
except at most two, which the equality :math:`\sum p = 1` and the active ball
constraint determine; every such point is computed, the points of the set are kept,
and those whose active constraints (:math:`p_i = 0`, the sum, and the ball's normals
:math:`w \odot \sigma` for every sign pattern :math:`\sigma` consistent with
:math:`p - \hat p`) have rank m are the vertices.  For a box every coordinate but one
sits at a bound.  The work is about :math:`m^2 2^m` per row, so rows with more than
:data:`_MAX_SUPPORT` supported next states are refused.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._checks import InputError, as_float_array, check_int, check_shape
from .base import KernelSet, SARectangularSet, check_set, polyhedral_kinds

__all__ = [ "extreme_kernels", "extreme_rows", "interval_vertices",
           "l1_vertices"]

#: Largest number of supported next states of a row whose vertices are enumerated.
_MAX_SUPPORT = 12
#: Tolerance of the feasibility and activity tests (the data are probabilities).
_TOL = 1e-12
#: Decimals to which vertices are rounded to remove duplicates.
_DECIMALS = 12
#: Vertices closer than this (largest entry difference) are the same vertex.
_SAME = 1e-10


def _unique_rows(points: np.ndarray) -> np.ndarray:
    """Distinct rows (rows within 1e-10 of one another are one), in lexicographic order.

    Rounding alone is not enough: two copies of a vertex computed by different formulas
    may round to different 12th decimals; the rounded keys sort them next to each other
    and a distance test merges them.
    """
    if not len(points):
        return points
    keys = np.round(points, _DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
    _, idx = np.unique(keys, axis=0, return_index=True)
    idx = np.sort(idx)
    cand = points[idx][np.lexsort(keys[idx].T[::-1])]
    kept = [0]
    for i in range(1, len(cand)):
        if np.abs(cand[kept] - cand[i]).max(axis=1).min() > _SAME:
            kept.append(i)
    return cand[kept]


def _bits(k: int) -> np.ndarray:
    """Every 0/1 vector of length k, (2^k, k)."""
    return (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1


def _check_support_size(m: int, what: str) -> None:
    if m > _MAX_SUPPORT:
        raise InputError(
            f"{what} has {m} supported next states; vertex enumeration is limited to "
            f"_MAX_SUPPORT = {_MAX_SUPPORT} (its work grows like m^2 2^m): restrict the "
            f"support"
        )


def _ball_rank(X: np.ndarray, p_hat: np.ndarray, w: np.ndarray, alpha: float) -> np.ndarray:
    """Rank (n,) of the active constraints of the weighted L1 ball at each point X (n, m)."""
    n, m = X.shape
    diff = X - p_hat
    tight = (np.abs(diff) * w).sum(axis=1) >= alpha - 1e-10
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        rows = [np.ones(m)]
        rows += [np.eye(m)[j] for j in np.flatnonzero(np.abs(X[i]) <= _TOL)]
        if tight[i]:
            zero = np.abs(diff[i]) <= _TOL
            rows.append(w * np.where(zero, 1.0, np.sign(diff[i])))
            rows += [w[j] * np.eye(m)[j] for j in np.flatnonzero(zero)]
        out[i] = np.linalg.matrix_rank(np.array(rows), tol=1e-9)
    return out


def l1_vertices(p_hat, alpha, support=None, weights=None) -> np.ndarray:
    r"""The vertices of one row of a (weighted) L1 ball intersected with the simplex.

    .. math::

        \{p \in \mathbb R^n : p \ge 0,\ \textstyle\sum_i p_i = 1,\ p_i = 0 \text{ off
        the support},\ \sum_i w_i |p_i - \hat p_i| \le \alpha\}.

    Parameters
    ----------
    p_hat : array (n,)
        The centre, a distribution on the support.
    alpha : float
        The radius, >= 0.
    support : bool array (n,), optional
        Entries that may receive mass (default: all).
    weights : array (n,), optional
        Positive weights on the support (default: all ones, the L1 ball).

    Returns
    -------
    numpy.ndarray (k, n)
        The distinct vertices, in lexicographic order.

    Examples
    --------
    >>> l1_vertices([0.5, 0.5], 0.5).tolist()
    [[0.25, 0.75], [0.75, 0.25]]
    """
    ph = as_float_array(p_hat, "p_hat", "give a distribution (n,)")
    if ph.ndim != 1:
        check_shape(ph, (ph.size,), "p_hat", ("i",))
    n = ph.size
    sup = np.ones(n, dtype=bool) if support is None else np.asarray(support, dtype=bool)
    check_shape(sup, (n,), "support", ("i",))
    w_all = np.ones(n) if weights is None else as_float_array(weights, "weights",
                                                              "give positive weights (n,)")
    check_shape(w_all, (n,), "weights", ("i",))
    alpha = float(as_float_array(alpha, "alpha", "give a radius >= 0"))
    if alpha < 0:
        raise InputError(f"alpha = {alpha!r} is negative; give a radius >= 0")
    on = np.flatnonzero(sup)
    m = on.size
    _check_support_size(m, "the row")
    c, w = ph[on], w_all[on]
    cands = [c[None].copy()]
    base = np.stack([np.zeros(m), c])  # the two fixed values of each coordinate
    for k in (1, 2):
        for free in itertools.combinations(range(m), k):
            rest = [j for j in range(m) if j not in free]
            choice = _bits(len(rest))
            X = np.zeros((len(choice), m))
            X[:, rest] = base[choice, rest]
            rem = 1.0 - X.sum(axis=1)
            used = (w[rest] * np.abs(X[:, rest] - c[rest])).sum(axis=1)
            if k == 1:
                X[:, free[0]] = rem
                cands.append(X)
                continue
            i, j = free
            beta = alpha - used
            delta = rem - c[i] - c[j]
            wi, wj = w[i], w[j]
            with np.errstate(divide="ignore", invalid="ignore"):
                ts = [(beta - wj * delta) / (wi - wj), (beta + wj * delta) / (wi + wj),
                      (wj * delta - beta) / (wi + wj), (beta + wj * delta) / (wj - wi)]
            for t in ts:
                ok = np.isfinite(t)
                Y = X[ok].copy()
                Y[:, i] = c[i] + t[ok]
                Y[:, j] = c[j] + delta[ok] - t[ok]
                cands.append(Y)
    P = np.concatenate(cands)
    inside = (P >= -_TOL).all(axis=1) & (np.abs(P.sum(axis=1) - 1.0) <= 1e-10) \
        & ((w * np.abs(P - c)).sum(axis=1) <= alpha + 1e-10)
    P = np.clip(P[inside], 0.0, None)
    P = _unique_rows(P)
    V = P[_ball_rank(P, c, w, alpha) == m]
    out = np.zeros((len(V), n))
    out[:, on] = V
    return out


def interval_vertices(lower, upper) -> np.ndarray:
    r"""The vertices of one row of an interval set: :math:`\{p : \ell \le p \le u,
    \sum_i p_i = 1\}`.

    Every vertex has all coordinates at a bound but at most one.

    Returns
    -------
    numpy.ndarray (k, n)
        The distinct vertices, in lexicographic order (none if the box misses the
        simplex).

    Examples
    --------
    >>> interval_vertices([0.0, 0.2, 0.0], [1.0, 0.5, 0.4]).round(12).tolist()
    [[0.1, 0.5, 0.4], [0.4, 0.2, 0.4], [0.5, 0.5, 0.0], [0.8, 0.2, 0.0]]
    """
    lo = as_float_array(lower, "lower", "give lower bounds (n,)")
    up = as_float_array(upper, "upper", "give upper bounds (n,)")
    if lo.ndim != 1:
        check_shape(lo, (lo.size,), "lower", ("i",))
    check_shape(up, lo.shape, "upper", ("i",))
    n = lo.size
    on = np.flatnonzero(up > 0)
    m = on.size
    _check_support_size(m, "the row")
    L, U = lo[on], up[on]
    cands = []
    for free in range(m):
        rest = [j for j in range(m) if j != free]
        choice = _bits(len(rest))
        X = np.zeros((len(choice), m))
        X[:, rest] = np.where(choice == 1, U[rest], L[rest])
        X[:, free] = 1.0 - X[:, rest].sum(axis=1)
        cands.append(X)
    P = np.concatenate(cands) if cands else np.zeros((0, m))
    inside = ((P >= L - _TOL) & (P <= U + _TOL)).all(axis=1)
    P = np.clip(P[inside], L, U)
    P = _unique_rows(P)
    strictly = ((P > L + _TOL) & (P < U - _TOL)).sum(axis=1)
    V = P[strictly <= 1]
    out = np.zeros((len(V), n))
    out[:, on] = V
    return out


def extreme_rows(uset, model=None) -> list[list[np.ndarray]]:
    """The vertices of every row of a polyhedral sa-rectangular set.

    Parameters
    ----------
    uset : SARectangularSet
        A set whose rows give their vertices (:meth:`~.SARectangularSet.row_vertices`:
        the kinds of :func:`~.base.polyhedral_kinds`, e.g. L1Ball, WeightedL1Ball, IntervalSet,
        LInfBall).
    model : TabularCMDP, optional
        When given, the rows of its terminal states are the model's self-loops (one
        vertex), as in every robust computation of the toolkit.

    Returns
    -------
    list of lists
        ``rows[s][a]`` is an array (k, S) of the vertices of the set of pair (s, a).
    """
    if isinstance(uset, KernelSet):
        raise InputError(
            f"extreme_rows enumerates the vertices of the rows of polyhedral "
            f"sa-rectangular sets; a {type(uset).__name__} is a set of whole kernels: "
            f"extreme_kernels returns its members")
    if not isinstance(uset, SARectangularSet):
        raise InputError(
            f"extreme_rows enumerates the vertices of the rows of polyhedral "
            f"sa-rectangular sets (the kinds {', '.join(polyhedral_kinds())}), not of a "
            f"{type(uset).__name__}")
    S, A = uset.n_states, uset.n_actions
    term = np.zeros(S, dtype=bool)
    if model is not None:
        check_set(uset, model)
        term = np.asarray(model.terminal, dtype=bool)
    rows = []
    for s in range(S):
        row = []
        for a in range(A):
            if term[s]:
                row.append(np.asarray(model.P[s, a])[None].copy())
            else:
                row.append(np.asarray(uset.row_vertices(s, a), dtype=np.float64))
        rows.append(row)
    return rows


def extreme_kernels(uset, model=None, *, max_kernels: int = 10_000) -> np.ndarray:
    """Every kernel whose rows are vertices of an sa-rectangular set's rows.

    For an sa-rectangular polyhedral set the worst case of any policy is attained at
    one of these kernels (in every state at once), so the robust value of a policy is
    the minimum of its exact values over them: a brute-force check on small models.
    A set of whole kernels (:class:`~rcmdp_exact.FiniteSet`) returns its members.

    Parameters
    ----------
    uset : SARectangularSet or KernelSet
        A polyhedral sa-rectangular set (:func:`extreme_rows`) or a set of whole
        kernels (its members).
    model : TabularCMDP, optional
        Fixes the rows of terminal states to the model's self-loops.
    max_kernels : int
        The largest number of kernels returned; past it an
        :class:`~rcmdp_exact.InputError` states the count and how to shrink it.

    Returns
    -------
    numpy.ndarray (N, S, A, S)
        The kernels, the first row's vertices varying slowest (pairs in the order
        (0, 0), (0, 1), ...).

    Examples
    --------
    Two pairs, each with an interval of two end points, make four kernels:

    >>> import numpy as np
    >>> from rcmdp_exact import l1_ball, TabularCMDP
    >>> P = np.zeros((2, 1, 2)); P[:, 0] = [0.5, 0.5]
    >>> m = TabularCMDP(P, R=np.zeros((2, 1)), gamma=0.9)
    >>> extreme_kernels(l1_ball(m, 0.5)).shape
    (4, 2, 1, 2)
    """
    check_int(max_kernels, "max_kernels", 1)
    if isinstance(uset, KernelSet):
        if model is not None:
            check_set(uset, model)
        if uset.n_members > max_kernels:
            raise InputError(f"the {type(uset).__name__} has {uset.n_members} members, more "
                             f"than max_kernels = {max_kernels}; raise max_kernels")
        return np.array(uset.members)
    rows = extreme_rows(uset, model)
    S, A = uset.n_states, uset.n_actions
    flat = [rows[s][a] for s in range(S) for a in range(A)]
    counts = [len(v) for v in flat]
    total = math.prod(counts)
    if total > max_kernels:
        worst = sorted(((c, i) for i, c in enumerate(counts)), reverse=True)[:3]
        named = ", ".join(f"(s={i // A}, a={i % A}): {c}" for c, i in worst)
        raise InputError(
            f"the set has {total} extreme kernels (the product over the {S * A} pairs of "
            f"their vertex counts; the largest: {named}), more than max_kernels = "
            f"{max_kernels}; raise max_kernels, or shrink the set (fewer pairs with a "
            f"radius, smaller supports), or give the model to fix its terminal rows"
        )
    idx = np.indices(counts).reshape(len(counts), -1)
    out = np.stack([flat[i][idx[i]] for i in range(len(flat))], axis=1)
    return out.reshape(total, S, A, S)
