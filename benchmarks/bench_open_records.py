"""How the gap of an open suite record falls with the box budget.

For each record ``INSTANCE/KIND/LEVEL`` (``--records``, comma-separated) this rebuilds
the record's model, set, caps and candidates exactly as ``rcmdp suite certify`` does
(``rcmdp_exact.suite.certify``), then runs ONE bracket with the record's own options
(``DEFAULT_BUDGET``: ``n_ascent`` 20, ``dual_evaluations`` 0, the safety net) and a box
budget of the largest factor (``--factors``, default ``1,3,10``) times the end of the
record's schedule, and reads the bracket at every factor from the branch and bound's
trace.  The best-first order of the boxes does not depend on ``max_boxes`` (and the
deeper search of the lower side starts at the same box count, ``deep_after``), so the
trace at N boxes is the bracket a run with ``max_boxes = N`` ends with (up to the final
second certification of the lower side, which can only lower ``lower`` by rounding);
``--check`` compares the first factor with the record stored in the shipped file.

Per checkpoint: lower, upper (the bracket's, capped as the record caps it), the record's
relative gap, the boxes and the CPU seconds of the process since the record's first
step (``time.process_time``: one process, ``OMP_NUM_THREADS=1`` for one core).
``--cpu-limit`` (default 1200 s) stops the largest run: the bracket's safety net
``time_limit`` is set to it (a wall-clock limit, so under load the run stops at fewer
CPU seconds); a checkpoint not reached is reported as such.  ``--options`` adds bracket
options as JSON (``'{"split_point": "lp"}'``), to compare an idea at the same budgets.
``--probe N`` instead prints, per record, every box bound of a bracket at N boxes (the
Lagrangian bound after its sign steps, the performance-difference bound, the
occupancy LP, the box's bound) against its upper side: which bound decides the boxes.

``--restarts N`` instead asks whether the lower side of each record is the best policy
a local search finds: from the stored lower policy and from N random policies (rows
drawn from Dirichlet(1), seeded by ``--seed``), SLSQP with exact Danskin gradients
(``rcmdp_exact.ground_truth.search.ascend``, ``--ascent`` iterations per start, the
bracket's deep ascent) on the record's model, set and budget; each policy met is
certified as the bracket certifies its lower side.  Per record: the stored lower, the
best certified value found, the number of starts that end within 1e-8 (relative) of
the stored lower, and the worst end; ``--records open`` takes every record of the
shipped file above a relative gap of 1% (``--match`` keeps those whose key contains
a string).  A best value at the stored lower from every start says the lower side is
the robust local optimum the search reaches from anywhere: the gap then lies in the
upper side (or in a region no local search reaches).

``--shrink {lower,lagrangian}`` instead asks how small a box must be for its bounds to
decide it: boxes of half-width w (every policy entry within w, clipped to [0, 1]) around
the stored lower policy (``lower``) or around the maximiser of the root's Lagrangian
bound (``lagrangian``: the best of a grid of 62 multipliers, 0 and 1e-3 to 1e3), for w
from 1 to 3e-4; per box, each bound's excess over the stored lower side: the Lagrangian
bound at the best multiplier of the same grid, the performance-difference bound and the
occupancy LP, each with the worst-case kernels of the centre policy, and whether the box
is dropped as infeasible (its least worst-case cost above the budget).

Then a fit of log(relative gap) against log(boxes) over the trace points from the
first factor on (least squares): the exponent, and the boxes the fit needs for a
relative gap of 1% (``None`` when the gap does not fall: the record stalls).

    OMP_NUM_THREADS=1 python benchmarks/bench_open_records.py \
        --records frozenlake-4x4/l1/0.05,machine-20/kl/0.1 --out open.json
    OMP_NUM_THREADS=1 python benchmarks/bench_open_records.py --records open \
        --match garnet --restarts 20
    python benchmarks/bench_open_records.py --records grid-5x5/s-l1/0.1 --shrink lower
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 0.01


def stored_record(key: str) -> dict | None:
    """The record ``key`` of the shipped suite file (None if absent)."""
    from rcmdp_exact.suite import certify

    path = Path(certify.__file__).parent / "data" / "values.json.gz"
    with gzip.open(path, "rt") as fh:
        data = json.load(fh)
    return next((r for r in data["records"] if r["key"] == key), None)


def prepare(key: str):
    """(model, uset, work budget, caps, incumbent) of the record ``key``, as
    ``certify_job`` builds them before its branch and bound."""
    from rcmdp_exact.ground_truth import solve_cmdp
    from rcmdp_exact.suite import certify
    from rcmdp_exact.suite.candidates import candidate_policies, caps
    from rcmdp_exact.suite.instances import INSTANCES

    name, kind, level = key.split("/")
    level = float(level)
    work = certify._work_budget(name, kind, level)
    inst = INSTANCES[name]
    base = inst.build()
    model, uset, lv = certify._levels_of(base, kind, level, inst)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lp = solve_cmdp(model)
    cap = caps(model, uset, lp, lv.robust_optimum, lv.box.error)
    extra = certify._warm_candidates(base, name, kind, level, inst)
    inc = candidate_policies(model, uset, lv, lp, extra=extra)
    return model, uset, work, cap, inc


def measure(key: str, factors, cpu_limit: float, options: dict, check: bool) -> dict:
    from rcmdp_exact.ground_truth import rcmdp_bracket
    from rcmdp_exact.suite.certify import relative_gap

    c0 = time.process_time()
    model, uset, work, cap, inc = prepare(key)
    c_prep = time.process_time() - c0
    end = work["schedule"][-1]
    budgets = [round(f * end) for f in factors]
    best = inc.best()
    cands = np.stack(best) if best else None
    opts = dict(work["bracket"], max_boxes=max(budgets), time_limit=cpu_limit)
    opts.update(options)
    c1 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        br = rcmdp_bracket(model, uset, candidates=cands, progress=False, **opts)
    c_run = time.process_time() - c1
    w_run = float(br.seconds)
    trace = np.asarray(br.trace, dtype=np.float64)  # seconds (wall), boxes, lower, upper
    cap_min = min(cap.values())
    # wall seconds of the trace to CPU seconds: the ratio of the whole run
    ratio = c_run / w_run if w_run > 0 else 1.0
    lower_floor = inc.value if math.isfinite(inc.value) else -np.inf

    def at(n):
        # a run with max_boxes = n stops at the first round that has bounded n boxes
        nxt = trace[trace[:, 1] >= n]
        if not nxt.size:
            return None
        row = nxt[0]
        lo = max(row[2], lower_floor)
        up = max(min(row[3], cap_min), lo)
        return dict(max_boxes=n, boxes=int(row[1]), lower=float(lo), upper=float(up),
                    relative_gap=relative_gap(up - lo, lo, model),
                    cpu_seconds=(c1 - c0) + ratio * float(row[0]))

    points = [at(n) for n in budgets]
    final_lo = max(float(br.lower), lower_floor)
    final_up = max(min(float(br.upper), cap_min), final_lo)
    last = dict(boxes=int(br.boxes), lower=final_lo, upper=final_up,
                relative_gap=relative_gap(final_up - final_lo, final_lo, model),
                cpu_seconds=c_prep + c_run, wall_seconds=w_run,
                stopped=str(br.get("stopped")),
                stopped_by_time_limit=bool(br.get("stopped_by_time_limit")))
    # the fit: log gap against log boxes over the trace from the first factor's boxes on
    fit = None
    rows = trace[trace[:, 1] >= budgets[0]]
    if rows.shape[0] >= 3:
        lo = np.maximum(rows[:, 2], lower_floor)
        up = np.maximum(np.minimum(rows[:, 3], cap_min), lo)
        gaps = np.array([relative_gap(u - v, v, model) for u, v in zip(up, lo, strict=True)])
        ok = gaps > 0
        if ok.sum() >= 3 and np.ptp(np.log(rows[ok, 1])) > 0:
            slope, icept = np.polyfit(np.log(rows[ok, 1]), np.log(gaps[ok]), 1)
            need = math.exp((math.log(TARGET) - icept) / slope) if slope < -1e-3 else None
            fit = dict(exponent=float(slope), boxes_for_1pct=need,
                       from_boxes=int(rows[0, 1]), to_boxes=int(rows[-1, 1]))
    # the first box count at which the trace is within 1%, and the trace itself
    lo_all = np.maximum(trace[:, 2], lower_floor)
    up_all = np.maximum(np.minimum(trace[:, 3], cap_min), lo_all)
    rel_all = [relative_gap(u - v, v, model) for u, v in zip(up_all, lo_all, strict=True)]
    within = [int(n) for n, r in zip(trace[:, 1], rel_all, strict=True)
              if r is not None and r <= TARGET]
    out = dict(record=key, schedule=work["schedule"], options=opts,
               prepare_cpu_seconds=c_prep, checkpoints=points, final=last, fit=fit,
               first_within_1pct=within[0] if within else None,
               trace=[[int(n), float(v), float(u), r] for n, v, u, r in
                      zip(trace[:, 1], lo_all, up_all, rel_all, strict=True)],
               load=os.getloadavg(), caps=cap)
    if check:
        rec = stored_record(key)
        if rec is not None:
            out["stored"] = dict(lower=rec["bracket"]["lower"],
                                 upper=rec["bracket"]["upper"],
                                 relative_gap=rec["bracket"]["relative_gap"],
                                 boxes=rec["bracket"]["boxes"])
    return out


def probe(key: str, max_boxes: int) -> dict:
    """Which box bound decides the boxes of the record ``key`` (``--probe N``): the
    bracket with the record's options at ``N`` boxes, every box's Lagrangian bound
    after its sign steps, its performance-difference bound and its occupancy-LP bound
    (before the cap by the parent's bound), against the root's upper side."""
    from rcmdp_exact.ground_truth import boxes as B
    from rcmdp_exact.ground_truth import rcmdp_bracket

    model, uset, work, cap, inc = prepare(key)
    seen = {"lagrangian": [], "local": [], "lp": [], "box": []}
    loc, lp, bound = B.local_bounds, B._lp_bound, B.bound_boxes

    def lp_probe(*a, **k):
        u, b = lp(*a, **k)
        seen["lp"].append(u)
        return u, b

    def loc_probe(*a, **k):
        r = loc(*a, **k)
        seen["local"].extend(np.asarray(r.U).tolist())
        return r

    def bound_probe(game, lo, hi, lam, step, w, basis, threshold, **k):
        r = bound(game, lo, hi, lam, step, w, basis, threshold, **k)
        if "U" in r:
            seen["box"].extend(np.asarray(r["U"]).tolist())
        return r

    def improve_probe(*a, **k):
        res, lam, step = improve(*a, **k)
        seen["lagrangian"].extend(np.asarray(res.U).tolist())
        return res, lam, step

    improve = B.improve_lam
    B._lp_bound, B.local_bounds, B.bound_boxes, B.improve_lam = (
        lp_probe, loc_probe, bound_probe, improve_probe)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            best = inc.best()
            br = rcmdp_bracket(model, uset, candidates=np.stack(best) if best else None,
                               progress=False, **dict(work["bracket"],
                                                      max_boxes=max_boxes,
                                                      time_limit=work["time_limit"]))
    finally:
        B._lp_bound, B.local_bounds, B.bound_boxes, B.improve_lam = lp, loc, bound, improve
    out = dict(record=key, boxes=int(br.boxes), lower=float(br.lower),
               upper=float(br.upper), caps=cap)
    for name, vals in seen.items():
        v = np.asarray(vals, dtype=np.float64)
        v = v[np.isfinite(v)]
        out[name] = dict(n=int(v.size), min=float(v.min()) if v.size else None,
                         median=float(np.median(v)) if v.size else None,
                         max=float(v.max()) if v.size else None,
                         below_upper=int((v < float(br.upper) - 1e-12).sum()))
    return out



def open_keys(match: str = "") -> list[str]:
    """The records of the shipped file above a relative gap of :data:`TARGET` (not
    certified infeasible) whose key contains ``match``."""
    from rcmdp_exact.suite import data

    return [r["key"] for r in data()["records"]
            if r["bracket"]["status"] != "infeasible"
            and (r["bracket"].get("relative_gap") is None
                 or r["bracket"]["relative_gap"] > TARGET) and match in r["key"]]


def restarts(key: str, n: int, n_iter: int, seed: int) -> dict:
    """Local searches from the stored lower policy and from ``n`` random policies on the
    record ``key`` (module notes, ``--restarts``)."""
    from rcmdp_exact import suite
    from rcmdp_exact.ground_truth.search import Incumbent, ascend, certify
    from rcmdp_exact.robust.engine import RobustGame

    name, kind, level = key.split("/")
    model, uset, rec = suite.load(name, set=kind, level=float(level))
    b = rec["bracket"]
    game = RobustGame(model, uset, tol=1e-12, d=np.asarray(model.d, dtype=np.float64))
    stored = float(b["lower"])
    tol = 1e-8 * max(1.0, abs(stored))
    rng = np.random.default_rng(seed)
    c0 = time.process_time()
    ends, best = [], -np.inf
    for i in range(n + 1):
        inc = Incumbent(game, lambda pi: certify(game, pi))
        pi0 = np.asarray(b["lower_policy"], dtype=np.float64) if i == 0 else \
            rng.dirichlet(np.ones(game.A), size=game.S)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ascend(inc, pi0, n_iter=n_iter)
        ends.append(inc.value)  # -inf: no certified robust-feasible policy met
        best = max(best, inc.value)
    random_ends = np.asarray(ends[1:])
    return {"key": key, "stored_lower": stored, "upper": float(b["upper"]),
            "upper_method": b["upper_method"], "starts": n, "ascent": n_iter,
            "best": float(best), "best_over_stored": float(best - stored),
            "at_stored": int(np.sum(np.abs(random_ends - stored) <= tol)),
            "above_stored": int(np.sum(random_ends > stored + tol)),
            "infeasible_ends": int(np.sum(~np.isfinite(random_ends))),
            "worst_feasible_end": float(random_ends[np.isfinite(random_ends)].min(
                initial=np.inf)),
            "cpu_seconds": time.process_time() - c0}


SHRINK_WIDTHS = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0003)


def shrink(key: str, around: str) -> dict:
    """The box bounds of boxes shrinking around one policy of the record ``key`` (module
    notes, ``--shrink``)."""
    from rcmdp_exact import suite
    from rcmdp_exact.ground_truth import boxes as B
    from rcmdp_exact.ground_truth.local_bound import local_bounds, occupancy_intervals
    from rcmdp_exact.robust.engine import RobustGame

    name, kind, level = key.split("/")
    model, uset, rec = suite.load(name, set=kind, level=float(level))
    game = RobustGame(model, uset, tol=1e-12, d=np.asarray(model.d, dtype=np.float64))
    lower = float(rec["bracket"]["lower"])
    pi = np.asarray(rec["bracket"]["lower_policy"], dtype=np.float64)
    lams = np.concatenate([[0.0], np.logspace(-3, 3, 61)])[:, None] * np.ones(game.K)
    S, A = pi.shape
    out = {"key": key, "around": around, "lower": lower, "S": S, "A": A,
           "free_coordinates": int(S * (A - 1))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if around == "lagrangian":
            root = B.lagrangian_bounds(game, np.zeros((len(lams), S, A)),
                                       np.ones((len(lams), S, A)), lams)
            j = int(np.argmin(root.U))
            pi = root.pi[j]
            out.update(root_lam=float(lams[j, 0]), root_bound=float(root.U[j]))
        centre = game.evaluate(pi[None])
        out.update(centre_value=float(centre["value"][0]),
                   centre_costs=[float(c) for c in centre["costs"][0]],
                   budget=[float(x) for x in model.d], rows=[])
        n = 1 + game.K
        for w in SHRINK_WIDTHS:
            lo, hi = np.clip(pi - w, 0, 1)[None], np.clip(pi + w, 0, 1)[None]
            lag = B.lagrangian_bounds(game, np.repeat(lo, len(lams), 0),
                                      np.repeat(hi, len(lams), 0), lams)
            dropped = bool(np.any(B.feasibility_bounds(game, lo, hi)[0] > game.d_bound))
            dlo, dhi = occupancy_intervals(game, centre["P"], lo, hi)
            loc = float(local_bounds(game, lo, hi, centre, dlo, dhi).U[0])
            lp, _ = B._lp_bound(game, B._box_lp(game), lo[0], hi[0],
                                centre["P"][0].reshape(n, *centre["P"].shape[2:]),
                                dlo[0], dhi[0], None)
            out["rows"].append({"w": w, "dropped": dropped,
                                "lagrangian": float(lag.U.min()) - lower,
                                "local": loc - lower, "lp": float(lp) - lower})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", required=True)
    ap.add_argument("--factors", default="1,3,10")
    ap.add_argument("--cpu-limit", type=float, default=1200.0)
    ap.add_argument("--options", default="{}")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--out", default="")
    ap.add_argument("--probe", type=int, default=0,
                    help="only probe which box bound decides the boxes, at this many")
    ap.add_argument("--restarts", type=int, default=0,
                    help="only run local searches from this many random policies")
    ap.add_argument("--shrink", choices=("lower", "lagrangian"), default=None,
                    help="only bound boxes shrinking around this policy")
    ap.add_argument("--ascent", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--match", default="")
    a = ap.parse_args()
    if a.records == "open":
        a.records = ",".join(open_keys(a.match))
    if a.restarts:
        out = []
        for key in a.records.split(","):
            r = restarts(key, a.restarts, a.ascent, a.seed)
            out.append(r)
            print(f"{key}: stored lower {r['stored_lower']:.10g}, best {r['best']:.10g} "
                  f"({r['best_over_stored']:+.2e}); {r['at_stored']} of {r['starts']} "
                  f"starts end at it, {r['above_stored']} above, "
                  f"{r['infeasible_ends']} with no feasible policy; upper "
                  f"{r['upper']:.10g} ({r['upper_method']}); cpu {r['cpu_seconds']:.0f} s",
                  flush=True)
            _save(a.out, out)
        return
    if a.shrink:
        out = []
        for key in a.records.split(","):
            r = shrink(key, a.shrink)
            out.append(r)
            print(f"{key}: around the {a.shrink} policy (value {r['centre_value']:.8g}, "
                  f"costs {r['centre_costs']}, budget {r['budget']}); excess over the "
                  f"stored lower {r['lower']:.8g} ({r['free_coordinates']} free "
                  f"coordinates)", flush=True)
            for row in r["rows"]:
                print(f"  w {row['w']:<7g} lagrangian {row['lagrangian']:+.3e} local "
                      f"{row['local']:+.3e} lp {row['lp']:+.3e}"
                      f"{'  dropped (infeasible)' if row['dropped'] else ''}", flush=True)
            _save(a.out, out)
        return
    if a.probe:
        for key in a.records.split(","):
            print(json.dumps(probe(key, a.probe)), flush=True)
        return
    factors = [float(f) for f in a.factors.split(",")]
    options = json.loads(a.options)
    results = []
    if a.out and Path(a.out).exists():
        results = json.loads(Path(a.out).read_text())
    for key in a.records.split(","):
        r = measure(key, factors, a.cpu_limit, options, a.check)
        results.append(r)
        for p in r["checkpoints"]:
            if p is None:
                continue
            print(f"{key} max_boxes {p['max_boxes']}: [{p['lower']:.6g}, {p['upper']:.6g}] "
                  f"rel {p['relative_gap']:.4g} boxes {p['boxes']} "
                  f"cpu {p['cpu_seconds']:.0f}", flush=True)
        f = r["final"]
        print(f"{key} final: [{f['lower']:.6g}, {f['upper']:.6g}] rel "
              f"{f['relative_gap']:.4g} boxes {f['boxes']} cpu {f['cpu_seconds']:.0f} "
              f"stopped {f['stopped']} fit {r['fit']} within 1% from "
              f"{r['first_within_1pct']} boxes; stored {r.get('stored')}",
              flush=True)
        _save(a.out, results)


def _save(path: str, rows: list) -> None:
    """Write the rows measured so far to ``path`` (atomically), if one is given."""
    if path:
        from rcmdp_exact._io import save_json
        save_json(path, json.dumps(rows, indent=1, default=float))


if __name__ == "__main__":
    main()
