r"""Compiled loops of the exact solvers of :mod:`rcmdp_exact.core`: the double-double
sums of the Bellman operator for the certified bounds of
:func:`rcmdp_exact.core.mdp.solve_mdp` (:func:`bellman_rows`), the products with P and
its row sums in one pass (:func:`dot_and_sums`) and one cycle of GMRES on
:math:`I - \gamma P` (:func:`gmres_cycle`).

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


def csr_parts(P):
    """(indptr, indices, data) of a CSR matrix for the compiled loops: the index arrays
    seen as unsigned integers (a view: they are never negative, and the compiled code
    then skips the test for Python's negative indices, a third of a sparse product's
    time) and the values as float64."""
    def unsigned(a):
        return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint64)

    return unsigned(P.indptr), unsigned(P.indices), np.asarray(P.data, dtype=np.float64)


#: Placeholders of the storage a compiled loop taking both forms of P does not use.
NO_MATRIX = np.zeros((0, 0))
NO_INDEX = np.zeros(0, dtype=np.uint32)
NO_VALUES = np.zeros(0)


def operands(P) -> tuple:
    """(P, indptr, indices, data) for the compiled loops that take P dense or CSR
    (:func:`gmres_cycle`, :func:`sweeps`): a dense P with placeholders for the CSR
    arrays, or a placeholder matrix and :func:`csr_parts`."""
    if isinstance(P, np.ndarray):
        return np.ascontiguousarray(P, dtype=np.float64), NO_INDEX, NO_INDEX, NO_VALUES
    return (NO_MATRIX, *csr_parts(P))


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
        rows_csr(*csr_parts(P), g, float(gamma), x, y, rows, out_s, out_c, out_e)
    return out_s, out_c, out_e


# The float products of the Bellman operator and the row sums of P in one pass over P
# (the pass is bound by memory: the sums come for free).  Reassociation is allowed: the
# rounding bound gamma_L sum|p v| of a sum of L products holds in any order (and with
# fused multiply-adds), and it is all the callers assume.
_fast = numba.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
#: Fused multiply-adds only: for the short rows of a sparse P (a few stored entries),
#: where reassociation's vectorised loop and its remainder cost more than they save.
_contract = numba.njit(cache=True, error_model="numpy", fastmath={"contract"})


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
        dot_sums_csr(*csr_parts(P), v, out_d, out_s)
    return out_d, out_s


@_fast
def minus_gamma_csr(indptr, indices, data, gamma, x, out):
    """out = x - gamma P x for P in CSR (n, n)."""
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


@_inline
def _minus_gamma(P, indptr, indices, data, sparse, transpose, gamma, x, out):
    """out = x - gamma P x (or P^T x): P dense (one BLAS product) or CSR."""
    if sparse:
        if transpose:
            minus_gamma_csr_t(indptr, indices, data, gamma, x, out)
        else:
            minus_gamma_csr(indptr, indices, data, gamma, x, out)
    else:
        px = np.dot(P.T, x) if transpose else np.dot(P, x)
        for i in range(x.shape[0]):
            out[i] = x[i] - gamma * px[i]


@_jit
def gmres_cycle(P, indptr, indices, data, sparse, transpose, gamma, b, x, dinv, m,
                target):
    r"""One cycle of GMRES(m) on :math:`M x = b`, :math:`M = I - \gamma P` (or its
    transpose; P dense, or CSR given by ``indptr, indices, data`` when ``sparse``), from
    x, right-preconditioned by the diagonal (:math:`M D^{-1} y = b - M x`, ``dinv`` =
    :math:`D^{-1}`): at most m iterations, fewer when the Arnoldi estimate of the 2-norm
    residual reaches ``target``.  The basis is orthogonalised by classical Gram-Schmidt
    in matrix-vector products, repeated when the new vector lost more than 30% of its
    norm to the projection (Kahan's "twice is enough": as accurate as modified
    Gram-Schmidt); the Hessenberg matrix is kept triangular by Givens rotations.
    Returns the new x and the iterations (x itself and 0 when the residual already
    meets the target; x itself when the small triangular system is singular or not
    finite)."""
    n = b.shape[0]
    r = np.empty(n)
    _minus_gamma(P, indptr, indices, data, sparse, transpose, gamma, x, r)
    for i in range(n):
        r[i] = b[i] - r[i]
    beta = np.sqrt(np.dot(r, r))
    if not np.isfinite(beta) or beta <= target or beta == 0.0:
        return x, 0
    V = np.empty((m + 1, n))
    H = np.zeros((m + 1, m))
    cs = np.zeros(m)
    sn = np.zeros(m)
    g = np.zeros(m + 1)
    g[0] = beta
    for i in range(n):
        V[0, i] = r[i] / beta
    z = np.empty(n)
    w = np.empty(n)
    k = 0
    for j in range(m):
        for i in range(n):
            z[i] = dinv[i] * V[j, i]
        _minus_gamma(P, indptr, indices, data, sparse, transpose, gamma, z, w)
        basis = V[:j + 1]
        before = np.sqrt(np.dot(w, w))
        h = np.dot(basis, w)
        w -= np.dot(h, basis)
        hn = np.sqrt(np.dot(w, w))
        if hn < 0.7 * before:  # cancellation: orthogonalise again
            h2 = np.dot(basis, w)
            w -= np.dot(h2, basis)
            h += h2
            hn = np.sqrt(np.dot(w, w))
        for i in range(j + 1):
            H[i, j] = h[i]
        H[j + 1, j] = hn
        for i in range(j):  # the earlier rotations
            a = H[i, j]
            c = H[i + 1, j]
            H[i, j] = cs[i] * a + sn[i] * c
            H[i + 1, j] = -sn[i] * a + cs[i] * c
        rho = np.hypot(H[j, j], H[j + 1, j])
        if rho == 0.0:
            cs[j], sn[j] = 1.0, 0.0
        else:
            cs[j], sn[j] = H[j, j] / rho, H[j + 1, j] / rho
        H[j, j], H[j + 1, j] = rho, 0.0
        g[j + 1] = -sn[j] * g[j]
        g[j] = cs[j] * g[j]
        k = j + 1
        if hn == 0.0 or abs(g[j + 1]) <= target or not np.isfinite(g[j + 1]):
            break
        for i in range(n):
            V[j + 1, i] = w[i] / hn
    # back substitution of the k x k triangle
    y = np.zeros(k)
    for i in range(k - 1, -1, -1):
        if H[i, i] == 0.0 or not np.isfinite(H[i, i]):
            return x, k
        acc = g[i]
        for l in range(i + 1, k):
            acc -= H[i, l] * y[l]
        y[i] = acc / H[i, i]
        if not np.isfinite(y[i]):
            return x, k
    step = np.dot(y, V[:k])
    out = np.empty(n)
    for i in range(n):
        out[i] = x[i] + dinv[i] * step[i]
    return out, k



@_inline
def _row_dot(P, indptr, indices, data, sparse, s, a):
    """Row s of P (dense, or CSR given by ``indptr, indices, data``) times a."""
    acc = 0.0
    if sparse:
        for t in range(indptr[s], indptr[s + 1]):
            acc += data[t] * a[indices[t]]
    else:
        for j in range(a.shape[0]):
            acc += P[s, j] * a[j]
    return acc


@_inline
def _sweeps(P, indptr, indices, data, sparse, rows, g, gamma, v, k, cut, a, b):
    """The loop of :func:`sweeps` (inlined: compiled with the flags of its caller), in
    the buffers a and b (S,)."""
    n = v.shape[0]
    a[:] = v
    done = 0
    for _ in range(k):
        lo = np.inf
        hi = -np.inf
        for s in range(n):
            i = s if sparse else rows[s]
            new = g[s] + gamma * _row_dot(P, indptr, indices, data, sparse, i, a)
            step = new - a[s]
            lo = min(lo, step)
            hi = max(hi, step)
            b[s] = new
        a, b = b, a
        done += 1
        if hi - lo <= cut:
            break
    return a, done


@_fast
def sweeps(P, rows, g, gamma, v, k, cut, a, b):
    """At most k sweeps :math:`v \\leftarrow g + \\gamma P_\\pi v` from v, where row s of
    :math:`P_\\pi` is row ``rows[s]`` of the dense P (read in place: no copy of the
    policy's rows) and g (S,) its rewards; fewer once a sweep changes v by a constant up
    to a span of ``cut``.  Returns the new v (one of the buffers a, b (S,)) and the
    sweeps done.  (Reassociation lets the long dense dot products vectorise.)"""
    return _sweeps(P, NO_INDEX, NO_INDEX, NO_VALUES, False, rows, g, gamma, v, k, cut,
                   a, b)


@_contract
def sweeps_csr(indptr, indices, data, g, gamma, v, k, cut, a, b):
    """:func:`sweeps` for a policy's rows gathered as CSR (:func:`take_rows_csr`: rows
    of the full P are too far apart in memory to be read in place), without
    reassociation (which slows the short sparse rows down by a fifth)."""
    return _sweeps(NO_MATRIX, indptr, indices, data, True, NO_INDEX, g, gamma, v, k,
                   cut, a, b)


@_jit
def take_rows_csr(indptr, indices, data, rows, idx, val):
    """The rows ``rows`` of a CSR matrix, as CSR arrays (indptr, indices, data, nnz):
    written into ``idx`` and ``val`` when they hold nnz entries (a buffer reused by a
    loop costs no new pages), else into new arrays."""
    m = rows.shape[0]
    ptr = np.empty(m + 1, dtype=indptr.dtype)
    ptr[0] = 0
    for t in range(m):
        i = rows[t]
        ptr[t + 1] = ptr[t] + (indptr[i + 1] - indptr[i])
    nnz = ptr[m]
    if nnz > idx.shape[0]:
        idx = np.empty(nnz, dtype=indices.dtype)
        val = np.empty(nnz, dtype=data.dtype)
    for t in range(m):
        i = rows[t]
        base = ptr[t]
        start = indptr[i]
        for q in range(start, indptr[i + 1]):
            idx[base + (q - start)] = indices[q]
            val[base + (q - start)] = data[q]
    return ptr, idx, val, nnz


@_contract
def bellman_csr(indptr, indices, data, g, gamma, v, out):
    """out = g + gamma P v for P in CSR (n, m), g and out (n,), in one pass."""
    for i in range(indptr.shape[0] - 1):
        a = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            a += data[k] * v[indices[k]]
        out[i] = g[i] + gamma * a


@_jit
def shifted_bound(q, g, sig, sums, gamma, shift, w, vmax, c_q, c_eta, c_gs):
    """The float McQueen-Porteus data of value iteration's centre w = v + shift, in one
    pass with no temporary arrays (the formulas of ``_iterate_values`` and
    ``_mp_bound`` in :mod:`rcmdp_exact.core.mdp`, in the same order of operations,
    without fast-math: every rounding is the one the bound accounts for).

    q (S, A) holds the float Q-values at v and is overwritten by those at w,
    :math:`q + \\gamma\\, shift\\, \\text{sums}`; each is within

    .. math::

        e = (c_q (|g| + \\gamma \\sigma v_{max}) + c_\\eta) W + 2 c_{gs} |g_s| +
        2u (|g_s| + |q_w|) + 2u |shift|

    of the exact Bellman operator at w (W = 1 + 1e-13, ``c_q`` = gamma_{L+3},
    ``c_eta`` = 4 (L + 3) eta, ``c_gs`` = gamma_{L+2}).  With the gap
    :math:`q_w - w`, :math:`e' = e W + 2u |gap|`, the bounds ``upper = (gap + e') W``
    and ``lower = gap - e' W`` of the exact gap give (hi, lo, resid, finite): the largest
    upper, the smallest over states of the largest lower of the state (at most 0), the
    largest |max_a gap| and whether every q_w and w is finite."""
    S, A = q.shape
    u2 = 2.0 * 2.0 ** -53
    widen = 1.0 + 1e-13
    t = gamma * shift
    hi = -np.inf
    lo = 0.0
    resid = 0.0
    finite = True
    for s in range(S):
        ws = w[s]
        if not np.isfinite(ws):
            finite = False
        row_lo = -np.inf
        row_gap = -np.inf
        for a in range(A):
            i = s * A + a
            gs = t * sums[i]
            qw = q[s, a] + gs
            q[s, a] = qw
            if not np.isfinite(qw):
                finite = False
            e = (c_q * (abs(g[s, a]) + gamma * sig[i] * vmax) + c_eta) * widen
            e = e + abs(gs) * 2.0 * c_gs + u2 * (abs(gs) + abs(qw)) + u2 * abs(shift)
            gap = qw - ws
            e2 = e * widen + u2 * abs(gap)
            hi = max(hi, (gap + e2) * widen)
            row_lo = max(row_lo, gap - e2 * widen)
            row_gap = max(row_gap, gap)
        lo = min(lo, row_lo)
        resid = max(resid, abs(row_gap))
    return hi, lo, resid, finite


@_jit
def greedy_step(q, v):
    """The greedy step of value iteration from the Q-values q (S, A) at v (S,): the
    argmax of every row (ties to the lowest action; a NaN counts as the largest, as in
    ``numpy.argmax``), its value tv, and the smallest and largest of tv - v and the
    largest |tv| (``lo, hi, top``), in one pass."""
    S, A = q.shape
    actions = np.empty(S, dtype=np.int64)
    tv = np.empty(S)
    lo = np.inf
    hi = -np.inf
    top = 0.0
    for s in range(S):
        best = 0
        val = q[s, 0]
        if not np.isnan(val):
            for a in range(1, A):
                x = q[s, a]
                if np.isnan(x):
                    best, val = a, x
                    break
                if x > val:
                    best, val = a, x
        actions[s] = best
        tv[s] = val
        d = val - v[s]
        if np.isnan(d):
            lo = hi = np.nan
        elif lo == lo:  # (no NaN yet)
            lo = min(lo, d)
            hi = max(hi, d)
        top = max(top, abs(val))
    return actions, tv, lo, hi, top
