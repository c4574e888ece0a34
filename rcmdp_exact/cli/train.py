"""``rcmdp train``: train one of the paper's six learners (or yours) and judge it exactly.

The model is the training model of a paper domain or your own (``--model PATH.npz``, a
file written by ``TabularCMDP.save``; it needs a horizon, or ``--horizon T``).  A paper
domain is estimated first (the paper's phase 1: uniform random episodes, the
uncertainty set of ``--set``, the Hoeffding L1 ball by default) and the learner trains on
the estimated nominal model (or on the true model with ``--train-on data``).  Your own
model is judged on itself: the learner trains on it and the set of ``--set`` is built
around its own kernel (radius ``--radius``, default 0.1, on the support ``--support``,
the model's own next states by default); ``--estimate [N]`` asks for the paper's phase
1 on it instead, and ``--set-file`` gives the set (and its nominal kernel).  Robust
learners train on the set.  ``--trainer
MODULE:FUNCTION`` trains with a function of your own that follows the trainer protocol
(``docs/your_learner.md``).  The final policy is evaluated exactly (discounted value and
cost, and the T-step test metric) on the true model and on the worst case of the set,
and printed beside the CMDP optimum of the true model (occupancy-measure LP) and the
certified RCMDP bracket of the set.  The output names what was trained on, what was
judged on, the set and its support; an infeasible problem is printed with the reason
(the budget and the least achievable cost).
"""

from __future__ import annotations

import argparse
import sys

from ._args import (
    add_force,
    add_model_options,
    add_progress,
    add_trainer,
    bounded_int,
    check_inputs,
    check_npz_output,
    load_user_model,
    progress_enabled,
    real_number,
    refuse_inapplicable,
    refuse_with_model,
    resolve_trainer,
    seed_arg,
)

NAME = "train"
HELP = ("train PG, CPG, an RCPG variant, Adversarial RCPG or your own learner on a paper "
        "domain or your own model and compare it with the exact optimum")

#: The time the command takes on an idle two-core machine (docs/cli.md, "Time per
#: command", measured by benchmarks/bench_commands.py); ``--help`` shows it.
TIME = ("about 13 s the first time after an install (numba compiles the loop), 2.3 s "
        "after (nav1 cpg, 5,000 episodes)")

#: ``--train-on`` values: the estimated nominal model, or the true data model.
TRAIN_ON = ("nominal", "data")


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

    parser.add_argument("domain", choices=PAPER_DOMAINS, metavar="DOMAIN", nargs="?",
                        default=None,
                        help=f"paper domain: {', '.join(PAPER_DOMAINS)} (omit it with "
                             f"--model)")
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
    parser.add_argument("--entropy", type=real_number(0.0, what="entropy weight"),
                        default=None,
                        help="entropy regularisation, a finite number >= 0 (default 5.0, "
                             "the paper's; the learners only)")
    parser.add_argument("--eval-every", type=bounded_int("episodes"), default=100,
                        help="exact evaluation every N episodes (default 100; at most "
                             "10^5 evaluations in a run)")
    parser.add_argument("--estimation", choices=("paper", "reference"), default=None,
                        help="estimation episodes of a paper domain: the paper's (default) "
                             "or the reference implementation's")
    parser.add_argument("--train-on", choices=TRAIN_ON, default="nominal",
                        help="train on the estimated nominal model (default) or on the "
                             "true one, P_data (data; 'true' is its former name)")
    parser.add_argument("--no-bracket", action="store_true",
                        help="skip the RCMDP bracket (the slowest reference number)")
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="save the trained result to FILE, an .npz archive (the suffix "
                             ".npz is added when FILE has none; another suffix is refused)")
    add_model_options(parser)
    add_trainer(parser)
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


def _check_options(parser, args) -> None:
    from ..names import LIMITS

    if args.domain is None and args.model is None:
        parser.error("give a paper domain (inventory, nav1, nav2) or --model PATH.npz")
    if args.domain is not None and args.model is not None:
        parser.error(f"give a paper domain ({args.domain}) or --model, not both")
    refuse_with_model(parser, args, ("estimation",))
    if args.trainer is not None:
        for name in ("steps", "entropy", "adversary_multiplier_signal", "adversary_form"):
            if getattr(args, name) is not None:
                flag = "--" + name.replace("_", "-")
                parser.error(f"{flag} is an option of the package's learners, not of the "
                             f"trainer protocol (--trainer); drop {flag}")
    if args.multiplier_update == "augmented" and args.gradient != "exact":
        parser.error("--multiplier-update augmented needs exact costs: add "
                     "--gradient exact, or choose adam-log or sgd")
    refuse_inapplicable(parser, args, [args.algorithm],  # --train-on data: every learner
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


def _train(args, trainer, model, uset, true, progress):
    """``(result, policy table, episodes, steps, seconds)`` of the learners or of the
    trainer of ``--trainer`` (called as the trainer protocol says)."""
    import time

    import numpy as np

    from ..learners import ALGORITHMS

    robust = ALGORITHMS[args.algorithm].robust
    if trainer is None:
        from ..learners import train

        given = {name: getattr(args, name) for name in (
            "critic", "inner", "adversary_multiplier_signal", "adversary_form")
            if getattr(args, name) is not None}
        res = train(model, args.algorithm, uset=uset if robust else None, seed=args.seed,
                    episodes=args.episodes, steps=args.steps, gradient=args.gradient,
                    multiplier_update=args.multiplier_update,
                    entropy=5.0 if args.entropy is None else args.entropy,
                    eval_every=args.eval_every, true_model=true, progress=progress, **given)
        return res, res.policy_table(), res.episodes, res.steps, res.timings["loop"]
    from ..protocol.run import check_result

    t0 = time.perf_counter()
    res = trainer(model, args.algorithm, uset=uset if robust else None, seed=args.seed,
                  episodes=args.episodes, critic=args.critic or "learned",
                  gradient=args.gradient, inner=args.inner or "sort",
                  multiplier_update=args.multiplier_update or "adam-log",
                  eval_every=args.eval_every, true_model=true, progress=progress)
    seconds = time.perf_counter() - t0
    table = check_result(res, trainer, model.n_states, model.n_actions)
    rec = res.records
    length = rec.get("length") if hasattr(rec, "get") else None
    episodes = args.episodes if length is None else int(np.asarray(length).shape[0])
    steps = None if length is None else int(np.sum(length))
    return res, table, episodes, steps, seconds


def _save(res, out, args, trainer, table, metrics, facts):
    """Write the trained result to ``out``: ``(path, note)``.

    The learners' result (and a trainer's result with a working ``save(path)``) saves
    itself.  A trainer's result without one (or whose ``save`` fails) cannot be refused
    any more (it is known only after the training): what can always be saved is saved
    instead, as a :class:`~rcmdp_exact.Result` archive (``Result.load`` reads it): the
    policy table, its exact evaluation, the run's facts and the result's numeric
    records; ``note`` says so.
    """
    if trainer is None:
        return res.save(out, force=True), None
    save = getattr(res, "save", None)
    why = f"the result of --trainer {args.trainer} has no save(path) method"
    if callable(save):
        try:
            written = save(out)
            return (out if written is None else written), None
        except Exception as exc:  # the training must not be lost to a broken save
            why = (f"save() of the result of --trainer {args.trainer} failed "
                   f"({type(exc).__name__}: {exc})")
    import numpy as np

    from .._result import Result

    evaluation = {}
    for (tag, pol), m in metrics.items():
        evaluation.setdefault(tag, {})[pol] = Result(m)
    records = {}
    rec = getattr(res, "records", None)
    if isinstance(rec, dict):
        for name, value in rec.items():
            try:
                arr = np.asarray(value)
            except (TypeError, ValueError):
                continue
            if isinstance(name, str) and arr.dtype.kind in "biuf":
                records[name] = arr
    from .._io import npz_path

    path = npz_path(out)
    if path.exists():  # the trainer's failed save may have left a file; ours replaces it
        path.unlink()
    written = Result(policy=np.asarray(table), algorithm=args.algorithm,
                     trainer=args.trainer, seed=args.seed, evaluation=evaluation,
                     records=records, **facts).save(path)
    return written, (f"{why}: {written} holds the policy table, its exact evaluation and "
                     f"the numeric records instead, as a Result (read it with "
                     f"rcmdp_exact.Result.load); give the result a save(path) method "
                     f"(docs/your_learner.md) to save it whole")


def run(args: argparse.Namespace) -> int:
    parser = args._parser
    _check_options(parser, args)
    out = check_npz_output(parser, args.out, force=args.force, what="a training result")
    check_inputs(parser, args)
    trainer = resolve_trainer(parser, args.trainer)
    import numpy as np

    from ..domains import ESTIMATION_EPISODES, paper_domain
    from ..ground_truth import gap_text, rcmdp_bracket, solve_cmdp
    from ..learners.records import evaluate_policy
    from ..names import USER_RADIUS
    from ..protocol.estimation import (
        check_set_kind,
        estimate_set,
        set_around,
        set_note,
        support_text,
    )

    own = load_user_model(args, need_horizon="rcmdp train (episodes of T steps)")
    true = paper_domain(args.domain) if own is None else own.model
    kind = args.set_kind or "l1"
    learners = () if trainer is not None else (args.algorithm,)
    around = own is not None and own.uset is None and args.estimate is None
    if own is not None and own.uset is not None:
        check_set_kind(kind, true, learners, critic=args.critic, inner=args.inner,
                       flag=f"--set-file {own.set_path!r}", uset=own.uset)
    else:
        check_set_kind(kind, true, learners, critic=args.critic, inner=args.inner)
    args._interrupted = "nothing was written"
    progress = progress_enabled(args)
    if around:  # your model judged on itself: the set around its own kernel
        from .._checks import InputError

        radius = USER_RADIUS if args.radius is None else args.radius
        try:
            uset = set_around(kind, true, radius, args.support or "nominal")
        except InputError as exc:
            parser.error(str(exc))
        nominal, n_est = true, 0
        source = "no estimation: the model itself"
        set_text = (f"{kind} ({type(uset).__name__}) around the model itself, radius "
                    f"{radius:g}")
    elif own is not None and own.uset is not None:
        uset, n_est = own.uset, 0
        nominal = true.with_transitions(uset.nominal)
        source = f"the nominal kernel of --set-file {own.set_path}"
        set_text = f"the saved {type(uset).__name__} of --set-file {own.set_path}"
    else:
        n_est = (ESTIMATION_EPISODES[args.domain][args.estimation or "paper"] if own is None
                 else args.estimate)
        est = estimate_set(true, n_est, args.seed, 0.1, kind, progress=progress)
        uset, nominal = est.uset, est.nominal
        source = f"estimated from {n_est} episodes of the uniform random policy"
        lo, hi = est.alpha_range
        set_text = (f"{kind} ({type(uset).__name__}: {set_note(kind)}), estimated, L1 radii "
                    f"in [{lo:.3g}, {hi:.3g}]")
    model = nominal if args.train_on == "nominal" else true
    if around:
        model = true
    res, table, episodes, steps, seconds = _train(args, trainer, model, uset, true, progress)
    label = args.domain if own is None else f"--model {own.path}"
    who = args.algorithm if trainer is None else f"{args.algorithm} ({args.trainer})"
    judged = (f"the model itself ({own.path})" if own is not None else
              f"the true model P_data of {args.domain}")
    trained_on = (f"the model itself ({own.path})" if around else
                  f"the true model (--train-on data; the set: {source})" if model is true
                  else f"the nominal model ({source})")
    print(f"rcmdp train {label} {who}: seed {args.seed}, {episodes} episodes, "
          f"{'?' if steps is None else steps} steps, "
          f"{'loop' if trainer is None else 'training'} {seconds:.2f} s")
    print(f"trained on: {trained_on}")
    print(f"judged on: {judged} and the worst case of the set")
    print(f"uncertainty set: {set_text}; support: {support_text(uset, true)}")
    print(f"{'':<38}{'value':>12}{'cost':>12}{'test value':>12}{'test cost':>12}"
          f"{'penalised':>12}")
    metrics = evaluate_policy(model, table, true_model=true if model is not true else None,
                              uset=uset)
    where = (("train", "training model"), ("true", "true")) if model is not true else (
        ("train", "true"),)
    for tag, label in (*where, ("worst", "worst case")):
        for pol in ("stochastic", "greedy"):
            m = metrics[(tag, pol)]
            print(_row(f"trained, {pol} ({label})", m["value"], m["cost"], m["test_value"],
                       m["test_cost"], m["penalised_return"]))
    if model is not true:
        opt = solve_cmdp(model)
        print(_row("CMDP optimum (LP, training model)", opt.value, opt.costs))
        if not opt.success:
            print(f"{'':<38}{opt.message}")
    opt = solve_cmdp(true)
    print(_row("CMDP optimum (LP, true)", opt.value, opt.costs))
    if not opt.success:
        print(f"{'':<38}{opt.message}")
    if not args.no_bracket:
        from ..names import BRACKET_ASCENT, BRACKET_BOXES, BRACKET_SECONDS

        # the ground-truth table's work budget decides the bracket, so every run prints
        # the same one (the time limit is a safety net; a bracket it stopped says so)
        br = rcmdp_bracket(model, uset, variants=(), progress=progress,
                           max_boxes=BRACKET_BOXES, n_ascent=BRACKET_ASCENT,
                           time_limit=BRACKET_SECONDS)
        if br.get("status") == "infeasible":
            print(f"{'RCMDP bracket (set, value)':<38}{'infeasible':>24}")
            print(f"{'':<38}{br.message}; least worst-case costs "
                  f"{np.round(np.atleast_1d(br.min_robust_costs), 6).tolist()} against the "
                  f"budgets {np.round(np.atleast_1d(model.d), 6).tolist()}")
        else:
            text = f"[{br.lower:.3f}, {br.upper:.3f}]"
            if not np.isfinite(br.lower):
                text += "  (no robust-feasible policy certified)"
            print(f"{'RCMDP bracket (set, value)':<38}{text:>24}")
            if np.isfinite(br.lower):
                print(f"{'':<38}{gap_text(br.lower, br.upper, br.value_range)}, "
                      f"{'closed' if br.closed else 'NOT closed'}, over {br.policy_class} "
                      f"policies")
                if not br.get("reproducible", True):
                    print(f"{'':<38}stopped by the time limit of {BRACKET_SECONDS:g} s "
                          f"(a safety net) in {br.time_limit_phase}: NOT reproducible")
            elif br.get("message"):
                print(f"{'':<38}{br.message}")
    if out is not None:
        try:
            written, note = _save(res, out, args, trainer, table, metrics,
                                  dict(episodes=episodes, steps=steps, seconds=seconds,
                                       model=label if own is None else own.path))
        except OSError as exc:  # a full disk: the file is not half-written, say so
            from .._checks import OutputPathError

            where = f": {exc.filename!r}" if exc.filename is not None else ""
            raise OutputPathError(
                f"the trained result cannot be written ({exc.strerror or exc}{where}); "
                f"no file was "
                f"written (a file that was there is whole): free space (or make the "
                f"folder writable) and train again, or give another --out") from None
        args._interrupted = f"the result was written to {written}"
        if note:
            print(f"rcmdp train: warning: {note}", file=sys.stderr)
        print(f"wrote {written}")
    return 0
