"""L1 balls: estimation from counts, rollouts, outcome form vs state form."""

import math
from functools import cache

import numpy as np
import pytest
from helpers import depth, examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st

from rcmdp_exact.core.model import TabularCMDP
from rcmdp_exact.core.model_checks import ModelError
from rcmdp_exact.domains import (
    ESTIMATION_EPISODES,
    PAPER_ALPHA_RANGES,
    garnet,
    grid_state,
    inventory,
    paper_domain,
    safe_navigation_1,
    safe_navigation_2,
)
from rcmdp_exact.uncertainty import (
    L1Ball,
    collect_counts,
    estimate,
    estimate_l1_ball,
    hoeffding_radius,
    l1_ball,
    merge_outcomes,
)
from rcmdp_exact.uncertainty.l1_sort import worst_case_l1


@cache
def nav_estimate(which: str, seed: int):
    model = safe_navigation_1() if which == "nav1" else safe_navigation_2()
    episodes = 100 if which == "nav1" else 2000
    return model, estimate(model, episodes, seed=seed, progress=False)


# --------------------------------------------------------------------------- radius
def test_hoeffding_radius_closed_form():
    # the paper's formula written out with the power 2^S' itself
    for n, Sp, S, A in [(100, 5, 25, 4), (37, 10, 10, 10), (5000, 5, 25, 4)]:
        ref = math.sqrt(2.0 / n * math.log(2**Sp * S * A / 0.1))
        assert hoeffding_radius(n, Sp, S, A, 0.1) == pytest.approx(ref, rel=1e-14)
    # no overflow for many outcomes: ln(2^2000) = 2000 ln 2
    big = hoeffding_radius(1e6, 2000, 2000, 4, 0.1)
    assert big == pytest.approx(math.sqrt(2e-6 * (2000 * math.log(2) + math.log(80000))))


def test_estimate_from_hand_counts_state_form():
    counts = np.zeros((2, 1, 2))
    counts[0, 0] = [3, 0]
    counts[1, 0] = [0, 6]
    uset = estimate_l1_ball(counts, delta=0.1)
    # pseudo-count 1 on both states: n(0,0) = 3 + 2 = 5, n(1,0) = 6 + 2 = 8
    np.testing.assert_allclose(uset.nominal[0, 0], [4 / 5, 1 / 5])
    np.testing.assert_allclose(uset.nominal[1, 0], [1 / 8, 7 / 8])
    ln = math.log(2**2 * 2 * 1 / 0.1)
    np.testing.assert_allclose(uset.alpha[:, 0], [math.sqrt(2 / 5 * ln), math.sqrt(2 / 8 * ln)])
    assert uset.outcomes is None and uset.full_support


def test_estimate_from_hand_counts_outcome_form():
    # one state-action pair of a 3-state model, 4 outcomes; outcomes 0 and 2 both reach 1
    outcomes = np.array([[[1, 0, 1, 2]], [[0, 0, 0, 0]], [[2, 2, 2, 2]]])
    counts = np.zeros((3, 1, 4))
    counts[0, 0] = [2, 0, 5, 1]
    uset = estimate_l1_ball(counts, 0.1, outcomes=outcomes)
    # n = 8 + 4 pseudo; outcome nominal (3, 1, 6, 2) / 12, merged: s'=0: 1/12, s'=1: 9/12
    np.testing.assert_allclose(uset.outcome_nominal[0, 0], [3 / 12, 1 / 12, 6 / 12, 2 / 12])
    np.testing.assert_allclose(uset.nominal[0, 0], [1 / 12, 9 / 12, 2 / 12])
    np.testing.assert_array_equal(uset.support[1, 0], [True, False, False])
    ln = math.log(2**4 * 3 * 1 / 0.1)
    assert uset.alpha[0, 0] == pytest.approx(math.sqrt(2 / 12 * ln))
    assert uset.alpha[1, 0] == pytest.approx(math.sqrt(2 / 4 * ln))  # pseudo-counts only


def test_pseudo_counts_alone_give_uniform_outcomes_on_navigation():
    model = safe_navigation_1()
    uset = estimate_l1_ball(np.zeros((25, 4, 5)), outcomes=model.outcomes)
    # from (0,0): stay and the blocked moves left and down stay; right and up move
    row = uset.nominal[grid_state(0, 0), 0]
    assert row[grid_state(0, 0)] == pytest.approx(3 / 5)
    assert row[grid_state(1, 0)] == pytest.approx(1 / 5)
    assert row[grid_state(0, 1)] == pytest.approx(1 / 5)
    assert uset.support[grid_state(0, 0), 0].sum() == 3
    assert uset.support[grid_state(2, 2), 0].sum() == 5


# --------------------------------------------------------------------------- rollouts
def test_collect_counts_is_seeded_and_counts_every_step():
    model = inventory()
    c1 = collect_counts(model, 50, seed=7, progress=False)
    c2 = collect_counts(model, 50, seed=7, progress=False)
    c3 = collect_counts(model, 50, seed=8, progress=False)
    np.testing.assert_array_equal(c1, c2)
    assert not np.array_equal(c1, c3)
    assert c1.sum() == 50 * model.horizon  # no terminal state: every step counted
    assert c1.dtype == np.int64 and c1.shape == (10, 10, 10)


def test_collect_counts_stops_at_the_goal():
    model = safe_navigation_2()
    counts = collect_counts(model, 300, seed=1, progress=False)
    goal = grid_state(4, 4)
    assert counts[goal].sum() == 0
    assert 0 < counts.sum() <= 300 * model.horizon
    # with certain moves every counted outcome is the intended move (outcome 1 + a)
    intended = np.zeros_like(counts, dtype=bool)
    for a in range(4):
        intended[:, a, 1 + a] = True
    blocked = model.outcomes[:, :, 1:] == np.arange(25)[:, None, None]  # wall: stays
    # a blocked move is counted as the first outcome reaching the cell: stay (0)
    for a in range(4):
        intended[:, a, 0] |= blocked[:, a, a]
        intended[:, a, 1 + a] &= ~blocked[:, a, a]
    assert counts[~intended].sum() == 0


def test_outcome_counts_merge_to_state_counts():
    model = safe_navigation_1()
    co = collect_counts(model, 40, seed=3, form="outcomes", progress=False)
    cs = collect_counts(model, 40, seed=3, form="states", progress=False)
    np.testing.assert_array_equal(merge_outcomes(co, model.outcomes), cs)


def test_collected_frequencies_match_the_model():
    """Monte Carlo: empirical transition frequencies within 5 standard errors."""
    model = garnet(6, 2, 3, seed=4, gamma=0.9)
    counts = collect_counts(model, 400, seed=0, horizon=50, form="states", progress=False)
    n = counts.sum(axis=2, keepdims=True)
    assert (n >= 500).all()
    freq = counts / n
    P = model.P
    se = np.sqrt(P * (1 - P) / n) + 1e-12
    assert (np.abs(freq - P) <= 5 * se + 1e-12).all()
    # uniform random actions: visits of the two actions of a state within 5 sigma
    visits = counts.sum(axis=2)
    tot = visits.sum(axis=1)
    assert (np.abs(visits[:, 0] - tot / 2) <= 5 * np.sqrt(tot / 4)).all()


def test_estimated_nominal_converges_to_the_truth():
    model = safe_navigation_1()
    res = estimate(model, 3000, seed=2, progress=False)
    live = ~model.terminal
    assert np.abs(res.uset.nominal[live] - model.P[live]).sum(axis=2).max() < 0.15
    # the Hoeffding set holds the true model (it does with probability >= 0.9)
    assert res.uset.contains(model.P).all()


# --------------------------------------------------------------------------- paper ranges
@pytest.mark.parametrize(
    ("name", "slack"), [("nav1", 0.1), ("nav2", 0.01), ("inventory", 0.1)]
)
def test_estimation_reproduces_the_papers_alpha_ranges(name, slack):
    """Paper: nav1 about [0.25, 0.7], nav2 [0.03, 0.085], inventory [0.3, 0.9].

    Every seed 0..9 within the slack of both ends (seeds 0..2 in the everyday run, all
    ten under the thorough profile).  Measured (docs/robust.md): nav1
    lower 0.256-0.302, upper 0.638-0.759; nav2 lower 0.0347-0.0352, upper
    0.0830-0.0844; inventory lower 0.373-0.387 (the paper's 0.3 is not reached),
    upper 0.822-0.930.
    """
    model = paper_domain(name)
    plo, phi = PAPER_ALPHA_RANGES[name]
    first = None
    for seed in depth(range(3), range(10)):  # the ten seeds: the thorough profile
        res = estimate(model, ESTIMATION_EPISODES[name]["paper"], seed=seed, progress=False)
        lo, hi = res.alpha_range
        assert abs(lo - plo) <= slack and abs(hi - phi) <= slack, (seed, lo, hi)
        first = res if seed == 0 else first
    res = first
    assert res.form == "outcomes"
    S_prime = model.outcomes.shape[2]
    # the radius of one pair recomputed from its counts, pseudo-counts included
    n = res.counts[0, 0].sum() + S_prime
    S, A = model.n_states, model.n_actions
    assert res.uset.alpha[0, 0] == pytest.approx(
        math.sqrt(2 / n * math.log(2**S_prime * S * A / 0.1))
    )


def test_estimate_keeps_terminal_states_absorbing():
    _model, res = nav_estimate("nav1", 0)
    goal = grid_state(4, 4)
    assert res.uset.alpha[goal].max() == 0.0
    np.testing.assert_array_equal(res.uset.nominal[goal, :, goal], 1.0)
    assert isinstance(res.nominal, TabularCMDP)
    np.testing.assert_array_equal(res.nominal.P, res.uset.nominal)


# --------------------------------------------------------------------------- outcome form
def lift_to_outcomes(p, q_hat, outcomes):
    """An outcome distribution merging to p at outcome-distance ||p - M q_hat||_1.

    The construction of the module's proof: a state's excess goes to its first outcome,
    a deficit is taken from its outcomes in proportion to q_hat.
    """
    S, A, _O = outcomes.shape
    merged = merge_outcomes(q_hat, outcomes, S)
    q = q_hat.copy()
    for s in range(S):
        for a in range(A):
            for t in np.unique(outcomes[s, a]):
                os_ = np.flatnonzero(outcomes[s, a] == t)
                diff = p[s, a, t] - merged[s, a, t]
                if diff >= 0:
                    q[s, a, os_[0]] += diff
                else:
                    q[s, a, os_] *= p[s, a, t] / merged[s, a, t]
    return q


z_kinds = st.sampled_from(["shared", "per_transition", "ties"])


@settings(max_examples=examples(30))
@given(which=st.sampled_from(["nav1", "nav2"]), seed=st.integers(0, 2),
       kind=z_kinds, zseed=st.integers(0, 10**6))
def test_outcome_form_and_state_form_have_the_same_worst_case(which, seed, kind, zseed):
    _model, res = nav_estimate(which, seed)
    uset = res.uset
    rng = np.random.default_rng(zseed)
    if kind == "shared":
        z = rng.normal(size=25)
    elif kind == "ties":
        z = rng.integers(0, 3, size=25).astype(float)
    else:
        z = rng.normal(size=(25, 4, 25))
    st_ = uset.worst_case(z, form="state")
    out = uset.worst_case(z, form="outcome")
    np.testing.assert_allclose(out.value, st_.value, atol=1e-12)
    # both kernels lie in the state ball; the state kernel lifts into the outcome ball
    assert uset.contains(out.p).all() and uset.contains(st_.p).all()
    q = lift_to_outcomes(st_.p, uset.outcome_nominal, uset.outcomes)
    np.testing.assert_allclose(merge_outcomes(q, uset.outcomes), st_.p, atol=1e-12)
    dist = np.abs(q - uset.outcome_nominal).sum(axis=2)
    assert (dist <= uset.alpha + 1e-12).all()
    # an independent solver on the outcome form: the cvxpy LP on a few pairs
    zo = z[uset.outcomes] if z.ndim == 1 else np.take_along_axis(z, uset.outcomes, axis=2)
    for s, a in [(0, 0), (7, 2), (12, 1)]:
        lp = worst_case_l1(uset.outcome_nominal[s, a], zo[s, a], uset.alpha[s, a], method="lp")
        assert lp.value == pytest.approx(st_.value[s, a], abs=1e-8)


def test_l1_ball_from_a_model():
    model = safe_navigation_1()
    uset = l1_ball(model, 0.3)
    np.testing.assert_array_equal(uset.nominal, model.P)
    goal = grid_state(4, 4)
    live = ~model.terminal
    assert (uset.alpha[live] == 0.3).all() and (uset.alpha[goal] == 0).all()
    np.testing.assert_allclose(merge_outcomes(uset.outcome_nominal, uset.outcomes), model.P)
    z = np.random.default_rng(0).normal(size=25)
    np.testing.assert_allclose(uset.worst_case(z, form="outcome").value,
                               uset.worst_case(z).value, atol=1e-12)
    g = garnet(5, 2, 2, seed=1)
    assert l1_ball(g, 0.2).support.sum() == 2 * 5 * 2  # garnet outcomes: b next states
    assert l1_ball(g, 0.2, support="all").full_support
    np.testing.assert_array_equal(l1_ball(g, 0.2, support="nominal").support, g.P > 0)


def test_ball_with_alpha_save_and_load(tmp_path):
    _, res = nav_estimate("nav1", 1)
    uset = res.uset
    wider = uset.with_alpha(2 * uset.alpha)
    np.testing.assert_array_equal(wider.alpha, 2 * uset.alpha)
    np.testing.assert_array_equal(wider.nominal, uset.nominal)
    path = tmp_path / "uset.npz"
    uset.save(path)
    back = L1Ball.load(path)
    for name in ("nominal", "alpha", "support", "outcomes", "outcome_nominal"):
        np.testing.assert_array_equal(getattr(back, name), getattr(uset, name))
    with pytest.raises(AttributeError, match="immutable"):
        uset.alpha = 1.0


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "facts"),
    [
        (dict(alpha=-0.5), ("alpha[0, 0]", "-0.5", "negative")),
        (dict(nominal=np.full((2, 1, 2), 0.6)), ("nominal[0, 0, :]", "sums to 1.2")),
        (dict(support=np.array([[[True, False]], [[True, True]]])),
         ("nominal[0, 0, 1] = 0.5", "outside the support")),
        (dict(alpha=np.ones(3)), ("alpha", "(2, 1)", "(3,)")),
        (dict(support=np.ones((2, 1, 2), dtype=np.int64)), ("support", "boolean", "int64")),
    ],
)
def test_ball_errors(kwargs, facts):
    args = dict(nominal=np.full((2, 1, 2), 0.5), alpha=0.1)
    args.update(kwargs)
    with raises_fact(ModelError, *facts):
        L1Ball(**args)


def test_estimation_errors():
    with raises_fact(ModelError, "(0, 0)", "no counts", "pseudo_count"):
        estimate_l1_ball(np.zeros((2, 1, 2)), pseudo_count=0)
    with raises_fact(ModelError, "delta", "1.5", "(0, 1)"):
        estimate_l1_ball(np.ones((2, 1, 2)), delta=1.5)
    with raises_fact(ModelError, "horizon", "None"):
        collect_counts(garnet(3, 2, 2, seed=0), 5, seed=0)
    with raises_fact(ModelError, "form='outcomes'", "outcomes"):
        collect_counts(inventory().with_transitions(inventory().P), 5, form="outcomes")
    with raises_fact(ModelError, "support", "(2, 1, 2)", "(2, 2)"):
        estimate_l1_ball(np.ones((2, 1, 2)), support=np.ones((2, 2), dtype=bool))
    with raises_fact(ModelError, "counts[0, 0, 1] = 1.0", "outside the support"):
        estimate_l1_ball(np.ones((2, 1, 2)), support=np.array([[[True, False]]] * 2))
    with raises_fact(ModelError, "alpha", "(25, 4)", "(3,)"):
        l1_ball(safe_navigation_1(), np.ones(3))
    uset = l1_ball(safe_navigation_1().with_transitions(safe_navigation_1().P), 0.1)
    with raises_fact(ModelError, "no outcome form"):
        uset.worst_case(np.zeros(25), form="outcome")
