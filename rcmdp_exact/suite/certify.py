r"""Regenerate the suite's certified values: one job per (instance, set, radius).

A job (:func:`certify_job`) builds the instance, the set of the grid
(:mod:`~rcmdp_exact.suite.sets`) and the budget of the instance's rule, then computes

* ``nominal_optimum``: :math:`\max_\pi V(\pi, \hat P)` (policy iteration, certified);
* ``cmdp_optimum``: the CMDP optimum on the nominal kernel at the budget (the
  occupancy LP, :func:`~rcmdp_exact.solve_cmdp`);
* ``robust_optimum``: :math:`\max_\pi \min_P V(\pi, P)` without constraints (robust
  policy iteration);
* ``floor_value``: :math:`\min_\pi \min_P V(\pi, P)`, the least value any policy
  can have on the set (the zero of the leaderboard's share; on the s-rectangular set
  the same over the sa-rectangular L1 ball of radius A r that contains it, a lower
  bound);
* ``least``: the least worst-case cost :math:`\min_\pi \max_P C_k(\pi, P)`, and
  ``free``: the worst-case costs of the unconstrained robust optimum (the budget rule's
  two levels);
* ``bracket``: :func:`~rcmdp_exact.rcmdp_bracket` within the time budget of
  :data:`DEFAULT_SETTINGS` (``lower`` <= OPT <= ``upper`` over stationary randomised
  policies, with its lower policy), or, on an instance too large for it
  (``Instance.bracket`` False: Taxi), the bracket of what scales
  (:func:`scaling_bracket`): the best robust-feasible policy among the CMDP policy,
  the least-cost policy and their mixtures with the robust optimum, certified by exact
  robust evaluation, below; the smaller of the CMDP optimum and the robust optimum
  above (the nominal kernel is in the set, so a robust-feasible policy is feasible on
  it and its worst-case value is at most its nominal value).

Jobs write one JSON file and one ``.npz`` file each into a work folder
(:func:`run_jobs`): a run that stops is resumed by running it again (finished jobs are
kept), serially, in ``workers`` local processes or on a Dask cluster (``client=``).
:func:`assemble` writes the versioned data file (``values.json``, the records, and
``policies.npz``, every lower policy and every unconstrained robust optimum) from the
work folder.  ``rcmdp suite certify`` runs both and reports the time.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np

__all__ = ["DEFAULT_SETTINGS", "SCHEMA", "assemble", "certify_job", "job_keys", "key_of",
           "run_jobs", "scaling_bracket"]

#: The version of the data file's layout (``values.json``'s ``schema``).
SCHEMA = 1
#: The bracket's work budget per job (the ground-truth table's: 100 boxes, 20 ascent
#: steps per start; they decide the bracket) and its safety net in seconds (a bracket
#: it stops says so: ``reproducible`` False), the rest of
#: :class:`~rcmdp_exact.BracketSettings` at its defaults.
DEFAULT_SETTINGS = {"max_boxes": 100, "n_ascent": 20, "time_limit": 600.0}
#: The policy class over which the bracket holds.
POLICY_CLASS = "stationary randomised"


def key_of(name: str, kind: str, r: float) -> str:
    """The key of a job, ``"riverswim-6/l1/0.1"`` (also its policies' key prefix)."""
    return f"{name}/{kind}/{float(r):g}"


def _file_stem(key: str) -> str:
    return key.replace("/", "__")


def job_keys(names=None, kinds=None, radii=None) -> list[tuple[str, str, float]]:
    """The jobs (instance, kind, r) of a selection (default: the whole grid; an
    instance only with its own ``kinds``)."""
    from .instances import INSTANCES
    from .sets import KINDS, RADII

    names = list(INSTANCES) if names is None else list(names)
    kinds = KINDS if kinds is None else tuple(kinds)
    radii = RADII if radii is None else tuple(radii)
    return [(n, k, float(r)) for n in names for k in kinds for r in radii
            if k in INSTANCES[n].kinds]


def _num(x):
    """A float for JSON: None for a non-finite number."""
    x = float(x)
    return x if math.isfinite(x) else None


def _nums(a):
    return [_num(v) for v in np.atleast_1d(np.asarray(a, dtype=np.float64))]


def value_range(model) -> float:
    """(max R - min R) / (1 - gamma): the range of discounted values of the model."""
    R = np.asarray(model.R)
    return float((R.max() - R.min()) / (1.0 - model.gamma))


def relative_gap(gap: float, lower: float, model) -> float | None:
    """gap / max(|lower|, 1e-6 * value range): the gap relative to the value reached,
    with a floor for values near 0 (None when the gap is not finite)."""
    if not (math.isfinite(gap) and math.isfinite(lower)):
        return None
    scale = max(abs(lower), 1e-6 * value_range(model), 1e-300)
    return gap / scale


def scaling_bracket(model, uset, lp, robust_free, least_policy, n_theta: int = 4):
    """The bracket of what scales (module notes): a dict with ``lower``, ``upper``,
    ``policy`` (the certified lower policy or None), ``lower_costs``,
    ``lower_method``."""
    from ..robust import robust_evaluate

    d = np.asarray(model.d, dtype=np.float64)
    cands = []
    if lp.get("policy") is not None and np.all(np.isfinite(lp.policy)):
        cands.append(("lp", np.asarray(lp.policy)))
    cands.append(("least worst-case cost", np.asarray(least_policy)))
    free = np.asarray(robust_free.policy)
    for theta in np.linspace(0.0, 1.0, n_theta + 1)[1:]:
        cands.append((f"mixture {theta:.3g} of the robust optimum",
                      theta * free + (1.0 - theta) * np.asarray(least_policy)))
    best = (-np.inf, None, np.full(model.n_constraints, np.nan), "none")
    for method, pol in cands:
        ev = robust_evaluate(model, pol, uset, progress=False)
        costs = np.asarray(ev.costs_worst)
        if np.all(costs <= d) and ev.value > best[0]:
            best = (float(ev.value), pol, costs, method)
    upper = min(float(lp.value) if lp.get("success") else np.inf, float(robust_free.value))
    if lp.get("status") == "infeasible":
        upper = -np.inf
    return dict(lower=best[0], upper=upper, policy=best[1], lower_costs=best[2],
                lower_method=best[3])


def certify_job(name: str, kind: str, r: float, settings: dict | None = None):
    """``(record, policies)`` of one job: the record (a JSON-ready dict, module notes)
    and the policies {"lower": (S, A) or None, "free": (S, A)}."""
    import warnings

    from ..core.mdp import solve_mdp
    from ..ground_truth import rcmdp_bracket, solve_cmdp
    from ..robust import robust_value_iteration
    from .instances import INSTANCES
    from .sets import budget, build_set, set_radius, set_text

    t0 = time.perf_counter()
    st = dict(DEFAULT_SETTINGS, **(settings or {}))
    inst = INSTANCES[name]
    base = inst.build()
    uset = build_set(base, kind, r, inst.support)
    d, lv = budget(base, uset, inst.budget_rule)
    model = base.replace(d=d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        nominal = solve_mdp(model.replace(C=None, d=None))
        lp = solve_cmdp(model)
        free = robust_value_iteration(model.replace(C=None, d=None), uset,
                                      method="policy_iteration", progress=False)
    least_model = model.replace(R=-np.asarray(model.C)[..., 0], C=None, d=None)
    least_policy = robust_value_iteration(least_model, uset, method="policy_iteration",
                                          progress=False).policy
    # the floor of the scores: min over policies and kernels of V = -(max max of -V)
    # (on the s-rectangular set: over the sa-rectangular L1 ball of radius A r that
    # contains it, a lower bound of the same quantity)
    floor_model = model.replace(R=-np.asarray(model.R), C=None, d=None)
    floor_set = uset if kind != "s-l1" else build_set(
        base, "l1", min(2.0, model.n_actions * r), inst.support)
    floor = -float(robust_value_iteration(floor_model, floor_set, method="value_iteration",
                                          progress=False, nature="optimistic").value)
    t1 = time.perf_counter()
    failure = None
    if inst.bracket:
        try:
            br = rcmdp_bracket(model, uset, progress=False, **st)
        except (ArithmeticError, ValueError, RuntimeError) as exc:
            # a solver that refuses its answer (InnerProblemError, a ValueError): the
            # bounds of what scales, and the failure in the record
            failure = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    if inst.bracket and failure is None:
        lower, upper = float(br.lower), float(br.upper)
        pol = None if not np.isfinite(lower) else np.asarray(br.policy)
        b = dict(lower=_num(lower), upper=_num(upper), gap=_num(upper - lower),
                 status=str(br.status), message=str(br.message),
                 lower_method=str(br.get("lower_method", "")),
                 upper_method=str(br.get("upper_method", "")),
                 lower_costs=_nums(br.get("lower_costs", np.nan)),
                 boxes=int(br.get("boxes", 0)), method="rcmdp_bracket", attempted=True)
        given = br.get("relative_gap")  # the bracket's own, after issue 30
        if given is not None and np.isfinite(float(given)):
            b["bracket_relative_gap"] = float(given)
    else:
        sb = scaling_bracket(model, uset, lp, free, least_policy)
        lower, upper, pol = sb["lower"], sb["upper"], sb["policy"]
        why = (f"the branch and bound was not attempted: {inst.skip_bracket}"
               if failure is None else f"the branch and bound failed ({failure}).")
        b = dict(lower=_num(lower), upper=_num(upper), gap=_num(upper - lower),
                 status="not_attempted" if failure is None else "bracket_failed",
                 message=(f"{why} "
                          "The bounds are those of what scales: below, the best certified "
                          "robust-feasible policy among the CMDP policy, the least-cost "
                          "policy and their mixtures with the robust optimum; above, "
                          "min(CMDP optimum, robust optimum)"),
                 lower_method=sb["lower_method"], upper_method="min(cmdp, robust)",
                 lower_costs=_nums(sb["lower_costs"]), boxes=0, method="scaling",
                 attempted=failure is not None)
    gap = upper - lower
    b["relative_gap"] = _num(relative_gap(gap, lower, model)) if np.isfinite(gap) else None
    b["policy_class"] = POLICY_CLASS
    b["seconds"] = time.perf_counter() - t1
    spent = None
    if pol is not None:
        costs = np.asarray(b["lower_costs"], dtype=np.float64)
        spent = [_num(c / dk) if dk > 0 else None for c, dk in zip(costs, d, strict=True)]
    b["budget_spent"] = spent
    record = {
        "key": key_of(name, kind, r), "instance": name, "family": inst.family,
        "kind": kind, "r": float(r), "radius": set_radius(kind, r),
        "support": "nominal" if kind == "kl" else inst.support,
        "set": set_text(kind, r, inst.support),
        "S": model.n_states, "A": model.n_actions, "K": model.n_constraints,
        "gamma": model.gamma, "budget_rule": inst.budget_rule, "budget": _nums(d),
        "least": _nums(lv.least), "free": _nums(lv.free),
        "binds": bool(np.any(lv.free > d + 1e-12 * max(1.0, float(np.max(np.abs(d)))))),
        "nominal_optimum": _num(nominal.value),
        "cmdp_optimum": _num(lp.value) if lp.success else None,
        "cmdp_status": str(lp.status),
        "robust_optimum": _num(free.value),
        "floor_value": _num(floor),
        "bracket": b,
        "settings": st if inst.bracket else {},
        "seconds": time.perf_counter() - t0,
    }
    return record, {"lower": pol, "free": np.asarray(free.policy)}


# --------------------------------------------------------------------------- running
def _write_job(work: Path, record: dict, policies: dict) -> None:
    stem = _file_stem(record["key"])
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in policies.items() if v is not None}
    tmp = work / f".{stem}.{os.getpid()}.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, work / f"{stem}.npz")
    tmp = work / f".{stem}.{os.getpid()}.json"
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, work / f"{stem}.json")  # the JSON last: it marks the job finished


_WARM = []


def warm_up() -> None:
    """Compile the bracket's numba code once per process (a small bracket), so that no
    job's time limit is spent compiling."""
    if _WARM:
        return
    import warnings

    from ..domains import riverswim
    from ..ground_truth import rcmdp_bracket
    from ..uncertainty import l1_ball

    m = riverswim(4, d=[2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rcmdp_bracket(m, l1_ball(m, 0.1, support="nominal"), time_limit=5.0, max_boxes=20,
                      progress=False)
    _WARM.append(True)


def _run_and_write(work: str, name: str, kind: str, r: float, settings: dict) -> dict:
    """A job run and written to the work folder (what a worker calls)."""
    warm_up()
    record, policies = certify_job(name, kind, r, settings)
    _write_job(Path(work), record, policies)
    return record


def finished(work) -> set[str]:
    """The keys of the jobs finished in the work folder."""
    out = set()
    for p in Path(work).glob("*.json"):
        if not p.name.startswith("."):
            try:
                out.add(json.loads(p.read_text())["key"])
            except (ValueError, KeyError, OSError):
                continue
    return out


def _line(rec: dict, done: int, total: int) -> str:
    b = rec["bracket"]
    lo = "-inf" if b["lower"] is None else f"{b['lower']:.6g}"
    up = "inf" if b["upper"] is None else f"{b['upper']:.6g}"
    return (f"[{done}/{total}] {rec['key']}: {b['status']}, [{lo}, {up}], "
            f"{rec['seconds']:.1f} s")


def run_jobs(work, jobs=None, *, settings: dict | None = None, workers: int = 1,
             client=None, progress=None, echo=print) -> dict:
    """Run the jobs (default: the whole grid) that the work folder ``work`` does not hold
    yet; return ``{"run": n, "kept": n, "seconds": wall time}``.

    ``workers`` local processes (1: in this process) or a Dask ``client`` (its workers
    must import this package and reach ``work``, a shared folder).  A bar when
    ``progress`` (default: when standard error is a terminal), else one line per job
    through ``echo``.
    """
    from .._checks import check_client
    from .._progress import progress_default, tqdm

    check_client(client)
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    jobs = job_keys() if jobs is None else list(jobs)
    done = finished(work)
    todo = [j for j in jobs if key_of(*j) not in done]
    st = dict(DEFAULT_SETTINGS, **(settings or {}))
    t0 = time.perf_counter()
    bar_on = progress_default(progress)
    total = len(todo)
    with tqdm(total=total, desc="rcmdp suite certify", disable=not bar_on) as bar:
        def report(rec, i):
            bar.update(1)
            if bar_on:
                bar.set_postfix_str(rec["key"])
            elif echo is not None:
                echo(_line(rec, i, total))

        if client is not None:
            from distributed import as_completed

            futs = [client.submit(_run_and_write, str(work), *j, st, pure=False)
                    for j in todo]
            for i, fut in enumerate(as_completed(futs), 1):
                report(fut.result(), i)
        elif workers > 1 and total > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                futs = [pool.submit(_run_and_write, str(work), *j, st) for j in todo]
                for i, fut in enumerate(as_completed(futs), 1):
                    report(fut.result(), i)
        else:
            for i, j in enumerate(todo, 1):
                report(_run_and_write(str(work), *j, st), i)
    return {"run": total, "kept": len(jobs) - total, "seconds": time.perf_counter() - t0}


def write_data(path, payload: dict) -> None:
    """Write the data file ``path`` (gzip-compressed JSON when it ends in ``.gz``)
    atomically: a temporary file in the same folder, then a rename."""
    import gzip

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=None, separators=(",", ":")).encode()
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    if path.suffix == ".gz":
        # mtime=0: the same values give the same bytes
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(text)
    else:
        tmp.write_bytes(text)
    os.replace(tmp, path)


def _policy_list(a) -> list:
    """An (S, A) policy as nested lists of floats (JSON keeps every bit of a float)."""
    return [[float(x) for x in row] for row in np.asarray(a, dtype=np.float64)]


def assemble(work, out, jobs=None, *, wall_seconds: float | None = None,
             workers: int | None = None, settings: dict | None = None) -> dict:
    """Write the data file ``out`` (``values.json.gz``) from the work folder: the jobs of
    ``jobs`` (default the whole grid) in the grid's order, each record with its policies
    (``record["bracket"]["lower_policy"]``, None without a certified lower side, and
    ``record["free_policy"]``, the unconstrained robust optimum).  A job missing from the
    folder is an error naming it.  Returns the file's header."""
    import datetime
    import platform

    from .. import __version__
    from .instances import INSTANCES
    from .sets import KINDS, RADII

    work, out = Path(work), Path(out)
    jobs = job_keys() if jobs is None else list(jobs)
    records, missing = [], []
    for j in jobs:
        stem = _file_stem(key_of(*j))
        p = work / f"{stem}.json"
        if not p.exists():
            missing.append(key_of(*j))
            continue
        rec = json.loads(p.read_text())
        with np.load(work / f"{stem}.npz") as f:
            rec["bracket"]["lower_policy"] = (_policy_list(f["lower"]) if "lower" in f.files
                                              else None)
            rec["free_policy"] = _policy_list(f["free"])
        records.append(rec)
    if missing:
        raise FileNotFoundError(f"{len(missing)} jobs are not finished in {work} (first: "
                                f"{missing[0]}); run the jobs first")
    header = {
        "format": "rcmdp_exact suite values",
        "schema": SCHEMA,
        "toolkit": __version__,
        "generated": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "workers": workers,
        "settings": dict(DEFAULT_SETTINGS, **(settings or {}), policy_class=POLICY_CLASS),
        "kinds": list(KINDS), "radii": list(RADII),
        "instances": [n for n in INSTANCES if any(r["instance"] == n for r in records)],
        "job_seconds": sum(r["seconds"] for r in records),
        "wall_seconds": wall_seconds,
    }
    write_data(out, {**header, "records": records})
    return header
