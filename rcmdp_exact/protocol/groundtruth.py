r"""Exact references for Table 1: test settings, exact test metrics, optima and bounds.

* :func:`_training_model`, :func:`suite_settings`: the true data model of a domain and the
  settings of its tests (cached per process; both are pure functions of their fields).
* :func:`exact_test`: every policy on every setting of a test by one batched backward
  induction (:func:`rcmdp_exact.core.evaluation.evaluate_finite_horizon_batch`).
* :func:`pooled_bound`: the largest penalised return any agent can reach on a test as
  Table 1 aggregates it, even one that knows each setting's dynamics and may use
  time-dependent policies.  With :math:`N` settings, undiscounted T-step values
  :math:`V_n` and costs :math:`C_n`, rescaled budget :math:`d'` and weight
  :math:`w = 500`, the table's metric of per-setting policies :math:`\pi_n` is
  :math:`\bar V - w \max(0, \bar C - d')` (bars: means over the settings).  Its maximum
  is a linear programme over the occupancies of all settings; by LP duality
  (:math:`w\max(0, x) = \max_{0 \le \lambda \le w} \lambda x`) it equals

  .. math::

      \min_{0 \le \lambda \le w}\; \varphi(\lambda), \qquad
      \varphi(\lambda) = \frac1N \sum_n \max_{\pi} \bigl[V_n(\pi) - \lambda C_n(\pi)\bigr]
      + \lambda d',

  where each inner maximum is a T-step backward induction with reward
  :math:`r - \lambda c`.  :math:`\varphi` is convex and piecewise linear with slope
  :math:`d' - \bar C(\pi_\lambda)`; bisection on the sign of the slope finds its minimum,
  every :math:`\varphi(\lambda)` is an upper bound (weak duality) and the two tangents at
  the ends of the final interval give a lower bound, so the result comes with a
  certified gap.
* :func:`run_ground_truth`: one :class:`~rcmdp_exact.protocol.spec.GroundTruthSpec`
  (its result is a JSON-able dict that the store keeps).
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from ..core.mdp import backward_induction, greedy_policy
from ..names import USER_DOMAIN, USER_TEST
from .spec import canonical_json, estimation_seed

__all__ = [
    "PENALTY",
    "costs_of",
    "estimated",
    "run_ground_truth",
    "suite_settings",
]

#: The weight of the overshoot in the penalised return (the paper's lambda-bar).
PENALTY = 500.0
#: Tests of each domain, in Table 1 order.
TESTS_OF_DOMAIN = {"inventory": ("inventory",), "nav1": ("1A", "1B"), "nav2": ("2A", "2B"),
                   USER_DOMAIN: (USER_TEST,)}


def _training_model(domain: str, cost_layout: str = "reference", revenue: str = "economic",
                   demand: str = "reference"):
    """The true data model P_data of a domain with its variants (gamma 0.99)."""
    from ..domains import inventory, safe_navigation_1, safe_navigation_2

    if domain == "inventory":
        return inventory(revenue=revenue, demand=demand)
    if domain == "nav1":
        return safe_navigation_1(cost_layout=cost_layout)
    return safe_navigation_2()


def _training_model_of(fields: dict):
    """The true model of estimation or test ``fields``: a paper domain with its variants,
    or your own model (by its content hash, with the given horizon)."""
    if fields["domain"] == USER_DOMAIN:
        from .user import model_of

        return model_of(fields["model"], int(fields.get("horizon", 0)))
    return _training_model(fields["domain"], fields.get("cost_layout", "reference"),
                          fields.get("revenue", "economic"), fields.get("demand", "reference"))


@functools.lru_cache(maxsize=4)
def estimated(fields_json: str):
    """Phase 1 of the estimation fields ``fields_json`` (cached per process: a pure
    function of its fields): ``Result(true, nominal, uset, n_episodes, alpha_range)``.

    The paper's domains and your own model with ``--estimate`` are estimated by
    :func:`.estimation.estimate_set` with the kind of set of the fields (the L1 ball by
    default); with a ``set_file`` (your own model) the saved set replaces the
    estimation; with a ``radius`` (your own model, the default) the set is built around
    the model itself (:func:`.estimation.set_around`) and the nominal model is the model.
    """
    import json

    from .._result import Result
    from ..domains import ESTIMATION_EPISODES
    from .estimation import estimate_set

    f = json.loads(fields_json)
    true = _training_model_of(f)
    if "radius" in f:  # your model judged on itself: the set around its own kernel
        from .estimation import set_around

        uset = set_around(f.get("set", "l1"), true, f["radius"], f["support"])
        return Result(true=true, nominal=true, uset=uset, n_episodes=0, alpha_range=None)
    if "set_file" in f:
        from .user import set_of

        uset = set_of(f["set_file"])
        return Result(true=true, nominal=true.with_transitions(uset.nominal), uset=uset,
                      n_episodes=0, alpha_range=None)
    n_est = f["episodes"] if f["domain"] == USER_DOMAIN else \
        ESTIMATION_EPISODES[f["domain"]][f["estimation"]]
    est = estimate_set(true, n_est, estimation_seed(f), f["delta"], f.get("set", "l1"),
                       progress=False)
    return Result(true=true, nominal=est.nominal, uset=est.uset, n_episodes=int(n_est),
                  alpha_range=[float(a) for a in est.alpha_range])


@functools.lru_cache(maxsize=8)
def _settings_cached(text: str):
    import json

    from ..domains import perturbations

    f = json.loads(text)
    if f["domain"] == USER_DOMAIN:
        from .user import user_settings

        return user_settings(f)
    out = {}
    for suite in TESTS_OF_DOMAIN[f["domain"]]:
        kw = {}
        if suite in ("1A", "1B"):
            kw["cost_layout"] = f["cost_layout"]
        if suite == "1B":
            kw["offset_on"] = f["offset_on"]
        if suite in ("1B", "2B"):
            kw.update(seed=f["test_seed"], n_draws=f["n_draws"])
        if suite == "inventory":
            kw.update(revenue=f["revenue"], demand=f["demand"])
        out[suite] = tuple(perturbations(suite, progress=False, **kw))
    return out


def suite_settings(settings_fields: dict) -> dict:
    """``{suite: tuple of Setting}`` of the domain's tests (cached per process)."""
    return _settings_cached(canonical_json(settings_fields))


def setting_param(suite: str, setting, index: int) -> float:
    """The test parameter of a setting: p_success (A), N (B) or the index (inventory)."""
    if suite in ("1A", "2A"):
        return float(setting.info["p_success"])
    if suite in ("1B", "2B"):
        return float(setting.info["N"])
    return float(index)


def _kernels(settings) -> np.ndarray:
    return np.stack([np.asarray(s.model.P) for s in settings])


def _same_rewards(settings) -> bool:
    m = settings[0].model
    return all(np.array_equal(s.model.R, m.R) and np.array_equal(s.model.C, m.C)
               and np.array_equal(s.model.terminal, m.terminal)
               and np.array_equal(s.model.p0, m.p0) for s in settings[1:])


def exact_test(settings, policies, weight: float = PENALTY) -> dict:
    """Exact undiscounted T-step metrics of M policies (M, S, A) on every setting.

    Returns ``value`` (N, M), ``cost`` (N, M) (summed over constraints), ``budget``
    (summed), ``overshoot`` (N, M) and ``penalised`` (N, M) = V - w max(0, C - d') with
    the penalty weight ``weight`` (default 500, the paper's).
    Settings that share rewards, costs, p0 and terminal states (all of the paper's
    suites) are evaluated in one batched backward induction; otherwise one by one.
    """
    from ..core.evaluation import evaluate_finite_horizon_batch

    pol = np.asarray(policies, dtype=np.float64)
    if _same_rewards(settings):
        ev = evaluate_finite_horizon_batch(settings[0].model, pol, _kernels(settings))
        value, cost, over = ev.value, costs_of(ev), ev.overshoot
        budget = ev.budget
    else:  # pragma: no cover - the paper's suites share rewards
        evs = [evaluate_finite_horizon_batch(s.model, pol) for s in settings]
        value = np.concatenate([e.value for e in evs])
        cost = np.concatenate([costs_of(e) for e in evs])
        over = np.concatenate([e.overshoot for e in evs])
        budget = evs[0].budget
    pen = value - float(weight) * np.maximum(over, 0.0).sum(-1)
    return {"value": value, "cost": cost.sum(-1), "budget": float(np.sum(budget)),
            "overshoot": over.sum(-1), "penalised": pen}


def costs_of(result) -> np.ndarray:
    """The cost vector of an evaluation result (field ``costs``; ``cost`` before it was
    renamed)."""
    return result["costs"] if "costs" in result else result["cost"]


# --------------------------------------------------------------------------- exact oracles
def _suite_arrays(settings):
    """Kernels (N, S, A, S), expected reward and cost (N, S, A) (zero in terminal
    states), p0, horizon and rescaled budget of a suite (one constraint).

    A model without constraints (K = 0, a plain MDP) has cost 0 and budget 0: every
    policy meets it, so the bisection's multiplier stays 0 and the optima are those of
    the reward alone (the protocol's metric is then the value itself)."""
    from ..core.evaluation import rescaled_budget

    m = settings[0].model
    P = _kernels(settings)
    T = int(m.horizon)
    r = np.einsum("nsat,sat->nsa", P, np.asarray(m.R))
    if m.n_constraints:
        c = np.einsum("nsat,sat->nsa", P, np.asarray(m.C)[..., 0])
        d = float(rescaled_budget(m.d, m.gamma, T)[0])
    else:
        c, d = np.zeros_like(r), 0.0
    r[:, m.terminal] = 0.0
    c[:, m.terminal] = 0.0
    return P, r, c, np.asarray(m.p0), T, d


def _lagrangian_dp(P, r, c, p0, lam, T):
    """Backward induction of max_pi V - lam C on N kernels at once.

    P (N, S, A, S), r and c (N, S, A) expected one-step reward and cost, ``lam`` a
    number or one multiplier per kernel (N,).  Returns (V (N,), C (N,)) of the optimal
    deterministic time-dependent policy (ties to the lowest action).
    """
    N = P.shape[0]
    lam = np.broadcast_to(np.asarray(lam, dtype=np.float64), (N,))[:, None]
    res = backward_induction(P, r, T, c=c[..., None], lam=lam)
    out = np.einsum("s,nsk->nk", p0, np.concatenate([res.value[..., None], res.costs],
                                                    axis=-1))
    return out[:, 0], out[:, 1]


def _dual_bisection(evaluate, n: int, d: float, weight: float, n_bisect: int) -> dict:
    r"""Minimise n convex piecewise-linear duals phi_i(lam) = V_i - lam (C_i - d) on
    [0, weight] at once, by bisection on the sign of their slopes d - C_i.

    ``evaluate(lam, idx)`` returns (V, C) of the Lagrangian-optimal policies of the
    problems ``idx`` at the multipliers ``lam`` (same length).
    Returns per problem: ``bound`` (the smallest phi met: an upper bound of the primal
    by weak duality), ``lower`` (where the tangents at the ends of the final interval
    meet: a lower bound), ``lam``, and ``value``, ``cost`` of an optimal policy (the
    mixture of the two end policies that meets the budget, or the end policy).
    """
    lo = np.zeros(n)
    hi = np.full(n, float(weight))
    everything = np.arange(n)
    v_lo, c_lo = evaluate(lo, everything)
    v_hi, c_hi = evaluate(hi, everything)
    phi = lambda v, c, lam: v - lam * (c - d)  # noqa: E731
    # lam = 0 already feasible: the unconstrained optimum; lam = weight still over:
    # the penalty is paid (the slope stays negative on the whole interval)
    free = c_lo <= d
    paid = ~free & (c_hi > d)
    active = ~free & ~paid
    for _ in range(n_bisect):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        mid = 0.5 * (lo[idx] + hi[idx])
        v_m, c_m = evaluate(mid, idx)
        over = c_m > d
        up, dn = idx[over], idx[~over]
        lo[up], v_lo[up], c_lo[up] = mid[over], v_m[over], c_m[over]
        hi[dn], v_hi[dn], c_hi[dn] = mid[~over], v_m[~over], c_m[~over]
        half = 0.5 * (lo + hi)
        active &= (half != lo) & (half != hi)
    f_lo, f_hi = phi(v_lo, c_lo, lo), phi(v_hi, c_hi, hi)
    s_lo, s_hi = d - c_lo, d - c_hi
    bound = np.minimum(f_lo, f_hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (f_hi - f_lo + s_lo * lo - s_hi * hi) / (s_lo - s_hi)
    x = np.clip(np.where(np.isfinite(x), x, lo), lo, hi)
    lower = np.minimum(bound, np.maximum(f_lo + s_lo * (x - lo), f_hi + s_hi * (x - hi)))
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.clip((d - c_hi) / (c_lo - c_hi), 0.0, 1.0)  # weight of the lo policy
    theta = np.where(np.isfinite(theta), theta, 0.0)
    value = np.where(free, v_lo, np.where(paid, v_hi, v_hi + theta * (v_lo - v_hi)))
    cost = np.where(free, c_lo, np.where(paid, c_hi, c_hi + theta * (c_lo - c_hi)))
    lower = np.where(free, f_lo, np.where(paid, f_hi, lower))
    bound = np.where(free, f_lo, np.where(paid, f_hi, bound))
    lam = np.where(free, 0.0, np.where(paid, float(weight), 0.5 * (lo + hi)))
    return {"bound": bound, "lower": lower, "lam": lam, "value": value, "cost": cost}


def setting_optima(settings, weight: float = PENALTY, n_bisect: int = 64) -> dict:
    r"""Per setting, the best penalised return of an agent that knows its dynamics.

    :math:`\max_\pi V_n(\pi) - w \max(0, C_n(\pi) - d')` over time-dependent policies,
    by LP duality :math:`\min_{0 \le \lambda \le w} \max_\pi V_n - \lambda (C_n - d')`.
    When the setting's T-step CMDP is feasible with a multiplier at most w (every
    setting of the paper's tests except the hardest draws of 2B), this is its T-step
    CMDP optimum, the value :func:`rcmdp_exact.solve_cmdp_finite_horizon` returns.

    Returns arrays (N,): ``bound`` (upper bound), ``lower`` (certified lower bound),
    ``lam``, and ``value``, ``cost`` of an optimal (possibly mixed) policy, and the
    ``budget`` d'.
    """
    P, r, c, p0, T, d = _suite_arrays(settings)
    res = _dual_bisection(
        lambda lam, idx: _lagrangian_dp(P[idx], r[idx], c[idx], p0, lam, T),
        len(settings), d, weight, n_bisect)
    res["budget"] = d
    return res


def pooled_bound(settings, weight: float = PENALTY, n_bisect: int = 64) -> dict:
    r"""The exact bound of the pooled penalised return of a test (module notes).

    Returns ``bound`` (an upper bound: the smallest :math:`\varphi(\lambda)` met),
    ``lower`` (the tangents' lower bound; ``bound - lower`` is the certified gap),
    ``lam``, ``value`` and ``cost`` (means over the settings for an optimal set of
    policies) and ``budget`` d'.  One constraint (the paper's domains).
    """
    P, r, c, p0, T, d = _suite_arrays(settings)

    def evaluate(lam, idx):
        v, cc = _lagrangian_dp(P, r, c, p0, lam[0], T)
        return np.array([v.mean()]), np.array([cc.mean()])

    res = _dual_bisection(evaluate, 1, d, weight, n_bisect)
    out = {k: float(v[0]) for k, v in res.items()}
    out["budget"] = d
    return out


# --------------------------------------------------------------------------- jobs
def _num(x):
    """A JSON-safe float (None for inf / nan)."""
    x = float(x)
    return x if math.isfinite(x) else None


def _setting_rows(suite, settings, metrics, policy_names, modes):
    rows = []
    for n, st in enumerate(settings):
        for m, (pname, mode) in enumerate(zip(policy_names, modes, strict=True)):
            rows.append({
                "suite": suite, "group": st.group, "setting": st.label,
                "param": setting_param(suite, st, n), "policy": pname, "mode": mode,
                "value": float(metrics["value"][n, m]), "cost": float(metrics["cost"][n, m]),
                "budget": metrics["budget"], "overshoot": float(metrics["overshoot"][n, m]),
                "penalised": float(metrics["penalised"][n, m]),
            })
    return rows


def _penalty_of(test_fields: dict) -> float:
    """The penalty weight of test fields (500, the paper's, unless they name another)."""
    return float(test_fields.get("penalty", PENALTY))


def _suite(spec) -> dict:
    settings = suite_settings(dict(spec.test))[spec.suite]
    weight = _penalty_of(dict(spec.test))
    opt = setting_optima(settings, weight)
    rows = []
    for n, st in enumerate(settings):
        rows.append({"suite": spec.suite, "group": st.group, "setting": st.label,
                     "param": setting_param(spec.suite, st, n),
                     "value": float(opt["value"][n]), "cost": float(opt["cost"][n]),
                     "budget": opt["budget"], "overshoot": float(opt["cost"][n]) - opt["budget"],
                     "optimum": float(opt["bound"][n]), "optimum_lower": float(opt["lower"][n]),
                     "lam": float(opt["lam"][n])})
    return {"bound": pooled_bound(settings, weight), "rows": rows}


def _bracket(spec) -> dict:
    from ..ground_truth import rcmdp_bracket

    est = estimated(canonical_json(dict(spec.estimation)))
    br = rcmdp_bracket(est.nominal, est.uset, progress=False, **dict(spec.bracket))
    lower_pol = np.asarray(br.policies["lower"], dtype=np.float64)
    pols = np.stack([lower_pol, greedy_policy(lower_pol)])
    rows = []
    weight = _penalty_of(dict(spec.test))
    for suite, settings in suite_settings(dict(spec.test)).items():
        met = exact_test(settings, pols, weight)
        rows += _setting_rows(suite, settings, met, ["rcmdp_lower"] * 2,
                              ["stochastic", "greedy"])
    return {"status": str(br.status), "lower": _num(br.lower), "upper": _num(br.upper),
            "message": str(br.message), "reproducible": bool(br.reproducible),
            "gamma": float(est.nominal.gamma),
            "budget": [_num(x) for x in np.atleast_1d(est.nominal.d)],
            "gap": _num(br.gap), "multiplier": [_num(x) for x in np.atleast_1d(br.lam)],
            "lower_cost": [_num(x) for x in np.atleast_1d(br.lower_costs)],
            "min_robust_cost": [_num(x) for x in np.atleast_1d(br.min_robust_costs)],
            "alpha_range": est.alpha_range, "n_episodes": int(est.n_episodes),
            "policy": "safest" if br.status == "infeasible" else "lower", "rows": rows}


def _training(spec) -> dict:
    from ..domains import Setting
    from ..ground_truth import solve_cmdp

    true = _training_model_of(dict(spec.test))
    opt = setting_optima([Setting("training", true, "training")])
    lp = solve_cmdp(true)
    return {"T_value": float(opt["value"][0]), "T_cost": float(opt["cost"][0]),
            "T_budget": float(opt["budget"]), "T_optimum": float(opt["bound"][0]),
            "value": float(lp.value), "cost": float(np.sum(lp.costs)),
            "d": float(np.sum(true.d)), "status": str(lp.status),
            "multiplier": float(np.sum(lp.lam))}


_JOBS = {"suite": _suite, "bracket": _bracket, "training": _training}


def run_ground_truth(spec) -> dict:
    """Compute one ground-truth job; a JSON-able dict with its ``seconds``."""
    from .user import ensure_sources

    t0 = time.perf_counter()
    ensure_sources(spec.sources)
    out = _JOBS[spec.kind](spec)
    out["seconds"] = time.perf_counter() - t0
    return out
