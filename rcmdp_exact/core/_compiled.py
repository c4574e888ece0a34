r"""Compiled loops of the exact solvers of :mod:`rcmdp_exact.core`: the double-double
sums of the Bellman operator for the certified bounds of
:func:`rcmdp_exact.core.mdp.solve_mdp` (:func:`bellman_rows`), the products with P and
its row sums in one pass (:func:`dot_and_sums`) and the products with
:math:`I - \gamma P` of GMRES (:func:`minus_gamma_csr`).

For the rows i of a transition matrix P (CSR or dense) and values :math:`v = v_h + v_l`
(two floats per state),

.. math::

    \tilde Q(i) = g(i) + \gamma \textstyle\sum_k P_{ik} (v_h(k) + v_l(k))

is computed as a double-double ``s + c`` together with a bound ``e`` on
:math:`|s + c - \tilde Q(i)|`, in the exact arithmetic of the float data (every float
taken as an exact number).  The dot product :math:`D = \sum_k P_{ik} (v_h(k) +
v_l(k))` first: per stored entry, :math:`P_{ik} v_h(k) = h + t` exactly (TwoProduct by a
fused multiply-add, :math:`t = \mathrm{fma}(p, v, -h)`); the h are summed by a chain of
TwoSums, which is exact (its sum s plus its error terms e), and the small terms z (the
e, the t and the rounded products :math:`w = P_{ik} v_l(k)`) are summed in float into c.
So :math:`|s + c - D| \le \gamma_N \sum |z| + u \sum |w|` (N small terms; Ogita,
Rump and Oishi, *Accurate sum and dot product*, SIAM J. Sci. Comput. 26, 2005), doubled
for the rounding of the bound itself, plus :math:`16 \eta (N + \sum |v|)` for underflow
(TwoProduct is exact only above the underflow range: their Thm. 3.4).  Then
:math:`g + \gamma (s + c)`: :math:`\gamma s` by TwoProduct again, g added by TwoSum, the
small parts in float (a few more rounding units of them, and :math:`\gamma` times the
dot product's bound).  One compiled pass over each row: about 15 flops per stored
entry.  Checked against mpmath in ``tests/test_evaluation_bounds.py``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

_U = 2.0 ** -53
_ETA = 2.0 ** -1074

_jit = numba.njit(cache=True, error_model="numpy")
_inline = numba.njit(cache=True, error_model="numpy", inline="always")


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (LLVM's fma: the instruction where the processor has
    one, else the exactly rounded library function)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return sig, codegen


@_inline
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@_inline
def _entry(p, x, y, s, c, zmag, wmag):
    """Add p (x + y) to the double-double (s, c): p x = h + t exactly (TwoProduct by a
    fused multiply-add); the magnitudes of the small terms and of the rounded product
    p y grow."""
    h = p * x
    t = _fma(p, x, -h)
    s, e = _two_sum(s, h)
    w = p * y
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
    x = gamma * s
    y = _fma(gamma, s, -x)
    w = gamma * c
    s2, e2 = _two_sum(g, x)
    c2 = (e2 + y) + w
    err = gamma * err_dot + 4.0 * _U * (abs(e2) + abs(y) + abs(w)) + 16.0 * _ETA
    return s2, c2, err


@_jit
def rows_csr(indptr, indices, data, g, gamma, x, y, rows, out_s, out_c, out_e):
    """The double-doubles (s, c) and error bounds e of the rows ``rows`` of the CSR
    matrix (indptr, indices, data), with rewards g (one per row of the matrix), at the
    values x + y."""
    for t in range(rows.shape[0]):
        i = rows[t]
        s = 0.0
        c = 0.0
        zmag = 0.0
        wmag = 0.0
        vmag = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            s, c, zmag, wmag = _entry(data[k], x[j], y[j], s, c, zmag, wmag)
            vmag += abs(x[j]) + abs(y[j])
        out_s[t], out_c[t], out_e[t] = _finish_row(g[i], gamma, s, c,
                                                   3 * (indptr[i + 1] - indptr[i]),
                                                   zmag, wmag, vmag)


@_jit
def rows_dense(P, g, gamma, x, y, vmag, rows, out_s, out_c, out_e):
    """As :func:`rows_csr` for a dense matrix P (rows, S) (``vmag``: sum |x| + |y|)."""
    n = P.shape[1]
    for t in range(rows.shape[0]):
        i = rows[t]
        s = 0.0
        c = 0.0
        zmag = 0.0
        wmag = 0.0
        for j in range(n):
            s, c, zmag, wmag = _entry(P[i, j], x[j], y[j], s, c, zmag, wmag)
        out_s[t], out_c[t], out_e[t] = _finish_row(g[i], gamma, s, c, 3 * n, zmag, wmag,
                                                   vmag)


def bellman_rows(P, g: np.ndarray, gamma: float, vh: np.ndarray, vl: np.ndarray | None,
                 rows: np.ndarray):
    """(s, c, e) (each (len(rows),)) of the rows ``rows`` of P ((S*A, S) CSR or dense):
    the exact sum :math:`g(i) + \\gamma P(i) \\cdot (v_h + v_l)` lies within e of s + c."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    n = rows.shape[0]
    out_s, out_c, out_e = np.empty(n), np.empty(n), np.empty(n)
    x = np.ascontiguousarray(vh, dtype=np.float64)
    y = np.zeros_like(x) if vl is None else np.ascontiguousarray(vl, dtype=np.float64)
    g = np.ascontiguousarray(g, dtype=np.float64)
    if isinstance(P, np.ndarray):
        vmag = float(np.abs(x).sum() + np.abs(y).sum()) * 2.0
        rows_dense(np.ascontiguousarray(P), g, float(gamma), x, y, vmag, rows, out_s,
                   out_c, out_e)
    else:
        rows_csr(P.indptr, P.indices, np.asarray(P.data, dtype=np.float64), g,
                 float(gamma), x, y, rows, out_s, out_c, out_e)
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


@_fast
def minus_gamma_csr(indptr, indices, data, gamma, x, out):
    """out = x - gamma P x for P in CSR (n, n): the product of GMRES on I - gamma P."""
    for i in range(indptr.shape[0] - 1):
        a = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            a += data[k] * x[indices[k]]
        out[i] = x[i] - gamma * a


@_fast
def minus_gamma_csr_t(indptr, indices, data, gamma, x, out):
    """out = x - gamma P^T x for P in CSR (n, n) (a scatter over its rows)."""
    for i in range(x.shape[0]):
        out[i] = x[i]
    for i in range(indptr.shape[0] - 1):
        xi = gamma * x[i]
        for k in range(indptr[i], indptr[i + 1]):
            out[indices[k]] -= data[k] * xi
