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
* :mod:`.weighted_l1`: :class:`WeightedL1Ball`; :mod:`.linf`: :class:`IntervalSet`
  (bounded-parameter MDPs) and :class:`LInfBall`; :mod:`.kl`: :class:`KLBall`;
  :mod:`.finite`: :class:`FiniteSet` (whole kernels, not rectangular); each
  sa-rectangular set with its exact solver and its cvxpy cross-check
  (``docs/sets.md``);
* :mod:`.extreme`: the vertices of the polyhedral sets' rows and their combinations
  (:func:`extreme_kernels`), for brute-force checks;
* :mod:`.estimate`: the paper's phase 1 (:func:`estimate`), the Hoeffding ball and the
  confidence sets of the other kinds (:func:`estimate_interval_set`,
  :func:`estimate_linf_ball`, :func:`estimate_kl_ball`).

``rcmdp_exact.uncertainty`` was a module before it became this package; every name it
had is importable from here as before.
"""

from .base import INNERS, RECTANGULARITIES, UncertaintySet, check_set, load_set
from .estimate import (
    FORMS,
    KL_BOUNDS,
    L1_BOUNDS,
    collect_counts,
    entry_radius,
    estimate,
    estimate_interval_set,
    estimate_kl_ball,
    estimate_l1_ball,
    estimate_linf_ball,
    hoeffding_radius,
    weissman_radius,
)
from .extreme import MAX_SUPPORT, extreme_kernels, extreme_rows, interval_vertices, l1_vertices
from .finite import FiniteSet
from .kl import KLBall, kl_divergence
from .l1 import SUPPORTS, L1Ball, L1Rows, check_ball, l1_ball, merge_outcomes
from .l1_sort import INNER_METHODS, LP_SOLVERS, l1_violation, worst_case_l1
from .linf import IntervalSet, LInfBall, box_simplex_projection
from .s_l1 import BELLMAN_METHODS, SRectL1Ball
from .weighted_l1 import WeightedL1Ball

__all__ = [
    "BELLMAN_METHODS",
    "FORMS",
    "INNERS",
    "INNER_METHODS",
    "KL_BOUNDS",
    "L1_BOUNDS",
    "LP_SOLVERS",
    "MAX_SUPPORT",
    "RECTANGULARITIES",
    "SUPPORTS",
    "FiniteSet",
    "IntervalSet",
    "KLBall",
    "L1Ball",
    "L1Rows",
    "LInfBall",
    "SRectL1Ball",
    "UncertaintySet",
    "WeightedL1Ball",
    "box_simplex_projection",
    "check_ball",
    "check_set",
    "collect_counts",
    "entry_radius",
    "estimate",
    "estimate_interval_set",
    "estimate_kl_ball",
    "estimate_l1_ball",
    "estimate_linf_ball",
    "extreme_kernels",
    "extreme_rows",
    "hoeffding_radius",
    "interval_vertices",
    "kl_divergence",
    "l1_ball",
    "l1_vertices",
    "l1_violation",
    "load_set",
    "merge_outcomes",
    "weissman_radius",
    "worst_case_l1",
]
