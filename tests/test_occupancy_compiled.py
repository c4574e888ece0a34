"""The occupancy intervals of a policy box: the compiled Howard iteration
(``ground_truth._compiled.occupancy_values``) against the numpy oracle (``mdp.box_policy_iteration``
with ``PolicySystem``), warm starts from any values, and the branch and bound's carried
values.

The intervals are certified from the values alone (their residual), so a compiled solve,
a warm start or garbage values may change how tight they are, never whether they hold;
the references are dense solves of the occupancy of policies sampled in the box.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_ground_truth import scaled
from test_ground_truth_bounds import box_policies, hard_rows, occupancy
from test_ground_truth_bracket import tiny_robust_cases

from rcmdp_exact.domains import garnet
from rcmdp_exact.ground_truth._compiled import lu_solve, occupancy_values
from rcmdp_exact.ground_truth.boxes import bound_boxes
from rcmdp_exact.ground_truth.local_bound import occupancy_intervals
from rcmdp_exact.ground_truth.structure import Pseudocosts
from rcmdp_exact.robust.engine import RobustGame
from rcmdp_exact.testing import random_box
from rcmdp_exact.uncertainty import l1_ball


@st.composite
def kernel_boxes(draw):
    """A model, a set, J boxes and one kernel of the set per box (the worst cases of a
    policy of the box, as in the branch and bound), and a Generator.

    One case in three has the rows of an estimated kernel (``testing.skewed_kernel``:
    masses from 1e-15 to 1e-2 beside large ones, exact zeros), a radius from 1e-6 to one
    that covers the simplex, and gamma up to 0.999, where Howard's iteration and the
    McCormick envelopes are hardest."""
    model, uset, seed = draw(tiny_robust_cases(max_states=6))
    rng = np.random.default_rng(seed)
    S, A = model.n_states, model.n_actions
    model, uset = hard_rows(draw, model, uset, rng)
    J = int(rng.integers(1, 4))
    width = draw(st.sampled_from([0.05, 0.3, 1.0, None]))
    boxes = [random_box(rng, S, A, width) for _ in range(J)]
    lo = np.stack([b[0] for b in boxes])
    hi = np.stack([b[1] for b in boxes])
    game = RobustGame(model, uset)
    pi = game.greedy(rng.normal(size=lo.shape), lo, hi)
    P = game.evaluate(pi)["P"]  # (J, 1 + K, S, A, S)
    return model, uset, game, lo, hi, P, rng


def _dense_values(P, pi, r, gamma):
    P_pi = np.einsum("sa,sat->st", pi, P)
    return np.linalg.solve(np.eye(P.shape[0]) - gamma * P_pi, r)


def test_compiled_lu_solves_like_lapack():
    rng = np.random.default_rng(3)
    for S in (1, 2, 5, 17):
        for _ in range(20):
            M = rng.normal(size=(S, S)) + (S * rng.uniform(0, 2)) * np.eye(S)
            b = rng.normal(size=S)
            x = b.copy()
            lu_solve(M.copy(), x, np.empty(S, dtype=np.int64))
            np.testing.assert_allclose(x, np.linalg.solve(M, b), rtol=1e-10, atol=1e-12)


@scaled(25)
@given(kernel_boxes())
def test_compiled_occupancy_values_are_the_box_mdp_optima(case):
    """Every compiled value is the value of the box MDP's optimum: the values of its own
    greedy policy (a dense solve) and no policy of the box does better (sampled)."""
    model, _ball, _game, lo, hi, P, rng = case
    S = model.n_states
    Pk = P[:, 0]
    v, rounds = occupancy_values(Pk, lo, hi, model.gamma)
    assert v.shape == (lo.shape[0], 2, S, S) and np.all(rounds >= 1)
    pols = box_policies(rng, lo[0], hi[0], 10)
    for t in range(S):
        for sg, sign in enumerate((1.0, -1.0)):
            r = np.zeros(S)
            r[t] = sign
            others = np.array([_dense_values(Pk[0], pi, r, model.gamma) for pi in pols])
            assert np.all(others <= v[0, sg, t] + 1e-9 / (1 - model.gamma))


@scaled(25)
@given(kernel_boxes())
def test_compiled_intervals_equal_the_numpy_oracle(case):
    _model, _ball, game, lo, hi, P, _rng = case
    a_lo, a_hi, a_v = occupancy_intervals(game, P, lo, hi, compiled=True, values=True)
    b_lo, b_hi, b_v = occupancy_intervals(game, P, lo, hi, compiled=False, values=True)
    tol = 1e-10 / (1 - game.gamma)
    np.testing.assert_allclose(a_lo, b_lo, rtol=0, atol=tol)
    np.testing.assert_allclose(a_hi, b_hi, rtol=0, atol=tol)
    np.testing.assert_allclose(a_v, b_v, rtol=0, atol=tol)


@scaled(25)
@given(kernel_boxes(), st.sampled_from(["random", "other box", "own"]), st.booleans())
def test_intervals_from_any_start_hold_every_policy_of_the_box(case, start, compiled):
    """A warm start from any values (random, another box's, the box's own) gives intervals
    that hold the occupancy of every policy sampled in the box (dense solves), equal to
    the cold ones where the iteration converges (the optimum is unique)."""
    model, _ball, game, lo, hi, P, rng = case
    J, n, S = P.shape[0], P.shape[1], model.n_states
    cold_lo, cold_hi, cold_v = occupancy_intervals(game, P, lo, hi, compiled=compiled,
                                                   values=True)
    if start == "random":
        v0 = rng.normal(scale=10.0, size=(J, n, 2, S, S))
    elif start == "other box":
        lo2, hi2 = random_box(rng, S, model.n_actions, 1.0)
        v0 = occupancy_intervals(game, P, np.broadcast_to(lo2, lo.shape),
                                 np.broadcast_to(hi2, hi.shape), values=True)[2]
    else:
        v0 = cold_v
    low, high = occupancy_intervals(game, P, lo, hi, compiled=compiled, start=v0)
    tol = 1e-10 / (1 - model.gamma)
    np.testing.assert_allclose(low, cold_lo, rtol=0, atol=tol)
    np.testing.assert_allclose(high, cold_hi, rtol=0, atol=tol)
    for j in range(J):
        for k in range(n):
            occ = np.array([occupancy(P[j, k], pi, model.gamma, model.p0)
                            for pi in box_policies(rng, lo[j], hi[j], 15)])
            assert np.all(occ >= low[j, k] - tol) and np.all(occ <= high[j, k] + tol)


def test_branch_and_bound_children_start_from_their_parents_values():
    """bound_boxes hands each box's occupancy values to its children, and a child's bound
    is the same (to rounding) with and without them."""
    m = garnet(8, 3, 3, n_constraints=1, seed=4, gamma=0.9)
    uset = l1_ball(m, 0.3, support="all")
    game = RobustGame(m, uset)
    S, A = m.n_states, m.n_actions
    lam, step = np.zeros((1, 1)), np.full((1, 1), 0.1)
    root = bound_boxes(game, np.zeros((1, S, A)), np.ones((1, S, A)), lam, step, None,
                       None, -np.inf)
    carried = root["basis"][0]
    assert carried["occ"].shape == (2, 2, S, S) and carried["occ"].dtype == np.float32
    lo, hi, _parent, ok = Pseudocosts(S, A).split(np.zeros((1, S, A)), np.ones((1, S, A)),
                                                  root["occ"], root["U"])
    lo, hi = lo[ok], hi[ok]
    J = lo.shape[0]
    args = (lo, hi, np.repeat(root["lam"], J, 0), np.repeat(root["step"], J, 0),
            np.repeat(root["w"], J, 0))
    warm = bound_boxes(game, *args, [carried] * J, -np.inf)
    cold = bound_boxes(game, *args, [dict(carried, occ=None)] * J, -np.inf)
    np.testing.assert_allclose(warm["U"], cold["U"], rtol=0, atol=1e-9)
    assert all(b["occ"].shape == (2, 2, S, S) for b in warm["basis"])
