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
    run_groups,
    table1,
    table1_csv,
)

__all__ = ["REPORT_MARKER", "foreign_report", "format_table1_md", "report_files", "verdict",
           "write_report"]

#: Settings per test in the paper (1B / 2B: 5 values of N x 50 draws).
PAPER_SETTINGS = {"inventory": 9, "1A": 5, "1B": 250, "2A": 5, "2B": 250}

_MODE_TEXT = {
    "greedy": "greedy policy (argmax), evaluated exactly: the paper's test protocol with "
              "exact evaluation in place of 50 sampled episodes per setting",
    "stochastic": "stochastic policy as trained, evaluated exactly (the published "
                  "implementation also reports it)",
    "sampled": "greedy policy, sampled episodes per setting (the paper's procedure)",
}


def _f(x, nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{nd}f}"


def verdict(row: dict, sampled: dict | None = None) -> tuple[str, str]:
    """(short verdict, reasons) for one cell, computed from its numbers.

    The verdict is "agrees" when the paper's mean lies inside our 95% interval;
    otherwise, with z = (ours - paper) / sqrt(se_ours^2 + se_paper^2) (both spreads
    read as standard errors), "consistent" when |z| <= 1.96 and "ours higher" or "ours
    lower" beyond.  Reasons are added when they apply: fewer seeds or
    episodes than the paper; the paper's mean above the exact bound; the share of our
    runs that meet the budget and the penalty their overshoot costs; how far our
    spread is from the paper's; and the difference sampled testing makes (when the
    sampled mode is in the store).
    """
    n, pm, z = row["n_seeds"], row["paper_mean"], row["z_vs_paper"]
    side = "higher" if row["mean"] > pm else "lower"
    if row["paper_in_ci95"]:
        short = "agrees"
    elif z is not None and abs(z) <= 1.96:
        short = f"consistent (z = {z:+.1f})"
    elif z is None and row["mean"] == pm:
        short = "agrees"
    else:
        short = f"ours {side}" + ("" if z is None else f" (z = {z:+.1f})")
    reasons = []
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


def _cell(row) -> str:
    return f"{_f(row['mean'])} ± {_f(row['spread'])}"


def format_table1_md(rows, mode: str = "greedy", config: str | None = None) -> str:
    """Table 1 as Markdown: tests x algorithms, each cell "ours (paper)", and the
    ground-truth columns."""
    sel = [r for r in rows if r["mode"] == mode and (config is None or r["config"] == config)]
    by = {(r["test"], r["algorithm"]): r for r in sel}
    algos = [a for a in ALGORITHMS if any(r["algorithm"] == a for r in sel)]
    tests = [t for t in ALL_TESTS if any(r["test"] == t for r in sel)]
    head = ["test", *[ALGORITHM_LABELS[a] for a in algos], "bound", "CMDP opt.",
            "RCMDP lower"]
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
            cells.append(_cell(r) if pm is None else
                         f"{_cell(r)}<br>(paper {pm:.1f} ± {ps:.1f})")
        cells += [_f(gt["bound"]) if gt else "—", _f(gt["cmdp_optimum"]) if gt else "—",
                  _f(gt["robust_lower"]) if gt else "—"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _configs_md(store, configs, rows) -> list[str]:
    out = []
    for cfg in sorted(configs):
        spec = configs[cfg]
        n_runs = sum(1 for r in store.runs() if _cfg(r) == cfg)
        out.append(f"### Configuration `{cfg}` ({n_runs} runs)")
        out.append("")
        out.append(f"- training episodes: {spec['episodes']}; exact evaluations every "
                   f"{spec['eval_every']} episodes; trainer `{spec['trainer']}`")
        if not spec.get("model"):
            out.append(f"- tests 1B / 2B: {spec['n_draws']} draws per N (paper: 50), drawn "
                       f"with test seed {spec['test_seed']}")
        out.append(f"- sampled test episodes per setting: {spec['sampled_episodes']} "
                   f"(0 = exact testing only; the paper: 50)")
        kind = spec.get("set_kind", "l1")
        out.append(f"- uncertainty set `{kind}`{' (default)' if kind == 'l1' else ''}: "
                   f"{set_note(kind)}" + (f", from the saved set with content hash "
                                           f"`{spec['set_file'][:12]}`"
                                           if spec.get("set_file") else ""))
        if spec.get("model"):
            out += _model_md(spec)
        for name in OPTIONS:
            if spec.get("model") and name in PAPER_ONLY_OPTIONS:
                continue
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
    if not spec.get("set_file"):
        out.append(f"- estimation: {spec['estimation_episodes']} episodes of the uniform "
                   f"random policy, delta {spec['delta']}")
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


def _brackets_md(store) -> list[str]:
    rows = store.ground_truth("bracket")
    if not rows:
        return []
    out = ["| domain | seed | alpha range | status | lower | upper | gap | policy tested |",
           "|---|---|---|---|---|---|---|---|"]
    for g in sorted(rows, key=lambda g: (g["domain"], g["spec"]["seed"], g["key"])):
        r = g["result"]
        ar = r.get("alpha_range")
        alpha = "saved set" if ar is None else f"[{ar[0]:.3f}, {ar[1]:.3f}]"
        gap = None if r["status"] == "infeasible" else r["gap"]
        out.append(f"| {g['domain']} | {g['spec']['seed']} | {alpha} | "
                   f"{r['status']} | {_f(r['lower'], 3)} | {_f(r['upper'], 3)} | "
                   f"{_f(gap, 3)} | {r['policy']} |")
    return out


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
    with tqdm(total=3 + n_figs, desc="rcmdp report", unit="output",
              disable=not progress_default(progress)) as bar:
        rows = table1(store, tests=tests, algorithms=algorithms)
        paths = [_write_text(out / "table1.csv", table1_csv(rows))]
        bar.update(1)
        _, configs = run_groups(store, tests, algorithms)
        configs = {config_of(s): s for s in configs.values()}
        md = ["# Table 1: penalised return on the tests, ours beside the paper's", ""]
        for cfg in sorted(configs):
            for mode in ("greedy", "stochastic", "sampled"):
                if any(r["mode"] == mode and r["config"] == cfg for r in rows):
                    md += [f"## Configuration `{cfg}`, {mode}: {_MODE_TEXT[mode]}", "",
                           format_table1_md(rows, mode, cfg)]
        md += ["Cells: mean ± standard error over seeds (std with ddof 0 / sqrt(n), our "
               "reading of the paper's ±). Bound: the exact maximum of this metric for any "
               "agent; CMDP opt.: the T-step CMDP optimum of each setting; RCMDP lower: the "
               "bracket's lower policy (see report.md).", ""]
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


def _report_md(store, rows, configs, figs) -> str:
    sec = _seconds(store)
    n_runs = len(store.runs())
    own = any(spec.get("model") for spec in configs.values())
    lines = [
        "# Reproduction of the paper's Table 1 and figures",
        "",
        *(["Configurations with **your model** (test `model`: the model itself and its "
           "perturbations) are tested like the paper's domains; their cells have no "
           "paper numbers to compare with.", ""] if own else []),
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
        "`numpy.random.SeedSequence` of the SHA-256 of its canonical JSON): estimation "
        "(uniform random policy on the true data model, Hoeffding L1 ball with delta "
        "0.1), training, and testing on every setting of its domain's tests. Testing is "
        "exact: the undiscounted T-step value and cost of the policy on each setting by "
        "backward induction, in place of the paper's 50 sampled episodes.",
        "",
        "**Aggregation.** Per run and test, value and cost are averaged over the test's "
        "settings and R_pen = V - 500 max(0, C - d') with the rescaled budget d'. A cell "
        "is the mean over runs; the spread is the standard error (ddof 0, as the "
        "published analysis computes it, and the paper's figures say \"mean and standard "
        "error over runs\"); the 95% interval is a t interval.",
        "",
        "## Configurations",
        "",
        *_configs_md(store, configs, rows),
        "## Table 1",
        "",
    ]
    for cfg in sorted(configs):
        for mode in ("greedy", "stochastic", "sampled"):
            if any(r["mode"] == mode and r["config"] == cfg for r in rows):
                lines += [f"### `{cfg}`: {_MODE_TEXT[mode]}", "",
                          format_table1_md(rows, mode, cfg)]
    lines += [
        "Ground-truth columns (per test): **bound**, the largest R_pen that any agent can "
        "reach on these settings as the table aggregates them, even one that knows each "
        "setting's dynamics (exact, by LP duality and backward induction); **CMDP opt.**, "
        "the mean over settings of each setting's own optimum (its T-step CMDP optimum "
        "under its own dynamics and budget d', exact, by the same duality), "
        "aggregated like the table; **RCMDP lower**, the test R_pen of the certified "
        "lower policy of the RCMDP bracket on the estimated ball (the policy of least "
        "worst-case cost when the robust problem is infeasible), mean over estimation "
        "seeds.",
        "",
        "## Where ours differs from the paper, cell by cell",
        "",
        "Computed from the numbers: \"agrees\" when the paper's mean lies in our 95% "
        "interval; otherwise z = (ours - paper) / sqrt(se_ours^2 + se_paper^2) decides "
        "between \"consistent\" (|z| <= 1.96) and \"ours higher\" / \"ours lower\"; "
        "then the facts that explain the difference.",
        "",
    ]
    sampled = {(r["config"], r["test"], r["algorithm"]): r for r in rows
               if r["mode"] == "sampled"}
    for cfg in sorted(configs):
        if configs[cfg].get("model"):  # your model: no paper numbers to compare with
            continue
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
                         f" | {_cell(r)} | {r['paper_mean']:.1f} ± {r['paper_spread']:.1f} "
                         f"| {short} | {why} |")
        lines.append("")
    tr = _training_md(store)
    if tr:
        lines += ["## Ground truth of the training models", "", *tr, ""]
    br = _brackets_md(store)
    if br:
        lines += ["## RCMDP brackets of the estimated balls (discounted, gamma 0.99)", "",
                  *br, "",
                  "`infeasible`: no policy keeps its worst-case cost within the budget on "
                  "that ball; the tested policy is then the one of least worst-case cost "
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
