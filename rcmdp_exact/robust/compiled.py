"""Compiled hot loops of the robust engine and of the bracket's box bounds: the L1 ball's
inner step for every row of a batch, the greedy fill of policy boxes, the Howard
iteration of the occupancy intervals and the values of the occupancy LP.

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
* :func:`occupancy_values`: the box MDPs of
  :func:`rcmdp_exact.ground_truth.local_bound.occupancy_intervals`, each problem iterated
  on its own (the oracle: :func:`rcmdp_exact.core.mdp.box_policy_iteration` with
  :class:`~rcmdp_exact.core.evaluation.PolicySystem`); its values are only a proposal,
  certified by their residual in numpy.
* :func:`lp_fill`: the values of the occupancy LP in its fixed pattern (the oracle:
  :meth:`rcmdp_exact.ground_truth.occupancy_bound.OccupancyLP.matrix`).

``tests/test_engine_compiled.py`` compares the first two with their oracles,
``tests/test_occupancy_compiled.py`` and ``tests/test_occupancy_lp.py`` the others.  On
the small batches of a branch and bound over policy boxes (tens of problems of a few
states) one compiled call replaces a Python loop of numpy calls.  This module imports
numba at its top; the engine imports it on first use.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["greedy_fill", "lp_fill", "occupancy_values", "solve_rows", "worst_rows",
           "worst_rows_shared"]


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


@numba.njit(cache=True, error_model="numpy")
def _lu_solve(M, b, piv):
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
                _fill(q, lo[j], hi[j], pi)
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
                    _lu_solve(M, v, piv)
                    vmax = 1.0
                    for s in range(S):
                        if abs(v[s]) > vmax:
                            vmax = abs(v[s])
                        for a in range(A):
                            acc = 0.0
                            for u in range(S):
                                acc += Pj[s, a, u] * v[u]
                            q[s, a] = r[s] + gamma * acc
                    _fill(q, lo[j], hi[j], best)
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
