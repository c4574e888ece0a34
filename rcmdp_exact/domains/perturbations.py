r"""The paper's test suites as lists of models (:class:`Setting`).

============ =========================================================================
suite        settings
============ =========================================================================
"inventory"  9 demand settings :math:`\mu \in \{S/6, S/4, S/3\}` x
             :math:`\sigma \in \{S/8, S/6, S/4\}`, purchasing limit of the training
             :math:`\mu_0 = S/4, \sigma_0 = S/6`
"1A", "2A"   ``p_success`` in {0.6, 0.7, 0.8, 0.9, 1.0} (Safe Navigation 1 / 2)
"1B"         Safe Navigation 1, ``p_success`` = 0.8; for N in {5, 10, 20, 50, 100}, 50
             draws of N of the 100 state-action pairs without replacement, each drawn
             pair given an outcome drawn uniformly from the 5 outcomes, reached when the
             move fails (``offset_on="failure"``, the published implementation, default)
             or when it succeeds (``offset_on="success"``, the paper's text)
"2B"         Safe Navigation 2, ``p_success`` = 0.5; for N in {5, 10, 15, 20, 25}, 50
             draws of N of the 25 states; in a drawn state a failed move follows the
             worst-case arrow (:func:`arrow_offsets`), elsewhere it stays
============ =========================================================================

Randomness: draw ``j`` of size ``N`` uses its own generator
``numpy.random.default_rng([seed, suite, N, j])`` (suite 1 for 1B, 2 for 2B), so a draw
is reproducible bit for bit from ``(seed, N, j)`` alone, whatever else is drawn.
Perturbations of the goal's pairs have no effect: the goal stays absorbing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import check_choice, check_int, check_limit
from .._progress import progress_default, tqdm
from ..core.model import TabularCMDP
from ..names import OFFSET_ON, SUITES
from .inventory import inventory
from .navigation import (
    ACTION_OFFSETS,
    N_STATES,
    OUTCOME_OFFSETS,
    cell_costs,
    grid_xy,
    safe_navigation,
    safe_navigation_1,
    safe_navigation_2,
)

__all__ = [
    "N_DRAWS",
    "P_SUCCESS_VALUES",
    "SIZES_1B",
    "SIZES_2B",
    "SUITES",
    "Setting",
    "arrow_offsets",
    "draw_1b",
    "draw_2b",
    "perturbations",
]

#: ``p_success`` values of tests 1A and 2A.
P_SUCCESS_VALUES = (0.6, 0.7, 0.8, 0.9, 1.0)
#: Numbers N of perturbed state-action pairs (1B) and of perturbed states (2B).
SIZES_1B = (5, 10, 20, 50, 100)
SIZES_2B = (5, 10, 15, 20, 25)
#: Draws per N in tests 1B and 2B.
N_DRAWS = 50
#: Demand settings of the inventory test: mu = S / k and sigma = S / k for these k
#: (S / k rather than S * (1/k), so that the setting S/4, S/6 is the training model
#: bit for bit).
_INVENTORY_MU_DIVISORS = (6, 4, 3)
_INVENTORY_SIGMA_DIVISORS = (8, 6, 4)
P_SUCCESS_1B = 0.8
P_SUCCESS_2B = 0.5


@dataclass(frozen=True)
class Setting:
    """One test setting: a model with a label and the group it is reported in.

    Attributes
    ----------
    label : str
        Unique name within its suite (e.g. ``"N=5 #3"``).
    model : TabularCMDP
        The test dynamics.
    group : str
        The group whose settings are averaged together (e.g. ``"N=5"``).
    info : dict
        The parameters of the setting (``p_success``, ``mu``, ``sigma``, the drawn
        ``pairs`` / ``states`` and ``outcomes``, ``seed``, ...), JSON-friendly.
    """

    label: str
    model: TabularCMDP
    group: str
    info: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- 2B arrows
def arrow_offsets() -> np.ndarray:
    """The worst-case arrows of test 2B as offsets (S, 2), row s for cell grid_xy(s).

    By row y (x is the column): y=0: (+1,0) if x<3 else (0,0); y=1: (0,-1);
    y=2: (-1,0); y=3: (0,+1) if x<2 else (-1,0); y=4: (0,0) if x<2 else (-1,0).
    A move into a wall (x=0 at y=2) stays in place.
    """
    x, y = grid_xy(np.arange(N_STATES))
    cases = [  # (condition, offset), first match wins
        ((y == 0) & (x < 3), (1, 0)),
        (y == 0, (0, 0)),
        (y == 1, (0, -1)),
        (y == 2, (-1, 0)),
        ((y == 3) & (x < 2), (0, 1)),
        (y == 3, (-1, 0)),
        ((y == 4) & (x < 2), (0, 0)),
        (y == 4, (-1, 0)),
    ]
    conds = [c for c, _ in cases]
    dx = np.select(conds, [o[0] for _, o in cases])
    dy = np.select(conds, [o[1] for _, o in cases])
    return np.stack([dx, dy], axis=1).astype(np.int64)


def _offset_to_outcome(offsets: np.ndarray) -> np.ndarray:
    """Outcome index (0..4) of each offset row (n, 2)."""
    match = (offsets[:, None, :] == OUTCOME_OFFSETS[None, :, :]).all(axis=2)
    return np.argmax(match, axis=1).astype(np.int64)


# --------------------------------------------------------------------------- checks
def _check_seed(seed) -> int:
    return check_int(seed, "seed", 0, hint=" (each draw uses default_rng([seed, suite, N, "
                     "draw]))")


# --------------------------------------------------------------------------- 1B / 2B
def draw_1b(n_pairs: int, draw: int, seed: int = 0, offset_on: str = "failure",
            cost_layout: str = "reference", gamma: float = 0.99, *,
            horizon: int | None = 200) -> Setting:
    """Draw ``draw`` of test 1B with N = ``n_pairs`` perturbed state-action pairs.

    The generator ``default_rng([seed, 1, n_pairs, draw])`` draws the pairs (indices
    ``s * 4 + a`` of the 100, without replacement) and then one outcome per pair
    (uniform on 0..4: stay or one of the four moves).  With ``offset_on="failure"`` a
    failed move of a drawn pair reaches that outcome instead of staying; with
    ``"success"`` a successful move does, instead of the intended move.  ``horizon``
    is the models' T (200, as in the paper).
    """
    check_choice(offset_on, "offset_on", OFFSET_ON,
                 hint=" ('failure': the published implementation, default; 'success': the "
                      "paper's text)")
    A = ACTION_OFFSETS.shape[0]
    n = check_int(n_pairs, "n_pairs (N, state-action pairs)", 0, N_STATES * A)
    j = check_int(draw, "draw", 0)
    seed = _check_seed(seed)
    rng = np.random.default_rng([seed, 1, n, j])
    pairs = np.sort(rng.choice(N_STATES * A, size=n, replace=False)).astype(np.int64)
    outs = rng.integers(0, OUTCOME_OFFSETS.shape[0], size=n).astype(np.int64)
    s, a = np.divmod(pairs, A)
    choice = np.zeros((N_STATES, A), dtype=np.int64) if offset_on == "failure" else (
        np.broadcast_to(np.arange(1, A + 1), (N_STATES, A)).copy()
    )
    choice[s, a] = outs
    kw = {"failure_outcome" if offset_on == "failure" else "success_outcome": choice}
    model = safe_navigation(
        cell_costs("nav1", cost_layout), d=3.0, horizon=horizon, p_success=P_SUCCESS_1B,
        gamma=gamma, name=f"nav1 test 1B N={n} #{j} (offset on {offset_on})", **kw,
    )
    info = {
        "suite": "1B", "N": n, "draw": j, "seed": seed, "p_success": P_SUCCESS_1B,
        "offset_on": offset_on, "cost_layout": cost_layout,
        "pairs": pairs.tolist(), "outcomes": outs.tolist(),
    }
    return Setting(label=f"N={n} #{j}", model=model, group=f"N={n}", info=info)


def draw_2b(n_states: int, draw: int, seed: int = 0, gamma: float = 0.99, *,
            horizon: int | None = 100) -> Setting:
    """Draw ``draw`` of test 2B with N = ``n_states`` states following the arrows.

    The generator ``default_rng([seed, 2, n_states, draw])`` draws the states without
    replacement; in them a failed move (probability 0.5) follows the arrow of
    :func:`arrow_offsets`, elsewhere it stays.  ``horizon`` is the models' T (100, as
    in the paper).
    """
    n = check_int(n_states, "n_states (N, states)", 0, N_STATES)
    j = check_int(draw, "draw", 0)
    seed = _check_seed(seed)
    rng = np.random.default_rng([seed, 2, n, j])
    states = np.sort(rng.choice(N_STATES, size=n, replace=False)).astype(np.int64)
    arrow = _offset_to_outcome(arrow_offsets())  # (S,)
    A = ACTION_OFFSETS.shape[0]
    fail = np.zeros((N_STATES, A), dtype=np.int64)
    fail[states] = arrow[states, None]
    model = safe_navigation(
        cell_costs("nav2"), d=0.4, horizon=horizon, p_success=P_SUCCESS_2B, gamma=gamma,
        failure_outcome=fail, name=f"nav2 test 2B N={n} #{j}",
    )
    info = {"suite": "2B", "N": n, "draw": j, "seed": seed, "p_success": P_SUCCESS_2B,
            "states": states.tolist()}
    return Setting(label=f"N={n} #{j}", model=model, group=f"N={n}", info=info)


# --------------------------------------------------------------------------- suites
def perturbations(
    name: str,
    *,
    seed: int = 0,
    n_draws: int = N_DRAWS,
    offset_on: str = "failure",
    cost_layout: str = "reference",
    revenue: str = "economic",
    demand: str = "reference",
    gamma: float = 0.99,
    progress=None,
    horizon="paper",
) -> list[Setting]:
    """The test settings of suite ``name`` in {"inventory", "1A", "1B", "2A", "2B"}.

    Parameters
    ----------
    name : str
        The suite (see the module docstring).
    seed : int
        Seed of the random draws of 1B and 2B (ignored by the other suites).
    n_draws : int
        Draws per N in 1B and 2B (50 in the paper).
    offset_on : {"failure", "success"}
        1B only: when the drawn outcome replaces the usual one (default "failure").
    cost_layout : {"reference", "paper"}
        Safe Navigation 1 cost layout (1A, 1B).
    revenue, demand : str
        Inventory variants (see :func:`~rcmdp_exact.domains.inventory`).
    gamma : float
        Discount factor of the models.
    progress : bool or None
        Show a tqdm progress bar while the models are built (None: when standard error
        is a terminal).
    horizon : "paper", int or None
        The models' T: ``"paper"`` (default) keeps the domain's (100 for inventory and
        Safe Navigation 2, 200 for Safe Navigation 1); an int replaces it; None gives
        models without a horizon.

    Returns
    -------
    list of Setting
        In the order of the suite's parameters (N ascending, then draw index).
    """
    check_choice(name, "test suite", SUITES)
    nd = check_limit(n_draws, "n_draws (draws per N)", "draws", 0)
    _check_seed(seed)
    kw = {} if isinstance(horizon, str) and horizon == "paper" else {"horizon": horizon}
    out: list[Setting] = []
    if name == "inventory":
        S = 10
        for km in _INVENTORY_MU_DIVISORS:
            for ks in _INVENTORY_SIGMA_DIVISORS:
                mu, sigma = S / km, S / ks
                model = inventory(mu, sigma, revenue=revenue, demand=demand, gamma=gamma,
                                  **kw)
                label = f"mu=S/{km}, sigma=S/{ks}"
                out.append(Setting(label, model, label, {
                    "suite": "inventory", "mu": mu, "sigma": sigma, "revenue": revenue,
                    "demand": demand,
                }))
        return out
    if name in ("1A", "2A"):
        for p in P_SUCCESS_VALUES:
            model = (safe_navigation_1(p, cost_layout=cost_layout, gamma=gamma, **kw)
                     if name == "1A" else safe_navigation_2(p, gamma=gamma, **kw))
            label = f"p_success={p:g}"
            info = {"suite": name, "p_success": p}
            if name == "1A":
                info["cost_layout"] = cost_layout
            out.append(Setting(label, model, label, info))
        return out
    sizes = SIZES_1B if name == "1B" else SIZES_2B
    jobs = [(n, j) for n in sizes for j in range(nd)]
    for n, j in tqdm(jobs, desc=f"test {name}", disable=not progress_default(progress)):
        if name == "1B":
            out.append(draw_1b(n, j, seed, offset_on=offset_on, cost_layout=cost_layout,
                               gamma=gamma, **kw))
        else:
            out.append(draw_2b(n, j, seed, gamma=gamma, **kw))
    return out
