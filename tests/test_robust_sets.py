"""Robust evaluation, robust value iteration and the bracket under every kind of set.

Independent references: on models with two next states every row's set is an interval
of p(0), whose end points (computed here from each set's definition, the KL ends by
root finding) are the extreme points; the adversary of a fixed policy picks extreme
rows, so the robust value is the smallest exact value over the 2^(S A) kernels of end
points.  A finite set is checked against the exact evaluation under each member.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

import rcmdp_exact as rx
from rcmdp_exact import InputError, TabularCMDP
from rcmdp_exact.domains import garnet


def _two_outcome_model(seed: int, S: int = 2, A: int = 2, K: int = 1):
    """S states, every (s, a) moving to two next states (s and s + 1 mod S)."""
    rng = np.random.default_rng(seed)
    P = np.zeros((S, A, S))
    for s in range(S):
        p = rng.uniform(0.2, 0.8, size=A)
        P[s, :, s], P[s, :, (s + 1) % S] = p, 1.0 - p
    R = rng.normal(size=(S, A, S))
    C = rng.random((S, A, S, K))
    return TabularCMDP(P, R, C, d=np.full(K, 3.0), gamma=0.8, p0=np.full(S, 1.0 / S))


def _kl(p, q):
    return sum(pi * np.log(pi / qi) for pi, qi in zip(p, q, strict=True) if pi > 0)


def _ends(kind: str, q0: float, r: float):
    """The interval of p(0) of one row with nominal (q0, 1 - q0) (end points)."""
    if kind == "l1":
        lo, hi = q0 - r / 2, q0 + r / 2
    elif kind == "linf":
        lo, hi = q0 - r, q0 + r
    elif kind == "weighted":  # weights (1, 3): |d| (1 + 3) <= r
        lo, hi = q0 - r / 4, q0 + r / 4
    elif kind == "interval":  # lower = q - r, upper = q + r entrywise (clipped)
        lo, hi = max(q0 - r, 1 - (1 - q0 + r)), min(q0 + r, 1 - (1 - q0 - r))
    else:  # kl: KL((p, 1-p) || (q0, 1-q0)) <= r on each side of q0
        f = lambda p: _kl((p, 1 - p), (q0, 1 - q0)) - r  # noqa: E731
        lo = brentq(f, 1e-15, q0, xtol=1e-15) if f(1e-15) > 0 else 0.0
        hi = brentq(f, q0, 1 - 1e-15, xtol=1e-15) if f(1 - 1e-15) > 0 else 1.0
    return max(lo, 0.0), min(hi, 1.0)


def _make(kind: str, model, r: float):
    P = model.P
    S, A = model.n_states, model.n_actions
    if kind == "l1":
        return rx.l1_ball(model, r, support=P > 0)
    if kind == "linf":
        return rx.LInfBall(P, r, support=P > 0)
    if kind == "weighted":
        w = np.where(np.arange(S)[None, None, :] == np.arange(S)[:, None, None], 1.0, 3.0)
        return rx.WeightedL1Ball(P, r, np.broadcast_to(w, (S, A, S)), support=P > 0)
    if kind == "interval":
        return rx.IntervalSet(np.where(P > 0, np.clip(P - r, 0, 1), 0.0),
                              np.where(P > 0, np.clip(P + r, 0, 1), 0.0), nominal=P)
    return rx.KLBall(P, r)


@settings(max_examples=examples(12), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["l1", "linf", "weighted",
                                                               "interval", "kl"]),
       r=st.sampled_from([0.0, 0.05, 0.3, 2.0]),
       objective=st.sampled_from(["value", "constraint", "lagrangian"]))
def test_robust_evaluation_equals_the_worst_extreme_kernel(seed, kind, r, objective):
    model = _two_outcome_model(seed)
    uset = _make(kind, model, r)
    pi = np.random.default_rng(seed).dirichlet(np.ones(2), size=2)
    res = rx.robust_evaluate(model, pi, uset, objective, lam=0.7)
    S, A = 2, 2
    ends = [[_ends(kind, model.P[s, a, s], r) for a in range(A)] for s in range(S)]
    best = np.inf
    for choice in itertools.product((0, 1), repeat=S * A):
        P = np.zeros((S, A, S))
        for i, c in enumerate(choice):
            s, a = divmod(i, A)
            p = ends[s][a][c]
            P[s, a, s], P[s, a, (s + 1) % S] = p, 1.0 - p
        ev = rx.evaluate(model.with_transitions(P), pi, 0.7)
        W = {"value": ev.v, "constraint": -ev.c.sum(axis=1), "lagrangian": ev.lagrangian}
        best = min(best, float(model.p0 @ W[objective]))
    scale = max(1.0, np.abs(model.R).max(), np.abs(model.C).max()) / (1 - model.gamma)
    assert float(model.p0 @ res.w) == pytest.approx(best, abs=1e-8 * scale)
    assert uset.contains(res.P_worst, tol=1e-8).all()


@pytest.mark.parametrize("kind", ["l1", "linf", "weighted", "interval", "kl", "s-l1"])
def test_a_zero_radius_gives_the_nominal_results_bit_for_bit(kind):
    model = garnet(4, 3, 3, n_constraints=1, seed=2, gamma=0.9)
    uset = rx.SRectL1Ball(model.P, 0.0) if kind == "s-l1" else _make(kind, model, 0.0)
    pi = np.random.default_rng(0).dirichlet(np.ones(3), size=4)
    rob = rx.robust_evaluate(model, pi, uset, "lagrangian", lam=0.4)
    ev = rx.evaluate(model, pi, 0.4)
    np.testing.assert_array_equal(rob.P_worst, model.P)
    np.testing.assert_array_equal(rob.v, ev.v)
    np.testing.assert_array_equal(rob.c, ev.c)
    np.testing.assert_array_equal(rob.costs_worst, ev.costs)


@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), radius=st.sampled_from([0.1, 0.5, 1.5]))
def test_s_rectangular_fixed_points(seed, radius):
    """Under an s-rectangular set: w is the fixed point of the robust policy operator,
    its kernel lies in the set and evaluates exactly to w; robust value iteration and
    robust policy iteration agree, and the (possibly randomised) policy they return has
    that robust value; the optimum is at least the best deterministic policy's."""
    model = garnet(3, 2, 3, n_constraints=1, seed=seed, gamma=0.85)
    uset = rx.SRectL1Ball(model.P, radius)
    pi = np.random.default_rng(seed).dirichlet(np.ones(2), size=3)
    res = rx.robust_evaluate(model, pi, uset, "value")
    scale = max(1.0, np.abs(model.R).max()) / (1 - model.gamma)
    img = rx.robust_bellman(model, uset, res.w, pi)
    assert np.abs(img.w - res.w).max() <= 1e-10 * scale
    assert uset.contains(res.P_worst, tol=1e-9).all()
    np.testing.assert_allclose(rx.evaluate(model.with_transitions(res.P_worst), pi).v, res.w,
                               atol=1e-10 * scale)
    vi = rx.robust_value_iteration(model, uset, progress=False)
    pi_it = rx.robust_value_iteration(model, uset, method="policy_iteration", progress=False)
    assert vi.value == pytest.approx(pi_it.value, abs=1e-9 * scale)
    again = rx.robust_evaluate(model, pi_it.policy, uset, "value")
    assert again.value == pytest.approx(pi_it.value, abs=1e-9 * scale)
    det = max(rx.robust_evaluate(model, np.eye(2)[list(a)], uset, "value").value
              for a in itertools.product(range(2), repeat=3))
    assert pi_it.value >= det - 1e-9 * scale


def test_a_finite_set_takes_the_worst_member_of_each_objective():
    model = garnet(4, 2, 3, n_constraints=2, seed=5, gamma=0.9)
    members = [model.P, garnet(4, 2, 3, seed=6).P, garnet(4, 2, 2, seed=7).P]
    fs = rx.FiniteSet(members)
    pi = np.full((4, 2), 0.5)
    res = rx.robust_evaluate(model, pi, fs, "lagrangian", lam=[0.3, 1.0])
    evs = [rx.evaluate(model.with_transitions(P), pi, [0.3, 1.0]) for P in members]
    assert res.method == "enumeration"
    lags = [float(model.p0 @ ev.lagrangian) for ev in evs]
    assert float(model.p0 @ res.w) == pytest.approx(min(lags), abs=1e-12)
    for k in range(2):
        assert res.costs_worst[k] == pytest.approx(max(ev.costs[k] for ev in evs), abs=1e-12)
    with raises_fact(InputError, "robust_value_iteration", "FiniteSet", "not rectangular"):
        rx.robust_value_iteration(model, fs, progress=False)
    with raises_fact(InputError, "FiniteSet", "not rectangular"):
        rx.rcmdp_bracket(model, fs, progress=False)


@pytest.mark.parametrize("kind", ["linf", "kl", "s-l1"])
def test_the_bracket_is_certified_under_other_sets(kind):
    """lower: a policy whose robust evaluation meets the budget and attains lower;
    upper: at least the robust value of every robust-feasible policy of a grid."""
    model = garnet(3, 2, 3, n_constraints=1, seed=4, gamma=0.9)
    uset = {"linf": lambda: rx.LInfBall(model.P, 0.15), "kl": lambda: rx.KLBall(model.P, 0.1),
            "s-l1": lambda: rx.SRectL1Ball(model.P, 0.4)}[kind]()
    grid = np.linspace(0.0, 1.0, 6)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a in itertools.product(grid, repeat=3):
            pi = np.stack([[x, 1 - x] for x in a])
            r = rx.robust_evaluate(model, pi, uset, "value")
            rows.append((r.value, float(r.costs_worst[0])))
    rows = np.array(rows)
    d = float(np.quantile(rows[:, 1], 0.4))
    budget = model.replace(d=[d])
    br = rx.rcmdp_bracket(budget, uset, progress=False, time_limit=None, max_boxes=200,
                          variants=())
    scale = max(1.0, np.abs(model.R).max(), np.abs(model.C).max()) / (1 - model.gamma)
    assert br.status in ("bracket", "budget_exhausted")
    assert rows[rows[:, 1] <= d, 0].max() <= br.upper + 1e-9 * scale
    cert = rx.robust_evaluate(budget, br.policy, uset, "value")
    assert cert.value >= br.lower - 1e-9 * scale
    assert cert.costs_worst[0] <= d + 1e-9 * scale
    assert br.lower <= br.upper


def test_the_learners_take_any_sa_set_where_their_maths_allows():
    """RCPG with the exact critic trains on an LInfBall (its worst case comes from the set
    every episode; its reported worst case is the set's); the compiled worst case and the
    adversary, defined on the L1 ball, refuse another set and name the alternatives."""
    from rcmdp_exact.learners import train

    model = rx.domains.garnet(4, 2, 2, n_constraints=1, seed=1, gamma=0.9, horizon=6)
    linf = rx.LInfBall(model.P, 0.1)
    res = train(model, "rcpg-value", uset=linf, critic="exact", episodes=3, eval_every=3,
                seed=0, progress=False, hidden=8)
    pi = res.policy_table()
    exact = rx.robust_evaluate(model, pi, linf, "value").value
    assert res.records["eval_worst_stochastic_value"][-1] == pytest.approx(exact, abs=1e-12)
    with raises_fact(InputError, "rcpg-value", "LInfBall", "critic='exact'"):
        train(model, "rcpg-value", uset=linf, episodes=2, progress=False)
    with raises_fact(InputError, "adversarial-rcpg", "L1Ball", "LInfBall"):
        train(model, "adversarial-rcpg", uset=linf, episodes=2, progress=False)


@settings(max_examples=examples(10), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["l1", "linf", "kl"]),
       r=st.sampled_from([0.05, 0.3]))
def test_an_optimistic_nature_is_the_adversary_of_the_negated_objective(seed, kind, r):
    """The best case over the set: the largest exact value over the extreme kernels,
    minus the worst case of -R; at least the nominal value; the best costs at most the
    nominal ones; and the optimistic optimum of robust value iteration is the best of
    the deterministic policies' optimistic values."""
    model = _two_outcome_model(seed, K=1)
    uset = _make(kind, model, r)
    pi = np.random.default_rng(seed).dirichlet(np.ones(2), size=2)
    best = rx.robust_evaluate(model, pi, uset, "value", nature="optimistic",
                              cost_nature="optimistic")
    neg = rx.robust_evaluate(model.replace(R=-model.R), pi, uset, "value")
    scale = max(1.0, np.abs(model.R).max(), np.abs(model.C).max()) / (1 - model.gamma)
    assert float(model.p0 @ best.w) == pytest.approx(-float(model.p0 @ neg.w), abs=1e-9 * scale)
    ends = [[_ends(kind, model.P[s, a, s], r) for a in range(2)] for s in range(2)]
    top = -np.inf
    for choice in itertools.product((0, 1), repeat=4):
        P = np.zeros((2, 2, 2))
        for i, c in enumerate(choice):
            s, a = divmod(i, 2)
            P[s, a, s], P[s, a, (s + 1) % 2] = ends[s][a][c], 1.0 - ends[s][a][c]
        top = max(top, rx.evaluate(model.with_transitions(P), pi).value)
    assert float(model.p0 @ best.w) == pytest.approx(top, abs=1e-8 * scale)
    nominal = rx.evaluate(model, pi)
    assert best.value >= nominal.value - 1e-12 * scale
    assert best.costs_worst[0] <= nominal.costs[0] + 1e-12 * scale
    opt = rx.robust_value_iteration(model, uset, nature="optimistic", progress=False)
    det = max(rx.robust_evaluate(model, np.eye(2)[list(a)], uset, "value",
                                 nature="optimistic").value
              for a in itertools.product(range(2), repeat=2))
    assert opt.value == pytest.approx(det, abs=1e-8 * scale)
    with raises_fact(InputError, "optimistic", "value_iteration"):
        rx.robust_value_iteration(model, uset, nature="optimistic",
                                  method="policy_iteration", progress=False)
