"""The bracket's compiled loops: the Howard iteration of the occupancy intervals and the
values of the occupancy LP.

* :func:`occupancy_values`: the box MDPs of
  :func:`rcmdp_exact.ground_truth.local_bound.occupancy_intervals`, each problem iterated
  on its own (the oracle: :func:`rcmdp_exact.core.mdp.box_policy_iteration` with
  :class:`~rcmdp_exact.core.evaluation.PolicySystem`), each evaluation a dense LU solve
  (:func:`lu_solve`), each policy step the engine's greedy fill of the boxes
  (:func:`rcmdp_exact.robust._compiled.fill_boxes`); its values are only a proposal,
  certified by their residual in numpy.
* :func:`lp_fill`: the values of the occupancy LP in its fixed pattern (the oracle:
  :meth:`rcmdp_exact.ground_truth.occupancy_bound.OccupancyLP.matrix`).

``tests/test_occupancy_compiled.py`` and ``tests/test_occupancy_lp.py`` compare them with
their oracles.  On the small batches of a branch and bound over policy boxes (tens of
problems of a few states) one compiled call replaces a Python loop of numpy calls.  This
module imports numba at its top; the bracket imports it on first use.
"""

from __future__ import annotations

import numba
import numpy as np

from ..robust._compiled import fill_boxes

__all__ = ["lp_fill", "lu_solve", "occupancy_values"]


@numba.njit(cache=True, error_model="numpy")
def lu_solve(M, b, piv):
    """Solve M x = b in place (x into b) by Gaussian elimination with partial pivoting;
    M (S, S) is overwritten by its factors, piv (S,) int scratch."""
    S = M.shape[0]
    for k in range(S):
        p = k
        big = abs(M[k, k])
        for i in range(k + 1, S):
            if abs(M[i, k]) > big:
                big = abs(M[i, k])
                p = i
        piv[k] = p
        if p != k:
            for c in range(S):
                tmp = M[k, c]
                M[k, c] = M[p, c]
                M[p, c] = tmp
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
        d = M[k, k]
        for i in range(k + 1, S):
            f = M[i, k] / d
            if f != 0.0:
                M[i, k] = f
                for c in range(k + 1, S):
                    M[i, c] -= f * M[k, c]
                b[i] -= f * b[k]
    for i in range(S - 1, -1, -1):
        acc = b[i]
        for c in range(i + 1, S):
            acc -= M[i, c] * b[c]
        b[i] = acc / M[i, i]


@numba.njit(cache=True, error_model="numpy")
def _occupancy_howard(P, lo, hi, gamma, v0, warm, max_iter, rtol, v_out, rounds_out):
    """Howard's iteration of the 2 S box MDPs of every kernel (see
    :func:`occupancy_values`); writes v_out (J, 2, S, S) and rounds_out (J, 2, S)."""
    J, S, A = P.shape[0], P.shape[1], P.shape[2]
    M = np.empty((S, S))
    v = np.empty(S)
    r = np.empty(S)
    piv = np.empty(S, dtype=np.int64)
    q = np.empty((S, A))
    pi = np.empty((S, A))
    best = np.empty((S, A))
    for j in range(J):
        Pj = P[j]
        for sg in range(2):
            sign = 1.0 if sg == 0 else -1.0
            for t in range(S):
                for s in range(S):
                    r[s] = 0.0
                r[t] = sign
                # the starting policy: greedy in the box for r + gamma P v0 (warm) or r
                for s in range(S):
                    for a in range(A):
                        acc = 0.0
                        if warm:
                            for u in range(S):
                                acc += Pj[s, a, u] * v0[j, sg, t, u]
                        q[s, a] = r[s] + gamma * acc
                fill_boxes(q, lo[j], hi[j], pi)
                it = 0
                while True:
                    it += 1
                    for s in range(S):
                        for u in range(S):
                            M[s, u] = 0.0
                        M[s, s] = 1.0
                        for a in range(A):
                            w = gamma * pi[s, a]
                            if w != 0.0:
                                for u in range(S):
                                    M[s, u] -= w * Pj[s, a, u]
                        v[s] = r[s]
                    lu_solve(M, v, piv)
                    vmax = 1.0
                    for s in range(S):
                        if abs(v[s]) > vmax:
                            vmax = abs(v[s])
                        for a in range(A):
                            acc = 0.0
                            for u in range(S):
                                acc += Pj[s, a, u] * v[u]
                            q[s, a] = r[s] + gamma * acc
                    fill_boxes(q, lo[j], hi[j], best)
                    thr = rtol * vmax
                    changed = False
                    for s in range(S):
                        gain = 0.0
                        for a in range(A):
                            gain += (best[s, a] - pi[s, a]) * q[s, a]
                        if gain > thr:
                            changed = True
                            for a in range(A):
                                pi[s, a] = best[s, a]
                    if not changed or it >= max_iter:
                        break
                for u in range(S):
                    v_out[j, sg, t, u] = v[u]
                rounds_out[j, sg, t] = it


def occupancy_values(P: np.ndarray, lo: np.ndarray, hi: np.ndarray, gamma: float,
                     start: np.ndarray | None = None, max_iter: int = 50,
                     rtol: float = 1e-13):
    r"""Values of the occupancy box MDPs, compiled: for every kernel j and state t, the
    box MDPs with reward :math:`\pm 1\{s = t\}` under ``P[j]`` (J, S, A, S) over the box
    ``lo[j]``, ``hi[j]`` (J, S, A).

    Howard's policy iteration, each problem on its own (it stops when no state gains more
    than ``rtol * max(1, max|v|)``, as :func:`rcmdp_exact.core.mdp.box_policy_iteration`,
    or after ``max_iter`` evaluations), each evaluation one dense LU solve of
    :math:`(I - \gamma P_\pi) v = r` with partial pivoting.  ``start`` (J, 2, S, S):
    values to start from (the first policy is the box's greedy one for
    :math:`r + \gamma P v_0`; default: for r).  The values are a proposal: the caller
    certifies them by their residual (:func:`rcmdp_exact.ground_truth.local_bound.
    occupancy_intervals`), so neither the start nor the rounding of the solve can make
    an interval wrong.

    Returns (v (J, 2, S, S): sign + then -, target t, state; rounds (J, 2, S)).
    """
    P = np.ascontiguousarray(P, dtype=np.float64)
    J, S = P.shape[0], P.shape[1]
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    warm = start is not None
    v0 = np.ascontiguousarray(start, dtype=np.float64) if warm else np.zeros((1, 2, 1, 1))
    v = np.empty((J, 2, S, S))
    rounds = np.empty((J, 2, S), dtype=np.int64)
    _occupancy_howard(P, lo, hi, float(gamma), v0, warm, int(max_iter), float(rtol), v,
                      rounds)
    return v, rounds


@numba.njit(cache=True, error_model="numpy")
def lp_fill(pos, kernels, G, term, sign, lo, hi, dlo, dhi, gamma, n_value, data, rhs, xhi):
    """The values of the bracket's occupancy LP of one box in its fixed pattern
    (:class:`~rcmdp_exact.ground_truth.occupancy_bound.LPLayout`), compiled: the entries
    in the order the layout lists them, each added at its CSC position ``pos``, into
    ``data`` (nnz,); the McCormick right-hand sides into ``rhs`` (m, 4, n) and the upper
    bounds of the occupancies into ``xhi`` (m, n).  ``OccupancyLP.matrix`` (numpy, from
    scratch) is the reference the tests compare with."""
    m, S, A = kernels.shape[0], kernels.shape[1], kernels.shape[2]
    n = S * A
    for i in range(data.shape[0]):
        data[i] = 0.0
    k = 0
    for _i in range(n):  # simplex rows
        data[pos[k]] += 1.0
        k += 1
    for j in range(m):  # flow rows: 1{s = s'} - gamma P(s'|s, a)
        for sp in range(S):
            for i in range(n):
                s, a = i // A, i % A
                data[pos[k]] += (1.0 if s == sp else 0.0) - gamma * kernels[j, s, a, sp]
                k += 1
    for j in range(m):  # McCormick rows, on pi: L, U, -U, -L
        for c in range(4):
            for i in range(n):
                s = i // A
                L, U = dlo[j, s], dhi[j, s]
                data[pos[k]] += L if c == 0 else (U if c == 1 else (-U if c == 2 else -L))
                k += 1
    for _j in range(m):  # on d (every x of the state): l, u, -l, -u
        for c in range(4):
            for i in range(n):
                v = lo[i] if c == 0 else (hi[i] if c == 1 else (-lo[i] if c == 2 else -hi[i]))
                for _a in range(A):
                    data[pos[k]] += v
                    k += 1
    for _j in range(m):  # on x itself: -1, -1, 1, 1
        for c in range(4):
            for _i in range(n):
                data[pos[k]] += -1.0 if c < 2 else 1.0
                k += 1
    for j in range(m):  # objective rows
        for i in range(n):
            s, a = i // A, i % A
            r = 0.0
            if not term[s]:
                for t in range(S):
                    r += kernels[j, s, a, t] * G[j, s, a, t]
            data[pos[k]] += sign[j] * r
            k += 1
    for _ in range(n_value):  # t in the value rows
        data[pos[k]] += 1.0
        k += 1
    for j in range(m):
        for i in range(n):
            s = i // A
            L, U, lv, uv = dlo[j, s], dhi[j, s], lo[i], hi[i]
            rhs[j, 0, i] = L * lv
            rhs[j, 1, i] = U * uv
            rhs[j, 2, i] = -U * lv
            rhs[j, 3, i] = -L * uv
            xhi[j, i] = U * uv
