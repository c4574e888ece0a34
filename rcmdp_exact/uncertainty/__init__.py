"""Uncertainty sets: the protocol, the L1 ball and its inner problem, estimation from data.

* :mod:`.base`: :class:`UncertaintySet`, the protocol every set follows (the only
  place, with the set classes, that knows a set's inside), :func:`check_set`,
  :func:`load_set`;
* :mod:`.l1`: :class:`L1Ball` and :func:`l1_ball`; :mod:`.l1_sort`: its inner problem
  (:func:`worst_case_l1`, exact sort and LP); :mod:`.l1_numba`: the compiled row of the
  learners;
* :mod:`.s_l1`: :class:`SRectL1Ball`, the s-rectangular L1 set (one budget per
  state shared by its actions): the worst case of a policy and the robust Bellman
  optimality update;
* :mod:`.estimate`: the paper's phase 1 (:func:`estimate`) and the Hoeffding ball.

``rcmdp_exact.uncertainty`` was a module before it became this package; every name it
had is importable from here as before.
"""

from .base import INNERS, RECTANGULARITIES, UncertaintySet, check_set, load_set
from .estimate import FORMS, collect_counts, estimate, estimate_l1_ball, hoeffding_radius
from .l1 import SUPPORTS, L1Ball, L1Rows, check_ball, l1_ball, merge_outcomes
from .l1_sort import INNER_METHODS, LP_SOLVERS, l1_violation, worst_case_l1
from .s_l1 import BELLMAN_METHODS, SRectL1Ball

__all__ = [
    "BELLMAN_METHODS",
    "FORMS",
    "INNERS",
    "INNER_METHODS",
    "LP_SOLVERS",
    "RECTANGULARITIES",
    "SUPPORTS",
    "L1Ball",
    "L1Rows",
    "SRectL1Ball",
    "UncertaintySet",
    "check_ball",
    "check_set",
    "collect_counts",
    "estimate",
    "estimate_l1_ball",
    "hoeffding_radius",
    "l1_ball",
    "l1_violation",
    "load_set",
    "merge_outcomes",
    "worst_case_l1",
]
