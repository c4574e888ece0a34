"""The robust engine's inner step on the toolkit's L1 ball, compiled: every (j, s, a) row
of a batch in one call.

Each row is solved by the ball's own compiled row,
:func:`rcmdp_exact.uncertainty.l1_numba.worst_row` (the exact sort-based solution, the
same algorithm as the numpy oracle :func:`rcmdp_exact.uncertainty.worst_case_l1`), and
its value is :math:`p^\\top z`.  The numpy path (``RobustGame(..., compiled=False)``,
the set's ``worst_case``) stays the reference; ``tests/test_robust.py`` compares the
two.  On the small batches of a branch and bound over policy boxes (tens of problems of
a few states) one compiled call replaces a Python loop of one numpy solve per problem.
This module imports numba at its top; the engine imports it on first use.
"""

from __future__ import annotations

import numba
import numpy as np

from ..uncertainty.l1_numba import worst_row

__all__ = ["worst_rows", "worst_rows_shared"]


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


__all__ += ["solve_rows"]
