r"""RRPO, Rectified Robust Policy Optimization of Ma, Chen, Zhou and Huang, exact and
tabular.

S. Ma, Z. Chen, Y. Zhou and H. Huang, "Rectified robust policy optimization for
model-uncertain constrained reinforcement learning without strong duality", arXiv
2508.17448 (v1).  Strong duality fails for robust constrained RL, so RRPO works on the
primal problem alone, in the manner of constraint-rectified policy optimisation (CRPO,
Xu, Liang and Lan 2021) with robust evaluations: at each iteration, with tolerance
:math:`\eta`,

* if every worst-case cost is within its budget up to the tolerance,
  :math:`C_k(\pi_t) \le d_k + \eta`, the policy takes a projected gradient step that
  ascends the worst-case value, :math:`\pi_{t+1} = \mathrm{Proj}_\Delta(\pi_t + \alpha
  \nabla V(\pi_t))`;
* otherwise it rectifies the most violated constraint,
  :math:`\pi_{t+1} = \mathrm{Proj}_\Delta(\pi_t - \alpha \nabla C_k(\pi_t))`,

each gradient Danskin's under the objective's own worst-case kernel (direct
parametrisation).  The output is the last iterate at which the constraints held within
the tolerance (CRPO's set :math:`\mathcal N_0` of reward steps; CRPO draws one of them at
random, we take the last), or the last iterate when there was none.

What could be read of the paper through the search tool was its abstract (v1 and the
OpenReview versions); the update above is a reconstruction from it and from CRPO, whose
name RRPO extends (``docs/planners.md``).  Choices: :math:`\alpha` = ``step`` times
:math:`(1 - \gamma)^3 / (2 \gamma |A|)` in scaled units; :math:`\eta` = ``tolerance``
scaled units (default 0: the budgets themselves); the most violated constraint in scaled
units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Context, Planner, PlannerSettings, register
from .oracle import project_simplex
from .primal_dual import smoothness_step

__all__ = ["RRPOSettings",]


@dataclass(frozen=True)
class RRPOSettings(PlannerSettings):
    """Hyperparameters of RRPO (module notes)."""

    step: float = 1e4
    """alpha in units of the smoothness step (1 - gamma)^3 / (2 gamma A), A actions."""
    tolerance: float = 0.0
    """eta: a cost may exceed its budget by this much (scaled units) for a reward step."""

    def rules(self) -> dict:
        return {"step": (0.0, None, "real+"), "tolerance": (0.0, None, "real")}


def _run_rrpo(ctx: Context) -> dict:
    s = ctx.settings
    alpha = s.step * smoothness_step(ctx)
    d = ctx.d_scaled
    pi = ctx.start
    last_good = None
    reward_steps = 0
    for _ in range(ctx.iterations):
        ev = ctx.evaluate(pi)
        excess = ctx.costs_scaled(ev) - d
        worst = int(np.argmax(excess)) if excess.size else -1
        reward = excess.size == 0 or excess[worst] <= s.tolerance
        ctx.trace.record(ev, switch=0 if reward else worst + 1)
        if reward:
            last_good = pi
            reward_steps += 1
            pi = project_simplex(pi + alpha * ctx.gradient_scaled(ev, 0))
        else:
            pi = project_simplex(pi - alpha * ctx.gradient_scaled(ev, worst + 1))
    ev = ctx.evaluate(pi)
    ctx.trace.record(ev)
    excess = ctx.costs_scaled(ev) - d
    if excess.size == 0 or excess.max() <= s.tolerance:
        last_good = pi
    out = pi if last_good is None else last_good
    return dict(policy=out, iterations=ctx.iterations,
                info=dict(reward_steps=reward_steps, alpha=alpha,
                          output="last iterate within tolerance" if last_good is not None
                          else "last iterate (never within tolerance)"))


PLANNER = register(Planner(
    name="rrpo", run=_run_rrpo, settings=RRPOSettings,
    title="RRPO (Ma, Chen, Zhou and Huang 2025)",
    paper="S. Ma, Z. Chen, Y. Zhou, H. Huang. Rectified robust policy optimization for "
          "model-uncertain constrained reinforcement learning without strong duality. "
          "arXiv:2508.17448v1",
    description="primal-only, CRPO-style: projected gradient on the robust reward when the "
                "constraints hold within a tolerance, else on the most violated constraint"))
