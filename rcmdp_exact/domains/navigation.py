r"""Safe Navigation 1 and 2: a 5x5 grid from (0, 0) to the terminal goal (4, 4).

Cells and moves
---------------
The cells are the nodes of ``networkx.grid_2d_graph(5, 5)``; cell :math:`(x, y)` is
state :math:`s = 5x + y` (the graph's sorted node order, see :func:`grid_state` and
:func:`grid_xy`), so the start (0, 0) is state 0 and the goal (4, 4) is state 24.
The four actions are the offsets

====== ========= ==========================
action offset    meaning
====== ========= ==========================
0      (-1, 0)   left  (x - 1)
1      (+1, 0)   right (x + 1)
2      (0, +1)   up    (y + 1)
3      (0, -1)   down  (y - 1)
====== ========= ==========================

and every state-action pair has the same five *outcomes* (the paper's Von Neumann
neighbourhood :math:`\mathcal{N}(s)`): outcome 0 is the offset (0, 0) (stay) and
outcomes 1..4 are the four moves in action order.  A move is legal when it follows an
edge of the grid graph; an illegal move (through a wall) leaves the agent where it is,
so two outcomes can reach the same cell.  ``model.outcomes[s, a, o]`` holds the next
state of outcome ``o``; in the terminal goal every outcome is the goal itself, so that
any distribution over outcomes keeps the goal absorbing.

Dynamics
--------
With probability :math:`p` (``p_success``) the intended move happens, otherwise the
agent stays:

.. math::

    P(s' \mid s, a) = p\,[s' = \mathrm{move}(s, a)] + (1 - p)\,[s' = s].

Test perturbations replace the outcome of a success or of a failure per (s, a)
(:func:`safe_navigation`'s ``success_outcome`` and ``failure_outcome``).

Reward and cost
---------------
The reward is :math:`R(s, a, s') = -1` for every step taken outside the goal (the
optimum with certain moves is -8).  The cost is paid on the cell *entered*,
:math:`C(s, a, s') = c(s')`, also when a failed move keeps the agent on a cost cell.
The goal is absorbing and earns nothing.

Safe Navigation 1: cost 1.0 on the reference layout (1,0), (1,1), (1,2), (1,3), (3,2),
(3,3), (3,4) (default) or the paper's figure layout without (1,3) (``"paper"``);
budget d = 3.0, horizon T = 200, training ``p_success`` = 0.8.
Safe Navigation 2: cost 0.1 on (1,0), (1,1), (1,2), (2,2), (3,2), (3,3), (3,4); cost
1.0 on (0,4), (1,4), (3,0), (4,0); d = 0.4, T = 100, training ``p_success`` = 1.0.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._checks import (
    as_float_array,
    check_choice,
    check_indices,
    check_int,
    check_real,
    check_shape,
)
from ..core.model import TabularCMDP, check_model
from ..names import NAV1_COST_LAYOUTS

__all__ = [
    "ACTION_OFFSETS",
    "GOAL",
    "NAV1_COST_CELLS",
    "NAV1_COST_LAYOUTS",
    "NAV2_GREY_CELLS",
    "NAV2_RED_CELLS",
    "OUTCOME_OFFSETS",
    "START",
    "cell_costs",
    "grid_graph",
    "grid_state",
    "grid_xy",
    "outcome_map",
    "safe_navigation",
    "safe_navigation_1",
    "safe_navigation_2",
    "shortest_path_policy",
]

#: Side of the square grid.
_GRID_SIZE = 5
#: Number of states S = 25.
N_STATES = _GRID_SIZE * _GRID_SIZE
#: Start cell and goal cell.
START = (0, 0)
GOAL = (4, 4)
#: Offsets (dx, dy) of the four actions, in action order.
ACTION_OFFSETS = np.array([[-1, 0], [1, 0], [0, 1], [0, -1]], dtype=np.int64)
#: Offsets of the five outcomes: stay, then the four moves in action order.
OUTCOME_OFFSETS = np.array([[0, 0], [-1, 0], [1, 0], [0, 1], [0, -1]], dtype=np.int64)
ACTION_LABELS = ("(-1,0)", "(+1,0)", "(0,+1)", "(0,-1)")

#: Cost-1.0 cells of Safe Navigation 1 under each named layout.
NAV1_COST_CELLS = {
    "reference": ((1, 0), (1, 1), (1, 2), (1, 3), (3, 2), (3, 3), (3, 4)),
    "paper": ((1, 0), (1, 1), (1, 2), (3, 2), (3, 3), (3, 4)),
}
#: Safe Navigation 2: grey cells (cost 0.1) and red cells (cost 1.0).
NAV2_GREY_CELLS = ((1, 0), (1, 1), (1, 2), (2, 2), (3, 2), (3, 3), (3, 4))
NAV2_RED_CELLS = ((0, 4), (1, 4), (3, 0), (4, 0))


# --------------------------------------------------------------------------- grid
def grid_state(x, y):
    """State index of cell (x, y): :math:`s = 5x + y`.

    Accepts integers or integer arrays of the same shape.

    >>> grid_state(4, 4)
    24
    """
    xa = check_indices(x, "grid coordinate x", _GRID_SIZE, "coordinate")
    ya = check_indices(y, "grid coordinate y", _GRID_SIZE, "coordinate")
    s = xa * _GRID_SIZE + ya
    return int(s) if s.ndim == 0 else s.astype(np.int64)


def grid_xy(s):
    """Cell (x, y) of state ``s`` (inverse of :func:`grid_state`).

    >>> grid_xy(7)
    (1, 2)
    """
    sa = check_indices(s, "state s of the 5x5 grid", N_STATES, "state")
    x, y = np.divmod(sa, _GRID_SIZE)
    if sa.ndim == 0:
        return int(x), int(y)
    return x.astype(np.int64), y.astype(np.int64)


def grid_graph():
    """The grid as ``networkx.grid_2d_graph(5, 5)``: nodes (x, y), edges the legal moves."""
    import networkx as nx

    return nx.grid_2d_graph(_GRID_SIZE, _GRID_SIZE)


@lru_cache(maxsize=1)
def _outcome_map_cached() -> np.ndarray:
    import networkx as nx

    G = grid_graph()
    nodes = sorted(G.nodes)
    cells = np.array(nodes, dtype=np.int64)  # (S, 2), row s is the cell of state s
    if not np.array_equal(cells[:, 0] * _GRID_SIZE + cells[:, 1], np.arange(N_STATES)):
        raise RuntimeError("grid_2d_graph node order does not match s = 5x + y")
    adj = nx.to_numpy_array(G, nodelist=nodes, dtype=np.float64) > 0  # (S, S)
    s = np.arange(N_STATES)[:, None]
    raw = s + OUTCOME_OFFSETS[None, :, 0] * _GRID_SIZE + OUTCOME_OFFSETS[None, :, 1]  # (S, 5)
    in_range = (raw >= 0) & (raw < N_STATES)
    legal = in_range & adj[np.broadcast_to(s, raw.shape), np.clip(raw, 0, N_STATES - 1)]
    out = np.where(legal, raw, s)  # illegal moves (and outcome 0) stay in place
    out.flags.writeable = False
    return out


def outcome_map() -> np.ndarray:
    """Next state of each of the five outcomes from each cell, (S, 5), clipped at walls.

    Outcome 0 stays, outcome ``1 + a`` is the move of action ``a``.  Legal moves are the
    edges of :func:`grid_graph`; a move without an edge stays in place.  (The goal is
    not special here; :func:`safe_navigation` makes every outcome of the goal the goal.)
    """
    return _outcome_map_cached().copy()


def _cells_to_cost(cells, value: float, out: np.ndarray) -> None:
    xy = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    out[grid_state(xy[:, 0], xy[:, 1])] = value


def cell_costs(domain: str, cost_layout: str = "reference") -> np.ndarray:
    """Cost (S,) of entering each cell for ``domain`` in {"nav1", "nav2"}."""
    cost = np.zeros(N_STATES)
    check_choice(domain, "navigation domain", ("nav1", "nav2"))
    if domain == "nav1":
        check_choice(cost_layout, "Safe Navigation 1 cost_layout", NAV1_COST_LAYOUTS,
                     hint=" ('reference': 7 cells, the default; 'paper': the 6 cells of the "
                          "paper's figure)")
        _cells_to_cost(NAV1_COST_CELLS[cost_layout], 1.0, cost)
    elif isinstance(domain, str) and domain == "nav2":
        _cells_to_cost(NAV2_GREY_CELLS, 0.1, cost)
        _cells_to_cost(NAV2_RED_CELLS, 1.0, cost)
    return cost


# --------------------------------------------------------------------------- models
def _check_p_success(p_success) -> float:
    return check_real(p_success, "p_success", 0.0, 1.0,
                      hint=" (the probability that the intended move happens)")


def _check_outcome_choice(arr, name: str) -> np.ndarray:
    """An (S, A) int array of outcome indices 0..4."""
    out = check_indices(arr, name, 5, "outcome index (0 stay, 1..4 the moves)")
    check_shape(out, (N_STATES, ACTION_OFFSETS.shape[0]), name, ("s", "a"))
    return out


def safe_navigation(
    cell_cost,
    *,
    d: float,
    horizon: int | None,
    p_success: float,
    gamma: float = 0.99,
    success_outcome=None,
    failure_outcome=None,
    name: str = "navigation",
) -> TabularCMDP:
    r"""A 5x5 navigation model with the given entering costs and outcome choices.

    Parameters
    ----------
    cell_cost : array (S,) or (S, K)
        Cost of entering each cell, :math:`C(s, a, s') = c(s')`.
    d : float or array (K,)
        Budget(s) of the discounted cost.
    horizon : int or None
        Episode length T (None: no horizon).
    p_success : float in [0, 1]
        Probability of the success outcome.
    gamma : float
        Discount factor.
    success_outcome, failure_outcome : int arrays (S, A), optional
        Outcome index (0 stay, 1..4 the moves in action order) reached on success and
        on failure of ``(s, a)``.  Defaults: the intended move ``1 + a`` and 0 (stay).
    name : str
        Model name.

    Returns
    -------
    TabularCMDP
        S = 25, A = 4, built by :meth:`TabularCMDP.from_outcomes` so ``model.outcomes``
        is the (S, A, 5) outcome map;
        :math:`P(\cdot|s,a) = p\,e_{succ(s,a)} + (1-p)\,e_{fail(s,a)}` over outcomes.
    """
    p = _check_p_success(p_success)
    d = check_real(d, "d", hint=" (the budget of the cost constraint)")
    S, A = N_STATES, ACTION_OFFSETS.shape[0]
    succ = (
        np.broadcast_to(np.arange(1, A + 1), (S, A))
        if success_outcome is None
        else _check_outcome_choice(success_outcome, "success_outcome")
    )
    fail = (
        np.zeros((S, A), dtype=np.int64)
        if failure_outcome is None
        else _check_outcome_choice(failure_outcome, "failure_outcome")
    )
    goal = grid_state(*GOAL)
    outcomes = np.broadcast_to(_outcome_map_cached()[:, None, :], (S, A, 5)).copy()
    outcomes[goal] = goal
    prob = np.zeros((S, A, 5))
    ii, jj = np.indices((S, A))
    np.add.at(prob, (ii, jj, succ), p)
    np.add.at(prob, (ii, jj, fail), 1.0 - p)
    prob[goal] = 0.0
    prob[goal, :, 0] = 1.0
    cost = as_float_array(
        cell_cost, "cell_cost", "give the cost (S,) or (S, K) of entering each cell",
        finite=False,
    )
    if cost.ndim == 1:
        cost = cost[:, None]
    check_shape(cost, (S, cost.shape[-1] if cost.ndim else 1), "cell_cost ((S,) or (S, K))",
                ("s", "k"))
    xy = np.stack(grid_xy(np.arange(S)), axis=1).astype(np.float64)
    return TabularCMDP.from_outcomes(
        outcomes,
        prob,
        -np.ones(S),
        cost,
        d=d,
        gamma=gamma,
        p0=grid_state(*START),
        horizon=horizon,
        terminal=np.arange(S) == goal,
        state_labels=[f"({x},{y})" for x, y in xy.astype(int)],
        action_labels=ACTION_LABELS,
        name=name,
        state_features=xy,
    )


def safe_navigation_1(
    p_success: float = 0.8, cost_layout: str = "reference", gamma: float = 0.99, *,
    horizon: int | None = 200,
) -> TabularCMDP:
    """Safe Navigation 1: cost 1.0 cells, d = 3.0, T = 200, training p_success = 0.8.

    Parameters
    ----------
    p_success : float in [0, 1]
        Probability that the intended move happens (otherwise the agent stays).
    cost_layout : {"reference", "paper"}
        ``"reference"`` (default): the 7 cells (1,0), (1,1), (1,2), (1,3), (3,2), (3,3),
        (3,4) of the published implementation; ``"paper"``: the 6 grey cells of the
        paper's figure, column x=1 for y in 0..2 and column x=3 for y in 2..4.
    gamma : float
        Discount factor (0.99 in the paper).
    horizon : int or None
        Episode length T of the test metric (200 in the paper); None for no horizon.
    """
    cost = cell_costs("nav1", cost_layout)
    p_success = _check_p_success(p_success)
    return safe_navigation(
        cost, d=3.0, horizon=horizon, p_success=p_success, gamma=gamma,
        name=f"nav1 ({cost_layout} layout, p_success={float(p_success):g})",
    )


def safe_navigation_2(p_success: float = 1.0, gamma: float = 0.99, *,
                      horizon: int | None = 100) -> TabularCMDP:
    """Safe Navigation 2: grey cells cost 0.1, red cells 1.0, d = 0.4, T = 100.

    Parameters
    ----------
    p_success : float in [0, 1]
        Probability that the intended move happens (training: 1.0).
    gamma : float
        Discount factor (0.99 in the paper).
    horizon : int or None
        Episode length T of the test metric (100 in the paper); None for no horizon.
    """
    cost = cell_costs("nav2")
    p_success = _check_p_success(p_success)
    return safe_navigation(
        cost, d=0.4, horizon=horizon, p_success=p_success, gamma=gamma,
        name=f"nav2 (p_success={float(p_success):g})",
    )


# --------------------------------------------------------------------------- policies
def shortest_path_policy(model: TabularCMDP | None = None, minimise_cost: bool = False,
                         cost_weight: float = 1000.0) -> np.ndarray:
    r"""Deterministic policy (S,) that follows a shortest path to the goal on the grid.

    Distances to the goal are computed by Dijkstra (networkx) on the directed grid
    graph whose edge :math:`u \to v` has weight :math:`1 + w\,c(v)`, with :math:`c` the
    model's cost of entering :math:`v` summed over constraints and :math:`w` =
    ``cost_weight`` if ``minimise_cost`` else 0.  In each cell the policy takes the
    legal move minimising weight plus remaining distance; ties go to the first action
    in the order left, right, up, down.  With ``minimise_cost`` and a large
    ``cost_weight`` the path has the least total entering cost and, among those, the
    fewest steps (with no cost cell on it when such a path exists).

    Parameters
    ----------
    model : TabularCMDP, optional
        A navigation model (its costs ``C[0, 0, :, :]`` are the entering costs); needed
        only when ``minimise_cost`` is True.
    minimise_cost : bool
        Weigh the entering costs (see above).
    cost_weight : float
        The weight w.
    """
    S = N_STATES
    check_real(cost_weight, "cost_weight", 0.0, hint=" (the weight of the entering costs)")
    if minimise_cost:
        check_model(model)
        check_int(model.n_states, "the number of states of the navigation model given to "
                  "shortest_path_policy(minimise_cost=True)", S, S)
        enter = np.asarray(model.C[0, 0, :, :]).sum(axis=-1)
    else:
        enter = np.zeros(S)
    weight = 1.0 + (cost_weight if minimise_cost else 0.0) * enter
    nxt = _outcome_map_cached()[:, 1:]  # (S, A)
    s_idx = np.broadcast_to(np.arange(S)[:, None], nxt.shape)
    legal = nxt != s_idx
    import networkx as nx

    D = nx.DiGraph()
    D.add_weighted_edges_from(
        zip(nxt[legal].tolist(), s_idx[legal].tolist(), weight[nxt[legal]].tolist(), strict=True)
    )  # reversed edges: v -> u with the weight of entering v from u
    goal = grid_state(*GOAL)
    dist_map = nx.single_source_dijkstra_path_length(D, goal)
    dist = np.full(S, np.inf)
    dist[list(dist_map)] = list(dist_map.values())
    score = np.where(legal, weight[nxt] + dist[nxt], np.inf)
    return np.argmin(score, axis=1).astype(np.int64)
