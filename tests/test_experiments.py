"""Tests of rcmdp_exact.protocol: specs, exact references, one run, store, Table 1.

The learners are replaced by the deterministic stand-in of
``test_experiments_standin.py`` wherever they are not what is tested.
"""

import hashlib
import json
import math
import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_experiments_standin import standin_train

from rcmdp_exact import (
    InputError,
    OptionError,
    TabularCMDP,
    domains,
    evaluate_finite_horizon,
    rescaled_budget,
    solve_cmdp_finite_horizon,
)
from rcmdp_exact.core.evaluation import evaluate_finite_horizon_batch
from rcmdp_exact.protocol import RunSpec, Store, run_one, table1
from rcmdp_exact.protocol.groundtruth import (
    costs_of,
    exact_test,
    pooled_bound,
    setting_optima,
    suite_settings,
)
from rcmdp_exact.protocol.run import curve_rows, sampled_test
from rcmdp_exact.protocol.spec import ALGORITHMS, GroundTruthSpec, phase_seed
from rcmdp_exact.protocol.table1 import PAPER_TABLE1, table1_csv

# --------------------------------------------------------------------------- specs


def test_spec_key_is_canonical_and_covers_every_field():
    a = RunSpec("nav1", "cpg", 3, episodes=10)
    b = RunSpec(algorithm="cpg", seed=3, domain="nav1", episodes=10)
    assert a.key == b.key and len(a.key) == 64
    changed = [RunSpec("nav1", "cpg", 3, episodes=11), RunSpec("nav1", "pg", 3, episodes=10),
               RunSpec("nav1", "cpg", 4, episodes=10), RunSpec("nav2", "cpg", 3, episodes=10),
               RunSpec("nav1", "cpg", 3, episodes=10, offset_on="success"),
               RunSpec("nav1", "cpg", 3, episodes=10, extra=(("entropy", 0.0),)),
               RunSpec("nav1", "cpg", 3, episodes=10, trainer="other")]
    assert len({s.key for s in changed} | {a.key}) == len(changed) + 1
    # the JSON round trip gives the same spec and key
    assert RunSpec.from_fields(json.loads(json.dumps(a.fields()))) == a


def test_phase_seeds_depend_on_the_spec_only():
    s = RunSpec("inventory", "cpg", 0)
    seeds = s.seeds()
    assert len(set(seeds.values())) == 3
    assert all(0 <= v < 2**63 for v in seeds.values())
    # estimation is shared by the six algorithms of one seed index, not across seeds
    other = RunSpec("inventory", "adversarial-rcpg", 0).seeds()
    assert other["estimation"] == seeds["estimation"]
    assert other["training"] != seeds["training"]
    assert RunSpec("inventory", "cpg", 1).seeds()["estimation"] != seeds["estimation"]
    # the documented derivation: SeedSequence(SHA-256 of the canonical JSON), spawned
    # with the first 4 bytes of the SHA-256 of the phase name, one 63-bit integer
    text = json.dumps(s.fields(), sort_keys=True, separators=(",", ":"))
    entropy = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    assert entropy == int(s.key, 16)
    tag = int.from_bytes(hashlib.sha256(b"training").digest()[:4], "little")
    state = np.random.SeedSequence(entropy, spawn_key=(tag,)).generate_state(1, np.uint64)
    assert seeds["training"] == int(state[0]) >> 1
    assert phase_seed(s.fields(), "training") == seeds["training"]


def test_spec_errors_name_the_field_and_value():
    with pytest.raises(OptionError, match=r"algorithm.*'ppo'"):
        RunSpec("nav1", "ppo", 0)
    with pytest.raises(OptionError, match=r"domain.*'nav3'"):
        RunSpec("nav3", "pg", 0)
    with pytest.raises(InputError, match=r"episodes.*0"):
        RunSpec("nav1", "pg", 0, episodes=0)
    with pytest.raises(OptionError, match=r"offset_on.*'middle'"):
        RunSpec("nav1", "pg", 0, offset_on="middle")
    with pytest.raises(InputError, match=r"seed.*-1"):
        RunSpec("nav1", "pg", -1)
    with pytest.raises(OptionError, match=r"ground-truth kind.*'x'"):
        GroundTruthSpec("x", "nav1")


def test_algorithm_names_match_the_learners():
    learners = pytest.importorskip("rcmdp_exact.learners")
    assert set(ALGORITHMS) == set(learners.ALGORITHMS)


# --------------------------------------------------------------------------- exact references
def _random_settings(seed, S, A, N, T):
    """N models with the same rewards and costs and different kernels."""
    rng = np.random.default_rng(seed)
    R = rng.uniform(-1, 1, (S, A, S))
    C = rng.uniform(0, 1, (S, A, S, 1))
    models = []
    for _ in range(N):
        P = rng.dirichlet(np.ones(S), size=(S, A))
        models.append(TabularCMDP(P, R, C, d=[0.0], gamma=0.99, p0=0, horizon=T))
    # a budget between the cheapest and the dearest behaviour: the constraint may bind
    lo = min(float(costs_of(evaluate_finite_horizon(m, np.eye(A)[np.argmin(
        np.einsum("sat,sat->sa", m.P, C[..., 0]), axis=1)]))[0]) for m in models)
    frac = rng.uniform(0.0, 1.2)
    d = (lo + frac * T * 0.5) * sum(0.99**i for i in range(T)) / T
    return [domains.Setting(f"#{n}", TabularCMDP(m.P, R, C, d=[d], gamma=0.99, p0=0,
                                                 horizon=T), "g")
            for n, m in enumerate(models)]


def _pooled_lp(settings, weight=500.0):
    """The pooled penalised return maximised over time-dependent occupancies (cvxpy LP)."""
    import cvxpy as cp

    m0 = settings[0].model
    S, A, T = m0.n_states, m0.n_actions, m0.horizon
    d = float(rescaled_budget(m0.d, m0.gamma, T)[0])
    N = len(settings)
    z = cp.Variable(nonneg=True)
    V, C, cons = 0, 0, []
    for st_ in settings:
        P = np.asarray(st_.model.P)
        r = np.einsum("sat,sat->sa", P, np.asarray(st_.model.R))
        c = np.einsum("sat,sat->sa", P, np.asarray(st_.model.C)[..., 0])
        xs = [cp.Variable((S, A), nonneg=True) for _ in range(T)]
        cons.append(cp.sum(xs[0], axis=1) == np.asarray(st_.model.p0))
        for t in range(T - 1):
            inflow = sum(P[:, a, :].T @ xs[t][:, a] for a in range(A))
            cons.append(cp.sum(xs[t + 1], axis=1) == inflow)
        V = V + sum(cp.sum(cp.multiply(r, x)) for x in xs) / N
        C = C + sum(cp.sum(cp.multiply(c, x)) for x in xs) / N
    cons.append(z >= C - d)
    prob = cp.Problem(cp.Maximize(V - weight * z), cons)
    prob.solve(solver="HIGHS")
    return prob.value


@given(seed=st.integers(0, 10**6), S=st.integers(2, 4), A=st.integers(2, 3),
       N=st.integers(1, 3), T=st.integers(1, 6))
def test_pooled_bound_is_the_pooled_lp_and_bounds_every_policy(seed, S, A, N, T):
    settings = _random_settings(seed, S, A, N, T)
    b = pooled_bound(settings)
    # certified: the tangents' lower bound meets the upper bound
    assert b["lower"] <= b["bound"] + 1e-12
    assert b["bound"] - b["lower"] <= 1e-7 * max(1.0, abs(b["bound"]))
    # a second algorithm: the LP over all settings' occupancies
    assert b["bound"] == pytest.approx(_pooled_lp(settings), abs=1e-6, rel=1e-7)
    # no set of stationary policies scores above it (Table 1's aggregation)
    rng = np.random.default_rng(seed)
    pols = rng.dirichlet(np.ones(A), size=(5, S))
    ev = evaluate_finite_horizon_batch(settings[0].model, pols, np.stack(
        [s.model.P for s in settings]))
    pooled = ev.value.mean(0) - 500 * np.maximum(costs_of(ev)[..., 0].mean(0)
                                                 - ev.budget[0], 0)
    assert np.all(pooled <= b["bound"] + 1e-9)
    # per-setting optima: each is that setting's own bound; their mean is below the pool
    opt = setting_optima(settings)
    for n, s_ in enumerate(settings):
        assert opt["bound"][n] == pytest.approx(pooled_bound([s_])["bound"], abs=1e-9)
        pen = opt["value"][n] - 500 * max(0.0, opt["cost"][n] - opt["budget"])
        assert pen == pytest.approx(opt["bound"][n], abs=1e-7, rel=1e-9)
    assert opt["bound"].mean() <= b["bound"] + 1e-9


def test_setting_optima_equal_the_t_step_lp_on_paper_settings():
    inv = suite_settings({"phase": "test", "domain": "inventory", "revenue": "economic",
                         "demand": "reference"})["inventory"]
    nav = suite_settings({"phase": "test", "domain": "nav2", "n_draws": 1,
                         "test_seed": 0})["2A"]
    for sts in (inv[::4], nav[:1]):
        opt = setting_optima(list(sts))
        for n, s_ in enumerate(sts):
            lp = solve_cmdp_finite_horizon(s_.model)
            assert lp.status == "optimal"
            assert opt["bound"][n] == pytest.approx(lp.value, abs=1e-6)


def test_exact_test_equals_one_evaluation_per_setting():
    sts = suite_settings({"phase": "test", "domain": "nav1", "n_draws": 1, "test_seed": 0,
                         "offset_on": "failure", "cost_layout": "reference"})["1B"]
    rng = np.random.default_rng(0)
    pol = rng.dirichlet(np.ones(4), size=(2, 25))
    met = exact_test(sts, pol)
    for n, s_ in enumerate(sts):
        for m in range(2):
            ev = evaluate_finite_horizon(s_.model, pol[m])
            assert met["value"][n, m] == pytest.approx(ev.value, abs=1e-10)
            assert met["cost"][n, m] == pytest.approx(float(costs_of(ev)[0]), abs=1e-10)
            assert met["penalised"][n, m] == pytest.approx(ev.penalised_return, abs=1e-9)


def test_sampled_test_covers_the_exact_value():
    sts = suite_settings({"phase": "test", "domain": "nav1", "n_draws": 1, "test_seed": 0,
                         "offset_on": "failure", "cost_layout": "reference"})["1A"]
    pol = np.full((25, 4), 0.25)
    pol[:, 1] += 0.25
    pol[:, 2] += 0.25
    pol /= pol.sum(1, keepdims=True)
    exact = exact_test(sts, pol[None])
    smp = sampled_test(sts, pol, 400, seed=1)
    # 5 settings x 2 metrics: each within 4 standard errors (Bonferroni, < 1e-3 false alarm)
    for n in range(len(sts)):
        assert abs(smp["value"][n] - exact["value"][n, 0]) <= 4 * smp["value_se"][n]
        assert abs(smp["cost"][n] - exact["cost"][n, 0]) <= 4 * smp["cost_se"][n] + 1e-12
    again = sampled_test(sts, pol, 400, seed=1)
    assert np.array_equal(again["value"], smp["value"])


# --------------------------------------------------------------------------- one run
def _strip(result):
    out = json.loads(json.dumps(result))
    out["info"].pop("seconds")
    return out


def test_run_one_is_a_pure_function_of_its_spec():
    s = RunSpec("nav2", "rcpg-lagrangian", 1, episodes=3, n_draws=1, sampled_episodes=4,
                eval_every=2, trainer="standin")
    r1, r2 = run_one(s, standin_train), run_one(s, standin_train)
    assert _strip(r1) == _strip(r2)
    assert r1["key"] == s.key
    # every setting of both tests, in three modes
    n_settings = 5 + 5 * 1
    assert len(r1["tests"]) == 3 * n_settings
    assert {r["mode"] for r in r1["tests"]} == {"greedy", "stochastic", "sampled"}
    # the stochastic rows are the exact metrics of the run's own policy
    pol = np.array(r1["info"]["policy"])
    sts = suite_settings(s.settings_fields())["2A"]
    ev = evaluate_finite_horizon(sts[0].model, pol)
    row = next(r for r in r1["tests"] if r["setting"] == sts[0].label
               and r["mode"] == "stochastic")
    assert row["value"] == pytest.approx(ev.value, abs=1e-12)
    assert row["penalised"] == pytest.approx(ev.penalised_return, abs=1e-12)
    # another seed trains differently
    r3 = run_one(RunSpec("nav2", "rcpg-lagrangian", 2, episodes=3, n_draws=1,
                         sampled_episodes=4, eval_every=2, trainer="standin"), standin_train)
    assert r3["info"]["policy"] != r1["info"]["policy"]


def test_robust_runs_get_the_ball_and_the_others_do_not():
    seen = {}

    def spy(model, algorithm, *, uset=None, **kw):
        seen[algorithm] = uset
        return standin_train(model, algorithm, uset=uset, **kw)

    for a in ("cpg", "rcpg-value"):
        run_one(RunSpec("nav1", a, 0, episodes=1, n_draws=1, trainer="spy"), spy)
    assert seen["cpg"] is None and seen["rcpg-value"] is not None


def test_curve_rows_block_means_and_eval_points():
    rec = {"length": np.array([3, 4, 5, 6, 7]), "return": np.arange(5.0),
           "cost": np.arange(10.0).reshape(5, 2), "eval_episode": np.array([2, 4, 5]),
           "eval_true_greedy_value": np.array([1.0, 2.0, 3.0])}
    rows = curve_rows(rec, block=2)
    ret = [(r["episode"], r["value"]) for r in rows if r["name"] == "return"]
    assert ret == [(2, 0.5), (4, 2.5), (5, 4.0)]
    c1 = [r["value"] for r in rows if r["name"] == "cost[1]"]
    assert c1 == [2.0, 6.0, 9.0]
    ev = [(r["episode"], r["value"]) for r in rows if r["name"] == "eval_true_greedy_value"]
    assert ev == [(2, 1.0), (4, 2.0), (5, 3.0)]


# --------------------------------------------------------------------------- store
def _fake_result(domain, algorithm, seed, values, costs, *, suite=None, budget=1.0):
    spec = RunSpec(domain, algorithm, seed, episodes=7, n_draws=1, trainer="fake")
    suite = suite or {"inventory": "inventory", "nav1": "1A", "nav2": "2A"}[domain]
    tests = []
    for n, (v, c) in enumerate(zip(values, costs, strict=True)):
        for mode in ("greedy", "stochastic"):
            tests.append({"suite": suite, "group": f"g{n}", "setting": f"s{n}",
                          "param": float(n), "mode": mode, "value": v, "cost": c,
                          "budget": budget, "penalised": v - 500 * max(0.0, c - budget)})
    return {"key": spec.key, "spec": spec.fields(), "info": {"steps": 1},
            "tests": tests, "curves": [{"name": "return", "idx": 0, "episode": 7,
                                        "value": values[0]}]}


def test_store_writes_each_run_once_and_bit_for_bit(tmp_path):
    vals = [0.1 + 0.2, 1 / 3, 5e-324, -1e300]
    res = _fake_result("nav1", "pg", 0, vals, [0.5, 1.5, 0.0, 2.0])
    with Store(tmp_path / "s.sqlite") as store:
        assert store.add_run(res) is True
        assert store.add_run(res) is False
        c = store.counts()
        assert c["runs"] == 1 and c["tests"] == c["distinct_test_rows"] == 8
        got = [r["value"] for r in store.tests(res["key"]) if r["mode"] == "greedy"]
        assert sorted(got) == sorted(vals)
        assert store.keys() == {res["key"]}
        # a write that fails half-way leaves nothing behind
        bad = _fake_result("nav1", "pg", 1, [1.0], [1.0])
        del bad["tests"][1]["value"]
        with pytest.raises(KeyError):
            store.add_run(bad)
        assert bad["key"] not in store.keys()
        assert store.counts()["tests"] == 8
    con = sqlite3.connect(tmp_path / "s.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --------------------------------------------------------------------------- Table 1
def test_table1_aggregation_by_hand(tmp_path):
    # three seeds of PG on the 2A test, two settings each, budget 1.0
    data = {0: ([-10.0, -12.0], [0.5, 2.5]), 1: ([-9.0, -11.0], [0.2, 0.4]),
            2: ([-20.0, -8.0], [3.0, 0.0])}
    with Store(tmp_path / "t.sqlite") as store:
        for seed, (v, c) in data.items():
            store.add_run(_fake_result("nav2", "pg", seed, v, c))
        rows = table1(store, tests=("2A",), modes=("greedy",))
    assert len(rows) == 1
    r = rows[0]
    # per run: mean V, mean C over the settings, then the penalty
    pens = [np.mean(v) - 500 * max(0.0, np.mean(c) - 1.0) for v, c in data.values()]
    assert pens == [-11.0 - 500 * 0.5, -10.0, -14.0 - 500 * 0.5]
    mean = sum(pens) / 3
    assert r["mean"] == pytest.approx(mean, rel=1e-15)
    sd0 = math.sqrt(sum((p - mean) ** 2 for p in pens) / 3)
    assert r["spread"] == pytest.approx(sd0 / math.sqrt(3), rel=1e-12)
    sd1 = math.sqrt(sum((p - mean) ** 2 for p in pens) / 2)
    half = 4.302652729911275 * sd1 / math.sqrt(3)  # t(0.975, 2)
    assert r["ci95_low"] == pytest.approx(mean - half, rel=1e-9)
    assert r["ci95_high"] == pytest.approx(mean + half, rel=1e-9)
    pm, ps = PAPER_TABLE1["2A"]["pg"]
    assert (r["paper_mean"], r["paper_spread"]) == (pm, ps)
    assert r["paper_in_ci95"] is bool(mean - half <= pm <= mean + half)
    assert r["z_vs_paper"] == pytest.approx((mean - pm) / math.sqrt(r["spread"] ** 2
                                                                  + ps**2))
    per_setting = np.mean([np.mean([v_ - 500 * max(0.0, c_ - 1.0) for v_, c_ in zip(
        v, c, strict=True)]) for v, c in data.values()])
    assert r["per_setting_mean"] == pytest.approx(per_setting)
    assert r["feasible_runs"] == 1 and r["n_seeds"] == 3
    assert r["bound"] is None  # no ground truth in this store


def test_table1_csv_is_the_same_bytes_whatever_the_insertion_order(tmp_path):
    results = [_fake_result(d, a, s, [float(s) - 3.3, 1 / 7], [0.3 * s, 0.9])
               for d in ("inventory", "nav2") for a in ("pg", "cpg") for s in range(3)]
    texts = []
    for name, order in (("a", results), ("b", results[::-1])):
        with Store(tmp_path / f"{name}.sqlite") as store:
            for r in order:
                store.add_run(r)
            texts.append(table1_csv(table1(store)))
    assert texts[0] == texts[1]
    lines = texts[0].splitlines()
    assert lines[0].startswith("config,mode,test,algorithm,n_seeds")
    assert len(lines) == 1 + 2 * 2 * 2  # modes x tests x algorithms
    # full precision: repr of the float, read back exactly
    row = dict(zip(lines[0].split(","), lines[1].split(","), strict=True))
    with Store(tmp_path / "a.sqlite") as store:
        ref = table1(store)[0]
    assert float(row["mean"]) == ref["mean"] and row["mean"] == repr(ref["mean"])


def test_verdicts_are_computed_from_the_numbers():
    from rcmdp_exact.protocol.reproduction_report import verdict

    base = {"n_seeds": 20, "episodes": 5000, "n_settings": 5, "test": "1A",
            "paper_mean": -76.7, "paper_spread": 20.2, "bound": -10.0, "cost_mean": 7.0,
            "budget": 6.928, "value_mean": -50.0, "feasible_runs": 12, "spread": 10.0}
    inside = dict(base, mean=-70.0, ci95_low=-90.0, ci95_high=-50.0, paper_in_ci95=True,
                  z_vs_paper=0.3)
    assert verdict(inside)[0] == "agrees"
    degenerate = dict(base, mean=-100.0, spread=0.0, ci95_low=-100.0, ci95_high=-100.0,
                      paper_in_ci95=False, z_vs_paper=(-100.0 + 76.7) / 20.2)
    assert verdict(degenerate)[0] == "agrees (z = -1.2)"
    far = dict(base, mean=-300.0, ci95_low=-320.0, ci95_high=-280.0, paper_in_ci95=False,
               z_vs_paper=-10.0)
    short, why = verdict(far)
    assert short == "differs: ours lower (z = -10.0)"
    assert "12/20 runs meet the budget" in why and "penalty" in why
    assert "seeds" not in why and "settings" not in why  # the paper's protocol
    above = dict(far, paper_mean=5.0, test="1B", n_settings=10, n_seeds=20)
    why = verdict(above)[1]
    assert "exceeds the exact bound -10.0" in why
    assert "10 test settings (paper: 250)" in why


def test_two_seeds_or_a_wide_interval_are_inconclusive():
    """With 2 seeds the t interval has one degree of freedom: the verdict is
    "inconclusive" whatever the means (the issue's cell: an interval from -170,888 to
    146,635); from 3 seeds an interval wider than the magnitude compared is too."""
    from rcmdp_exact.protocol.reproduction_report import verdict

    base = {"n_seeds": 2, "episodes": 200, "n_settings": 9, "test": "inventory",
            "paper_mean": -3058.6, "paper_spread": 1341.6, "bound": 423.7,
            "cost_mean": 30.0, "budget": 6.5, "value_mean": 390.0, "feasible_runs": 1,
            "spread": 8835.2, "mean": -12126.5, "ci95_low": -170888.0,
            "ci95_high": 146635.0, "paper_in_ci95": True, "z_vs_paper": -1.0}
    short, why = verdict(base)
    assert short == "inconclusive"
    assert why.startswith("2 seeds: a t interval with 1 degree of freedom cannot decide")
    far = dict(base, mean=-300000.0, ci95_low=-300100.0, ci95_high=-299900.0,
               paper_in_ci95=False, z_vs_paper=-30.0)
    assert verdict(far)[0] == "inconclusive"  # 2 seeds decide nothing, even far away
    assert verdict(dict(far, n_seeds=3))[0] == "differs: ours lower (z = -30.0)"
    wide = dict(base, n_seeds=5, mean=-3000.0, ci95_low=-9000.0, ci95_high=3000.0)
    short, why = verdict(wide)
    assert short == "inconclusive" and "wider (12000.0) than the magnitude compared" in why
    narrow = dict(wide, ci95_low=-3500.0, ci95_high=-2500.0)
    assert verdict(narrow)[0] == "agrees"


def test_table_decimals_follow_the_scale_and_columns_name_it():
    """Values in [0, 1] get 4 decimals, the paper's hundreds 1; every ground-truth column
    names its scale; an RCMDP lower cell of an infeasible bracket is marked (safest)."""
    from rcmdp_exact.protocol.reproduction_report import decimals, format_table1_md

    assert decimals([0.407, 0.003, None, float("nan")]) == 4
    assert decimals([3.5, -0.2]) == 3 and decimals([-12.0]) == 2
    assert decimals([-28092.3, 31.8]) == 1 and decimals([]) == 4
    row = {"config": "c", "mode": "greedy", "test": "model", "algorithm": "cpg",
           "mean": 0.40712, "spread": 0.00321, "paper_mean": None, "paper_spread": None,
           "bound": 0.41, "cmdp_optimum": 0.407, "robust_lower": 0.0123,
           "bracket_status": "infeasible:1"}
    text = format_table1_md([row], "greedy", "c")
    assert "| Your model | 0.4071 ± 0.0032 | 0.4100 | 0.4070 | 0.0123 (safest) |" in text
    for label in ("bound (T-step R_pen)", "CMDP opt. (T-step R_pen)",
                  "RCMDP lower (T-step R_pen)"):
        assert label in text
    assert "paper" not in text
    big = dict(row, mean=-12126.5, spread=8835.2, bound=423.7, cmdp_optimum=420.0,
               robust_lower=403.7, bracket_status="bracket:1")
    assert "| -12126.5 ± 8835.2 | 423.7 | 420.0 | 403.7 |" in format_table1_md([big])
