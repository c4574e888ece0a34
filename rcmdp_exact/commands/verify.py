"""``rcmdp verify``: check the paper's gradient theorems and estimators numerically.

Runs :func:`rcmdp_exact.verify.verify_theorems` on the paper's three domains, on
variants of Safe Navigation 1 that show where the printed estimators become exact, and
on seeded random (Garnet) models, and prints one table: for every estimator, the
relative error and cosine similarity of its exact expected value to the
finite-difference gradient of the Lagrangian, with a pass/fail check on every row that
must be exact (and on every Monte Carlo row).  ``--json`` prints JSON instead.  The
exit status is 0 when every check passes and 1 otherwise.
"""

from __future__ import annotations

import argparse

from ..parametrisations import DEFAULT_HIDDEN
from ..verify import EXACT_TOL, verify_suite
from ._args import add_progress, non_negative_int, positive_int, progress_enabled, seed_arg

NAME = "verify"
HELP = ("check Theorems 1 and 2 and the paper's sampled gradient estimators against "
        "finite differences")

_DOMAINS = ("inventory", "nav1", "nav2")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--domain", choices=("all", "none", *_DOMAINS), default="all",
        help="paper domain(s) to check (default: all three)",
    )
    parser.add_argument("--random", type=non_negative_int, default=2, metavar="N",
                        help="number of seeded random Garnet models (default 2)")
    parser.add_argument("--no-variants", action="store_true",
                        help="skip the Safe Navigation 1 variants (R, C on (s, a); gamma = 1)")
    parser.add_argument("--tabular-only", action="store_true",
                        help="check the tabular softmax form only (no MLP)")
    parser.add_argument("--hidden", type=positive_int, default=DEFAULT_HIDDEN,
                        help=f"hidden width of the MLPs (default {DEFAULT_HIDDEN})")
    parser.add_argument("--seed", type=seed_arg, default=0,
                        help="seed of the random parameters (default 0)")
    parser.add_argument("--episodes", type=non_negative_int, default=0, metavar="N",
                        help="also sample each estimator over N episodes (default 0: off)")
    parser.add_argument("--tol", type=float, default=EXACT_TOL,
                        help=f"largest relative error of a row expected to be exact "
                             f"(default {EXACT_TOL:g})")
    add_progress(parser)


def run(args: argparse.Namespace) -> int:
    if args.domain == "all":
        domains = _DOMAINS
    elif args.domain == "none":
        domains = ()
    else:
        domains = (args.domain,)
    kinds = ("softmax",) if args.tabular_only else ("softmax", "mlp")
    if not args.tol > 0:
        args._parser.error(f"argument --tol: {args.tol} is not a positive number")
    table = verify_suite(domains=domains, n_random=args.random,
                         variants=not args.no_variants, parametrisations=kinds,
                         seed=args.seed, hidden=args.hidden, n_episodes=args.episodes,
                         tol=args.tol, progress=progress_enabled(args))
    print(table.to_json() if args.json else table.to_text())
    return 0 if table.passed else 1
