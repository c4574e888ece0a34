r"""The Lagrangian upper bound :math:`\min_{\lambda \ge 0} g(\lambda)` on the full box.

:math:`g(\lambda) = \max_\pi \min_P V_{r - \lambda^\top c}(\pi, P) + \lambda^\top d`
(:func:`~rcmdp_exact.ground_truth.boxes.lagrangian_bounds` on the box of all policies)
is an upper bound on the RCMDP optimum for every :math:`\lambda \ge 0`.  It need not be
convex with robustness, so the search is global, then local:

1. the given starting points (0 and the multipliers of nominal LPs) and a log-spaced
   grid on ``lam_range`` (the same value for every constraint, and the full product
   grid of ``n_grid`` points per axis for K = 2), all evaluated in one batch; the grid
   is extended by factors of 10 while its largest point is the best;
2. ``n_refine`` sign steps (:func:`~rcmdp_exact.ground_truth.boxes.improve_lam`) from
   the three best points (Danskin slope :math:`d - C(\pi_\lambda, P_\lambda)`), in
   rounds of :data:`REFINE_ROUND` that stop once a round lowers the bound by at most
   ``gain``;
3. up to ``n_cuts`` cutting-plane (Kelley) steps: the next :math:`\lambda` minimises
   :math:`\max_i [g_i + s_i^\top (\lambda - \lambda_i)]` over the points met (an LP).
   Without robustness g is convex and piecewise linear and these steps reach its
   minimum exactly; with robustness they are a guide.

Every value met is a certified upper bound; the smallest is kept.  The work is counted:
the grid's points (evaluated in batches of at most :func:`batch_size` problems), the
sign steps and the cuts, so the same options give the same bound on every machine.
When the game's safety net expires the search stops after the step in progress (the
engine's fixed points stop too, with their residual bounds), so what it returns is
still a bound.
"""

from __future__ import annotations

import numpy as np

from .._result import Result
from ..robust.engine import RobustGame
from .boxes import improve_lam, lagrangian_bounds

__all__ = [ "BATCH_PROBLEMS", "REFINE_ROUND", "batch_size",]

#: Sign steps per round of the refinement of :func:`lagrangian_search`.
REFINE_ROUND = 10
#: A batch of robust fixed points over a grid (of multipliers, here and in the RCPG
#: variants' search) holds at most this many problems, and at most about
#: :data:`_BATCH_BYTES` of rewards (S A S floats per problem): a long grid is evaluated in
#: batches, so that the safety net is looked at between them and memory stays bounded.
#: The default grids (up to about 200 points) fit in one batch on models up to about
#: 100 states, as before.
BATCH_PROBLEMS = 256
_BATCH_BYTES = 64 * 2**20


def batch_size(game: RobustGame) -> int:
    """Problems per batch of fixed points on a grid: :data:`BATCH_PROBLEMS`, fewer on
    large models (:data:`_BATCH_BYTES`)."""
    per = 8 * game.S * game.A * game.S
    return max(1, min(BATCH_PROBLEMS, _BATCH_BYTES // max(per, 1)))


def _lam_grid(K: int, low: float, high: float, n_grid: int) -> np.ndarray:
    """Points (n, K): 0, a log-spaced diagonal and, for K = 2, the product grid."""
    axis = np.concatenate([[0.0], np.geomspace(low, high, n_grid)])
    if K == 0:
        return np.zeros((1, 0))
    diag = np.repeat(axis[:, None], K, axis=1)
    if K == 2:
        sub = axis[:: max(1, (n_grid + 1) // 12)]
        prod = np.stack(np.meshgrid(sub, sub, indexing="ij"), axis=-1).reshape(-1, 2)
        return np.unique(np.concatenate([diag, prod]), axis=0)
    return diag


class _Log:
    """Every (lam, g) met, with the best bound and its maximising policy."""

    def __init__(self, game: RobustGame):
        self.game = game
        self.lam, self.g, self.slope, self.pis = [], [], [], []
        self.best = None

    def run(self, lam: np.ndarray) -> Result:
        """The bounds at the points lam (J, K), in batches of :func:`batch_size`; the
        batches past the safety net are not run (the result then has fewer rows)."""
        S, A = self.game.S, self.game.A
        size = batch_size(self.game)
        parts = []
        for a in range(0, lam.shape[0], size):
            if a and self.game.late():
                break
            part = lam[a:a + size]
            J = part.shape[0]
            res = lagrangian_bounds(self.game, np.zeros((J, S, A)), np.ones((J, S, A)), part)
            self.record(part, res)
            parts.append(res)
        if len(parts) == 1:
            return parts[0]
        return Result({key: np.concatenate([p[key] for p in parts]) for key in parts[0]})

    def record(self, lam, res: Result) -> None:
        self.lam.extend(lam)
        self.g.extend(res.U)
        self.slope.extend(res.grad)
        self.pis.extend(res.pi)
        i = int(np.argmin(res.U))
        if self.best is None or res.U[i] < self.best.U:
            self.best = Result(U=float(res.U[i]), lam=lam[i].copy(), pi=res.pi[i].copy(),
                               grad=res.grad[i].copy())


def _kelley(log: _Log, n_cuts: int, box: float) -> None:
    from scipy.optimize import linprog  # here: scipy.optimize costs 0.3 s of every start

    K = log.game.K
    for _ in range(n_cuts):
        if log.game.late():
            return
        G, L, Sl = np.array(log.g), np.array(log.lam), np.array(log.slope)
        c = np.zeros(K + 1)
        c[-1] = 1.0
        sol = linprog(c, A_ub=np.hstack([Sl, -np.ones((G.size, 1))]),
                      b_ub=np.einsum("ik,ik->i", Sl, L) - G,
                      bounds=[(0.0, box)] * K + [(None, None)], method="highs")
        if sol.status != 0 or log.best.U - sol.x[-1] <= 1e-13 * max(1.0, abs(log.best.U)):
            return
        lam = np.maximum(sol.x[:K], 0.0)
        if np.any(np.all(np.isclose(L, lam, rtol=0.0, atol=1e-15), axis=1)):
            return
        log.run(lam[None])


def lagrangian_search(game: RobustGame, starts, *, low: float, high: float, n_grid: int,
                      n_refine: int, n_cuts: int, gain: float = 0.0) -> Result:
    """Search for the smallest certified g(lam); see the module docstring.

    Returns ``U`` (the bound), ``lam`` (K,), ``pi`` (S, A) the maximiser at ``lam``,
    ``history`` {"lam", "g"} and ``policies`` the distinct maximisers met (n, S, A),
    ordered by increasing sum of lam.
    """
    K = game.K
    log = _Log(game)
    grid = _lam_grid(K, low, high, n_grid)
    pts = np.concatenate([np.reshape(starts, (-1, K)), grid]) if K else grid
    if K and game.late():  # past the safety net: the starting points alone (lam = 0 first)
        pts = np.reshape(starts, (-1, K))
    res = log.run(pts)
    while K and res.U.size == pts.shape[0] and np.argmin(res.U) == res.U.size - 1 \
            and pts[-1, 0] < 1e12 * high and not game.late():
        pts = pts[-1:] * 10.0
        res = log.run(pts)
    if K and not game.late():
        order = np.argsort(np.array(log.g), kind="stable")[:3]
        lam0 = np.array(log.lam)[order]
        step = 0.1 * np.maximum(lam0, low)
        bounds = log.run(lam0)
        lam, full = lam0, (np.zeros((lam0.shape[0], game.S, game.A)),
                           np.ones((lam0.shape[0], game.S, game.A)))
        done = 0
        while done < n_refine and not game.late():
            n = min(REFINE_ROUND, n_refine - done)
            before = float(np.min(bounds.U))
            bounds, lam, step = improve_lam(game, *full, lam, step, n, bounds)
            done += n
            if before - float(np.min(bounds.U)) <= gain:
                break
        log.record(lam, bounds)
        _kelley(log, n_cuts, box=10.0 * max(high, float(np.max(log.lam))))
    best = log.best
    order = np.argsort(np.array(log.lam).reshape(len(log.g), K).sum(axis=1), kind="stable")
    pis = np.array(log.pis)[order]
    keep = np.unique(pis.reshape(len(pis), -1), axis=0, return_index=True)[1]
    return Result(U=best.U, lam=best.lam, pi=best.pi, policies=pis[np.sort(keep)],
                  history={"lam": np.array(log.lam).reshape(len(log.g), K),
                           "g": np.array(log.g)})
