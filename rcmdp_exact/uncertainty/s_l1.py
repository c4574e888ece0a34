r"""The s-rectangular L1 set: one budget per state, shared by the state's actions.

Wiesemann, Kuhn and Rustem (2013) and Ho, Petrik and Wiesemann (2018): around a
nominal kernel :math:`\hat P` (S, A, S), with a radius :math:`\kappa(s) \ge 0` per state,

.. math::

    \mathcal U_s = \Bigl\{ (p_a)_{a} : p_a \in \Delta(\Sigma_{s,a}),\;
    \sum_a \|p_a - \hat P(\cdot \mid s, a)\|_1 \le \kappa(s) \Bigr\},
    \qquad \mathcal P = \textstyle\prod_s \mathcal U_s .

The adversary of state s moves the rows of all its actions at once, so what it does
depends on the policy: it minimises :math:`\sum_a \pi(a \mid s)\, p_a^\top z_a`.

**The response function.** With :math:`q_a(\xi) = \min\{p^\top z_a : \|p - \hat p_a\|_1
\le \xi\}` (the sa-rectangular L1 problem of radius :math:`\xi`, solved by a sort), the
state's problem is

.. math::

    \min_{p \in \mathcal U_s} \sum_a \pi_a p_a^\top z_a
    = \min\Bigl\{ \sum_a \pi_a q_a(\xi_a) : \xi \ge 0,\; \sum_a \xi_a \le \kappa \Bigr\}:

every feasible kernel has :math:`p_a^\top z_a \ge q_a(\xi_a)` with
:math:`\xi_a = \|p_a - \hat p_a\|_1`, and the rows that attain the :math:`q_a(\xi_a)` are
feasible.  Sorting the outcomes of action a by decreasing :math:`z_a` gives
:math:`q_a` exactly: moving mass from outcome i (in that order) to an argmin of
:math:`z_a` costs 2 units of :math:`\xi` per unit of mass and lowers the value by
:math:`z_{a,i} - \min z_a`, so :math:`q_a` is piecewise linear, convex and
non-increasing, with segments of length :math:`2 \hat p_{a,i}` and slopes
:math:`-(z_{a,i} - \min z_a)/2`.

**worst_case (a policy).** The budget split is a resource allocation of a separable
convex piecewise-linear function: spending on the steepest segment first (slopes
:math:`\pi_a (\min z_a - z_{a,i})/2`, all actions merged in one sort per state) is
optimal, because the problem is a fractional knapsack over the segments and the
convexity of each :math:`q_a` keeps each action's segments in order.  The rows then come
from :func:`~rcmdp_exact.uncertainty.l1_sort.worst_case_l1` with the radii
:math:`\xi_a`.  ``method="lp"``: one cvxpy LP per state, re-checked in numpy.

**bellman_max_min (the robust Bellman optimality update).** For each state,
:math:`V = \max_{\pi \in B} \min_{p \in \mathcal U_s} \sum_a \pi_a p_a^\top z_a` over the
box :math:`B = \{\ell \le \pi \le h\} \cap \Delta_A` (default: the simplex).  The
function is bilinear and both sets are compact and convex, so max-min = min-max
(Sion), and the optimal policy may have to randomise.

* ``"level"`` (the whole simplex): with the min-max order,
  :math:`V = \min_{\xi} \max_a q_a(\xi_a) = \min\{u : F(u) \le \kappa\}`,
  :math:`F(u) = \sum_a q_a^{-1}(u)` (the budget that pushes every action down to u).
  F is convex, non-increasing and piecewise linear, so Newton's method from
  :math:`u_0 = \max_a \min z_a` climbs monotonically to the root, one linear piece or
  more per step, and lands on it exactly.  The policy follows from the saddle-point
  conditions: :math:`\pi_a \propto 1 / |q_a'(\xi_a)|` on the actions with
  :math:`q_a(0) > u` (the budget multiplier equalises :math:`\pi_a |q_a'|`); when the
  budget does not bind, the action of largest :math:`\min z_a`; at radius 0, the
  nominal best action.  The final step is exact on the active set: u is a float, so
  near-ties of z (an action nearly flat in its radius) can put u one rounding step past
  the root, on a breakpoint, or resolve the flat action's radius only to
  :math:`\mathrm{ulp}(u)/|q_a'|`; the residual budget goes to the flattest action's
  segment, and the multiplier is taken from the side of u (segments above or below it)
  whose certificate is the larger.  Where that certificate is still loose, the policy's
  exact worst case (the greedy split) is the lower bound.
* ``"dual"`` (any box): dualising the budget with :math:`\lambda \ge 0`,
  :math:`V = \max_{\lambda \ge 0} \Psi(\lambda)`,
  :math:`\Psi(\lambda) = -\lambda\kappa + \max_{\pi \in B} \sum_a h_a(\pi_a, \lambda)`,
  :math:`h_a(d, \lambda) = \min_{\xi \ge 0} d\, q_a(\xi) + \lambda \xi`.  Each
  :math:`h_a(\cdot, \lambda)` is concave piecewise linear in d with slopes
  :math:`q_a` at its breakpoints (independent of :math:`\lambda`) and pieces of length
  proportional to :math:`\lambda`, so the inner maximum is a greedy fill of the box in
  one fixed order.  :math:`\Psi` is concave and piecewise linear; it is evaluated
  exactly at chosen points, the chords of the evaluated points bound it from above, and
  the next point is the maximiser of that bound (on the two final pieces, the kink
  itself: the bound is then met) or, every other step, the midpoint of the interval
  that holds it.  The greedy policy :math:`\pi` at any :math:`\lambda` has
  :math:`\psi(\pi) \ge \Psi(\lambda)` (weak duality), so the best point's policy is
  optimal up to the certified gap between the chord bound and its exact worst case.
* ``"lp"``: the inner problem written as an LP, dualised, and maximised jointly with
  the policy: one ``scipy.optimize.linprog`` (HiGHS) per state.

Every method returns the policy's exact worst case and a ``gap``: for "level" and
"dual" a certified one (an upper bound on V minus a lower bound on the policy's worst
case, both from duality), for "lp" the LP's optimum minus that worst case.  A state whose
"level" or "dual" gap still exceeds 1e-9 of the scale of z is repaired: it takes the
joint LP's policy when that policy's exact worst case is closer to the method's certified
upper bound (``repaired`` marks those states); success needs every gap certified.  The proofs and
the measured speed are in ``docs/s_rect.md``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._checks import (
    InputError,
    as_float_array,
    check_choice,
    check_distributions,
    check_shape,
    readonly,
    row_tolerance,
    where,
)
from .._result import Result, Status
from .._solvers import HIGHS_OPTIONS, cvxpy_options, silence_highs_banner
from ..core.model_checks import check_transition_rows
from ._rows import Frozen
from .base import (
    SRectangularSet,
    check_strategy,
    kind_delta,
    kind_radius,
    split_batch,
    state_radii,
    support_mask,
)
from .l1_sort import worst_case_l1

__all__ = ["KIND", "SRectL1Ball"]

#: The kind of this file's set (``--set s-l1``; read by :mod:`.kinds`).
KIND = "s-l1"
#: What ``--radius R`` is for the set around a model (read by :mod:`.kinds`).
RADIUS = "the L1 radius per action (the state's budget: their sum)"

#: Methods of :meth:`SRectL1Ball.bellman_max_min`: "sort" (the exact fast choice:
#: "level" on the whole simplex, "dual" with a box), "level", "dual", "lp".
_BELLMAN_METHODS = ("sort", "level", "dual", "lp")

#: Largest number of steps of the Newton and tangent searches (each finds a new linear
#: piece, so the count is finite; a few to a dozen steps are typical).
_MAX_STEPS = 500


# --------------------------------------------------------------------------- the rows
def _zmin(Z, sup):
    """The smallest z of each row on its support (R, A)."""
    return Z.min(axis=-1) if sup is None else np.where(sup, Z, np.inf).min(axis=-1)


def _breakpoints(nom, Z, sup, slopes: bool = False):
    r"""The response functions :math:`q_a` of every row, from one sort per row.

    Breakpoint j (after emptying the j outcomes of largest z into an argmin) has
    :math:`\xi = X_j` and :math:`q(X_j) = Q_j`; segment j (from breakpoint j to j+1)
    moves the mass ``ps[j]`` of the j-th largest z and lowers the value by ``exc[j]``
    (its slope is :math:`-\mathrm{exc}_j / (2\,\mathrm{ps}_j)`).  ``Q`` is
    :math:`\min z` plus the excess not yet removed, so it is non-increasing and ends at
    :math:`\min z` exactly.  Outcomes off the support get :math:`z = \min z` (no slope,
    no mass); ties with the minimum give flat segments at the end.

    Returns ``Q``, ``X`` (R, A, n+1), ``exc``, ``ps`` (R, A, n), ``zmin`` (R, A), and
    with ``slopes`` the slope magnitudes ``sig`` (R, A, n) of every segment (also of the
    massless ones), else None; and ``flat`` (R, A, n), the flat index in ``nom`` of
    each sorted outcome.
    """
    R, A, n = Z.shape
    zmin = _zmin(Z, sup)
    Ze = Z if sup is None else np.where(sup, Z, zmin[..., None])
    ngap = np.subtract(zmin[..., None], Ze)  # <= 0
    flat = np.argsort(ngap, axis=-1)  # decreasing z
    flat += (np.arange(R * A, dtype=np.int64) * n).reshape(R, A, 1)
    ps = np.take(nom, flat)
    gs = np.take(ngap, flat)
    np.negative(gs, out=gs)
    exc = ps * gs
    C = np.cumsum(exc, axis=-1)
    Q = np.empty((R, A, n + 1))
    Q[..., 0] = C[..., -1]
    np.subtract(C[..., -1:], C, out=Q[..., 1:])  # excess left after each breakpoint; 0 last
    Q += zmin[..., None]
    X = np.empty((R, A, n + 1))
    X[..., 0] = 0.0
    np.cumsum(ps, axis=-1, out=X[..., 1:])
    X *= 2.0
    return Q, X, exc, ps, zmin, (0.5 * gs if slopes else None), flat


def _rows_at(nom, Z, sup, X, ps, flat, xi):
    r"""The minimising rows of radius ``xi`` (R, A) from the sorted rows: the first
    :math:`\xi/2` of mass in decreasing order of z moves to an argmin on the support.

    ``xi`` must not exceed twice the mass above the row's minimum (true of every radius
    the level search returns), so only outcomes above the minimum lose mass.
    """
    take = np.subtract(0.5 * xi[..., None], 0.5 * X[..., :-1])
    np.maximum(take, 0.0, out=take)
    np.minimum(take, ps, out=take)
    p = np.array(nom)
    hit = take > 0.0
    p.ravel()[flat[hit]] -= take[hit]
    k = (Z if sup is None else np.where(sup, Z, np.inf)).argmin(axis=-1)
    R, A = xi.shape
    p.reshape(R * A, -1)[np.arange(R * A), k.ravel()] += take.sum(axis=-1).ravel()
    return p


def _take(arr, idx):
    """``arr[..., idx]`` for an (R, A) index into the last axis of an (R, A, m) array."""
    R, A, m = arr.shape
    flat = idx + (np.arange(R * A, dtype=np.int64) * m).reshape(R, A)
    return np.take(arr, flat)


def _budget_at(Q, X, exc, ps, u):
    r"""The radii :math:`\xi_a = q_a^{-1}(u)` that bring every action down to ``u``.

    ``u`` (R,) must be >= every row's minimum.  Returns ``xi`` (R, A) and ``inv``
    (R, A): :math:`1/|q_a'|` on the segment that reaches u (0 for the actions already
    at or below u), so that the right derivative of :math:`F(u) = \sum_a \xi_a` is
    :math:`-\sum_a \mathrm{inv}_a`.
    """
    j = np.count_nonzero(Q > u[:, None, None], axis=-1)  # first breakpoint <= u
    act = j > 0
    jm = np.maximum(j - 1, 0)
    Qp, Xp, e, m = _take(Q, jm), _take(X, jm), _take(exc, jm), _take(ps, jm)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the segment of an active action lowers Q from above u to <= u: e > 0, m > 0
        inv = 2.0 * m / e
        xi = np.where(act, Xp + np.minimum(2.0 * m, (Qp - u[:, None]) * inv), 0.0)
        inv = np.where(act, inv, 0.0)
    return xi, inv


# --------------------------------------------------------------------------- policy given
def _allocate(nom, Z, sup, rad, pi):
    r"""The adversary's budget split :math:`\xi` (R, A) against the policy ``pi`` (R, A).

    Segments of all actions of a problem, with slopes :math:`\pi_a(\min z_a - z_{a,i})`
    (per unit mass) and lengths :math:`2\hat p_{a,i}`, are taken in increasing order of
    slope (steepest descent first) until the budget is spent.  Segments that do not
    lower the value (slope 0: a tie with the minimum, a zero-probability action, the
    argmin itself) are never taken.  The order among equal slopes does not change the
    value.
    """
    R, A, n = Z.shape
    zmin = _zmin(Z, sup)
    keys = pi[..., None] * (zmin[..., None] - Z)
    useful = (keys < 0.0) & (nom > 0.0)
    keys = np.where(useful, keys, 0.0).reshape(R, A * n)
    o = np.argsort(keys, axis=1)
    o += (np.arange(R, dtype=np.int64) * (A * n))[:, None]
    ls = np.take(np.where(useful, 2.0 * nom, 0.0), o)
    before = np.cumsum(ls, axis=1)
    before -= ls
    spend = np.subtract(rad[:, None], before, out=before)
    np.maximum(spend, 0.0, out=spend)
    np.minimum(spend, ls, out=spend)
    return np.bincount((o // n).ravel(), weights=spend.ravel(),
                       minlength=R * A).reshape(R, A)


def _exact_worst_case(nom, Z, sup, rad, pi):
    """(p (R, A, n), value (R,), row values (R, A)) of the exact method."""
    xi = _allocate(nom, Z, sup, rad, pi)
    res = worst_case_l1(nom, Z, xi, sup, check=False, progress=False)
    return res.p, np.einsum("ra,ra->r", pi, res.value), res.value


def _lp_worst_case(nom, Z, sup, rad, pi):
    """One cvxpy LP per problem (HiGHS), then the numpy re-check of the caller."""
    import cvxpy as cp

    R, A, n = Z.shape
    p_out = np.zeros((R, A, n))
    ok = np.ones(R, dtype=bool)
    statuses = []
    silence_highs_banner()
    prob, p, ph, c, off, kap = _lp_problem(A, n)
    for i in range(R):
        ph.value = nom[i]
        c.value = pi[i][:, None] * Z[i]
        off.value = np.zeros((A, n)) if sup is None else (~sup[i]).astype(float)
        kap.value = float(rad[i])
        try:
            prob.solve(**cvxpy_options("HIGHS"))
        except cp.error.SolverError as exc:
            raise InputError(f"the LP of problem {i} failed in HiGHS ({exc}); use "
                             f"method='sort' (exact)") from None
        statuses.append(prob.status)
        if prob.status == cp.OPTIMAL_INACCURATE:
            warnings.warn(f"s-rectangular LP of problem {i}: HiGHS returned "
                          f"OPTIMAL_INACCURATE; marked success=False", RuntimeWarning,
                          stacklevel=4)
            ok[i] = False
        elif prob.status != cp.OPTIMAL:
            raise InputError(f"the LP of problem {i} ended with status {prob.status!r}; it "
                             f"is always feasible (the nominal), so the input is likely "
                             f"badly scaled: check z, or use method='sort'")
        p_out[i] = np.where(off.value > 0, 0.0, p.value)
    return p_out, ok, statuses


_LP_CACHE: dict = {}


def _lp_problem(A: int, n: int):
    """The parametrised cvxpy LP of one state (compiled once per (A, n))."""
    prob = _LP_CACHE.get((A, n))
    if prob is None:
        import cvxpy as cp

        p = cp.Variable((A, n), nonneg=True)
        t = cp.Variable((A, n))
        ph = cp.Parameter((A, n), nonneg=True)
        c = cp.Parameter((A, n))
        off = cp.Parameter((A, n), nonneg=True)
        kap = cp.Parameter(nonneg=True)
        cons = [t >= p - ph, t >= ph - p, cp.sum(t) <= kap, cp.sum(p, axis=1) == 1,
                cp.multiply(off, p) == 0]
        prob = (cp.Problem(cp.Minimize(cp.sum(cp.multiply(c, p))), cons), p, ph, c, off, kap)
        if len(_LP_CACHE) >= 32:
            _LP_CACHE.pop(next(iter(_LP_CACHE)))
        _LP_CACHE[(A, n)] = prob
    return prob


# --------------------------------------------------------------------------- max-min
def _certificate(Q, X, d, lam, kappa):
    r"""The dual lower bound :math:`-\lambda\kappa + \sum_a h_a(d_a, \lambda)` on the
    worst-case value of the policy d (R, A), for any :math:`\lambda \ge 0` (R,)."""
    vals = d[..., None] * Q + lam[:, None, None] * X
    return vals.min(axis=-1).sum(axis=-1) - lam * kappa


def _level(Q, X, exc, ps, zmin, kappa):
    r"""The simplex case by Newton's method on :math:`F(u) = \sum_a q_a^{-1}(u)`.

    Returns the radii xi (R, A) that bring every action to the level, the policy d
    (R, A), the budget multiplier lam (R,) (for the certificate) and whether every
    search ended.
    """
    R, A = zmin.shape
    rows = np.arange(R)
    u = zmin.max(axis=-1)
    Q0 = Q[..., 0]
    zero = kappa <= 0.0
    u = np.where(zero, Q0.max(axis=-1), u)
    xi, inv = _budget_at(Q, X, exc, ps, u)
    F = xi.sum(axis=-1)
    tol = 1e-13 * (1.0 + kappa)
    free = ~zero & (F <= kappa + tol)  # the budget does not bind at the lowest level
    done = zero | free
    ended = True
    for _ in range(_MAX_STEPS):
        if done.all():
            break
        G = inv.sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = u + (F - kappa) / G
        stalled = ~done & ~(new > u)
        u = np.where(done | stalled, u, new)
        xi, inv = _budget_at(Q, X, exc, ps, u)
        F = xi.sum(axis=-1)
        done |= stalled | (F <= kappa + tol)
    else:
        ended = bool(done.all())
    binding = ~zero & ~free
    # The final exact step.  u is a float at (or one rounding step past) the root, so
    # (1) u may sit on a breakpoint of an active action while the root lies on the
    # segment just below it (a tie of z within an ulp: 1/|q'| of the segment above u is
    # then the wrong multiplier), and (2) an action that is nearly flat in u (a huge
    # 1/|q'|) gets its radius quantised to ulp(u) / |q'|, leaving up to that much budget
    # unspent or overspent.  Take the segments on both sides of u, spend the residual
    # budget exactly on the flattest action's segment (the other actions' radii are exact
    # to an ulp of u), and keep the side whose dual certificate is the larger.
    # u on a breakpoint of some action (rare: a tie, or the root in one ulp): only there
    # do the segments below u differ from those above it
    hit = np.flatnonzero(binding & (Q == u[:, None, None]).any(axis=(1, 2)))
    invL = inv.copy()
    jL = np.full((R, A), -1)
    if hit.size:
        invL[hit], jL[hit] = _segments_below(Q[hit], exc[hit], ps[hit], u[hit])
    res = kappa - xi.sum(axis=-1)
    up = res > 0.0
    side = np.where(up[:, None], invL, inv)
    a = side.argmax(axis=-1)
    jR = np.count_nonzero(Q[rows, a] > u[:, None], axis=-1) - 1
    j = np.where(up & np.isin(rows, hit), jL[rows, a], jR)
    ok = binding & (side[rows, a] > 0.0) & (j >= 0)
    jj = np.maximum(j, 0)
    x0 = xi[rows, a]  # never past the segment's far end, never back past x0's side
    xa = np.where(up, np.minimum(x0 + res, np.maximum(x0, X[rows, a, jj + 1])),
                  np.maximum(x0 + res, np.minimum(x0, X[rows, a, jj])))
    xi[rows[ok], a[ok]] = xa[ok]
    F = xi.sum(axis=-1)
    # keep the radii inside the budget when rounding put their sum above it
    over = F > kappa
    xi = np.where(over[:, None], xi * (kappa / np.where(over, F, 1.0))[:, None], xi)
    d, lam, binding = _proportional(inv, binding)
    if hit.size:  # keep the side whose certificate is the larger
        dL, lamL, bL = _proportional(invL[hit], np.ones(hit.size, dtype=bool))
        cR = _certificate(Q[hit], X[hit], d[hit], lam[hit], kappa[hit])
        cL = _certificate(Q[hit], X[hit], dL, lamL, kappa[hit])
        left = bL & (cL > cR)
        sel = hit[left]
        d[sel], lam[sel], binding[sel] = dL[left], lamL[left], True
    # radius 0: any lam >= the steepest slope makes the dual bound the nominal value
    if zero.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            steep = np.where(ps[zero] > 0.0, exc[zero] / (2.0 * ps[zero]), 0.0)
        lam[zero] = steep.max(axis=(1, 2))
    best = np.where(zero, Q0.argmax(axis=-1), zmin.argmax(axis=-1))
    single = ~binding
    d[rows[single], best[single]] = 1.0
    xi[zero] = 0.0
    return xi, d, lam, ended


def _proportional(inv, binding):
    """The policy d proportional to ``inv`` (R, A) and the multiplier 1/sum(inv) on the
    binding rows with some active action (zeros elsewhere), and those rows."""
    R, A = inv.shape
    d = np.zeros((R, A))
    sinv = inv.sum(axis=-1)
    bd = binding & (sinv > 0)
    d[bd] = inv[bd] / sinv[bd, None]
    lam = np.where(bd, 1.0 / np.where(bd, sinv, 1.0), 0.0)
    return d, lam, bd


def _segments_below(Q, exc, ps, u):
    r"""1/|q_a'| (R, A) on the segment of each action just below the level ``u`` (the
    left side of u; 0 for actions whose minimum is not below u) and the segment's index
    (R, A) (-1 for those)."""
    n = exc.shape[-1]
    j = np.count_nonzero(Q >= u[:, None, None], axis=-1)  # first breakpoint < u
    act = (j > 0) & (j <= n)
    jm = np.clip(j - 1, 0, n - 1)
    e, m = _take(exc, jm), _take(ps, jm)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(act & (e > 0.0), 2.0 * m / np.where(e > 0.0, e, 1.0), 0.0)
    return inv, np.where(act, jm, -1)


def _box_pieces(Q, sig, lo, hi):
    r"""The pieces of every :math:`h_a(\cdot, \lambda)` in the fixed greedy order.

    Piece (a, j), j = 0..n, covers :math:`d \in [\lambda\rho_j, \lambda\rho_{j+1}]` with
    slope :math:`Q_{a,j}`, where :math:`\rho_0 = 0`, :math:`\rho_j = 1/\mathrm{sig}_{j-1}`
    (inf for flat segments) and :math:`\rho_{n+1} = \infty`.  Returns, in the order of
    decreasing slope (R, A (n+1)): the start and end of each piece per unit
    :math:`\lambda`, its action's box bounds, and its (problem, action) index.
    """
    R, A, n1 = Q.shape
    rho = np.empty((R, A, n1 + 1))
    rho[..., 0] = 0.0
    with np.errstate(divide="ignore"):
        rho[..., 1:n1] = np.where(sig > 0.0, 1.0 / np.where(sig > 0.0, sig, 1.0), np.inf)
    rho[..., n1] = np.inf
    order = np.argsort(-Q.reshape(R, -1), axis=1)
    order += (np.arange(R, dtype=np.int64) * (A * n1))[:, None]
    pair = order // n1  # r * A + a
    start = np.take(rho[..., :-1], order)
    end = np.take(rho[..., 1:], order)
    return start, end, np.take(lo, pair), np.take(hi, pair), pair


def _psi(Q, X, pieces, lo, mass, kappa, lam):
    r""":math:`\Psi(\lambda)` (R,) and the greedy policy (R, A) that attains it.

    The pieces of all actions (:func:`_box_pieces`), clipped to the box, are filled in
    the order of decreasing slope with the mass left above ``lo``; then
    :math:`\Psi = -\lambda\kappa + \sum_a \min_j (d_a Q_{a,j} + \lambda X_{a,j})`.
    """
    rs, re, lo_p, hi_p, pair = pieces
    R, A, _ = Q.shape
    lamc = lam[:, None]
    with np.errstate(invalid="ignore"):
        start = lamc * rs
        end = lamc * re
    if (lam == 0.0).any():  # 0 * inf: a piece that never starts (or never ends)
        start[np.isnan(start)] = np.inf
        end[np.isnan(end)] = np.inf
    np.maximum(start, lo_p, out=start)
    np.minimum(end, hi_p, out=end)
    ls = np.subtract(end, start, out=end)
    np.maximum(ls, 0.0, out=ls)
    before = np.cumsum(ls, axis=1)
    before -= ls
    fill = np.subtract(mass[:, None], before, out=before)
    np.maximum(fill, 0.0, out=fill)
    np.minimum(fill, ls, out=fill)
    d = lo + np.bincount(pair.ravel(), weights=fill.ravel(), minlength=R * A).reshape(R, A)
    H = (d[..., None] * Q + lam[:, None, None] * X).min(axis=-1).sum(axis=-1)
    return H - lam * kappa, d


def _envelope(lam, val):
    r"""Upper bound of a concave function known at sorted points, and where it is attained.

    ``lam`` (R, T) increasing along T (the function's maximum lies in
    [lam[:, 0], lam[:, -1]]), ``val`` (R, T) its values.  On [lam_i, lam_{i+1}] the
    function lies below the chord through points i-1, i (extended to the right) and the
    chord through i+1, i+2 (extended to the left); the bound on the interval is the
    largest value of the lower of the two lines.  Returns the bound (R,), the point
    attaining it (R,), and the interval (R,).
    """
    R = lam.shape[0]
    w = np.diff(lam, axis=1)  # (R, T-1) widths (> 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.diff(val, axis=1) / w  # chord slopes, (R, T-1)
    ninf = np.full((R, 1), np.nan)
    m1 = np.concatenate([ninf, slope[:, :-1]], axis=1)  # chord (i-1, i) for interval i
    m2 = np.concatenate([slope[:, 1:], ninf], axis=1)  # chord (i+1, i+2)
    l0, l1 = lam[:, :-1], lam[:, 1:]
    y0, y1 = val[:, :-1], val[:, 1:]
    has1, has2 = np.isfinite(m1), np.isfinite(m2)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (y1 - y0 + m1 * l0 - m2 * l1) / (m1 - m2)
    cross = np.where(np.isfinite(cross), cross, l0)
    x_both = np.clip(cross, l0, l1)
    x_left = np.where(m2 < 0.0, l0, l1)  # only the right chord: its larger end
    x_right = np.where(m1 > 0.0, l1, l0)  # only the left chord
    x = np.where(has1 & has2, x_both, np.where(has2, x_left, np.where(has1, x_right, l0)))
    up1 = np.where(has1, y0 + np.where(has1, m1, 0.0) * (x - l0), np.inf)
    up2 = np.where(has2, y1 + np.where(has2, m2, 0.0) * (x - l1), np.inf)
    up = np.minimum(up1, up2)
    up = np.maximum(up, np.maximum(y0, y1))
    i = np.argmax(up, axis=1)
    rows = np.arange(R)
    return up[rows, i], x[rows, i], i


def _dual(Q, X, sig, kappa, lo, hi):
    r"""Any box: the maximum of the concave piecewise-linear :math:`\Psi(\lambda)`, by
    the compiled search (:func:`~rcmdp_exact.uncertainty.s_l1_numba.dual_rows`, the
    algorithm of :func:`_dual_numpy` row by row, with its order of the pieces).  Returns
    what :func:`_dual_numpy` returns."""
    from .s_l1_numba import dual_rows

    R = Q.shape[0]
    order = np.argsort(-Q.reshape(R, -1), axis=1)
    return dual_rows(*(np.ascontiguousarray(a, dtype=np.float64)
                       for a in (Q, X, sig, kappa, lo, hi)), order, _MAX_STEPS)


def _dual_numpy(Q, X, sig, kappa, lo, hi):
    r"""Any box: the maximum of the concave piecewise-linear :math:`\Psi(\lambda)` (the
    numpy oracle of :func:`_dual`).

    :math:`\Psi` is evaluated exactly at chosen points of :math:`[0, \lambda_{\max}]`
    (beyond :math:`\lambda_{\max} = \max_a h_a \mathrm{sig}_{a,0}` no spending pays,
    :math:`\Psi' = -\kappa`).  The chords of the evaluated points bound the concave
    function from above (:func:`_envelope`); the next point alternates between the
    maximiser of that bound (on the final two linear pieces it is the kink itself, and
    the bound is met) and the midpoint of the interval that holds it (so that the
    interval at least halves every other step).  Stops when the bound is within
    ``1e-13`` of the scale of the best value.  Returns the policy d (R, A) of the best
    point, the certified upper bound on :math:`V = \max\Psi` (R,) and whether every
    search ended.
    """
    R = Q.shape[0]
    pieces = _box_pieces(Q, sig, lo, hi)
    mass = np.maximum(1.0 - lo.sum(axis=-1), 0.0)
    lam_max = (hi[..., None] * sig[..., :1]).max(axis=(1, 2))
    fracs = (0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0)
    lam = np.stack([lam_max * f for f in fracs], axis=1)
    vals, ds = [], []
    for k in range(len(fracs)):
        v, d = _psi(Q, X, pieces, lo, mass, kappa, lam[:, k])
        vals.append(v)
        ds.append(d)
    val = np.stack(vals, axis=1)
    best = np.argmax(val, axis=1)
    rows = np.arange(R)
    best_val = val[rows, best]
    best_d = np.stack(ds, axis=1)[rows, best]
    flat = lam_max <= 0.0  # no segment can be bought: Psi(lam) = Psi(0) - lam kappa
    tol = 1e-13 * (1.0 + np.abs(Q).max(axis=(1, 2)))
    upper = np.where(flat, val[:, 0], np.inf)
    done = flat.copy()
    ended = True
    for step in range(_MAX_STEPS):
        up, x, i = _envelope(lam, val)
        upper = np.where(done, upper, up)
        done |= up - best_val <= tol
        if done.all():
            break
        lo_i, hi_i = lam[rows, i], lam[rows, i + 1]
        if step % 2:
            x = 0.5 * (lo_i + hi_i)
        x = np.where((x > lo_i) & (x < hi_i), x, 0.5 * (lo_i + hi_i))
        stuck = ~done & ~((x > lo_i) & (x < hi_i))  # the interval is one float wide
        done |= stuck
        x = np.where(done, lam[rows, best], x)
        v, d = _psi(Q, X, pieces, lo, mass, kappa, x)
        better = ~done & (v > best_val)
        best_val = np.where(better, v, best_val)
        best_d[better] = d[better]
        # insert the new point (finished rows repeat a point; keep their arrays sorted)
        x = np.where(done, np.nextafter(lam[:, -1], np.inf), x)
        v = np.where(done, val[:, -1], v)
        pos = np.count_nonzero(lam < x[:, None], axis=1)
        lam = _insert(lam, pos, x)
        val = _insert(val, pos, v)
    else:
        ended = bool(done.all())
    return best_d, np.maximum(upper, best_val), ended


def _insert(arr, pos, x):
    """Insert x[r] at position pos[r] of each row of ``arr`` (R, T) -> (R, T + 1)."""
    T = arr.shape[1]
    cols = np.arange(T + 1)[None, :]
    src = np.where(cols < pos[:, None], cols, cols - 1)
    out = np.take_along_axis(arr, np.clip(src, 0, T - 1), axis=1)
    return np.where(cols == pos[:, None], x[:, None], out)


def _lp_bellman(nom, Z, sup, rad, lo, hi):
    r"""The joint LP per problem: the dual of the inner LP maximised with the policy.

    .. math::

        \max_{\pi, \mu, \gamma, \nu}\; \sum_a \mu_a + \sum_{a,i} \hat p_{a,i}\gamma_{a,i}
        - \kappa\nu \quad\text{s.t.}\quad \mu_a + \gamma_{a,i} \le \pi_a z_{a,i},\;
        |\gamma_{a,i}| \le \nu,\; \nu \ge 0,\; \pi \in B.

    Returns the policies (R, A) and the LP values (R,).
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    R, A, n = Z.shape
    pol = np.zeros((R, A))
    val = np.zeros(R)
    for i in range(R):
        on = np.ones((A, n), dtype=bool) if sup is None else sup[i]
        a_idx, s_idx = np.nonzero(on)
        m = a_idx.size
        # variables: pi (A), mu (A), gamma (m), nu (1)
        nv = 2 * A + m + 1
        g_col = 2 * A + np.arange(m)
        rows = np.arange(m)
        blocks = [
            sp.csr_matrix((np.concatenate([-Z[i, a_idx, s_idx], np.ones(m), np.ones(m)]),
                           (np.concatenate([rows] * 3),
                            np.concatenate([a_idx, A + a_idx, g_col]))), shape=(m, nv)),
            sp.csr_matrix((np.concatenate([np.ones(m), -np.ones(m)]),
                           (np.concatenate([rows] * 2),
                            np.concatenate([g_col, np.full(m, nv - 1)]))), shape=(m, nv)),
            sp.csr_matrix((np.concatenate([-np.ones(m), -np.ones(m)]),
                           (np.concatenate([rows] * 2),
                            np.concatenate([g_col, np.full(m, nv - 1)]))), shape=(m, nv)),
        ]
        A_ub = sp.vstack(blocks).tocsr()
        A_eq = sp.csr_matrix((np.ones(A), (np.zeros(A, dtype=int), np.arange(A))),
                             shape=(1, nv))
        c = np.concatenate([np.zeros(A), -np.ones(A), -nom[i, a_idx, s_idx], [rad[i]]])
        bounds = ([(float(lo[i, a]), float(hi[i, a])) for a in range(A)]
                  + [(None, None)] * (A + m) + [(0.0, None)])
        sol = linprog(c, A_ub=A_ub, b_ub=np.zeros(3 * m), A_eq=A_eq, b_eq=[1.0],
                      bounds=bounds, method="highs",
                      options=dict(HIGHS_OPTIONS))
        if sol.status != 0:
            raise InputError(f"the joint LP of problem {i} ended with status {sol.status} "
                             f"({sol.message}); it is always feasible and bounded, so the "
                             f"input is likely badly scaled: check z, or use method='sort'")
        x = np.clip(sol.x[:A], lo[i], hi[i])
        pol[i] = x / x.sum()
        val[i] = -sol.fun
    return pol, val


# --------------------------------------------------------------------------- the set
class SRectL1Ball(Frozen, SRectangularSet):
    r"""An s-rectangular L1 uncertainty set: one budget per state shared by its actions.

    .. math::

        \mathcal U_s = \{ (p_a)_a : p_a \in \Delta(\Sigma_{s,a}),\;
        \textstyle\sum_a \|p_a - \hat P(\cdot \mid s, a)\|_1 \le \kappa(s) \}

    Parameters
    ----------
    nominal : array (S, A, S)
        Nominal transition probabilities :math:`\hat P(s' \mid s, a)`.
    radius : float or array (S,)
        The budget :math:`\kappa(s) \ge 0` of each state, shared by its actions.  A
        value >= 2 A allows every kernel on the support.
    support : bool array (S, A, S), optional
        Next states that may receive mass (default: all).  ``nominal`` must be zero
        outside the support.

    Attributes
    ----------
    nominal, radius, support
        Read-only arrays.

    Notes
    -----
    Immutable.  The adversary of state s minimises the policy's mixture
    :math:`\sum_a \pi(a \mid s) p_a^\top z_a`, so :meth:`worst_case` needs the policy,
    and the robust optimal policy may have to randomise (:meth:`bellman_max_min`).
    The algorithms and their proofs are in the module docstring and
    ``docs/s_rect.md``.

    Examples
    --------
    Two actions that the adversary can each spoil at rate 1/2 and 1 per unit of
    budget; budget 1.5.  Every deterministic policy is worth at most 1/2, the robust
    optimum randomises 2/3 : 1/3 and is worth 5/6:

    >>> import numpy as np
    >>> nominal = np.zeros((2, 2, 2)); nominal[:, :, 0] = 1.0
    >>> z = np.zeros((2, 2, 2)); z[:, 0, 0] = 1.0; z[:, 1, 0] = 2.0
    >>> res = SRectL1Ball(nominal, 1.5).bellman_max_min(z)
    >>> np.round(res.policy[0], 12).tolist(), round(float(res.value[0]), 12)
    ([0.666666666667, 0.333333333333], 0.833333333333)
    """

    _SUMMARY = "radius"
    _RADII = ("radius",)
    kind = KIND
    title = "s-rectangular L1 set"
    note = ("the s-rectangular L1 set whose budget per state is the sum of the L1 ball's "
            "radii over its actions (it contains the L1 ball)")

    def __init__(self, nominal, radius, support=None):
        P = as_float_array(nominal, "nominal", "give an (S, A, S) array of transition "
                           "probabilities", finite=False)
        if P.ndim != 3 or P.shape[0] != P.shape[2] or 0 in P.shape:
            raise InputError(
                f"nominal must have shape (S, A, S) with S, A >= 1 and nominal[s, a, s'] "
                f"the probability of s' after a in s, got shape {P.shape}"
            )
        S, A, _ = P.shape
        check_transition_rows(P, "nominal")
        rad = state_radii(radius, S)
        sup = support_mask(support, S, A, P, "nominal",
                           "put the nominal mass on the support or enlarge it")
        self._set(np.array(P), rad, sup)

    def _set(self, P, rad, sup) -> None:
        object.__setattr__(self, "_frozen", False)
        self._nominal = readonly(P)
        self._radius = readonly(rad)
        self._support = readonly(sup)
        self._frozen = True

    @classmethod
    def _trusted(cls, P, rad, sup) -> SRectL1Ball:
        out = object.__new__(cls)
        out._set(P, rad, sup)
        return out

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError("SRectL1Ball is immutable; use with_radius or build a new set")
        object.__setattr__(self, name, value)

    # ----------------------------------------------------------------- attributes
    @property
    def radius(self) -> np.ndarray:
        """The budget of each state (S,)."""
        return self._radius

    # ----------------------------------------------------------------- operations
    def with_radius(self, radius) -> SRectL1Ball:
        """The same set with new radii (only the radii are checked)."""
        return SRectL1Ball._trusted(self._nominal, state_radii(radius, self.n_states),
                                    self._support)

    def distance(self, P) -> np.ndarray:
        r""":math:`\sum_a \|P(\cdot \mid s, a) - \hat P(\cdot \mid s, a)\|_1` per state, (S,)."""
        return np.abs(self._kernel(P) - self._nominal).sum(axis=(1, 2))

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each state's rows of ``P`` (S, A, S) lie in the set (up to ``tol``), (S,)."""
        P = self._kernel(P)
        return self._rows_ok(P, tol).all(axis=1) & (self.distance(P) <= self._radius + tol)

    def pull_inside(self, P, keep=None) -> np.ndarray:
        r"""The kernel ``P`` (S, A, S) with every state outside its budget brought back.

        A state with :math:`\delta = \sum_a \|P(s, a) - \hat P(s, a)\|_1 > \kappa(s)`
        gets :math:`\hat P(s) + (\kappa / \delta)(P(s) - \hat P(s))` for all its actions at
        once: a point of the segment to the nominal at distance exactly :math:`\kappa`
        (the set is convex).  The states marked in ``keep`` (S,) bool are left as they are.
        """
        P = np.array(self._kernel(P))
        gap = P - self._nominal
        dist = np.abs(gap).sum(axis=(1, 2))
        outside = dist > self._radius
        if keep is not None:
            outside &= ~np.asarray(keep, dtype=bool)
        scale = np.where(outside, self._radius / np.where(outside, dist, 1.0), 1.0)
        return np.where(outside[:, None, None], self._nominal + scale[:, None, None] * gap, P)

    # ----------------------------------------------------------------- inputs
    def _flat(self, z, name="z"):
        """z as (R, A, S) rows with R = J S (or S), the batch size J (or None)."""
        S, A = self.n_states, self.n_actions
        zz, batched, per_pair = split_batch(z, S, A, name)
        if not per_pair:
            zz = np.broadcast_to(zz[..., None, None, :], (*zz.shape[:-1], S, A, S))
        J = zz.shape[0] if batched else None
        return zz, J

    def _policies(self, policy, J):
        """The policy as (S, A) or (J, S, A) distributions; returns it and its batch."""
        S, A = self.n_states, self.n_actions
        fix = (f"give an (S, A) = ({S}, {A}) array of action probabilities, or (J, S, A) "
               f"for a batch")
        pol = as_float_array(policy, "policy", fix)
        if pol.ndim == 3 and pol.shape[1:] == (S, A):
            PJ = pol.shape[0]
            axes = ("j", "s", "a")
        else:
            check_shape(pol, (S, A), "policy (or (J, S, A))", ("s", "a"))
            PJ = None
            axes = ("s", "a")
        check_distributions(pol, "policy", axes[:-1], what="action probabilities")
        if J is not None and PJ is not None and J != PJ:
            raise InputError(f"z has a batch of {J} and policy a batch of {PJ}; give the "
                             f"same J to both, or one policy (S, A) for every z")
        return pol, PJ

    def _rows(self, zz, J, extra=()):
        """Flatten z (and the (.., S, A) arrays of ``extra``) to R problems."""
        S, A = self.n_states, self.n_actions
        JJ = 1 if J is None else J
        Z = np.ascontiguousarray(np.broadcast_to(zz, (JJ, S, A, S))).reshape(JJ * S, A, S)
        nom = self._nominal if JJ == 1 else np.broadcast_to(self._nominal, (JJ, S, A, S))
        nom = np.ascontiguousarray(nom).reshape(JJ * S, A, S)
        sup = None
        if not self.full_support:
            sup = self._support if JJ == 1 else np.broadcast_to(self._support, (JJ, S, A, S))
            sup = np.ascontiguousarray(sup).reshape(JJ * S, A, S)
        rad = np.tile(self._radius, JJ)
        more = [np.ascontiguousarray(np.broadcast_to(x, (JJ, S, A))).reshape(JJ * S, A)
                for x in extra]
        return Z, nom, sup, rad, more

    def _shape_out(self, J, arr):
        S = self.n_states
        return arr.reshape(arr.shape[0] // S, S, *arr.shape[1:]) if J is not None else arr

    # ----------------------------------------------------------------- inner problem
    def worst_case(self, z, policy=None, *, method: str = "sort") -> Result:
        r"""The adversary's answer to a policy: for each state,
        :math:`\min_{p \in \mathcal U_s} \sum_a \pi(a \mid s)\, p_a^\top z(s, a, \cdot)`.

        Parameters
        ----------
        z : array (S,), (J, S), (S, A, S) or (J, S, A, S)
            The quantity minimised over next states (shared by all pairs, or per pair),
            with an optional batch axis J.
        policy : array (S, A) or (J, S, A)
            The policy whose mixture of rows the adversary minimises (required: the
            adversary of an s-rectangular set depends on it).
        method : {"sort", "lp"}
            ``"sort"``: the exact greedy budget split and the L1 sort (batched);
            ``"lp"``: one cvxpy LP per state (HiGHS), re-checked in numpy.

        Returns
        -------
        Result
            ``p`` (..., S, A, S) the minimising kernel (in the set), ``value`` (..., S)
            the per-state values :math:`\sum_a \pi_a p_a^\top z_a`, ``method``,
            ``success``, ``status``; the LP adds ``lp_status`` and ``violation``.

        Raises
        ------
        InputError
            Without a policy, or on shapes, non-finite values or a policy that is not a
            distribution per state.
        """
        if policy is None:
            raise InputError(
                "the adversary of an s-rectangular set depends on the policy: it "
                "minimises the policy's mixture of the rows of each state; pass "
                "policy= (an (S, A) array of action probabilities)"
            )
        check_choice(method, "method", self.methods,
                     hint=" ('sort': exact, batched; 'lp': one cvxpy LP per state)")
        zz, J = self._flat(z)
        pol, PJ = self._policies(policy, J)
        JJ = J if J is not None else PJ
        Z, nom, sup, rad, (pi,) = self._rows(zz, JJ, (pol,))
        if method == "sort":
            p, value, _ = _exact_worst_case(nom, Z, sup, rad, pi)
            return Result(p=self._shape_out(JJ, p), value=self._shape_out(JJ, value),
                          method="sort", success=True, status=Status.OPTIMAL,
                          message="exact greedy budget split and L1 sort")
        p, ok, statuses = _lp_worst_case(nom, Z, sup, rad, pi)
        value = np.einsum("ran,ran,ra->r", p, Z, pi)
        viol = _violation(p, nom, sup, rad)
        bad = viol > 1e-8
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            warnings.warn(f"s-rectangular LP of problem {i}: the answer violates the "
                          f"constraints by {viol[i]:.2e} when re-checked in numpy; marked "
                          f"success=False", RuntimeWarning, stacklevel=2)
            ok &= ~bad
        success = bool(ok.all())
        return Result(
            p=self._shape_out(JJ, p), value=self._shape_out(JJ, value), method="lp",
            success=success,
            status=Status.OPTIMAL if success else Status.OPTIMAL_INACCURATE,
            message=("HiGHS solved every LP; the answers were re-checked feasible"
                     if success else f"{int((~ok).sum())} of {ok.size} LPs inaccurate or "
                     f"infeasible on re-check"),
            lp_status=self._shape_out(JJ, np.array(statuses, dtype=object)),
            violation=self._shape_out(JJ, viol),
        )

    def bellman_max_min(self, z, lo=None, hi=None, *, method: str = "sort") -> Result:
        r"""The robust Bellman optimality update of the set, state by state.

        .. math::

            V(s) = \max_{\pi_s \in B_s} \min_{p \in \mathcal U_s}
            \sum_a \pi_s(a)\, p_a^\top z(s, a, \cdot),
            \qquad B_s = \{\ell_s \le \pi_s \le h_s\} \cap \Delta_A

        (max-min = min-max: the function is bilinear, both sets compact and convex).

        Parameters
        ----------
        z : array (S, A, S) or (J, S, A, S)
            The quantity the adversary minimises (also (S,) or (J, S), shared).
        lo, hi : float or array (S, A) or (J, S, A), optional
            Bounds of the policy box (default: the whole simplex); entries are clipped
            to [0, 1]; each state's box must meet the simplex.
        method : {"sort", "level", "dual", "lp"}
            ``"sort"`` (default): ``"level"`` on the whole simplex, ``"dual"`` with a
            box.  ``"level"``: Newton's method on the level u of
            :math:`\min\{u : \sum_a q_a^{-1}(u) \le \kappa\}` (whole simplex only).
            ``"dual"``: the chord search on the budget multiplier (any box).
            ``"lp"``: one joint LP per state (``scipy.optimize.linprog``, HiGHS).

        Returns
        -------
        Result
            ``value`` (..., S) the optimal value (the worst case of ``policy``),
            ``policy`` (..., S, A) a maximising policy (randomised where it must be),
            ``p`` (..., S, A, S) the adversary's answer to that policy, ``gap`` (..., S)
            a bound on the distance from optimality ("level", "dual": an upper bound
            on V minus a lower bound on the policy's worst case, both from duality;
            "lp": the LP's optimum minus the policy's exact worst case; 0 up to
            rounding), ``method`` (the method used), ``success`` (every gap within
            1e-9 of the scale of z), ``status``, ``message``, ``repaired`` (..., S)
            (bool: the states whose "level" or "dual" gap exceeded that and that took
            the joint LP's policy instead, its gap measured from the method's own
            certified upper bound to the policy's exact worst case); the LP adds
            ``lp_value``.
        """
        check_choice(method, "method", _BELLMAN_METHODS,
                     hint=" ('sort': the exact fast method; 'level': simplex only; 'dual': "
                          "any box; 'lp': one LP per state)")
        zz, J = self._flat(z)
        box = lo is not None or hi is not None
        lo_a, hi_a, BJ = self._box(lo, hi, J)
        JJ = J if J is not None else BJ
        if box and method in ("sort", "level") and (lo_a <= 0.0).all() and (hi_a >= 1.0).all():
            box = False  # the box is the whole simplex
        if method == "sort":
            method = "dual" if box else "level"
        if method == "level" and box:
            raise InputError("method='level' solves the whole simplex only; drop lo and hi "
                             "or use method='dual' (or 'sort') for a policy box")
        Z, nom, sup, rad, (lo_r, hi_r) = self._rows(zz, JJ, (lo_a, hi_a))
        extra = {}
        ended = True
        if method == "lp":
            d, lp_val = _lp_bellman(nom, Z, sup, rad, lo_r, hi_r)
            p, value, _ = _exact_worst_case(nom, Z, sup, rad, d)
            gap = lp_val - value
            extra["lp_value"] = self._shape_out(JJ, lp_val)
        else:
            Q, X, exc, ps, zmin, sig, flat = _breakpoints(nom, Z, sup,
                                                          slopes=method == "dual")
            if method == "level":
                xi, d, lam, ended = _level(Q, X, exc, ps, zmin, rad)
                p = _rows_at(nom, Z, sup, X, ps, flat, xi)
                rowval = np.einsum("ran,ran->ra", p, Z)
                value = np.einsum("ra,ra->r", d, rowval)
                upper = rowval.max(axis=-1)
                gap = upper - _certificate(Q, X, d, lam, rad)
            else:
                d, upper, ended = _dual(Q, X, sig, rad, lo_r, hi_r)
                p, value, _ = _exact_worst_case(nom, Z, sup, rad, d)
                gap = upper - value
            value, gap = np.array(value), np.array(gap)
        scale = 1.0 + np.abs(Z).max(axis=(1, 2))
        repaired = np.zeros(Z.shape[0], dtype=bool)
        bad = ~(gap <= 1e-9 * scale)
        if bad.any():
            p, d = np.array(p), np.array(d)
        if bad.any() and method == "level":
            # the cheap certificate (one multiplier) is loose there: bound the policy's
            # worst case by its exact value instead (the upper side is unchanged)
            p_b, v_b, _ = _exact_worst_case(nom[bad], Z[bad], _sub(sup, bad), rad[bad],
                                            d[bad])
            p[bad], value[bad], gap[bad] = p_b, v_b, upper[bad] - v_b
            bad = ~(gap <= 1e-9 * scale)
        if bad.any() and method != "lp":
            # the repair: the joint LP's policy on those states, certified by this
            # method's own upper bound on V minus the exact worst case of the LP policy
            try:
                d_b, _ = _lp_bellman(nom[bad], Z[bad], _sub(sup, bad), rad[bad], lo_r[bad],
                                     hi_r[bad])
            except InputError:  # HiGHS failed too: keep the uncertified answer, unrepaired
                d_b = d[bad]
            p_b, v_b, _ = _exact_worst_case(nom[bad], Z[bad], _sub(sup, bad), rad[bad], d_b)
            gap_b = upper[bad] - v_b
            fix = np.flatnonzero(bad)[gap_b < gap[bad]]
            take = gap_b < gap[bad]
            d[fix], p[fix], value[fix], gap[fix] = d_b[take], p_b[take], v_b[take], gap_b[take]
            repaired[fix] = True
        good = ended and bool((gap <= 1e-9 * scale).all())
        return Result(
            value=self._shape_out(JJ, value), policy=self._shape_out(JJ, d),
            p=self._shape_out(JJ, p), gap=self._shape_out(JJ, gap), method=method,
            repaired=self._shape_out(JJ, repaired),
            success=good, status=Status.OPTIMAL if good else Status.OPTIMAL_INACCURATE,
            message=(("optimal policy and its worst case, certified by duality"
                      + (f" ({int(repaired.sum())} state(s) repaired by the joint LP, its "
                         f"policy certified by this method's upper bound)"
                         if repaired.any() else "")) if good else
                     "the gap of some state exceeds 1e-9 of the scale of z; value and p "
                     "are still the exact worst case of the returned policy"),
            **extra,
        )

    def _box(self, lo, hi, J):
        """The policy box as (S, A) or (J, S, A) arrays clipped to [0, 1], checked."""
        S, A = self.n_states, self.n_actions
        out, batch = [], None
        for name, val, default in (("lo", lo, 0.0), ("hi", hi, 1.0)):
            arr = as_float_array(default if val is None else val, name,
                                 f"give a number or an (S, A) = ({S}, {A}) array of policy "
                                 f"bounds")
            if arr.ndim == 3 and arr.shape[1:] == (S, A):
                if batch is not None and batch != arr.shape[0]:
                    raise InputError(f"lo and hi have batches {batch} and {arr.shape[0]}; "
                                     f"give both the same J")
                batch = arr.shape[0]
            elif arr.shape not in ((), (S, A)):
                check_shape(arr, (S, A), f"{name} (or one number, or (J, S, A))", ("s", "a"))
            out.append(np.clip(arr, 0.0, 1.0))
        if J is not None and batch is not None and J != batch:
            raise InputError(f"z has a batch of {J} and the policy box a batch of {batch}; "
                             f"give the same J")
        shape = (S, A) if batch is None else (batch, S, A)
        lo_a, hi_a = (np.array(np.broadcast_to(x, shape)) for x in out)
        tol = row_tolerance(A)
        axes = ("s", "a") if batch is None else ("j", "s", "a")
        bad = lo_a > hi_a + tol
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(f"the policy box is empty at {where(axes, idx)}: lo = "
                             f"{float(lo_a[idx])!r} > hi = {float(hi_a[idx])!r} (after "
                             f"clipping to [0, 1]); give lo <= hi")
        slo, shi = lo_a.sum(axis=-1), hi_a.sum(axis=-1)
        bad = (slo > 1.0 + tol) | (shi < 1.0 - tol)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(f"the policy box of {where(axes[:-1], idx)} does not meet the "
                             f"simplex: sum(lo) = {float(slo[idx])!r}, sum(hi) = "
                             f"{float(shi[idx])!r}; the bounds must allow a distribution "
                             f"(sum(lo) <= 1 <= sum(hi))")
        return lo_a, np.maximum(hi_a, lo_a), batch

    # ----------------------------------------------------------------- persistence
    def _arrays(self) -> dict:
        return {"nominal": self._nominal, "radius": self._radius, "support": self._support}

    @classmethod
    def _from_arrays(cls, data: dict) -> SRectL1Ball:
        return cls(data["nominal"], data["radius"], data["support"])

    # ----------------------------------------------------------------- the kind
    @classmethod
    def l1_level_radius(cls, level: float) -> float:
        r"""Radius :math:`r` per action, one budget :math:`A r` per state shared by its
        actions: the set contains the L1 ball of radius :math:`r`."""
        return float(level)

    @classmethod
    def from_counts(cls, counts, *, delta: float, hoeffding_l1) -> SRectL1Ball:
        r"""The kind ``s-l1`` of an estimation: the budget of a state is the sum of the L1
        ball's radii over its actions, :math:`\kappa(s) = \min(2A, \sum_a \alpha(s, a))`,
        around the ball's nominal and on its support.  It is the smallest s-rectangular
        L1 budget that contains the ball ``hoeffding_l1`` (every kernel of the ball has
        :math:`\sum_a \|p_a - \hat p_a\|_1 \le \sum_a \alpha(s, a)`), so the set keeps
        the ball's confidence :math:`1 - \delta`; it lets the adversary of a state
        spend the whole budget on one action, so it is more pessimistic than the ball."""
        kind_delta(delta)
        budget = np.minimum(hoeffding_l1.alpha.sum(axis=1), 2.0 * hoeffding_l1.n_actions)
        return cls(hoeffding_l1.nominal, budget, support=hoeffding_l1.support)

    @classmethod
    def around(cls, model, radius: float, support: str = "nominal") -> SRectL1Ball:
        r"""The kind ``s-l1`` around ``model``'s own kernel: the budget of a state is
        :math:`\min(2A, \sum_a \alpha(s, a))` for the L1 ball of
        :meth:`L1Ball.around <rcmdp_exact.L1Ball.around>` (the smallest that contains it)."""
        radius = kind_radius(radius)
        from .l1 import L1Ball

        uset = L1Ball.around(model, radius, support)
        budget = np.minimum(uset.alpha.sum(axis=1), 2.0 * model.n_actions)
        return cls(uset.nominal, budget, support=uset.support)

    @classmethod
    def strategy(cls, model, *, max_radius: float = 2.0, support=("all", "nominal"),
                 grid: int | None = 4):
        """Hypothesis strategy of s-rectangular sets around ``model.P``: a budget per
        state in [0, max_radius] (0 at terminal states)."""
        check_strategy(grid, max_radius=max_radius)
        from hypothesis import strategies as st

        from ._draw import state_budgets, supports

        return st.tuples(supports(model, support), state_budgets(model, max_radius, grid=grid)
                         ).map(lambda t: cls(model.P, t[1], t[0]))


def _sub(sup, rows):
    """The support of the selected problems (None: all next states)."""
    return None if sup is None else sup[rows]


def _violation(p, nom, sup, rad) -> np.ndarray:
    r"""Largest violation of the constraints of :math:`\mathcal U_s`, per problem (R,)."""
    viol = np.maximum(-p.min(axis=(1, 2)), np.abs(p.sum(axis=-1) - 1.0).max(axis=-1))
    viol = np.maximum(viol, np.abs(p - nom).sum(axis=(1, 2)) - rad)
    if sup is not None:
        viol = np.maximum(viol, np.where(sup, 0.0, np.abs(p)).max(axis=(1, 2)))
    return viol
