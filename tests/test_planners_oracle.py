"""The planners' exact oracle and policy steps, each checked by an independent method.

* the oracle's worst-case value, costs and Lagrangian against ``robust_evaluate`` (a
  second path: the public function with its own checks) and, on a set of kernels,
  against brute force over the members;
* its Danskin gradients against central finite differences of the exact robust values
  (every set kind, every objective, the Lagrangian's single adversary);
* the simplex projection against its optimality (KKT) conditions, on rows from 1e-15 to
  1e6, ties and exact zeros; the mirror step against its closed form.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact as rx
from rcmdp_exact.planners import RobustOracle, log_policy, mirror_step, project_simplex
from rcmdp_exact.testing import random_cmdp


def sets_of(model, seed: int = 0):
    """One set of every built-in kind around ``model`` (radii that move the worst case)."""
    rng = np.random.default_rng(seed)
    S, A = model.n_states, model.n_actions
    members = np.array([model.P] + [rng.dirichlet(np.ones(S), size=(S, A)) for _ in range(3)])
    term = np.asarray(model.terminal, dtype=bool)
    members[:, term] = np.asarray(model.P)[term]  # members keep terminal states absorbing
    return {
        "l1": rx.l1_ball(model, 0.4, support="all"),
        "kl": rx.KLBall.around(model, 0.08),
        "s-l1": rx.SRectL1Ball.around(model, 0.4, "all"),
        "interval": rx.IntervalSet.around(model, 0.15, "all"),
        "finite": rx.FiniteSet(members),
    }


def interior_policy(rng, S, A, floor=0.05):
    pi = rng.dirichlet(np.ones(A), size=S)
    return (1 - floor * A) * pi + floor


@pytest.mark.parametrize("terminal", [False, True])
@pytest.mark.parametrize("kind", ["l1", "kl", "s-l1", "interval", "finite"])
def test_oracle_equals_robust_evaluate(kind, terminal):
    m = random_cmdp(7, 5, 3, 2, 0.9, terminal=terminal)
    uset = sets_of(m)[kind]
    rng = np.random.default_rng(3)
    lam = np.array([0.7, 2.5])
    oracle = RobustOracle(m, uset)
    for _ in range(3):  # warm starts from the previous call must not change the answer
        pi = interior_policy(rng, m.n_states, m.n_actions)
        ev = oracle.evaluate(pi, lam=lam)
        ref = rx.robust_evaluate(m, pi, uset)
        lag = rx.robust_evaluate(m, pi, uset, "lagrangian", lam=lam, per_constraint=False)
        scale = max(1.0, abs(ref.value))
        assert abs(ev.value - ref.value) <= 1e-10 * scale
        np.testing.assert_allclose(ev.costs, ref.costs_worst, rtol=1e-10, atol=1e-10)
        assert abs(ev.lagrangian - lag.lagrangian_p0) <= 1e-10 * max(1.0, abs(ev.lagrangian))
        assert ev.converged
    assert oracle.evaluations == 3 and oracle.unconverged == 0


def test_oracle_on_a_finite_set_is_the_worst_member():
    m = random_cmdp(11, 4, 2, 1, 0.8)
    uset = sets_of(m, 5)["finite"]
    pi = interior_policy(np.random.default_rng(0), 4, 2)
    ev = RobustOracle(m, uset).evaluate(pi)
    evs = [rx.evaluate(m.with_transitions(P), pi) for P in uset.members]
    assert ev.value == pytest.approx(min(e.value for e in evs), abs=1e-12)
    assert ev.costs[0] == pytest.approx(max(e.costs[0] for e in evs), abs=1e-12)


def robust_numbers(m, uset, pi, lam=None):
    """(value, costs, Lagrangian) of the exact robust evaluation, by robust_evaluate."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ev = rx.robust_evaluate(m, pi, uset)
        lag = None if lam is None else rx.robust_evaluate(
            m, pi, uset, "lagrangian", lam=lam, per_constraint=False).lagrangian_p0
    return ev.value, np.asarray(ev.costs_worst), lag


@pytest.mark.parametrize("kind", ["l1", "kl", "s-l1", "interval", "finite"])
@pytest.mark.parametrize("seed", range(3))
def test_gradients_match_central_differences(kind, seed):
    """Danskin's gradient d_j(s) Q_j(s, a) of every objective along a random tangent
    direction (rows summing to 0) equals the central difference of the exact robust
    value (generic points: the worst case is unique)."""
    m = random_cmdp(20 + seed, 4, 3, 2, 0.9, terminal=seed == 1)
    uset = sets_of(m, seed)[kind]
    rng = np.random.default_rng(seed)
    pi = interior_policy(rng, 4, 3)
    lam = np.array([0.5, 1.5])
    ev = RobustOracle(m, uset).evaluate(pi, lam=lam)
    u = rng.normal(size=pi.shape)
    u -= u.mean(axis=1, keepdims=True)
    h = 1e-6
    vp, cp, lp = robust_numbers(m, uset, pi + h * u, lam)
    vm, cm, lm = robust_numbers(m, uset, pi - h * u, lam)
    fd = np.concatenate([[vp - vm], cp - cm]) / (2 * h)
    exact = np.array([np.sum(ev.gradient(j) * u) for j in range(3)])
    np.testing.assert_allclose(exact, fd, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(fd).max()))
    # the Lagrangian's single adversary: d_L(s) Q_L(s, a)
    g_lag = np.sum(ev.lagrangian_occupancy[:, None] * ev.lagrangian_q * u)
    assert g_lag == pytest.approx((lp - lm) / (2 * h), rel=1e-5, abs=1e-6)


def test_gradient_differs_from_the_nominal_one_where_the_set_matters():
    """A check that can fail: under a set that moves the worst case, Danskin's gradient
    is not the nominal policy gradient (so the oracle really differentiates the robust
    value)."""
    m = random_cmdp(20, 4, 3, 2, 0.9)
    pi = interior_policy(np.random.default_rng(0), 4, 3)
    nominal = RobustOracle(m, rx.l1_ball(m, 0.0)).evaluate(pi).gradient(0)
    robust = RobustOracle(m, rx.l1_ball(m, 0.4, support="all")).evaluate(pi).gradient(0)
    assert np.abs(nominal - robust).max() > 1e-3


def kkt_ok(y, x, tol):
    """x is the Euclidean projection of y onto the simplex iff x is in the simplex and
    y - x = tau on the support of x and y - x <= tau off it, for one tau."""
    assert np.all(x >= 0) and abs(x.sum() - 1.0) <= tol
    on = x > 0
    tau = np.mean((y - x)[on])
    scale = max(1.0, np.abs(y).max())
    assert np.all(np.abs((y - x)[on] - tau) <= tol * scale)
    assert np.all((y - x)[~on] <= tau + tol * scale)


@settings(max_examples=examples(80))
@given(st.integers(0, 2**31), st.integers(1, 7), st.sampled_from([None, "skewed", "ties"]))
def test_projection_meets_its_optimality_conditions(seed, A, kind):
    rng = np.random.default_rng(seed)
    if kind == "skewed":
        # entries from 1e-15 to 1e6 beside exact zeros, both signs
        y = rng.choice([-1.0, 1.0], size=(3, A)) * 10.0 ** rng.uniform(-15, 6, size=(3, A))
        y[rng.random((3, A)) < 0.2] = 0.0
    elif kind == "ties":
        y = np.repeat(rng.integers(-2, 3, size=(3, 1)).astype(float), A, axis=1)
        y[:, 0] += 1e-15
    else:
        y = rng.normal(scale=10.0 ** rng.integers(-3, 7), size=(3, A))
    x = project_simplex(y)
    for row_y, row_x in zip(y, x, strict=True):
        kkt_ok(row_y, row_x, 1e-9)


def test_projection_of_a_point_of_the_simplex_is_itself():
    pi = np.array([[1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [1e-15, 0.5, 0.5 - 1e-15]])
    np.testing.assert_allclose(project_simplex(pi), pi, atol=1e-15)


@settings(max_examples=examples(60))
@given(st.integers(0, 2**31), st.floats(1e-3, 50.0))
def test_mirror_step_is_the_exponentiated_gradient(seed, eta):
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.ones(4), size=3)
    pi[0, 1] = 0.0
    pi[0] /= pi[0].sum()
    g = rng.normal(scale=5.0, size=(3, 4))
    logits, out = mirror_step(log_policy(pi), g, eta)
    with np.errstate(divide="ignore"):
        logw = np.log(pi) + eta * g
    ref = np.exp(logw - logw.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True),
                               out, rtol=1e-12, atol=1e-300)
    assert out[0, 1] == 0.0  # an action of probability 0 stays at 0
    # a constant per state does not change the step
    _, shifted = mirror_step(log_policy(pi), g + rng.normal(size=(3, 1)), eta)
    np.testing.assert_allclose(shifted, out, rtol=1e-10, atol=1e-300)


def test_mirror_steps_recover_from_underflow():
    """Carried as logits, an action pushed below the smallest float comes back when its
    gradient turns (as probabilities it would be stuck at 0 for ever)."""
    logits = np.log(np.array([[0.5, 0.5]]))
    for _ in range(100):
        logits, pi = mirror_step(logits, np.array([[1.0, -9.0]]), 1.0)
    assert pi[0, 1] == 0.0  # underflowed (exp(-1000))
    for _ in range(120):
        logits, pi = mirror_step(logits, np.array([[-9.0, 1.0]]), 1.0)
    assert pi[0, 1] > 0.99


def test_least_costs_are_the_robust_minimum():
    """The oracle's least worst-case cost equals the robust optimum of -c by robust
    value iteration (the bracket's own solver, another route)."""
    m = random_cmdp(4, 4, 3, 1, 0.9)
    uset = rx.l1_ball(m, 0.3, support="all")
    least = RobustOracle(m, uset).least_costs()
    neg = m.replace(R=-np.asarray(m.C)[..., 0], C=None, d=None)
    ref = -rx.robust_value_iteration(neg, rx.l1_ball(neg, 0.3, support="all")).value
    assert least[0] == pytest.approx(ref, abs=1e-9)
