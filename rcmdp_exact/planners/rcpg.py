r"""The seed paper's RCPG variants and Adversarial RCPG, in the learners' exact-gradient
mode.

D. M. Bossens, "Robust Lagrangian and Adversarial Policy Gradient for Robust
Constrained Markov Decision Processes" (CAI 2024; the seed paper of the toolkit).  These
planners do not re-implement the learners: each calls
:func:`rcmdp_exact.learners.train` with ``gradient="exact"`` (``rcmdp_exact/learners/
exact.py``: every episode replaced by one exact gradient step of the algorithm's
objective, on the learners' MLP policy with Adam and their multiplier rule), one
training step per iteration of the budget.  Each planner is named after its learner
with ``-exact`` (the learner's own name, in ``rcmdp suite score --algorithm``, is the
learner in its default, sampled mode):

========================== ================================================================
planner                    learner
========================== ================================================================
``rcpg-value-exact``       RCPG, the worst case of the value (exact kernel every step)
``rcpg-constraint-exact``  RCPG, the worst case of the (total) cost
``rcpg-lagrangian-exact``  RCPG, the worst case of the Lagrangian
``adversarial-rcpg-exact`` Adversarial RCPG (an MLP adversary in the L1 ball; L1 balls only)
========================== ================================================================

Settings: the learners' exact-mode defaults (``rcmdp_exact.learners.base.EXACT_DEFAULTS``,
``docs/learners.md``), with one change: the multipliers start learning after
``min(1500, iterations // 3)`` steps instead of 1500, so that a budget below 1500 still
learns them.  Any learner setting can be given by name in ``learner`` (a dict).  The
learners' worst case is the exact one with ``critic="exact"`` (any sa- or s-rectangular
set).  The curve is the learners' exact evaluation every ``iterations // curve_points``
steps (the worst case of the stochastic policy, each cost against its own adversary;
10 points by default: each is the learners' full exact evaluation, test metrics
included, about as costly as 15 training steps), so it is sparser than the other
planners'; the policy of an intermediate point is not kept,
so ``best`` is the final policy when it is robust-feasible.  The model needs a horizon
for the learners' test metrics; a model without one gets ``round(1 / (1 - gamma))``
(the discounted numbers used here do not depend on it).  The start is the learner's own
seeded initialisation (``start`` must stay "random").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import InputError
from .base import Context, Planner, PlannerSettings, register

__all__ = ["RCPGSettings",]


@dataclass(frozen=True)
class RCPGSettings(PlannerSettings):
    """The learner's settings (module notes)."""

    curve_points: int = 10
    """Exact evaluations along the run for the curve (and one at the end)."""
    learner: dict = field(default_factory=dict)
    """Fields of :class:`rcmdp_exact.learners.Settings` by name (override the defaults)."""

    def rules(self) -> dict:
        return {"curve_points": (1, None, "int")}

    def extra_checks(self) -> None:
        from ..learners import Settings

        if not isinstance(self.learner, dict):
            raise InputError(f"setting 'learner' must be a dict of learner settings, got "
                             f"{type(self.learner).__name__}")
        names = {f for f in Settings.__dataclass_fields__} - {"algorithm", "seed"}
        fixed = {"gradient", "episodes", "steps", "eval_every", "critic"}
        bad = sorted(set(self.learner) - (names - fixed))
        if bad:
            raise InputError(f"setting 'learner' has {', '.join(map(repr, bad))}, which "
                             f"{'are' if len(bad) > 1 else 'is'} not a learner setting the "
                             f"planner leaves open; give fields of rcmdp_exact.learners."
                             f"Settings other than {', '.join(sorted(fixed))}")


def _check_constraints(model, uset) -> None:
    if model.n_constraints == 0:
        raise InputError("the RCPG planners (rcpg-value-exact, rcpg-constraint-exact, "
                         "rcpg-lagrangian-exact, adversarial-rcpg-exact) need at least one "
                         "constraint: the learners' exact mode keeps one optimiser entry per "
                         "constraint; give a model with a constraint, or use another planner "
                         "on a robust MDP")


def _check_l1(model, uset) -> None:
    from ..uncertainty import L1Ball

    _check_constraints(model, uset)
    if not isinstance(uset, L1Ball):
        raise InputError(f"planner 'adversarial-rcpg-exact' needs an L1Ball (its adversary is "
                         f"penalised by the L1 distance to the nominal), got "
                         f"{type(uset).__name__}; use an RCPG variant (rcpg-value-exact, "
                         f"rcpg-constraint-exact, rcpg-lagrangian-exact) on this set")


def _run_learner(ctx: Context, algorithm: str) -> dict:
    from ..learners import train

    s = ctx.settings
    n = ctx.iterations
    model = ctx.model
    if model.horizon is None:
        model = model.replace(horizon=max(1, round(1.0 / (1.0 - ctx.gamma))))
    every = max(1, n // s.curve_points)
    opts = dict(multiplier_start=min(1500, n // 3))
    opts.update(s.learner)
    seed = ctx.seed if isinstance(ctx.seed, int) else int(ctx.rng.integers(2 ** 31))
    res = train(model, algorithm, uset=ctx.uset, seed=seed, episodes=n, gradient="exact",
                critic="exact", eval_every=every, progress=False, **opts)
    rec = res.records
    eps = np.asarray(rec["eval_episode"], dtype=np.int64)
    vals = np.asarray(rec["eval_worst_stochastic_value"], dtype=np.float64)
    costs = np.asarray(rec["eval_worst_stochastic_cost"], dtype=np.float64).reshape(
        len(eps), ctx.K)
    lam = np.asarray(rec["lam"], dtype=np.float64).reshape(-1, ctx.K)
    table = np.asarray(res.policy_table(), dtype=np.float64)
    for i, (e, v, c) in enumerate(zip(eps, vals, costs, strict=True)):
        lk = lam[e - 1]
        ctx.trace.add(v, c, table if i == len(eps) - 1 else None, iteration=int(e),
                      lam=lk, lagrangian=v - lk @ (c - ctx.d), tick=False)
    if ctx.bar is not None:
        ctx.bar.update(n + 1)
    robust_steps = 0 if algorithm == "adversarial-rcpg" else n
    return dict(policy=table, lam=np.asarray(res.lam, dtype=np.float64), iterations=n,
                work=dict(evaluations=robust_steps + 2 * len(eps),
                          fixed_points=robust_steps + 2 * len(eps) * (1 + ctx.K)),
                info=dict(learner_settings={k: v for k, v in vars(res.settings).items()
                                            if isinstance(v, int | float | str | None)},
                          timings=dict(res.timings)))


def _runner(algorithm: str):
    def run(ctx: Context) -> dict:
        return _run_learner(ctx, algorithm)
    run.__name__ = f"run_{algorithm.replace('-', '_')}"
    return run


_PAPER = ("D. M. Bossens. Robust Lagrangian and adversarial policy gradient for robust "
          "constrained Markov decision processes (the seed paper); learners' exact-gradient "
          "mode")
for _name, _title, _sets, _check in (
        ("rcpg-value", "RCPG (robust value), exact gradients", ("sa", "s"),
         _check_constraints),
        ("rcpg-constraint", "RCPG (robust constraint), exact gradients", ("sa", "s"),
         _check_constraints),
        ("rcpg-lagrangian", "RCPG (robust Lagrangian), exact gradients", ("sa", "s"),
         _check_constraints),
        ("adversarial-rcpg", "Adversarial RCPG, exact gradients", ("sa",), _check_l1)):
    register(Planner(name=f"{_name}-exact", run=_runner(_name), settings=RCPGSettings, title=_title,
                     paper=_PAPER, sets=_sets, starts=False, check=_check,
                     description=f"rcmdp_exact.learners.train({_name!r}, gradient='exact')"))

