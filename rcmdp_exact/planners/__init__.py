r"""Published RCMDP planners in exact-gradient tabular form, judged exactly.

``plan(model, uset, name, iterations=N, seed=s)`` runs one planner of :data:`PLANNERS`
within an iteration budget and returns a :class:`~.base.PlanResult`: the output policy,
its exact worst-case value and costs, the curve over iterations, the work counted.
Every planner sees the RCMDP through one exact oracle (:mod:`.oracle`: robust fixed
points, Danskin's gradients), on any model and any built-in set it accepts.

======================== ========================================== ===============
name                     paper                                      module
======================== ========================================== ===============
``robust-primal-dual``   Wang, Miao and Zou (2022), 2209.06866      ``primal_dual``
``epirc-pgs``            Kitamura et al. (ICLR 2025), 2408.16286v3  ``epigraph``
``rnpg``                 Ganguly et al. (2025), 2505.19238          ``switching``
``rrpo``                 Ma, Chen, Zhou and Huang, 2508.17448       ``rrpo``
``pmd-pd``               Bossens and Nitanda, 2506.23165            ``mirror``
``rcpg-value-exact`` ... the seed paper's RCPG, Adversarial RCPG    ``rcpg``
``reference``            the certified bracket's lower side         ``reference``
======================== ========================================== ===============

``docs/planners.md`` gives each planner's updates, the version of the paper followed,
what could be read of it, every choice it leaves open and the hyperparameters used.
The package is lazy: ``NAMES`` is available without numpy (the command line checks a
name with it); the planners load on first use.
"""

from __future__ import annotations

#: The names of the built-in planners, in the order of the docs (no numpy needed).
NAMES = ("robust-primal-dual", "epirc-pgs", "rnpg", "rrpo", "pmd-pd", "rcpg-value-exact",
         "rcpg-constraint-exact", "rcpg-lagrangian-exact", "adversarial-rcpg-exact",
         "reference")


_EXPORTS = {
    "PLANNERS": ".base", "Planner": ".base", "PlannerSettings": ".base",
    "PlanResult": ".base", "Context": ".base", "Trace": ".base", "plan": ".base",
    "planner": ".base", "register": ".base", "STARTS": ".base", "as_trainer": ".base",
    "RobustOracle": ".oracle", "Evaluation": ".oracle", "project_simplex": ".oracle",
    "mirror_step": ".oracle", "log_policy": ".oracle",
    "PrimalDualSettings": ".primal_dual", "EpigraphSettings": ".epigraph",
    "RNPGSettings": ".switching", "RRPOSettings": ".rrpo", "PMDPDSettings": ".mirror",
    "RCPGSettings": ".rcpg", "ReferenceSettings": ".reference",
    "record_duality_gap": ".duality", "as_entrant": ".base", "entrants": ".base",
    "register_entrants": ".base",
}

__all__ = ["NAMES", "load_builtin", *sorted(_EXPORTS)]


def load_builtin() -> None:
    """Import the modules that register the built-in planners (idempotent;
    :func:`.base.load_builtin`)."""
    from .base import load_builtin as load

    load()


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rcmdp_exact.planners' has no attribute {name!r}")
    import importlib

    load_builtin()
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})


def _plug_into_the_leaderboard() -> None:
    """The suite's leaderboard imports this package to let it register its planners as
    entrants (``rcmdp suite score --algorithm NAME``): when the leaderboard is loaded,
    load the planners now (each registration reaches it, ``base.register``).  Otherwise
    nothing is imported (numpy neither): :func:`~.base.register_entrants` does it later
    on request."""
    import sys

    if "rcmdp_exact.suite.leaderboard" in sys.modules:
        load_builtin()
        from .base import register_entrants

        register_entrants()


_plug_into_the_leaderboard()
