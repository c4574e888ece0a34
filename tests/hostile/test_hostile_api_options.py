"""Every numeric option of every public callable, probed with bad values.

The table ``OPTIONS`` holds one row per (public callable, numeric parameter): the
parameter's documented range (a :class:`Kind`) and a call on tiny valid inputs (a
3-state model, an L1 ball) that passes the parameter by keyword.  For every row, each
bad value of its kind (negative, 0 where positive is needed, NaN, inf, -inf, 2.5 for an
int, True for a number, a string, out of the documented interval) must be refused with
an :class:`~rcmdp_exact.InputError` (or :class:`~rcmdp_exact.OptionError`) whose one-line
message names the parameter, **before any work**: the call runs under a work budget
(at most :data:`REFUSAL_BUDGET` calls of the package's Python functions, counted by a
profile hook, not a clock) and an address-space limit (:data:`MEMORY_HEADROOM` above
what the process holds), so that a value that starts a long run or an allocation
proportional to it fails the row instead of the machine.  A huge integer (10**18) must be
refused the same way, or, where it is a legal cap (an iteration limit), return within
the budget :data:`HUGE_BUDGET` and the memory limit.

``test_every_numeric_parameter_is_audited`` keeps the table from going stale: every
parameter of a public callable (the package's ``__all__`` and its public modules'
``__all__``; functions, classes, their public methods) with a numeric default or a
numeric annotation is either a row of ``OPTIONS`` or in one of the two allow-lists with
the reason: ``NO_RANGE`` (any number is a valid value) and ``INNER`` (a value only the
package passes, checked where it entered).  docs/hostile.md says how to add a row.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import math
import numbers
import pkgutil
import re
import resource
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import rcmdp_exact as rx
import rcmdp_exact.domains as D
import rcmdp_exact.domains.classic as C
import rcmdp_exact.ground_truth.settings as S
import rcmdp_exact.testing as T
import rcmdp_exact.uncertainty as U
from rcmdp_exact import InputError

PACKAGE = str(Path(rx.__file__).resolve().parent)

#: Calls (of the package's Python functions, and of C functions from its code) that a
#: refusal may make before it raises: the checks of the other arguments (a model, a set)
#: and of the option; a solve, a sweep or a loop over the value makes far more.
REFUSAL_BUDGET = 20_000
#: Calls that an accepted huge cap (``max_iter=10**18``) may make: a tiny problem
#: converges far inside it; a loop that runs to the cap does not.
HUGE_BUDGET = 400_000
#: Address space a call may add to what the process holds (an allocation proportional
#: to a bad value fails with MemoryError inside it, and the row fails).
MEMORY_HEADROOM = 2 << 30


# =========================================================================== kinds
@dataclass(frozen=True)
class Kind:
    """A documented range, and the values outside it that a probe passes.

    ``huge``: whether 10**18 is out of range (refused) or a legal cap that must still
    cost no work proportional to it (``None``: not an integer, no huge probe).
    """

    text: str
    bad: tuple
    huge: bool | None = None


NAN, INF = float("nan"), float("inf")
#: Numbers no float64 holds (an int beyond 1.8e308: a raw OverflowError before), numpy's
#: NaN of another width, an array of one number, a complex number.
_BEYOND = (10**400, -(10**400), np.float32("nan"), np.array([0.5]), complex(1, 0))
_NOT_NUMBERS = (True, "3", None, [1])
_NOT_INTS = (2.5, NAN, INF, *_NOT_NUMBERS)

INT_POS = Kind("int >= 1", (0, -1, *_NOT_INTS), huge=False)
INT_POS_CAP = Kind("int >= 1 (a cap)", (0, -1, *_NOT_INTS), huge=True)
INT_NONNEG = Kind("int >= 0", (-1, *_NOT_INTS), huge=False)
INT_NONNEG_CAP = Kind("int >= 0 (a cap)", (-1, *_NOT_INTS), huge=True)
SIZE = Kind("int >= 1, a size the arrays given must match (10**18: they do not)",
            (0, -1, *_NOT_INTS), huge=True)
ORDER = Kind("2 or 4", (0, 3, 6, -2, 2.0, *_NOT_INTS))
#: a sequence of ints >= 0 is a seed too (numpy's SeedSequence entropy: check_seed)
SEED = Kind("seed: int >= 0 (or a sequence of them, a Generator) or None",
            (-1, 2.5, NAN, True, "3", [], [-1]))  # 10**18 is a seed
REAL_POS = Kind("real > 0", (0.0, -0.0, 0, -1e-3, -INF, NAN, INF, *_NOT_NUMBERS, *_BEYOND))
REAL_NONNEG = Kind("real >= 0", (-1e-3, -INF, NAN, INF, *_NOT_NUMBERS, *_BEYOND))
OPEN_UNIT = Kind("real in (0, 1)", (0.0, -0.0, 1.0, -0.5, 1.5, NAN, INF, *_NOT_NUMBERS,
                                     *_BEYOND))
UNIT = Kind("real in [0, 1]", (-1e-3, 1.001, NAN, INF, -INF, *_NOT_NUMBERS, *_BEYOND))
#: A discount of a discounted-only domain: 1 (no discount) is refused as well.
DISCOUNT = Kind("real in [0, 1)", (-1e-3, 1.0, 1.001, NAN, INF, -INF, *_NOT_NUMBERS, *_BEYOND))
#: The budgets' slack of the bracket (ground_truth.variants.FEAS_TOL_MAX): 1e308 was a raw
#: scipy ValueError from the Lagrangian search's LP.
#: Pseudo-counts (uncertainty._counts.PSEUDO_COUNT_RANGE): a subnormal one made infinite
#: radii ("alpha[0, 1] = inf is not finite"), 1e308 overflowed the sums of the counts.
PSEUDO = Kind("0 or a real in [1e-300, 1e12]", (-1e-3, 5e-324, 1e-301, 1e13, 1e308, NAN, INF,
                                                *_NOT_NUMBERS, *_BEYOND))
PSEUDO_POS = Kind("a real in [1e-300, 1e12]", (0.0, -1e-3, 5e-324, 1e13, 1e308, NAN, INF,
                                               *_NOT_NUMBERS, *_BEYOND))
FEAS = Kind("real in [0, 1e12]", (-1e-3, 1e13, 1e308, NAN, INF, *_NOT_NUMBERS, *_BEYOND))
HALF_OPEN_UNIT = Kind("real in (0, 1]", (0.0, -0.0, -0.5, 1.5, NAN, INF, *_NOT_NUMBERS,
                                          *_BEYOND))
REAL = Kind("a finite real", (NAN, INF, -INF, *_NOT_NUMBERS, *_BEYOND))
TIME = Kind("seconds > 0 or None", (0.0, -0.0, -1.0, NAN, INF, -INF, True, "3", [1],
                                     *_BEYOND))


# =========================================================================== tiny inputs
def model(horizon: int | None = 5):
    """3 states, 2 actions, 1 constraint (and a horizon unless None)."""
    m = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)
    return m.replace(horizon=horizon)


def ball(m=None):
    """An L1 ball of radius 0.2 around ``m``'s kernel."""
    return rx.l1_ball(model() if m is None else m, 0.2)


def policy():
    return np.full((3, 2), 0.5)


def logits():
    return np.zeros((3, 2))


def lam():
    return np.array([1.0])


def counts():
    return np.random.default_rng(0).integers(0, 5, size=(3, 2, 3)).astype(float)


# =========================================================================== rows
@dataclass(frozen=True)
class Option:
    """One row: the public callable ``target`` (a dotted name from ``rcmdp_exact``),
    its parameter ``param`` of range ``kind``, and ``call(**{param: value})`` on tiny
    valid inputs."""

    target: str
    param: str
    kind: Kind
    call: Callable
    audits: str = ""  # the public callable that declares the parameter, when not target

    @property
    def id(self) -> str:
        return f"{self.target}:{self.param}"


def options(target: str, call: Callable, audits: str = "", **kinds: Kind) -> list[Option]:
    """The rows of one callable: one per parameter (``audits``: the callable that
    declares them, when they reach ``target`` through its ``**options``)."""
    return [Option(target, p, k, call, audits) for p, k in kinds.items()]


INDEX = Kind("state index in 0..S-1", (3, -1, 2.5, NAN, True, "0"))
ACTION = Kind("action index in 0..A-1", (2, -1, 2.5, NAN, True, "0"))

#: The built-in set classes: each has ``around(model, radius)``, ``from_counts(counts,
#: delta=, hoeffding_l1=)``, ``contains(P, tol)`` and a hypothesis ``strategy(model, ...)``.
SET_CLASSES = ("L1Ball", "LInfBall", "KLBall", "IntervalSet", "SRectL1Ball",
               "WeightedL1Ball")


def _set_rows(name: str) -> list:
    cls = getattr(rx, name)
    radius = "max_width" if name == "IntervalSet" else "max_radius"
    rows = [
        *options(f"rcmdp_exact.{name}.around",
                 lambda **kw: cls.around(model(), **kw), radius=REAL_NONNEG),
        *options(f"rcmdp_exact.{name}.from_counts",
                 lambda **kw: cls.from_counts(
                     counts(), **{"delta": 0.1, "hoeffding_l1": rx.estimate_l1_ball(counts()),
                                   **kw}),
                 delta=OPEN_UNIT),
        *options(f"rcmdp_exact.{name}.contains",
                 lambda **kw: cls.around(model(), 0.1).contains(model().P, **kw),
                 tol=REAL_NONNEG),
        *options(f"rcmdp_exact.{name}.strategy",
                 lambda **kw: cls.strategy(model(), **kw),
                 **{radius: REAL_NONNEG, "grid": INT_POS_CAP}),
    ]
    if name == "WeightedL1Ball":
        rows += options("rcmdp_exact.WeightedL1Ball.strategy",
                        lambda **kw: cls.strategy(model(), **kw), max_weight=REAL_POS)
    return rows


def _settings_rows(group: str) -> list:
    """The options of one group of the bracket's settings, each given to the group's
    class and, flat, to ``rcmdp_bracket`` (where a user passes them)."""
    cls = getattr(S, group)
    kinds = SETTINGS_KINDS[group]
    # a group alone knows no model: a huge count is refused by rcmdp_bracket, against
    # the memory the model's bracket would hold (BracketSettings.check_memory)
    alone = {k: dataclasses.replace(v, huge=True) if v.huge is False else v
             for k, v in kinds.items()}
    if group == "BranchAndBound":
        alone = kinds  # max_boxes has a limit of its own (names.LIMITS["boxes"])
    return [*options(f"rcmdp_exact.ground_truth.settings.{group}",
                     lambda **kw: cls(**kw), **alone),
            *options("rcmdp_exact.rcmdp_bracket", _bracket, **kinds)]


SETTINGS_KINDS = {
    "Target": {"rtol": REAL_NONNEG, "atol": REAL_NONNEG, "tol": REAL_POS,
               "feas_tol": FEAS},
    "LagrangianSearch": {"n_grid": Kind("int >= 2", (1, 0, -1, *_NOT_INTS), huge=False),
                         "n_refine": INT_NONNEG_CAP, "n_cuts": INT_NONNEG},
    "LowerSearch": {"n_ascent": INT_NONNEG_CAP, "n_starts": INT_NONNEG,
                    "mix_steps": INT_NONNEG_CAP, "n_partners": INT_NONNEG_CAP,
                    "deep_after": INT_NONNEG_CAP, "deep_starts": INT_NONNEG,
                    "deep_ascent": INT_NONNEG_CAP, "seed": SEED},
    "BranchAndBound": {"max_boxes": INT_POS},
}


#: A multiplier in [0, lam_max] (lam_max = 500 by default).
LAM = Kind("real in [0, lam_max = 500]", (-1e-3, 501.0, NAN, INF, *_NOT_NUMBERS, *_BEYOND))


def _learner_settings(**kw):
    """The settings of a training run, validated as ``learners.train`` validates them
    (``Settings.checked``, before any episode), for Adversarial RCPG (every option acts
    on it)."""
    from rcmdp_exact.learners import Settings

    return Settings("adversarial-rcpg", **kw).checked(model())


def _protocol():
    import rcmdp_exact.protocol as protocol

    return protocol


def _instances():
    import rcmdp_exact.suite.instances as instances

    return instances


def _verify():
    import rcmdp_exact.theory.verify as verify

    return verify


def _differences():
    import rcmdp_exact.theory.differences as differences

    return differences


def _planners():
    import rcmdp_exact.planners as planners

    return planners


def _plan(name, **kw):
    return _planners().plan(model(None), ball(), name, **kw)


#: The planners whose settings have numeric fields (one of each settings class).
_PLANNER_NAMES = ("robust-primal-dual", "epirc-pgs", "rnpg", "rrpo", "pmd-pd",
                  "rcpg-value-exact", "reference")
#: The documented range of every numeric field of the planners' settings (docs/planners.md).
PLANNER_KINDS = {"step": REAL_POS, "dual_step": REAL_POS, "policy_step": REAL_POS,
                 "scale": REAL_POS, "lam_max": REAL_POS, "rtol": REAL_POS,
                 "move_tol": REAL_NONNEG, "tolerance": REAL_NONNEG, "margin": REAL_NONNEG,
                 "inner_iterations": INT_POS, "curve_points": INT_POS}


def _planner_rows(name: str) -> list:
    """Every numeric field of planner ``name``'s settings, given to ``plan`` (one
    iteration on the tiny model) as a user gives it."""
    from rcmdp_exact.planners.base import planner

    cls = planner(name).settings
    fields = [f.name for f in dataclasses.fields(cls) if f.name in PLANNER_KINDS]
    return options("rcmdp_exact.planners.plan",
                   lambda **kw: _plan(name, iterations=1, **kw),
                   audits=f"rcmdp_exact.planners.{cls.__name__}",
                   **{f: PLANNER_KINDS[f] for f in fields})


def _module(name: str):
    return importlib.import_module(f"rcmdp_exact.{name}")


def _suite():
    for sub in ("leaderboard", "recertify", "report", "sets"):
        _module(f"suite.{sub}")
    return _module("suite")


def _suite_triple():
    """(model, set, record) of the suite's smallest instance, as ``suite.load`` gives."""
    loaded = _suite().load("riverswim-6")
    return loaded.model, loaded.set, loaded.record


def _problem():
    """A stand-in for a problem of ``protocol.user.load_problem``: a model file without
    a set file or perturbations (what ``spec_options`` reads of it)."""
    from types import SimpleNamespace

    return SimpleNamespace(digest="0" * 16, path="mine.npz", perturbations=(), horizon=5,
                           uset=None, set_digest=None, set_path=None)


#: A level of the suite's grid (``suite.sets.LEVELS``: 0.05, 0.1, 0.2).
LEVEL = Kind("a level of the suite's grid (0.05, 0.1, 0.2)",
             (0.3, 0.0, -0.1, NAN, INF, True, "0.1", None, [0.1], *_BEYOND))
#: Adam's averaging constants.
HALF_OPEN_BELOW_ONE = Kind("real in [0, 1)", (-1e-3, 1.0, 1.5, NAN, INF, *_NOT_NUMBERS,
                                              *_BEYOND))


def _bracket(**kw):
    return rx.rcmdp_bracket(model(None), ball(), **kw)


OPTIONS: list[Option] = [
    # ----------------------------------------------------------------- models
    *options("rcmdp_exact.TabularCMDP",
             lambda **kw: rx.TabularCMDP(model().P, model().R, model().C, model().d, **kw),
             gamma=UNIT, p0=Kind("state index in 0..S-1", (3, -1, 2.5, NAN, True, "0")),
             horizon=INT_POS),
    *options("rcmdp_exact.PolicySystem",
             lambda **kw: rx.PolicySystem(
                 np.full((3, 3), 1 / 3), **{"gamma": 0.9, **kw}),
             gamma=UNIT, matrix_error=REAL_NONNEG),
    *options("rcmdp_exact.MLPPolicy", lambda **kw: rx.MLPPolicy(model(), **kw),
             hidden=INT_POS),
    *options("rcmdp_exact.MLPAdversary", lambda **kw: rx.MLPAdversary(model(), **kw),
             hidden=INT_POS),
    # ----------------------------------------------------------------- exact evaluation
    *options("rcmdp_exact.evaluate_finite_horizon",
             lambda **kw: rx.evaluate_finite_horizon(model(), policy(), **kw),
             horizon=INT_POS, discount=UNIT),
    *options("rcmdp_exact.evaluate_time_dependent",
             lambda **kw: rx.evaluate_time_dependent(
                 model(), np.full((5, 3, 2), 0.5), **kw),
             discount=UNIT),
    *options("rcmdp_exact.backward_induction",
             lambda **kw: rx.backward_induction(
                 model().P, model().r, **{"horizon": 4, **kw}),
             horizon=INT_POS, discount=UNIT),
    *options("rcmdp_exact.policy_iteration",
             lambda **kw: rx.policy_iteration(model(), **kw), max_iter=INT_POS_CAP),
    *options("rcmdp_exact.solve_mdp", lambda **kw: rx.solve_mdp(model(), **kw),
             tol=REAL_POS, max_iter=INT_POS_CAP, k=INT_POS_CAP),
    *options("rcmdp_exact.core.mdp.value_scale",
             lambda **kw: rx.core.mdp.value_scale(model(), **kw), horizon=INT_POS),
    *options("rcmdp_exact.solve_mdp[horizon]",
             lambda **kw: rx.solve_mdp(model(), horizon=4, **kw),
             discount=UNIT),
    *options("rcmdp_exact.solve_cmdp", lambda **kw: rx.solve_cmdp(model(), **kw),
             check_tol=REAL_POS),
    *options("rcmdp_exact.solve_cmdp_finite_horizon",
             lambda **kw: rx.solve_cmdp_finite_horizon(model(), **kw),
             horizon=INT_POS, discount=UNIT, check_tol=REAL_POS),
    *options("rcmdp_exact.rescaled_budget",
             lambda **kw: rx.rescaled_budget(
                 np.array([1.0]), **{"gamma": 0.9, "horizon": 5, **kw}),
             gamma=UNIT, horizon=INT_POS),
    *options("rcmdp_exact.check_policy",
             lambda **kw: rx.check_policy(policy(), **{"n_states": 3, "n_actions": 2, **kw}),
             n_states=SIZE, n_actions=SIZE),
    *options("rcmdp_exact.penalised_return",
             lambda **kw: rx.penalised_return(1.0, np.array([0.5]), np.array([1.0]), **kw),
             weight=REAL_NONNEG),
    # ----------------------------------------------------------------- robust
    *options("rcmdp_exact.robust_evaluate",
             lambda **kw: rx.robust_evaluate(model(), policy(), ball(), **kw),
             tol=REAL_POS, max_iter=INT_POS_CAP),
    *options("rcmdp_exact.robust_value_iteration",
             lambda **kw: rx.robust_value_iteration(model(), ball(), **kw),
             tol=REAL_POS, max_iter=INT_POS_CAP),
    *options("rcmdp_exact.robust_policy_gradient",
             lambda **kw: rx.robust_policy_gradient(model(), logits(), ball(), **kw),
             tie_tol=UNIT, seed=SEED),
    *options("rcmdp_exact.extreme_kernels",
             lambda **kw: rx.extreme_kernels(ball(), model(), **kw),
             max_kernels=INT_POS_CAP),
    *options("rcmdp_exact.check_set_conformance",
             lambda **kw: rx.check_set_conformance(ball(), **kw),
             seed=SEED, tol=REAL_POS),
    *options("rcmdp_exact.certified_dual",
             lambda **kw: rx.certified_dual(model(None), ball(), **kw),
             tol=REAL_POS, max_evaluations=INT_POS_CAP, time_limit=TIME),
    *options("rcmdp_exact.BracketSettings", lambda **kw: rx.BracketSettings(**kw),
             dual_evaluations=INT_NONNEG_CAP, time_limit=TIME),
    *options("rcmdp_exact.rcmdp_bracket", _bracket,
             dual_evaluations=INT_NONNEG_CAP, time_limit=TIME),
    *options("rcmdp_exact.rcmdp_variant",
             lambda **kw: rx.rcmdp_variant(model(None), ball(), "value", **kw),
             n_grid=Kind("int >= 2", (1, 0, -1, *_NOT_INTS), huge=False),
             n_bisect=INT_NONNEG_CAP, max_iter=INT_POS_CAP, tol=REAL_POS,
             feas_tol=FEAS),
    # ----------------------------------------------------------------- estimation
    *options("rcmdp_exact.collect_counts",
             lambda **kw: rx.collect_counts(model(), **{"n_episodes": 2, **kw}),
             n_episodes=INT_POS, horizon=INT_POS),
    *options("rcmdp_exact.estimate",
             lambda **kw: rx.estimate(model(), **{"n_episodes": 2, **kw}),
             n_episodes=INT_POS, delta=OPEN_UNIT, pseudo_count=PSEUDO,
             horizon=INT_POS, n_outcomes=INT_POS_CAP),
    *options("rcmdp_exact.estimate_l1_ball",
             lambda **kw: rx.estimate_l1_ball(counts(), **kw),
             delta=OPEN_UNIT, pseudo_count=PSEUDO, n_outcomes=INT_POS_CAP),
    *options("rcmdp_exact.estimate_linf_ball",
             lambda **kw: rx.estimate_linf_ball(counts(), **kw),
             delta=OPEN_UNIT, pseudo_count=PSEUDO),
    *options("rcmdp_exact.estimate_interval_set",
             lambda **kw: rx.estimate_interval_set(counts(), **kw),
             delta=OPEN_UNIT, pseudo_count=PSEUDO),
    *options("rcmdp_exact.estimate_kl_ball",
             lambda **kw: rx.estimate_kl_ball(counts(), **kw),
             delta=OPEN_UNIT, pseudo_count=PSEUDO_POS),
    *options("rcmdp_exact.hoeffding_radius",
             lambda **kw: rx.hoeffding_radius(
                 np.full((3, 2), 4.0),
                 **{"n_outcomes": 3, "n_states": 3, "n_actions": 2, **kw}),
             n_outcomes=INT_POS_CAP, n_states=INT_POS_CAP, n_actions=INT_POS_CAP,
             delta=OPEN_UNIT),
    *options("rcmdp_exact.merge_outcomes",
             lambda **kw: rx.merge_outcomes(np.full((3, 2, 3), 1 / 3),
                                               np.tile(np.arange(3), (3, 2, 1)), **kw),
             n_states=INT_POS),
    # ----------------------------------------------------------------- gradients
    *options("rcmdp_exact.finite_difference",
             lambda **kw: rx.finite_difference(model(), logits(), lam(), **kw),
             step=HALF_OPEN_UNIT, order=ORDER),
    *options("rcmdp_exact.central_difference",
             lambda **kw: rx.central_difference(lambda x: float(x @ x), np.ones(2), **kw),
             step=HALF_OPEN_UNIT, order=ORDER),
    *options("rcmdp_exact.monte_carlo_estimator",
             lambda **kw: rx.monte_carlo_estimator(
                 model(), logits(), "algorithm1", **{"n_episodes": 2, "seed": 0, **kw}),
             n_episodes=INT_POS, batch_size=INT_POS_CAP),
    *options("rcmdp_exact.verify_theorems",
             lambda **kw: rx.verify_theorems(model(), **kw),
             seed=SEED, hidden=INT_POS, order=ORDER, n_episodes=INT_NONNEG,
             mc_level=OPEN_UNIT, tol=REAL_POS),
    # ----------------------------------------------------------------- sets
    *[row for name in SET_CLASSES for row in _set_rows(name)],
    *options("rcmdp_exact.FiniteSet.contains",
             lambda **kw: rx.FiniteSet(model().P[None]).contains(model().P, **kw),
             tol=REAL_NONNEG),
    *[row for name in ("L1Ball", "IntervalSet", "WeightedL1Ball", "KLBall")
      for row in options(f"rcmdp_exact.{name}.row_vertices",
                         lambda name=name, **kw: getattr(rx, name).around(model(), 0.1)
                         .row_vertices(**{"s": 0, "a": 0, **kw}),
                         s=INDEX, a=ACTION)],
    *options("rcmdp_exact.FiniteSet.strategy",
             lambda **kw: rx.FiniteSet.strategy(model(), **kw), grid=INT_POS_CAP),
    *options("rcmdp_exact.TabularCMDP.from_gymnasium",
             lambda **kw: rx.TabularCMDP.from_gymnasium(C.frozen_lake_table(), **kw),
             gamma=UNIT),
    *options("rcmdp_exact.TabularAdversary.logits_from_kernel",
             lambda **kw: rx.TabularAdversary(model()).logits_from_kernel(model().P, **kw),
             floor=OPEN_UNIT),
    *options("rcmdp_exact.PolicySystem.solve",
             lambda **kw: rx.PolicySystem(np.full((3, 3), 1 / 3), 0.9).solve(np.ones(3), **kw),
             tol=REAL_POS),
    *options("rcmdp_exact.Result.to_flat",
             lambda **kw: rx.Result(a=np.ones(3)).to_flat(**kw), max_size=INT_NONNEG_CAP),
    *options("rcmdp_exact.Result.to_frame",
             lambda **kw: rx.Result(a=np.ones(3)).to_frame(**kw), max_size=INT_NONNEG_CAP),
    *options("rcmdp_exact.Result.to_long",
             lambda **kw: rx.Result(a=np.ones(3)).to_long(**kw), max_size=INT_NONNEG_CAP),
    *options("rcmdp_exact.BracketSettings.gap_tol",
             lambda **kw: rx.BracketSettings().gap_tol(**{"value": 1.0, **kw}),
             span=REAL_NONNEG),
    # ----------------------------------------------------------------- domains
    *options("rcmdp_exact.domains.chain", lambda **kw: D.chain(**kw),
             n=Kind("int >= 2", (1, 0, -1, *_NOT_INTS), huge=False), gamma=DISCOUNT,
             slip=UNIT, small=REAL, large=REAL),
    *options("rcmdp_exact.domains.riverswim", lambda **kw: D.riverswim(**kw),
             n=Kind("int >= 2", (1, 0, -1, *_NOT_INTS), huge=False), gamma=DISCOUNT,
             upstream=UNIT, stay=UNIT, back=UNIT, bank_up=UNIT, end_back=UNIT,
             left_reward=REAL, right_reward=REAL),
    *options("rcmdp_exact.domains.machine_replacement",
             lambda **kw: D.machine_replacement(**kw),
             n=Kind("int >= 2", (1, 0, -1, *_NOT_INTS), huge=False), gamma=DISCOUNT,
             wear=UNIT, repair_fail=UNIT, to_r1=UNIT, to_r2=UNIT, operating_cost=REAL,
             r1_cost=REAL, r2_cost=REAL),
    *options("rcmdp_exact.domains.garnet",
             lambda **kw: D.garnet(**{"n_states": 3, "n_actions": 2, "branching": 2,
                                      "seed": 0, **kw}),
             n_states=INT_POS, n_actions=INT_POS, branching=INT_POS,
             n_constraints=INT_NONNEG, gamma=UNIT, horizon=INT_POS),
    *options("rcmdp_exact.domains.cliff_walking", lambda **kw: D.cliff_walking(**kw),
             gamma=DISCOUNT),
    *options("rcmdp_exact.domains.frozen_lake", lambda **kw: D.frozen_lake(**kw),
             gamma=DISCOUNT),
    *options("rcmdp_exact.domains.classic.taxi", lambda **kw: C.taxi(**kw),
             gamma=DISCOUNT, horizon=INT_POS),
    *options("rcmdp_exact.domains.classic.frozen_lake_table",
             lambda **kw: C.frozen_lake_table(**kw), success=UNIT),
    *options("rcmdp_exact.domains.classic.taxi_table",
             lambda **kw: C.taxi_table(**kw), rainy_probability=UNIT),
    *options("rcmdp_exact.domains.classic_instance",
             lambda **kw: D.classic_instance("riverswim", **kw), radius=REAL_NONNEG),
    *options("rcmdp_exact.domains.safe_navigation_1",
             lambda **kw: D.safe_navigation_1(**kw),
             p_success=UNIT, gamma=UNIT, horizon=INT_POS),
    *options("rcmdp_exact.domains.safe_navigation_2",
             lambda **kw: D.safe_navigation_2(**kw),
             p_success=UNIT, gamma=UNIT, horizon=INT_POS),
    *options("rcmdp_exact.domains.paper_domain",
             lambda **kw: D.paper_domain("nav2", **kw), gamma=UNIT),
    *options("rcmdp_exact.domains.inventory", lambda **kw: D.inventory(**kw),
             mu=REAL, sigma=REAL_POS, gamma=UNIT, n_states=INT_POS,
             limit_mu=REAL, limit_sigma=REAL_POS, horizon=INT_POS),
    *options("rcmdp_exact.protocol.ReproduceSpec",
             lambda **kw: _protocol().ReproduceSpec(**kw),
             seeds=INT_POS, episodes=INT_POS, bracket_seeds=INT_NONNEG),
    *options("rcmdp_exact.protocol.YourModel",
             lambda **kw: _protocol().YourModel("mine.npz", **kw),
             horizon=INT_POS, estimate=INT_POS),
    *options("rcmdp_exact.protocol.YourModel",
             lambda **kw: _protocol().YourModel("mine.npz", **kw), radius=REAL_NONNEG),
    *options("rcmdp_exact.domains.safe_navigation",
             lambda **kw: D.safe_navigation(
                 np.zeros(25), **{"d": 1.0, "horizon": 10, "p_success": 0.8, **kw}),
             d=REAL, horizon=INT_POS, p_success=UNIT, gamma=UNIT),
    *options("rcmdp_exact.domains.perturbations",
             lambda **kw: D.perturbations("2A", **{"n_draws": 1, **kw}),
             seed=SEED, n_draws=INT_NONNEG, gamma=UNIT),
    *options("rcmdp_exact.domains.classic.robust_optimal_box",
             lambda **kw: C.robust_optimal_box(model(), ball(), **kw), tol=REAL_POS),
    *options("rcmdp_exact.domains.order_up_to_policy",
             lambda **kw: D.order_up_to_policy(**{"level": 3, **kw}),
             level=INT_NONNEG, n_states=INT_POS),
    *options("rcmdp_exact.domains.draw_2b",
             lambda **kw: D.draw_2b(**{"n_states": 2, "draw": 0, **kw}),
             n_states=INT_NONNEG, draw=INT_NONNEG_CAP, seed=SEED, gamma=UNIT,
             horizon=INT_POS),
    *options("rcmdp_exact.domains.draw_1b",
             lambda **kw: D.draw_1b(**{"n_pairs": 2, "draw": 0, **kw}),
             n_pairs=INT_NONNEG, draw=INT_NONNEG_CAP, seed=SEED, gamma=UNIT,
             horizon=INT_POS),
    *options("rcmdp_exact.domains.halfway_budget",
             lambda **kw: D.halfway_budget(model(), ball(), **kw), fraction=UNIT),
    *options("rcmdp_exact.domains.shortest_path_policy",
             lambda **kw: D.shortest_path_policy(**kw), cost_weight=REAL_NONNEG),
    *options("rcmdp_exact.domains.cost_levels",
             lambda **kw: D.cost_levels(model(), ball(), **kw), tol=REAL_POS),
    # ----------------------------------------------------------------- testing tools
    *options("rcmdp_exact.testing.random_cmdp",
             lambda **kw: T.random_cmdp(0, **{"S": 3, "A": 2, "K": 1, "gamma": 0.9, **kw}),
             S=INT_POS, A=INT_POS, K=INT_NONNEG, gamma=UNIT, n_outcomes=INT_POS,
             horizon=INT_POS),
    *options("rcmdp_exact.testing.random_model_arrays",
             lambda **kw: T.random_model_arrays(0, **{"S": 3, "A": 2, "K": 1, **kw}),
             S=INT_POS, A=INT_POS, K=INT_NONNEG, density=UNIT),
    *options("rcmdp_exact.testing.random_kernel",
             lambda **kw: T.random_kernel(0, **{"S": 3, "A": 2, **kw}),
             S=INT_POS, A=INT_POS, point_masses=UNIT),
    *options("rcmdp_exact.testing.random_box",
             lambda **kw: T.random_box(0, **{"S": 3, "A": 2, **kw}),
             S=INT_POS, A=INT_POS, width=REAL_NONNEG),
    *options("rcmdp_exact.testing.random_policies",
             lambda **kw: T.random_policies(0, **{"S": 3, "A": 2, **kw}),
             S=INT_POS, A=INT_POS, n=INT_POS),
    *options("rcmdp_exact.testing.random_row",
             lambda **kw: T.random_row(0, **{"n": 4, **kw}),
             n=INT_POS, support_frac=UNIT),
    *options("rcmdp_exact.testing.random_radii",
             lambda **kw: T.random_radii(0, (3, 2), **{"small": 0.1, "whole": 2.0, **kw}),
             small=REAL_NONNEG, whole=REAL_NONNEG),
    *options("rcmdp_exact.testing.random_values",
             lambda **kw: T.random_values(0, (3,), **kw), scale=REAL_POS),
    *options("rcmdp_exact.testing.skewed_kernel",
             lambda **kw: T.skewed_kernel(0, **{"S": 3, "A": 2, **kw}),
             S=INT_POS, A=INT_POS),
    *options("rcmdp_exact.testing.skewed_values",
             lambda **kw: T.skewed_values(0, **{"J": 2, "P": model().P, **kw}), J=INT_POS),
    *options("rcmdp_exact.testing.find_counterexample",
             lambda **kw: T.find_counterexample(lambda x: True, T.inner_problems(), **kw),
             tolerance=REAL, max_examples=INT_POS, time_limit=TIME, seed=SEED),
    *options("rcmdp_exact.testing.example",
             lambda **kw: T.example(T.inner_problems(), **kw), seed=SEED),
    *options("rcmdp_exact.testing.inner_problems",
             lambda **kw: T.inner_problems(**kw), max_n=INT_POS_CAP),
    *options("rcmdp_exact.testing.grid_values",
             lambda **kw: T.grid_values(**{"n": 3, "low": 0.0, "high": 1.0, **kw}),
             n=INT_NONNEG, low=REAL, high=REAL, grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.pair_radii",
             lambda **kw: T.pair_radii(model(), **{"max_radius": 1.0, **kw}),
             max_radius=REAL_NONNEG, grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.state_budgets",
             lambda **kw: T.state_budgets(model(), **{"max_radius": 1.0, **kw}),
             max_radius=REAL_NONNEG, grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.multipliers",
             lambda **kw: T.multipliers(model(), **kw),
             max_value=REAL_NONNEG, grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.kernels", lambda **kw: T.kernels(model(), **kw),
             grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.policies", lambda **kw: T.policies(model(), **kw),
             grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.balls", lambda **kw: T.balls(model(), **kw),
             grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.cmdps", lambda **kw: T.cmdps(**kw), grid=INT_POS_CAP),
    *options("rcmdp_exact.testing.binding_budgets",
             lambda **kw: T.binding_budgets(model(), **kw),
             grid=INT_POS_CAP, slack=REAL_NONNEG),
    *options("rcmdp_exact.testing.robust_cmdps", lambda **kw: T.robust_cmdps(**kw),
             n_constraints=INT_NONNEG, grid=INT_POS_CAP, slack=REAL_NONNEG),
    # ----------------------------------------------------------------- radii
    *options("rcmdp_exact.uncertainty.weissman_radius",
             lambda **kw: U.weissman_radius(
                 np.full((3, 2), 4.0),
                 **{"n_outcomes": 3, "n_states": 3, "n_actions": 2, **kw}),
             n_outcomes=INT_POS_CAP, n_states=INT_POS_CAP, n_actions=INT_POS_CAP,
             delta=OPEN_UNIT),
    *options("rcmdp_exact.uncertainty.entry_radius",
             lambda **kw: U.entry_radius(np.full((3, 2), 4.0), **{"n_entries": 3, **kw}),
             n_entries=INT_POS_CAP, delta=OPEN_UNIT),
    # ----------------------------------------------------------------- bracket settings
    *[row for group in ("Target", "LagrangianSearch", "LowerSearch", "BranchAndBound")
      for row in _settings_rows(group)],
    # ----------------------------------------------------------------- learners
    *options("rcmdp_exact.learners.Settings", _learner_settings,
             seed=SEED, episodes=INT_POS, steps=INT_POS, eval_every=INT_POS_CAP,
             entropy=REAL_NONNEG, lam_init=LAM, lam_adv_init=LAM, lam_max=REAL_POS,
             lr_policy=REAL_POS, lr_multiplier=REAL_POS, lr_adversary=REAL_POS,
             lr_adversary_multiplier=REAL_POS, lr_critic=REAL_POS, schedule_every=INT_POS_CAP,
             adversary_start=INT_NONNEG_CAP, adversary_batch=INT_POS,
             adversary_margin=Kind("real in [0, 1)", (-1e-3, 1.0, NAN, INF, *_NOT_NUMBERS)),
             prefit_steps=INT_NONNEG, prefit_lr=REAL_POS, hidden=INT_POS,
             feature_scale=REAL_POS, multiplier_start=INT_NONNEG_CAP, penalty=REAL_POS),
    # ----------------------------------------------------------------- planners
    *[row for name in _PLANNER_NAMES for row in _planner_rows(name)],
    *options("rcmdp_exact.planners.plan",
             lambda **kw: _plan("reference", **{"iterations": 1, **kw}),
             iterations=INT_POS, seed=SEED),
    *options("rcmdp_exact.planners.RobustOracle",
             lambda **kw: _planners().RobustOracle(model(None), ball(), **kw),
             tol=REAL_POS, max_iter=INT_POS_CAP),
    # ----------------------------------------------------------------- protocol, suite
    *options("rcmdp_exact.protocol.RunSpec",
             lambda **kw: _protocol().RunSpec("nav1", "pg", **{"seed": 0, **kw}),
             seed=Kind("int >= 0", (-1, 2.5, NAN, True, "3", None)), episodes=INT_POS,
             delta=OPEN_UNIT, n_draws=INT_POS, test_seed=Kind("int >= 0", (-1, 2.5, True)),
             sampled_episodes=INT_NONNEG, eval_every=INT_POS_CAP, penalty=REAL_POS,
             horizon=INT_NONNEG, estimation_episodes=INT_NONNEG, radius=REAL_NONNEG),
    *options("rcmdp_exact.suite.instances.forest",
             lambda **kw: _instances().forest(**kw),
             n=Kind("int >= 2", (1, 0, -1, *_NOT_INTS), huge=False), gamma=DISCOUNT, r1=REAL,
             r2=REAL, p=UNIT, horizon=INT_POS),
    *options("rcmdp_exact.suite.instances.gridworld",
             lambda **kw: _instances().gridworld(**kw),
             size=Kind("int >= 2", (1, 0, -1, *_NOT_INTS), huge=False), gamma=DISCOUNT,
             success=UNIT, horizon=INT_POS),
    *options("rcmdp_exact.theory.verify.verify_suite",
             lambda **kw: _verify().verify_suite(**{"domains": ("nav2",), "n_random": 0, **kw}),
             n_random=INT_NONNEG, seed=SEED, hidden=INT_POS, n_episodes=INT_NONNEG,
             mc_level=OPEN_UNIT, tol=REAL_POS),
    *options("rcmdp_exact.theory.verify.suite_models",
             lambda **kw: _verify().suite_models(**{"domains": ("nav2",), **kw}),
             n_random=INT_NONNEG),
    *options("rcmdp_exact.theory.differences.fd_step",
             lambda **kw: _differences().fd_step(np.ones(2), **kw), step=HALF_OPEN_UNIT,
             order=ORDER),
    *options("rcmdp_exact.rcmdp_variant[lam_range]",
             lambda **kw: rx.rcmdp_variant(model(None), ball(), "value", **kw),
             lam_range=Kind("(low, high) with 0 < low < high < inf",
                            ((0, 1), (-1, 1), (2, 1), (NAN, 1), (1, INF), (1,), 3.0, "x"))),
    # ----------------------------------------------------------------- networks, sampling
    *options("rcmdp_exact.core.nn.MLP",
             lambda **kw: _module("core.nn").MLP(
                 **{"n_inputs": 3, "n_outputs": 2, "hidden": 4, **kw}),
             n_inputs=INT_POS, n_outputs=INT_POS, hidden=INT_POS, bias_scale=REAL_NONNEG),
    *options("rcmdp_exact.core.nn.MLP.init",
             lambda **kw: _module("core.nn").MLP(3, 2, 4).init(**kw), bias_scale=REAL_NONNEG),
    *options("rcmdp_exact.core.nn.MLP.count_params",
             lambda **kw: _module("core.nn").MLP.count_params(
                 **{"n_inputs": 3, "n_outputs": 2, "hidden": 4, **kw}),
             n_inputs=INT_POS_CAP, n_outputs=INT_POS_CAP, hidden=INT_POS_CAP),
    *options("rcmdp_exact.core.nn.MLP.hidden_from_count",
             lambda **kw: _module("core.nn").MLP.hidden_from_count(
                 **{"n_params": 26, "n_inputs": 3, "n_outputs": 2, **kw}),
             n_params=INT_NONNEG_CAP, n_inputs=INT_POS_CAP, n_outputs=INT_POS_CAP),
    *options("rcmdp_exact.core.nn.Adam",
             lambda **kw: _module("core.nn").Adam(**{"n_params": 3, **kw}),
             n_params=INT_POS, lr=REAL_POS, beta1=HALF_OPEN_BELOW_ONE,
             beta2=HALF_OPEN_BELOW_ONE, eps=REAL_POS),
    *options("rcmdp_exact.core.parametrisations.make_policy",
             lambda **kw: _module("core.parametrisations").make_policy(model(), "mlp", **kw),
             hidden=INT_POS),
    *options("rcmdp_exact.core.parametrisations.make_adversary",
             lambda **kw: _module("core.parametrisations").make_adversary(model(), "mlp", **kw),
             hidden=INT_POS),
    *options("rcmdp_exact.core.sampling.rollout",
             lambda **kw: _module("core.sampling").rollout(
                 model(), policy(), **{"n_episodes": 2, "seed": 0, **kw}),
             n_episodes=INT_POS, batch_size=INT_POS_CAP),
    *options("rcmdp_exact.core.evaluation.evaluate_finite_horizon_batch",
             lambda **kw: _module("core.evaluation").evaluate_finite_horizon_batch(
                 model(), policy()[None], **kw),
             horizon=INT_POS, discount=UNIT),
    *options("rcmdp_exact.interop.gym.TabularCMDPEnv",
             lambda **kw: _module("interop.gym").TabularCMDPEnv(model(), **kw),
             max_episode_steps=INT_POS_CAP),
    *options("rcmdp_exact.interop.gym.TabularCMDPEnv.reset",
             lambda **kw: _module("interop.gym").TabularCMDPEnv(model()).reset(**kw), seed=SEED),
    # ----------------------------------------------------------------- robust engine
    *options("rcmdp_exact.robust.engine.RobustGame",
             lambda **kw: _module("robust.engine").RobustGame(model(None), ball(), **kw),
             tol=REAL_POS, max_iter=INT_POS_CAP),
    *options("rcmdp_exact.robust.engine.SafetyNet",
             lambda **kw: _module("robust.engine").SafetyNet(**kw), seconds=TIME),
    # ----------------------------------------------------------------- learners, planners
    *options("rcmdp_exact.learners.train",
             lambda **kw: rx.learners.train(model(), "pg", **{"uset": ball(), "episodes": 1,
                                                             **kw}),
             audits="rcmdp_exact.learners.training.train", seed=SEED),
    *options("rcmdp_exact.planners.record_duality_gap",
             lambda **kw: _planners().record_duality_gap(
                 *_suite_triple(), **kw),
             tol=REAL_POS, max_evaluations=INT_POS_CAP),
    *options("rcmdp_exact.planners.oracle.mirror_step",
             lambda **kw: _planners().oracle.mirror_step(logits(), np.ones((3, 2)), **kw),
             eta=REAL_NONNEG),
    # ----------------------------------------------------------------- protocol
    *options("rcmdp_exact.protocol.backends.sweep",
             lambda **kw: _protocol().backends.sweep(None, [], **kw),
             workers=INT_POS),
    *options("rcmdp_exact.protocol.estimation.estimate_set",
             lambda **kw: _protocol().estimation.estimate_set(
                 model(), **{"n_episodes": 2, "seed": 0, **kw}),
             n_episodes=INT_POS, delta=OPEN_UNIT),
    *options("rcmdp_exact.protocol.estimation.set_around",
             lambda **kw: _protocol().estimation.set_around("l1", model(), **kw),
             radius=REAL_NONNEG),
    *options("rcmdp_exact.protocol.estimation.set_from_estimate",
             lambda **kw: _protocol().estimation.set_from_estimate(
                 "l1", rx.estimate(model(), n_episodes=2, seed=0), model(), **kw),
             delta=OPEN_UNIT),
    *options("rcmdp_exact.protocol.ground_truth_table.GroundTruthTableSpec",
             lambda **kw: _module("protocol.ground_truth_table").GroundTruthTableSpec(**kw),
             seed=Kind("int >= 0", (-1, 2.5, NAN, True, "3", None)), n_draws=INT_POS,
             estimation=Kind('"paper" or episodes: int >= 1', (0, -1, 2.5, NAN, True, None))),
    *options("rcmdp_exact.protocol.ground_truth_table.GroundTruthTableSpec.options",
             lambda **kw: _module("protocol.ground_truth_table").GroundTruthTableSpec()
             .options(**kw), gamma=UNIT),
    *options("rcmdp_exact.protocol.ground_truth_table.SetSpec",
             lambda **kw: _module("protocol.ground_truth_table").SetSpec(**kw), delta=OPEN_UNIT),
    *options("rcmdp_exact.protocol.ground_truth_table.SetSpec",
             lambda **kw: _module("protocol.ground_truth_table").SetSpec(
                 **{"kind": "l1", **kw}), radius=REAL_NONNEG),
    *options("rcmdp_exact.protocol.plan",
             lambda **kw: _protocol().plan(**kw),
             audits="rcmdp_exact.protocol.phases.plan",
             seeds=INT_POS, episodes=INT_POS, bracket_seeds=INT_NONNEG),
    *options("rcmdp_exact.protocol.GroundTruthSpec",
             lambda **kw: _protocol().GroundTruthSpec("bracket", "nav1", **kw),
             seed=Kind("int >= 0", (-1, 2.5, NAN, True, "3", None))),
    *options("rcmdp_exact.protocol.user.spec_options",
             lambda **kw: _protocol().user.spec_options(_problem(), **kw),
             estimate=INT_POS, radius=REAL_NONNEG),
    # ----------------------------------------------------------------- suite
    *options("rcmdp_exact.suite.score",
             lambda **kw: _suite().score(**{"names": ["riverswim-6"], "seeds": [0], **kw}),
             episodes=INT_POS),
    *options("rcmdp_exact.suite.leaderboard.score",
             lambda **kw: _suite().leaderboard.score(
                 **{"names": ["riverswim-6"], "seeds": [0], **kw}),
             episodes=INT_POS, level=LEVEL),
    *options("rcmdp_exact.suite.leaderboard.tabular_baseline",
             lambda **kw: _suite().leaderboard.tabular_baseline(
                 model(), **{"episodes": 2, **kw}),
             episodes=INT_POS, seed=SEED),
    *options("rcmdp_exact.suite.leaderboard.Scores.to_frame",
             lambda **kw: _suite().leaderboard.Scores(rows=[]).to_frame(**kw),
             max_size=INT_NONNEG_CAP),
    *options("rcmdp_exact.suite.recertify.verify",
             lambda **kw: _suite().recertify.verify(**{"names": ["riverswim-6"], **kw}),
             tol=UNIT, workers=INT_POS),
    # (a parameter named ``target``: the row is built by hand, options() takes ``target``)
    Option("rcmdp_exact.suite.report.tightness", "target", REAL_POS,
           lambda **kw: _suite().report.tightness(**kw)),
    *options("rcmdp_exact.suite.load",
             lambda **kw: _suite().load("riverswim-6", **kw),
             audits="rcmdp_exact.suite.store.load", level=LEVEL),
    *options("rcmdp_exact.suite.record",
             lambda **kw: _suite().record("riverswim-6", **kw),
             audits="rcmdp_exact.suite.store.record", level=LEVEL),
    *options("rcmdp_exact.suite.sets.radius_of",
             lambda **kw: _suite().sets.radius_of("l1", **kw), level=REAL_NONNEG),
    *options("rcmdp_exact.suite.sets.set_text",
             lambda **kw: _suite().sets.set_text("l1", **{"support": "nominal", **kw}),
             level=REAL_NONNEG),
    *options("rcmdp_exact.suite.sets.build_set",
             lambda **kw: _suite().sets.build_set(model(), "l1", **{"support": "nominal",
                                                                   **kw}),
             level=REAL_NONNEG),
]


#: Public numeric parameters that are not rows because they have no range to check (a
#: value any number may take), each with the reason.
NO_RANGE = {
    # A kind's radius for a level of the suite's grid (r, r^2/2, r/2): a formula the
    # suite calls on its own fixed levels, not an option a user gives.
    *(f"rcmdp_exact.uncertainty.{k}.l1_level_radius:level" for k in
      ("interval.IntervalSet", "kl.KLBall", "l1.L1Ball", "s_l1.SRectL1Ball",
       "base.UncertaintySet")),
    # ``axis`` of softmax / log_softmax: any axis numpy accepts (numpy checks it).
    "rcmdp_exact.core.nn.softmax:axis", "rcmdp_exact.core.nn.log_softmax:axis",
    # A result's Lagrangian, NaN when not evaluated: a value, not an option.
    "rcmdp_exact.planners.oracle.Evaluation:lagrangian",
    "rcmdp_exact.planners.base.Trace.add:lagrangian",
    "rcmdp_exact.planners.base.Trace.record:lagrangian",
    # JSON indentation, passed to json.dumps (which accepts any int or None).
    "rcmdp_exact.theory.verify.VerifyTable.to_json:indent",
    "rcmdp_exact._result.Result.to_json:indent",
    # The lower bound whose target gap is asked: any real, or -inf before one is known.
    "rcmdp_exact.ground_truth.settings.BracketSettings.gap_tol:value",
    # Abstract: each set's own ``contains`` (the built-in ones are rows of OPTIONS).
    "rcmdp_exact.uncertainty.base.UncertaintySet.contains:tol",
    # The numbers a bracket's one-line summary formats: bounds and a span, any reals,
    # -inf / inf for a side not known yet.
    *(f"rcmdp_exact.ground_truth.bracket.gap_text:{p}" for p in ("lower", "upper", "span")),
    # A start time (a reading of time.perf_counter, whose origin is arbitrary): any real;
    # the limit itself, ``seconds``, is a row.
    "rcmdp_exact.robust.engine.SafetyNet:start",
    # What a planner records of an iteration (its number and the value it reached): a
    # record, not an option; ``plan`` checks ``iterations`` where the user gives it.
    "rcmdp_exact.planners.base.Trace.add:iteration",
    "rcmdp_exact.planners.base.Trace.add:value",
    # A result's value (a robust objective, any real): a value, not an option.
    "rcmdp_exact.planners.oracle.Evaluation:value",
}

#: Public numeric parameters that a user never gives: the package passes values it has
#: checked where they entered (the model's own sizes and discount, the settings of a
#: public entry point), on a path where a second check would cost per step.  Each is
#: public because a user extending the package (a set, a planner, a learner) reads or
#: calls it; each group says where the value is checked.
INNER = {
    # A set author's helpers (docs/your_set.md): S, A and J are the shape of the set's
    # own nominal kernel or batch (arrays checked when the set was built), not numbers a
    # user types; a wrong shape is refused by check_shape inside.
    *(f"rcmdp_exact.uncertainty.base.{f}:{p}" for f, ps in
      (("radii", "SA"), ("split_batch", "SA"), ("state_radii", "S"),
       ("support_mask", "SA"), ("tile", "J")) for p in ps),
    # A planner's context (docs/planners.md): ``plan`` builds it from its checked
    # ``iterations`` and ``seed`` (rows of planners.plan); a planner receives it, never
    # builds it, and ``j`` is the index of a constraint the planner's own loop runs over.
    "rcmdp_exact.planners.base.Context:iterations", "rcmdp_exact.planners.base.Context:seed",
    "rcmdp_exact.planners.base.Context.gradient_scaled:j",
    "rcmdp_exact.planners.base.Context.q_scaled:j",
    "rcmdp_exact.planners.oracle.Evaluation.gradient:j",
    # The robust engine's inner steps, called by the solvers with the game's own
    # max_iter (checked by RobustGame, a row) and the weights of their own objectives.
    "rcmdp_exact.robust.engine.RobustGame.adversary:max_iter",
    "rcmdp_exact.robust.engine.RobustGame.value_iteration:max_iter",
    "rcmdp_exact.robust.engine.RobustGame.rounding:weight",
    # The bracket's choice of box bounds for the model's number of states (rcmdp_bracket
    # passes model.n_states of a checked model).
    "rcmdp_exact.ground_truth.settings.BranchAndBound.bounds_for:n_states",
    # The learners' per-step paths, documented as unchecked (core/nn.py): the learning
    # rate of the Settings (checked, a row of learners.Settings) and a sampled action.
    "rcmdp_exact.core.nn.Adam.step:lr", "rcmdp_exact.core.nn.MLP.grad_log_prob:y",
}


# =========================================================================== guards
class WorkDone(AssertionError):
    """The call made more package calls than its budget before it answered."""


@contextlib.contextmanager
def budget(calls: int):
    """Count the calls of the package's Python functions and the calls of built-in (C)
    functions, numpy's among them, made from the package's code; past ``calls``, raise
    :class:`WorkDone` inside the call (a profile hook: work, not time).  The address
    space is capped at :data:`MEMORY_HEADROOM` above the current one meanwhile."""
    count = [0]

    def hook(frame, event, arg):
        if event in ("call", "c_call") and frame.f_code.co_filename.startswith(PACKAGE):
            count[0] += 1
            if count[0] > calls:
                sys.setprofile(None)
                raise WorkDone(f"more than {calls:,} package calls before answering")

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        held = int(f.read().split()[0]) * resource.getpagesize()
    cap = held + MEMORY_HEADROOM
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    sys.setprofile(hook)
    try:
        yield count
    finally:
        sys.setprofile(None)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _shown(value) -> str:
    if isinstance(value, int) and abs(value) > 10**20:
        return f"{'-' if value < 0 else ''}10**{len(str(abs(value))) - 1}"
    return repr(value) if not isinstance(value, float) or math.isfinite(value) else str(value)


def probe(row: Option, value) -> str | None:
    """None if ``row`` refuses ``value`` as it must, else what went wrong."""
    try:
        with budget(REFUSAL_BUDGET):
            row.call(**{row.param: value})
    except InputError as err:
        text = str(err)
        if "\n" in text.strip():
            return f"{row.param}={_shown(value)}: a message of several lines: {text!r}"
        if not re.search(rf"\b{re.escape(row.param)}\b", text):
            return f"{row.param}={_shown(value)}: the message does not name it: {text!r}"
        return None
    except WorkDone as err:
        return f"{row.param}={_shown(value)}: not refused before any work ({err})"
    except Exception as err:
        first = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
        return f"{row.param}={_shown(value)}: {type(err).__name__}: {first}"
    return f"{row.param}={_shown(value)}: accepted (outside {row.kind.text})"


def probe_huge(row: Option, value: int = 10**18) -> str | None:
    """None if ``value`` (10**18, 10**30: beyond int64, 10**400: beyond float64) is
    refused before any work (naming the parameter) or, for a cap or a size
    (``kind.huge``), refused by any one-line InputError or answered within the budgets."""
    if not row.kind.huge:
        return probe(row, value)
    shown = f"10**{len(str(value)) - 1}"
    try:
        with budget(HUGE_BUDGET):
            row.call(**{row.param: value})
    except InputError as err:
        return None if "\n" not in str(err).strip() else f"{row.param}={shown}: {err!r}"
    except WorkDone as err:
        return f"{row.param}={shown}: ran on ({err})"
    except Exception as err:
        return f"{row.param}={shown}: {type(err).__name__}: {str(err)[:160]}"
    return None


#: Rows that fail today, each with the reason it is not fixed in this round: a strict
#: xfail, so that the fix turns the row into a failure until it leaves this dict.
KNOWN_GAPS: dict = {}


def _param(row: Option):
    gap = KNOWN_GAPS.get(row.id)
    marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
    return pytest.param(row, id=row.id, marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in OPTIONS])
def test_bad_values_are_refused_before_any_work(row):
    bad = row.kind.bad
    if _takes_none(row):  # None is a documented value: not a bad value here
        bad = tuple(v for v in bad if v is not None)
    wrong = [w for v in bad if (w := probe(row, v))]
    if row.kind.huge is not None:
        wrong += [w for v in (10**18, 10**30, 10**400) if (w := probe_huge(row, v))]
    assert not wrong, "\n".join([f"{row.id} ({row.kind.text}):", *wrong])


# =========================================================================== completeness
def _public_modules():
    """The package and its public modules (no ``_`` in the path) with an ``__all__``."""
    out = {"rcmdp_exact": rx}
    for info in pkgutil.walk_packages(rx.__path__, "rcmdp_exact."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts[0] == "cli":
            continue
        mod = importlib.import_module(info.name)
        if hasattr(mod, "__all__"):
            out[info.name] = mod
    return out


def _is_numeric(p: inspect.Parameter) -> bool:
    default_number = isinstance(p.default, numbers.Number) and not isinstance(p.default, bool)
    annotated = re.search(r"\b(int|float)\b", str(p.annotation)) is not None
    return default_number or (annotated and "bool" not in str(p.annotation))


def public_numeric_parameters() -> dict[str, str]:
    """``{"module.qualname:param": "public.name"}`` for every numeric parameter of a
    public callable (functions, classes and their public methods, each once)."""
    found = {}
    for modname, mod in sorted(_public_modules().items()):
        for name in mod.__all__:
            obj = getattr(mod, name, None)
            if obj is None or inspect.ismodule(obj):
                continue
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                continue
            targets = [(name, obj)] if callable(obj) else []
            if inspect.isclass(obj):
                for meth, f in vars(obj).items():
                    f = f.__func__ if isinstance(f, staticmethod | classmethod) else f
                    if not meth.startswith("_") and inspect.isfunction(f):
                        targets.append((f"{name}.{meth}", f))
            for shown, f in targets:
                try:
                    sig = inspect.signature(f)
                except (TypeError, ValueError):
                    continue
                key = f"{f.__module__}.{f.__qualname__}"
                for p in sig.parameters.values():
                    if _is_numeric(p):
                        found.setdefault(f"{key}:{p.name}", f"{modname}.{shown}")
    return found


def _target(row: Option):
    """The public callable a row names (a submodule is imported on the way)."""
    parts = row.target.split("[")[0].split(".")
    obj = rx
    for i, part in enumerate(parts[1:], start=2):
        obj = getattr(obj, part, None) or importlib.import_module(".".join(parts[:i]))
    return obj


def _key(row: Option) -> str:
    obj = _target(dataclasses.replace(row, target=row.audits)) if row.audits else _target(row)
    return f"{obj.__module__}.{obj.__qualname__}:{row.param}"


def _takes_none(row: Option) -> bool:
    """Whether None is a documented value of the row's parameter: its default, or an
    annotation ``int | None`` (False for one passed through ``**options``)."""
    where = dataclasses.replace(row, target=row.audits) if row.audits else row
    p = inspect.signature(_target(where)).parameters.get(row.param)
    return p is not None and (p.default is None or "None" in str(p.annotation))


def _through_options(row: Option) -> bool:
    """A row whose parameter goes through the target's ``**options`` (rcmdp_bracket's
    settings): it probes the path a user takes, and its parameter is audited where it
    is declared."""
    params = inspect.signature(_target(row)).parameters
    return row.param not in params and any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_every_numeric_parameter_is_audited():
    found = public_numeric_parameters()
    covered = {_key(r) for r in OPTIONS} | NO_RANGE | INNER
    missing = sorted(f"{found[k]}:{k.rsplit(':', 1)[1]}  ({k})"
                     for k in found if k not in covered)
    assert not missing, ("numeric parameters of public callables in neither OPTIONS nor "
                         "an allow-list (docs/hostile.md):\n" + "\n".join(missing))
    assert not NO_RANGE & INNER
    rows = {_key(r) for r in OPTIONS}
    assert not (NO_RANGE | INNER) & rows, "a parameter both probed and allow-listed"
    stale = sorted(k for k in NO_RANGE | INNER if k not in found)
    assert not stale, "allow-listed parameters that are no longer public:\n" + "\n".join(stale)


def test_the_table_probes_only_public_numeric_parameters():
    found = public_numeric_parameters()
    assert not [r.id for r in OPTIONS if _key(r) not in found and not _through_options(r)]


# =========================================================================== legal edges
def _finite(result) -> bool:
    arrays = [np.asarray(v, dtype=float) for v in
              (result.values() if isinstance(result, dict) else [result])
              if isinstance(v, np.ndarray | float | int)]
    radius = getattr(result, "radius", None)
    if radius is not None:
        arrays.append(np.asarray(radius, dtype=float))
    return all(np.isfinite(a).all() for a in arrays)


#: Legal values at the edges of a documented range (-0.0 where 0 is legal, a subnormal
#: where any positive number is) and numpy's numbers where a Python number is legal:
#: each must be accepted, with a finite answer (a check or a step that refuses a legal
#: value is a fault too).  (row id, value); the row's call gives the value by keyword.
LEGAL = [
    # hypothesis refused numpy's integers: the L1 ball "failed" its strategy check, and
    # example/find_counterexample raised a raw TypeError
    ("rcmdp_exact.check_set_conformance:seed", np.int64(0)),
    ("rcmdp_exact.testing.example:seed", np.int64(3)),
    ("rcmdp_exact.testing.find_counterexample:seed", np.uint8(2)),
    # U(-(-0.0), -0.0): numpy's "high - low < 0"
    ("rcmdp_exact.core.nn.MLP:bias_scale", -0.0),
    ("rcmdp_exact.core.nn.MLP.init:bias_scale", -0.0),
    # ln(2^S' S A / delta) overflowed for a subnormal delta: inf radii, then "alpha[0, 0]
    # = inf is not finite" naming no option
    ("rcmdp_exact.estimate_l1_ball:delta", 5e-324),
    ("rcmdp_exact.hoeffding_radius:delta", 5e-324),
    ("rcmdp_exact.uncertainty.weissman_radius:delta", 5e-324),
    ("rcmdp_exact.uncertainty.entry_radius:delta", 5e-324),
    # the targets of the options audit, with numpy's numbers and their range's edges
    ("rcmdp_exact.L1Ball.around:radius", -0.0),
    ("rcmdp_exact.protocol.YourModel:radius", -0.0),
    ("rcmdp_exact.protocol.YourModel:estimate", np.int64(5)),
    ("rcmdp_exact.protocol.ReproduceSpec:seeds", np.int64(2)),
    ("rcmdp_exact.robust.engine.RobustGame:max_iter", np.int64(10**18)),
    ("rcmdp_exact.robust.engine.RobustGame:tol", 5e-324),
    ("rcmdp_exact.robust.engine.SafetyNet:seconds", np.float32(0.5)),
    ("rcmdp_exact.core.nn.Adam:n_params", np.int64(3)),
    ("rcmdp_exact.core.nn.Adam:beta1", -0.0),
    ("rcmdp_exact.core.nn.MLP:hidden", np.uint8(4)),
    ("rcmdp_exact.planners.oracle.mirror_step:eta", -0.0),
    ("rcmdp_exact.interop.gym.TabularCMDPEnv.reset:seed", np.int64(7)),
    ("rcmdp_exact.protocol.GroundTruthSpec:seed", np.int64(0)),
    ("rcmdp_exact.protocol.ground_truth_table.GroundTruthTableSpec:n_draws", np.int64(3)),
    ("rcmdp_exact.suite.leaderboard.Scores.to_frame:max_size", np.int64(0)),
    ("rcmdp_exact.suite.report.tightness:target", np.float64(0.5)),
    ("rcmdp_exact.suite.load:level", np.float64(0.1)),
    ("rcmdp_exact.core.mdp.value_scale:horizon", np.int64(1)),
]


def _row(row_id: str) -> Option:
    found = [r for r in OPTIONS if r.id == row_id]
    assert found, f"LEGAL names {row_id}, which is no row of OPTIONS"
    return found[0]


@pytest.mark.parametrize(("row_id", "value"), LEGAL,
                         ids=[f"{r}={v!r}" for r, v in LEGAL])
def test_legal_edge_values_are_accepted(row_id, value):
    result = _row(row_id).call(**{row_id.rsplit(":", 1)[1]: value})
    assert _finite(result), f"{row_id}={value!r} gave a value that is not finite: {result!r}"
