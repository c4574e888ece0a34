"""The robust engine's compiled greedy fill of policy boxes.

:func:`greedy_fill` is :func:`rcmdp_exact.core.mdp.greedy_box` (the numpy oracle, used with
``RobustGame(..., compiled=False)``), row by row: start at l and give the remaining mass
to the actions in decreasing order of q (ties to the lowest index), each up to u.  Its
kernel :func:`fill_boxes` is also the policy step of the bracket's compiled occupancy
iteration (:mod:`rcmdp_exact.ground_truth._compiled`).  The inner step of the engine on
the L1 ball is the ball's own (:meth:`rcmdp_exact.uncertainty.L1Ball.compiled_rows`).

``tests/test_engine_compiled.py`` compares it with its oracle.  This module imports numba
at its top; the engine imports it on first use.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["fill_boxes", "greedy_fill"]


@numba.njit(cache=True, error_model="numpy")
def fill_boxes(q, lo, hi, out):
    """The greedy fill of N boxes into ``out`` (N, A): start at ``lo``, give the remaining
    mass to the actions in decreasing order of ``q`` (ties to the lowest index), each up to
    ``hi``."""
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
    fill_boxes(qq, ll, hh, out)
    return out.reshape(shape)
