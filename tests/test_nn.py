"""Tests of the hand-written MLP (forward, backward, per-sample gradients) and Adam.

The backward pass is checked against central finite differences written here (not
the package's own finite-difference tool); Adam against hand-derived updates.
"""

import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rcmdp_exact.core.model_checks import ModelError
from rcmdp_exact.core.nn import MLP, Adam, log_softmax, softmax


def _fd(f, x, h=1e-6):
    """Plain second-order central differences."""
    x = np.array(x, dtype=np.float64)
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@st.composite
def nets(draw):
    F = draw(st.integers(1, 4))
    H = draw(st.integers(1, 7))
    O = draw(st.integers(1, 5))
    N = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    net = MLP(F, O, hidden=H, seed=seed, bias_scale=0.5)
    x = rng.normal(size=(N, F))
    return net, x, rng


def test_same_seed_same_bits_and_glorot_bounds():
    a = MLP(3, 4, hidden=50, seed=7)
    b = MLP(3, 4, hidden=50, seed=7)
    c = MLP(3, 4, hidden=50, seed=8)
    assert np.array_equal(a.get_params(), b.get_params())
    assert not np.array_equal(a.get_params(), c.get_params())
    assert a.n_params == 3 * 50 + 50 + 50 * 4 + 4 == MLP.count_params(3, 4, 50)
    assert np.abs(a.W1).max() <= np.sqrt(6 / (3 + 50))
    assert np.abs(a.W2).max() <= np.sqrt(6 / (50 + 4))
    assert np.abs(a.b1).max() <= 0.1 and np.abs(a.b1).min() > 0  # small, not zero
    assert MLP.hidden_from_count(a.n_params, 3, 4) == 50
    assert MLP.hidden_from_count(a.n_params + 1, 3, 4) is None


def test_flat_params_layout_get_set():
    net = MLP(2, 3, hidden=4, seed=0)
    W1, b1, W2, b2 = (np.arange(n, dtype=float) + k
                      for n, k in ((8, 0), (4, 100), (12, 200), (3, 300)))
    flat = MLP.flatten(W1.reshape(2, 4), b1, W2.reshape(4, 3), b2)
    net.set_params(flat)
    assert np.array_equal(net.W1, W1.reshape(2, 4))
    assert np.array_equal(net.b1, b1)
    assert np.array_equal(net.W2, W2.reshape(4, 3))
    assert np.array_equal(net.b2, b2)
    got = net.get_params()
    got[0] = -1.0  # a copy: the network is unchanged
    assert net.W1[0, 0] == 0.0
    x = np.array([[0.5, -1.0]])
    z = x @ W1.reshape(2, 4) + b1
    expected = np.maximum(z, 0) @ W2.reshape(4, 3) + b2
    assert np.allclose(net.logits(x), expected)


def test_wrong_param_length_message():
    net = MLP(2, 3, hidden=4, seed=0)
    with pytest.raises(ModelError) as info:
        net.set_params(np.zeros(5))
    for fact in ("MLP parameters", "length 27", "(5,)", "get_params"):
        assert fact in str(info.value)
    with pytest.raises(ModelError, match=re.escape("MLP input must have shape (N, 2)")):
        net.logits(np.zeros((3, 5)))


def test_softmax_stable_for_large_logits():
    z = np.array([[1000.0, 1001.0, -1000.0], [0.0, 0.0, 0.0]])
    p = softmax(z)
    assert np.isfinite(p).all()
    assert np.allclose(p.sum(axis=1), 1.0)
    assert np.allclose(np.exp(log_softmax(z)), p)
    e = np.exp(1.0)
    assert np.isclose(p[0, 1], e / (1 + e))


@given(nets())
def test_backward_matches_finite_differences(case):
    net, x, rng = case
    theta = net.get_params()
    # logits are piecewise linear in W1/b1 and linear in W2/b2: central differences
    # are exact up to rounding while no unit crosses its kink
    assume(net.relu_margin(x) > 1e-4)
    G = rng.normal(size=(x.shape[0], net.n_outputs))
    g = net.backward(x, G)
    fd = _fd(lambda p: float((G * net.logits(x, p)).sum()), theta)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-7)


@given(nets())
def test_vjp_probs_and_per_sample_grads_match_finite_differences(case):
    net, x, rng = case
    theta = net.get_params()
    assume(net.relu_margin(x) > 1e-4)
    G = rng.normal(size=(x.shape[0], net.n_outputs))
    g = net.vjp_probs(x, G)
    fd = _fd(lambda p: float((G * net.probs(x, p)).sum()), theta)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-7)
    y = rng.integers(0, net.n_outputs, size=x.shape[0])
    per = net.grad_log_softmax(x, y)
    for n in range(x.shape[0]):
        fdn = _fd(lambda p, n=n: float(net.log_probs(x, p)[n, y[n]]), theta)
        assert np.allclose(per[n], fdn, rtol=1e-6, atol=1e-7)
    # the summed per-sample gradients are the VJP with cotangent onehot(y) - p
    onehot = np.eye(net.n_outputs)[y]
    assert np.allclose(per.sum(axis=0), net.backward(x, onehot - net.probs(x)), atol=1e-12)
    score = net.score(x)
    assert np.allclose(score[np.arange(x.shape[0]), y], per, atol=1e-12)
    jac = net.jacobian_probs(x)
    # probabilities sum to one, so their Jacobian sums to zero over outputs
    assert np.allclose(jac.sum(axis=1), 0.0, atol=1e-12)
    assert np.allclose(np.einsum("no,nop->p", G, jac), g, atol=1e-10)


@given(nets(), st.floats(0.1, 0.95))
def test_kink_free_step_is_the_distance_to_the_nearest_kink(case, frac):
    net, x, rng = case
    theta = net.get_params()
    bound = net.kink_free_step(x)
    pattern = net.forward(x)["z"] > 0
    i = int(rng.integers(0, net.n_inputs * net.hidden + net.hidden))
    for col, sign in ((0, 1.0), (1, -1.0)):
        b = bound[i, col]
        if not np.isfinite(b) or b == 0:
            continue
        p = theta.copy()
        p[i] += sign * frac * b
        assert np.array_equal(net.forward(x, p)["z"] > 0, pattern)
        p = theta.copy()
        p[i] += sign * 1.01 * b
        assert not np.array_equal(net.forward(x, p)["z"] > 0, pattern)
    assert np.isinf(bound[net.n_inputs * net.hidden + net.hidden:]).all()


def test_adam_matches_hand_computed_updates():
    opt = Adam(2, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8)
    p0 = np.array([1.0, -2.0])
    g1 = np.array([4.0, -0.5])
    p1 = opt.step(p0, g1)
    # step 1: m_hat = g, v_hat = g^2, so the move is lr * g / (|g| + eps)
    assert np.allclose(p1, p0 - 0.1 * g1 / (np.abs(g1) + 1e-8), rtol=0, atol=1e-15)
    g2 = np.array([2.0, 1.0])
    p2 = opt.step(p1, g2)
    m = 0.9 * 0.1 * g1 + 0.1 * g2
    v = 0.999 * 0.001 * g1**2 + 0.001 * g2**2
    m_hat = m / (1 - 0.9**2)
    v_hat = v / (1 - 0.999**2)
    assert np.allclose(p2, p1 - 0.1 * m_hat / (np.sqrt(v_hat) + 1e-8), rtol=0, atol=1e-15)
    # the state round-trips: a restored optimiser takes the same next step
    clone = Adam(2)
    clone.load_state_dict(opt.state_dict())
    g3 = np.array([-1.0, 3.0])
    assert np.array_equal(clone.step(p2, g3), opt.step(p2, g3))


def test_adam_minimises_a_quadratic():
    A = np.diag([1.0, 10.0, 0.1])
    target = np.array([1.0, -2.0, 3.0])
    opt = Adam(3, lr=0.05)
    p = np.zeros(3)
    for _ in range(3000):
        p = opt.step(p, A @ (p - target))
    assert np.allclose(p, target, atol=1e-3)


def test_adam_rejects_bad_input():
    opt = Adam(2)
    cases = [
        (lambda: opt.step(np.zeros(3), np.zeros(3)), ("Adam params", "(2,)", "(3,)")),
        (lambda: opt.step(np.zeros(2), np.array([0.0, np.nan])), ("gradient", "nan", "1")),
        (lambda: Adam(2, lr=0.0), ("lr", "0.0")),
        (lambda: Adam(2, eps=0.0), ("eps", "0.0")),
        (lambda: Adam(2, beta1=1.0), ("beta1", "1.0")),
        (lambda: MLP(2, 3, hidden=4, bias_scale=-0.1), ("bias_scale", "-0.1")),
        (lambda: MLP(0, 3), ("n_inputs", "0")),
    ]
    for call, facts in cases:
        with pytest.raises(ModelError) as info:
            call()
        for fact in facts:
            assert fact in str(info.value), (fact, str(info.value))


@given(nets(), st.data())
def test_single_sample_fast_path_equals_per_sample_path(case, data):
    net, x, _ = case
    y = data.draw(st.integers(0, net.n_outputs - 1))
    fast = net.grad_log_prob(x[0], y)
    cache = net.forward(x[:1])
    g = -softmax(cache["logits"])
    g[0, y] += 1.0
    slow = net._per_sample(cache, g[:, None, :], None)[0, 0]
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(net.grad_log_softmax(x[:1], np.array([y]))[0], fast)


def test_adam_flushes_subnormal_moments_in_both_implementations():
    """A gradient that stays 0 decays the first moment by 0.9 a step: without a flush it
    would reach the smallest subnormal and stay there (0.9 times it rounds back to it),
    which makes every later step slow on some CPUs.  The numpy Adam and the compiled one
    of the learners flush moments below the smallest normal float to zero, step for step
    the same bits."""
    from rcmdp_exact.learners.loop import _adam

    tiny = np.finfo(np.float64).tiny
    assert 0.9 * (5e-324) == 5e-324  # the trap: the smallest subnormal is a fixed point
    g = np.array([1.0, 1e-200, 0.0, 3.0])
    opt = Adam(4, lr=1e-3)
    p_np = np.zeros(4)
    p_nb, m, v = np.zeros(4), np.zeros(4), np.zeros(4)
    for t in range(1, 8001):
        grad = g if t == 1 else np.where(np.arange(4) == 3, g, 0.0)
        p_np = opt.step(p_np, grad)
        _adam(p_nb, grad, m, v, t, 1e-3, opt.beta1, opt.beta2, opt.eps, 1.0)
        for arr in (opt.m, opt.v, m, v):
            assert not np.any((arr != 0.0) & (np.abs(arr) < tiny)), t
    np.testing.assert_array_equal(opt.m, m)
    np.testing.assert_array_equal(opt.v, v)
    np.testing.assert_array_equal(p_np, p_nb)
    assert opt.m[0] == 0.0 and opt.m[1] == 0.0 and opt.v[1] == 0.0  # flushed, not stuck
