"""The L1 ball's inner problem compiled by numba: one row, and every row of a batch.

The same algorithm as :func:`rcmdp_exact.uncertainty.worst_case_l1` (its numpy oracle;
``tests/test_engine_compiled.py`` and ``tests/test_inner.py`` compare them), written
once as a loop over one row (:func:`worst_row`) that numba compiles: the argmin of z on
the support gains :math:`\\epsilon = \\min(\\alpha/2, 1 - \\hat p_k)`, and the entries
with the largest z lose it, one at a time, so only the entries that lose mass are
visited (a selection; a row that moves many entries sorts once).  Ties: the argmin is
the largest index among the smallest z on the support; among equal z the lowest index
loses mass first.

* :func:`worst_row` and :func:`worst_pair`: one row (the learners' per-step worst case,
  :mod:`rcmdp_exact.learners.loop`, and the path of a single 1-D row of
  :func:`~rcmdp_exact.uncertainty.worst_case_l1`);
* :func:`worst_rows`, :func:`worst_rows_shared` and :func:`solve_rows`: every (j, s, a)
  row of a batch in one call (the robust engine's inner step on the ball,
  :meth:`~rcmdp_exact.uncertainty.L1Ball.compiled_rows`).

This module imports numba at its top; the ball imports it on first use, so that
``import rcmdp_exact`` stays light.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["solve_rows", "worst_pair", "worst_row"]


#: Entries that lose mass found by a scan each before the rest are taken in one sort.
SCANS = 4


@numba.njit(cache=True, error_model="numpy")
def worst_row(phat, z, sup, alpha, out):
    """Write the worst-case distribution of one row into ``out`` (n,).

    ``phat`` (n,) nominal, ``z`` (n,) the quantity minimised, ``sup`` (n,) bool the
    support, ``alpha`` the radius.  The entries that lose mass are taken in the order
    (z decreasing, index increasing): the first :data:`SCANS` each by a scan of the row
    for the next one after the previous in that order (a small radius moves a few
    entries: no sort), the rest, if any, in the order of one stable sort.
    """
    n = phat.shape[0]
    k = -1
    for i in range(n):
        out[i] = phat[i]
        if sup[i] and (k < 0 or z[i] <= z[k]):
            k = i
    if k < 0 or alpha <= 0.0:
        return
    eps = min(alpha / 2.0, 1.0 - phat[k])
    if eps <= 0.0:
        return
    out[k] = phat[k] + eps
    rem = eps
    prev = -1
    for _ in range(SCANS):
        best = -1
        for i in range(n):
            if i == k or phat[i] <= 0.0:
                continue
            if prev >= 0 and (z[i] > z[prev] or (z[i] == z[prev] and i <= prev)):
                continue  # taken already: not after ``prev`` in the order
            if best < 0 or z[i] > z[best]:
                best = i
        if best < 0:
            return
        take = min(phat[best], rem)
        out[best] = phat[best] - take
        rem -= take
        prev = best
        if rem <= 0.0:
            return
    order = np.argsort(-z, kind="mergesort")  # the same order: z decreasing, index increasing
    after = False
    for j in range(n):
        i = order[j]
        if not after:
            after = i == prev
            continue
        if i == k or phat[i] <= 0.0:
            continue
        take = min(phat[i], rem)
        out[i] = phat[i] - take
        rem -= take
        if rem <= 0.0:
            return


@numba.njit(cache=True, error_model="numpy")
def worst_pair(rows, r, z, out):
    """:func:`worst_row` of pair ``r`` of a ball's :class:`~rcmdp_exact.uncertainty.l1.L1Rows`."""
    worst_row(rows.nominal[r], z, rows.support[r], rows.radius[r], out)


@numba.njit(cache=True, error_model="numpy")
def worst_rows_shared(nominal, support, radius, z, f, p_out, q_out):
    """Rows with one vector per problem: z (J, S) shared by every pair of problem j, the
    pair's part f (J, S, A) added to its value.  nominal, support (S*A, S), radius
    (S*A,); writes p_out (J, S, A, S) and q_out (J, S, A) = p.z + f."""
    J, S = z.shape
    A = nominal.shape[0] // S
    for j in range(J):
        zj = z[j]
        for s in range(S):
            for a in range(A):
                r = s * A + a
                row = p_out[j, s, a]
                worst_row(nominal[r], zj, support[r], radius[r], row)
                v = 0.0
                for t in range(S):
                    v += row[t] * zj[t]
                q_out[j, s, a] = v + f[j, s, a]


@numba.njit(cache=True, error_model="numpy")
def worst_rows(nominal, support, radius, z, p_out, q_out):
    """Rows with one vector per pair: z (J, S, A, S); writes p_out (J, S, A, S) and
    q_out (J, S, A) = p.z."""
    J, S, A = z.shape[0], z.shape[1], z.shape[2]
    for j in range(J):
        for s in range(S):
            for a in range(A):
                r = s * A + a
                row = p_out[j, s, a]
                zr = z[j, s, a]
                worst_row(nominal[r], zr, support[r], radius[r], row)
                v = 0.0
                for t in range(S):
                    v += row[t] * zr[t]
                q_out[j, s, a] = v


def solve_rows(rows, z: np.ndarray, f: np.ndarray | None = None):
    """(q (J, S, A), P (J, S, A, S)) of the ball given by ``rows`` (its
    :class:`~rcmdp_exact.uncertainty.l1.L1Rows`): z (J, S) with f (J, S, A), or z
    (J, S, A, S) without."""
    S = rows.nominal.shape[1]
    A = rows.nominal.shape[0] // S
    J = z.shape[0]
    P = np.empty((J, S, A, S))
    q = np.empty((J, S, A))
    z = np.ascontiguousarray(z, dtype=np.float64)
    if f is None:
        worst_rows(rows.nominal, rows.support, rows.radius, z, P, q)
    else:
        worst_rows_shared(rows.nominal, rows.support, rows.radius, z,
                          np.ascontiguousarray(f, dtype=np.float64), P, q)
    return q, P
