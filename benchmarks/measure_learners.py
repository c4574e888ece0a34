"""Long measurements of the learners quoted in docs/learners.md.

* ``exact``: exact-gradient CPG and PG on Inventory (entropy 0, 5000 steps, the
  exact-mode defaults) against the LP optimum (``solve_cmdp``), for seed 0 (the
  acceptance run) and over ``--seeds`` seeds;
* ``gap``: sampled CPG on Inventory over 20 seeds (5000 episodes, default settings):
  ending exact value and discounted cost against the LP optimum;
* ``inside``: Adversarial RCPG over 20 seeds per domain (5000 episodes, the paper's
  estimation) for each adversary rule (``--rules``: ``default`` = the batch-hinge
  multiplier with its margin, ``paper`` = the visited pair's excess, Algorithm 1,
  ``mixture`` = the mixture form): fraction of pairs inside their radius at the end,
  and how often a reported worst case (``eval_learner_*``) or the raw adversary
  (``eval_adversary_*``) fell below the exact worst case of the ball.

Usage::

    python benchmarks/measure_learners.py exact [--seeds 20]
    python benchmarks/measure_learners.py gap [--seeds 20]
    python benchmarks/measure_learners.py inside [--seeds 20] [--domains nav1,nav2,inventory]
        [--rules default,paper,mixture]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import rcmdp_exact as rx
from rcmdp_exact.learners import train

RULES = {
    "default": {},
    "paper": {"adversary_multiplier_signal": "visited"},
    "mixture": {"adversary_form": "mixture"},
}


def exact(seeds: int) -> None:
    model = rx.domains.inventory()
    opt = rx.solve_cmdp(model)
    d = float(model.d[0])
    print(f"LP optimum {opt.value:.3f} at cost {opt.costs[0]:.3f} (d = {d:g}), "
          f"multiplier {opt.lam[0]:.4f}")
    for alg in ("cpg", "pg"):
        t = time.perf_counter()
        res = train(model, alg, gradient="exact", entropy=0.0, episodes=5000,
                    eval_every=500, progress=False)
        rec = res.records
        print(f"{alg} seed 0 ({time.perf_counter() - t:.1f} s): value "
              f"{rec['eval_train_stochastic_value'].round(3).tolist()}")
        print(f"  cost {rec['eval_train_stochastic_cost'][:, 0].round(3).tolist()}")
        print(f"  final lambda {res.lam.round(4).tolist()}; gap to the LP optimum "
              f"{opt.value - rec['eval_train_stochastic_value'][-1]:.3f}; policy in stock 0 "
              f"{res.policy_table()[0].round(3).tolist()}")
    rows = []
    t = time.perf_counter()
    for seed in range(seeds):
        for alg in ("cpg", "pg"):
            res = train(model, alg, gradient="exact", entropy=0.0, episodes=5000,
                        eval_every=None, progress=False, seed=seed)
            rec = res.records
            rows.append((alg, seed, rec["eval_train_stochastic_value"][-1],
                         rec["eval_train_stochastic_cost"][-1, 0]))
    for alg in ("cpg", "pg"):
        v = np.array([r[2] for r in rows if r[0] == alg])
        c = np.array([r[3] for r in rows if r[0] == alg])
        ok = (np.abs(opt.value - v) <= 0.5) & (c <= 1.01 * d)
        print(f"{alg}, seeds 0-{seeds - 1}: gap to the LP optimum min {(opt.value - v).min():.3f} "
              f"median {np.median(opt.value - v):.3f} max {(opt.value - v).max():.3f}; cost min "
              f"{c.min():.3f} max {c.max():.3f}; within 0.5 and 1% of d in {ok.sum()} of "
              f"{seeds} (failing seeds {[i for i in range(seeds) if not ok[i]]})")
    print(f"({time.perf_counter() - t:.0f} s for the {2 * seeds} runs)")


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


def inside(seeds: int, domains, rules) -> None:
    for dom in domains:
        true = rx.domains.paper_domain(dom)
        est = rx.estimate(true, rx.domains.ESTIMATION_EPISODES[dom]["paper"], seed=0,
                          progress=False)
        for rule in rules:
            final, mean_last, beat, raw_beat, n_eval = [], [], 0, 0, 0
            t = time.perf_counter()
            for seed in range(seeds):
                res = train(est.nominal, "adversarial-rcpg", uset=est.uset, seed=seed,
                            episodes=5000, eval_every=500, progress=False, **RULES[rule])
                rec = res.records
                final.append(res.info["adv_inside_final"])
                mean_last.append(rec["adv_inside"][-500:].mean())
                worst = rec["eval_worst_stochastic_value"] - 1e-9
                beat += int((rec["eval_learner_stochastic_value"] < worst).sum())
                raw_beat += int((rec["eval_adversary_stochastic_value"] < worst).sum())
                n_eval += worst.size
            f = np.array(final)
            print(f"{dom} {rule}: inside at the end over {seeds} seeds: mean {f.mean():.3f} "
                  f"min {f.min():.3f}, >= 0.95 in {(f >= 0.95).sum()}; mean over the last 500 "
                  f"episodes {np.mean(mean_last):.3f}; evaluations below the exact worst case: "
                  f"reported {beat} of {n_eval}, raw adversary {raw_beat} of {n_eval} "
                  f"({time.perf_counter() - t:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("exact", "gap", "inside"))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--domains", default="nav1,nav2,inventory")
    parser.add_argument("--rules", default="default,paper,mixture")
    args = parser.parse_args()
    if args.what == "exact":
        exact(args.seeds)
    elif args.what == "gap":
        gap(args.seeds)
    else:
        inside(args.seeds, args.domains.split(","), args.rules.split(","))


if __name__ == "__main__":
    main()
