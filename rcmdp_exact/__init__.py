"""rcmdp_exact: exact solvers and verification tools for small robust constrained MDPs.

The public names are importable from the package top level; see ``docs/`` for the maths
and the conventions.
"""

__version__ = "0.1.0"

from . import domains, interop, learners, nn, sampling
from ._checks import (
    ImproperPolicyError,
    InputError,
    NotFiniteError,
    OptionError,
    OutputPathError,
)
from ._result import Result
from .evaluation import (
    evaluate,
    evaluate_finite_horizon,
    penalised_return,
    policy_transition_matrix,
    rescaled_budget,
)
from .gradients import (
    ESTIMATORS,
    adversary_gradient,
    estimator_expectation,
    finite_difference,
    lagrangian,
    monte_carlo_estimator,
    policy_gradient,
)
from .ground_truth import (
    evaluate_time_dependent,
    rcmdp_bracket,
    rcmdp_variant,
    solve_cmdp,
    solve_cmdp_finite_horizon,
)
from .inner import l1_violation, worst_case_l1
from .model import ModelError, TabularCMDP, check_policy
from .parametrisations import MLPAdversary, MLPPolicy, TabularAdversary, TabularPolicy
from .robust import (
    OBJECTIVES,
    WorstCaseObjective,
    robust_bellman,
    robust_evaluate,
    robust_value_iteration,
    worst_case_kernel,
    worst_case_objective,
)
from .uncertainty import (
    L1Ball,
    collect_counts,
    estimate,
    estimate_l1_ball,
    hoeffding_radius,
    l1_ball,
    merge_outcomes,
)
from .verify import VerifyTable, verify_theorems

__all__ = [
    "ESTIMATORS",
    "OBJECTIVES",
    "ImproperPolicyError",
    "InputError",
    "L1Ball",
    "MLPAdversary",
    "MLPPolicy",
    "ModelError",
    "NotFiniteError",
    "OptionError",
    "OutputPathError",
    "Result",
    "TabularAdversary",
    "TabularCMDP",
    "TabularPolicy",
    "VerifyTable",
    "WorstCaseObjective",
    "__version__",
    "adversary_gradient",
    "check_policy",
    "collect_counts",
    "domains",
    "estimate",
    "estimate_l1_ball",
    "estimator_expectation",
    "evaluate",
    "evaluate_finite_horizon",
    "evaluate_time_dependent",
    "finite_difference",
    "hoeffding_radius",
    "interop",
    "l1_ball",
    "l1_violation",
    "lagrangian",
    "learners",
    "merge_outcomes",
    "monte_carlo_estimator",
    "nn",
    "penalised_return",
    "policy_gradient",
    "policy_transition_matrix",
    "rcmdp_bracket",
    "rcmdp_variant",
    "rescaled_budget",
    "robust_bellman",
    "robust_evaluate",
    "robust_value_iteration",
    "sampling",
    "solve_cmdp",
    "solve_cmdp_finite_horizon",
    "verify_theorems",
    "worst_case_kernel",
    "worst_case_l1",
    "worst_case_objective",
]
