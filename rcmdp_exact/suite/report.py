"""The figure and the tables of ``docs/suite.md`` from the data file and a score file.

``rcmdp suite figure --out FILE.png [--scores FILE.json]`` calls :func:`figure`;
``python -m rcmdp_exact.suite.report --scores docs/suite/leaderboard.json docs/suite.md
docs/suite/*.md`` makes the generated blocks of the pages again (:func:`render`: the
regeneration paragraph, the table at level 0.1, the tightness, the open problems, the
leaderboard and each family's summary), ``--check`` says which pages differ.
"""

from __future__ import annotations

import json
import re

__all__ = ["BLOCK", "block", "figure", "regeneration", "render", "tightness"]


def _f(x, d=4):
    return "-" if x is None else f"{x:.{d}g}"


def _bracket_table(path=None, level: float = 0.1) -> str:
    """A Markdown table: per instance and kind of set at the grid's level ``level``, the
    budget, the values and the bracket with its relative gap and status."""
    from .store import data

    lines = ["| instance | set | budget | nominal | CMDP | robust | lower | upper | rel. gap "
             "| status |", "|---|---|---|---|---|---|---|---|---|---|"]
    for rec in data(path)["records"]:
        if abs(rec["level"] - level) > 1e-12:
            continue
        b = rec["bracket"]
        lines.append(f"| {rec['instance']} | {rec['kind']} | {_f(rec['budget'][0])} | "
                     f"{_f(rec['nominal_optimum'])} | {_f(rec['cmdp_optimum'])} | "
                     f"{_f(rec['robust_optimum'])} | {_f(b['lower'])} | {_f(b['upper'])} | "
                     f"{_f(b.get('relative_gap'), 2)} | {b['status']} |")
    return "\n".join(lines)


def _pm(m, h, d=3):
    from .leaderboard import plus_minus

    return plus_minus(m, h, d, sign="±")


def _leaderboard_table(scores) -> str:
    """A Markdown table of a :class:`~.leaderboard.Scores`: per instance and entrant the
    robust-feasible runs, their share of the certified upper side and worst value (means
    with 95% t-intervals over the seeds), and the runs that violate their budget apart."""
    lines = ["| instance | entrant | robust-feasible | share of upper (feasible) | worst "
             "value (feasible) | violating runs: mean violation |",
             "|---|---|---|---|---|---|"]
    for s in scores.summary():
        bad = s["seeds"] - s["feasible"] - s["failed"]
        violating = "-" if not bad else f"{bad}: {_f(s['violation'], 3)}"
        lines.append(f"| {s['instance']} | {s['entrant']} | {s['feasible']}/{s['seeds']} | "
                     f"{_pm(s['share_upper'], s['share_upper_ci'])} | "
                     f"{_pm(s['worst_value'], s['worst_value_ci'], 4)} | {violating} |")
    return "\n".join(lines)


def figure(out, path=None, scores=None) -> None:
    """Write the figure ``out`` (.png, .pdf or .svg, atomically): left, the relative gap
    of every instance's bracket per kind of set at level 0.1 (closed brackets at the
    floor of the axis); right, with a score file ``scores``, each entrant's mean share of
    the certified upper side over its robust-feasible runs per instance (with its 95%
    interval; an entrant without a robust-feasible run has no bar, and the label says
    how many runs were feasible)."""
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .._io import write_atomic
    from .leaderboard import Scores
    from .sets import KINDS
    from .store import data

    recs = [r for r in data(path)["records"] if abs(r["level"] - 0.1) < 1e-12]
    names = list(dict.fromkeys(r["instance"] for r in recs))
    ncols = 2 if scores is not None else 1
    fig, axes = plt.subplots(1, ncols, figsize=(7 * ncols, 0.32 * len(names) + 1.5),
                             squeeze=False)
    ax = axes[0, 0]
    floor = 1e-4
    for j, kind in enumerate(KINDS):
        ys, xs = [], []
        for i, n in enumerate(names):
            rec = next((r for r in recs if r["instance"] == n and r["kind"] == kind), None)
            if rec is None:
                continue
            if rec["bracket"]["status"] == "infeasible":
                continue  # OPT = -inf, certified: no bracket to draw
            g = rec["bracket"].get("relative_gap")
            ys.append(i + (j - 1.5) * 0.18)
            xs.append(max(floor, g) if g is not None else 1e3)
        ax.barh(ys, xs, height=0.18, label=kind, left=0)
    ax.set_xscale("log")
    ax.set_xlim(floor, 1e3)
    ax.axvline(0.01, color="k", lw=0.6, ls=":")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("relative gap (upper - lower) / |lower|, level 0.1 (no lower side: 1e3; "
                  "certified infeasible: no bar)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("certified brackets")
    if scores is not None:
        summ = Scores.load(scores).summary()
        inst = list(dict.fromkeys(s["instance"] for s in summ))
        ents = list(dict.fromkeys(s["entrant"] for s in summ))
        ax = axes[0, 1]
        w = 0.8 / max(1, len(ents))
        for j, e in enumerate(ents):
            xs, ys, errs = [], [], []
            for i, n in enumerate(inst):
                s = next((s for s in summ if s["instance"] == n and s["entrant"] == e), None)
                if s is None or s["share_upper"] is None:
                    continue
                xs.append(i + (j - (len(ents) - 1) / 2) * w)
                ys.append(s["share_upper"])
                errs.append(s["share_upper_ci"] or 0.0)
            ax.bar(xs, ys, width=w, label=e, yerr=errs, capsize=1.5,
                   color=plt.get_cmap("tab10")(j % 10))
        ax.set_xticks(range(len(inst)), inst, rotation=30, ha="right")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylabel("share of the certified upper side\n(robust-feasible runs, 95% CI)")
        ax.set_title("leaderboard (no bar: no robust-feasible run)")
        ax.legend(fontsize=7, ncol=2)
        ax.set_ylim(0, 1.1)
    fig.tight_layout()
    fmt = Path(out).suffix.lstrip(".").lower() or "png"
    write_atomic(out, lambda fh: fig.savefig(fh, format=fmt, dpi=110))
    plt.close(fig)


def _family_summary(names, path=None) -> str:
    """One sentence on the records of the instances ``names``: how many, the median and
    range of their relative gaps, how many within 1%, the statuses (the last sentence of
    each family's page in ``docs/suite/``)."""
    import statistics
    from collections import Counter

    from .store import data

    recs = [r for r in data(path)["records"] if r["instance"] in names]
    gaps = [r["bracket"]["relative_gap"] for r in recs
            if r["bracket"].get("relative_gap") is not None]
    infeasible = sum(r["bracket"]["status"] == "infeasible" for r in recs)
    within = sum(g <= 0.01 for g in gaps)
    st = Counter(r["bracket"]["status"] for r in recs)
    parts = [f"{len(recs)} records"]
    if gaps:
        parts.append(f"relative gap median {statistics.median(gaps):.3g}, range "
                     f"{min(gaps):.3g} to {max(gaps):.3g}")
    parts.append(f"{within} of {len(recs) - infeasible} within 1%"
                 + (f" ({infeasible} certified infeasible)" if infeasible else ""))
    parts.append("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
    return "Certified: " + "; ".join(parts) + "."


def _open_problems(path=None, target: float = 0.01) -> str:
    """A Markdown table of the records whose relative gap is above ``target``: the best
    bracket, the side that holds the gap (the side the last run of the bracket moved
    least, or the side at a cap), the boxes and the seconds spent."""
    from .store import data

    lines = ["| record | lower | upper | rel. gap | lower side | upper side | holds the gap "
             "| boxes (budget) | seconds |", "|---|---|---|---|---|---|---|---|---|"]
    for rec in data(path)["records"]:
        b = rec["bracket"]
        g = b.get("relative_gap")
        if b["status"] == "infeasible" or (g is not None and g <= target):
            continue
        runs = b.get("runs") or []
        lines.append(f"| {rec['key']} | {_f(b['lower'], 6)} | {_f(b['upper'], 6)} | "
                     f"{_f(g, 3)} | {b['lower_method']} | {b['upper_method']} | "
                     f"{holder(rec)} | "
                     + (f"{runs[-1]['boxes']} ({runs[-1]['max_boxes']})" if runs else "-")
                     + f" | {rec['seconds']:.0f} |")
    return "\n".join(lines)


def holder(rec: dict) -> str:
    """Which side of an open record holds the gap, as far as the runs tell: "upper"
    when the upper side is a cap or the Lagrangian dual (the branch and bound never cut
    below it, however the lower side moved) or, over the schedule's runs, moved more
    than the lower side (it was still falling); "lower" when the lower side moved more;
    "both" otherwise."""
    b = rec["bracket"]
    method = str(b.get("upper_method", ""))
    if method.startswith("cap"):
        return "upper (at a cap)"
    if method == "lagrangian":
        return "upper (the Lagrangian dual, never cut)"
    runs = [r for r in b.get("runs") or [] if r.get("lower") is not None]
    if len(runs) >= 2:
        d_up = (runs[0]["upper"] or 0.0) - (runs[-1]["upper"] or 0.0)
        d_lo = (runs[-1]["lower"] or 0.0) - (runs[0]["lower"] or 0.0)
        if d_up > 2 * d_lo:
            return "upper (still falling)"
        if d_lo > 2 * d_up:
            return "lower (still rising)"
    return "both"


# --------------------------------------------------------------------------- the pages
#: A generated block of a page: ``<!-- suite-report: NAME [ARG] -->`` ... ``<!--
#: /suite-report -->``; :func:`render` replaces what lies between with :func:`block`.
BLOCK = re.compile(r"(<!-- suite-report: (?P<name>[a-z]+)(?: (?P<arg>[^ ]+))? -->\n)"
                   r"(?P<body>.*?)(<!-- /suite-report -->)", re.S)
#: The file of 2026-11-28 (2 s per bracket): the records within 1% then, the figure the
#: tightness section compares with (issue 38).
BEFORE = {"file": "2026-11-28", "within": 70, "records": 207}


def _hours(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 5400 else f"{s / 60:.0f} min"


def regeneration(path=None) -> str:
    """The paragraph on how the shipped file was made: its command, work budget, the
    job time and what it means on two cores and on a Dask cluster."""
    from .certify import DEFAULT_BUDGET, check_budget
    from .store import data

    d = data(path)
    if d.get("filled"):
        return _snapshot(d)
    recs = d["records"]
    secs = [r["seconds"] for r in recs]
    total, longest = sum(secs), max(secs)
    slow = max(recs, key=lambda r: r["seconds"])["key"]
    b = d["budget"]
    more = "; ".join(f"`{k}` {v}" for k, v in b.get("more", {}).items())
    own = [r["key"] for r in recs if r["key"] in b.get("more", {})]
    lines = [
        f"The shipped file (`rcmdp_exact/suite/data/values.json.gz`, {len(recs)} records, "
        f"generated {d['generated']}) was made by `{d.get('command') or 'rcmdp suite certify'}`"
        f" with the work budget" + (" of `rcmdp_exact.suite.certify.DEFAULT_BUDGET`"
                                     if b == check_budget(dict(
                                         DEFAULT_BUDGET, time_limit=b["time_limit"]))
                                     else "") +
        f": the box schedule {b['schedule']}" + (f", and {more}" if more else "") +
        f"; the bracket's options {json.dumps(b['bracket'])} (each record lists every "
        f"option in its `work`); a safety net of {b['time_limit']:g} s per bracket run.",
        f"Its {len(recs)} jobs took **{total:,.0f} s** ({_hours(total)}) in all, one "
        f"process each, on the reference machine (2 CPU cores shared with other work: "
        f"the times are those of a loaded machine); the longest, {slow}, {longest:,.0f} s. "
        f"So the file regenerates in about {_hours(total / 2)} on two idle cores "
        f"(`--workers 2`), and on a Dask cluster of n workers (`--scheduler`) in about "
        f"max(total / n, longest): {_hours(max(total / 16, longest))} with 16.",
    ]
    if own:
        lines.append(f"{len(own)} records have a schedule of their own (a second pass on "
                     f"the records open after the first, by a resume with the longer "
                     f"schedules: {', '.join(own)}).")
    extends = d.get("extends") or []
    if extends:
        lines.append(f"The run was extended {len(extends)} time(s) from the budget "
                     f"{json.dumps(extends[0])}.")
    stopped = [r["key"] for r in recs if not r["bracket"].get("reproducible", True)]
    lines.append("Every record was decided by its work budget (no safety net reached)."
                 if not stopped else
                 f"The safety net stopped {len(stopped)} records (marked `reproducible: "
                 f"false`): {', '.join(stopped)}.")
    return " ".join(lines)


def _snapshot(d: dict) -> str:
    """:func:`regeneration`'s paragraph for a file written by ``certify --fill`` (the
    records of a certification in progress beside those of another file)."""
    from collections import Counter

    recs, filled = d["records"], d["filled"]
    keys = set(filled["keys"])
    done = [r for r in recs if r["key"] not in keys]
    b = d["budget"]
    more = "; ".join(f"`{k}` {v}" for k, v in b.get("more", {}).items())
    per = Counter(json.dumps(r["work"]["schedule"]) if r.get("work") else "none"
                  for r in recs)
    bare = sorted({r["instance"] for r in recs if not r.get("work")})
    counts = ", ".join(f"{n} records with the schedule {s}" if s != "none" else
                       f"{n} without one (no branch and bound for {', '.join(bare)})"
                       for s, n in sorted(per.items(), key=lambda kv: -kv[1]))
    secs = sum(r["seconds"] for r in done)
    mean = secs / max(len(done), 1)
    rest = sum(r["seconds"] for r in recs if r["key"] in keys)
    stopped = [r["key"] for r in recs if not r["bracket"].get("reproducible", True)]
    # the command with its files by name (the folders are the reference machine's)
    command = " ".join(w.rsplit("/", 1)[-1] for w in
                       (d.get("command") or "rcmdp suite certify --fill").split())
    return " ".join([
        f"The shipped file (`rcmdp_exact/suite/data/values.json.gz`, {len(recs)} records, "
        f"generated {d['generated']}) is a **snapshot of a certification in progress**, "
        f"written by `{command}`: the "
        f"{len(done)} records the run had finished, certified with its work budget (the "
        f"box schedule {b['schedule']}" + (f", and {more}" if more else "") +
        f"; the bracket's options {json.dumps(b['bracket'])}; a safety net of "
        f"{b['time_limit']:g} s per bracket run), and the {len(keys)} others from the "
        f"file `{filled['file']}` (generated {filled.get('generated')}), made with the "
        f"schedule {filled['budget']['schedule']} " + (
            "(no branch and bound: the closures, the candidates and the caps alone)."
            if not filled["budget"]["schedule"] else
            "(an earlier pass, itself possibly a snapshot; each record keeps the `work` "
            "it was certified with)."),
        f"By work budget: {counts}; each record's `work` gives its own (every option of "
        f"its bracket), and `certify --only` with that budget recomputes it.",
        f"The {len(done)} finished jobs took {secs:,.0f} s ({_hours(secs)}), "
        f"{mean:,.0f} s each on average, one process each on the reference machine (2 "
        f"CPU cores shared with other work); the records from `{filled['file']}` "
        f"{rest:,.0f} s.  At that "
        f"average the whole grid under the run's budget needs about "
        f"{_hours(mean * len(recs))} of job time: {_hours(mean * len(recs) / 2)} on two "
        f"cores (`--workers 2`), about {_hours(mean * len(recs) / 16)} on a Dask cluster "
        f"of 16 workers (`--scheduler`; the longest job bounds it from below).  An "
        f"extrapolation: the records left are larger models on average than the "
        f"finished ones.",
        "The certification continues with `rcmdp suite certify --out values.json.gz "
        f"--time-limit {b['time_limit']:g} --workers 2` (the same settings: it resumes "
        "from `values.json.gz.work`, keeping every finished job; on a machine without "
        "that folder, `--resume-from` this file starts one from its finished records) "
        "and writes the whole file under the one budget when the last job ends; "
        "meanwhile the same command "
        "with `--fill INTERIM` (a file made with `--max-boxes 0`) writes a snapshot like "
        "this one.",
        "Every record was decided by its work budget (no safety net reached)."
        if not stopped else
        f"The safety net stopped {len(stopped)} records (marked `reproducible: false`): "
        f"{', '.join(stopped)}.",
    ])


def tightness(path=None, target: float = 0.01) -> str:
    """How many records are within ``target`` (relative gap), beside the file of
    :data:`BEFORE`, by status and by kind of set (``target``: a relative gap > 0)."""
    from collections import Counter

    from .._checks import check_real
    from .store import data

    target = check_real(target, "target", 0.0, low_open=True, hint=" (a relative gap)")

    recs = data(path)["records"]
    infeasible = [r for r in recs if r["bracket"]["status"] == "infeasible"]
    rest = [r for r in recs if r["bracket"]["status"] != "infeasible"]

    def within(r):
        g = r["bracket"].get("relative_gap")
        return g is not None and g <= target

    n_in = sum(within(r) for r in rest)
    closures = sum(bool(r["bracket"].get("closure")) for r in rest)
    none = [r["key"] for r in rest if r["bracket"]["status"] == "no_feasible_policy"]
    lines = [f"**{n_in} of the {len(rest)} records that are not certified infeasible "
             f"({n_in / len(rest):.1%}) are within a relative gap of {target:.0%}** "
             f"({len(infeasible)} certified infeasible; the file of {BEFORE['file']}: "
             f"{BEFORE['within']} of {BEFORE['records']}).  {closures} close without a "
             f"branch and bound (a robust optimum within the budget); "
             + (f"{len(none)} say `no_feasible_policy` ({', '.join(none)})." if none else
                "no record says `no_feasible_policy`."), "",
             "| kind | records | within 1% | median rel. gap | statuses |",
             "|---|---|---|---|---|"]
    import statistics

    from .sets import KINDS

    for kind in KINDS:
        rs = [r for r in rest if r["kind"] == kind]
        if not rs:
            continue
        gaps = [r["bracket"]["relative_gap"] for r in rs
                if r["bracket"].get("relative_gap") is not None]
        st = Counter(r["bracket"]["status"] for r in rs)
        lines.append(f"| {kind} | {len(rs)} | {sum(within(r) for r in rs)} | "
                     f"{_f(statistics.median(gaps), 2) if gaps else '-'} | "
                     + ", ".join(f"{k} {v}" for k, v in sorted(st.items())) + " |")
    return "\n".join(lines)


def block(name: str, arg: str | None = None, path=None, scores=None) -> str:
    """The Markdown of the generated block ``name`` (:data:`BLOCK`)."""
    if name == "regeneration":
        return regeneration(path)
    if name == "table":
        return _bracket_table(path, level=float(arg or 0.1))
    if name == "tightness":
        return tightness(path)
    if name == "open":
        return _open_problems(path)
    if name == "summary":
        return _family_summary(str(arg).split(","), path)
    if name == "leaderboard":
        if scores is None:
            raise ValueError("the leaderboard block needs a score file (--scores)")
        from .leaderboard import Scores

        sc = Scores.load(scores)
        st = sc["settings"]
        seeds = list(st["seeds"])
        first = "" if seeds[0] == 0 else f" --first-seed {seeds[0]}"
        return (_leaderboard_table(sc) + "\n\nThe runs: `rcmdp suite score --algorithm "
                f"{','.join(st['entrants'])} --instances {','.join(st['names'])} "
                f"--seeds {len(seeds)}{first} --episodes {st['episodes']} --set "
                f"{st['set']} --level {st['level']:g} --out docs/suite/leaderboard.json` "
                f"({sc['seconds']:,.0f} s in one process on the reference machine, "
                f"under load), scored against the shipped data file.")
    raise ValueError(f"unknown block {name!r} of docs/suite.md")


def render(text: str, path=None, scores=None) -> str:
    """``text`` (a page of the docs) with every generated block (:data:`BLOCK`) made
    again from the data file ``path`` (default: the shipped one) and the score file
    ``scores``."""
    def sub(m):
        body = block(m["name"], m["arg"], path, scores)
        return f"{m[1]}{body}\n{m[5]}"

    return BLOCK.sub(sub, text)


def main(argv=None) -> int:
    """``python -m rcmdp_exact.suite.report [--file DATA] [--scores FILE [--rescore]]
    [--check] PAGE...``: the pages' generated blocks made again from the data file
    (written in place, atomically; with ``--check``, exit status 1 naming each page that
    differs; with ``--rescore``, the score file's runs scored again against the data
    file first)."""
    import argparse
    from pathlib import Path

    from .._io import write_atomic

    ap = argparse.ArgumentParser(prog="python -m rcmdp_exact.suite.report",
                                 description=main.__doc__.split(":", 1)[1].strip())
    ap.add_argument("pages", nargs="+", metavar="PAGE")
    ap.add_argument("--file", default=None, help="the data file (default: the shipped one)")
    ap.add_argument("--scores", default=None, help="the leaderboard's score file")
    ap.add_argument("--check", action="store_true", help="only say which pages differ")
    ap.add_argument("--rescore", action="store_true",
                    help="first score the runs of --scores again against the data file "
                         "(each stored policy evaluated exactly) and rewrite --scores")
    args = ap.parse_args(argv)
    if args.rescore:
        if args.scores is None or args.check:
            ap.error("--rescore rewrites the score file of --scores; give --scores FILE, "
                     "without --check")
        from .leaderboard import Scores, rescore

        rescore(Scores.load(args.scores), args.file).save(args.scores)
        print(f"rescored {args.scores} against "
              f"{args.file or 'the shipped data file'}")
    stale = []
    for page in map(Path, args.pages):
        if not page.is_file():
            ap.error(f"{str(page)!r} is not a file; give pages of the docs")
        text = page.read_text()
        new = render(text, args.file, args.scores)
        if new != text:
            stale.append(str(page))
            if not args.check:
                write_atomic(page, lambda fh, new=new: fh.write(new.encode()))
    verb = "differ from the data file" if args.check else "rewritten"
    print(f"{len(stale)} of {len(args.pages)} pages {verb}" +
          (f": {', '.join(stale)}" if stale else ""))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
