r"""The reference: the certified bracket's own lower side.

:func:`~rcmdp_exact.rcmdp_bracket` returns a policy that exact robust evaluation
certifies as robust-feasible, worth its ``lower`` side, with a certified ``upper`` side
above the optimum.  As a planner, one iteration is one box of the branch and bound
(``max_boxes`` = the budget; no clock: ``time_limit=None``, so the answer depends on
the budget alone), and the output is the lower
side's policy.  It is the yardstick the other planners are read against, not a
competitor: it is slower per iteration and carries a certificate.  Needs a rectangular
set.  When the bracket finds no robust-feasible policy, the output is the uniform policy
and the status says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._result import Status
from .base import Context, Planner, PlannerSettings, register

__all__ = ["ReferenceSettings",]

@dataclass(frozen=True)
class ReferenceSettings(PlannerSettings):
    """Options of the bracket that the reference passes on."""

    rtol: float = 1e-6
    """Stop when the bracket's relative gap is at most this."""

    def rules(self) -> dict:
        return {"rtol": (0.0, None, "real+")}


def _run_reference(ctx: Context) -> dict:
    from ..ground_truth import rcmdp_bracket

    br = rcmdp_bracket(ctx.model, ctx.uset, max_boxes=ctx.iterations, rtol=ctx.settings.rtol,
                       time_limit=None, dual_evaluations=0, progress=False,
                       seed=ctx.seed if isinstance(ctx.seed, int) else 0)
    pol = br.get("policy")
    found = pol is not None
    pi = np.asarray(pol, dtype=np.float64) if found else np.full((ctx.S, ctx.A), 1.0 / ctx.A)
    ctx.trace.record(ctx.evaluate(pi))
    boxes = int(br.get("boxes", 0) or 0)
    status = Status.CONVERGED if br.get("closed") else Status.BUDGET_EXHAUSTED
    if not found:
        status = Status.NO_FEASIBLE_POLICY
    return dict(policy=pi, iterations=boxes, status=status,
                message=f"reference: {br['message']}",
                info=dict(lower=br.get("lower"), upper=br.get("upper"),
                          bracket_status=str(br.get("status")),
                          lower_method=br.get("lower_method"),
                          upper_method=br.get("upper_method")))


PLANNER = register(Planner(
    name="reference", run=_run_reference, settings=ReferenceSettings,
    title="The certified bracket's lower side", sets=("sa", "s"),
    paper="rcmdp_exact.rcmdp_bracket (docs/ground_truth.md)",
    description="the robust-feasible policy certified by the bracket (branch and bound over "
                "policy boxes; one iteration = one box)"))
