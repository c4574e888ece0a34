r"""The ground-truth table of the paper's domains (``rcmdp ground-truth``).

An application of the solvers of :mod:`rcmdp_exact.ground_truth` to the paper's protocol
(it lives with the experiments, beside Table 1's own ground truth).

For each domain of :data:`rcmdp_exact.domains.PAPER_DOMAINS`:

1. **Estimation** (the paper's phase 1): :func:`rcmdp_exact.uncertainty.estimate` runs
   the uniform random policy on the training model for the protocol's number of
   episodes (``episodes="paper"``: 100 / 100 / 10,000; ``"reference"``: 10 / 20 /
   10,000) and returns the estimated nominal model and its Hoeffding L1 ball
   (delta = 0.1).
2. **Discounted optima** (gamma = 0.99): the CMDP optimum of the estimated nominal model
   and of the true training model (:func:`~rcmdp_exact.ground_truth.solve_cmdp`), the
   certified bracket of the RCMDP optimum on the estimated ball with the targets of the
   three RCPG variants (:func:`~rcmdp_exact.ground_truth.rcmdp_bracket`, with a budget
   of ``bracket_time`` seconds), and the T-step CMDP optimum of the training model
   under the rescaled budget (a time-dependent policy).
3. **Test metrics**: every policy of step 2 on every setting of the domain's test
   suites (:func:`rcmdp_exact.domains.perturbations`), undiscounted over T steps from
   the start state, in batched products
   (:func:`rcmdp_exact.evaluation.evaluate_finite_horizon_batch` for stationary
   policies, :func:`time_dependent_batch` for the T-step optimum): value, cost, rescaled
   budget :math:`d\,T/\sum_{i<T}\gamma^i`, overshoot :math:`C - d'` and penalised
   return :math:`V - 500\max(0, C - d')`.  Each policy is tested as computed
   (``mode = "stochastic"``) and greedily (:math:`\arg\max_a \pi(a|s)`, ties to the
   lowest action, per time step for time-dependent policies; ``mode = "greedy"``).

Settings are aggregated per group (mean and standard deviation, ddof 0) and per suite
("all").  The rows keep the column names ``cost``, ``budget`` and ``overshoot`` (one
column per constraint, suffixed ``_k`` when K > 1).
"""

from __future__ import annotations

import csv
import json
import math
import time
from pathlib import Path

import numpy as np

from .._checks import check_choice, check_client, check_int, check_real
from .._progress import progress_default, tqdm
from .._result import Result
from ..domains import (
    ESTIMATION_EPISODES,
    N_DRAWS,
    PAPER_DOMAINS,
    TEST_SUITES,
    paper_domain,
    perturbations,
)
from ..evaluation import (
    PENALTY_WEIGHT,
    evaluate_finite_horizon_batch,
    rescaled_budget,
    time_dependent_values,
)
from ..ground_truth import VARIANTS, rcmdp_bracket, solve_cmdp, solve_cmdp_finite_horizon
from ..mdp import greedy_policy
from ..names import (
    BRACKET_ASCENT,
    BRACKET_BOXES,
    BRACKET_SECONDS,
    GROUND_TRUTH_FILES,
    USER_DOMAIN,
    USER_ESTIMATION_EPISODES,
    USER_TEST,
)

__all__ = [
    "METRICS",
    "POLICY_LABELS",
    "format_ground_truth",
    "ground_truth_table",
    "model_ground_truth",
    "save_ground_truth",
    "time_dependent_batch",
]

#: The exact test metrics of every (setting, policy, mode) row.
METRICS = ("value", "cost", "budget", "overshoot", "penalised_return")

#: Row names of the table and what they are.
POLICY_LABELS = {
    "nominal_cmdp": "CMDP optimum of the estimated nominal model (LP)",
    "true_cmdp": "CMDP optimum of the true training model (LP)",
    "true_cmdp_T": "T-step CMDP optimum of the true training model (time-dependent LP)",
    "rcmdp_lower": "certified robust-feasible policy of the RCMDP bracket (lower bound)",
    "rcmdp_upper": "robust-Lagrangian optimum at the bracket's multiplier",
    "rcmdp_safest": "policy of least worst-case cost (when the RCMDP is infeasible)",
    "rcpg_value": "target of RCPG (robust value): common worst case by the value",
    "rcpg_constraint": "target of RCPG (robust constraint): common worst case by the cost",
    "rcpg_lagrangian": "target of RCPG (robust Lagrangian): common worst case by L",
}

TITLES = {"inventory": "Inventory Management", "nav1": "Safe Navigation 1",
          "nav2": "Safe Navigation 2"}


def time_dependent_batch(model, policy: np.ndarray, kernels: np.ndarray) -> Result:
    r"""T-step undiscounted value (N,) and costs (N, K) of one time-dependent policy
    (T, S, A) on N kernels (N, S, A, S), by batched backward induction
    :math:`W_t = \sum_a \pi_t(a|s) [g(s, a) + P W_{t+1}]` (rewards and costs of
    ``model`` per transition, re-weighted by each kernel)."""
    g = np.concatenate([np.asarray(model.R)[..., None], np.asarray(model.C)], axis=-1)
    r = np.einsum("nsat,satk->nsak", kernels, g)
    r[:, model.terminal] = 0.0
    W = time_dependent_values(kernels, r, policy)
    out = np.einsum("s,nsk->nk", model.p0, W)
    return Result(value=out[:, 0], costs=out[:, 1:])


def _num(x):
    """A JSON-friendly number or list (inf/nan as strings)."""
    if isinstance(x, np.ndarray | list | tuple):
        return [_num(v) for v in np.asarray(x, dtype=np.float64).ravel().tolist()]
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


# --------------------------------------------------------------------------- optima
def _optimum(res, **extra) -> dict:
    return {"value": res.value, "cost": res.costs, "multiplier": res.lam,
            "status": res.status, "message": res.message, **extra}


def _bracket_summary(br) -> dict:
    keys = ("lower", "upper", "gap", "lower_method", "upper_method",
            "upper_policy_value", "status", "message", "boxes", "seconds", "closed")
    return {**{k: br[k] for k in keys}, "multiplier": br.lam, "lower_cost": br.lower_costs,
            "upper_policy_cost": br.upper_policy_costs, "min_robust_cost": br.min_robust_costs,
            "n_lambda": int(br.history["g"].size)}


def _variant_summary(r) -> dict:
    return {"value": r.value, "cost": r.costs, "multiplier": r.lam,
            "feasible": r.feasible, "robust_value": r.robust_value,
            "robust_cost": r.robust_costs, "robust_feasible": r.robust_feasible,
            "converged": r.converged, "status": r.status}


def _policies(nom, tru, tru_T, br) -> dict:
    pols = {"nominal_cmdp": nom.policy, "true_cmdp": tru.policy, "true_cmdp_T": tru_T.policy}
    if br.status == "infeasible":
        pols["rcmdp_safest"] = br.policies["lower"]
    else:
        pols["rcmdp_lower"] = br.policies["lower"]
        pols["rcmdp_upper"] = br.policies["upper"]
    for v in VARIANTS:
        if v in br.variants:
            pols[f"rcpg_{v}"] = br.variants[v].policy
    return pols


def _estimation(true, opts: dict, n_ep: int, source: str) -> Result:
    """Step 1: the estimated nominal model and set (of ``opts["set_kind"]``), or the
    saved set of ``opts["set"]``."""
    if opts.get("set") is not None:
        uset = opts["set"]
        return Result(nominal=true.with_transitions(uset.nominal), set=uset,
                      info={"episodes": 0, "episodes_source": "set file",
                            "set": opts["set_kind"], "set_type": type(uset).__name__,
                            "seed": opts["seed"], "delta": opts["delta"],
                            "alpha_range": None, "form": None})
    from .estimation import estimate_set

    est = estimate_set(true, n_ep, opts["seed"], opts["delta"], opts["set_kind"],
                       progress=False)
    return Result(nominal=est.nominal, set=est.set,
                  info={"episodes": n_ep, "episodes_source": source,
                        "set": opts["set_kind"], "set_type": type(est.set).__name__,
                        "seed": opts["seed"], "delta": opts["delta"],
                        "alpha_range": list(est.alpha_range), "form": est.estimate.form})


def _domain_optima(true, est: Result, opts: dict, bar, title: str) -> Result:
    """The LPs and the bracket of one domain (step 2), after its estimation ``est``."""
    bar.update(1)
    nom, tru, tru_T = solve_cmdp(est.nominal), solve_cmdp(true), solve_cmdp_finite_horizon(true)
    bar.update(1)
    br = rcmdp_bracket(est.nominal, est.set, variants=opts["variants"], progress=False,
                       time_limit=opts["bracket_time"], max_boxes=opts["max_boxes"],
                       n_ascent=BRACKET_ASCENT, client=opts.get("client"))
    bar.update(1)
    return Result(
        title=title, horizon=true.horizon, estimation=est.info,
        optima={"nominal_cmdp": _optimum(nom), "true_cmdp": _optimum(tru),
                "true_cmdp_T": _optimum(tru_T, budget=tru_T.budget)},
        bracket=_bracket_summary(br),
        variants={v: _variant_summary(r) for v, r in br.variants.items()},
        policies=_policies(nom, tru, tru_T, br))


# --------------------------------------------------------------------------- tests
def _row(name, suite, st, pname, mode, value, cost, budget) -> dict:
    cost = np.asarray(cost, dtype=float)
    return {"domain": name, "suite": suite, "group": st.group, "setting": st.label,
            "policy": pname, "mode": mode, "value": float(value), "cost": cost,
            "budget": np.asarray(budget, dtype=float), "overshoot": cost - budget,
            "penalised_return": float(value - PENALTY_WEIGHT * np.maximum(cost - budget,
                                                                          0.0).sum())}


def _suite_rows(name: str, suite: str, settings: list, policies: dict) -> list:
    """Rows of every (setting, policy, mode) of one suite, from batched evaluations."""
    base = settings[0].model
    kernels = np.stack([np.asarray(st.model.P) for st in settings])
    T = base.horizon
    budget = rescaled_budget(base.d, base.gamma, T)
    stat = [(p, m) for p, pol in policies.items() if pol.ndim == 2
            for m in ("stochastic", "greedy")]
    pols = np.stack([policies[p] if m == "stochastic" else greedy_policy(policies[p])
                     for p, m in stat])
    ev = evaluate_finite_horizon_batch(base, pols, kernels, T)
    out = {key: (ev.value[:, i], ev.costs[:, i]) for i, key in enumerate(stat)}
    for p, pol in policies.items():
        if pol.ndim == 3:
            for m, tp in (("stochastic", pol), ("greedy", greedy_policy(pol))):
                res = time_dependent_batch(base, tp, kernels)
                out[(p, m)] = (res.value, res.costs)
    return [_row(name, suite, st, p, m, out[(p, m)][0][n], out[(p, m)][1][n], budget)
            for n, st in enumerate(settings) for p in policies
            for m in ("stochastic", "greedy")]


def _same_arrays(a, b) -> bool:
    return all(np.array_equal(np.asarray(getattr(a, k)), np.asarray(getattr(b, k)))
               for k in ("R", "C", "p0", "terminal", "d")) and \
        (a.gamma, a.horizon) == (b.gamma, b.horizon)


def _test_rows(name: str, suites: dict, policies: dict) -> list:
    """Rows of every suite ``{suite: settings}``: settings that share their rewards,
    costs and start are evaluated in one batch."""
    rows = []
    for suite, settings in suites.items():
        groups = [settings] if all(_same_arrays(settings[0].model, st.model)
                                   for st in settings) else [[st] for st in settings]
        for group in groups:
            rows.extend(_suite_rows(name, suite, group, policies))
    return rows


def _paper_suites(name: str, opts: dict) -> dict:
    return {suite: perturbations(suite, seed=opts["seed"], n_draws=opts["n_draws"],
                                 offset_on=opts["offset_on"], progress=False)
            for suite in TEST_SUITES[name]}


def _summarise(rows: list[dict]) -> list[dict]:
    """Mean and standard deviation (ddof 0) per (suite, group) and per suite ("all").

    Cost, budget and overshoot are summed over the constraints when K > 1.
    """
    keys: dict = {}
    for r in rows:
        for grp in (r["group"], "all"):
            keys.setdefault((r["suite"], grp, r["policy"], r["mode"]), []).append(r)
    out = []
    for (suite, grp, pol, mode), rs in keys.items():
        entry = {"domain": rs[0]["domain"], "suite": suite, "group": grp, "policy": pol,
                 "mode": mode, "n": len(rs)}
        for m in METRICS:
            vals = np.array([float(np.sum(r[m])) for r in rs])
            entry[f"{m}_mean"], entry[f"{m}_std"] = float(vals.mean()), float(vals.std())
        out.append(entry)
    return out


def _check_table(names, opts: dict, given: dict) -> None:
    for n in names:
        check_choice(n, "domain", PAPER_DOMAINS)
    check_choice(opts["episodes"], given.get("estimation", "estimation"), ("paper", "reference"))
    check_choice(opts["offset_on"], "offset_on", ("failure", "success"))
    _check_common(opts, given)
    check_int(opts["n_draws"], "n_draws", 1, hint=" (draws per N in tests 1B and 2B)")


def _check_common(opts: dict, given: dict) -> None:
    check_int(opts["seed"], "seed", 0)
    check_real(opts["delta"], "delta", 0.0, 1.0, low_open=True, high_open=True)
    for v in opts["variants"]:
        check_choice(v, "variant", VARIANTS)
    check_real(opts["bracket_time"], given.get("time_limit", "time_limit"), 0.0,
               low_open=True)
    check_int(opts["max_boxes"], "max_boxes", 1)
    from ..uncertainty import set_class

    set_class(opts["set_kind"], estimated=True, what="set_kind")
    check_client(opts["client"])


#: Former parameter names of :func:`ground_truth_table` (deprecated) and their new names.
RENAMED_PARAMETERS = {"episodes": "estimation", "bracket_time": "time_limit"}


def _renamed(given: dict, values: dict, where: str) -> tuple[dict, dict]:
    """The values with the deprecated names of ``given`` moved to their new names, and
    {new name: the name given} for messages."""
    import warnings

    names = {}
    for old, value in given.items():
        new = RENAMED_PARAMETERS.get(old)
        if new is None:
            raise TypeError(f"{where}() got an unexpected keyword argument {old!r}")
        warnings.warn(f"{where}({old}=...) is deprecated; use {new}=...",
                      DeprecationWarning, stacklevel=3)
        values[new] = value
        names[new] = old
    return values, names


def ground_truth_table(domains=None, *, estimation: str = "paper", seed: int = 0,
                       delta: float = 0.1, n_draws: int | None = None,
                       offset_on: str = "failure", variants=VARIANTS, progress=None,
                       time_limit: float = BRACKET_SECONDS,
                       max_boxes: int = BRACKET_BOXES, set_kind: str = "l1",
                       client=None, **renamed) -> Result:
    """Build the ground-truth table of the paper's domains (module docstring).

    Parameters
    ----------
    domains : sequence of str, optional
        Names in :data:`~rcmdp_exact.domains.PAPER_DOMAINS` (default: all three).
    estimation : {"paper", "reference"}
        The estimation episodes (``episodes``, its former name, is deprecated).
    seed : int
        Seed of the estimation and of the random draws of tests 1B and 2B (>= 0).
    delta : float
        Confidence of the Hoeffding radius, in (0, 1).
    n_draws : int, optional
        Draws per N in 1B/2B (default 50, the paper's).
    offset_on : {"failure", "success"}
        Test 1B: the drawn offset replaces a failed move (default) or a successful one.
    variants : sequence of str
        RCPG variants whose targets are computed (default all three).
    progress : bool or None
        A bar over the steps of every domain (None: when standard error is a terminal).
    time_limit, max_boxes
        Budget of the bracket's branch and bound per domain (``bracket_time``, the
        former name of ``time_limit``, is deprecated).
    set_kind : str
        The kind of uncertainty set estimated from the data (a kind's name or
        ``MODULE:CLASS``; :mod:`.estimation`; default the paper's L1 ball).
    client : distributed.Client, optional
        Run each bracket's branch and bound on this Dask cluster (the same certified
        bracket as without, for the same box budget).

    Returns
    -------
    Result
        ``domains`` {name: Result(estimation, optima, bracket, variants, rows, summary,
        policies)}, ``options``, ``runtime`` (seconds).
    """
    values, given = _renamed(renamed, {"estimation": estimation, "time_limit": time_limit},
                             "ground_truth_table")
    names = list(PAPER_DOMAINS) if domains is None else list(domains)
    opts = {"episodes": values["estimation"], "seed": seed, "delta": delta,
            "n_draws": N_DRAWS if n_draws is None else n_draws, "offset_on": offset_on,
            "variants": tuple(variants), "bracket_time": values["time_limit"],
            "max_boxes": max_boxes, "set_kind": set_kind, "client": client}
    _check_table(names, opts, given)
    t0 = time.perf_counter()
    out = {}
    with tqdm(total=4 * len(names), desc="ground truth",
              disable=not progress_default(progress)) as bar:
        for name in names:
            bar.set_postfix_str(name)
            true = paper_domain(name)
            est = _estimation(true, opts, ESTIMATION_EPISODES[name][opts["episodes"]],
                              opts["episodes"])
            dom = _domain_optima(true, est, opts, bar, TITLES.get(name, name))
            dom.rows = _test_rows(name, _paper_suites(name, opts), dom.policies)
            dom.summary = _summarise(dom.rows)
            dom.name = name
            out[name] = dom
            bar.update(1)
    options = {k: (list(v) if isinstance(v, tuple) else v) for k, v in opts.items()
               if k != "client"}
    options.update(gamma=0.99, modes=["stochastic", "greedy"], penalty_weight=500.0)
    return Result(domains=out, options=options, runtime=time.perf_counter() - t0)


def model_ground_truth(model, *, name: str = USER_DOMAIN, uset=None, set_kind: str = "l1",
                       estimation_episodes: int = USER_ESTIMATION_EPISODES, seed: int = 0,
                       delta: float = 0.1, perturbations=(), variants=VARIANTS,
                       progress=None, time_limit: float = BRACKET_SECONDS,
                       max_boxes: int = BRACKET_BOXES, client=None) -> Result:
    """The ground-truth table of your own model (``rcmdp ground-truth --model``).

    The steps of :func:`ground_truth_table` on ``model`` (discounted, with a horizon T):
    the set is estimated from ``estimation_episodes`` episodes of the uniform random
    policy (kind ``set_kind``), or ``uset`` is used as it is (its nominal kernel gives the
    nominal model); the tests are the model itself and ``perturbations``
    (:class:`~rcmdp_exact.domains.Setting` objects, or (name, group, model) triples: the
    same problem with other transitions, see :mod:`.user`), as suite ``"model"``.
    ``client``: a ``distributed.Client`` for the bracket's branch and bound.

    Returns
    -------
    Result
        As :func:`ground_truth_table`, with one domain named ``name``.
    """
    from .._checks import check_type
    from ..domains import Setting
    from ..model import TabularCMDP, check_model
    from .user import check_perturbation

    check_type(model, "model", TabularCMDP, "load one with TabularCMDP.load(path)")
    check_model(model)
    check_int(model.horizon, "model.horizon", 1,
              hint="; the test metric takes T steps: give the model a horizon "
                   "(model.replace(horizon=T))")
    opts = {"episodes": int(check_int(estimation_episodes, "estimation_episodes", 1)),
            "seed": seed, "delta": delta, "variants": tuple(variants),
            "bracket_time": time_limit, "max_boxes": max_boxes, "set_kind": set_kind,
            "set": uset, "client": client}
    _check_common(opts, {})
    if uset is not None:
        from ..uncertainty import check_set

        check_set(uset, model)
        opts["set_kind"] = "file"
    settings = [Setting(USER_TEST, model, USER_TEST)]
    for p in perturbations:
        st = p if isinstance(p, Setting) else Setting(p[0], p[2], p[1])
        check_perturbation(model, st.model, st.label)
        settings.append(Setting(st.label, st.model.replace(horizon=model.horizon), st.group))
    t0 = time.perf_counter()
    with tqdm(total=4, desc="ground truth", disable=not progress_default(progress)) as bar:
        est = _estimation(model, opts, opts["episodes"], "episodes")
        dom = _domain_optima(model, est, opts, bar, model.name or "your model")
        dom.rows = _test_rows(name, {USER_TEST: settings}, dom.policies)
        dom.summary = _summarise(dom.rows)
        dom.name = name
        bar.update(1)
    options = {k: (list(v) if isinstance(v, tuple) else v) for k, v in opts.items()
               if k not in ("set", "client")}
    options.update(gamma=model.gamma, modes=["stochastic", "greedy"], penalty_weight=500.0)
    return Result(domains={name: dom}, options=options, runtime=time.perf_counter() - t0)


# ----------------------------------------------------------------------- output
def _pm(mean: float, std: float, n: int) -> str:
    return f"{mean:10.2f}" if n == 1 else f"{mean:10.2f} ±{std:7.2f}"


def _short(group: str) -> str:
    return (group.replace("p_success=", "p=").replace("mu=S/", "mu/")
            .replace(", sigma=S/", ",s/"))


def _format_optima(name: str, dom) -> list[str]:
    e = dom.estimation
    if e["alpha_range"] is None:
        where = f"the saved {e['set_type']} of --set-file and its nominal kernel"
    else:
        where = (f"nominal model from {e['episodes']} episodes of the uniform policy, seed "
                 f"{e['seed']}, delta {e['delta']}, L1 alpha in [{e['alpha_range'][0]:.3f}, "
                 f"{e['alpha_range'][1]:.3f}]")
    kind = e.get("set", "l1")
    from .estimation import set_note

    note = set_note(kind)
    lines = [f"== {name}: {dom.title} ({where}) ==",
             f"uncertainty set: {kind} ({e.get('set_type', 'L1Ball')}: {note})",
             "discounted optima (from the start state):"]
    for key in ("nominal_cmdp", "true_cmdp"):
        o = dom.optima[key]
        lines.append(f"  {key:<16} V = {o['value']:12.6f}  C = {np.round(o['cost'], 6).tolist()}"
                     f"  lam = {np.round(o['multiplier'], 6).tolist()}  [{o['status']}]")
    b = dom.bracket
    lines.append(f"  {'rcmdp bracket':<16} [{b['lower']:.6f}, {b['upper']:.6f}] gap "
                 f"{b['gap']:.3g} (lower: {b['lower_method']}, upper: {b['upper_method']}, "
                 f"{b['boxes']} boxes), lam = {np.round(b['multiplier'], 6).tolist()} "
                 f"[{b['status']}]")
    if b["status"] != "bracket":
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
    return lines


def _format_groups(dom, suite: str, allrows: list, n: int) -> list[str]:
    groups = [g for g in dict.fromkeys(s["group"] for s in dom.summary
                                       if s["suite"] == suite) if g != "all"]
    if len(groups) <= 1:
        return []
    short = [_short(g) for g in groups]
    width = max(10, *(len(x) for x in short)) + 1 + (9 if n > len(groups) else 0)
    lines = [f"  R_pen by group (mean{'' if n == len(groups) else ' ± std'}):",
             f"  {'policy':<16} {'mode':<10} " + "".join(f"{x:>{width}}" for x in short)]
    by = {(s["policy"], s["mode"], s["group"]): s for s in dom.summary if s["suite"] == suite}
    for s in allrows:
        cells = [_pm(e["penalised_return_mean"], e["penalised_return_std"], e["n"])
                 for e in (by[(s["policy"], s["mode"], g)] for g in groups)]
        lines.append(f"  {s['policy']:<16} {s['mode']:<10} "
                     + "".join(f"{c:>{width}}" for c in cells))
    return lines


def _format_suite(dom, suite: str) -> list[str]:
    allrows = [s for s in dom.summary if s["suite"] == suite and s["group"] == "all"]
    n = allrows[0]["n"]
    lines = ["", f"test {suite}: {n} settings, T = {dom.horizon}, undiscounted; mean ± std "
             f"over the settings",
             f"  {'policy':<16} {'mode':<10} {'value':>18} {'cost':>18} {'overshoot':>18} "
             f"{'R_pen':>18}"]
    for s in allrows:
        lines.append(f"  {s['policy']:<16} {s['mode']:<10} "
                     + "".join(f"{_pm(s[f'{m}_mean'], s[f'{m}_std'], n):>18} " for m in
                               ("value", "cost", "overshoot", "penalised_return")).rstrip())
    return lines + _format_groups(dom, suite, allrows, n)


def format_ground_truth(table: Result) -> str:
    """The table as text: optima per domain, then per suite the metrics of every policy."""
    lines = []
    for name, dom in table.domains.items():
        lines += _format_optima(name, dom)
        for suite in sorted({s["suite"] for s in dom.summary}, key=str):
            lines += _format_suite(dom, suite)
        lines.append("")
    present = {p for dom in table.domains.values() for p in dom.policies}
    lines.append("policies: " + "; ".join(f"{k} = {v}" for k, v in POLICY_LABELS.items()
                                          if k in present))
    lines.append(f"runtime {table.runtime:.1f} s")
    return "\n".join(lines)


def _flat_row(r: dict) -> dict:
    out = {k: r[k] for k in ("domain", "suite", "group", "setting", "policy", "mode")}
    out["value"] = r["value"]
    for m in ("cost", "budget", "overshoot"):
        arr = np.atleast_1d(r[m])
        if arr.size == 1:
            out[m] = float(arr[0])
        else:
            out.update({f"{m}_{k}": float(x) for k, x in enumerate(arr)})
    out["penalised_return"] = r["penalised_return"]
    return out


def _clean(x):
    """Numbers, arrays and containers as JSON values (inf and nan as strings)."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, np.ndarray | float | np.floating):
        return _num(x)
    return x


#: The files :func:`save_ground_truth` writes.
OUTPUT_FILES = GROUND_TRUTH_FILES


def _csv_text(data: list[dict]) -> str:
    import io

    fields = list(dict.fromkeys(k for r in data for k in r))
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    w.writerows(data)
    return buf.getvalue()


def save_ground_truth(table: Result, out_dir) -> list[Path]:
    """Write :data:`OUTPUT_FILES` into ``out_dir`` (created if missing).

    ``ground_truth_settings.csv`` (every row), ``ground_truth_summary.csv`` (means and
    standard deviations per group and suite), ``ground_truth.json`` (options, optima,
    brackets, variants, summary, rows) and ``ground_truth_policies.npz`` (every policy,
    float64, key ``"<domain>__<policy>"``, shape (S, A) or (T, S, A) for
    ``true_cmdp_T``; read with ``numpy.load(path, allow_pickle=False)``).

    Each file is written to a temporary file beside it and renamed into place
    (:func:`rcmdp_exact._io.write_atomic`), so an interrupt or a full disk leaves each
    file whole, old or new.

    Raises
    ------
    OutputPathError
        A file cannot be written (a full disk, a read-only folder): one line naming the
        file.
    """
    from .._io import write_atomic

    out = Path(out_dir)
    doc = {"options": table.options, "runtime_seconds": table.runtime,
           "policies": POLICY_LABELS,
           "domains": {name: {"title": d.title, "horizon": d.horizon,
                              "estimation": d.estimation, "optima": d.optima,
                              "bracket": d.bracket, "variants": d.variants,
                              "summary": d.summary, "rows": [_flat_row(r) for r in d.rows]}
                       for name, d in table.domains.items()}}
    texts = [_csv_text([_flat_row(r) for d in table.domains.values() for r in d.rows]),
             _csv_text([s for d in table.domains.values() for s in d.summary]),
             json.dumps(_clean(doc), indent=1)]
    policies = {f"{name}__{pol}": np.asarray(arr, dtype=np.float64)
                for name, d in table.domains.items() for pol, arr in d.policies.items()}
    paths = [out / f for f in OUTPUT_FILES]
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in zip(paths[:3], texts, strict=True):
            write_atomic(path, lambda fh, text=text: fh.write(text.encode("utf-8")))
        write_atomic(paths[3], lambda fh: np.savez_compressed(fh, **policies))
    except OSError as exc:
        from .._checks import OutputPathError

        what = exc.strerror or str(exc) or type(exc).__name__
        where = exc.filename if exc.filename is not None else str(out)
        raise OutputPathError(
            f"the ground-truth files cannot be written: {what}: {str(where)!r}; the files "
            f"in {str(out)!r} are whole (old or new): fix the cause (free space, a "
            f"writable folder) and run the same command again with --force") from None
    return paths
