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
* otherwise :math:`\eta^*` is the root of :math:`\mathrm{KL}(p_\eta \| q) = r`, found by
  Newton's method on :math:`\log \mathrm{KL}` as a function of :math:`\log \eta`
  (:math:`d\mathrm{KL}/d\eta = \eta \operatorname{Var}_{p_\eta}(y)`), safeguarded by a
  bracket (bisection in :math:`\log\eta` when a step leaves it), to a relative change
  of :math:`\eta` below 1e-12.  The returned row is :math:`p_\eta` itself (feasible
  up to rounding), and the answer comes with the dual bound
  :math:`\min z - (\log E_q[e^{-\eta y}] + r)/\eta` (weak duality: a lower bound for
  any :math:`\eta > 0`), so ``value - dual`` certifies the gap.

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

import numpy as np

from .._checks import readonly
from .._result import Result
from ._rows import (
    Frozen,
    convex_rows,
    nominal_kernel,
    problem_cache,
    recheck,
    rowdot,
    sa_worst_case,
    simplex_violation,
    tile,
)
from .base import UncertaintySet
from .l1 import radii

__all__ = ["KLBall", "kl_divergence", "kl_dual_value", "worst_case_kl"]

_HINT = " ('sort': the exact dual solver, batched; 'lp': one cvxpy exponential-cone " \
        "program per row, a cross-check)"

#: Largest number of Newton steps (the tests never see more than about 15).
_MAX_STEPS = 80
#: The largest log(eta) (eta = 1e300; y is scaled to [0, 1]).
_T_MAX = 690.0
#: Newton stops when log(eta) changes by less than this.
_STEP_TOL = 1e-12


def kl_divergence(p, q) -> np.ndarray:
    r""":math:`\mathrm{KL}(p \| q) = \sum_i p_i \log(p_i / q_i)` along the last axis.

    Terms with :math:`p_i \le 0` count 0; a positive :math:`p_i` where
    :math:`q_i = 0` gives inf.

    >>> float(kl_divergence([0.5, 0.5], [0.25, 0.75])).__round__(12)
    0.143841036226
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    pos = p > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pos, p * np.log(np.where(pos, p, 1.0) / q), 0.0)
    return terms.sum(axis=-1)


def kl_dual_value(p_hat, z, radius, beta) -> np.ndarray:
    r"""The dual objective :math:`-\beta \log \sum_i \hat p_i e^{-z_i/\beta} - \beta r`
    of every row at a given :math:`\beta > 0`: a lower bound on the worst case.

    Computed with the minimum of z on the support subtracted (no overflow).
    """
    Q = np.asarray(p_hat, dtype=np.float64)
    Z = np.asarray(z, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    r = np.asarray(radius, dtype=np.float64)
    sup = Q > 0
    zmin = np.min(Z, axis=-1, where=sup, initial=np.inf)
    Y = np.where(sup, Z - zmin[..., None], 0.0)
    lse = np.log((Q * np.exp(-Y / b[..., None])).sum(axis=-1))
    return zmin - b * lse - b * r


def _moments(Y, Q, eta):
    """Per row: Z = E_q[exp(-eta y)], and the mean and variance of y under p_eta."""
    E = np.multiply(Y, -eta[:, None])
    np.exp(E, out=E)
    E *= Q
    Zs = E.sum(axis=1)
    m1 = rowdot(E, Y)
    E *= Y
    m2 = rowdot(E, Y)
    mu = m1 / Zs
    var = np.maximum(m2 / Zs - mu * mu, 0.0)
    return Zs, mu, var


def _newton(Y, Q, r, var_q):
    """The root eta of KL(p_eta || q) = r of every row (module docstring)."""
    M = Y.shape[0]
    t = 0.5 * np.log(2.0 * r / var_q)  # KL ~ eta^2 Var_q(y) / 2 for small eta
    t_lo = np.full(M, -np.inf)
    t_hi = np.full(M, np.inf)
    ok = np.zeros(M, dtype=bool)
    act = np.arange(M)
    for _ in range(_MAX_STEPS):
        if act.size == 0:
            break
        ta = t[act]
        eta = np.exp(ta)
        Ya, Qa = (Y, Q) if act.size == M else (Y[act], Q[act])
        Zs, mu, var = _moments(Ya, Qa, eta)
        kl = -eta * mu - np.log(Zs)
        ra = r[act]
        above = kl > ra
        t_hi[act] = np.where(above, ta, t_hi[act])
        t_lo[act] = np.where(above, t_lo[act], ta)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            h = np.log(kl) - np.log(ra)
            dh = eta * eta * var / kl
            step = h / dh
        new = ta - step
        lo, hi = t_lo[act], t_hi[act]
        good = np.isfinite(step) & np.isfinite(dh) & (dh > 0)  # a Newton step exists
        conv = (good & (np.abs(step) <= _STEP_TOL)) | (kl == ra) | (hi - lo <= _STEP_TOL)
        bad = ~good | (new <= lo) | (new >= hi)
        mid = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi),
                       np.where(np.isfinite(hi), hi - 2.0, lo + 2.0))
        # KL below r at the largest eta: r is the limit -log q0 up to rounding, and
        # p_eta is the limit distribution (every exponent of y > 1e-298 underflows)
        conv |= (ta >= _T_MAX) & ~above
        new = np.where(conv, np.where(np.isfinite(new), new, ta), np.where(bad, mid, new))
        t[act] = np.minimum(new, _T_MAX)
        ok[act[conv]] = True
        act = act[~conv]
    return np.exp(t), ok


def worst_case_kl(p_hat, z, radius) -> Result:
    r"""The exact worst case of every row: :math:`\min\{p^\top z :
    \mathrm{KL}(p \| \hat p) \le r\}` (see the module docstring).

    ``p_hat`` and ``z`` are (N, n) float arrays of valid rows, ``radius`` (N,) (no
    checks here: :class:`KLBall` validates its input).  Returns ``p`` (N, n),
    ``value`` (N,) (:math:`p^\top z` of the returned p), ``dual`` (N,) (the dual
    bound at the returned :math:`\beta`; equal to the value in the two limit cases)
    and ``converged`` (N,) bool.

    >>> res = worst_case_kl([[0.5, 0.5]], [[0.0, 1.0]], [np.log(2.0)])  # the limit case
    >>> res.p.tolist(), float(res.value[0])
    ([[1.0, 0.0]], 0.0)
    """
    Q = np.ascontiguousarray(p_hat, dtype=np.float64)
    Z = np.ascontiguousarray(z, dtype=np.float64)
    r = np.asarray(radius, dtype=np.float64).reshape(-1)
    N = Q.shape[0]
    sup = Q > 0
    zmin = np.min(Z, axis=1, where=sup, initial=np.inf)
    Y = Z - zmin[:, None]
    Y *= sup  # 0 off the support (no mass there; keeps every exponent finite)
    low = Y == 0.0
    q0 = rowdot(low, Q)  # nominal mass on the minimisers of z
    ymax = Y.max(axis=1)
    p = Q.copy()
    dual = np.full(N, np.nan)
    converged = np.ones(N, dtype=bool)
    with np.errstate(divide="ignore"):
        cap = -np.log(q0)
    corner = (r >= cap) & (r > 0) & (ymax > 0)
    if corner.any():
        c = np.flatnonzero(corner)
        p[c] = Q[c] * low[c] / q0[c, None]
        dual[c] = zmin[c]
    inner = (r > 0) & (ymax > 0) & ~corner
    if inner.any():
        i = np.flatnonzero(inner)
        # y / max(y) in [0, 1]: the problem depends on eta * y only (no overflow)
        Yi = Y[i] / ymax[i, None]
        Qi = Q if i.size == N else Q[i]
        mean = rowdot(Qi, Yi)
        var_q = np.maximum(rowdot(Qi, Yi * Yi) - mean * mean, np.finfo(float).tiny)
        eta, ok = _newton(Yi, Qi, r[i], var_q)
        E = np.multiply(Yi, -eta[:, None])
        np.exp(E, out=E)
        E *= Qi
        Zs = E.sum(axis=1)
        E /= Zs[:, None]
        p[i] = E
        dual[i] = zmin[i] - ymax[i] * ((np.log(Zs) + r[i]) / eta)
        converged[i] = ok
    value = rowdot(p, Z)
    plain = ~(inner | corner)
    dual[plain] = value[plain]
    return Result(p=p, value=value, dual=dual, converged=converged)


def _lp_problem(m: int):
    import cvxpy as cp

    p = cp.Variable(m)
    q = cp.Parameter(m, nonneg=True)
    zz = cp.Parameter(m)
    r = cp.Parameter(nonneg=True)
    cons = [cp.sum(cp.rel_entr(p, q)) <= r, cp.sum(p) == 1]
    return cp.Problem(cp.Minimize(zz @ p), cons), p, q, zz, r


def _lp_rows(Q, Z, r, sup):
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
    if pos.size:
        p[pos], ok[pos], _ = convex_rows(pos.size, n, lambda i: setup(pos[i]), "CLARABEL",
                                         what)
    viol = np.maximum(simplex_violation(p, sup), kl_divergence(np.maximum(p, 0.0), Q) - r)
    ok = recheck(viol, ok, 1e-7, what)
    return p, rowdot(p, Z), ok


class KLBall(Frozen, UncertaintySet):
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

    Examples
    --------
    >>> import numpy as np
    >>> ball = KLBall(np.full((2, 1, 2), 0.5), np.log(2.0))
    >>> ball.worst_case(np.array([0.0, 1.0])).value.tolist()
    [[0.0], [0.0]]
    """

    _SUMMARY = "radius"

    rectangularity = "sa"

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

    def worst_case(self, z, policy=None, *, method: str = "sort") -> Result:
        r"""The worst case of every (s, a): :math:`\min_p p^\top z(s, a, \cdot)` over
        the KL ball.

        Parameters
        ----------
        z : array (S,), (J, S), (S, A, S) or (J, S, A, S)
            Shared by all pairs or one vector per pair, with an optional batch axis J.
        policy : None
            Not used (an sa-rectangular set does not depend on the policy).
        method : {"sort", "lp"}
            The exact dual solver (module docstring) or one cvxpy exponential-cone
            program per row (CLARABEL; agrees to about 1e-7).

        Returns
        -------
        Result
            ``p`` (..., S, A, S), ``value`` (..., S, A), ``method``, ``success``; the
            exact solver adds ``dual`` (..., S, A), a lower bound on the value from
            weak duality (``value - dual`` certifies the accuracy); the LP method adds
            ``lp_success`` (..., S, A), False on the rows CLARABEL marked inaccurate
            or whose answer failed the numpy re-check.
        """
        return sa_worst_case(self, z, method, self._solve, _HINT)

    def _solve(self, Z, J, method):
        Q, r = tile(self._nominal, J), tile(self._radius, J)
        if method == "lp":
            p, val, ok = _lp_rows(Q, Z, r, tile(self._support, J))
            return p, val, bool(ok.all()), {"lp_success": ok}
        res = worst_case_kl(Q, Z, r)
        return res.p, res.value, bool(res.converged.all()), {"dual": res.dual}

    def _arrays(self) -> dict:
        return {"nominal": self._nominal, "radius": self._radius}

    @classmethod
    def _from_arrays(cls, data: dict):
        return cls(data["nominal"], data["radius"])

