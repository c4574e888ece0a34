"""rcmdp_exact: exact solvers and verification tools for small robust constrained MDPs.

The public names are importable from the package top level; see ``docs/`` for the maths
and the conventions.
"""

__version__ = "0.1.0"

#: Where each public name lives; the module is imported on first use (PEP 562), so
#: ``import rcmdp_exact`` and the command line do not load what they do not need.
_EXPORTS = {
    "adversary_gradient": ".gradients",
    "check_policy": ".model",
    "collect_counts": ".uncertainty",
    "domains": ".domains",
    "estimate": ".uncertainty",
    "estimate_interval_set": ".uncertainty",
    "estimate_kl_ball": ".uncertainty",
    "estimate_l1_ball": ".uncertainty",
    "estimate_linf_ball": ".uncertainty",
    "estimator_expectation": ".gradients",
    "ESTIMATORS": ".gradients",
    "evaluate": ".evaluation",
    "evaluate_finite_horizon": ".evaluation",
    "evaluate_time_dependent": ".ground_truth",
    "finite_difference": ".gradients",
    "FiniteSet": ".uncertainty",
    "hoeffding_radius": ".uncertainty",
    "ImproperPolicyError": "._checks",
    "InputError": "._checks",
    "interop": ".interop",
    "IntervalSet": ".uncertainty",
    "KLBall": ".uncertainty",
    "l1_ball": ".uncertainty",
    "l1_violation": ".uncertainty",
    "L1Ball": ".uncertainty",
    "lagrangian": ".gradients",
    "learners": ".learners",
    "LInfBall": ".uncertainty",
    "merge_outcomes": ".uncertainty",
    "MLPAdversary": ".parametrisations",
    "MLPPolicy": ".parametrisations",
    "ModelError": ".model",
    "monte_carlo_estimator": ".gradients",
    "nn": ".nn",
    "NotFiniteError": "._checks",
    "OBJECTIVES": ".robust",
    "OptionError": "._checks",
    "OutputPathError": "._checks",
    "penalised_return": ".evaluation",
    "policy_gradient": ".gradients",
    "policy_transition_matrix": ".evaluation",
    "rcmdp_bracket": ".ground_truth",
    "rcmdp_variant": ".ground_truth",
    "rescaled_budget": ".evaluation",
    "Result": "._result",
    "robust_bellman": ".robust",
    "robust_evaluate": ".robust",
    "robust_value_iteration": ".robust",
    "sampling": ".sampling",
    "solve_cmdp": ".ground_truth",
    "solve_cmdp_finite_horizon": ".ground_truth",
    "TabularAdversary": ".parametrisations",
    "TabularCMDP": ".model",
    "TabularPolicy": ".parametrisations",
    "verify_theorems": ".verify",
    "VerifyTable": ".verify",
    "WeightedL1Ball": ".uncertainty",
    "worst_case_kernel": ".robust",
    "worst_case_l1": ".uncertainty",
    "worst_case_objective": ".robust",
    "WorstCaseObjective": ".robust",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rcmdp_exact' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(module, __name__)
    value = mod if module == "." + name else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})


__all__ = [
    "ESTIMATORS",
    "OBJECTIVES",
    "FiniteSet",
    "ImproperPolicyError",
    "InputError",
    "IntervalSet",
    "KLBall",
    "L1Ball",
    "LInfBall",
    "MLPAdversary",
    "MLPPolicy",
    "ModelError",
    "NotFiniteError",
    "OptionError",
    "OutputPathError",
    "Result",
    "TabularAdversary",
    "TabularCMDP",
    "TabularPolicy",
    "VerifyTable",
    "WeightedL1Ball",
    "WorstCaseObjective",
    "__version__",
    "adversary_gradient",
    "check_policy",
    "collect_counts",
    "domains",
    "estimate",
    "estimate_interval_set",
    "estimate_kl_ball",
    "estimate_l1_ball",
    "estimate_linf_ball",
    "estimator_expectation",
    "evaluate",
    "evaluate_finite_horizon",
    "evaluate_time_dependent",
    "finite_difference",
    "hoeffding_radius",
    "interop",
    "l1_ball",
    "l1_violation",
    "lagrangian",
    "learners",
    "merge_outcomes",
    "monte_carlo_estimator",
    "nn",
    "penalised_return",
    "policy_gradient",
    "policy_transition_matrix",
    "rcmdp_bracket",
    "rcmdp_variant",
    "rescaled_budget",
    "robust_bellman",
    "robust_evaluate",
    "robust_value_iteration",
    "sampling",
    "solve_cmdp",
    "solve_cmdp_finite_horizon",
    "verify_theorems",
    "worst_case_kernel",
    "worst_case_l1",
    "worst_case_objective",
]
