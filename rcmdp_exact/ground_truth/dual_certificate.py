r"""A certified interval on the Lagrangian dual of an RCMDP, and certified duality gaps.

The dual function of the robust CMDP with a combined adversary is

.. math::

    g(\lambda) = \max_\pi \min_{P \in \mathcal P} \bigl[V_r - \lambda^\top C\bigr](\pi, P)
                 + \lambda^\top d, \qquad D = \min_{\lambda \ge 0} g(\lambda),

each :math:`g(\lambda)` the optimal value of a robust MDP with reward
:math:`r - \lambda^\top c`, found by robust policy iteration
(:func:`~rcmdp_exact.robust_value_iteration`) and certified by its residual:
:math:`|W^* - W| \le \|TW - W\|_\infty / (1 - \gamma)`.

**Weak duality** holds for every :math:`\lambda \ge 0`: for a robust-feasible
:math:`\pi` (every :math:`\max_P C_k(\pi, P) \le d_k`), :math:`\min_P [V - \lambda^\top
C] + \lambda^\top d \ge \min_P V - \lambda^\top \max_P C + \lambda^\top d \ge \min_P
V`, so the RCMDP optimum OPT (each constraint with its own adversary) satisfies
OPT :math:`\le g(\lambda)` and OPT :math:`\le D`.

**g is not convex in general.**  For a fixed pair :math:`(\pi, P)` the bracket is affine
in :math:`\lambda`; a max over :math:`\pi` of a min over :math:`P` of affine functions
is neither convex nor concave.  For sa-rectangular sets the robust MDP has a value
(:math:`\max_\pi \min_P = \min_P \max_\pi`, the adversary's best response being one
kernel for every state), so :math:`g(\lambda) = \min_P G_P(\lambda)` with
:math:`G_P(\lambda) = \max_\pi [V - \lambda^\top C](\pi, P) + \lambda^\top d` convex:
a minimum of convex functions, which need not be convex, and
:math:`D = \min_P \min_\lambda G_P = \min_P \mathrm{OPT}_{\mathrm{CMDP}}(P)`, the
smallest nominal CMDP optimum over the kernels of the set (where each CMDP is
feasible).  So the certificate uses what does hold:

* **Slopes.**  For every pair :math:`(\pi, P)` the slope in :math:`\lambda_k` is
  :math:`d_k - C_k(\pi, P)`, with :math:`C_k(\pi, P) \in [\underline c_k,
  \overline c_k]` (certified from the data: the smallest and largest cost of a
  transition the set allows, over :math:`1 - \gamma`, and 0 when there are terminal
  states).  Max and min keep such bounds, so for :math:`t \ge 0`,
  :math:`t (d_k - \overline c_k) \le g(\lambda + t e_k) - g(\lambda) \le t (d_k -
  \underline c_k)`.  On a box cell, each evaluated corner gives an affine minorant of g;
  the cell's lower bound is the minimum over the cell of the largest of them (a small
  LP, certified by its dual weights; closed form for K = 1).
* **A bounded search box.**  A Slater point, a policy :math:`\bar\pi` whose certified
  worst-case costs are strictly below the budgets (:math:`\bar C_k < d_k`), gives
  :math:`g(\lambda) \ge \underline V(\bar\pi) + \lambda^\top (d - \bar C)` for every
  :math:`\lambda`, so every :math:`\lambda` with some :math:`\lambda_k > (\text{hi} -
  \underline V)/(d_k - \bar C_k)` has :math:`g(\lambda) > \text{hi} \ge D`: the minimum
  lies in the box :math:`[0, \lambda_{\max}]`.  Candidates for :math:`\bar\pi` are the
  maximisers met and the policies of least worst-case cost; without a Slater point the
  minimum may lie at infinity, and ``lo`` falls back on weak duality: the certified
  worst-case value of a robust-feasible candidate (:math:`\le` OPT :math:`\le` D),
  or :math:`-\infty`.
* **Branch and bound** over cells of the box: the cell of smallest lower bound is split
  (K = 1: at the minimum of its envelope, kept inside the middle half; otherwise at the
  middle of its widest side, widths weighted by the slope range) until ``hi - lo`` is
  at most ``tol * max(1, |hi|)`` or the budget of evaluations is spent.  ``hi`` is the
  smallest certified upper bound of a :math:`g(\lambda)` met, ``lo`` the smallest cell
  lower bound.

:func:`duality_gap` compares D with a bracket of OPT
(:func:`~rcmdp_exact.rcmdp_bracket`): a certified ``lo`` above the bracket's upper side
proves that strong duality fails on that model.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time

import numpy as np

from .._checks import check_fields, check_int, check_real
from .._result import Result, Status
from ..robust import WorstCaseObjective, check_robust_inputs
from ..robust.engine import RobustGame, SafetyNet

__all__ = [ "DUAL_GAP_TOL", "DUAL_ITER", "DUAL_TOL", "certified_dual",
           "duality_gap"]

#: The assumptions under which ``lo`` and ``hi`` of :func:`certified_dual` bound D.
_ASSUMPTIONS = (
    "D = min over lam >= 0 of g(lam), g(lam) = max_pi min_P [V - lam.C](pi, P) + lam.d "
    "with one adversary for the Lagrangian (P in the sa-rectangular set); each g(lam) "
    "is a robust MDP value, certified by its Bellman residual (error <= residual / "
    "(1 - gamma), plus a rounding allowance of 1e-12 of its value scale); g is not "
    "assumed convex: the lower side uses the slope bounds d_k - C_k in [d_k - cmax_k, "
    "d_k - cmin_k] (cmin, cmax: the least and largest cost of an allowed transition, "
    "over 1 - gamma) and the box [0, lam_max] justified by a Slater point (a policy "
    "with certified worst-case costs strictly below the budgets); without one, "
    "lo is the certified worst-case value of a robust-feasible policy met (weak "
    "duality), or -inf."
)


#: Tolerance and iteration cap of the robust fixed points of the dual (those of
#: :func:`~rcmdp_exact.robust_evaluate` and :func:`~rcmdp_exact.robust_value_iteration`).
DUAL_TOL = 1e-12
DUAL_ITER = 100_000
#: The relative gap at which :func:`certified_dual` stops by default.
DUAL_GAP_TOL = 1e-6


def _lagrangian_reward(model, lam) -> np.ndarray:
    r"""The reward :math:`r - \lambda^\top c` (1, S, A, S) of multipliers ``lam`` (K,)."""
    return WorstCaseObjective("lagrangian", np.asarray(lam, dtype=np.float64)
                              ).transition_reward(model)[None]


class _Evaluations:
    """Certified values of g at the points met, cached by the exact coordinates; every
    robust fixed point on the one game (:data:`DUAL_TOL`, :data:`DUAL_ITER`; its safety
    net, ``net``, stops a fixed point at its next iteration, still certified by its
    residual, and the search at the next point).  The budgets are the game's,
    ``game.d``."""

    def __init__(self, game, budget: int, net: SafetyNet | None):
        self.game = game
        model = game.model
        self.model, self.uset = model, game.uset
        self.gamma = float(model.gamma)
        self.d = game.d
        self.rmax = float(np.abs(model.R).max(initial=0.0))
        self.cmax_abs = np.abs(np.asarray(model.C)).max(axis=(0, 1, 2), initial=0.0)
        self.cache: dict = {}
        self.h_cache: dict = {}
        self.budget, self.net = budget, net
        self.lam, self.lo, self.hi, self.policies = [], [], [], []

    @property
    def count(self) -> int:
        """Robust fixed points computed: values of g and of fixed policies."""
        return len(self.cache) + len(self.h_cache)

    def exhausted(self) -> bool:
        return self.count >= self.budget or (self.net is not None and self.net.expired())

    def _scale(self, key) -> float:
        return (max(1.0, self.rmax + float(np.dot(key, self.cmax_abs))) / (1.0 - self.gamma)
                + abs(float(np.dot(key, self.d))))

    def h(self, policy: np.ndarray, lam: np.ndarray) -> float:
        r"""A certified lower bound on :math:`h_\pi(\lambda) = \min_P [V - \lambda^\top
        C](\pi, P) + \lambda^\top d` (the robust Lagrangian of a fixed policy, concave in
        :math:`\lambda`)."""
        key = (policy.tobytes(), tuple(float(x) for x in lam))
        if key in self.h_cache:
            return self.h_cache[key]
        lam_t = key[1]
        fp = self.game.adversary(_lagrangian_reward(self.model, lam_t), _one(policy))
        val = float(self.model.p0 @ fp.w[0]) + float(np.dot(lam_t, self.d))
        out = val - float(fp.residual[0]) / (1.0 - self.gamma) - 1e-12 * self._scale(lam_t)
        self.h_cache[key] = out
        return out

    def h_many(self, pairs) -> None:
        """:meth:`h` of every (policy, lam) pair not met yet, in one batch of fixed points
        (the adversary of each pair stops by its own residual, so each bound is certified
        as in :meth:`h`; one call instead of one per pair)."""
        todo, seen = [], set()
        for policy, lam in pairs:
            key = (policy.tobytes(), tuple(float(x) for x in lam))
            if key not in self.h_cache and key not in seen:
                seen.add(key)
                todo.append((key, policy))
        if len(todo) < 2:
            for key, policy in todo:
                self.h(policy, np.array(key[1]))
            return
        g = np.concatenate([_lagrangian_reward(self.model, key[1]) for key, _ in todo])
        pis = np.stack([policy for _, policy in todo])
        fp = self.game.adversary(g, pis)
        for j, (key, _) in enumerate(todo):
            lam_t = key[1]
            val = float(self.model.p0 @ fp.w[j]) + float(np.dot(lam_t, self.d))
            self.h_cache[key] = (val - float(fp.residual[j]) / (1.0 - self.gamma)
                                 - 1e-12 * self._scale(lam_t))

    def many(self, lams) -> None:
        """g at every point of ``lams`` not met yet, in one batch of robust fixed points
        (each certified by its own residual, as in :meth:`__call__`)."""
        keys = list(dict.fromkeys(tuple(float(x) for x in lam) for lam in lams))
        keys = [k for k in keys if k not in self.cache]
        if len(keys) < 2:
            return
        S, A, J = self.game.S, self.game.A, len(keys)
        g = np.concatenate([_lagrangian_reward(self.model, k) for k in keys])
        sol = self.game.solve(g, np.zeros((J, S, A)), np.ones((J, S, A)))
        for j, key in enumerate(keys):
            res = Result(value=float(self.model.p0 @ sol.w[j]), policy=sol.pi[j],
                         residual=float(np.abs(sol.q[j].max(axis=1) - sol.w[j]).max()))
            self._store(key, res)

    def _store(self, key, res):
        val = float(res.value) + float(np.dot(key, self.d))
        err = float(res.residual) / (1.0 - self.gamma) + 1e-12 * self._scale(key)
        out = (val - err, val + err, res.policy)
        self.cache[key] = out
        self.lam.append(key)
        self.lo.append(out[0])
        self.hi.append(out[1])
        self.policies.append(res.policy)
        return out

    def __call__(self, lam: np.ndarray):
        key = tuple(float(x) for x in lam)
        if key in self.cache:
            return self.cache[key]
        return self._store(key, _robust_optimum(self.game,
                                                _lagrangian_reward(self.model, key)))

    def best(self):
        i = int(np.argmin(self.hi))
        return self.hi[i], np.array(self.lam[i]), self.policies[i]


def _cost_range(model, uset) -> tuple[np.ndarray, np.ndarray]:
    """Certified bounds (K,) on C_k(pi, P) from p0 for every policy and kernel of the set."""
    C = np.asarray(model.C, dtype=np.float64)
    live = ~np.asarray(model.terminal, dtype=bool)
    allowed = np.asarray(uset.support, dtype=bool) & live[:, None, None]
    vals = np.where(allowed[..., None], C, np.nan)
    lo = np.nanmin(vals, axis=(0, 1, 2)) if allowed.any() else np.zeros(model.n_constraints)
    hi = np.nanmax(vals, axis=(0, 1, 2)) if allowed.any() else np.zeros(model.n_constraints)
    if (~live).any():
        lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
    g = 1.0 - float(model.gamma)
    return lo / g, hi / g


def _one(policy: np.ndarray) -> np.ndarray:
    """A batch (1, S, A) of one policy, a broadcast view as in
    :func:`~rcmdp_exact.robust_evaluate` (numpy's sums over a broadcast axis and over a
    copy may differ in the last bit; so do those over the model's broadcast R and over
    a copy of it, which the adversary of the value gets here as there)."""
    return np.broadcast_to(policy, (1, *policy.shape))


def _robust_optimum(game, g: np.ndarray) -> Result:
    """The robust optimum of reward g (1, S, A, S) by robust policy iteration: ``value``
    (p0.v), ``residual`` :math:`\\|\\max_a Q - v\\|_\\infty` and ``policy`` (S, A)."""
    S, A = game.S, game.A
    sol = game.solve(g, np.zeros((1, S, A)), np.ones((1, S, A)))
    v, q = sol.w[0], sol.q[0]
    return Result(value=float(game.model.p0 @ v), policy=sol.pi[0],
                  residual=float(np.abs(q.max(axis=1) - v).max()))


def _certified_numbers(game, policy) -> tuple[float, np.ndarray]:
    """A certified lower bound on min_P V(pi, P) and upper bounds (K,) on max_P C_k(pi, P):
    one robust fixed point per objective."""
    model = game.model
    gamma = float(model.gamma)
    C = np.asarray(model.C)
    res = game.adversary(np.array(model.R, dtype=np.float64)[None], _one(policy))
    scale = max(1.0, float(np.abs(model.R).max(initial=0.0))) / (1.0 - gamma)
    v_lo = float(model.p0 @ res.w[0]) - res.residual[0] / (1.0 - gamma) - 1e-12 * scale
    costs = np.empty(model.n_constraints)
    for k in range(model.n_constraints):
        rk = game.adversary(-C[..., k:k + 1].sum(axis=3)[None], _one(policy))
        sk = max(1.0, float(np.abs(C[..., k]).max(initial=0.0))) / (1.0 - gamma)
        costs[k] = -float(model.p0 @ rk.w[0]) + rk.residual[0] / (1.0 - gamma) + 1e-12 * sk
    return float(v_lo), costs


def _least_cost_policies(game) -> list[np.ndarray]:
    """Robust policies of least worst-case total cost and of least cost k, for each k."""
    model = game.model
    C = np.asarray(model.C)
    weights = [np.ones(model.n_constraints)]
    if model.n_constraints > 1:
        weights += list(np.eye(model.n_constraints))
    return [_robust_optimum(game, -(C @ w)[None]).policy for w in weights]


def _slope_bound(corners: list, s1: np.ndarray, s2: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray) -> tuple[float, np.ndarray]:
    r"""The slope bound of a cell [lo, hi] from its corners' lower values (c, g_c).

    Corner c (at the low or high end of each axis) gives the minorant
    :math:`g_c + \sum_k \sigma_k(c) (\lambda_k - c_k)` on the cell, with
    :math:`\sigma_k = s1_k` at a low end and :math:`s2_k` at a high end.  Returns the
    minimum over the cell of their maximum (closed form for K = 1; an LP certified by
    its dual weights otherwise) and the point where it is attained.
    """
    K = lo.size
    if K == 1:
        (a, ga), (b, gb) = corners
        a, b = a[0], b[0]
        pts = [a, b]
        if s1[0] != s2[0] and b > a:
            x = (gb - ga - s2[0] * b + s1[0] * a) / (s1[0] - s2[0])
            pts.append(min(max(x, a), b))
        vals = [max(ga + s1[0] * (x - a), gb + s2[0] * (x - b)) for x in pts]
        i = int(np.argmin(vals))
        return float(vals[i]), np.array([pts[i]])
    # min t s.t. g_c + sigma_c.(lam - c) <= t for every corner, lo <= lam <= hi
    rows, rhs, sig = [], [], []
    for c, gc in corners:
        sc = np.where(c == lo, s1, s2)
        rows.append(np.concatenate([sc, [-1.0]]))
        rhs.append(float(sc @ c) - gc)
        sig.append((sc, float(gc - sc @ c)))
    mu = np.ones(len(corners)) / len(corners)
    point = 0.5 * (lo + hi)
    sol = _cell_lp(np.array(rows), np.array(rhs), lo, hi)
    if sol is not None:
        x, duals = sol
        mu = np.maximum(-duals, 0.0)
        mu = mu / mu.sum() if mu.sum() > 0 else np.ones(len(corners)) / len(corners)
        point = x[:K]
    # certified: the minimum over the cell of the mu-weighted minorant (affine)
    slope = sum(m * sc for m, (sc, _) in zip(mu, sig, strict=True))
    const = sum(m * k0 for m, (_, k0) in zip(mu, sig, strict=True))
    bound = const + float(np.sum(np.minimum(slope * lo, slope * hi)))
    return float(bound), point


_HIGHS = threading.local()  # one quiet highspy.Highs per thread for the cell LPs


def _cell_lp(rows: np.ndarray, rhs: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """min t s.t. rows @ (lam, t) <= rhs, lo <= lam <= hi, t free: (x, row duals) or None.

    HiGHS through ``highspy`` (a few corners and K + 1 columns: ``scipy.optimize.linprog``
    spends 4 times as long checking its options as HiGHS solving).  Only a guide: the
    bound of :func:`_slope_bound` is certified by its dual weights, whatever they are.
    """
    import highspy

    from .._solvers import new_highs

    h = getattr(_HIGHS, "solver", None)
    if h is None:
        h = _HIGHS.solver = new_highs()
    m, n = rows.shape
    h.clearModel()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = np.concatenate([np.zeros(n - 1), [1.0]])
    lp.col_lower_ = np.append(np.asarray(lo, dtype=np.float64), -np.inf)
    lp.col_upper_ = np.append(np.asarray(hi, dtype=np.float64), np.inf)
    lp.row_lower_, lp.row_upper_ = np.full(m, -np.inf), np.asarray(rhs, dtype=np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, m * n + 1, m, dtype=np.int32)
    lp.a_matrix_.index_ = np.tile(np.arange(m, dtype=np.int32), n)
    lp.a_matrix_.value_ = np.ascontiguousarray(rows.T, dtype=np.float64).ravel()
    try:
        h.passModel(lp)
        h.run()
    except (RuntimeError, ValueError, ArithmeticError):
        return None
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    sol = h.getSolution()
    if not sol.dual_valid:
        return None
    return (np.asarray(sol.col_value, dtype=np.float64),
            np.asarray(sol.row_dual, dtype=np.float64))


def _concave_bound(ev, corners: list) -> tuple[float, np.ndarray | None]:
    r"""The bound of a cell from the policies that maximise g at its corners.

    For the maximiser :math:`\pi_c` at corner c, :math:`g \ge h_{\pi_c}` everywhere,
    and :math:`h_{\pi_c}(\lambda) = \min_P [V - \lambda^\top C](\pi_c, P) +
    \lambda^\top d` is concave (a minimum of affine functions), so its minimum over the
    cell is at a corner: the bound is :math:`\max_c \min_{c'} h_{\pi_c}(c')` (with
    :math:`h_{\pi_c}(c) = g(c)`).  Tight where one policy is optimal on the whole cell.
    For K = 1 also returns where the two concave pieces, extended linearly, cross (the
    kink of g, where its minimum usually lies), or None.
    """
    ev.h_many([(pol, c2) for c, _, pol in corners for c2, _, _ in corners
               if not np.array_equal(c2, c)])
    vals = []
    for c, gc, pol in corners:
        vals.append(min([gc] + [ev.h(pol, c2) for c2, _, _ in corners
                                if not np.array_equal(c2, c)]))
    point = None
    if len(corners) == 2 and corners[0][0].size == 1:
        (a, ga, pa), (b, gb, pb) = corners
        a, b = float(a[0]), float(b[0])
        ha_b, hb_a = ev.h(pa, np.array([b])), ev.h(pb, np.array([a]))
        sa, sb = (ha_b - ga) / (b - a), (gb - hb_a) / (b - a)
        if b > a and sa != sb:
            x = a + (hb_a - ga) / (sa - sb)
            if a < x < b:
                point = np.array([x])
    return float(max(vals)), point


def certified_dual(model, uset, *, tol: float = DUAL_GAP_TOL, max_evaluations: int = 2000,
                   time_limit: float | None = None) -> Result:
    r"""A certified interval [lo, hi] on the Lagrangian dual D of an RCMDP.

    :math:`D = \min_{\lambda \ge 0} \max_\pi \min_{P} [V_r - \lambda^\top C](\pi, P) +
    \lambda^\top d` over an sa-rectangular set; OPT :math:`\le` D for the RCMDP optimum
    (weak duality).  The module docstring gives the method and
    :data:`_ASSUMPTIONS` its hypotheses.

    Parameters
    ----------
    model : TabularCMDP
        Discounted (gamma < 1); without constraints (K = 0) D is the robust value.
    uset : UncertaintySet
        An sa-rectangular set.
    tol : float
        Stop when ``hi - lo <= tol * max(1, |hi|)``.
    max_evaluations : int
        Budget of robust fixed points (values of g, each a robust policy iteration, and
        of fixed policies): the work that decides the answer; the bounds hold whenever
        the search stops.
    time_limit : float, optional
        A safety net in seconds (default: none).  Should it stop the search before the
        budget, the result says so (``reproducible`` False, and the message): the bounds
        still hold, but another run (another machine, another load) may give others.

    Returns
    -------
    Result
        ``lo``, ``hi`` (the interval, ``lo <= D <= hi``), ``gap`` = hi - lo, ``lam``
        (K,) the multipliers of ``hi``, ``policy`` (S, A) the maximiser there,
        ``lam_max`` (K,) the search box (inf without a Slater point), ``slater``
        (S, A) the policy that justified it (or None), ``slater_value`` and
        ``slater_costs`` its certified worst-case value and costs, ``feasible_value``
        the certified worst-case value of the best robust-feasible policy met (a lower
        bound on OPT; -inf if none), ``cost_range``
        (2, K) the slope data :math:`[\underline c, \overline c]`, ``evaluations``,
        ``cells``, ``history`` {"lam" (n, K), "lo" (n,), "hi" (n,)} every g met,
        ``assumptions`` (text), ``success``, ``status`` ("converged",
        "budget_exhausted", or "bracket" without a Slater point: ``lo`` is then the
        certified worst-case value of a robust-feasible policy met, or -inf),
        ``message``; ``reproducible`` (False when the time limit stopped the search:
        then ``stopped_by_time_limit`` is True and the message says so).

    Examples
    --------
    Without constraints D is the robust optimum itself:

    >>> import numpy as np
    >>> from rcmdp_exact import TabularCMDP, l1_ball
    >>> m = TabularCMDP(np.full((1, 1, 1), 1.0), R=[[1.0]], gamma=0.5)
    >>> res = certified_dual(m, l1_ball(m, 0.1))
    >>> round(res.lo, 9), round(res.hi, 9)
    (2.0, 2.0)
    """
    check_robust_inputs(model, uset, "the certified dual")
    check_real(tol, "tol", 0.0, low_open=True)
    check_int(max_evaluations, "max_evaluations", 2)
    if time_limit is not None:
        check_real(time_limit, "time_limit", 0.0, low_open=True)
    check_dual_memory(model, max_evaluations, "max_evaluations")
    net = SafetyNet(time_limit)
    game = RobustGame(model, uset, tol=DUAL_TOL, max_iter=DUAL_ITER, net=net)
    return dual_of_game(game, tol=tol, max_evaluations=int(max_evaluations), net=net)


#: The memory the certified dual may keep (its cache of values of g and of fixed
#: policies, each with a policy): 2 GiB.  A budget of evaluations whose cache could pass
#: it is refused before any work.
DUAL_MEMORY = 2 * 2**30


def check_dual_memory(model, evaluations: int, name: str) -> None:
    """Refuse a budget of ``evaluations`` robust fixed points whose cache (a policy
    (S, A) and about 4 K + 8 numbers per evaluation, twice over for the points met and
    their history) could pass :data:`DUAL_MEMORY`."""
    from .._checks import check_memory

    per = 2 * 8 * (model.n_states * model.n_actions + 4 * model.n_constraints + 8)
    check_memory(evaluations, per, DUAL_MEMORY, name,
                 "the certified dual's values of g and their policies",
                 " (every value of g met is kept: a larger budget needs more memory)",
                 "rcmdp_exact.ground_truth.dual_certificate.DUAL_MEMORY")


def dual_of_game(game, *, tol: float, max_evaluations: int, net: SafetyNet | None = None,
                 floor: float = -np.inf, starts=()) -> Result:
    """:func:`certified_dual` on a game already built from valid inputs (the bracket's,
    with the settings :data:`DUAL_TOL`, :data:`DUAL_ITER`), and the game's safety net
    ``net`` (or None; its start is the result's start).

    ``floor``: a certified lower bound on OPT at the game's budgets (the bracket's
    ``lower``, the worst-case value of a policy certified robust-feasible there), so on
    D by weak duality: it joins ``feasible_value`` and stops the search as soon as the
    smallest g met is within ``tol`` of it.  ``starts``: multipliers (n, K) where g is
    evaluated first (the bracket's best: a small ``hi`` from the start).
    """
    model, uset = game.model, game.uset
    K = model.n_constraints
    start = time.perf_counter() if net is None else net.start
    ev = _Evaluations(game, max_evaluations, net)
    for lam in np.reshape(np.asarray(starts, dtype=np.float64), (-1, K)) if K else ():
        if np.all(np.isfinite(lam)) and np.all(lam >= 0.0):
            ev(lam)
    if K == 0:
        lo, hi, pol = ev(np.zeros(0))
        return _result(ev, lo, hi, np.zeros(0), pol, np.zeros(0), None, None,
                       np.zeros((2, 0)), 0, tol, start, lo, "no constraints: D is the "
                       "robust optimum")
    cmin, cmax = _cost_range(model, uset)
    d = game.d
    s1, s2 = d - cmax, d - cmin
    # 1. a log-spaced diagonal: upper bounds and candidate Slater points
    rscale = max(float(np.abs(model.R).max(initial=0.0)), 1e-12)
    cscale = max(float(np.abs(model.C).max(initial=0.0)), 1e-12)
    diagonal = [np.full(K, t) for t in
                np.concatenate([[0.0], np.geomspace(1e-3, 1e3, 13) * rscale / cscale])]
    ev.many(diagonal)
    for lam in diagonal:
        ev(lam)
    hi0 = ev.best()[0]
    feasible = float(floor)
    if ev.net is not None and ev.net.expired():  # the safety net: no box, no cells
        hi, lam, pol = ev.best()
        return _result(ev, min(feasible, hi), hi, lam, pol, np.full(K, np.inf), None, None,
                       np.stack([cmin, cmax]), 0, tol, start, feasible, None)
    # 2. the box: the best Slater point among the maximisers and least-cost policies
    cands = _unique_policies(ev.policies + _least_cost_policies(game))
    lam_max = np.full(K, np.inf)
    slater = slater_value = slater_costs = None
    smallest = np.inf
    # weak duality: D >= OPT >= the value of a robust-feasible policy (and floor)
    for pol in cands:
        if ev.net is not None and ev.net.expired():
            break
        v_lo, c_hi = _certified_numbers(game, pol)
        if np.all(c_hi <= d):
            feasible = max(feasible, v_lo)
        if np.all(c_hi < d):
            box = np.maximum((hi0 - v_lo) / (d - c_hi), 0.0)
            lam_max = np.minimum(lam_max, box)  # each axis from its best Slater point
            size = float(np.sum(np.log1p(box)))
            if size < smallest:
                smallest, slater, slater_value, slater_costs = size, pol, v_lo, c_hi
    if slater is None:
        hi, lam, pol = ev.best()
        return _result(ev, min(feasible, hi), hi, lam, pol, lam_max, None, None,
                       np.stack([cmin, cmax]), 0, tol, start, feasible,
                       "no policy met was certified strictly below every budget (a "
                       "Slater point), so the minimum over lam may lie at infinity; lo "
                       "is the certified worst-case value of a robust-feasible policy "
                       "(weak duality), or -inf without one", slater_found=False)
    # 3. branch and bound over cells of [0, lam_max]
    lo, cells = _branch_and_bound(ev, s1, s2, lam_max, tol, feasible)
    hi, lam, pol = ev.best()
    return _result(ev, min(max(lo, feasible), hi), hi, lam, pol, lam_max, slater,
                   (slater_value, slater_costs), np.stack([cmin, cmax]), cells, tol,
                   start, feasible, None)


def _unique_policies(policies) -> list[np.ndarray]:
    seen, out = set(), []
    for p in policies:
        key = np.asarray(p).tobytes()
        if key not in seen:
            seen.add(key)
            out.append(np.asarray(p))
    return out


def _branch_and_bound(ev: _Evaluations, s1, s2, lam_max, tol,
                      floor: float = -np.inf) -> tuple[float, int]:
    """The smallest certified lower bound of g over [0, lam_max]; returns (lo, cells).
    Stops when the smallest g met is within ``tol`` of that bound or of ``floor`` (a
    certified lower bound on D known beforehand)."""
    K = lam_max.size
    counter = itertools.count()

    def corners(lo, hi):
        out = []
        cs = [np.where(np.array(bits, dtype=bool), hi, lo)
              for bits in itertools.product((0, 1), repeat=K)]
        ev.many(cs)
        for c in cs:
            g_lo, _, pol = ev(c)
            out.append((c, g_lo, pol))
        return out

    def push(heap, lo, hi):
        cs = corners(lo, hi)
        bound, point = _slope_bound([(c, g) for c, g, _ in cs], s1, s2, lo, hi)
        if np.any(hi > lo):
            concave, kink = _concave_bound(ev, cs)
            if concave > bound:
                bound = concave
            if kink is not None:
                point = kink
        heapq.heappush(heap, (bound, next(counter), lo, hi, point))

    heap: list = []
    if K == 1:  # the diagonal points inside the box are the first partition
        xs = sorted({x[0] for x in ev.lam if x[0] <= lam_max[0]} | {0.0, float(lam_max[0])})
        for a, b in itertools.pairwise(xs):
            push(heap, np.array([a]), np.array([b]))
        if len(xs) == 1:
            push(heap, np.zeros(1), np.zeros(1))
    else:
        push(heap, np.zeros(K), lam_max.copy())
    cells = len(heap)
    while True:
        bound, _, lo, hi, point = heap[0]
        best = ev.best()[0]
        if best - max(bound, floor) <= tol * max(1.0, abs(best)) or ev.exhausted():
            return bound, cells
        width = (hi - lo) * np.maximum(s2 - s1, 1e-300)
        k = int(np.argmax(width))
        w = hi[k] - lo[k]
        if w <= 1e-13 * max(1.0, hi[k]):
            return bound, cells  # a cell too small to split: its bound stands
        heapq.heappop(heap)
        cut = lo[k] + 0.5 * w
        if K == 1:  # at the estimated kink, kept off the ends so that cells shrink
            cut = min(max(float(point[0]), lo[0] + 0.01 * w), hi[0] - 0.01 * w)
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[k] = right_lo[k] = cut
        push(heap, lo, left_hi)
        push(heap, right_lo, hi)
        cells += 2


def _result(ev, lo, hi, lam, pol, lam_max, slater, slater_numbers, cost_range, cells,
            tol, start, feasible, note, slater_found: bool = True) -> Result:
    gap = hi - lo
    closed = bool(gap <= tol * max(1.0, abs(hi)))
    if not slater_found and not closed:
        status = Status.BRACKET
    elif closed:
        status = Status.CONVERGED
    else:
        status = Status.BUDGET_EXHAUSTED
    timed_out = ev.net is not None and ev.net.fired
    msg = (f"D in [{lo:.9g}, {hi:.9g}] (gap {gap:.2e}) after {ev.count} robust fixed "
           f"points ({len(ev.cache)} values of g) and {cells} cells")
    if note:
        msg += f"; {note}"
    if timed_out and not closed:
        msg += (f"; STOPPED BY THE TIME LIMIT of {ev.net.seconds:g} s (a safety net) before "
                f"the tolerance and the budget of {ev.budget} fixed points: both bounds "
                f"hold, but this result depends on the machine and is NOT reproducible; "
                f"raise time_limit (or give None) for the budget to decide")
    elif status == Status.BUDGET_EXHAUSTED and not note:
        msg += "; the budget ran out before the tolerance (both bounds hold)"
    return Result(
        lo=float(lo), hi=float(hi), gap=float(gap), lam=np.asarray(lam, dtype=np.float64),
        policy=pol, lam_max=np.asarray(lam_max, dtype=np.float64), slater=slater,
        slater_value=None if slater_numbers is None else float(slater_numbers[0]),
        slater_costs=None if slater_numbers is None else slater_numbers[1],
        feasible_value=float(feasible),
        cost_range=cost_range, evaluations=ev.count, cells=int(cells),
        history=Result(lam=np.array(ev.lam, dtype=np.float64).reshape(len(ev.lam), -1),
                       lo=np.array(ev.lo), hi=np.array(ev.hi)),
        assumptions=_ASSUMPTIONS, success=bool(np.isfinite(lo)), status=status,
        message=msg, seconds=time.perf_counter() - start,
        stopped_by_time_limit=bool(timed_out and not closed),
        reproducible=not (timed_out and not closed),
    )


def _crossed(whose: str, lo_name: str, lo: float, hi_name: str, hi: float) -> str:
    """"" when ``lo <= hi`` (up to the rounding of the numbers that computed them, 1e-9
    relative), else the sentence that says they cross."""
    if not lo > hi + 1e-9 * max(1.0, abs(lo) if math.isfinite(lo) else 1.0,
                                abs(hi) if math.isfinite(hi) else 1.0):
        return ""
    return f"{whose} {lo_name} = {lo!r} is above its {hi_name} = {hi!r} (by {lo - hi:.3g})"


def duality_gap(model, uset, bracket, dual=None, **dual_options) -> Result:
    r"""Certified bounds on the duality gap D - OPT of an RCMDP.

    ``bracket`` is a result of :func:`~rcmdp_exact.rcmdp_bracket` (``lower <= OPT <=
    upper``) for the same model and set; ``dual`` a result of :func:`certified_dual`
    (computed with ``dual_options`` when not given).  Both are checked first, before
    any work: anything but a result with these numbers is an
    :class:`~rcmdp_exact.InputError`; bounds that cross (``lower > upper`` or ``lo >
    hi`` beyond rounding, 1e-9 relative) give the verdict ``"inconsistent"`` with
    ``lo`` and ``hi`` NaN (nothing follows from them).  Then

    .. math::

        \text{dual.lo} - \text{upper} \;\le\; D - \mathrm{OPT} \;\le\;
        \text{dual.hi} - \text{lower},

    and weak duality gives D - OPT :math:`\ge 0`.  A lower bound above 0 proves that
    strong duality fails on this model.

    Returns
    -------
    Result
        ``lo``, ``hi`` the bounds on the gap (``lo`` may be negative: not certified),
        ``strong_duality`` ("fails" when ``lo > 0``; "holds" when ``hi`` is within the
        dual's tolerance of 0; "undecided" otherwise; "inconsistent" when the bracket
        or the dual cross), ``dual`` (the
        :func:`certified_dual` result), ``primal`` (lower, upper), ``message``.
    """
    fix = "give the result of rcmdp_bracket(model, uset) for this model and set"
    lower, upper = check_fields(bracket, "bracket", ("lower", "upper"), fix)
    crossed = _crossed("the bracket's", "lower", lower, "upper", upper)
    if dual is not None:
        d_lo, d_hi = check_fields(dual, "dual", ("lo", "hi"),
                                  "give the result of certified_dual(model, uset)")
        crossed = crossed or _crossed("the dual's", "lo", d_lo, "hi", d_hi)
    if crossed:  # no bound on D - OPT follows; the dual is not computed for nothing
        nan = float("nan")
        return Result(lo=nan, hi=nan, strong_duality="inconsistent", dual=dual,
                      primal=(lower, upper),
                      message=f"inconsistent: {crossed}, so no bound on D - OPT follows; "
                              f"recompute them (rcmdp_bracket, certified_dual) for this "
                              f"model and set")
    if dual is None:
        dual = certified_dual(model, uset, **dual_options)
    lo, hi = dual["lo"] - upper, dual["hi"] - lower
    if lo > 0:
        verdict = "fails"
        msg = (f"strong duality fails: D - OPT >= {lo:.6g} (D >= {dual['lo']:.9g}, OPT <= "
               f"{upper:.9g})")
    elif np.isfinite(hi) and hi <= 1e-6 * max(1.0, abs(dual["hi"])):
        verdict = "holds"
        msg = (f"strong duality holds to {max(hi, 0.0):.2e}: D <= {dual['hi']:.9g}, OPT >= "
               f"{lower:.9g}")
    else:
        verdict = "undecided"
        msg = (f"undecided: D - OPT in [{lo:.3g}, {hi:.3g}]; tighten the bracket or the "
               f"dual")
    return Result(lo=float(lo), hi=float(hi), strong_duality=verdict, dual=dual,
                  primal=(lower, upper), message=msg)
