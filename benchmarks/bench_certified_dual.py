"""The certified Lagrangian dual on small models: cost of certifying D, against a grid.

For each group of seeded models (``rcmdp_exact.testing.robust_cmdps`` with budgets
``slack`` above the least-cost robust policy's, so that a Slater point exists, and the
L1 ball of the strategy), ``certified_dual`` with its defaults (tol 1e-6, at most 2000
robust fixed points) is timed beside the reference a user would otherwise write: the
minimum of g over a grid of 201 multipliers per axis on [0, lam_max], each g a robust
policy iteration (no certificate for the points between).  Printed per group: the
median and maximum wall time of each, the median and maximum number of robust fixed
points of the certificate, how many converged, and the ratio of median times
(grid / certificate).  Each time is the best of ``--repeat`` runs.

    python benchmarks/bench_certified_dual.py [--models 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
import warnings

import numpy as np

import rcmdp_exact as rx
from rcmdp_exact import testing as T

GROUPS = (  # label, strategy options
    ("S in {2, 3}, A in {2, 3}, K = 1", dict(n_states=(2, 3), n_actions=(2, 3),
                                              n_constraints=1)),
    ("S in {4, 5}, A in {2, 3}, K = 1", dict(n_states=(4, 5), n_actions=(2, 3),
                                              n_constraints=1)),
    ("S in {2, 3}, A = 2, K = 2", dict(n_states=(2, 3), n_actions=2, n_constraints=2)),
)
GRID = 201


def best_of(repeat: int, f):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def grid_minimum(model, uset, lam_max) -> float:
    top = [float(x) if np.isfinite(x) else 10.0 for x in lam_max]
    axes = [np.linspace(0.0, max(t, 1e-9), GRID) for t in top]
    if len(axes) == 2:  # a coarser grid in two dimensions: 201 points per axis is 40401
        axes = [np.linspace(0.0, max(t, 1e-9), 41) for t in top]
    best = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for lam in itertools.product(*axes):
            lam = np.array(lam)
            g = rx.robust_value_iteration(model, uset, lam, method="policy_iteration",
                                          progress=False).value + float(lam @ model.d)
            best = min(best, g)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    rx.certified_dual(*T.example(T.robust_cmdps(slack=0.1), seed=0))  # warm-up (imports)
    print(f"{'group':34s} {'certified s (med/max)':>22s} {'fixed points':>13s} "
          f"{'converged':>9s} {'grid s (med/max)':>18s} {'ratio':>6s}")
    for label, options in GROUPS:
        t_cert, t_grid, evals, conv = [], [], [], 0
        for seed in range(args.models):
            model, uset = T.example(T.robust_cmdps(slack=0.1, **options), seed=seed)
            t, res = best_of(args.repeat, lambda m=model, b=uset: rx.certified_dual(m, b))
            t_cert.append(t)
            evals.append(res.evaluations)
            conv += res.status == "converged"
            t, g = best_of(1, lambda m=model, b=uset, r=res: grid_minimum(m, b, r.lam_max))
            t_grid.append(t)
            if not res.lo - 1e-9 <= g:
                raise SystemExit(f"{label}, model {seed}: grid minimum {g} below the "
                                 f"certified lo {res.lo}")
        mc, mg = statistics.median(t_cert), statistics.median(t_grid)
        print(f"{label:34s} {mc:10.3f} / {max(t_cert):8.3f} "
              f"{int(statistics.median(evals)):6d} / {max(evals):5d} "
              f"{conv:5d}/{args.models:<3d} {mg:8.3f} / {max(t_grid):7.3f} {mg / mc:6.1f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
