r"""The s-rectangular L1 ball's chord search compiled by numba.

The same algorithm as :func:`rcmdp_exact.uncertainty.s_l1._dual_numpy` (its numpy
oracle; ``tests/test_s_rect.py`` compares them on drawn sets, boxes and values; every
sum in the oracle's order, so the same bits), written once as a loop over one row
(:func:`dual_rows`): the pieces of every action are filled in the order of
decreasing slope (the order is the oracle's own ``np.argsort``, computed in numpy and
passed in, so that ties are broken the same way), :math:`\Psi(\lambda)` is evaluated at
0, 1/3, 2/3 and 1 of :math:`\lambda_{\max}`, then at the maximiser of the chords' upper
envelope and at the middle of its interval in turn, until the envelope is within
``1e-13`` of the scale of the best value.  The robust engine's box Bellman update on an
s-rectangular ball calls it for every state of every box (the branch and bound's
Lagrangian bounds): in the numpy oracle each call costs a few milliseconds of array
overhead for a few dozen numbers, the compiled one a twentieth of that (``python
benchmarks/bench_ground_truth.py --section s-rect``).

This module imports numba at its top; :mod:`.s_l1` imports it on first use, so that
``import rcmdp_exact`` stays light.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["dual_rows"]


@numba.njit(cache=True, error_model="numpy")
def _psi_row(Q, X, rs, re, lo_p, hi_p, pair, lo, mass, kappa, lam, d):
    r""":math:`\Psi(\lambda)` of one row; writes the greedy policy (A,) into ``d``.

    The pieces (``rs``, ``re``: start and end per unit :math:`\lambda`; ``lo_p``,
    ``hi_p``: their action's box bounds; ``pair``: their action), in the order of
    decreasing slope, clipped to the box and filled with the mass left above ``lo``."""
    A, n1 = Q.shape
    d[:] = 0.0  # the fills first, then lo: the oracle's lo + bincount(fills), bit for bit
    total = 0.0  # the oracle's cumsum of the lengths; the mass before a piece is
    # total - its length, as the oracle computes it (not the sum of the earlier lengths)
    for k in range(rs.size):
        s = lam * rs[k]
        e = lam * re[k]
        if s != s:  # 0 * inf: a piece that never starts
            s = np.inf
        if e != e:
            e = np.inf
        s = max(s, lo_p[k])
        e = min(e, hi_p[k])
        ls = max(e - s, 0.0)
        total += ls
        fill = min(max(mass - (total - ls), 0.0), ls)
        d[pair[k]] += fill
    for a in range(A):
        d[a] = lo[a] + d[a]
    H = 0.0
    for a in range(A):
        low = np.inf
        for j in range(n1):
            t = d[a] * Q[a, j] + lam * X[a, j]
            if t < low:
                low = t
        H += low
    return H - lam * kappa


@numba.njit(cache=True, error_model="numpy")
def _envelope_row(lam, val, T):
    """The chords' upper bound of a concave function known at ``T`` sorted points of one
    row: (the bound, the point attaining it, its interval), as the oracle's
    ``_envelope``."""
    bound, at, where = -np.inf, 0.0, 0
    for i in range(T - 1):
        l0, l1, y0, y1 = lam[i], lam[i + 1], val[i], val[i + 1]
        m1 = (y0 - val[i - 1]) / (l0 - lam[i - 1]) if i > 0 else np.nan
        m2 = (val[i + 2] - y1) / (lam[i + 2] - l1) if i + 2 < T else np.nan
        has1, has2 = np.isfinite(m1), np.isfinite(m2)
        if has1 and has2:
            cross = (y1 - y0 + m1 * l0 - m2 * l1) / (m1 - m2)
            if not np.isfinite(cross):
                cross = l0
            x = min(max(cross, l0), l1)
        elif has2:
            x = l0 if m2 < 0.0 else l1  # only the right chord: its larger end
        elif has1:
            x = l1 if m1 > 0.0 else l0  # only the left chord
        else:
            x = l0
        up1 = y0 + m1 * (x - l0) if has1 else np.inf
        up2 = y1 + m2 * (x - l1) if has2 else np.inf
        up = max(min(up1, up2), max(y0, y1))
        if up > bound:
            bound, at, where = up, x, i
    return bound, at, where


@numba.njit(cache=True, error_model="numpy")
def dual_rows(Q, X, sig, kappa, lo, hi, order, max_steps):
    r"""The maximum of the concave piecewise-linear :math:`\Psi(\lambda)` of every row.

    ``Q``, ``X`` (R, A, n + 1), ``sig`` (R, A, n), ``kappa`` (R,), ``lo``, ``hi`` (R, A)
    as the oracle takes them; ``order`` (R, A (n + 1)) the pieces in the order of
    decreasing slope (``np.argsort(-Q.reshape(R, -1), axis=1)``); at most ``max_steps``
    steps per row.  Returns the policy of the best point (R, A), the certified upper
    bound on :math:`\max\Psi` (R,) and whether every search ended."""
    R, A, n1 = Q.shape
    m = A * n1
    best_d = np.empty((R, A))
    upper_out = np.empty(R)
    ended = True
    fracs = np.array([0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0])
    rs, re = np.empty(m), np.empty(m)
    lo_p, hi_p = np.empty(m), np.empty(m)
    pair = np.empty(m, dtype=np.int64)
    lam, val = np.empty(4 + max_steps), np.empty(4 + max_steps)
    d, bd = np.empty(A), np.empty(A)
    for r in range(R):
        for k in range(m):
            a, j = order[r, k] // n1, order[r, k] % n1
            if j == 0:
                rs[k] = 0.0
            else:
                s = sig[r, a, j - 1]
                rs[k] = 1.0 / s if s > 0.0 else np.inf
            if j == n1 - 1:
                re[k] = np.inf
            else:
                s = sig[r, a, j]
                re[k] = 1.0 / s if s > 0.0 else np.inf
            lo_p[k], hi_p[k], pair[k] = lo[r, a], hi[r, a], a
        mass = max(1.0 - lo[r].sum(), 0.0)
        lam_max = -np.inf
        for a in range(A):
            lam_max = max(lam_max, hi[r, a] * sig[r, a, 0])
        best = -np.inf
        for k in range(4):
            lam[k] = lam_max * fracs[k]
            val[k] = _psi_row(Q[r], X[r], rs, re, lo_p, hi_p, pair, lo[r], mass, kappa[r],
                              lam[k], d)
            if val[k] > best:
                best = val[k]
                bd[:] = d
        T = 4
        done = lam_max <= 0.0  # no segment can be bought: Psi(lam) = Psi(0) - lam kappa
        upper = val[0] if done else np.inf
        tol = 1e-13 * (1.0 + np.abs(Q[r]).max())
        for step in range(max_steps):
            if done:
                break
            up, x, i = _envelope_row(lam, val, T)
            upper = up
            if up - best <= tol:
                done = True
                break
            lo_i, hi_i = lam[i], lam[i + 1]
            if step % 2:
                x = 0.5 * (lo_i + hi_i)
            if not (lo_i < x < hi_i):
                x = 0.5 * (lo_i + hi_i)
            if not (lo_i < x < hi_i):  # the interval is one float wide
                done = True
                break
            v = _psi_row(Q[r], X[r], rs, re, lo_p, hi_p, pair, lo[r], mass, kappa[r], x, d)
            if v > best:
                best = v
                bd[:] = d
            pos = 0
            while pos < T and lam[pos] < x:
                pos += 1
            for k in range(T, pos, -1):
                lam[k], val[k] = lam[k - 1], val[k - 1]
            lam[pos], val[pos] = x, v
            T += 1
        ended = ended and done
        best_d[r] = bd
        upper_out[r] = max(upper, best)
    return best_d, upper_out, ended
