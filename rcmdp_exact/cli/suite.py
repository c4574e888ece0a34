"""``rcmdp suite``: the certified RCMDP benchmark suite (``docs/suite.md``).

* ``rcmdp suite list``: the instances (family, size, constraint, set support);
* ``rcmdp suite show NAME``: one instance's definition and its certified records;
* ``rcmdp suite verify [NAME ...] [--file FILE] [--workers N]``: check every field of
  every record by a second method (the lower side is the exact value of its policy and
  feasible, the upper side is at most the caps, the optima, levels, budget and claims);
  every failure is named (record, field, stored and recomputed numbers); exit status 1
  when one fails;
* ``rcmdp suite certify --out FILE``: regenerate the data file with one work budget
  (resumable through the work folder ``FILE.work``; a resume with another budget is
  refused; an existing FILE is replaced only with ``--force``);
* ``rcmdp suite score``: score the package's learners and baselines
  (``--algorithm``), a trainer of yours (``--trainer MODULE:FUNCTION --name NAME``) or a
  planner of yours (``--planner MODULE:FUNCTION --name NAME``) on the suite's instances
  with several seeds, each policy exactly against the certified records (``--out
  FILE.json``: a Result with every run and policy, written after every run);
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
        "certified values, score a learner or a planner on it")

#: The time the command takes on an idle two-core machine (docs/cli.md, "Time per
#: command"); ``--help`` shows it.
TIME = ("list 0.48 s, show 0.58 s, verify of the whole shipped file VERIFY_S s with "
        "--workers 2; certify: hours (docs/suite.md)")

#: The subcommands of ``rcmdp suite``.
ACTIONS = ("list", "show", "verify", "certify", "score", "figure")
#: The image formats of ``figure --out``.
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def _entrant_name(text: str) -> str:
    """A name for a trainer's or a planner's rows (argparse type)."""
    if not text or any(ch in text for ch in " ,/") or text.startswith("-"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a name: give a word without "
                                         f"spaces, commas or slashes")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..names import ALGORITHMS
    from ..suite import BASELINES, NAMES
    from ..suite.sets import KINDS, LEVELS

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
    p = sub.add_parser("verify", help="check every field of every record by a second method",
                       description="check every field of every record by a second method: "
                                   "the lower side is the exact value of its stored policy "
                                   "and feasible, the upper side is at most the caps, the "
                                   "optima, levels, budget and claims recomputed; exit "
                                   "status 1 when one fails, naming record, field and both "
                                   "numbers")
    p.add_argument("names", metavar="NAME", nargs="*", type=comma_list(NAMES, "instance"),
                   help="instances (default: all)")
    p.add_argument("--file", metavar="FILE", default=None, help="a data file (default: the "
                                                                 "shipped one)")
    p.add_argument("--tol", type=real_number(0.0, 1.0, what="tolerance"), default=1e-7,
                   help="relative tolerance of the comparisons, times max(1, |value|) "
                        "(default 1e-7)")
    p.add_argument("--workers", type=workers_arg, default=1,
                   help="local worker processes (default 1)")
    add_progress(p)
    p = sub.add_parser("certify", help="regenerate the data file (resumable)",
                       description="regenerate the certified data file: one job per "
                                   "(instance, set, level), kept in FILE.work so that a "
                                   "stopped run resumes (with the same work budget); "
                                   "reports the total time")
    p.add_argument("--out", metavar="FILE", required=True,
                   help="the data file to write (.json.gz or .json); an existing one is "
                        "replaced only with --force")
    p.add_argument("--max-boxes", type=_box_schedule, default=None, metavar="N[,N]",
                   help="the work budget of every bracket: N boxes of the branch and "
                        "bound, or an increasing schedule N1,N2 (the next tried while the "
                        "gap is above 1%%; a resume may add budgets at the end); 0: no "
                        "branch and bound, the closures, candidates and caps alone, in "
                        "minutes; default: the suite's schedules, docs/suite.md")
    p.add_argument("--time-limit", type=real_number(0.0, 86400.0, low_open=True,
                                                    what="time limit"),
                   default=None, metavar="SECONDS",
                   help="the safety net of each bracket (a run it stops is marked not "
                        "reproducible; default 3600)")
    p.add_argument("--only", type=comma_list(NAMES, "instance"), default=None,
                   metavar="NAME[,NAME]", help="these instances only")
    p.add_argument("--kinds", type=comma_list(KINDS, "set kind"), default=None,
                   metavar="KIND[,KIND]", help=f"these kinds of set only ({', '.join(KINDS)})")
    p.add_argument("--levels", type=comma_list(tuple(map(str, LEVELS)), "level"),
                   default=None, metavar="R[,R]", help="these levels only")
    p.add_argument("--fill", metavar="DATA", default=None,
                   help="run no job: write the data file now from the jobs finished in "
                        "FILE.work (the same work budget), each unfinished one taken from "
                        "the data file DATA (e.g. one made with --max-boxes 0), which the "
                        "header names; to ship a file while a long run goes on")
    p.add_argument("--resume-from", metavar="DATA", default=None,
                   help="start FILE.work (which must not exist) from the data file DATA "
                        "(e.g. the shipped one): its certified records are kept as "
                        "finished jobs of its work budget, and this run's budget, the "
                        "same or longer schedules, runs only what that changes (its open "
                        "records, DATA's stand-ins)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=workers_arg, default=1,
                   help="local worker processes (default 1)")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="a Dask scheduler (SCHEME://HOST:PORT); its workers must import "
                        "rcmdp_exact and reach the folder of --out")
    add_force(p)
    add_progress(p)
    p = sub.add_parser("score", help="score a learner or a planner on the suite, exactly",
                       description="score the package's learners and baselines "
                                   "(--algorithm), your trainer (--trainer) or your planner "
                                   "(--planner) on the suite's instances with several seeds: "
                                   "each policy's exact worst-case value and violation, and "
                                   "for the robust-feasible ones the share of the certified "
                                   "bracket reached")
    add_trainer(p)
    p.add_argument("--planner", metavar="MODULE:FUNCTION", default=None,
                   help="a planner of yours: FUNCTION(model, uset, *, seed, episodes, "
                        "record, **options) returns a policy table (S, A)")
    p.add_argument("--name", type=_entrant_name, default=None,
                   help="the name of the rows of --trainer or --planner (default: the "
                        "function's name)")
    entrants = (*ALGORITHMS, *BASELINES)
    p.add_argument("--algorithm", type=_algorithm_list(entrants), default=None,
                   metavar="A[,A]",
                   help=f"entrants: {', '.join(entrants)} or a registered planner (default "
                        f"pg; with --trainer the algorithm name passed to it)")
    p.add_argument("--instances", type=comma_list(NAMES, "instance"), default=None,
                   metavar="NAME[,NAME]", help="instances (default: every instance a "
                                               "tabular learner can train on)")
    p.add_argument("--seeds", type=bounded_int("seeds"), default=10,
                   help="seeds per instance (default 10: 0 to 9)")
    p.add_argument("--first-seed", type=seed_arg, default=0, help="the first seed")
    p.add_argument("--episodes", type=bounded_int("episodes"), default=1000,
                   help="training episodes per run (default 1000)")
    p.add_argument("--set", dest="set_kind", choices=KINDS, default="l1",
                   help="the set the robust entrants get and the scores use (default l1)")
    p.add_argument("--level", choices=tuple(map(str, LEVELS)), default="0.1",
                   help="the grid's level r of the set (default 0.1; the set's own "
                        "radius is r for l1, r^2/2 for kl, r/2 for interval)")
    p.add_argument("--file", metavar="FILE", default=None, help="a data file (default: the "
                                                                 "shipped one)")
    p.add_argument("--out", metavar="FILE", default=None,
                   help="write the scores (a Result: Result.load reads it) with every "
                        "policy to FILE (JSON), after every run")
    add_force(p)
    add_progress(p)
    p = sub.add_parser("figure", help="the figure of docs/suite.md",
                       description="the figure of docs/suite.md: the certified bracket of "
                                   "every instance at the reference set and the "
                                   "leaderboard's scores")
    p.add_argument("--out", metavar="FILE", required=True,
                   help=f"the image ({', '.join(FIGURE_SUFFIXES)})")
    p.add_argument("--scores", metavar="FILE", default=None,
                   help="a score file of rcmdp suite score --out (default: none)")
    p.add_argument("--file", metavar="FILE", default=None, help="a data file (default: the "
                                                                 "shipped one)")
    add_force(p)


def _box_schedule(text: str) -> list[int]:
    """``--max-boxes``: ``N`` (one box budget; 0 none) or an increasing list ``N1,N2,...``
    of box budgets >= 1, tried in turn while a gap is open (argparse type)."""
    parts = str(text).split(",")
    try:
        values = [int(t, 10) for t in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a box budget; give an integer >= 0 or an increasing list of "
            f"integers >= 1 such as 2000,6000") from None
    if values == [0]:
        return []
    from ..names import MAX_BOXES

    if max(values) > MAX_BOXES:
        raise argparse.ArgumentTypeError(
            f"{text!r}: {max(values):,} boxes is above the limit 10^6 of branch-and-bound "
            f"boxes (every open box is kept in memory); give at most {MAX_BOXES}")
    if any(v < 1 for v in values) or values != sorted(set(values)):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give an integer >= 0 or an increasing list of integers >= 1 such as "
            f"2000,6000")
    return values


def _algorithm_list(builtin):
    """An argparse type: entrants, each a built-in (the learners and baselines) or one of
    the built-in planners (``rcmdp_exact.planners.NAMES``, read without numpy)."""
    from ..planners import NAMES as PLANNERS

    return comma_list(tuple(builtin) + tuple(PLANNERS), "entrant")


def _input_file(parser, path, what="--file", kind="a data file written by rcmdp suite "
                                                 "certify"):
    from pathlib import Path

    if path is not None and not Path(path).is_file():
        parser.error(f"{what} {path!r} is not a file; give {kind}")
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
    from .._io import LoadError
    from ..suite import data
    from ..suite.instances import INSTANCES

    recs = {}
    try:
        for r in data(args.file)["records"]:
            if r["kind"] == "l1" and abs(r["level"] - 0.1) < 1e-12:
                recs[r["instance"]] = r
    except LoadError as exc:  # a damaged data file: the list without values, and why
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
                        "bracket (l1, level 0.1)", "status")))
    return 0


def _f(x, digits=5):
    return "-" if x is None else f"{x:.{digits}g}"


def _apart(a, b, digits=10) -> tuple[str, str]:
    """Two numbers printed with ``digits`` significant digits, or with as many more (up
    to 17, float64's round trip) as tell them apart: a failure under a tolerance of
    ~1e-10 or less is not shown as two equal numbers."""
    if not (isinstance(a, int | float) and isinstance(b, int | float)) or a == b:
        return tuple(_f(x, digits) if x is None or isinstance(x, int | float) else str(x)
                     for x in (a, b))
    n = digits
    while n < 17 and _f(a, n) == _f(b, n):
        n += 1
    return _f(a, n), _f(b, n)


def _show(parser, args) -> int:
    _input_file(parser, args.file)
    from ..suite import data
    from ..suite.instances import INSTANCES

    inst = INSTANCES[args.name]
    print(f"{inst.name} ({inst.family})")
    print(f"  citation: {inst.citation}")
    print(f"  variant: {inst.variant}")
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
        rows.append((r["kind"], f"{r['level']:g}", f"{r['radius']:g}", _f(r["budget"][0]),
                     _f(r["nominal_optimum"]), _f(r["cmdp_optimum"]),
                     _f(r["robust_optimum"]), _f(b["lower"]), _f(b["upper"]),
                     _f(b.get("relative_gap"), 3), b["status"]))
    print(_table(rows, ("set", "level", "radius", "budget", "nominal", "CMDP", "robust",
                        "lower", "upper", "rel. gap", "status")))
    return 0


# --------------------------------------------------------------------------- verify
def _verify(parser, args) -> int:
    _input_file(parser, args.file)
    from ..suite.recertify import verify

    names = [n for group in args.names for n in group] or None
    res = verify(names, path=args.file, tol=args.tol, progress=progress_enabled(args),
                 workers=args.workers)
    rows = [(r["key"], _f(r["lower"], 8), _f(r["value"], 8),
             ",".join(_f(c, 6) for c in r["costs"]), ",".join(_f(c, 6) for c in r["budget"]),
             r["confirmed"] or ("ok" if r["ok"] else f"FAILED ({len(r['failures'])})"))
            for r in res.rows]
    print(_table(rows, ("record", "stored lower", "its exact value", "its worst costs",
                        "budget", "verdict")))
    if res.failures:
        print()
        print(_table([(f["key"], f["field"], *_apart(f["stored"], f["recomputed"]),
                       f["why"]) for f in res.failures],
                     ("record", "field", "stored", "recomputed", "failure")))
    print(f"{res.message}, {res.seconds:.1f} s")
    return 1 if res.failed else 0


# --------------------------------------------------------------------------- certify
def _certify(parser, args) -> int:
    import shlex
    from pathlib import Path

    out = check_output(parser, args.out, kind="file", force=args.force)
    if out.suffix not in (".json", ".gz"):
        parser.error(f"--out {args.out!r}: the data file is JSON; give a path ending in "
                     f".json.gz or .json")
    from ..suite import NAMES, ONLY_KINDS
    from ..suite.sets import KINDS

    only = args.only or list(NAMES)
    kinds = args.kinds
    if kinds is not None:
        have = {n: ONLY_KINDS.get(n, KINDS) for n in only}
        empty = [n for n in only if not set(kinds) & set(have[n])]
        if empty:
            parser.error(f"--kinds {','.join(kinds)} selects no set of "
                         f"{', '.join(empty)} (" + "; ".join(
                             f"{n} has {', '.join(have[n])}" for n in empty)
                         + "); give kinds the instances have")
    client = None
    if args.scheduler is not None:
        from .reproduce import connect_dask, dask_address

        try:
            address = dask_address(args.scheduler)
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--scheduler: {exc}")
        client = connect_dask(parser, address, "--scheduler")
    import time

    from .._checks import InputError
    from ..suite.certify import DEFAULT_BUDGET, assemble, check_budget, job_keys, run_jobs

    budget = dict(DEFAULT_BUDGET)
    if args.max_boxes is not None:
        budget.update(schedule=list(args.max_boxes), more={})
    if args.time_limit is not None:
        budget["time_limit"] = float(args.time_limit)
    budget = check_budget(budget)
    work = Path(str(out) + ".work")
    levels = None if args.levels is None else [float(r) for r in args.levels]
    jobs = job_keys(args.only, args.kinds, levels)
    if args.fill is not None:
        if args.resume_from is not None:
            parser.error("--fill runs no job and --resume-from starts a run: give one")
        return _fill(parser, args, out, work, jobs, budget)
    if args.resume_from is not None:
        from .._io import LoadError
        from ..suite.certify import seed_folder

        try:
            n = seed_folder(work, args.resume_from, budget)
        except (InputError, LoadError) as exc:
            parser.error(f"--resume-from {args.resume_from!r}: {exc}")
        print(f"rcmdp suite certify: {n} finished jobs taken from {args.resume_from} "
              f"into {work}", file=sys.stderr)
    again = "the same command" if args.resume_from is None else \
        "the same command without --resume-from"  # the folder it made exists now
    args._interrupted = f"the finished jobs are kept in {work}: run {again} to resume"
    t0 = time.perf_counter()
    try:
        info = run_jobs(work, jobs, budget=budget, workers=args.workers, client=client,
                        progress=progress_enabled(args),
                        echo=lambda line: print(line, file=sys.stderr))
    except InputError as exc:  # another work budget in the folder
        parser.error(str(exc))
    wall = time.perf_counter() - t0
    if info["failed"]:
        for key, why in info["failed"]:
            print(f"rcmdp suite certify: the job {key} failed: {why}", file=sys.stderr)
        print(f"rcmdp suite certify: {len(info['failed'])} jobs failed; the finished jobs "
              f"are kept in {work}, no data file written", file=sys.stderr)
        return 1
    command = "rcmdp suite certify " + " ".join(shlex.quote(a) for a in sys.argv[3:]) \
        if sys.argv[1:3] == ["suite", "certify"] else None
    header = assemble(work, out, jobs, wall_seconds=wall, workers=args.workers,
                      command=command)
    args._interrupted = f"the data file {out} is complete"
    jobs_text = f"{len(jobs)} job{'s' * (len(jobs) != 1)}"
    print(f"rcmdp suite certify: {jobs_text} ({info['run']} run, {info['kept']} kept from "
          f"{work}), {wall:.1f} s wall, {header['job_seconds']:.1f} s in jobs; wrote {out}")
    return 0


def _fill(parser, args, out, work, jobs, budget) -> int:
    """``certify --fill DATA``: the data file from the finished jobs of the work folder
    (whose work budget must be this run's), the others from ``DATA``; no job run."""
    import json
    import shlex
    from pathlib import Path

    from .._io import LoadError
    from ..suite.certify import SETTINGS_FILE, assemble, check_budget

    fill = Path(args.fill)
    if not fill.is_file():
        parser.error(f"--fill {args.fill!r} is not a file; give a suite data file "
                     f"(.json.gz)")
    settings = work / SETTINGS_FILE
    if not settings.is_file():
        parser.error(f"--fill: the work folder {str(work)!r} has no {SETTINGS_FILE}; run "
                     f"the certification first (the same command without --fill)")
    try:
        folder = json.loads(settings.read_text())
        theirs = check_budget(folder["budget"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        parser.error(f"--fill: {str(settings)!r} is damaged ({exc}); the work budget of "
                     f"its jobs is unknown: delete the folder {str(work)!r} to start again")
    if theirs != budget:
        parser.error(f"--fill: the work folder {str(work)!r} holds jobs of the work budget "
                     f"{json.dumps(folder['budget'])}, this run gives {json.dumps(budget)}; "
                     f"give the settings of the run that made the folder")
    command = "rcmdp suite certify " + " ".join(shlex.quote(a) for a in sys.argv[3:]) \
        if sys.argv[1:3] == ["suite", "certify"] else None
    try:
        header = assemble(work, out, jobs, command=command, fill=fill)
    except (LoadError, ValueError) as exc:
        parser.error(f"--fill {args.fill!r}: {exc}")
    except FileNotFoundError as exc:
        parser.error(f"--fill {args.fill!r} lacks records: {exc}")
    args._interrupted = f"the data file {out} is complete"
    n = len(header["filled"]["keys"])
    print(f"rcmdp suite certify: {len(jobs) - n} of {len(jobs)} records from {work}, {n} "
          f"from {fill}; wrote {out}")
    return 0


# --------------------------------------------------------------------------- score
def _resolve_planner(parser, text):
    import importlib

    mod_name, _, fn_name = text.partition(":")
    if "" not in sys.path and "." not in sys.path:
        sys.path.append("")
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name) if fn_name else None
    except (ImportError, AttributeError) as exc:
        parser.error(f"--planner {text!r} cannot be imported ({exc}); give MODULE:FUNCTION "
                     f"of an importable module")
    if not callable(fn):
        parser.error(f"--planner {text!r} is not a function; give MODULE:FUNCTION")
    return fn


def _write_new(path, data: bytes, force: bool, state: dict) -> None:
    """Write ``data`` to ``path`` atomically; without ``force`` never over a file that
    is not this run's (``os.link`` of the temporary file: it fails when the name exists,
    so two runs that started together cannot both write); ``state["owned"]`` once this
    run has created it."""
    from .._io import write_atomic

    if force or state.get("owned"):
        write_atomic(path, lambda fh: fh.write(data))
        return
    try:
        write_atomic(path, lambda fh: fh.write(data), exclusive=True)
    except FileExistsError:
        from .._checks import InputError

        raise InputError(f"{str(path)!r} was created by someone else while this run "
                         f"scored (another rcmdp suite score?); it was not overwritten: "
                         f"give another --out, or --force") from None
    state["owned"] = True


def _score(parser, args) -> int:
    _input_file(parser, args.file)
    if args.trainer is not None and args.planner is not None:
        parser.error("give --trainer or --planner, not both")
    if args.trainer is not None and args.algorithm is not None and len(args.algorithm) > 1:
        parser.error("--trainer trains one learner: give at most one --algorithm with it")
    if args.planner is not None and args.algorithm is not None:
        parser.error("--algorithm names the package's entrants; a --planner is scored "
                     "under --name")
    if args.name is not None and args.trainer is None and args.planner is None:
        parser.error("--name names the rows of --trainer or --planner; give one of them")
    out = None
    if args.out is not None:
        out = check_output(parser, args.out, kind="file", force=args.force)
    trainer = resolve_trainer(parser, args.trainer) if args.planner is None else None
    planner = _resolve_planner(parser, args.planner) if args.planner is not None else None
    from ..suite import BASELINES

    if trainer is not None and args.algorithm and args.algorithm[0] in BASELINES:
        parser.error(f"--algorithm {args.algorithm[0]} is a built-in baseline, not a name "
                     f"to pass to --trainer; give one of the six learners' names")
    from ..suite.leaderboard import score

    written, state = [], {}

    def keep(res):
        if out is not None:
            _write_new(out, res.to_json().encode(), args.force, state)
            written.append(res)

    args._interrupted = lambda: (f"the finished runs are in {out}" if written else
                                 "nothing was written")
    algos = args.algorithm or (["cpg"] if trainer is not None else ["pg"])
    res = score(trainer=trainer, planner=planner, name=args.name,
                algorithms=algos if planner is None else (),
                names=args.instances, seeds=range(args.first_seed,
                                                  args.first_seed + args.seeds),
                episodes=args.episodes, set=args.set_kind, level=float(args.level),
                path=args.file, progress=progress_enabled(args), on_run=keep)
    keep(res)
    print(res.table())
    if out is not None:
        print(f"wrote {out}")
    if res.failed:
        for r in res.rows:
            if r["error"]:
                print(f"rcmdp suite score: {r['entrant']} failed on {r['instance']} (seed "
                      f"{r['seed']}): {r['error']}", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------- figure
def _figure(parser, args) -> int:
    from pathlib import Path

    if Path(args.out).suffix.lower() not in FIGURE_SUFFIXES:
        parser.error(f"--out {args.out!r}: the figure is an image; give a path ending in "
                     f"{', '.join(FIGURE_SUFFIXES)}")
    _input_file(parser, args.file)
    _input_file(parser, args.scores, "--scores", "a score file written by rcmdp suite "
                                                 "score --out")
    out = check_output(parser, args.out, kind="file", force=args.force)
    from ..suite.report import figure

    figure(out, path=args.file, scores=args.scores)
    print(f"wrote {out}")
    return 0
