r"""The L1 inner problem: the worst-case distribution of one uncertainty ball.

The paper's Eq. "robustvalue" / "robustlagrangian": for a nominal distribution
:math:`\hat p` on n outcomes, a radius :math:`\alpha \ge 0`, a support :math:`\Sigma`
and the quantity :math:`z` the adversary minimises,

.. math::

    \min_p\; p^\top z \quad\text{s.t.}\quad \|p - \hat p\|_1 \le \alpha,\quad
    \mathbf 1^\top p = 1,\quad p \ge 0,\quad p_i = 0 \;(i \notin \Sigma).

``method="sort"`` is the exact :math:`O(n \log n)` algorithm (add
:math:`\epsilon = \min(\alpha/2, 1 - \hat p_k)` to an argmin k of z, remove the same mass
from the largest z first), batched over every leading axis with packed float sort keys,
and a plain-numpy path for a single 1-D row; ``method="lp"`` solves one cvxpy LP per row
(HiGHS by default) and re-checks the answer in numpy.  The proof, the packed-key
argument and the measured speeds are in ``docs/robust.md``.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from .._checks import (
    as_array,
    as_float_array,
    check_choice,
    check_finite,
    check_nonnegative,
    check_row_sums,
    check_support,
    row_tolerance,
)
from .._result import Result, Status
from ..core.model_checks import ModelError
from ..names import INNERS, LP_SOLVERS
from ._rows import convex_rows, problem_cache, recheck

__all__ = [
    "l1_violation",
    "worst_case_l1",
]

#: Largest number of outcomes for which the packed integer keys are used.
_PACK_LIMIT = 1 << 16
#: Target number of float64 entries of one block of rows (about 512 KiB).
_BLOCK_ENTRIES = 1 << 15
#: Blocks per group (the per-row bookkeeping of the packed path runs once per group).
_GROUP = 4
#: Width of the mass blocks used to find the crossing point.
_SEG = 32
#: Up to this many outcomes the crossing point comes from a plain cumulative sum.
_CUMSUM_LIMIT = 48


def _einsum_rowdot(a, b):
    return np.einsum("ij,ij->i", a, b)


#: Row-wise dot products (``np.vecdot`` of numpy >= 2, else einsum).
_rowdot = getattr(np, "vecdot", _einsum_rowdot)


# --------------------------------------------------------------------------- validation
def _validate(p, zz, a, sup, n) -> None:
    """Raise naming the first bad entry (a cheap screen runs first)."""
    sums = p.sum(axis=-1)
    fine = (
        bool(p.min() >= 0.0)
        and bool((np.abs(sums - 1.0) <= row_tolerance(n)).all())
        and bool(np.isfinite(zz.sum()))
        and bool(np.isfinite(a).all())
        and bool((a >= 0).all())
        and (sup is None or not bool(np.max(p, where=~sup, initial=0.0) > 0.0))
    )
    if fine:
        return
    for name, arr in (("p_hat", p), ("z", zz), ("alpha", a)):
        check_finite(arr, name)
    check_nonnegative(a, "alpha", "the radii of L1 balls (0 gives the nominal distribution)")
    check_nonnegative(p, "p_hat", "probabilities (p_hat is a distribution on its support)")
    if sup is not None:
        check_support(p, np.broadcast_to(sup, p.shape), "p_hat",
                      "move that mass onto the support or enlarge the support")
    check_row_sums(sums, n, "p_hat")


def _prepare(p_hat, z, alpha, support):
    """Check shapes and flatten: p (N, n), z (n,) or (N, n), alpha (N,), support.

    Also returns a function that validates the values (see :func:`_validate`).
    """
    p = as_float_array(p_hat, "p_hat", "give distributions along the last axis, shape (..., n)",
                       finite=False)
    if p.ndim == 0 or p.shape[-1] == 0:
        raise ModelError(
            f"p_hat must have at least one axis with at least one outcome, got shape "
            f"{p.shape}; give distributions along the last axis, shape (..., n)"
        )
    lead, n = p.shape[:-1], p.shape[-1]
    zz = as_float_array(z, "z", "give z with the shape of p_hat or (n,)", finite=False)
    try:
        zb = np.broadcast_shapes(zz.shape, p.shape)
    except ValueError:
        zb = None
    if zz.ndim == 0 or zz.shape[-1] != n or zb != p.shape:
        raise ModelError(
            f"z has shape {zz.shape}, which does not broadcast to p_hat's shape {p.shape}; "
            f"give z with a last axis of n = {n} outcomes, either shared (shape ({n},)) "
            f"or one row per distribution"
        )
    a = as_float_array(alpha, "alpha", "give one radius per distribution or a scalar",
                       finite=False)
    try:
        ab = np.broadcast_shapes(a.shape, lead)
    except ValueError:
        ab = None
    if ab != lead:
        raise ModelError(
            f"alpha has shape {a.shape}, which does not broadcast to p_hat's leading shape "
            f"{lead}; give one radius per distribution or a scalar"
        )
    sup = None
    if support is not None:
        sup = as_array(support, "support", "give a boolean mask broadcastable to p_hat")
        if sup.dtype != bool:
            raise ModelError(
                f"support must be a boolean mask (True where an outcome may receive "
                f"mass), got dtype {sup.dtype}"
            )
        try:
            sb = np.broadcast_shapes(sup.shape, p.shape)
        except ValueError:
            sb = None
        if sb != p.shape:
            raise ModelError(
                f"support has shape {sup.shape}, which does not broadcast to p_hat's shape "
                f"{p.shape}; give one boolean per outcome (shape (..., {n}))"
            )
    sup_orig = sup

    def validate():
        _validate(p, zz, a, sup_orig, n)

    N = int(np.prod(lead, dtype=np.int64))
    P = np.ascontiguousarray(p.reshape(N, n))
    shared = zz.ndim == 1 or all(d == 1 for d in zz.shape[:-1])
    if shared:
        Z = zz.reshape(n)
    else:
        Z = np.ascontiguousarray(np.broadcast_to(zz, p.shape).reshape(N, n))
    A = np.ascontiguousarray(np.broadcast_to(a, lead).reshape(N))
    if sup is not None:
        if sup.all():
            sup = None
        else:
            sup = np.ascontiguousarray(np.broadcast_to(sup, p.shape).reshape(N, n))
    return P, Z, A, sup, lead, n, validate


# --------------------------------------------------------------------------- sort method
#: All bits of an int64 but the sign bit.
_NO_SIGN = np.int64(np.iinfo(np.int64).max)
#: The smallest subnormal float64 (a probe of the floating-point environment).
_TINY = np.array(5e-324)


def _budget(A: np.ndarray, pk: np.ndarray) -> np.ndarray:
    r"""The mass moved, :math:`\epsilon = \max(0, \min(\alpha/2, 1 - \hat p_k))`.

    The clip at 0 matters when :math:`\hat p_k` exceeds 1 by rounding.
    """
    eps = np.minimum(0.5 * A, 1.0 - pk)
    return np.maximum(eps, 0.0, out=eps)


def _subnormals_ordered() -> bool:
    """False when the CPU treats subnormal inputs as zero (DAZ), which would tie the
    packed keys of zeros and subnormal z; the exact path is used then."""
    return bool(_TINY > 0.0)


@functools.lru_cache(maxsize=64)
def _segment(n: int):
    """Column blocks of :func:`_crossing` for rows of n entries (cached constants).

    Returns the width d (a divisor of n near ``_SEG`` when there is one), the number
    nb of blocks, ``ones(d)``, ``arange(d)``, the strictly upper-triangular (nb, nb)
    matrix of ones (exclusive prefix sums of a row vector) and the upper-triangular
    (d, d) one (inclusive prefix sums).
    """
    d = _SEG
    for c in sorted(range(_SEG // 2, 2 * _SEG + 1), key=lambda c: abs(c - _SEG)):
        if n % c == 0:
            d = c
            break
    nb = -(-n // d)
    consts = (
        np.ones(d),
        np.arange(d),
        np.triu(np.ones((nb, nb)), 1),
        np.triu(np.ones((d, d))),
    )
    for c in consts:
        c.flags.writeable = False
    return (d, nb, *consts)


def _crossing(ps: np.ndarray, eps: np.ndarray):
    """Crossing point of the removal in sorted order.

    ``ps`` (B, n) C-contiguous: nominal masses in decreasing order of z, zero at the
    argmin.  Returns ``j`` (B,): the first position whose cumulative mass exceeds
    ``eps`` (the positions before it lose all their mass; clipped to n - 1) and
    ``part`` (B,): the mass removed at ``j``.

    Long rows are cut into blocks of d columns: the block totals (a BLAS product when
    d divides n) and their exclusive prefix sums locate the block of the crossing,
    and only that block gets a cumulative sum.
    """
    B, n = ps.shape
    rows = np.arange(B)
    if n <= _CUMSUM_LIMIT:
        cs = np.cumsum(ps, axis=1)
        j = np.count_nonzero(cs <= eps[:, None], axis=1)
        np.minimum(j, n - 1, out=j)
        pj = ps[rows, j]
        part = np.clip(eps - (cs[rows, j] - pj), 0.0, pj)
        return j, part
    d, nb, ones_d, ar_d, excl_b, incl_d = _segment(n)
    if n % d == 0:
        bsum = (ps.reshape(B * nb, d) @ ones_d).reshape(B, nb)
    else:
        bsum = np.add.reduceat(ps, np.arange(0, n, d), axis=1)
    bex = bsum @ excl_b  # mass before each block
    # the crossing block: the last one whose preceding mass is <= eps (bex[:, 0] = 0)
    blk = (bex <= eps[:, None]).sum(axis=1) - 1
    rest = eps - bex[rows, blk]  # what remains to remove inside that block
    c0 = blk * d
    cols = (c0 + rows * n)[:, None] + ar_d
    if n % d:  # the last block is short: clip its columns and zero their mass
        inside = cols < (rows * n + n)[:, None]
        np.minimum(cols, (rows * n + n - 1)[:, None], out=cols)
        seg = np.take(ps, cols) * inside
    else:
        seg = np.take(ps, cols)
    cum = seg @ incl_d  # cumulative mass inside the block
    # fully removed columns of the block; at most d - 1 so that j stays in the block
    jj = np.minimum((cum <= rest[:, None]).sum(axis=1), d - 1)
    j = np.minimum(c0 + jj, n - 1)
    jj = j - c0
    pj = seg[rows, jj]
    part = np.clip(rest - (cum[rows, jj] - pj), 0.0, pj)
    return j, part


def _exact_block(pc, z, A, supc, out, val):
    """The sort-based solution of the rows ``pc`` (B, n), ordered by an exact argsort.

    ``z`` is (n,) (shared by every row: one sort) or (B, n) (one sort per row).  The
    argmin k keeps its mass and gains eps; the positions before the crossing (in
    decreasing order of z) lose all theirs, the crossing position loses ``part``.
    Among equal minima k is the last supported position of the order (no support: the
    last position; with a support and one order per row: the lowest index).
    """
    B, n = pc.shape
    rows = np.arange(B)
    shared = z.ndim == 1
    o = np.argsort(-z, axis=-1, kind="stable")  # decreasing z, ties by index
    if supc is None:
        pos_k = np.full(B, n - 1)
        k = np.broadcast_to(o[..., -1], (B,))
    elif shared:
        pos_k = n - 1 - np.argmax(supc[:, o][:, ::-1], axis=1)  # last supported position
        k = o[pos_k]
    else:
        k = np.argmin(np.where(supc, z, np.inf), axis=1)
        pos_k = np.argmax(o == k[:, None], axis=1)
    ps = pc[:, o] if shared else np.take_along_axis(pc, o, axis=1)
    ps[rows, pos_k] = 0.0  # the argmin keeps its mass
    eps = _budget(A, pc[rows, k])
    j, part = _crossing(ps, eps)
    if shared:
        rank = np.empty(n, dtype=np.int64)
        rank[o] = np.arange(n)
        np.multiply(pc, rank[None, :] >= j[:, None], out=out)
        jt = o[j]
    else:
        rank = np.empty((B, n), dtype=np.int64)
        np.put_along_axis(rank, o, np.arange(n, dtype=np.int64)[None, :], axis=1)
        np.multiply(pc, rank >= j[:, None], out=out)
        jt = o[rows, j]
    out[rows, jt] -= part
    out[rows, k] = pc[rows, k] + eps  # k never loses mass (part = 0 if jt == k)
    val[:] = out @ z if shared else _rowdot(out, z)


class _Work:
    """Work buffers and constants of one group of G blocks of B rows (R = G B rows)."""

    def __init__(self, R: int, B: int, n: int):
        self.B = B
        self.bits = max(1, int(R * n - 1).bit_length())
        self.mask = np.int64((1 << self.bits) - 1)
        self.skey = np.empty((R, n))
        self.flat = np.empty((R, n), dtype=np.int64)
        self.ps = np.empty((R, n))
        self.cond = np.empty((R, n), dtype=bool)
        self.sums = np.empty(R)
        self.off = np.arange(R, dtype=np.int64) * n
        # key = (bits of z, low bits cleared) ^ (sign bit | flat index): the sign flip
        # makes the keys decrease with z, the flat index r * n + i fills the low bits
        self.flip = (self.off[:, None] + np.arange(n, dtype=np.int64)) | np.int64(
            np.iinfo(np.int64).min
        )
        self.rows = np.arange(R)
        self.last = np.full(R, n - 1)
        self.tol = row_tolerance(n)
        self.ones = np.ones(n)


_WORK_CACHE = threading.local()


def _work(R: int, B: int, n: int) -> _Work:
    """A :class:`_Work` for this shape, reused across calls of the same thread."""
    cache = getattr(_WORK_CACHE, "items", None)
    if cache is None:
        cache = _WORK_CACHE.items = {}
    key = (R, B, n)
    wk = cache.get(key)
    if wk is None:
        if len(cache) >= 4:  # keep a few shapes (a model's S and the inner loops')
            cache.pop(next(iter(cache)))
        wk = cache[key] = _Work(R, B, n)
    return wk


def _packed_rows(pc, zc, A, supc, out, val, wk: _Work, validate=None):
    r"""Sort-based solution ordered by packed float keys; returns rows to redo exactly.

    The key of outcome i of row r is :math:`-z_{r,i}` with the low ``wk.bits`` bits of
    its float64 pattern replaced by :math:`r n + i`: distinct keys whose order within a
    row is that of :math:`-z`, except between values that agree in all the other bits
    but the sign (the *bucket* of a key; +0.0 and -0.0 share one).  Only two places
    of the order matter: the crossing position j (the first j positions lose all their
    mass) and the argmin (the last position).  A row whose key at j, or at the end,
    shares its bucket with a neighbour (a near-tie or an exact tie there) is returned
    to be solved by the exact path; in every other row the removed set is exactly
    :math:`\{i : z_i > z_{(j)}\}`, so the solution is written by comparing z itself.

    The passes over the data run block by block (B rows, cache-sized); the per-row
    bookkeeping runs once for the whole group, to keep the number of small numpy
    calls low.
    """
    R, n = pc.shape
    rows = wk.rows[:R]
    off = wk.off[:R]
    mask = wk.mask
    skey = wk.skey[:R]
    si = skey.view(np.int64)
    flat = wk.flat[:R]
    ps = wk.ps[:R]
    sums = wk.sums[:R]
    ok = True
    for s in range(0, R, wk.B):
        e = min(R, s + wk.B)
        np.bitwise_and(zc[s:e].view(np.int64), ~mask, out=si[s:e])
        np.bitwise_xor(si[s:e], wk.flip[s:e], out=si[s:e])
        skey[s:e].sort(axis=1)  # decreasing z
        # row sums of p_hat (checked below); reading the block also brings it into
        # the cache for the gather, which is then cheaper than on a cold block
        np.matmul(pc[s:e], wk.ones, out=sums[s:e])
        if validate is not None:
            ok = ok and pc[s:e].min() >= 0.0
        np.bitwise_and(si[s:e], mask, out=flat[s:e])  # r * n + i, decreasing z
        np.take(pc, flat[s:e], mode="wrap", out=ps[s:e])  # masses, decreasing z
    if validate is not None and not (
        ok
        # a non-finite z has a non-finite key, sorted to an end of its row
        and np.isfinite(skey[:, :: max(n - 1, 1)]).all()
        and (np.abs(sums - 1.0) <= wk.tol).all()
        and (supc is None or _chunk_ok(pc, None, supc, wk.tol))
    ):
        validate()
    if supc is None:
        k = flat[:, -1] - off
        pos_k = wk.last[:R]
    else:
        k = np.argmin(np.where(supc, zc, np.inf), axis=1)
        pos_k = np.argmax(flat == (k + off)[:, None], axis=1)
    pk = ps[rows, pos_k]
    ps[rows, pos_k] = 0.0  # the argmin keeps its mass
    eps = _budget(A, pk)
    j, part = _crossing(ps, eps)
    redo = None
    if n > 1:
        # same bucket: equal bits apart from the low ones and the sign (+0.0 and -0.0
        # are equal but differ in the sign bit); a conservative test of a near-tie
        sj = si[rows, j]
        near = (((si[rows, np.maximum(j - 1, 0)] ^ sj) & _NO_SIGN) <= mask) & (j >= 1)
        near |= (((si[rows, np.minimum(j + 1, n - 1)] ^ sj) & _NO_SIGN) <= mask) & (
            j <= n - 2
        )
        if supc is None:
            near |= ((si[:, -1] ^ si[:, -2]) & _NO_SIGN) <= mask
        if near.any():
            redo = np.flatnonzero(near)
    jt = flat[rows, j] - off
    zt = zc[rows, jt]
    cond = wk.cond[:R]
    for s in reversed(range(0, R, wk.B)):  # the last blocks read are still cached
        e = min(R, s + wk.B)
        np.less_equal(zc[s:e], zt[s:e, None], out=cond[s:e])
        np.multiply(pc[s:e], cond[s:e], out=out[s:e])
        val[s:e] = _rowdot(out[s:e], zc[s:e])
    # the partial removal at jt and the mass moved to k (k never loses mass), one
    # term at a time: each partial sum is the value of a sub-distribution (no overflow)
    zk = zc[rows, k]
    gain = pk + eps - out[rows, k]
    val -= part * zt
    val += gain * zk
    out[rows, jt] -= part
    out[rows, k] = pk + eps
    return redo


def _solve_shared(P, z, A, sup, p_out, val, n, block, validate, tol):
    """Sort-based solution when every row shares the same z (one sort per block)."""
    N = P.shape[0]
    for lo in range(0, N, block):
        hi = min(N, lo + block)
        pc = P[lo:hi]
        supc = None if sup is None else sup[lo:hi]
        if validate is not None and not _chunk_ok(pc, None, supc, tol):
            validate()
        _exact_block(pc, z, A[lo:hi], supc, p_out[lo:hi], val[lo:hi])


def _chunk_ok(pc, zc, supc, tol: float) -> bool:
    """Cheap screen of one block (it also brings the block into the cache)."""
    if not pc.min() >= 0.0:
        return False
    if not (np.abs(pc.sum(axis=1) - 1.0) <= tol).all():
        return False
    if zc is not None and not np.isfinite(zc.sum()):
        return False
    return supc is None or not np.max(pc, where=~supc, initial=0.0) > 0.0


def _sort_method(P, Z, A, sup, n, validate=None):
    """Exact sort-based solution of every row; ``validate`` raises on bad input.

    With ``validate``, each block is screened just before it is solved (while it is
    read anyway) and ``validate()`` is called, to raise with the culprit, on a failure.
    """
    N = P.shape[0]
    p_out = np.empty_like(P)
    val = np.empty(N)
    if N == 0:
        return p_out, val
    block = max(1, _BLOCK_ENTRIES // n)
    tol = row_tolerance(n)
    if Z.ndim == 1:
        _solve_shared(P, Z, A, sup, p_out, val, n, block, validate, tol)
        return p_out, val
    group = block * _GROUP
    packed = n <= _PACK_LIMIT and _subnormals_ordered()
    wk = _work(min(group, N), block, n) if packed else None
    step = group if wk is not None else block
    for lo in range(0, N, step):
        hi = min(N, lo + step)
        supc = None if sup is None else sup[lo:hi]
        args = (P[lo:hi], Z[lo:hi], A[lo:hi], supc, p_out[lo:hi], val[lo:hi])
        if wk is not None:
            redo = _packed_rows(*args, wk, validate)  # screens the block as it reads it
        else:
            if validate is not None and not _chunk_ok(P[lo:hi], Z[lo:hi], supc, tol):
                validate()
            redo = np.arange(hi - lo)
        if redo is not None and redo.size:
            r = redo + lo
            o_p, o_v = np.empty((r.size, n)), np.empty(r.size)
            _exact_block(P[r], Z[r], A[r], None if sup is None else sup[r], o_p, o_v)
            p_out[r], val[r] = o_p, o_v
    return p_out, val


# --------------------------------------------------------------------------- LP method
def _lp_problem(m: int):
    """The parametrised LP over m supported outcomes."""
    import cvxpy as cp

    p = cp.Variable(m, nonneg=True)
    t = cp.Variable(m)
    ph = cp.Parameter(m, nonneg=True)
    zz = cp.Parameter(m)
    al = cp.Parameter(nonneg=True)
    cons = [t >= p - ph, t >= ph - p, cp.sum(t) <= al, cp.sum(p) == 1]
    return cp.Problem(cp.Minimize(zz @ p), cons), p, ph, zz, al


def _solver_options(solver: str) -> dict:
    """The options of the LP cross-check (:mod:`rcmdp_exact._solvers`; Clarabel at the
    cross-checks' tighter tolerance)."""
    from .._solvers import CROSS_CHECK_TOL, cvxpy_options

    return cvxpy_options(solver, tol=CROSS_CHECK_TOL if solver == "CLARABEL" else None)


def _lp_method(P, Z, A, sup, n, solver: str, progress):
    """One cvxpy LP per row (:func:`.convex_rows`, with this solver's tolerances); the
    value of row i is :math:`z_i^\top p_i` over its support."""
    N = P.shape[0]
    on_rows = [np.flatnonzero(sup[i]) if sup is not None else np.arange(n) for i in range(N)]

    def setup(i):
        on = on_rows[i]
        prob, p, ph, zz, al = problem_cache("l1", on.size, _lp_problem)
        ph.value = np.clip(P[i, on], 0.0, None)
        zz.value = Z[on] if Z.ndim == 1 else Z[i, on]
        al.value = float(A[i])
        return prob, p, on

    p_out, ok, statuses = convex_rows(N, n, setup, solver, "inner LP",
                                      opts=_solver_options(solver), progress=progress)
    val = np.array([float((Z[on] if Z.ndim == 1 else Z[i, on]) @ p_out[i, on])
                    for i, on in enumerate(on_rows)])
    return p_out, val, ok, statuses


# --------------------------------------------------------------------------- one row
def _one_row(p_hat, z, alpha, support, check: bool):
    """One 1-D row by the compiled row of :mod:`.l1_numba` (the learners' solver), or None.

    Taken when ``p_hat`` and ``z`` are 1-D float64 arrays of one length and ``alpha`` a
    number (a per-step call from Python); anything else, or an input that fails the
    cheap screen, goes through the general path (which names the culprit).
    """
    if not (type(p_hat) is np.ndarray and type(z) is np.ndarray and p_hat.ndim == 1
            and z.shape == p_hat.shape and p_hat.dtype == np.float64
            and z.dtype == np.float64 and p_hat.size > 0
            and isinstance(alpha, float | int) and not isinstance(alpha, bool)):
        return None
    n = p_hat.size
    if support is None:
        sup = np.ones(n, dtype=bool)
    elif type(support) is np.ndarray and support.shape == (n,) and support.dtype == bool:
        sup = support
    else:
        return None
    if check and not (alpha >= 0.0 and np.isfinite(alpha) and p_hat.min() >= 0.0
                      and abs(p_hat.sum() - 1.0) <= row_tolerance(n)
                      and np.isfinite(z.sum()) and not (p_hat[~sup] > 0.0).any()):
        return None
    from .l1_numba import worst_row

    out = np.empty(n)
    worst_row(p_hat, z, sup, float(alpha), out)
    return Result(p=out, value=float(out @ z), method="sort", success=True,
                  status=Status.OPTIMAL, message="exact sort-based solution")


# --------------------------------------------------------------------------- public API
def l1_violation(p, p_hat, alpha, support=None) -> np.ndarray:
    r"""Largest violation of the constraints of the inner problem, per distribution.

    .. math::

        \max\bigl(\max_i(-p_i),\; |\mathbf 1^\top p - 1|,\;
        \|p - \hat p\|_1 - \alpha,\; \max_{i \notin \Sigma} |p_i|\bigr)

    A feasible ``p`` gives a value :math:`\le 0` up to rounding.  Shapes as in
    :func:`worst_case_l1`; returns an array of the leading shape.
    """
    p = np.asarray(p, dtype=np.float64)
    ph = np.asarray(p_hat, dtype=np.float64)
    a = np.asarray(alpha, dtype=np.float64)
    viol = np.maximum(-p.min(axis=-1), np.abs(p.sum(axis=-1) - 1.0))
    viol = np.maximum(viol, np.abs(p - ph).sum(axis=-1) - a)
    if support is not None:
        off = np.where(np.asarray(support, dtype=bool), 0.0, np.abs(p))
        viol = np.maximum(viol, off.max(axis=-1))
    return viol


def worst_case_l1(p_hat, z, alpha, support=None, method: str = "sort", *,
                  check: bool = True, solver: str = "HIGHS",
                  progress: bool | None = None) -> Result:
    r"""Solve the L1 inner problem :math:`\min_p p^\top z` over the ball around ``p_hat``.

    Solves the paper's Eq. "robustvalue" (or "robustlagrangian", depending on ``z``)
    for every distribution of a batch at once; see the module docstring for the
    algorithm and its proof.

    Parameters
    ----------
    p_hat : array (..., n)
        Nominal distributions along the last axis; every leading axis is a batch axis
        (for a model: shape (S, A, S), one distribution per (s, a)).
    z : array (n,) or (..., n)
        The quantity minimised, e.g. :math:`z(s, a, s') = R(s, a, s') + \gamma V(s')`;
        shape (n,) (shared by all rows: sorted once) or broadcastable to ``p_hat``.
    alpha : float or array (...)
        Radius of each ball, >= 0 (values >= 2 allow the whole simplex on the support).
    support : bool array broadcastable to ``p_hat``, optional
        Outcomes that may receive mass (default: all).  ``p_hat`` must be zero outside.
    method : {"sort", "lp"}
        ``"sort"``: the exact :math:`O(n \log n)` algorithm, batched.  ``"lp"``: one
        cvxpy LP per row (slow; a cross-check).
    check : bool
        Validate the input (default).  Internal callers whose input is already valid
        pass ``False``.
    solver : {"HIGHS", "CLARABEL"}
        cvxpy solver of the LP method.
    progress : bool or None
        Show a progress bar over the rows of the LP method (default None: only when
        standard error is a terminal).

    Returns
    -------
    Result
        ``p`` (..., n) worst-case distributions, ``value`` (...) the minimal
        :math:`p^\top z`, ``method``, ``success`` (False only for rows an LP solver
        marked inaccurate), ``status``, ``message``; the LP method adds
        ``lp_status`` (the cvxpy status of every row) and ``violation`` (the numpy
        re-check of :func:`l1_violation`).

    Raises
    ------
    ModelError
        On negative or non-finite alpha, p_hat that is not a distribution on its
        support, non-finite z, or shapes that do not broadcast.

    Examples
    --------
    The hand-checked case of the protocol:

    >>> res = worst_case_l1([0.4, 0.3, 0.1, 0.2], [1.0, 2.0, 5.0, 4.0], alpha=1.0)
    >>> round(float(res.value), 12)
    1.1
    """
    if method == "sort":
        one = _one_row(p_hat, z, alpha, support, check)
        if one is not None:
            return one
    check_choice(method, "method", INNERS,
                 hint=" ('sort': exact, batched; 'lp': one cvxpy LP per row, a cross-check)")
    if method == "lp":
        check_choice(solver, "LP solver", LP_SOLVERS)
    P, Z, A, sup, lead, n, validate = _prepare(p_hat, z, alpha, support)
    if check and (
        method == "lp"
        or not (np.isfinite(A).all() and (A >= 0).all())
        or (Z.ndim == 1 and not np.isfinite(Z).all())
    ):
        validate()  # the LP checks everything first; a bad alpha or z raises here
    if method == "sort":
        # the sort method screens each block of rows as it reads it
        p_out, val = _sort_method(P, Z, A, sup, n, validate if check else None)
        return Result(
            p=p_out.reshape(*lead, n),
            value=val.reshape(lead) if lead else float(val[0]),
            method="sort",
            success=True,
            status=Status.OPTIMAL,
            message="exact sort-based solution",
        )
    p_out, val, ok, statuses = _lp_method(P, Z, A, sup, n, solver, progress)
    viol = l1_violation(p_out, P, A, sup)
    ok = recheck(viol, ok, 1e-8, "inner LP")
    success = bool(ok.all())
    return Result(
        p=p_out.reshape(*lead, n),
        value=val.reshape(lead) if lead else float(val[0]),
        method="lp",
        solver=solver,
        success=success,
        status=Status.OPTIMAL if success else Status.OPTIMAL_INACCURATE,
        message=(
            f"{solver} solved every LP; the answers were re-checked feasible"
            if success
            else f"{int((~ok).sum())} of {ok.size} LPs inaccurate or infeasible on re-check"
        ),
        lp_status=np.array(statuses, dtype=object).reshape(lead) if lead else statuses[0],
        violation=viol.reshape(lead) if lead else float(viol[0]),
    )
