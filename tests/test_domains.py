"""Tests of rcmdp_exact.domains against hand computations and independent formulas.

Expected numbers come from the protocol facts (docs/protocol.md) written out here (cost
cells, arrows, prices), hand-walked paths, closed forms (geometric waiting times) and scipy.stats /
Monte Carlo for the demand, never from the code under test.
"""


import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare, norm

from rcmdp_exact import ModelError, TabularCMDP, evaluate, evaluate_finite_horizon
from rcmdp_exact import domains as D

# ----------------------------------------------------------------------------- facts
MOVES = {0: (-1, 0), 1: (1, 0), 2: (0, 1), 3: (0, -1)}
OUTCOME_XY = {0: (0, 0), 1: (-1, 0), 2: (1, 0), 3: (0, 1), 4: (0, -1)}
NAV1_REF = {(1, 0), (1, 1), (1, 2), (1, 3), (3, 2), (3, 3), (3, 4)}
NAV1_PAPER = {(1, 0), (1, 1), (1, 2), (3, 2), (3, 3), (3, 4)}
NAV2_COST = {
    **{c: 0.1 for c in [(1, 0), (1, 1), (1, 2), (2, 2), (3, 2), (3, 3), (3, 4)]},
    **{c: 1.0 for c in [(0, 4), (1, 4), (3, 0), (4, 0)]},
}
# worst-case arrows of test 2B, by row y (docs/protocol.md), written cell by cell
ARROWS = {}
for _x in range(5):
    ARROWS[(_x, 0)] = (1, 0) if _x < 3 else (0, 0)
    ARROWS[(_x, 1)] = (0, -1)
    ARROWS[(_x, 2)] = (-1, 0)
    ARROWS[(_x, 3)] = (0, 1) if _x < 2 else (-1, 0)
    ARROWS[(_x, 4)] = (0, 0) if _x < 2 else (-1, 0)


def idx(x, y):
    return 5 * x + y


def clip_move(x, y, dx, dy):
    return min(max(x + dx, 0), 4), min(max(y + dy, 0), 4)


def cost_of(layout, cell):
    if layout == "nav2":
        return NAV2_COST.get(cell, 0.0)
    return 1.0 if cell in (NAV1_REF if layout == "reference" else NAV1_PAPER) else 0.0


def walk(policy, max_steps=50):
    """Cells entered by a deterministic policy with certain moves, from (0,0) to (4,4)."""
    x, y = 0, 0
    cells = []
    while (x, y) != (4, 4):
        x, y = clip_move(x, y, *MOVES[int(policy[idx(x, y)])])
        cells.append((x, y))
        assert len(cells) <= max_steps, "policy does not reach the goal"
    return cells


def hand_policy(first, second):
    """Move `first` until the wall, then `second` (deterministic policy array)."""
    pol = np.empty(25, dtype=np.int64)
    for x in range(5):
        for y in range(5):
            blocked = (first == 1 and x == 4) or (first == 2 and y == 4)
            pol[idx(x, y)] = second if blocked else first
    return pol


def nav_models():
    return {
        "reference": D.safe_navigation_1(1.0),
        "paper": D.safe_navigation_1(1.0, cost_layout="paper"),
        "nav2": D.safe_navigation_2(1.0),
    }


# ----------------------------------------------------------------------------- grid
def test_grid_state_and_xy_roundtrip():
    for x in range(5):
        for y in range(5):
            assert D.grid_state(x, y) == 5 * x + y
            assert D.grid_xy(5 * x + y) == (x, y)
    xs, ys = D.grid_xy(np.arange(25))
    np.testing.assert_array_equal(D.grid_state(xs, ys), np.arange(25))


def test_grid_errors():
    with raises_fact(ModelError, 'grid coordinate x = 5', '0..4'):
        D.grid_state(5, 0)
    with raises_fact(ModelError, 'state', '25', '0..24'):
        D.grid_xy(25)


def test_grid_graph_is_networkx_5x5():
    G = D.grid_graph()
    assert G.number_of_nodes() == 25 and G.number_of_edges() == 40  # 2 * 5 * 4


@pytest.mark.parametrize("name", ["reference", "paper", "nav2"])
def test_navigation_fields(name):
    m = nav_models()[name]
    assert (m.n_states, m.n_actions, m.n_constraints) == (25, 4, 1)
    np.testing.assert_array_equal(m.p0, np.eye(25)[0])
    np.testing.assert_array_equal(np.flatnonzero(m.terminal), [24])
    assert m.horizon == (100 if name == "nav2" else 200)
    np.testing.assert_allclose(m.d, [0.4 if name == "nav2" else 3.0])
    assert m.gamma == 0.99
    assert m.state_labels[idx(2, 3)] == "(2,3)"
    np.testing.assert_array_equal(m.state_features[idx(3, 1)], [3.0, 1.0])
    assert m.outcomes.shape == (25, 4, 5)
    assert m.reward_depends_on_next_state and m.cost_depends_on_next_state


def test_outcome_map_by_hand():
    out = D.safe_navigation_1().outcomes
    # order: stay, (-1,0), (+1,0), (0,+1), (0,-1), clipped at walls
    expect = {
        (0, 0): [0, 0, idx(1, 0), idx(0, 1), 0],
        (2, 2): [12, idx(1, 2), idx(3, 2), idx(2, 3), idx(2, 1)],
        (4, 0): [20, idx(3, 0), 20, idx(4, 1), 20],
        (0, 4): [4, 4, idx(1, 4), 4, idx(0, 3)],
        (4, 4): [24] * 5,  # the terminal goal: every outcome stays
    }
    for (x, y), row in expect.items():
        for a in range(4):
            np.testing.assert_array_equal(out[idx(x, y), a], row)
    # independently: every non-goal outcome is the clipped offset
    for x in range(5):
        for y in range(5):
            if (x, y) == (4, 4):
                continue
            for o, (dx, dy) in OUTCOME_XY.items():
                assert out[idx(x, y), 0, o] == idx(*clip_move(x, y, dx, dy))


def test_transitions_at_walls_by_hand():
    m = D.safe_navigation_1(0.8)
    P = m.P
    np.testing.assert_allclose(P[0, 0], np.eye(25)[0])  # left at (0,0): wall, stay
    np.testing.assert_allclose(P[0, 3], np.eye(25)[0])  # down at (0,0): wall, stay
    row = np.zeros(25)
    row[idx(1, 0)], row[0] = 0.8, 0.2
    np.testing.assert_allclose(P[0, 1], row)  # right at (0,0)
    np.testing.assert_allclose(P[idx(4, 2), 1], np.eye(25)[idx(4, 2)])  # right at x=4
    np.testing.assert_allclose(P[idx(2, 4), 2], np.eye(25)[idx(2, 4)])  # up at y=4
    row = np.zeros(25)
    row[idx(2, 3)], row[idx(2, 4)] = 0.8, 0.2
    np.testing.assert_allclose(P[idx(2, 4), 3], row)
    for a in range(4):
        np.testing.assert_allclose(P[24, a], np.eye(25)[24])  # goal absorbing


@pytest.mark.parametrize("name", ["reference", "paper", "nav2"])
def test_rewards_and_costs_on_entered_cell(name):
    m = nav_models()[name]
    expected = np.array([cost_of(name, (x, y)) for x in range(5) for y in range(5)])
    np.testing.assert_allclose(m.C[..., 0], np.broadcast_to(expected, (25, 4, 25)))
    np.testing.assert_allclose(m.R, -1.0)
    r = np.full((25, 4), -1.0)
    r[24] = 0.0
    np.testing.assert_allclose(m.r, r)


def test_paper_layout_differs_only_at_1_3():
    ref = D.safe_navigation_1().C[0, 0, :, 0]
    pap = D.safe_navigation_1(cost_layout="paper").C[0, 0, :, 0]
    np.testing.assert_array_equal(np.flatnonzero(ref != pap), [idx(1, 3)])
    assert ref.sum() == 7 and pap.sum() == 6


@pytest.mark.parametrize("name", ["reference", "paper", "nav2"])
@pytest.mark.parametrize("first,second", [(1, 2), (2, 1)])
def test_deterministic_hand_paths(name, first, second):
    """With certain moves, right-then-up and up-then-right take 8 steps; cost by hand."""
    m = nav_models()[name]
    pol = hand_policy(first, second)
    res = evaluate_finite_horizon(m, pol)
    hand_cost = {
        # right x4 then up x4 enters (1,0),(2,0),(3,0),(4,0),(4,1),(4,2),(4,3),(4,4)
        ("reference", 1): 1.0, ("paper", 1): 1.0, ("nav2", 1): 0.1 + 1.0 + 1.0,
        # up x4 then right x4 enters (0,1),(0,2),(0,3),(0,4),(1,4),(2,4),(3,4),(4,4)
        ("reference", 2): 1.0, ("paper", 2): 1.0, ("nav2", 2): 1.0 + 1.0 + 0.1,
    }[(name, first)]
    assert res.value == pytest.approx(-8.0, abs=1e-12)
    assert res.costs[0] == pytest.approx(hand_cost, abs=1e-12)


@pytest.mark.parametrize("name", ["reference", "paper", "nav2"])
def test_shortest_path_policy_deterministic(name):
    m = nav_models()[name]
    pol = D.shortest_path_policy(m)
    cells = walk(pol)
    assert len(cells) == 8
    res = evaluate_finite_horizon(m, pol)
    assert res.value == pytest.approx(-8.0, abs=1e-12)
    assert res.costs[0] == pytest.approx(sum(cost_of(name, c) for c in cells), abs=1e-12)


def test_least_cost_paths_by_hand():
    # Safe Navigation 1, reference layout: the column x=1 is blocked up to y=3, so the
    # cost-free detour (0,0)->(0,4)->(2,4)->(2,1)->(4,1)->(4,4) has 4+2+3+2+3 = 14 steps;
    # paper layout: (1,3) is free, (0,0)->(0,3)->(2,3)->(2,1)->(4,1)->(4,4) has
    # 3+2+2+2+3 = 12 steps.  The column x=3 forces the passage at y <= 1 in both.
    for layout, steps in (("reference", 14), ("paper", 12)):
        m = nav_models()[layout]
        pol = D.shortest_path_policy(m, minimise_cost=True)
        cells = walk(pol)
        assert sum(cost_of(layout, c) for c in cells) == 0.0
        res = evaluate_finite_horizon(m, pol)
        assert len(cells) == steps
        assert (res.value, res.costs[0]) == (pytest.approx(-steps), pytest.approx(0.0))
    # Safe Navigation 2: no cost-free path exists; (0,0)->(0,3)->(4,3)->(4,4) enters one
    # grey cell (3,3): 8 steps, cost 0.1
    m = nav_models()["nav2"]
    res = evaluate_finite_horizon(m, D.shortest_path_policy(m, minimise_cost=True))
    assert res.value == pytest.approx(-8.0, abs=1e-12)
    assert res.costs[0] == pytest.approx(0.1, abs=1e-12)


def test_geometric_waiting_times_under_p_success():
    """With p = 0.8 each of the 8 moves takes 1/p steps on average: value -8/p; every
    step spent on or entering a cost cell pays, so the right-then-up path pays 1/p for
    (1,0), and the 14-step detour takes 14/p steps (T = 200 truncation is negligible)."""
    m = D.safe_navigation_1(0.8)
    res = evaluate_finite_horizon(m, hand_policy(1, 2))
    assert res.value == pytest.approx(-8 / 0.8, abs=1e-9)
    assert res.costs[0] == pytest.approx(1 / 0.8, abs=1e-9)
    res = evaluate_finite_horizon(m, D.shortest_path_policy(m, minimise_cost=True))
    assert res.value == pytest.approx(-14 / 0.8, abs=1e-9)
    # discounted: each step until arrival earns -1, arrival after k geometric moves:
    # V = -(1 - E[gamma^tau]) / (1 - gamma), E[gamma^tau] = (p gamma / (1 - (1-p) gamma))^8
    g, p = 0.99, 0.8
    phi = p * g / (1 - (1 - p) * g)
    assert evaluate(m, hand_policy(1, 2)).value == pytest.approx(-(1 - phi**8) / (1 - g),
                                                                 rel=1e-10)


@pytest.mark.parametrize("name,expected", [("inventory", 9.464), ("nav1", 6.928),
                                           ("nav2", 0.631)])
def test_rescaled_budgets(name, expected):
    m = D.paper_domain(name)
    pol = np.full((m.n_states, m.n_actions), 1.0 / m.n_actions)
    res = evaluate_finite_horizon(m, pol)
    assert res.budget[0] == pytest.approx(expected, abs=5e-4)
    T, g = m.horizon, m.gamma
    assert res.budget[0] == pytest.approx(m.d[0] * T * (1 - g) / (1 - g**T), rel=1e-12)


@given(p=st.floats(0.0, 1.0), nav2=st.booleans())
def test_navigation_valid_for_any_p_success(p, nav2):
    m = D.safe_navigation_2(p) if nav2 else D.safe_navigation_1(p)
    P = m.P
    assert (P >= 0).all()
    np.testing.assert_allclose(P.sum(axis=2), 1.0, atol=1e-14)
    for x in range(5):
        for y in range(5):
            if (x, y) == (4, 4):
                continue
            for a, (dx, dy) in MOVES.items():
                row = np.zeros(25)
                row[idx(*clip_move(x, y, dx, dy))] += p
                row[idx(x, y)] += 1 - p
                np.testing.assert_allclose(P[idx(x, y), a], row, atol=1e-15)


def test_navigation_errors():
    with raises_fact(ModelError, 'p_success', '[0, 1]', '1.5'):
        D.safe_navigation_1(1.5)
    with raises_fact(ModelError, 'cost_layout', "'figure'", "'reference'", "'paper'"):
        D.safe_navigation_1(cost_layout="figure")
    with raises_fact(ModelError, 'p_success', "'0.8'"):
        D.safe_navigation_2("0.8")
    with raises_fact(ModelError, 'cell_cost', 'str'):
        D.safe_navigation("cheap", d=1.0, horizon=10, p_success=0.5)
    with raises_fact(ModelError, 'cost_weight', '-1.0'):
        D.shortest_path_policy(D.safe_navigation_1(), minimise_cost=True, cost_weight=-1.0)
    with raises_fact(ModelError, 'grid coordinate x', 'list'):
        D.grid_state([[1, 2], [3]], 0)
    with raises_fact(ModelError, 'failure_outcome[0, 1] = 5', '0..4'):
        bad = np.zeros((25, 4), dtype=int)
        bad[0, 1] = 5
        D.safe_navigation(np.zeros(25), d=1.0, horizon=10, p_success=0.5,
                          failure_outcome=bad)


# ----------------------------------------------------------------------------- inventory
MU0, SIGMA0 = 10 / 4, 10 / 6


def demand_pmf(mu, sigma, demand, kmax=30):
    """Independent: P(demand = k), k = 0..kmax, from scipy.stats.norm."""
    F = norm(mu, sigma).cdf
    if demand == "reference":  # demand = max(0, ceil(D))
        pmf = [F(0)] + [F(k) - F(k - 1) for k in range(1, kmax + 1)]
    else:  # demand = round(max(0, D))
        pmf = [F(0.5)] + [F(k + 0.5) - F(k - 0.5) for k in range(1, kmax + 1)]
    return np.array(pmf)


def inventory_by_loops(mu, sigma, demand, revenue):
    """A straightforward loop implementation of the inventory model of docs/protocol.md."""
    S = 10
    pmf = demand_pmf(mu, sigma, demand)
    P = np.zeros((S, S, S))
    r = np.zeros((S, S))
    c = np.zeros((S, S))
    for s in range(S):
        for a in range(S):
            order = min(a, S - 1 - s)
            I = s + order
            for k, pk in enumerate(pmf):
                P[s, a, max(0, I - k)] += pk
            P[s, a, 0] += 1 - pmf.sum()  # demand beyond kmax empties the stock
            sold = sum(P[s, a, j] * (I - j) for j in range(S))
            exp_next = sum(P[s, a, j] * j for j in range(S))
            income = 3.99 * (sold if revenue == "economic" else exp_next)
            r[s, a] = income - 2.49 * order - 0.03 * I
            L = MU0 + SIGMA0 if s <= 2 else MU0
            c[s, a] = max(0.0, order - L)
    return P, r, c


def test_inventory_fields():
    m = D.inventory()
    assert (m.n_states, m.n_actions, m.n_constraints) == (10, 10, 1)
    assert m.horizon == 100 and m.gamma == 0.99 and not m.terminal.any()
    np.testing.assert_allclose(m.d, [6.0])
    np.testing.assert_array_equal(m.p0, np.eye(10)[0])
    np.testing.assert_array_equal(m.outcomes, np.broadcast_to(np.arange(10), (10, 10, 10)))
    np.testing.assert_array_equal(m.state_features[:, 0], np.arange(10))


@pytest.mark.parametrize("demand", ["reference", "rounded"])
@pytest.mark.parametrize("revenue", ["economic", "reference"])
def test_inventory_matches_loop_implementation(demand, revenue):
    for mu, sigma in [(MU0, SIGMA0), (10 / 3, 10 / 8), (10 / 6, 10 / 4)]:
        m = D.inventory(mu, sigma, revenue=revenue, demand=demand)
        P, r, c = inventory_by_loops(mu, sigma, demand, revenue)
        np.testing.assert_allclose(m.P, P, atol=1e-13)
        np.testing.assert_allclose(m.r, r, atol=1e-11)
        np.testing.assert_allclose(m.c[:, :, 0], c, atol=1e-14)
        np.testing.assert_allclose(m.P.sum(axis=2), 1.0, atol=1e-14)


def test_inventory_zero_demand_probabilities():
    """P(D=0): Phi(0) = 0.067 (reference) vs P(D < 0.5) = 0.115 (rounded)."""
    ref = D.inventory().P[5, 0, 5]  # stock 5, no order: s' = 5 iff demand 0
    rnd = D.inventory(demand="rounded").P[5, 0, 5]
    assert ref == pytest.approx(norm.cdf(0, MU0, SIGMA0), abs=1e-14)
    assert rnd == pytest.approx(norm.cdf(0.5, MU0, SIGMA0), abs=1e-14)
    assert round(ref, 3) == 0.067 and round(rnd, 3) == 0.115


def test_rounded_demand_against_monte_carlo():
    rng = np.random.default_rng(12345)
    n = 200_000
    demand = np.round(np.maximum(0.0, rng.normal(MU0, SIGMA0, size=n)))
    nxt = np.maximum(0, 6 - demand).astype(int)  # stock 6, no order
    freq = np.bincount(nxt, minlength=10) / n
    p = D.inventory(demand="rounded").P[6, 0]
    se = np.sqrt(p * (1 - p) / n)
    assert (np.abs(freq - p) <= 4.5 * se + 1e-12).all()


def test_inventory_truncation_and_costs_by_hand():
    m = D.inventory()
    np.testing.assert_array_equal(m.P[7, 9], m.P[7, 2])  # order truncated to 9 - 7 = 2
    c = m.c[:, :, 0]
    assert c[0, 9] == pytest.approx(9 - (2.5 + 10 / 6))
    assert c[3, 3] == pytest.approx(0.5)
    assert c[2, 4] == 0.0 and c[2, 5] == pytest.approx(5 - (2.5 + 10 / 6))
    assert c[7, 9] == 0.0  # truncated order 2 < 2.5
    # r(s=0, a=0): nothing in stock, nothing ordered: reward 0
    assert m.r[0, 0] == 0.0
    # the economic revenue of one unit at stock 1: sold iff demand >= 1
    assert m.r[1, 0] == pytest.approx(3.99 * (1 - norm.cdf(0, MU0, SIGMA0)) - 0.03)
    assert D.inventory(revenue="reference").r[1, 0] == pytest.approx(
        3.99 * norm.cdf(0, MU0, SIGMA0) - 0.03)


def test_inventory_transition_rewards_by_hand():
    """R(s, a, s') per transition.  Stock 3, order 4 (I = 7): economic 3.99 (7 - s') -
    2.49 * 4 - 0.03 * 7; next stocks above I (possible only under another kernel, e.g.
    a worst case of an uncertainty set) sell nothing rather than earn a negative
    revenue.  Reference: 3.99 s' - 2.49 * 4 - 0.03 * 7.  Stock 8, order 5: truncated to
    1 (I = 9), so 2.49 is paid once."""
    econ, ref = D.inventory().R, D.inventory(revenue="reference").R
    fixed = -2.49 * 4 - 0.03 * 7
    for nxt in range(10):
        sold = max(0, 7 - nxt)
        assert econ[3, 4, nxt] == pytest.approx(3.99 * sold + fixed, abs=1e-12)
        assert ref[3, 4, nxt] == pytest.approx(3.99 * nxt + fixed, abs=1e-12)
    assert econ[8, 5, 9] == pytest.approx(-2.49 * 1 - 0.03 * 9, abs=1e-12)
    assert econ[8, 5, 0] == pytest.approx(3.99 * 9 - 2.49 * 1 - 0.03 * 9, abs=1e-12)


def test_order_nothing_earns_nothing():
    m = D.inventory()
    res = evaluate_finite_horizon(m, np.zeros(10, dtype=int))
    assert res.value == 0.0 and res.costs[0] == 0.0


@given(mu=st.floats(0.0, 6.0), sigma=st.floats(0.2, 4.0),
       demand=st.sampled_from(["reference", "rounded"]))
def test_inventory_rows_are_distributions(mu, sigma, demand):
    P = D.inventory(mu, sigma, demand=demand).P
    assert (P >= 0).all()
    np.testing.assert_allclose(P.sum(axis=2), 1.0, atol=1e-13)
    # s' never exceeds the stock after ordering
    s, a, j = np.indices(P.shape)
    assert (P[j > s + np.minimum(a, 9 - s)] == 0).all()


def test_inventory_errors():
    with raises_fact(ModelError, 'revenue', "'profit'", "'economic'"):
        D.inventory(revenue="profit")
    with raises_fact(ModelError, 'demand', "'floor'", "'rounded'"):
        D.inventory(demand="floor")
    with raises_fact(ModelError, 'sigma', 'demand', '0.0'):
        D.inventory(2.5, 0.0)


# ----------------------------------------------------------------------------- suites
def test_inventory_suite():
    base = D.inventory()
    settings = D.perturbations("inventory")
    assert len(settings) == 9 and len({s.label for s in settings}) == 9
    grid = {(round(s.info["mu"], 12), round(s.info["sigma"], 12)) for s in settings}
    assert grid == {(round(m, 12), round(g, 12)) for m in (10 / 6, 10 / 4, 10 / 3)
                    for g in (10 / 8, 10 / 6, 10 / 4)}
    for s in settings:
        np.testing.assert_array_equal(s.model.C, base.C)  # the limit keeps mu0, sigma0
        same = np.isclose(s.info["mu"], MU0) and np.isclose(s.info["sigma"], SIGMA0)
        assert np.array_equal(s.model.P, base.P) == same
        P, _, _ = inventory_by_loops(s.info["mu"], s.info["sigma"], "reference", "economic")
        np.testing.assert_allclose(s.model.P, P, atol=1e-13)


@pytest.mark.parametrize("suite,builder", [("1A", D.safe_navigation_1),
                                           ("2A", D.safe_navigation_2)])
def test_p_success_suites(suite, builder):
    settings = D.perturbations(suite)
    assert [s.info["p_success"] for s in settings] == [0.6, 0.7, 0.8, 0.9, 1.0]
    for s in settings:
        np.testing.assert_array_equal(s.model.P, builder(s.info["p_success"]).P)


def expected_row(x, y, a, p, succ_off, fail_off):
    row = np.zeros(25)
    row[idx(*clip_move(x, y, *succ_off))] += p
    row[idx(*clip_move(x, y, *fail_off))] += 1 - p
    return row


@pytest.mark.parametrize("offset_on", ["failure", "success"])
def test_1b_draws_by_hand(offset_on):
    settings = D.perturbations("1B", offset_on=offset_on)
    assert len(settings) == 250
    assert [s.group for s in settings[::50]] == ["N=5", "N=10", "N=20", "N=50", "N=100"]
    for st_ in settings:
        info = st_.info
        pairs, outs = np.array(info["pairs"]), np.array(info["outcomes"])
        assert len(set(pairs.tolist())) == len(pairs) == info["N"]  # no replacement
        assert ((pairs >= 0) & (pairs < 100)).all() and ((outs >= 0) & (outs < 5)).all()
        drawn = dict(zip(pairs.tolist(), outs.tolist(), strict=True))
        expected = np.zeros((25, 4, 25))  # every row by hand, compared in one call
        for x in range(5):
            for y in range(5):
                for a in range(4):
                    if (x, y) == (4, 4):
                        expected[24, a] = np.eye(25)[24]
                        continue
                    move, stay = MOVES[a], (0, 0)
                    k = idx(x, y) * 4 + a
                    if k in drawn and offset_on == "failure":
                        row = expected_row(x, y, a, 0.8, move, OUTCOME_XY[drawn[k]])
                    elif k in drawn:
                        row = expected_row(x, y, a, 0.8, OUTCOME_XY[drawn[k]], stay)
                    else:
                        row = expected_row(x, y, a, 0.8, move, stay)
                    expected[idx(x, y), a] = row
        np.testing.assert_allclose(st_.model.P, expected, atol=1e-15)
        assert (np.asarray(st_.model.P)[24] == np.eye(25)[24]).all()  # absorbing, exactly


def test_1b_reproducible_and_seed_dependent():
    a = D.perturbations("1B", seed=0, n_draws=5)
    b = D.perturbations("1B", seed=0, n_draws=5)
    c = D.perturbations("1B", seed=1, n_draws=5)
    assert all(np.array_equal(x.model.P, y.model.P) and x.info == y.info
               for x, y in zip(a, b, strict=True))
    assert any(x.info["pairs"] != y.info["pairs"] for x, y in zip(a, c, strict=True))
    # a single draw is reproducible on its own
    one = D.draw_1b(10, 3, seed=0)
    assert one.info == a[5 + 3].info and np.array_equal(one.model.P, a[8].model.P)
    # draws within one N differ
    assert len({tuple(x.info["pairs"]) for x in a[:5]}) == 5


def test_1b_outcomes_uniform():
    """All 50 x (5 + 10 + 20 + 50 + 100) = 9250 drawn outcomes: uniform on 5 outcomes."""
    outs = np.concatenate([s.info["outcomes"] for s in D.perturbations("1B")])
    assert outs.size == 9250
    assert chisquare(np.bincount(outs, minlength=5)).pvalue > 1e-3


def test_arrow_table():
    arrows = D.arrow_offsets()
    for (x, y), off in ARROWS.items():
        assert tuple(arrows[idx(x, y)]) == off, (x, y)


def test_2b_draws_by_hand():
    settings = D.perturbations("2B")
    assert len(settings) == 250
    assert [s.group for s in settings[::50]] == ["N=5", "N=10", "N=15", "N=20", "N=25"]
    for st_ in settings:
        states = set(st_.info["states"])
        assert len(states) == st_.info["N"]
        P = np.asarray(st_.model.P)
        expected = P.copy()  # the goal's rows are another test's; every other row by hand
        for x in range(5):
            for y in range(5):
                if (x, y) == (4, 4):
                    continue
                fail = ARROWS[(x, y)] if idx(x, y) in states else (0, 0)
                for a in range(4):
                    expected[idx(x, y), a] = expected_row(x, y, a, 0.5, MOVES[a], fail)
        np.testing.assert_allclose(P, expected, atol=1e-15)
    again = D.perturbations("2B", n_draws=3)
    other = D.perturbations("2B", n_draws=3, seed=7)
    assert [s.info for s in again] == [s.info for s in settings if s.info["draw"] < 3]
    assert any(x.info["states"] != y.info["states"] for x, y in zip(again, other, strict=True)
               if x.info["N"] < 25)


@pytest.mark.parametrize("suite", ["inventory", "1A", "1B", "2A", "2B"])
def test_every_setting_is_a_valid_model(suite):
    train = {"inventory": "inventory", "1A": "nav1", "1B": "nav1", "2A": "nav2",
             "2B": "nav2"}[suite]
    base = D.paper_domain(train)
    for s in D.perturbations(suite, n_draws=10):
        m = s.model
        assert (m.P >= 0).all()
        np.testing.assert_allclose(m.P.sum(axis=2), 1.0, atol=1e-13)
        assert (m.P[m.terminal][:, :, m.terminal] == 1).all()
        np.testing.assert_array_equal(m.R, base.R)
        np.testing.assert_array_equal(m.C, base.C)
        np.testing.assert_array_equal(m.d, base.d)
        np.testing.assert_array_equal(m.outcomes, base.outcomes)
        assert (m.horizon, m.gamma) == (base.horizon, base.gamma)


def test_suite_errors():
    with raises_fact(ModelError, 'test suite', "'3A'", "'2B'"):
        D.perturbations("3A")
    with raises_fact(ModelError, 'offset_on', "'always'", "'failure'", "'success'"):
        D.perturbations("1B", offset_on="always")
    with raises_fact(ModelError, 'seed', '-1'):
        D.perturbations("2B", seed=-1)
    with raises_fact(ModelError, 'n_draws', '>= 0', '-1'):
        D.perturbations("1B", n_draws=-1)
    with raises_fact(ModelError, 'N', '0..100', '101'):
        D.draw_1b(101, 0)
    with raises_fact(ModelError, 'N', '0..25', '26'):
        D.draw_2b(26, 0)


def test_paper_domain_and_constants():
    assert D.PAPER_DOMAINS == ("inventory", "nav1", "nav2")
    assert D.ESTIMATION_EPISODES == {
        "inventory": {"paper": 100, "reference": 10},
        "nav1": {"paper": 100, "reference": 20},
        "nav2": {"paper": 10_000, "reference": 10_000},
    }
    np.testing.assert_array_equal(D.paper_domain("nav1").P, D.safe_navigation_1(0.8).P)
    np.testing.assert_array_equal(D.paper_domain("nav2").P, D.safe_navigation_2(1.0).P)
    with raises_fact(ModelError, 'paper domain', "'nav3'", "'nav1'"):
        D.paper_domain("nav3")


# ----------------------------------------------------------------------------- garnet
@given(S=st.integers(1, 12), A=st.integers(1, 4), data=st.data(), K=st.integers(0, 3),
       seed=st.integers(0, 2**32 - 1), nsd=st.booleans())
def test_garnet_valid_with_exact_branching(S, A, data, K, seed, nsd):
    b = data.draw(st.integers(1, S))
    m = D.garnet(S, A, b, K, seed=seed, next_state_dependent=nsd)
    P = m.P
    assert (P >= 0).all()
    np.testing.assert_allclose(P.sum(axis=2), 1.0, atol=1e-13)
    assert ((P > 0).sum(axis=2) == b).all()
    out = m.outcomes
    assert out.shape == (S, A, b)
    assert all(len(set(out[s, a].tolist())) == b for s in range(S) for a in range(A))
    assert (P[np.arange(S)[:, None, None], np.arange(A)[None, :, None], out] > 0).all()
    assert m.n_constraints == K and m.reward_depends_on_next_state == nsd
    assert ((m.R >= 0) & (m.R <= 1)).all() and ((m.C >= 0) & (m.C <= 1)).all()
    again = D.garnet(S, A, b, K, seed=seed, next_state_dependent=nsd)
    for f in ("P", "R", "C", "d", "p0"):
        np.testing.assert_array_equal(getattr(m, f), getattr(again, f))


def test_garnet_seeds_differ_and_generator_accepted():
    a = D.garnet(6, 2, 3, seed=1)
    b = D.garnet(6, 2, 3, seed=2)
    assert not np.array_equal(a.R, b.R)
    c = D.garnet(6, 2, 3, seed=np.random.default_rng(1))
    np.testing.assert_array_equal(a.P, c.P)


def test_garnet_budgets_and_start():
    """d_k = 0.5 / (1 - gamma), the discounted cost of a mean cost of 1/2 per step
    (0.5 when gamma = 1); p0 uniform; no horizon, no terminal state."""
    m = D.garnet(5, 2, 2, n_constraints=3, seed=0, gamma=0.8)
    np.testing.assert_allclose(m.d, [2.5, 2.5, 2.5], rtol=1e-15)
    np.testing.assert_array_equal(D.garnet(5, 2, 2, seed=0, gamma=1.0).d, [0.5])
    np.testing.assert_allclose(m.p0, np.full(5, 0.2), rtol=1e-15)
    assert m.horizon is None and not m.terminal.any()


def test_garnet_errors():
    with raises_fact(ModelError, 'branching', '1..4', '5'):
        D.garnet(4, 2, 5)
    with raises_fact(ModelError, 'n_states', '>= 1', '0'):
        D.garnet(0, 2, 1)
    with raises_fact(ModelError, 'seed', "'x'"):
        D.garnet(4, 2, 2, seed="x")
    with raises_fact(ModelError, 'gamma', 'True'):
        D.garnet(4, 2, 2, gamma=True)


def old_garnet_draw(S, A, b, K, seed, nsd):
    """The permutation draw, written out here: argsort of S*A*S uniform keys, then a
    flat Dirichlet, then rewards and costs, all from one default_rng(seed)."""
    rng = np.random.default_rng(seed)
    keys = rng.random((S, A, S))
    nxt = np.argsort(keys, axis=2, kind="stable")[:, :, :b]
    prob = rng.dirichlet(np.ones(b), size=(S, A)) if b > 1 else np.ones((S, A, 1))
    if nsd:
        R, C = rng.random((S, A, S)), rng.random((S, A, S, K))
    else:
        R, C = rng.random((S, A)), rng.random((S, A, K))
    P = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            P[s, a, nxt[s, a]] += prob[s, a]
    return P, R, C, nxt


@settings(max_examples=examples(30), deadline=None)
@given(S=st.integers(1, 40), A=st.integers(1, 4), data=st.data(), K=st.integers(0, 2),
       seed=st.integers(0, 2**32 - 1), nsd=st.booleans())
def test_garnet_automatic_mode_keeps_the_permutation_draw(S, A, data, K, seed, nsd):
    b = data.draw(st.integers(1, S))
    m = D.garnet(S, A, b, K, seed=seed, next_state_dependent=nsd)
    P, R, C, nxt = old_garnet_draw(S, A, b, K, seed, nsd)
    assert not m.is_sparse
    np.testing.assert_array_equal(m.P, P)
    np.testing.assert_array_equal(m.outcomes, nxt)
    if nsd:
        np.testing.assert_array_equal(m.R, R)
        np.testing.assert_array_equal(m.C, C)
    else:
        np.testing.assert_array_equal(m.r, R)
        np.testing.assert_array_equal(m.c, C)


def test_garnet_permutation_draw_at_a_larger_size():
    m = D.garnet(300, 4, 5, 2, seed=9)  # 360,000 entries, below 2**24
    P, R, C, _ = old_garnet_draw(300, 4, 5, 2, 9, True)
    np.testing.assert_array_equal(m.P, P)
    np.testing.assert_array_equal(m.R, R)
    np.testing.assert_array_equal(m.C, C)


def test_garnet_mode_switches_above_the_threshold(monkeypatch):
    import importlib

    G = importlib.import_module("rcmdp_exact.domains.garnet")  # the module, not the function

    assert G.SPARSE_ABOVE == 2**24
    monkeypatch.setattr(G, "SPARSE_ABOVE", 100)
    assert not D.garnet(5, 4, 2, seed=0).is_sparse  # 5*4*5 = 100 entries
    assert D.garnet(6, 3, 2, seed=0).is_sparse  # 108 entries
    assert not D.garnet(6, 3, 2, seed=0, sparse=False).is_sparse
    assert D.garnet(2, 1, 1, seed=0, sparse=True).is_sparse


@settings(max_examples=examples(30), deadline=None)
@given(S=st.integers(1, 30), A=st.integers(1, 4), data=st.data(), K=st.integers(0, 2),
       seed=st.integers(0, 2**32 - 1), nsd=st.booleans())
def test_sparse_garnet_exact_branching(S, A, data, K, seed, nsd):
    b = data.draw(st.integers(1, S))
    m = D.garnet(S, A, b, K, seed=seed, next_state_dependent=nsd, sparse=True, horizon=9)
    Ps = m.P_sparse
    assert m.is_sparse and m.horizon == 9
    assert (np.diff(Ps.indptr) == b).all()  # exactly b distinct next states per pair
    assert (Ps.data > 0).all()
    np.testing.assert_allclose(Ps.sum(axis=1), 1.0, rtol=0, atol=1e-13)
    out = m.outcomes
    assert out.shape == (S, A, b)
    np.testing.assert_array_equal(out.reshape(S * A, b), Ps.indices.reshape(S * A, b))
    assert (np.diff(out, axis=2) > 0).all()
    assert m.n_constraints == K and not m.reward_depends_on_next_state
    assert ((m.r >= 0) & (m.r <= 1)).all() and ((m.c >= 0) & (m.c <= 1)).all()
    again = D.garnet(S, A, b, K, seed=seed, next_state_dependent=nsd, sparse=True, horizon=9)
    for f in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(Ps, f), getattr(again.P_sparse, f))
    np.testing.assert_array_equal(m.r, again.r)
    np.testing.assert_array_equal(m.c, again.c)


def test_sparse_garnet_large_and_seeded():
    m = D.garnet(20000, 4, 3, seed=5)  # 1.6e9 entries: sparse automatically
    assert m.is_sparse and m.n_states == 20000
    Ps = m.P_sparse
    assert Ps.nnz == 20000 * 4 * 3 and (np.diff(Ps.indptr) == 3).all()
    idx = Ps.indices.reshape(-1, 3)
    assert (np.diff(idx, axis=1) > 0).all()
    np.testing.assert_allclose(Ps.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    other = D.garnet(20000, 4, 3, seed=6)
    assert not np.array_equal(Ps.indices, other.P_sparse.indices)
    # uniform next states: every state is hit about S*A*b/S = 12 times
    hits = np.bincount(Ps.indices, minlength=20000)
    assert abs(hits.mean() - 12.0) < 1e-12 and 2.5 < hits.var() < 24  # Poisson-like
    # rewards: E[sum_o p_o R_o] = 1/2 and the mean of 80,000 such draws is within 0.01
    assert abs(m.r.mean() - 0.5) < 0.01


def test_sparse_garnet_evaluates_like_its_dense_twin():
    m = D.garnet(30, 3, 4, 2, seed=2, sparse=True)
    dense = TabularCMDP(m.P, m.r, m.c, d=m.d, gamma=m.gamma, p0=m.p0)
    pi = np.full((30, 3), 1 / 3)
    a, b = evaluate(m, pi), evaluate(dense, pi)
    np.testing.assert_allclose(a.v, b.v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.c, b.c, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n, k", [(5, 2), (5, 4), (6, 3), (4, 1), (3, 3)])
def test_distinct_draws_are_uniform_subsets(n, k):
    """Chi-square test of the subset frequencies against the uniform law on the
    C(n, k) subsets (k <= n/2 uses redraws, k > n/2 the complement)."""
    from itertools import combinations

    from rcmdp_exact.domains.garnet import distinct_draws

    rows = 20000
    x = distinct_draws(np.random.default_rng(n * 10 + k), rows, n, k)
    assert x.shape == (rows, k) and x.dtype == np.int64
    assert (np.diff(x, axis=1) > 0).all() and x.min() >= 0 and x.max() < n
    subsets = {c: i for i, c in enumerate(combinations(range(n), k))}
    counts = np.bincount([subsets[tuple(r)] for r in x.tolist()], minlength=len(subsets))
    if len(subsets) > 1:
        assert chisquare(counts).pvalue > 1e-3
    else:
        assert counts.tolist() == [rows]


def test_garnet_horizon_and_new_errors():
    assert D.garnet(4, 2, 2, seed=0).horizon is None
    assert D.garnet(4, 2, 2, seed=0, horizon=30).horizon == 30
    with raises_fact(ModelError, "horizon", ">= 1", "0"):
        D.garnet(4, 2, 2, horizon=0)
    with raises_fact(ModelError, "sparse", "'yes'", "None"):
        D.garnet(4, 2, 2, sparse="yes")


def test_builders_take_a_horizon():
    """Defaults are the paper's T (inventory 100, nav1 200, nav2 100); an int replaces
    them; None removes the horizon."""
    assert D.inventory().horizon == 100
    assert D.safe_navigation_1().horizon == 200
    assert D.safe_navigation_2().horizon == 100
    assert [D.paper_domain(n).horizon for n in ("inventory", "nav1", "nav2")] == [100, 200, 100]
    assert D.inventory(horizon=12).horizon == 12
    assert D.safe_navigation_1(horizon=13).horizon == 13
    assert D.safe_navigation_2(horizon=None).horizon is None
    assert D.paper_domain("nav1", horizon=5).horizon == 5
    assert D.paper_domain("inventory", horizon=None).horizon is None
    assert D.draw_1b(3, 0).model.horizon == 200 and D.draw_1b(3, 0, horizon=8).model.horizon == 8
    assert D.draw_2b(3, 0).model.horizon == 100 and D.draw_2b(3, 0, horizon=9).model.horizon == 9
    assert {s.model.horizon for s in D.perturbations("2A")} == {100}
    assert {s.model.horizon for s in D.perturbations("1B", n_draws=1, horizon=4)} == {4}
    with raises_fact(ModelError, "horizon", ">= 1", "-1"):
        D.inventory(horizon=-1)
    same = D.safe_navigation_1(horizon=50)
    np.testing.assert_array_equal(same.P, D.safe_navigation_1().P)
