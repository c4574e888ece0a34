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
* :func:`reproduce`: plan, sweep and report in one call, of a frozen
  :class:`ReproduceSpec` (:mod:`.phases`).

The protocol, the aggregation, the ground-truth columns and the measured times are in
``docs/reproduction.md``.
"""

import sys
import types

#: Where each public name lives; the module is imported on first use (PEP 562), so that
#: the commands read the light modules (the store, the report folder's files) before
#: numpy and the solvers are imported.
_EXPORTS = {"BACKENDS": ".backends", "sweep": ".backends", "FULL": ".phases",
            "QUICK": ".phases", "plan": ".phases", "write_report": ".reproduction_report",
            "run_one": ".run", "ALGORITHMS": ".spec", "TESTS": ".spec",
            "GroundTruthSpec": ".spec", "ReproduceSpec": ".phases", "RunSpec": ".spec",
            "Store": ".store", "YourModel": ".phases",
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


#: The public names: the table ``_EXPORTS`` and :func:`reproduce`.
__all__ = sorted([*_EXPORTS, "reproduce"])


def reproduce(spec, db, out=None, *, workers=None, backend=None, client=None,
              address=None, progress=None):
    """Plan the jobs of ``spec``, compute those missing from the store ``db``, write the
    report.

    Parameters
    ----------
    spec : ReproduceSpec
        What is computed (tests, algorithms, seeds, episodes, the preset, your model, a
        trainer of yours, further :class:`RunSpec` fields), checked where it is built.
    db : str or Path
        The SQLite store (created when missing; a rerun computes only what it lacks).
    out : str or Path, optional
        A folder that receives the report (none when None).
    workers, backend, client, address, progress
        How the jobs are computed: those of :func:`sweep`.

    Returns
    -------
    Result
        The sweep's summary with ``report`` (the :func:`write_report` result or None).

    Examples
    --------
    ``reproduce(ReproduceSpec(quick=True), "runs.sqlite", "out/")`` is ``rcmdp
    reproduce --quick --out out/``.
    """
    from pathlib import Path

    from .._checks import check_out_path, check_type
    from .backends import sweep
    from .phases import ReproduceSpec
    from .reproduction_report import write_report
    from .store import Store

    check_type(spec, "spec", ReproduceSpec, "give ReproduceSpec(tests=..., quick=...)")
    check_type(db, "db", (str, Path), "give the path of the results store (runs.sqlite)")
    if out is not None:
        check_type(out, "out", (str, Path), "give the path of the report's folder")
        check_out_path(out, kind="dir", name="out")
    jobs = spec.jobs()
    with Store(db) as store:
        store.request_tests(spec.tests)
        summary = sweep(store, jobs, trainer=spec.trainer, workers=workers, backend=backend,
                        client=client, address=address, progress=progress)
        summary.report = None
        if out is not None:
            summary.report = write_report(store, out, tests=store.requested_tests(),
                                          progress=progress, algorithms=spec.algorithms)
    return summary
