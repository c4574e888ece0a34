"""rcmdp_exact: exact solvers and verification tools for small robust constrained MDPs.

The public names are importable from the package top level; see ``docs/`` for the maths
and the conventions.
"""

__version__ = "0.1.0"

from . import domains, interop
from ._result import Result
from .evaluation import (
    evaluate,
    evaluate_finite_horizon,
    penalised_return,
    policy_transition_matrix,
    rescaled_budget,
)
from .model import ModelError, TabularCMDP, check_policy

__all__ = [
    "ModelError",
    "Result",
    "TabularCMDP",
    "__version__",
    "check_policy",
    "domains",
    "evaluate",
    "evaluate_finite_horizon",
    "interop",
    "penalised_return",
    "policy_transition_matrix",
    "rescaled_budget",
]
