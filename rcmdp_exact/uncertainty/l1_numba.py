"""The L1 inner problem of one row, compiled by numba (the learners' per-step worst case).

The same sort-based algorithm as :func:`rcmdp_exact.uncertainty.worst_case_l1` (its
numpy oracle; the tests compare them), written as a loop that numba compiles: the
argmin of z on the support gains :math:`\\epsilon = \\min(\\alpha/2, 1 - \\hat p_k)`,
the largest z lose it first.  This module imports numba at its top; only the compiled
training loop (:mod:`rcmdp_exact.learners.loop`) imports it.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["worst_pair", "worst_row"]


@numba.njit(cache=True, error_model="numpy")
def worst_row(phat, z, sup, alpha, out):
    """Write the worst-case distribution of one row into ``out`` (n,).

    ``phat`` (n,) nominal, ``z`` (n,) the quantity minimised, ``sup`` (n,) bool the
    support, ``alpha`` the radius.  Ties of z go to the lowest index among the largest
    (removal) and to the last supported position of the order (the argmin).
    """
    n = phat.shape[0]
    order = np.argsort(-z, kind="mergesort")
    k = -1
    for j in range(n - 1, -1, -1):
        if sup[order[j]]:
            k = order[j]
            break
    for i in range(n):
        out[i] = phat[i]
    if k < 0 or alpha <= 0.0:
        return
    eps = min(alpha / 2.0, 1.0 - phat[k])
    if eps <= 0.0:
        return
    out[k] = phat[k] + eps
    rem = eps
    for j in range(n):
        i = order[j]
        if i == k or phat[i] <= 0.0:
            continue
        take = min(phat[i], rem)
        out[i] = phat[i] - take
        rem -= take
        if rem <= 0.0:
            break


@numba.njit(cache=True, error_model="numpy")
def worst_pair(rows, r, z, out):
    """:func:`worst_row` of pair ``r`` of a ball's :class:`~rcmdp_exact.uncertainty.l1.L1Rows`."""
    worst_row(rows.nominal[r], z, rows.support[r], rows.radius[r], out)
