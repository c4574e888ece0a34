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

Every timing is the minimum over repeats (the machine may be shared); the floor and
the batched sort are timed in turn, round-robin.  Run with

    python benchmarks/bench_inner.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--actions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--lp-rows", type=int, default=400,
                        help="solve at most this many LPs per size, extrapolate the rest")
    parser.add_argument("--loop-rows", type=int, default=4000,
                        help="time the row loop on at most this many rows, extrapolate")
    args = parser.parse_args(argv)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
