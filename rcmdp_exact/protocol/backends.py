"""Sweeps: run the jobs that are missing from a store, serially, on joblib or on Dask.

The workers compute; only the driver (the process that calls :func:`sweep`) writes the
store, one transaction per finished job, as results arrive.  A job is a pure function
of its specification, so the results do not depend on the backend, the number of
workers or the order of completion: joblib and Dask give the same bits.

* ``backend="serial"``: in this process, one job after the other;
* ``backend="joblib"`` (default with ``workers > 1``): ``joblib.Parallel`` with the loky
  process pool, results taken as they finish (``return_as="generator_unordered"``);
* ``backend="dask"``: a ``distributed.Client`` (given, or connected to ``address``);
  jobs are submitted as futures and collected with ``as_completed``.  Workers need
  ``rcmdp_exact`` installed.  A worker that dies has its jobs retried by the scheduler.

A job that raises is reported (key and message) and left out of the store, so the next
sweep retries it; the summary tells the failures of the machine (a lost worker, a full
disk, no memory), which a new sweep may get past, from errors of the job's own
computation, which it repeats (``transient``).  Ctrl-C stops the sweep; what was
stored stays, and the same command resumes.

Local worker processes end with the driver, however it ends (SIGKILL included): each
worker starts with :func:`rcmdp_exact._workers.exit_with_parent`.  An injected trainer
is checked before any work: its signature (:func:`~.run.check_trainer`), then its
result on the cheapest run, computed alone (on the chosen backend) before the other
jobs start (a trainer that returns the wrong type is an error after one run, not one
failure per job).  The store is written only by the driver; a store that cannot be
written stops the sweep with the error.
"""

from __future__ import annotations

import os
import time
import traceback

from .._result import Result

__all__ = ["BACKENDS", "execute", "max_workers", "sweep"]


def max_workers() -> int:
    """The most local worker processes a sweep starts: ``WORKERS_PER_CPU`` (4) per CPU
    of ``os.cpu_count()``; more would only wait for a core, each with its own copy of
    the models."""
    from ..names import WORKERS_PER_CPU

    return WORKERS_PER_CPU * (os.cpu_count() or 1)


BACKENDS = ("serial", "joblib", "dask")

#: Rough relative cost of jobs, to start the long ones first (makespan only).
_COST = {"suite": 2.0, "bracket": 3.0, "training": 0.5}
_DOMAIN_COST = {"nav1": 3.0, "inventory": 2.0, "nav2": 1.0, "model": 1.0}
_ALGO_COST = {"adversarial-rcpg": 4.0}


def execute(job, trainer=None):
    """Compute one job: ``(status, key, payload)``; status "ok", "error" or "contract".

    The job runs with one BLAS thread, so that its numbers are the same bits in every
    backend and on every number of cores.

    ``job`` is a :class:`~.spec.RunSpec` or a :class:`~.spec.GroundTruthSpec`; an
    exception becomes ``("error", key, traceback text)`` so that one failing job does
    not stop the others: a job is a pure function of its specification, so its error
    comes back on every sweep.  An ``OSError`` or a ``MemoryError`` (the machine: a
    full disk, no memory) becomes ``("transient", key, traceback text)``: a later sweep
    may succeed.  A :class:`~.run.TrainerError` (the trainer breaks its contract)
    becomes ``("contract", key, message)`` and stops the sweep.
    """
    from threadpoolctl import threadpool_limits

    from .groundtruth import run_ground_truth
    from .run import TrainerError, run_one
    from .spec import RunSpec

    key = job.key
    try:
        # one BLAS thread whatever the backend and the machine: LAPACK's results depend
        # on the thread count in their last bits, and a job must give the same bits in a
        # worker process, in the serial backend and on a cluster
        with threadpool_limits(limits=1, user_api="blas"):
            if isinstance(job, RunSpec):
                return "ok", key, run_one(job, trainer)
            return "ok", key, run_ground_truth(job)
    except TrainerError as exc:
        return "contract", key, str(exc)
    except (OSError, MemoryError):  # the machine, not the job: a new sweep may succeed
        return "transient", key, traceback.format_exc()
    except Exception:  # the job's own computation: the same again on every sweep
        return "error", key, traceback.format_exc()


def _order(jobs):
    from .spec import RunSpec

    def cost(job):
        if isinstance(job, RunSpec):
            return (1, -_DOMAIN_COST[job.domain] * _ALGO_COST.get(job.algorithm, 1.0)
                    * job.episodes)
        return (0, -_COST[job.kind])

    return sorted(jobs, key=cost)


def _store(store, job, payload) -> bool:
    from .spec import RunSpec

    if isinstance(job, RunSpec):
        return store.add_run(payload)
    return store.add_ground_truth(job.key, job.fields(), payload)


def _serial(pending, trainer, workers):
    for job in pending:
        yield job, execute(job, trainer)


def _joblib(pending, trainer, workers):
    from joblib import Parallel, delayed

    by_key = {j.key: j for j in pending}
    from .._workers import pool_initializer

    par = Parallel(n_jobs=workers, return_as="generator_unordered", batch_size=1,
                   **pool_initializer())
    gen = par(delayed(execute)(j, trainer) for j in pending)
    try:
        for out in gen:
            yield by_key[out[1]], out
    finally:
        close = getattr(gen, "close", None)
        if close is not None:
            close()


def _dask(pending, trainer, client):
    from distributed import as_completed

    futs = {}
    for job in pending:
        f = client.submit(execute, job, trainer, pure=False,
                          key=f"rcmdp-{type(job).__name__}-{job.key[:24]}")
        futs[f] = job
    try:
        for fut in as_completed(list(futs)):
            job = futs[fut]
            try:
                out = fut.result()
            except Exception as exc:  # a job lost with its worker (KilledWorker), ...
                out = ("transient", job.key, f"{type(exc).__name__}: {exc}")
            yield job, out
    finally:
        for f in futs:
            if not f.done():
                f.cancel()


def sweep(store, jobs, *, trainer=None, workers: int | None = None,
          backend: str | None = None, client=None, address: str | None = None,
          progress=None) -> Result:
    """Compute the jobs missing from ``store`` and write each as it finishes.

    Parameters
    ----------
    store : Store
        The results database (only this process writes it).
    jobs : iterable of RunSpec or GroundTruthSpec
        Duplicates (same key) are computed once; stored keys are skipped.
    trainer : callable, optional
        Injected into :func:`~.run.run_one` (default ``rcmdp_exact.learners.train``);
        with process workers it must be importable by its module path.
    workers : int, optional
        Processes (joblib) (default: the number of CPUs), at most :func:`max_workers`;
        1 runs serially.
    backend : {"serial", "joblib", "dask"}, optional
        Default: "dask" when ``client`` or ``address`` is given, else "joblib" with more
        than one worker, else "serial".
    client : distributed.Client, optional
    address : str, optional
        Scheduler address of a Dask cluster (``tcp://host:8786``).
    progress : bool or None
        A progress bar: jobs done, running and left, with an ETA (None: when standard
        error is a terminal).

    Returns
    -------
    Result
        ``total`` (distinct jobs), ``stored_before``, ``computed``, ``failed`` (list of
        (key, message)), ``transient`` (the keys of the failed jobs that failed for the
        machine's sake, a lost worker, a full disk, no memory: a new sweep may compute
        them; the others failed in their own computation, which a new sweep repeats),
        ``seconds``.

    Raises
    ------
    TrainerError
        ``trainer`` cannot be called as a trainer, or returns something else than a
        TrainResult-like object (found on the first run, before the other jobs).
    OutputPathError
        The store cannot be written (read-only, full disk); what was stored stays.
    """
    from .._checks import check_choice, check_client, check_int
    from .._progress import progress_default, tqdm
    from .run import check_trainer

    if workers is None:
        workers = os.cpu_count() or 1
    workers = check_int(workers, "workers", 1, max_workers(),
                        hint=f" ({max_workers() // max(1, os.cpu_count() or 1)} per CPU: "
                             f"more would only wait for a core)")
    if backend is None:
        backend = ("dask" if client is not None or address is not None
                   else "joblib" if workers > 1 else "serial")
    check_choice(backend, "backend", BACKENDS)
    check_client(client)
    unique = {}
    for job in jobs:
        unique.setdefault(job.key, job)
    have = store.keys()
    pending = _order([j for k, j in unique.items() if k not in have])
    n_pending = len(pending)
    t0 = time.perf_counter()
    first = None
    if trainer is not None:
        from .spec import RunSpec

        runs = [j for j in pending if isinstance(j, RunSpec)]
        for job in runs[:1]:
            check_trainer(trainer, job.extra)
        if runs:  # the cheapest run first and alone: a broken contract ends the sweep there
            first = runs[-1]
            pending = [j for j in pending if j is not first]
    own_client = None
    if backend == "dask":
        if client is None:
            from distributed import Client

            client = own_client = Client(address)
        n_slots = max(1, sum(client.nthreads().values()))

        def start(part):
            return _dask(part, trainer, client)
    elif backend == "joblib":
        n_slots = workers

        def start(part):
            return _joblib(part, trainer, workers)
    else:
        n_slots = 1

        def start(part):
            return _serial(part, trainer, workers)
    parts = [p for p in ([first] if first is not None else [], pending) if p]
    failed = []
    transient = []
    computed = 0
    done_keys: set = set()
    total = sum(len(p) for p in parts)
    bar = tqdm(total=total, desc="reproduce", unit="job", disable=not progress_default(progress),
               smoothing=0.05)
    results = None
    try:
        left = total
        bar.set_postfix(running=min(n_slots, left), left=left, refresh=False)
        results = _chain([(start, part, done_keys) for part in parts])
        for job, (status, key, payload) in results:
            done_keys.add(key)
            left -= 1
            if status == "contract":  # the trainer breaks its contract: no job can succeed
                from .run import TrainerError

                raise TrainerError(payload)
            if status == "ok":
                _store(store, job, payload)
                computed += 1
            else:
                failed.append((key, payload))
                if status == "transient":
                    transient.append(key)
                last = payload.rstrip().splitlines()[-1]
                bar.write(f"job {key[:12]} ({_label(job)}) failed: "
                          + (payload.rstrip() if len(failed) == 1 else last))
            bar.set_postfix(running=min(n_slots, left), left=left, failed=len(failed),
                            refresh=False)
            bar.update(1)
    finally:
        if results is not None:  # stop the workers now when the loop ends early
            results.close()
        bar.close()
        if own_client is not None:
            own_client.close()
    return Result(total=len(unique), stored_before=len(unique) - n_pending,
                  computed=computed, failed=failed, transient=transient,
                  seconds=time.perf_counter() - t0)


def _chain(parts):
    """The results of each part in turn, each part's backend stream started (by
    ``start(jobs)``) only when the one before has finished, and guarded by
    :func:`_guarded`."""
    for start, jobs, done_keys in parts:
        stream = _guarded(start(jobs), jobs, done_keys)
        try:
            yield from stream
        finally:
            stream.close()


def _guarded(stream, pending, done_keys):
    """The stream; if the backend itself fails (a worker process killed, the pool
    broken), the jobs not finished are reported as failed instead of an exception, so
    that what is stored stays and the next sweep resumes."""
    try:
        yield from stream
    except Exception as exc:  # joblib's TerminatedWorkerError, a lost scheduler, ...
        msg = (f"{type(exc).__name__}: {exc}".strip().splitlines() or ["backend failure"])
        for job in pending:
            if job.key not in done_keys:
                yield job, ("transient", job.key, f"the backend failed before this "
                                                  f"job finished: {msg[0]}")


def _label(job) -> str:
    from .spec import RunSpec

    if isinstance(job, RunSpec):
        return f"{job.domain} {job.algorithm} seed {job.seed}"
    return f"ground truth {job.kind} {job.domain} {job.suite}".rstrip()
