r"""A certified bracket [lower, upper] on the RCMDP optimum over an sa-rectangular L1 ball.

.. math::

    \mathrm{OPT} = \max_\pi \min_{P} V_{\pi,P}(p_0) \quad\text{s.t.}\quad
    \max_{P} C_{k,\pi,P}(p_0) \le d_k \;\; (k = 1..K),

each maximum over the set taken separately (the paper's Eq. "RCMDP objective" with
robust constraints).  Both sides are certificates whatever the budget of work:

* **lower** is the worst-case value of one stochastic policy whose worst-case costs
  meet the budgets, both certified twice on the bracket's one game: by
  :meth:`~rcmdp_exact.robust.RobustGame.evaluate` and by :func:`.search.certify` (the
  exact evaluation under each worst-case kernel, with the residual bound of one more
  robust Bellman step subtracted from the value and added to the costs).  The policy
  is found by a search (:mod:`~rcmdp_exact.ground_truth.search`): the LP optimum of
  the nominal CMDP at the budgets and at budgets tightened by the worst-case excess,
  the robust-Lagrangian policies, the RCPG variants' targets (when asked for),
  trust-region ascent with exact Danskin gradients, mixtures, and every box maximiser
  of the branch and bound.
* **upper** is the smaller of :math:`\min_\lambda g(\lambda)`
  (:mod:`~rcmdp_exact.ground_truth.dual`) and the branch-and-bound bound over policy
  boxes (:mod:`~rcmdp_exact.ground_truth.boxes`), every number a robust fixed point
  plus its residual bound.

The model and the set are checked once, at the entrance, and the options are one frozen
:class:`BracketSettings`; one :class:`~rcmdp_exact.robust.RobustGame` carries them
through every phase (``RobustGame.replace`` where a phase needs other fixed-point
settings).

At alpha = 0 the ball is one model, the LP policy is certified by exact evaluation and
the LP duals give g = the LP optimum: the bracket closes on the CMDP optimum.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings

import numpy as np

from .._checks import (
    as_float_array,
    check_client,
    check_distributions,
    check_shape,
    check_type,
)
from .._progress import progress_default, tqdm
from .._result import Result
from ..robust import check_robust_inputs
from ..robust.engine import RobustGame, SafetyNet
from ..uncertainty import SARectangularSet
from .boxes import branch_and_bound
from .dual import batch_size, lagrangian_search
from .dual_certificate import DUAL_GAP_TOL, DUAL_ITER, DUAL_TOL, dual_of_game, duality_gap
from .lp import cost_name, fmt, max_slack_policy, solve_cmdp
from .search import (
    SEARCH_MARGIN,
    Incumbent,
    certify,
    improve,
    mix_to_boundary,
    steepest_pair,
)
from .settings import (
    RELATIVE_FLOOR,
    SMALL_BOX_BOUNDS,
    SMALL_STATES,
    BracketSettings,
    LowerSearch,
    gap_scale,
)
from .variants import VARIANT_BISECT, VARIANT_ITER, lam_bounds, variant_target

__all__ = ["POLICY_CLASS", "RELATIVE_FLOOR", "SMALL_BOX_BOUNDS", "SMALL_STATES",
           "BracketSettings",
           "rcmdp_bracket", "value_range"]

#: The policies over which the bracket bounds the optimum: Markov, stationary and
#: randomised (history-dependent policies can do better on robust constrained problems,
#: Ganguly and Ghosh, arXiv 2511.07486; docs/ground_truth.md, section 3.1).
POLICY_CLASS = "stationary randomised"

_SOLVED = ("optimal", "optimal_inaccurate", "check_failed")


def value_range(model) -> float:
    r"""The span of every discounted value of the model: :math:`(\max r - \min r) / (1 -
    \gamma)` over the rewards of the live states (and 0, what a terminal state earns).
    Every policy's value under every kernel lies in an interval of this length."""
    R = np.asarray(model.R, dtype=np.float64)
    live = R[~np.asarray(model.terminal, dtype=bool)]
    hi = float(live.max(initial=-np.inf))
    lo = float(live.min(initial=np.inf))
    if np.asarray(model.terminal).any() or not live.size:
        hi, lo = max(hi, 0.0), min(lo, 0.0)
    return (hi - lo) / (1.0 - float(model.gamma))


def _relative(gap: float, lower: float, span: float) -> float:
    scale = gap_scale(lower, span)
    if gap <= 0.0:
        return 0.0
    return gap / scale if scale > 0.0 and np.isfinite(gap) else np.inf


def _least_costs(game: RobustGame):
    """Certified lower bounds (K,) on min_pi max_P C_k, and the minimising policies."""
    K, S, A = game.K, game.S, game.A
    sol = game.solve(-game.C, np.zeros((K, S, A)), np.ones((K, S, A)))
    return -(sol["value"] + sol["err"]) - game.rounding(1.0), sol["pi"]


def _lp_candidates(model, game: RobustGame, inc: Incumbent, n_tighten: int = 3) -> list:
    """The nominal CMDP optimum at the budgets, then at budgets lowered by the certified
    worst-case shortfall of the previous LP policy (plus a step that grows from 1e-14 of
    the value scale, for a policy that misses by rounding alone); each policy is offered
    to ``inc``."""
    nominal = model.with_transitions(game.nominal, check=False)
    budgets, out = game.d.copy(), []
    for i in range(n_tighten + 1):
        if game.late():
            return out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lp = solve_cmdp(nominal, budgets=budgets)
        if lp.status not in _SOLVED:
            break
        ev = inc.offer(lp.policy[None], "lp" if i == 0 else "lp, tightened budgets")
        out.append(lp)
        short = ev["certified_costs"][0] - game.d
        if ev["accepted"] is not None or np.all(short <= 0.0):
            break
        step = 1e-14 * 10.0 ** i * game.scale
        budgets = budgets - np.where(short > -step, np.maximum(short, 0.0) + step, 0.0)
    if game.K and not game.late():
        slack = max_slack_policy(nominal, game.d)
        if slack is not None:
            inc.offer(slack[None], "lp, largest slack")
            out.append(Result(policy=slack, lam=np.zeros(game.K), slack=True))
    return out


#: Points of the weight grid of the joint infeasibility search at most.
GRID_POINTS = 5000


def _grid_denominator(K: int) -> int:
    """Intervals per axis of the weight grid: 64 for K = 2, 16 for K = 3, else 8, fewer
    where the grid, C(n + K - 1, K - 1) points, would pass :data:`GRID_POINTS`."""
    n = {2: 64, 3: 16}.get(K, 8)
    while n > 1 and math.comb(n + K - 1, K - 1) > GRID_POINTS:
        n -= 1
    return n


def _simplex_grid(K: int, n: int) -> np.ndarray:
    """Every weight vector (K,) on the simplex with denominator ``n``: the compositions of
    n into K parts, from the K - 1 bar positions among n + K - 1 slots."""
    bars = np.array(list(itertools.combinations(range(n + K - 1), K - 1)), dtype=np.int64)
    bars = bars.reshape(-1, K - 1)
    edges = np.hstack([np.full((bars.shape[0], 1), -1), bars,
                       np.full((bars.shape[0], 1), n + K - 1)])
    parts = np.diff(edges, axis=1) - 1
    parts = parts[np.lexsort(parts[:, :-1].T[::-1])]  # lexicographic in the first K - 1
    return parts.astype(np.float64) / n


def _weighted_least_costs(game: RobustGame, lam: np.ndarray):
    """Certified lower bounds (J,) on min_pi max_P lam.C(pi, P) for weights lam (J, K),
    minus lam.d; and the minimising policies (J, S, A).  In batches of
    :func:`~.dual.batch_size` (the grid has up to :data:`GRID_POINTS` weights); past the
    safety net the weights not reached get -inf (no proof)."""
    J, S, A = lam.shape[0], game.S, game.A
    margin, pis = np.full(J, -np.inf), np.full((J, S, A), 1.0 / A)
    size = batch_size(game)
    for a in range(0, J, size):
        if game.late():
            break
        part = lam[a:a + size]
        n = part.shape[0]
        g = -np.einsum("jk,ksat->jsat", part, game.C)
        sol = game.solve(g, np.zeros((n, S, A)), np.ones((n, S, A)))
        margin[a:a + n] = (-(sol["value"] + sol["err"]) - game.rounding(part.sum(axis=1))
                           - part @ game.d_bound)
        pis[a:a + n] = sol["pi"]
    return margin, pis


def _joint_infeasibility(game: RobustGame, rounds: int = 12):
    r"""Weights :math:`\lambda \ge 0` (sum 1) that prove the budgets cannot be met
    together, or None.

    For a robust-feasible :math:`\pi` and every kernel P of the ball,
    :math:`\lambda^\top C(\pi, P) \le \sum_k \lambda_k \max_P C_k(\pi, P) \le
    \lambda^\top d`, so a certified :math:`\min_\pi \max_P \lambda^\top C(\pi, P)
    > \lambda^\top d` (the least worst-case cost of the weighted sum, one robust fixed
    point) proves that no policy is robust-feasible (at alpha = 0 this is Farkas' lemma
    for the occupancy LP).  The margin is searched on a grid of the simplex
    (:func:`_grid_denominator` intervals per axis), then by ``rounds`` rounds of moves
    of weight between two constraints, halving the step.  Returns (lam, margin, policy).
    """
    K = game.K
    n = _grid_denominator(K)
    lam = _simplex_grid(K, n)
    margin, pis = _weighted_least_costs(game, lam)
    if not np.isfinite(margin).any():  # past the safety net: no proof sought
        return None
    best = int(np.argmax(margin))
    lam0, m0, pi0 = lam[best], float(margin[best]), pis[best]
    step = 1.0 / n
    moves = [(i, j) for i in range(K) for j in range(K) if i != j]
    for _ in range(rounds):
        if game.late():
            break
        trial = np.repeat(lam0[None], len(moves), axis=0)
        for t, (i, j) in enumerate(moves):
            dw = min(step, trial[t, j])
            trial[t, i] += dw
            trial[t, j] -= dw
        margin, pis = _weighted_least_costs(game, trial)
        t = int(np.argmax(margin))
        if margin[t] > m0:
            lam0, m0, pi0 = trial[t], float(margin[t]), pis[t]
        else:
            step /= 2.0
    if m0 > 1e-12 * game.scale:
        return lam0, m0, pi0
    return None


def _infeasible(game, why: str, pol: np.ndarray, least, extra: dict) -> Result:
    nan = np.full(game.K, np.nan)
    return Result(lower=-np.inf, upper=-np.inf, gap=0.0, relative_gap=0.0,
                  value_range=value_range(game.model), policy_class=POLICY_CLASS,
                  lower_method="none",
                  upper_method="least worst-case cost", lam=np.full(game.K, np.inf),
                  policies={"lower": pol, "upper": pol}, policy=pol,
                  lower_costs=least.copy(), mix_theta=0.0,
                  upper_policy_value=np.nan, upper_policy_costs=nan,
                  history={"lam": np.zeros((0, game.K)), "g": np.zeros(0)}, n_candidates=0,
                  boxes=0, open_boxes=0, closed=True, stopped="infeasible",
                  trace=np.zeros((0, 4)), success=False, status="infeasible",
                  message=f"infeasible: no policy meets the budgets on every model of the "
                          f"ball; {why}; raise the budget or shrink the ball", **extra)


def _infeasibility(game, model, least, safest):
    """(why, policy) when the budgets are certified infeasible (one alone, or together
    for some weights), else None."""
    ks = [k for k in range(game.K) if least[k] > game.d_bound[k]]
    if ks:
        why = "; ".join(f"the smallest worst-case cost of constraint {cost_name(model, k)} "
                        f"is {fmt(least[k])} > budget d[{k}] = {fmt(game.d[k])}" for k in ks)
        return why, safest[ks[0]]
    joint = _joint_infeasibility(game) if game.K > 1 else None
    if joint is None:
        return None
    lam, margin, pol = joint
    return (f"each budget can be met alone but not together: with weights lambda = "
            f"[{', '.join(map(fmt, lam))}] the smallest worst-case weighted cost is "
            f"{fmt(lam @ game.d + margin)} > lambda.d = {fmt(lam @ game.d)}"), pol


def _check_candidates(model, cands):
    """The candidate policies (n, S, A), validated, or None."""
    if cands is None:
        return None
    S, A = model.n_states, model.n_actions
    cands = as_float_array(cands, "candidates", "give policies of shape (n, S, A) or "
                           "(S, A)")
    if cands.ndim == 2:
        cands = cands[None]
    check_shape(cands, (cands.shape[0], S, A) if cands.ndim == 3 else (1, S, A),
                "candidates", ("candidate", "state", "action"))
    return check_distributions(cands, "candidates", ("candidate", "state"))


def _seed_lower(inc, dual, safest, variants) -> None:
    """Offer the Lagrangian, least-cost and variant policies to the incumbent."""
    inc.seed_eval = inc.offer(dual.policies, "lagrangian")
    inc.offer(safest, "least worst-case cost")
    for name, var in variants.items():
        inc.offer(var.policy[None], f"variant {name}")


def _lower_search(game, inc, dual, lps, lo: LowerSearch, cands, tol_of) -> None:
    """The search of the lower side from the seeds (:func:`_seed_lower`): mixtures and
    local search (unless the seeds already close the bracket)."""
    if dual.U - inc.value <= tol_of(inc.value):
        return
    ev = inc.seed_eval
    # the infeasible Lagrangian policies met at the largest lam: the far side of the kink
    bad = np.flatnonzero(np.any(ev["costs"] > inc.limit, axis=1))[::-1]
    plain = [lp for lp in lps if "slack" not in lp]
    partners = [lp.policy for lp in plain[:1]] + list(dual.policies[bad[:2]])
    starts = [dual.pi] + [lp.policy for lp in plain[:1]]
    if inc.policy is None and len(plain) < len(lps):
        starts.insert(0, lps[-1].policy)  # the largest-slack policy: phase 1 starts there
    if cands is not None:
        starts += list(cands)
    rng = np.random.default_rng(lo.seed)
    starts += list(rng.dirichlet(np.ones(game.A), size=(lo.n_starts, game.S)))
    rounds = lo.mix_rounds
    improve(inc, starts, partners, n_iter=lo.n_ascent, n_partners=lo.n_partners,
            rounds=rounds, gain=0.01 * tol_of(inc.value))
    # last, so that it can only add to what the search found: the line between the best
    # feasible seed and the seed of steepest gain beside it (on FrozenLake 8x8's KL ball
    # 1% above what the search finds)
    pair = steepest_pair(ev["value"], ev["costs"], inc.limit)
    if pair is not None and not game.late():
        f, i = pair
        mix_to_boundary(inc, dual.policies[f], dual.policies[i], rounds, method="mixture",
                        gain=0.01 * tol_of(inc.value),
                        safe_numbers=(ev["value"][f], ev["costs"][f]))


def _deep_search(game, inc, dual, lo: LowerSearch, tol_of) -> None:
    """The second, deeper search of the lower side, once the branch and bound has bounded
    ``deep_after`` boxes without closing: SLSQP with ``deep_ascent`` iterations from the
    incumbent, the Lagrangian maximiser and ``deep_starts`` random policies (with an int
    seed the first of them those of the first search), then mixtures
    (:func:`~.search.improve`)."""
    rng = np.random.default_rng(lo.seed)
    starts = [dual.pi, *rng.dirichlet(np.ones(game.A), size=(lo.deep_starts, game.S))]
    improve(inc, starts, [], n_iter=lo.deep_ascent, n_partners=lo.n_partners,
            rounds=lo.mix_rounds, gain=0.01 * tol_of(inc.value))


def _certified_lower(game, inc):
    """The best incumbent met that the second certification (:func:`~.search.certify`)
    certifies too: (value, costs, policy, method, theta), or (-inf, nan, None, "none", 0)
    when there is none."""
    for value, pol, costs, method, theta in reversed(inc.accepted):
        pub_value, pub = certify(game, pol)
        if np.all(pub <= game.d):
            return min(value, pub_value), np.maximum(costs, pub), pol, method, theta
    return -np.inf, np.full(game.K, np.nan), None, "none", 0.0


def gap_text(lower: float, upper: float, span: float) -> str:
    """The gap of a bracket in words: absolute, and relative to what (every message and
    report of a bracket uses it)."""
    gap = upper - lower
    rel = _relative(gap, lower, span)
    scale = gap_scale(lower, span)
    if np.isfinite(lower) and abs(lower) >= RELATIVE_FLOOR * span:
        of = "of |lower|"
    else:
        of = f"of {RELATIVE_FLOOR:g} x the value range {span:.4g} (lower is near 0)"
    return f"gap {gap:.3g} = {100.0 * rel:.3g}% {of} ({scale:.4g})"


def _at_the_least_cost(game, least) -> str | None:
    """What to do when a budget is within :data:`~.search.SEARCH_MARGIN` x scale of its
    certified least worst-case cost (a budget set to that cost, as the rule "d = least"
    sets it): a policy at the budget may exist, but costs that equal it to the last
    bits cannot be certified below it, and the search aims below the budget by more;
    None otherwise."""
    close = [k for k in range(game.K)
             if game.d[k] - least[k] <= SEARCH_MARGIN * game.scale]
    if not close:
        return None
    k = close[0]
    return (f"the least worst-case cost of constraint {k} ({least[k]:.12g}) is within "
            f"{max(game.d[k] - least[k], 0.0):.2g} of its budget d[{k}] = "
            f"{game.d[k]:.12g}, closer than the lower side's search aims below a budget "
            f"({SEARCH_MARGIN:g} x the value scale; at the cost itself the costs cannot be "
            f"certified below it): give a small feas_tol (e.g. "
            f"{SEARCH_MARGIN * game.scale:.1g}), the bracket at budgets d + feas_tol; "
            f"more boxes rarely help")


def _status(pol, upper, lower, bb, cut: list, st: BracketSettings, closed: bool,
            span: float, game, least) -> tuple[str, str]:
    if pol is None and upper == -np.inf:
        return "infeasible", ("infeasible: branch and bound found no box that meets every "
                              "budget; no policy is robust-feasible")
    if pol is None:
        head = (f"no robust-feasible policy found; upper bound {upper:.6g} on the optimum "
                f"over {POLICY_CLASS} policies")
        at = _at_the_least_cost(game, least)
        if at is not None:
            return "no_feasible_policy", f"{head}; {at}"
        return "no_feasible_policy", f"{head}; raise time_limit or max_boxes"
    text = (f"certified bracket [{lower:.10g}, {upper:.10g}] on the optimum over "
            f"{POLICY_CLASS} policies, {gap_text(lower, upper, span)}, {bb.boxes} boxes")
    if closed:
        return "bracket", f"closed: {text}"
    why = []
    if bb.stopped == "boxes":
        why.append(f"the box budget max_boxes = {st.boxes.max_boxes}")
    if bb.stopped == "memory":
        why.append(f"the memory limit of the open boxes ({bb.open_boxes} open)")
    if bb.stopped == "time" or cut:
        why.append(f"the time limit of {st.time_limit:g} s")
    skipped = f"; cut by the time limit: {', '.join(cut)}" if cut else ""
    return "budget_exhausted", (
        f"NOT closed: budget exhausted ({' and '.join(why) or 'the budget'}) before the "
        f"target relative gap {st.target.rtol:g}: {text}; both bounds hold{skipped}; raise "
        f"max_boxes for a tighter bracket")


def _bracket_result(game, inc, dual, bb, extra: dict, cut: list,
                    st: BracketSettings, span: float) -> Result:
    lower, costs, pol, method, theta = _certified_lower(game, inc)
    upper = min(dual.U, bb.upper)
    # closed by the one stated rule: the gap at most max(atol, rtol * the gap's scale)
    closed = bool(upper - lower <= st.gap_tol(lower, span))
    status, msg = _status(pol, upper, lower, bb, cut, st, closed, span, game,
                          extra["min_robust_costs"])
    up = game.replace(net=None).evaluate(dual.pi[None])
    pol = dual.pi if pol is None else pol
    return Result(
        lower=float(lower), upper=float(upper), gap=float(upper - lower),
        relative_gap=float(_relative(upper - lower, lower, span)), value_range=span,
        policy_class=POLICY_CLASS,
        lower_method=method, upper_method="lagrangian" if upper >= dual.U else
        "branch and bound", lam=dual.lam.copy(),
        policies={"lower": pol, "upper": dual.pi}, policy=pol, lower_costs=costs,
        mix_theta=theta if method == "mixture" else 0.0,
        upper_policy_value=float(up["value"][0]), upper_policy_costs=up["costs"][0],
        history=dual.history, n_candidates=inc.n_evaluated,
        boxes=bb.boxes, open_boxes=bb.open_boxes, closed=closed, stopped=bb.stopped,
        trace=bb.trace, success=status == "bracket", status=status, message=msg, **extra)


def rcmdp_bracket(model, uset, settings: BracketSettings | None = None, *, candidates=None,
                  client=None, progress=None, **options) -> Result:
    r"""A certified bracket ``lower <= OPT <= upper`` on the RCMDP optimum.

    See the module docstring and ``docs/ground_truth.md`` for the methods and what is
    guaranteed.  The model and the set are checked once, here, and one
    :class:`~rcmdp_exact.robust.RobustGame` carries them through every phase (the
    Lagrangian search, the variants' targets, the lower side's search and its second
    certification, the branch and bound and the certified dual).

    Parameters
    ----------
    model : TabularCMDP
        Rewards, costs, budgets, gamma < 1, p0, terminal states (the set's nominal is
        the centre; the model's transitions are not used).
    uset : UncertaintySet
        The uncertainty set (an :class:`~rcmdp_exact.L1Ball` or any rectangular set).
    settings : BracketSettings, optional
        The options below as one frozen object, grouped by concern
        (:mod:`~.settings`); keyword options given beside it replace its fields
        (``dataclasses.replace``).  Every option is validated when the settings are
        built, and those that size the memory against the model, before any work.
    candidates : array_like, optional
        Policies (n, S, A) (or one (S, A)), for example a learner's trained policies:
        each is certified and offered to the lower side, and the local search starts
        from each.
    client : distributed.Client, optional
        Bound the children of each round on this Dask cluster: the same chunks, their
        results applied in the same order whatever the order in which the workers
        finish, so the same bracket as without.  Anything else than a
        ``distributed.Client`` (or an object with its methods ``scatter`` and
        ``submit``) is refused before any work.
    progress : bool or None
        A bar over the boxes of the branch and bound that shows the gap reached (lower,
        upper, relative gap); None (the default): only when standard error is a
        terminal.

    Other Parameters
    ----------------
    rtol, atol : float
        *Target* (:class:`~.settings.Target`).  Stop, and call the bracket ``closed``,
        when ``upper - lower <= max(atol, rtol * max(|lower|, RELATIVE_FLOOR *
        value_range))`` (defaults 1e-4, 1e-9; :func:`value_range`: the span of the
        model's discounted values; :data:`RELATIVE_FLOOR` = 1e-6).
    tol : float
        *Target*.  Tolerance of the robust fixed points (the bounds stay certified at
        any tol).
    feas_tol : float
        *Target*.  The bracket is that of the optimum at budgets d + feas_tol: the one
        vector of budgets of every phase.
    n_grid, lam_range, n_refine, n_cuts
        *The Lagrangian search* (:class:`~.settings.LagrangianSearch`, :mod:`.dual`):
        ``n_grid`` points (29) on ``lam_range``, ``n_refine`` sign steps (40),
        ``n_cuts`` cutting-plane steps (30).
    n_ascent, n_starts, mix_steps, n_partners, seed
        *The lower side's search* (:class:`~.settings.LowerSearch`, :mod:`.search`):
        SLSQP iterations per start (60), random starting policies (2, Dirichlet rows
        from ``seed``), the resolution of the mixtures (40: about 3 bisection steps per
        round of 8) and how many infeasible partners they take (4).
    deep_after, deep_starts, deep_ascent : int
        *The lower side's search*.  Once the branch and bound has bounded ``deep_after``
        boxes (2000) without closing the bracket, the lower side is searched again,
        deeper: SLSQP with ``deep_ascent`` iterations (300) from the incumbent, the
        Lagrangian maximiser and ``deep_starts`` random policies (12, drawn from
        ``seed`` again: with an int seed the first ``n_starts`` are those of the first
        search; a Generator goes on drawing), then mixtures; then the boxes go on.
        ``deep_after = 0``: never (nor when ``max_boxes <= deep_after``).
    max_boxes : int
        *The branch and bound* (:class:`~.settings.BranchAndBound`): its work budget,
        the boxes bounded (default 2000).  Every phase is bounded by a count of work
        (this, ``n_grid``, ``n_refine``, ``n_cuts``, ``n_ascent``, ``n_starts``,
        ``mix_steps``, ``deep_starts``, ``deep_ascent``, ``dual_evaluations``, the fixed
        points' iteration caps), so the same settings give the same bracket, bit for
        bit, on any load of one machine (docs/ground_truth.md, section 3.1, says where
        floating point may differ across machines).  The open boxes have a memory limit
        too (:data:`~.boxes.OPEN_BOX_MEMORY`: the search stops there, ``stopped =
        "memory"``).
    box_bounds : sequence of {"local", "lp"} or None
        *The branch and bound*.  The bounds a box adds to its Lagrangian bound
        (:mod:`.local_bound`, the performance-difference bound; :mod:`.occupancy_bound`,
        the occupancy LP with McCormick envelopes); ``()`` for the Lagrangian bound
        alone.  None (the default): ``("lp",)`` up to :data:`SMALL_STATES` (3) states,
        where the performance-difference bound never cut a box the LP had not (the same
        boxes on the 24 small models of the benchmark) and took 30% of the time, and
        ``("local", "lp")`` beyond.  The result's ``box_bounds`` says which were used.
    split_point : {"middle", "lp", "incumbent"}
        *The branch and bound*.  Where the chosen interval of a box is split: its middle
        (the default), the value of the box's occupancy-LP policy (the relaxation's
        maximiser), or that of the lower side's policy; the last two kept at least a
        fifth of the width from either end (:mod:`.structure`).  The order of the
        search only: every choice gives a valid bracket.
    variants : sequence of {"value", "constraint", "lagrangian"}
        RCPG variant targets to compute (:func:`rcmdp_variant`; also candidates of the
        lower side).  None by default: they are reference points (of the ground-truth
        table, which asks for all three), not bounds, and took a tenth of the time of a
        small model; ``variants=VARIANTS`` computes all three.
    dual_evaluations : int
        Budget (robust fixed points, 200) of the certified Lagrangian dual computed
        after the bracket (:func:`~rcmdp_exact.ground_truth.certified_dual`); 0 skips
        it.
    time_limit : float or None
        *The safety net*, in seconds from the call (default 600; None: none).  It never
        decides the result of a run that ends within it.  If it passes, every phase
        stops at its next step (the bounds stay certified), the final certification of
        the lower side runs (the stated overhead: docs/ground_truth.md, section 3.7),
        the certified dual is skipped, and the result says so: ``reproducible`` False,
        ``stopped_by_time_limit`` True, ``time_limit_phase``, and the message.

    Returns
    -------
    Result
        ``lower``, ``upper``, ``gap`` (absolute), ``relative_gap`` (the gap over
        ``max(abs(lower), RELATIVE_FLOOR * value_range)``), ``value_range``,
        ``policy_class`` ("stationary randomised": the bracket bounds the optimum over
        Markov stationary randomised policies); ``lower_method`` ("lp", "lp, tightened budgets",
        "lagrangian", "variant <name>", "candidate", "certified search", "mixture",
        "branch and bound", or "none") and ``upper_method`` ("lagrangian", "branch and
        bound" or "least worst-case cost"); ``lam`` (K,) of the Lagrangian bound;
        ``policies`` {"lower": the certified policy, "upper": the robust-Lagrangian
        optimum at ``lam``}, ``policy`` (= policies["lower"]); ``lower_costs``
        (K,) its certified worst-case costs; ``mix_theta``; ``upper_policy_value``,
        ``upper_policy_costs``; ``min_robust_costs`` (K,) certified lower bounds on the
        least worst-case costs; ``history`` {"lam", "g"}; ``n_candidates``; ``boxes``,
        ``open_boxes``, ``closed``, ``stopped`` ("gap", "boxes", "memory", "time",
        "empty" or "infeasible"), ``box_bounds`` (the box bounds used),
        ``split_point`` (where the chosen intervals were split), ``trace``
        (rounds, 4) of seconds, boxes, lower and upper over the branch and bound,
        ``seconds``; ``variants`` {name: the target of each variant asked for} ({} by
        default); ``reproducible`` (False when the safety net stopped the run),
        ``stopped_by_time_limit``, ``time_limit_phase`` (the phase it stopped, or
        None); ``success``, ``status`` ("bracket": the target gap was reached;
        "budget_exhausted": a budget ended first, both bounds hold;
        "no_feasible_policy", "infeasible"),
        ``message``; ``dual``: the certified interval [``lo``, ``hi``] on the
        Lagrangian dual :math:`D = \min_{\lambda \ge 0} \max_\pi \min_P L` (the
        :func:`~rcmdp_exact.ground_truth.certified_dual` result), and ``duality_gap``:
        certified bounds [``lo``, ``hi``] on :math:`D - \mathrm{OPT}` with
        ``strong_duality`` ("fails" when ``lo > 0``: a proof that strong duality fails
        on this model, "holds", "undecided", or "inconsistent" when the bracket's own
        bounds cross) and ``message``; both None when the set is not sa-rectangular,
        ``dual_evaluations`` is 0 or the safety net had stopped the run.
    """
    check_robust_inputs(model, uset, "rcmdp_bracket")
    st = BracketSettings() if settings is None and not options else \
        BracketSettings(**options) if settings is None else \
        dataclasses.replace(check_type(settings, "settings", BracketSettings,
                                       "build one with BracketSettings(...)"), **options)
    cands = _check_candidates(model, candidates)
    check_client(client)
    st.check_memory(model)
    low, high = lam_bounds(model, st.lagrangian.lam_range)
    # the one safety net of the run, shared by every game made from this one
    net = SafetyNet(st.time_limit)
    # the budgets in one form: the game's d (the model's plus feas_tol), never changed
    game = RobustGame(model, uset, tol=st.target.tol, net=net,
                      d=np.asarray(model.d, dtype=np.float64) + st.target.feas_tol)
    net.phase = "the least worst-case costs"
    least, safest = _least_costs(game)
    var_out, cut = _variant_targets(game, st, low, high, progress)
    bounds = st.boxes.bounds_for(game.S)
    extra = dict(min_robust_costs=least, variants=var_out, box_bounds=bounds,
                 split_point=st.boxes.split_point)
    net.phase = "the infeasibility certificate"
    proof = _infeasibility(game, model, least, safest)
    if proof is not None:
        return _infeasible(game, *proof, least, dict(extra, seconds=net.elapsed(),
                                                     dual=None, duality_gap=None,
                                                     **_net_fields(net)))
    inc = Incumbent(game, lambda pi: certify(game, pi))
    net.phase = "the nominal LPs"
    lps = _lp_candidates(model, game, inc)
    if cands is not None:
        inc.offer(cands, "candidate")
    span = value_range(model)
    net.phase = "the Lagrangian search"
    # the refinement of lam stops once 10 sign steps gain less than 1% of the target gap
    lag = st.lagrangian
    dual = lagrangian_search(game, [np.zeros(game.K)] + [lp.lam for lp in lps],
                             low=low, high=high, n_grid=lag.n_grid, n_refine=lag.n_refine,
                             n_cuts=lag.n_cuts, gain=0.01 * st.gap_tol(inc.value, span))
    _seed_lower(inc, dual, safest, var_out)

    def tol_of(value):
        return st.gap_tol(value, span)

    bb_kw = dict(lam_unit=max(10.0 * low, float(dual.lam.max(initial=0.0))),
                 gap_tol=tol_of, bounds=bounds, client=client, t0=net.start, model=model,
                 scale_of=lambda v: gap_scale(v, span), split_point=st.boxes.split_point)
    net.phase = "the search of the lower side"
    _lower_search(game, inc, dual, lps, st.lower, cands, tol_of)
    with tqdm(desc="rcmdp bracket: boxes", disable=not progress_default(progress),
              leave=False) as bar:
        max_boxes, deep_after = st.boxes.max_boxes, st.lower.deep_after
        deep = 0 < deep_after < max_boxes
        net.phase = "the branch and bound"
        bb = branch_and_bound(game, inc, dual.lam, bar=bar, **bb_kw,
                              max_boxes=deep_after if deep else max_boxes)
        if deep and not bb.closed and not game.late():
            # a long run: the lower side searched again, deeper, then the boxes go on
            bar.set_description_str("rcmdp bracket: a deeper search of the lower side")
            net.phase = "the deeper search of the lower side"
            _deep_search(game, inc, dual, st.lower, tol_of)
            bar.set_description_str("rcmdp bracket: boxes")
            net.phase = "the branch and bound"
            bb = branch_and_bound(game, inc, dual.lam, max_boxes=max_boxes, bar=bar,
                                  state=bb.state, **bb_kw)
    net.phase = "the final certification"
    res = _bracket_result(game, inc, dual, bb, extra, cut, st, span)
    res = _with_dual(game, res, st.dual_evaluations)
    res.update(_net_fields(net), seconds=net.elapsed())
    if net.fired:
        res["message"] += _net_text(net)
    return res


def _net_fields(net: SafetyNet) -> dict:
    """The result's word on the safety net: ``reproducible``, ``stopped_by_time_limit``
    and ``time_limit_phase`` (the phase it stopped, or None)."""
    return dict(reproducible=not net.fired, stopped_by_time_limit=net.fired,
                time_limit_phase=net.fired_in if net.fired else None)


def _net_text(net: SafetyNet) -> str:
    """What a result stopped by the safety net says, at the end of its message."""
    return (f"; STOPPED BY THE TIME LIMIT of {net.seconds:g} s (a safety net) in "
            f"{net.fired_in or 'the run'}: both bounds hold, but this result depends on "
            f"the machine and its load and is NOT reproducible; raise time_limit (or give "
            f"None) so that the work budgets decide")


def _variant_targets(game, st: BracketSettings, low, high, progress):
    """The RCPG variants' targets on the bracket's game (its budgets, its work budgets
    ``n_grid``, :data:`~.variants.VARIANT_BISECT`, :data:`~.variants.VARIANT_ITER`):
    ({name: Result}, [the variants cut by the safety net])."""
    var_out, cut = {}, []
    for v in st.variants:
        if v == "constraint" and game.K == 0:
            continue
        game.net.phase = f"the target of variant {v}"
        if game.late():
            cut.append(f"variant {v}")
            continue
        with tqdm(desc=f"variant {v}", disable=not progress_default(progress),
                  leave=False) as bar:
            res = variant_target(game, v, low=low, high=high, n_grid=st.lagrangian.n_grid,
                                 n_bisect=VARIANT_BISECT, max_iter=VARIANT_ITER, bar=bar)
        if game.late():  # cut inside: not an equilibrium to report
            cut.append(f"variant {v}")
        else:
            var_out[v] = res
    return var_out, cut


def _with_dual(game, res: Result, evaluations: int) -> Result:
    """``res`` with the fields ``dual`` and ``duality_gap`` (None where not computed): the
    certified dual on the bracket's game (its budgets), with the dual's own
    fixed-point settings; not computed once the safety net has expired."""
    res["dual"] = res["duality_gap"] = None
    if evaluations == 0 or game.late() or not isinstance(game.uset, SARectangularSet) \
            or not np.isfinite(res["upper"]):
        return res
    game.net.phase = "the certified dual"
    dgame = game.replace(tol=DUAL_TOL, max_iter=DUAL_ITER)  # the same net
    # the bracket's lower side is a policy certified robust-feasible at the same
    # budgets: by weak duality a lower bound on D from the start
    dual = dual_of_game(dgame, tol=DUAL_GAP_TOL, max_evaluations=max(2, evaluations),
                        net=game.net, floor=res["lower"],
                        starts=np.reshape(res["lam"], (1, -1)))
    gap = duality_gap(game.model, game.uset, res, dual)
    res["dual"] = dual
    res["duality_gap"] = Result(lo=gap.lo, hi=gap.hi, strong_duality=gap.strong_duality,
                                message=gap.message)
    return res
