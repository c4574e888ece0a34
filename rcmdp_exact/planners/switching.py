r"""RNPG, the switching method of Ganguly, Panaganti, Ghosh and Wierman, exact and tabular.

S. Ganguly, K. Panaganti, A. Ghosh and A. Wierman, "Efficient policy optimization in
robust constrained MDPs with iteration complexity guarantees", arXiv 2505.19238 (v2).
Strong duality fails for RCMDPs, so the method is primal-only; and it avoids EpiRC-PGS's
bisection by a fixed scaling of the objective.  In reward form, with the objective as a
nonnegative cost :math:`J_0(\pi) = \bar V - V(\pi)` (:math:`\bar V` the largest value
any policy can have),

.. math::

    F_\lambda(\pi) = \max\Bigl\{ \frac{J_0(\pi)}{\lambda},\;
                                 \max_k \bigl(C_k(\pi) - d_k\bigr) \Bigr\},

and each iteration takes one KL-regularised natural-gradient (policy mirror descent)
step on the term that attains the max: while a constraint is violated by more than
:math:`J_0/\lambda` the policy descends that constraint,

.. math::

    \pi_{t+1}(a \mid s) \propto \pi_t(a \mid s) \exp\bigl(-\eta\, Q_{C_k}(s, a)\bigr),

and otherwise it ascends the reward, :math:`\pi_{t+1} \propto \pi_t \exp(\eta
Q_V)`, each Q under its own worst-case kernel (the robust policy evaluator).  With
:math:`\lambda \to \infty` this is "minimise the violated constraint; when all are
satisfied, maximise the robust reward", the abstract's description.

What could be read of the paper through the search tool was its abstract and third-party
summaries ("RNPG, a KL-regularised natural policy gradient approach that reformulates
the RCMDP objective to avoid binary search"); the form of :math:`F_\lambda` is a
reconstruction (``docs/planners.md``).  Choices: :math:`\eta` = ``step`` times
:math:`1 - \gamma` in scaled units; ``scale`` is :math:`\lambda`; ``margin`` tightens the
budgets the switch compares against by ``margin`` / (1 - gamma) scaled units (0: the
budgets themselves); the output is the last iterate (the paper's output rule could not
be read; the result's ``best`` is the best robust-feasible iterate met).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Context, Planner, PlannerSettings, register
from .oracle import log_policy, mirror_step

__all__ = ["RNPGSettings",]


@dataclass(frozen=True)
class RNPGSettings(PlannerSettings):
    """Hyperparameters of RNPG (module notes)."""

    step: float = 10.0
    """eta in units of 1 - gamma (scaled Q)."""
    scale: float = 1e4
    """lambda: the objective's scale in F (larger: the switch follows the constraints)."""
    margin: float = 0.0
    """Tighten the budgets of the switch by margin / (1 - gamma) scaled units."""

    def rules(self) -> dict:
        return {"step": (0.0, None, "real+"), "scale": (0.0, None, "real+"),
                "margin": (0.0, None, "real")}


def _top_value(ctx: Context) -> float:
    r""":math:`\bar V`: the largest discounted value any policy can have, scaled
    (:math:`\max(0, r_{\max}) / (1 - \gamma)`)."""
    r = np.asarray(ctx.model.R, dtype=np.float64) / ctx.scale_r
    return max(0.0, float(r.max())) / (1.0 - ctx.gamma)


def _run_rnpg(ctx: Context) -> dict:
    s = ctx.settings
    eta = s.step * (1.0 - ctx.gamma)
    vtop = _top_value(ctx)
    d = ctx.d_scaled - s.margin / (1.0 - ctx.gamma)
    pi = ctx.start
    theta = log_policy(pi)
    reward_steps = 0
    for _ in range(ctx.iterations):
        ev = ctx.evaluate(pi)
        terms = np.concatenate([[(vtop - ctx.value_scaled(ev)) / s.scale],
                                ctx.costs_scaled(ev) - d])
        j = int(np.argmax(terms))
        ctx.trace.record(ev, switch=j, objective=float(terms[j]))
        if j == 0:
            reward_steps += 1
            theta, pi = mirror_step(theta, ctx.q_scaled(ev, 0), eta)
        else:
            theta, pi = mirror_step(theta, -ctx.q_scaled(ev, j), eta)
    ctx.trace.record(ctx.evaluate(pi))
    return dict(policy=pi, iterations=ctx.iterations,
                info=dict(reward_steps=reward_steps, eta=eta))


PLANNER = register(Planner(
    name="rnpg", run=_run_rnpg, settings=RNPGSettings,
    title="RNPG switching (Ganguly, Panaganti, Ghosh and Wierman 2025)",
    paper="S. Ganguly, K. Panaganti, A. Ghosh, A. Wierman. Efficient policy optimization in "
          "robust constrained MDPs with iteration complexity guarantees. arXiv:2505.19238v2",
    description="primal-only: a natural-gradient step on the violated constraint, or on the "
                "reward when the constraints hold (no bisection)"))
