"""The planners: cost per iteration, and the tuning protocol of their step sizes.

**Cost per iteration** (default).  For each planner of ``rcmdp_exact.planners`` on suite
instances (the four set kinds at r = 0.1), ``plan(..., iterations=N)`` is timed (best of
``--repeat`` runs, after one warm-up run) and divided by N; beside it, one call of
``rcmdp_exact.robust_evaluate`` on a random policy (the per-iteration work a user would
write by hand: one exact robust evaluation with each cost's own adversary), and the
ratio planner iteration / robust_evaluate call.  Also printed: the oracle's evaluations
and robust fixed points per iteration (the work counted, machine-independent).

    python benchmarks/bench_planners.py [--iterations 100] [--repeat 3]
        [--instances chain-10,grid-5x5,...] [--planners rnpg,...]

**Tuning** (``--tune NAME``).  The protocol behind the planners' default step sizes
where the paper gives none usable on these models (``docs/planners.md``): eight seeded
robust CMDPs that are not suite instances (``rcmdp_exact.testing.random_cmdp``, seeds
100-107, S = 5, A = 3, K = 1, gamma 0.9 or 0.95, a terminal state on odd seeds; the set
cycles through the L1 ball, the KL ball, the s-rectangular L1 set and the interval set
of the suite's radius r = 0.1 around the kernel; the budget by the suite's halfway rule),
the reference optimum from the bracket (``rcmdp_bracket``, lower side, at a budget of
5000 boxes), a budget of
``--iterations`` (default 500) iterations from the seed-0 random start.  Score of a
setting: the mean over the eight models of the relative gap (OPT - value) /
max(1, |OPT|) of the best robust-feasible iterate the run met (``PlanResult.best``), 1
when no iterate was robust-feasible (capped at 1); the default is the grid point of least
score (ties: more robust-feasible outputs).  The best iterate, not the output: it
measures how close the trajectory comes to the optimum while feasible, and it does not
depend on the output rule (the last iterate of a primal-dual method is infeasible about
half the time, whatever its step sizes).

    python benchmarks/bench_planners.py --tune rnpg [--iterations 500]

**Rates** (``--rates``).  The numbers behind ``tests/test_planners.py::
test_gradient_planners_converge_where_budgets_bind``: on the seeded CMDPs whose budgets
bind (``dense_binding_cmdp`` seeds 0-9 with gamma <= 0.95, radius 0), the median relative
gap to the LP optimum of the best robust-feasible iterate with the default settings at 100
iterations, and with the step divided by 4 at 1600 iterations, and their ratio; and each
model's gaps.

    python benchmarks/bench_planners.py --rates
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
import warnings

import numpy as np

import rcmdp_exact as rx
from rcmdp_exact import suite
from rcmdp_exact.planners import NAMES, plan
from rcmdp_exact.testing import random_cmdp

#: The bracket's box budget on the tuning models (a budget, not a clock: the reference
#: optimum is the same on every machine).
TUNING_BOXES = 5000
INSTANCES = ("chain-10", "grid-5x5", "paper-nav1", "frozenlake-8x8")
KINDS = ("l1", "kl", "s-l1", "interval")

#: The tuning grid of each planner (fields of its settings).
GRIDS = {
    "robust-primal-dual": dict(policy_step=[1e2, 1e3, 1e4, 1e5], dual_step=[0.3, 3.0, 30.0]),
    "epirc-pgs": dict(step=[1e2, 1e3, 1e4, 1e5], inner_iterations=[20, 50, 100]),
    "rnpg": dict(step=[1.0, 3.0, 10.0, 30.0], scale=[1e2, 1e4]),
    "rrpo": dict(step=[1e2, 1e3, 1e4, 1e5]),
    "pmd-pd": dict(step=[0.3, 1.0, 3.0, 10.0], dual_step=[0.3, 3.0, 30.0]),
}


def best_of(repeat: int, f):
    """(the least wall time of ``repeat`` calls of f, the last call's answer)."""
    runs = [timed(f) for _ in range(repeat)]
    return min(t for t, _ in runs), runs[-1][1]


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def cost_table(args) -> None:
    planners = args.planners.split(",") if args.planners else [
        n for n in NAMES if n != "reference"]
    n = args.iterations
    print(f"seconds per iteration (best of {args.repeat}, {n} iterations); 'rev' is one "
          f"robust_evaluate call; x = planner iteration / rev")
    head = f"{'instance':<16}{'set':<9}{'planner':<20}{'ms/it':>9}{'rev ms':>9}{'x':>7}" \
           f"{'evals/it':>10}{'fp/it':>8}"
    print(head)
    print("-" * len(head))
    for name in args.instances.split(","):
        for kind in KINDS:
            model, uset, _ = suite.load(name, kind, 0.1)
            rng = np.random.default_rng(0)
            pi = rng.dirichlet(np.ones(model.n_actions), size=model.n_states)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rx.robust_evaluate(model, pi, uset, progress=False)
                t_rev, _ = best_of(args.repeat * 5, lambda m=model, u=uset, p=pi:
                                   rx.robust_evaluate(m, p, u, progress=False))
            for p in planners:
                try:
                    plan(model, uset, p, iterations=2, seed=0)
                except rx.InputError:
                    print(f"{name:<16}{kind:<9}{p:<20}{'(set not taken)':>9}")
                    continue
                t, res = best_of(args.repeat, lambda m=model, u=uset, p=p:
                                 plan(m, u, p, iterations=n, seed=0))
                it = max(1, res.work["iterations"])
                print(f"{name:<16}{kind:<9}{p:<20}{1e3 * t / n:>9.2f}{1e3 * t_rev:>9.2f}"
                      f"{t / n / t_rev:>7.1f}{res.work['evaluations'] / it:>10.2f}"
                      f"{res.work['fixed_points'] / it:>8.1f}", flush=True)


def tuning_models():
    """The tuning set (module notes): (model, set, OPT, kind, bracket gap) for seeds
    100-107.  The brackets are kept in a cache file under the system's temporary folder
    (keyed by the box budget), so that tuning several planners computes them once."""
    import json
    import tempfile
    from pathlib import Path

    from rcmdp_exact.suite.sets import budget, build_set

    cache = Path(tempfile.gettempdir()) / f"rcmdp_exact_tuning_{TUNING_BOXES}.json"
    known = json.loads(cache.read_text()) if cache.exists() else {}
    out = []
    for i, seed in enumerate(range(100, 108)):
        gamma = 0.9 if i % 2 == 0 else 0.95
        m = random_cmdp(seed, 5, 3, 1, gamma, terminal=seed % 2 == 1)
        kind = KINDS[i % 4]
        uset = build_set(m, kind, 0.1, "all")
        d, _ = budget(m, uset, "halfway")
        m = m.replace(d=d)
        if str(seed) not in known:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                br = rx.rcmdp_bracket(m, uset, max_boxes=TUNING_BOXES, time_limit=None,
                                      progress=False, dual_evaluations=0)
            known[str(seed)] = [float(br.lower), float(br.relative_gap)]
            from rcmdp_exact._io import write_atomic

            text = json.dumps(known).encode()
            write_atomic(cache, lambda fh, text=text: fh.write(text))
        lower, gap = known[str(seed)]
        out.append((m, uset, lower, kind, gap))
    return out


def tune(args) -> None:
    grid = GRIDS[args.tune]
    models = tuning_models()
    print(f"tuning {args.tune}: {len(models)} models, {args.iterations} iterations, seed 0")
    for m, _, opt, kind, gap in models:
        print(f"  S={m.n_states} gamma={m.gamma} {kind:<9} OPT {opt:.6g} (bracket gap "
              f"{gap:.1e})")
    keys = list(grid)
    rows = []
    for vals in itertools.product(*grid.values()):
        opts = dict(zip(keys, vals, strict=True))
        gaps, feas = [], 0
        t = time.perf_counter()
        for m, uset, opt, _, _ in models:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = plan(m, uset, args.tune, iterations=args.iterations, seed=0, **opts)
            feas += bool(r.feasible)
            best = r.best
            gaps.append(1.0 if best is None else
                        min(1.0, (opt - best["value"]) / max(1.0, abs(opt))))
        score = float(np.mean(gaps))
        rows.append((score, -feas, opts))
        print(f"  {opts}  feasible outputs {feas}/{len(models)}  mean gap {score:.2e}  median "
              f"{statistics.median(gaps):.2e}  ({time.perf_counter() - t:.0f} s)", flush=True)
    best = min(rows, key=lambda r: (r[0], r[1]))
    print(f"best: {best[2]} (mean gap {best[0]:.2e}, feasible {-best[1]}/{len(models)})")


def rates(args) -> None:
    from rcmdp_exact.planners import PLANNERS
    from rcmdp_exact.testing import dense_binding_cmdp

    finer = {
        "robust-primal-dual": lambda s: dict(policy_step=s.policy_step / 4,
                                             dual_step=s.dual_step / 4),
        "epirc-pgs": lambda s: dict(step=s.step / 4, inner_iterations=4 * s.inner_iterations),
        "rnpg": lambda s: dict(step=s.step / 4),
        "rrpo": lambda s: dict(step=s.step / 4),
        "pmd-pd": lambda s: dict(step=s.step / 4, dual_step=s.dual_step / 4),
    }
    models = [(seed, m) for seed, m in ((s, dense_binding_cmdp(s)) for s in range(10))
              if m.gamma <= 0.95]
    print(f"models: dense_binding_cmdp seeds {[s for s, _ in models]}")
    for name, fine in finer.items():
        opts = fine(PLANNERS[name].settings())
        before, after = [], []
        for _, m in models:
            lp = rx.solve_cmdp(m)
            uset = rx.l1_ball(m, 0.0)
            for n, o, out in ((100, {}, before), (1600, opts, after)):
                r = plan(m, uset, name, iterations=n, seed=0, **o)
                out.append(1.0 if r.best is None else
                           (lp.value - r.best["value"]) / max(1.0, abs(lp.value)))
        b, a = statistics.median(before), statistics.median(after)
        print(f"{name:<20} median gap {b:.2e} -> {a:.2e} (x{b / a:.1f}); per model: "
              + ", ".join(f"{x:.1e}->{y:.1e}" for x, y in zip(before, after, strict=True)),
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--instances", default=",".join(INSTANCES))
    ap.add_argument("--planners", default="")
    ap.add_argument("--tune", choices=sorted(GRIDS), default=None)
    ap.add_argument("--rates", action="store_true")
    args = ap.parse_args()
    if args.rates:
        rates(args)
    elif args.tune:
        args.iterations = args.iterations or 500
        tune(args)
    else:
        args.iterations = args.iterations or 100
        cost_table(args)


if __name__ == "__main__":
    main()
