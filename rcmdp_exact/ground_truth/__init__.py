"""Ground truth solvers: the exact CMDP optimum, a certified RCMDP bracket, the variants'
targets.

Modules: :mod:`.lp` (the occupancy LP and its duals), :mod:`.dual`, :mod:`.boxes`,
:mod:`.search` and :mod:`.bracket` (the bracket, with its options grouped by concern in
:mod:`.settings`), :mod:`.variants` (the RCPG variants' targets),
:mod:`.dual_certificate` (a certified interval on the Lagrangian dual of an RCMDP and
certified duality gaps).  The robust fixed points they need come from
:mod:`rcmdp_exact.robust`; the ground-truth table of the paper's domains is
:mod:`rcmdp_exact.protocol.ground_truth_table`.
"""


from .bracket import POLICY_CLASS, BracketSettings, gap_text, rcmdp_bracket, value_range
from .dual_certificate import certified_dual, duality_gap
from .lp import (
    DEFAULT_LP_SOLVER,
    LP_SOLVERS,
    infeasible_message,
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
    "infeasible_message",
    "rcmdp_bracket",
    "rcmdp_variant",
    "solve_cmdp",
    "solve_cmdp_finite_horizon",
    "value_range",
]
