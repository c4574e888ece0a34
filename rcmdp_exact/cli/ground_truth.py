"""``rcmdp ground-truth``: exact optima and their test metrics on the paper's domains.

For each domain: the CMDP optimum of the estimated nominal model and of the true
training model (occupancy-measure LP), the certified bracket of the RCMDP optimum on the
estimated L1 ball with the targets of the three RCPG variants, the T-step CMDP optimum,
and the exact undiscounted test metrics of all these policies (stochastic and greedy) on
every test setting.  The maths and the columns are described in
:mod:`rcmdp_exact.protocol.ground_truth_table` and ``docs/ground_truth.md``.  Every argument
and the output folder are checked before any work starts.

``--model PATH.npz`` computes the same table for your own model (a file written by
``TabularCMDP.save``, with a horizon or ``--horizon T``), judged on itself: the set of
``--set`` is built around the model's own kernel (radius ``--radius``, default 0.1, on
the support ``--support``, the model's own next states by default) and the nominal
model is the model; ``--estimate [N]`` estimates the set from N episodes of the uniform
random policy instead (the paper's phase 1, default 100), ``--set-file`` gives it; the
tests are the model itself and the perturbations listed by ``--perturbations``.
"""

from __future__ import annotations

import argparse

from ..names import BRACKET_BOXES, BRACKET_SECONDS, PAPER_DOMAINS, VARIANTS
from ..names import GROUND_TRUTH_FILES as OUTPUT_FILES
from ._args import (
    add_force,
    add_model_options,
    add_progress,
    bounded_int,
    check_inputs,
    check_output,
    comma_list,
    load_user_model,
    probability,
    progress_enabled,
    refuse_with_model,
    seed_arg,
)
from .reproduce import connect_dask, dask_address

NAME = "ground-truth"
HELP = ("exact CMDP optima, a certified RCMDP bracket and their exact test metrics on the "
        "paper's domains or on your own model")

#: The time the command takes on an idle two-core machine (docs/cli.md, "Time per
#: command", measured by benchmarks/bench_commands.py); ``--help`` shows it.
TIME = 'about 9.2 s (the three domains)'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--domain", choices=("all", *PAPER_DOMAINS), default=None,
                        help="domain to compute (default: all three; not with --model)")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="write " + ", ".join(OUTPUT_FILES) + " into DIR (created if "
                             "missing; existing files are refused without --force)")
    add_force(parser)
    parser.add_argument("--estimation", choices=("paper", "reference"), default=None,
                        help="estimation episodes: the paper's (100/100/10000, default) or "
                             "the reference implementation's (10/20/10000)")
    parser.add_argument("--seed", type=seed_arg, default=0,
                        help="seed of the estimation and of the 1B/2B draws (default 0)")
    parser.add_argument("--delta", type=probability, default=0.1,
                        help="confidence of the Hoeffding radius, in (0, 1) (default 0.1)")
    parser.add_argument("--n-draws", type=bounded_int("draws"), default=None,
                        help="draws per N in tests 1B and 2B (default 50, the paper's; at "
                             "most 10^4)")
    parser.add_argument("--offset-on", choices=("failure", "success"), default=None,
                        help="test 1B: the drawn offset replaces a failed move (default, the "
                             "reference implementation) or a successful one (the paper's text)")
    parser.add_argument("--variants", type=comma_list(VARIANTS, "variants"),
                        default=None,
                        help="comma-separated RCPG variants whose targets are computed "
                             "(default: value,constraint,lagrangian; not with "
                             "--no-variants)")
    parser.add_argument("--no-variants", action="store_true",
                        help="compute no RCPG variant target")
    parser.add_argument("--time-limit", type=float, default=BRACKET_SECONDS,
                        metavar="SECONDS",
                        help=f"safety net of the RCMDP bracket per domain (default "
                             f"{BRACKET_SECONDS:g} s): the work budgets (--max-boxes) decide "
                             f"the bracket; a bracket stopped by this limit says so and "
                             f"is not reproducible")
    parser.add_argument("--max-boxes", type=bounded_int("boxes"), default=BRACKET_BOXES,
                        help=f"work budget of the RCMDP bracket per domain: boxes of its "
                             f"branch and bound (default {BRACKET_BOXES}; the bracket is "
                             f"certified whatever the budget, and the same on every run)")
    parser.add_argument("--dask", metavar="ADDRESS", type=dask_address, default=None,
                        help="run the bracket's branch and bound on the Dask cluster whose "
                             "scheduler is at ADDRESS (SCHEME://HOST:PORT); the same "
                             "certified bracket for the same box budget")
    add_model_options(parser, perturbations=True)
    add_progress(parser)


def run(args: argparse.Namespace) -> int:
    from .._checks import check_real

    parser = args._parser
    refuse_with_model(parser, args, ("domain", "estimation", "n_draws", "offset_on"))
    if args.no_variants and args.variants is not None:
        parser.error(f"--variants {','.join(args.variants)} and --no-variants contradict "
                     f"each other; give one of them")
    check_real(args.time_limit, "--time-limit", 0.0,
               low_open=True)
    variants = () if args.no_variants else (
        list(VARIANTS) if args.variants is None else args.variants)
    out = check_output(parser, args.out, kind="dir", force=args.force)
    if out is not None and out.is_dir():
        for fname in OUTPUT_FILES:
            check_output(parser, out / fname, kind="file", force=args.force)
    check_inputs(parser, args)
    # every argument is checked: now the solvers
    from ..protocol.ground_truth_table import (
        format_ground_truth,
        ground_truth_table,
        model_ground_truth,
        save_ground_truth,
    )

    kind = args.set_kind or "l1"
    own = load_user_model(args, need_horizon="rcmdp ground-truth (the T-step test metric)")
    from ..protocol.estimation import check_set_kind

    if own is None:
        from ..domains import paper_domain

        names = list(PAPER_DOMAINS) if args.domain in (None, "all") else [args.domain]
        check_set_kind(kind, paper_domain(names[0]), ())
    elif own.uset is not None:
        from ..robust import check_robust_inputs

        check_robust_inputs(own.model, own.uset, f"--set-file {own.set_path!r}")
    else:
        check_set_kind(kind, own.model, ())
    from ..ground_truth import BracketSettings
    from ..names import BRACKET_ASCENT
    from ..protocol.ground_truth_table import GroundTruthTableSpec, SetSpec

    bracket = BracketSettings(variants=variants, time_limit=args.time_limit,
                              max_boxes=args.max_boxes, n_ascent=BRACKET_ASCENT)
    if own is None:
        spec = GroundTruthTableSpec(set=SetSpec(kind=kind, delta=args.delta),
                               estimation=args.estimation or "paper", seed=args.seed,
                               offset_on=args.offset_on or "failure", bracket=bracket,
                               **({} if args.n_draws is None else {"n_draws": args.n_draws}))
    else:
        from ..names import USER_ESTIMATION_EPISODES, USER_RADIUS

        if own.uset is not None:
            set_spec = SetSpec(saved=own.uset, delta=args.delta)
        elif args.estimate is not None:
            set_spec = SetSpec(kind=kind, delta=args.delta)
        else:  # judged on itself: the set around the model
            set_spec = SetSpec(kind=kind, delta=args.delta,
                               radius=USER_RADIUS if args.radius is None else args.radius,
                               support=args.support or "nominal")
        spec = GroundTruthTableSpec(set=set_spec,
                                    estimation=args.estimate or USER_ESTIMATION_EPISODES,
                                    seed=args.seed, bracket=bracket)
    client = connect_dask(parser, args.dask)
    try:
        if own is None:
            table = ground_truth_table(names, spec, progress=progress_enabled(args),
                                       client=client)
        else:
            table = model_ground_truth(
                own.model, spec,
                perturbations=[(p["name"], p["group"], p["model"])
                               for p in own.perturbations],
                progress=progress_enabled(args), client=client)
    finally:
        if client is not None:
            client.close()
    print(format_ground_truth(table))
    if out is not None:
        args._interrupted = (f"the files in {out} are whole, but some may be those of an "
                             f"earlier run; run the same command again with --force")
        for path in save_ground_truth(table, out):  # each file whole, old or new
            print(f"wrote {path}")
        args._interrupted = f"the results were written into {out}"
    return 0
