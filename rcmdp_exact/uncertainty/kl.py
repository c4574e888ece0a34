r"""The KL ball and its inner problem, solved through its one-dimensional dual.

A :class:`KLBall` bounds the relative entropy from the nominal row,

.. math::

    \mathcal P_{s,a} = \{ p \in \Delta : \mathrm{KL}(p \,\|\, \hat p) =
    \textstyle\sum_i p_i \log(p_i / \hat p_i) \le r(s, a) \},

so p is absolutely continuous with respect to :math:`\hat p`: the support of a row is
where the nominal is positive.

**The dual** (Nilim and El Ghaoui 2005).  For one row (q the nominal, z the values),

.. math::

    \min_{p \in \mathcal P} p^\top z = \max_{\beta > 0}\; -\beta \log \sum_i q_i
    e^{-z_i / \beta} - \beta r ,

and the minimiser is the tilted distribution :math:`p_\eta \propto q\, e^{-\eta z}`
with :math:`\eta = 1/\beta^*`.  With :math:`y = z - \min_{q > 0} z \ge 0` (stable: every
exponent is <= 0), the derivative of the dual objective in :math:`\beta` is
:math:`\mathrm{KL}(p_\eta \| q) - r` and :math:`\mathrm{KL}(p_\eta \| q) = -\eta\,
E_{p_\eta}[y] - \log E_q[e^{-\eta y}]` increases in :math:`\eta` from 0 to
:math:`-\log q_0`, where :math:`q_0` is the nominal mass on the minimisers of z.  So:

* :math:`r = 0`, or z constant on the support: p = q (value :math:`q^\top z`);
* :math:`r \ge -\log q_0`: the limit :math:`\beta \to 0`, p is q restricted to the
  minimisers of z and renormalised (its KL is exactly :math:`-\log q_0`), value
  :math:`\min z`;
* otherwise :math:`\eta^*` is the root of :math:`\mathrm{KL}(p_\eta \| q) = r`, found
  by Newton's method on :math:`\log \mathrm{KL}` as a function of :math:`\log \eta`
  (:math:`d\mathrm{KL}/d\eta = \eta \operatorname{Var}_{p_\eta}(y)`), safeguarded as in
  ``rtsafe`` (:func:`_search`).

Skewed rows (masses from 1e-15 to 1e-2 beside large ones, radii from 1e-15 to just
below :math:`-\log q_0`) are solved exactly: the family :math:`p_\eta` lives in the log
domain (log-sum-exp for :math:`\eta > 1`, ``log1p`` of :math:`E_q[e^{-\eta y} - 1]`
below), the divergence of a tiny radius is a sum of nonnegative terms
(:func:`_qphi`), a row is taken as :math:`q / \sum_i q_i` exactly, and
:math:`-\log q_0` comes from the smaller of the masses on and off the minimisers.

**Certificate.**  Each evaluation gives the dual bound
:math:`\min z - (\log E_q[e^{-\eta y}] + r)/\eta` (weak duality: a lower bound for any
:math:`\eta > 0`); the returned row is the feasible iterate of least value, and
``value - dual`` (``gap``) bounds its error.  A row is solved when its gap is at most
:data:`GAP_CERTIFIED` of its value range plus the rounding floor of the value; a row
that is not is solved again by the exponential-cone program and accepted when that
answer is feasible and within :data:`GAP_REPAIRED` of the dual bound at the conic
solver's own multiplier (``repaired``); otherwise it is reported failed
(``row_success``), never passed on.

All rows of a batch iterate together (vectorised, each iteration a few passes over
the active rows).

``method="lp"`` solves the exponential-cone program
``min z @ p  s.t.  sum(rel_entr(p, q)) <= r, sum(p) == 1`` with cvxpy and CLARABEL
(tolerances 1e-10), one row at a time, and re-checks the answer in numpy (KL and
simplex violations up to 1e-7 accepted).  Conic solvers are accurate to about 1e-9
here for radii of 1e-4 and more, but only to about 1e-5 as the radius goes to 0 (the
feasible set shrinks to a point; CLARABEL then often reports OPTIMAL_INACCURATE, which
gives a warning and ``success=False``); a radius of exactly 0 has the single feasible
point :math:`\hat p`, returned without calling the solver.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._checks import check_choice, check_real, readonly
from .._result import Result
from ._counts import check_pseudo_count, count_frequencies, hoeffding_box
from ._rows import (
    Frozen,
    convex_rows,
    problem_cache,
    recheck,
    rowdot,
    simplex_violation,
)
from .base import (
    SARectangularSet,
    check_strategy,
    kind_delta,
    kind_radius,
    nominal_kernel,
    radii,
    tile,
)
from .interval import worst_case_interval

__all__ = ["KIND", "KLBall", "estimate_kl_ball", "kl_divergence", "kl_dual_value",
           "worst_case_kl"]

#: The kind of this file's set (``--set kl``; read by :mod:`.kinds`).
KIND = "kl"
#: What ``--radius R`` is for the set around a model (read by :mod:`.kinds`).
RADIUS = "the KL radius"
#: The supports of the set around a model (read by :mod:`.kinds`): a KL ball never leaves
#: the support of its centre.
AROUND_SUPPORTS = ("nominal",)

#: Largest number of iterations of the safeguarded Newton search (each either a Newton
#: step or a halving of the bracket in log(eta); 60 halvings reach the float spacing).
_MAX_STEPS = 200
#: The largest log(eta) searched (eta = 1e300; y is scaled to [0, 1]).
_T_MAX = 690.0
#: Stop a row once its certified gap (primal value - dual bound) is at most this, in
#: units of the row's value range max(z) - min(z) on the support.
_GAP_STOP = 1e-13
#: A row is certified (``converged``) when its gap is at most this, in the same units.
GAP_CERTIFIED = 1e-10


def kl_divergence(p, q) -> np.ndarray:
    r""":math:`\mathrm{KL}(p \| q) = \sum_i p_i \log(p_i / q_i)` along the last axis.

    Terms with :math:`p_i \le 0` count 0; a positive :math:`p_i` where
    :math:`q_i = 0` gives inf.  Each term is :math:`p_i (\log p_i - \log q_i)`, so
    masses down to the smallest subnormal float keep their exact contribution.

    >>> float(kl_divergence([0.5, 0.5], [0.25, 0.75])).__round__(12)
    0.143841036226
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    pos = p > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pos, p * (np.log(np.where(pos, p, 1.0)) - np.log(q)), 0.0)
    return terms.sum(axis=-1)


def _logsumexp_rows(W):
    """log sum_i exp(W[:, i]) of every row (entries may be -inf; no row is all -inf)."""
    m = W.max(axis=1)
    return m + np.log(np.exp(W - m[:, None]).sum(axis=1))


def kl_dual_value(p_hat, z, radius, beta) -> np.ndarray:
    r"""The dual objective :math:`-\beta \log \sum_i \hat p_i e^{-z_i/\beta} - \beta r`
    of every row at a given :math:`\beta > 0`: a lower bound on the worst case.

    Computed in the log domain with the minimum of z on the support subtracted (no
    overflow, and no underflow of tiny nominal masses).  Leading axes broadcast.
    """
    Q = np.atleast_2d(np.asarray(p_hat, dtype=np.float64))
    Z = np.atleast_2d(np.asarray(z, dtype=np.float64))
    Q, Z = np.broadcast_arrays(Q, Z)
    shape = Q.shape[:-1]
    Q, Z = Q.reshape(-1, Q.shape[-1]), Z.reshape(-1, Z.shape[-1])
    b = np.broadcast_to(np.asarray(beta, dtype=np.float64), shape).reshape(-1)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), shape).reshape(-1)
    sup = Q > 0
    zmin = np.min(Z, axis=-1, where=sup, initial=np.inf)
    with np.errstate(divide="ignore"):
        W = np.where(sup, np.log(Q) - (Z - zmin[:, None]) / b[:, None], -np.inf)
    out = zmin - b * _logsumexp_rows(W) - b * r
    return out.reshape(shape)


def _qphi(q, u, e1):
    r""":math:`q\,\varphi(u)` with :math:`\varphi(u) = u e^u - e^u + 1 \ge 0` and
    ``e1`` = expm1(u): the terms of :math:`\mathrm{KL}(p \| q) = \sum_i q_i
    \varphi(\log(p_i / q_i))` (p and q distributions), each >= 0, so that a divergence
    of 1e-15 is not lost in the cancellation of :math:`-\eta\,E_p[y] - \log Z`.  The
    closed form :math:`u(1 + e_1) - e_1` for :math:`|u| \ge 0.05` (it loses at most a
    factor 40 to cancellation there), the series :math:`\sum_{k \ge 2} (k-1) u^k / k!`
    (ten terms, relative error below 1e-17) below."""
    out = q * (u * (1.0 + e1) - e1)
    small = np.abs(u) < 0.05
    if small.any():
        us = u[small]
        acc = np.zeros_like(us)
        for k in range(11, 2, -1):
            acc = (acc + (k - 1) / math.factorial(k)) * us
        out[small] = q[small] * (acc + 0.5) * us * us
    return out


class _Rows:
    r"""The tilted family :math:`p_\eta \propto q\, e^{-\eta y}` of a block of rows.

    ``Q`` (M, n) are the nominal rows as given: the problem is posed for
    :math:`q / \sum_i q_i` in exact arithmetic (a float row sums to 1 only up to
    rounding, and at radii near 1e-15 that rounding would move the answer), which
    enters only through :math:`\log \sum_i q_i`.  ``Y`` (M, n) are the values scaled to
    [0, 1] with 0 at the minimum (0 off the support)."""

    def __init__(self, Q, Y):
        self.Q, self.Y = Q, Y
        self.qsum = Q.sum(axis=1)
        self.Qn = Q / self.qsum[:, None]
        self._lq = None

    @property
    def LQ(self):
        """log q - log sum(q) (-inf off the support), computed when first needed."""
        if self._lq is None:
            with np.errstate(divide="ignore"):
                self._lq = np.log(self.Qn)
        return self._lq

    def at(self, idx, eta):
        r"""For the rows ``idx`` at ``eta``: KL(p_eta || q), the mean and variance of y
        under p_eta, log Z = log E_q[exp(-eta y)] and p_eta itself.

        log Z by log1p of :math:`\sum_i q_i (e^{-\eta y_i} - 1) / \sum_i q_i` while
        :math:`\eta \le 1` (accurate as Z tends to 1), by log-sum-exp beyond (accurate
        as the masses that remain become tiny).  KL as :math:`-\eta E_p[y] - \log Z`,
        or by :func:`_qphi` (no cancellation) on the rows where that difference keeps
        fewer than eight digits."""
        M = self.Q.shape[0]
        if M // 2 < idx.size < M:  # most rows: compute them all (no copies), keep idx
            out = self.at(np.arange(M), np.bincount(idx, eta, M) + (
                np.bincount(idx, minlength=M) == 0))
            kl, mu, var, lz, P = out
            return kl[idx], mu[idx], var[idx], lz[idx], P[idx]
        full = idx.size == M
        Q, Y, Qn, qsum = (self.Q, self.Y, self.Qn, self.qsum) if full else (
            self.Q[idx], self.Y[idx], self.Qn[idx], self.qsum[idx])
        EY = np.multiply(Y, -eta[:, None])
        P = np.empty_like(EY)
        lz = np.empty(eta.size)
        near = eta <= 1.0
        for rows, is_near in ((near, True), (~near, False)):
            if not rows.any():
                continue
            every = rows.all()
            sub = EY if every else EY[rows]
            if is_near:  # p = q (1 + expm1(-eta y)) / Z, Z = 1 + E_q[expm1(-eta y)]
                E = np.expm1(sub)
                z1 = rowdot(Q if every else Q[rows], E) / (qsum if every else qsum[rows])
                lzr = np.log1p(z1)
                E += 1.0
                E *= Qn if every else Qn[rows]
                E /= (1.0 + z1)[:, None]
            else:  # log-sum-exp over log q - eta y
                E = sub + (self.LQ if full else self.LQ[idx])[rows]
                m = E.max(axis=1)
                E -= m[:, None]
                np.exp(E, out=E)
                tot = E.sum(axis=1)
                lzr = m + np.log(tot)
                E /= tot[:, None]
            if every:
                P, lz = E, lzr
            else:
                P[rows], lz[rows] = E, lzr
        mu = rowdot(P, Y)
        D = np.subtract(Y, mu[:, None], out=EY)
        D *= D
        var = rowdot(P, D)
        kl = -eta * mu - lz
        fine = np.abs(kl) < 1e-8 * (eta * mu + np.abs(lz))
        if fine.any():
            Uf = (self.Y[idx[fine]] * -eta[fine, None]) - lz[fine, None]
            kl[fine] = _qphi(Qn[fine], Uf, np.expm1(Uf)).sum(axis=1)
        return np.maximum(kl, 0.0), mu, var, lz, P


def _search(fam: _Rows, r: np.ndarray):
    r"""The certified root :math:`\eta^*` of :math:`\mathrm{KL}(p_\eta \| q) = r` of every
    row (module docstring).

    Newton's method on :math:`f(t) = \log \mathrm{KL}(p_{e^t}) - \log r`, increasing in
    :math:`t = \log \eta`, safeguarded as in ``rtsafe``: a bracket [lo, hi] with f <= 0
    at lo (a feasible point) and f > 0 at hi, and a halving of the bracket (or a growing
    step while one end is open) whenever a Newton step leaves it or does not at least
    halve the step before last.  From an infeasible point the step aims just left of
    the root, so that the root met from either side gives a feasible iterate.  Every
    evaluation adds a dual bound; a row stops when the value of its best feasible
    iterate is within ``_GAP_STOP`` of the best dual bound, or its bracket is one float
    wide.

    Returns (p, gap, dual): ``p`` the tilted distribution at the feasible iterate of
    least value (KL <= r as computed), ``dual`` the best dual bound met (scaled units,
    relative to min z) and ``gap`` = E_p[y] - dual >= 0, a bound on the error of the
    value.
    """
    M = r.size
    # KL(eta) ~ eta^2 Var_q(y) / 2 for small eta: the start (at least sqrt(8 r), which is
    # feasible in exact arithmetic as KL(eta) <= eta^2 / 8 for y in [0, 1]); eta = 0
    # (p = q) is feasible in any
    mean = rowdot(fam.Qn, fam.Y)
    D = fam.Y - mean[:, None]
    D *= D
    var_q = rowdot(fam.Qn, D)
    del D
    t = 0.5 * np.log(8.0 * r / np.clip(4.0 * var_q, np.finfo(float).tiny, 1.0))
    t_min = 0.5 * np.log(8.0 * r) - 1.0  # every iterate stays above (the root is above)
    t_lo = np.full(M, -np.inf)
    t_hi = np.full(M, np.inf)
    dx_old = np.full(M, np.inf)  # the step before last (rtsafe's test)
    dx = np.full(M, np.inf)
    best_dual = np.full(M, -np.inf)
    prim = mean.copy()  # E_p[y] at the best feasible point met
    p_out = fam.Qn.copy()
    expand = np.ones(M)  # step of the search for an open end of the bracket
    act = np.arange(M)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for _ in range(_MAX_STEPS):
            if act.size == 0:
                break
            ta = t[act]
            eta = np.exp(ta)
            kl, mu, var, lz, P = fam.at(act, eta)
            ra = r[act]
            best_dual[act] = np.maximum(best_dual[act], -(lz + ra) / eta)
            feas = kl <= ra
            t_lo[act] = np.where(feas, np.maximum(t_lo[act], ta), t_lo[act])
            t_hi[act] = np.where(feas, t_hi[act], np.minimum(t_hi[act], ta))
            better = feas & (mu <= prim[act])
            prim[act[better]] = mu[better]
            if act.size == M and better.all():
                p_out = P
            elif better.any():
                p_out[act[better]] = P[better]
            gap = prim[act] - best_dual[act]
            lo, hi = t_lo[act], t_hi[act]
            both = np.isfinite(lo) & np.isfinite(hi)
            closed = both.copy()
            closed[both] = (hi - lo)[both] <= 4e-16 * np.maximum(1.0, np.abs(hi[both]))
            stop = (gap <= _GAP_STOP) | closed
            # KL still below r at the largest eta: r is the limit -log q0 up to rounding
            stop |= feas & (ta >= _T_MAX)
            # the Newton step, aimed just left of the root from an infeasible point
            f = np.log(kl) - np.log(ra)
            new = ta - f / (eta * eta * var / kl)
            new = np.where(feas, new, new - 1e-14 * np.maximum(1.0, np.abs(ta)))
            step = new - ta
            ok = np.isfinite(new) & (new > lo) & (new < hi) & \
                (np.abs(step) <= 0.5 * np.abs(dx_old[act]))
            half = np.where(both, 0.5 * (lo + hi),
                            np.where(np.isfinite(hi), hi - expand[act],
                                     np.minimum(lo + expand[act], _T_MAX)))
            expand[act] = np.where(~ok & ~both, 2.0 * expand[act], expand[act])
            nxt = np.where(ok, new, half)
            nxt = np.where(nxt == ta, half, nxt)  # a stuck step halves instead
            nxt = np.clip(nxt, t_min[act], _T_MAX)
            dx_old[act] = np.where(ok | both, dx[act], np.inf)
            dx[act] = np.abs(nxt - ta)
            t[act] = nxt
            act = act[~stop]
    gap = np.maximum(prim - best_dual, 0.0)
    return p_out, gap, best_dual


def worst_case_kl(p_hat, z, radius) -> Result:
    r"""The exact worst case of every row: :math:`\min\{p^\top z :
    \mathrm{KL}(p \| \hat p) \le r\}` (see the module docstring).

    ``p_hat`` and ``z`` are (N, n) float arrays of valid rows (z finite), ``radius``
    (N,) (no checks here: :class:`KLBall` validates its input).  Returns ``p`` (N, n),
    ``value`` (N,) (:math:`p^\top z` of the returned p), ``dual`` (N,) (a lower bound
    on the minimum by weak duality; equal to the value in the two limit cases),
    ``gap`` (N,) = value - dual, the certified bound on the error of the value, and
    ``converged`` (N,) bool: the gap is at most :data:`GAP_CERTIFIED` times the row's
    value range max(z) - min(z) on the support, plus the rounding floor of the value
    itself, 8 n (eps max|z| + the subnormal spacing 4.9e-324) (a row of near ties
    cannot be certified below it).

    >>> res = worst_case_kl([[0.5, 0.5]], [[0.0, 1.0]], [np.log(2.0)])  # the limit case
    >>> res.p.tolist(), float(res.value[0])
    ([[1.0, 0.0]], 0.0)
    """
    Q = np.ascontiguousarray(p_hat, dtype=np.float64)
    Z = np.ascontiguousarray(z, dtype=np.float64)
    r = np.asarray(radius, dtype=np.float64).reshape(-1)
    N = Q.shape[0]
    sup = Q > 0
    # z scaled by a power of two (exact) so that its largest magnitude is about 1: its
    # range cannot overflow, and a row of tiny (subnormal) values is solved at full
    # precision instead of in the few bits a subnormal keeps
    big = np.max(np.abs(Z), axis=1, where=sup, initial=0.0)
    with np.errstate(divide="ignore"):
        pow2 = np.where(big > 0, np.exp2(np.ceil(np.log2(np.where(big > 0, big, 1.0))) - 1.0),
                        1.0)
    Zs = Z / pow2[:, None]
    zmin = np.min(Zs, axis=1, where=sup, initial=np.inf)
    Y = np.where(sup, Zs - zmin[:, None], 0.0)
    low = sup & (Y == 0.0)
    q_off = rowdot(sup & ~low, Q)  # nominal mass off the minimisers of z
    ymax = Y.max(axis=1)
    p = Q.copy()
    dual = np.full(N, np.nan)
    converged = np.ones(N, dtype=bool)
    q0 = rowdot(low, Q)  # nominal mass on the minimisers
    with np.errstate(divide="ignore"):  # -log q0, from the smaller of the two masses
        cap = np.where(q0 <= 0.5, -np.log(q0), -np.log1p(-np.minimum(q_off, 1.0)))
    moving = (r > 0) & (ymax > 0)
    corner = moving & (r >= cap)
    if corner.any():
        c = np.flatnonzero(corner)
        p[c] = np.where(low[c], Q[c], 0.0)
        p[c] /= p[c].sum(axis=1, keepdims=True)
        dual[c] = zmin[c] * pow2[c]
    inner = np.flatnonzero(moving & ~corner)
    g = np.zeros(0)
    if inner.size:
        ys = ymax[inner]
        p[inner], g, dl = _search(_Rows(Q[inner], Y[inner] / ys[:, None]), r[inner])
        dual[inner] = (zmin[inner] + ys * dl) * pow2[inner]
    value = rowdot(p, Z)
    plain = ~moving
    dual[plain] = value[plain]
    gap = np.maximum(value - dual, 0.0)
    gap[corner] = 0.0
    if inner.size:
        # the gap's own rounding floor: a dot product of n terms of size max|z| (each
        # operation off by eps of its size, or by the subnormal spacing below 2.2e-308)
        fin = np.finfo(float)
        floor = 8.0 * Q.shape[1] * (fin.eps * big[inner] + fin.smallest_subnormal)
        scale = ymax[inner] * pow2[inner]
        converged[inner] = (g <= GAP_CERTIFIED + floor / scale) & \
            (gap[inner] <= GAP_CERTIFIED * scale + floor)
    return Result(p=p, value=value, dual=dual, gap=gap, converged=converged)


def _lp_problem(m: int):
    import cvxpy as cp

    p = cp.Variable(m)
    q = cp.Parameter(m, nonneg=True)
    zz = cp.Parameter(m)
    r = cp.Parameter(nonneg=True)
    cons = [cp.sum(cp.rel_entr(p, q)) <= r, cp.sum(p) == 1]
    return cp.Problem(cp.Minimize(zz @ p), cons), p, q, zz, r


def _lp_rows(Q, Z, r, sup, duals=None, failures: str = "raise"):
    """One exponential-cone program per row; ``duals`` (N,), if given, receives the
    multiplier beta of each row's KL constraint (nan where the radius is 0);
    ``failures`` as in :func:`convex_rows`."""
    N, n = Q.shape

    def setup(i):
        on = np.flatnonzero(sup[i])
        prob, p, q, zz, rr = problem_cache("kl", on.size, _lp_problem)
        q.value = Q[i, on]
        zz.value = Z[i, on]
        rr.value = float(r[i])
        return prob, p, on

    what = "inner exponential-cone program (KL ball)"
    pos = np.flatnonzero(r > 0)  # radius 0: the nominal is the only feasible point
    p = Q.copy()
    ok = np.ones(N, dtype=bool)
    if duals is not None:
        duals[:] = np.nan

    def after(i, prob):
        if duals is not None:
            value = prob.constraints[0].dual_value
            duals[pos[i]] = np.nan if value is None else float(np.asarray(value))

    if pos.size:
        p[pos], ok[pos], _ = convex_rows(pos.size, n, lambda i: setup(pos[i]), "CLARABEL",
                                         what, progress=False, after=after,
                                         failures=failures)
    viol = np.maximum(simplex_violation(p, sup), kl_divergence(np.maximum(p, 0.0), Q) - r)
    ok = recheck(viol, ok, 1e-7, what)
    return p, rowdot(p, Z), ok


#: A row repaired by the conic solver is accepted when its value is within this much of
#: the dual bound of the exact solver, in units of the row's value range.
GAP_REPAIRED = 1e-8


def _repair(Q, Z, r, sup, bad, p, val, dual, gap, ok):
    """The rows ``bad`` whose dual gap the exact solver could not close, solved again by
    the exponential-cone program (:func:`_lp_rows`, an independent solver), and
    certified by the dual bound at that solver's own multiplier of the KL constraint
    (:func:`kl_dual_value`): a row is accepted when the answer passes its numpy
    feasibility re-check and its value is within :data:`GAP_REPAIRED` of the row's value
    range (plus the rounding floor) of the better of the two dual bounds; the other rows
    stay marked failed.  Returns the updated (p, value, dual, gap, ok, repaired)."""
    beta = np.empty(bad.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # judged below, row by row
        lp_p, lp_val, lp_ok = _lp_rows(Q[bad], Z[bad], r[bad], sup[bad], duals=beta,
                                       failures="mark")
        lp_dual = np.where(np.isfinite(beta) & (beta > 0),
                           kl_dual_value(Q[bad], Z[bad], r[bad], np.where(beta > 0, beta, 1.0)),
                           -np.inf)
    on = sup[bad]
    big = np.max(np.abs(Z[bad]), axis=1, where=on, initial=0.0)
    span = (np.max(Z[bad], axis=1, where=on, initial=-np.inf)
            - np.min(Z[bad], axis=1, where=on, initial=np.inf))
    best = np.maximum(dual[bad], lp_dual)
    tol = GAP_REPAIRED * span + 8.0 * Q.shape[1] * np.finfo(float).eps * big
    good = lp_ok & (lp_val - best <= tol) & (lp_val >= best - tol)
    rows = bad[good]
    p, val, dual, gap, ok = p.copy(), val.copy(), dual.copy(), gap.copy(), ok.copy()
    p[rows], val[rows], dual[rows] = lp_p[good], lp_val[good], best[good]
    gap[rows] = np.maximum(val[rows] - dual[rows], 0.0)
    ok[rows] = True
    repaired = np.zeros(ok.shape, dtype=bool)
    repaired[rows] = True
    return p, val, dual, gap, ok, repaired


class KLBall(Frozen, SARectangularSet):
    r"""An sa-rectangular KL ball: :math:`\mathrm{KL}(p \| \hat P(\cdot|s, a)) \le
    r(s, a)`, p a distribution on the support of the nominal row.

    Parameters
    ----------
    nominal : array (S, A, S)
        Nominal kernel :math:`\hat P`; its positive entries are the support (KL is
        infinite for any p with mass where the nominal has none).
    radius : float or array (S, A)
        Radius of each ball, >= 0 (0: the nominal row; a radius of
        :math:`-\log \min_i \hat p_i` or more allows every distribution on the
        support).

    Notes
    -----
    :meth:`worst_case` (the batch flow of every sa-rectangular set) with the exact
    solver adds, per row, ``dual`` (a lower bound on the value from weak duality),
    ``gap`` (``value - dual``, a certified bound on the error) and ``repaired`` (the row
    was solved again by the exponential-cone program); ``method="lp"`` adds
    ``lp_success``.

    Examples
    --------
    >>> import numpy as np
    >>> uset = KLBall(np.full((2, 1, 2), 0.5), np.log(2.0))
    >>> uset.worst_case(np.array([0.0, 1.0])).value.tolist()
    [[0.0], [0.0]]
    """

    _SUMMARY = "radius"
    _RADII = ("radius",)
    kind = KIND
    note = "the KL ball that contains the per-entry Hoeffding box"
    title = "sa-rectangular KL ball"
    method_hint = " ('sort': the exact dual solver, batched; 'lp': one cvxpy " \
                  "exponential-cone program per row, a cross-check)"
    no_vertices = "a KL ball is not a polytope: its boundary is curved"

    def __init__(self, nominal, radius):
        P = nominal_kernel(nominal)
        S, A, _ = P.shape
        self._nominal = readonly(P)
        self._radius = readonly(radii(radius, S, A, "radius"))
        self._support = readonly(P > 0)
        self._freeze()

    @property
    def radius(self) -> np.ndarray:
        """Radii (S, A)."""
        return self._radius

    def distance(self, P) -> np.ndarray:
        r""":math:`\mathrm{KL}(P(\cdot|s,a) \| \hat P(\cdot|s,a))` for every pair, (S, A)
        (inf where P has mass off the support)."""
        return kl_divergence(self._kernel(P), self._nominal)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``P`` lies in the ball (up to ``tol``), (S, A)."""
        P = self._kernel(P)
        return self._rows_ok(P, tol) & (self.distance(P) <= self._radius + tol)

    def _solve_rows(self, Z, J, method):
        """The exact dual solver of the module docstring, whose rows carry ``dual`` (a
        lower bound on the value, by weak duality), ``gap`` (``value - dual``) and
        ``repaired`` (solved again by the conic program); or one cvxpy
        exponential-cone program per row (CLARABEL; ``lp_success``)."""
        Q, r = tile(self._nominal, J), tile(self._radius, J)
        if method == "lp":
            p, val, ok = _lp_rows(Q, Z, r, tile(self._support, J))
            return p, val, ok, {"lp_success": ok}
        res = worst_case_kl(Q, Z, r)
        p, val, dual, gap, ok = res.p, res.value, res.dual, res.gap, res.converged
        repaired = np.zeros(ok.shape, dtype=bool)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            p, val, dual, gap, ok, repaired = _repair(Q, Z, r, tile(self._support, J), bad,
                                                      p, val, dual, gap, ok)
        return p, val, ok, {"dual": dual, "gap": gap, "repaired": repaired}

    def _arrays(self) -> dict:
        return {"nominal": self._nominal, "radius": self._radius}

    @classmethod
    def _from_arrays(cls, data: dict):
        return cls(data["nominal"], data["radius"])

    # ----------------------------------------------------------------- the kind
    @classmethod
    def l1_level_radius(cls, level: float) -> float:
        r"""The KL ball of radius :math:`r^2 / 2` lies inside the L1 ball of radius
        :math:`r` (Pinsker: :math:`\|p - \hat p\|_1 \le \sqrt{2\,\mathrm{KL}(p \| \hat
        p)} \le r`)."""
        return float(level) * float(level) / 2.0

    @classmethod
    def from_counts(cls, counts, *, delta: float, hoeffding_l1) -> KLBall:
        """The kind ``kl`` of an estimation: the KL ball that contains the per-entry
        Hoeffding box of the counts (:func:`~rcmdp_exact.estimate_kl_ball`), on the
        support of the L1 hoeffding_l1 ``hoeffding_l1``."""
        kind_delta(delta)
        return estimate_kl_ball(counts, delta, support=hoeffding_l1.support)

    @classmethod
    def around(cls, model, radius: float, support: str = "nominal") -> KLBall:
        """The kind ``kl`` around ``model``'s own kernel: the KL ball of ``radius``
        around ``model.P``.  A KL ball never leaves the support of its centre, so
        ``support`` must be ``"nominal"`` (:func:`kl_ball`)."""
        radius = kind_radius(radius)
        from .._checks import InputError

        if support not in AROUND_SUPPORTS:
            raise InputError(f"a KL ball never leaves the support of the model's kernel, "
                             f"so the kind kl takes the support 'nominal', not {support!r}")
        return cls(np.asarray(model.P, dtype=np.float64), float(radius))

    @classmethod
    def strategy(cls, model, *, max_radius: float = 1.0, grid: int | None = 4):
        """Hypothesis strategy of KL balls around ``model.P``: a radius per pair in [0,
        max_radius] (0 at terminal states)."""
        check_strategy(grid, max_radius=max_radius)
        from ._draw import pair_radii

        return pair_radii(model, max_radius, grid=grid).map(lambda r: cls(model.P, r))


def kl_ball(model, radius) -> KLBall:
    """A KL ball of ``radius`` (a number, or one per pair (S, A)) around a model's own
    kernel, the companion of :func:`~rcmdp_exact.l1_ball` (its support is the model's:
    KL is infinite off the support of the centre).

    >>> import rcmdp_exact as rx
    >>> model = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)
    >>> kl_ball(model, 0.05).radius.shape
    (3, 2)
    """
    return KLBall(np.asarray(model.P, dtype=np.float64), radius)


# --------------------------------------------------------------------------- estimation
#: Radii of :func:`estimate_kl_ball`.
_KL_BOUNDS = ("box", "types")


def _chord_radius(q, lo, up):
    r"""An upper bound on :math:`\mathrm{KL}(p \| q)` over the box (lo, up) of the
    simplex (every row; see :func:`estimate_kl_ball`)."""
    def psi(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0) / q), 0.0) - x + q

    a, b = psi(lo), psi(up)
    width = up - lo
    slope = np.divide(b - a, width, out=np.zeros_like(width), where=width > 0)
    S, A, n = q.shape
    best = worst_case_interval(lo.reshape(-1, n), up.reshape(-1, n),
                               -slope.reshape(-1, n)).value.reshape(S, A)
    return (a - slope * lo).sum(axis=2) - best


def estimate_kl_ball(counts, delta: float = 0.1, pseudo_count: float = 1.0, *,
                     bound: str = "box", support=None) -> KLBall:
    r"""A KL ball :math:`\mathrm{KL}(p \| \hat p) \le r` of observed counts.

    Centre: the smoothed frequencies :math:`\hat p = (\text{counts} +
    \text{pseudo}) / (n + \text{pseudo}\,|\Sigma|)` (``pseudo_count`` > 0, so that
    :math:`\hat p > 0` on the support: a KL ball contains no distribution with mass
    where its centre has none).  Radius:

    * ``bound="box"`` (default, guaranteed): the largest KL from :math:`\hat p` over the
      Hoeffding box of :func:`~rcmdp_exact.uncertainty.estimate_interval_set`, bounded
      above by the chords of the convex terms
      :math:`\psi_i(x) = x \log(x / \hat p_i) - x + \hat p_i`
      (:math:`\mathrm{KL}(p \| \hat p) = \sum_i \psi_i(p_i)` on the simplex):
      :math:`r = \max_{p \in \text{box} \cap \Delta} \sum_i \chi_i(p_i)` with
      :math:`\chi_i` the chord of :math:`\psi_i` over :math:`[\ell_i, u_i]`, a linear
      program solved exactly by the interval greedy.  The ball contains the box, so it
      contains the true kernel with probability at least :math:`1 - \delta`.
    * ``bound="types"``: the method-of-types radius
      :math:`r = ((|\Sigma| - 1) \ln(n + 1) + \ln(S A / \delta)) / n`.  It bounds
      the KL in the *other* direction: :math:`P(\mathrm{KL}(\hat f \| p) \ge r) \le
      (n + 1)^{|\Sigma| - 1} e^{-n r} = \delta / (S A)` (Cover and Thomas, Thm
      11.1.4, and the number of types), for the empirical frequencies
      :math:`\hat f`.  The ball uses :math:`\mathrm{KL}(p \| \hat p)` around the
      smoothed centre, for which this radius carries **no guarantee**; it is smaller
      than the box radius and a common heuristic.  A pair without samples gets the
      whole simplex, :math:`r = \max_i \ln(1/\hat p_i)`.

    Parameters
    ----------
    counts : array (S, A, S)
        Observed transitions over next states (no pseudo-counts).
    delta : float in (0, 1)
        Error probability.
    pseudo_count : float > 0
    bound : {"box", "types"}
    support : bool array (S, A, S), optional
        Next states that may be reached (default: all); counts outside it are an error.

    Returns
    -------
    KLBall
    """
    check_choice(bound, "bound", _KL_BOUNDS)
    check_pseudo_count(pseudo_count, positive=True,
                       hint=" (a KL ball needs a centre > 0 on the support)")
    c, sup, n, f, smooth = count_frequencies(counts, pseudo_count, support, "KL ball")
    whole = np.max(np.where(sup, -np.log(np.where(sup, smooth, 1.0)), 0.0), axis=2)
    if bound == "box":
        lo, up = hoeffding_box(sup, n, f, delta)
        radius = np.maximum(_chord_radius(smooth, lo, up), 0.0)
    else:
        S, A, _ = c.shape
        d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                       hint=" (the error probability)")
        k = sup.sum(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            radius = ((k - 1) * np.log(n + 1.0) + np.log(S * A / d)) / n
    radius = np.where(n > 0, np.minimum(radius, whole), whole)
    return KLBall(smooth, radius)
