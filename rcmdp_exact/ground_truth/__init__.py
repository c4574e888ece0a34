"""Ground truth solvers: the exact CMDP optimum, a certified RCMDP bracket, the variants'
targets.

Modules: :mod:`.lp` (the occupancy LP and its duals), :mod:`.dual`, :mod:`.boxes`,
:mod:`.search` and :mod:`.bracket` (the bracket), :mod:`.variants` (the RCPG variants'
targets), :mod:`.dual_certificate` (a certified interval on the Lagrangian dual of an
RCMDP and certified duality gaps).  The robust fixed points they need come from
:mod:`rcmdp_exact.robust`; the ground-truth table of the paper's domains is
:mod:`rcmdp_exact.experiments.ground_truth_table`.
"""

import importlib
import warnings

from .bracket import POLICY_CLASS, BracketSettings, gap_text, rcmdp_bracket, value_range
from .dual_certificate import certified_dual, duality_gap
from .lp import (
    DEFAULT_LP_SOLVER,
    LP_SOLVERS,
    greedy_one_hot,
    infeasible_message,
    lagrangian_optimal_policy,
    solve_cmdp,
    solve_cmdp_finite_horizon,
)
from .variants import VARIANTS, rcmdp_variant

__all__ = [
    "DEFAULT_LP_SOLVER",
    "LP_SOLVERS",
    "POLICY_CLASS",
    "VARIANTS",
    "BracketSettings",
    "certified_dual",
    "duality_gap",
    "gap_text",
    "greedy_one_hot",
    "infeasible_message",
    "lagrangian_optimal_policy",
    "rcmdp_bracket",
    "rcmdp_variant",
    "solve_cmdp",
    "solve_cmdp_finite_horizon",
    "value_range",
]

#: Names that moved out of this package (deprecated here for one release): name ->
#: (module, name there).
_MOVED = {
    "METRICS": ("rcmdp_exact.experiments.ground_truth_table", "METRICS"),
    "POLICY_LABELS": ("rcmdp_exact.experiments.ground_truth_table", "POLICY_LABELS"),
    "format_ground_truth": ("rcmdp_exact.experiments.ground_truth_table",
                            "format_ground_truth"),
    "ground_truth_table": ("rcmdp_exact.experiments.ground_truth_table", "ground_truth_table"),
    "save_ground_truth": ("rcmdp_exact.experiments.ground_truth_table", "save_ground_truth"),
    "greedy_policy": ("rcmdp_exact.mdp", "greedy_policy"),
    "evaluate_time_dependent": ("rcmdp_exact.evaluation", "evaluate_time_dependent"),
}


def __getattr__(name: str):
    moved = _MOVED.get(name)
    if moved is None:
        raise AttributeError(f"module 'rcmdp_exact.ground_truth' has no attribute {name!r}")
    module, attr = moved
    warnings.warn(f"rcmdp_exact.ground_truth.{name} is deprecated; use {module}.{attr}",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), attr)
