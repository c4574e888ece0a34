"""Uncertainty sets: the protocol, the kinds of set, estimation from data, checks.

* :mod:`.base`: the protocol, :class:`UncertaintySet` and its three protocols
  :class:`SARectangularSet` (with the one batch flow of ``worst_case``),
  :class:`SRectangularSet` and :class:`KernelSet`; the registry of kinds
  (:func:`set_class`, :func:`registered_kinds`), :func:`check_set`, :func:`load_set`,
  and the helpers of a set's constructor (:func:`nominal_kernel`, :func:`radii`,
  :func:`state_radii`, :func:`support_mask`, :func:`tile`);
* one file per kind of set, each with its exact solver, its cvxpy cross-check, its
  estimator from counts (``from_counts`` and ``estimate_*``; what they share in
  :mod:`._counts`) and its hypothesis strategy: :mod:`.l1` (:class:`L1Ball`, the paper's;
  its inner problem in :mod:`.l1_sort` and :mod:`.l1_numba`), :mod:`.weighted_l1`
  (:class:`WeightedL1Ball`), :mod:`.interval` (:class:`IntervalSet`, bounded-parameter
  MDPs), :mod:`.linf` (:class:`LInfBall`), :mod:`.kl` (:class:`KLBall`), :mod:`.s_l1`
  (:class:`SRectL1Ball`, s-rectangular), :mod:`.finite` (:class:`FiniteSet`, whole
  kernels); :mod:`.kinds` names them without importing them;
* :mod:`.conformance`: :func:`check_set_conformance`, the protocol checks that every
  set passes, built-in or yours (``docs/your_set.md``);
* :mod:`.extreme`: the vertices of the polyhedral sets' rows and their combinations
  (:func:`extreme_kernels`), for brute-force checks;
* :mod:`.estimators`: the paper's phase 1 (:func:`collect_counts`, :func:`estimate`:
  the counts of the uniform policy and their Hoeffding L1 ball).

Names are imported on first use (PEP 562), so that ``import rcmdp_exact.uncertainty``
(and the command line, which reads :mod:`.kinds`) does not load numpy.  The set class
of every built-in kind is a name of this package without being listed here.
"""

from __future__ import annotations

import importlib

from .kinds import builtin_class_module, kind_files

#: Where each public name that is not a set class lives.
_EXPORTS = {
    "CONFORMANCE_CHECKS": ".conformance",
    "INNERS": ".base",
    "PROTOCOLS": ".base",
    "RECTANGULARITIES": ".base",
    "ConformanceError": ".conformance",
    "KernelSet": ".base",
    "L1Rows": ".l1",
    "SARectangularSet": ".base",
    "SRectangularSet": ".base",
    "UncertaintySet": ".base",
    "box_simplex_projection": ".interval",
    "builtin_kinds": ".kinds",
    "check_set": ".base",
    "check_set_conformance": ".conformance",
    "collect_counts": ".estimators",
    "entry_radius": "._counts",
    "estimate": ".estimators",
    "estimate_interval_set": ".interval",
    "estimate_kl_ball": ".kl",
    "estimate_l1_ball": ".l1",
    "estimate_linf_ball": ".linf",
    "extreme_kernels": ".extreme",
    "extreme_rows": ".extreme",
    "hoeffding_radius": ".l1",
    "interval_vertices": ".extreme",
    "kl_divergence": ".kl",
    "kl_ball": ".kl",
    "l1_ball": ".l1",
    "l1_vertices": ".extreme",
    "l1_violation": ".l1_sort",
    "load_set": ".base",
    "merge_outcomes": ".l1",
    "nominal_kernel": ".base",
    "polyhedral_kinds": ".base",
    "radii": ".base",
    "registered_kinds": ".base",
    "set_class": ".base",
    "state_radii": ".base",
    "support_mask": ".base",
    "tile": ".base",
    "weissman_radius": ".l1",
    "worst_case_l1": ".l1_sort",
}


def __getattr__(name: str):
    if name == "__all__":  # computed on first use: the set classes come from a file scan
        value = globals()["__all__"] = sorted(
            [*_EXPORTS, *(info.cls for info in kind_files().values())])
        return value
    module = _EXPORTS.get(name) or builtin_class_module(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__getattr__("__all__")})
