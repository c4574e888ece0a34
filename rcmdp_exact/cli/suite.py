"""``rcmdp suite``: the certified RCMDP benchmark suite (``docs/suite.md``).

* ``rcmdp suite list``: the instances (family, size, constraint, set support);
* ``rcmdp suite show NAME``: one instance's definition and its certified records;
* ``rcmdp suite verify [NAME ...] [--file FILE]``: re-certify every stored lower side
  by exact robust evaluation of its stored policy (value >= stored lower - tol, each
  worst-case cost within the budget + tol); exit status 1 when one fails;
* ``rcmdp suite certify --out FILE``: regenerate the data file (resumable through the
  work folder ``FILE.work``; an existing FILE is replaced only with ``--force``);
* ``rcmdp suite score --trainer MODULE:FUNCTION | --algorithm A[,B]``: train on the
  suite's instances with several seeds and score each policy exactly against the
  certified records (``--out FILE.json`` keeps the scores and the policies);
* ``rcmdp suite figure --out FILE.png``: the figure of ``docs/suite.md``.

Every argument is checked before the heavy imports (numpy, the solvers), so a refusal
is immediate.
"""

from __future__ import annotations

import argparse
import sys

from ._args import (
    add_force,
    add_progress,
    add_trainer,
    bounded_int,
    check_output,
    comma_list,
    progress_enabled,
    real_number,
    resolve_trainer,
    seed_arg,
    workers_arg,
)

NAME = "suite"
HELP = ("the certified RCMDP benchmark suite: list, show, verify or regenerate its "
        "certified values, score a learner on it")

#: The time the command takes on an idle two-core machine (docs/cli.md, "Time per
#: command", measured by benchmarks/bench_commands.py); ``--help`` shows it.
TIME = ("list 0.48 s, show 0.58 s, verify of the whole shipped file 8.7 s; certify "
        "about 21 minutes (two seconds per bracket, one process; docs/suite.md)")

#: The subcommands of ``rcmdp suite``.
ACTIONS = ("list", "show", "verify", "certify", "score", "figure")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..names import ALGORITHMS
    from ..suite import BASELINES, NAMES
    from ..suite.sets import KINDS, RADII

    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    p = sub.add_parser("list", help="the instances of the suite",
                       description="the instances of the suite")
    p.add_argument("--file", metavar="FILE", default=None,
                   help="a data file written by rcmdp suite certify (default: the shipped "
                        "one)")
    p = sub.add_parser("show", help="one instance and its certified records",
                       description="one instance and its certified records")
    p.add_argument("name", metavar="NAME", choices=NAMES, help=f"one of {', '.join(NAMES)}")
    p.add_argument("--file", metavar="FILE", default=None, help="a data file (default: the "
                                                                 "shipped one)")
    p = sub.add_parser("verify", help="re-certify every stored lower side by exact robust "
                                      "evaluation of its stored policy",
                       description="re-certify every stored lower side by exact robust "
                                   "evaluation of its stored policy; exit status 1 when "
                                   "one fails")
    p.add_argument("names", metavar="NAME", nargs="*", type=comma_list(NAMES, "instance"),
                   help="instances (default: all)")
    p.add_argument("--file", metavar="FILE", default=None, help="a data file (default: the "
                                                                 "shipped one)")
    p.add_argument("--tol", type=real_number(0.0, 1.0, what="tolerance"), default=1e-7,
                   help="relative tolerance of the comparisons, times max(1, |value|) "
                        "(default 1e-7)")
    add_progress(p)
    p = sub.add_parser("certify", help="regenerate the data file (resumable)",
                       description="regenerate the certified data file: one job per "
                                   "(instance, set, radius), kept in FILE.work so that a "
                                   "stopped run resumes; reports the total time")
    p.add_argument("--out", metavar="FILE", required=True,
                   help="the data file to write (.json.gz or .json); an existing one is "
                        "replaced only with --force")
    p.add_argument("--time-limit", type=real_number(0.0, 86400.0, what="time limit"),
                   default=None, help="safety net per bracket, in seconds (default 600): "
                                      "the work budget decides the bracket; one stopped by "
                                      "this limit is not reproducible")
    p.add_argument("--only", type=comma_list(NAMES, "instance"), default=None,
                   metavar="NAME[,NAME]", help="these instances only")
    p.add_argument("--kinds", type=comma_list(KINDS, "set kind"), default=None,
                   metavar="KIND[,KIND]", help=f"these kinds of set only ({', '.join(KINDS)})")
    p.add_argument("--radii", type=comma_list(tuple(map(str, RADII)), "radius"),
                   default=None, metavar="R[,R]", help="these radii only")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=workers_arg, default=1,
                   help="local worker processes (default 1)")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="a Dask scheduler (SCHEME://HOST:PORT); its workers must import "
                        "rcmdp_exact and reach the folder of --out")
    add_force(p)
    add_progress(p)
    p = sub.add_parser("score", help="train a learner on the suite and score it exactly",
                       description="train a learner (yours with --trainer, or the "
                                   "package's) on the suite's instances with several "
                                   "seeds and score each trained policy exactly: "
                                   "worst-case value, worst-case violation, the share "
                                   "of the certified bracket reached")
    add_trainer(p)
    algos = (*ALGORITHMS, *BASELINES)
    p.add_argument("--algorithm", type=comma_list(algos, "algorithm"), default=None,
                   metavar="A[,A]",
                   help=f"the package's learners: {', '.join(algos)} (default pg; with "
                        f"--trainer the algorithm name passed to it)")
    p.add_argument("--instances", type=comma_list(NAMES, "instance"), default=None,
                   metavar="NAME[,NAME]", help="instances (default: every instance a "
                                               "tabular learner can train on)")
    p.add_argument("--seeds", type=bounded_int("seeds"), default=3,
                   help="seeds per instance (default 3: 0, 1, 2)")
    p.add_argument("--first-seed", type=seed_arg, default=0, help="the first seed")
    p.add_argument("--episodes", type=bounded_int("episodes"), default=1000,
                   help="training episodes per run (default 1000)")
    p.add_argument("--set", dest="set_kind", choices=KINDS, default="l1",
                   help="the set the robust learners train on and the scores use "
                        "(default l1)")
    p.add_argument("--radius", choices=tuple(map(str, RADII)), default="0.1",
                   help="the grid's radius (default 0.1)")
    p.add_argument("--file", metavar="FILE", default=None, help="a data file (default: the "
                                                                 "shipped one)")
    p.add_argument("--out", metavar="FILE", default=None,
                   help="write the scores and the trained policies to FILE (JSON)")
    add_force(p)
    add_progress(p)
    p = sub.add_parser("figure", help="the figure of docs/suite.md",
                       description="the figure of docs/suite.md: the certified bracket of "
                                   "every instance at the reference set and the "
                                   "leaderboard's scores")
    p.add_argument("--out", metavar="FILE", required=True, help="the image (.png)")
    p.add_argument("--scores", metavar="FILE", default=None,
                   help="a score file of rcmdp suite score --out (default: none)")
    p.add_argument("--file", metavar="FILE", default=None, help="a data file (default: the "
                                                                 "shipped one)")
    add_force(p)


def _input_file(parser, path, what="--file"):
    from pathlib import Path

    if path is not None and not Path(path).is_file():
        parser.error(f"{what} {path!r} is not a file; give a data file written by rcmdp "
                     f"suite certify")
    return path


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "action", None)
    if action is None:
        args._parser.error("give an action: " + ", ".join(ACTIONS))
    sub = args._parser._subparsers._group_actions[0].choices[action]
    return {"list": _list, "show": _show, "verify": _verify, "certify": _certify,
            "score": _score, "figure": _figure}[action](sub, args)


# --------------------------------------------------------------------------- list, show
def _table(rows, header) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{h:<{w}}" for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(f"{c!s:<{w}}" for c, w in zip(r, widths, strict=True)))
    return "\n".join(out)


def _list(parser, args) -> int:
    _input_file(parser, args.file)
    from ..suite import data
    from ..suite.instances import INSTANCES

    recs = {}
    try:
        for r in data(args.file)["records"]:
            if r["kind"] == "l1" and abs(r["r"] - 0.1) < 1e-12:
                recs[r["instance"]] = r
    except Exception as exc:  # a missing data file: the list without values
        print(f"rcmdp suite list: warning: {exc}", file=sys.stderr)
    rows = []
    for name, inst in INSTANCES.items():
        r = recs.get(name)
        size = f"{r['S']}x{r['A']}" if r else ""
        b = r["bracket"] if r else {}
        br = ("" if not r else f"[{_f(b['lower'])}, {_f(b['upper'])}]")
        rows.append((name, inst.family, size, inst.constraint.split(" (")[0], inst.support,
                     br, b.get("status", "")))
    print(_table(rows, ("name", "family", "S x A", "constraint", "support",
                        "bracket (l1, r = 0.1)", "status")))
    return 0


def _f(x, digits=5):
    return "-" if x is None else f"{x:.{digits}g}"


def _show(parser, args) -> int:
    _input_file(parser, args.file)
    from ..suite import data
    from ..suite.instances import INSTANCES

    inst = INSTANCES[args.name]
    print(f"{inst.name} ({inst.family})")
    print(f"  citation: {inst.citation}")
    print(f"  constraint: {inst.constraint}")
    print(f"  budget rule: {inst.budget_rule}")
    print(f"  support: {inst.support_why}")
    if not inst.bracket:
        print(f"  bracket: not attempted: {inst.skip_bracket}")
    if inst.kinds_why:
        print(f"  sets: {inst.kinds_why}")
    if not inst.learn:
        print(f"  leaderboard: skipped: {inst.skip_why}")
    recs = [r for r in data(args.file)["records"] if r["instance"] == inst.name]
    if not recs:
        print("  no records in the data file")
        return 0
    r0 = recs[0]
    print(f"  S = {r0['S']}, A = {r0['A']}, K = {r0['K']}, gamma = {r0['gamma']}")
    rows = []
    for r in recs:
        b = r["bracket"]
        rows.append((r["kind"], f"{r['r']:g}", _f(r["budget"][0]), _f(r["nominal_optimum"]),
                     _f(r["cmdp_optimum"]), _f(r["robust_optimum"]), _f(b["lower"]),
                     _f(b["upper"]), _f(b.get("relative_gap"), 3), b["status"]))
    print(_table(rows, ("set", "r", "budget", "nominal", "CMDP", "robust", "lower", "upper",
                        "rel. gap", "status")))
    return 0


# --------------------------------------------------------------------------- verify
def _verify(parser, args) -> int:
    _input_file(parser, args.file)
    from ..suite.recertify import verify

    names = [n for group in args.names for n in group] or None
    res = verify(names, path=args.file, tol=args.tol,
                 progress=progress_enabled(args))
    rows = [(r["key"], _f(r["lower"], 8), _f(r["value"], 8),
             ",".join(_f(c, 6) for c in r["costs"]), ",".join(_f(c, 6) for c in r["budget"]),
             r.get("confirmed") or
             {True: "ok", None: "skipped: "}.get(r["ok"], "FAILED: ") + r["why"])
            for r in res.rows]
    print(_table(rows, ("record", "stored lower", "robust value", "worst costs", "budget",
                        "verdict")))
    print(f"{res.message}, {res.skipped} skipped (no lower policy and not infeasible), "
          f"{res.seconds:.1f} s")
    return 1 if res.failed else 0


# --------------------------------------------------------------------------- certify
def _certify(parser, args) -> int:
    from pathlib import Path

    out = check_output(parser, args.out, kind="file", force=args.force)
    if out.suffix not in (".json", ".gz"):
        parser.error(f"--out {args.out!r}: the data file is JSON; give a path ending in "
                     f".json.gz or .json")
    client = None
    if args.scheduler is not None:
        from .reproduce import connect_dask, dask_address

        try:
            address = dask_address(args.scheduler)
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--scheduler: {exc}")
        client = connect_dask(parser, address)
    import time

    from ..suite.certify import DEFAULT_SETTINGS, assemble, job_keys, run_jobs

    work = Path(str(out) + ".work")
    settings = dict(DEFAULT_SETTINGS)
    if args.time_limit is not None:
        settings["time_limit"] = float(args.time_limit)
    radii = None if args.radii is None else [float(r) for r in args.radii]
    jobs = job_keys(args.only, args.kinds, radii)
    args._interrupted = f"the finished jobs are kept in {work}: run the same command again " \
                        f"to resume"
    t0 = time.perf_counter()
    info = run_jobs(work, jobs, settings=settings, workers=args.workers, client=client,
                    progress=progress_enabled(args),
                    echo=lambda line: print(line, file=sys.stderr))
    wall = time.perf_counter() - t0
    header = assemble(work, out, jobs, wall_seconds=wall, workers=args.workers,
                      settings=settings)
    jobs_text = f"{len(jobs)} job{'s' * (len(jobs) != 1)}"
    print(f"rcmdp suite certify: {jobs_text} ({info['run']} run, {info['kept']} kept from "
          f"{work}), {wall:.1f} s wall, {header['job_seconds']:.1f} s in jobs; wrote {out}")
    return 0


# --------------------------------------------------------------------------- score
def _score(parser, args) -> int:
    _input_file(parser, args.file)
    if args.trainer is not None and args.algorithm is not None and len(args.algorithm) > 1:
        parser.error("--trainer trains one learner: give at most one --algorithm with it")
    out = None
    if args.out is not None:
        out = check_output(parser, args.out, kind="file", force=args.force)
    trainer = resolve_trainer(parser, args.trainer)
    from ..suite import BASELINES

    if trainer is not None and args.algorithm and args.algorithm[0] in BASELINES:
        parser.error(f"--algorithm {args.algorithm[0]} is a built-in baseline, not a name "
                     f"to pass to --trainer; give one of the six learners' names")
    from ..suite.leaderboard import score, write_scores

    algos = args.algorithm or ["pg"]
    res = score(trainer=trainer, algorithms=algos, names=args.instances,
                seeds=range(args.first_seed, args.first_seed + args.seeds),
                episodes=args.episodes, set=args.set_kind, radius=float(args.radius),
                path=args.file, progress=progress_enabled(args))
    print(res.table())
    if out is not None:
        write_scores(out, res)
        print(f"wrote {out}")
    return 0


# --------------------------------------------------------------------------- figure
def _figure(parser, args) -> int:
    _input_file(parser, args.file)
    _input_file(parser, args.scores, "--scores")
    out = check_output(parser, args.out, kind="file", force=args.force)
    from ..suite.report import figure

    figure(out, path=args.file, scores=args.scores)
    print(f"wrote {out}")
    return 0
