"""Exact gradients against finite differences, brute-force enumeration and Monte Carlo.

* Theorem 1 and the corrected Theorem 2 match central finite differences of the
  Lagrangian (relative error <= 1e-6) on random RCMDPs, tabular and MLP.
* The exact expectations of the sampled estimators match a brute-force sum over every
  trajectory of tiny models, and Monte Carlo confidence intervals.
* The printed estimators are biased where the docs say, and exact where they say.
"""


import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from rcmdp_exact import ImproperPolicyError, evaluate
from rcmdp_exact.core.model_checks import ModelError
from rcmdp_exact.core.parametrisations import (
    MLPAdversary,
    MLPPolicy,
    TabularAdversary,
    TabularPolicy,
    make_adversary,
    make_policy,
)
from rcmdp_exact.testing import random_cmdp as random_rcmdp
from rcmdp_exact.theory.differences import FD_STEPS, central_difference, finite_difference
from rcmdp_exact.theory.estimators import (
    ESTIMATORS,
    cosine_similarity,
    estimator_expectation,
    monte_carlo_estimator,
    relative_error,
)
from rcmdp_exact.theory.gradients import adversary_gradient, lagrangian, policy_gradient
from rcmdp_exact.theory.verify import lagrangian_reward_depends_on_next_state


# --------------------------------------------------------------------------- models
@st.composite
def rcmdps(draw, max_states=8, gamma=(0.5, 0.99), allow_terminal=True):
    S = draw(st.integers(1, max_states))
    A = draw(st.integers(1, 3))
    K = draw(st.integers(0, 2))
    O = draw(st.one_of(st.none(), st.integers(2, 4)))
    g = draw(st.floats(*gamma))
    terminal = allow_terminal and draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    model = random_rcmdp(rng, S, A, K, g, O, terminal)
    lam = rng.random(K) * 3
    return model, lam, rng


def _noise_floor(model, lam, params) -> float:
    """The rounding noise of the order-4 central difference of the Lagrangian: the
    Lagrangian of a linear solve carries about eps |L| / (1 - gamma) of noise (|L| at
    most max|r - c lam| / (1 - gamma)), divided by the smallest step h (FD_STEPS[4]
    times max(1, |x|)) times the stencil's weights (18 / 12), for every coordinate."""
    gamma = min(float(model.gamma), 1.0 - 1e-12)
    lam = np.asarray(lam, dtype=np.float64)
    size = np.max(np.abs(model.R)) + (float(np.abs(lam) @ np.max(np.abs(model.C), axis=(0, 1, 2)))
                                      if lam.size else 0.0)
    noise = np.finfo(np.float64).eps * size / (1.0 - gamma) ** 2
    return 10.0 * 1.5 * noise / FD_STEPS[4] * np.sqrt(np.size(params))


def _close(g, fd, tol=1e-6, floor=1e-9):
    """Relative error <= tol, unless both are zero to within the noise floor.

    The floor is an absolute bound on ``||g - fd||``; it only matters for gradients
    that vanish identically (one action, p0 on a terminal state, gamma = 0 for the
    adversary), where the relative error of two noise vectors means nothing; give it
    from :func:`_noise_floor` where values are large (gamma near 1).
    """
    err = relative_error(g, fd)
    assert err <= tol or np.linalg.norm(np.ravel(g) - np.ravel(fd)) <= floor, (
        f"relative error {err:.3e} > {tol:.0e}")


# --------------------------------------------------------------------------- values
@given(rcmdps())
def test_dense_lagrangian_matches_sparse_evaluation(case):
    model, lam, rng = case
    pol = TabularPolicy(model)
    theta = pol.init(rng)
    ref = evaluate(model, pol.probs(theta), lam).lagrangian_p0
    assert np.isclose(lagrangian(model, theta, lam), ref, rtol=1e-10, atol=1e-10)
    adv = TabularAdversary(model)
    phi = adv.init(rng)
    P = adv.kernel(phi)
    assert np.allclose(P.sum(axis=2), 1.0)
    ref_adv = evaluate(model.with_transitions(P), pol.probs(theta), lam).lagrangian_p0
    got = lagrangian(model, theta, lam, adversary_params=phi)
    assert np.isclose(got, ref_adv, rtol=1e-10, atol=1e-10)


def test_kernel_from_logits_reproduces_the_model():
    rng = np.random.default_rng(3)
    model = random_rcmdp(rng, 5, 2, 1, 0.9, n_outcomes=3)
    adv = TabularAdversary(model)
    phi = adv.logits_from_kernel(model.P, floor=1e-300)
    assert np.allclose(adv.kernel(phi), model.P, atol=1e-12)


# --------------------------------------------------------------------------- Jacobians
@given(rcmdps(max_states=5), st.sampled_from(["softmax", "mlp"]),
       st.sampled_from(["policy", "adversary"]))
@settings(max_examples=examples(25))
def test_vjp_equals_jacobian_contraction_and_finite_differences(case, kind, side):
    model, _, rng = case
    par = (make_policy if side == "policy" else make_adversary)(model, kind, hidden=4)
    params = par.init(rng)
    jac = par.jacobian(params)
    G = rng.normal(size=jac.shape[:2])
    vjp = par.vjp(params, G).ravel()
    assert np.allclose(np.einsum("rc,rcp->p", G, jac), vjp, atol=1e-12)
    # each column of the Jacobian against a central difference of the probabilities
    flat = np.asarray(params, dtype=float).ravel()
    i = int(rng.integers(0, flat.size))

    def prob_dir(t):
        p = flat.copy()
        p[i] = t
        return float((G * par.probs(p.reshape(np.shape(params)))).sum())

    fd = central_difference(lambda t: prob_dir(float(t[0])), np.array([flat[i]]),
                            max_step=None if kind == "softmax" else
                            par.kink_free_step(params)[i][None, :])[0]
    assert np.isclose(vjp[i], fd, rtol=1e-6, atol=1e-9)


# --------------------------------------------------------------------------- theorems vs FD
@given(rcmdps())
def test_theorem1_tabular_matches_finite_differences(case):
    model, lam, rng = case
    theta = TabularPolicy(model).init(rng)
    g = policy_gradient(model, theta, lam)
    assert g.shape == theta.shape
    _close(g, finite_difference(model, theta, lam))


@given(rcmdps())
@settings(max_examples=examples(30))
def test_theorem1_mlp_matches_finite_differences(case):
    model, lam, rng = case
    pol = MLPPolicy(model, hidden=int(rng.integers(2, 7)), feature_scale=1.0)
    theta = pol.init(rng)
    _close(policy_gradient(model, theta, lam, pol), finite_difference(model, theta, lam, pol))


@given(rcmdps())
def test_theorem2_tabular_matches_finite_differences(case):
    model, lam, rng = case
    theta = TabularPolicy(model).init(rng)
    phi = TabularAdversary(model).init(rng)
    g = adversary_gradient(model, theta, phi, lam)
    assert g.shape == phi.shape
    fd = finite_difference(model, theta, lam, adversary_params=phi, wrt="adversary")
    _close(g, fd, floor=max(1e-9, _noise_floor(model, lam, phi)))
    # the policy gradient under the adversary's dynamics as well
    _close(policy_gradient(model, theta, lam, adversary_params=phi),
           finite_difference(model, theta, lam, adversary_params=phi),
           floor=max(1e-9, _noise_floor(model, lam, theta)))


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_theorem2_where_the_gradient_vanishes_at_gamma_near_one(seed):
    """One state, one action, four outcomes, gamma = 63/64: the adversary's gradient is
    zero up to rounding, and the difference quotients are rounding noise of 1e-9 to 4e-9
    (values near 100), which the fixed floor of 1e-9 took for an error (seed 0 failed a
    random run).  The floor follows the noise of the differences, and stays far below
    any gradient of size."""
    rng = np.random.default_rng(seed)
    model = random_rcmdp(rng, 1, 1, 2, 0.984375, 4, False)
    lam = rng.random(2) * 3
    theta, phi = TabularPolicy(model).init(rng), TabularAdversary(model).init(rng)
    g = adversary_gradient(model, theta, phi, lam)
    fd = finite_difference(model, theta, lam, adversary_params=phi, wrt="adversary")
    assert np.abs(g).max() <= 1e-11  # the exact gradient: zero up to rounding
    assert 5e-10 < np.linalg.norm(fd) <= _noise_floor(model, lam, phi) < 1e-6
    _close(g, fd, floor=_noise_floor(model, lam, phi))


@given(rcmdps())
@settings(max_examples=examples(30))
def test_theorem2_mlp_matches_finite_differences(case):
    model, lam, rng = case
    pol = MLPPolicy(model, hidden=3, feature_scale=1.0)
    adv = MLPAdversary(model, hidden=int(rng.integers(2, 7)), feature_scale=1.0,
                       action_scale=0.5)
    theta, phi = pol.init(rng), adv.init(rng)
    g = adversary_gradient(model, theta, phi, lam, pol, adv)
    fd = finite_difference(model, theta, lam, pol, phi, adv, wrt="adversary")
    # where the adversary has no effect (S = 1: every kernel is the same) the gradient
    # vanishes and the difference is rounding noise: bounded by the order-4 difference's
    # noise floor, times 10 for the kernel's softmax between phi and the solve (fresh
    # examples: noise of 2.0e-9 and 2.6e-9 against floors of 1e-9 and 2.0e-9)
    _close(g, fd, floor=max(1e-9, 10.0 * _noise_floor(model, lam, phi)))


def test_mlp_inputs_follow_the_protocol_scaling():
    """docs/protocol.md, Learners: the adversary sees the coordinates times 1/S and the action
    index times 1/A (the policy the same coordinates); rows of the adversary are the
    pairs in the order s * A + a.  Expected inputs are built from the state labels."""
    from rcmdp_exact import domains

    nav = domains.paper_domain("nav1")
    S, A = nav.n_states, nav.n_actions
    assert (S, A) == (25, 4)
    xy = np.array([[int(v) for v in lab.strip("()").split(",")] for lab in nav.state_labels])
    pol, adv = MLPPolicy(nav, hidden=3), MLPAdversary(nav, hidden=3)
    np.testing.assert_allclose(pol.inputs, xy / 25.0, rtol=0, atol=1e-15)
    expected = np.array([[x / 25.0, y / 25.0, a / 4.0] for x, y in xy for a in range(A)])
    np.testing.assert_allclose(adv.inputs, expected, rtol=0, atol=1e-15)
    # the adversary's row s * A + a gives the outcome distribution of the pair (s, a)
    phi = adv.init(0)
    s, a = 7, 2
    row = adv.net.probs(np.array([[xy[s][0] / 25.0, xy[s][1] / 25.0, a / 4.0]]), phi)[0]
    np.testing.assert_allclose(adv.outcome_probs(phi)[s, a], row, rtol=1e-14)
    # a custom scale maps the grid to [0, 1]
    np.testing.assert_allclose(MLPPolicy(nav, hidden=3, feature_scale=0.25).inputs, xy / 4.0)
    inv = domains.paper_domain("inventory")
    stock = np.array([int(lab.split()[-1]) for lab in inv.state_labels])
    adv = MLPAdversary(inv, hidden=3)
    expected = np.array([[s_ / 10.0, a / 10.0] for s_ in stock for a in range(10)])
    np.testing.assert_allclose(adv.inputs, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(MLPPolicy(inv, hidden=3).inputs, stock[:, None] / 10.0)


def test_mlp_string_parametrisation_infers_the_hidden_width():
    rng = np.random.default_rng(0)
    model = random_rcmdp(rng, 4, 2, 1, 0.9, n_outcomes=3)
    pol = MLPPolicy(model, hidden=5)
    theta = pol.init(1)
    assert np.array_equal(policy_gradient(model, theta, 1.0, "mlp"),
                          policy_gradient(model, theta, 1.0, pol))
    adv = MLPAdversary(model, hidden=6)
    phi = adv.init(2)
    assert np.array_equal(adversary_gradient(model, theta, phi, 1.0, pol, "mlp"),
                          adversary_gradient(model, theta, phi, 1.0, pol, adv))


def test_finite_difference_near_a_relu_kink_uses_a_safe_stencil():
    """A hidden unit 1e-9 from its kink: a blind stencil would straddle it."""
    rng = np.random.default_rng(5)
    model = random_rcmdp(rng, 4, 2, 1, 0.9)
    pol = MLPPolicy(model, hidden=3, feature_scale=1.0)
    theta = pol.init(0)
    w = pol.net.unflatten(theta)
    z = pol.inputs @ w["W1"] + w["b1"]
    w["b1"][0] -= z[0, 0] - 1e-9  # state 0, unit 0 now sits 1e-9 above the kink
    assert 0 < pol.relu_margin(theta) <= 1.1e-9
    g = policy_gradient(model, theta, 1.0, pol)
    _close(g, finite_difference(model, theta, 1.0, pol))
    blind = central_difference(lambda th: lagrangian(model, th, 1.0, pol), theta)
    assert relative_error(blind, g) > 1e-6  # what the kink-aware stencil avoids


# ------------------------------------------------------------------ estimators, brute force
def _brute_force(model, pol, theta, adv, phi, lam, name, T):
    """E[estimator] by summing over every trajectory of at most T steps."""
    est = ESTIMATORS[name]
    S, A = model.n_states, model.n_actions
    lam = np.asarray(lam, dtype=float)
    pi = pol.probs(theta)
    R_lam = np.asarray(model.R) - np.asarray(model.C) @ lam
    if adv is None:
        out = np.broadcast_to(np.arange(S), (S, A, S))
        q = np.asarray(model.P)
        dyn = model
    else:
        out = adv.outcomes
        q = adv.outcome_probs(phi)
        dyn = model.with_transitions(adv.kernel(phi))
    V = evaluate(dyn, pi, lam).lagrangian
    if est.side == "policy":
        score = pol.score(theta).reshape(S, A, -1)
    else:
        score = adv.score(phi).reshape(S, A, out.shape[2], -1)
    total = np.zeros(score.shape[-1])

    def finish(path, prob):
        nonlocal total
        x = np.zeros(score.shape[-1])
        G = 0.0
        for t in range(len(path) - 1, -1, -1):
            s, a, o, s2, r = path[t]
            G = r + model.gamma * G
            w = model.gamma**t if est.weight == "gamma^t" else 1.0
            if est.side == "policy":
                x += w * G * score[s, a]
            else:
                U = {"V_lam(s')": V[s2], "gamma V_lam(s')": model.gamma * V[s2]}.get(
                    est.signal, r + model.gamma * V[s2])
                x += w * U * score[s, a, o]
        total += prob * x

    def walk(t, s, prob, path):
        if t == T or model.terminal[s]:
            finish(path, prob)
            return
        for a in range(A):
            for o in range(out.shape[2]):
                p = prob * pi[s, a] * q[s, a, o]
                if p == 0.0:
                    continue
                s2 = int(out[s, a, o])
                walk(t + 1, s2, p, [*path, (s, a, o, s2, R_lam[s, a, s2])])

    for s0 in np.flatnonzero(model.p0 > 0):
        walk(0, int(s0), model.p0[s0], [])
    return total


@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.booleans(), st.booleans(),
       st.sampled_from(["softmax", "mlp"]))
@settings(max_examples=examples(30))
def test_estimator_expectations_match_brute_force(seed, T, terminal, with_adversary, kind):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(2, 4))
    model = random_rcmdp(rng, S, 2, int(rng.integers(0, 3)), float(rng.uniform(0.5, 1.0)),
                         n_outcomes=int(rng.integers(1, 4)), terminal=terminal)
    lam = rng.random(model.n_constraints) * 2
    pol = make_policy(model, kind, hidden=3)
    adv = make_adversary(model, kind, hidden=3)
    theta, phi = pol.init(rng), adv.init(rng)
    for name, est in ESTIMATORS.items():
        if est.exact:
            continue
        use_adv = with_adversary or est.side == "adversary"
        got = estimator_expectation(model, theta, name, lam, pol,
                                    phi if use_adv else None, adv, horizon=T)
        ref = _brute_force(model, pol, theta, adv if use_adv else None, phi, lam, name, T)
        assert np.allclose(np.ravel(got), ref, rtol=1e-9, atol=1e-10), name


@given(rcmdps(allow_terminal=False), st.sampled_from(["softmax", "mlp"]))
@settings(max_examples=examples(20))
def test_unbounded_episodes_are_the_limit_of_long_ones(case, kind):
    """horizon=None (linear solves) equals a long finite T (the recursions).

    Every pair reaches the terminal state with probability >= 0.05 per step (the
    model's P and the adversary's kernel), so the undiscounted visits of the printed
    forms converge geometrically and T = 600 leaves at most 0.95^600 < 1e-13 of them.
    """
    model, lam, rng = case
    S = model.n_states + 1
    model = random_rcmdp(rng, S, model.n_actions, model.n_constraints, model.gamma,
                         terminal=True)
    pol = make_policy(model, kind, hidden=3)
    adv = make_adversary(model, kind, hidden=3)
    theta, phi = pol.init(rng), adv.init(rng)
    # the adversary's kernel: also at least 0.3 to the terminal state from each pair
    q = adv.outcome_probs(phi)
    if kind == "softmax":
        q = 0.7 * q
        q[:, :, S - 1] += 0.3
        phi = np.log(q).reshape(phi.shape)
    assert np.asarray(model.P)[:S - 1, :, S - 1].min() > 0.05
    assume(adv.kernel(phi)[:S - 1, :, S - 1].min() > 0.05)
    for name, est in ESTIMATORS.items():
        if est.exact:
            continue
        kw = dict(adversary_params=phi, adversary_parametrisation=adv)
        inf = estimator_expectation(model, theta, name, lam, pol, horizon=None, **kw)
        long = estimator_expectation(model, theta, name, lam, pol, horizon=600, **kw)
        _close(inf, long, 1e-9, floor=1e-12)


# ------------------------------------------------------- where the printed forms are exact
@given(rcmdps(), st.sampled_from(["algorithm1_corrected", "theorem2_corrected"]))
@settings(max_examples=examples(30))
def test_corrected_estimators_are_the_theorems_for_unbounded_episodes(case, name):
    model, lam, rng = case
    theta = TabularPolicy(model).init(rng)
    phi = TabularAdversary(model).init(rng)
    exact = "theorem1" if name.startswith("algorithm1") else "theorem2"
    ref = estimator_expectation(model, theta, exact, lam, adversary_params=phi)
    _close(estimator_expectation(model, theta, name, lam, adversary_params=phi, horizon=None),
           ref, 1e-9)
    # truncation at T costs at most a gamma^T fraction
    T = int(np.ceil(np.log(1e-13) / np.log(model.gamma)))
    _close(estimator_expectation(model, theta, name, lam, adversary_params=phi, horizon=T),
           ref, 1e-9)


@given(rcmdps(gamma=(1.0, 1.0), allow_terminal=False), st.booleans())
@settings(max_examples=examples(30))
def test_printed_estimators_are_exact_for_undiscounted_episodes(case, nsd):
    """gamma = 1, episodes end at a terminal state: undiscounted visits are the occupancy.

    Algorithm 1 is then exact; the printed Theorem 2 is exact if and only if the
    Lagrangian reward does not depend on the next state.
    """
    _, lam, rng = case
    S = int(rng.integers(3, 7))
    model = random_rcmdp(rng, S, int(rng.integers(2, 4)), len(lam), 1.0,
                         n_outcomes=3, terminal=True, next_state_dependent=nsd)
    theta = TabularPolicy(model).init(rng)
    phi = TabularAdversary(model).init(rng)
    fd_pol = finite_difference(model, theta, lam, adversary_params=phi)
    fd_adv = finite_difference(model, theta, lam, adversary_params=phi, wrt="adversary")
    _close(estimator_expectation(model, theta, "algorithm1", lam, adversary_params=phi,
                                 horizon=None), fd_pol)
    printed = estimator_expectation(model, theta, "theorem2_printed", lam,
                                    adversary_params=phi, horizon=None)
    if lagrangian_reward_depends_on_next_state(model, lam):
        assert relative_error(printed, fd_adv) > 1e-3
    else:
        _close(printed, fd_adv)


@given(rcmdps(), st.booleans())
@settings(max_examples=examples(30))
def test_discounted_printed_adversary_form_is_exact_iff_rewards_ignore_next_state(case, nsd):
    model, lam, rng = case
    # at least 3 states and 2 actions, so that next-state rewards can matter
    model = random_rcmdp(rng, max(model.n_states, 3), max(model.n_actions, 2),
                         model.n_constraints, model.gamma, n_outcomes=3,
                         next_state_dependent=nsd)
    theta = TabularPolicy(model).init(rng)
    phi = TabularAdversary(model).init(rng)
    exact = adversary_gradient(model, theta, phi, lam)
    disc = estimator_expectation(model, theta, "theorem2_discounted", lam,
                                 adversary_params=phi, horizon=None)
    if lagrangian_reward_depends_on_next_state(model, lam):
        assert relative_error(disc, exact) > 1e-3
    else:
        _close(disc, exact, 1e-9)


def test_printed_estimators_are_biased_with_discounting():
    rng = np.random.default_rng(11)
    model = random_rcmdp(rng, 6, 3, 1, 0.9, n_outcomes=3, next_state_dependent=False,
                         horizon=50)
    theta = TabularPolicy(model).init(rng)
    phi = TabularAdversary(model).init(rng)
    g = policy_gradient(model, theta, 1.0)
    ga = adversary_gradient(model, theta, phi, 1.0)
    a1 = estimator_expectation(model, theta, "algorithm1", 1.0)
    t2 = estimator_expectation(model, theta, "theorem2_printed", 1.0, adversary_params=phi)
    assert relative_error(a1, g) > 0.1
    assert relative_error(t2, ga) > 0.1
    assert cosine_similarity(g, g) == pytest.approx(1.0)


# --------------------------------------------------------------------------- Monte Carlo
#: Joint confidence level of every Monte Carlo check of the test suite.  There are
#: MC_FAMILIES checks (8 here, 1 in test_verify.py), each of m intervals (coordinates
#: or projections); by Bonferroni each interval gets the error (1 - MC_LEVEL) /
#: (MC_FAMILIES m), so for correct estimators and standard errors all intervals hold
#: at once with probability >= 99%: a fresh seed fails the suite with probability
#: <= 1% (docs/gradients.md, "Monte Carlo", gives the failure rates measured over 200
#: seeds per check).  The power of the checks is shown by the printed estimators,
#: whose bias lies far outside these intervals.
MC_LEVEL = 0.99
MC_FAMILIES = 9


def _simultaneous_z(m):
    """Half-width, in standard errors, of one of m intervals of one check."""
    return norm.ppf(1 - (1 - MC_LEVEL) / (2 * MC_FAMILIES * m))


MC_CASES = [(0, "softmax"), (1, "softmax"), (2, "mlp")]


@pytest.mark.parametrize("seed,kind", MC_CASES)
def test_monte_carlo_of_corrected_estimators_covers_the_exact_gradients(seed, kind):
    """gamma = 0.8 and T = 150: the truncation (0.8^150 ~ 3e-15) is far below the CI."""
    rng = np.random.default_rng(100 + seed)
    model = random_rcmdp(rng, 5, 2, 1, 0.8, n_outcomes=3, terminal=(seed == 1))
    lam = [1.5]
    pol = make_policy(model, kind, hidden=4)
    adv = make_adversary(model, kind, hidden=4)
    theta, phi = pol.init(rng), adv.init(rng)
    for name, exact in (("algorithm1_corrected", policy_gradient(model, theta, lam, pol, phi, adv)),
                        ("theorem2_corrected",
                         adversary_gradient(model, theta, phi, lam, pol, adv))):
        exact = np.ravel(exact)
        D = None
        if kind == "mlp":  # a few fixed directions instead of every coordinate
            D = np.random.default_rng(7).normal(size=(4, exact.size))
        mc = monte_carlo_estimator(model, theta, name, 20000, seed=1000 + seed, lam=lam,
                                   parametrisation=pol, adversary_params=phi,
                                   adversary_parametrisation=adv, horizon=150, directions=D)
        if D is None:
            mean, sem, ref = np.ravel(mc.mean), np.ravel(mc.sem), exact
        else:
            mean, sem, ref = mc.projection_mean, mc.projection_sem, D @ exact
        z = _simultaneous_z(ref.size)
        assert np.all(np.abs(mean - ref) <= z * sem + 1e-12), name
        assert sem.max() > 0


def test_monte_carlo_confirms_the_printed_expectations_and_detects_their_bias():
    rng = np.random.default_rng(42)
    model = random_rcmdp(rng, 4, 2, 1, 0.8, n_outcomes=3, horizon=40)
    lam = [1.0]
    theta = TabularPolicy(model).init(rng)
    phi = TabularAdversary(model).init(rng)
    for name, exact in (("algorithm1", policy_gradient(model, theta, lam, adversary_params=phi)),
                        ("theorem2_printed", adversary_gradient(model, theta, phi, lam))):
        expected = estimator_expectation(model, theta, name, lam, adversary_params=phi)
        mc = monte_carlo_estimator(model, theta, name, 20000, seed=3, lam=lam,
                                   adversary_params=phi)
        z = _simultaneous_z(expected.size)
        assert np.all(np.abs(mc.mean - expected) <= z * mc.sem), name
        # the sampled printed estimator is far from the true gradient
        assert np.any(np.abs(mc.mean - exact) > 10 * mc.sem), name


def test_monte_carlo_standard_errors_are_calibrated():
    """The reported standard error matches the spread of independent runs.

    R runs of n episodes each: the sample variance of their means, divided by the mean
    reported sem^2, is chi^2_{R-1} / (R - 1) when the sem is right; the bounds below
    are its 1e-4 and 1 - 1e-4 quantiles, so a correct sem fails with probability
    2e-4, while an sem off by a factor sqrt(2) either way, or a sum in place of a mean,
    fails.  (The interval checks above cannot see an sem that is too large.)
    """
    from scipy.stats import chi2

    rng = np.random.default_rng(8)
    model = random_rcmdp(rng, 4, 2, 1, 0.9, n_outcomes=3, horizon=25)
    theta = TabularPolicy(model).init(rng)
    phi = TabularAdversary(model).init(rng)
    R, n = 80, 400
    for name, size in (("algorithm1", theta.size), ("theorem2_corrected", phi.size)):
        # one random direction, then every coordinate direction
        D = np.vstack([np.random.default_rng(1).normal(size=(1, size)), np.eye(size)])
        runs = [monte_carlo_estimator(model, theta, name, n, seed=[5, r], lam=1.0,
                                      adversary_params=phi, directions=D)
                for r in range(R)]
        means = np.array([m.projection_mean[0] for m in runs])
        sem2 = np.mean([m.projection_sem[0] ** 2 for m in runs])
        ratio = means.var(ddof=1) / sem2
        lo, hi = chi2.ppf([1e-4, 1 - 1e-4], R - 1) / (R - 1)
        assert lo <= ratio <= hi, (name, ratio, lo, hi)
        # the projections and the per-coordinate results describe the same samples, so
        # the per-coordinate standard errors are calibrated as well
        m0 = runs[0]
        np.testing.assert_allclose(m0.projection_mean, D @ np.ravel(m0.mean), atol=1e-12)
        np.testing.assert_allclose(m0.projection_sem[1:], np.ravel(m0.sem), rtol=1e-9,
                                   atol=1e-14)


def test_monte_carlo_is_reproducible():
    rng = np.random.default_rng(0)
    model = random_rcmdp(rng, 4, 2, 1, 0.9, horizon=20)
    theta = TabularPolicy(model).init(0)
    a = monte_carlo_estimator(model, theta, "algorithm1", 300, seed=9, lam=1.0, batch_size=128)
    b = monte_carlo_estimator(model, theta, "algorithm1", 300, seed=9, lam=1.0, batch_size=128)
    assert np.array_equal(a.mean, b.mean) and np.array_equal(a.sem, b.sem)


# --------------------------------------------------------------------------- messages
def test_error_messages():
    rng = np.random.default_rng(0)
    model = random_rcmdp(rng, 4, 2, 1, 0.9)
    theta = TabularPolicy(model).init(0)
    with raises_fact(ModelError, "policy parametrisation", "'linear'", "'softmax'", "'mlp'"):
        policy_gradient(model, theta, 1.0, "linear")
    with raises_fact(ModelError, "TabularPolicy logits", "(4, 2)", "(3, 2)"):
        policy_gradient(model, theta[:3], 1.0)
    with raises_fact(ModelError, "policy MLP parameters have length 10", "hidden width"):
        policy_gradient(model, np.zeros(10), 1.0, "mlp")
    phi = TabularAdversary(model).init(0)
    with raises_fact(ModelError, "adversary parametrisation", "'gaussian'"):
        adversary_gradient(model, theta, phi, 1.0, adversary_parametrisation="gaussian")
    with raises_fact(ModelError, "adversary_parametrisation", "TabularPolicy"):
        adversary_gradient(model, theta, phi, 1.0,
                           adversary_parametrisation=TabularPolicy(model))
    with raises_fact(ModelError, "parametrisation", "TabularAdversary"):
        policy_gradient(model, theta, 1.0, TabularAdversary(model))
    other = random_rcmdp(rng, 5, 2, 1, 0.9)
    with raises_fact(ModelError, "S=5, A=2", "S=4, A=2"):
        adversary_gradient(model, theta, phi, 1.0,
                           adversary_parametrisation=TabularAdversary(other))
    with raises_fact(ModelError, "adversary MLP parameters have length 10"):
        adversary_gradient(model, theta, np.zeros(10), 1.0, adversary_parametrisation="mlp")
    with raises_fact(ModelError, "adversary_params"):
        finite_difference(model, theta, 1.0, wrt="adversary")
    with raises_fact(ModelError, "estimator", "'reinforce'", "theorem1"):
        estimator_expectation(model, theta, "reinforce", 1.0)
    with raises_fact(ImproperPolicyError, "'algorithm1'", "state 0", "never reaches a terminal"):
        estimator_expectation(model, theta, "algorithm1", 1.0, horizon=None)
    with raises_fact(ModelError, "horizon", "None", "finite episode length"):
        monte_carlo_estimator(model, theta, "algorithm1", 10, horizon=None)
    with raises_fact(ModelError, "batch_size", ">= 1", "0"):
        monte_carlo_estimator(model, theta, "algorithm1", 10, horizon=5, batch_size=0)
    with raises_fact(ModelError, "'theorem1'", "exact formula"):
        monte_carlo_estimator(model, theta, "theorem1", 10, horizon=5)
    with raises_fact(ModelError, "wrt", "'lam'", "'policy'", "'adversary'"):
        finite_difference(model, theta, 1.0, wrt="lam")
    with raises_fact(ModelError, "finite-difference order", "3"):
        finite_difference(model, theta, 1.0, order=3)
    with raises_fact(ModelError, "seed", "-1"):
        monte_carlo_estimator(model, theta, "algorithm1", 10, horizon=5, seed=-1)
