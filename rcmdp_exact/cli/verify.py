"""``rcmdp verify``: check the paper's gradient theorems and estimators numerically.

Runs :func:`rcmdp_exact.theory.verify.verify_theorems` on the paper's three domains, on
variants of Safe Navigation 1 that show where the printed estimators become exact, and
on seeded random (Garnet) models, and prints one table: for every estimator, the
relative error and cosine similarity of its exact expected value to the
finite-difference gradient of the Lagrangian, with a pass/fail check on every row that
must be exact (and on every Monte Carlo row).  ``--json`` prints JSON instead.  The
exit status is 0 when every check passes and 1 otherwise; a selection with no model
(``--domain none --random 0 --no-variants``) or no check is refused (exit status 2).

``--model PATH.npz`` checks your own model (a file written by ``TabularCMDP.save``) with
the multipliers of ``--lam`` (default 1 per constraint), at its horizon and with
unbounded episodes (only unbounded episodes when it has no horizon); the paper's models
are then checked only when ``--domain``, ``--random`` or the variants are asked for.
"""

from __future__ import annotations

import argparse
import sys

from ..names import DEFAULT_HIDDEN, EXACT_TOL, PAPER_DOMAINS
from ._args import (
    add_model_options,
    add_progress,
    bounded_int,
    load_user_model,
    progress_enabled,
    seed_arg,
)

NAME = "verify"
HELP = ("check Theorems 1 and 2 and the paper's sampled gradient estimators against "
        "finite differences")

_DOMAINS = PAPER_DOMAINS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--domain", choices=("all", "none", *_DOMAINS), default=None,
        help="paper domain(s) to check (default: all three; none with --model)",
    )
    parser.add_argument("--random", type=bounded_int("random_models", 0), default=None,
                        metavar="N",
                        help="number of seeded random Garnet models (default 2; 0 with "
                             "--model; at most 1000)")
    parser.add_argument("--no-variants", action="store_true", default=None,
                        help="skip the Safe Navigation 1 variants (R, C on (s, a); gamma = "
                             "1; skipped by default with --model)")
    add_model_options(parser, kinds=False, set_file=False, estimation=False)
    parser.add_argument("--lam", type=float, nargs="+", default=None, metavar="LAM",
                        help="with --model: the multipliers of the checked Lagrangian, one "
                             "per constraint or one for all (default 1)")
    parser.add_argument("--tabular-only", action="store_true",
                        help="check the tabular softmax form only (no MLP)")
    parser.add_argument("--hidden", type=bounded_int("hidden"), default=None,
                        help=f"hidden width of the MLPs (default {DEFAULT_HIDDEN}; at most "
                             f"10^4; not with --tabular-only)")
    parser.add_argument("--seed", type=seed_arg, default=0,
                        help="seed of the random parameters (default 0)")
    parser.add_argument("--episodes", type=bounded_int("mc_episodes", 0), default=0,
                        metavar="N",
                        help="also sample each estimator over N episodes (default 0: off; "
                             "at most 10^7)")
    parser.add_argument("--tol", type=float, default=EXACT_TOL,
                        help=f"largest relative error of a row expected to be exact "
                             f"(default {EXACT_TOL:g})")
    add_progress(parser)


def run(args: argparse.Namespace) -> int:
    own_model = args.model is not None
    parser = args._parser
    if args.lam is not None and not own_model:
        parser.error("--lam applies to --model (the paper's models are checked at their "
                     "initial multipliers); add --model PATH.npz or drop --lam")
    if args.horizon is not None and not own_model:
        parser.error("--horizon applies to your own model: add --model PATH.npz or drop "
                     "--horizon")
    if args.domain is None:
        args.domain = "none" if own_model else "all"
    if args.random is None:
        args.random = 0 if own_model else 2
    if args.no_variants is None:
        args.no_variants = own_model
    if args.domain == "all":
        domains = _DOMAINS
    elif args.domain == "none":
        domains = ()
    else:
        domains = (args.domain,)
    kinds = ("softmax",) if args.tabular_only else ("softmax", "mlp")
    if not domains and args.random == 0 and args.no_variants and not own_model:
        parser.error("nothing to check: --domain none, --random 0 and --no-variants select "
                     "no model; give a domain, --random N >= 1 or drop --no-variants")
    if args.tabular_only and args.hidden is not None:
        parser.error("--hidden does not apply to --tabular-only: the width is that of the "
                     "MLPs, which --tabular-only leaves out; drop one of them")
    if args.episodes == 1:
        parser.error("argument --episodes: 1 episode gives no spread; give 0 (off) or "
                     "at least 2")
    if not 0 < args.tol < float("inf"):
        parser.error(f"argument --tol: {args.tol} is not a positive number")
    hidden = DEFAULT_HIDDEN if args.hidden is None else args.hidden
    own = load_user_model(args)
    from ..theory.verify import VerifyTable, verify_suite, verify_theorems

    table = VerifyTable()
    if own is not None:
        from pathlib import Path

        table = verify_theorems(own.model, args.lam, label=Path(args.model).name,
                                parametrisations=kinds,
                                horizons=("model", None) if own.model.horizon else (None,),
                                seed=args.seed, hidden=hidden, n_episodes=args.episodes,
                                tol=args.tol, progress=progress_enabled(args))
    if domains or args.random or not args.no_variants:
        table = table + verify_suite(domains=domains, n_random=args.random,
                                     variants=not args.no_variants, parametrisations=kinds,
                                     seed=args.seed, hidden=hidden, n_episodes=args.episodes,
                                     tol=args.tol, progress=progress_enabled(args))
    checked = sum(r.get("check") in ("pass", "fail") for r in table.rows)
    if checked == 0:
        print(f"rcmdp verify: error: the selection made {len(table.rows)} rows and no check; "
              f"widen it (a paper domain, --random N or the variants)", file=sys.stderr)
        return 2
    print(table.to_json() if args.json else table.to_text())
    return 0 if table.passed else 1
