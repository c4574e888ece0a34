"""The reproduction's outputs, rebuilt from a results store alone.

:func:`write_report` writes into a folder:

* ``table1.csv``: :func:`~.table1.table1` in long layout (full precision, no timestamps:
  two stores holding the same runs give the same file byte for byte);
* ``table1.md``: Table 1 as the paper prints it (tests x algorithms), ours beside the
  paper's, with the ground-truth columns;
* ``report.md``: what was run (configurations and named options), Table 1, a verdict
  per cell computed from the numbers (:func:`verdict`), the other test modes, the
  ground truth, and the figures;
* the PNG figures of :mod:`.figures`.

These files (:func:`~.outputs.report_files`: the three documents, the figures of every
test and training domain and the small file :data:`~.outputs.REPORT_MARKER` that names
the store the report was written from) are the report's own: each is replaced as a whole (written to
a temporary file and renamed, so a full disk leaves the previous file), and those the
report does not write this time (a figure of a test this store does not have) are
removed, so the folder never mixes two reports.  Other files in the folder are never
touched.

**Existing outputs.**  A folder that holds the report of *another* store (or report
files without :data:`~.outputs.REPORT_MARKER`, whose store is unknown, unless that
store already exists in the folder itself, as ``rcmdp reproduce`` puts it) holds
outputs that writing this report would replace: :func:`~.outputs.foreign_report` names
them, and the commands refuse them unless ``--force``.  The report of the *same* store
is this store's own output: writing it again (after ``rcmdp reproduce`` resumed and
added jobs, or with ``rcmdp report``) updates it and is not overwriting.  These rules
live in :mod:`.outputs`, which the commands read before any heavy import.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .._progress import progress_default, tqdm
from .._result import Result
from .estimation import set_note
from .outputs import REPORT_MARKER, foreign_report, report_files, store_id
from .spec import ALGORITHMS, OPTION_NOTES, OPTIONS, TESTS
from .table1 import (
    ALGORITHM_LABELS,
    ALL_TESTS,
    PAPER_RUNS,
    TEST_LABELS,
    config_of,
    penalty_of_spec,
    run_groups,
    table1,
    table1_csv,
)

__all__ = [ "REPORT_MARKER", "decimals", "foreign_report", "format_table1_md",
           "inconclusive", "report_files", "verdict", "write_report"]

#: Settings per test in the paper (1B / 2B: 5 values of N x 50 draws).
PAPER_SETTINGS = {"inventory": 9, "1A": 5, "1B": 250, "2A": 5, "2B": 250}

_MODE_TEXT = {
    "greedy": "greedy policy (argmax), evaluated exactly: the paper's test protocol with "
              "exact evaluation in place of 50 sampled episodes per setting",
    "stochastic": "stochastic policy as trained, evaluated exactly (the published "
                  "implementation also reports it)",
    "sampled": "greedy policy, sampled episodes per setting (the paper's procedure)",
}


#: The modes as a report on your model says them (no paper to refer to).
_MODE_TEXT_OWN = {
    "greedy": "greedy policy (argmax), evaluated exactly",
    "stochastic": "stochastic policy as trained, evaluated exactly",
    "sampled": "greedy policy, sampled episodes per setting",
}


def _mode_text(spec: dict, mode: str) -> str:
    return (_MODE_TEXT_OWN if spec.get("model") else _MODE_TEXT)[mode]


def _f(x, nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{nd}f}"


def decimals(values) -> int:
    """Decimals for numbers of this scale: 1 when the largest magnitude is at least
    100 (the paper's tables), 2 from 10, 3 from 1 and 4 below 1 (values in [0, 1], such
    as the returns of a model with a reward of 1 at the goal)."""
    mags = [abs(float(v)) for v in values
            if v is not None and not isinstance(v, bool) and math.isfinite(float(v))]
    top = max(mags, default=0.0)
    return 1 if top >= 100 else 2 if top >= 10 else 3 if top >= 1 else 4


#: The fewest seeds a verdict needs: with 2 the t interval has one degree of freedom
#: (t = 12.7), so it spans almost any number.
_MIN_SEEDS = 3


def inconclusive(row: dict) -> str | None:
    """Why the seeds cannot decide a cell, or None: fewer than :data:`_MIN_SEEDS`
    seeds, or a 95% interval wider than the magnitude compared (the larger of |ours|
    and |paper's|)."""
    n = row["n_seeds"]
    if n < _MIN_SEEDS:
        return (f"{n} seed{'' if n == 1 else 's'}: a t interval with {max(n - 1, 0)} "
                f"degree{'' if n == 2 else 's'} of freedom cannot decide (a verdict needs "
                f"{_MIN_SEEDS} seeds or more)")
    lo, hi = row["ci95_low"], row["ci95_high"]
    scale = max(abs(row["mean"]), abs(row["paper_mean"]))
    if lo is not None and hi is not None and hi - lo > scale:
        return (f"our 95% interval [{lo:.1f}, {hi:.1f}] is wider ({hi - lo:.1f}) than the "
                f"magnitude compared ({scale:.1f})")
    return None


def verdict(row: dict, sampled: dict | None = None) -> tuple[str, str]:
    """(short verdict, reasons) for one cell, computed from its numbers.

    "inconclusive" when the seeds cannot decide (:func:`inconclusive`: fewer than 3
    seeds, or a 95% interval wider than the magnitude compared); otherwise "agrees"
    when the paper's mean lies inside our 95% interval, or when, with z = (ours -
    paper) / sqrt(se_ours^2 + se_paper^2) (both spreads read as standard errors),
    |z| <= 1.96 ("agrees (z = ...)"); "differs: ours higher" or "differs: ours lower"
    beyond.  Reasons are added when they apply: why the verdict is inconclusive; fewer
    seeds or episodes than the paper; the paper's mean above the exact bound; the share
    of our runs that meet the budget and the penalty their overshoot costs; how far our
    spread is from the paper's; and the difference sampled testing makes (when the
    sampled mode is in the store).
    """
    n, pm, z = row["n_seeds"], row["paper_mean"], row["z_vs_paper"]
    side = "higher" if row["mean"] > pm else "lower"
    why_not = inconclusive(row)
    reasons = []
    if why_not is not None:
        short = "inconclusive"
        reasons.append(why_not)
    elif row["paper_in_ci95"] or (z is None and row["mean"] == pm):
        short = "agrees"
    elif z is not None and abs(z) <= 1.96:
        short = f"agrees (z = {z:+.1f})"
    else:
        short = f"differs: ours {side}" + ("" if z is None else f" (z = {z:+.1f})")
    if n < PAPER_RUNS or row["episodes"] < 5000:
        reasons.append(f"{n} seeds x {row['episodes']} episodes (paper: {PAPER_RUNS} x 5000)")
    paper_settings = PAPER_SETTINGS[row["test"]]
    if row["n_settings"] != paper_settings:
        reasons.append(f"{row['n_settings']} test settings (paper: {paper_settings})")
    b = row["bound"]
    if b is not None and pm > b + 1e-9 * max(1.0, abs(b)):
        reasons.append(f"the paper's mean exceeds the exact bound {b:.1f} of any agent on "
                       f"these settings, so it cannot be matched under exact evaluation")
    over = row["cost_mean"] - row["budget"]
    reasons.append(f"{row['feasible_runs']}/{n} runs meet the budget on average; mean "
                   f"value {row['value_mean']:.1f}, mean overshoot {over:+.3f}"
                   + (f" (penalty {500 * over:.1f} on the mean)" if over > 0 else ""))
    if row["spread"] > 0 and row["paper_spread"] > 0:
        ratio = row["spread"] / row["paper_spread"]
        if ratio > 3 or ratio < 1 / 3:
            reasons.append(f"our spread is {ratio:.2g}x the paper's")
    if sampled is not None:
        d = sampled["mean"] - row["mean"]
        reasons.append(f"sampled testing ({sampled['episodes_per_setting']} episodes per "
                       f"setting) gives {sampled['mean']:.1f} ({d:+.1f})")
    return short, "; ".join(reasons)


def _cell(row, nd: int = 1) -> str:
    return f"{_f(row['mean'], nd)} ± {_f(row['spread'], nd)}"


#: The ground-truth columns of a table and their scale (the learners' cells have the
#: same: T-step undiscounted penalised returns on the test settings).
GT_COLUMNS = (("bound", "bound"), ("cmdp_optimum", "CMDP opt."),
              ("robust_lower", "RCMDP lower"))


def _safest(row) -> str:
    """" (safest)" when the RCMDP lower cell is the safest policy's value (no policy is
    robust-feasible on the set of some seeds)."""
    st = row.get("bracket_status") or ""
    counts = dict(part.split(":") for part in st.split() if ":" in part)
    bad = int(counts.get("infeasible", 0))
    if not bad:
        return ""
    total = sum(int(v) for v in counts.values())
    return " (safest)" if bad == total else f" (safest on {bad} of {total})"


def format_table1_md(rows, mode: str = "greedy", config: str | None = None) -> str:
    """Table 1 as Markdown: tests x algorithms, each cell "ours (paper)" (the paper's
    numbers only where they exist), and the ground-truth columns, labelled with their
    scale; decimals by the scale of the numbers (:func:`decimals`); "(safest)" marks an
    RCMDP lower cell that is the value of the safest policy, because no policy is
    robust-feasible."""
    sel = [r for r in rows if r["mode"] == mode and (config is None or r["config"] == config)]
    by = {(r["test"], r["algorithm"]): r for r in sel}
    algos = [a for a in ALGORITHMS if any(r["algorithm"] == a for r in sel)]
    tests = [t for t in ALL_TESTS if any(r["test"] == t for r in sel)]
    nd = decimals([r[k] for r in sel for k in ("mean", "bound", "cmdp_optimum",
                                               "robust_lower")])
    head = ["test", *[ALGORITHM_LABELS[a] for a in algos],
            *[f"{label} (T-step R_pen)" for _, label in GT_COLUMNS]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in tests:
        cells = [TEST_LABELS[t]]
        gt = None
        for a in algos:
            r = by.get((t, a))
            if r is None:
                cells.append("")
                continue
            gt = r
            pm, ps = r["paper_mean"], r["paper_spread"]
            cells.append(_cell(r, nd) if pm is None else
                         f"{_cell(r, nd)}<br>(paper {pm:.1f} ± {ps:.1f})")
        cells += [_f(gt["bound"], nd) if gt else "—", _f(gt["cmdp_optimum"], nd) if gt else "—",
                  (_f(gt["robust_lower"], nd) + (_safest(gt) if gt["robust_lower"] is not None
                                                 else "")) if gt else "—"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _set_facts(runs) -> dict:
    """What the runs of one configuration trained on and their sets: the set types, the
    supports and the L1 radii range recorded in their infos ("not recorded" in a store
    written before they were)."""
    types = sorted({r["info"].get("set_type", "") for r in runs} - {""})
    by_support: dict = {}
    for r in runs:
        sup = r["info"].get("set_support", "")
        if sup:
            by_support.setdefault(sup, set()).add(r["domain"])
    # one support: said once; several (the paper's domains): each with its domains
    supports = ([next(iter(by_support))] if len(by_support) == 1 else
                [f"{', '.join(sorted(doms))}: {sup}" for sup, doms in
                 sorted(by_support.items(), key=lambda kv: sorted(kv[1]))])
    ranges = [r["info"]["alpha_range"] for r in runs if r["info"].get("alpha_range")]
    return {"types": types, "supports": supports or ["not recorded"],
            "radii": (min(a[0] for a in ranges), max(a[1] for a in ranges)) if ranges
            else None}


def _trained_judged_md(spec, facts) -> list[str]:
    """The lines that say what a configuration trained on, what it was judged on and its
    set (kind, radius or radii range, support)."""
    kind = spec.get("set_kind", "l1")
    support = "; ".join(facts["supports"])
    types = f" ({', '.join(facts['types'])})" if facts["types"] else ""
    own = bool(spec.get("model"))
    nominal = spec["train_on"] == "nominal"
    if own and spec.get("radius") is not None:
        trained = "the model itself (no estimation: the model is judged on itself)"
        set_line = (f"`{kind}`{types} built around the model's own kernel, radius "
                    f"{spec['radius']:g}")
    elif own and spec.get("set_file"):
        trained = ("the nominal kernel of the saved set" if nominal else "the model itself")
        set_line = f"the saved set with content hash `{spec['set_file'][:12]}`"
    else:
        src = (f"{spec['estimation_episodes']} episodes" if own else
               "the protocol's episodes") + " of the uniform random policy"
        trained = (f"the nominal model estimated from {src} (robust learners: its set)"
                   if nominal else f"the true model (PG and CPG; robust learners: the "
                                   f"nominal model estimated from {src} and its set)")
        radii = facts["radii"]
        set_line = (f"`{kind}`{types} estimated: {set_note(kind)}"
                    + (f", L1 radii in [{radii[0]:.3g}, {radii[1]:.3g}]" if radii else ""))
    judged = ("the model itself and its perturbations, exactly (T steps, undiscounted)"
              if own else "every setting of the domain's tests, exactly (T steps, "
                          "undiscounted)")
    return [f"- trained on: {trained}", f"- judged on: {judged}",
            f"- uncertainty set: {set_line}; support: {support}"]


def _configs_md(store, configs, rows) -> list[str]:
    out = []
    for cfg in sorted(configs):
        spec = configs[cfg]
        runs = [r for r in store.runs() if _cfg(r) == cfg]
        out.append(f"### Configuration `{cfg}` ({len(runs)} runs)")
        out.append("")
        out.append(f"- training episodes: {spec['episodes']}; exact evaluations every "
                   f"{spec['eval_every']} episodes; trainer `{spec['trainer']}`")
        if not spec.get("model"):
            out.append(f"- tests 1B / 2B: {spec['n_draws']} draws per N (paper: 50), drawn "
                       f"with test seed {spec['test_seed']}")
        out.append(f"- sampled test episodes per setting: {spec['sampled_episodes']} "
                   f"(0 = exact testing only; the paper: 50)")
        weight = penalty_of_spec(spec)
        out.append(f"- penalty weight of R_pen: {weight:g}"
                   + (" (the paper's)" if weight == 500 else
                      " (not the paper's 500: no paper numbers are shown)"))
        out += _trained_judged_md(spec, _set_facts(runs))
        if spec.get("model"):
            out += _model_md(spec)
        for name in OPTIONS:
            if spec.get("model") and name in PAPER_ONLY_OPTIONS:
                continue
            if name == "train_on" and spec.get("radius") is not None:
                continue  # judged on itself: every learner trains on the model
            val = spec[name]
            default = " (default)" if val == OPTIONS[name][0] else ""
            out.append(f"- `{name}` = `{val}`{default}: {OPTION_NOTES[name][val]}")
        if spec.get("extra"):
            out.append(f"- further trainer options: `{json.dumps(spec['extra'])}`")
        out.append("")
    return out


#: Options that choose among the paper's domains' variants (not shown for your model).
PAPER_ONLY_OPTIONS = ("estimation", "offset_on", "cost_layout", "revenue", "demand")


def _model_md(spec) -> list[str]:
    out = [f"- your model: content hash `{spec['model'][:12]}`"
           + (f", horizon T = {spec['horizon']} (given on the command line)"
              if spec.get("horizon") else "")]
    if spec.get("estimation_episodes"):
        out.append(f"- estimation (asked for with --estimate): "
                   f"{spec['estimation_episodes']} episodes of the uniform random policy, "
                   f"delta {spec['delta']}")
    perts = spec.get("perturbations") or []
    out.append(f"- test settings: the model itself and {len(perts)} perturbation"
               f"{'' if len(perts) == 1 else 's'}"
               + (": " + ", ".join(f"`{n}` (group `{g}`, hash `{h[:12]}`)"
                                   for n, g, h in perts) if perts else ""))
    return out


def _cfg(run) -> str:
    return config_of(run["spec"])


def _seconds(store) -> dict:
    tot = {"estimation": 0.0, "training": 0.0, "testing": 0.0}
    steps = 0
    for r in store.runs():
        for k, v in r["info"].get("seconds", {}).items():
            tot[k] = tot.get(k, 0.0) + v
        steps += r["info"].get("steps") or 0
    gt = sum(g["result"].get("seconds", 0.0) for g in store.ground_truth())
    return {**tot, "ground_truth": gt, "steps": steps}


def _set_of_bracket(g) -> str:
    """The set of a bracket job: around the model (radius, support), saved, or
    estimated (its L1 radii range)."""
    est = dict(g["spec"]["estimation"])
    r = g["result"]
    if "radius" in est:
        return f"around the model, radius {est['radius']:g}, support `{est['support']}`"
    ar = r.get("alpha_range")
    return "saved set" if ar is None else f"estimated, L1 radii [{ar[0]:.3f}, {ar[1]:.3f}]"


def _brackets_md(store) -> tuple[list[str], list[float]]:
    """The bracket table and the discounts of its models (read from the jobs)."""
    rows = store.ground_truth("bracket")
    if not rows:
        return [], []
    out = ["| domain | seed | set | gamma | status | lower | upper | gap | policy tested |",
           "|---|---|---|---|---|---|---|---|---|"]
    gammas, notes = [], []
    for g in sorted(rows, key=lambda g: (g["domain"], g["spec"]["seed"], g["key"])):
        r = g["result"]
        gamma = r.get("gamma")
        if gamma is None and g["domain"] != "model":  # a store written before gamma was kept
            gamma = 0.99
        if gamma is not None:
            gammas.append(gamma)
        gap = None if r["status"] == "infeasible" else r["gap"]
        nd = decimals([r["lower"], r["upper"]])
        out.append(f"| {g['domain']} | {g['spec']['seed']} | {_set_of_bracket(g)} | "
                   f"{'—' if gamma is None else f'{gamma:g}'} | "
                   f"{r['status']} | {_f(r['lower'], max(nd, 3))} | "
                   f"{_f(r['upper'], max(nd, 3))} | {_f(gap, max(nd, 3))} | {r['policy']} |")
        if r["status"] == "infeasible":
            least = r.get("min_robust_cost") or []
            budget = r.get("budget")
            notes.append(f"- {g['domain']}, seed {g['spec']['seed']}: "
                         + (r.get("message") or "no policy is robust-feasible")
                         + (f" (least worst-case costs {least}, budgets {budget})"
                            if budget is not None else
                            f" (least worst-case costs {least})"))
    if notes:
        out += ["", "Why a bracket is infeasible:", "", *notes]
    return out, gammas


def _training_md(store) -> list[str]:
    rows = store.ground_truth("training")
    if not rows:
        return []
    out = ["| domain | T-step optimum V (P_data) | its cost | d' | discounted optimum V | "
           "LP multiplier |", "|---|---|---|---|---|---|"]
    for g in sorted(rows, key=lambda g: (g["domain"], g["key"])):
        r = g["result"]
        out.append(f"| {g['domain']} | {r['T_value']:.3f} | {r['T_cost']:.3f} | "
                   f"{r['T_budget']:.3f} | {r['value']:.3f} | {r['multiplier']:.4f} |")
    return out


def write_report(store, out_dir, *, tests=TESTS, algorithms=ALGORITHMS,
                 figures: bool = True, progress=None) -> Result:
    """Write ``table1.csv``, ``table1.md``, ``report.md`` and the figures.

    ``progress``: a bar over the outputs (the tables, each figure, the report); None:
    when standard error is a terminal.

    Every file of :func:`report_files` in ``out_dir`` that this report does not write is
    removed (module notes); other files are left alone.

    Returns
    -------
    Result
        ``paths`` (written files), ``removed`` (stale report files removed) and ``rows``
        (the table).

    Raises
    ------
    OutputPathError
        A file cannot be written (a full disk, a read-only folder); the store is not
        changed and every file of the folder is whole (old or new).
    """
    try:
        return _write_report(store, out_dir, tests, algorithms, figures, progress)
    except OSError as exc:
        from .._checks import OutputPathError

        what = exc.strerror or str(exc)
        where = exc.filename if exc.filename is not None else str(out_dir)
        raise OutputPathError(
            f"the report cannot be written: {what}: {str(where)!r}; the results store is "
            f"not changed and the files in {str(out_dir)!r} are whole (old or new): fix "
            f"the cause (free space, a writable folder) and write the report again "
            f"(rcmdp report --db STORE --out DIR)") from None


def _write_text(path: Path, text: str) -> Path:
    from .._io import write_atomic

    return write_atomic(path, lambda fh: fh.write(text.encode("utf-8")))


def _write_report(store, out_dir, tests, algorithms, figures, progress) -> Result:
    from .figures import all_figures, figure_names  # matplotlib, where it is used

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n_figs = len(figure_names(tests)) if figures else 0
    with tqdm(total=3 + n_figs, desc="report", unit="output",
              disable=not progress_default(progress)) as bar:
        rows = table1(store, tests=tests, algorithms=algorithms)
        paths = [_write_text(out / "table1.csv", table1_csv(rows))]
        bar.update(1)
        _, configs = run_groups(store, tests, algorithms)
        configs = {config_of(s): s for s in configs.values()}
        paper = any(r["paper_mean"] is not None for r in rows)
        md = [f"# {_title(configs, paper)}", ""]
        for cfg in sorted(configs):
            for mode in ("greedy", "stochastic", "sampled"):
                if any(r["mode"] == mode and r["config"] == cfg for r in rows):
                    md += [f"## Configuration `{cfg}`, {mode}: "
                           f"{_mode_text(configs[cfg], mode)}", "",
                           format_table1_md(rows, mode, cfg)]
        md += [_CELLS_TEXT + (" The paper's numbers, in brackets, are the paper's Table 1 "
                              "(its ± read as a standard error over its 20 runs)."
                              if paper else ""), ""]
        paths.append(_write_text(out / "table1.md", "\n".join(md)))
        bar.update(1)
        figs = all_figures(store, out, tests=tests, bar=bar) if figures else []
        paths += figs
        paths.append(_write_text(out / "report.md", _report_md(store, rows, configs, figs)))
        _write_text(out / REPORT_MARKER, json.dumps({"store": store_id(store.path)}) + "\n")
        bar.update(1)
    written = {p.name for p in paths} | {REPORT_MARKER}
    removed = []
    for name in report_files():
        stale = out / name
        if name not in written and (stale.is_file() or stale.is_symlink()):
            stale.unlink()
            removed.append(stale)
    return Result(paths=paths, removed=removed, rows=rows)


#: What the cells and the columns of a table are (table1.md and report.md).
_CELLS_TEXT = (
    "Cells: mean ± standard error over seeds (std with ddof 0 / sqrt(n)), the spread over "
    "seeds that a reading needs: learner cells come from "
    "sampled training and can differ between machines by far more than their last digit "
    "(docs/reproduction.md, \"Same seed, same bits: where\"). Every column is the T-step "
    "undiscounted penalised return R_pen on the test settings (the learners' metric): "
    "bound, the exact maximum for any agent; CMDP opt., the T-step CMDP optimum of each "
    "setting; RCMDP lower, the T-step R_pen of the lower policy of the discounted RCMDP "
    "bracket (see report.md), marked \"(safest)\" where no policy is robust-feasible on "
    "the set and the policy tested is the one of least worst-case cost.")


def _title(configs, paper: bool) -> str:
    own = [c for c in configs.values() if c.get("model")]
    if own and len(own) == len(configs):
        return "Your model: penalised return of the learners, judged exactly"
    if paper:
        return "Table 1: penalised return on the tests, ours beside the paper's"
    return "Table 1: penalised return on the tests"


def _report_md(store, rows, configs, figs) -> str:
    sec = _seconds(store)
    n_runs = len(store.runs())
    own = any(spec.get("model") for spec in configs.values())
    only_own = own and all(spec.get("model") for spec in configs.values())
    paper = any(r["paper_mean"] is not None for r in rows)
    weights = sorted({penalty_of_spec(spec) for spec in configs.values()})
    w_text = " or ".join(f"{w:g}" for w in weights) or "500"
    brackets, gammas = _brackets_md(store)
    lines = [
        f"# {'Your model: the protocol of' if only_own else 'Reproduction of'} the paper's "
        f"Table 1{'' if only_own else ' and figures'}",
        "",
        *(["Configurations with **your model** (test `model`: the model itself and its "
           "perturbations) are tested like the paper's domains; their cells have no "
           "paper numbers to compare with.", ""] if own and not only_own else []),
        *(["Your model (test `model`: the model itself and its perturbations) through the "
           "paper's protocol; there are no paper numbers to compare with. Numbers are "
           "printed with decimals chosen by their scale.", ""] if only_own else []),
        "Bossens, *Robust Lagrangian and Adversarial Policy Gradient for Robust "
        "Constrained MDPs* (CAI 2024). Every number below is rebuilt from the results "
        "store alone (`rcmdp report --db PATH --out DIR`).",
        "",
        f"Runs in the store: {n_runs}; environment steps of training: {sec['steps']:,}; "
        f"compute time summed over jobs: estimation {sec['estimation']:.1f} s, training "
        f"{sec['training']:.1f} s, testing {sec['testing']:.1f} s, ground truth "
        f"{sec['ground_truth']:.1f} s.",
        "",
        "## Protocol",
        "",
        "Each run has three phases, all derived from its specification (seeds from "
        "`numpy.random.SeedSequence` of the SHA-256 of its canonical JSON): the set "
        "(the paper's domains, and your model with `--estimate`: estimation by the "
        "uniform random policy on the true data model, Hoeffding L1 ball with delta 0.1; "
        "your model by default: no estimation, the set is built around the model itself "
        "and the learners train on it), training, and testing on every setting of its "
        "domain's tests. Testing is exact: the undiscounted T-step value and cost of the "
        "policy on each setting by backward induction, in place of the paper's 50 sampled "
        "episodes. What each configuration trained on, what it was judged on and its set "
        "(with its support) are listed under Configurations.",
        "",
        "**Aggregation.** Per run and test, value and cost are averaged over the test's "
        f"settings and R_pen = V - w max(0, C - d') with the rescaled budget d' and the "
        f"penalty weight w = {w_text}"
        + (" (the paper's)" if weights == [500.0] else "") + ". A cell "
        "is the mean over runs; the spread is the standard error (ddof 0, as the "
        "published analysis computes it, and the paper's figures say \"mean and standard "
        "error over runs\"); the 95% interval is a t interval. The spread over seeds is "
        "what a cell means: the same seed gives the same bits on one machine with the "
        "same library versions and CPU features, but a learner's cell can differ on "
        "another machine (rounding in numba, BLAS or the CPU, amplified by training), so "
        "read a cell with its ± and its number of seeds.",
        "",
        "## Configurations",
        "",
        *_configs_md(store, configs, rows),
        "## Table 1" if not only_own else "## Results",
        "",
    ]
    for cfg in sorted(configs):
        for mode in ("greedy", "stochastic", "sampled"):
            if any(r["mode"] == mode and r["config"] == cfg for r in rows):
                lines += [f"### `{cfg}`: {_mode_text(configs[cfg], mode)}", "",
                          format_table1_md(rows, mode, cfg)]
    lines += [
        "Ground-truth columns (per test), all on the learners' scale, the T-step "
        "undiscounted penalised return on the test settings: **bound**, the largest "
        "R_pen that any agent can "
        "reach on these settings as the table aggregates them, even one that knows each "
        "setting's dynamics (exact, by LP duality and backward induction); **CMDP opt.**, "
        "the mean over settings of each setting's own optimum (its T-step CMDP optimum "
        "under its own dynamics and budget d', exact, by the same duality), "
        "aggregated like the table; **RCMDP lower**, the test R_pen of the certified "
        "lower policy of the (discounted) RCMDP bracket on the set, mean over estimation "
        "seeds; marked \"(safest)\" where the robust problem is infeasible and the policy "
        "tested is the one of least worst-case cost (the reason is under the brackets).",
        "",
    ]
    if paper:
        lines += [
            "## Where ours differs from the paper, cell by cell",
            "",
            f"Computed from the numbers: \"inconclusive\" when the seeds cannot decide "
            f"(fewer than {_MIN_SEEDS} seeds, since a t interval with one degree of freedom "
            f"spans almost any number, or a 95% interval wider than the magnitude "
            f"compared, the larger of |ours| and |paper's|); otherwise \"agrees\" when the "
            f"paper's mean lies in our 95% interval or z = (ours - paper) / sqrt(se_ours^2 "
            f"+ se_paper^2) has |z| <= 1.96, and \"differs\" beyond; then the facts that "
            f"explain the difference.",
            "",
        ]
    sampled = {(r["config"], r["test"], r["algorithm"]): r for r in rows
               if r["mode"] == "sampled"}
    for cfg in sorted(configs):
        if not any(r["config"] == cfg and r["paper_mean"] is not None for r in rows):
            continue  # your model or another penalty weight: no paper numbers
        n_smp = configs[cfg].get("sampled_episodes", 0)
        lines += [f"### `{cfg}` (greedy, exact)", "", "| test | algorithm | ours | paper | "
                  "verdict | why |", "|---|---|---|---|---|---|"]
        for r in rows:
            if r["config"] != cfg or r["mode"] != "greedy" or r["paper_mean"] is None:
                continue
            smp = sampled.get((cfg, r["test"], r["algorithm"]))
            if smp is not None:
                smp = dict(smp, episodes_per_setting=n_smp)
            short, why = verdict(r, smp)
            lines.append(f"| {TEST_LABELS[r['test']]} | {ALGORITHM_LABELS[r['algorithm']]}"
                         f" | {_cell(r)} (n = {r['n_seeds']}) | {r['paper_mean']:.1f} ± "
                         f"{r['paper_spread']:.1f} | {short} | {why} |")
        lines.append("")
    tr = _training_md(store)
    if tr:
        lines += ["## Ground truth of the training models", "", *tr, ""]
    if brackets:
        g = sorted(set(gammas))
        disc = (f"gamma {g[0]:g}" if len(g) == 1 else
                "gamma per row" if g else "gamma not recorded")
        lines += [f"## RCMDP brackets of the sets (discounted values, {disc})", "",
                  "Another scale than the tables: the bracket bounds the discounted RCMDP "
                  "optimum from the start state on the training model's set; the tables' "
                  "RCMDP lower is the T-step test R_pen of its lower policy.", "",
                  *brackets, "",
                  "`infeasible`: no policy keeps its worst-case cost within the budget on "
                  "that set; the tested policy is then the one of least worst-case cost "
                  "(its worst-case cost is `min_robust_cost` in the store).",
                  ""]
    if figs:
        lines += ["## Figures", ""]
        for p in figs:
            name = Path(p).name
            lines += [f"![{name}]({name})", ""]
        lines += ["Test figures: mean and standard error over runs of the per-run mean over "
                  "the settings of each parameter value; black dashed: T-step CMDP optimum "
                  "of each setting; grey dotted: the RCMDP bracket's lower policy. Training "
                  "figures: block means of the episode return, cost and lambda on each "
                  "algorithm's own training dynamics, with the T-step optimum of the true "
                  "model, the rescaled budget and the LP multiplier drawn in.", ""]
    return "\n".join(lines)
