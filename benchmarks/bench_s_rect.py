"""Benchmark of the s-rectangular L1 set: the robust Bellman update and the worst case.

Dense random sets with S states, A actions and S next states (every nominal row a
Dirichlet(1) draw, z normal and different for every (s, a), radius uniform in [0, 3]):

* ``bellman_max_min`` on all states (the s-rectangular robust Bellman optimality update):
  ``level`` (Newton on the level, the default on the whole simplex; best of --repeats),
  ``dual`` (the chord search on the budget multiplier, used for policy boxes, compiled
  by numba: best of --repeats, so that the first call's compilation is not what is
  timed), and ``LP`` (one joint ``scipy.optimize.linprog`` per state, HiGHS; one pass);
* ``worst_case(z, policy)`` for a random stochastic policy: ``sort`` (the exact greedy
  budget split; best of --repeats) and ``cvxpy LP`` (one HiGHS LP per state through a
  parametrised cvxpy problem compiled once, before the timing; one pass).

The LPs run up to S = A = --lp-max (a 200 x 200 state's LP has 80,000 variables).  The
goal: ``level`` under 1 s at S = A = 200.  Run with

    python benchmarks/bench_s_rect.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rcmdp_exact.uncertainty import SRectL1Ball


def best_time(fn, repeats: int) -> tuple[float, object]:
    out = fn()
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def one_time(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def make_problem(S: int, A: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    nominal = rng.dirichlet(np.ones(S), size=(S, A))
    z = rng.normal(size=(S, A, S))
    radius = rng.uniform(0.0, 3.0, S)
    policy = rng.dirichlet(np.ones(A), size=S)
    return SRectL1Ball(nominal, radius), z, policy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200],
                        help="S = A = n of each run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lp-max", type=int, default=50,
                        help="largest S = A for which the LPs are run")
    args = parser.parse_args(argv)
    print(f"s-rectangular L1 set, S = A = n, dense; times: best of {args.repeats} (the "
          f"LPs: one pass)\n")
    head = (f"{'S=A':>5} {'level':>10} {'dual':>10} {'LP':>11} {'LP/level':>9} "
            f"{'dual/level':>10} {'|level-LP|':>10} {'|level-dual|':>12} {'max gap':>9}")
    print("bellman_max_min (all states)")
    print(head)
    print("-" * len(head))
    goal = None
    for n in args.sizes:
        uset, z, policy = make_problem(n, n)
        t_level, lev = best_time(lambda b=uset, z=z: b.bellman_max_min(z), args.repeats)
        t_dual, dual = best_time(lambda b=uset, z=z: b.bellman_max_min(z, method="dual"),
                                 args.repeats)
        lp_txt, ratio, dlp = f"{'-':>11}", f"{'-':>9}", f"{'-':>10}"
        if n <= args.lp_max:
            t_lp, lp = one_time(lambda b=uset, z=z: b.bellman_max_min(z, method="lp"))
            lp_txt = f"{t_lp:>10.3f}s"
            ratio = f"{t_lp / t_level:>9.0f}"
            dlp = f"{np.abs(lp.value - lev.value).max():>10.1e}"
        gap = max(float(lev.gap.max()), float(dual.gap.max()))
        print(f"{n:>5} {t_level * 1e3:>8.1f}ms {t_dual * 1e3:>8.1f}ms {lp_txt} {ratio} "
              f"{t_dual / t_level:>10.1f} {dlp} "
              f"{np.abs(lev.value - dual.value).max():>12.1e} {gap:>9.1e}")
        if n == 200:
            goal = t_level
    print()
    print("worst_case(z, policy) (all states)")
    head = f"{'S=A':>5} {'sort':>10} {'cvxpy LP':>11} {'LP/sort':>9} {'|sort-LP|':>10}"
    print(head)
    print("-" * len(head))
    for n in args.sizes:
        uset, z, policy = make_problem(n, n)
        t_sort, res = best_time(lambda b=uset, z=z, p=policy: b.worst_case(z, p),
                                args.repeats)
        lp_txt, ratio, dlp = f"{'-':>11}", f"{'-':>9}", f"{'-':>10}"
        if n <= args.lp_max:
            warm = make_problem(n, n, seed=1)  # compiles the parametrised LP of this size
            warm[0].worst_case(warm[1], warm[2], method="lp")
            t_lp, lp = one_time(lambda b=uset, z=z, p=policy: b.worst_case(z, p,
                                                                           method="lp"))
            lp_txt = f"{t_lp:>10.3f}s"
            ratio = f"{t_lp / t_sort:>9.0f}"
            dlp = f"{np.abs(lp.value - res.value).max():>10.1e}"
        print(f"{n:>5} {t_sort * 1e3:>8.1f}ms {lp_txt} {ratio} {dlp}")
    print()
    if goal is not None:
        print(f"goal S = A = 200: bellman_max_min under 1 s: {goal:.3f} s -> "
              f"{'met' if goal < 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
