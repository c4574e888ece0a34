"""The plain MDP solvers (``rcmdp_exact.mdp``) against QuantEcon, pymdptoolbox, each other,
brute force and their own error bounds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact as rx
from rcmdp_exact import InputError, OptionError, TabularCMDP
from rcmdp_exact.domains import garnet
from rcmdp_exact.mdp import MDP_METHODS, solve_mdp, value_scale

quantecon = pytest.importorskip("quantecon")
mdptoolbox = pytest.importorskip("mdptoolbox.mdp")


def _model(seed, S=6, A=3, b=3, gamma=0.9, sparse=False):
    return garnet(S, A, b, n_constraints=1, seed=seed, gamma=gamma, sparse=sparse)


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 9), A=st.integers(1, 4),
       gamma=st.sampled_from([0.0, 0.5, 0.9, 0.99]))
def test_every_method_equals_quantecon(seed, S, A, gamma):
    """The optimal values of each method equal QuantEcon's DiscreteDP policy iteration to
    1e-10 of the value scale, and each method's error bound holds."""
    from quantecon.markov import DiscreteDP

    m = _model(seed, S, A, min(S, 3), gamma)
    R, Q, beta = m.to_quantecon(lam=0.7)
    ref = DiscreteDP(R, Q, beta).solve("policy_iteration")
    scale = value_scale(m)
    for method in MDP_METHODS:
        res = solve_mdp(m, method, lam=0.7)
        assert res.converged, (method, res.message)
        err = np.abs(res.v - ref.v).max()
        assert err <= 1e-10 * scale, (method, err)
        assert err <= res.error_bound + 1e-12 * scale, (method, err, res.error_bound)
        # the greedy policy is optimal: its exact value equals the optimum
        ev = rx.evaluate(m, res.policy, 0.7)
        assert np.abs(ev.lagrangian - ref.v).max() <= 1e-10 * scale


def test_agrees_with_quantecon_and_pymdptoolbox_methods_of_the_same_name():
    from quantecon.markov import DiscreteDP

    m = _model(4, S=40, A=4, b=4, gamma=0.95)
    R, Q, beta = m.to_quantecon()
    ddp = DiscreteDP(R, Q, beta)
    exact = solve_mdp(m).v
    for method in ("policy_iteration", "value_iteration", "modified_policy_iteration"):
        qe_v = ddp.solve(method, epsilon=1e-12, max_iter=100_000).v
        ours = solve_mdp(m, method).v
        assert np.abs(qe_v - exact).max() <= 1e-9 and np.abs(ours - exact).max() <= 1e-10
    P, Rm = m.to_mdptoolbox()
    pi = mdptoolbox.PolicyIteration(P, Rm, m.gamma)
    pi.run()
    np.testing.assert_allclose(np.asarray(pi.V), exact, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(pi.policy), solve_mdp(m).actions)


def test_the_convergence_flag_is_honest():
    """An iteration cap that stops value iteration early leaves converged False, says so,
    and its error bound still holds (the optimum lies within it)."""
    m = _model(7, S=20, A=3, gamma=0.99)
    exact = solve_mdp(m).v
    with pytest.warns(RuntimeWarning, match="iteration limit 5"):
        res = solve_mdp(m, "value_iteration", max_iter=5)
    assert not res.converged and res.status == "not_converged" and res.iterations == 5
    assert res.error_bound > 1e-12 * value_scale(m)
    assert np.abs(res.v - exact).max() <= res.error_bound
    with pytest.warns(RuntimeWarning):
        mpi = solve_mdp(m, "modified_policy_iteration", max_iter=2, k=3)
    assert np.abs(mpi.v - exact).max() <= mpi.error_bound


def test_sparse_models_and_the_discount_zero_limit():
    m = _model(3, S=12, A=2, b=2, gamma=0.8)
    sparse = TabularCMDP(m.P_sparse, m.r, m.c, d=m.d, gamma=m.gamma, p0=m.p0)
    for method in MDP_METHODS:
        np.testing.assert_allclose(solve_mdp(sparse, method).v, solve_mdp(m, method).v,
                                   atol=1e-10)
    myopic = _model(3, S=5, A=3, gamma=0.0)
    np.testing.assert_allclose(solve_mdp(myopic).v, myopic.r.max(axis=1), atol=1e-15)


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), T=st.integers(1, 4), disc=st.sampled_from([1.0, 0.7]))
def test_backward_induction_equals_brute_force_and_quantecon(seed, T, disc):
    """The T-step optimum over every deterministic time-dependent policy (brute force on
    a 3-state, 2-action model), QuantEcon's backward_induction, and the exact evaluation
    of the returned policy all agree."""
    from quantecon.markov import DiscreteDP, backward_induction

    m = _model(seed, S=3, A=2, b=2, gamma=0.9)
    res = solve_mdp(m, horizon=T, discount=disc)
    assert res.policy.shape == (T, 3, 2) and res.status == "optimal"
    ev = rx.evaluate_time_dependent(m, res.policy, discount=disc)
    assert ev.value == pytest.approx(res.value, abs=1e-12)
    best = -np.inf
    for acts in itertools.product(range(2), repeat=3 * T):
        pol = np.eye(2)[np.reshape(acts, (T, 3))]
        best = max(best, rx.evaluate_time_dependent(m, pol, discount=disc).value)
    assert res.value == pytest.approx(best, abs=1e-12)
    if disc < 1.0:
        R, Q, _ = m.to_quantecon()
        vs, _ = backward_induction(DiscreteDP(R, Q, disc), T)
        np.testing.assert_allclose(res.v, vs[0], atol=1e-12)


def test_bad_inputs():
    m = _model(0)
    with raises_fact(OptionError, "method", "'newton'", "'value_iteration'"):
        solve_mdp(m, "newton")
    with raises_fact(InputError, "gamma", "horizon"):
        solve_mdp(m.replace(gamma=1.0, horizon=5))
    with raises_fact(InputError, "horizon", "0"):
        solve_mdp(m, horizon=0)
    with raises_fact(InputError, "tol"):
        solve_mdp(m, tol=0.0)
    with raises_fact(InputError, "v0", "(6,)"):
        solve_mdp(m, "value_iteration", v0=np.zeros(3))
    with raises_fact(InputError, "k", ">= 1"):
        solve_mdp(m, "modified_policy_iteration", k=0)
