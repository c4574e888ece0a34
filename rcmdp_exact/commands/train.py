"""``rcmdp train``: train one of the paper's six learners and judge it exactly.

The domain's model is estimated first (the paper's phase 1: uniform random episodes,
Hoeffding L1 ball); the learner trains on the estimated nominal model (or on the true
training model with ``--train-on true``), robust learners on the ball.  The final
policy is evaluated exactly (discounted value and cost, and the T-step test metric) on
the true training model and, for every learner, on the worst case of the ball, and
printed beside the CMDP optimum of the true model (occupancy-measure LP) and the
certified RCMDP bracket of the ball.
"""

from __future__ import annotations

import argparse

from ._args import (
    add_force,
    add_progress,
    bounded_int,
    check_npz_output,
    progress_enabled,
    refuse_inapplicable,
    seed_arg,
)

NAME = "train"
HELP = ("train PG, CPG, an RCPG variant or Adversarial RCPG on a paper domain and compare "
        "it with the exact optimum")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..names import (
        ADVERSARY_FORMS,
        ADVERSARY_MULTIPLIER_SIGNALS,
        ALGORITHMS,
        CRITICS,
        GRADIENTS,
        INNERS,
        MULTIPLIER_UPDATES,
        PAPER_DOMAINS,
    )

    parser.add_argument("domain", choices=PAPER_DOMAINS, metavar="DOMAIN",
                        help=f"paper domain: {', '.join(PAPER_DOMAINS)}")
    parser.add_argument("algorithm", choices=tuple(ALGORITHMS), metavar="ALGORITHM",
                        help=f"learner: {', '.join(ALGORITHMS)}")
    parser.add_argument("--seed", type=seed_arg, default=0,
                        help="seed of the estimation and of the training (default 0)")
    parser.add_argument("--episodes", type=bounded_int("episodes"), default=5000,
                        help="training episodes (default 5000, the paper's; at most 10^7)")
    parser.add_argument("--steps", type=bounded_int("steps"), default=None,
                        help="stop after this many environment steps as well (sampled "
                             "gradients only; at most 10^10)")
    parser.add_argument("--critic", choices=CRITICS, default=None,
                        help="RCPG worst case from the learned critic (default) or exact "
                             "(rcpg-* with sampled gradients only)")
    parser.add_argument("--gradient", choices=GRADIENTS, default="sampled",
                        help="sampled episodes (default) or one exact gradient step each")
    parser.add_argument("--inner", choices=INNERS, default=None,
                        help="inner solver of the worst case (default sort; the robust "
                             "learners only)")
    parser.add_argument("--multiplier-update", choices=MULTIPLIER_UPDATES, default=None,
                        help="Adam on log lambda (reference; the default with sampled "
                             "gradients), SGD (paper) or the augmented Lagrangian (the "
                             "default with exact gradients, which it needs; not for pg, "
                             "which learns no multiplier)")
    parser.add_argument("--adversary-multiplier-signal", choices=ADVERSARY_MULTIPLIER_SIGNALS,
                        default=None,
                        help="adversarial-rcpg: what drives the adversary's multiplier: the "
                             "mean hinge of the deviation batch (default), its mean "
                             "excess, or the visited pair's excess (the paper's rule)")
    parser.add_argument("--adversary-form", choices=ADVERSARY_FORMS, default=None,
                        help="adversarial-rcpg: the adversary's softmax (default) or a "
                             "mixture with the nominal that stays inside the ball by "
                             "construction")
    parser.add_argument("--entropy", type=float, default=5.0,
                        help="entropy regularisation (default 5.0, the paper's)")
    parser.add_argument("--eval-every", type=bounded_int("episodes"), default=100,
                        help="exact evaluation every N episodes (default 100; at most "
                             "10^5 evaluations in a run)")
    parser.add_argument("--estimation", choices=("paper", "reference"), default="paper",
                        help="estimation episodes: the paper's (default) or the reference "
                             "implementation's")
    parser.add_argument("--train-on", choices=("nominal", "true"), default="nominal",
                        help="train on the estimated nominal model (default) or the true one")
    parser.add_argument("--no-bracket", action="store_true",
                        help="skip the RCMDP bracket (the slowest reference number)")
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="save the trained result to FILE, an .npz archive (the suffix "
                             ".npz is added when FILE has none; another suffix is refused)")
    add_force(parser)
    add_progress(parser)


def _row(name: str, value, cost, test_value=None, test_cost=None, pen=None) -> str:
    def f(x):
        return "" if x is None else f"{float(x):.3f}"

    def fc(x):
        import numpy as np

        return "" if x is None else ",".join(f"{v:.3f}" for v in np.atleast_1d(x))

    return (f"{name:<38}{f(value):>12}{fc(cost):>12}{f(test_value):>12}{fc(test_cost):>12}"
            f"{f(pen):>12}")


def run(args: argparse.Namespace) -> int:
    from ..names import LIMITS

    parser = args._parser
    if not args.entropy >= 0 or args.entropy == float("inf"):
        parser.error(f"--entropy must be a finite number >= 0, got {args.entropy}")
    if args.multiplier_update == "augmented" and args.gradient != "exact":
        parser.error("--multiplier-update augmented needs exact costs: add "
                     "--gradient exact, or choose adam-log or sgd")
    refuse_inapplicable(parser, args, [args.algorithm],  # --train-on true: every learner
                        options=("critic", "inner", "multiplier_update",
                                 "adversary_multiplier_signal", "adversary_form"))
    if args.gradient == "exact" and args.critic is not None:
        parser.error("--critic does not apply to --gradient exact: the exact mode takes "
                     "the exact worst case of the current policy; drop --critic")
    if args.gradient == "exact" and args.steps is not None:
        parser.error("--steps does not apply to --gradient exact: each episode is one exact "
                     "gradient step; give --episodes instead")
    limit = LIMITS["evaluations"][0]
    if -(-args.episodes // args.eval_every) > limit:
        parser.error(f"--episodes {args.episodes} with --eval-every {args.eval_every} makes "
                     f"{-(-args.episodes // args.eval_every)} exact evaluations, above the "
                     f"limit {limit} (each keeps its metrics in memory); give --eval-every "
                     f"at least {-(-args.episodes // limit)}")
    out = check_npz_output(parser, args.out, force=args.force, what="a training result")
    import numpy as np

    from ..domains import ESTIMATION_EPISODES, paper_domain
    from ..ground_truth import rcmdp_bracket, solve_cmdp
    from ..learners import ALGORITHMS, train
    from ..uncertainty import estimate

    args._interrupted = "nothing was written"
    progress = progress_enabled(args)
    true = paper_domain(args.domain)
    n_est = ESTIMATION_EPISODES[args.domain][args.estimation]
    est = estimate(true, n_est, seed=args.seed, progress=progress)
    model = est.nominal if args.train_on == "nominal" else true
    algo = ALGORITHMS[args.algorithm]
    given = {name: getattr(args, name) for name in (
        "critic", "inner", "adversary_multiplier_signal", "adversary_form")
        if getattr(args, name) is not None}
    res = train(model, args.algorithm, ball=est.ball if algo.robust else None, seed=args.seed,
                episodes=args.episodes, steps=args.steps, gradient=args.gradient,
                multiplier_update=args.multiplier_update, entropy=args.entropy,
                eval_every=args.eval_every, true_model=true, progress=progress, **given)
    rec = res.records
    print(f"rcmdp train {args.domain} {args.algorithm}: seed {args.seed}, {res.episodes} "
          f"episodes, {res.steps} steps, trained on the {args.train_on} model "
          f"({n_est} estimation episodes), loop {res.timings['loop']:.2f} s")
    print(f"{'':<38}{'value':>12}{'cost':>12}{'test value':>12}{'test cost':>12}"
          f"{'penalised':>12}")
    where = (("train", "training model"), ("true", "true")) if model is not true else (
        ("true", "true"),)
    for tag, label in where:
        for pol in ("stochastic", "greedy"):
            key = f"eval_{tag}_{pol}_"
            print(_row(f"trained, {pol} ({label})", rec[key + "value"][-1],
                       rec[key + "cost"][-1], rec[key + "test_value"][-1],
                       rec[key + "test_cost"][-1], rec[key + "penalised"][-1]))
    from ..learners.records import evaluate_policy

    worst = evaluate_policy(model, res.policy_table(), ball=est.ball)
    for pol in ("stochastic", "greedy"):
        w = worst[("worst", pol)]
        print(_row(f"trained, {pol} (worst case)", w["value"], w["cost"], w["test_value"],
                   w["test_cost"], w["penalised"]))
    if model is not true:
        opt = solve_cmdp(model)
        print(_row("CMDP optimum (LP, training model)", opt.value, opt.costs))
    opt = solve_cmdp(true)
    print(_row("CMDP optimum (LP, true)", opt.value, opt.costs))
    if not args.no_bracket:
        from ..names import BRACKET_ASCENT, BRACKET_BOXES, BRACKET_SECONDS

        # the ground-truth table's budget: the boxes bind first, so every run prints the
        # same bracket
        br = rcmdp_bracket(model, est.ball, variants=(), progress=progress,
                           max_boxes=BRACKET_BOXES, n_ascent=BRACKET_ASCENT,
                           time_limit=BRACKET_SECONDS)
        text = f"[{br.lower:.3f}, {br.upper:.3f}]"
        if not np.isfinite(br.lower):
            text += "  (no robust-feasible policy certified)"
        print(f"{'RCMDP bracket (ball, value)':<38}{text:>24}")
    if out is not None:
        written = res.save(out, force=True)
        args._interrupted = f"the result was written to {written}"
        print(f"wrote {written}")
    return 0
