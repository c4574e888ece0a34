"""``rcmdp ground-truth``: exact optima and their test metrics on the paper's domains.

For each domain: the CMDP optimum of the estimated nominal model and of the true
training model (occupancy-measure LP), the certified bracket of the RCMDP optimum on the
estimated L1 ball with the targets of the three RCPG variants, the T-step CMDP optimum,
and the exact undiscounted test metrics of all these policies (stochastic and greedy) on
every test setting.  The maths and the columns are described in
:mod:`rcmdp_exact.reports` and ``docs/ground_truth.md``.
"""

from __future__ import annotations

import argparse

NAME = "ground-truth"
HELP = ("exact CMDP optima, a certified RCMDP bracket and their exact test metrics on the "
        "paper's domains")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..domains import PAPER_DOMAINS
    from ..ground_truth import VARIANTS

    parser.add_argument(
        "--domain", choices=("all", *PAPER_DOMAINS), default="all",
        help="domain to compute (default: all three)",
    )
    parser.add_argument(
        "--out", metavar="DIR", default=None,
        help="write ground_truth_settings.csv, ground_truth_summary.csv, "
             "ground_truth.json and ground_truth_policies.npz into DIR",
    )
    parser.add_argument(
        "--episodes", choices=("paper", "reference"), default="paper",
        help="estimation episodes: the paper's (100/100/10000, default) or the reference "
             "implementation's (10/20/10000)",
    )
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the estimation and of the 1B/2B draws (default 0)")
    parser.add_argument("--delta", type=float, default=0.1,
                        help="confidence of the Hoeffding radius (default 0.1)")
    parser.add_argument("--n-draws", type=int, default=None,
                        help="draws per N in tests 1B and 2B (default 50, the paper's)")
    parser.add_argument(
        "--offset-on", choices=("failure", "success"), default="failure",
        help="test 1B: the drawn offset replaces a failed move (default, the reference "
             "implementation) or a successful one (the paper's text)",
    )
    parser.add_argument(
        "--variants", nargs="*", choices=VARIANTS, default=list(VARIANTS),
        help="RCPG variants whose targets are computed (default: all three)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")


def run(args: argparse.Namespace) -> int:
    from ..domains import PAPER_DOMAINS
    from ..reports import format_ground_truth, ground_truth_table, save_ground_truth

    names = list(PAPER_DOMAINS) if args.domain == "all" else [args.domain]
    table = ground_truth_table(names, episodes=args.episodes, seed=args.seed,
                               delta=args.delta, n_draws=args.n_draws,
                               offset_on=args.offset_on, variants=args.variants,
                               progress=not args.no_progress)
    print(format_ground_truth(table))
    if args.out:
        for path in save_ground_truth(table, args.out):
            print(f"wrote {path}")
    return 0
