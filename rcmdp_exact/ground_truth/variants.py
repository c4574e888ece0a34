r"""What the ground truth is applied to: the targets of the paper's three RCPG variants.

The paper's RCPG variants optimise :math:`V_{\pi,P^+}` subject to :math:`C_{\pi,P^+} \le d`
with **one** kernel :math:`P^+(\pi)` chosen by

* ``"value"``: :math:`\arg\min_P V_{\pi,P}` (RCPG, robust value),
* ``"constraint"``: :math:`\arg\max_P \sum_k C_{k,\pi,P}` (RCPG, robust constraint),
* ``"lagrangian"``: :math:`\arg\min_P [V - \lambda^\top C]_{\pi,P}` (RCPG, robust
  Lagrangian; the paper's Eq. "robustlagrangian").

At a fixed :math:`\lambda` such a learner (a gradient step on the Lagrangian with
:math:`P^+` held fixed) can only rest at a policy that is optimal for the Lagrangian
reward under its own :math:`P^+(\pi)`: an equilibrium, found by alternating exact best
responses (the variant's worst case of the current policy, then Howard's policy
iteration under that kernel), starting from the robust-Lagrangian optimum.  The
learner raises :math:`\lambda` while :math:`C_{\pi,P^+} > d`, so :func:`rcmdp_variant`
searches lam = 0 and a log-spaced grid (the same value for every constraint), then
narrows the interval between the largest infeasible and the smallest feasible grid
point (batches of 8 log-spaced trial points, as far as ``n_bisect`` bisection steps
would); the result is the equilibrium at the smallest lam whose equilibrium meets the
budgets under its own :math:`P^+`.  All equilibria of one batch are computed together.
The test settings these policies are evaluated on are those of
:func:`rcmdp_exact.domains.perturbations`.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import as_float_array, check_choice, check_int, check_memory, check_real
from .._progress import progress_default, tqdm
from .._result import Result
from ..core.mdp import box_policy_iteration, greedy_policy
from ..names import VARIANTS
from ..robust import check_robust_inputs
from ..robust.engine import RobustGame

__all__ = ["VARIANTS", "VARIANT_BISECT", "VARIANT_ITER", "check_lam_range", "lam_bounds",
           "rcmdp_variant",]


#: Bisection steps of the crossing and best-response rounds of :func:`rcmdp_variant`.
VARIANT_BISECT = 30
VARIANT_ITER = 25


#: The largest slack ``feas_tol`` on the budgets: a larger one leaves no constraint (drop
#: the constraint instead) and overflows the Lagrangian bounds.
FEAS_TOL_MAX = 1e12


def check_feas_tol(feas_tol) -> float:
    """``feas_tol`` checked: a slack in [0, :data:`FEAS_TOL_MAX`] added to the budgets."""
    return check_real(feas_tol, "feas_tol", 0.0, FEAS_TOL_MAX,
                      hint=" (the budgets' slack; beyond 1e12 no constraint is left: remove "
                           "the constraint from the model instead)")


def check_lam_range(lam_range) -> tuple[float, float] | None:
    """A given range (low, high) of multipliers, validated (0 < low < high), as floats;
    None stays None (the default range of :func:`lam_bounds`)."""
    if lam_range is None:
        return None
    pair = as_float_array(lam_range, "lam_range", "give (low, high) with 0 < low < high",
                          shape=(2,))
    low = check_real(pair[0], "lam_range[0] (low)", 0.0, low_open=True)
    return low, check_real(pair[1], "lam_range[1] (high)", low, low_open=True)


def lam_bounds(model, lam_range) -> tuple[float, float]:
    """(low, high): a validated range (:func:`check_lam_range`), or the default (1e-3, 1e4)
    times max|r| / max|c| (1 without rewards or costs)."""
    if lam_range is not None:
        return lam_range
    rmax = float(np.abs(model.r).max(initial=0.0))
    cmax = float(np.abs(model.c).max(initial=0.0))
    ratio = rmax / cmax if cmax > 0 and rmax > 0 else 1.0
    return 1e-3 * ratio, 1e4 * ratio


#: The most memory (bytes) the grid of a lam search may hold at once: each point keeps
#: its equilibrium policy and common worst-case kernel, about 8 (S A S + S A + 2 K + 4)
#: bytes.  2 GiB, as the bracket's (``settings.BRACKET_MEMORY``).
GRID_MEMORY = 2 * 2**30


def _check_search(model, uset, n_grid, lam_range, feas_tol, **counts):
    """Validate the arguments of a lam search; return (low, high) of the lam range
    (:func:`lam_bounds`)."""
    check_robust_inputs(model, uset)
    check_int(n_grid, "n_grid", 2)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    check_memory(n_grid, 8 * (S * A * S + S * A + 2 * K + 4), GRID_MEMORY, "n_grid",
                 "equilibria and worst-case kernels", " (a finer grid rarely helps: the "
                 "crossing is bisected)", "rcmdp_exact.ground_truth.variants.GRID_MEMORY")
    for name, val in counts.items():
        check_int(val, name, 0)
    check_feas_tol(feas_tol)
    return lam_bounds(model, check_lam_range(lam_range))


def _best_response(game: RobustGame, P: np.ndarray, g: np.ndarray, pi: np.ndarray,
                  max_iter: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """Howard's policy iteration for rewards g under kernels P, a batch (J, S, A, S).

    :func:`~rcmdp_exact.core.mdp.box_policy_iteration` on the full box, each policy evaluated
    exactly (:meth:`RobustGame.values`); starts at the actions of ``pi`` (J, S, A) and
    keeps the current action unless another is better by more than 1e-12 times the value
    scale.  Returns the deterministic policies (J, S, A) and their Q-functions (J, S, A).
    """
    r = np.einsum("jsat,jsat->jsa", P, g)

    def evaluate(pol):
        w = game.values(P, g, pol)
        q = r + game.gamma * np.einsum("jsat,jt->jsa", P, w)
        q[:, game.term] = 0.0
        return w, q

    full = (np.zeros(pi.shape), np.ones(pi.shape))
    sol = box_policy_iteration(evaluate, greedy_policy(pi), *full, max_iter=max_iter,
                               atol=1e-12 * game.scale, stop=game.late)
    return sol.pi, sol.q


def _variant_reward(game: RobustGame, variant: str, lag: np.ndarray) -> np.ndarray:
    if variant == "value":
        return np.broadcast_to(game.R, lag.shape)
    if variant == "constraint":
        return np.broadcast_to(-game.C.sum(axis=0), lag.shape)
    return lag


def _variant_equilibria(game: RobustGame, variant: str, lams: np.ndarray, max_iter: int):
    """The rest points of one RCPG variant at multipliers lams (J, K), in one batch.

    Alternating best responses from the robust-Lagrangian optimum: P+ = the variant's
    worst case of the current policy, then the optimal policy of r - lam.c under P+;
    an equilibrium when the policy is already optimal under its own P+, a cycle when a
    best response repeats.  Returns policies (J, S, A), kernels P+ (J, S, A, S) and
    ``converged`` (J,).
    """
    J, S, A = lams.shape[0], game.S, game.A
    lag = game.lagrangian(lams)
    pi = game.solve(lag, np.zeros((J, S, A)), np.ones((J, S, A)))["pi"]
    g_var = _variant_reward(game, variant, lag)
    seen = [{pi[j].tobytes()} for j in range(J)]
    active, conv = np.ones(J, dtype=bool), np.zeros(J, dtype=bool)
    P_out = np.empty((J, S, A, S))
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        P = game.adversary(g_var[idx], pi[idx]).P
        P_out[idx] = P
        br, q = _best_response(game, P, lag[idx], pi[idx])
        eq = np.all(np.einsum("jsa,jsa->js", pi[idx], q)
                    >= q.max(axis=-1) - 1e-10 * game.scale, axis=1)
        for n, j in enumerate(idx):
            if eq[n] or br[n].tobytes() in seen[j]:
                active[j], conv[j] = False, bool(eq[n])
            else:
                seen[j].add(br[n].tobytes())
                pi[j] = br[n]
        if not active.any() or game.late():
            return pi, P_out, conv
    idx = np.flatnonzero(active)
    P_out[idx] = game.adversary(g_var[idx], pi[idx]).P
    return pi, P_out, conv


def _crossing(run, grid, n_bisect: int, late, n_points: int = 8) -> None:
    """Narrow the lam between the largest infeasible and the smallest feasible grid point:
    ``n_points`` trial points per batch (log-spaced, linear from 0), until the bracket
    shrank as much as ``n_bisect`` bisection steps would (or ``late()``: the safety net
    expired)."""
    feas = [t for t, r in zip(grid, run(grid), strict=True) if r.feasible]
    if not feas or min(feas) == 0.0:
        return
    lo = max([t for t in grid if t < min(feas)], default=None)
    hi, done = min(feas), 0.0
    while lo is not None and done < n_bisect and not late():
        pts = (np.geomspace(lo, hi, n_points + 2) if lo > 0
               else np.linspace(0.0, hi, n_points + 2))[1:-1].tolist()
        ok = [r.feasible for r in run(pts)]
        first = ok.index(True) if True in ok else len(pts)
        lo = pts[first - 1] if first > 0 else lo
        hi = pts[first] if first < len(pts) else hi
        done += math.log2(n_points + 1)


def _run_variant(game: RobustGame, variant, grid, n_bisect, max_iter, bar) -> dict:
    """Equilibria at every lam met (grid, then the crossing): {t: Result}, feasible at
    the game's budgets ``game.d``.  A long grid runs in batches of
    :func:`~.dual.batch_size`; past the safety net no batch is started (the rows then
    miss some points: the bracket discards such a variant)."""
    from .dual import batch_size

    rows: dict = {}
    K = game.K
    size = batch_size(game)

    def run(ts):
        new = [t for t in dict.fromkeys(ts) if t not in rows]
        for a in range(0, len(new), size):
            if a and game.late():
                break
            part = new[a:a + size]
            lams = np.repeat(np.array(part, dtype=np.float64)[:, None], K, axis=1)
            pis, Ps, conv = _variant_equilibria(game, variant, lams, max_iter)
            values, costs = game.numbers(Ps, pis)
            for j, t in enumerate(part):
                rows[t] = Result(lam=lams[j], policy=pis[j], value=float(values[j]),
                                 costs=costs[j], P_worst=Ps[j],
                                 feasible=bool(np.all(costs[j] <= game.d)),
                                 converged=bool(conv[j]))
            bar.update(len(part))
        return [rows[t] for t in ts if t in rows]

    run(grid)
    if K:
        _crossing(run, grid, n_bisect, game.late)
    return rows


def rcmdp_variant(model, uset, variant: str, *, n_grid: int = 29,
                  lam_range: tuple[float, float] | None = None,
                  n_bisect: int = VARIANT_BISECT, max_iter: int = VARIANT_ITER,
                  tol: float = 1e-12, feas_tol: float = 0.0, progress=None) -> Result:
    r"""The target of one RCPG variant: a common worst case :math:`P^+` for value and cost.

    See the module docstring.  Every number is an exact evaluation under the kernels
    found by the robust fixed points; the work is bounded by ``n_grid``, ``n_bisect``
    and ``max_iter`` (best-response rounds), so the answer is the same on every
    machine.  ``progress``: a bar over the multipliers tried; None (the default) draws
    it only when standard error is a terminal.

    Returns
    -------
    Result
        ``variant``, ``policy`` (S, A), ``lam`` (K,), ``value`` and ``costs``
        (K,) under the common :math:`P^+`, ``P_worst``,
        ``feasible`` (costs <= d + feas_tol), ``robust_value`` and ``robust_costs`` (K,)
        (each cost under its own maximising kernel),
        ``robust_feasible``, ``converged`` (an equilibrium, not a cycle), ``history``
        {"lam", "value", "costs", "feasible", "converged"}, ``success``, ``status``
        ("ok", "no_feasible_policy"), ``message``.
    """
    check_choice(variant, "variant", VARIANTS)
    low, high = _check_search(model, uset, n_grid, lam_range, feas_tol, n_bisect=n_bisect)
    check_int(max_iter, "max_iter", 1)
    check_real(tol, "tol", 0.0, low_open=True)
    K = model.n_constraints
    if variant == "constraint":
        check_int(K, "the number of constraints K", 1,
                  hint="; variant 'constraint' needs a model with at least one constraint")
    game = RobustGame(model, uset, tol=tol,
                      d=np.asarray(model.d, dtype=np.float64) + float(feas_tol))
    with tqdm(desc=f"variant {variant}", disable=not progress_default(progress),
              leave=False) as bar:
        return variant_target(game, variant, low=low, high=high, n_grid=n_grid,
                              n_bisect=n_bisect, max_iter=max_iter, bar=bar)


def variant_target(game: RobustGame, variant: str, *, low: float, high: float, n_grid: int,
                   n_bisect: int, max_iter: int, bar) -> Result:
    """:func:`rcmdp_variant` on a game already built from valid inputs (the bracket's,
    whose budgets ``game.d`` include its ``feas_tol``): the multipliers 0 and
    ``n_grid`` log-spaced in [low, high], then the crossing."""
    grid = [0.0] if game.K == 0 else [0.0, *np.geomspace(low, high, n_grid).tolist()]
    rows = _run_variant(game, variant, grid, n_bisect, max_iter, bar)
    return _variant_result(game, variant, [rows[t] for t in sorted(rows)])


def _variant_result(game: RobustGame, variant: str, ordered: list) -> Result:
    K, d = game.K, game.d
    ok = [r for r in ordered if r.feasible]
    best = ok[0] if ok else min(ordered, key=lambda r: float(np.max(r.costs - d, initial=0.0)))
    if ok:
        status, message = "ok", (f"smallest lam with a {variant}-feasible equilibrium: value "
                                 f"{best.value:.10g} under the common worst case at lam = "
                                 f"{best.lam.tolist()}")
    else:
        status, message = "no_feasible_policy", (
            f"no equilibrium meets the budgets under its own {variant} worst case; the one "
            f"with the smallest overshoot is returned")
    rob = game.evaluate(best.policy[None])
    rcost = rob["costs_estimate"][0]
    hist_costs = np.array([r.costs for r in ordered]).reshape(len(ordered), K)
    return Result(
        variant=variant, policy=best.policy, lam=best.lam, value=best.value,
        costs=best.costs, P_worst=best.P_worst, feasible=best.feasible,
        robust_value=float(rob["value_estimate"][0]), robust_costs=rcost,
        robust_feasible=bool(np.all(rcost <= d)), converged=best.converged,
        history=Result(lam=np.array([r.lam for r in ordered]).reshape(len(ordered), K),
                       value=np.array([r.value for r in ordered]), costs=hist_costs,
                       feasible=np.array([r.feasible for r in ordered]),
                       converged=np.array([r.converged for r in ordered])),
        success=bool(ok), status=status, message=message,
    )
