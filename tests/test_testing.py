"""rcmdp_exact.testing: the public strategies, the counterexample search and the seeded
generators.

Every model, policy and set the strategies draw is checked against the facts they
promise (validation, the grid, terminal states, the set holding the model's kernel);
binding budgets are checked by independent robust evaluations; a deliberately false
claim must give a shrunk counterexample that reloads from its files and still fails.
Each seeded generator is checked for its shapes, its rows (distributions on their
support), the edge cases its docstring promises (seen over many seeds) and its seeding.
"""

import itertools

import numpy as np
import pytest
from helpers import depth, examples, raises_fact
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
    """Some deterministic policy meets every budget (all of them enumerated, each by an
    independent robust evaluation: the policies of least total worst-case cost can tie
    and differ cost by cost, so the one robust value iteration on -sum_k c_k returns
    need not be the one the budgets were built on; a random run found such a tie); with
    K = 1 each budget lies between the least worst-case cost (robust value iteration on
    -c) and the worst-case cost of the unconstrained robust optimum."""
    m, uset = case
    S, A = m.n_states, m.n_actions
    met = False
    for actions in itertools.product(range(A), repeat=S):
        pi = np.eye(A)[list(actions)]
        if np.all(robust_evaluate(m, pi, uset, per_constraint=True).costs_worst
                  <= m.d + 1e-9):
            met = True
            break
    assert met, "no deterministic policy meets every budget"
    if m.n_constraints == 1:
        least_cost = m.replace(R=-np.asarray(m.C)[..., 0], C=None, d=None)
        safe = robust_value_iteration(least_cost, uset, method="value_iteration",
                                      progress=False).policy
        free = robust_value_iteration(m, uset, method="value_iteration",
                                      progress=False).policy
        least = robust_evaluate(m, safe, uset).costs_worst[0]
        cf = robust_evaluate(m, free, uset).costs_worst
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
    model, uset = case
    rob = robust_value_iteration(model, uset, method="policy_iteration", progress=False)
    from rcmdp_exact import solve_mdp

    nominal = model.p0 @ solve_mdp(model).v
    return float(nominal - rob.value)


def _with_ball(models):
    return models.flatmap(lambda m: T.balls(m, "l1").map(lambda b: (m, b)))


#: The models of the searches: the test command's are smaller (S <= 3, A <= 2, rewards
#: per pair, no terminal state: half the shrinking of the default models), the thorough
#: profile searches the strategy's default models.
STRATEGY = depth(_with_ball(T.cmdps(n_states=(1, 3), n_actions=(1, 2), n_constraints=0,
                                    next_state_dependent=False, terminal=False)),
                 _with_ball(T.cmdps(n_constraints=0)))


@pytest.fixture(scope="module")
def false_claim_search(tmp_path_factory):
    """The search of seed 0 on the false claim, saved to a folder (done once: it is the
    slowest search of the file)."""
    folder = tmp_path_factory.mktemp("search") / "cex"
    return T.find_counterexample(robustness_is_free, STRATEGY, tolerance=1e-9, seed=0,
                                 path=folder), folder


def test_a_false_claim_gives_a_shrunk_counterexample_that_reloads(false_claim_search):
    res, folder = false_claim_search
    assert res.found and res.residual > 1e-9
    model, uset = res.example
    # shrunk: one action suffices, and every number is a quarter
    assert model.n_actions == 1 and on_grid(model.P) and on_grid(uset.alpha)
    assert res.failures >= 2  # the first failure and at least one smaller one
    back = T.load_counterexample(folder)
    m2, b2 = back.example
    np.testing.assert_array_equal(m2.P, model.P)
    np.testing.assert_array_equal(b2.alpha, uset.alpha)
    assert back.residual == res.residual
    assert robustness_is_free(back.example) == res.residual > 1e-9  # it still fails
    assert T.load_counterexample(folder / "counterexample.json").seed == 0
    assert sorted(p.name for p in res.files) == ["counterexample.json", "model_0.npz",
                                                 "set_0.npz"]


def test_the_search_is_reproducible(false_claim_search):
    a = false_claim_search[0]
    b = T.find_counterexample(robustness_is_free, STRATEGY, tolerance=1e-9, seed=0)
    assert a.found and a.residual == b.residual and a.examples == b.examples
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


# --------------------------------------------------------------------------- seeded generators
#: One call of each seeded generator (the seed first), with the arguments that exercise it.
GENERATOR_CALLS = {
    "random_model_arrays": (lambda g: T.random_model_arrays(g, 4, 3, 2, density=0.3)),
    "random_row": (lambda g: T.random_row(g, 7, 0.5)),
    "random_kernel": (lambda g: T.random_kernel(g, 4, 2, density=(0.3, 1.0),
                                                point_masses=0.2)),
    "random_values": (lambda g: T.random_values(g, (3, 2, 5))),
    "random_radii": (lambda g: T.random_radii(g, (4, 3), 0.1, 2.0)),
    "random_policies": (lambda g: T.random_policies(g, 4, 3, "sparse", n=2)),
    "random_box": (lambda g: T.random_box(g, 4, 3, 0.3)),
}


def flat(x):
    return np.concatenate([np.ravel(a) for a in x]) if isinstance(x, tuple) else np.ravel(x)


@pytest.mark.parametrize("name", sorted(GENERATOR_CALLS))
def test_generators_reproduce_from_a_seed_and_draw_a_generator_in_place(name):
    """Same seed, same bits; a Generator of that seed gives the same draws and is
    advanced (a caller goes on drawing from it); another seed gives other draws."""
    call = GENERATOR_CALLS[name]
    a, b = flat(call(11)), flat(call(11))
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(11)
    np.testing.assert_array_equal(flat(call(rng)), a)
    assert rng.random() != np.random.default_rng(11).random()
    assert any(not np.array_equal(flat(call(s)), a) for s in range(12, 15))
    assert name in T.__all__ and name in dir(T)


def assert_rows(P, support=None, axis=-1):
    """Non-negative rows that sum to 1 and vanish off their support."""
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=axis), 1.0, rtol=0, atol=1e-12)
    if support is not None:
        assert not np.any(P[~support]) and support.any(axis=axis).all()


def test_random_model_arrays_build_dense_and_sparse_models():
    import scipy.sparse as sp

    zeros = 0
    for seed in range(40):
        S, A, K = 1 + seed % 5, 1 + seed % 3, seed % 3
        P, R, C = T.random_model_arrays(seed, S, A, K)
        assert P.shape == (S, A, S) and R.shape == (S, A, S) and C.shape == (S, A, S, K)
        assert_rows(P)
        assert np.all((C >= 0) & (C <= 1))
        zeros += int(np.sum(P == 0))
        TabularCMDP(P, R, C, d=np.ones(K), gamma=0.9)
        P2, R2, C2 = T.random_model_arrays(seed, S, A, K, next_state_dependent=False)
        assert R2.shape == (S, A) and C2.shape == (S, A, K)
        TabularCMDP(sp.csr_array(P2.reshape(S * A, S)), R2, C2, d=np.ones(K), gamma=0.9)
    assert zeros > 0  # exact zeros in the kernels
    P, _, _ = T.random_model_arrays(0, 5, 2, 1, density=0.0)
    assert np.all((P == 1.0).sum(axis=2) == 1)  # density 0: point masses


def test_random_row_is_a_distribution_on_its_support_with_its_edge_cases():
    inner_zero = restricted = 0
    for seed in range(200):
        n = 1 + seed % 9
        p, sup = T.random_row(seed, n, support_frac=0.6)
        assert p.shape == sup.shape == (n,) and sup.dtype == bool
        assert_rows(p, sup)
        inner_zero += bool(np.any(sup & (p == 0)))
        restricted += bool(not sup.all())
        q, sup_q = T.random_row(seed, n, degenerate=True)
        assert_rows(q, sup_q)
        assert np.sum(q == 1.0) == 1  # a point mass
        assert T.random_row(seed, n, support_frac=1.0)[1].all()
    assert inner_zero > 20 and restricted > 20  # exact zeros inside; restricted supports
    assert T.random_row(3, 6, support_frac=0.0)[1].sum() == 1  # one state always in


def test_random_kernel_rows_supports_zeros_and_point_masses():
    inner_zero = point = restricted = 0
    for seed in range(60):
        S, A = 1 + seed % 5, 1 + seed % 3
        P, sup = T.random_kernel(seed, S, A)
        assert P.shape == sup.shape == (S, A, S) and sup.all()
        assert_rows(P, sup)
        inner_zero += int(np.sum(P == 0))
        P, sup = T.random_kernel(seed, S, A, density=(0.3, 1.0), point_masses=0.3)
        assert_rows(P, sup)
        point += int(np.sum(P == 1.0))
        restricted += int(np.sum(~sup))
        TabularCMDP(P, np.zeros((S, A)), gamma=0.9)
        P, sup = T.random_kernel(seed, S, A, density=0.5, one_hot=True)
        assert_rows(P, sup)
        assert np.all((P == 1.0).sum(axis=2) == 1)
    assert inner_zero > 0 and point > 0 and restricted > 0
    P, sup = T.random_kernel(0, 6, 3, density=1.0)
    assert sup.all()


def test_random_values_kinds():
    z = T.random_values(0, (4, 6), "ties")
    assert z.shape == (4, 6) and set(np.unique(z)) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    assert np.all(T.random_values(0, (2, 3), "constant") == 1.5)
    rows = T.random_values(1, (3, 5), "rows", scale=2.0)
    assert np.all(rows == rows[:, :1]) and len(np.unique(rows)) == 3
    block = T.random_values(2, (3, 5), "block")
    assert np.all(block[:, :2] == block[:, :1]) and len(np.unique(block[0])) == 4
    normal = T.random_values(3, 4000, "normal", scale=5.0)
    assert normal.shape == (4000,) and 4.5 < normal.std() < 5.5
    tops = [np.abs(T.random_values(s, 200, "magnitudes")).max() for s in range(30)]
    scales = {1e-3 if t < 0.1 else 1e3 if t > 100 else 1.0 for t in tops}
    assert scales == {1e-3, 1.0, 1e3}  # each of the three scales is drawn
    seen = set()
    for seed in range(40):  # None: ties, magnitudes, rows or block
        z = T.random_values(seed, (2, 6))
        if np.all(z == np.round(z)):
            seen.add("ties")
        elif np.all(z == z[:, :1]):
            seen.add("rows")
        elif np.all(z[:, :3] == z[:, :1]):
            seen.add("block")
        else:
            seen.add("magnitudes")
    assert seen == {"ties", "rows", "block", "magnitudes"}


def test_random_radii_cover_zero_small_moderate_and_whole():
    r = np.concatenate([T.random_radii(s, (5, 3), 0.1, 2.0).ravel() for s in range(20)])
    assert r.shape == (300,) and np.all(r >= 0) and np.all(r < 4.0)
    assert np.any(r == 0) and np.any((r > 0) & (r < 0.1)) and np.any(r >= 2.0)
    assert np.any((r > 0.1) & (r < 2.0))
    assert T.random_radii(0, 7, 0.1, 1.0).shape == (7,)  # one per state


@pytest.mark.parametrize("kind", T.POLICY_KINDS)
def test_random_policies_kinds(kind):
    zeros = 0
    for seed in range(30):
        S, A = 1 + seed % 4, 1 + seed % 3
        pi = T.random_policies(seed, S, A, kind)
        assert pi.shape == (S, A)
        assert_rows(pi)
        many = T.random_policies(seed, S, A, kind, n=3)
        assert many.shape == (3, S, A)
        assert_rows(many)
        if kind == "deterministic":
            assert np.all((many == 1.0).sum(axis=2) == 1)
        zeros += int(np.sum(many[..., :] == 0)) if A > 1 else 0
    assert (zeros > 0) == (kind != "stochastic")  # exact zeros only where promised


@pytest.mark.parametrize("width", [None, 0.0, 0.05, 0.3, 1.0])
def test_random_box_meets_the_simplex(width):
    zero_low = 0
    for seed in range(30):
        S, A = 1 + seed % 4, 1 + seed % 3
        lo, hi = T.random_box(seed, S, A, width)
        assert lo.shape == hi.shape == (S, A)
        assert np.all((0 <= lo) & (lo <= hi) & (hi <= 1))
        assert np.all(lo.sum(axis=1) <= 1 + 1e-12) and np.all(hi.sum(axis=1) >= 1 - 1e-12)
        zero_low += int(np.sum(lo == 0))
        if width is None:
            assert np.all((hi == 1.0).any(axis=1))
        if width == 0.0:
            np.testing.assert_allclose(lo, hi, rtol=0, atol=1e-12)  # one policy
    assert zero_low > 0 or width == 0.0


def test_generator_arguments_are_checked():
    with raises_fact(InputError, "S", "0"):
        T.random_kernel(0, 0, 2)
    with raises_fact(InputError, "density", "1.5"):
        T.random_kernel(0, 2, 2, density=1.5)
    with raises_fact(InputError, "density", "3 numbers"):
        T.random_kernel(0, 2, 2, density=(0.1, 0.2, 0.3))
    with raises_fact(InputError, "point_masses"):
        T.random_kernel(0, 2, 2, point_masses=-0.1)
    with raises_fact(InputError, "support_frac"):
        T.random_row(0, 3, support_frac=2.0)
    with raises_fact(InputError, "n", "0"):
        T.random_row(0, 0)
    with raises_fact(InputError, "kind", "'wild'", "'ties'"):
        T.random_values(0, 3, "wild")
    with raises_fact(InputError, "scale"):
        T.random_values(0, 3, "normal", scale=0.0)
    with raises_fact(InputError, "shape", "-1"):
        T.random_values(0, (2, -1))
    with raises_fact(InputError, "whole"):
        T.random_radii(0, 3, 0.1, 0.0)
    with raises_fact(InputError, "kind", "'zeros'", "'sparse'"):
        T.random_policies(0, 2, 2, "zeros")
    with raises_fact(InputError, "n", "0"):
        T.random_policies(0, 2, 2, n=0)
    with raises_fact(InputError, "width"):
        T.random_box(0, 2, 2, -1.0)
    with raises_fact(InputError, "density"):
        T.random_model_arrays(0, 2, 2, 1, density=2.0)
    with raises_fact(InputError, "seed"):
        T.random_row(-1, 3)


@settings(max_examples=examples(60))
@given(T.inner_problems(max_n=12))
def test_inner_problems_are_valid_inputs_of_the_l1_inner_problem(case):
    from rcmdp_exact import worst_case_l1

    p_hat, z, alpha, support = case
    rows, n = p_hat.shape
    assert 1 <= rows <= 3 and 1 <= n <= 12 and alpha.shape == (rows,)
    assert z.shape in ((rows, n), (n,)) and np.all((alpha >= 0) & (alpha <= 3))
    assert_rows(p_hat, support)
    assert worst_case_l1(p_hat, z, alpha, support).success
