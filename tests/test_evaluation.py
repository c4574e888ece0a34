"""Exact evaluation checked against pymdptoolbox, QuantEcon, Monte Carlo, closed forms
and the invariants of policy evaluation (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import examples, raises_fact
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from rcmdp_exact import (
    ModelError,
    NotFiniteError,
    OptionError,
    TabularCMDP,
    evaluate,
    evaluate_finite_horizon,
    penalised_return,
    policy_transition_matrix,
    rescaled_budget,
)
from rcmdp_exact.core.evaluation import PENALTY_WEIGHT, check_proper
from rcmdp_exact.testing import random_model_arrays

# --------------------------------------------------------------------------- generators
GAMMAS = st.sampled_from([0.0, 0.3, 0.9, 0.99])


@st.composite
def models(draw, gammas=GAMMAS, max_states=8):
    """Random dense or sparse models, K in 0..2, random p0."""
    S = draw(st.integers(1, max_states))
    A = draw(st.integers(1, 4))
    K = draw(st.integers(0, 2))
    gamma = draw(gammas)
    sparse = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    P, R, C = random_model_arrays(rng, S, A, K, next_state_dependent=not sparse)
    p0 = rng.dirichlet(np.ones(S))
    if sparse:
        P = sp.csr_array(P.reshape(S * A, S))
    return TabularCMDP(P, R, C, d=rng.random(K), gamma=gamma, p0=p0)


@st.composite
def models_and_policies(draw, **kwargs):
    model = draw(models(**kwargs))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    S, A = model.n_states, model.n_actions
    kind = draw(st.sampled_from(["stochastic", "sparse", "deterministic"]))
    if kind == "deterministic":
        return model, rng.integers(0, A, S)
    pi = rng.dirichlet(np.ones(A), size=S)
    if kind == "sparse":
        pi *= rng.random((S, A)) < 0.5
        pi[np.arange(S), rng.integers(0, A, S)] += 0.1
        pi /= pi.sum(axis=1, keepdims=True)
    return model, pi


def one_hot(policy, A):
    return np.eye(A)[policy]


def dense_policy(policy, A):
    pol = np.asarray(policy)
    return one_hot(pol, A) if pol.ndim == 1 else pol


def scale(*arrays):
    return 1.0 + max(float(np.max(np.abs(a), initial=0.0)) for a in arrays)


# --------------------------------------------------------------------------- (a) other libraries
def library_model(seed, S=30, A=4, K=2, gamma=0.95):
    rng = np.random.default_rng(seed)
    P, R, C = random_model_arrays(rng, S, A, K, density=0.3)
    return TabularCMDP(P, R, C, d=np.ones(K), gamma=gamma, p0=rng.dirichlet(np.ones(S)))


def mdptoolbox_value(P, R, gamma, policy):
    """pymdptoolbox's matrix policy evaluation (P[a, s, s'], R[s, a])."""
    import mdptoolbox.mdp

    solver = mdptoolbox.mdp.PolicyIteration(P, R, gamma, policy0=policy, eval_type="matrix")
    solver._evalPolicyMatrix()
    return np.asarray(solver.V).ravel()


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_pymdptoolbox_deterministic(seed):
    model = library_model(seed)
    rng = np.random.default_rng(100 + seed)
    policy = rng.integers(0, model.n_actions, model.n_states)
    lam = rng.random(model.n_constraints) * 3
    ours = evaluate(model, policy, lam)
    P, R = model.to_mdptoolbox()
    np.testing.assert_allclose(ours.v, mdptoolbox_value(P, R, model.gamma, policy),
                               rtol=0, atol=1e-9)
    P, R = model.to_mdptoolbox(lam)  # the Lagrangian reward r - lam.c
    np.testing.assert_allclose(ours.lagrangian, mdptoolbox_value(P, R, model.gamma, policy),
                               rtol=0, atol=1e-9)
    for k in range(model.n_constraints):  # each cost as a reward
        Rk = np.ascontiguousarray(model.c[:, :, k])
        np.testing.assert_allclose(ours.c[:, k], mdptoolbox_value(P, Rk, model.gamma, policy),
                                   rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_pymdptoolbox_stochastic(seed):
    """A stochastic policy as the single-action MDP (P_pi, r_pi) in pymdptoolbox."""
    model = library_model(seed, gamma=0.99)
    S = model.n_states
    pi = np.random.default_rng(200 + seed).dirichlet(np.ones(model.n_actions), size=S)
    P_pi = np.einsum("sa,sat->st", pi, model.P)  # by hand, not our sparse product
    r_pi = np.einsum("sa,sa->s", pi, model.r)
    v = mdptoolbox_value(P_pi[None], r_pi[:, None], model.gamma, np.zeros(S, dtype=int))
    np.testing.assert_allclose(evaluate(model, pi).v, v, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_quantecon(seed):
    from quantecon.markov import DiscreteDP

    model = library_model(seed, gamma=0.9)
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(300 + seed)
    lam = rng.random(model.n_constraints)
    # deterministic policy on the (R[s, a], Q[s, a, s']) form
    sigma = rng.integers(0, A, S)
    R, Q, beta = model.to_quantecon(lam)
    ddp = DiscreteDP(R, Q, beta)
    ours = evaluate(model, sigma, lam)
    np.testing.assert_allclose(ours.lagrangian, ddp.evaluate_policy(sigma), rtol=0, atol=1e-9)
    # the state-action-pair form with a sparse Q
    ddp_sa = DiscreteDP(*model.to_quantecon(lam, sparse=True))
    np.testing.assert_allclose(ours.lagrangian, ddp_sa.evaluate_policy(sigma),
                               rtol=0, atol=1e-9)
    # QuantEcon's Bellman operator at our V gives back the greedy values of our Q
    np.testing.assert_allclose(ddp.bellman_operator(ours.lagrangian),
                               ours.q_lagrangian.max(axis=1), rtol=0, atol=1e-9)
    # a stochastic policy as a single-action DiscreteDP
    pi = rng.dirichlet(np.ones(A), size=S)
    P_pi = np.einsum("sa,sat->st", pi, model.P)
    r_pi = np.einsum("sa,sa->s", pi, model.r)
    ddp_pi = DiscreteDP(r_pi[:, None], P_pi[:, None, :], beta)
    np.testing.assert_allclose(evaluate(model, pi).v, ddp_pi.evaluate_policy(np.zeros(S, int)),
                               rtol=0, atol=1e-9)


@settings(max_examples=examples(30))
@given(models_and_policies(gammas=st.sampled_from([0.5, 0.9, 0.99])))
def test_agrees_with_quantecon_on_random_models(mp):
    from quantecon.markov import DiscreteDP

    model, policy = mp
    pi = dense_policy(policy, model.n_actions)
    P_pi = np.einsum("sa,sat->st", pi, model.P)
    r_pi = np.einsum("sa,sa->s", pi, model.r)
    ddp = DiscreteDP(r_pi[:, None], P_pi[:, None, :], model.gamma)
    expected = ddp.evaluate_policy(np.zeros(model.n_states, dtype=int))
    np.testing.assert_allclose(evaluate(model, policy).v, expected, rtol=0,
                               atol=1e-9 * scale(expected))


# --------------------------------------------------------------------------- (b) Monte Carlo
def simulate(model, pi, n_episodes, n_steps, discount, seed):
    """Returns per episode: discounted reward, costs (K,) and state visits (S,)."""
    rng = np.random.default_rng(seed)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    pi_cdf = np.cumsum(pi, axis=1)
    P_cdf = np.cumsum(model.P, axis=2)
    s = rng.choice(S, size=n_episodes, p=model.p0)
    ret = np.zeros(n_episodes)
    cost = np.zeros((n_episodes, K))
    visits = np.zeros((n_episodes, S))
    alive = np.ones(n_episodes, dtype=bool)  # not yet in a terminal state
    rows = np.arange(n_episodes)
    w = 1.0
    for _ in range(n_steps):
        visits[rows, s] += w
        a = np.minimum((rng.random(n_episodes)[:, None] > pi_cdf[s]).sum(axis=1), A - 1)
        nxt = np.minimum((rng.random(n_episodes)[:, None] > P_cdf[s, a]).sum(axis=1), S - 1)
        alive &= ~model.terminal[s]
        ret += w * alive * model.R[s, a, nxt]
        cost += w * alive[:, None] * model.C[s, a, nxt]
        s = nxt
        w *= discount
    return ret, cost, visits


def within_ci(samples, exact, level=0.99):
    """All of the sample means lie in their (Bonferroni-corrected) confidence interval."""
    samples = np.asarray(samples)
    samples = samples.reshape(samples.shape[0], -1)
    exact = np.reshape(exact, -1)
    z = norm.ppf(1 - (1 - level) / (2 * exact.size))
    mean = samples.mean(axis=0)
    se = samples.std(axis=0, ddof=1) / np.sqrt(samples.shape[0])
    return np.abs(mean - exact) <= z * se + 1e-12, (mean - exact) / np.maximum(se, 1e-300)


def mc_model():
    rng = np.random.default_rng(7)
    P, R, C = random_model_arrays(rng, 5, 3, 2, density=0.5)
    return TabularCMDP(P, R, C, d=[1.0, 1.0], gamma=0.9, p0=rng.dirichlet(np.ones(5)))


def test_monte_carlo_discounted():
    """Discounted returns of 20,000 rollouts of 300 steps (0.9^300 < 1e-13)."""
    model = mc_model()
    pi = np.random.default_rng(8).dirichlet(np.ones(3), size=5)
    ret, cost, visits = simulate(model, pi, 20_000, 300, model.gamma, seed=2024)
    exact = evaluate(model, pi)
    ok, z = within_ci(ret, exact.value)
    assert ok.all(), z
    ok, z = within_ci(cost, exact.costs)
    assert ok.all(), z
    ok, z = within_ci(visits, exact.occupancy)
    assert ok.all(), z


def corridor(n=6, p=0.7, gamma=1.0, cell_cost=None, horizon=None):
    """n cells in a row, actions left/right, a move succeeds with prob p (else stay);
    the last cell is terminal; reward -1 per step, cost of the cell entered."""
    x = np.arange(n)
    ns = np.empty((n, 2, 2), dtype=int)
    ns[:, :, 0] = x[:, None]
    ns[:, 0, 1] = np.maximum(x - 1, 0)
    ns[:, 1, 1] = np.minimum(x + 1, n - 1)
    prob = np.broadcast_to([1 - p, p], (n, 2, 2)).copy()
    prob[n - 1] = [1.0, 0.0]
    cost = np.zeros(n) if cell_cost is None else np.asarray(cell_cost, dtype=float)
    return TabularCMDP.from_outcomes(
        ns, prob, R=-np.ones(n), C=cost, d=[1.0], gamma=gamma, terminal=[n - 1],
        horizon=horizon,
    )


def test_monte_carlo_finite_horizon_with_terminal_state():
    """The paper's test metric: undiscounted T-step return, stopping at the goal."""
    model = corridor(n=6, p=0.7, cell_cost=[0, 1, 0, 2, 0, 0], horizon=12)
    pi = np.tile([0.2, 0.8], (6, 1))
    ret, cost, _ = simulate(model, pi, 20_000, 12, 1.0, seed=99)
    exact = evaluate_finite_horizon(model, pi)
    ok, z = within_ci(np.column_stack([ret, cost]), np.r_[exact.value, exact.costs])
    assert ok.all(), z


# --------------------------------------------------------------------------- (c) closed forms
@pytest.mark.parametrize(("p", "q", "gamma"), [(0.3, 0.6, 0.9), (1.0, 0.0, 0.5), (0.05, 0.9, 0.99)])
def test_two_state_chain_closed_form(p, q, gamma):
    """P = [[1-p, p], [q, 1-q]], r = [1, 0]:
    V0 = (1 - g(1-q)) / ((1-g)(1-g(1-p-q))), V1 = g q / ((1-g)(1-g(1-p-q)))."""
    P = np.array([[[1 - p, p]], [[q, 1 - q]]])
    model = TabularCMDP(P, R=[[1.0], [0.0]], gamma=gamma, p0=0)
    res = evaluate(model, [[1.0], [1.0]])
    den = (1 - gamma) * (1 - gamma * (1 - p - q))
    np.testing.assert_allclose(res.v, [(1 - gamma * (1 - q)) / den, gamma * q / den],
                               rtol=1e-13)
    # occupancy from state 0: the first row of (I - gP)^-1
    np.testing.assert_allclose(res.occupancy, [(1 - gamma * (1 - q)) / den, gamma * p / den],
                               rtol=1e-13)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.9, 0.999])
def test_geometric_series(gamma):
    """One state, reward 2 per step: V = 2/(1-g); T steps: 2 (1-g^T)/(1-g)."""
    model = TabularCMDP(np.ones((1, 1, 1)), R=[[2.0]], C=[[[1.0]]], d=[3.0], gamma=gamma,
                        horizon=50)
    res = evaluate(model, [[1.0]], lam=0.5)
    assert res.value == pytest.approx(2 / (1 - gamma), rel=1e-12)
    assert res.costs[0] == pytest.approx(1 / (1 - gamma), rel=1e-12)
    assert res.lagrangian_p0 == pytest.approx(2 / (1 - gamma) - 0.5 * (1 / (1 - gamma) - 3))
    assert res.occupancy[0] == pytest.approx(1 / (1 - gamma), rel=1e-12)
    fin = evaluate_finite_horizon(model, [[1.0]], discount=gamma)
    assert fin.value == pytest.approx(2 * sum(gamma**t for t in range(50)), rel=1e-12)
    fin = evaluate_finite_horizon(model, [[1.0]])
    assert fin.value == pytest.approx(100.0) and fin.costs[0] == pytest.approx(50.0)


@pytest.mark.parametrize("p", [1.0, 0.7, 0.25])
def test_corridor_shortest_path_closed_form(p):
    """Always right from cell i of n: -(n-1-i)/p steps; cell j is entered (1-p)/p times
    by staying plus once by moving, so C(i) = sum_{j=i}^{n-2} ((1-p)/p c_j + c_{j+1})."""
    n = 6
    cost = np.array([0.0, 1.0, 0.0, 2.0, 0.5, 3.0])
    model = corridor(n=n, p=p, cell_cost=cost)
    res = evaluate(model, np.ones(n, dtype=int))
    expected_v = -(n - 1 - np.arange(n)) / p
    expected_c = [sum((1 - p) / p * cost[j] + cost[j + 1] for j in range(i, n - 1))
                  for i in range(n)]
    np.testing.assert_allclose(res.v, expected_v, rtol=1e-12)
    np.testing.assert_allclose(res.c[:, 0], expected_c, rtol=1e-12, atol=1e-12)
    # expected visits before absorption: 1/p per cell on the way, none in the goal
    np.testing.assert_allclose(res.occupancy, [1 / p] * (n - 1) + [0.0], rtol=1e-12)
    # discounted, deterministic: V(i) = -(1 - g^(n-1-i)) / (1 - g)
    if p == 1.0:
        g = 0.9
        res = evaluate(model.replace(gamma=g), np.ones(n, dtype=int))
        np.testing.assert_allclose(res.v, -(1 - g ** (n - 1 - np.arange(n))) / (1 - g),
                                   rtol=1e-12)


def test_safe_navigation_2_shortest_path():
    """Deterministic Safe Navigation 2: the shortest path from (0,0) to (4,4) takes 8
    steps; its cost is the sum of the costs of the cells it enters, traced by hand."""
    from rcmdp_exact.domains import safe_navigation_2, shortest_path_policy

    model = safe_navigation_2(p_success=1.0)
    policy = shortest_path_policy(model)
    s, path = int(np.argmax(model.p0)), []
    while not model.terminal[s]:
        nxt = int(np.argmax(model.P[s, policy[s]]))
        assert model.P[s, policy[s], nxt] == 1.0
        path.append(nxt)
        s = nxt
    assert len(path) == 8
    path_cost = sum(model.C[0, 0, t, 0] for t in path)  # cost of entering each cell
    for res in (evaluate(model.replace(gamma=1.0), policy),
                evaluate_finite_horizon(model, policy)):
        assert res.value == pytest.approx(-8.0, abs=1e-12)
        assert res.costs[0] == pytest.approx(path_cost, abs=1e-12)


# --------------------------------------------------------------------------- properties
@given(models_and_policies())
def test_value_is_the_fixed_point_of_the_policy_bellman_operator(mp):
    model, policy = mp
    pi = dense_policy(policy, model.n_actions)
    res = evaluate(model, policy)
    P_pi = np.einsum("sa,sat->st", pi, model.P)
    r_pi = np.einsum("sa,sa->s", pi, model.r)
    c_pi = np.einsum("sa,sak->sk", pi, model.c)
    tol = 1e-10 * scale(res.v, res.c)
    np.testing.assert_allclose(r_pi + model.gamma * P_pi @ res.v, res.v, rtol=0, atol=tol)
    np.testing.assert_allclose(c_pi + model.gamma * P_pi @ res.c, res.c, rtol=0, atol=tol)
    np.testing.assert_allclose(policy_transition_matrix(model, policy).toarray(), P_pi,
                               rtol=0, atol=1e-15)


@given(models_and_policies())
def test_q_functions_are_consistent(mp):
    model, policy = mp
    pi = dense_policy(policy, model.n_actions)
    lam = np.linspace(0.5, 2.0, model.n_constraints)
    res = evaluate(model, policy, lam)
    tol = 1e-10 * scale(res.v, res.c, res.q)
    # V = sum_a pi Q and Q = r + g P V, for the reward, each cost and the Lagrangian
    np.testing.assert_allclose(np.einsum("sa,sa->s", pi, res.q), res.v, rtol=0, atol=tol)
    np.testing.assert_allclose(np.einsum("sa,sak->sk", pi, res.qc), res.c, rtol=0, atol=tol)
    np.testing.assert_allclose(model.r + model.gamma * model.P @ res.v, res.q, rtol=0, atol=tol)
    np.testing.assert_allclose(res.q_lagrangian, res.q - res.qc @ lam, rtol=0, atol=tol)
    np.testing.assert_allclose(res.lagrangian, res.v - res.c @ lam, rtol=0, atol=tol)
    assert res.value == pytest.approx(model.p0 @ res.v, abs=tol)
    assert res.lagrangian_p0 == pytest.approx(res.value - lam @ (res.costs - model.d), abs=tol)


@given(models_and_policies(), st.floats(-3, 3), st.floats(-3, 3), st.integers(0, 2**32 - 1))
def test_value_is_linear_in_the_reward(mp, a, b, seed):
    model, policy = mp
    S, A = model.n_states, model.n_actions
    rng = np.random.default_rng(seed)
    R1, R2 = rng.normal(size=(S, A)), rng.normal(size=(S, A))
    v1 = evaluate(model.replace(R=R1, C=None, d=None), policy).v
    v2 = evaluate(model.replace(R=R2, C=None, d=None), policy).v
    v = evaluate(model.replace(R=a * R1 + b * R2, C=None, d=None), policy).v
    np.testing.assert_allclose(v, a * v1 + b * v2, rtol=0, atol=1e-10 * scale(a * v1, b * v2))


@given(models_and_policies())
def test_occupancy_sums_to_the_effective_horizon(mp):
    model, policy = mp
    pi = dense_policy(policy, model.n_actions)
    res = evaluate(model, policy)
    h = 1.0 / (1.0 - model.gamma)
    assert res.occupancy.sum() == pytest.approx(h, rel=1e-10)
    assert (res.occupancy >= -1e-12 * h).all()
    assert res.occupancy @ model.p0 >= 0.0
    # p0.V = sum_s d(s) r_pi(s), and likewise for every cost
    r_pi = np.einsum("sa,sa->s", pi, model.r)
    c_pi = np.einsum("sa,sak->sk", pi, model.c)
    tol = 1e-10 * scale(res.v, res.c)
    assert res.value == pytest.approx(res.occupancy @ r_pi, abs=tol)
    np.testing.assert_allclose(res.costs, res.occupancy @ c_pi, rtol=0, atol=tol)


@given(models_and_policies(gammas=st.floats(0.0, 0.95)))
def test_finite_horizon_converges_to_the_discounted_value(mp):
    """|V_T - V| <= g^T max|r_pi| / (1 - g), so V_T -> V as T grows."""
    model, policy = mp
    pi = dense_policy(policy, model.n_actions)
    g = model.gamma
    exact = evaluate(model, policy)
    rmax = np.abs(np.einsum("sa,sa->s", pi, model.r)).max()
    for T in (1, 5, 20, 100):
        fin = evaluate_finite_horizon(model, policy, T, discount=g)
        bound = g**T * rmax / (1 - g) + 1e-10 * scale(exact.v)
        assert np.abs(fin.v - exact.v).max() <= bound
    fin = evaluate_finite_horizon(model, policy, 800, discount=g)  # 0.95^800 < 1e-17
    np.testing.assert_allclose(fin.v, exact.v, rtol=0, atol=1e-9 * scale(exact.v))
    np.testing.assert_allclose(fin.c, exact.c, rtol=0, atol=1e-9 * scale(exact.c))


@st.composite
def absorbing_models(draw):
    """gamma = 1, a terminal state reached with probability >= 0.1 from every state."""
    S = draw(st.integers(2, 8))
    A = draw(st.integers(1, 3))
    K = draw(st.integers(0, 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    P, R, C = random_model_arrays(rng, S, A, K)
    P *= 0.9
    P[:, :, S - 1] += 0.1
    P[S - 1] = 0.0
    P[S - 1, :, S - 1] = 1.0
    model = TabularCMDP(P, R, C, d=np.ones(K), gamma=1.0, terminal=[S - 1],
                        p0=rng.dirichlet(np.ones(S)))
    return model, rng.dirichlet(np.ones(A), size=S)


@given(absorbing_models())
def test_undiscounted_with_terminal_states_is_the_limit_of_long_horizons(mp):
    """Absorption >= 0.1 per step: the tail after T steps is <= 0.9^T max|r| / 0.1."""
    model, pi = mp
    res = evaluate(model, pi)
    assert np.isfinite(res.v).all() and res.v[-1] == 0.0
    fin = evaluate_finite_horizon(model, pi, 400)
    np.testing.assert_allclose(fin.v, res.v, rtol=0, atol=1e-9 * scale(res.v))
    np.testing.assert_allclose(fin.c, res.c, rtol=0, atol=1e-9 * scale(res.c))
    assert fin.value == pytest.approx(res.value, abs=1e-9 * scale(res.v))
    # expected number of steps before absorption: occupancy sums to it, finite
    steps = evaluate(model.replace(R=np.ones((model.n_states, model.n_actions)), C=None,
                                   d=None), pi).value
    assert res.occupancy.sum() == pytest.approx(steps, rel=1e-10)
    assert res.occupancy[-1] == 0.0


def test_undiscounted_unreachable_state_that_may_loop_forever_is_nan():
    """gamma = 1, terminal state 3.  Under the policy 0 -> 3 surely; 1 -> 3 or 2 with
    probability 1/2 each; 2 loops forever.  From p0 = state 0 only 0 and 3 are reached,
    so the evaluation is defined; state 2 never reaches the goal and state 1 reaches it
    only with probability 1/2, so both have undefined undiscounted sums (nan), although
    state 1 *can* reach the terminal state."""
    S, A = 4, 2
    P = np.zeros((S, A, S))
    P[0, 0, 3] = 1.0  # action 0 in state 0: to the goal
    P[0, 1, 1] = 1.0  # action 1 in state 0: to state 1
    P[1, :, [2, 3]] = 0.5
    P[2, :, 2] = 1.0
    P[3, :, 3] = 1.0
    model = TabularCMDP(P, R=-np.ones((S, A)), gamma=1.0, p0=0, terminal=[3])
    res = evaluate(model, np.zeros(S, dtype=int))
    assert res.value == -1.0 and res.v[0] == -1.0 and res.v[3] == 0.0
    assert np.isnan(res.v[1]) and np.isnan(res.v[2])
    assert res.q[0, 0] == -1.0 and np.isnan(res.q[0, 1])  # action 1 leads to state 1
    np.testing.assert_array_equal(res.occupancy, [1.0, 0.0, 0.0, 0.0])


def test_undiscounted_long_chain_of_singleton_components():
    """A chain 0 -> 1 -> ... -> S-1 (terminal) of S = 50,001 states: every state is its
    own strongly connected component, more than sqrt(2^31) of them, and the value of
    state s is -(S-1-s) steps."""
    S = 50_001
    nxt = np.minimum(np.arange(S) + 1, S - 1)
    P = sp.csr_array((np.ones(S), (np.arange(S), nxt)), shape=(S, S))
    model = TabularCMDP(P, -np.ones((S, 1)), gamma=1.0, p0=0, terminal=[S - 1])
    res = evaluate(model, np.zeros(S, dtype=int))
    np.testing.assert_array_equal(res.v, -(S - 1 - np.arange(S)).astype(float))
    assert res.value == -(S - 1)


@st.composite
def support_graphs(draw):
    """gamma = 1 models with a random sparse support (self-loops, cycles, dead ends),
    some terminal states and a random start distribution."""
    S = draw(st.integers(1, 9))
    A = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    terminal = rng.random(S) < draw(st.sampled_from([0.0, 0.2, 0.4]))
    terminal[rng.integers(0, S)] |= draw(st.booleans())
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) < draw(st.sampled_from([0.0, 0.2, 0.4])))
    P[np.arange(S)[:, None], np.arange(A)[None, :], rng.integers(0, S, (S, A))] += 0.5
    dead = (rng.random(S) < 0.2) & ~terminal  # non-terminal self-loops: never absorbed
    P[dead | terminal] = 0.0
    P[dead | terminal, :, dead | terminal] = 1.0
    P /= P.sum(axis=2, keepdims=True)
    p0 = rng.random(S) * (rng.random(S) < 0.2)
    p0[rng.integers(0, S)] += 1.0
    if terminal.any() and draw(st.booleans()):  # start in a terminal state: every other
        p0 = terminal / terminal.sum()  # state is unreachable, proper or nan
    model = TabularCMDP(P, np.zeros((S, A)), gamma=1.0, terminal=terminal, p0=p0 / p0.sum())
    return model, rng.dirichlet(np.ones(A), size=S) * (rng.random((S, A)) < 0.8)


@settings(max_examples=examples(80))
@given(support_graphs())
def test_check_proper_against_transitive_closure(mp):
    """Independent: reachability by boolean matrix powers of the support of P_pi.  A state
    is proper iff every state it reaches can reach a terminal state; the evaluation must
    refuse exactly when p0 reaches a state that cannot."""
    model, pi = mp
    S = model.n_states
    pi[pi.sum(axis=1) == 0, 0] = 1.0
    pi /= pi.sum(axis=1, keepdims=True)
    adj = np.einsum("sa,sat->st", pi, model.P) > 0
    reach = adj | np.eye(S, dtype=bool)  # reach[s, t]: t reachable from s in >= 0 steps
    for _ in range(S):
        reach = reach | ((reach.astype(int) @ reach.astype(int)) > 0)
    can_end = reach[:, model.terminal].any(axis=1)
    proper = ~(reach & ~can_end[None, :]).any(axis=1)
    from_p0 = reach[model.p0 > 0].any(axis=0)
    P_pi = policy_transition_matrix(model, pi)
    if (from_p0 & ~can_end).any():
        first = int(np.flatnonzero(from_p0 & ~can_end)[0])
        with pytest.raises(ModelError, match=f"but state {first} is reachable from p0"):
            check_proper(model, P_pi, "test")
    else:
        np.testing.assert_array_equal(check_proper(model, P_pi, "test"), proper)
        res = evaluate(model, pi)
        np.testing.assert_array_equal(np.isnan(res.v), ~proper)


@given(models_and_policies(gammas=st.floats(0.0, 0.99)))
def test_terminal_states_earn_nothing(mp):
    model, policy = mp
    P = model.P.copy()
    P[0] = 0.0
    P[0, :, 0] = 1.0
    term = model.with_transitions(P).replace(terminal=np.arange(model.n_states) == 0)
    res = evaluate(term, policy)
    assert res.v[0] == 0.0 and (res.q[0] == 0.0).all() and (res.c[0] == 0.0).all()
    fin = evaluate_finite_horizon(term, policy, 10)
    assert fin.v[0] == 0.0


# --------------------------------------------------------------------------- metrics
@pytest.mark.parametrize(
    ("d", "T", "expected"),
    [(6.0, 100, 9.464), (3.0, 200, 6.928), (0.4, 100, 0.631)],
)
def test_rescaled_budget_protocol_numbers(d, T, expected):
    """docs/protocol.md: Inventory 9.464, Safe Navigation 1 6.928, Safe Navigation 2 0.631."""
    assert rescaled_budget([d], 0.99, T)[0] == pytest.approx(expected, abs=5e-4)
    assert rescaled_budget(d, 1.0, T)[0] == d  # no discount: nothing to rescale
    assert rescaled_budget(d, 0.0, T)[0] == d * T


def test_penalised_return_by_hand():
    assert PENALTY_WEIGHT == 500.0
    assert penalised_return(-10.0, [8.0], [6.928]) == pytest.approx(-10.0 - 500 * 1.072)
    assert penalised_return(-10.0, [5.0], [6.928]) == -10.0  # no overshoot, no penalty
    assert penalised_return(3.0, [2.0, 1.0], [1.0, 0.5]) == pytest.approx(3 - 500 * 1.5)
    assert penalised_return(3.0, 2.0, 1.0, weight=10.0) == pytest.approx(-7.0)


def test_finite_horizon_metric_fields():
    """Corridor, always right, p = 1, T = 100 >> 5 steps: V = -5, C = 1+0+2+0.5+3."""
    model = corridor(n=6, p=1.0, cell_cost=[0.0, 1.0, 0.0, 2.0, 0.5, 3.0], horizon=100)
    model = model.replace(gamma=0.99, d=[3.0])
    res = evaluate_finite_horizon(model, np.ones(6, dtype=int))
    assert res.value == pytest.approx(-5.0) and res.costs[0] == pytest.approx(6.5)
    assert res.horizon == 100
    d_prime = 3.0 * 100 * 0.01 / (1 - 0.99**100)
    assert res.budget[0] == pytest.approx(d_prime, rel=1e-12)
    assert res.overshoot[0] == pytest.approx(6.5 - d_prime)
    assert res.penalised_return == pytest.approx(-5.0 - 500 * (6.5 - d_prime))
    # a short horizon stops the episode early: 3 steps earn -3 and enter cells 1, 2, 3
    short = evaluate_finite_horizon(model, np.ones(6, dtype=int), 3)
    assert short.value == pytest.approx(-3.0) and short.costs[0] == pytest.approx(3.0)
    # an episode of no steps is refused: its budget d T / sum_{i<T} gamma^i is 0 / 0
    with raises_fact(ModelError, "horizon", ">= 1", "0"):
        evaluate_finite_horizon(model, np.ones(6, dtype=int), 0)


# --------------------------------------------------------------------------- result object
def test_result_is_a_dict_with_attribute_access():
    import copy
    import pickle

    from rcmdp_exact._result import Result

    r = Result(value=1.5, v=np.arange(20.0), cost=np.array([0.25]))
    assert r.value == r["value"] == 1.5
    r.extra = 3
    assert r["extra"] == 3 and "extra" in dir(r)
    del r.extra
    assert "extra" not in r
    with pytest.raises(AttributeError, match=r"result has no field 'nope'; available fields: "
                                             r"\['cost', 'v', 'value'\]"):
        r.nope  # noqa: B018
    assert not hasattr(r, "nope")
    # keys right-aligned to the longest key plus one; arrays of > 8 entries summarised
    assert repr(r).splitlines() == [" value: 1.5", "     v: array(shape=(20,), dtype=float64)",
                                    "  cost: array([0.25])"]
    assert repr(Result()) == "Result()"
    back = pickle.loads(pickle.dumps(r))
    assert isinstance(back, Result) and back.value == 1.5
    np.testing.assert_array_equal(copy.deepcopy(r).v, r.v)


def test_a_missing_field_names_the_fields_there_are():
    model = corridor(n=4, p=1.0, cell_cost=[0.0, 1.0, 0.0, 2.0], horizon=10)
    res = evaluate_finite_horizon(model, np.ones(4, dtype=int))
    with pytest.raises(AttributeError, match=r"no field 'cost'.*'costs'"):
        res.cost  # noqa: B018
    with pytest.raises(KeyError):
        res["cost"]


# ----------------------------------------------------------------------- the solver choice
@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(2, 60), gamma=st.sampled_from([0.5, 0.99]),
       method=st.sampled_from(["bicgstab", "gmres", "iteration"]))
# a BiCGSTAB attempt that missed the target was restarted and met it, but the missed
# attempt's bound had been reported as the result's error_bound
@example(seed=578, S=43, gamma=0.99, method="bicgstab")
# dense rows of 54 and 51 entries, values near 80: the rounding floor of the residual
# is above half of 1e-12 of the value scale
@example(seed=634, S=54, gamma=0.99, method="bicgstab")
@example(seed=0, S=51, gamma=0.99, method="gmres")
# the cost column's residual met its target (1e-12 of |c_pi|) beside a rounding floor of
# about half of it: the bound (residual and rounding) was 1.11 times the target; the solve
# now ends when the bound on the exact residual meets the target
@example(seed=1129, S=24, gamma=0.99, method="bicgstab")
def test_iterative_solvers_meet_their_error_bound(seed, S, gamma, method):
    """Every iterative method agrees with the LU within the error bound it reports, and
    the bound is at most 1e-12 of the value scale or, where float64 cannot certify that
    (the documented target: twice the residual's rounding floor, gamma_{L+4} (|b| + |x| +
    gamma |x|) with L = S stored entries per row, over 1 - gamma), three times that floor
    (the occupancy: 1e-10 in the 1 norm)."""
    from rcmdp_exact.domains import garnet

    m = garnet(S, 3, min(S, 3), n_constraints=1, seed=seed, gamma=gamma)
    pi = np.random.default_rng(seed).dirichlet(np.ones(3), size=S)
    lu = evaluate(m, pi, 0.3, method="lu")
    it = evaluate(m, pi, 0.3, method=method)
    scale = max(1.0, np.abs(m.r).max(), np.abs(m.c).max()) / (1.0 - gamma)
    u = 2.0**-53
    g = (S + 4) * u / (1.0 - (S + 4) * u)
    xmax = max(np.abs(lu.v).max(), np.abs(lu.c).max())
    bmax = max(np.abs(m.r).max(), np.abs(m.c).max())
    floor = 3.0 * g * (bmax + (1.0 + gamma) * xmax) / (1.0 - gamma)
    assert it.error_bound <= max(1e-12 * scale, floor) * 1.01
    assert np.abs(it.v - lu.v).max() <= it.error_bound + lu.error_bound + 1e-15 * scale
    assert np.abs(it.c - lu.c).max() <= it.error_bound + lu.error_bound + 1e-15 * scale
    assert np.abs(it.occupancy - lu.occupancy).sum() <= 2e-10 / (1.0 - gamma)
    np.testing.assert_allclose(it.q, lu.q, rtol=0, atol=4 * scale * 1e-12)


def test_auto_factorises_banded_models_and_iterates_on_random_ones():
    """A grid keeps the sparse LU (its factors stay banded); a random sparse model of the
    same size is solved by GMRES, to the same values."""
    from rcmdp_exact.domains import garnet

    n = 45
    S = n * n
    i, j = np.divmod(np.arange(S), n)
    right, down = i * n + np.minimum(j + 1, n - 1), np.minimum(i + 1, n - 1) * n + j
    rows = np.concatenate([np.arange(S) * 2, np.arange(S) * 2 + 1])
    P = sp.csr_array((np.ones(2 * S), (rows, np.concatenate([right, down]))), shape=(2 * S, S))
    grid = TabularCMDP(P, -np.ones((S, 2)), gamma=0.99)
    pi = np.full((S, 2), 0.5)
    assert evaluate(grid, pi).solver == "lu"
    rnd = garnet(S, 2, 3, n_constraints=0, seed=1, gamma=0.99)
    auto = evaluate(rnd, pi)
    assert auto.solver == "gmres"
    lu = evaluate(rnd, pi, method="lu")
    assert np.abs(auto.v - lu.v).max() <= auto.error_bound + lu.error_bound


def test_q_values_that_overflow_are_an_error():
    """The values of the policy stay finite (V = (0, 1e308)), but the action it never takes
    in state 0 earns 1.7e308 and then V(1): its Q-value overflows; evaluate says so
    (NotFiniteError) instead of returning inf with a numpy warning."""
    P = np.zeros((2, 2, 2))
    P[0, 0, 0] = P[0, 1, 1] = P[1, :, 1] = 1.0
    R = np.array([[0.0, 1.7e308], [0.5e308, 0.0]])
    m = TabularCMDP(P, R, gamma=0.5)
    with raises_fact(NotFiniteError, "R", "overflow"):
        evaluate(m, [[1.0, 0.0], [1.0, 0.0]])


def test_unknown_solver_is_refused():
    from rcmdp_exact.domains import garnet

    m = garnet(3, 2, 2, seed=0)
    with raises_fact(OptionError, "method", "'cholesky'", "'bicgstab'"):
        evaluate(m, np.full((3, 2), 0.5), method="cholesky")


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 30), A=st.integers(1, 3),
       gamma=st.sampled_from([0.0, 0.5, 0.99, 0.9999]),
       scale=st.sampled_from([1e-3, 1.0, 1e6]))
def test_small_models_solved_by_lapack_agree_with_the_sparse_lu(seed, S, A, gamma, scale):
    """A small model stored densely is solved by LAPACK ("dense"); on rows of estimated
    kernels (masses from 1e-15 to 1e-2 beside large ones, exact zeros), rewards and costs
    up to 1e6 and gamma up to 0.9999 it agrees with SuperLU (``method="lu"``, a second
    factorisation of a P_pi built another way) within the two error bounds (both bound
    the distance to the same exact values), and its bound is a rounding-level fraction
    of the value scale: (L + k + 8) u (|b| + 2 |x|) / (1 - gamma) up to a small factor."""
    from rcmdp_exact.testing import skewed_kernel

    rng = np.random.default_rng(seed)
    P = skewed_kernel(rng, S, A)
    R = rng.normal(size=(S, A)) * scale
    C = rng.random((S, A, 2)) * scale
    m = TabularCMDP(P, R=R, C=C, d=[scale, scale], gamma=gamma,
                    p0=rng.dirichlet(np.ones(S)))
    pi = rng.dirichlet(np.full(A, 0.5), size=S)
    dense = evaluate(m, pi, [0.5, 2.0])
    lu = evaluate(m, pi, [0.5, 2.0], method="lu")
    assert dense.solver == "dense" and lu.solver == "lu"
    size = max(np.abs(lu.v).max(), np.abs(lu.c).max())
    u = np.finfo(float).eps / 2
    assert dense.error_bound <= 8 * (S + A + 8) * u * (5 * scale + 2 * size) / (1 - gamma)
    tol = dense.error_bound + lu.error_bound
    assert np.abs(dense.v - lu.v).max() <= tol
    assert np.abs(dense.c - lu.c).max() <= tol
    # the Q-values add the rounding of r + gamma P v
    assert np.abs(dense.q - lu.q).max() <= tol + 4 * (S + 4) * u * (scale * 5 + size)
    assert abs(dense.value - lu.value) <= tol
    assert (np.abs(dense.occupancy - lu.occupancy).sum()
            <= dense.occupancy_error_bound + lu.occupancy_error_bound)
    assert abs(dense.occupancy.sum() - 1.0 / (1.0 - gamma)) <= 1e-10 / (1.0 - gamma)
