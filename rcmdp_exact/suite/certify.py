r"""Regenerate the suite's certified values: one job per (instance, set, level).

A job (:func:`certify_job`) builds the instance (its frozen table), the set of the grid
(:mod:`~rcmdp_exact.suite.sets`) and the budget of the instance's rule, then computes

* ``nominal_optimum``: :math:`\max_\pi V(\pi, \hat P)` (policy iteration, certified);
* ``cmdp_optimum``: the CMDP optimum on the nominal kernel at the budget (the
  occupancy LP, :func:`~rcmdp_exact.solve_cmdp`);
* ``robust_optimum``: :math:`\max_\pi \min_P V(\pi, P)` without constraints (robust
  policy iteration), with ``free_policy``, the robust optimum of least worst-case cost;
* ``floor_value``: :math:`\min_\pi \min_P V(\pi, P)`, the least value any policy
  can have on the set (the zero of the leaderboard's share; on the s-rectangular set
  the same over the sa-rectangular L1 ball of radius A r that contains it, a lower
  bound);
* ``least`` and ``free``: the budget rule's two levels
  (:func:`~rcmdp_exact.domains.classic.cost_levels`), ``budget`` and ``binds``;
* ``caps``: the four certified upper bounds of :func:`.candidates.caps` (robust,
  nominal, CMDP's Lagrangian bound, value range);
* ``bracket``: ``lower`` <= OPT <= ``upper`` over stationary randomised policies:

  1. **closures first**: a budget below the least worst-case cost (one constraint) is
     ``infeasible``; a robust optimum within the budget closes the record at the robust
     optimum (status ``bracket``, ``closure`` says so);
  2. the candidates of :func:`.candidates.candidate_policies` (the robust optimum of
     least cost, the least-cost policy, the CMDP policy, the robust Lagrangian optima
     and mixtures by bisection on the constraint), with those of the other levels of
     the same instance and kind (warm information across the radii, computed in the
     job itself so that a job does not depend on which others have run);
  3. :func:`~rcmdp_exact.rcmdp_bracket` with those candidates and the record's **work
     budget** (:func:`_work_budget`: boxes of the branch and bound; where the gap is
     still open after the first budget, the bracket runs again with the next budget of
     the schedule); the time limit is only a safety net, and a record it stopped says
     so (``reproducible`` False);
  4. ``lower`` is the **exact** worst-case value of the stored ``lower_policy`` (the
     better of the bracket's policy and the best candidate, evaluated here by
     :func:`.candidates.exact`) and ``lower_costs`` its exact worst-case costs;
     ``upper`` the smallest of the bracket's upper side and the caps.

  An instance too large for the branch and bound (``Instance.bracket`` False: Taxi)
  gets steps 1, 2 and 4 (status ``not_attempted``).

Jobs write one JSON file and one ``.npz`` file each into a work folder
(:func:`run_jobs`), atomically; the folder's ``settings.json`` holds the work budget
of the run, and a resume with another budget is refused (one work budget per file).  A
run that stops is resumed by running it again (finished jobs are kept; a damaged job
file is said and recomputed), serially, in ``workers`` local processes (which end with
their parent) or on a Dask cluster (``client=``).  :func:`assemble` writes the
versioned data file from the work folder.  ``rcmdp suite certify`` runs both.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

from .store import SCHEMA, key_of

__all__ = ["DEFAULT_BUDGET", "SCHEMA",
           "check_budget", "extends", "finished", "job_keys",
           "warm_up",]

#: The policy class over which the bracket holds.
POLICY_CLASS = "stationary randomised"
#: The relative gap a record aims at (a record above it is an open problem).
_TARGET_GAP = 0.01

#: The work budget of a run (the bracket's options that decide its answer, the same on
#: any machine): ``schedule``, the branch and bound's box budgets tried in turn while
#: the relative gap is above :data:`_TARGET_GAP` (the bracket runs again from the start
#: with the next, the candidates unchanged; an empty schedule: no branch and bound, the
#: closures, candidates and caps alone); ``bracket``, the other options given to
#: :func:`~rcmdp_exact.rcmdp_bracket`; ``time_limit``, the safety net per bracket run
#: (seconds; a run it stops is marked not reproducible).  ``more``: schedules of their
#: own for a kind of set (``"kl"``), an instance (``"machine-20"``) or both
#: (``"machine-20/s-l1"``), the most specific winning: a box of an s-rectangular or a
#: KL set costs tens of times one of an L1 ball.  The schedules end at ten times the
#: first pass's end (2026-12-07: the open records' gaps fall with more boxes, except on
#: the two s-rectangular records measured first, which stayed flat: docs/ground_truth.md,
#: section 3.10, with its addendum on machine replacement's, which fall), so a
#: resume runs the records the first pass left open again; inventory-50 (an hour a
#: record already) keeps its own.  The s-rectangular sets' schedule ends at 2100 boxes
#: (2026-12-07) for the lower side, not the upper: the bracket's deeper search of the
#: lower side (``deep_after``: 2000 boxes) never ran within [200, 600], and local
#: searches from random policies found better policies than 5 of the 7 open
#: s-rectangular records measured store (``benchmarks/bench_open_records.py
#: --restarts``; docs/suite.md, "Open problems").  It goes on to 6000 boxes
#: (2026-12-07): after the compiled chord search halved an s-rectangular box's cost,
#: machine replacement's upper sides were still falling at 2100 (section 3.10's addendum).
DEFAULT_BUDGET = {
    "schedule": [2000, 6000, 20000, 60000],
    "bracket": {"dual_evaluations": 0, "n_ascent": 20},
    "time_limit": 3600.0,
    "more": {"kl": [300, 1000, 3000, 10000], "s-l1": [200, 600, 2100, 6000],
             "frozenlake-8x8": [300, 1000, 3000, 10000], "inventory-50": [100, 300]},
}


def check_budget(budget: dict) -> dict:
    """A work budget (:data:`DEFAULT_BUDGET`'s keys) checked: a non-empty increasing
    schedule of box budgets >= 1, a positive time limit; an InputError naming what is
    wrong otherwise.  Returns it with the defaults filled in."""
    from .._checks import InputError
    from .instances import INSTANCES

    if not isinstance(budget, dict):
        raise InputError(f"a work budget is a dict like {DEFAULT_BUDGET!r}; got "
                         f"{type(budget).__name__}")
    bad = set(budget) - set(DEFAULT_BUDGET)
    if bad:
        raise InputError(f"unknown work budget keys {sorted(bad)}; give "
                         f"{', '.join(DEFAULT_BUDGET)}")
    out = {**DEFAULT_BUDGET, **budget}

    def schedule(sched, where):
        if not isinstance(sched, list | tuple) or not all(
                isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in sched):
            raise InputError(f"{where} must be a list of box budgets >= 1 (integers; an "
                             f"empty list: no branch and bound); got {sched!r}")
        if list(sched) != sorted(set(sched)):
            raise InputError(f"{where} must increase; got {list(sched)}")
        return [int(b) for b in sched]

    out["schedule"] = schedule(out["schedule"], "the schedule")
    from .sets import KINDS, LEVELS

    def selector(key):
        name, kind, level = [*str(key).split("/"), "", ""][:3]
        if str(key).count("/") > 2:
            return False
        if level:
            return name in INSTANCES and kind in KINDS and level in {f"{r:g}" for r in
                                                                      LEVELS}
        return (name in INSTANCES and (not kind or kind in KINDS)) or \
            (name in KINDS and not kind)

    if not isinstance(out["more"], dict) or not all(selector(k) for k in out["more"]):
        raise InputError(f"'more' maps a kind, an instance, INSTANCE/KIND or "
                         f"INSTANCE/KIND/LEVEL (one record) to a schedule; got "
                         f"{out['more']!r}")
    out["more"] = {k: schedule(v, f"the schedule of {k}") for k, v in out["more"].items()}
    tl = out["time_limit"]
    if not isinstance(tl, int | float) or isinstance(tl, bool) or not math.isfinite(tl) \
            or tl <= 0:
        raise InputError(f"the time limit (the safety net per bracket) must be a positive "
                         f"number of seconds; got {tl!r}")
    out["time_limit"] = float(tl)
    if not isinstance(out["bracket"], dict):
        raise InputError(f"'bracket' holds options of rcmdp_bracket; got {out['bracket']!r}")
    return out


def _work_budget(name: str, kind: str, level: float, budget: dict | None = None) -> dict:
    """The work budget of the job (``name``, ``kind``, ``level``): ``{"schedule": [...],
    "bracket": {...}, "time_limit": s}`` (the most specific schedule of ``more``:
    ``name/kind/level`` (one record), ``name/kind``, then ``name``, then ``kind``, else
    the default)."""
    b = check_budget(DEFAULT_BUDGET if budget is None else budget)
    more = b["more"]
    sched = more.get(key_of(name, kind, level), more.get(
        f"{name}/{kind}", more.get(name, more.get(kind, b["schedule"]))))
    return {"schedule": list(sched), "bracket": dict(b["bracket"]),
            "time_limit": b["time_limit"]}


def _file_stem(key: str) -> str:
    return key.replace("/", "__")


def job_keys(names=None, kinds=None, levels=None) -> list[tuple[str, str, float]]:
    """The jobs (instance, kind, level) of a selection (default: the whole grid; an
    instance only with its own ``kinds``)."""
    from .instances import INSTANCES
    from .sets import KINDS, LEVELS

    names = list(INSTANCES) if names is None else list(names)
    kinds = KINDS if kinds is None else tuple(kinds)
    levels = LEVELS if levels is None else tuple(levels)
    return [(n, k, float(r)) for n in names for k in kinds for r in levels
            if k in INSTANCES[n].kinds]


def _num(x):
    """A float for JSON: None for a non-finite number."""
    x = float(x)
    return x if math.isfinite(x) else None


def _nums(a):
    return [_num(v) for v in np.atleast_1d(np.asarray(a, dtype=np.float64))]


def relative_gap(gap: float, lower: float, model) -> float | None:
    """gap / max(|lower|, 1e-6 * value range) (the bracket's definition,
    :func:`~rcmdp_exact.ground_truth.bracket.gap_scale`), None when not finite."""
    from ..ground_truth.bracket import gap_scale, value_range

    if not (math.isfinite(gap) and math.isfinite(lower)):
        return None
    return gap / max(gap_scale(lower, value_range(model)), 1e-300)


# --------------------------------------------------------------------------- one job
def _levels_of(base, kind, level, inst):
    """(model with the budget, set, cost levels) of one (kind, level)."""
    from .sets import budget, build_set

    uset = build_set(base, kind, level, inst.support)
    d, lv = budget(base, uset, inst.budget_rule)
    return base.replace(d=d), uset, lv


def _warm_candidates(base, name, kind, level, inst):
    """The candidates of the other levels of the same instance and kind (warm
    information across the radii): their least-cost policy and CMDP policy, computed
    here (so the job does not depend on which other jobs have run)."""
    from ..ground_truth import solve_cmdp
    from ..robust import robust_value_iteration
    from .sets import LEVELS

    out = []
    for other in LEVELS:
        if abs(other - level) < 1e-12:
            continue
        try:
            model, uset, _lv = _levels_of(base, kind, other, inst)
        except RuntimeError:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            C = np.asarray(model.C)
            least = robust_value_iteration(model.replace(R=-C[..., 0], C=None, d=None),
                                           uset, method="policy_iteration",
                                           progress=False).policy
            out.append((f"least worst-case cost at level {other:g}", least))
            lp = solve_cmdp(model)
        if lp.get("policy") is not None and np.all(np.isfinite(lp.policy)):
            out.append((f"cmdp lp at level {other:g}", np.asarray(lp.policy)))
    return out


def certify_job(name: str, kind: str, level: float, budget: dict | None = None):
    """``(record, policies)`` of one job (module notes): the record (a JSON-ready dict)
    and the policies {"lower": (S, A) or None, "free": (S, A)}."""
    from ..core.mdp import solve_mdp
    from ..ground_truth import solve_cmdp
    from ..robust import robust_value_iteration
    from .candidates import candidate_policies, caps, exact, feasible
    from .instances import INSTANCES
    from .sets import build_set, radius_of, set_text

    t0 = time.perf_counter()
    work = _work_budget(name, kind, level, budget)
    inst = INSTANCES[name]
    base = inst.build()
    model, uset, lv = _levels_of(base, kind, level, inst)
    d = np.asarray(model.d, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        nominal = solve_mdp(model.replace(C=None, d=None))
        lp = solve_cmdp(model)
        # the floor of the scores: min over policies and kernels of V = -(max max of -V)
        # (on the s-rectangular set: over the sa-rectangular L1 ball of radius A r that
        # contains it, a lower bound of the same quantity)
        floor_set = uset if kind != "s-l1" else build_set(
            base, "l1", min(2.0, model.n_actions * level), inst.support)
        floor = -float(robust_value_iteration(model.replace(R=-np.asarray(model.R), C=None,
                                                            d=None), floor_set,
                                              method="value_iteration", progress=False,
                                              nature="optimistic").value)
    cap = caps(model, uset, lp, lv.robust_optimum, lv.box.error)
    t1 = time.perf_counter()
    free_policy = np.asarray(lv.policies["free"], dtype=np.float64)
    scale = np.maximum(1.0, np.abs(d))
    infeasible = bool(np.any(lv.least > d + 1e-9 * scale))
    b = dict(closure=None, attempted=False, boxes=0, runs=[], reproducible=True)
    pol = None
    if infeasible:
        k = int(np.argmax(lv.least - d))
        lower, upper = -np.inf, -np.inf
        b.update(status="infeasible", lower_method="none",
                 upper_method="least worst-case cost",
                 lower_costs=_nums(lv.least),
                 message=f"infeasible: the least worst-case cost of constraint {k} is "
                         f"{lv.least[k]:.10g} > budget {d[k]:.10g}, so no policy is "
                         f"robust-feasible and OPT = -inf")
    else:
        extra = _warm_candidates(base, name, kind, level, inst)
        inc = candidate_policies(model, uset, lv, lp, extra=extra)
        pol_method = inc.method
        upper_br, upper_method = np.inf, "none"
        if inc.method == "robust optimum of least cost":
            b.update(closure="a robust optimum (of least worst-case cost) is "
                             "robust-feasible: OPT is the robust optimum")
        elif inst.bracket and work["schedule"]:
            upper_br, upper_method, inc = _bracket_runs(model, uset, inc, work, b, t1)
            pol_method = inc.method
        pol = inc.policy
        if pol is not None:  # the stored policy, evaluated here: its exact numbers
            lower, costs = exact(model, uset, pol)
            if not feasible(costs, d):
                raise RuntimeError(f"{key_of(name, kind, level)}: the stored policy is not "
                                   f"robust-feasible by exact evaluation ({costs} > {d})")
        else:
            lower, costs = -np.inf, np.full(model.n_constraints, np.nan)
        which, upper = min([("bracket", upper_br), *cap.items()], key=lambda kv: kv[1])
        upper_method = upper_method if which == "bracket" else f"cap: {which}"
        if upper < lower - 1e-9 * max(1.0, abs(lower)):
            raise RuntimeError(f"{key_of(name, kind, level)}: upper {upper!r} < lower "
                               f"{lower!r}: a bound is wrong")
        upper = max(upper, lower)  # equal to rounding: the closed bracket [lower, lower]
        rel = relative_gap(upper - lower, lower, model) if pol is not None else None
        if pol is None:
            status = "no_feasible_policy"
        elif b.get("closure") or (rel is not None and rel <= 1e-4):
            status = "bracket"
        elif not inst.bracket or not work["schedule"]:
            status = "not_attempted"
        else:
            status = "budget_exhausted"
        b.update(status=status, lower_method=pol_method, upper_method=upper_method,
                 lower_costs=_nums(costs), n_candidates=len(inc.pool),
                 message=_message(status, b, inst, rel))
    gap = upper - lower
    b.update(lower=_num(lower), upper=_num(upper),
             gap=_num(gap) if math.isfinite(gap) else None,
             relative_gap=_num(relative_gap(gap, lower, model))
             if math.isfinite(gap) and math.isfinite(lower) else None,
             policy_class=POLICY_CLASS, seconds=time.perf_counter() - t1)
    b["budget_spent"] = None if pol is None else [
        _num(c / dk) if dk > 0 else None
        for c, dk in zip(b["lower_costs"], d, strict=True)]
    record = {
        "key": key_of(name, kind, level), "instance": name, "family": inst.family,
        "kind": kind, "level": float(level), "radius": radius_of(kind, level),
        "support": "nominal" if kind == "kl" else inst.support,
        "set": set_text(kind, level, inst.support),
        "S": model.n_states, "A": model.n_actions, "K": model.n_constraints,
        "gamma": model.gamma, "budget_rule": inst.budget_rule, "budget": _nums(d),
        "least": _nums(lv.least), "free": _nums(lv.free),
        "binds": bool(np.any(lv.free > d + 1e-9 * scale)),
        "nominal_optimum": _num(nominal.value),
        "cmdp_optimum": _num(lp.value) if lp.success else None,
        "cmdp_status": str(lp.status),
        "robust_optimum": _num(lv.robust_optimum),
        "floor_value": _num(floor),
        "caps": {k: _num(v) for k, v in cap.items()},
        "bracket": b,
        "work": work if inst.bracket else {},
        "seconds": time.perf_counter() - t0,
    }
    return record, {"lower": pol, "free": free_policy,
                    "least": np.asarray(lv.policies["least"], dtype=np.float64)}


def _bracket_runs(model, uset, inc, work: dict, b: dict, t1: float):
    """Run the bracket over the work budget's schedule (module notes, step 3); returns
    (its upper side, its upper method, the incumbent with its policy offered).  Fills
    ``b`` with the runs, boxes, reproducibility and a failure if the solver refused."""
    from ..ground_truth import rcmdp_bracket

    best = inc.best()
    cands = np.stack(best) if best else None
    upper, method = np.inf, "none"
    for boxes in work["schedule"]:
        opts = dict(work["bracket"], max_boxes=int(boxes), time_limit=work["time_limit"])
        b["attempted"] = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                br = rcmdp_bracket(model, uset, candidates=cands, progress=False, **opts)
        except (ArithmeticError, ValueError, RuntimeError) as exc:
            b["failure"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            break
        run = dict(max_boxes=int(boxes), boxes=int(br.get("boxes", 0)),
                   lower=_num(br.lower), upper=_num(br.upper), status=str(br.status),
                   lower_method=str(br.get("lower_method", "")),
                   seconds=float(br.get("seconds", np.nan)),
                   stopped_by_time_limit=bool(br.get("stopped_by_time_limit",
                                                     br.get("stopped") == "time")))
        b["runs"].append(run)
        b["boxes"] = run["boxes"]
        b["reproducible"] = b["reproducible"] and not run["stopped_by_time_limit"]
        if float(br.upper) < upper:
            upper, method = float(br.upper), str(br.get("upper_method", "branch and bound"))
        pol = br.get("policy")
        if pol is not None and np.isfinite(float(br.lower)):
            inc.offer(pol, f"bracket: {run['lower_method']}")
        rel = relative_gap(upper - inc.value, inc.value, model) if \
            np.isfinite(inc.value) else None
        run["relative_gap"] = _num(rel) if rel is not None else None  # what ends the schedule
        if br.status in ("bracket", "infeasible", "no_feasible_policy") or (
                rel is not None and rel <= _TARGET_GAP):
            break
    return upper, method, inc


def _message(status: str, b: dict, inst, rel) -> str:
    if b.get("closure"):
        return b["closure"]
    if status == "not_attempted":
        why = inst.skip_bracket if not inst.bracket else "the work budget has no boxes."
        return (f"the branch and bound was not attempted: {why} Below: the best certified "
                f"robust-feasible candidate; above: the caps")
    if b.get("failure"):
        return f"the branch and bound failed ({b['failure']}); the candidates and the caps"
    runs = b.get("runs") or []
    last = runs[-1] if runs else {}
    spent = f"{last.get('boxes', 0)} boxes of a budget of {last.get('max_boxes', 0)}"
    if status == "bracket":
        return f"closed ({spent})"
    if status == "no_feasible_policy":
        return f"no robust-feasible policy certified ({spent})"
    return f"open: relative gap {rel:.3g} after {spent}" if rel is not None else spent


# --------------------------------------------------------------------------- work folder
SETTINGS_FILE = "settings.json"


def _write_job(work: Path, record: dict, policies: dict) -> None:
    from .._io import save_json, save_npz

    stem = _file_stem(record["key"])
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in policies.items() if v is not None}
    save_npz(work / f"{stem}.npz", arrays, "rcmdp_exact.suite.Job/1")
    save_json(work / f"{stem}.json", json.dumps(record, indent=1))  # last: it marks done


def _read_job(work, key: str):
    """``(record, policies)`` of a finished job of the work folder, or a LoadError
    naming the damaged file."""
    from .._io import LoadError, load_npz

    stem = _file_stem(key)
    path = Path(work) / f"{stem}.json"
    try:
        rec = json.loads(path.read_text())
        if rec.get("key") != key:
            raise ValueError(f"it holds the job {rec.get('key')!r}")
    except (OSError, ValueError, AttributeError) as exc:
        raise LoadError(f"{str(path)!r} is not a finished job of rcmdp suite certify "
                        f"({exc})") from None
    arrays = load_npz(Path(work) / f"{stem}.npz", "rcmdp_exact.suite.Job/1",
                      "the policies of a finished job of rcmdp suite certify")
    if "free" not in arrays or "least" not in arrays:
        raise LoadError(f"{str(Path(work) / (stem + '.npz'))!r} lacks the free or the "
                        f"least-cost policy; it is not a finished job of rcmdp suite certify")
    return rec, {"lower": arrays.get("lower"), "free": arrays["free"],
                 "least": arrays["least"]}


def finished(work, jobs=None, echo=None) -> set[str]:
    """The keys of the jobs finished in the work folder (of ``jobs``, default every
    job file there).  A damaged job file is said through ``echo``, moved aside (its
    name ends in ``.damaged``) and its job left to be recomputed."""
    from .._io import LoadError

    work = Path(work)
    keys = [key_of(*j) for j in jobs] if jobs is not None else [
        json.loads(p.read_text()).get("key", "") for p in work.glob("*.json")
        if not p.name.startswith(".") and p.name != SETTINGS_FILE]
    out = set()
    for key in keys:
        stem = _file_stem(key)
        if not (work / f"{stem}.json").exists():
            continue
        try:
            _read_job(work, key)
            out.add(key)
        except LoadError as exc:
            if echo is not None:
                echo(f"rcmdp suite certify: {exc}; recomputing the job {key}")
            _set_aside(work / f"{stem}.json", ".damaged")
    return out


def extends(new: dict, old: dict) -> bool:
    """Whether the work budget ``new`` extends ``old`` (both checked): the same bracket
    options and safety net, and for every job of the grid a schedule that begins with
    the old one (more boxes tried after the same runs: a record the old schedule closed
    is the same under the new one)."""
    if new["bracket"] != old["bracket"] or new["time_limit"] != old["time_limit"]:
        return False
    for j in job_keys():
        a, b = _work_budget(*j, old)["schedule"], _work_budget(*j, new)["schedule"]
        if b[:len(a)] != a:
            return False
    return True


def _same_under(rec: dict, new_work: dict) -> bool:
    """Whether a finished record certified with its ``work`` is what the job gives under
    ``new_work`` (a schedule that begins with the record's): its bracket stopped before
    the end of its schedule, or closed at its last run, or ended its last run within
    :data:`_TARGET_GAP` (the gap that run stored, which stops a schedule: a record
    certified before runs stored it is run again), or was never given a branch and
    bound for a reason the schedule does not change (a closure, infeasibility, an
    instance without one)."""
    old = rec.get("work") or {}
    if old == new_work:
        return True
    b = rec["bracket"]
    runs = b.get("runs") or []
    sched = old.get("schedule", [])
    if not runs:
        return bool(b.get("closure")) or b["status"] == "infeasible" or not new_work
    last = runs[-1]
    within = last.get("relative_gap") is not None and last["relative_gap"] <= _TARGET_GAP
    return bool(b.get("failure")) or len(runs) < len(sched) or within or last["status"] in (
        "bracket", "infeasible", "no_feasible_policy")


def _extend_folder(work: Path, old: dict, new: dict, echo=None) -> list[str]:
    """Carry the finished jobs of ``work`` from the work budget ``old`` over to ``new``,
    which :func:`extends` it: a job whose record the new schedule would give unchanged
    keeps its record (its ``work`` set to the new budget's); one whose last run ended
    open with its whole schedule spent is set aside (``*.superseded``) to be run again
    with the longer schedule.  Returns the keys set aside."""
    from .._io import save_json

    redo = []
    for path in sorted(work.glob("*.json")):
        if path.name == SETTINGS_FILE or path.name.startswith("."):
            continue
        try:
            rec = json.loads(path.read_text())
            name, kind, level = rec["instance"], rec["kind"], float(rec["level"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a damaged job file: finished() says so and recomputes it
        from .instances import INSTANCES

        new_work = _work_budget(name, kind, level, new) if INSTANCES[name].bracket else {}
        if rec.get("work") == new_work:
            continue
        try:
            same = _same_under(rec, new_work)
        except (TypeError, KeyError, AttributeError, IndexError) as exc:
            # its bracket's runs are not what a job writes: recomputed, as finished()
            # treats a damaged job file
            if echo is not None:
                echo(f"rcmdp suite certify: {str(path)!r} is not a finished job of rcmdp "
                     f"suite certify (its bracket's runs: {type(exc).__name__}: {exc}); "
                     f"recomputing the job {rec['key']}")
            _set_aside(path, ".damaged")
            continue
        if same:
            rec["work"] = new_work
            save_json(path, json.dumps(rec, indent=1))
            continue
        redo.append(rec["key"])
        _set_aside(path, ".superseded")
    if echo is not None and redo:
        echo(f"rcmdp suite certify: the work budget of {str(work)!r} extended; "
             f"{len(redo)} open records run again with their longer schedules "
             f"({', '.join(redo)})")
    return redo


def _set_aside(path: Path, suffix: str) -> None:
    """Move a job's files aside (their names end in ``suffix``): the job is run again."""
    for ext in (".npz", ".json"):  # the .json last: it marks the job done
        p = path.with_suffix(ext)
        if p.exists():
            p.replace(p.with_name(p.name + suffix))


def _check_settings(work: Path, budget: dict, echo=None) -> None:
    """One work budget per work folder: the first run writes it; a resume must give the
    same, or one that :func:`extends` it (the folder's jobs are carried over by
    :func:`_extend_folder` and ``settings.json`` keeps the earlier budgets under
    ``"extends"``); an InputError naming both otherwise."""
    from .._checks import InputError
    from .._io import save_json

    path = work / SETTINGS_FILE
    mine = {"format": "rcmdp_exact.suite.CertifySettings/1", "schema": SCHEMA,
            "budget": budget}
    if path.exists():
        try:
            theirs = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{str(path)!r} is damaged ({exc}); the work budget of the "
                             f"jobs in {str(work)!r} is unknown: delete the folder to "
                             f"start again") from None
        try:
            old = check_budget(theirs["budget"]) if theirs.get("schema") == SCHEMA else None
        except (InputError, KeyError, TypeError):
            old = None
        if old == budget:
            return
        if old is None or not extends(budget, old):
            raise InputError(
                f"the work folder {str(work)!r} holds jobs certified with another work "
                f"budget ({json.dumps(theirs.get('budget'))}; this run: "
                f"{json.dumps(budget)}); one file holds one work budget (a resume may "
                f"only add box budgets after a schedule's): resume with the same "
                f"settings, give another --out, or delete the folder to start again")
        _extend_folder(work, old, budget, echo=echo)
        mine["extends"] = [*theirs.get("extends", []), theirs["budget"]]
    save_json(path, json.dumps(mine, indent=1))


def _seeded(payload: dict, source: Path, budget: dict) -> list:
    """The records of the data file ``payload`` (read from ``source``) that
    :func:`seed_folder` makes finished jobs of, each as ``(record, policies)``, all
    checked before any is written: the header's ``filled`` and ``extends``, each
    record's key (its instance, kind and level of the grid, once in the file) and the
    fields a finished job needs (its bracket, its ``work``: the one the file's work budget
    ``budget`` gives it, its seconds, its policies: finite (S, A) distributions of its
    instance's model).  An InputError naming the
    record and the field otherwise."""
    import numbers

    from .._checks import InputError, as_float_array, check_distributions
    from .instances import INSTANCES
    from .sets import LEVELS

    def bad(what):
        return InputError(f"{str(source)!r} is damaged: {what}; give a data file written by "
                          f"rcmdp suite certify")

    filled = payload.get("filled")
    if filled is None:
        filled = {"keys": []}
    if not isinstance(filled, dict) or not isinstance(filled.get("keys"), list) or \
            not all(isinstance(k, str) for k in filled["keys"]):
        raise bad(f"its header's 'filled' is not {{'keys': [KEY, ...], ...}} (got "
                  f"{json.dumps(filled)[:80]})")
    extends = payload.get("extends", [])
    try:
        if not isinstance(extends, list):
            raise InputError(f"got {json.dumps(extends)[:80]}")
        for e in extends:
            check_budget(e)
    except InputError as exc:
        raise bad(f"its header's 'extends' is not a list of work budgets ({exc})") from None
    levels = {f"{r:g}" for r in LEVELS}
    seen, out, models = set(), [], {}
    for i, rec in enumerate(payload["records"]):
        key, name, kind, level = (rec.get(f) for f in ("key", "instance", "kind", "level"))
        if not isinstance(name, str) or name not in INSTANCES:
            raise bad(f"its record {i} ({key!r}) is of the instance {name!r}, not one of "
                      f"the suite's")
        if not isinstance(kind, str) or kind not in INSTANCES[name].kinds:
            raise bad(f"its record {i} ({key!r}) has the set kind {kind!r}; {name} has "
                      f"{', '.join(INSTANCES[name].kinds)}")
        if isinstance(level, bool) or not isinstance(level, numbers.Real) or \
                f"{level:g}" not in levels:
            raise bad(f"its record {i} ({key!r}) has the level {level!r}, not one of the "
                      f"grid's ({', '.join(sorted(levels))})")
        if key != key_of(name, kind, level):
            raise bad(f"its record {i} has the key {key!r} but is of "
                      f"{key_of(name, kind, level)} (its instance, kind and level)")
        if key in seen:
            raise bad(f"the record {key} is in it twice")
        seen.add(key)
        if key in filled["keys"]:
            continue
        b = rec["bracket"]
        if not isinstance(b, dict) or not isinstance(b.get("status"), str) or \
                not isinstance(b.get("runs", []), list) or \
                not all(isinstance(r, dict) and "status" in r for r in b.get("runs", [])):
            raise bad(f"the record {key} has no bracket of rcmdp suite certify (a dict "
                      f"with its status and runs)")
        missing = [f for f in ("free_policy", "least_policy", "seconds") if f not in rec]
        missing += ["bracket's lower_policy"] * ("lower_policy" not in b)
        if missing:
            raise bad(f"the record {key} lacks its {', '.join(missing)}")
        sec = rec["seconds"]
        if isinstance(sec, bool) or not isinstance(sec, numbers.Real) or \
                not math.isfinite(sec) or sec < 0:
            raise bad(f"the record {key} has seconds {sec!r}, not a number of seconds")
        work = rec.get("work")
        if not isinstance(work, dict):
            raise bad(f"the record {key} has no valid work budget (its work is "
                      f"{json.dumps(work)[:80]}, not a dict)")
        work = {k: v for k, v in work.items() if k != "options"}
        own = _work_budget(name, kind, level, budget) if INSTANCES[name].bracket else {}
        if work != own:
            raise bad(f"the record {key} was certified with the work budget "
                      f"{json.dumps(work)[:200]}, not the one the file's budget gives it "
                      f"({json.dumps(own)})")
        if name not in models:
            m = INSTANCES[name].build()
            models[name] = (m.S, m.A)
        S, A = models[name]
        pols = {}
        for what, field in (("lower", "lower_policy"), ("free", "free_policy"),
                            ("least", "least_policy")):
            pol = b[field] if what == "lower" else rec[field]
            if pol is None and what == "lower":
                if b.get("lower") is not None:
                    raise bad(f"the record {key} has a lower side {b['lower']!r} but no "
                              f"lower_policy")
                pols[what] = None
                continue
            try:
                arr = as_float_array(pol, f"{key} {field}", "it holds (S, A) nested lists",
                                     shape=(S, A), axes=("state", "action"))
                pols[what] = check_distributions(arr, f"{key} {field}", ("state",))
            except InputError as exc:
                raise bad(str(exc)) from None
        out.append((rec, pols))
    stray = sorted(set(filled["keys"]) - seen)
    if stray:
        raise bad(f"its header's 'filled' names {len(stray)} keys that are none of its "
                  f"records (first: {stray[0]!r})")
    return out


def _alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's, or no such number: keep its folder
        return True
    return True


def seed_folder(work, source, budget: dict) -> int:
    """Make the work folder ``work`` (which must not exist) from the data file
    ``source`` (e.g. the shipped one, on a machine without the folder that made it):
    each record certified there, not one of its header's ``filled`` stand-ins, becomes a
    finished job, and ``source``'s work budget the folder's, so that a run with
    ``budget`` (``source``'s, or one that :func:`extends` it) keeps what it does not
    change and runs the rest.  The folder is written beside ``work`` and renamed into
    place last: an interrupted seeding leaves none.  Returns the number of jobs.

    A LoadError names a ``source`` that is not a data file; an InputError one of other
    instances (their checksums differ from the frozen ones), of a work budget that
    ``budget`` does not extend, a damaged one (:func:`_seeded`: a record, a field), one
    inside a seeding folder, or a work folder another run made meanwhile."""
    import shutil
    import socket

    from .._checks import InputError
    from .._io import save_json
    from .frozen import CHECKSUMS
    from .store import data

    budget = check_budget(budget)
    work, source = Path(work), Path(source)
    if work.exists():
        raise InputError(f"the work folder {str(work)!r} exists: resume from it (the same "
                         f"command without --resume-from), or give another --out")
    stem = f".{work.name}.seeding"
    inside = [q for q in Path(os.path.abspath(source)).parents
              if q.parent == Path(os.path.abspath(work)).parent and q.name.startswith(stem)]
    if inside:
        raise InputError(f"{str(source)!r} lies in {str(inside[0])!r}, the folder an "
                         f"interrupted --resume-from left and the next one deletes; move "
                         f"the file out of it")
    payload = data(source)
    frozen = json.loads(CHECKSUMS.read_text())["sha256"]
    sha = payload.get("instances_sha256")
    if not isinstance(sha, dict):
        raise InputError(f"{str(source)!r} is damaged: its header has no instances_sha256 "
                         f"(the checksums of the instances it was certified on); give a "
                         f"data file written by rcmdp suite certify")
    other = sorted(n for n, h in sha.items() if frozen.get(n) != h)
    if other:
        raise InputError(f"{str(source)!r} was certified on other instances than this "
                         f"version's ({', '.join(map(str, other))} differ from the frozen "
                         f"tables); certify them anew without --resume-from")
    try:
        if not isinstance(payload["budget"], dict):
            raise InputError(f"it is {json.dumps(payload['budget'])[:80]}, not a dict")
        if set(payload["budget"]) != set(DEFAULT_BUDGET):
            raise InputError(f"it has the keys {sorted(payload['budget'])}, not "
                             f"{', '.join(DEFAULT_BUDGET)}")
        theirs = check_budget(payload["budget"])
    except (InputError, KeyError, TypeError) as exc:
        raise InputError(f"{str(source)!r} has no valid work budget ({exc}); give a data "
                         f"file written by rcmdp suite certify") from None
    if theirs != budget and not extends(budget, theirs):
        raise InputError(
            f"this run's work budget ({json.dumps(budget)}) does not extend the one of "
            f"{str(source)!r} ({json.dumps(theirs)}): a resume may only add box budgets "
            f"after each schedule; give the same settings or more boxes at the end")
    seeded = _seeded(payload, source, theirs)
    unsigned = sorted({rec["instance"] for rec, _ in seeded} - set(sha))
    if unsigned:
        raise InputError(f"{str(source)!r} is damaged: its header has no checksum of "
                         f"{', '.join(unsigned)}, whose records it holds; give a data file "
                         f"written by rcmdp suite certify")
    # one seeding folder per process (two resumes of one --out at once do not write
    # into each other's); those of this machine's processes that are gone (a SIGKILL)
    # are deleted (another machine's, on a shared folder, are not: its pids are not ours)
    host = socket.gethostname()
    for old in work.parent.glob(f"{stem}*"):
        where, _, pid = old.name[len(stem) + 1:].rpartition(".")
        if old.name == stem or (where == host and pid.isdigit() and not _alive(int(pid))):
            shutil.rmtree(old, ignore_errors=True)
    tmp = work.with_name(f"{stem}.{host}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        n = 0
        for rec, pols in seeded:
            rec = json.loads(json.dumps(rec))  # a copy
            for field in ("free_policy", "least_policy"):
                rec.pop(field)
            rec["bracket"].pop("lower_policy")
            if rec.get("work"):
                rec["work"].pop("options", None)  # assemble adds them
            _write_job(tmp, rec, pols)
            n += 1
        save_json(tmp / SETTINGS_FILE, json.dumps(
            {"format": "rcmdp_exact.suite.CertifySettings/1", "schema": SCHEMA,
             "budget": theirs, "extends": payload.get("extends", [])}, indent=1))
        try:
            tmp.rename(work)
        except OSError:
            if not work.exists():
                raise
            raise InputError(f"the work folder {str(work)!r} was made by another run while "
                             f"this one read {str(source)!r}: resume from it (the same "
                             f"command without --resume-from), or give another --out"
                             ) from None
    except BaseException:  # a full disk, a signal, another run: no half folder left
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return n


def _line(rec: dict, done: int, total: int) -> str:
    b = rec["bracket"]
    lo = "-inf" if b["lower"] is None else f"{b['lower']:.6g}"
    up = ("-inf" if b["status"] == "infeasible" else "inf") if b["upper"] is None else \
        f"{b['upper']:.6g}"
    return (f"[{done}/{total}] {rec['key']}: {b['status']}, [{lo}, {up}], "
            f"{rec['seconds']:.1f} s")


_WARM = []


def warm_up() -> None:
    """Compile the bracket's numba code once per process (a small bracket), so that a
    job's safety net is not spent compiling."""
    if _WARM:
        return
    from ..domains import riverswim
    from ..ground_truth import rcmdp_bracket
    from ..uncertainty import SRectL1Ball, l1_ball

    m = riverswim(4, d=[2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rcmdp_bracket(m, l1_ball(m, 0.1, support="nominal"), max_boxes=20,
                      progress=False)
        # the s-rectangular ball's compiled box update (the chord search)
        box = np.full((m.n_states, m.n_actions), 0.25)
        SRectL1Ball(m.P, 0.1).bellman_max_min(m.R, 0.5 * box, 2.0 * box, method="dual")
    _WARM.append(True)


def _run_and_write(work: str, name: str, kind: str, level: float, budget: dict) -> dict:
    """A job run and written to the work folder (what a worker calls)."""
    warm_up()
    record, policies = certify_job(name, kind, level, budget)
    _write_job(Path(work), record, policies)
    return record


def run_jobs(work, jobs=None, *, budget: dict | None = None, workers: int = 1,
             client=None, progress=None, echo=print) -> dict:
    """Run the jobs (default: the whole grid) that the work folder ``work`` does not hold
    yet, with the work budget ``budget`` (default :data:`DEFAULT_BUDGET`); return
    ``{"run": n, "kept": n, "failed": [(key, why), ...], "seconds": wall time}``.  A job
    that raises is said and left unfinished (a resume runs it again); the others go on.

    ``workers`` local processes (1: in this process; they end with their parent,
    :mod:`rcmdp_exact._workers`) or a Dask ``client`` (its workers must import this
    package and reach ``work``, a shared folder).  A bar when ``progress`` (default: when
    standard error is a terminal), else one line per job through ``echo``.
    """
    from .._checks import check_client
    from .._progress import progress_default, tqdm

    check_client(client)
    budget = check_budget(DEFAULT_BUDGET if budget is None else budget)
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    _check_settings(work, budget, echo=echo)
    jobs = job_keys() if jobs is None else list(jobs)
    done = finished(work, jobs, echo=echo)
    todo = [j for j in jobs if key_of(*j) not in done]
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

        failed = []

        def collect(get, job, i):
            try:
                report(get(), i)
            except Exception as exc:  # one job's failure: said, the others go on
                why = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
                failed.append((key_of(*job), why))
                bar.update(1)
                if echo is not None:
                    echo(f"[{i}/{total}] {key_of(*job)}: FAILED ({why})")

        if client is not None:
            from distributed import as_completed

            futs = {client.submit(_run_and_write, str(work), *j, budget, pure=False): j
                    for j in todo}
            for i, fut in enumerate(as_completed(futs), 1):
                collect(fut.result, futs[fut], i)
        elif workers > 1 and total > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            from .._workers import pool_initializer

            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                     **pool_initializer()) as pool:
                futs = {pool.submit(_run_and_write, str(work), *j, budget): j for j in todo}
                for i, fut in enumerate(as_completed(futs), 1):
                    collect(fut.result, futs[fut], i)
        else:
            for i, j in enumerate(todo, 1):
                collect(lambda j=j: _run_and_write(str(work), *j, budget), j, i)
    return {"run": total - len(failed), "kept": len(jobs) - total, "failed": failed,
            "seconds": time.perf_counter() - t0}


def write_data(path, payload: dict) -> None:
    """Write the data file ``path`` (gzip-compressed JSON when it ends in ``.gz``)
    atomically (:func:`rcmdp_exact._io.write_atomic`)."""
    import gzip

    from .._io import write_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=None, separators=(",", ":")).encode()

    def write(fh):
        if path.suffix == ".gz":  # mtime=0: the same values give the same bytes
            with gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as f:
                f.write(text)
        else:
            fh.write(text)

    write_atomic(path, write)


#: Bracket options newer than the shipped file (see :func:`bracket_options`).
_LATER_OPTIONS = ("split_point",)


def bracket_options(bracket: dict) -> dict:
    """Every option of :func:`~rcmdp_exact.rcmdp_bracket` that a record's runs were given,
    flat (:meth:`~rcmdp_exact.ground_truth.settings.BracketSettings.options` of the work
    budget's ``bracket`` over the defaults), but ``max_boxes`` and ``time_limit``: the
    schedule and the safety net, stored beside them."""
    from ..ground_truth.settings import BracketSettings

    opts = BracketSettings(**bracket).options()
    for name in ("max_boxes", "time_limit"):
        opts.pop(name, None)
    # options added after the shipped file was certified are stored only when not at
    # their default (the settings' own), so that a record made before them and one made
    # after agree (the settings rebuilt from either are the same)
    defaults = BracketSettings().options()
    for name in _LATER_OPTIONS:
        if name in opts and opts[name] == defaults[name]:
            opts.pop(name)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()}


def _policy_list(a) -> list:
    """An (S, A) policy as nested lists of floats (JSON keeps every bit of a float)."""
    return [[float(x) for x in row] for row in np.asarray(a, dtype=np.float64)]


def assemble(work, out, jobs=None, *, wall_seconds: float | None = None,
             workers: int | None = None, command: str | None = None,
             fill=None) -> dict:
    """Write the data file ``out`` (``values.json.gz``) from the work folder: the jobs of
    ``jobs`` (default the whole grid) in the grid's order, each record with its policies
    (``record["bracket"]["lower_policy"]``, None without a certified lower side, and
    ``record["free_policy"]`` and ``record["least_policy"]``).  A job missing from the
    folder is an error naming it.
    Each record's ``work`` gets ``options``, every option of the bracket it was given
    (:func:`bracket_options`).  Returns the file's header (``budget``: the work budget of
    the run; each record's own in its ``work``).

    ``fill``: a data file of the same grid (e.g. one made with an empty schedule,
    ``--max-boxes 0``) whose records stand in for the jobs not yet finished in the folder,
    each with its own ``work`` (a file to ship while a long certification runs); the
    header's ``filled`` says from which file, with which budget, and which keys."""
    import datetime
    import os
    import platform

    from .. import __version__
    from .frozen import CHECKSUMS
    from .instances import INSTANCES
    from .sets import KINDS, LEVELS

    work, out = Path(work), Path(out)
    jobs = job_keys() if jobs is None else list(jobs)
    stand_in, filled = {}, []
    if fill is not None:
        from .store import data

        other = data(fill)
        if other.get("schema") != SCHEMA:
            raise ValueError(f"{str(fill)!r} has schema {other.get('schema')!r}, not "
                             f"{SCHEMA}; give a data file of this toolkit")
        stand_in = {r["key"]: r for r in other["records"]}
    records, missing = [], []
    for j in jobs:
        key = key_of(*j)
        if not (work / f"{_file_stem(key)}.json").exists():
            if key in stand_in:
                records.append(json.loads(json.dumps(stand_in[key])))  # a copy
                filled.append(key)
            else:
                missing.append(key)
            continue
        rec, pols = _read_job(work, key)
        rec["bracket"]["lower_policy"] = (_policy_list(pols["lower"])
                                          if pols["lower"] is not None else None)
        if rec.get("work"):
            rec["work"] = dict(rec["work"], options=bracket_options(rec["work"]["bracket"]))
        rec["free_policy"] = _policy_list(pols["free"])
        rec["least_policy"] = _policy_list(pols["least"])
        records.append(rec)
    if missing:
        raise FileNotFoundError(f"{len(missing)} jobs are not finished in {work} (first: "
                                f"{missing[0]}); run the jobs first")
    folder = json.loads((work / SETTINGS_FILE).read_text())
    settings = folder["budget"]
    header = {
        "format": "rcmdp_exact suite values",
        "schema": SCHEMA,
        "toolkit": __version__,
        "generated": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "workers": workers,
        "budget": settings,
        "extends": folder.get("extends", []),
        "policy_class": POLICY_CLASS,
        "instances_sha256": json.loads(CHECKSUMS.read_text())["sha256"],
        "kinds": list(KINDS), "levels": list(LEVELS),
        "instances": [n for n in INSTANCES if any(r["instance"] == n for r in records)],
        "job_seconds": sum(r["seconds"] for r in records),
        "wall_seconds": wall_seconds,
        "command": command,
    }
    if fill is not None:
        header["filled"] = {"file": Path(fill).name, "budget": other["budget"],
                            "generated": other.get("generated"), "keys": filled}
    write_data(out, {**header, "records": records})
    return header
