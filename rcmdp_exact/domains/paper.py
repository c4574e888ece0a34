"""The three domains of the paper with their training settings.

``paper_domain(name)`` gives the training model of ``name`` in :data:`PAPER_DOMAINS`
with the defaults of ``docs/domains.md``: Inventory Management (mu = S/4, sigma = S/6,
economic revenue, reference demand discretisation), Safe Navigation 1 (p_success = 0.8,
reference cost layout) and Safe Navigation 2 (p_success = 1.0).
"""

from __future__ import annotations

from .._checks import check_choice
from ..model import TabularCMDP
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

#: Names of the paper's domains.
PAPER_DOMAINS = ("inventory", "nav1", "nav2")

#: Episodes of the uniform random policy in the model-estimation phase: the paper's
#: numbers and the published implementation's defaults.
ESTIMATION_EPISODES = {
    "inventory": {"paper": 100, "reference": 10},
    "nav1": {"paper": 100, "reference": 20},
    "nav2": {"paper": 10_000, "reference": 10_000},
}

#: Ranges of the Hoeffding radius alpha(s, a) reported by the paper after estimation.
PAPER_ALPHA_RANGES = {
    "inventory": (0.3, 0.9),
    "nav1": (0.25, 0.7),
    "nav2": (0.03, 0.085),
}

#: Initial Lagrange multiplier of the paper's learners (and the lam of ``rcmdp verify``):
#: 50 for Inventory Management, 1 for the navigation grids (Appendix D).
INITIAL_MULTIPLIER = {"inventory": 50.0, "nav1": 1.0, "nav2": 1.0}

#: The test suites of each domain (names for :func:`~rcmdp_exact.domains.perturbations`).
TEST_SUITES = {"inventory": ("inventory",), "nav1": ("1A", "1B"), "nav2": ("2A", "2B")}


def paper_domain(name: str, gamma: float = 0.99) -> TabularCMDP:
    """The training model of the paper's domain ``name`` ("inventory", "nav1", "nav2")."""
    check_choice(name, "paper domain", PAPER_DOMAINS)
    if name == "inventory":
        return inventory(gamma=gamma)
    if name == "nav1":
        return safe_navigation_1(gamma=gamma)
    return safe_navigation_2(gamma=gamma)
