"""rcmdp_exact: exact solvers and verification tools for small robust constrained MDPs.

The public names are importable from the package top level; see ``docs/`` for the maths
and the conventions.
"""

__version__ = "0.1.0"

#: The one table of the public names: where each lives.  The module is imported on first
#: use (PEP 562), so ``import rcmdp_exact`` and the command line do not load what they do
#: not need; ``__all__`` is this table's names, ``__version__`` and the set classes of the
#: built-in kinds (found by a file scan, :func:`_set_class_names`).
_EXPORTS = {
    "adversary_gradient": ".theory.gradients",
    "backward_induction": ".core.mdp",
    "central_difference": ".theory.differences",
    "certified_dual": ".ground_truth",
    "check_policy": ".core.model_checks",
    "check_set_conformance": ".uncertainty",
    "ConformanceError": ".uncertainty",
    "collect_counts": ".uncertainty",
    "DirectPolicy": ".core.parametrisations",
    "domains": ".domains",
    "duality_gap": ".ground_truth",
    "estimate": ".uncertainty",
    "estimate_interval_set": ".uncertainty",
    "estimate_kl_ball": ".uncertainty",
    "estimate_l1_ball": ".uncertainty",
    "estimate_linf_ball": ".uncertainty",
    "estimator_expectation": ".theory.estimators",
    "ESTIMATORS": ".theory.estimators",
    "evaluate": ".core.evaluation",
    "evaluate_finite_horizon": ".core.evaluation",
    "evaluate_time_dependent": ".core.evaluation",
    "extreme_kernels": ".uncertainty",
    "finite_difference": ".theory.differences",
    "greedy_policy": ".core.mdp",
    "hoeffding_radius": ".uncertainty",
    "ImproperPolicyError": "._checks",
    "InnerProblemError": "._checks",
    "InputError": "._checks",
    "interop": ".interop",
    "KernelSet": ".uncertainty",
    "kl_ball": ".uncertainty",
    "l1_ball": ".uncertainty",
    "l1_violation": ".uncertainty",
    "lagrangian": ".theory.gradients",
    "learners": ".learners",
    "load_set": ".uncertainty",
    "LoadError": "._io",
    "merge_outcomes": ".uncertainty",
    "MLPAdversary": ".core.parametrisations",
    "MLPPolicy": ".core.parametrisations",
    "ModelError": ".core.model_checks",
    "monte_carlo_estimator": ".theory.estimators",
    "nn": ".core.nn",
    "NotFiniteError": "._checks",
    "OBJECTIVES": ".robust",
    "OptionError": "._checks",
    "OutputPathError": "._checks",
    "penalised_return": ".core.evaluation",
    "planners": ".planners",
    "policy_gradient": ".theory.gradients",
    "policy_iteration": ".core.mdp",
    "policy_transition_matrix": ".core.evaluation",
    "PolicySystem": ".core.evaluation",
    "rcmdp_bracket": ".ground_truth",
    "BracketSettings": ".ground_truth",
    "rcmdp_variant": ".ground_truth",
    "rescaled_budget": ".core.evaluation",
    "Result": "._result",
    "robust_bellman": ".robust",
    "robust_evaluate": ".robust",
    "robust_policy_gradient": ".theory.gradients",
    "robust_value_iteration": ".robust",
    "sampling": ".core.sampling",
    "SARectangularSet": ".uncertainty",
    "solve_cmdp": ".ground_truth",
    "solve_cmdp_finite_horizon": ".ground_truth",
    "solve_mdp": ".core.mdp",
    "SRectangularSet": ".uncertainty",
    "TabularAdversary": ".core.parametrisations",
    "TabularCMDP": ".core.model",
    "TabularPolicy": ".core.parametrisations",
    "UncertaintySet": ".uncertainty",
    "verify_theorems": ".theory.verify",
    "VerifyTable": ".theory.verify",
    "worst_case_kernel": ".robust",
    "worst_case_l1": ".uncertainty",
    "worst_case_objective": ".robust",
    "WorstCaseObjective": ".robust",
}


def _submodules() -> frozenset:
    """The public modules and subpackages of the package (``rcmdp_exact.ground_truth``...)."""
    from pathlib import Path

    here = Path(__file__).parent
    return frozenset(p.stem for p in here.iterdir() if not p.name.startswith("_")
                     and (p.suffix == ".py" or (p / "__init__.py").exists()))


def _set_class_names() -> tuple:
    """The set classes of the built-in kinds (public names of the package, found by
    :mod:`rcmdp_exact.uncertainty.kinds` without importing them)."""
    from .uncertainty.kinds import kind_files

    return tuple(info.cls for info in kind_files().values())


def __getattr__(name: str):
    if name == "__all__":  # computed on first use: the set classes come from a file scan
        value = globals()["__all__"] = sorted(["__version__", *_EXPORTS, *_set_class_names()])
        return value
    module = _EXPORTS.get(name)
    if module is None and name in _set_class_names():
        module = ".uncertainty"
    if module is None and name in _submodules():
        module = "." + name  # a submodule: rcmdp_exact.ground_truth works without an import
    if module is None:
        raise AttributeError(f"module 'rcmdp_exact' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(module, __name__)
    value = mod if module.rpartition(".")[2] == name else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__getattr__("__all__")})
