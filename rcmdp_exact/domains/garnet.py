r"""Garnet models: seeded random CMDPs for tests and benchmarks.

A Garnet ("generic average reward non-stationary environment test-bench", Archibald
et al. 1995) with S states, A actions and branching factor b draws, for every
:math:`(s, a)`, b distinct next states uniformly without replacement and their
probabilities from a flat Dirichlet(1, ..., 1).  Rewards and the K costs are uniform on
[0, 1], per transition :math:`(s, a, s')` by default.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_int, check_real, rng_from
from ..model import TabularCMDP

__all__ = ["garnet"]


def garnet(
    n_states: int,
    n_actions: int,
    branching: int,
    n_constraints: int = 1,
    seed=None,
    gamma: float = 0.9,
    next_state_dependent: bool = True,
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
        R (S, A) and C (S, A, K).

    Returns
    -------
    TabularCMDP
        Built by :meth:`TabularCMDP.from_outcomes` (``outcomes`` (S, A, b) holds the
        drawn next states); p0 uniform over the states; budgets
        :math:`d_k = 0.5 / (1 - \gamma)` (the discounted cost of a mean cost of 1/2
        per step) when :math:`\gamma < 1`, else 0.5; no horizon, no terminal state.
    """
    S = check_int(n_states, "n_states", 1)
    A = check_int(n_actions, "n_actions", 1)
    b = check_int(branching, "branching", 1, S)
    K = check_int(n_constraints, "n_constraints", 0)
    g = check_real(gamma, "gamma", 0.0, 1.0)
    rng = rng_from(seed)
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
    d = np.full(K, 0.5 / (1.0 - g) if g < 1.0 else 0.5)
    return TabularCMDP.from_outcomes(
        nxt,
        prob,
        R,
        C,
        d=d,
        gamma=g,
        p0=np.full(S, 1.0 / S),
        name=f"garnet(S={S}, A={A}, b={b}, K={K})",
    )
