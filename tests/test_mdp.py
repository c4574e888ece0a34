"""The plain MDP solvers (``rcmdp_exact.core.mdp``) against QuantEcon, pymdptoolbox, each other,
brute force, a 50-digit reference and their own error bounds."""

from __future__ import annotations

import itertools
import warnings

import mpmath as mp
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import depth, examples, raises_fact
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rcmdp_exact as rx
from rcmdp_exact import InputError, OptionError, TabularCMDP
from rcmdp_exact.core.mdp import MDP_METHODS, solve_mdp, value_scale
from rcmdp_exact.domains import garnet

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


# ------------------------------------------------------------ a 50-digit reference
DIGITS = 50


def _mp_policy_values(rows, G, gam, pi):
    """The exact values (mpmath) of the deterministic policy pi: (I - gamma P_pi) V = g_pi."""
    S = len(pi)
    A = len(G[0])
    M, b = mp.eye(S), mp.matrix(S, 1)
    for s in range(S):
        for j, p in rows[s * A + pi[s]]:
            M[s, j] -= gam * p
        b[s] = G[s][pi[s]]
    return mp.lu_solve(M, b)


def _mp_data(model, lam=None):
    """The model's float arrays (P, g = r - c.lam, gamma) as exact mpmath numbers."""
    g = np.asarray(model.scalarised_reward(lam), dtype=np.float64)
    S, A = g.shape
    P = model.P_sparse.tocsr()
    rows = [[(int(P.indices[k]), mp.mpf(float(P.data[k])))
             for k in range(P.indptr[i], P.indptr[i + 1])] for i in range(S * A)]
    G = [[mp.mpf(float(g[s, a])) for a in range(A)] for s in range(S)]
    return rows, G, mp.mpf(float(model.gamma))


def _reference(model, lam=None):
    """The optimal values and an optimal policy of the MDP that the float64 arrays define
    (every float taken as an exact number), to 50 digits: policy iteration in mpmath,
    switching an action only when its Q-value is higher by more than 1e-40 of the sizes
    that enter it (mpmath has no underflow, so tiny rewards are resolved too)."""
    with mp.workdps(DIGITS):
        rows, G, gam = _mp_data(model, lam)
        S, A = len(G), len(G[0])
        pi = [int(np.argmax([float(x) for x in G[s]])) for s in range(S)]
        tie = mp.mpf(10) ** (-(DIGITS - 10))
        for _ in range(200):
            v = _mp_policy_values(rows, G, gam, pi)
            q = [[G[s][a] + gam * mp.fsum(p * v[j] for j, p in rows[s * A + a])
                  for a in range(A)] for s in range(S)]
            size = [[abs(G[s][a]) + gam * mp.fsum(p * abs(v[j]) for j, p in rows[s * A + a])
                     for a in range(A)] for s in range(S)]
            new = list(pi)
            for s in range(S):
                best = max(range(A), key=lambda a, s=s: q[s][a])
                if q[s][best] - q[s][pi[s]] > tie * (size[s][best] + size[s][pi[s]]):
                    new[s] = best
            if new == pi:
                return [v[s] for s in range(S)], pi
            pi = new
    raise AssertionError("the reference policy iteration did not stop")


def _true_error(v, ref):
    """max_s |v(s) - v*(s)| in mpmath (v's floats are exact numbers there)."""
    with mp.workdps(DIGITS):
        return max(abs(mp.mpf(float(x)) - r) for x, r in zip(v, ref, strict=True))


def _policy_loss(model, actions, ref, lam=None):
    """max_s (v*(s) - V_pi(s)) of the deterministic policy ``actions``, to 50 digits."""
    with mp.workdps(DIGITS):
        rows, G, gam = _mp_data(model, lam)
        v = _mp_policy_values(rows, G, gam, [int(a) for a in actions])
        return max(r - v[s] for s, r in enumerate(ref))


def _holds(err, bound, scale):
    """err <= bound, up to the 50-digit reference's own error (1e-40 of the value scale)."""
    with mp.workdps(DIGITS):
        return err <= mp.mpf(float(bound)) + mp.mpf(10) ** -40 * scale


def _fixed_models(gamma):
    """Seeded models for the gamma sweep: Garnets with rewards of size 1, 1e6 (values up
    to 1e6 / (1 - gamma)) and with tiny entries (1e-300, 1e-12), and a model with a
    duplicated action (exact ties) and an absorbing terminal state."""
    a = garnet(3, 2, 2, n_constraints=0, seed=11, gamma=gamma)
    b = garnet(8, 3, 3, n_constraints=0, seed=12, gamma=gamma)
    b = TabularCMDP(b.P, R=b.r * 1e6, gamma=gamma)
    c = garnet(12, 3, 2, n_constraints=1, seed=13, gamma=gamma)
    r = c.r.copy()
    r[0] = 1e-300
    r[1, 1] = 3e-12
    r[2] *= 1e-12
    c = TabularCMDP(c.P, R=r, C=c.c, d=c.d, gamma=gamma)
    base = garnet(5, 2, 3, n_constraints=0, seed=14, gamma=gamma)
    P = np.concatenate([base.P, base.P[:, :1]], axis=1)  # action 2 copies action 0
    R = np.concatenate([base.r, base.r[:, :1]], axis=1)
    P[4], R[4] = 0.0, 0.0
    P[4, :, 4] = 1.0
    d = TabularCMDP(P, R=R, gamma=gamma, terminal=[4])
    return {"garnet": a, "rewards 1e6": b, "tiny rewards": c, "ties and terminal": d}


@pytest.mark.parametrize("gamma", [0.99, 0.999, 0.9999, 0.99999])
def test_error_bounds_hold_against_a_50_digit_reference(gamma):
    """Near gamma = 1, every method's error_bound holds against the exact optimum of the
    float data (50 digits), whether or not it converged, and a converged result is within
    tol * scale.  Policy iteration and the LP, which end at an optimal policy, return an
    exactly optimal policy and say so (converged, success); value and modified policy
    iteration either converge or, where the model mixes slowly, stop at their iteration
    limit and say that (not_converged)."""
    for name, m in _fixed_models(gamma).items():
        lam = 0.5 if m.n_constraints else None
        ref, _ = _reference(m, lam)
        scale = value_scale(m)
        for method in MDP_METHODS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                res = solve_mdp(m, method, lam=lam, max_iter=20_000)
            err = _true_error(res.v, ref)
            case = (name, method, float(err), res.error_bound, str(res.status), res.message)
            assert _holds(err, res.error_bound, scale), case
            if method in ("policy_iteration", "lp"):
                assert res.converged and res.success and res.status == "converged", case
                assert _policy_loss(m, res.actions, ref, lam) <= mp.mpf(10) ** -40 * scale, case
            elif not res.converged:
                assert res.status == "not_converged" and res.iterations == 20_000, case
            if res.converged:
                assert res.error_bound <= 1e-12 * scale, case


def test_value_iteration_near_gamma_one_stops_at_rounding_and_certifies():
    """At gamma = 0.99999 the float McQueen-Porteus interval of value iteration cannot
    shrink below rounding (about u |v| / (1 - gamma)); it stops there instead of running
    to max_iter, and its bound (of the midpoint, or of its greedy policy evaluated
    exactly) holds against the reference, on rewards of size 1e6 too."""
    for seed, size in ((21, 1.0), (22, 1e6)):
        m = garnet(10, 3, 3, n_constraints=0, seed=seed, gamma=0.99999)
        m = TabularCMDP(m.P, R=m.r * size, gamma=m.gamma)
        ref, _ = _reference(m)
        for method in ("value_iteration", "modified_policy_iteration"):
            res = solve_mdp(m, method, max_iter=50_000)
            err = _true_error(res.v, ref)
            assert res.converged and res.iterations < 50_000, (method, res.message)
            assert _holds(err, res.error_bound, value_scale(m)), (method, float(err),
                                                                   res.error_bound)


def test_a_tolerance_below_rounding_is_reported_as_such():
    """A tol finer than float64 can certify gives status tol_below_rounding: success (the
    method finished, its bound holds) but not converged, and a warning that gives the
    certified bound instead of advising more iterations."""
    m = garnet(6, 3, 3, n_constraints=0, seed=5, gamma=0.9999)
    ref, _ = _reference(m)
    scale = value_scale(m)
    for method in MDP_METHODS:
        with pytest.warns(RuntimeWarning, match="float64") as rec:
            res = solve_mdp(m, method, tol=1e-18)
        text = " ".join(str(w.message) for w in rec)
        assert res.status == "tol_below_rounding" and res.success and not res.converged
        assert "max_iter" not in text and f"{res.error_bound:.2e}" in text, text
        assert res.error_bound > 1e-18 * scale
        assert _holds(_true_error(res.v, ref), res.error_bound, scale), method


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 5), A=st.integers(1, 3),
       gamma=st.sampled_from([0.99, 0.999, 0.9999, 0.99999, 0.999999]),
       size=st.sampled_from([1e-6, 1.0, 1e6]), tiny=st.booleans(), lam=st.booleans())
def test_true_error_never_exceeds_the_reported_bound(seed, S, A, gamma, size, tiny, lam):
    """Property: on random small models near gamma = 1 (rewards of any size, some tiny),
    no method's error_bound is ever below its true error against the 50-digit reference,
    and converged means error_bound <= tol * scale."""
    m = garnet(S, A, min(S, 2), n_constraints=1, seed=seed, gamma=gamma)
    r = m.r * size
    if tiny:
        r[np.random.default_rng(seed).random(r.shape) < 0.4] = 1e-300
    m = TabularCMDP(m.P, R=r, C=m.c, d=m.d, gamma=gamma)
    mult = 0.3 if lam else None
    ref, _ = _reference(m, mult)
    scale = value_scale(m)
    for method in MDP_METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = solve_mdp(m, method, lam=mult, max_iter=20_000)
        err = _true_error(res.v, ref)
        assert _holds(err, res.error_bound, scale), (method, float(err), res.error_bound,
                                                      res.message)
        if res.converged:
            assert res.error_bound <= 1e-12 * scale, (method, res.error_bound)


def test_the_one_howard_iteration_solves_a_batch_of_box_mdps():
    """box_policy_iteration on J random MDPs: on the full box its policies satisfy
    Bellman's optimality equation; on a box of one policy it stops at once with that
    policy; and mdp.policy_iteration is that iteration on one problem."""
    from rcmdp_exact.core.evaluation import PolicySystem, policy_matrix
    from rcmdp_exact.core.mdp import box_policy_iteration, greedy_box, policy_iteration

    rng = np.random.default_rng(3)
    J, S, A, gamma = 5, 6, 3, 0.9
    P = rng.dirichlet(np.ones(S), size=(J, S, A))
    r = rng.normal(size=(J, S, A))

    def evaluate(pi):
        w = PolicySystem(policy_matrix(P, pi), gamma).solve(np.einsum("jsa,jsa->js", pi, r))
        return w, r + gamma * np.einsum("jsat,jt->jsa", P, w)

    full = (np.zeros((J, S, A)), np.ones((J, S, A)))
    start = greedy_box(r, *full)
    sol = box_policy_iteration(evaluate, start, *full, max_iter=100, atol=1e-12)
    assert sol.stable and sol.rounds > 1
    np.testing.assert_allclose(sol.q.max(axis=2), sol.w, atol=1e-10)
    one = box_policy_iteration(evaluate, start, start, start, max_iter=100, atol=1e-12)
    assert one.stable and one.rounds == 1 and np.array_equal(one.pi, start)
    capped = box_policy_iteration(evaluate, start, *full, max_iter=1, atol=1e-12)
    assert not capped.stable and np.array_equal(capped.pi, start)  # pi, w, q belong together
    m = rx.TabularCMDP(P[0], r[0], gamma=gamma)
    res = policy_iteration(m)
    np.testing.assert_array_equal(np.eye(A)[res.policy], sol.pi[0])


# ------------------------------------------------- every method against an independent one
def test_an_lp_without_optimum_is_repaired_and_said(monkeypatch):
    """When HiGHS returns no optimum, method="lp" still answers, by certified policy
    iteration from the greedy policy, says so, and its values are those of the policy
    iteration written in this test."""
    import rcmdp_exact.core.mdp as mdp_module

    monkeypatch.setattr(mdp_module, "_lp_policy", lambda bell, max_iter: (None, 7, "failed"))
    m = garnet(12, 3, 4, n_constraints=0, seed=5).replace(gamma=0.99)
    res = solve_mdp(m, "lp")
    v_ind, _ = _independent_policy_iteration(np.asarray(m.P), np.asarray(m.r), 0.99)
    assert res.success and res.method == "lp"
    assert "returned no optimum after 7 simplex iterations" in res.message
    assert "policy iteration" in res.message
    assert np.abs(res.v - v_ind).max() <= res.error_bound + 1e-9


def test_a_refused_start_basis_is_retried_from_highs_own_start(monkeypatch):
    """HiGHS may refuse the start basis (near gamma = 1 with nearly absorbing states:
    a near-singular basis matrix); the LP is then solved again from HiGHS's own start,
    still by the LP, and its policy is the optimal one of the policy iteration written
    in this test."""
    import highspy

    def refuse(self, basis):
        raise RuntimeError("basis refused (planted)")

    monkeypatch.setattr(highspy.Highs, "setBasis", refuse)
    m = garnet(12, 3, 4, n_constraints=0, seed=5).replace(gamma=0.99)
    res = solve_mdp(m, "lp")
    v_ind, a_ind = _independent_policy_iteration(np.asarray(m.P), np.asarray(m.r), 0.99)
    assert res.converged and res.message.startswith("LP (HiGHS) optimal after ")
    np.testing.assert_array_equal(res.actions, a_ind)
    assert np.abs(res.v - v_ind).max() <= res.error_bound + 1e-9


@pytest.mark.parametrize("sparse", [False, True])
def test_the_lp_is_bounded_by_max_iter_and_says_so(sparse):
    """max_iter bounds HiGHS's simplex iterations: a budget below what the LP needs
    stops it, the message says so, certified policy iteration answers from the LP's
    last basis, and the values are within the certified bound of the policy iteration
    written in this test (converged when the improvement steps left by max_iter
    sufficed, else "not_converged": raise max_iter)."""
    m = garnet(40, 4, 5, n_constraints=0, seed=3).replace(gamma=0.95)
    if sparse:
        m = rx.TabularCMDP(m.P_sparse, m.r, gamma=0.95)
    v_ind, a_ind = _independent_policy_iteration(np.asarray(garnet(
        40, 4, 5, n_constraints=0, seed=3).P), np.asarray(m.r), 0.95)
    full = solve_mdp(m, "lp")
    its = int(full.message.split(" after ")[1].split()[0])
    assert full.converged and its > 3  # the LP needs several pivots here
    np.testing.assert_array_equal(full.actions, a_ind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cut = solve_mdp(m, "lp", max_iter=3)
    assert "stopped at its iteration limit max_iter=3 after 3 simplex iterations" in (
        cut.message)
    assert "from its last basis" in cut.message
    assert np.abs(cut.v - v_ind).max() <= cut.error_bound + 1e-12
    assert cut.status in ("converged", "not_converged")
    assert cut.converged == (cut.error_bound <= 1e-12 * value_scale(m))


def _independent_policy_iteration(P, g, gamma):
    """Howard's policy iteration written here, independently of the package: numpy's
    LAPACK solve of every policy, the greedy improvement where it gains more than a
    rounding-level margin.  Returns (values, actions)."""
    S = g.shape[0]
    states = np.arange(S)
    margin = 1e-12 * max(1.0, float(np.abs(g).max())) / max(1.0 - gamma, 1e-300)
    a = g.argmax(axis=1)
    for _ in range(10_000):
        v = np.linalg.solve(np.eye(S) - gamma * P[states, a], g[states, a])
        q = g + gamma * np.einsum("sat,t->sa", P, v)
        best = q.argmax(axis=1)
        better = q[states, best] > q[states, a] + margin
        if not better.any():
            return v, a
        a = np.where(better, best, a)
    raise AssertionError("the independent policy iteration did not stop")


def _guaranteed_value_iterations(P, g, gamma, target):
    """Sweeps of value iteration from v = 0 after which the McQueen-Porteus half-width
    sp(T v - v) / (2 (1 - gamma)) is at most ``target`` by Dobrushin's coefficient: the
    span of T v - v shrinks at least by tau = gamma (1 - min overlap of two rows of P)
    per sweep (written here from the textbook bound, not from the package)."""
    S, A = g.shape
    rows = P.reshape(S * A, S)
    overlap = np.minimum(rows[:, None, :], rows[None, :, :]).sum(axis=2).min()
    tau = gamma * (1.0 - overlap)
    span0 = float(np.ptp(g.max(axis=1)))
    if span0 <= 2.0 * (1.0 - gamma) * target:
        return 1
    if tau <= 0.0:
        return 2
    return int(np.ceil(np.log(2.0 * (1.0 - gamma) * target / span0) / np.log(tau))) + 1


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 30), A=st.integers(1, 4),
       gamma=st.sampled_from([0.0, 0.5, 0.95, 0.999, 0.9999]),
       size=st.sampled_from([1e-3, 1.0, 1e6]), skewed=st.booleans(), sparse=st.booleans())
# two nearly absorbing states (leaving with probability 2e-6 and 2e-15): value iteration
# contracts spans at about gamma (1 - 2e-6) and needs some 275,000 sweeps
@example(seed=38, S=2, A=1, gamma=0.9999, size=1e-3, skewed=True, sparse=False)
# HiGHS refused the greedy basis (status kNotset): the LP answers from HiGHS's own start
@example(seed=18137365, S=4, A=4, gamma=0.9999, size=1e-3, skewed=True, sparse=False)
def test_every_method_agrees_with_an_independent_policy_iteration(seed, S, A, gamma, size,
                                                                  skewed, sparse):
    """On random models (rows that look estimated, or Garnets; stored densely or
    sparsely), every method of solve_mdp says which it is, and its values are within its
    certified bound of the values of Howard's policy iteration written in this test (up
    to that one's own rounding, cond * u * |v|); the methods agree with each other within
    the sum of their bounds; the two that end at a policy (policy iteration, LP) return
    an optimal one."""
    from rcmdp_exact.testing import skewed_kernel

    rng = np.random.default_rng(seed)
    if skewed:
        P = skewed_kernel(rng, S, A)
    else:
        P = garnet(S, A, min(S, 3), n_constraints=0, seed=seed).P
    R = rng.normal(size=(S, A)) * size
    m = TabularCMDP(sp.csr_array(P.reshape(S * A, S)) if sparse else P, R=R, gamma=gamma)
    v_ind, _ = _independent_policy_iteration(np.asarray(m.P), np.asarray(m.r), gamma)
    u = 2.0**-53
    own = 4.0 * (S + 4) * u * (float(np.abs(v_ind).max()) + size) * (1 + gamma) / (1 - gamma)
    scale = value_scale(m)
    results = {}
    for method in MDP_METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = solve_mdp(m, method)
        assert res.method == method
        if method == "value_iteration" and not res.success:
            # allowed only where no contraction theory promises convergence within the
            # iteration limit (chains that mix slower than gamma), and loudly
            need = _guaranteed_value_iterations(np.asarray(m.P), np.asarray(m.r), gamma,
                                                1e-12 * scale)
            assert need > 100_000, (need, res.message)
            assert "iteration limit" in res.message and not res.converged
        else:
            assert res.success, (method, res.message)
        err = float(np.abs(res.v - v_ind).max())
        assert err <= res.error_bound + own, (method, err, res.error_bound, own, res.message)
        if res.converged:
            assert res.error_bound <= 1e-12 * scale
        if method in ("policy_iteration", "lp"):
            assert res.converged, (method, res.message)
            ev = rx.evaluate(m, res.actions)
            assert np.abs(ev.v - v_ind).max() <= res.error_bound + own + ev.error_bound
        results[method] = res
    for a, b in itertools.combinations(MDP_METHODS, 2):
        ra, rb = results[a], results[b]
        assert np.abs(ra.v - rb.v).max() <= ra.error_bound + rb.error_bound, (a, b)


@pytest.mark.parametrize(("kind", "S", "gamma"), [("dense", 360, 0.95), ("dense", 360, 0.999),
                                                   ("sparse", depth(800, 1500), 0.999)])
def test_larger_models_reuse_factorisations_and_keep_their_bounds(kind, S, gamma):
    """Policy iteration on models where its evaluations go through the Woodbury update of
    the last LU (dense, 360 states) or GMRES (a random sparse model of 800 states, 1,500
    under the thorough profile: both above the dense solver's 300; the LP of 1,500
    states alone takes 6 s):
    every method converges to the values of the independent policy iteration (within
    the bounds and its rounding), the policies of policy iteration and the LP are
    optimal there, and the reported iterations are few."""
    rng = np.random.default_rng(S)
    A = 4
    if kind == "dense":
        P = rng.dirichlet(np.ones(S), size=(S, A))
        m = TabularCMDP(P, R=rng.normal(size=(S, A)), gamma=gamma)
    else:
        m = garnet(S, A, 4, n_constraints=0, seed=3, gamma=gamma, sparse=True)
    P, g = np.asarray(m.P), np.asarray(m.r)
    v_ind, _ = _independent_policy_iteration(P, g, gamma)
    own = 8.0 * S * 2.0**-53 * float(np.abs(v_ind).max()) * 2 / (1 - gamma)
    for method in MDP_METHODS:
        res = solve_mdp(m, method)
        assert res.converged and res.method == method, (method, res.message)
        assert np.abs(res.v - v_ind).max() <= res.error_bound + own, method
    pi = solve_mdp(m)
    assert pi.iterations <= 10
    ev = rx.evaluate(m, pi.actions)
    assert np.abs(ev.v - v_ind).max() <= pi.error_bound + own
    if kind == "sparse":  # (the size still takes the iterative path)
        assert ev.solver == "gmres", ev.solver
