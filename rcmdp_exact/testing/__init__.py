r"""Testing tools for RCMDPs: hypothesis strategies, counterexample search, seeded generators.

Three modules, whose public names are all importable from here:

* :mod:`rcmdp_exact.testing.strategies` (needs `hypothesis
  <https://hypothesis.readthedocs.io>`_, ``pip install "rcmdp_exact[testing]"``): it plays
  the role of ``hypothesis.extra.numpy`` for this toolkit: strategies that generate valid
  models (:func:`cmdps`, :func:`garnets`), policies, multipliers, uncertainty sets of
  every kind (:func:`balls` and the building blocks of the sets' strategies) and budgets
  that bind (:func:`binding_budgets`, :func:`robust_cmdps`), so that a property of your
  own ("my theorem holds on every small RCMDP") is one ``@given`` away; and
  :data:`EXACT_PROFILE`, a settings profile for exact checks (:func:`exact_settings`);
* :mod:`rcmdp_exact.testing.search` (needs hypothesis): :func:`example`, one example of a
  strategy reproducible from a seed, and :func:`find_counterexample`, which searches for
  an example that breaks a claim, shrinks it, and saves it as files that
  :func:`load_counterexample` reads back;
* :mod:`rcmdp_exact.testing.generators` (numpy only): seeded generators of random
  models (:func:`random_cmdp`, :func:`dense_binding_cmdp`, :func:`random_model_arrays`),
  of the parts of sets and inner problems with their edge cases (:func:`random_row`,
  :func:`random_kernel`, :func:`random_values`, :func:`random_radii`,
  :func:`random_policies`, :func:`random_box`) and of the rows that stress an inner
  solver (:func:`skewed_kernel`, :func:`skewed_values`, :func:`skewed_radii`), for code
  that does not use hypothesis.

``import rcmdp_exact`` does not load this package, and this package loads each module
when one of its names is first used (PEP 562): ``rcmdp_exact.testing.random_cmdp`` and
``import rcmdp_exact.testing.generators`` work without hypothesis installed.

Examples
--------
>>> from hypothesis import given, settings
>>> from rcmdp_exact import evaluate
>>> from rcmdp_exact.testing import cmdps, policies
>>> @settings(max_examples=20)
... @given(cmdps().flatmap(lambda m: policies(m).map(lambda pi: (m, pi))))
... def test_values_are_bounded(case):
...     model, pi = case
...     bound = abs(model.R).max(initial=0) / (1 - model.gamma)
...     assert abs(evaluate(model, pi).value) <= bound + 1e-9
>>> test_values_are_bounded()
"""

#: The module of each public name; it is imported on first use (PEP 562).
_MODULES = {
    "strategies": ("EXACT_PROFILE", "SA_KINDS", "SET_KINDS", "balls", "binding_budgets",
                   "budget_levels", "cmdps", "exact_settings", "garnets",
                   "grid_values", "inner_problems", "kernels", "multipliers", "pair_radii",
                   "policies", "robust_cmdps", "sizes", "state_budgets", "supports"),
    "search": ("example", "find_counterexample",
               "load_counterexample"),
    "generators": ("POLICY_KINDS", "SKEWED_FAMILIES", "dense_binding_cmdp",
                   "random_box", "random_cmdp", "random_kernel", "random_model_arrays",
                   "random_policies", "random_radii", "random_row", "random_values",
                   "skewed_kernel", "skewed_radii", "skewed_values"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rcmdp_exact.testing' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})
