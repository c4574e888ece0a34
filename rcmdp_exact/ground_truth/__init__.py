"""Ground truth: the exact CMDP optimum, a certified RCMDP bracket, the variants' targets
and the ground-truth table of the paper's domains.

Modules: :mod:`.lp` (the occupancy LP and its duals), :mod:`.core` (batched robust fixed
points), :mod:`.dual`, :mod:`.boxes`, :mod:`.search` and :mod:`.bracket` (the bracket),
:mod:`.variants` (the RCPG variants' targets), :mod:`.report` (the table).
"""

from .bracket import rcmdp_bracket
from .lp import (
    DEFAULT_LP_SOLVER,
    LP_SOLVERS,
    evaluate_time_dependent,
    greedy_one_hot,
    infeasible_message,
    lagrangian_optimal_policy,
    solve_cmdp,
    solve_cmdp_finite_horizon,
)
from .report import (
    METRICS,
    POLICY_LABELS,
    format_ground_truth,
    greedy_policy,
    ground_truth_table,
    save_ground_truth,
)
from .variants import VARIANTS, rcmdp_variant

__all__ = [
    "DEFAULT_LP_SOLVER",
    "LP_SOLVERS",
    "METRICS",
    "POLICY_LABELS",
    "VARIANTS",
    "evaluate_time_dependent",
    "format_ground_truth",
    "greedy_one_hot",
    "greedy_policy",
    "ground_truth_table",
    "infeasible_message",
    "lagrangian_optimal_policy",
    "rcmdp_bracket",
    "rcmdp_variant",
    "save_ground_truth",
    "solve_cmdp",
    "solve_cmdp_finite_horizon",
]
