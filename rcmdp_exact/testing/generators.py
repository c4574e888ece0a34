"""Seeded numpy generators of random models, policies, sets and value vectors.

Part of :mod:`rcmdp_exact.testing` that needs numpy only (no hypothesis): importable
alone, as ``rcmdp_exact.testing.generators``, by code that does not use hypothesis.
Each takes a seed or a ``numpy.random.Generator`` (drawn from in place, so that a
caller can go on drawing from it) and gives the same draws for the same seed.

* :func:`random_cmdp` and :func:`dense_binding_cmdp`: random RCMDPs (continuous values,
  optional outcome maps and terminal states; dense models with binding budgets);
* :func:`skewed_kernel`, :func:`skewed_values` and :func:`skewed_radii`: seeded rows of
  the kind real data gives (masses from 1e-15 to 1e-2 beside large ones, exact zeros,
  values up to 1e6, near ties, radii near 0 and radii that cover the simplex), to test
  an inner solver where friendly random rows never reach (they live in
  :mod:`rcmdp_exact.uncertainty.conformance`, whose check of a set uses them).
"""

from __future__ import annotations

import numpy as np

from .._checks import rng_from
from ..core.evaluation import PolicySystem
from ..core.model import TabularCMDP
from ..uncertainty.conformance import SKEWED_FAMILIES, skewed_kernel, skewed_radii, skewed_values

__all__ = [
    "SKEWED_FAMILIES",
    "dense_binding_cmdp",
    "random_cmdp",
    "skewed_kernel",
    "skewed_radii",
    "skewed_values",
]


def random_cmdp(seed, S: int, A: int, K: int, gamma: float, n_outcomes: int | None = None,
                terminal: bool = False, next_state_dependent: bool = True,
                horizon: int | None = None) -> TabularCMDP:
    """A random RCMDP from a seeded generator (continuous values, no hypothesis).

    Rewards N(0, 1), costs U(0, 1) (per transition, or per pair), budgets U(0, 3), p0
    Dirichlet(1), state features of 1 to 3 columns N(0, 1); transitions
    Dirichlet(0.7), or with ``n_outcomes`` an outcome map of that many outcomes per pair
    (repeated next states allowed, :meth:`~rcmdp_exact.TabularCMDP.from_outcomes`).
    With ``terminal`` the last state is terminal and every pair can reach it.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    """
    rng = rng_from(seed)
    features = rng.normal(size=(S, int(rng.integers(1, 4))))
    kwargs = dict(d=rng.random(K) * 3, gamma=gamma, p0=rng.dirichlet(np.ones(S)),
                  horizon=horizon, state_features=features)
    if terminal:
        kwargs["terminal"] = np.arange(S) == S - 1
    if next_state_dependent:
        R = rng.normal(size=(S, A, S))
        C = rng.random(size=(S, A, S, K))
    else:
        R = rng.normal(size=(S, A))
        C = rng.random(size=(S, A, K))
    if n_outcomes is None:
        P = rng.dirichlet(0.7 * np.ones(S), size=(S, A))
        if terminal:
            P[:S - 1, :, S - 1] += 0.3
            P[S - 1] = 0.0
            P[S - 1, :, S - 1] = 1.0
            P /= P.sum(axis=2, keepdims=True)
        return TabularCMDP(P, R, C, **kwargs)
    out = rng.integers(0, S, size=(S, A, n_outcomes))
    prob = rng.dirichlet(np.ones(n_outcomes), size=(S, A))
    if terminal:
        out[:S - 1, :, 0] = S - 1  # every pair can end the episode
        out[S - 1] = S - 1
    return TabularCMDP.from_outcomes(out, prob, R, C, **kwargs)


def dense_binding_cmdp(seed, magnitudes=(1.0, 10.0)) -> TabularCMDP:
    """A dense random CMDP (not a Garnet) whose budgets bind, from a seed.

    S in 2..5, A in 2..3, K in 1..3, gamma in {0.5, 0.9, 0.95, 0.99}, rewards and costs
    of one magnitude drawn from ``magnitudes`` (value scales up to 10^3 by default),
    transitions Dirichlet(0.2 or 1), p0 a point mass or Dirichlet(1), budgets at 95-100%
    of the costs of a random stochastic policy (a dense solve): feasible, with large
    multipliers often.  The generator of the LP and bracket regression tests.
    """
    rng = rng_from(seed)
    S, A, K = int(rng.integers(2, 6)), int(rng.integers(2, 4)), int(rng.integers(1, 4))
    gamma = float(rng.choice([0.5, 0.9, 0.95, 0.99]))
    mag = float(rng.choice(list(magnitudes)))
    P = rng.dirichlet(np.full(S, rng.choice([0.2, 1.0])), size=(S, A))
    r = mag * rng.uniform(-1, 1, size=(S, A))
    c = mag * rng.uniform(0, 1, size=(S, A, K))
    p0 = np.eye(S)[0] if rng.random() < 0.5 else rng.dirichlet(np.ones(S))
    pi = rng.dirichlet(np.ones(A), size=S)
    P_pi = np.einsum("sa,sat->st", pi, P)
    rhs = np.column_stack([np.einsum("sa,sa->s", pi, r), np.einsum("sa,sak->sk", pi, c)])
    C = PolicySystem(P_pi, gamma).solve(rhs)[:, 1:]
    d = (p0 @ C) * rng.uniform(0.95, 1.0, K)
    return TabularCMDP(P, r, c, d=d, gamma=gamma, p0=p0)
