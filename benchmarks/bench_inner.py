"""Benchmark of the L1 inner problem over all (s, a) of a model.

Compares, on dense random models with S in {10, 100, 1000} and A = 4 (z differs per
row, as with next-state-dependent rewards):

* ``batched sort``   one call of ``worst_case_l1`` on the (S, A, S) arrays (validated,
  and with ``check=False`` as the robust solvers call it);
* ``row loop``       ``worst_case_l1`` called once per (s, a) in a Python loop;
* ``cvxpy LP``       one HiGHS LP per (s, a) through cvxpy, with a parametrised problem
  compiled once per size (the LP's best case); at large S only a subsample of rows is
  solved and the time is extrapolated (marked ``*``);
* ``np.sort floor``  a single ``np.sort`` of the same (S*A, S) array of z: the
  memory-bound floor of any sort-based method;
* ``argsort/floor``  a single ``np.argsort`` of that array against the floor: the
  floor of any method that orders the outcomes by ``np.argsort``.

The second section times the other sa-rectangular sets of
``rcmdp_exact.uncertainty`` (weighted L1 ball, L-infinity ball, interval set, KL ball)
on the same kind of dense rows (z per (s, a)):

* ``exact``          one ``worst_case(z)`` of the set on (S, A, S) (its exact solver);
* ``np.sort``        one ``np.sort`` of the same (S*A, S) array of z, timed in turn with
  the exact solvers (round-robin);
* ``cvxpy``          the set's own cross-check, ``worst_case(z, method="lp")`` (one
  cvxpy problem per row: HiGHS for the polyhedral sets, CLARABEL for the KL ball), on a
  for S up to ``--set-lp-max`` (100).

Goals: polyhedral sets within 4x of ``np.sort`` and the KL ball within 15x at S = 1000,
A = 4; every set at least 500x faster than its cvxpy form at S = 100.

Every timing is the minimum over repeats (the machine may be shared); the floor and
the batched sort are timed in turn, round-robin.  Run with

    python benchmarks/bench_inner.py                    # both sections
    python benchmarks/bench_inner.py --section sets     # the other sets only
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rcmdp_exact.uncertainty import IntervalSet, KLBall, LInfBall, WeightedL1Ball
from rcmdp_exact.uncertainty.l1_sort import worst_case_l1


def best_time(fn, repeats: int) -> float:
    return best_times([fn], repeats)[0]


def best_times(fns, repeats: int) -> list[float]:
    """Best time of each function, measured round-robin (fair under a changing load)."""
    for fn in fns:
        fn()
    best = [np.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def make_problem(S: int, A: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    p_hat = rng.dirichlet(np.ones(S), size=(S, A))  # dense rows
    z = rng.normal(size=(S, A, S))
    alpha = rng.uniform(0.05, 1.5, size=(S, A))
    return p_hat, z, alpha


def lp_time(p_hat, z, alpha, max_rows: int, seed: int = 1):
    """Seconds for one LP per (s, a); extrapolated from a subsample above max_rows."""
    P, Z, Al = (p_hat.reshape(-1, p_hat.shape[-1]), z.reshape(-1, z.shape[-1]),
                alpha.reshape(-1))
    N = P.shape[0]
    rows = np.arange(N)
    if N > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(N, max_rows, replace=False))
    worst_case_l1(P[rows[:1]], Z[rows[:1]], Al[rows[:1]], method="lp")  # compile once
    t = time.perf_counter()
    res = worst_case_l1(P[rows], Z[rows], Al[rows], method="lp")
    elapsed = time.perf_counter() - t
    return elapsed * N / rows.size, rows.size < N, res, rows


SET_NAMES = ("weighted L1", "L-inf ball", "interval", "KL ball")
#: Goal of each set against np.sort at S = 1000 (polyhedral 4x, KL 15x).
SORT_GOALS = {"weighted L1": 4.0, "L-inf ball": 4.0, "interval": 4.0, "KL ball": 15.0}


def make_sets(S: int, A: int, seed: int = 0):
    """One set of each kind around a dense random nominal (radii that move the answer)."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    lo = np.clip(P - rng.uniform(0.0, 2.0 / S, (S, A, S)), 0.0, 1.0)
    up = np.clip(P + rng.uniform(0.0, 2.0 / S, (S, A, S)), 0.0, 1.0)
    return {
        "weighted L1": WeightedL1Ball(P, rng.uniform(0.05, 1.5, (S, A)),
                                      rng.uniform(0.5, 2.0, (S, A, S))),
        "L-inf ball": LInfBall(P, rng.uniform(0.2, 5.0, (S, A)) / S),
        "interval": IntervalSet(lo, up),
        "KL ball": KLBall(P, rng.uniform(0.01, 0.5, (S, A))),
    }


def sets_section(args) -> dict:
    """Time every set's exact solver against np.sort and against its cvxpy form."""
    A = args.actions
    print(f"\nOther sa-rectangular sets, A = {A}, dense rows, z per row (exact: best of "
          f"{args.repeats}, round-robin with np.sort; cvxpy: one pass over every row, "
          f"for S <= {args.set_lp_max})\n")
    head = (f"{'set':<12} {'S':>5} {'rows':>6} {'exact':>10} {'np.sort':>10} "
            f"{'exact/sort':>10} {'cvxpy':>10} {'cvxpy/exact':>11} {'max|gap|':>9}")
    print(head)
    print("-" * len(head))
    out = {}
    for S in args.set_sizes:
        sets = make_sets(S, A)
        z = np.random.default_rng(1).normal(size=(S, A, S))
        flat = z.reshape(S * A, S)
        fns = [lambda fz=flat: np.sort(fz, axis=-1)]
        fns += [lambda u=u, z=z: u.worst_case(z) for u in sets.values()]
        times = best_times(fns, args.repeats)
        t_sort = times[0]
        for (name, uset), t in zip(sets.items(), times[1:], strict=True):
            exact = uset.worst_case(z)
            if S <= args.set_lp_max:
                t_lp, gap = set_lp_time(uset, z, exact)
                lp_text = f"{t_lp:>9.2f}s {t_lp / t:>11.0f} {gap:>9.1e}"
            else:
                t_lp, lp_text = None, f"{'-':>10} {'-':>11} {'-':>9}"
            print(f"{name:<12} {S:>5} {S * A:>6} {t * 1e3:>8.2f}ms {t_sort * 1e3:>8.2f}ms "
                  f"{t / t_sort:>10.2f} {lp_text}")
            out[(name, S)] = dict(exact=t, sort=t_sort, lp=t_lp)
    print()
    for name in SET_NAMES:
        if (name, 1000) in out:
            r = out[(name, 1000)]
            ratio = r["exact"] / r["sort"]
            goal = SORT_GOALS[name]
            print(f"goal S = 1000: {name} within {goal:g}x of np.sort: {ratio:.2f}x -> "
                  f"{'met' if ratio <= goal else 'NOT met'}")
        if (name, 100) in out and out[(name, 100)]["lp"] is not None:
            r = out[(name, 100)]
            ratio = r["lp"] / r["exact"]
            print(f"goal S = 100: {name} >= 500x faster than cvxpy: {ratio:.0f}x -> "
                  f"{'met' if ratio >= 500 else 'NOT met'}")
    return out


def set_lp_time(uset, z, exact):
    """Seconds of the set's cvxpy form on every row (each problem compiled once per
    size beforehand) and its largest gap to the exact values."""
    uset.worst_case(z, method="lp")  # compile the parametrised problems
    t = time.perf_counter()
    lp = uset.worst_case(z, method="lp")
    elapsed = time.perf_counter() - t
    return elapsed, float(np.abs(lp.value - exact.value).max())


def l1_section(args) -> dict:
    """The L1 ball: the batched sort against np.sort, a row loop and the LP."""
    A = args.actions
    print(f"L1 inner problem over all (s, a), A = {A}, dense rows, z per row "
          f"(times: best of {args.repeats}; * = extrapolated from a subsample)\n")
    head = (f"{'S':>5} {'rows':>6} {'sort':>10} {'sort nochk':>10} {'np.sort':>10} "
            f"{'row loop':>11} {'cvxpy LP':>12} {'LP/sort':>9} {'loop/sort':>9} "
            f"{'sort/floor':>10} {'nochk/floor':>11} {'argsort/floor':>13}")
    print(head)
    print("-" * len(head))
    summary = {}
    for S in args.sizes:
        p_hat, z, alpha = make_problem(S, A)
        flat_z = z.reshape(S * A, S)
        # the floor, the two calls and an argsort in turn, so that a change of load
        # hits all of them
        t_floor, t_sort, t_fast, t_arg = best_times(
            [
                lambda fz=flat_z: np.sort(fz, axis=-1),
                lambda p=p_hat, z=z, a=alpha: worst_case_l1(p, z, a),
                lambda p=p_hat, z=z, a=alpha: worst_case_l1(p, z, a, check=False),
                lambda fz=flat_z: np.argsort(fz, axis=-1),
            ],
            args.repeats,
        )
        # row loop
        P, Z, Al = p_hat.reshape(-1, S), z.reshape(-1, S), alpha.reshape(-1)
        n_loop = min(P.shape[0], args.loop_rows)

        def loop(n=n_loop, P=P, Z=Z, Al=Al):
            for i in range(n):
                worst_case_l1(P[i], Z[i], Al[i])

        t_loop = best_time(loop, max(1, args.repeats // 5)) * P.shape[0] / n_loop
        loop_mark = "*" if n_loop < P.shape[0] else " "
        t_lp, lp_sub, lp_res, rows = lp_time(p_hat, z, alpha, args.lp_rows)
        ref = worst_case_l1(p_hat, z, alpha).value.reshape(-1)[rows]
        gap = float(np.abs(lp_res.value - ref).max())
        lp_mark = "*" if lp_sub else " "
        print(
            f"{S:>5} {S * A:>6} {t_sort * 1e3:>8.3f}ms {t_fast * 1e3:>8.3f}ms "
            f"{t_floor * 1e3:>8.3f}ms {t_loop * 1e3:>9.1f}ms{loop_mark}"
            f"{t_lp:>10.2f}s{lp_mark} {t_lp / t_sort:>9.0f} {t_loop / t_sort:>9.0f} "
            f"{t_sort / t_floor:>10.2f} {t_fast / t_floor:>11.2f} {t_arg / t_floor:>13.2f}"
        )
        summary[S] = dict(sort=t_sort, fast=t_fast, floor=t_floor, lp=t_lp, gap=gap)
    print()
    for S, r in summary.items():
        print(f"S = {S}: largest |sort - LP| on the solved rows = {r['gap']:.1e}")
    print()
    if 100 in summary:
        r = summary[100]
        ok = r["lp"] / r["sort"] >= 1000
        print(f"goal S = 100: batched sort >= 1000x faster than the LP loop: "
              f"{r['lp'] / r['sort']:.0f}x -> {'met' if ok else 'NOT met'}")
    if 1000 in summary:
        r = summary[1000]
        ok = r["sort"] / r["floor"] <= 3
        print(f"goal S = 1000, A = {A}: batched sort within 3x of one np.sort: "
              f"{r['sort'] / r['floor']:.2f}x validated, {r['fast'] / r['floor']:.2f}x "
              f"check=False -> {'met' if ok else 'NOT met'}")
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=["all", "l1", "sets"], default="all")
    parser.add_argument("--set-sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--set-lp-max", type=int, default=100,
                        help="run the cvxpy forms of the sets up to this S")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--actions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--lp-rows", type=int, default=400,
                        help="solve at most this many LPs per size, extrapolate the rest")
    parser.add_argument("--loop-rows", type=int, default=4000,
                        help="time the row loop on at most this many rows, extrapolate")
    args = parser.parse_args(argv)
    if args.section in ("all", "l1"):
        l1_section(args)
    if args.section in ("all", "sets"):
        sets_section(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
