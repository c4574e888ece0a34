"""Microseconds per environment step of the six learners, beside the reference's.

The published Keras implementation takes about 8.8 ms per environment step for PG and
about 27 ms for Adversarial RCPG (docs/protocol.md).  Per-step time here is the *marginal*
cost of more steps: two runs with step budgets N1 < N2 (``train(..., steps=N)``),
``(loop(N2) - loop(N1)) / (N2 - N1)`` where ``loop`` is the time spent inside the
training loop (``TrainResult.timings["loop"]``: it excludes compilation or loading the
compiled loop from numba's cache, the adversary's pre-fit and the periodic exact
evaluation, which are printed separately).  Each pair of runs is repeated and the
fastest kept (a shared machine).

Usage::

    python benchmarks/bench_learners.py            # N1 = 20,000, N2 = 120,000 steps
    python benchmarks/bench_learners.py --quick    # N1 = 5,000, N2 = 25,000
"""

from __future__ import annotations

import argparse

import rcmdp_exact as rx
from rcmdp_exact.learners import ALGORITHMS, train

REFERENCE_MS = {"pg": 8.8, "adversarial-rcpg": 27.0}
CPU = True  # time the loop by process CPU time (a shared machine); --wall for wall time
GOAL_US = {"pg": 5.0, "cpg": 5.0, "adversarial-rcpg": 75.0}


def loop_time(model, uset, alg, steps, repeat):
    best, res = float("inf"), None
    for _ in range(repeat):
        res = train(model, alg, uset=uset, episodes=None, steps=steps, seed=0,
                    eval_every=None, progress=False)
        best = min(best, res.timings["loop_cpu" if CPU else "loop"])
    return best, res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--wall", action="store_true",
                        help="wall-clock time instead of process CPU time")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--domains", default="nav1,inventory")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    args = parser.parse_args()
    global CPU
    CPU = not args.wall
    n1, n2 = (5_000, 25_000) if args.quick else (20_000, 120_000)
    print(f"marginal microseconds per environment step, steps {n1:,} -> {n2:,}, "
          f"best of {args.repeat}, {'wall-clock' if args.wall else 'process CPU'} time")
    print(f"{'domain':<10}{'algorithm':<18}{'us/step':>9}{'reference':>11}{'speed-up':>10}"
          f"{'goal':>7}{'x CPG':>7}{'setup s':>9}{'prefit s':>9}{'eval ms':>9}")
    for dom in args.domains.split(","):
        model = rx.domains.paper_domain(dom)
        est = rx.estimate(model, rx.domains.ESTIMATION_EPISODES[dom]["paper"], seed=0,
                          progress=False)
        cpg = None
        for alg in args.algorithms.split(","):
            uset = est.uset if ALGORITHMS[alg].robust else None
            t1, r1 = loop_time(est.nominal, uset, alg, n1, args.repeat)
            t2, r2 = loop_time(est.nominal, uset, alg, n2, args.repeat)
            us = (t2 - t1) / (r2.steps - r1.steps) * 1e6
            if alg == "cpg":
                cpg = us
            ev = train(est.nominal, alg, uset=uset, episodes=2, seed=0, eval_every=1,
                       progress=False)
            eval_ms = ev.timings["evaluation"] / 2 * 1e3
            ref = REFERENCE_MS.get(alg)
            ref_s = f"{ref:.1f} ms" if ref else ""
            ratio = f"{ref * 1e3 / us:,.0f}x" if ref else ""
            goal = f"{GOAL_US[alg]:g}" if alg in GOAL_US else "2xCPG"
            rel = f"{us / cpg:.2f}" if cpg else ""
            print(f"{dom:<10}{alg:<18}{us:>9.2f}{ref_s:>11}{ratio:>10}{goal:>7}{rel:>7}"
                  f"{r2.timings['setup']:>9.2f}{r2.timings['prefit']:>9.2f}{eval_ms:>9.1f}")


if __name__ == "__main__":
    main()
