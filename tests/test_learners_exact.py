"""Tests of the learners' exact-gradient mode (``train(..., gradient="exact")``).

The goal: exact CPG on Inventory ends within 0.5 of the LP optimum
and at most 1% above the budget, exact PG ends infeasible.  The pieces are checked
against independent implementations: the dense evaluation against
:func:`rcmdp_exact.evaluate` (sparse LU), the exact policy gradient against
:func:`rcmdp_exact.policy_gradient`, and the augmented-Lagrangian step against finite
differences of the augmented Lagrangian.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact as rx
from rcmdp_exact.core.nn import MLP, softmax
from rcmdp_exact.core.parametrisations import MLPPolicy
from rcmdp_exact.learners import ALGORITHMS, Settings, train
from rcmdp_exact.learners.base import EXACT_DEFAULTS
from rcmdp_exact.learners.dynamics import build_problem
from rcmdp_exact.learners.exact import dense_evaluation, exact_policy_gradient
from rcmdp_exact.theory.differences import central_difference


def _arrays(model):
    return (np.asarray(model.P), np.asarray(model.R), np.asarray(model.C),
            np.asarray(model.p0, dtype=float), ~np.asarray(model.terminal, dtype=bool))


# ----------------------------------------------------------------------- acceptance
def test_exact_cpg_reaches_the_lp_optimum_and_pg_does_not_respect_the_budget():
    """Exact CPG on Inventory within 0.5 of the LP optimum (an independent
    algorithm: the occupancy-measure LP), cost at most 1% above d; PG infeasible."""
    model = rx.domains.inventory()
    d = float(model.d[0])
    opt = rx.solve_cmdp(model)
    assert opt.costs[0] == pytest.approx(d, abs=1e-6)  # the budget binds
    cpg = train(model, "cpg", gradient="exact", entropy=0.0, episodes=5000, eval_every=None,
                progress=False)
    value = cpg.records["eval_train_stochastic_value"][-1]
    cost = cpg.records["eval_train_stochastic_cost"][-1, 0]
    assert abs(opt.value - value) <= 0.5
    assert cost <= 1.01 * d
    # the multiplier found is the LP's dual
    assert cpg.lam[0] == pytest.approx(float(opt.lam[0]), abs=0.02)
    pg = train(model, "pg", gradient="exact", entropy=0.0, episodes=5000, eval_every=None,
               progress=False)
    assert pg.records["eval_train_stochastic_cost"][-1, 0] > 2 * d
    assert pg.records["eval_train_stochastic_value"][-1] > opt.value


def test_exact_mode_defaults_are_the_documented_ones(tmp_path):
    model = rx.domains.inventory()
    res = train(model, "cpg", gradient="exact", episodes=3, eval_every=None, progress=False)
    s = res.settings
    for name, value in EXACT_DEFAULTS.items():
        assert getattr(s, name) == value, name
    # the multiplier stays at its start value during the warm-up
    assert np.all(res.records["lam"] == EXACT_DEFAULTS["lam_init"])
    sampled = train(model, "cpg", episodes=1, eval_every=None, progress=False)
    assert sampled.settings.multiplier_update == "adam-log"
    assert sampled.settings.feature_centre is False
    assert sampled.settings.multiplier_start == 0
    # centred inputs: the stock levels minus their mean
    np.testing.assert_allclose(res.inputs[:, 0], np.arange(10) - 4.5)


def test_augmented_needs_exact_gradients():
    model = rx.domains.inventory()
    with pytest.raises(rx.OptionError) as info:
        train(model, "cpg", multiplier_update="augmented", episodes=1, progress=False)
    assert "augmented" in str(info.value) and "exact" in str(info.value)


# ----------------------------------------------------------------------- pieces
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 6), st.integers(2, 4), st.booleans())
def test_dense_evaluation_equals_evaluate(seed, S, A, with_terminal):
    """Values, costs, occupancy and Q of the dense solve against the sparse LU of
    :func:`rcmdp_exact.evaluate` on random models (terminal states included)."""
    rng = np.random.default_rng(seed)
    model = rx.domains.garnet(S, A, min(S, 3), seed=seed, n_constraints=2)
    if with_terminal:
        term = np.zeros(S, dtype=bool)
        term[-1] = True
        P = np.asarray(model.P).copy()
        P[-1] = 0.0
        P[-1, :, -1] = 1.0
        model = model.replace(P=P, terminal=term, outcomes=None)
    pi = rng.dirichlet(np.ones(A), size=S)
    lam = rng.random(2)
    P, R, C, p0, nt = _arrays(model)
    ev = dense_evaluation(P, R, C, pi, model.gamma, p0, nt)
    ref = rx.evaluate(model, pi, lam)
    np.testing.assert_allclose(ev.value, ref.value, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ev.costs, ref.costs, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ev.lagrangian(lam), ref.lagrangian, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ev.occupancy[nt], np.asarray(ref.occupancy)[nt], rtol=1e-9,
                               atol=1e-10)
    np.testing.assert_allclose(ev.q_lagrangian(lam)[nt], np.asarray(ref.q_lagrangian)[nt],
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("domain", ["nav1", "inventory"])
def test_exact_policy_gradient_equals_policy_gradient(domain):
    """The loop's gradient (centred inputs, entropy 0) is that of
    :func:`rcmdp_exact.policy_gradient` for the same MLP policy."""
    model = rx.domains.paper_domain(domain)
    pb = build_problem(model, ALGORITHMS["cpg"], None,
                       Settings("cpg", feature_scale=1.0, feature_centre=True))
    net = MLP(pb.Xpol.shape[1], model.n_actions, hidden=100, seed=0)
    theta = MLP(pb.Xpol.shape[1], model.n_actions, hidden=100, seed=3).get_params()
    lam = np.array([0.7])
    P, R, C, p0, nt = _arrays(model)
    pi = softmax(net.logits(pb.Xpol, theta))
    ev = dense_evaluation(P, R, C, pi, model.gamma, p0, nt)
    ours = exact_policy_gradient(net, pb.Xpol, theta, ev, lam, 0.0, nt)
    pol = MLPPolicy(model, hidden=100, feature_scale=1.0)
    pol.inputs = pb.Xpol
    ref = rx.policy_gradient(model, theta, lam, parametrisation=pol)
    np.testing.assert_allclose(ours, ref, rtol=1e-8, atol=1e-8 * np.abs(ref).max())


def test_augmented_lagrangian_gradient_finite_differences():
    """With lambda_eff = max(0, lambda + rho (C - d)) the policy step follows the
    gradient of the augmented Lagrangian V - psi_rho(C - d, lambda) (finite differences
    of exact evaluations), on both branches of psi."""
    model = rx.domains.inventory()
    P, R, C, p0, nt = _arrays(model)
    d = float(model.d[0])
    net = MLP(1, model.n_actions, hidden=8, seed=0, bias_scale=0.5)
    X = (np.arange(10.0) - 4.5)[:, None] / 4.5
    theta = net.get_params()

    def evaluate(th):
        return dense_evaluation(P, R, C, softmax(net.logits(X, th)), model.gamma, p0, nt)

    cost = float(evaluate(theta).costs[0])
    for lam, rho in ((2.0, 0.05), (0.1, 0.001)):  # lambda + rho g >= 0, and < 0
        g = cost - d
        active = lam + rho * g >= 0

        def aug(th, lam=lam, rho=rho):
            ev = evaluate(th)
            gk = float(ev.costs[0]) - d
            psi = lam * gk + rho * gk**2 / 2 if lam + rho * gk >= 0 else -lam**2 / (2 * rho)
            return ev.value - psi

        lam_eff = np.array([max(0.0, lam + rho * g)])
        ours = exact_policy_gradient(net, X, theta, evaluate(theta), lam_eff, 0.0, nt)
        fd = central_difference(aug, theta, max_step=net.kink_free_step(X, theta))
        np.testing.assert_allclose(ours, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
        assert active == (lam_eff[0] > 0)


def test_exact_entropy_gradient_finite_differences():
    """The entropy term: the gradient of sum_s d(s) H(pi(.|s)) with d held fixed."""
    model = rx.domains.inventory()
    P, R, C, p0, nt = _arrays(model)
    net = MLP(1, model.n_actions, hidden=8, seed=1, bias_scale=0.5)
    X = (np.arange(10.0) - 4.5)[:, None] / 4.5
    theta = net.get_params()
    ev = dense_evaluation(P, R, C, softmax(net.logits(X, theta)), model.gamma, p0, nt)
    both = exact_policy_gradient(net, X, theta, ev, np.zeros(1), 2.0, nt)
    value_only = exact_policy_gradient(net, X, theta, ev, np.zeros(1), 0.0, nt)

    def ent(th):
        p = softmax(net.logits(X, th))
        return float(ev.occupancy @ -(p * np.log(p)).sum(axis=1))

    fd = central_difference(ent, theta, max_step=net.kink_free_step(X, theta))
    np.testing.assert_allclose(both - value_only, 2.0 * fd, rtol=1e-5,
                               atol=1e-7 * np.abs(fd).max())


def test_multiplier_warm_up_in_the_sampled_loop():
    """multiplier_start holds the multiplier for that many episodes (both backends)."""
    model = rx.domains.inventory()
    kw = dict(episodes=4, seed=0, eval_every=None, progress=False, multiplier_start=2)
    a = train(model, "cpg", **kw)
    b = train(model, "cpg", backend="numpy", **kw)
    lam = a.records["lam"][:, 0]
    assert lam[0] == lam[1] == 50.0 and lam[2] != 50.0
    np.testing.assert_allclose(a.records["lam"], b.records["lam"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.policy_params, b.policy_params, rtol=0, atol=1e-12)
