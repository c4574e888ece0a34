r"""EpiRC-PGS, the epigraph-form method of Kitamura et al., exact and tabular.

T. Kitamura, T. Kozuno, W. Kumagai, K. Hoshino, Y. Hosoe, K. Kasaura, M. Hamaya,
P. Parmas and Y. Matsuo, "Near-optimal policy identification in robust constrained
Markov decision processes via epigraph form", ICLR 2025, arXiv 2408.16286.  We follow
the algorithm of **v3** (the ICLR version); v5 (April 2026) adds an erratum that
withdraws the proof that stationary points of the maximum violation
:math:`\Delta_{b}` are globally optimal (its Theorem 4), so the near-optimality
guarantee no longer stands; the algorithm is the same.

The epigraph form replaces the objective by a threshold b and asks whether some policy
reaches it while satisfying every constraint: in reward form,

.. math::

    \Delta_b(\pi) = \max\bigl\{\, b - V(\pi),\; \max_k (C_k(\pi) - d_k) \,\bigr\},
    \qquad \mathrm{OPT} = \max\{ b : \min_\pi \Delta_b(\pi) \le 0 \},

each term against its own adversary.  The outer loop bisects b in ``[lo, hi]``; the inner
loop (RC-PGS) runs projected subgradient descent on :math:`\Delta_b` in the direct
parametrisation, stepping on the gradient of the single term that attains the max
(this is the paper's point: one gradient, never a sum of conflicting ones), from the
previous inner loop's policy:

.. math::

    \pi_{k+1} = \mathrm{Proj}_\Delta\bigl(\pi_k - \alpha\, \partial \Delta_b(\pi_k)\bigr),

keeping the policy of least :math:`\Delta_b` met, and stopping at :math:`\Delta_b \le 0`,
when the policy moves by less than ``move_tol`` (L1) or after ``inner_iterations``.
Then :math:`\Delta_b \le 0` raises ``lo`` to b (a robust-feasible policy worth at least
b exists: ``lo`` is a true lower bound on OPT, every evaluation being exact), and
:math:`\Delta_b > 0` lowers ``hi`` to b (the inner loop did not find one: not a
certificate).  The output is the policy of the last success (robust-feasible and worth at
least ``lo``), or the last inner loop's policy when none succeeded.

Facts from the authors' public implementation (``matsuolab/RCMDP-Epigraph``, read for
its numbers, not copied): initial interval :math:`[0, 1/(1 - \gamma)]` for costs in
[0, 1] (here :math:`[\min(0, r_{\min}), \max(0, r_{\max})] / (1 - \gamma)` for scaled
rewards), uniform initial policy, inner step 5e-4 with 2000 inner iterations at
:math:`\gamma = 0.995`, stop on an L1 move below 1e-5, warm start from the previous inner
loop's returned policy.  Here the step is ``step`` times :math:`(1-\gamma)^3 / (2 \gamma
|A|)` in scaled units (the implementation's 5e-4 at :math:`\gamma = 0.995`, A = 4, costs
in [0, 1], is about 3.2e4 of those units; the tuned default is 1e4), and each inner
iteration is one iteration of the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Context, Planner, PlannerSettings, register
from .oracle import project_simplex
from .primal_dual import smoothness_step

__all__ = ["EpigraphSettings",]


@dataclass(frozen=True)
class EpigraphSettings(PlannerSettings):
    """Hyperparameters of EpiRC-PGS (module notes)."""

    step: float = 1e4
    """alpha in units of the smoothness step (1 - gamma)^3 / (2 gamma A), A actions."""
    inner_iterations: int = 100
    """Cap of each inner loop (the implementation: 2000); iterations of the budget."""
    move_tol: float = 1e-5
    """The inner loop stops when the policy moves less than this (L1, implementation)."""

    def rules(self) -> dict:
        return {"step": (0.0, None, "real+"), "inner_iterations": (1, None, "int"),
                "move_tol": (0.0, None, "real")}


def delta(ctx: Context, ev, b: float) -> tuple[float, int]:
    r""":math:`\Delta_b` of an evaluation (scaled units) and the index of the term that
    attains it (0: the threshold, k + 1: cost k; ties go to the first)."""
    terms = np.concatenate([[b - ctx.value_scaled(ev)], ctx.costs_scaled(ev) - ctx.d_scaled])
    j = int(np.argmax(terms))
    return float(terms[j]), j


def _run_epigraph(ctx: Context) -> dict:
    s = ctx.settings
    alpha = s.step * smoothness_step(ctx)
    r = np.asarray(ctx.model.R, dtype=np.float64) / ctx.scale_r
    lo = min(0.0, float(r.min())) / (1.0 - ctx.gamma)
    hi = max(0.0, float(r.max())) / (1.0 - ctx.gamma)
    pi = ctx.start
    out = None
    used = 0
    steps = 0
    while used < ctx.iterations:
        b = 0.5 * (lo + hi)
        best, best_delta = pi, np.inf
        for _ in range(min(s.inner_iterations, ctx.iterations - used)):
            ev = ctx.evaluate(pi)
            used += 1
            dval, j = delta(ctx, ev, b)
            ctx.trace.record(ev, threshold=b * ctx.scale_r, delta=dval * ctx.scale_r)
            if dval < best_delta:
                best, best_delta = pi, dval
            if dval <= 0:
                break
            g = ctx.gradient_scaled(ev, j)
            new = project_simplex(pi + alpha * g if j == 0 else pi - alpha * g)
            moved = float(np.abs(new - pi).sum())
            pi = new
            if moved <= s.move_tol:
                break
        steps += 1
        if best_delta <= 0:
            lo, out = b, best
        else:
            hi = b
        pi = best
    final = out if out is not None else pi
    ctx.trace.record(ctx.evaluate(final))
    return dict(policy=final, iterations=used,
                info=dict(threshold_lo=lo * ctx.scale_r, threshold_hi=hi * ctx.scale_r,
                          bisection_steps=steps, succeeded=out is not None, alpha=alpha),
                message=(f"EpiRC-PGS: {steps} bisection steps in {used} iterations, threshold "
                         f"in [{lo * ctx.scale_r:.6g}, {hi * ctx.scale_r:.6g}]"
                         + ("" if out is not None else "; no inner loop reached "
                            "Delta <= 0: the output is not robust-feasible")))


PLANNER = register(Planner(
    name="epirc-pgs", run=_run_epigraph, settings=EpigraphSettings,
    title="EpiRC-PGS (Kitamura et al. 2025)",
    paper="T. Kitamura et al. Near-optimal policy identification in robust constrained "
          "Markov decision processes via epigraph form. ICLR 2025, arXiv:2408.16286v3 "
          "(v5 withdraws the global-optimality proof of Theorem 4)",
    description="bisection on the value threshold; projected subgradient descent on the "
                "maximum violation, one term's gradient at a time"))
