r"""The lower side of the bracket: a search over stochastic policies, each one certified.

Every policy met is scored by :meth:`~rcmdp_exact.robust.engine.RobustGame.evaluate`:
a certified lower bound on its worst-case value and certified upper bounds on its
worst-case costs (each constraint under its own maximising kernel).  The best policy
whose certified costs meet the budgets is the incumbent (:class:`Incumbent`): with a
margin of 1e-12 times the value scale, or without one when a second, independent
certification (:func:`certify`: the exact evaluation under each worst-case kernel and the
residual of one more robust Bellman step, on the same game) agrees.

Local search (:func:`ascend`) is sequential quadratic programming
(``scipy.optimize.minimize(method="SLSQP")``) on the worst-case value subject to the
worst-case costs, over the policies on a few actions per state (those of the starting
policy, the best for the worst-case value and the cheapest for each worst-case cost),
whose rows lie on the simplex, at most ``n_iter`` SLSQP iterations per start (a count
of work: the same policies on every machine).  The gradients are exact
(Danskin: where the adversary's minimiser :math:`P_j` is unique, the derivative of
:math:`\min_P V_{\pi,P}` is that of :math:`V_{\pi,P_j}`), by the policy gradient
theorem in the direct parametrisation:

.. math::

    \frac{\partial V_{\pi,P_0}}{\partial \pi(a|s)} = d_0(s)\, Q_0(s, a), \qquad
    \frac{\partial C_{k,\pi,P_k}}{\partial \pi(a|s)} = d_k(s)\, Q^c_k(s, a),

with :math:`d_j` the discounted occupancy from :math:`p_0` under :math:`(\pi, P_j)` and
:math:`Q_j` the worst-case Q-function.

**The budgets** are the game's one vector ``game.d`` (the bracket's budgets, with its
``feas_tol``); the search derives two levels from it, here and nowhere else
(:class:`Incumbent`): ``limit`` = d - :data:`ACCEPT_MARGIN` x scale, below which a
policy is accepted at once, and ``target`` = d - :data:`SEARCH_MARGIN` x scale, the
budgets the local search aims at, so that its end points are certified feasible
(scale: the game's value scale).

:func:`mix_to_boundary` moves from a feasible policy towards a better infeasible one
along state-wise mixtures :math:`(1-\theta)\pi_f + \theta\pi_i`, each mixture
evaluated as a policy of its own (its robust numbers are not the interpolation of the
ends'), keeping the largest certified-feasible :math:`\theta` met.
:func:`steepest_pair` picks, among seeds, the best feasible one and the partner of
steepest gain per unit of cost beside it: the two neighbouring policies of a CMDP's LP,
whose line the bracket follows last.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.evaluation import evaluate
from ..robust.engine import RobustGame

__all__ = ["ACCEPT_MARGIN", "SEARCH_MARGIN", "Incumbent", "certify", "steepest_pair"]

#: A policy whose certified costs are at least this times the value scale below the
#: budgets is accepted at once; closer to them the second certification decides
#: (:class:`Incumbent`), so that another exact evaluation, rounded differently, agrees.
ACCEPT_MARGIN = 1e-12
#: The local search aims at budgets this times the value scale below ``d``.
SEARCH_MARGIN = 1e-9


#: Iterations of the adversary in the second certification (:func:`certify`): a cap that
#: policy iteration never meets (the answer carries its residual bound anyway).
_CERTIFY_ITER = 100_000


def certify(game: RobustGame, policy: np.ndarray) -> tuple[float, np.ndarray]:
    r"""Worst-case value (a lower bound) and costs (K,) (upper bounds) of one policy (S, A),
    each with the residual bound of one more robust Bellman step,
    :math:`\|T w - w\|_\infty / (1 - \gamma)`.

    The second certification of :class:`Incumbent`, independent of
    :meth:`RobustGame.evaluate` in what it bounds: the adversary's fixed point of the
    value and of each cost (one batch, :meth:`RobustGame.adversary`, at most
    :data:`_CERTIFY_ITER` iterations and no safety net), the exact evaluation of the policy
    under each worst-case kernel (:func:`~rcmdp_exact.core.evaluation.evaluate`, sparse LU),
    and the residual of those exact values under one more robust Bellman step
    (:meth:`RobustGame.inner`).  ``game`` is the bracket's game, already validated.
    """
    model, K = game.model, game.K
    g = game.objectives()
    J = g.shape[0]
    fp = game.replace(net=None).adversary(
        g, np.broadcast_to(policy, (J, game.S, game.A)), max_iter=_CERTIFY_ITER)
    scale = 1.0 - model.gamma
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(model.with_transitions(fp.P[0], check=False), policy, check=False)
        c_worst = np.empty((game.S, K))
        for k in range(K):
            c_worst[:, k] = evaluate(model.with_transitions(fp.P[1 + k], check=False),
                                     policy, check=False).c[:, k]
    v = ev.v
    err = np.abs(_bellman(game, game.R, v, policy) - v).max() / scale
    costs = np.array(model.p0 @ c_worst, dtype=np.float64)
    for k in range(K):
        ck = -c_worst[:, k]
        costs[k] += np.abs(_bellman(game, -game.C[k], ck, policy) - ck).max() / scale
    return float(ev.value) - err, costs


def _bellman(game: RobustGame, g: np.ndarray, w: np.ndarray, policy: np.ndarray):
    r"""One robust Bellman step of a policy (S, A): :math:`(T_\pi w)(s) = \sum_a \pi(a|s)
    \min_p p^\top (g(s, a, \cdot) + \gamma w)`."""
    q, _ = game.inner(g[None], w[None], policy[None] if game.s_rect else None)
    return np.einsum("sa,sa->s", policy, q[0])


class Incumbent:
    """The best certified robust-feasible policy met so far, and what produced it.

    ``limit`` and ``target`` are the two levels the search derives from the budgets
    ``game.d`` (module docstring); a policy between ``limit`` and ``d`` needs ``second``
    (policy -> (value, costs), for example :func:`certify`) to agree."""

    def __init__(self, game: RobustGame, second=None):
        self.game = game
        self.limit = game.d - ACCEPT_MARGIN * game.scale
        self.target = game.d - SEARCH_MARGIN * game.scale
        self.second = second
        self.accepted: list = []  # every incumbent met, in order (value, policy, costs)
        self.value = -np.inf
        self.policy = None
        self.costs = np.full(game.K, np.nan)
        self.method = None
        self.theta = 0.0
        self.n_evaluated = 0
        self.risky: list = []  # (value, policy) of infeasible policies of high value

    def offer(self, pis: np.ndarray, method: str, theta=None):
        """Certify policies (M, S, A); keep the best feasible; return the evaluation.

        ``theta`` (M,), optional: the mixing weight of each policy (kept with the best).
        """
        ev = self.game.evaluate(pis)
        ev["accepted"], ev["certified_costs"] = self.take(pis, ev["value"], ev["costs"],
                                                          method, theta)
        return ev

    def take(self, pis: np.ndarray, value, costs, method: str, theta=None):
        """Keep the best feasible of policies (M, S, A) whose certified worst-case values
        (M,) and costs (M, K) are given (by :meth:`RobustGame.evaluate`, here or in
        another process).  Returns (the index accepted or None, the costs after the
        second certification)."""
        self.n_evaluated += pis.shape[0]
        raw = np.asarray(value, dtype=np.float64)
        value, costs = raw.copy(), np.array(costs, dtype=np.float64)
        ok = np.all(costs <= self.limit, axis=1)
        near = ~ok & np.all(costs <= self.game.d, axis=1) & (value > self.value)
        if self.second is not None and near.any():
            # within the margin of a budget: the second certification decides (the best
            # such policy only, so this stays rare and cheap)
            i = int(np.argmax(np.where(near, value, -np.inf)))
            v2, c2 = self.second(pis[i])
            value[i], costs[i] = min(value[i], v2), np.maximum(costs[i], c2)
            ok[i] = bool(np.all(costs[i] <= self.game.d))
        accepted = None
        if ok.any():
            i = int(np.argmax(np.where(ok, value, -np.inf)))
            if value[i] > self.value:
                self.value, self.policy = float(value[i]), pis[i].copy()
                self.costs, self.method = costs[i].copy(), method
                self.theta = 0.0 if theta is None else float(theta[i])
                self.accepted.append((self.value, self.policy, self.costs, method, self.theta))
                accepted = i
        for i in np.flatnonzero(~ok & (raw > self.value)):
            self.risky.append((float(raw[i]), pis[i].copy()))
        if len(self.risky) > 64:
            self.risky = sorted(self.risky, key=lambda t: -t[0])[:16]
        return accepted, costs


def _gradients(game: RobustGame, pi: np.ndarray, P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """d_j(s) Q_j(s, a) (1 + K, S, A) of every objective j, kernels P (1 + K, S, A, S)."""
    occ = game.occupancy(P, np.broadcast_to(pi, (P.shape[0], game.S, game.A)))
    return occ[..., None] * q


class _OutOfTime(Exception):
    """Raised inside the local search when the safety net has expired (or, in phase 1,
    once a feasible policy is certified)."""


def _free_actions(game: RobustGame, pi: np.ndarray, ev: dict) -> np.ndarray:
    """The actions the local search may use (S, A) bool: the support of ``pi``, the best
    action for the worst-case value and, per constraint, the action of least worst-case
    cost, in every state."""
    q = ev["q"][0]
    free = pi > 0.0
    for j in range(1 + game.K):
        np.put_along_axis(free, np.argmax(q[j], axis=1)[:, None], True, axis=1)
    return free


class _Local:
    """The certified numbers and gradients of the policies on the free actions."""

    def __init__(self, inc: Incumbent, pi0: np.ndarray, method: str):
        self.inc, self.method = inc, method
        self.free = _free_actions(inc.game, pi0, inc.offer(pi0[None], method))
        rows = np.nonzero(self.free)[0]
        self.rowsum = np.zeros((inc.game.S, rows.size))
        self.rowsum[rows, np.arange(rows.size)] = 1.0
        self.x0, self.memo = pi0[self.free], {"pi": pi0}

    def __call__(self, x: np.ndarray) -> dict:
        if self.memo.get("key") != x.tobytes():
            game = self.inc.game
            if game.late():
                raise _OutOfTime
            pi = np.zeros(self.free.shape)
            pi[self.free] = np.clip(x, 0.0, None)
            pi /= pi.sum(axis=1, keepdims=True)
            ev = self.inc.offer(pi[None], self.method)
            grads = _gradients(game, pi, ev["P"][0], ev["q"][0])[:, self.free]
            self.memo = {"key": x.tobytes(), "pi": pi, "value": ev["value_estimate"][0],
                         "costs": ev["costs_estimate"][0], "grads": grads}
        return self.memo

    def simplex(self, extra: int = 0) -> dict:
        n = self.rowsum.shape[1]
        jac = np.hstack([self.rowsum, np.zeros((self.rowsum.shape[0], extra))])
        return {"type": "eq", "fun": lambda x: self.rowsum @ x[:n] - 1.0, "jac": lambda x: jac}


#: SLSQP restarts from its last point after this many iterations (a fresh quasi-Newton
#: model): on the long flat ridge of RiverSwim-20 one run of 60 iterations ended 2.8%
#: below the best policy found apart, on one machine's arithmetic and not on another's;
#: six runs of 10 end within 1.2% on both (seeds 0-3: 98.8-99.8% of it, against 97.2-98.5%).
RESTART_EVERY = 10


def _slsqp(fun, jac, x0, cons, bounds, n_iter: int) -> None:
    """At most ``n_iter`` SLSQP iterations in all (a count of work), restarted from the
    last point every :data:`RESTART_EVERY` iterations until SLSQP says it converged or
    stops moving."""
    from scipy.optimize import minimize  # here: scipy.optimize costs 0.3 s of every start

    left, x = int(n_iter), x0
    try:
        while left > 0:
            res = minimize(fun, x, jac=jac, method="SLSQP", bounds=bounds, constraints=cons,
                           options={"maxiter": min(left, RESTART_EVERY), "ftol": 1e-13})
            left -= max(int(res.nit), 1)
            if res.status == 0 or np.array_equal(res.x, x):
                break
            x = res.x
    except _OutOfTime:
        pass


def ascend(inc: Incumbent, pi0: np.ndarray, *, n_iter: int = 60,
           method: str = "certified search") -> np.ndarray:
    r"""Local search from ``pi0`` by sequential quadratic programming; feeds ``inc``.

    ``scipy.optimize.minimize(method="SLSQP")`` on the worst-case value with the
    worst-case costs as constraints (the budgets ``inc.target``),
    over the policies on the actions of :func:`_free_actions`, exact Danskin gradients,
    at most ``n_iter`` iterations, restarted every :data:`RESTART_EVERY` (SLSQP's
    ``ftol`` 1e-13: a coarser one, the refinement gain of the bracket, stopped the
    search on the long flat ridge of RiverSwim-20 2.8% below the best policy found
    apart).  Every policy it evaluates
    is offered to ``inc``.  The search stops early only when the game's safety net
    expires.  Returns the last policy evaluated.
    """
    game = inc.game
    scale, K = game.scale, game.K
    f = _Local(inc, np.asarray(pi0, dtype=np.float64), method)
    cons = [f.simplex()]
    if K:
        cut = inc.target
        cons.append({"type": "ineq", "fun": lambda x: (cut - f(x)["costs"]) / scale,
                     "jac": lambda x: f(x)["grads"][1:] / scale})
    _slsqp(lambda x: -f(x)["value"] / scale, lambda x: -f(x)["grads"][0] / scale, f.x0,
           cons, [(0.0, 1.0)] * f.x0.size, n_iter)
    return f.memo["pi"]


def find_feasible(inc: Incumbent, pi0: np.ndarray, *, n_iter: int = 60) -> None:
    r"""Phase 1: minimise t subject to :math:`C_k(\pi) \le d_k + t` (worst-case costs,
    SLSQP from ``pi0``), until a certified robust-feasible policy is met."""
    game = inc.game
    scale = game.scale
    f = _Local(inc, np.asarray(pi0, dtype=np.float64), "certified search")
    n = f.x0.size
    try:
        excess = max(0.0, float(np.max(f(f.x0)["costs"] - game.d)))
    except _OutOfTime:
        return
    x0 = np.append(f.x0, excess / scale + 1e-3)
    stop = inc.value

    def slack(x):
        if inc.value > stop:
            raise _OutOfTime  # a feasible policy was certified
        return (inc.target - f(x[:n])["costs"]) / scale + x[n]

    def slack_jac(x):
        return np.hstack([f(x[:n])["grads"][1:] / scale, np.ones((game.K, 1))])

    cons = [f.simplex(1), {"type": "ineq", "fun": slack, "jac": slack_jac}]
    grad_t = np.append(np.zeros(n), 1.0)
    _slsqp(lambda x: x[n], lambda x: grad_t, x0, cons, [(0.0, 1.0)] * n + [(None, None)],
           n_iter)


def mix_to_boundary(inc: Incumbent, safe: np.ndarray, risky: np.ndarray, rounds: int = 4,
                    n_points: int = 8, method: str = "certified search", gain: float = 0.0,
                    safe_numbers=None) -> float:
    """The largest certified-feasible theta of (1 - theta) safe + theta risky met.

    Each round evaluates about ``n_points`` mixtures in one batch between the largest
    feasible theta and the smallest infeasible one found so far; returns that theta.
    The first round (and any round where the excess at an end is not known) spreads them
    evenly; once the largest excess of the certified costs over the limits is known at
    both ends, a round puts them around the root of its secant (regula falsi), at
    1e-4 to 0.1 of the interval on each side, with the midpoint as a safeguard: the
    interval then shrinks by about 1e-4 per round where the excess is smooth, instead
    of the factor n_points + 1 of even spacing.  The rounds stop early when the
    worst-case values at the two ends of that interval differ by at most ``gain`` (no
    mixture between them can improve the incumbent by more), or when the game's safety
    net expires.
    ``safe_numbers``: the certified worst-case value and costs (K,) of ``safe`` where
    known (the incumbent's): the excess and value at theta = 0, so that an incumbent on
    the boundary (every mixture infeasible) stops after a few rounds too.
    """
    scale = inc.game.scale
    lo, hi = 0.0, 1.0
    e_lo = e_hi = v_lo = v_hi = None  # the largest scaled excess, the value at lo, hi
    if safe_numbers is not None:
        v_lo = float(safe_numbers[0])
        e_lo = float(np.max(np.asarray(safe_numbers[1]) - inc.limit, initial=-np.inf)) / scale
    side = max(1, (n_points - 2) // 2)
    for _ in range(rounds):
        if inc.game.late():
            break
        w = hi - lo
        if e_lo is not None and e_hi is not None and e_hi > e_lo:
            t = lo + w * float(np.clip(-e_lo / (e_hi - e_lo), 0.0, 1.0))
            offs = w * np.geomspace(1e-4, 0.1, side)
            thetas = np.concatenate([t - offs, [t], t + offs, [lo + 0.5 * w]])
            thetas = np.unique(np.clip(thetas, lo + 1e-6 * w, hi - 1e-6 * w))
            thetas = thetas[(thetas > lo) & (thetas < hi)]
            if not thetas.size:
                break
        else:
            thetas = np.linspace(lo, hi, n_points + 2)[1:]
        mixes = (1.0 - thetas)[:, None, None] * safe + thetas[:, None, None] * risky
        ev = inc.offer(mixes, method, theta=thetas)
        excess = np.max(ev["costs"] - inc.limit, axis=1, initial=-np.inf) / scale
        bad = np.flatnonzero(~(excess <= 0.0))
        first_bad = int(bad[0]) if bad.size else thetas.size
        if first_bad > 0:
            i = first_bad - 1
            lo, e_lo, v_lo = float(thetas[i]), float(excess[i]), float(ev["value"][i])
        if first_bad == thetas.size:
            if thetas[-1] >= hi:  # the whole interval is feasible
                break
            continue  # every point of a round around the secant's root was feasible:
            # lo moved up, hi stays (stopping here left theta 2% short on a kinked path)
        hi, e_hi = float(thetas[first_bad]), float(excess[first_bad])
        v_hi = float(ev["value"][first_bad])
        if v_lo is not None and abs(v_hi - v_lo) <= gain:
            break
    return lo


def steepest_pair(value: np.ndarray, costs: np.ndarray, limit: np.ndarray):
    """The pair of policies whose mixtures follow the steepest line to the budgets.

    Of policies with certified worst-case values (M,) and costs (M, K): f the best one
    within ``limit`` (K,), and i the one worth more than f whose value gains most over
    f's per unit of its largest cost excess over f's costs, as a CMDP's two neighbouring
    LP policies are.  Returns (f, i), or None when there are no costs (K = 0), no policy
    is within the limits, or none beyond them is worth more than f at a higher cost.
    """
    feasible = np.all(costs <= limit, axis=1)
    if not costs.shape[1] or not feasible.any():
        return None
    f = int(np.flatnonzero(feasible)[np.argmax(value[feasible])])
    gain = value - value[f]
    step = np.max(costs - costs[f], axis=1)
    ok = ~feasible & (gain > 0) & (step > 0)
    if not ok.any():
        return None
    return f, int(np.argmax(np.where(ok, gain / np.where(ok, step, 1.0), -np.inf)))


def _mix_all(inc: Incumbent, partners, n_partners: int, rounds: int,
             gain: float = 0.0) -> None:
    """Mixtures of the incumbent with ``partners`` and the best infeasible policies met."""
    risky = [pi for _, pi in sorted(inc.risky, key=lambda t: -t[0])[:n_partners]]
    for pi in [*partners, *risky]:
        if inc.policy is not None and not inc.game.late():
            mix_to_boundary(inc, inc.policy, pi, rounds, method="mixture", gain=gain,
                            safe_numbers=(inc.value, inc.costs))


def improve(inc: Incumbent, starts, partners, *, n_iter: int, n_partners: int, rounds: int,
            gain: float = 0.0) -> None:
    """Phase 1 when no policy is certified yet; mixtures of the incumbent with
    ``partners`` and with the best infeasible policies met (refined until the values at
    the ends differ by at most ``gain``); local search from the incumbent and from every
    start; mixtures again if that helped by more than ``gain`` (a smaller step leaves
    the incumbent where the mixtures already refined it to within ``gain``)."""
    if inc.policy is None and inc.game.K:
        find_feasible(inc, starts[0], n_iter=n_iter)
    _mix_all(inc, partners, n_partners, rounds, gain)
    before = inc.value
    for pi in ([] if inc.policy is None else [inc.policy]) + list(starts):
        if not inc.game.late():
            ascend(inc, pi, n_iter=n_iter)
    if inc.value > before + gain:
        _mix_all(inc, [], n_partners, rounds, gain)
