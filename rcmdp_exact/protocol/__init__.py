"""The paper's experiments: protocol, sweeps, results store, Table 1, figures, report.

* :class:`RunSpec` / :class:`GroundTruthSpec` (:mod:`.spec`): frozen job
  specifications, their keys (SHA-256 of the canonical JSON) and their seeds;
* :func:`run_one` (:mod:`.run`): one run's three phases, a pure function of its spec;
* :func:`plan` (:mod:`.phases`): the jobs of a reproduction (``quick=True`` for the
  quick preset);
* :func:`sweep` (:mod:`.backends`): compute what the store is missing, serially, with
  joblib or on a Dask cluster; only the driver writes;
* :class:`Store` (:mod:`.store`): the SQLite results database;
* :func:`table1`, :func:`write_report` (:mod:`.table1`, :mod:`.reproduction_report`,
  :mod:`.figures`): Table 1, the figures and the report, from the store alone;
* :func:`reproduce`: plan, sweep and report in one call.

The protocol, the aggregation, the ground-truth columns and the measured times are in
``docs/reproduction.md``.
"""

import sys
import types

from ..names import TABLE1_ALGORITHMS as _ALGORITHMS
from ..names import TESTS as _TESTS

#: Where each public name lives; the module is imported on first use (PEP 562), so that
#: the commands read the light modules (the store, the report folder's files) before
#: numpy and the solvers are imported.
_EXPORTS = {"BACKENDS": ".backends", "sweep": ".backends", "FULL": ".phases",
            "QUICK": ".phases", "plan": ".phases", "write_report": ".reproduction_report",
            "run_one": ".run", "ALGORITHMS": ".spec", "TESTS": ".spec",
            "GroundTruthSpec": ".spec", "RunSpec": ".spec", "Store": ".store",
            "PAPER_TABLE1": ".table1", "table1": ".table1"}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """This package, whose exported names are never hidden by a submodule of the same
    name: importing the module ``table1`` (which the import system records as an
    attribute of its package) leaves ``protocol.table1`` the function, as the eager
    imports of earlier versions did."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and name in _EXPORTS \
                and value.__name__ == f"{__name__}.{name}":
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "ALGORITHMS",
    "BACKENDS",
    "FULL",
    "PAPER_TABLE1",
    "QUICK",
    "TESTS",
    "GroundTruthSpec",
    "RunSpec",
    "Store",
    "plan",
    "reproduce",
    "run_one",
    "sweep",
    "table1",
    "write_report",
]


def reproduce(db, out=None, *, tests=_TESTS, algorithms=_ALGORITHMS, seeds=None,
              episodes=None, quick=False, workers=None, backend=None, client=None,
              address=None, trainer=None, progress=None, model=None, perturbations=None,
              set_file=None, horizon=None, estimate=None, radius=None, support=None,
              **options):
    """Plan the jobs, compute those missing from the store ``db``, write the report.

    Parameters are those of :func:`plan` and :func:`sweep`; ``out`` (a folder) receives
    the report (none when None).  ``model`` (a path: a file written by
    ``TabularCMDP.save``) reproduces the protocol on your own model, as ``rcmdp reproduce
    --model`` does, with ``perturbations``, ``set_file``, ``horizon`` and the set:
    judged on itself by default (the set around the model, ``radius`` and ``support``),
    or estimated from ``estimate`` episodes (:func:`.user.load_problem`,
    :func:`.user.spec_options`); ``tests`` is then ``["model"]``.
    ``trainer`` (a callable, default
    ``rcmdp_exact.learners.train``) is named in the specs by its module and qualified
    name (``MODULE:FUNCTION``, as ``--trainer``), so results of different trainers get
    different keys.  Returns the sweep's summary with ``report`` (the
    :func:`write_report` result or None).
    """
    from .backends import sweep
    from .phases import plan
    from .reproduction_report import write_report
    from .store import Store

    if trainer is not None:
        options.setdefault("trainer", f"{trainer.__module__}:{trainer.__qualname__}")
    if model is not None:
        from .user import load_problem, spec_options

        problem = load_problem(model, horizon=horizon, set_file=set_file,
                               perturbations=perturbations, need_horizon="reproduce")
        options.update(spec_options(problem, estimate, radius, support))
        tests = ["model"]
    jobs = plan(tests, algorithms, seeds, episodes, quick=quick, **options)
    with Store(db) as store:
        store.request_tests(tests)
        summary = sweep(store, jobs, trainer=trainer, workers=workers, backend=backend,
                        client=client, address=address, progress=progress)
        summary.report = None
        if out is not None:
            summary.report = write_report(store, out, tests=store.requested_tests(),
                                          progress=progress,
                                          algorithms=algorithms)
    return summary
