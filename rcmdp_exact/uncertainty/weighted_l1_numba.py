r"""The weighted L1 inner problem, row by row, compiled by numba.

The same algorithm as the numpy solver of :mod:`rcmdp_exact.uncertainty.weighted_l1`
(its oracle; the tests compare them), written as one loop over the rows that numba
compiles, so that every step reads a row while it is in the cache:

1. the receivers: the lower convex hull of the points :math:`(w_k, z_k)` of the
   support, by a monotone chain over the strict running minima of z in increasing
   order of w (the Pareto points), from the smallest w to the smallest z; their break
   points :math:`\beta_j`;
2. the piece of :math:`\lambda^*`: :math:`\varphi'(0^+)`, then a binary search for the
   last break point with :math:`\varphi'(\beta_j^+) > 0` (one pass over the row each);
3. the greedy of that piece: the keys :math:`(z_{K_j} - z_i) / (w_i + w_{K_j})` (minus
   the gain per unit of budget) and their budgets :math:`\hat p_i (w_i + w_{K_j})`;
   the sources whose gain exceeds :math:`\beta_{j+1}` are emptied, the threshold of
   the others is found by a weighted quickselect (a three-way partition around a
   median of three, O(n) expected; a segment of at most 16 keys, or one still open
   after 64 rounds, is sorted), and the keys equal to it lose the same fraction of
   their mass;
4. at a break point (:math:`\lambda^* = \beta_{j+1}`) the emptied mass is split
   between the receivers :math:`K_j` and :math:`K_{j+1}` so that the budget is
   exactly spent.

Each row costs a handful of passes over its n entries plus the partitions, O(n)
expected.  This module imports numba at its top; only
:func:`~rcmdp_exact.uncertainty.weighted_l1.worst_case_weighted_l1` imports it, when it
chooses the compiled path.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

__all__ = ["MAX_ROUNDS", "solve_rows", "weighted_select"]

#: A segment of the quickselect with at most this many keys is sorted.
_SMALL_SEGMENT = 16
#: Partition rounds after which whatever segment is left is sorted (a guard against
#: the quadratic worst case of the quickselect).
MAX_ROUNDS = 64

_jit = numba.njit(cache=True, error_model="numpy")


@_jit
def _sort_segment(bk, bc, a, b):
    """Sort the keys ``bk[a:b]`` (with their weights ``bc``) in place, increasing."""
    if b - a <= _SMALL_SEGMENT:
        for i in range(a + 1, b):  # insertion sort
            x, y = bk[i], bc[i]
            j = i - 1
            while j >= a and bk[j] > x:
                bk[j + 1] = bk[j]
                bc[j + 1] = bc[j]
                j -= 1
            bk[j + 1] = x
            bc[j + 1] = y
        return
    o = np.argsort(bk[a:b], kind="mergesort")
    sk = bk[a:b][o]
    sc = bc[a:b][o]
    bk[a:b] = sk
    bc[a:b] = sc


@_jit
def weighted_select(bk, bc, tk, tc, m, acc, target, max_rounds):
    """The greedy threshold of the keys ``bk[:m]`` with weights ``bc[:m]``.

    ``acc`` is the weight already taken (every key of the row below these), < target.
    Returns ``(kappa, below, tied, found)``: kappa the smallest key value x with
    ``acc + sum(bc[bk <= x]) >= target``, below the weight of the keys < kappa (with
    acc), tied the weight of those equal to it; found is False when no key reaches the
    target (possible only by rounding), and then below is the total.  ``tk`` and ``tc``
    are scratch buffers of the same length; the buffers are overwritten.  After
    ``max_rounds`` partitions the segment left is sorted.

    Each round splits the segment around a median of three into the keys below the
    pivot (written from the front of the other buffer), those above it (from the back)
    and those equal to it (only weighed), without branches, and keeps the side where
    the target is crossed.
    """
    a = 0
    b = m
    rounds = 0
    while b > a:
        if b - a <= _SMALL_SEGMENT or rounds >= max_rounds:
            _sort_segment(bk, bc, a, b)
            i = a
            while i < b:
                x = bk[i]
                g = 0.0
                j = i
                while j < b and bk[j] == x:
                    g += bc[j]
                    j += 1
                if acc + g >= target:
                    return x, acc, g, True
                acc += g
                i = j
            return np.nan, acc, 0.0, False
        x0, x1, x2 = bk[a], bk[(a + b) // 2], bk[b - 1]
        if x0 > x1:
            x0, x1 = x1, x0
        if x1 > x2:
            x1 = x2
        pivot = x1 if x1 > x0 else x0  # the median of the three
        nl = a
        ng = b - 1
        wl = 0.0
        we = 0.0
        for i in range(a, b):
            x = bk[i]
            y = bc[i]
            below = x < pivot
            above = x > pivot
            tk[nl] = x
            tc[nl] = y
            tk[ng] = x
            tc[ng] = y
            nl += below
            ng -= above
            wl += y if below else 0.0
            we += 0.0 if below | above else y
        if acc + wl >= target:
            b = nl
        elif acc + wl + we >= target:
            return pivot, acc + wl, we, True
        else:
            acc += wl + we
            a = ng + 1
        bk, tk = tk, bk
        bc, tc = tc, bc
        rounds += 1
    return np.nan, acc, 0.0, False


@_jit
def _slope(q, z, w, m, bt, kw, alpha):
    r"""The right derivative of :math:`\varphi` at ``bt`` with the receiver of weight
    ``kw`` and :math:`m(\beta)` = ``m``: the budget of emptying the sources, minus alpha."""
    s1 = 0.0
    s0 = 0.0
    for i in range(q.shape[0]):  # branch-free: the sources come in random order
        qi = q[i] if z[i] > m + bt * w[i] else 0.0
        s1 += qi * w[i]
        s0 += qi
    return s1 + kw * s0 - alpha


@_jit
def _solve_row(q, z, w, alpha, order, base, ns, p, stk, beta, key, bk, bc, tk, tc):
    """The worst case of one row with alpha > 0, written into ``p``.

    ``order[:ns]`` are the flat positions (``base`` + index) of the supported outcomes
    in increasing weight; ``stk``, ``beta`` (n + 1), ``key``, ``bk``, ``bc``, ``tk``
    and ``tc`` (n) are scratch arrays.
    """
    n = q.shape[0]
    # 1. the receivers: a monotone chain over the Pareto points of (w, z)
    top = 0
    zmin = np.inf
    for k in range(ns):
        i = order[k] - base
        zi = z[i]
        if not zi < zmin:
            continue
        zmin = zi
        wi = w[i]
        if top >= 1 and w[stk[top - 1]] == wi:  # same w, higher: replaced
            top -= 1
        while top >= 2:
            o = stk[top - 2]
            a = stk[top - 1]
            ox = w[o]
            oy = z[o]
            cross = (w[a] - ox) * (zi - oy) - (z[a] - oy) * (wi - ox)
            if cross <= 0.0:
                top -= 1
            else:
                break
        stk[top] = i
        top += 1
    h = top  # the receivers K_j = stk[h - 1 - j], from the smallest z
    beta[0] = 0.0
    for j in range(1, h):
        kj = stk[h - 1 - j]
        kp = stk[h - j]
        bj = (z[kj] - z[kp]) / (w[kp] - w[kj])
        beta[j] = bj if bj > beta[j - 1] else beta[j - 1]
    beta[h] = np.inf
    # 2. phi'(0+), then the last break point with phi'(beta_j+) > 0
    k0 = stk[h - 1]
    z0 = z[k0]
    w0 = w[k0]
    zero = _slope(q, z, w, z0, 0.0, w0, alpha) <= 0.0  # lambda* = 0: all to K_0
    lo = 0
    hi = h
    if not zero:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            km = stk[h - 1 - mid]
            bt = beta[mid]
            kw = w[km]
            if _slope(q, z, w, z[km] + bt * kw, bt, kw, alpha) > 0.0:
                lo = mid
            else:
                hi = mid
    j = lo
    k1 = stk[h - 1 - j]
    z1 = z[k1]
    w1 = w[k1]
    b_lo = beta[j]
    b_hi = 0.0 if zero else beta[j + 1]
    # 3. the keys; the sources above b_hi are emptied, those in [b_lo, b_hi] are the
    # greedy's candidates
    lo_key = np.nextafter(-b_hi, -np.inf)
    hi_key = -b_lo
    bf = 0.0  # the budget of emptying the sources above b_hi
    f_in = 0.0
    mi = 0
    for i in range(n):  # branch-free: the sources come in random order
        cost = w[i] + w1
        kk = (z1 - z[i]) / cost
        c = cost * q[i]
        key[i] = kk
        bk[mi] = kk
        bc[mi] = c
        full = kk <= lo_key
        inside = (kk <= hi_key) & ~full
        bf += c if full else 0.0
        f_in += c if inside else 0.0
        mi += inside
    edge = (bf >= alpha) and (not zero) and (b_hi < np.inf)
    frac = 0.0
    if edge or zero:
        kappa = np.nextafter(lo_key, np.inf)  # exactly the sources above b_hi
    else:
        target = min(alpha, bf + f_in)
        if target <= bf:
            kappa = np.nextafter(lo_key, np.inf)
        else:
            kappa, below, tied, found = weighted_select(bk, bc, tk, tc, mi, bf, target,
                                                        MAX_ROUNDS)
            if not found:  # short of the target by rounding: every candidate
                kappa = np.nextafter(hi_key, np.inf)
            elif tied > 0.0:
                frac = min(max((target - below) / tied, 0.0), 1.0)
    # 4. the kernel
    moved = 0.0
    for i in range(n):
        kk = key[i]
        qi = q[i]
        pi = qi - qi * frac if kk == kappa else qi
        pi = 0.0 if kk < kappa else pi
        p[i] = pi
        moved += qi - pi
    if not edge:
        p[k1] += moved
        return
    k2 = stk[h - 2 - j]
    w2 = w[k2]
    b0 = 0.0  # the budget of moving everything to K_{j+1}
    for i in range(n):
        if key[i] < kappa:
            b0 += q[i] * w[i]
    b0 += w2 * moved
    share = (alpha - b0) / (w1 - w2)  # the share of K_j
    share = min(max(share, 0.0), moved)
    p[k1] += share
    p[k2] += moved - share


_F2 = types.Array(types.float64, 2, "C", readonly=True)
_F1 = types.Array(types.float64, 1, "C", readonly=True)
_I2 = types.Array(types.int64, 2, "C", readonly=True)
_I1 = types.Array(types.int64, 1, "C", readonly=True)
_OUT = types.Array(types.float64, 2, "C")


@numba.njit([types.void(_F2, _F2, _F2, _F1, _I2, _I1, _OUT)], cache=True,
            error_model="numpy")
def solve_rows(Q, Z, W, Al, order, nsup, out):
    """Write the worst case of every row into ``out`` (N, n).

    ``Q``, ``Z``, ``W`` (N, n) the nominal rows, the values and the weights (1 off the
    support), ``Al`` (N,) the budgets, ``order`` (N, n) the flat positions ``r n + i``
    of every row in increasing weight, the support first, and ``nsup`` (N,) the number
    of supported outcomes of every row (all C-contiguous; read-only is fine).  Rows
    with a budget <= 0 get their nominal row.
    """
    N, n = Q.shape
    stk = np.empty(n + 1, dtype=np.int64)
    beta = np.empty(n + 1)
    key = np.empty(n)
    bk = np.empty(n)
    bc = np.empty(n)
    tk = np.empty(n)
    tc = np.empty(n)
    for r in range(N):
        if not Al[r] > 0.0:
            for i in range(n):
                out[r, i] = Q[r, i]
            continue
        _solve_row(Q[r], Z[r], W[r], Al[r], order[r], r * n, nsup[r], out[r], stk, beta,
                   key, bk, bc, tk, tc)
