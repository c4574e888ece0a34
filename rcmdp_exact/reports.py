r"""The ground-truth table of the paper's domains (``rcmdp ground-truth``).

For each domain of :data:`rcmdp_exact.domains.PAPER_DOMAINS`:

1. **Estimation** (the paper's phase 1): :func:`rcmdp_exact.uncertainty.estimate` runs
   the uniform random policy on the training model for the PROTOCOL number of episodes
   (``episodes="paper"``: 100 / 100 / 10,000; ``"reference"``: 10 / 20 / 10,000) with a
   seed, and returns the estimated nominal model and its Hoeffding L1 ball
   (delta = 0.1).
2. **Discounted optima** (gamma = 0.99): the CMDP optimum of the estimated nominal model
   and of the true training model (:func:`~rcmdp_exact.ground_truth.solve_cmdp`), the
   certified bracket of the RCMDP optimum on the estimated ball and the targets of the
   three RCPG variants (:func:`~rcmdp_exact.ground_truth.rcmdp_bracket`), and the
   T-step CMDP optimum of the training model under the rescaled budget
   (:func:`~rcmdp_exact.ground_truth.solve_cmdp_finite_horizon`, a time-dependent
   policy).
3. **Test metrics**: every policy of step 2 on every setting of the domain's test suites
   (:func:`rcmdp_exact.domains.perturbations`), evaluated exactly by
   :func:`rcmdp_exact.evaluation.evaluate_finite_horizon` (undiscounted T steps from the
   start state; time-dependent policies by
   :func:`~rcmdp_exact.ground_truth.evaluate_time_dependent`): value, cost, rescaled
   budget :math:`d\,T/\sum_{i<T}\gamma^i`, overshoot :math:`C - d'` and penalised return
   :math:`V - 500\max(0, C - d')`.  Each policy is tested as computed (``mode =
   "stochastic"``) and by its greedy version :math:`\arg\max_a \pi(a|s)` (``mode =
   "greedy"``, ties to the lowest action index; per time step for time-dependent
   policies), the paper's test protocol.  Deterministic policies give the same numbers
   in both modes.

The settings are aggregated per group (``N=5``, ... for 1B/2B: mean and standard
deviation over the 50 draws; one setting per group in 1A/2A/inventory) and over the
whole suite, and kept in full.
"""

from __future__ import annotations

import csv
import json
import math
import time
from pathlib import Path

import numpy as np

from ._result import Result
from .evaluation import evaluate_finite_horizon
from .ground_truth import (
    VARIANTS,
    _greedy_one_hot,
    evaluate_time_dependent,
    rcmdp_bracket,
    solve_cmdp,
    solve_cmdp_finite_horizon,
)
from .model import ModelError

__all__ = [
    "METRICS",
    "POLICY_LABELS",
    "format_ground_truth",
    "greedy_policy",
    "ground_truth_table",
    "save_ground_truth",
]

#: The exact test metrics of every (setting, policy, mode) row.
METRICS = ("value", "cost", "budget", "overshoot", "penalised_return")

#: Row names of the table and what they are.
POLICY_LABELS = {
    "nominal_cmdp": "CMDP optimum of the estimated nominal model (LP)",
    "true_cmdp": "CMDP optimum of the true training model (LP)",
    "true_cmdp_T": "T-step CMDP optimum of the true training model (time-dependent LP)",
    "rcmdp_lower": "certified robust-feasible policy of the RCMDP bracket (lower bound)",
    "rcmdp_upper": "robust-Lagrangian optimum at the bracket's multiplier (upper bound)",
    "rcmdp_safest": "policy of least worst-case cost (when the RCMDP is infeasible)",
    "rcpg_value": "target of RCPG (robust value): common worst case by the value",
    "rcpg_constraint": "target of RCPG (robust constraint): common worst case by the cost",
    "rcpg_lagrangian": "target of RCPG (robust Lagrangian): common worst case by L",
}

TITLES = {"inventory": "Inventory Management", "nav1": "Safe Navigation 1",
          "nav2": "Safe Navigation 2"}


def greedy_policy(policy) -> np.ndarray:
    """The greedy (argmax) version of a stochastic policy (..., S, A), ties to the lowest."""
    return _greedy_one_hot(np.asarray(policy, dtype=np.float64))


def _num(x):
    """A JSON-friendly number or list (inf/nan as strings)."""
    if isinstance(x, np.ndarray | list | tuple):
        return [_num(v) for v in np.asarray(x, dtype=np.float64).ravel().tolist()]
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _domain(name: str, *, episodes: str, seed: int, delta: float, n_draws: int,
            offset_on: str, progress: bool, bracket_kw: dict):
    from ._progress import tqdm
    from .domains import ESTIMATION_EPISODES, TEST_SUITES, paper_domain, perturbations
    from .uncertainty import estimate

    true = paper_domain(name)
    n_ep = ESTIMATION_EPISODES[name][episodes]
    est = estimate(true, n_ep, seed=seed, delta=delta, progress=False)
    nominal = est.nominal
    T = true.horizon
    nom = solve_cmdp(nominal)
    tru = solve_cmdp(true)
    tru_T = solve_cmdp_finite_horizon(true)
    br = rcmdp_bracket(nominal, est.ball, progress=False, **bracket_kw)
    policies = {"nominal_cmdp": nom.policy, "true_cmdp": tru.policy,
                "true_cmdp_T": tru_T.policy}
    if br.status == "infeasible":
        policies["rcmdp_safest"] = br.policies["lower"]
    else:
        policies["rcmdp_lower"] = br.policies["lower"]
        policies["rcmdp_upper"] = br.policies["upper"]
    for v in VARIANTS:
        if v in br.variants:
            policies[f"rcpg_{v}"] = br.variants[v].policy
    optima = {
        "nominal_cmdp": {"value": nom.value, "cost": nom.costs, "multiplier": nom.multipliers,
                         "status": nom.status, "message": nom.message},
        "true_cmdp": {"value": tru.value, "cost": tru.costs, "multiplier": tru.multipliers,
                      "status": tru.status, "message": tru.message},
        "true_cmdp_T": {"value": tru_T.value, "cost": tru_T.costs,
                        "multiplier": tru_T.multipliers, "budget": tru_T.budget,
                        "status": tru_T.status, "message": tru_T.message},
    }
    bracket = {
        "lower": br.lower, "upper": br.upper, "gap": br.gap, "multiplier": br.multiplier,
        "lower_cost": br.lower_cost, "upper_policy_value": br.upper_policy_value,
        "upper_policy_cost": br.upper_policy_cost, "min_robust_cost": br.min_robust_cost,
        "status": br.status, "message": br.message, "n_lambda": int(br.history["g"].size),
    }
    variants = {
        v: {"value": r.value, "cost": r.cost, "multiplier": r.multiplier,
            "feasible": r.feasible, "robust_value": r.robust_value,
            "robust_cost": r.robust_cost, "robust_feasible": r.robust_feasible,
            "converged": r.converged, "status": r.status}
        for v, r in br.variants.items()
    }
    rows = []
    suites = TEST_SUITES[name]
    settings = []
    for suite in suites:
        for st in perturbations(suite, seed=seed, n_draws=n_draws, offset_on=offset_on):
            settings.append((suite, st))
    jobs = [(p, m) for p in policies for m in ("stochastic", "greedy")]
    bar = tqdm(total=len(settings), desc=f"test {name}", disable=not progress, leave=False)
    try:
        for suite, st in settings:
            for pname, mode in jobs:
                pol = policies[pname]
                if mode == "greedy":
                    pol = greedy_policy(pol)
                if pol.ndim == 3:  # time dependent (T, S, A)
                    ev = evaluate_time_dependent(st.model, pol)
                else:
                    ev = evaluate_finite_horizon(st.model, pol)
                rows.append({
                    "domain": name, "suite": suite, "group": st.group, "setting": st.label,
                    "policy": pname, "mode": mode, "value": float(ev.value),
                    "cost": np.asarray(ev.cost, dtype=float), "budget": np.asarray(ev.budget),
                    "overshoot": np.asarray(ev.overshoot, dtype=float),
                    "penalised_return": float(ev.penalised_return),
                })
            bar.update(1)
    finally:
        bar.close()
    return Result(
        name=name, title=TITLES.get(name, name), horizon=T,
        estimation={"episodes": n_ep, "episodes_source": episodes, "seed": seed,
                    "delta": delta, "alpha_range": list(est.alpha_range),
                    "form": est.form},
        optima=optima, bracket=bracket, variants=variants, rows=rows,
        summary=_summarise(rows), policies=policies,
    )


def _scalar(x) -> float:
    """A metric as one number: the value itself, or the sum over constraints."""
    return float(np.sum(x))


def _summarise(rows: list[dict]) -> list[dict]:
    """Mean and standard deviation (ddof 0) per (suite, group) and per suite ("all").

    Cost, budget and overshoot are summed over the constraints when K > 1 (the paper's
    domains have K = 1).
    """
    out = []
    keys: dict = {}
    for r in rows:
        for grp in (r["group"], "all"):
            keys.setdefault((r["suite"], grp, r["policy"], r["mode"]), []).append(r)
    for (suite, grp, pol, mode), rs in keys.items():
        entry = {"domain": rs[0]["domain"], "suite": suite, "group": grp, "policy": pol,
                 "mode": mode, "n": len(rs)}
        for m in METRICS:
            vals = np.array([_scalar(r[m]) for r in rs])
            entry[f"{m}_mean"] = float(vals.mean())
            entry[f"{m}_std"] = float(vals.std())
        out.append(entry)
    return out


def ground_truth_table(domains=None, *, episodes: str = "paper", seed: int = 0,
                       delta: float = 0.1, n_draws: int | None = None,
                       offset_on: str = "failure", variants=VARIANTS,
                       progress: bool = True) -> Result:
    """Build the ground-truth table of the paper's domains.

    Parameters
    ----------
    domains : sequence of str, optional
        Names in :data:`~rcmdp_exact.domains.PAPER_DOMAINS` (default: all three).
    episodes : {"paper", "reference"}
        Estimation episodes (:data:`~rcmdp_exact.domains.ESTIMATION_EPISODES`).
    seed : int
        Seed of the estimation and of the random draws of tests 1B and 2B.
    delta : float
        Confidence of the Hoeffding radius.
    n_draws : int, optional
        Draws per N in 1B/2B (default 50, the paper's).
    offset_on : {"failure", "success"}
        Test 1B: the drawn offset replaces a failed move (default, the reference
        implementation) or a successful one (the paper's text).
    variants : sequence of str
        RCPG variants whose targets are computed (default all three).
    progress : bool
        tqdm bars.

    Returns
    -------
    Result
        ``domains`` {name: Result(estimation, optima, bracket, variants, rows,
        summary, policies)}, ``options``, ``runtime`` (seconds).
    """
    from .domains import N_DRAWS, PAPER_DOMAINS

    names = list(PAPER_DOMAINS) if domains is None else list(domains)
    bad = [n for n in names if n not in PAPER_DOMAINS]
    if bad:
        raise ModelError(f"unknown domains {bad}; use names from {list(PAPER_DOMAINS)}")
    if episodes not in ("paper", "reference"):
        raise ModelError(f"episodes must be 'paper' or 'reference', got {episodes!r}")
    if offset_on not in ("failure", "success"):
        raise ModelError(f"offset_on must be 'failure' or 'success', got {offset_on!r}")
    nd = N_DRAWS if n_draws is None else n_draws
    if isinstance(nd, bool) or not (isinstance(nd, int | np.integer) and nd >= 1):
        raise ModelError(f"n_draws must be a positive integer (draws per N in tests 1B and "
                         f"2B), got {n_draws!r}")
    nd = int(nd)
    t0 = time.perf_counter()
    out = {}
    for name in names:
        out[name] = _domain(name, episodes=episodes, seed=seed, delta=delta, n_draws=nd,
                            offset_on=offset_on, progress=progress,
                            bracket_kw={"variants": tuple(variants)})
    return Result(
        domains=out,
        options={"episodes": episodes, "seed": seed, "delta": delta, "n_draws": nd,
                 "offset_on": offset_on, "variants": list(variants), "gamma": 0.99,
                 "modes": ["stochastic", "greedy"], "penalty_weight": 500.0},
        runtime=time.perf_counter() - t0,
    )


# ----------------------------------------------------------------------- output
def _pm(mean: float, std: float, n: int) -> str:
    return f"{mean:10.2f}" if n == 1 else f"{mean:10.2f} ±{std:7.2f}"


def format_ground_truth(table: Result) -> str:
    """The table as text: optima per domain, then per suite the metrics of every policy."""
    lines = []
    for name, dom in table.domains.items():
        e = dom.estimation
        lines.append(f"== {name}: {dom.title} (nominal model from {e['episodes']} episodes "
                     f"of the uniform policy, seed {e['seed']}, delta {e['delta']}, alpha "
                     f"in [{e['alpha_range'][0]:.3f}, {e['alpha_range'][1]:.3f}]) ==")
        lines.append("discounted optima (gamma 0.99, from the start state):")
        for key in ("nominal_cmdp", "true_cmdp"):
            o = dom.optima[key]
            lines.append(f"  {key:<16} V = {o['value']:12.6f}  C = "
                         f"{np.round(o['cost'], 6).tolist()}  multiplier = "
                         f"{np.round(o['multiplier'], 6).tolist()}  [{o['status']}]")
        b = dom.bracket
        lines.append(f"  {'rcmdp bracket':<16} [{b['lower']:.6f}, {b['upper']:.6f}] gap "
                     f"{b['gap']:.3g}, lam = {np.round(b['multiplier'], 6).tolist()} "
                     f"[{b['status']}]")
        if b["status"] == "infeasible":
            lines.append(f"  {'':<16} {b['message']}")
        for v, r in dom.variants.items():
            lines.append(f"  {'rcpg_' + v:<16} V+ = {r['value']:12.6f}  C+ = "
                         f"{np.round(r['cost'], 6).tolist()} at lam = "
                         f"{np.round(r['multiplier'], 6).tolist()}; robust V = "
                         f"{r['robust_value']:.6f}, worst C = "
                         f"{np.round(r['robust_cost'], 6).tolist()}"
                         + ("" if r["status"] == "ok" else f" [{r['status']}]"))
        o = dom.optima["true_cmdp_T"]
        lines.append(f"  {'true_cmdp_T':<16} T-step V = {o['value']:.6f}  C = "
                     f"{np.round(o['cost'], 6).tolist()} (budget "
                     f"{np.round(o['budget'], 4).tolist()}) [{o['status']}]")
        suites = sorted({s["suite"] for s in dom.summary}, key=str)
        for suite in suites:
            allrows = [s for s in dom.summary if s["suite"] == suite and s["group"] == "all"]
            n = allrows[0]["n"]
            lines.append("")
            lines.append(f"test {suite}: {n} settings, T = {dom.horizon}, undiscounted; "
                         f"mean ± std over the settings")
            head = (f"  {'policy':<16} {'mode':<10} {'value':>18} {'cost':>18} "
                    f"{'overshoot':>18} {'R_pen':>18}")
            lines.append(head)
            for s in allrows:
                lines.append(
                    f"  {s['policy']:<16} {s['mode']:<10} "
                    f"{_pm(s['value_mean'], s['value_std'], n):>18} "
                    f"{_pm(s['cost_mean'], s['cost_std'], n):>18} "
                    f"{_pm(s['overshoot_mean'], s['overshoot_std'], n):>18} "
                    f"{_pm(s['penalised_return_mean'], s['penalised_return_std'], n):>18}")
            groups = [g for g in dict.fromkeys(s["group"] for s in dom.summary
                                               if s["suite"] == suite) if g != "all"]
            if len(groups) > 1:
                lines.append(f"  R_pen by group (mean{'' if n == len(groups) else ' ± std'}):")
                short = [_short(g) for g in groups]
                width = max(10, *(len(x) for x in short)) + 1
                lines.append(f"  {'policy':<16} {'mode':<10} "
                             + "".join(f"{x:>{width + (9 if n > len(groups) else 0)}}"
                                       for x in short))
                by = {(s["policy"], s["mode"], s["group"]): s for s in dom.summary
                      if s["suite"] == suite}
                for s in allrows:
                    cells = []
                    for g in groups:
                        e2 = by[(s["policy"], s["mode"], g)]
                        txt = _pm(e2["penalised_return_mean"], e2["penalised_return_std"],
                                  e2["n"])
                        cells.append(f"{txt:>{width + (9 if n > len(groups) else 0)}}")
                    lines.append(f"  {s['policy']:<16} {s['mode']:<10} " + "".join(cells))
        lines.append("")
    present = {p for dom in table.domains.values() for p in dom.policies}
    lines.append("policies: " + "; ".join(f"{k} = {v}" for k, v in POLICY_LABELS.items()
                                          if k in present))
    lines.append(f"runtime {table.runtime:.1f} s")
    return "\n".join(lines)


def _short(group: str) -> str:
    return (group.replace("p_success=", "p=").replace("mu=S/", "mu/")
            .replace(", sigma=S/", ",s/"))


def _flat_row(r: dict) -> dict:
    out = {k: r[k] for k in ("domain", "suite", "group", "setting", "policy", "mode")}
    out["value"] = r["value"]
    for m in ("cost", "budget", "overshoot"):
        arr = np.atleast_1d(r[m])
        if arr.size == 1:
            out[m] = float(arr[0])
        else:
            for k, x in enumerate(arr):
                out[f"{m}_{k}"] = float(x)
    out["penalised_return"] = r["penalised_return"]
    return out


def save_ground_truth(table: Result, out_dir) -> list[Path]:
    """Write ``ground_truth_settings.csv`` (every row), ``ground_truth_summary.csv``
    (means and standard deviations per group and suite), ``ground_truth.json``
    (options, optima, brackets, variants, summary, rows) and
    ``ground_truth_policies.npz`` (every policy of the table, float64, key
    ``"<domain>__<policy>"``, shape (S, A) or (T, S, A) for ``true_cmdp_T``; read it
    with ``numpy.load(path, allow_pickle=False)``) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [_flat_row(r) for d in table.domains.values() for r in d.rows]
    summ = [s for d in table.domains.values() for s in d.summary]
    paths = []
    for fname, data in (("ground_truth_settings.csv", rows),
                        ("ground_truth_summary.csv", summ)):
        p = out / fname
        fields = list(dict.fromkeys(k for r in data for k in r))
        with p.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            w.writerows(data)
        paths.append(p)

    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        if isinstance(x, np.ndarray):
            return _num(x)
        if isinstance(x, bool | np.bool_):
            return bool(x)
        if isinstance(x, int | np.integer):
            return int(x)
        if isinstance(x, float | np.floating):
            return _num(x)
        return x

    doc = {
        "options": table.options, "runtime_seconds": table.runtime,
        "policies": POLICY_LABELS,
        "domains": {
            name: {"title": d.title, "horizon": d.horizon, "estimation": d.estimation,
                   "optima": d.optima, "bracket": d.bracket, "variants": d.variants,
                   "summary": d.summary, "rows": [_flat_row(r) for r in d.rows]}
            for name, d in table.domains.items()
        },
    }
    p = out / "ground_truth.json"
    p.write_text(json.dumps(clean(doc), indent=1))
    paths.append(p)
    p = out / "ground_truth_policies.npz"
    np.savez_compressed(p, **{f"{name}__{pol}": np.asarray(arr, dtype=np.float64)
                              for name, d in table.domains.items()
                              for pol, arr in d.policies.items()})
    paths.append(p)
    return paths
