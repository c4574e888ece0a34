"""Robust evaluation, robust value iteration and the one robust fixed-point engine.

* :mod:`.engine`: :class:`~.engine.RobustGame`, the batched robust Bellman operators and
  their fixed points (the only place a robust fixed point is iterated);
* :mod:`.objectives`: what the adversary minimises (:func:`worst_case_objective`);
* :mod:`.solvers`: :func:`robust_evaluate`, :func:`robust_value_iteration`,
  :func:`worst_case_kernel`, :func:`robust_bellman` (each with a pessimistic or an
  optimistic nature, ``nature=``).

``rcmdp_exact.robust`` was a module before it became this package; every name it had is
importable from here as before.
"""

from .engine import CONTAINS_TOL, RobustGame, checked_worst_case
from .objectives import OBJECTIVES, WorstCaseObjective, resolve_objective, worst_case_objective
from .solvers import (
    METHODS,
    NATURES,
    check_robust_inputs,
    robust_bellman,
    robust_evaluate,
    robust_value_iteration,
    worst_case_kernel,
)

__all__ = [
    "CONTAINS_TOL",
    "METHODS",
    "NATURES",
    "OBJECTIVES",
    "RobustGame",
    "WorstCaseObjective",
    "check_robust_inputs",
    "checked_worst_case",
    "resolve_objective",
    "robust_bellman",
    "robust_evaluate",
    "robust_value_iteration",
    "worst_case_kernel",
    "worst_case_objective",
]
