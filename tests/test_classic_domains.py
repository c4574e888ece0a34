"""The classic robust-RL benchmarks of rcmdp_exact.domains.classic against their cited
definitions, and the budget rule against brute force."""

import itertools

import numpy as np
import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from rcmdp_exact import robust_evaluate
from rcmdp_exact.domains import (
    CLASSIC_DOMAINS,
    chain,
    classic_instance,
    cliff_walking,
    cost_levels,
    frozen_lake,
    halfway_budget,
    machine_replacement,
    riverswim,
)
from rcmdp_exact.domains.classic import TIE_RTOL
from rcmdp_exact.testing.strategies import cmdps
from rcmdp_exact.uncertainty import KLBall, l1_ball


def test_riverswim_is_osband_russo_and_van_roy():
    """The RiverSwim of Osband, Russo and Van Roy (2013), n = 6: its interior is figure 1
    of Strehl and Littman (2008); the banks 0.6/0.4; rewards 5/1000 and 1."""
    m = riverswim()
    P = np.asarray(m.P)
    assert (m.n_states, m.n_actions, m.gamma) == (6, 2, 0.95)
    for s in range(6):  # left: one state down, deterministic
        assert P[s, 0, max(s - 1, 0)] == 1.0
    for s in range(1, 5):
        assert (P[s, 1, s + 1], P[s, 1, s], P[s, 1, s - 1]) == (0.35, 0.6, 0.05)
    assert (P[0, 1, 1], P[0, 1, 0]) == (0.6, 0.4)  # the left bank: up with 0.6
    assert (P[5, 1, 5], P[5, 1, 4]) == (0.6, 0.4)
    r = np.asarray(m.r)
    assert r[0, 0] == 0.005 and r[5, 1] == 1.0 and np.count_nonzero(r) == 2
    c = np.asarray(m.c)[..., 0]
    assert np.array_equal(c, np.tile([0.0, 1.0], (6, 1)))  # one per upstream stroke
    assert np.asarray(m.p0)[0] == 1.0
    assert riverswim(20).n_states == 20


def test_chain_is_strens():
    """Strens (2000): forward to s + 1, back to 0, slip 0.2; rewards 2 (to 0), 10 (end)."""
    m = chain(5)
    P, R = np.asarray(m.P), np.asarray(m.R)
    for s in range(5):
        fwd = min(s + 1, 4)
        assert P[s, 0, fwd] == pytest.approx(0.8 + (0.2 if fwd == 0 else 0.0))
        assert P[s, 1, 0] == pytest.approx(0.8 + (0.2 if fwd == 0 else 0.0))
        assert P[s, 1, fwd] == pytest.approx(0.2) or fwd == 0
    assert np.all(R[:, :, 0] == 2.0) and np.all(R[4, :, 4] == 10.0)
    assert np.count_nonzero(R) == 5 * 2 + 2
    # the expected reward of going forward at the end: 0.8 * 10 + 0.2 * 2
    assert np.asarray(m.r)[4, 0] == pytest.approx(8.4)
    assert np.array_equal(np.asarray(m.c)[..., 0], np.tile([1.0, 0.0], (5, 1)))


def test_machine_replacement_is_delage_and_mannor():
    m = machine_replacement()
    P, r = np.asarray(m.P), np.asarray(m.r)
    assert (m.n_states, m.n_actions) == (10, 2)
    r1, r2 = 8, 9
    for s in range(7):
        assert (P[s, 0, s + 1], P[s, 0, s]) == (0.8, pytest.approx(0.2))
        assert (P[s, 1, s + 1], P[s, 1, r1], P[s, 1, r2]) == (0.3, 0.6, 0.1)
    assert P[7, 0, 7] == 1.0 and P[7, 1, 7] == 0.3
    assert (P[r1, 0, 0], P[r1, 0, r1], P[r1, 1, r1]) == (0.8, pytest.approx(0.2), 1.0)
    assert (P[r2, 0, r2], P[r2, 1, r1], P[r2, 1, r2]) == (1.0, 0.6, pytest.approx(0.4))
    assert np.array_equal(r[:, 0], -np.array([0, 0, 0, 0, 0, 0, 0, 20, 2, 10.0]))
    assert np.array_equal(r[:, 0], r[:, 1])
    assert np.array_equal(np.asarray(m.c)[..., 0], np.tile([0.0, 1.0], (10, 1)))


def _gym_table(env_id, **kw):
    gymnasium = pytest.importorskip("gymnasium")
    return gymnasium.make(env_id, **kw).unwrapped


@pytest.mark.parametrize("name", ["4x4", "8x8"])
def test_frozen_lake_is_gymnasiums_table(name):
    base = _gym_table("FrozenLake-v1", map_name=name)
    m = frozen_lake(name)
    desc = np.asarray(base.desc).ravel()
    S = desc.size
    assert (m.n_states, m.n_actions) == (S, 4)
    P = np.asarray(m.P)
    for s in np.flatnonzero(~np.asarray(m.terminal)):
        for a in range(4):
            row = np.zeros(S)
            for p, t, _, _ in base.P[s][a]:
                row[t] += p
            assert np.allclose(P[s, a], row)
    assert set(np.flatnonzero(m.terminal)) == set(np.flatnonzero((desc == b"H") | (desc == b"G")))
    C = np.asarray(m.C)[..., 0]
    live = ~np.asarray(m.terminal)
    # one per hole entered, on every transition (also off the support)
    assert np.all(C[live][..., desc == b"H"] == 1.0) and np.all(C[live][..., desc != b"H"] == 0)
    goal = int(np.flatnonzero(desc == b"G")[0])
    R = np.asarray(m.R)
    assert np.all(R[live][..., goal] == 1.0) and np.count_nonzero(R) == live.sum() * 4
    for s in np.flatnonzero(live):  # Gymnasium's expected reward of every pair
        for a in range(4):
            want = sum(p * rew for p, _, rew, _ in base.P[s][a])
            assert (P[s, a] * R[s, a]).sum() == pytest.approx(want)


def test_cliff_walking_is_gymnasiums_with_the_edge_as_cost():
    base = _gym_table("CliffWalking-v1", is_slippery=True)
    m = cliff_walking()
    C, R, P = np.asarray(m.C)[..., 0], np.asarray(m.R), np.asarray(m.P)
    assert (m.n_states, m.n_actions) == (48, 4)
    edge = np.zeros(48)
    edge[25:35] = 1.0  # row 2, columns 1 to 10
    for s in range(47):
        for a in range(4):
            # Gymnasium's own expected reward (-1 per step, -100 per fall)
            want = sum(p * rew for p, _, rew, _ in base.P[s][a])
            assert (P[s, a] * R[s, a]).sum() == pytest.approx(want)
            # the expected cost: the probability of entering an edge cell
            assert C[s, a] == pytest.approx(edge)
    falls = cliff_walking(cost="falls")
    for s in range(47):
        for a in range(4):
            fall = sum(p for p, _, rew, _ in base.P[s][a] if rew == -100)
            got = (np.asarray(falls.P)[s, a] * np.asarray(falls.C)[s, a, :, 0]).sum()
            assert got == pytest.approx(fall)


def _policies(S, A):
    return [np.eye(A)[list(a)] for a in itertools.product(range(A), repeat=S)]


def _with_twin(m, a: int, twin_cost: float, first: bool):
    """``m`` with one more action: a copy of action ``a`` (same moves, same reward) that
    costs ``twin_cost`` per step; ``first`` puts the copy before all others (index 0)."""
    P, R, C = np.asarray(m.P), np.asarray(m.R), np.asarray(m.C)
    P2 = np.concatenate([P, P[:, a:a + 1]], axis=1)
    R2 = np.concatenate([R, R[:, a:a + 1]], axis=1)
    C2 = np.concatenate([C, np.full_like(C[:, a:a + 1], 0.0) + twin_cost], axis=1)
    order = [m.n_actions, *range(m.n_actions)] if first else list(range(m.n_actions + 1))
    return m.replace(P=P2[:, order], R=R2[:, order], C=C2[:, order], action_labels=None)


def _uniformly_optimal(m, uset, values_tol=1e-9):
    """Every deterministic policy, its worst-case values of every state and its
    worst-case cost: (policies, V (n, S), costs (n,))."""
    pols = _policies(m.n_states, m.n_actions)
    evs = [robust_evaluate(m, pi, uset) for pi in pols]
    return (pols, np.array([np.asarray(e.w) for e in evs]),
            np.array([float(e.costs_worst[0]) for e in evs]))


def test_cost_levels_against_enumeration():
    """least = the smallest worst-case cost over the deterministic policies (a min over
    policies of a max over the set is attained at a deterministic policy for an
    sa-rectangular set); free = the least worst-case cost among the policies optimal at
    every state (enumerated here)."""
    m = riverswim(4)
    uset = l1_ball(m, 0.1, support="all")
    lv = cost_levels(m, uset)
    _pols, V, costs = _uniformly_optimal(m, uset)
    assert lv.least[0] == pytest.approx(costs.min(), abs=1e-9)
    best = np.all(V >= V.max(axis=0) - 1e-9, axis=1)
    assert lv.free[0] == pytest.approx(costs[best].min(), abs=1e-9)
    d = halfway_budget(m, uset).d[0]
    assert d == pytest.approx(0.5 * (lv.least[0] + lv.free[0]))
    assert halfway_budget(m, uset, 0.25).d[0] == pytest.approx(
        lv.least[0] + 0.25 * (lv.free[0] - lv.least[0]))


@settings(max_examples=examples(25), deadline=None)
@given(data=st.data())
def test_budget_levels_against_enumeration_and_any_action_order(data):
    """Models on a grid of quarters (so ties between actions are common): least is the
    smallest worst-case cost of a deterministic policy, f the smallest among the
    deterministic policies optimal at every state (both enumerated), and both are the
    same with the actions in any order; least <= f and the free policy is a robust
    optimum that costs f."""
    m = data.draw(cmdps(n_states=(2, 3), n_actions=(2, 3), n_constraints=1, grid=4))
    alpha = data.draw(st.sampled_from([0.0, 0.25, 0.5]))
    uset = l1_ball(m, alpha, support="all")
    lv = cost_levels(m, uset)
    _pols, V, costs = _uniformly_optimal(m, uset)
    best = np.all(V >= V.max(axis=0) - 1e-9 * max(1.0, np.abs(V).max()), axis=1)
    assert lv.least[0] == pytest.approx(costs.min(), abs=1e-9)
    assert lv.free[0] == pytest.approx(costs[best].min(), abs=1e-9)
    assert lv.least[0] <= lv.free[0] + 1e-12
    ev = robust_evaluate(m, lv.policies["free"], uset)
    assert float(ev.value) == pytest.approx(lv.robust_optimum, abs=1e-9)
    assert float(ev.costs_worst[0]) == pytest.approx(lv.free[0], abs=1e-9)
    perm = list(data.draw(st.permutations(range(m.n_actions))))
    C = np.asarray(m.C)
    mp = m.replace(P=np.asarray(m.P)[:, perm], R=np.asarray(m.R)[:, perm], C=C[:, perm])
    lv2 = cost_levels(mp, l1_ball(mp, alpha, support="all"))
    assert lv2.least[0] == pytest.approx(lv.least[0], abs=1e-10)
    assert lv2.free[0] == pytest.approx(lv.free[0], abs=1e-10)


@pytest.mark.parametrize("first", [True, False])
def test_free_level_does_not_depend_on_a_tie_break(first):
    """Two robust-optimal actions (an exact copy of "right" that costs 0.25 per stroke
    instead of 1): f is the cost of the cheaper robust optimum wherever the copy stands
    among the actions (a solver's argmax keeps the first of tied actions, so the rule
    "the cost of the robust optimum" gave 1/4 or 1 of it by the order alone); checked
    against the enumeration of the deterministic policies optimal at every state."""
    m = _with_twin(riverswim(3), 1, 0.25, first)
    uset = l1_ball(m, 0.1, support="nominal")
    lv = cost_levels(m, uset)
    _pols, V, costs = _uniformly_optimal(m, uset)
    best = np.all(V >= V.max(axis=0) - 1e-9, axis=1)
    assert best.sum() > 1  # the tie is real
    assert lv.free[0] == pytest.approx(costs[best].min(), abs=1e-9)
    assert costs[best].max() > costs[best].min() + 0.1  # and the tie-break matters
    pi = lv.policies["free"]  # a robust optimum that spends f
    ev = robust_evaluate(m, pi, uset)
    assert float(ev.value) == pytest.approx(lv.robust_optimum, abs=1e-10)
    assert float(ev.costs_worst[0]) == pytest.approx(lv.free[0], abs=1e-10)


def test_free_level_tolerance_separates_ties_from_near_ties():
    """An action worse than the optimum by 1e-6 of the value scale is not robust-optimal
    (its lower cost is not f); one worse by 1e-13 is (TIE_RTOL = 1e-9 between them)."""
    base = riverswim(3)
    for delta, tied in ((1e-6, False), (1e-13, True)):
        m = _with_twin(base, 1, 0.0, first=False)
        R = np.array(m.R)
        R[:, 2] -= delta  # the free copy of "right" earns a little less
        m = m.replace(R=R)
        uset = l1_ball(m, 0.1, support="nominal")
        lv = cost_levels(m, uset)
        assert TIE_RTOL == 1e-9
        assert lv.box.tol == pytest.approx(TIE_RTOL * max(1.0, np.abs(lv.box.v).max()))
        if tied:
            assert lv.free[0] == pytest.approx(0.0, abs=1e-12)
        else:
            assert lv.free[0] > 0.5


def test_free_level_on_an_s_rectangular_set_is_invariant_to_the_action_order():
    """On the s-rectangular L1 set the copy is no tie: nature's budget of a state is
    shared by its actions, so splitting the strokes between "right" and its copy is
    worth more than either alone, and the optimum is that randomised mixture.  The copy's
    position among the actions does not change f, and the free policy is robust-optimal
    with cost f."""
    from rcmdp_exact.uncertainty import set_class

    out = []
    for first in (True, False):
        m = _with_twin(riverswim(4), 1, 0.25, first)
        uset = set_class("s-l1").around(m, 0.1, "nominal")
        lv = cost_levels(m, uset)
        ev = robust_evaluate(m, lv.policies["free"], uset)
        assert float(ev.value) == pytest.approx(lv.robust_optimum, abs=1e-9)
        assert float(ev.costs_worst[0]) == pytest.approx(lv.free[0], abs=1e-9)
        out.append((lv.least[0], lv.free[0]))
    assert out[0] == pytest.approx(out[1], abs=1e-10)


@pytest.mark.parametrize("name", CLASSIC_DOMAINS)
def test_instances_bind(name):
    """The budget lies strictly between the least cost and the free optimum's cost."""
    if name in ("frozen_lake", "cliff_walking"):
        pytest.importorskip("gymnasium")
    kw = {"n": 6} if name in ("riverswim", "chain") else {}
    model, uset = classic_instance(name, **kw)
    lv = cost_levels(model, uset)
    assert lv.least[0] < model.d[0] < lv.free[0]


def test_kl_instance():
    model, uset = classic_instance("riverswim", "kl", radius=0.05)
    assert isinstance(uset, KLBall)
    assert model.d[0] > 0.0
