"""The compiled loops of the plain solvers (``rcmdp_exact.core._compiled``) against an
independent computation in numpy / scipy: the greedy step of value iteration, the
gather of CSR rows, the sweeps of modified policy iteration, the fused Bellman product,
the float McQueen-Porteus bound of value iteration's centre and one GMRES cycle, on
estimated-looking rows (masses from 1e-15 to 1e-2 beside large ones, exact zeros),
values up to 1e6, ties, NaN, both index types of scipy and gamma near 1."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from helpers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rcmdp_exact.core._compiled import (
    NO_INDEX,
    NO_VALUES,
    bellman_csr,
    csr_parts,
    gmres_cycle,
    greedy_step,
    operands,
    shifted_bound,
    sweeps,
    sweeps_csr,
    take_rows_csr,
)
from rcmdp_exact.core._rounding import ETA, WIDEN, U, gam
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
       wide=st.booleans(), room=st.sampled_from([None, 0, 1, 1000]))
def test_take_rows_csr_equals_scipy_indexing(seed, S, m, wide, room):
    """The gathered rows (repeats allowed) are scipy's ``P[rows]``, entry for entry, in
    the buffers given when they are large enough (``room``: none, too small by one,
    exact, larger) and in new arrays when not; the buffers' contents past nnz are not
    read."""
    P = _kernel(seed, S, True, wide)
    ip, ix, dt = csr_parts(P)
    rows = np.random.default_rng(seed).integers(0, S, size=m).astype(np.int64)
    need = int(np.diff(P.indptr)[rows].sum())
    if room is None:
        idx, val = NO_INDEX.astype(ix.dtype), NO_VALUES
    else:
        n = max(need - 1, 0) if room == 0 else need if room == 1 else need + room
        idx, val = np.full(n, 7, dtype=ix.dtype), np.full(n, np.nan)
    ptr, ind, out, nnz = take_rows_csr(ip, ix, dt, rows, idx, val)
    assert nnz == need
    assert (ind is idx) == (idx.shape[0] >= need)
    got = sp.csr_array((out[:nnz], ind[:nnz].astype(np.int64), ptr.astype(np.int64)),
                       shape=(m, S))
    np.testing.assert_array_equal(got.toarray(), P.toarray()[rows])


def _sweep(P, sparse, A, actions, g, gamma, v0, k, cut):
    """The compiled sweeps of the policy ``actions`` on the (S*A, S) P: dense read in
    place, CSR gathered first."""
    S = v0.shape[0]
    rows = np.arange(S) * A + actions
    bufs = (np.empty(S), np.empty(S))
    if not sparse:
        return sweeps(P, rows, g, gamma, v0, k, cut, *bufs)
    ip, ix, dt = csr_parts(P)
    ptr, ind, val, _ = take_rows_csr(ip, ix, dt, rows, NO_INDEX.astype(ix.dtype),
                                     NO_VALUES)
    return sweeps_csr(ptr, ind, val, g, gamma, v0, k, cut, *bufs)


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 15), A=st.integers(1, 3),
       k=st.integers(0, 30), gamma=st.sampled_from([0.0, 0.5, 0.99, 0.9999]),
       sparse=st.booleans(), wide=st.booleans(), scale=st.sampled_from([1e-3, 1.0, 1e6]))
def test_sweeps_equal_the_numpy_loop(seed, S, A, k, gamma, sparse, wide, scale):
    """k sweeps v <- g + gamma P_pi v of a policy's rows of an (S*A, S) P (no early
    stop: cut = -1) are the numpy loop up to the rounding of the products (the compiled
    loop may sum a row in another order), and the early stop comes after the first
    sweep whose step has a span <= cut."""
    rng = np.random.default_rng(seed)
    P = _kernel(seed, S * A, sparse, wide)[:, :S] if S * A > 0 else None
    D = (P.toarray() if sparse else P)
    D = D / np.maximum(D.sum(axis=1, keepdims=True), 1.0)  # (sub-)stochastic rows
    P = sp.csr_array(D) if sparse else D
    if sparse and wide:
        P = sp.csr_array((P.data, P.indices.astype(np.int64), P.indptr.astype(np.int64)),
                         shape=P.shape)
    actions = rng.integers(0, A, size=S)
    D_pi = D[np.arange(S) * A + actions]
    g = rng.normal(size=S) * scale
    v0 = rng.normal(size=S) * scale
    ref = v0.copy()
    for _ in range(k):
        ref = g + gamma * (D_pi @ ref)
    got, done = _sweep(P, sparse, A, actions, g, gamma, v0, k, -1.0)
    assert done == k
    tol = 4 * (S + 2) * 2.0**-53 * k * (np.abs(g).max() + np.abs(v0).max() + np.abs(ref).max())
    assert np.abs(got - ref).max() <= tol
    # the early stop: a cut that the first sweep already meets stops after it
    one, done1 = _sweep(P, sparse, A, actions, g, gamma, v0, max(k, 1), np.inf)
    assert done1 == 1
    np.testing.assert_allclose(one, g + gamma * (D_pi @ v0), rtol=0,
                               atol=4 * (S + 2) * 2.0**-53 * (np.abs(g).max()
                                                              + np.abs(v0).max()))


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 15), A=st.integers(1, 4),
       wide=st.booleans(), scale=st.sampled_from([1e-3, 1.0, 1e6]))
def test_bellman_csr_equals_scipy(seed, S, A, wide, scale):
    """g + gamma P v in one compiled pass is scipy's product up to its rounding."""
    rng = np.random.default_rng(seed)
    P = _kernel(seed, S * A, True, wide)[:, :S]
    g, v = rng.normal(size=S * A) * scale, rng.normal(size=S) * scale
    out = np.full(S * A, np.nan)
    bellman_csr(*csr_parts(P), g, 0.99, v, out)
    ref = g + 0.99 * (P @ v)
    assert np.abs(out - ref).max() <= 4 * (S + 2) * U * (np.abs(g).max()
                                                         + np.abs(v).max())


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), S=st.integers(1, 12), A=st.integers(1, 4),
       scale=st.sampled_from([1e-3, 1.0, 1e6]), gamma=st.sampled_from([0.5, 0.999999]),
       ties=st.booleans(), bad=st.sampled_from([None, "q", "w"]))
@example(seed=0, S=1, A=1, scale=1.0, gamma=0.5, ties=False, bad=None)
def test_shifted_bound_equals_the_numpy_formulas(seed, S, A, scale, gamma, ties, bad):
    """The fused pass over q is the numpy computation of value iteration's centre (q
    shifted in place, the rounding bounds of every Q-value, the float McQueen-Porteus
    bounds of _mp_bound) operation for operation: every number equal, on values up to
    1e6, near-ties and a non-finite entry."""
    rng = np.random.default_rng(seed)
    L = 5
    q = rng.normal(size=(S, A)) * scale
    if ties:
        q = np.round(q / scale) * scale
    w0 = q.max(axis=1) + rng.normal(size=S) * scale * 1e-9
    g = rng.normal(size=(S, A)) * scale
    sums = 1.0 - rng.random(S * A) * 1e-15
    sig = sums * (1.0 + 2.0 * gam(L + 2))
    shift = float(rng.normal()) * scale * 1e-6
    v = w0 - shift
    w = v + shift
    vmax = float(np.abs(v).max())
    if bad == "q":
        q[rng.integers(S), rng.integers(A)] = np.inf
    elif bad == "w":
        w[rng.integers(S)] = np.nan
    # the numpy formulas of mdp._iterate_values, _Bellman.q_error and mdp._mp_bound
    gs = gamma * shift * sums.reshape(S, A)
    qw = q + gs
    qerr = (gam(L + 3) * (np.abs(g) + gamma * sig.reshape(S, A) * vmax)
            + 4.0 * (L + 3) * ETA) * WIDEN
    err = (qerr + np.abs(gs) * 2.0 * gam(L + 2) + 2.0 * U * (np.abs(gs) + np.abs(qw))
           + 2.0 * U * np.abs(shift))
    with np.errstate(invalid="ignore"):
        gap = qw - w[:, None]
        e2 = err * WIDEN + 2.0 * U * np.abs(gap)
        upper, lower = (gap + e2) * WIDEN, gap - e2 * WIDEN
    got = q.copy()
    hi, lo, resid, finite = shifted_bound(got, g, sig, sums, gamma, shift, w, vmax,
                                          gam(L + 3), 4.0 * (L + 3) * ETA, gam(L + 2))
    np.testing.assert_array_equal(got, qw)
    assert finite == (bad is None)
    if bad is None:
        assert hi == upper.max()
        assert lo == lower.max(axis=1).min(initial=0.0)
        assert resid == np.abs(gap.max(axis=1)).max()


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
