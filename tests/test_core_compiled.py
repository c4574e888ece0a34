"""The compiled loops of the plain solvers (``rcmdp_exact.core._compiled``) against an
independent computation in numpy / scipy: the greedy step of value iteration, the
gather of CSR rows, the sweeps of modified policy iteration and one GMRES cycle, on
estimated-looking rows (masses from 1e-15 to 1e-2 beside large ones, exact zeros),
values up to 1e6, ties, NaN, both index types of scipy and gamma near 1."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from helpers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rcmdp_exact.core._compiled import (
    gmres_cycle,
    greedy_step,
    operands,
    sweeps,
    take_rows_csr,
)
from rcmdp_exact.testing import skewed_kernel


def _kernel(seed: int, S: int, sparse: bool, wide: bool):
    """P (S, S) skewed rows (CSR with int32 or int64 indices when ``sparse``)."""
    P = skewed_kernel(seed, S, 1)[:, 0, :]
    if not sparse:
        return P
    M = sp.csr_array(P)
    if wide:
        M = sp.csr_array((M.data, M.indices.astype(np.int64), M.indptr.astype(np.int64)),
                         shape=M.shape)
    return M


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 12), A=st.integers(1, 4),
       scale=st.sampled_from([1e-3, 1.0, 1e6]), ties=st.booleans(), nan=st.booleans())
@example(seed=0, S=1, A=1, scale=1.0, ties=False, nan=False)
def test_greedy_step_equals_numpy(seed, S, A, scale, ties, nan):
    """The argmax of every row (ties to the lowest action, a NaN counts as the largest:
    numpy's rule), its value, min / max of tv - v and max |tv|, as numpy computes them."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(S, A)) * scale
    if ties:
        q = np.round(q / scale) * scale  # many equal entries
    if nan:
        q[rng.integers(S), rng.integers(A)] = np.nan
    v = rng.normal(size=S) * scale
    actions, tv, lo, hi, top = greedy_step(q, v)
    ref = q.argmax(axis=1)
    np.testing.assert_array_equal(actions, ref)
    np.testing.assert_array_equal(tv, q[np.arange(S), ref])
    d = q[np.arange(S), ref] - v
    if nan:
        assert np.isnan(lo) and np.isnan(hi)
    else:
        assert lo == d.min() and hi == d.max()
        assert top == np.abs(tv).max()


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 15), m=st.integers(0, 20),
       wide=st.booleans())
def test_take_rows_csr_equals_scipy_indexing(seed, S, m, wide):
    """The gathered rows (repeats allowed) are scipy's ``P[rows]``, entry for entry."""
    from rcmdp_exact.core._compiled import csr_parts

    P = _kernel(seed, S, True, wide)
    rows = np.random.default_rng(seed).integers(0, S, size=m).astype(np.int64)
    ptr, ind, val = take_rows_csr(*csr_parts(P), rows)
    got = sp.csr_array((val, ind.astype(np.int64), ptr.astype(np.int64)), shape=(m, S))
    np.testing.assert_array_equal(got.toarray(), P.toarray()[rows])


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 15), k=st.integers(0, 30),
       gamma=st.sampled_from([0.0, 0.5, 0.99, 0.9999]), sparse=st.booleans(),
       wide=st.booleans(), scale=st.sampled_from([1e-3, 1.0, 1e6]))
def test_sweeps_equal_the_numpy_loop(seed, S, k, gamma, sparse, wide, scale):
    """k sweeps v <- g + gamma P v (no early stop: cut = -1) are the numpy loop up to the
    rounding of the products (the compiled loop may sum a row in another order), and
    the early stop comes after the first sweep whose step has a span <= cut."""
    rng = np.random.default_rng(seed)
    P = _kernel(seed, S, sparse, wide)
    D = P.toarray() if sparse else P
    g = rng.normal(size=S) * scale
    v0 = rng.normal(size=S) * scale
    ref = v0.copy()
    for _ in range(k):
        ref = g + gamma * (D @ ref)
    got, done = sweeps(*operands(P), sparse, g, gamma, v0, k, -1.0)
    assert done == k
    tol = 4 * (S + 2) * 2.0**-53 * k * (np.abs(g).max() + np.abs(v0).max() + np.abs(ref).max())
    assert np.abs(got - ref).max() <= tol
    # the early stop: a cut that the first sweep already meets stops after it
    one, done1 = sweeps(*operands(P), sparse, g, gamma, v0, max(k, 1), np.inf)
    assert done1 == 1
    np.testing.assert_allclose(one, g + gamma * (D @ v0), rtol=0,
                               atol=4 * (S + 2) * 2.0**-53 * (np.abs(g).max()
                                                              + np.abs(v0).max()))


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 30),
       gamma=st.sampled_from([0.5, 0.99, 0.999]), sparse=st.booleans(),
       transpose=st.booleans(), wide=st.booleans())
def test_a_gmres_cycle_long_enough_solves_the_system(seed, S, gamma, sparse, transpose,
                                                      wide):
    """A cycle of S iterations (a Krylov space that holds the answer) from x = 0, asked
    for a residual of 1e-13 |b|, returns the solution of numpy's LU of I - gamma P (or
    its transpose) within the conditioning of the system; a cycle from the solution
    itself does nothing (0 iterations, x returned)."""
    rng = np.random.default_rng(seed)
    P = _kernel(seed, S, sparse, wide)
    D = P.toarray() if sparse else P
    M = np.eye(S) - gamma * (D.T if transpose else D)
    b = rng.normal(size=S)
    ref = np.linalg.solve(M, b)
    dinv = 1.0 / (1.0 - gamma * np.diagonal(D))
    target = 1e-13 * np.abs(b).max()
    x, k = gmres_cycle(*operands(P), sparse, transpose, gamma, b, np.zeros(S), dinv, S,
                       target)
    assert 1 <= k <= S
    cond = np.linalg.cond(M, 1)
    assert np.abs(x - ref).max() <= cond * 1e-11 * np.abs(ref).max() + 1e-300
    same, k0 = gmres_cycle(*operands(P), sparse, transpose, gamma, b, ref, dinv, S,
                           1e-8 * np.linalg.norm(b))  # (ref's residual: ~1e-13 |b|)
    assert k0 == 0 and same is ref
