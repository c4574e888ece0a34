r"""Compiled double-double sums of the Bellman operator, for the certified bounds of
:func:`rcmdp_exact.core.mdp.solve_mdp`.

For the rows i of a transition matrix P (CSR or dense) and values :math:`v = v_h + v_l`
(two floats per state),

.. math::

    \tilde Q(i) = g(i) + \gamma \textstyle\sum_k P_{ik} (v_h(k) + v_l(k))

is computed as a double-double ``s + c`` together with a bound ``e`` on
:math:`|s + c - \tilde Q(i)|`, in the exact arithmetic of the float data (every float
taken as an exact number).  Per stored entry: :math:`\gamma P_{ik} = p_h + p_l` exactly
and :math:`p_h v_h(k) = x + y` exactly (Dekker's TwoProduct with Veltkamp's split);
the x are summed by a chain of TwoSums starting at g(i), which is exact (its sum s plus
its error terms), and the small terms z (the TwoSum errors, the y and the three rounded
products :math:`w = p_l v_h, p_h v_l, p_l v_l`) are summed in float into c.  So
:math:`|s + c - \tilde Q(i)| \le \gamma_N \sum |z| + u \sum |w|` (N small terms;
Ogita, Rump and Oishi, *Accurate sum and dot product*, SIAM J. Sci. Comput. 26, 2005),
doubled for the rounding of the bound itself, plus :math:`16 \eta (N + \sum |v|)` for
underflow (TwoProduct is exact only above the underflow range: their Thm. 3.4).  This is
the numpy derivation that preceded it, in one compiled pass over each row: about 40
flops per stored entry, a few nanoseconds.  Checked against mpmath in
``tests/test_mdp.py``.
"""

from __future__ import annotations

import numba
import numpy as np

_U = 2.0 ** -53
_ETA = 2.0 ** -1074
_SPLITTER = 134217729.0  # 2^27 + 1

_jit = numba.njit(cache=True, error_model="numpy")
_inline = numba.njit(cache=True, error_model="numpy", inline="always")


@_inline
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@_inline
def _two_prod(a, b):
    x = a * b
    c = _SPLITTER * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLITTER * b
    bh = c - (c - b)
    bl = b - bh
    return x, al * bl - (((x - ah * bh) - al * bh) - ah * bl)


@_inline
def _split(a):
    c = _SPLITTER * a
    ah = c - (c - a)
    return ah, a - ah


@_inline
def _entry(p, xh, xl, yl, s, c, zmag, wmag):
    """Add p (x + y) to the double-double (s, c), x = xh + xl split (Veltkamp) so that
    p x = h + t exactly (Dekker's TwoProduct); the magnitudes of the small terms and of
    the rounded product p y grow."""
    h = p * (xh + xl)
    ph, pl = _split(p)
    t = pl * xl - (((h - ph * xh) - pl * xh) - ph * xl)
    s, e = _two_sum(s, h)
    w = p * yl
    c += (e + t) + w
    zmag += abs(e) + abs(t) + abs(w)
    wmag += abs(w)
    return s, c, zmag, wmag


@_inline
def _finish_row(g, gamma, s, c, n_small, zmag, wmag, vmag):
    """(s, c, e): g + gamma (s + c) as a double-double and its error bound, where s + c
    is within 2 (gamma_{N+1} zmag + u wmag) of the row's dot product (module
    docstring)."""
    gn = (n_small + 1) * _U / (1.0 - (n_small + 1) * _U)
    err_dot = 2.0 * (gn * zmag + _U * wmag) + 16.0 * _ETA * (n_small + vmag)
    x, y = _two_prod(gamma, s)
    w = gamma * c
    s2, e2 = _two_sum(g, x)
    c2 = (e2 + y) + w
    err = gamma * err_dot + 4.0 * _U * (abs(e2) + abs(y) + abs(w)) + 16.0 * _ETA
    return s2, c2, err


@_jit
def rows_csr(indptr, indices, data, g, gamma, xh, xl, yl, rows, out_s, out_c, out_e):
    """The double-doubles (s, c) and error bounds e of the rows ``rows`` of the CSR
    matrix (indptr, indices, data), with rewards g (one per row of the matrix), at the
    values x + yl (x split into xh + xl)."""
    for t in range(rows.shape[0]):
        i = rows[t]
        s = 0.0
        c = 0.0
        zmag = 0.0
        wmag = 0.0
        vmag = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            s, c, zmag, wmag = _entry(data[k], xh[j], xl[j], yl[j], s, c, zmag, wmag)
            vmag += abs(xh[j]) + abs(yl[j])
        out_s[t], out_c[t], out_e[t] = _finish_row(g[i], gamma, s, c,
                                                   3 * (indptr[i + 1] - indptr[i]),
                                                   zmag, wmag, vmag)


@_jit
def rows_dense(P, g, gamma, xh, xl, yl, vmag, rows, out_s, out_c, out_e):
    """As :func:`rows_csr` for a dense matrix P (rows, S) (``vmag``: sum |x| + |yl|)."""
    n = P.shape[1]
    for t in range(rows.shape[0]):
        i = rows[t]
        s = 0.0
        c = 0.0
        zmag = 0.0
        wmag = 0.0
        for j in range(n):
            s, c, zmag, wmag = _entry(P[i, j], xh[j], xl[j], yl[j], s, c, zmag, wmag)
        out_s[t], out_c[t], out_e[t] = _finish_row(g[i], gamma, s, c, 3 * n, zmag, wmag,
                                                   vmag)


def bellman_rows(P, g: np.ndarray, gamma: float, vh: np.ndarray, vl: np.ndarray | None,
                 rows: np.ndarray):
    """(s, c, e) (each (len(rows),)) of the rows ``rows`` of P ((S*A, S) CSR or dense):
    the exact sum :math:`g(i) + \\gamma P(i) \\cdot (v_h + v_l)` lies within e of s + c."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    n = rows.shape[0]
    out_s, out_c, out_e = np.empty(n), np.empty(n), np.empty(n)
    vh = np.ascontiguousarray(vh, dtype=np.float64)
    yl = np.zeros_like(vh) if vl is None else np.ascontiguousarray(vl, dtype=np.float64)
    c = _SPLITTER * vh
    xh = c - (c - vh)
    xl = vh - xh
    g = np.ascontiguousarray(g, dtype=np.float64)
    if isinstance(P, np.ndarray):
        vmag = float(np.abs(vh).sum() + np.abs(yl).sum()) * 2.0
        rows_dense(np.ascontiguousarray(P), g, float(gamma), xh, xl, yl, vmag, rows, out_s,
                   out_c, out_e)
    else:
        rows_csr(P.indptr, P.indices, np.asarray(P.data, dtype=np.float64), g,
                 float(gamma), xh, xl, yl, rows, out_s, out_c, out_e)
    return out_s, out_c, out_e


# The float products of the Bellman operator and the row sums of P in one pass over P
# (the pass is bound by memory: the sums come for free).  Reassociation is allowed: the
# rounding bound gamma_L sum|p v| of a sum of L products holds in any order (and with
# fused multiply-adds), and it is all the callers assume.
_fast = numba.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


@_fast
def dot_sums_dense(P, v, out_d, out_s):
    """out_d = P @ v and out_s = the row sums of the dense P (n, m)."""
    n, m = P.shape
    for i in range(n):
        a = 0.0
        s = 0.0
        for j in range(m):
            p = P[i, j]
            a += p * v[j]
            s += p
        out_d[i] = a
        out_s[i] = s


@_fast
def dot_sums_csr(indptr, indices, data, v, out_d, out_s):
    """As :func:`dot_sums_dense` for a CSR matrix."""
    for i in range(indptr.shape[0] - 1):
        a = 0.0
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            p = data[k]
            a += p * v[indices[k]]
            s += p
        out_d[i] = a
        out_s[i] = s


def dot_and_sums(P, v: np.ndarray):
    """(P @ v, the row sums of P) in one pass, for P dense (n, m) or CSR."""
    n = P.shape[0]
    out_d, out_s = np.empty(n), np.empty(n)
    v = np.ascontiguousarray(v, dtype=np.float64)
    if isinstance(P, np.ndarray):
        dot_sums_dense(np.ascontiguousarray(P), v, out_d, out_s)
    else:
        dot_sums_csr(P.indptr, P.indices, np.asarray(P.data, dtype=np.float64), v, out_d,
                     out_s)
    return out_d, out_s
