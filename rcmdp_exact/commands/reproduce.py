"""``rcmdp reproduce``: the paper's protocol, Table 1 and figures, resumable.

Plans the runs (domain x algorithm x seed) and the ground-truth jobs of the selected
tests, computes those missing from the results store (joblib on the local cores, or a
Dask cluster with ``--dask``), then writes ``report.md``, ``table1.md``, ``table1.csv``
and the PNG figures into ``--out``.  Interrupt it at any time: the same command resumes.
See ``docs/reproduction.md``.
"""

from __future__ import annotations

import argparse
import sys

from ._args import add_progress, comma_list, non_negative_int, positive_int

NAME = "reproduce"
HELP = ("run the paper's protocol (estimation, training, exact testing) and rebuild its "
        "Table 1 and figures; resumable")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..names import RUN_OPTIONS as OPTIONS
    from ..names import TABLE1_ALGORITHMS as ALGORITHMS
    from ..names import TESTS

    parser.add_argument("--quick", action="store_true",
                        help="every algorithm and test with 2 seeds, 200 episodes and 2 "
                             "draws per N in 1B/2B (under 90 s on 2 cores)")
    parser.add_argument("--tests", type=comma_list(TESTS, "tests"), default=list(TESTS),
                        help=f"comma-separated tests (default: {','.join(TESTS)})")
    parser.add_argument("--algorithms", type=comma_list(ALGORITHMS, "algorithms"),
                        default=list(ALGORITHMS),
                        help=f"comma-separated algorithms (default: {','.join(ALGORITHMS)})")
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help="runs per algorithm and domain (default 20; --quick 2)")
    parser.add_argument("--episodes", type=positive_int, default=None,
                        help="training episodes per run (default 5000; --quick 200)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="local worker processes (default: the number of CPUs)")
    parser.add_argument("--dask", metavar="ADDRESS", default=None,
                        help="run on the Dask cluster whose scheduler is at ADDRESS "
                             "(e.g. tcp://10.0.0.1:8786); workers need rcmdp_exact")
    parser.add_argument("--db", metavar="PATH", default=None,
                        help="results database (SQLite; default OUT/runs.sqlite); an "
                             "existing one is resumed")
    parser.add_argument("--out", metavar="DIR", default="reproduction",
                        help="folder for report.md, table1.md, table1.csv and the figures "
                             "(default: reproduction)")
    parser.add_argument("--n-draws", type=positive_int, default=None,
                        help="draws per N in tests 1B and 2B (default 50; --quick 2)")
    parser.add_argument("--sampled-episodes", type=non_negative_int, default=0,
                        help="also test the greedy policy by this many sampled episodes per "
                             "setting, as the paper did (50); default 0: exact only")
    parser.add_argument("--eval-every", type=positive_int, default=None,
                        help="episodes between the learners' exact evaluations (default "
                             "100; --quick 50)")
    parser.add_argument("--bracket-seeds", type=non_negative_int, default=None,
                        help="estimation seeds that get an RCMDP bracket (default: all "
                             "seeds; --quick 1)")
    parser.add_argument("--trainer", metavar="MODULE:FUNCTION", default=None,
                        help="train with this function instead of rcmdp_exact.learners.train "
                             "(same signature and result; see docs/reproduction.md)")
    for name, choices in OPTIONS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", choices=choices,
                            default=choices[0],
                            help=f"default {choices[0]} (see docs/reproduction.md)")
    add_progress(parser)


def check_db(parser, db, out) -> None:
    """An existing ``--db`` must be a SQLite file; a new one needs a writable folder
    (or to lie in ``out``, which was checked and will be created)."""
    from pathlib import Path

    from .._checks import InputError, check_out_path

    p = Path(db)
    if p.is_dir():
        parser.error(f"--db {str(p)!r} is a folder; give a file path such as runs.sqlite")
    if p.exists():
        with p.open("rb") as fh:
            head = fh.read(16)
        if head and head != b"SQLite format 3\x00":
            parser.error(f"--db {str(p)!r} exists and is not a SQLite database; give "
                         f"another path")
        from ..experiments.store import Store

        with Store(p, readonly=True) as store:
            empty = not store.conn.execute("SELECT 1 FROM sqlite_master").fetchone()
            if not empty and not store.has_schema():
                parser.error(f"--db {str(p)!r} is not a results database of this version "
                             f"of rcmdp reproduce; give another path")
        return
    if p.parent.resolve() == Path(out).resolve() and not Path(out).exists():
        return
    try:
        check_out_path(p, kind="file", name="--db")
    except InputError as exc:
        parser.error(str(exc))


def resolve_trainer(parser, text):
    """The ``--trainer MODULE:FUNCTION`` callable (None: the learners, checked here)."""
    import importlib
    import importlib.util

    if text is None:
        if importlib.util.find_spec("rcmdp_exact.learners") is None:
            parser.error("the learners (rcmdp_exact.learners) are not available in this "
                         "installation; install a version of rcmdp_exact that has them or "
                         "give --trainer MODULE:FUNCTION")
        return None
    mod_name, _, fn_name = text.partition(":")
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name) if fn_name else None
    except (ImportError, AttributeError) as exc:
        parser.error(f"--trainer {text!r} cannot be imported ({exc}); give MODULE:FUNCTION "
                     f"of an importable module")
    if not callable(fn):
        parser.error(f"--trainer {text!r} is not a function; give MODULE:FUNCTION")
    return fn


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ._args import check_output, progress_enabled

    parser = args._parser
    out = check_output(parser, args.out, kind="dir")
    if args.dask is not None and args.workers is not None:
        parser.error("--workers applies to local runs; a Dask cluster has its own workers "
                     "(drop --workers or --dask)")
    db = Path(args.db) if args.db is not None else out / "runs.sqlite"
    check_db(parser, db, out)
    trainer = resolve_trainer(parser, args.trainer)
    from ..experiments import Store, plan, sweep, write_report
    from ..experiments.spec import OPTIONS

    options = {name: getattr(args, name) for name in OPTIONS}
    for name in ("n_draws", "eval_every"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if trainer is not None:
        options["trainer"] = args.trainer
    jobs = plan(args.tests, args.algorithms, args.seeds, args.episodes, quick=args.quick,
                bracket_seeds=args.bracket_seeds, sampled_episodes=args.sampled_episodes,
                **options)
    client = None
    if args.dask is not None:
        from distributed import Client

        try:
            client = Client(args.dask, timeout="10s")
        except (OSError, TimeoutError) as exc:
            parser.error(f"cannot reach the Dask scheduler at --dask {args.dask!r}: {exc}")
    out.mkdir(parents=True, exist_ok=True)
    progress = progress_enabled(args)
    with Store(db) as store:
        store.request_tests(args.tests)
        try:
            summary = sweep(store, jobs, trainer=trainer, workers=args.workers,
                            client=client, progress=progress)
        except KeyboardInterrupt:
            n = len(store.keys())
            print(f"\ninterrupted: {n} finished jobs are stored in {db}; run the same "
                  f"command again to compute the rest", file=sys.stderr)
            return 130
        finally:
            if client is not None:
                client.close()
        rep = write_report(store, out, tests=store.requested_tests(), progress=progress)
    print(f"{summary.computed} jobs computed, {summary.stored_before} already stored "
          f"({summary.total} in the plan), {summary.seconds:.1f} s; results in {db}")
    for p in rep.paths:
        print(f"wrote {p}")
    if summary.failed:
        print(f"{len(summary.failed)} jobs failed (their errors are printed above); run "
              f"the same command again to retry them", file=sys.stderr)
        return 1
    return 0
