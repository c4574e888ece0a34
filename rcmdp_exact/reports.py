"""Deprecated: the ground-truth table moved to :mod:`rcmdp_exact.ground_truth.report`.

Importing this module still works (with a :class:`DeprecationWarning`); the names are
those of :mod:`rcmdp_exact.ground_truth`.
"""

import warnings

from .ground_truth.report import (
    METRICS,
    POLICY_LABELS,
    format_ground_truth,
    greedy_policy,
    ground_truth_table,
    save_ground_truth,
)

__all__ = [
    "METRICS",
    "POLICY_LABELS",
    "format_ground_truth",
    "greedy_policy",
    "ground_truth_table",
    "save_ground_truth",
]

warnings.warn("rcmdp_exact.reports is deprecated; import the ground-truth table from "
              "rcmdp_exact.ground_truth", DeprecationWarning, stacklevel=2)
