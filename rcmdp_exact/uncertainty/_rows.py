"""Shared machinery of the toolkit's own sets: frozen arrays, the cvxpy loop, selection.

Every sa-rectangular set solves its inner problem row by row (a row is one (s, a) pair
of one batch entry, with n = S outcomes; the batch flow is
:meth:`~rcmdp_exact.uncertainty.base.SARectangularSet.worst_case`).  Here:
:class:`Frozen`, the read-only arrays of the toolkit's sets; :func:`convex_rows`, the
loop of the cvxpy cross-checks (one small problem per row, statuses checked,
OPTIMAL_INACCURATE a warning); :func:`weighted_threshold`, the greedy threshold of a
weighted selection without a full sort.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from .._checks import InputError

__all__ = [
    "Frozen",
    "convex_rows",
    "nonzero2",
    "problem_cache",
    "recheck",
    "rowdot",
    "simplex_violation",
    "weighted_threshold",
]


class Frozen:
    """Mixin of the toolkit's sets: arrays stored once (``_nominal``, ``_support``) and
    read-only, attributes set in ``__init__`` and then frozen, one ``repr``.

    A set names the array its ``repr`` summarises with ``_SUMMARY`` (the attribute of its
    radii or budgets).
    """

    _SUMMARY: str | None = None

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable; build a new set")
        object.__setattr__(self, name, value)

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    @property
    def nominal(self) -> np.ndarray:
        """The nominal kernel (S, A, S), read-only."""
        return self._nominal

    @property
    def support(self) -> np.ndarray:
        """Next states that may receive mass (S, A, S), read-only."""
        return self._support

    @property
    def full_support(self) -> bool:
        """True when every next state may receive mass."""
        return bool(self.support.all())

    def __repr__(self) -> str:
        text = f"<{type(self).__name__} S={self.n_states}, A={self.n_actions}"
        if self._SUMMARY is not None:
            arr = getattr(self, self._SUMMARY)
            text += f", {self._SUMMARY} in [{arr.min():.4g}, {arr.max():.4g}]"
        return text + ">"


def _einsum_rowdot(a, b):
    return np.einsum("ij,ij->i", a, b)


#: Row-wise dot products of two (N, n) arrays (``np.vecdot`` of numpy >= 2).
rowdot = getattr(np, "vecdot", _einsum_rowdot)


# --------------------------------------------------------------------------- cvxpy loop
_CACHE = threading.local()


def problem_cache(kind: str, m: int, build):
    """The parametrised cvxpy problem ``build(m)`` of a kind and size, once per thread."""
    cache = getattr(_CACHE, "items", None)
    if cache is None:
        cache = _CACHE.items = {}
    key = (kind, m)
    prob = cache.get(key)
    if prob is None:
        if len(cache) >= 128:
            cache.pop(next(iter(cache)))
        prob = cache[key] = build(m)
    return prob




def convex_rows(N: int, n: int, setup, solver: str, what: str, *, opts=None,
                progress=None, after=None, failures: str = "raise"):
    """Solve one cvxpy problem per row; returns ``p`` (N, n), ``ok`` (N,) and statuses.

    ``setup(i)`` sets the parameters of row i and returns ``(problem, variable, on)``:
    the problem to solve, its distribution variable and the outcomes it covers.  A
    status OPTIMAL_INACCURATE keeps the answer with a RuntimeWarning and ``ok`` False;
    any other non-optimal status or a solver failure raises an :class:`InputError`.
    ``opts`` replaces the solver's options (:func:`rcmdp_exact._solvers.cvxpy_options`);
    ``progress`` shows a bar over the rows (None: when standard error is a terminal);
    ``after(i, problem)`` is called after each solve (to read the problem's duals).
    ``failures="mark"`` marks a row whose solver failed or ended in another status
    ``ok`` False (its ``p`` zero) instead of raising: the repair of a row that is judged
    afterwards.
    """
    import cvxpy as cp

    from .._progress import progress_default, tqdm

    if solver == "HIGHS":
        from .._solvers import silence_highs_banner

        silence_highs_banner()
    from .._solvers import cvxpy_options

    opts = cvxpy_options(solver) if opts is None else opts
    p_out = np.zeros((N, n))
    ok = np.ones(N, dtype=bool)
    statuses = []
    for i in tqdm(range(N), desc=what, disable=not progress_default(progress), leave=False):
        prob, var, on = setup(i)
        try:
            with warnings.catch_warnings():  # cvxpy's own note on inaccurate answers
                warnings.filterwarnings("ignore", "Solution may be inaccurate", UserWarning)
                prob.solve(**opts)
        except cp.error.SolverError as exc:
            if failures == "mark":
                ok[i] = False
                statuses.append("solver_error")
                continue
            raise InputError(
                f"the {what} of row {i} failed in solver {solver} ({exc}); use "
                f"method='sort' (the exact solver)"
            ) from None
        status = prob.status
        statuses.append(status)
        if status == cp.OPTIMAL_INACCURATE:
            warnings.warn(
                f"{what} of row {i}: solver {solver} returned OPTIMAL_INACCURATE; the "
                f"answer is kept but marked success=False",
                RuntimeWarning,
                stacklevel=4,
            )
            ok[i] = False
        elif status != cp.OPTIMAL and failures == "mark":
            ok[i] = False
            continue
        elif status != cp.OPTIMAL:
            raise InputError(
                f"the {what} of row {i} ended with status {status!r} in solver {solver}; "
                f"the inner problem is always feasible (p = the nominal row), so the input "
                f"is likely badly scaled: check z and the set's parameters, or use "
                f"method='sort'"
            )
        p_out[i, on] = np.asarray(var.value, dtype=float)
        if after is not None:
            after(i, prob)
    return p_out, ok, statuses


def recheck(viol: np.ndarray, ok: np.ndarray, tol: float, what: str) -> np.ndarray:
    """Mark rows whose re-checked constraint violation exceeds ``tol`` (with a warning)."""
    bad = viol > tol
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        warnings.warn(
            f"{what} of row {i}: the solver's answer violates the constraints by "
            f"{viol[i]:.2e} (> {tol:.0e}) when re-checked in numpy; marked success=False",
            RuntimeWarning,
            stacklevel=4,
        )
    return ok & ~bad


def simplex_violation(p: np.ndarray, sup: np.ndarray) -> np.ndarray:
    """Per row: the largest of -min(p), |sum(p) - 1| and the mass off the support."""
    viol = np.maximum(-p.min(axis=1), np.abs(p.sum(axis=1) - 1.0))
    return np.maximum(viol, np.where(sup, 0.0, np.abs(p)).max(axis=1))


def nonzero2(mask: np.ndarray):
    """``np.nonzero`` of a C-contiguous 2-D mask (rows, cols), through the much faster
    flat version."""
    flat = np.flatnonzero(mask)
    rows = flat // mask.shape[1]
    return rows, flat - rows * mask.shape[1]


# --------------------------------------------------------------------------- selection
#: A bracket with at most this many keys left is finished by a sort.
_SMALL = 128
#: Rounds of probes before whatever is left in the bracket is sorted.
_ROUNDS = 6
#: Keys sampled per row to place the first bracket.
_SAMPLE = 64


class _Bracket:
    """The bracket ``lo < kappa <= hi`` of the rows ``act`` of a selection, with the
    weight ``f`` and the number ``k`` of keys <= each end."""

    def __init__(self, key, c, T, act, lo, f_lo, k_lo, hi, f_hi, k_hi):
        self.key, self.c, self.T, self.act = key, c, T[act], act
        self.lo, self.f_lo, self.k_lo = lo, f_lo, k_lo
        self.hi, self.f_hi, self.k_hi = hi, f_hi, k_hi

    def probe(self, idx, x):
        """Weigh the keys <= x in the rows ``idx`` (of ``act``) and move an end to x."""
        ok = (x > self.lo[idx]) & (x < self.hi[idx])  # adjacent floats cannot be split
        idx, x = idx[ok], x[ok]
        if idx.size == 0:
            return
        N = self.key.shape[0]
        r = self.act[idx]
        if idx.size * 2 > N:
            xf = np.full(N, -np.inf)
            xf[r] = x
            m = self.key <= xf[:, None]
            fx = rowdot(m, self.c)[r]
            kx = np.count_nonzero(m, axis=1)[r]
        else:
            m = self.key[r] <= x[:, None]
            fx = rowdot(m, self.c[r])
            kx = np.count_nonzero(m, axis=1)
        up = fx >= self.T[idx]
        iu, il = idx[up], idx[~up]
        self.hi[iu], self.f_hi[iu], self.k_hi[iu] = x[up], fx[up], kx[up]
        self.lo[il], self.f_lo[il], self.k_lo[il] = x[~up], fx[~up], kx[~up]

    def wide(self):
        return np.flatnonzero(self.k_hi - self.k_lo > _SMALL)


def _threshold_by_sort(key, c, T, finite):
    """:func:`weighted_threshold` of short rows: one sort of every row."""
    N, n = key.shape
    rows = np.arange(N)
    o = np.argsort(key, axis=1)
    sk = np.take_along_axis(key, o, axis=1)
    cum = np.take_along_axis(c, o, axis=1)
    if not finite:
        cum *= sk < np.inf
    np.cumsum(cum, axis=1, out=cum)
    total = cum[:, -1]
    pos = np.minimum(np.count_nonzero(cum < T[:, None], axis=1), n - 1)
    kappa = sk[rows, pos]
    n_lt = np.count_nonzero(sk < kappa[:, None], axis=1)
    eq = sk == kappa[:, None]
    n_le = n_lt + np.count_nonzero(eq, axis=1)
    below = np.where(n_lt > 0, cum[rows, np.maximum(n_lt - 1, 0)], 0.0)
    tied = cum[rows, n_le - 1] - below
    none = T <= 0
    every = (T >= total) & ~none
    kappa[none], below[none], tied[none] = -np.inf, 0.0, 0.0
    kappa[every], below[every], tied[every] = np.inf, total[every], 0.0
    eq[none | every] = False
    er, ec = nonzero2(eq)
    return kappa, below, tied, (er, o[er, ec])


def _spread_rows(values, act, N, fill):
    """``values`` of the rows ``act`` spread over all N rows (``fill`` elsewhere)."""
    if act.size == N:
        return values
    out = np.full(N, fill)
    out[act] = values
    return out


def weighted_threshold(key: np.ndarray, c: np.ndarray, target: np.ndarray, *,
                       total=None, finite: bool = False, bounds=None):
    r"""The greedy threshold of every row: take keys in increasing order until the
    weights taken reach ``target``.

    For rows of ``key`` (N, n) (+inf marks an entry that is never taken), weights
    ``c`` (N, n) >= 0 and ``target`` (N,), returns ``kappa`` (N,), ``below`` (N,),
    ``tied`` (N,) and the positions ``(rows, cols)`` of the entries equal to kappa,
    with

    .. math::

        \text{below} = \sum_{\text{key} < \kappa} c \le \text{target} \le
        \text{below} + \text{tied}, \qquad \text{tied} = \sum_{\text{key} = \kappa} c,

    so the greedy takes every entry with key < kappa, the fraction
    (target - below) / tied of those equal to kappa and nothing else.  ``kappa`` is
    -inf when the target is <= 0 and +inf when it reaches the total weight of the
    finite keys (everything is taken).  ``total`` (N,) may give that total weight, and
    ``finite=True`` says that every key is finite (both save a pass).

    ``bounds = (lo, f_lo, hi, f_hi)`` (each (N,)) gives a bracket known beforehand:
    ``f_lo`` and ``f_hi`` the weights of the keys <= ``lo`` and <= ``hi``.  The target
    is then taken as at most ``f_hi``, and a row whose target is at most ``f_lo``
    takes exactly the keys <= ``lo`` (kappa just above lo, tied = 0).

    The search needs no full sort.  A bracket ``lo < kappa <= hi`` of key values is
    placed from a sorted sample of each row, then narrowed around the linear
    interpolation of the cumulative weight (two probes per round, each one comparison
    and one masked sum per row) until at most ``_SMALL`` keys remain inside, or for at
    most ``_ROUNDS`` rounds; the keys left inside are then sorted, which makes the
    answer exact whatever the rounds achieved.
    """
    N, n = key.shape
    T = np.asarray(target, dtype=np.float64)
    if bounds is not None:
        lo0, f_lo0, hi0, f_hi0 = (np.asarray(b, dtype=np.float64) for b in bounds)
        T = np.minimum(T, f_hi0)
        low = T <= f_lo0  # nothing beyond the keys <= lo

        def settle(kappa, below, tied, ties):
            every = kappa > hi0  # past hi by rounding: all the keys <= hi
            kappa[every] = np.nextafter(hi0[every], np.inf)
            below[every] = f_hi0[every]
            kappa[low] = np.nextafter(lo0[low], np.inf)
            below[low] = f_lo0[low]
            tied[every | low] = 0.0
            keep = ~(every | low)[ties[0]]
            return kappa, below, tied, (ties[0][keep], ties[1][keep])
    if n <= _SMALL:
        out = _threshold_by_sort(key, c, T, finite)
        return out if bounds is None else settle(*out[:3], out[3])
    kappa = np.full(N, -np.inf)
    below = np.zeros(N)
    tied = np.zeros(N)
    if bounds is None:
        if finite:
            count = np.full(N, n, dtype=np.int64)
            total = c.sum(axis=1) if total is None else total
            kmax = key.max(axis=1)
        else:
            fin = key < np.inf
            count = np.count_nonzero(fin, axis=1)
            total = rowdot(fin, c) if total is None else total
            kmax = np.max(key, axis=1, where=fin, initial=-np.inf)
        take_all = (T >= total) & (T > 0)
        kappa[take_all] = np.inf
        below[take_all] = total[take_all]
        act = np.flatnonzero((T > 0) & ~take_all)
        if act.size == 0:
            return kappa, below, tied, (np.zeros(0, dtype=np.int64),) * 2
        br = _Bracket(key, c, T, act, np.nextafter(key.min(axis=1)[act], -np.inf),
                      np.zeros(act.size), np.zeros(act.size, dtype=np.int64), kmax[act],
                      total[act], count[act])
    else:
        act = np.flatnonzero(~low)
        if act.size == 0:
            return settle(kappa, below, tied, (np.zeros(0, dtype=np.int64),) * 2)
        # the numbers of keys at the ends are unknown: 0 and n until the first probes
        lo = lo0[act].copy()
        open_end = np.flatnonzero(np.isinf(lo))  # below every key (f_lo = 0)
        if open_end.size:
            lo[open_end] = np.nextafter(key[act[open_end]].min(axis=1), -np.inf)
        br = _Bracket(key, c, T, act, lo, f_lo0[act].copy(),
                      np.zeros(act.size, dtype=np.int64), hi0[act].copy(), f_hi0[act].copy(),
                      np.full(act.size, n, dtype=np.int64))
        total = f_hi0
    # a first bracket from a sorted sample of evenly spaced columns
    wide = br.wide()
    if wide.size and n > 2 * _SAMPLE:
        cols = np.linspace(0, n - 1, _SAMPLE).astype(np.int64)
        r = act[wide]
        sk = key[r[:, None], cols]
        sc = np.where(sk <= br.hi[wide, None], c[r[:, None], cols], 0.0)
        o = np.argsort(sk, axis=1)
        sk = np.take_along_axis(sk, o, axis=1)
        cum = np.cumsum(np.take_along_axis(sc, o, axis=1), axis=1)
        scale = np.divide(total[r], cum[:, -1], out=np.zeros(r.size), where=cum[:, -1] > 0)
        i = np.count_nonzero(cum * scale[:, None] < br.T[wide, None], axis=1)
        ar = np.arange(r.size)
        # two standard deviations of the sample's estimate of the crossing rank
        q = np.clip(i / _SAMPLE, 0.0, 1.0)
        d = np.ceil(2.0 * np.sqrt(q * (1.0 - q) * _SAMPLE)).astype(np.int64) + 1
        x1 = sk[ar, np.clip(i - d, 0, _SAMPLE - 1)]
        x2 = sk[ar, np.clip(i + d, 0, _SAMPLE - 1)]
        br.probe(wide, np.where(i - d >= 0, x1, -np.inf))
        br.probe(wide, np.where(i + d < _SAMPLE, x2, np.inf))
    for _ in range(_ROUNDS):
        wide = br.wide()
        if wide.size == 0:
            break
        # linear interpolation of the cumulative weight inside the bracket, and a probe
        # on each side of it, two standard deviations of a random rank away
        lo, hi = br.lo[wide], br.hi[wide]
        f_lo, f_hi = br.f_lo[wide], br.f_hi[wide]
        k = (br.k_hi[wide] - br.k_lo[wide]).astype(np.float64)
        t = np.clip((br.T[wide] - f_lo) / (f_hi - f_lo), 0.0, 1.0)
        half = np.minimum(0.5, (2.0 * np.sqrt(k) + 2.0) / k)
        br.probe(wide, lo + (hi - lo) * np.maximum(t - half, 0.0))
        br.probe(wide, lo + (hi - lo) * np.minimum(t + half, 1.0))
    # rows still wide: sorted whole; the others: the keys left inside (lo, hi], sorted
    wide = (br.k_hi - br.k_lo) > 2 * _SMALL
    ties_r, ties_c = [], []
    if wide.any():
        w = act[wide]
        kw_, bw, tw, (er, ec) = _threshold_by_sort(key[w], c[w], T[w], finite)
        kappa[w], below[w], tied[w] = kw_, bw, tw
        ties_r.append(w[er])
        ties_c.append(ec)
    keep = ~wide
    if keep.any():
        a_n = act[keep]
        lo, hi, f_lo, Ta = br.lo[keep], br.hi[keep], br.f_lo[keep], br.T[keep]
        if a_n.size == N:
            inside = (key > lo[:, None]) & (key <= hi[:, None])
        else:
            inside = (key > _spread_rows(lo, a_n, N, np.inf)[:, None]) & (
                key <= _spread_rows(hi, a_n, N, -np.inf)[:, None])
        cnt = np.count_nonzero(inside, axis=1)
        width = max(int(cnt.max()), 1)
        flat = np.flatnonzero(inside)  # positions r n + i, row by row
        rr = flat // n
        cc = flat - rr * n
        dest = np.arange(flat.size) + (rr * width - (np.cumsum(cnt) - cnt)[rr])
        sk = np.full(N * width, np.inf)
        sc = np.zeros(N * width)
        scol = np.zeros(N * width, dtype=np.int64)
        sk[dest] = np.take(key, flat)
        sc[dest] = np.take(c, flat)
        scol[dest] = cc
        sk, sc, scol = (a.reshape(N, width) for a in (sk, sc, scol))
        if a_n.size < N:
            sk, sc, scol = sk[a_n], sc[a_n], scol[a_n]
        cnt = cnt[a_n]
        o = np.argsort(sk, axis=1)
        sk = np.take_along_axis(sk, o, axis=1)
        sc = np.take_along_axis(sc, o, axis=1)
        scol = np.take_along_axis(scol, o, axis=1)
        cum = np.cumsum(sc, axis=1) + f_lo[:, None]
        pos = np.clip(np.count_nonzero(cum < Ta[:, None], axis=1), 0, np.maximum(cnt - 1, 0))
        ar = np.arange(a_n.size)
        kap = sk[ar, pos]
        eq = sk == kap[:, None]
        n_lt = np.count_nonzero(sk < kap[:, None], axis=1)
        n_le = n_lt + np.count_nonzero(eq, axis=1)
        bel = np.where(n_lt > 0, cum[ar, np.maximum(n_lt - 1, 0)], f_lo)
        kappa[a_n] = kap
        below[a_n] = bel
        tied[a_n] = cum[ar, np.maximum(n_le - 1, 0)] - bel
        er, ec = nonzero2(eq)
        ties_r.append(a_n[er])
        ties_c.append(scol[er, ec])
    ties = (np.concatenate(ties_r), np.concatenate(ties_c))
    return (kappa, below, tied, ties) if bounds is None else settle(kappa, below, tied, ties)
