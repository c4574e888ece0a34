"""The three domains of the paper with their training settings.

``paper_domain(name)`` gives the training model of ``name`` in :data:`PAPER_DOMAINS`
with the defaults of ``docs/domains.md``: Inventory Management (mu = S/4, sigma = S/6,
economic revenue, reference demand discretisation), Safe Navigation 1 (p_success = 0.8,
reference cost layout) and Safe Navigation 2 (p_success = 1.0).
"""

from __future__ import annotations

from .._checks import check_choice
from ..core.model import TabularCMDP
from ..names import ESTIMATION_EPISODES, INITIAL_MULTIPLIER, PAPER_DOMAINS, TEST_SUITES
from .inventory import inventory
from .navigation import safe_navigation_1, safe_navigation_2

__all__ = [
    "ESTIMATION_EPISODES",
    "INITIAL_MULTIPLIER",
    "PAPER_ALPHA_RANGES",
    "PAPER_DOMAINS",
    "TEST_SUITES",
    "paper_domain",
]

#: Ranges of the Hoeffding radius alpha(s, a) reported by the paper after estimation.
PAPER_ALPHA_RANGES = {
    "inventory": (0.3, 0.9),
    "nav1": (0.25, 0.7),
    "nav2": (0.03, 0.085),
}


def paper_domain(name: str, gamma: float = 0.99, *, horizon="paper") -> TabularCMDP:
    """The training model of the paper's domain ``name`` ("inventory", "nav1", "nav2").

    ``horizon``: ``"paper"`` (default) keeps the domain's T (100, 200, 100); an int
    replaces it; None gives a model without a horizon.
    """
    check_choice(name, "paper domain", PAPER_DOMAINS)
    kw = {} if isinstance(horizon, str) and horizon == "paper" else {"horizon": horizon}
    if name == "inventory":
        return inventory(gamma=gamma, **kw)
    if name == "nav1":
        return safe_navigation_1(gamma=gamma, **kw)
    return safe_navigation_2(gamma=gamma, **kw)
