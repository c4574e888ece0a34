"""rcmdp_exact.testing: the public strategies and the counterexample search.

Every model, policy and set the strategies draw is checked against the facts they
promise (validation, the grid, terminal states, the set holding the model's kernel);
binding budgets are checked by independent robust evaluations; a deliberately false
claim must give a shrunk counterexample that reloads from its files and still fails.
"""

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact.testing as T
from rcmdp_exact import (
    InputError,
    OutputPathError,
    TabularCMDP,
    evaluate,
    robust_evaluate,
    robust_value_iteration,
)
from rcmdp_exact.uncertainty import FiniteSet, SRectL1Ball


def rebuild(m: TabularCMDP) -> TabularCMDP:
    """The model built again from its arrays by the validating constructor."""
    C = np.asarray(m.C) if m.n_constraints else None
    return TabularCMDP(m.P, m.R, C, d=m.d if m.n_constraints else None, gamma=m.gamma,
                       p0=m.p0, terminal=m.terminal)


def on_grid(x, grid=4) -> bool:
    return bool(np.all(np.abs(np.asarray(x) * grid - np.round(np.asarray(x) * grid)) < 1e-12))


# --------------------------------------------------------------------------- models
@settings(max_examples=examples(80))
@given(T.cmdps(branching=(1, 4)))
def test_models_are_valid_and_on_the_grid(m):
    rebuild(m)
    assert on_grid(m.P) and on_grid(m.R) and on_grid(m.C) and on_grid(m.d)
    np.testing.assert_allclose(m.P.sum(axis=2), 1.0, atol=1e-12)
    for t in np.flatnonzero(m.terminal):
        assert (m.P[t, :, t] == 1.0).all()
    assert m.p0[0] == 1.0
    assert (m.R >= -2).all() and (m.R <= 2).all() and (m.C >= 0).all() and (m.C <= 2).all()


@settings(max_examples=examples(40))
@given(T.cmdps(n_states=3, n_actions=2, n_constraints=1, branching=1, terminal=False,
               next_state_dependent=False, start="distribution"))
def test_fixed_sizes_branching_and_start(m):
    assert (m.n_states, m.n_actions, m.n_constraints) == (3, 2, 1)
    assert ((m.P > 0).sum(axis=2) == 1).all()  # one next state per pair
    assert m.R.shape == (3, 2, 3) and not m.reward_depends_on_next_state
    assert on_grid(m.p0) and abs(m.p0.sum() - 1) < 1e-12


@settings(max_examples=examples(20))
@given(T.cmdps(grid=None, n_states=(2, 3)))
def test_continuous_values_without_a_grid(m):
    rebuild(m)
    assert not on_grid(m.P[~m.terminal], 64)


@settings(max_examples=examples(20))
@given(T.garnets(n_states=(2, 4)))
def test_garnets_are_the_toolkit_garnets(m):
    rebuild(m)
    assert 2 <= m.n_states <= 4


def test_sizes_are_checked():
    with raises_fact(InputError, "n_states", "0"):
        T.example(T.cmdps(n_states=0))
    with raises_fact(InputError, "grid"):
        T.example(T.cmdps(grid=0))
    with raises_fact(InputError, "set kind", "'box'"):
        T.balls(T.example(T.cmdps()), kinds=("box",))


# --------------------------------------------------------------------------- policies
@settings(max_examples=examples(40))
@given(T.cmdps().flatmap(lambda m: st.tuples(st.just(m), T.policies(m, True),
                                             T.policies(m, False), T.multipliers(m))))
def test_policies_and_multipliers(case):
    m, det, sto, lam = case
    assert det.shape == sto.shape == (m.n_states, m.n_actions)
    assert set(np.unique(det)) <= {0.0, 1.0} and (det.sum(axis=1) == 1).all()
    np.testing.assert_allclose(sto.sum(axis=1), 1.0, atol=1e-12)
    assert on_grid(sto) and lam.shape == (m.n_constraints,) and (lam >= 0).all()
    evaluate(m, sto, lam)  # valid inputs of the toolkit


# --------------------------------------------------------------------------- sets
@settings(max_examples=examples(60))
@given(T.cmdps(n_states=(1, 3)).flatmap(
    lambda m: st.tuples(st.just(m), T.balls(m, T.SET_KINDS))))
def test_every_set_kind_holds_the_model_kernel(case):
    m, uset = case
    assert uset.nominal.shape == m.P.shape
    inside = uset.contains(m.P)
    assert np.all(inside), type(uset).__name__
    if isinstance(uset, FiniteSet):
        np.testing.assert_array_equal(uset.members[0], m.P)
        for Q in uset.members:
            rebuild(m.with_transitions(Q))
    elif not isinstance(uset, SRectL1Ball):
        assert uset.rectangularity == "sa"


@pytest.mark.parametrize("kind", T.SET_KINDS)
def test_each_kind_is_drawn_and_reproducible(kind):
    m = T.example(T.cmdps(n_states=3, n_actions=2), seed=4)
    a = T.example(T.balls(m, kind), seed=7)
    b = T.example(T.balls(m, kind), seed=7)
    assert type(a) is type(b)
    np.testing.assert_array_equal(a.nominal, b.nominal)
    assert type(a).__name__ == {"l1": "L1Ball", "weighted-l1": "WeightedL1Ball",
                                "linf": "LInfBall", "interval": "IntervalSet",
                                "kl": "KLBall", "s-l1": "SRectL1Ball",
                                "finite": "FiniteSet"}[kind]


# --------------------------------------------------------------------------- budgets
@settings(max_examples=examples(25))
@given(T.robust_cmdps(n_states=(2, 3), n_constraints=(1, 2)))
def test_binding_budgets_can_be_met_and_often_bind(case):
    """The robust policy of least total worst-case cost (found here by robust policy
    iteration on -sum_k c_k) meets every budget, by independent robust evaluations; with
    K = 1 each budget lies between the least worst-case cost and the worst-case cost of
    the unconstrained robust optimum."""
    m, uset = case
    C = np.asarray(m.C)
    total = m.replace(R=-C.sum(axis=3), C=None, d=None)
    safe = robust_value_iteration(total, uset, method="value_iteration",
                                  progress=False).policy
    assert np.all(robust_evaluate(m, safe, uset).costs_worst <= m.d + 1e-9)
    free = robust_value_iteration(m, uset, method="value_iteration", progress=False).policy
    cf = robust_evaluate(m, free, uset).costs_worst
    if m.n_constraints == 1:
        least = robust_evaluate(m, safe, uset).costs_worst[0]
        assert least - 1e-9 <= m.d[0] <= max(cf[0], least) + 1e-9


def test_budget_levels_bracket_the_binding_budgets():
    m, uset = T.example(T.robust_cmdps(n_constraints=2), seed=3)
    lv = T.budget_levels(m, uset)
    assert np.all(lv.least <= lv.joint + 1e-9) and np.all(lv.least <= lv.free + 1e-9)
    assert np.all(lv.joint - 1e-9 <= m.d)
    assert np.all(m.d <= np.maximum(lv.free, lv.joint) + 1e-9)


# --------------------------------------------------------------------------- examples
def test_example_is_reproducible_and_not_the_trivial_one():
    a = T.example(T.cmdps(), seed=11)
    b = T.example(T.cmdps(), seed=11)
    np.testing.assert_array_equal(a.P, b.P)
    assert any(T.example(T.cmdps(), seed=s).n_states > 1 for s in range(5))


def test_the_exact_profile_is_registered():
    s = T.exact_settings(max_examples=7)
    assert s.max_examples == 7 and s.derandomize and s.deadline is None
    assert settings.get_profile(T.EXACT_PROFILE).database is None


# --------------------------------------------------------------------------- counterexamples
def robustness_is_free(case):
    """A false claim: the robust optimum equals the nominal optimum (residual: their gap,
    the nominal one by policy iteration on the model, the robust one by robust policy
    iteration)."""
    model, ball = case
    rob = robust_value_iteration(model, ball, method="policy_iteration", progress=False)
    from rcmdp_exact import solve_mdp

    nominal = model.p0 @ solve_mdp(model).v
    return float(nominal - rob.value)


STRATEGY = T.cmdps(n_constraints=0).flatmap(lambda m: T.balls(m, "l1").map(lambda b: (m, b)))


def test_a_false_claim_gives_a_shrunk_counterexample_that_reloads(tmp_path):
    res = T.find_counterexample(robustness_is_free, STRATEGY, tolerance=1e-9, seed=0,
                                path=tmp_path / "cex")
    assert res.found and res.residual > 1e-9
    model, ball = res.example
    # shrunk: one action suffices, and every number is a quarter
    assert model.n_actions == 1 and on_grid(model.P) and on_grid(ball.alpha)
    assert res.failures >= 2  # the first failure and at least one smaller one
    back = T.load_counterexample(tmp_path / "cex")
    m2, b2 = back.example
    np.testing.assert_array_equal(m2.P, model.P)
    np.testing.assert_array_equal(b2.alpha, ball.alpha)
    assert back.residual == res.residual
    assert robustness_is_free(back.example) == res.residual > 1e-9  # it still fails
    assert T.load_counterexample(tmp_path / "cex" / "counterexample.json").seed == 0
    assert sorted(p.name for p in res.files) == ["counterexample.json", "model_0.npz",
                                                 "set_0.npz"]


def test_the_search_is_reproducible():
    a = T.find_counterexample(robustness_is_free, STRATEGY, tolerance=1e-9, seed=3)
    b = T.find_counterexample(robustness_is_free, STRATEGY, tolerance=1e-9, seed=3)
    assert a.residual == b.residual and a.examples == b.examples
    np.testing.assert_array_equal(a.example[0].P, b.example[0].P)


def test_a_true_claim_has_no_counterexample():
    res = T.find_counterexample(lambda c: -robustness_is_free(c), STRATEGY,
                                tolerance=1e-9, max_examples=15)
    assert not res.found and res.example is None and res.examples == 15


def test_bool_and_assert_claims():
    ints = st.integers(0, 1000)
    res = T.find_counterexample(lambda n: n < 10, ints, seed=1)
    assert res.found and res.example == 10  # shrunk to the boundary

    def claim(n):
        assert n < 25, "n reached 25"

    res = T.find_counterexample(claim, ints, seed=1)
    assert res.found and res.example == 25 and "reached 25" in res.note


def test_bad_claims_and_arguments_are_refused():
    with raises_fact(InputError, "residual", "bool", "str"):
        T.find_counterexample(lambda n: "yes", st.integers())
    with raises_fact(InputError, "strategy", "hypothesis"):
        T.find_counterexample(lambda n: True, [1, 2])
    with pytest.raises(ZeroDivisionError):
        T.find_counterexample(lambda n: 1 / (n - n), st.integers())


def test_a_time_limit_stops_the_search():
    res = T.find_counterexample(robustness_is_free, STRATEGY, tolerance=1e-9,
                                time_limit=1e-9, max_examples=5)
    assert res.examples <= 1


def test_random_cmdp_is_seeded():
    a = T.random_cmdp(5, 4, 2, 1, 0.9, n_outcomes=3, terminal=True)
    b = T.random_cmdp(np.random.default_rng(5), 4, 2, 1, 0.9, n_outcomes=3, terminal=True)
    np.testing.assert_array_equal(a.P, b.P)
    assert a.terminal[-1] and a.outcomes.shape == (4, 2, 3)


def test_the_generators_work_without_hypothesis():
    """rcmdp_exact.testing.generators, and its names through rcmdp_exact.testing, import
    and run in a process where hypothesis cannot be imported; a strategy's name then
    says it needs hypothesis (ImportError)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "sys.modules['hypothesis'] = None  # as if it were not installed\n"
            "import rcmdp_exact.testing as T\n"
            "from rcmdp_exact.testing.generators import random_cmdp\n"
            "assert T.random_cmdp is random_cmdp\n"
            "print(T.dense_binding_cmdp(0).n_states >= 2, random_cmdp(1, 3, 2, 1, 0.9).S)\n"
            "try:\n"
            "    T.cmdps\n"
            "except ImportError:\n"
            "    print('strategies need hypothesis')\n")
    from pathlib import Path

    import rcmdp_exact

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(rcmdp_exact.__file__).parents[1])
    assert out.stdout.split("\n")[:2] == ["True 3", "strategies need hypothesis"]


def test_a_path_that_cannot_hold_the_counterexample_is_refused_before_the_search(tmp_path):
    """An existing file as the folder: refused before any example is judged (the claim
    is never called), so no counterexample is found and then thrown away."""
    afile = tmp_path / "taken"
    afile.write_text("mine")
    calls = []

    def claim(n):
        calls.append(n)
        return n < 10

    with raises_fact(OutputPathError, "path", str(afile), "existing file"):
        T.find_counterexample(claim, st.integers(0, 1000), seed=1, path=afile)
    assert calls == [] and afile.read_text() == "mine"
    res = T.find_counterexample(claim, st.integers(0, 1000), seed=1, path=tmp_path / "ce")
    assert res.found and [p.name for p in res.files] == ["counterexample.json"]
