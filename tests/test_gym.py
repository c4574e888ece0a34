"""Tests of the Gymnasium wrapper: Gymnasium's own checker, hand-checked episodes, and
Monte Carlo agreement with the exact finite-horizon evaluation."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import raises_fact

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

from rcmdp_exact import ModelError, TabularCMDP, evaluate_finite_horizon  # noqa: E402
from rcmdp_exact import domains as D  # noqa: E402
from rcmdp_exact.interop.gym import (  # noqa: E402
    ENV_IDS,
    TabularCMDPEnv,
    paper_env,
    register_envs,
)

Z99 = 2.5758293035489004  # two-sided 99% normal quantile


def run_checker(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    msgs = [str(w.message) for w in caught if "not having a spec" not in str(w.message)]
    assert msgs == []


@pytest.mark.parametrize("name", ["inventory", "nav1", "nav2"])
@pytest.mark.parametrize("observe", ["index", "features"])
def test_check_env(name, observe):
    run_checker(paper_env(name, observe=observe))


def test_check_env_through_gymnasium_make():
    ids = register_envs()
    assert ids == tuple(ENV_IDS.values())
    assert register_envs() == ids  # idempotent
    for name, env_id in ENV_IDS.items():
        env = gymnasium.make(env_id)
        run_checker(env.unwrapped)  # the raw env, which carries the spec of make
        assert isinstance(env.unwrapped, TabularCMDPEnv)
        # the spec carries the domain's horizon (T = 200 for nav1, 100 otherwise)
        horizon = {"inventory": 100, "nav1": 200, "nav2": 100}[name]
        assert gymnasium.spec(env_id).max_episode_steps == horizon
        assert env.unwrapped.max_episode_steps == horizon


def test_spaces():
    env = paper_env("nav1")
    assert env.observation_space == gymnasium.spaces.Discrete(25)
    assert env.action_space == gymnasium.spaces.Discrete(4)
    box = paper_env("nav1", observe="features").observation_space
    np.testing.assert_array_equal(box.low, [0, 0])
    np.testing.assert_array_equal(box.high, [4, 4])
    box = paper_env("inventory", observe="features").observation_space
    assert box.shape == (1,) and box.low[0] == 0 and box.high[0] == 9


def test_goal_terminates_with_hand_checked_sums():
    """Certain moves, right x4 then up x4: 8 steps of -1; (1,0) is the only cost cell."""
    env = TabularCMDPEnv(D.safe_navigation_1(1.0), observe="features")
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, [0.0, 0.0])
    actions = [1, 1, 1, 1, 2, 2, 2, 2]
    ret, cost = 0.0, np.zeros(1)
    for i, a in enumerate(actions):
        obs, r, term, trunc, info = env.step(a)
        ret += r
        cost += info["cost"]
        assert info["cost"].shape == (1,)
        assert term == (i == 7) and not trunc
    np.testing.assert_array_equal(obs, [4.0, 4.0])
    assert ret == -8.0 and cost[0] == 1.0
    with raises_fact(ModelError, 'episode is over', 'reset()'):
        env.step(0)


def test_truncated_at_horizon():
    env = paper_env("nav1")  # T = 200
    env.reset(seed=1)
    steps, ret = 0, 0.0
    while True:
        _, r, term, trunc, info = env.step(0)  # left at x=0: into the wall forever
        steps += 1
        ret += r
        assert not term
        if trunc:
            break
    assert steps == 200 and ret == -200.0 and info["t"] == 200
    env = paper_env("nav2", max_episode_steps=7)
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(7)]
    assert flags == [False] * 6 + [True]


def test_step_errors():
    env = paper_env("nav1")
    with raises_fact(ModelError, 'reset() before step()'):
        env.step(0)
    env.reset(seed=0)
    with raises_fact(ModelError, 'action', '0..3', '4'):
        env.step(4)
    with raises_fact(ModelError, 'observe', "'pixels'", "'index'", "'features'"):
        TabularCMDPEnv(D.safe_navigation_1(), observe="pixels")
    with raises_fact(ModelError, 'model', 'TabularCMDP', 'dict'):
        TabularCMDPEnv({})


def episode(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, info["cost"].tolist()))
        if term or trunc:
            break
    return out


def test_seeding_reproducible():
    env1, env2 = paper_env("inventory"), paper_env("inventory")
    acts = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3] * 3
    assert episode(env1, 42, acts) == episode(env2, 42, acts)
    runs = {str(episode(env1, s, acts)) for s in range(5)}
    assert len(runs) > 1


def rollouts(env, policy, n, seed):
    """Undiscounted returns and cost sums of n episodes of a stochastic policy."""
    rng = np.random.default_rng(seed)
    cum = np.cumsum(policy, axis=1)
    K = env.model.n_constraints
    G, C = np.zeros(n), np.zeros((n, K))
    s, _ = env.reset(seed=seed)
    for i in range(n):
        if i:
            s, _ = env.reset()
        done = False
        while not done:
            a = min(int(np.searchsorted(cum[s], rng.random() * cum[s, -1], side="right")),
                    policy.shape[1] - 1)
            s, r, term, trunc, info = env.step(a)
            G[i] += r
            C[i] += info["cost"]
            done = term or trunc
    return G, C


@pytest.mark.parametrize("name,n", [("nav1", 2000), ("nav2", 2000), ("inventory", 400)])
def test_monte_carlo_matches_exact_finite_horizon(name, n):
    model = D.paper_domain(name)
    S, A = model.n_states, model.n_actions
    if name == "inventory":
        pol = np.full((S, A), 1.0 / A)
    else:  # 70% shortest path, 30% uniform: short episodes, every action used
        pol = 0.3 / A + 0.7 * np.eye(A)[D.shortest_path_policy(model)]
    exact = evaluate_finite_horizon(model, pol)
    G, C = rollouts(TabularCMDPEnv(model), pol, n, seed=2024)
    assert abs(G.mean() - exact.value) <= Z99 * G.std(ddof=1) / np.sqrt(n)
    assert abs(C[:, 0].mean() - exact.costs[0]) <= Z99 * C[:, 0].std(ddof=1) / np.sqrt(n)


def test_monte_carlo_garnet_next_state_dependent():
    """Rewards and both costs depend on s' here, so charging C(s, a, s) would show."""
    model = D.garnet(8, 3, 3, n_constraints=2, seed=11)
    T, n = 15, 3000
    pol = np.random.default_rng(0).dirichlet(np.ones(3), size=8)
    exact = evaluate_finite_horizon(model, pol, horizon=T)
    env = TabularCMDPEnv(model, max_episode_steps=T)
    G, C = rollouts(env, pol, n, seed=7)
    assert abs(G.mean() - exact.value) <= Z99 * G.std(ddof=1) / np.sqrt(n)
    for k in range(2):
        assert abs(C[:, k].mean() - exact.costs[k]) <= Z99 * C[:, k].std(ddof=1) / np.sqrt(n)


def test_step_returns_the_transition_reward_and_cost():
    model = D.garnet(5, 2, 3, n_constraints=2, seed=4)
    env = TabularCMDPEnv(model, max_episode_steps=50)
    s, _ = env.reset(seed=0)
    for t in range(50):
        a = t % 2
        s2, r, _, trunc, info = env.step(a)
        assert r == model.R[s, a, s2]
        np.testing.assert_array_equal(info["cost"], model.C[s, a, s2])
        assert model.P[s, a, s2] > 0
        s = s2
    assert trunc


def test_next_state_frequencies_dense_and_sparse():
    """One-step sampling of a Garnet row and of a sparse model against P (4.5 sigma)."""
    m = D.garnet(6, 2, 4, seed=3)
    row = m.P[0, 1]
    P = sp.csr_array(m.P.reshape(12, 6))
    sparse = TabularCMDP(P, m.r, m.c, d=m.d, gamma=m.gamma, p0=0)
    n = 20_000
    for model in (m.replace(p0=np.eye(6)[0]), sparse):
        env = TabularCMDPEnv(model, max_episode_steps=1)
        env.reset(seed=5)
        counts = np.zeros(6)
        for _ in range(n):
            env.reset()
            s, *_ = env.step(1)
            counts[s] += 1
        se = np.sqrt(row * (1 - row) / n)
        assert (np.abs(counts / n - row) <= 4.5 * se + 1e-12).all()


def test_render_ansi():
    env = paper_env("nav1", render_mode="ansi")
    env.reset(seed=0)
    assert env.render() == "t=0 state=0 (0,0)"


def test_lazy_import_and_missing_gymnasium_message():
    code = (
        "import sys\n"
        "import rcmdp_exact, rcmdp_exact.interop, rcmdp_exact.domains\n"
        "assert 'gymnasium' not in sys.modules, 'gymnasium imported eagerly'\n"
        "sys.modules['gymnasium'] = None\n"
        "try:\n"
        "    import rcmdp_exact.interop.gym\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert "pip install rcmdp_exact[gym]" in out.stdout
