"""The paper's domains as exact tabular models, their test suites, and Garnet models.

* :func:`safe_navigation_1`, :func:`safe_navigation_2`: the 5x5 grids
  (:mod:`~rcmdp_exact.domains.navigation`);
* :func:`inventory`: Inventory Management (:mod:`~rcmdp_exact.domains.inventory`);
* :func:`perturbations`: the test suites "inventory", "1A", "1B", "2A", "2B" as lists of
  :class:`Setting` (:mod:`~rcmdp_exact.domains.perturbations`);
* :func:`paper_domain`: the training model of "inventory", "nav1" or "nav2";
* :func:`garnet`: seeded random CMDPs;
* :func:`riverswim`, :func:`chain`, :func:`machine_replacement`, :func:`frozen_lake`,
  :func:`cliff_walking`: classic robust-RL benchmarks with a constraint, and
  :func:`halfway_budget`, the budget rule of their benchmarks
  (:mod:`~rcmdp_exact.domains.classic`).

Every number, and the choice made where the paper and its published implementation
differ, is in ``docs/domains.md``.
"""

from .classic import (
    CLASSIC_DOMAINS,
    chain,
    classic_instance,
    cliff_walking,
    cost_levels,
    frozen_lake,
    halfway_budget,
    machine_replacement,
    riverswim,
)
from .garnet import garnet
from .inventory import DEMANDS, REVENUES, inventory, order_up_to_policy
from .navigation import (
    ACTION_OFFSETS,
    GOAL,
    NAV1_COST_CELLS,
    NAV1_COST_LAYOUTS,
    NAV2_GREY_CELLS,
    NAV2_RED_CELLS,
    OUTCOME_OFFSETS,
    START,
    cell_costs,
    grid_graph,
    grid_state,
    grid_xy,
    outcome_map,
    safe_navigation,
    safe_navigation_1,
    safe_navigation_2,
    shortest_path_policy,
)
from .paper import (
    ESTIMATION_EPISODES,
    INITIAL_MULTIPLIER,
    PAPER_ALPHA_RANGES,
    PAPER_DOMAINS,
    TEST_SUITES,
    paper_domain,
)
from .perturbations import (
    N_DRAWS,
    P_SUCCESS_VALUES,
    SIZES_1B,
    SIZES_2B,
    SUITES,
    Setting,
    arrow_offsets,
    draw_1b,
    draw_2b,
    perturbations,
)

__all__ = [
    "ACTION_OFFSETS",
    "CLASSIC_DOMAINS",
    "DEMANDS",
    "ESTIMATION_EPISODES",
    "GOAL",
    "INITIAL_MULTIPLIER",
    "NAV1_COST_CELLS",
    "NAV1_COST_LAYOUTS",
    "NAV2_GREY_CELLS",
    "NAV2_RED_CELLS",
    "N_DRAWS",
    "OUTCOME_OFFSETS",
    "PAPER_ALPHA_RANGES",
    "PAPER_DOMAINS",
    "P_SUCCESS_VALUES",
    "REVENUES",
    "SIZES_1B",
    "SIZES_2B",
    "START",
    "SUITES",
    "TEST_SUITES",
    "Setting",
    "arrow_offsets",
    "cell_costs",
    "chain",
    "classic_instance",
    "cliff_walking",
    "cost_levels",
    "draw_1b",
    "draw_2b",
    "frozen_lake",
    "garnet",
    "grid_graph",
    "grid_state",
    "grid_xy",
    "halfway_budget",
    "inventory",
    "machine_replacement",
    "order_up_to_policy",
    "outcome_map",
    "paper_domain",
    "perturbations",
    "riverswim",
    "safe_navigation",
    "safe_navigation_1",
    "safe_navigation_2",
    "shortest_path_policy",
]
