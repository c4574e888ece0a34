"""Compiled hot loops of the robust engine: the L1 ball's inner step for every row of a
batch, and the greedy fill of policy boxes.

* :func:`solve_rows`: the worst case of every (j, s, a) row of a batch on the toolkit's
  own :class:`~rcmdp_exact.L1Ball`, in one call.  Each row is the exact sort-based
  solution of :func:`rcmdp_exact.uncertainty.worst_case_l1` (the numpy oracle, used with
  ``RobustGame(..., compiled=False)``) written as a selection: the argmin of z on the
  support gains :math:`\\epsilon = \\min(\\alpha/2, 1 - \\hat p_k)` and the largest z lose
  it, one at a time, so only the entries that lose mass are visited (no full sort); the
  ties follow the ball's compiled row :func:`~rcmdp_exact.uncertainty.l1_numba.worst_row`
  (the argmin: the largest index among the smallest z on the support; the removal: the
  lowest index first among equal z).  Its value is :math:`p^\\top z`.
* :func:`greedy_fill`: :func:`rcmdp_exact.core.mdp.greedy_box` (the numpy oracle), row by
  row: start at l and give the remaining mass to the actions in decreasing order of q
  (ties to the lowest index), each up to u.

``tests/test_engine_compiled.py`` compares both with their oracles.  On the small batches
of a branch and bound over policy boxes (tens of problems of a few states) one compiled
call replaces a Python loop of numpy calls.  This module imports numba at its top; the
engine imports it on first use.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["greedy_fill", "solve_rows", "worst_rows", "worst_rows_shared"]


@numba.njit(cache=True, error_model="numpy")
def _row(phat, z, sup, alpha, out, taken):
    """The worst-case distribution of one row into ``out`` (n,); ``taken`` (n,) scratch."""
    n = phat.shape[0]
    k = -1
    for i in range(n):
        out[i] = phat[i]
        taken[i] = False
        if sup[i] and (k < 0 or z[i] <= z[k]):
            k = i
    if k < 0 or alpha <= 0.0:
        return
    eps = min(alpha / 2.0, 1.0 - phat[k])
    if eps <= 0.0:
        return
    out[k] = phat[k] + eps
    rem = eps
    while rem > 0.0:
        best = -1
        for i in range(n):
            if i != k and phat[i] > 0.0 and not taken[i] and (best < 0 or z[i] > z[best]):
                best = i
        if best < 0:
            break
        taken[best] = True
        take = min(phat[best], rem)
        out[best] = phat[best] - take
        rem -= take


@numba.njit(cache=True, error_model="numpy")
def worst_rows_shared(nominal, support, radius, z, f, p_out, q_out):
    """Rows with one vector per problem: z (J, S) shared by every pair of problem j, the
    pair's part f (J, S, A) added to its value.  nominal, support (S*A, S), radius
    (S*A,); writes p_out (J, S, A, S) and q_out (J, S, A) = p.z + f."""
    J, S = z.shape
    A = nominal.shape[0] // S
    taken = np.empty(S, dtype=np.bool_)
    for j in range(J):
        zj = z[j]
        for s in range(S):
            for a in range(A):
                r = s * A + a
                row = p_out[j, s, a]
                _row(nominal[r], zj, support[r], radius[r], row, taken)
                v = 0.0
                for t in range(S):
                    v += row[t] * zj[t]
                q_out[j, s, a] = v + f[j, s, a]


@numba.njit(cache=True, error_model="numpy")
def worst_rows(nominal, support, radius, z, p_out, q_out):
    """Rows with one vector per pair: z (J, S, A, S); writes p_out (J, S, A, S) and
    q_out (J, S, A) = p.z."""
    J, S, A = z.shape[0], z.shape[1], z.shape[2]
    taken = np.empty(S, dtype=np.bool_)
    for j in range(J):
        for s in range(S):
            for a in range(A):
                r = s * A + a
                row = p_out[j, s, a]
                zr = z[j, s, a]
                _row(nominal[r], zr, support[r], radius[r], row, taken)
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


@numba.njit(cache=True, error_model="numpy")
def _fill(q, lo, hi, out):
    N, A = q.shape
    used = np.empty(A, dtype=np.bool_)
    for i in range(N):
        left = 1.0
        for a in range(A):
            out[i, a] = lo[i, a]
            left -= lo[i, a]
            used[a] = False
        rem = max(left, 0.0)
        for _ in range(A):
            best = -1
            for a in range(A):
                if not used[a] and (best < 0 or q[i, a] > q[i, best]):
                    best = a
            used[best] = True
            room = hi[i, best] - lo[i, best]
            give = min(max(rem, 0.0), room)
            out[i, best] += give
            rem -= room


def greedy_fill(q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """:func:`rcmdp_exact.core.mdp.greedy_box`, compiled (any leading batch axes)."""
    shape = np.broadcast_shapes(q.shape, lo.shape, hi.shape)
    A = shape[-1]
    qq = np.ascontiguousarray(np.broadcast_to(q, shape), dtype=np.float64).reshape(-1, A)
    ll = np.ascontiguousarray(np.broadcast_to(lo, shape), dtype=np.float64).reshape(-1, A)
    hh = np.ascontiguousarray(np.broadcast_to(hi, shape), dtype=np.float64).reshape(-1, A)
    out = np.empty_like(qq)
    _fill(qq, ll, hh, out)
    return out.reshape(shape)
