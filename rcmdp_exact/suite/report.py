"""The figure and the tables of ``docs/suite.md`` from the data file and a score file.

``rcmdp suite figure --out FILE.png [--scores FILE.json]`` calls :func:`figure`;
:func:`bracket_table` and :func:`leaderboard_table` give the Markdown tables of the
page.
"""

from __future__ import annotations

__all__ = ["bracket_table", "figure", "leaderboard_table"]


def _f(x, d=4):
    return "-" if x is None else f"{x:.{d}g}"


def bracket_table(path=None, level: float = 0.1) -> str:
    """A Markdown table: per instance and kind of set at the grid's level ``level``, the
    budget, the values and the bracket with its relative gap and status."""
    from . import data

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
    if m is None:
        return "-"
    if h is None:
        return f"{m:.{d}g}"
    # a half-width below 1e-9 of the value is the rounding of equal runs
    return f"{m:.{d}g} ± {0.0 if h <= 1e-9 * max(1.0, abs(m)) else h:.2g}"


def leaderboard_table(scores) -> str:
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
    from . import data
    from .leaderboard import Scores
    from .sets import KINDS

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
            g = rec["bracket"].get("relative_gap")
            ys.append(i + (j - 1.5) * 0.18)
            xs.append(max(floor, g) if g is not None else 1e3)
        ax.barh(ys, xs, height=0.18, label=kind, left=0)
    ax.set_xscale("log")
    ax.set_xlim(floor, 1e3)
    ax.axvline(0.01, color="k", lw=0.6, ls=":")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("relative gap (upper - lower) / |lower|, level 0.1 (no lower side: 1e3)")
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
            ax.bar(xs, ys, width=w, label=e, yerr=errs, capsize=1.5)
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


def family_summary(names, path=None) -> str:
    """One sentence on the records of the instances ``names``: how many, the median and
    range of their relative gaps, how many within 1%, the statuses (the last sentence of
    each family's page in ``docs/suite/``)."""
    import statistics
    from collections import Counter

    from . import data

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


def open_problems(path=None, target: float = 0.01) -> str:
    """A Markdown table of the records whose relative gap is above ``target``: the best
    bracket, the side that holds the gap (the side the last run of the bracket moved
    least, or the side at a cap), the boxes and the seconds spent."""
    from . import data

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
    when the upper side is a cap (the branch and bound never cut below it) or, over the
    schedule's runs, moved more than the lower side (it was still falling); "lower" when
    the lower side moved more; "both" otherwise."""
    b = rec["bracket"]
    if str(b.get("upper_method", "")).startswith("cap"):
        return "upper (at a cap)"
    runs = [r for r in b.get("runs") or [] if r.get("lower") is not None]
    if len(runs) >= 2:
        d_up = (runs[0]["upper"] or 0.0) - (runs[-1]["upper"] or 0.0)
        d_lo = (runs[-1]["lower"] or 0.0) - (runs[0]["lower"] or 0.0)
        if d_up > 2 * d_lo:
            return "upper (still falling)"
        if d_lo > 2 * d_up:
            return "lower (still rising)"
    return "both"
