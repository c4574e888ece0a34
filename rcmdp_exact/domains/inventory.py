r"""Inventory Management (Puterman 2005, sec. 3.2) with a purchasing-limit constraint.

States are stock levels :math:`s \in \{0, \dots, S-1\}` (S = 10), the start is the empty
stock 0, actions are order sizes :math:`a \in \{0, \dots, S-1\}`, truncated to the room
left: :math:`a' = \min(a, S-1-s)`, and :math:`I = s + a'` is the stock after ordering.
The demand :math:`D \sim \mathcal{N}(\mu, \sigma^2)` (training :math:`\mu = S/4`,
:math:`\sigma = S/6`) is discretised to a demand :math:`k \in \{0, 1, \dots\}` and the
next stock is :math:`s' = \max(0, I - k)`.  With :math:`G(k) = \Pr[\text{demand} \le k]`
(and :math:`G(-1) = 0`)

.. math::

    P(s' = j \mid s, a) = G(I - j) - G(I - j - 1) \quad (1 \le j \le I), \qquad
    P(s' = 0 \mid s, a) = 1 - G(I - 1).

Two discretisations are offered, both exact (Normal CDF differences, no sampling):

* ``"reference"`` (default): :math:`G(k) = \Phi(k)`, the model of the published
  implementation: :math:`P(s'=I) = \Phi(0)`, :math:`P(s'=I-k) = \Phi(k) - \Phi(k-1)`,
  :math:`P(s'=0) = 1 - \Phi(I-1)` (the demand is :math:`\max(0, \lceil D \rceil)`);
* ``"rounded"``: the demand is :math:`\mathrm{round}(\max(0, D))`, as in that
  implementation's simulator, so :math:`G(k) = \Phi(k + 1/2)`.

(:math:`\Phi` is the CDF of :math:`\mathcal{N}(\mu, \sigma^2)`; with the training
parameters :math:`P(\text{demand} = 0)` is 0.067 and 0.115 respectively.)

Rewards (purchase 2.49, sale 3.99, holding 0.03 per unit of :math:`I`):

* ``"economic"`` (default): :math:`R(s, a, s') = 3.99 \max(0, I - s') - 2.49 a' - 0.03 I`,
  the units sold being :math:`I - s'` (clipped at 0 so that kernels which put mass on
  :math:`s' > I`, as uncertainty sets may, never earn a negative revenue);
* ``"reference"``: :math:`R(s, a, s') = 3.99 s' - 2.49 a' - 0.03 I`, whose expectation is
  the published implementation's reward :math:`3.99\,E[s'] - 2.49 a' - 0.03 I`.

Constraint cost :math:`c(s, a) = \max(0, a' - L(s))` with :math:`L(s) = \mu_0 + \sigma_0`
for :math:`s \le 2` and :math:`L(s) = \mu_0` otherwise, where :math:`\mu_0, \sigma_0` are
the *training* demand parameters (tests change the demand, not the limit).  Budget
d = 6.0, horizon T = 100, no terminal state.
"""

from __future__ import annotations

import numpy as np

from .._checks import as_float_array, check_choice, check_int, check_real, check_sizes
from ..core.model import TabularCMDP
from ..names import DEMANDS, REVENUES

__all__ = [
    "DEMANDS",
    "REVENUES",
    "inventory",
    "order_up_to_policy",
]

_PURCHASE_COST = 2.49
_SALE_PRICE = 3.99
_HOLDING_COST = 0.03
#: Stock levels s <= LOW_STOCK use the higher purchasing limit mu + sigma.
LOW_STOCK = 2


def _check_normal(mu, sigma, what: str, prefix: str = "") -> tuple[float, float]:
    return (check_real(mu, f"{prefix}mu (of {what})"),
            check_real(sigma, f"{prefix}sigma (of {what})", 0.0, low_open=True))


def _demand_cdf(k, mu: float, sigma: float, demand: str = "reference") -> np.ndarray:
    r""":math:`G(k) = \Pr[\text{demand} \le k]` of the discretised demand, 0 for k < 0.

    ``"reference"``: :math:`\Phi(k)`; ``"rounded"``: :math:`\Phi(k + 1/2)`, with
    :math:`\Phi` the CDF of :math:`\mathcal{N}(\mu, \sigma^2)`.
    """
    check_choice(demand, "demand discretisation", DEMANDS,
                 hint=" ('reference': Phi(k) - Phi(k-1), the default; 'rounded': "
                      "round(max(0, D)))")
    mu, sigma = _check_normal(mu, sigma, "the demand distribution")
    k = as_float_array(k, "k", "give demand levels as numbers", finite=False)
    from scipy.special import ndtr  # here: not imported by every start

    shift = 0.0 if demand == "reference" else 0.5
    return np.where(k < 0, 0.0, ndtr((k + shift - mu) / sigma))


def inventory(
    mu: float | None = None,
    sigma: float | None = None,
    revenue: str = "economic",
    demand: str = "reference",
    gamma: float = 0.99,
    *,
    n_states: int = 10,
    limit_mu: float | None = None,
    limit_sigma: float | None = None,
    horizon: int | None = 100,
) -> TabularCMDP:
    r"""The Inventory Management CMDP (see the module docstring for the formulas).

    Parameters
    ----------
    mu, sigma : float, optional
        Demand mean and standard deviation (default S/4 and S/6, the training values).
    revenue : {"economic", "reference"}
        Revenue term: 3.99 times the units sold (default), or 3.99 times the next stock
        as in the published implementation.
    demand : {"reference", "rounded"}
        Discretisation of the Normal demand (default: the published model's
        :math:`\Phi(k) - \Phi(k-1)`).
    gamma : float
        Discount factor (0.99).
    n_states : int
        S, the number of stock levels and of order sizes (10 in the paper).
    limit_mu, limit_sigma : float, optional
        The demand parameters of the purchasing limit L(s) (default S/4 and S/6: tests
        keep the training limit).
    horizon : int or None
        Episode length T of the test metric (100 in the paper); None for no horizon.

    Returns
    -------
    TabularCMDP
        S = A = n_states, K = 1, d = 6.0, horizon T, start 0, no terminal state;
        ``outcomes`` (S, A, S) is ``arange(S)`` in every row and ``state_features``
        (S, 1) the stock level.
    """
    check_choice(revenue, "revenue", REVENUES,
                 hint=" ('economic': 3.99 x units sold, the default; 'reference': 3.99 x "
                      "E[s'] of the published code)")
    S = check_int(n_states, "n_states", 1)
    # P (S, A = S, S) and the arrays of the same shape that build it
    check_sizes(8 * 4 * S**3, {"n_states": S}, "transitions (S, S, S) and their terms")
    mu = S / 4 if mu is None else mu
    sigma = S / 6 if sigma is None else sigma
    limit_mu = S / 4 if limit_mu is None else limit_mu
    limit_sigma = S / 6 if limit_sigma is None else limit_sigma
    mu, sigma = _check_normal(mu, sigma, "the demand distribution")
    limit_mu, limit_sigma = _check_normal(limit_mu, limit_sigma, "the purchasing limit",
                                          "limit_")

    s = np.arange(S)[:, None]
    a = np.arange(S)[None, :]
    order = np.minimum(a, S - 1 - s)  # (S, A) truncated order a'
    I = (s + order).astype(np.float64)  # (S, A) stock after ordering
    j = np.arange(S, dtype=np.float64)[None, None, :]  # next stock s'
    k = I[:, :, None] - j  # demand that leads to s' = j
    P = np.where(
        (j >= 1) & (j <= I[:, :, None]),
        _demand_cdf(k, mu, sigma, demand) - _demand_cdf(k - 1, mu, sigma, demand),
        0.0,
    )
    P[:, :, 0] = 1.0 - _demand_cdf(I - 1, mu, sigma, demand)

    fixed = -_PURCHASE_COST * order - _HOLDING_COST * I  # (S, A)
    if revenue == "economic":
        income = _SALE_PRICE * np.maximum(0.0, I[:, :, None] - j)
    else:
        income = _SALE_PRICE * np.broadcast_to(j, (S, S, S))
    R = fixed[:, :, None] + income
    limit = np.where(np.arange(S) <= LOW_STOCK, limit_mu + limit_sigma, limit_mu)
    C = np.maximum(0.0, order - limit[:, None])[:, :, None]  # (S, A, 1)

    outcomes = np.broadcast_to(np.arange(S), (S, S, S))
    return TabularCMDP.from_outcomes(
        outcomes,
        P,
        R,
        C,
        d=[6.0],
        gamma=gamma,
        p0=0,
        horizon=horizon,
        state_labels=[f"stock {i}" for i in range(S)],
        action_labels=[f"order {i}" for i in range(S)],
        cost_labels=["purchasing limit"],
        name=f"inventory (mu={mu:.4g}, sigma={sigma:.4g}, revenue={revenue}, demand={demand})",
        state_features=np.arange(S, dtype=np.float64)[:, None],
    )


def order_up_to_policy(level: int, n_states: int = 10) -> np.ndarray:
    r"""Deterministic policy (S,) ordering :math:`\max(0, \text{level} - s)` units."""
    S = check_int(n_states, "n_states", 1)
    check_sizes(8 * S, {"n_states": S}, "the policy (S,)")
    check_int(level, "order-up-to level (a stock level)", 0, S - 1)
    return np.maximum(0, int(level) - np.arange(n_states)).astype(np.int64)
