"""Deprecated: the ground-truth table is :mod:`rcmdp_exact.experiments.ground_truth_table`.

Importing this module still works (with a :class:`DeprecationWarning`) for one release.
"""

import importlib
import warnings

__all__ = ["METRICS", "POLICY_LABELS", "format_ground_truth", "greedy_policy",
           "ground_truth_table", "save_ground_truth", "time_dependent_batch"]

warnings.warn("rcmdp_exact.ground_truth.report is deprecated; import the ground-truth table "
              "from rcmdp_exact.experiments.ground_truth_table", DeprecationWarning,
              stacklevel=2)


def __getattr__(name: str):
    if name == "greedy_policy":
        return importlib.import_module("rcmdp_exact.mdp").greedy_policy
    if name in __all__:
        return getattr(importlib.import_module("rcmdp_exact.experiments.ground_truth_table"),
                       name)
    raise AttributeError(f"module 'rcmdp_exact.ground_truth.report' has no attribute {name!r}")
