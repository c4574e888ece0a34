"""Figures like the paper's, as PNG files (matplotlib, Agg canvas, no pyplot state).

* ``test_<test>.png``: test value and overshoot against the test parameter
  (p_success for 1A / 2A, N for 1B / 2B, the 9 demand settings for Inventory); one line
  per algorithm, mean and standard error over runs of the per-run mean over the
  settings of each parameter value (the paper's figures); in black the T-step CMDP
  optimum of each setting (dashed) and in grey the RCMDP bracket's lower policy
  (dotted), the exact references.
* ``training_<domain>.png``: training curves of the episode return, the episode cost and
  lambda (block means over a fiftieth of the episodes; mean and standard error over runs),
  with the T-step CMDP optimum of the true training model, the rescaled budget d' and
  the LP multiplier of the discounted CMDP drawn in.  As in the paper, the episode
  numbers are measured on each algorithm's own training dynamics; dotted lines give the
  learners' periodic exact evaluation of the current stochastic policy on P_data
  (undiscounted T steps) when the records have it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..names import USER_TEST
from .outputs import figure_names
from .spec import ALGORITHMS, TEST_DOMAIN
from .table1 import (
    ALGORITHM_LABELS,
    ALL_TESTS,
    TEST_LABELS,
    fields_json,
    ground_truth_index,
    run_groups,
)

__all__ = ["all_figures",]

_COLORS = dict(zip(ALGORITHMS, ("tab:red", "tab:orange", "tab:blue", "tab:green",
                                "tab:purple", "tab:brown"), strict=True))
_XLABEL = {"inventory": "demand setting (mu, sigma)", "1A": "p_success", "2A": "p_success",
           "1B": "N perturbed state-action pairs", "2B": "N perturbed states",
           USER_TEST: "setting (0: your model, then the perturbations)"}


def _figure(ncols: int, width: float = 4.2):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, 3.6), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def _mean_se(mat: np.ndarray):
    m = mat.mean(axis=0)
    se = mat.std(axis=0) / math.sqrt(mat.shape[0])
    return m, se


def _by_param(rows, key):
    """{param: mean of rows[key]} for one run's rows of one test."""
    acc: dict = {}
    for r in rows:
        acc.setdefault(r["param"], []).append(r[key])
    return {p: float(np.mean(v)) for p, v in sorted(acc.items())}


def _group_names(rows) -> dict:
    return {r["param"]: r["group"] for r in rows}


def _test_figure(store, test: str, path, *, mode: str = "greedy", config: str | None = None):
    """Write ``test_<test>.png`` (module notes); returns the path or None (no runs)."""
    groups, _ = run_groups(store, (test,), ALGORITHMS)
    cfgs = sorted({k[0] for k in groups})
    if not cfgs:
        return None
    cfg = config if config is not None else max(
        cfgs, key=lambda c: (sum(len(v) for k, v in groups.items() if k[0] == c), c))
    fig, (ax_v, ax_o) = _figure(2)
    names: dict = {}
    spec = None
    for a in ALGORITHMS:
        runs = groups.get((cfg, test, a))
        if not runs:
            continue
        spec = runs[0]["spec"]
        vals, overs = [], []
        for run in runs:
            rows = [r for r in store.tests(run["key"]) if r["suite"] == test
                    and r["mode"] == mode]
            if not rows:
                continue
            for r in rows:
                r["overshoot"] = r["cost"] - r["budget"]
            names.update(_group_names(rows))
            vals.append(_by_param(rows, "value"))
            overs.append(_by_param(rows, "overshoot"))
        if not vals:
            continue
        xs = sorted(vals[0])
        for ax, data in ((ax_v, vals), (ax_o, overs)):
            mat = np.array([[d[x] for x in xs] for d in data])
            m, se = _mean_se(mat)
            ax.plot(xs, m, "o-", ms=3, color=_COLORS[a], label=ALGORITHM_LABELS[a])
            ax.fill_between(xs, m - se, m + se, color=_COLORS[a], alpha=0.2, lw=0)
    if spec is not None:
        _draw_references(store, test, spec, mode, ax_v, ax_o)
    ax_o.axhline(0.0, color="k", lw=0.6)
    ax_v.set_ylabel("test value (undiscounted)")
    ax_o.set_ylabel("test overshoot C - d'")
    for ax in (ax_v, ax_o):
        ax.set_xlabel(_XLABEL[test])
        if test == "inventory" and names:
            xs = sorted(names)
            ax.set_xticks(xs, [names[x].replace("mu=S/", "S/").replace(", sigma=S/", "\nS/")
                               for x in xs], fontsize=6)
        ax.grid(alpha=0.3)
    ax_v.set_title(f"{TEST_LABELS[test]}: test value ({mode})", fontsize=10)
    ax_o.set_title(f"{TEST_LABELS[test]}: test overshoot ({mode})", fontsize=10)
    ax_v.legend(fontsize=6, loc="best")
    _save(fig, path)
    return Path(path)


def _draw_references(store, test, spec, mode, ax_v, ax_o):
    idx = ground_truth_index(store)
    tf = fields_json(spec, "test")
    su = idx["suite"].get((tf, test))
    if su:
        rows = su["rows"]
        v = _by_param(rows, "value")
        o = _by_param(rows, "overshoot")
        xs = sorted(v)
        ax_v.plot(xs, [v[x] for x in xs], "k--", lw=1, label="CMDP optimum per setting")
        ax_o.plot(xs, [o[x] for x in xs], "k--", lw=1)
    gt_mode = "greedy" if mode == "sampled" else mode
    per_seed = []
    for (t2, _), br in sorted(idx["bracket"].items()):
        if t2 != tf:
            continue
        rows = [dict(r) for r in br["rows"] if r["suite"] == test and r["mode"] == gt_mode]
        if rows:
            per_seed.append((_by_param(rows, "value"), _by_param(rows, "overshoot")))
    if per_seed:
        xs = sorted(per_seed[0][0])
        for ax, j in ((ax_v, 0), (ax_o, 1)):
            m = np.mean([[d[j][x] for x in xs] for d in per_seed], axis=0)
            ax.plot(xs, m, ":", color="0.4", lw=1.2, label="RCMDP lower policy")


def _curve_matrix(store, runs, names, cache=None):
    """(matrix runs x blocks, episodes) of the first name present, or None."""
    cache = {} if cache is None else cache
    for name in names:
        series = []
        eps = None
        for run in runs:
            if run["key"] not in cache:
                cache[run["key"]] = store.curves(run["key"])
            pts = [c for c in cache[run["key"]]
                   if c["name"] == name and c["episode"] is not None]
            if not pts:
                break
            pts.sort(key=lambda c: c["idx"])
            e = [c["episode"] for c in pts]
            if eps is None:
                eps = e
            if e != eps:
                break
            series.append([np.nan if c["value"] is None else c["value"] for c in pts])
        else:
            if series:
                return np.array(series, dtype=np.float64), np.array(eps)
    return None


def _training_figure(store, domain: str, path, *, config: str | None = None):
    """Write ``training_<domain>.png`` (module notes); returns the path or None."""
    tests = [t for t in ALL_TESTS if TEST_DOMAIN[t] == domain][:1]
    groups, _ = run_groups(store, tests, ALGORITHMS)
    cfgs = sorted({k[0] for k in groups})
    if not cfgs:
        return None
    cfg = config if config is not None else max(
        cfgs, key=lambda c: (sum(len(v) for k, v in groups.items() if k[0] == c), c))
    fig, axes = _figure(3, width=3.8)
    panels = ((("return",), "episode return", ("eval_true_stochastic_test_value",)),
              (("cost[0]", "cost"), "episode cost", ("eval_true_stochastic_test_cost[0]",)),
              (("lam", "lam[0]"), "lambda", ()))
    spec = None
    cache: dict = {}
    for a in ALGORITHMS:
        runs = groups.get((cfg, tests[0], a))
        if not runs:
            continue
        spec = runs[0]["spec"]
        for ax, (names, _, exact) in zip(axes, panels, strict=True):
            for which, style in ((names, "-"), (exact, ":")):
                got = _curve_matrix(store, runs, which, cache) if which else None
                if got is None:
                    continue
                mat, eps = got
                m, se = _mean_se(mat)
                ax.plot(eps, m, style, marker="o" if len(eps) < 4 else None, ms=3,
                        color=_COLORS[a], lw=1.2,
                        label=ALGORITHM_LABELS[a] if style == "-" else None)
                if style == "-":
                    ax.fill_between(eps, m - se, m + se, color=_COLORS[a], alpha=0.2, lw=0)
    if spec is not None:
        tr = ground_truth_index(store)["training"].get(fields_json(spec, "test"))
        if tr is not None:
            axes[0].axhline(tr["T_value"], color="k", ls="--", lw=1,
                            label="T-step CMDP optimum of P_data")
            axes[1].axhline(tr["T_budget"], color="k", ls="--", lw=1,
                            label="rescaled budget d'")
            axes[2].axhline(tr["multiplier"], color="k", ls="--", lw=1,
                            label="LP multiplier (discounted CMDP)")
    for ax, (_, label, _) in zip(axes, panels, strict=True):
        ax.set_xlabel("episode")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    fig.suptitle(f"Training on {domain}: solid, sampled episodes on each algorithm's own "
                 f"training dynamics; dotted, exact T-step value and cost of the current "
                 f"policy on P_data", fontsize=9)
    _save(fig, path)
    return Path(path)


def _save(fig, path) -> None:
    """Write ``fig`` as a PNG atomically (:func:`rcmdp_exact._io.write_atomic`)."""
    from .._io import write_atomic

    write_atomic(path, lambda fh: fig.savefig(fh, format="png"))


def all_figures(store, out_dir, *, tests=ALL_TESTS, mode: str = "greedy", bar=None) -> list[Path]:
    """Every test and training figure that the store has data for, into ``out_dir``;
    ``bar`` (a progress bar), when given, advances by one per figure."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in figure_names(tests):
        kind, what = name.split("_", 1)
        if kind == "test":
            p = _test_figure(store, what, out / f"{name}.png", mode=mode)
        else:
            p = _training_figure(store, what, out / f"{name}.png")
        if p is not None:
            paths.append(p)
        if bar is not None:
            bar.update(1)
    return paths
