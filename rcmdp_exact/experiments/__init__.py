"""The paper's experiments: protocol, sweeps, results store, Table 1, figures, report.

* :class:`RunSpec` / :class:`GroundTruthSpec` (:mod:`.spec`): frozen job
  specifications, their keys (SHA-256 of the canonical JSON) and their seeds;
* :func:`run_one` (:mod:`.run`): one run's three phases, a pure function of its spec;
* :func:`plan` (:mod:`.protocol`): the jobs of a reproduction (``quick=True`` for the
  quick preset);
* :func:`sweep` (:mod:`.backends`): compute what the store is missing, serially, with
  joblib or on a Dask cluster; only the driver writes;
* :class:`Store` (:mod:`.store`): the SQLite results database;
* :func:`table1`, :func:`write_report` (:mod:`.table1`, :mod:`.report`,
  :mod:`.figures`): Table 1, the figures and the report, from the store alone;
* :func:`reproduce`: plan, sweep and report in one call.

The protocol, the aggregation, the ground-truth columns and the measured times are in
``docs/reproduction.md``.
"""

from .backends import BACKENDS, sweep
from .protocol import FULL, QUICK, plan
from .report import write_report
from .run import run_one
from .spec import ALGORITHMS, TESTS, GroundTruthSpec, RunSpec
from .store import Store
from .table1 import PAPER_TABLE1, table1

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


def reproduce(db, out=None, *, tests=TESTS, algorithms=ALGORITHMS, seeds=None,
              episodes=None, quick=False, workers=None, backend=None, client=None,
              address=None, trainer=None, progress=None, model=None, perturbations=None,
              set_file=None, horizon=None, estimation_episodes=None, **options):
    """Plan the jobs, compute those missing from the store ``db``, write the report.

    Parameters are those of :func:`plan` and :func:`sweep`; ``out`` (a folder) receives
    the report (none when None).  ``model`` (a path: a file written by
    ``TabularCMDP.save``) reproduces the protocol on your own model, as ``rcmdp reproduce
    --model`` does, with ``perturbations``, ``set_file``, ``horizon`` and
    ``estimation_episodes`` (:func:`.user.load_problem`); ``tests`` is then ``["model"]``.
    ``trainer`` (a callable, default
    ``rcmdp_exact.learners.train``) is named in the specs by its module and qualified
    name (``MODULE:FUNCTION``, as ``--trainer``), so results of different trainers get
    different keys.  Returns the sweep's summary with ``report`` (the
    :func:`write_report` result or None).
    """
    if trainer is not None:
        options.setdefault("trainer", f"{trainer.__module__}:{trainer.__qualname__}")
    if model is not None:
        from .user import load_problem, spec_options

        problem = load_problem(model, horizon=horizon, set_file=set_file,
                               perturbations=perturbations, need_horizon="reproduce")
        options.update(spec_options(problem, estimation_episodes))
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
