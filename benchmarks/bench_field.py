"""The leaderboard of the field: every planner on every certified suite instance.

One command regenerates ``docs/field/`` (the tables and figures of ``docs/field.md``):

    python benchmarks/bench_field.py [--iterations 300] [--seeds 10] [--workers 2]
        [--work DIR] [--out docs/field] [--planners a,b] [--only inst,...]
        [--duality-evaluations 400] [--report-only]

**Runs.**  The records of the shipped suite data file at radius r = 0.1, the four set
kinds, whose bracket is within 1% (the record's ``relative_gap`` at most 0.01; the lower
side is then within 1% of the optimum) and feasible.  On each, every planner of
``rcmdp_exact.planners`` but the reference (the record's own lower side is the
reference) runs ``--iterations`` iterations from the random start of each seed
(``plan(model, uset, name, iterations=N, seed=s)``, the planners' defaults), on one BLAS
thread.  A planner that does not take the set (Adversarial RCPG off the L1 ball) is
listed as such.  A run whose planner raises is kept as a failed run (the error in
its file), counted as not robust-feasible and listed under the tables.
Each run is stored in its own file of the work folder (default
``~/.cache/rcmdp_exact/field``), written atomically: an interrupted command resumes
where it stopped, and finished runs are never redone.  Iteration budgets decide every
number; wall-clock seconds are reported beside them, never used.

**Scores** (the suite leaderboard's rules): robust-feasible or not (every worst-case cost
within its budget up to 1e-9 max(1, |d|)) and the worst-case violation; the share of the
certified value reached by the robust-feasible runs, (V - f) / (lower - f) with f the
record's ``floor_value`` (the least worst-case value of any policy); the iterations (and
seconds) until the first iterate that is robust-feasible and within 1% of the bracket's
lower side (share at least 0.99); the same share for the best robust-feasible iterate
met.  The curve of each run is stored.

**Duality.**  For every record of the data file (every radius and kind),
``rcmdp_exact.planners.record_duality_gap`` with a budget of ``--duality-evaluations``
robust fixed points: the certified interval on the Lagrangian dual beside the bracket,
and the verdict on strong duality (redone when the data file's bracket of the record is
not the one the stored verdict was computed against).  On every record whose verdict is
"fails" (the dual's lower end above the bracket's upper side: a certified duality gap),
on the leaderboard or not, the primal-dual planners (``PRIMAL_DUAL``: the robust
primal-dual method, PMD-PD and the Lagrangian RCPG variant) run with the same iterations
and seeds, once the duality jobs have finished: where they end, against OPT's bracket
and the dual.

**Outputs** (in ``--out``): ``field.json`` (every run's numbers, the tables' rows, the
duality verdicts, the settings and the times), ``policies.npz`` (every run's final
policy, keys ``"<record>|<planner>|<seed>"``: anyone can evaluate them again),
``curves.npz`` (each run's curve, the same keys: rows iteration, worst-case value,
violation, in float32: for the figures; the policies and field.json keep every digit),
the report checks first that every stored value, cost and feasibility flag
equals ``robust_evaluate`` of the stored policy (a second exact evaluation) and
re-derives every certified duality gap by robust value iteration (``check_gaps``),
``tables.md`` (included by ``docs/field.md``) and the figures ``summary.png`` and
``curves.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RADIUS = 0.1
#: The planners with a Lagrange multiplier, run also on the records with a certified
#: duality gap (where their multiplier cannot close the gap).
PRIMAL_DUAL = ("robust-primal-dual", "pmd-pd", "rcpg-lagrangian-exact")
KINDS = ("l1", "kl", "s-l1", "interval")
WITHIN = 0.01  # the bracket's relative gap of a certified record, and the 1% of the scores
FEAS_TOL = 1e-9


def _one_thread() -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"


# ------------------------------------------------------------------ selection
def certified_records() -> list[dict]:
    """The records of the leaderboard (module notes)."""
    from rcmdp_exact import suite

    out = []
    for rec in suite.data()["records"]:
        b = rec["bracket"]
        if abs(level_of(rec) - RADIUS) > 1e-12 or rec["kind"] not in KINDS:
            continue
        if b.get("lower") is None or b.get("upper") is None:
            continue
        rel = b.get("relative_gap")
        if rel is None or not rel <= WITHIN:
            continue
        out.append(rec)
    return out


def level_of(rec: dict) -> float:
    """The record's level on the suite's grid (``level``; ``r`` in data files of schema
    1)."""
    return float(rec["level"] if "level" in rec else rec["r"])


def load(instance: str, kind: str, level: float):
    """``suite.load`` of a record (the level positional: named ``radius`` in schema 1,
    ``level`` in schema 2)."""
    from rcmdp_exact import suite

    return suite.load(instance, kind, level)


def safe(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key)


# ------------------------------------------------------------------ one run
def has_policy(run: dict) -> bool:
    """A run that ended with a policy (not a set the planner refuses, not a failure)."""
    return not run.get("skipped") and not run.get("failed")


def share(value, lower, floor):
    if floor is None or lower is None or not lower - floor > 0:
        return None
    return float((value - floor) / (lower - floor))


def fingerprint(rec: dict, planner: str) -> str:
    """What a run depends on: the record's model and set (their arrays, loaded), its
    budget, and the planner's default settings.  A new data file or instance file that
    changes any of them, or a new default, gives a new fingerprint: its runs are redone,
    the others kept."""
    import hashlib

    from rcmdp_exact.planners import PLANNERS

    h = hashlib.sha256()
    h.update(json.dumps([rec["instance"], rec["kind"], level_of(rec), rec["budget"], planner,
                         repr(PLANNERS[planner].settings())]).encode())
    h.update(_problem_digest(rec["instance"], rec["kind"], level_of(rec)).encode())
    return h.hexdigest()[:12]


_DIGESTS: dict = {}


def _problem_digest(instance: str, kind: str, level: float) -> str:
    """A digest of the arrays of the loaded model and set (what a planner sees)."""
    import hashlib

    key = (instance, kind, level)
    if key not in _DIGESTS:
        model, uset, _ = load(instance, kind, level)
        h = hashlib.sha256()
        for name in ("P", "R", "C", "d", "p0", "terminal"):
            a = getattr(model, name, None)
            if a is not None:
                a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
                h.update(name.encode() + str(a.shape).encode() + a.tobytes())
        h.update(repr(model.gamma).encode())
        h.update(uset._format().encode())  # the arrays that rebuild the set (its save())
        for name, a in sorted(uset._arrays().items()):
            a = np.ascontiguousarray(np.asarray(a))
            h.update(name.encode() + str(a.shape).encode() + str(a.dtype).encode()
                     + a.tobytes())
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def run_one(key: str, instance: str, kind: str, level: float, planner: str, seed: int,
            iterations: int, path: str) -> str:
    """Run one planner on one record and write its raw numbers (atomically); the scores
    are derived from them and the record when the report is written."""
    _one_thread()
    from rcmdp_exact import InputError
    from rcmdp_exact._io import save_json
    from rcmdp_exact.planners import plan

    model, uset, _ = load(instance, kind, level)
    out = dict(format="rcmdp_exact field run", key=key, instance=instance, kind=kind,
               planner=planner, seed=seed, iterations=iterations,
               budget=np.atleast_1d(np.asarray(model.d, dtype=np.float64)).tolist())
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = plan(model, uset, planner, iterations=iterations, seed=seed)
    except InputError as exc:  # the planner does not take this set: said before any work
        out.update(skipped=str(exc))
        save_json(path, json.dumps(out))
        return path
    except Exception as exc:  # a failed run is kept and shown, not hidden
        out.update(skipped=None, failed=f"{type(exc).__name__}: {exc}",
                   seconds=time.perf_counter() - t0)
        save_json(path, json.dumps(out))
        return path
    c = r.curve
    best = r.best
    out.update(
        skipped=None, failed=None, policy=np.asarray(r.policy).tolist(), value=r.value,
        costs=np.asarray(r.costs).tolist(), violation=r.violation, feasible=bool(r.feasible),
        best_value=None if best is None else best["value"],
        best_iteration=None if best is None else best["iteration"],
        curve=dict(iteration=c["iteration"].tolist(), value=c["value"].tolist(),
                   violation=c["violation"].tolist(), seconds=c["seconds"].tolist()),
        work=r.work, success=bool(r.success), status=str(r.status),
        seconds=time.perf_counter() - t0)
    save_json(path, json.dumps(out))
    return path


def scores(run: dict, rec: dict, seconds: float = 1.0) -> dict:
    """The scores of a run against its record (module notes); ``seconds``: the
    wall-clock budget of the ``*_by_time`` scores (read from the run's curve).  A failed
    run (an exception in the planner) is not robust-feasible and has no scores."""
    if run.get("skipped"):
        return run
    if run.get("failed"):
        return dict(run, feasible=False, violation=None, share=None, best_share=None,
                    best_share_by_time=None, hit_iteration=None, hit_seconds=None)
    b = rec["bracket"]
    lower, floor = float(b["lower"]), rec.get("floor_value")
    c = run["curve"]
    d = np.asarray(run["budget"], dtype=np.float64)
    tol = FEAS_TOL * float(np.maximum(1.0, np.abs(d)).max()) if d.size else 0.0
    hit = [i for i, (v, viol) in enumerate(zip(c["value"], c["violation"], strict=True))
           if viol <= tol and (share(v, lower, floor) or 0.0) >= 1.0 - WITHIN]
    by_time = [share(v, lower, floor) for v, viol, t in
               zip(c["value"], c["violation"], c["seconds"], strict=True)
               if viol <= tol and t <= seconds]
    by_time = [x for x in by_time if x is not None]
    return dict(run, lower=lower, upper=float(b["upper"]), floor_value=floor,
                best_share_by_time=max(by_time) if by_time else None,
                share=share(run["value"], lower, floor) if run["feasible"] else None,
                best_share=None if run["best_value"] is None else
                share(run["best_value"], lower, floor),
                hit_iteration=int(c["iteration"][hit[0]]) if hit else None,
                hit_seconds=float(c["seconds"][hit[0]]) if hit else None)


def duality_one(key: str, instance: str, kind: str, r: float, evaluations: int,
                path: str) -> str:
    _one_thread()
    from rcmdp_exact._io import save_json
    from rcmdp_exact.planners import record_duality_gap

    model, uset, rec = load(instance, kind, r)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = record_duality_gap(model, uset, rec, max_evaluations=evaluations)

    def num(x):
        return None if x is None or not math.isfinite(x) else float(x)

    out = dict(format="rcmdp_exact field duality", key=key, instance=instance, kind=kind,
               r=r, lower=num(g.lower), upper=num(g.upper), dual_lo=num(g.dual_lo),
               dual_hi=num(g.dual_hi), gap_lo=num(g.gap_lo), gap_hi=num(g.gap_hi),
               strong_duality=g.strong_duality, lam=np.asarray(g.lam).tolist(),
               evaluations=evaluations, seconds=time.perf_counter() - t0)
    save_json(path, json.dumps(out))
    return path


# ------------------------------------------------------------------ driving
def run_path(work: Path, iterations: int, rec: dict, planner: str, seed: int) -> Path:
    return (work / "runs" / f"N{iterations}" / safe(rec["key"]) /
            f"{planner}-{fingerprint(rec, planner)}" / f"{seed}.json")


def duality_path(work: Path, evaluations: int, rec: dict) -> Path:
    return work / "duality" / f"E{evaluations}" / f"{safe(rec['key'])}.json"


def _duality_current(d, rec: dict) -> bool:
    """Whether a stored duality job ``d`` (or None) was computed against the record's
    bracket as it stands in the data file (a new data file with a tighter bracket
    changes the verdict: the job is redone)."""
    if d is None:
        return False
    b = rec["bracket"]

    def same(x, y):
        x = None if x is None or not math.isfinite(float(x)) else float(x)
        y = None if y is None or not math.isfinite(float(y)) else float(y)
        return x == y

    return same(d.get("lower"), b.get("lower")) and same(d.get("upper"), b.get("upper"))


def suite_records(args) -> list[dict]:
    """The data file's records of the ``--only`` instances (all without it)."""
    from rcmdp_exact import suite

    only = set(args.only.split(",")) if args.only else None
    return [rec for rec in suite.data()["records"] if not only or rec["instance"] in only]


def current_duals(args) -> tuple[dict, int]:
    """The duality jobs of the work folder computed against their record's bracket as
    the data file has it, by record key (in the data file's order), and how many of
    :func:`suite_records` lack one."""
    out, missing = {}, 0
    for rec in suite_records(args):
        d = read(duality_path(Path(args.work), args.duality_evaluations, rec))
        if _duality_current(d, rec):
            out[rec["key"]] = d
        else:
            missing += 1
    return out, missing


def gap_records(args, records, duals: dict) -> list[dict]:
    """The records of the data file off the leaderboard ``records`` (any level, any
    bracket) whose certified dual is above their bracket's upper side: a certified
    duality gap (their duality job in ``duals`` says "fails").  The primal-dual planners
    run on them too (module notes)."""
    on = {rec["key"] for rec in records}
    return [rec for rec in suite_records(args) if rec["key"] not in on
            and duals.get(rec["key"], {}).get("strong_duality") == "fails"]


def read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_all(args, records, planners) -> None:
    work = Path(args.work)
    jobs = _run_jobs(args, records, planners)
    for rec in suite_records(args):
        path = duality_path(work, args.duality_evaluations, rec)
        if not _duality_current(read(path), rec):
            path.parent.mkdir(parents=True, exist_ok=True)
            jobs.append((duality_one, (rec["key"], rec["instance"], rec["kind"], level_of(rec),
                                       args.duality_evaluations, str(path))))
    print(f"{len(jobs)} jobs to run ({args.workers} workers); work folder {work}", flush=True)
    _execute(jobs, args.workers)
    # then the primal-dual planners on the records with a certified duality gap
    gaps = gap_records(args, records, current_duals(args)[0])
    jobs = _run_jobs(args, gaps, [p for p in planners if p in PRIMAL_DUAL])
    if jobs:
        print(f"{len(jobs)} runs of the primal-dual planners on the {len(gaps)} records with "
              f"a certified duality gap off the leaderboard", flush=True)
        _execute(jobs, args.workers)


def _run_jobs(args, records, planners) -> list:
    """The runs of ``planners`` on ``records`` not yet in the work folder."""
    jobs = []
    for rec in records:
        for p in planners:
            for s in range(args.seeds):
                path = run_path(Path(args.work), args.iterations, rec, p, s)
                if read(path) is None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    jobs.append((run_one, (rec["key"], rec["instance"], rec["kind"],
                                           level_of(rec), p, s, args.iterations, str(path))))
    return jobs


def _execute(jobs, workers: int) -> None:
    t0 = time.perf_counter()
    if workers <= 1:
        for i, (fn, a) in enumerate(jobs):
            fn(*a)
            if (i + 1) % 20 == 0:
                print(f"  {i + 1}/{len(jobs)} ({time.perf_counter() - t0:.0f} s)", flush=True)
        return
    from rcmdp_exact._workers import pool_initializer

    with ProcessPoolExecutor(workers, **pool_initializer()) as ex:
        futs = [ex.submit(fn, *a) for fn, a in jobs]
        for i, f in enumerate(as_completed(futs)):
            f.result()
            if (i + 1) % 20 == 0:
                print(f"  {i + 1}/{len(jobs)} ({time.perf_counter() - t0:.0f} s)", flush=True)


# ------------------------------------------------------------------ report
def check_runs(runs, records) -> None:
    """Every stored number against a second exact evaluation of the stored policy
    (``robust_evaluate`` on ``suite.load``, apart from the planners' oracle): the worst-case
    value and costs to 1e-9 (relative), the feasibility flag; raise on any mismatch."""
    from rcmdp_exact import robust_evaluate

    loaded = {rec["key"]: load(rec["instance"], rec["kind"], level_of(rec)) for rec in records}
    bad = []
    for r in runs:
        if not has_policy(r):
            continue
        model, uset, _ = loaded[r["key"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ev = robust_evaluate(model, np.asarray(r["policy"]), uset, progress=False)
        scale = max(1.0, abs(ev.value))
        costs = np.atleast_1d(np.asarray(ev.costs_worst, dtype=np.float64))
        d = np.atleast_1d(np.asarray(model.d, dtype=np.float64))
        feas = bool(np.all(costs <= d + FEAS_TOL * np.maximum(1.0, np.abs(d))))
        off = np.abs(costs - np.asarray(r["costs"])) > 1e-9 * np.maximum(1.0, np.abs(costs))
        if abs(ev.value - r["value"]) > 1e-9 * scale or np.any(off) or feas != r["feasible"]:
            bad.append(f"{r['key']}|{r['planner']}|{r['seed']}")
    if bad:
        raise SystemExit(f"{len(bad)} stored runs disagree with robust_evaluate of their "
                         f"policy: {', '.join(bad[:5])}")
    print(f"checked: {sum(has_policy(r) for r in runs)} stored runs equal "
          f"robust_evaluate of their policies", flush=True)


def check_gaps(duals, grid: int = 25) -> None:
    """Every certified duality gap checked apart from ``certified_dual``: the Lagrangian
    g(lam) = max_pi min_P [V_r - lam C] + lam d by robust value iteration (a second
    solver, s-rectangular sets included) at the dual's multiplier, at most the certified
    upper end of D (which bounds g there; equal to it, within 1e-8, where the dual's
    search converged), and at ``grid`` multipliers from 0 to three times it, none below
    the certified lower end of D (D = min g), which is above the bracket's upper side,
    OPT's bound.  Raise on any mismatch; print how many upper ends g met."""
    from rcmdp_exact import robust_value_iteration

    bad, n, tight = [], 0, 0
    for d in duals:
        if d["strong_duality"] != "fails":
            continue
        model, uset, _ = load(d["instance"], d["kind"], float(d["r"]))
        lam = np.asarray(d["lam"], dtype=np.float64)
        dd = np.atleast_1d(np.asarray(model.d, dtype=np.float64))

        def g(x, model=model, uset=uset, dd=dd):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return float(robust_value_iteration(model, uset, x).value + x @ dd)

        tol = 1e-8 * max(1.0, abs(d["dual_hi"]))
        at = g(lam)
        low = min(g(lam * f) for f in np.linspace(0.0, 3.0, grid)) if lam.any() else at
        tight += abs(at - d["dual_hi"]) <= tol
        if at > d["dual_hi"] + tol or low < d["dual_lo"] - tol or \
                not d["dual_lo"] > d["upper"]:
            bad.append(f"{d['key']} (g at lam {at!r}, D in [{d['dual_lo']!r}, "
                       f"{d['dual_hi']!r}], grid min {low!r})")
        n += 1
    if bad:
        raise SystemExit(f"{len(bad)} certified duality gaps disagree with robust value "
                         f"iteration: {'; '.join(bad[:5])}")
    print(f"checked: {n} certified duality gaps against robust value iteration (at the "
          f"dual's multiplier g is the certified upper end of D on {tight})", flush=True)


def suite_header(field):
    from rcmdp_exact import suite

    return suite.data().get(field)


def fmt(x, spec=".3f", none="-"):
    return none if x is None or (isinstance(x, float) and not math.isfinite(x)) else \
        format(x, spec)


def median(xs):
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _stored_runs(args, records, planners):
    """The scored runs of ``planners`` on ``records`` in the work folder, and how many are
    missing."""
    runs, missing = [], 0
    for rec in records:
        for p in planners:
            for s in range(args.seeds):
                r = read(run_path(Path(args.work), args.iterations, rec, p, s))
                if r is None:
                    missing += 1
                else:
                    runs.append(scores(r, rec, args.seconds))
    return runs, missing


def report(args, records, planners) -> None:
    from rcmdp_exact._io import save_json, save_npz

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs, missing = _stored_runs(args, records, planners)
    by_key, missing_duals = current_duals(args)
    duals = list(by_key.values())
    gaps = gap_records(args, records, by_key)
    gap_runs, gap_missing = _stored_runs(args, gaps, [p for p in planners if p in PRIMAL_DUAL])
    missing += gap_missing
    # per (record, planner) rows
    rows = []
    for rec in records:
        for p in planners:
            rs = [r for r in runs if r["key"] == rec["key"] and r["planner"] == p]
            if not rs:
                continue
            if rs[0].get("skipped"):
                rows.append(dict(key=rec["key"], planner=p, runs=len(rs), skipped=True))
                continue
            feas = [r for r in rs if r["feasible"]]
            rows.append(dict(
                key=rec["key"], planner=p, runs=len(rs), skipped=False,
                feasible=len(feas), failed=sum(bool(r.get("failed")) for r in rs),
                violation=median([r["violation"] for r in rs]),
                share=median([r["share"] for r in feas]),
                best_share=median([r["best_share"] for r in rs]),
                hit=sum(r["hit_iteration"] is not None for r in rs),
                hit_iteration=median([r["hit_iteration"] for r in rs]),
                hit_seconds=median([r["hit_seconds"] for r in rs]),
                hit_by_time=sum(r["hit_seconds"] is not None and r["hit_seconds"] <= args.seconds
                                for r in rs),
                best_by_time=median([r["best_share_by_time"] for r in rs]),
                seconds=median([r["seconds"] for r in rs])))
    # per planner totals
    totals = []
    for p in planners:
        rs = [r for r in runs if r["planner"] == p and not r.get("skipped")]
        if not rs:
            continue
        feas = [r for r in rs if r["feasible"]]
        totals.append(dict(
            planner=p, runs=len(rs), feasible=len(feas),
            failed=sum(bool(r.get("failed")) for r in rs), share=median([r["share"] for r in feas]),
            within=sum(1 for r in feas if (r["share"] or 0) >= 1 - WITHIN),
            best_share=median([r["best_share"] for r in rs]),
            hit=sum(r["hit_iteration"] is not None for r in rs),
            hit_iteration=median([r["hit_iteration"] for r in rs]),
            hit_by_time=sum(r["hit_seconds"] is not None and r["hit_seconds"] <= args.seconds
                            for r in rs),
            best_by_time=median([r["best_share_by_time"] for r in rs]),
            seconds=median([r["seconds"] / max(1, r["iterations"]) for r in rs])))
    policies = {f"{r['key']}|{r['planner']}|{r['seed']}": np.asarray(r["policy"])
                for r in runs + gap_runs if has_policy(r)}
    check_runs(runs + gap_runs, records + gaps)
    check_gaps(duals)
    summary = dict(format="rcmdp_exact field", iterations=args.iterations, seeds=args.seeds,
                   wall_clock_budget=args.seconds,
                   radius=RADIUS, planners=planners, records=[r["key"] for r in records],
                   missing_runs=missing, totals=totals, rows=rows,
                   runs=[{k: v for k, v in r.items() if k not in ("policy", "curve")}
                         for r in runs],
                   gap_records=[r["key"] for r in gaps],
                   gap_runs=[{k: v for k, v in r.items() if k not in ("policy", "curve")}
                             for r in gap_runs],
                   data_file=dict(generated=suite_header("generated"),
                                  toolkit=suite_header("toolkit")),
                   duality=duals, duality_evaluations=args.duality_evaluations)
    save_json(out / "field.json", json.dumps(summary, separators=(",", ":")))
    if policies:
        save_npz(out / "policies.npz", policies, "rcmdp_exact field policies", compressed=True)
        curves = {}
        for r in runs + gap_runs:
            if has_policy(r):
                key = f"{r['key']}|{r['planner']}|{r['seed']}"
                curves[key] = np.array([r["curve"]["iteration"], r["curve"]["value"],
                                        r["curve"]["violation"]], dtype=np.float32)
        save_npz(out / "curves.npz", curves, "rcmdp_exact field curves", compressed=True)
    write_tables(out / "tables.md", summary, records)
    figures(out, runs, records, planners)
    print(f"wrote {out}: {len(runs)} runs and {len(gap_runs)} on records with a certified "
          f"duality gap ({missing} missing), {len(duals)} duality records "
          f"({missing_duals} missing or computed against another bracket)")


def write_tables(path: Path, s: dict, records) -> None:
    from rcmdp_exact._io import write_atomic

    T = s["wall_clock_budget"]
    lines = ["# The leaderboard of the field: the tables", "",
             "<!-- generated by benchmarks/bench_field.py; do not edit -->", "",
             f"{len(records)} records (level r = {s['radius']}, bracket within 1%), "
             f"{len(s['planners'])} planners, {s['seeds']} seeds (random starts), "
             f"{s['iterations']} iterations each"
             + (f"; {s['missing_runs']} runs missing" if s["missing_runs"] else "") + ".  "
             f"Data file: {s['data_file']['generated']}.", "",
             "## Per planner, over every record", "",
             f"At the iteration budget: robust-feasible outputs, the median share of the "
             f"certified value over them and how many are within 1%; the median share of "
             f"the best robust-feasible iterate (over the runs that met one), how many runs "
             f"met an iterate within 1% and the median iterations it took.  At the "
             f"wall-clock budget of {T:g} s (machine-dependent: two shared cores): the "
             f"median best share met by then and the runs within 1% by then.", "",
             "| planner | runs | failed | robust-feasible | median share (feasible) | "
             "within 1% | median best share | reached 1% | median iterations to 1% | "
             f"best share by {T:g} s | 1% by {T:g} s | ms per iteration |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in s["totals"]:
        lines.append(f"| {t['planner']} | {t['runs']} | {t['failed']} | {t['feasible']} | "
                     f"{fmt(t['share'])} | "
                     f"{t['within']} | {fmt(t['best_share'])} | {t['hit']} | "
                     f"{fmt(t['hit_iteration'], '.0f')} | {fmt(t['best_by_time'])} | "
                     f"{t['hit_by_time']} | {fmt(1e3 * t['seconds'], '.1f')} |")
    lines += ["", "## Per record", "",
              "Feasible: robust-feasible outputs of the seeds and the median worst-case "
              "violation; share: median over the feasible outputs; best: median share of "
              "the best robust-feasible iterate; 1%: runs that met a robust-feasible "
              "iterate within 1% of the lower side, and the median iterations (seconds) it "
              f"took; by {T:g} s: the median best share met within {T:g} s.", ""]
    for rec in records:
        rows = [r for r in s["rows"] if r["key"] == rec["key"]]
        b = rec["bracket"]
        lines += [f"**{rec['key']}** (S = {rec['S']}, A = {rec['A']}; bracket "
                  f"[{b['lower']:.6g}, {b['upper']:.6g}], floor "
                  f"{rec.get('floor_value') + 0.0:.6g})",
                  "", "| planner | feasible | median violation | share | best | 1% | "
                  f"iterations (s) to 1% | by {T:g} s |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if r["skipped"]:
                lines.append(f"| {r['planner']} | set not taken | | | | | | |")
                continue
            failed = f" ({r['failed']} failed)" if r["failed"] else ""
            lines.append(
                f"| {r['planner']} | {r['feasible']}/{r['runs']}{failed} | "
                f"{fmt(r['violation'], '.2e')} "
                f"| {fmt(r['share'])} | {fmt(r['best_share'])} | {r['hit']}/{r['runs']} | "
                f"{fmt(r['hit_iteration'], '.0f')} ({fmt(r['hit_seconds'], '.2f')}) | "
                f"{fmt(r['best_by_time'])} |")
        lines.append("")
    failed = [r for r in s["runs"] if r.get("failed")]
    if failed:
        lines += ["Failed runs (kept, counted as not robust-feasible):", ""]
        lines += [f"* {r['key']} | {r['planner']} | seed {r['seed']}: {r['failed'][:300]}"
                  for r in failed]
        lines.append("")
    duals = s["duality"]
    fails = [d for d in duals if d["strong_duality"] == "fails"]
    count = {v: sum(d["strong_duality"] == v for d in duals)
             for v in ("fails", "holds", "undecided", "no_primal", "inconsistent")}
    lines += ["## Strong duality, record by record", "",
              f"{len(duals)} records, certified dual with {s['duality_evaluations']} robust "
              f"fixed points each: " + ", ".join(f"{v} {n}" for v, n in count.items()) + ".",
              "", "Records with a certified duality gap (D - OPT at least gap_lo > 0):", ""]
    if fails:
        lines += ["| record | OPT in | D in | D - OPT in |", "|---|---|---|---|"]
        for d in fails:
            lines.append(f"| {d['key']} | [{fmt(d['lower'], '.6g')}, {fmt(d['upper'], '.6g')}]"
                         f" | [{fmt(d['dual_lo'], '.6g')}, {fmt(d['dual_hi'], '.6g')}] | "
                         f"[{fmt(d['gap_lo'], '.4g')}, {fmt(d['gap_hi'], '.4g')}] |")
    else:
        lines.append("none.")
    lines += ["", "Every record: the bracket on OPT, the certified interval on D and the verdict "
              "(undecided: the interval on D and the bracket overlap at this budget; "
              "no_primal: the record has no robust-feasible policy).", "",
              "| record | OPT in | D in | strong duality |", "|---|---|---|---|"]
    for d in duals:
        lines.append(f"| {d['key']} | [{fmt(d['lower'], '.6g')}, {fmt(d['upper'], '.6g')}] | "
                     f"[{fmt(d['dual_lo'], '.6g')}, {fmt(d['dual_hi'], '.6g')}] | "
                     f"{d['strong_duality']} |")
    lines += ["", "On every record with a certified gap (on the leaderboard or not), the "
              "primal-dual planners, each run for the same iterations and seeds: how many "
              "outputs are robust-feasible, the median worst-case value of those, the best of "
              "them, against the bracket on OPT and the dual's lower end (a feasible output "
              "is worth at most OPT <= upper < D).", ""]
    fate = []
    for d in fails:
        for p in PRIMAL_DUAL:
            rs = [r for r in s["runs"] + s["gap_runs"] if r["key"] == d["key"]
                  and r["planner"] == p and has_policy(r)]
            if rs:
                feas = [r["value"] for r in rs if r["feasible"]]
                fate.append(f"| {d['key']} | {p} | {len(feas)}/{len(rs)} | "
                            f"{fmt(median(feas), '.6g')} | "
                            f"{fmt(max(feas) if feas else None, '.6g')} | "
                            f"[{fmt(d['lower'], '.6g')}, {fmt(d['upper'], '.6g')}] | "
                            f"{fmt(d['dual_lo'], '.6g')} |")
    if fate:
        lines += ["| record | planner | robust-feasible | median value (feasible) | best "
                  "feasible value | OPT in | D at least |", "|---|---|---|---|---|---|---|",
                  *fate]
    else:
        lines.append("no record with a certified gap has runs of the primal-dual planners.")
    text = ("\n".join(lines) + "\n").encode("utf-8")
    write_atomic(path, lambda fh: fh.write(text))


def figures(out: Path, runs, records, planners) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rcmdp_exact._io import write_atomic

    def save(fig, name):
        import io

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        data = buf.getvalue()
        write_atomic(out / name, lambda fh: fh.write(data))

    live = [p for p in planners if any(r["planner"] == p and not r.get("skipped")
                                       for r in runs)]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for i, p in enumerate(live):
        rs = [r for r in runs if r["planner"] == p and not r.get("skipped")]
        sh = [r["share"] if r["feasible"] else np.nan for r in rs]
        viol = np.mean([not r["feasible"] for r in rs])
        vals = np.array([x for x in sh if x is not None and np.isfinite(x)])
        if vals.size:
            ax.boxplot(np.clip(vals, -0.5, 1.2), positions=[i], widths=0.6,
                       showfliers=False)
        ax.text(i, 1.25, f"{100 * (1 - viol):.0f}%", ha="center", fontsize=7)
    ax.set_xticks(range(len(live)), live, rotation=30, ha="right", fontsize=8)
    ax.axhline(1.0, ls=":", c="k", lw=1)
    ax.set_ylim(-0.55, 1.35)
    ax.set_ylabel("share of the certified value\n(robust-feasible runs)")
    ax.set_title("every record, every seed (top: share of runs robust-feasible)", fontsize=9)
    fig.tight_layout()
    save(fig, "summary.png")
    # curves: median over seeds of the share of each feasible iterate, on the six records
    # (one per instance) where the planners' best shares are lowest: where they differ
    hardness = {}
    for rec in records:
        bs = [r["best_share"] for r in runs if r["key"] == rec["key"] and not r.get("skipped")]
        bs = [0.0 if x is None else x for x in bs]
        h = float(np.median(bs)) if bs else 1.0
        if rec["instance"] not in hardness or h < hardness[rec["instance"]][0]:
            hardness[rec["instance"]] = (h, rec)
    show = [rec for _, rec in sorted(hardness.values(), key=lambda t: t[0])][:6]
    if not show:
        return
    fig, axes = plt.subplots(2, 3, figsize=(10, 5.5), squeeze=False)
    for ax, rec in zip(axes.ravel(), show, strict=False):
        b = rec["bracket"]
        for i, p in enumerate(live):
            rs = [r for r in runs if r["key"] == rec["key"] and r["planner"] == p
                  and has_policy(r)]
            if not rs:
                continue
            it = np.asarray(rs[0]["curve"]["iteration"])
            sh = []
            for r in rs:
                v = np.asarray(r["curve"]["value"])
                s = np.array([share(x, b["lower"], rec.get("floor_value")) or 0.0 for x in v])
                s[np.asarray(r["curve"]["violation"]) > 1e-9] = np.nan
                sh.append(s[: len(it)])
            sh = np.array([x for x in sh if len(x) == len(it)])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-infeasible columns
                ax.plot(np.maximum(it, 1), np.nanmedian(sh, axis=0), c=f"C{i}", lw=1,
                        label=p)
        ax.axhline(1.0, ls=":", c="k", lw=1)
        top = max([max(r["curve"]["iteration"]) for r in runs if r["key"] == rec["key"]
                   and has_policy(r)] + [2])
        ax.set_xlim(1, top)
        ax.set_xscale("log")
        ax.set_ylim(-0.2, 1.1)
        ax.set_title(rec["key"], fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0, 0].legend(fontsize=6)
    for ax in axes[-1]:
        ax.set_xlabel("iteration", fontsize=8)
    fig.suptitle("share of the certified value of each robust-feasible iterate (median "
                 "over seeds; gaps: infeasible)", fontsize=9)
    fig.tight_layout()
    save(fig, "curves.png")


def main() -> None:
    from rcmdp_exact.planners import NAMES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--work", default=str(Path.home() / ".cache" / "rcmdp_exact" / "field"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "field"))
    ap.add_argument("--planners", default=",".join(n for n in NAMES if n != "reference"))
    ap.add_argument("--only", default="", help="instances (comma-separated)")
    ap.add_argument("--duality-evaluations", type=int, default=400)
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="the wall-clock budget of the by-time scores (read from the curves)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    planners = args.planners.split(",")
    records = certified_records()
    if args.only:
        keep = set(args.only.split(","))
        records = [r for r in records if r["instance"] in keep]
    print(f"{len(records)} records: {', '.join(r['key'] for r in records)}", flush=True)
    if not args.report_only:
        run_all(args, records, planners)
    report(args, records, planners)


if __name__ == "__main__":
    main()
