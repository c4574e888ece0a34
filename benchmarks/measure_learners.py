"""Long measurements of the learners quoted in docs/learners.md.

* ``exact``: exact-gradient CPG and PG on Inventory (entropy 0, 5000 steps) against the
  LP optimum (``solve_cmdp``);
* ``gap``: sampled CPG on Inventory over 20 seeds (5000 episodes, default settings):
  ending exact value and discounted cost against the LP optimum;
* ``inside``: Adversarial RCPG over 20 seeds per domain (5000 episodes, default
  settings, the paper's estimation): fraction of pairs inside their radius at the end,
  and whether the learner's dynamics ever beat the exact worst case.

Usage::

    python benchmarks/measure_learners.py exact
    python benchmarks/measure_learners.py gap [--seeds 20]
    python benchmarks/measure_learners.py inside [--seeds 20] [--domains nav1,nav2,inventory]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import rcmdp_exact as rx
from rcmdp_exact.learners import train


def exact() -> None:
    model = rx.domains.inventory()
    opt = rx.solve_cmdp(model)
    print(f"LP optimum {opt.value:.3f} at cost {opt.costs[0]:.3f} (d = {model.d[0]:g})")
    for alg in ("cpg", "pg"):
        t = time.perf_counter()
        res = train(model, alg, gradient="exact", entropy=0.0, episodes=5000,
                    eval_every=1000, progress=False)
        rec = res.records
        print(f"{alg}: value {rec['eval_train_stochastic_value'].round(3).tolist()} "
              f"cost {rec['eval_train_stochastic_cost'][:, 0].round(3).tolist()} "
              f"lambda {res.lam.round(3).tolist()} ({time.perf_counter() - t:.1f} s); "
              f"gap {opt.value - rec['eval_train_stochastic_value'][-1]:.3f}")


def gap(seeds: int) -> None:
    model = rx.domains.inventory()
    opt = rx.solve_cmdp(model)
    rows = []
    t = time.perf_counter()
    for seed in range(seeds):
        res = train(model, "cpg", seed=seed, episodes=5000, eval_every=5000, progress=False)
        rec = res.records
        rows.append((rec["eval_train_stochastic_value"][-1],
                     rec["eval_train_stochastic_cost"][-1, 0],
                     rec["eval_train_greedy_value"][-1], rec["eval_train_greedy_cost"][-1, 0]))
    a = np.array(rows)
    g = opt.value - a[:, 0]
    print(f"sampled CPG on Inventory, {seeds} seeds x 5000 episodes "
          f"({time.perf_counter() - t:.0f} s): LP optimum {opt.value:.3f} (cost d = 6)")
    print(f"  stochastic: gap mean {g.mean():.2f} sd {g.std(ddof=1):.2f} min {g.min():.2f} "
          f"max {g.max():.2f}; cost mean {a[:, 1].mean():.2f} sd {a[:, 1].std(ddof=1):.2f} "
          f"(over 1.01 d in {(a[:, 1] > 6.06).sum()} of {seeds})")
    gg = opt.value - a[:, 2]
    print(f"  greedy: gap mean {gg.mean():.2f} sd {gg.std(ddof=1):.2f}; cost mean "
          f"{a[:, 3].mean():.2f} sd {a[:, 3].std(ddof=1):.2f}")


def inside(seeds: int, domains) -> None:
    for dom in domains:
        true = rx.domains.paper_domain(dom)
        est = rx.estimate(true, rx.domains.ESTIMATION_EPISODES[dom]["paper"], seed=0,
                          progress=False)
        final, mean_last, beat = [], [], 0
        t = time.perf_counter()
        for seed in range(seeds):
            res = train(est.nominal, "adversarial-rcpg", ball=est.ball, seed=seed,
                        episodes=5000, eval_every=500, progress=False)
            rec = res.records
            final.append(rec["adv_inside"][-1])
            mean_last.append(rec["adv_inside"][-500:].mean())
            ok = rec["eval_learner_stochastic_value"] >= rec["eval_worst_stochastic_value"] - 1e-9
            beat += int((~ok).sum())
        f = np.array(final)
        print(f"{dom}: adversary inside fraction at the end over {seeds} seeds: mean "
              f"{f.mean():.3f} min {f.min():.3f}, >= 0.95 in {(f >= 0.95).sum()}; mean over "
              f"the last 500 episodes {np.mean(mean_last):.3f}; evaluations where the "
              f"learner's value fell below the exact worst case: {beat} "
              f"({time.perf_counter() - t:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("exact", "gap", "inside"))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--domains", default="nav1,nav2,inventory")
    args = parser.parse_args()
    if args.what == "exact":
        exact()
    elif args.what == "gap":
        gap(args.seeds)
    else:
        inside(args.seeds, args.domains.split(","))


if __name__ == "__main__":
    main()
