"""Deprecated: the robust fixed-point engine moved to :mod:`rcmdp_exact.robust.engine`.

``RobustGame`` and ``greedy_box`` keep working from here (with a DeprecationWarning) for
one release; ``policy_kernel_values`` is :func:`rcmdp_exact.evaluation.policy_values`.
"""

import warnings

from ..evaluation import policy_values as policy_kernel_values
from ..mdp import greedy_box
from ..robust.engine import RobustGame

warnings.warn("rcmdp_exact.ground_truth.core is deprecated; import RobustGame and greedy_box "
              "from rcmdp_exact.robust", DeprecationWarning, stacklevel=2)

__all__ = ["RobustGame", "greedy_box", "policy_kernel_values"]
