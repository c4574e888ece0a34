r"""The robust primal-dual method of Wang, Miao and Zou (2022), exact and tabular.

Y. Wang, F. Miao and S. Zou, "Robust constrained reinforcement learning", arXiv
2209.06866 (2022).  The problem is the RCMDP with one adversary per objective,

.. math::

    \max_\pi V(\pi) \quad \text{s.t.} \quad C_k(\pi) \le d_k, \qquad
    V = \min_P V_r,\; C_k = \max_P C_k,

and the method is projected gradient descent-ascent on its Lagrangian
:math:`L(\pi, \lambda) = V(\pi) - \lambda^\top (C(\pi) - d)` with the multipliers kept
in a box :math:`[0, \Lambda]`: from :math:`(\pi_t, \lambda_t)`,

.. math::

    \pi_{t+1} = \mathrm{Proj}_{\Delta}\bigl(\pi_t + \alpha \nabla_\pi L(\pi_t, \lambda_t)
    \bigr), \qquad
    \lambda_{t+1} = \mathrm{Proj}_{[0, \Lambda]}\bigl(\lambda_t + \beta (C(\pi_t) - d)
    \bigr),

the policy in the direct (tabular) parametrisation, projected state by state onto the
simplex, and :math:`\nabla_\pi L = \nabla V - \sum_k \lambda_k \nabla C_k`, each term
Danskin's gradient under its own worst-case kernel (:mod:`.oracle`).  The output is the
last iterate.

Choices (``docs/planners.md`` says what could be read of the paper and what is
reconstructed): the step sizes are given in the model's scaled units (:mod:`.base`):
:math:`\alpha` = ``policy_step`` times :math:`(1 - \gamma)^3 / (2 \gamma |A|)`, the step of
the direct parametrisation's smoothness constant (Agarwal et al. 2021), and
:math:`\beta` = ``dual_step`` times :math:`1 - \gamma`; the box is
:math:`\Lambda_k = 2 / ((1 - \gamma) \zeta_k)` in scaled units, the bound on an optimal
multiplier under Slater's condition with slack :math:`\zeta_k = d_k - \min_\pi C_k(\pi)`
(computed exactly once, robust policy iteration on :math:`-c_k`), or ``lam_max`` when
given (and when there is no Slater slack); the multipliers start at 0; no
regularisation of the multiplier.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Context, Planner, PlannerSettings, register
from .oracle import project_simplex

__all__ = ["PrimalDualSettings",]


@dataclass(frozen=True)
class PrimalDualSettings(PlannerSettings):
    """Hyperparameters of the robust primal-dual method (module notes)."""

    policy_step: float = 1e3
    """alpha in units of the smoothness step (1 - gamma)^3 / (2 gamma A), A actions."""
    dual_step: float = 30.0
    """beta in units of 1 - gamma (scaled costs)."""
    lam_max: float | None = None
    """The multipliers' box in scaled units; None: Wang et al.'s Slater bound."""

    def rules(self) -> dict:
        return {"policy_step": (0.0, None, "real+"), "dual_step": (0.0, None, "real+")}

    def extra_checks(self) -> None:
        from .._checks import check_real

        if self.lam_max is not None:
            check_real(self.lam_max, "setting 'lam_max'", 0.0, low_open=True)


def smoothness_step(ctx: Context) -> float:
    r""":math:`(1 - \gamma)^3 / (2 \gamma |A|)`: the step of the direct parametrisation's
    smoothness constant for rewards in [0, 1] (Agarwal et al. 2021, Lemma D.3)."""
    g = ctx.gamma
    return (1.0 - g) ** 3 / (2.0 * max(g, 1e-12) * ctx.A)


def slater_box(ctx: Context, lam_max) -> np.ndarray:
    r"""The multipliers' upper bounds (K,) in scaled units: ``lam_max`` when given, else
    :math:`2 / ((1 - \gamma) \zeta_k)` with the exact Slater slack :math:`\zeta_k`, or
    :math:`10^3 / (1 - \gamma)` where there is none (or on a set of kernels)."""
    K = ctx.K
    if lam_max is not None:
        return np.full(K, float(lam_max))
    fallback = 1e3 / (1.0 - ctx.gamma)
    least = ctx.oracle.least_costs()
    if least is None:
        return np.full(K, fallback)
    slack = (ctx.d - least) / ctx.scale_c
    return np.where(slack > 0, 2.0 / ((1.0 - ctx.gamma) * np.maximum(slack, 1e-300)),
                    fallback)


def _run_primal_dual(ctx: Context) -> dict:
    s = ctx.settings
    alpha = s.policy_step * smoothness_step(ctx)
    beta = s.dual_step * (1.0 - ctx.gamma)
    box = slater_box(ctx, s.lam_max)
    lam = np.zeros(ctx.K)
    d = ctx.d_scaled
    pi = ctx.start
    for _ in range(ctx.iterations):
        ev = ctx.evaluate(pi)
        c = ctx.costs_scaled(ev)
        L = ctx.value_scaled(ev) - lam @ (c - d)
        ctx.trace.record(ev, lam=lam, lagrangian=L * ctx.scale_r)
        grad = ctx.gradient_scaled(ev, 0)
        for k in range(ctx.K):
            grad = grad - lam[k] * ctx.gradient_scaled(ev, k + 1)
        pi = project_simplex(pi + alpha * grad)
        lam = np.clip(lam + beta * (c - d), 0.0, box)
    ev = ctx.evaluate(pi)
    ctx.trace.record(ev, lam=lam, lagrangian=(ctx.value_scaled(ev) - lam @ (
        ctx.costs_scaled(ev) - d)) * ctx.scale_r)
    return dict(policy=pi, lam=ctx.multipliers(lam), iterations=ctx.iterations,
                info=dict(lam_box=ctx.multipliers(box), alpha=alpha, beta=beta))


PLANNER = register(Planner(
    name="robust-primal-dual", run=_run_primal_dual, settings=PrimalDualSettings,
    title="Robust primal-dual (Wang, Miao and Zou 2022)",
    paper="Y. Wang, F. Miao, S. Zou. Robust constrained reinforcement learning. "
          "arXiv:2209.06866 (2022)",
    description="projected gradient descent-ascent on the robust Lagrangian, each objective "
                "against its own adversary; multipliers in Slater's box"))
