r"""Garnet models: seeded random CMDPs for tests and benchmarks.

A Garnet ("generic average reward non-stationary environment test-bench", Archibald
et al. 1995) with S states, A actions and branching factor b draws, for every
:math:`(s, a)`, b distinct next states uniformly without replacement and their
probabilities from a flat Dirichlet(1, ..., 1).  Rewards and the K costs are uniform on
[0, 1], per transition :math:`(s, a, s')` by default.

Two draws of the same law:

* **dense** (S*A*S <= :data:`SPARSE_ABOVE` by default): the b next states are the first
  b of a random permutation of the states (an argsort of S*A*S uniform keys), the model
  is a dense (S, A, S) tensor with rewards and costs per transition;
* **sparse** (above that size, or ``sparse=True``): the b next states of every pair are
  drawn in O(S A b) (b uniform draws, repeated entries redrawn until the b states are
  distinct; the complement is drawn when b > S/2), the model is a CSR (S*A, S) matrix,
  and, since a sparse model takes rewards and costs per pair, each is the expectation of
  per-outcome draws: :math:`r(s, a) = \sum_o p_o R_o` with :math:`R_o` uniform on
  [0, 1] for each of the b outcomes (likewise for the costs).  Nothing of size S*A*S is
  built: a Garnet with :math:`10^5` states takes about a second and a few tens of MB.

The two draws use the random stream differently, so the same seed gives different
models in the two modes; each mode gives the same model bit for bit for a given seed.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._checks import InputError, check_int, check_real, check_sizes, rng_from
from ..core.model import TabularCMDP

__all__ = ["SPARSE_ABOVE", "garnet"]

#: ``garnet(sparse=None)`` builds a sparse model when S*A*S exceeds this (2**24 entries,
#: 128 MB per float64 tensor) and the dense model of the permutation draw otherwise.
SPARSE_ABOVE = 2**24


def distinct_draws(rng: np.random.Generator, n_rows: int, n: int, k: int) -> np.ndarray:
    """``n_rows`` independent uniform k-subsets of {0, ..., n-1}, each sorted: (n_rows, k).

    Every row starts with k uniform draws; entries that repeat an earlier one in their
    row are drawn again until the row holds k distinct values.  The procedure commutes
    with any relabelling of {0, ..., n-1}, so the set it returns is uniform over the
    k-subsets.  For k > n/2 the n - k excluded values are drawn instead.  Expected cost
    O(n_rows k log k) when k <= n/2 (each redraw is new with probability >= 1/2).
    """
    if 2 * k > n:
        out_of = distinct_draws(rng, n_rows, n, n - k)
        keep = np.ones((n_rows, n), dtype=bool)
        keep[np.arange(n_rows)[:, None], out_of] = False
        return np.nonzero(keep)[1].reshape(n_rows, k).astype(np.int64)
    x = rng.integers(0, n, size=(n_rows, k))
    while True:
        x.sort(axis=1)
        dup = np.zeros(x.shape, dtype=bool)
        dup[:, 1:] = x[:, 1:] == x[:, :-1]
        m = int(dup.sum())
        if m == 0:
            return x.astype(np.int64)
        x[dup] = rng.integers(0, n, size=m)


def garnet(
    n_states: int,
    n_actions: int,
    branching: int,
    n_constraints: int = 1,
    seed=None,
    gamma: float = 0.9,
    next_state_dependent: bool = True,
    *,
    horizon: int | None = None,
    sparse: bool | None = None,
) -> TabularCMDP:
    r"""A random CMDP with ``branching`` next states per state-action pair.

    Parameters
    ----------
    n_states, n_actions : int
        S >= 1 and A >= 1.
    branching : int
        Number b of distinct next states of every (s, a), 1 <= b <= S.
    n_constraints : int
        K >= 0 cost functions.
    seed : int, numpy.random.Generator or None
        Source of randomness; the same seed gives the same model bit for bit.
    gamma : float
        Discount factor.
    next_state_dependent : bool
        Rewards R (S, A, S) and costs C (S, A, S, K) per transition (default); otherwise
        R (S, A) and C (S, A, K).  A sparse Garnet stores rewards and costs per pair
        either way: with True they are the expectations of per-outcome draws.
    horizon : int, optional
        Episode length T stored in the model (default None: no horizon).
    sparse : bool, optional
        None (default): sparse when S*A*S > :data:`SPARSE_ABOVE` (2**24), dense
        otherwise; True or False forces the mode.  The dense mode builds S*A*S random
        keys (8 bytes each, several copies); see the module docstring for both draws.

    Returns
    -------
    TabularCMDP
        Dense: built by :meth:`TabularCMDP.from_outcomes`; sparse: from a CSR (S*A, S)
        matrix with rewards and costs per pair.  ``outcomes`` (S, A, b) holds the drawn
        next states (sorted by state in the sparse mode); p0 uniform over the states;
        budgets :math:`d_k = 0.5 / (1 - \gamma)` (the discounted cost of a mean cost of
        1/2 per step) when :math:`\gamma < 1`, else 0.5; no terminal state.
    """
    S = check_int(n_states, "n_states", 1)
    A = check_int(n_actions, "n_actions", 1)
    b = check_int(branching, "branching", 1, S)
    K = check_int(n_constraints, "n_constraints", 0)
    g = check_real(gamma, "gamma", 0.0, 1.0)
    T = None if horizon is None else check_int(horizon, "horizon", 1,
                                               hint=" (a number of steps) or None")
    if sparse is not None and not isinstance(sparse, bool | np.bool_):
        raise InputError(f"sparse must be None (automatic), True or False, got {sparse!r}")
    dense = not (sparse or (sparse is None and S * A * S > SPARSE_ABOVE))
    check_sizes(8 * S * A * ((2 + K) * S if dense else 2 * b + 1 + K),
                {"n_states": S, "n_actions": A, "branching": b, "n_constraints": K},
                "transitions, rewards and costs" + (" (dense)" if dense else " (sparse)"))
    rng = rng_from(seed)
    d = np.full(K, 0.5 / (1.0 - g) if g < 1.0 else 0.5)
    name = f"garnet(S={S}, A={A}, b={b}, K={K})"
    if sparse or (sparse is None and S * A * S > SPARSE_ABOVE):
        return _sparse_garnet(S, A, b, K, rng, g, next_state_dependent, d, T, name)
    # b distinct next states per (s, a): the first b of a uniform random permutation
    keys = rng.random((S, A, S))
    nxt = np.argsort(keys, axis=2, kind="stable")[:, :, :b].astype(np.int64)
    prob = rng.dirichlet(np.ones(b), size=(S, A)) if b > 1 else np.ones((S, A, 1))
    if next_state_dependent:
        R = rng.random((S, A, S))
        C = rng.random((S, A, S, K))
    else:
        R = rng.random((S, A))
        C = rng.random((S, A, K))
    return TabularCMDP.from_outcomes(
        nxt,
        prob,
        R,
        C,
        d=d,
        gamma=g,
        p0=np.full(S, 1.0 / S),
        horizon=T,
        name=name,
    )


def _sparse_garnet(S, A, b, K, rng, gamma, next_state_dependent, d, horizon, name):
    """The sparse draw: O(S A b) time and memory, CSR transitions, per-pair R and C."""
    n = S * A
    nxt = distinct_draws(rng, n, S, b)  # (n, b), sorted rows
    prob = rng.dirichlet(np.ones(b), size=n) if b > 1 else np.ones((n, 1))
    if next_state_dependent:
        r = np.einsum("lo,lo->l", prob, rng.random((n, b))).reshape(S, A)
        c = np.einsum("lo,lok->lk", prob, rng.random((n, b, K))).reshape(S, A, K)
    else:
        r = rng.random((S, A))
        c = rng.random((S, A, K))
    P = sp.csr_array((prob.ravel(), nxt.ravel(), np.arange(0, n * b + 1, b)), shape=(n, S))
    return TabularCMDP(P, r, c, d=d, gamma=gamma, p0=np.full(S, 1.0 / S), horizon=horizon,
                       outcomes=nxt.reshape(S, A, b), name=name)
