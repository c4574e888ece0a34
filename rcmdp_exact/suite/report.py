"""The figure and the tables of ``docs/suite.md`` from the data file and a score file.

``rcmdp suite figure --out FILE.png [--scores FILE.json]`` calls :func:`figure`;
:func:`bracket_table` and :func:`leaderboard_table` give the Markdown tables of the
page.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bracket_table", "figure", "leaderboard_table"]


def _f(x, d=4):
    return "-" if x is None else f"{x:.{d}g}"


def bracket_table(path=None, r: float = 0.1) -> str:
    """A Markdown table: per instance and kind of set at the grid's radius ``r``, the
    budget, the values and the bracket with its relative gap and status."""
    from .store import data

    lines = ["| instance | set | budget | nominal | CMDP | robust | lower | upper | rel. gap "
             "| status |", "|---|---|---|---|---|---|---|---|---|---|"]
    for rec in data(path)["records"]:
        if abs(rec["r"] - r) > 1e-12:
            continue
        b = rec["bracket"]
        lines.append(f"| {rec['instance']} | {rec['kind']} | {_f(rec['budget'][0])} | "
                     f"{_f(rec['nominal_optimum'])} | {_f(rec['cmdp_optimum'])} | "
                     f"{_f(rec['robust_optimum'])} | {_f(b['lower'])} | {_f(b['upper'])} | "
                     f"{_f(b.get('relative_gap'), 2)} | {b['status']} |")
    return "\n".join(lines)


def leaderboard_table(scores) -> str:
    """A Markdown table of a :class:`~.leaderboard.Scores` (means over the seeds)."""
    lines = ["| instance | learner | seeds | worst value | violation | feasible | share "
             "(lower) | share (upper) |", "|---|---|---|---|---|---|---|---|"]
    for s in scores.summary():
        lines.append(f"| {s['instance']} | {s['algorithm']} | {s['seeds']} | "
                     f"{_f(s['worst_value'])} | {_f(s['violation'], 3)} | "
                     f"{s['feasible']}/{s['seeds']} | {_f(s['share_lower'], 3)} | "
                     f"{_f(s['share_upper'], 3)} |")
    return "\n".join(lines)


def figure(out, path=None, scores=None) -> None:
    """Write the figure: left, the relative gap of every instance's bracket per kind of
    set at r = 0.1 (closed brackets at the floor of the axis); right, with a score file
    ``scores``, each learner's mean share of the certified upper side per instance,
    hatched where some seed violated its budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .leaderboard import read_scores
    from .sets import KINDS
    from .store import data

    recs = [r for r in data(path)["records"] if abs(r["r"] - 0.1) < 1e-12]
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
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("relative gap (upper - lower) / |lower|, r = 0.1 (no lower side: 1e3)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("certified brackets")
    if scores is not None:
        sc = read_scores(scores)
        summ = sc.summary()
        inst = list(dict.fromkeys(s["instance"] for s in summ))
        algos = list(dict.fromkeys(s["algorithm"] for s in summ))
        ax = axes[0, 1]
        w = 0.8 / max(1, len(algos))
        for j, a in enumerate(algos):
            xs, ys, hatch = [], [], []
            for i, n in enumerate(inst):
                s = next((s for s in summ if s["instance"] == n and s["algorithm"] == a), None)
                if s is None or s["share_upper"] is None:
                    continue
                xs.append(i + (j - (len(algos) - 1) / 2) * w)
                ys.append(s["share_upper"])
                hatch.append(s["feasible"] < s["seeds"])
            bars = ax.bar(xs, ys, width=w, label=a)
            for b, h in zip(bars, hatch, strict=True):
                if h:
                    b.set_hatch("//")
        ax.set_xticks(range(len(inst)), inst, rotation=30, ha="right")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylabel("share of the certified upper side (mean over seeds)")
        ax.set_title("leaderboard (hatched: a seed violates its budget)")
        ax.legend(fontsize=7, ncol=2)
        ax.set_ylim(0, max(1.1, float(np.nanmax([s["share_upper"] or 0 for s in summ])) + 0.1))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
