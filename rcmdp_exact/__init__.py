"""rcmdp_exact: exact solvers and verification tools for small robust constrained MDPs.

The public names are importable from the package top level; see ``docs/`` for the maths
and the conventions.
"""

__version__ = "0.1.0"

from . import domains, interop, nn
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
from .model import ModelError, TabularCMDP, check_policy
from .parametrisations import MLPAdversary, MLPPolicy, TabularAdversary, TabularPolicy
from .verify import VerifyTable, verify_theorems

__all__ = [
    "ESTIMATORS",
    "MLPAdversary",
    "MLPPolicy",
    "ModelError",
    "Result",
    "TabularAdversary",
    "TabularCMDP",
    "TabularPolicy",
    "VerifyTable",
    "__version__",
    "adversary_gradient",
    "check_policy",
    "domains",
    "estimator_expectation",
    "evaluate",
    "evaluate_finite_horizon",
    "finite_difference",
    "interop",
    "lagrangian",
    "monte_carlo_estimator",
    "nn",
    "penalised_return",
    "policy_gradient",
    "policy_transition_matrix",
    "rescaled_budget",
    "verify_theorems",
]
