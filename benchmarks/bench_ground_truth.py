"""Timings of the ground truth: the ``rcmdp ground-truth`` goal and the LP solvers.

1. The whole ``rcmdp ground-truth`` pipeline per paper domain (estimation, LPs, bracket
   with the three RCPG variants, exact test metrics of every policy on every test
   setting) and in total, against the goal of two minutes for all three domains.
2. The occupancy LP (discounted, and finite horizon with the T-step budget) by HiGHS and
   by CLARABEL on each training model, side by side with the ratio.

    python benchmarks/bench_ground_truth.py [--repeats N]
"""

from __future__ import annotations

import argparse
import time

from rcmdp_exact.domains import PAPER_DOMAINS, paper_domain
from rcmdp_exact.ground_truth import solve_cmdp, solve_cmdp_finite_horizon
from rcmdp_exact.reports import ground_truth_table

GOAL_SECONDS = 120.0


def best_of(f, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="LP repeats (minimum kept)")
    args = ap.parse_args()

    print("rcmdp ground-truth pipeline (one run per domain, then all three together)")
    print(f"{'domain':<10} {'seconds':>8}")
    for name in PAPER_DOMAINS:
        t = best_of(lambda name=name: ground_truth_table([name], progress=False), 1)
        print(f"{name:<10} {t:8.2f}")
    total = best_of(lambda: ground_truth_table(progress=False), 1)
    print(f"{'all':<10} {total:8.2f}   goal {GOAL_SECONDS:.0f} s, "
          f"ratio goal/time {GOAL_SECONDS / total:.1f}")

    print()
    print(f"occupancy LPs, minimum of {args.repeats} runs (seconds); x = CLARABEL / HIGHS")
    print(f"{'domain':<10} {'HIGHS':>8} {'CLARABEL':>9} {'x':>6} {'T HIGHS':>9} "
          f"{'T CLARABEL':>11} {'x':>6}  |V_H - V_C|  |V^T_H - V^T_C|")
    for name in PAPER_DOMAINS:
        m = paper_domain(name)
        res = {}
        times = {}
        for sv in ("HIGHS", "CLARABEL"):
            for key, fn in ((sv, solve_cmdp), ("T" + sv, solve_cmdp_finite_horizon)):
                def job(key=key, fn=fn, sv=sv, m=m, res=res):
                    res[key] = fn(m, solver=sv)

                times[key] = best_of(job, args.repeats)
        print(f"{name:<10} {times['HIGHS']:8.3f} {times['CLARABEL']:9.3f} "
              f"{times['CLARABEL'] / times['HIGHS']:6.2f} {times['THIGHS']:9.3f} "
              f"{times['TCLARABEL']:11.3f} {times['TCLARABEL'] / times['THIGHS']:6.2f}  "
              f"{abs(res['HIGHS'].value - res['CLARABEL'].value):11.2e}  "
              f"{abs(res['THIGHS'].value - res['TCLARABEL'].value):14.2e}")


if __name__ == "__main__":
    main()
