"""``rcmdp reproduce``: the paper's protocol, Table 1 and figures, resumable.

Plans the runs (domain x algorithm x seed) and the ground-truth jobs of the selected
tests, computes those missing from the results store (joblib on the local cores, or a
Dask cluster with ``--dask``), then writes ``report.md``, ``table1.md``, ``table1.csv``
and the PNG figures into ``--out``.  Interrupt it at any time: the same command resumes.
See ``docs/reproduction.md``.

``--model PATH.npz`` reproduces the protocol on your own model (a file written by
``TabularCMDP.save``; it needs a horizon, or ``--horizon T``), judged on itself by
default: the learners train on the model and the set of ``--set`` is built around its
own kernel (``--radius``, ``--support``); ``--estimate [N]`` runs the paper's phase 1
instead (estimation from N random episodes), ``--set-file`` gives the set.  Then the
learners (or ``--trainer``), exact tests on the model itself and on the perturbations of
``--perturbations``, with the same store, resume and report; the jobs are keyed by the
content hash of each file.  ``--penalty W`` changes the weight of the overshoot in the
penalised return (default 500, the paper's; stored in the specs only when changed).

**Existing outputs.**  Resuming into the store of ``--db`` (default ``OUT/runs.sqlite``)
adds the missing jobs and never replaces one; the report in ``--out`` is the store's
own, rewritten as jobs are added.  A folder that holds the report of *another* store,
or report files of an unknown store (any ``report.md``, ``table1.*`` or figure that a
store that does not exist yet cannot have written: your own), is refused before any
work unless ``--force`` (:mod:`rcmdp_exact.protocol.outputs`).
"""

from __future__ import annotations

import argparse
import sys

from ._args import (
    add_model_options,
    add_progress,
    add_trainer,
    bounded_int,
    check_inputs,
    comma_list,
    load_user_model,
    real_number,
    refuse_with_model,
    resolve_trainer,
    workers_arg,
)

NAME = "reproduce"
HELP = ("run the paper's protocol (estimation, training, exact testing) and rebuild its "
        "Table 1 and figures; resumable")

#: The time the command takes on an idle two-core machine (docs/cli.md, "Time per
#: command", measured by benchmarks/bench_commands.py); ``--help`` shows it.
TIME = ("about 54 s for --quick the first time in a new environment, 14 s once the "
        "learners' loop is compiled; the full protocol about 11 minutes")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..names import RUN_OPTIONS as OPTIONS
    from ..names import TABLE1_ALGORITHMS as ALGORITHMS
    from ..names import TESTS

    parser.add_argument("--quick", action="store_true",
                        help="every algorithm and test with 2 seeds, 200 episodes and 2 "
                             "draws per N in 1B/2B (54 s the first time in a new environment, "
                             "14 s after, on an idle two-core machine)")
    parser.add_argument("--tests", type=comma_list(TESTS, "tests"), default=None,
                        help=f"comma-separated tests (default: {','.join(TESTS)}; not with "
                             f"--model, whose test is the model and its perturbations)")
    parser.add_argument("--algorithms", type=comma_list(ALGORITHMS, "algorithms"),
                        default=list(ALGORITHMS),
                        help=f"comma-separated algorithms (default: {','.join(ALGORITHMS)})")
    parser.add_argument("--seeds", type=bounded_int("seeds"), default=None,
                        help="runs per algorithm and domain (default 20; --quick 2; at most "
                             "10^4)")
    parser.add_argument("--episodes", type=bounded_int("episodes"), default=None,
                        help="training episodes per run (default 5000; --quick 200; at most "
                             "10^7)")
    parser.add_argument("--workers", type=workers_arg, default=None,
                        help="local worker processes (default: the number of CPUs; at most "
                             "4 per CPU)")
    parser.add_argument("--dask", metavar="ADDRESS", type=dask_address, default=None,
                        help="run on the Dask cluster whose scheduler is at ADDRESS "
                             "(e.g. tcp://10.0.0.1:8786); workers need rcmdp_exact")
    parser.add_argument("--db", metavar="PATH", default=None,
                        help="results database (SQLite; default OUT/runs.sqlite); an "
                             "existing one is resumed")
    parser.add_argument("--out", metavar="DIR", default="reproduction",
                        help="folder for report.md, table1.md, table1.csv and the figures "
                             "(default: reproduction)")
    parser.add_argument("--n-draws", type=bounded_int("draws"), default=None,
                        help="draws per N in tests 1B and 2B (default 50; --quick 2; at most "
                             "10^4)")
    parser.add_argument("--sampled-episodes", type=bounded_int("sampled_episodes", 0),
                        default=0,
                        help="also test the greedy policy by this many sampled episodes per "
                             "setting, as the paper did (50); default 0: exact only; at "
                             "most 10^5")
    parser.add_argument("--eval-every", type=bounded_int("episodes"), default=None,
                        help="episodes between the learners' exact evaluations (default "
                             "100; --quick 50)")
    parser.add_argument("--penalty", type=real_number(0.0, low_open=True,
                                                      what="penalty weight"),
                        default=None, metavar="W",
                        help="weight of the overshoot in the penalised return R_pen = V - W "
                             "max(0, C - d') (default 500, the paper's)")
    parser.add_argument("--bracket-seeds", type=bounded_int("seeds", 0), default=None,
                        help="estimation seeds that get an RCMDP bracket (default: all "
                             "seeds; --quick 1)")
    add_trainer(parser)
    add_model_options(parser, perturbations=True)
    parser.add_argument("--force", action="store_true",
                        help="replace the report of another results store in --out")
    from ..names import OPTION_ALGORITHMS

    for name, choices in OPTIONS.items():
        only = OPTION_ALGORITHMS.get(name)
        parser.add_argument(f"--{name.replace('_', '-')}", choices=choices, default=None,
                            help=f"default {choices[0]} (see docs/reproduction.md)"
                                 + (f"; acts on {', '.join(only)}" if only else ""))
    add_progress(parser)


#: Schemes of a Dask scheduler address.
DASK_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")


def connect_dask(parser: argparse.ArgumentParser, address: str | None,
                 option: str = "--dask"):
    """A ``distributed.Client`` of the scheduler at ``address`` (None for None), or a
    one-line parser error naming the command's ``option`` when it cannot be reached
    within 10 s."""
    if address is None:
        return None
    from distributed import Client

    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        parser.error(f"cannot reach the Dask scheduler at {option} {address!r}: {exc}")


def dask_address(text: str) -> str:
    """A Dask scheduler address ``SCHEME://HOST:PORT`` (argparse type), checked before
    any work: a known scheme (tcp, tls, ucx, ws, wss; tcp when omitted), a host name or
    IP address and a port in 1..65535."""
    import re

    def bad(why: str):
        return argparse.ArgumentTypeError(
            f"{text!r} is not a Dask scheduler address ({why}); give SCHEME://HOST:PORT, "
            f"e.g. tcp://10.0.0.1:8786")

    scheme, sep, rest = str(text).strip().partition("://")
    if not sep:
        scheme, rest = "tcp", scheme
    if scheme not in DASK_SCHEMES:
        raise bad(f"unknown scheme {scheme!r}; use one of {', '.join(DASK_SCHEMES)}")
    m = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)"
                     r":([0-9]{1,5})", rest)
    if m is None:
        raise bad("no HOST:PORT" if ":" not in rest else "a host name or IP address, a "
                  "colon and a port number are needed")
    port = int(m.group(3))
    if not 1 <= port <= 65535:
        raise bad(f"port {port} is not in 1..65535")
    return f"{scheme}://{rest}"


def check_db(parser, db, out) -> None:
    """An existing ``--db`` must be a results store (or an empty SQLite file); a new one
    needs a writable folder (or to lie in ``out``, which was checked and will be
    created).  Problems are argparse errors (one line, exit status 2)."""
    from pathlib import Path

    from .._checks import InputError, check_out_path

    p = Path(db)
    if p.exists() or p.is_dir():
        from ..protocol.store import Store
        from .report import db_error

        try:
            Store(p, readonly=True).close()
        except InputError as exc:
            db_error(parser, exc)
        return
    if p.parent.resolve() == Path(out).resolve() and not Path(out).exists():
        return
    try:
        check_out_path(p, kind="file", name="--db")
    except InputError as exc:
        parser.error(str(exc))


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .._checks import InputError
    from ..names import LIMITS, TESTS, USER_TEST
    from ._args import check_output, progress_enabled, refuse_inapplicable

    parser = args._parser
    refuse_with_model(parser, args, ("tests", "estimation", "offset_on", "cost_layout",
                                     "revenue", "demand", "n_draws"))
    out = check_output(parser, args.out, kind="dir")
    if args.dask is not None and args.workers is not None:
        parser.error("--workers applies to local runs; a Dask cluster has its own workers "
                     "(drop --workers or --dask)")
    refuse_inapplicable(parser, args, args.algorithms)
    check_inputs(parser, args)
    from ..protocol.phases import FULL, QUICK

    preset = QUICK if args.quick else FULL
    episodes = args.episodes or preset["episodes"]
    eval_every = args.eval_every or preset["eval_every"]
    n_evals, limit = -(-episodes // eval_every), LIMITS["evaluations"][0]
    if n_evals > limit:
        parser.error(f"--episodes {episodes} with --eval-every {eval_every} makes {n_evals} "
                     f"exact evaluations per run, above the limit {limit} (each keeps its "
                     f"metrics); give --eval-every at least {-(-episodes // limit)}")
    if args.db is not None and not str(args.db).strip():
        parser.error("--db is empty; give the path of a results store (default "
                     "OUT/runs.sqlite)")
    db = Path(args.db) if args.db is not None else out / "runs.sqlite"
    check_db(parser, db, out)
    from ..protocol.outputs import foreign_report

    # before the store is created: a new store has written no report
    foreign = foreign_report(out, db)
    if foreign is not None and not args.force:
        parser.error(f"--out {foreign}; give another --out (or --db of that store to resume "
                     f"it), or --force to replace these files")
    trainer = resolve_trainer(parser, args.trainer)
    from ..protocol import ReproduceSpec, Store, sweep, write_report
    from ..protocol.estimation import check_set_kind
    from ..protocol.spec import OPTIONS

    options = {name: (OPTIONS[name][0] if getattr(args, name) is None else getattr(args, name))
               for name in OPTIONS}
    for name in ("n_draws", "eval_every"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if trainer is not None:
        options["trainer"] = args.trainer
    if args.penalty is not None:
        options["penalty"] = args.penalty
    kind = args.set_kind or "l1"
    if kind != "l1":
        options["set_kind"] = kind
    own = load_user_model(args, need_horizon="rcmdp reproduce (episodes of T steps and the "
                                             "T-step test metric)")
    learners = args.algorithms if trainer is None else ()
    critic, inner = options["critic"], options["inner"]
    if own is not None:
        tests = [USER_TEST]
        from ..protocol.user import spec_options

        try:
            options.update(spec_options(own, args.estimate, args.radius, args.support))
            if "radius" in options:  # the set around the model: refused now, not in a job
                from ..protocol.estimation import set_around, support_text

                around = set_around(kind, own.model, options["radius"], options["support"])
                summary_line = (f"--model {own.path}: trained and judged on the model "
                                f"itself; set {kind} around it, radius "
                                f"{options['radius']:g}; support: "
                                f"{support_text(around, own.model)}")
            elif own.uset is not None:
                summary_line = (f"--model {own.path}: trained on the nominal kernel of "
                                f"--set-file {own.set_path}, judged on the model itself")
            else:
                summary_line = (f"--model {own.path}: trained on the nominal model estimated "
                                f"from {options['estimation_episodes']} episodes of the "
                                f"uniform random policy, judged on the model itself; set "
                                f"{kind} estimated (its radii and support: report.md)")
        except InputError as exc:
            parser.error(str(exc))
        if own.uset is not None:
            check_set_kind(kind, own.model, learners, critic=critic, inner=inner,
                           flag=f"--set-file {own.set_path!r}", uset=own.uset)
        else:
            check_set_kind(kind, own.model, learners, critic=critic, inner=inner)
    else:
        from ..domains import paper_domain
        from ..names import DOMAIN_OF_TEST

        tests = list(TESTS) if args.tests is None else args.tests
        if kind != "l1":
            check_set_kind(kind, paper_domain(DOMAIN_OF_TEST[tests[0]]), learners,
                           critic=critic, inner=inner)
    spec = ReproduceSpec(tests=tests, algorithms=args.algorithms, seeds=args.seeds,
                         episodes=args.episodes, quick=args.quick,
                         bracket_seeds=args.bracket_seeds, trainer=trainer,
                         options={**options, "sampled_episodes": args.sampled_episodes})
    jobs = spec.jobs()
    client = connect_dask(parser, args.dask)
    out.mkdir(parents=True, exist_ok=True)
    progress = progress_enabled(args)
    try:
        with Store(db) as store:
            args._interrupted = lambda: (f"{store.kept_text()}; run the same command again "
                                         f"to resume")
            store.request_tests(spec.tests)
            summary = sweep(store, jobs, trainer=spec.trainer, workers=args.workers,
                            client=client, progress=progress)
            rep = write_report(store, out, tests=store.requested_tests(), progress=progress)
        args._interrupted = (f"every finished job is stored in {db} and the report is "
                             f"written in {out}")
    finally:
        if client is not None:
            client.close()
    if own is not None:
        print(summary_line)
    print(f"{summary.computed} jobs computed, {summary.stored_before} already stored "
          f"({summary.total} in the plan), {summary.seconds:.1f} s; results in {db}")
    for p in rep.paths:
        print(f"wrote {p}")
    if summary.failed:
        again = set(summary.transient)
        lasting = [key for key, _ in summary.failed if key not in again]
        if again:
            print(f"{len(again)} jobs failed for the machine's sake (a lost worker, a full "
                  f"disk, no memory; printed above); run the same command again to retry "
                  f"them", file=sys.stderr)
        if lasting:
            print(f"{len(lasting)} jobs failed in their own computation (printed above), "
                  f"which running the command again repeats (a job is a pure function of "
                  f"its specification): change the inputs or the options that made it "
                  f"fail, or report it with the printed error", file=sys.stderr)
        return 1
    return 0
