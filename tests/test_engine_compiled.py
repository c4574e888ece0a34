"""The robust engine's compiled inner step on the L1 ball against the ball's numpy
worst_case (the oracle), and whole fixed points of both paths."""

import numpy as np
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from rcmdp_exact.domains import garnet
from rcmdp_exact.robust.engine import RobustGame
from rcmdp_exact.uncertainty import L1Ball, kl_ball, l1_ball


def _games(seed, S, A, support):
    m = garnet(S, A, min(S, 3), n_constraints=1, seed=seed, gamma=0.9)
    rng = np.random.default_rng(seed)
    uset = l1_ball(m, rng.uniform(0.0, 1.5, size=(S, A)), support=support)
    return m, RobustGame(m, uset), RobustGame(m, uset, compiled=False), rng


@settings(max_examples=examples(40))
@given(st.integers(0, 10**6), st.integers(1, 7), st.integers(1, 4),
       st.sampled_from(["all", "nominal"]), st.booleans(), st.booleans())
def test_compiled_rows_equal_the_numpy_oracle(seed, S, A, support, shared, ties):
    m, fast, ref, rng = _games(seed, S, A, support)
    assert fast.rows is not None and ref.rows is None
    J = int(rng.integers(1, 5))
    w = rng.normal(size=(J, S))
    g = np.broadcast_to(rng.normal(size=(J, S, A, 1)) + rng.normal(size=(J, 1, 1, S)),
                        (J, S, A, S)).copy() if shared else rng.normal(size=(J, S, A, S))
    if ties:  # equal values: the tie rules of the two paths must agree too
        w = np.round(w)
        g = np.round(g)
    q1, P1 = fast.inner(g, w)
    q0, _P0 = ref.inner(g, w)
    z = g + m.gamma * w[:, None, None, :]
    assert np.allclose(q1, q0, rtol=0, atol=1e-12 * max(1.0, np.abs(z).max()))
    scale = 1e-12 * max(1.0, np.abs(z).max())
    assert np.allclose(q1, np.einsum("jsat,jsat->jsa", P1, z), atol=scale)
    # the compiled rows are kernels of the ball
    assert ref.uset.contains(P1[0], tol=1e-9).all()
    assert np.allclose(P1.sum(axis=-1), 1.0)


@settings(max_examples=examples(15))
@given(st.integers(0, 10**6), st.integers(2, 5), st.integers(2, 3))
def test_compiled_fixed_points_equal_the_numpy_ones(seed, S, A):
    _m, fast, ref, rng = _games(seed, S, A, "all")
    J = 3
    lo = rng.uniform(0.0, 0.3, size=(J, S, A))
    hi = np.minimum(lo + rng.uniform(0.1, 1.0, size=(J, S, A)), 1.0)
    lo = np.minimum(lo, 1.0 / A)
    hi = np.maximum(hi, 1.0 / A)
    lam = rng.uniform(0.0, 2.0, size=(J, 1))
    a, b = fast.solve(fast.lagrangian(lam), lo, hi), ref.solve(ref.lagrangian(lam), lo, hi)
    assert np.allclose(a.value, b.value, atol=1e-9) and np.all(a.err <= 1e-9)
    pi = rng.dirichlet(np.ones(A), size=(2, S))
    ea, eb = fast.evaluate(pi), ref.evaluate(pi)
    assert np.allclose(ea.value, eb.value, atol=1e-9)
    assert np.allclose(ea.costs, eb.costs, atol=1e-9)


def test_a_ball_that_keeps_its_solver_is_compiled_one_that_replaces_it_is_not():
    """The engine takes the compiled rows of a set through the protocol's hook
    (``compiled_rows``): the L1 ball and a subclass that keeps its solver give them, a
    subclass that replaces its worst case does not (its own answers are used)."""
    m = garnet(3, 2, 2, n_constraints=1, seed=0, gamma=0.9)
    uset = l1_ball(m, 0.2, support="all")

    class Same(L1Ball):
        pass

    class Replaced(L1Ball):
        def _solve_rows(self, Z, J, method):
            return super()._solve_rows(Z, J, method)

    class Shared(L1Ball):
        def worst_case(self, *args, **kw):
            return super().worst_case(*args, **kw)

    same, replaced, shared = (cls(uset.nominal, 0.2) for cls in (Same, Replaced, Shared))
    assert RobustGame(m, uset).rows is not None
    assert RobustGame(m, same).rows is not None
    assert RobustGame(m, replaced).rows is None and RobustGame(m, shared).rows is None
    assert RobustGame(m, uset, inner="lp").rows is None
    assert RobustGame(m, uset).replace(compiled=False).rows is None
    assert RobustGame(m, replaced).greedy is RobustGame(m, uset).greedy
    for other in (kl_ball(m, 0.1), interval_around(m)):
        assert other.compiled_rows() is None and RobustGame(m, other).rows is None
    w, g = np.zeros((1, 3)), np.ones((1, 3, 2, 3))
    q_same, _ = RobustGame(m, same).inner(g, w)
    q_ref, _ = RobustGame(m, uset, compiled=False).inner(g, w)
    assert np.allclose(q_same, q_ref, atol=1e-12)


def interval_around(m):
    from rcmdp_exact.uncertainty import IntervalSet

    return IntervalSet.around(m, 0.1)


@settings(max_examples=examples(40))
@given(st.integers(0, 10**6), st.integers(1, 6), st.booleans())
def test_compiled_greedy_fill_equals_greedy_box(seed, A, ties):
    from rcmdp_exact.core.mdp import greedy_box
    from rcmdp_exact.robust._compiled import greedy_fill

    rng = np.random.default_rng(seed)
    q = rng.normal(size=(5, 3, A))
    if ties:
        q = np.round(q)
    lo = rng.uniform(0.0, 1.0 / A, size=(5, 3, A))
    hi = np.minimum(lo + rng.uniform(0.0, 1.0, size=(5, 3, A)), 1.0)
    short = hi.sum(axis=-1, keepdims=True) < 1.0  # make every box non-empty
    hi = np.where(short, 1.0, hi)
    out, ref = greedy_fill(q, lo, hi), greedy_box(q, lo, hi)
    assert np.allclose(out, ref, atol=1e-15)
    assert np.allclose(out.sum(axis=-1), 1.0) and np.all(out >= lo) and np.all(out <= hi)
