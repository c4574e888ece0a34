r"""The ground-truth table of the paper's domains (``rcmdp ground-truth``).

An application of the solvers of :mod:`rcmdp_exact.ground_truth` to the paper's protocol
(it lives with the experiments, beside Table 1's own ground truth).

For each domain of :data:`rcmdp_exact.domains.PAPER_DOMAINS`:

1. **Estimation** (the paper's phase 1): :func:`rcmdp_exact.uncertainty.estimate` runs
   the uniform random policy on the training model for the protocol's number of
   episodes (``estimation="paper"``: 100 / 100 / 10,000; ``"reference"``: 10 / 20 /
   10,000) and returns the estimated nominal model and its Hoeffding L1 ball
   (delta = 0.1).
2. **Discounted optima** (gamma = 0.99): the CMDP optimum of the estimated nominal model
   and of the true training model (:func:`~rcmdp_exact.ground_truth.solve_cmdp`), the
   certified bracket of the RCMDP optimum on the estimated ball with the targets of the
   three RCPG variants (:func:`~rcmdp_exact.ground_truth.rcmdp_bracket`, with the
   settings ``spec.bracket`` of the :class:`GroundTruthTableSpec`), and the T-step CMDP
   optimum of the training model under the rescaled budget (a time-dependent policy).
3. **Test metrics**: every policy of step 2 on every setting of the domain's test
   suites (:func:`rcmdp_exact.domains.perturbations`), undiscounted over T steps from
   the start state, in batched products
   (:func:`rcmdp_exact.core.evaluation.evaluate_finite_horizon_batch` for stationary
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
import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._checks import check_choice, check_client, check_int, check_limit, check_real, check_type
from .._progress import progress_default, tqdm
from .._result import Result
from ..core.evaluation import (
    PENALTY_WEIGHT,
    evaluate_finite_horizon_batch,
    rescaled_budget,
    time_dependent_values,
)
from ..core.mdp import greedy_policy
from ..domains import (
    ESTIMATION_EPISODES,
    N_DRAWS,
    PAPER_DOMAINS,
    TEST_SUITES,
    paper_domain,
    perturbations,
)
from ..ground_truth import (
    POLICY_CLASS,
    VARIANTS,
    BracketSettings,
    gap_text,
    rcmdp_bracket,
    solve_cmdp,
    solve_cmdp_finite_horizon,
)
from ..names import (
    BRACKET_ASCENT,
    BRACKET_BOXES,
    BRACKET_SECONDS,
    GROUND_TRUTH_FILES,
    USER_DOMAIN,
    USER_ESTIMATION_EPISODES,
    USER_RADIUS,
    USER_TEST,
)

__all__ = [
    "METRICS",
    "GroundTruthTableSpec",
    "SetSpec",
    "format_ground_truth",
    "ground_truth_table",
    "model_ground_truth",
    "save_ground_truth",
    "time_dependent_batch",
]

#: The exact test metrics of every (setting, policy, mode) row.
METRICS = ("value", "cost", "budget", "overshoot", "penalised_return")

#: Row names of the table and what they are.
_POLICY_LABELS = {
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
    return {"value": res.value, "costs": res.costs, "lam": res.lam,
            "status": res.status, "message": res.message, **extra}


def _bracket_summary(br) -> dict:
    keys = ("lower", "upper", "gap", "relative_gap", "value_range", "policy_class",
            "lower_method", "upper_method", "upper_policy_value", "status", "message",
            "boxes", "seconds", "closed", "reproducible")
    return {**{k: br[k] for k in keys}, "lam": br.lam, "lower_costs": br.lower_costs,
            "upper_policy_costs": br.upper_policy_costs,
            "min_robust_costs": br.min_robust_costs,
            "n_lambda": int(br.history["g"].size)}


def _variant_summary(r) -> dict:
    return {"value": r.value, "costs": r.costs, "lam": r.lam,
            "feasible": r.feasible, "robust_value": r.robust_value,
            "robust_costs": r.robust_costs, "robust_feasible": r.robust_feasible,
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


def _estimation(true, spec: GroundTruthTableSpec, n_ep: int, source: str) -> Result:
    """Step 1: the estimated nominal model and set (of the kind ``spec.set.kind``), or the
    saved set ``spec.set.saved`` with its nominal kernel."""
    from .estimation import estimate_set, set_around, support_text

    st = spec.set
    if st.saved is not None:
        uset = st.saved
        return Result(nominal=true.with_transitions(uset.nominal), uset=uset,
                      info={"episodes": 0, "episodes_source": "set file",
                            "set": st.label, "set_type": type(uset).__name__,
                            "seed": spec.seed, "delta": st.delta,
                            "alpha_range": None, "form": None,
                            "support": support_text(uset, true)})
    if st.radius is not None:  # your model judged on itself
        uset = set_around(st.kind, true, st.radius, st.support)
        return Result(nominal=true, uset=uset,
                      info={"episodes": 0, "episodes_source": "none: the set is built "
                            "around the model itself", "set": st.label,
                            "set_type": type(uset).__name__, "seed": spec.seed,
                            "delta": None, "alpha_range": None, "form": None,
                            "radius": st.radius, "support": support_text(uset, true)})
    est = estimate_set(true, n_ep, spec.seed, st.delta, st.kind, progress=False)
    return Result(nominal=est.nominal, uset=est.uset,
                  info={"episodes": n_ep, "episodes_source": source,
                        "set": st.label, "set_type": type(est.uset).__name__,
                        "seed": spec.seed, "delta": st.delta,
                        "alpha_range": list(est.alpha_range), "form": est.estimate.form,
                        "support": support_text(est.uset, true)})


def _domain_optima(true, est: Result, spec: GroundTruthTableSpec, bar, title: str,
                   client) -> Result:
    """The LPs and the bracket of one domain (step 2), after its estimation ``est``."""
    bar.update(1)
    nom, tru, tru_T = solve_cmdp(est.nominal), solve_cmdp(true), solve_cmdp_finite_horizon(true)
    bar.update(1)
    br = rcmdp_bracket(est.nominal, est.uset, spec.bracket, progress=False, client=client)
    bar.update(1)
    return Result(
        title=title, horizon=true.horizon, gamma=float(true.gamma),
        budget=np.asarray(true.d, dtype=np.float64), estimation=est.info,
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


def _paper_suites(name: str, spec: GroundTruthTableSpec) -> dict:
    return {suite: perturbations(suite, seed=spec.seed, n_draws=spec.n_draws,
                                 offset_on=spec.offset_on, progress=False)
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


@dataclass(frozen=True)
class SetSpec:
    """The uncertainty set of a ground-truth table: a kind estimated from data, a kind
    built around your model itself, or a saved set used as it is.

    ``kind`` (a registered kind's name or ``MODULE:CLASS``, default ``"l1"``, the paper's) is
    estimated from the episodes of the uniform policy at confidence ``delta``
    (:func:`~rcmdp_exact.protocol.estimation.estimate_set`), or, with a ``radius``,
    built around the model's own kernel on the ``support`` (default ``"nominal"``, the
    model's own next states; :func:`~rcmdp_exact.protocol.estimation.set_around`: your
    own model only); ``saved`` (an :class:`~rcmdp_exact.UncertaintySet`, e.g. loaded
    from ``--set-file``) replaces the estimation, and then ``kind`` is None.  Validated
    when built (a saved set against its model later, by :func:`model_ground_truth`).
    """

    kind: str | None = None
    delta: float = 0.1
    saved: object = None
    radius: float | None = None
    support: str | None = None

    def __post_init__(self):
        from .._checks import InputError
        from ..names import AROUND_SUPPORTS

        if self.saved is None:
            kind = "l1" if self.kind is None else self.kind
            from ..uncertainty import set_class

            set_class(kind, estimated=True, what="set kind")
            object.__setattr__(self, "kind", kind)
        elif self.kind is not None or self.radius is not None:
            raise InputError(f"a set spec names a kind ({self.kind!r}) or a saved set, not "
                             f"both; give SetSpec(kind=...) or SetSpec(saved=...)")
        check_real(self.delta, "delta", 0.0, 1.0, low_open=True, high_open=True)
        if self.radius is not None:
            object.__setattr__(self, "radius", check_real(self.radius, "radius", 0.0))
            object.__setattr__(self, "support", check_choice(
                self.support or "nominal", "support", AROUND_SUPPORTS))
        elif self.support is not None:
            raise InputError("support applies to a set around the model (give radius=R), "
                             "not to an estimated or saved set")

    @property
    def around(self) -> bool:
        """True for a set built around the model itself (``radius`` given)."""
        return self.radius is not None

    @property
    def label(self) -> str:
        """The kind, or ``"saved"`` for a saved set (the reports' name of the set)."""
        return "saved" if self.saved is not None else self.kind


def _default_bracket() -> BracketSettings:
    return BracketSettings(max_boxes=BRACKET_BOXES, n_ascent=BRACKET_ASCENT,
                           time_limit=BRACKET_SECONDS, variants=VARIANTS)


@dataclass(frozen=True)
class GroundTruthTableSpec:
    """Everything a ground-truth table computes from, as one frozen value.

    ``set`` (:class:`SetSpec`), ``estimation`` (``"paper"`` or ``"reference"``: the
    protocol's episodes on the paper's domains; a number of episodes on your own model),
    ``seed`` (of the estimation and of the random draws of tests 1B and 2B), ``n_draws``
    and ``offset_on`` (the paper's tests 1B and 2B), and ``bracket`` (the
    :class:`~rcmdp_exact.ground_truth.BracketSettings` of each domain's bracket: by default
    the RCPG variants' targets, :data:`~rcmdp_exact.names.BRACKET_BOXES` boxes,
    :data:`~rcmdp_exact.names.BRACKET_ASCENT` ascent steps, which decide the bracket,
    and a safety net of :data:`~rcmdp_exact.names.BRACKET_SECONDS` seconds, which only
    stops a run far slower than expected and then says so: the bracket's
    ``reproducible`` is False).  Validated when built.
    """

    set: SetSpec = field(default_factory=SetSpec)
    estimation: str | int = "paper"
    seed: int = 0
    n_draws: int = N_DRAWS
    offset_on: str = "failure"
    bracket: BracketSettings = field(default_factory=_default_bracket)

    def __post_init__(self):
        check_type(self.set, "set", SetSpec, "give SetSpec(kind=...) or SetSpec(saved=...)")
        check_type(self.bracket, "bracket", BracketSettings, "give BracketSettings(...)")
        if isinstance(self.estimation, str):
            check_choice(self.estimation, "estimation", ("paper", "reference"))
        else:
            check_int(self.estimation, "estimation (episodes)", 1)
        check_int(self.seed, "seed", 0)
        check_limit(self.n_draws, "n_draws", "draws", hint=" (draws per N in tests 1B and 2B)")
        check_choice(self.offset_on, "offset_on", ("failure", "success"))

    def options(self, gamma: float) -> dict:
        """The options as the output files record them (``gamma``: the model's discount,
        in [0, 1])."""
        gamma = check_real(gamma, "gamma", 0.0, 1.0)
        b = self.bracket
        return {"estimation": self.estimation, "seed": self.seed,
                "delta": self.set.delta, "n_draws": self.n_draws,
                "offset_on": self.offset_on, "variants": list(b.variants),
                "time_limit": b.time_limit, "max_boxes": b.max_boxes,
                "set": self.set.label, "gamma": gamma, "modes": ["stochastic", "greedy"],
                "penalty_weight": PENALTY_WEIGHT,
                **({"radius": self.set.radius, "support": self.set.support}
                   if self.set.around else {})}


def _spec(spec, options: dict, *, where: str, **defaults) -> GroundTruthTableSpec:
    """The spec of a table: ``spec`` (or the defaults) with the keyword ``options``
    (:func:`ground_truth_table`'s) replacing its fields, validated once."""
    spec = GroundTruthTableSpec(**defaults) if spec is None else check_type(
        spec, "spec", GroundTruthTableSpec, "build one with GroundTruthTableSpec(...)")
    opts = {k: v for k, v in options.items() if v is not None}  # None: not given
    unknown = set(opts) - _OPTIONS
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument "
                        f"{sorted(unknown)[0]!r}")
    set_fields = {k: opts.pop(k) for k in ("delta", "radius", "support") if k in opts}
    if "set_kind" in opts:
        set_fields["kind"] = opts.pop("set_kind")
    if "uset" in opts:
        set_fields["saved"] = opts.pop("uset")
        set_fields.setdefault("kind", None)
    bracket = {k: opts.pop(k) for k in ("variants", "time_limit", "max_boxes") if k in opts}
    return dataclasses.replace(
        spec, **opts,
        **({"set": dataclasses.replace(spec.set, **set_fields)} if set_fields else {}),
        **({"bracket": dataclasses.replace(spec.bracket, **bracket)} if bracket else {}))


#: The keyword options of :func:`ground_truth_table` and :func:`model_ground_truth` that
#: replace fields of the spec.
_OPTIONS = {"estimation", "seed", "n_draws", "offset_on", "delta", "set_kind", "uset",
            "variants", "time_limit", "max_boxes", "radius", "support"}


def ground_truth_table(domains=None, spec: GroundTruthTableSpec | None = None, *, progress=None,
                       client=None, **options) -> Result:
    """Build the ground-truth table of the paper's domains (module docstring).

    Parameters
    ----------
    domains : sequence of str, optional
        Names in :data:`~rcmdp_exact.domains.PAPER_DOMAINS` (default: all three).
    spec : GroundTruthTableSpec, optional
        What the table computes from (default ``GroundTruthTableSpec()``: the paper's
        estimation and L1 ball, seed 0, 50 draws per N).  Keyword options replace its
        fields: ``estimation`` ({"paper", "reference"}), ``seed``, ``n_draws``,
        ``offset_on`` ({"failure", "success"}: test 1B's drawn offset replaces a failed
        move, default, or a successful one), ``delta`` and ``set_kind`` (of
        ``spec.set``), ``variants``, ``time_limit`` and ``max_boxes`` (of
        ``spec.bracket``).
    progress : bool or None
        A bar over the steps of every domain (None: when standard error is a terminal).
    client : distributed.Client, optional
        Run each bracket's branch and bound on this Dask cluster (the same certified
        bracket as without, for the same box budget).

    Returns
    -------
    Result
        ``domains`` {name: Result(estimation, optima, bracket, variants, rows, summary,
        policies)}, ``spec`` (the :class:`GroundTruthTableSpec`), ``options`` (its fields as
        the output files record them), ``runtime`` (seconds).
    """
    names = list(PAPER_DOMAINS) if domains is None else list(domains)
    for n in names:
        check_choice(n, "domain", PAPER_DOMAINS)
    spec = _spec(spec, options, where="ground_truth_table")
    if spec.set.saved is not None or spec.set.around or not isinstance(spec.estimation, str):
        from .._checks import InputError

        raise InputError("the paper's domains estimate their set with the protocol's "
                         "episodes (estimation 'paper' or 'reference'); a saved set, a set "
                         "around the model (radius) or a number of episodes is for your "
                         "own model: use model_ground_truth")
    check_client(client)
    t0 = time.perf_counter()
    out = {}
    with tqdm(total=4 * len(names), desc="ground truth",
              disable=not progress_default(progress)) as bar:
        for name in names:
            bar.set_postfix_str(name)
            true = paper_domain(name)
            est = _estimation(true, spec, ESTIMATION_EPISODES[name][spec.estimation],
                              spec.estimation)
            dom = _domain_optima(true, est, spec, bar, TITLES.get(name, name), client)
            dom.rows = _test_rows(name, _paper_suites(name, spec), dom.policies)
            dom.summary = _summarise(dom.rows)
            dom.name = name
            out[name] = dom
            bar.update(1)
    return Result(domains=out, spec=spec, options=spec.options(0.99),
                  runtime=time.perf_counter() - t0)


def model_ground_truth(model, spec: GroundTruthTableSpec | None = None, *, name: str = USER_DOMAIN,
                       perturbations=(), progress=None, client=None, **options) -> Result:
    """The ground-truth table of your own model (``rcmdp ground-truth --model``).

    The steps of :func:`ground_truth_table` on ``model`` (discounted, with a horizon T).
    By default the model is judged on itself: the set of kind ``spec.set.kind`` is built
    around its own kernel (radius :data:`~rcmdp_exact.names.USER_RADIUS` on its own next
    states; ``radius=`` and ``support=`` change them) and the nominal model is the model.
    With ``estimation=N`` (or a spec whose set has no radius) the set is estimated from
    N episodes of the uniform random policy (the paper's phase 1); the saved set
    ``spec.set.saved`` (``uset=``) is used as it is (its nominal kernel gives the
    nominal model).  The tests are the model itself and
    ``perturbations`` (:class:`~rcmdp_exact.domains.Setting` objects, or (name, group,
    model) triples: the same problem with other transitions, see :mod:`.user`), as suite
    ``"model"``.  Keyword options replace fields of the spec as in
    :func:`ground_truth_table` (``uset=`` gives a saved set); ``client``: a
    ``distributed.Client`` for the bracket's branch and bound.

    Returns
    -------
    Result
        As :func:`ground_truth_table`, with one domain named ``name``.
    """
    from ..core.model import TabularCMDP, check_model
    from ..domains import Setting
    from .user import check_perturbation

    check_type(model, "model", TabularCMDP, "load one with TabularCMDP.load(path)")
    check_model(model)
    check_int(model.horizon, "model.horizon", 1,
              hint="; the test metric takes T steps: give the model a horizon "
                   "(model.replace(horizon=T))")
    given = {k for k, v in options.items() if v is not None}
    defaults = {"estimation": USER_ESTIMATION_EPISODES}
    if spec is None and not given & {"estimation", "uset"}:
        defaults["set"] = SetSpec(radius=USER_RADIUS)  # judged on itself
    spec = _spec(spec, options, where="model_ground_truth", **defaults)
    if isinstance(spec.estimation, str):
        check_int(spec.estimation, "estimation (the number of episodes of your model)", 1)
    if spec.set.saved is not None:
        from ..uncertainty import check_set

        check_set(spec.set.saved, model)
    check_client(client)
    settings = [Setting(USER_TEST, model, USER_TEST)]
    for p in perturbations:
        st = p if isinstance(p, Setting) else Setting(p[0], p[2], p[1])
        check_perturbation(model, st.model, st.label)
        settings.append(Setting(st.label, st.model.replace(horizon=model.horizon), st.group))
    t0 = time.perf_counter()
    with tqdm(total=4, desc="ground truth", disable=not progress_default(progress)) as bar:
        est = _estimation(model, spec, spec.estimation, "episodes")
        dom = _domain_optima(model, est, spec, bar, model.name or "your model", client)
        dom.rows = _test_rows(name, {USER_TEST: settings}, dom.policies)
        dom.summary = _summarise(dom.rows)
        dom.name = name
        bar.update(1)
    options = spec.options(model.gamma)
    for key in ("n_draws", "offset_on"):  # the paper's tests only
        options.pop(key)
    return Result(domains={name: dom}, spec=spec, options=options,
                  runtime=time.perf_counter() - t0)


# ----------------------------------------------------------------------- output
def _pm(mean: float, std: float, n: int, nd: int = 2) -> str:
    return f"{mean:10.{nd}f}" if n == 1 else f"{mean:10.{nd}f} ±{std:7.{nd}f}"


def _decimals(entries) -> int:
    """Decimals by the scale of the means (2 for the paper's domains' tens and hundreds,
    4 for values in [0, 1]: :func:`rcmdp_exact.protocol.reproduction_report.decimals`, at least
    2)."""
    from .reproduction_report import decimals

    return max(2, decimals([e[f"{m}_mean"] for e in entries
                            for m in ("value", "cost", "overshoot", "penalised_return")]))


def _short(group: str) -> str:
    return (group.replace("p_success=", "p=").replace("mu=S/", "mu/")
            .replace(", sigma=S/", ",s/"))


def _format_optima(name: str, dom) -> list[str]:
    e = dom.estimation
    if e.get("radius") is not None:
        where = "judged on the model itself: no estimation, the set is built around it"
    elif e["alpha_range"] is None:
        where = f"the saved {e['set_type']} of --set-file and its nominal kernel"
    else:
        where = (f"nominal model from {e['episodes']} episodes of the uniform policy, seed "
                 f"{e['seed']}, delta {e['delta']}, L1 alpha in [{e['alpha_range'][0]:.3f}, "
                 f"{e['alpha_range'][1]:.3f}]")
    kind = e.get("set", "l1")
    from .estimation import set_note

    note = set_note(kind)
    if e.get("radius") is not None:
        note = f"around the model itself, radius {e['radius']:g}"
    lines = [f"== {name}: {dom.title} ({where}) ==",
             f"uncertainty set: {kind} ({e.get('set_type', 'L1Ball')}: {note}); support: "
             f"{e.get('support', 'not recorded')}",
             f"discounted optima (gamma {dom.gamma:g}, from the start state):"]
    for key in ("nominal_cmdp", "true_cmdp"):
        o = dom.optima[key]
        lines.append(f"  {key:<16} V = {o['value']:12.6f}  C = {np.round(o['costs'], 6).tolist()}"
                     f"  lam = {np.round(o['lam'], 6).tolist()}  [{o['status']}]")
    b = dom.bracket
    gap = gap_text(b["lower"], b["upper"], b["value_range"]) if "value_range" in b else \
        f"gap {b['gap']:.3g}"
    lines.append(f"  {'rcmdp bracket':<16} [{b['lower']:.6f}, {b['upper']:.6f}] {gap}, "
                 f"{'closed' if b.get('closed') else 'NOT closed'}, over "
                 f"{b.get('policy_class', POLICY_CLASS)} policies "
                 f"(lower: {b['lower_method']}, upper: {b['upper_method']}, "
                 f"{b['boxes']} boxes), lam = {np.round(b['lam'], 6).tolist()} "
                 f"[{b['status']}]")
    if b["status"] != "bracket" or not b.get("reproducible", True):
        lines.append(f"  {'':<16} {b['message']}")
        if b["status"] == "infeasible":
            lines.append(f"  {'':<16} least worst-case costs "
                         f"{np.round(np.atleast_1d(b['min_robust_costs']), 6).tolist()} "
                         f"against the budgets {np.round(np.atleast_1d(dom.budget), 6).tolist()}")
    for v, r in dom.variants.items():
        lines.append(f"  {'rcpg_' + v:<16} V+ = {r['value']:12.6f}  C+ = "
                     f"{np.round(r['costs'], 6).tolist()} at lam = "
                     f"{np.round(r['lam'], 6).tolist()}; robust V = "
                     f"{r['robust_value']:.6f}, worst C = "
                     f"{np.round(r['robust_costs'], 6).tolist()}"
                     + ("" if r["status"] == "ok" else f" [{r['status']}]"))
    o = dom.optima["true_cmdp_T"]
    lines.append(f"  {'true_cmdp_T':<16} T-step V = {o['value']:.6f}  C = "
                 f"{np.round(o['costs'], 6).tolist()} (budget "
                 f"{np.round(o['budget'], 4).tolist()}) [{o['status']}]")
    return lines


def _format_groups(dom, suite: str, allrows: list, n: int, nd: int = 2) -> list[str]:
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
        cells = [_pm(e["penalised_return_mean"], e["penalised_return_std"], e["n"], nd)
                 for e in (by[(s["policy"], s["mode"], g)] for g in groups)]
        lines.append(f"  {s['policy']:<16} {s['mode']:<10} "
                     + "".join(f"{c:>{width}}" for c in cells))
    return lines


def _format_suite(dom, suite: str) -> list[str]:
    allrows = [s for s in dom.summary if s["suite"] == suite and s["group"] == "all"]
    n = allrows[0]["n"]
    nd = _decimals(allrows)
    lines = ["", f"test {suite}: {n} settings, T = {dom.horizon}, undiscounted; mean ± std "
             f"over the settings",
             f"  {'policy':<16} {'mode':<10} {'value':>18} {'cost':>18} {'overshoot':>18} "
             f"{'R_pen':>18}"]
    for s in allrows:
        lines.append(f"  {s['policy']:<16} {s['mode']:<10} "
                     + "".join(f"{_pm(s[f'{m}_mean'], s[f'{m}_std'], n, nd):>18} " for m in
                               ("value", "cost", "overshoot", "penalised_return")).rstrip())
    return lines + _format_groups(dom, suite, allrows, n, nd)


def format_ground_truth(table: Result) -> str:
    """The table as text: optima per domain, then per suite the metrics of every policy."""
    lines = []
    for name, dom in table.domains.items():
        lines += _format_optima(name, dom)
        for suite in sorted({s["suite"] for s in dom.summary}, key=str):
            lines += _format_suite(dom, suite)
        lines.append("")
    present = {p for dom in table.domains.values() for p in dom.policies}
    lines.append("policies: " + "; ".join(f"{k} = {v}" for k, v in _POLICY_LABELS.items()
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
           "policies": _POLICY_LABELS,
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
