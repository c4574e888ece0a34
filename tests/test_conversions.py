"""Models in from Gymnasium, QuantEcon and pymdptoolbox, checked against those libraries.

Independent checks: the environments' tables are read here with plain loops; optimal
values come from QuantEcon's and pymdptoolbox's own solvers on arrays built here; episode
returns are sampled from the real Gymnasium environments and compared with the exact
finite-horizon value within a 99% confidence interval; CliffWalking's shortest path is
counted by hand.  Round trips are compared bit for bit.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st

from rcmdp_exact import InputError, OptionError, TabularCMDP, evaluate, evaluate_finite_horizon
from rcmdp_exact.core import conversions as conv

gymnasium = pytest.importorskip("gymnasium")

Z99 = 2.5758293035489004  # two-sided 99% normal quantile


def frozen_lake(slippery=True, **kw):
    return gymnasium.make("FrozenLake-v1", is_slippery=slippery, **kw)


def table_arrays(env):
    """(Q, R_sa, R_trans) straight from env.unwrapped.P with loops (the test's own reading)."""
    base = env.unwrapped
    S, A = base.observation_space.n, base.action_space.n
    Q = np.zeros((S, A, S))
    R = np.zeros((S, A))
    num = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            for p, t, r, _done in base.P[s][a]:
                Q[s, a, t] += p
                R[s, a] += p * r
                num[s, a, t] += p * r
    with np.errstate(invalid="ignore", divide="ignore"):
        R_trans = np.where(Q > 0, num / Q, 0.0)
    return Q, R, R_trans


def holes_and_goal(env):
    desc = env.unwrapped.desc.ravel()
    return np.flatnonzero(desc == b"H"), np.flatnonzero(desc == b"G")


def mc_return(env, policy, n_episodes, seed):
    """Mean and standard error of the undiscounted return of a deterministic policy,
    sampled from the real environment (its TimeLimit truncates at the spec's horizon)."""
    returns = np.empty(n_episodes)
    s, _ = env.reset(seed=seed)
    for i in range(n_episodes):
        if i:
            s, _ = env.reset()
        total, done = 0.0, False
        while not done:
            s, r, term, trunc, _ = env.step(int(policy[s]))
            total += r
            done = term or trunc
        returns[i] = total
    return returns.mean(), returns.std(ddof=1) / np.sqrt(n_episodes)


# --------------------------------------------------------------------------- FrozenLake
@pytest.mark.parametrize("slippery", [True, False])
def test_frozen_lake_matches_the_table(slippery):
    env = frozen_lake(slippery)
    m = TabularCMDP.from_gymnasium(env)
    Q, _, R_trans = table_arrays(env)
    holes, goal = holes_and_goal(env)
    terminal = np.zeros(16, dtype=bool)
    terminal[holes] = terminal[goal] = True
    np.testing.assert_array_equal(m.terminal, terminal)
    # holes and the goal are self-loops in the table too, so the whole table is the model
    np.testing.assert_array_equal(m.P, Q)
    np.testing.assert_array_equal(m.R, R_trans)
    # reward 1 exactly on entering the goal from a non-terminal state
    entering = np.zeros((16, 4, 16))
    entering[:, :, goal] = Q[:, :, goal] > 0
    entering[terminal] = 0.0
    np.testing.assert_array_equal(m.R, entering)
    assert m.horizon == gymnasium.spec("FrozenLake-v1").max_episode_steps == 100
    start = np.flatnonzero(env.unwrapped.desc.ravel() == b"S")
    np.testing.assert_array_equal(m.p0, np.eye(16)[start[0]])
    assert m.name == "FrozenLake-v1" and m.gamma == 0.99 and m.n_constraints == 0
    if slippery:
        # each move goes to the intended and the two perpendicular directions, 1/3 each
        assert m.P[6, 0].tolist() == pytest.approx([0, 0, 1 / 3, 0, 0, 1 / 3, 0, 0,
                                                    0, 0, 1 / 3, 0, 0, 0, 0, 0], abs=1e-15)
    else:
        assert m.P[14, 2, 15] == 1.0 and m.R[14, 2, 15] == 1.0  # right from (3, 2) to G


def test_frozen_lake_optimum_matches_quantecon():
    """QuantEcon solves arrays built here from the table; its optimal policy has the same
    value on our model, and that value satisfies our model's Bellman optimality."""
    from quantecon.markov import DiscreteDP

    for slippery in (True, False):
        env = frozen_lake(slippery)
        Q, R, _ = table_arrays(env)
        res = DiscreteDP(R, Q, 0.99).solve(method="policy_iteration")
        m = TabularCMDP.from_gymnasium(env, gamma=0.99)
        ours = evaluate(m, res.sigma)
        np.testing.assert_allclose(ours.v, res.v, rtol=0, atol=1e-10)
        np.testing.assert_allclose(ours.q.max(axis=1), ours.v, rtol=0, atol=1e-10)
        assert res.v[0] > 0.5 if slippery else res.v[0] == pytest.approx(0.99 ** 5)


def test_frozen_lake_episodes_match_the_exact_finite_horizon_value():
    """Returns sampled from the real environment (slippery, T = 100) agree with
    evaluate_finite_horizon of the converted model."""
    from quantecon.markov import DiscreteDP

    env = frozen_lake(True)
    Q, R, _ = table_arrays(env)
    policy = DiscreteDP(R, Q, 0.99).solve(method="policy_iteration").sigma
    m = TabularCMDP.from_gymnasium(env)
    exact = evaluate_finite_horizon(m, policy).value
    mean, se = mc_return(env, policy, 4000, seed=7)
    assert abs(mean - exact) <= Z99 * se + 1e-12
    assert 0.3 < exact < 1.0


def test_cliff_walking_shortest_path_by_hand():
    """Up, 11 times right, down: 13 steps of reward -1 (Sutton and Barto, ex. 6.6).
    The goal's table holds ordinary moves; the model makes it terminal."""
    env = gymnasium.make("CliffWalking-v1")
    m = TabularCMDP.from_gymnasium(env, gamma=1.0)
    assert np.flatnonzero(m.terminal).tolist() == [47]
    assert m.horizon is None  # CliffWalking has no time limit
    assert env.unwrapped.P[47][0][0][1] != 47  # not a self-loop in the environment
    np.testing.assert_array_equal(m.P[47, :, 47], 1.0)
    UP, RIGHT, DOWN = 0, 1, 2
    policy = np.full(48, UP)
    policy[24:35] = RIGHT
    policy[35] = DOWN
    res = evaluate(m, policy)
    assert res.v[36] == -13.0
    # stepping into the cliff costs -100 and returns to the start (36)
    assert m.P[36, RIGHT, 36] == 1.0 and m.R[36, RIGHT, 36] == -100.0
    mean, _ = mc_return(gymnasium.make("CliffWalking-v1", max_episode_steps=100), policy, 3,
                        seed=0)
    assert mean == -13.0


def test_taxi_loads_and_its_episodes_agree():
    from quantecon.markov import DiscreteDP

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gymnasium.make("Taxi-v4")
    m = TabularCMDP.from_gymnasium(env)
    base = env.unwrapped
    assert (m.n_states, m.n_actions, m.horizon) == (500, 6, 200)
    # terminal: the passenger delivered with the taxi at the destination (4 states)
    expected = [s for s in range(500)
                if (lambda r, c, p, d: p == d and base.locs[d] == (r, c))(*base.decode(s))]
    assert np.flatnonzero(m.terminal).tolist() == expected
    np.testing.assert_array_equal(m.p0, base.initial_state_distrib)
    # outside the terminal states the model is the table
    Q, R, _ = table_arrays(env)
    keep = ~m.terminal
    np.testing.assert_array_equal(m.P[keep], Q[keep])
    np.testing.assert_array_equal(m.r[keep], R[keep])
    policy = DiscreteDP(m.r, m.P, 0.99).solve(method="policy_iteration").sigma
    exact = evaluate_finite_horizon(m, policy).value
    mean, se = mc_return(env, policy, 400, seed=3)
    assert abs(mean - exact) <= Z99 * se + 1e-12
    assert exact > 0  # delivered: 20 minus the steps


def test_rainy_taxi_and_slippery_cliff_load():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rainy = TabularCMDP.from_gymnasium(gymnasium.make("Taxi-v4", is_rainy=True))
    assert rainy.terminal.sum() == 4
    cliff = TabularCMDP.from_gymnasium(gymnasium.make("CliffWalking-v1", is_slippery=True))
    assert np.flatnonzero(cliff.terminal).tolist() == [47]
    np.testing.assert_allclose(cliff.P.sum(axis=2), 1.0, atol=1e-15)


# --------------------------------------------------------------------------- costs
def hole_costs(env):
    holes, _ = holes_and_goal(env)
    return holes


def test_costs_as_arrays_and_as_a_function_agree():
    env = frozen_lake(True)
    holes = hole_costs(env)
    enter = np.isin(np.arange(16), holes).astype(float)
    by_fn = TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: float(t in holes), d=[0.2])
    by_state = TabularCMDP.from_gymnasium(env, costs=enter, d=[0.2])
    by_sk = TabularCMDP.from_gymnasium(env, costs=enter[:, None], d=[0.2])
    full = np.broadcast_to(enter[None, None, :, None], (16, 4, 16, 1))
    by_transition = TabularCMDP.from_gymnasium(env, costs=full, d=[0.2])
    for other in (by_state, by_sk, by_transition):
        np.testing.assert_array_equal(other.C, by_fn.C)
        np.testing.assert_array_equal(other.c, by_fn.c)
    # the expected cost of (s, a) is the probability of falling into a hole
    Q, _, _ = table_arrays(env)
    expect = Q[:, :, holes].sum(axis=2)
    expect[by_fn.terminal] = 0.0
    np.testing.assert_allclose(by_fn.c[:, :, 0], expect, rtol=0, atol=1e-15)
    per_pair = TabularCMDP.from_gymnasium(env, costs=expect[:, :, None], d=[0.2])
    assert not per_pair.cost_depends_on_next_state
    np.testing.assert_allclose(per_pair.c, by_fn.c, rtol=0, atol=1e-15)
    # two costs from a function returning (K,)
    two = TabularCMDP.from_gymnasium(
        env, costs=lambda s, a, t: np.array([t in holes, a == 0], dtype=float), d=[0.2, 5.0])
    assert two.n_constraints == 2
    np.testing.assert_array_equal(two.C[..., 0], by_fn.C[..., 0])


def test_cost_function_called_once_on_the_support_in_order():
    env = frozen_lake(True)
    calls = []

    def costs(s, a, t):
        calls.append((s, a, t))
        return 1.0

    m = TabularCMDP.from_gymnasium(env, costs=costs, d=[1.0])
    expect = [(s, a, t) for s in range(16) for a in range(4) for t in range(16)
              if m.P[s, a, t] > 0 and not m.terminal[s]]
    assert calls == expect
    assert all(type(x) is int for c in calls for x in c)


def test_cost_per_transition_and_a_monte_carlo_cost():
    """The constraint cost of entering a hole, sampled from the real environment, agrees
    with the exact finite-horizon cost."""
    env = frozen_lake(True)
    holes = hole_costs(env)
    m = TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: float(t in holes), d=[0.5])
    policy = np.zeros(16, dtype=int)  # always left: falls in a hole eventually or times out
    exact = evaluate_finite_horizon(m, policy).costs[0]
    hits = np.empty(3000)
    s, _ = env.reset(seed=11)
    for i in range(hits.size):
        if i:
            s, _ = env.reset()
        done = False
        while not done:
            s, _r, term, trunc, _ = env.step(0)
            done = term or trunc
        hits[i] = s in holes
    se = hits.std(ddof=1) / np.sqrt(hits.size)
    assert abs(hits.mean() - exact) <= Z99 * se + 1e-12


def test_large_tables_give_a_sparse_model(monkeypatch):
    env = frozen_lake(True)
    holes = hole_costs(env)
    dense = TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: float(t in holes), d=[1.0])
    monkeypatch.setattr(conv, "DENSE_ENTRIES", 100)
    sparse = TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: float(t in holes), d=[1.0])
    assert sparse.is_sparse and not dense.is_sparse
    np.testing.assert_array_equal(sparse.P, dense.P)
    np.testing.assert_allclose(sparse.r, dense.r, rtol=0, atol=1e-15)
    np.testing.assert_allclose(sparse.c, dense.c, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(sparse.terminal, dense.terminal)


def test_horizon_p0_and_name_options():
    env = frozen_lake(True)
    assert TabularCMDP.from_gymnasium(env, horizon=None).horizon is None
    assert TabularCMDP.from_gymnasium(env, horizon=7).horizon == 7
    # the raw environment has no TimeLimit (Gymnasium's spec of it says so too)
    assert TabularCMDP.from_gymnasium(env.unwrapped).horizon is None
    m = TabularCMDP.from_gymnasium(env, p0=1, name="lake")
    assert m.p0[1] == 1.0 and m.name == "lake"
    big = gymnasium.make("FrozenLake-v1", max_episode_steps=250)
    assert TabularCMDP.from_gymnasium(big).horizon == 250


# --------------------------------------------------------------------------- fake tables
class Space:
    """A stand-in for a space (only what from_gymnasium reads)."""

    def __init__(self, n, shape=(), start=0):
        self.n, self.shape, self.start = n, shape, start

    def __repr__(self):
        return f"Space({self.n})"


class TableEnv:
    """A minimal toy-text environment: Discrete spaces, a table P, a start."""

    def __init__(self, P, S, A, start=None):
        self.P = P
        self.observation_space = gymnasium.spaces.Discrete(S)
        self.action_space = gymnasium.spaces.Discrete(A)
        if start is not None:
            self.initial_state_distrib = np.asarray(start, dtype=float)

    @property
    def unwrapped(self):
        return self


def chain(done_from_1=True):
    """0 -a0-> 1 (terminated) ; 0 -a1-> 2 ; 2 -a*-> 1 with terminated=done_from_1."""
    return {
        0: {0: [(1.0, 1, 1.0, True)], 1: [(1.0, 2, 0.0, False)]},
        1: {0: [(1.0, 0, 0.0, False)], 1: [(1.0, 0, 0.0, False)]},
        2: {0: [(1.0, 1, 2.0, done_from_1)], 1: [(0.5, 1, 4.0, done_from_1),
                                                 (0.25, 2, 0.0, False),
                                                 (0.25, 2, 2.0, False)]},
    }


def test_fake_table_merging_and_terminal_rows():
    env = TableEnv(chain(), 3, 2, start=[1.0, 0.0, 0.0])
    m = TabularCMDP.from_gymnasium(env, gamma=0.5)
    assert m.terminal.tolist() == [False, True, False]
    np.testing.assert_array_equal(m.P[1], [[0, 1, 0], [0, 1, 0]])  # replaced by a self-loop
    assert m.R[1].max() == 0.0
    assert m.P[2, 1].tolist() == [0.0, 0.5, 0.5]
    assert m.R[2, 1, 2] == 1.0  # (0.25 * 0 + 0.25 * 2) / 0.5, the weighted mean
    assert m.r[2, 1] == 0.5 * 4.0 + 0.25 * 2.0
    assert m.horizon is None and m.name == "TableEnv"


def test_a_conflicting_flag_on_an_unreachable_state_is_accepted():
    """Like Taxi's delivered states: the terminated=False transition into a terminal
    state starts from a state no episode reaches, so the model is exact for episodes."""
    P = chain(done_from_1=False)
    P[0][1] = [(1.0, 0, 0.0, False)]  # state 2 is now unreachable from 0
    m = TabularCMDP.from_gymnasium(TableEnv(P, 3, 2, start=[1, 0, 0]))
    assert m.terminal.tolist() == [False, True, False]


@pytest.mark.parametrize("make_env, facts", [
    (lambda: gymnasium.make("CartPole-v1"), ("observation_space", "Box", "continuous",
                                             "discretise")),
    (lambda: gymnasium.make("Blackjack-v1"), ("observation_space", "Tuple",
                                              "not Discrete")),
    (lambda: TableEnv({}, 3, 2, [1, 0, 0]), ("env.unwrapped.P", "no entry for state 0")),
    (lambda: TableEnv({0: {0: []}}, 1, 1, [1]), ("P[0][0]", "non-empty list")),
    (lambda: TableEnv({0: {0: [(1.0, 0, 0.0)]}}, 1, 1, [1]), ("P[0][0][0]",
                                                               "(1.0, 0, 0.0)")),
    (lambda: TableEnv({0: {0: [(0.9, 0, 0.0, False)]}}, 1, 1, [1]),
     ("env.unwrapped.P", "(s=0, a=0)", "0.9", "not 1")),
    (lambda: TableEnv({0: {0: [(1.0, 3, 0.0, False)]}}, 1, 1, [1]),
     ("P[0][0][0]", "3", "0..0")),
    (lambda: TableEnv({0: {0: [(-0.5, 0, 0.0, False), (1.5, 0, 0.0, False)]}}, 1, 1, [1]),
     ("probability", "-0.5", "negative")),
    (lambda: TableEnv({0: {0: [(1.0, 0, np.nan, False)]}}, 1, 1, [1]),
     ("reward", "nan", "s=0, a=0, entry=0")),
    (lambda: TableEnv(chain(), 3, 2), ("initial_state_distrib", "p0=")),
    (lambda: TableEnv(chain(), 3, 2, [0, 1, 0]), ("start distribution", "state 1",
                                                  "terminated=True")),
    (lambda: TableEnv(chain(False), 3, 2, [1, 0, 0]),
     ("state 1", "terminated=True from (s=0, a=0)", "terminated=False from (s=2, a=0)")),
])
def test_bad_environments(make_env, facts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = make_env()
    with raises_fact(InputError, *facts):
        TabularCMDP.from_gymnasium(env)


def test_bad_gymnasium_arguments():
    env = frozen_lake(True)
    holes = hole_costs(env)
    with raises_fact(InputError, "costs", "no budgets d"):
        TabularCMDP.from_gymnasium(env, costs=np.ones(16))
    with raises_fact(InputError, "budgets d", "no costs"):
        TabularCMDP.from_gymnasium(env, d=[1.0])
    with raises_fact(InputError, "costs", "(16, 3, 1)", "(S, A, K)", "A=4"):
        TabularCMDP.from_gymnasium(env, costs=np.ones((16, 3, 1)), d=[1.0])
    with raises_fact(InputError, "costs", "inf", "s'=5"):
        TabularCMDP.from_gymnasium(env, costs=np.where(np.arange(16) == 5, np.inf, 0), d=[1])
    # an ambiguous shape: one cost per transition (S, A, S') reads as (S, A, K = S)
    with raises_fact(InputError, "costs of shape (16, 4, 16)", "per pair (S, A, K)",
                     "K = 16", "d gives 1 budget", "costs[..., None]", "(16, 4, 16, 1)",
                     "(S, A, S', K) per transition"):
        TabularCMDP.from_gymnasium(env, costs=np.ones((16, 4, 16)), d=[1.0])
    # one cost per pair (S, A) reads as entering costs (S, K = A)
    with raises_fact(InputError, "costs of shape (16, 4)", "entering each state (S, K)",
                     "K = 4", "d gives 1 budget", "(16, 4, 1)"):
        TabularCMDP.from_gymnasium(env, costs=np.ones((16, 4)), d=0.5)
    with raises_fact(InputError, "costs of shape (16, 4, 2)", "K = 2", "d gives 3 budgets"):
        TabularCMDP.from_gymnasium(env, costs=np.ones((16, 4, 2)), d=[1.0, 1.0, 1.0])
    for shape in ((16, 4, 16, 1), (16, 4, 1), (16,)):  # the shapes of one cost
        assert TabularCMDP.from_gymnasium(env, costs=np.ones(shape), d=[1.0]).n_constraints == 1
    with raises_fact(InputError, "costs(0, 0, 4)", "2 values", "1"):
        TabularCMDP.from_gymnasium(
            env, costs=lambda s, a, t: [1.0, 2.0] if t == 4 else 1.0, d=[1.0])
    with raises_fact(InputError, "costs(0, 0, 0)", "nan"):
        TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: np.nan, d=[1.0])
    with raises_fact(InputError, "budgets d", "(1,)", "(2,)"):
        TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: float(t in holes), d=[1, 2])
    with raises_fact(OptionError, "horizon", "'specs'", "'spec'"):
        TabularCMDP.from_gymnasium(env, horizon="specs")
    with raises_fact(InputError, "horizon", ">= 1", "0"):
        TabularCMDP.from_gymnasium(env, horizon=0)
    with raises_fact(InputError, "p0", "sums to 2.0"):
        TabularCMDP.from_gymnasium(env, p0=np.full(16, 0.125))
    with raises_fact(InputError, "env must be a Gymnasium environment", "int"):
        TabularCMDP.from_gymnasium(3)
    no_table = TableEnv(None, 2, 2, [1, 0])
    with raises_fact(InputError, "TableEnv", "no transition table P"):
        TabularCMDP.from_gymnasium(no_table)
    shifted = TableEnv(chain(), 3, 2, [1, 0, 0])
    shifted.action_space = Space(2, start=1)
    with raises_fact(InputError, "action_space", "starts at 1"):
        TabularCMDP.from_gymnasium(shifted)


# --------------------------------------------------------------------------- round trips
@st.composite
def models(draw, sparse=None):
    S = draw(st.integers(1, 6))
    A = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) < 0.6)
    P[:, :, 0] += 1e-3
    P /= P.sum(axis=2, keepdims=True)
    terminal = np.zeros(S, dtype=bool)
    if S > 1 and draw(st.booleans()):
        terminal[S - 1] = True
        P[S - 1] = 0.0
        P[S - 1, :, S - 1] = 1.0
    gamma = draw(st.sampled_from([0.0, 0.5, 0.9, 0.99, 1.0 - 1e-9]))
    is_sparse = draw(st.booleans()) if sparse is None else sparse
    if is_sparse:
        return TabularCMDP(sp.csr_array(P.reshape(S * A, S)), rng.normal(size=(S, A)),
                           gamma=gamma, terminal=terminal)
    return TabularCMDP(P, rng.normal(size=(S, A, S)), rng.random((S, A, S, 2)),
                       d=[1.0, 1.0], gamma=gamma, terminal=terminal)


def same_dynamics(a, b):
    assert a.is_sparse == b.is_sparse
    if a.is_sparse:
        for f in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(a.P_sparse, f), getattr(b.P_sparse, f))
    np.testing.assert_array_equal(a.P, b.P)
    np.testing.assert_array_equal(a.r, b.r)
    assert a.gamma == b.gamma and type(b.gamma) is float


@settings(max_examples=examples(40), deadline=None)
@given(m=models(), lam=st.sampled_from([None, 0.5]))
def test_quantecon_round_trip_is_exact(m, lam):
    from quantecon.markov import DiscreteDP

    lam = None if m.n_constraints == 0 else lam
    for arrays in (m.to_quantecon(lam, sparse=m.is_sparse),):
        back = TabularCMDP.from_quantecon(arrays)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # beta = 1 warns in QuantEcon
            back_ddp = TabularCMDP.from_quantecon(DiscreteDP(*arrays))
        for b in (back, back_ddp):
            np.testing.assert_array_equal(b.P, m.P)
            np.testing.assert_array_equal(b.r, m.scalarised_reward(lam))
            assert b.gamma == m.gamma
            assert b.is_sparse == m.is_sparse
    if lam is None:
        same_dynamics(m, TabularCMDP.from_quantecon(m.to_quantecon(sparse=m.is_sparse)))


@settings(max_examples=examples(40), deadline=None)
@given(m=models(), lam=st.sampled_from([None, 0.5]))
def test_mdptoolbox_round_trip_is_exact(m, lam):
    lam = None if m.n_constraints == 0 else lam
    P, R = m.to_mdptoolbox(lam, sparse=m.is_sparse)
    back = TabularCMDP.from_mdptoolbox(P, R, m.gamma)
    np.testing.assert_array_equal(back.P, m.P)
    np.testing.assert_array_equal(back.r, m.scalarised_reward(lam))
    assert back.gamma == m.gamma and back.is_sparse == m.is_sparse
    if m.is_sparse:
        for f in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(back.P_sparse, f), getattr(m.P_sparse, f))
    # pymdptoolbox's object-array form of the list
    obj = np.empty(len(P), dtype=object) if m.is_sparse else P
    if m.is_sparse:
        obj[:] = list(P)
    np.testing.assert_array_equal(TabularCMDP.from_mdptoolbox(obj, R, m.gamma).P, m.P)


def test_dense_model_round_trips_to_a_sparse_one_and_back():
    m = TabularCMDP(np.full((3, 2, 3), 1 / 3), np.arange(6.0).reshape(3, 2), gamma=0.9)
    qs = TabularCMDP.from_quantecon(m.to_quantecon(sparse=True))
    ms = TabularCMDP.from_mdptoolbox(*m.to_mdptoolbox(sparse=True), 0.9)
    for b in (qs, ms):
        assert b.is_sparse
        np.testing.assert_array_equal(b.P, m.P)
        np.testing.assert_array_equal(b.r, m.r)


def test_quantecon_pairs_in_any_order():
    from quantecon.markov import DiscreteDP

    rng = np.random.default_rng(4)
    S, A = 5, 3
    Q = rng.dirichlet(np.ones(S), size=S * A)
    R = rng.normal(size=S * A)
    s_idx, a_idx = np.divmod(np.arange(S * A), A)
    perm = rng.permutation(S * A)
    ref = TabularCMDP.from_quantecon((R, Q, 0.9, s_idx, a_idx))
    shuffled = (R[perm], Q[perm], 0.9, s_idx[perm], a_idx[perm])
    for ddp in (shuffled, DiscreteDP(*shuffled),
                (R[perm], sp.csr_matrix(Q[perm]), 0.9, s_idx[perm], a_idx[perm])):
        m = TabularCMDP.from_quantecon(ddp)
        np.testing.assert_array_equal(m.P, ref.P)
        np.testing.assert_array_equal(m.r, ref.r)
    np.testing.assert_array_equal(ref.P, Q.reshape(S, A, S))
    np.testing.assert_array_equal(ref.r, R.reshape(S, A))


def test_quantecon_values_agree():
    """QuantEcon's optimum of its own random problem, evaluated on the converted model."""
    from quantecon.markov import DiscreteDP, random_discrete_dp

    ddp = random_discrete_dp(12, 3, beta=0.95, k=4, sparse=True, sa_pair=True,
                             random_state=1234)
    res = ddp.solve(method="policy_iteration")
    m = TabularCMDP.from_quantecon(ddp, p0=0)
    assert m.is_sparse == sp.issparse(ddp.Q)
    ours = evaluate(m, res.sigma)
    np.testing.assert_allclose(ours.v, res.v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.q.max(axis=1), ours.v, rtol=0, atol=1e-10)
    dense = DiscreteDP(ddp.R.reshape(12, 3), np.asarray(ddp.Q.toarray() if sp.issparse(ddp.Q)
                                                         else ddp.Q).reshape(12, 3, 12), 0.95)
    np.testing.assert_allclose(evaluate(TabularCMDP.from_quantecon(dense), res.sigma).v,
                               res.v, rtol=0, atol=1e-10)


def test_mdptoolbox_forest_value_and_reward_forms():
    """pymdptoolbox's forest example: its policy iteration value on our model; the three
    reward forms by hand."""
    import mdptoolbox.example
    import mdptoolbox.mdp

    P, R = mdptoolbox.example.forest(S=6, r1=4, r2=2, p=0.1)
    pi = mdptoolbox.mdp.PolicyIteration(P, R, 0.9)
    pi.run()
    m = TabularCMDP.from_mdptoolbox(P, R, 0.9, C=np.ones((6, 2, 1)), d=[5.0])
    ours = evaluate(m, np.array(pi.policy))
    np.testing.assert_allclose(ours.v, pi.V, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.c[:, 0], 1 / (1 - 0.9), rtol=1e-13)
    rng = np.random.default_rng(0)
    R_trans = rng.normal(size=(2, 6, 6))
    m3 = TabularCMDP.from_mdptoolbox(P, R_trans, 0.9)
    for a in range(2):
        for s in range(6):
            assert m3.r[s, a] == pytest.approx(P[a, s] @ R_trans[a, s], abs=1e-14)
            np.testing.assert_array_equal(m3.R[s, a], R_trans[a, s])
    R_state = rng.normal(size=6)
    np.testing.assert_array_equal(TabularCMDP.from_mdptoolbox(P, R_state, 0.9).r,
                                  np.stack([R_state, R_state], axis=1))
    # the sparse list form with per-transition rewards as matrices
    Psp = [sp.csr_matrix(P[a]) for a in range(2)]
    Rsp = [sp.csr_matrix(R_trans[a]) for a in range(2)]
    for Rform in (Rsp, R_trans):
        ms = TabularCMDP.from_mdptoolbox(Psp, Rform, 0.9)
        assert ms.is_sparse
        np.testing.assert_allclose(ms.r, m3.r, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(ms.P, m3.P)


def test_bad_quantecon_inputs():
    from quantecon.markov import DiscreteDP

    R = np.array([[1.0, -np.inf], [0.0, 2.0]])
    Q = np.full((2, 2, 2), 0.5)
    with raises_fact(InputError, "ddp.R", "-inf", "(s=0, a=1)", "infeasible"):
        TabularCMDP.from_quantecon(DiscreteDP(R, Q, 0.9))
    with raises_fact(InputError, "DiscreteDP", "int", "'R'", "'Q'", "'beta'"):
        TabularCMDP.from_quantecon(42)
    with raises_fact(InputError, "ddp as a tuple", "got 0 items"):
        TabularCMDP.from_quantecon([])
    with raises_fact(InputError, "DiscreteDP", "dict", "'R'"):
        TabularCMDP.from_quantecon({"R": R})
    with raises_fact(InputError, "ddp", "4 items"):
        TabularCMDP.from_quantecon((R, Q, 0.9, None))
    Qbad = Q.copy()
    Qbad[1, 0] = [0.5, 0.4]
    with raises_fact(InputError, "ddp[1] (Q)", "(s=1, a=0)", "0.9", "not 1"):
        TabularCMDP.from_quantecon((np.zeros((2, 2)), Qbad, 0.9))
    with raises_fact(InputError, "beta", "1.5"):
        TabularCMDP.from_quantecon((np.zeros((2, 2)), Q, 1.5))
    with raises_fact(InputError, "ddp[0] (R)", "(2, 2)", "(3,)"):
        TabularCMDP.from_quantecon((np.zeros(3), Q, 0.9))
    # state-action pairs: a missing pair is an infeasible action
    s_idx, a_idx = np.array([0, 0, 1]), np.array([0, 1, 0])
    Qp = np.full((3, 2), 0.5)
    with raises_fact(InputError, "(s=1, a=1)", "missing", "infeasible"):
        TabularCMDP.from_quantecon(DiscreteDP(np.zeros(3), Qp, 0.9, s_idx, a_idx))
    with raises_fact(InputError, "(s=0, a=1)", "2 times"):
        TabularCMDP.from_quantecon((np.zeros(4), np.full((4, 2), 0.5), 0.9,
                                    np.array([0, 0, 0, 1]), np.array([0, 1, 1, 0])))
    with raises_fact(InputError, "s_indices and a_indices"):
        TabularCMDP.from_quantecon((np.zeros(3), Qp, 0.9))
    Qs = sp.csr_matrix(np.array([[0.5, 0.5], [0.2, 0.2], [1.0, 0.0], [0.0, 1.0]]))
    with raises_fact(InputError, "ddp[1] (Q)", "(s=0, a=1)", "0.4"):
        TabularCMDP.from_quantecon((np.zeros(4), Qs, 0.9, [0, 0, 1, 1], [0, 1, 0, 1]))
    with raises_fact(InputError, "budgets d", "no costs C"):
        TabularCMDP.from_quantecon((np.zeros((2, 2)), Q, 0.9), d=[1.0])


def test_bad_mdptoolbox_inputs():
    P = np.full((2, 3, 3), 1 / 3)
    with raises_fact(InputError, "P", "(a=1, s=2)", "0.5", "not 1"):
        bad = P.copy()
        bad[1, 2] = [0.5, 0.0, 0.0]
        TabularCMDP.from_mdptoolbox(bad, np.zeros((3, 2)), 0.9)
    with raises_fact(InputError, "P", "(A, S, S)", "(3, 3)"):
        TabularCMDP.from_mdptoolbox(P[0], np.zeros((3, 2)), 0.9)
    with raises_fact(InputError, "R", "(3,)", "(3, 2)", "(2, 3, 3)", "(2, 3)"):
        TabularCMDP.from_mdptoolbox(P, np.zeros((2, 3)), 0.9)
    with raises_fact(InputError, "P", "-0.5", "negative"):
        bad = P.copy()
        bad[0, 0] = [-0.5, 1.0, 0.5]
        TabularCMDP.from_mdptoolbox(bad, np.zeros((3, 2)), 0.9)
    with raises_fact(InputError, "P[1]", "(2, 2)", "(3, 3)"):
        TabularCMDP.from_mdptoolbox([sp.csr_matrix(P[0]), sp.csr_matrix(np.eye(2))],
                                    np.zeros((3, 2)), 0.9)
    with raises_fact(InputError, "P", "(a=1, s=0)", "2.0"):
        TabularCMDP.from_mdptoolbox([sp.csr_matrix(P[0]), sp.csr_matrix(2 * np.eye(3))],
                                    np.zeros((3, 2)), 0.9)
    with raises_fact(InputError, "one scipy.sparse matrix", "list of A"):
        TabularCMDP.from_mdptoolbox(sp.csr_matrix(P[0]), np.zeros((3, 1)), 0.9)
    with raises_fact(InputError, "A = 2 matrices", "got 1"):
        TabularCMDP.from_mdptoolbox([sp.csr_matrix(m) for m in P], [sp.eye(3)], 0.9)
    with raises_fact(InputError, "gamma", "2.0"):
        TabularCMDP.from_mdptoolbox(P, np.zeros((3, 2)), 2.0)
    with raises_fact(InputError, "budgets d", "no costs C"):
        TabularCMDP.from_mdptoolbox(P, np.zeros((3, 2)), 0.9, d=[1.0])


def test_conversions_do_not_import_the_model():
    """The module sits below the model: it never imports rcmdp_exact.core.model."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(conv.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m and m.endswith("model") for m in imported), imported
    assert "gymnasium" not in imported and "quantecon" not in imported


def test_frozen_lake_with_a_cost_on_holes_through_the_solvers():
    """The issue's acceptance path: FrozenLake 4x4 with a cost on entering a hole, loaded
    from Gymnasium; solve_mdp (each method) equals QuantEcon's DiscreteDP.solve on arrays
    built from the table to 1e-10; solve_cmdp finds the constrained optimum (a budget
    below the unconstrained optimum's hole cost binds); rcmdp_bracket runs on an L1 ball
    and its certified lower side is no better than the nominal CMDP optimum (a robust-
    feasible policy is feasible for the nominal model, which is in the ball)."""
    from quantecon.markov import DiscreteDP

    import rcmdp_exact as rx

    env = frozen_lake(True)
    Q, R, _ = table_arrays(env)
    qe = DiscreteDP(R, Q, 0.99).solve(method="policy_iteration")
    desc = env.unwrapped.desc.astype(str).ravel()
    holes = (desc == "H").astype(float)
    m = TabularCMDP.from_gymnasium(env, costs=holes, d=[0.5], gamma=0.99)
    for method in ("policy_iteration", "value_iteration", "modified_policy_iteration", "lp"):
        np.testing.assert_allclose(rx.solve_mdp(m, method).v, qe.v, rtol=0, atol=1e-10)
    free = rx.evaluate(m, rx.solve_mdp(m).policy)
    cm = m.replace(d=[0.5 * float(free.costs[0])])
    opt = rx.solve_cmdp(cm)
    assert opt.status == "optimal" and opt.costs[0] <= cm.d[0] + 1e-9
    assert opt.value < free.value  # the budget binds
    br = rx.rcmdp_bracket(cm, rx.l1_ball(cm, 0.1), progress=False, max_boxes=20,
                          time_limit=None, variants=())
    assert br.lower <= br.upper and br.lower <= opt.value + 1e-9


def test_costs_that_see_the_reward_and_the_termination():
    """A cost function with the keywords reward and terminated is called on every entry
    of the table, and merged entries average their costs with their probabilities: on
    the chain, state 2's action 1 lists two entries into state 2 (probability 0.25 each,
    rewards 0 and 2), so a cost of (reward == 2) is 0.5 there; entering the terminal
    state 1 costs 1 when the entry says terminated."""
    env = TableEnv(chain(), 3, 2, start=[1.0, 0.0, 0.0])
    seen = []

    def cost(s, a, t, reward, terminated):
        seen.append((s, a, t, reward, terminated))
        return [float(reward == 2.0), float(terminated)]

    m = TabularCMDP.from_gymnasium(env, costs=cost, d=[1.0, 1.0])
    C = np.asarray(m.C)
    assert C[2, 1, 2].tolist() == [0.5, 0.0]  # (0 * 0.25 + 1 * 0.25) / 0.5
    assert C[2, 0, 1].tolist() == [1.0, 1.0] and C[0, 0, 1].tolist() == [0.0, 1.0]
    assert C[0, 1, 2].tolist() == [0.0, 0.0]
    assert np.all(C[1] == 0.0)  # the terminal state's rows earn nothing
    assert (2, 1, 2, 0.0, False) in seen and (2, 1, 2, 2.0, False) in seen
    # **kwargs sees them too; a plain (s, a, t) function is called per merged transition
    kw = TabularCMDP.from_gymnasium(env, costs=lambda s, a, t, **k: float(k["terminated"]),
                                    d=[1.0])
    np.testing.assert_array_equal(np.asarray(kw.C)[..., 0], C[..., 1])
    calls = []
    TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: calls.append((s, a, t)) or 0.0,
                               d=[1.0])
    assert sorted(calls) == sorted(set(calls))  # one call per transition, merged


def test_cliff_walking_cost_from_its_reward_and_an_id():
    """CliffWalking's cliff returns to the start with reward -100 and terminated=False;
    a cost that sees the reward marks exactly the table's -100 entries (read here from
    the table itself), and an id string is made with gymnasium.make."""
    m = TabularCMDP.from_gymnasium("CliffWalking-v1",
                                   costs=lambda s, a, t, reward, terminated:
                                   float(reward == -100.0), d=[0.5])
    table = gymnasium.make("CliffWalking-v1").unwrapped.P
    expected = np.zeros((48, 4, 48))
    for s, a in np.ndindex(48, 4):
        if m.terminal[s]:
            continue
        for _p, t, r, _ in table[s][a]:
            if r == -100.0:
                expected[s, a, t] = 1.0
    np.testing.assert_array_equal(np.asarray(m.C)[..., 0], expected)
    assert expected.sum() > 0 and m.name == "CliffWalking-v1"


def test_an_unknown_gymnasium_id_names_the_current_one():
    with raises_fact(InputError, "'CliffWalking-v0'", "'CliffWalking-v1'", "FrozenLake-v1"):
        TabularCMDP.from_gymnasium("CliffWalking-v0")
