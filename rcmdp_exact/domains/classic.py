r"""Classic tabular benchmarks of robust reinforcement learning, as constrained models.

Each builder returns a :class:`~rcmdp_exact.TabularCMDP` with one constraint cost and a
budget.  The budget is set by :func:`halfway_budget` for a given uncertainty set (the
rule of issue 30): halfway between the least worst-case cost
:math:`\min_\pi \max_P C(\pi, P)` and the worst-case cost of the unconstrained robust
optimum :math:`\arg\max_\pi \min_P V(\pi, P)`.  Without a set the builders give the
model with the budget ``d`` passed (default: a placeholder of ``1/(1 - gamma)``, the
largest discounted cost of an indicator, which never binds); call
:func:`halfway_budget` (or ``classic_instance``) for the budget of a set.

* :func:`riverswim` -- Strehl and Littman (2008), the numbers of their RiverSwim with
  the rewards scaled as in Osband, Russo and Van Roy (2013); cost: one per upstream
  stroke.
* :func:`chain` -- the chain of Strens (2000) (after Dearden, Friedman and Russell
  1998) with ``n`` states; cost: one per forward step attempted.
* :func:`machine_replacement` -- the machine-replacement MDP of Delage and Mannor (2010)
  (also used by Wiesemann, Kuhn and Rustem 2013); objective: minus the operating cost;
  constraint: the repairs.
* :func:`frozen_lake`, :func:`cliff_walking`, :func:`taxi` -- Gymnasium's toy-text
  tables (FrozenLake-v1, CliffWalking-v1, Taxi-v4), written here from their definitions
  (:func:`frozen_lake_table`, ...: no Gymnasium needed) and read by
  :meth:`~rcmdp_exact.TabularCMDP.from_gymnasium`; cost: holes entered, the cells along
  the cliff entered, the fuel.

References
----------
* A. L. Strehl and M. L. Littman.  An analysis of model-based interval estimation for
  Markov decision processes.  Journal of Computer and System Sciences 74(8):1309-1331,
  2008.
* I. Osband, D. Russo and B. Van Roy.  (More) efficient reinforcement learning via
  posterior sampling.  NeurIPS 2013.
* M. Strens.  A Bayesian framework for reinforcement learning.  ICML 2000.
* R. Dearden, N. Friedman and S. Russell.  Bayesian Q-learning.  AAAI 1998.
* E. Delage and S. Mannor.  Percentile optimization for Markov decision processes with
  parameter uncertainty.  Operations Research 58(1):203-213, 2010.
* W. Wiesemann, D. Kuhn and B. Rustem.  Robust Markov decision processes.  Mathematics
  of Operations Research 38(1):153-183, 2013.
* M. Towers et al.  Gymnasium: a standard interface for reinforcement learning
  environments.  arXiv 2407.17032, 2024 (FrozenLake-v1, CliffWalking-v1).
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    InputError,
    check_choice,
    check_int,
    check_limit,
    check_real,
    check_sizes,
)
from .._result import Result
from ..core.model import TabularCMDP

__all__ = ["CLASSIC_DOMAINS",
           "TIE_RTOL", "chain", "classic_instance",
           "cliff_walking", "cliff_walking_table", "cost_levels", "frozen_lake",
           "frozen_lake_table", "halfway_budget", "machine_replacement",
           "riverswim", "robust_optimal_box", "taxi", "taxi_table"]

#: The builders by name (``classic_instance(name, ...)``).
CLASSIC_DOMAINS = ("riverswim", "chain", "machine_replacement", "frozen_lake",
                   "cliff_walking")


def _budget(d, gamma: float) -> np.ndarray:
    """The budget given, or the placeholder 1/(1 - gamma) (an indicator's largest
    discounted cost: never binding)."""
    return np.atleast_1d(np.asarray(1.0 / (1.0 - gamma) if d is None else d,
                                    dtype=np.float64))


# --------------------------------------------------------------------------- RiverSwim
def _chain_size(n, low: int) -> int:
    """``n`` states of a chain domain (2 actions; P, R and C dense (n, 2, n))."""
    n = check_int(n, "n", low, hint=" (the number of states)")
    check_sizes(8 * 2 * n * n * 3, {"n": n}, "transitions, rewards and costs (n, 2, n)")
    return n


def riverswim(n: int = 6, gamma: float = 0.95, *, upstream: float = 0.35,
              stay: float = 0.6, back: float = 0.05, bank_up: float = 0.6,
              end_back: float = 0.4, left_reward: float = 0.005, right_reward: float = 1.0,
              d=None) -> TabularCMDP:
    r"""RiverSwim (Strehl and Littman 2008) with an effort cost.

    States 0 (the left bank, the start) to n - 1 (the right end, upstream); actions
    0 = swim with the current (left) and 1 = swim upstream (right).

    * Left: moves one state left with probability 1 (state 0 stays).
    * Right, in an interior state: one state right with ``upstream`` = 0.35, stays with
      ``stay`` = 0.6, one state left with ``back`` = 0.05 (Strehl and Littman 2008,
      figure 1); on the left bank (state 0): right with ``bank_up`` = 0.6, stays with
      0.4; at the right end: left with ``end_back`` = 0.4, stays with 0.6 (the numbers of
      the RiverSwim of Osband, Russo and Van Roy 2013).
    * Reward ``left_reward`` = 0.005 for the left action in state 0 and ``right_reward``
      = 1 for the right action in state n - 1 (their 5 and 10,000 scaled as in Osband,
      Russo and Van Roy 2013: 5/1000 and 1).
    * Cost (the constraint): 1 for every upstream stroke, C(s, right) = 1: the
      discounted number of strokes, so a budget limits the effort.

    ``d``: the budget (default a non-binding placeholder; :func:`halfway_budget` sets
    the rule of the benchmarks for a set).
    """
    _chain_size(n, 2)
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    for name, v in (("upstream", upstream), ("stay", stay), ("back", back),
                    ("bank_up", bank_up), ("end_back", end_back)):
        check_real(v, name, 0.0, 1.0)
    check_real(left_reward, "left_reward")
    check_real(right_reward, "right_reward")
    A = 2
    P = np.zeros((n, A, n))
    for s in range(n):
        P[s, 0, max(s - 1, 0)] = 1.0
        if s == 0:
            P[s, 1, 1] += bank_up
            P[s, 1, 0] += 1.0 - bank_up
        elif s == n - 1:
            P[s, 1, s] += 1.0 - end_back
            P[s, 1, s - 1] += end_back
        else:
            P[s, 1, s + 1] += upstream
            P[s, 1, s] += stay
            P[s, 1, s - 1] += back
    R = np.zeros((n, A))
    R[0, 0] = left_reward
    R[n - 1, 1] = right_reward
    C = np.zeros((n, A, 1))
    C[:, 1, 0] = 1.0
    return TabularCMDP(P, R, C, _budget(d, gamma), gamma=gamma, p0=0, normalize=True,
                       name=f"RiverSwim-{n}", action_labels=["left", "right"],
                       cost_labels=["upstream strokes"])


# --------------------------------------------------------------------------- chain
def chain(n: int = 10, gamma: float = 0.95, *, slip: float = 0.2, small: float = 2.0,
          large: float = 10.0, d=None) -> TabularCMDP:
    r"""The chain of Strens (2000) with ``n`` states and an effort cost.

    Strens's chain (after Dearden, Friedman and Russell 1998) has 5 states; here
    ``n`` (default 10).  Actions 0 = "forward" and 1 = "back"; the start is state 0.

    * Forward moves from s to s + 1 (the last state stays); back returns to state 0.
    * With probability ``slip`` = 0.2 the other action's move happens instead.
    * Rewards are on the move made: ``small`` = 2 for every move to state 0 (the back
      move, also from state 0), ``large`` = 10 for the forward move that stays in the
      last state, 0 otherwise (Strens 2000, figure 1).
    * Cost: 1 per forward step attempted, C(s, forward) = 1.

    The optimum walks the whole chain for the large reward; the effort budget makes the
    small reward at the start compete with it.
    """
    _chain_size(n, 2)
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_real(slip, "slip", 0.0, 1.0)
    check_real(small, "small")
    check_real(large, "large")
    A = 2
    P = np.zeros((n, A, n))
    R = np.zeros((n, A, n))
    for s in range(n):
        fwd = min(s + 1, n - 1)
        for a, p_fwd in ((0, 1.0 - slip), (1, slip)):
            P[s, a, fwd] += p_fwd
            P[s, a, 0] += 1.0 - p_fwd
        R[s, :, 0] = small
        if s == n - 1:
            R[s, :, n - 1] = large
    C = np.zeros((n, A, 1))
    C[:, 0, 0] = 1.0
    return TabularCMDP(P, R, C, _budget(d, gamma), gamma=gamma, p0=0, normalize=True,
                       name=f"Chain-{n}", action_labels=["forward", "back"],
                       cost_labels=["forward steps"])


# --------------------------------------------------------------------------- machine
def machine_replacement(n: int = 10, gamma: float = 0.95, *, wear: float = 0.8,
                        repair_fail: float = 0.3, to_r1: float = 0.6, to_r2: float = 0.1,
                        operating_cost: float = 20.0, r1_cost: float = 2.0,
                        r2_cost: float = 10.0, d=None) -> TabularCMDP:
    r"""The machine-replacement MDP of Delage and Mannor (2010) with a repair budget.

    ``n`` states (default 10, as in Delage and Mannor 2010 and Wiesemann et al. 2013):
    the working states 0 to n - 3 (0 = a new machine, the start; n - 3 = worn out),
    then two repair states, R1 = n - 2 (a short repair) and R2 = n - 1 (a long one).
    Actions 0 = do nothing, 1 = repair.

    * Do nothing in a working state: the machine wears to the next state with
      probability ``wear`` = 0.8 and stays with 0.2 (the worn-out state stays).
    * Repair in a working state: R1 with ``to_r1`` = 0.6, R2 with ``to_r2`` = 0.1, and
      with ``repair_fail`` = 0.3 the repair fails and the machine wears as if left
      alone (to the next working state; the worn-out state stays).
    * In R1: do nothing returns a new machine (state 0) with 0.8 and stays with 0.2;
      repair stays in R1.  In R2: do nothing stays; repair moves to R1 with 0.6 and
      stays with 0.4.
    * Operating cost per step in a state: ``operating_cost`` = 20 in the worn-out state,
      ``r1_cost`` = 2 in R1, ``r2_cost`` = 10 in R2, 0 elsewhere; the reward is its
      negative, r(s, a) = -cost(s) (the objective maximised is minus the discounted
      operating cost).
    * Constraint: the repairs, 1 per repair action, C(s, repair) = 1.

    The discount is ours (0.95, the same as :func:`riverswim`'s); Delage and Mannor
    discount more strongly.
    """
    _chain_size(n, 4)
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_real(wear, "wear", 0.0, 1.0)
    for name, v in (("repair_fail", repair_fail), ("to_r1", to_r1), ("to_r2", to_r2)):
        check_real(v, name, 0.0, 1.0)
    if abs(repair_fail + to_r1 + to_r2 - 1.0) > 1e-12:
        raise InputError(f"repair_fail + to_r1 + to_r2 must be 1 (each >= 0), got "
                         f"{repair_fail} + {to_r1} + {to_r2}; give three probabilities "
                         f"of a repair's outcomes that sum to 1")
    for name, v in (("operating_cost", operating_cost), ("r1_cost", r1_cost),
                    ("r2_cost", r2_cost)):
        check_real(v, name)
    A, W = 2, n - 2
    r1, r2 = n - 2, n - 1
    P = np.zeros((n, A, n))
    for s in range(W):
        nxt = min(s + 1, W - 1)
        P[s, 0, nxt] += wear
        P[s, 0, s] += 1.0 - wear
        P[s, 1, nxt] += repair_fail
        P[s, 1, r1] += to_r1
        P[s, 1, r2] += to_r2
    P[r1, 0, 0] = wear
    P[r1, 0, r1] = 1.0 - wear
    P[r1, 1, r1] = 1.0
    P[r2, 0, r2] = 1.0
    P[r2, 1, r1] = to_r1
    P[r2, 1, r2] = 1.0 - to_r1
    cost = np.zeros(n)
    cost[W - 1], cost[r1], cost[r2] = operating_cost, r1_cost, r2_cost
    R = np.repeat(-cost[:, None], A, axis=1)
    C = np.zeros((n, A, 1))
    C[:, 1, 0] = 1.0
    labels = [f"wear {s}" for s in range(W)] + ["R1", "R2"]
    return TabularCMDP(P, R, C, _budget(d, gamma), gamma=gamma, p0=0, normalize=True,
                       name=f"MachineReplacement-{n}", state_labels=labels,
                       action_labels=["do nothing", "repair"], cost_labels=["repairs"])


# --------------------------------------------------------------------------- toy text
class _ToyTextTable:
    """A Gymnasium toy-text table written here, without Gymnasium: what
    :meth:`~rcmdp_exact.TabularCMDP.from_gymnasium` reads of an environment (``P[s][a] =
    [(probability, next_state, reward, terminated), ...]``, ``initial_state_distrib``,
    the sizes of the spaces and the episode length of its registration).  The builders
    below fill it with the numbers of Gymnasium's own code (version 1.x), so the model is
    the one ``from_gymnasium(gymnasium.make(...))`` gives, on a machine without
    Gymnasium and whatever version is installed (``tests/test_classic_domains.py``
    compares the tables entry by entry where Gymnasium is installed)."""

    def __init__(self, n_states: int, n_actions: int, name: str, horizon: int | None):
        from types import SimpleNamespace

        self.P = {s: {a: [] for a in range(n_actions)} for s in range(n_states)}
        self.initial_state_distrib = np.zeros(n_states)
        self.observation_space = SimpleNamespace(n=n_states, shape=(), start=0)
        self.action_space = SimpleNamespace(n=n_actions, shape=(), start=0)
        self.spec = SimpleNamespace(id=name, max_episode_steps=horizon)
        self.unwrapped = self


#: Gymnasium's FrozenLake maps ("S" start, "F" frozen, "H" hole, "G" goal).
_FROZEN_LAKE_MAPS = {
    "4x4": ("SFFF", "FHFH", "FFFH", "HFFG"),
    "8x8": ("SFFFFFFF", "FFFFFFFF", "FFFHFFFF", "FFFFFHFF", "FFFHFFFF", "FHHFFFHF",
            "FHFFHFHF", "FFFHFFFG"),
}


def frozen_lake_table(map: str = "4x4", is_slippery: bool = True,
                      success: float = 1.0 / 3.0) -> _ToyTextTable:
    r"""Gymnasium's FrozenLake-v1 table (map ``map``), written from its definition.

    Actions 0 = left, 1 = down, 2 = right, 3 = up; a move off the grid stays.  Slippery:
    the intended move with ``success`` = 1/3 and each perpendicular one with
    (1 - success) / 2 (Gymnasium 1.x's ``success_rate``; the three outcomes are listed in
    the order (a - 1) mod 4, a, (a + 1) mod 4).  Reward 1 on entering the goal; the goal
    and the holes end the episode (their own rows stay with reward 0); the start is the
    cell "S"; 100 steps per episode (the registration of FrozenLake-v1, also used for
    the 8x8 map here).
    """
    success = check_real(success, "success", 0.0, 1.0,
                         hint=" (the probability of the intended move)")
    desc = np.asarray([list(row) for row in _FROZEN_LAKE_MAPS[map]])
    nrow, ncol = desc.shape
    t = _ToyTextTable(nrow * ncol, 4, "FrozenLake-v1", 100)
    fail = (1.0 - success) / 2.0
    moves = ((0, -1), (1, 0), (0, 1), (-1, 0))  # left, down, right, up as (drow, dcol)
    for row in range(nrow):
        for col in range(ncol):
            s = row * ncol + col
            for a in range(4):
                if desc[row, col] in "GH":
                    t.P[s][a].append((1.0, s, 0, True))
                    continue
                outcomes = [(a - 1) % 4, a, (a + 1) % 4] if is_slippery else [a]
                for b in outcomes:
                    r2 = min(max(row + moves[b][0], 0), nrow - 1)
                    c2 = min(max(col + moves[b][1], 0), ncol - 1)
                    letter = desc[r2, c2]
                    p = (success if b == a else fail) if is_slippery else 1.0
                    t.P[s][a].append((p, r2 * ncol + c2, int(letter == "G"),
                                      bool(letter in "GH")))
    t.initial_state_distrib = (desc == "S").astype(np.float64).ravel()
    t.initial_state_distrib /= t.initial_state_distrib.sum()
    return t


def cliff_walking_table(is_slippery: bool = True) -> _ToyTextTable:
    r"""Gymnasium's CliffWalking-v1 table (4 x 12 cells), written from its definition.

    Actions 0 = up, 1 = right, 2 = down, 3 = left; a move off the grid stays.  The start
    is (3, 0), the goal (3, 11) ends the episode; the cells (3, 1) to (3, 10) are the
    cliff: a move into one earns -100 and puts the agent back on the start (the episode
    goes on); every other move earns -1.  Slippery (``is_slippery``, Gymnasium's
    CliffWalkingSlippery-v1): the moves (a - 1) mod 4, a and (a + 1) mod 4 with 1/3 each.
    No episode length (the registration has none).
    """
    nrow, ncol = 4, 12
    t = _ToyTextTable(nrow * ncol, 4, "CliffWalking-v1", None)
    start = 3 * ncol
    moves = ((-1, 0), (0, 1), (1, 0), (0, -1))  # up, right, down, left
    for s in range(nrow * ncol):
        row, col = divmod(s, ncol)
        for a in range(4):
            outcomes = [(a - 1) % 4, a, (a + 1) % 4] if is_slippery else [a]
            for b in outcomes:
                r2 = min(max(row + moves[b][0], 0), nrow - 1)
                c2 = min(max(col + moves[b][1], 0), ncol - 1)
                if r2 == 3 and 1 <= c2 <= ncol - 2:
                    t.P[s][a].append((1 / len(outcomes), start, -100, False))
                else:
                    t.P[s][a].append((1 / len(outcomes), r2 * ncol + c2, -1,
                                      (r2, c2) == (3, ncol - 1)))
    t.initial_state_distrib[start] = 1.0
    return t


#: Taxi's map: walls "|" between the cells of a row (Gymnasium's ``MAP``).
_TAXI_MAP = ("+---------+", "|R: | : :G|", "| : | : : |", "| : : : : |", "| | : | : |",
            "|Y| : |B: |", "+---------+")
#: Taxi's four stands R, G, Y, B as (row, column).
_TAXI_LOCS = ((0, 0), (0, 4), (4, 0), (4, 3))


def taxi_table(rainy: bool = True, rainy_probability: float = 0.8) -> _ToyTextTable:
    r"""Gymnasium's Taxi-v4 table (Dietterich 2000), written from its definition.

    500 states ``((row * 5 + col) * 5 + passenger) * 4 + destination`` (passenger 4:
    in the taxi); actions 0 = south, 1 = north, 2 = east, 3 = west, 4 = pick-up, 5 =
    drop-off; -1 per step, -10 for a pick-up or drop-off where there is nothing to do,
    +20 for the delivery (which ends the episode).  A drop-off at another stand leaves
    the passenger there (-1).  Walls "|" of :data:`_TAXI_MAP` block east and west moves.
    In the rain (``rainy``, Gymnasium's ``is_rainy``) a move that is possible goes the
    intended way with ``rainy_probability`` = 0.8 and to each side ("left" and "right"
    of the heading) with (1 - 0.8) / 2, a side move blocked by a wall or the border
    staying; a move that is not possible stays with probability 1 split the same way.
    The start: the taxi anywhere, the passenger at a stand other than the destination
    (300 states, uniform); 200 steps per episode.
    """
    rainy_probability = check_real(rainy_probability, "rainy_probability", 0.0, 1.0)
    desc = np.asarray([list(row) for row in _TAXI_MAP])
    t = _ToyTextTable(500, 6, "Taxi-v4", 200)
    side = (1.0 - rainy_probability) / 2.0

    def enc(row, col, pas, dest):
        return ((row * 5 + col) * 5 + pas) * 4 + dest

    def open_east(row, col):
        return desc[1 + row, 2 * col + 2] == ":"

    def open_west(row, col):
        return desc[1 + row, 2 * col] == ":"

    def slide(row, col, dr, dc):  # a side move of the rain
        r2, c2 = min(max(row + dr, 0), 4), min(max(col + dc, 0), 4)
        if (dc == 1 and desc[1 + r2, 2 * c2] != ":") or \
                (dc == -1 and desc[1 + r2, 2 * c2 + 2] != ":"):
            return row, col
        return r2, c2

    # (forward, left, right) of each heading
    heading = {0: ((1, 0), (0, 1), (0, -1)), 1: ((-1, 0), (0, -1), (0, 1)),
               2: ((0, 1), (-1, 0), (1, 0)), 3: ((0, -1), (1, 0), (-1, 0))}
    for row in range(5):
        for col in range(5):
            for pas in range(5):
                for dest in range(4):
                    s = enc(row, col, pas, dest)
                    if pas < 4 and pas != dest:
                        t.initial_state_distrib[s] += 1.0
                    for a in range(6):
                        _taxi_entries(t.P[s][a], row, col, pas, dest, a, rainy,
                                      rainy_probability, side, heading, slide, enc,
                                      open_east, open_west)
    t.initial_state_distrib /= t.initial_state_distrib.sum()
    return t


def _taxi_entries(out, row, col, pas, dest, a, rainy, p_main, side, heading, slide, enc,
                  open_east, open_west):
    """The entries of Taxi's table for one (state, action) (:func:`taxi_table`)."""
    reward, done = -1, False
    n_row, n_col, n_pas = row, col, pas
    here = (row, col)
    possible = ((a == 0 and row < 4) or (a == 1 and row > 0)
                or (a == 2 and open_east(row, col)) or (a == 3 and open_west(row, col)))
    if a == 4:
        if pas < 4 and here == _TAXI_LOCS[pas]:
            n_pas = 4
        else:
            reward = -10
    elif a == 5:
        if pas == 4 and here == _TAXI_LOCS[dest]:
            n_pas, reward, done = dest, 20, True
        elif pas == 4 and here in _TAXI_LOCS:
            n_pas = _TAXI_LOCS.index(here)
        else:
            reward = -10
    elif possible:
        dr, dc = heading[a][0]
        n_row, n_col = min(max(row + dr, 0), 4), min(max(col + dc, 0), 4)
    if not rainy or a >= 4:
        out.append((1.0, enc(n_row, n_col, n_pas, dest), reward, done))
        return
    left = slide(row, col, *heading[a][1]) if possible else here
    right = slide(row, col, *heading[a][2]) if possible else here
    out.append((p_main, enc(n_row, n_col, n_pas, dest), -1, done))
    out.append((side, enc(*left, n_pas, dest), -1, done))
    out.append((side, enc(*right, n_pas, dest), -1, done))


def frozen_lake(map: str = "4x4", gamma: float = 0.95, *, is_slippery: bool = True,
                d=None) -> TabularCMDP:
    r"""Gymnasium's FrozenLake-v1 (``map_name`` "4x4" or "8x8", slippery by default),
    from its table (:func:`frozen_lake_table`, no Gymnasium needed), with the holes
    entered as the cost.

    Reward 1 on entering the goal (Gymnasium's), on every transition into it (also off
    the nominal support); the goal and the holes are terminal
    (:meth:`~rcmdp_exact.TabularCMDP.from_gymnasium`).  Cost: 1 for entering a hole,
    C(s, a, s') = 1 for every hole s' (also off the nominal support, so that a set
    that moves mass onto a hole is charged for it): the discounted probability of
    falling in.
    """
    check_choice(map, "map", ("4x4", "8x8"))
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    table = frozen_lake_table(map, bool(is_slippery))
    desc = np.asarray([list(row) for row in _FROZEN_LAKE_MAPS[map]]).ravel()
    holes = (desc == "H").astype(np.float64)
    m = TabularCMDP.from_gymnasium(table, costs=holes, d=_budget(d, gamma), gamma=gamma,
                                   name=f"FrozenLake-{map}")
    # from_gymnasium charges the transitions of the table only; a hole entered off the
    # nominal support (a kernel of a set with a wider support) is charged too
    S, A = m.n_states, m.n_actions
    live = ~np.asarray(m.terminal)
    C = np.zeros((S, A, S, 1))
    C[live, :, :, 0] = holes
    # likewise the reward: 1 for entering the goal, on every transition
    goal = (desc == "G").astype(np.float64)
    R = np.zeros((S, A, S))
    R[live] = goal
    return m.replace(R=R, C=C)


#: CliffWalking's edge: the cells (2, 1) to (2, 10) along the cliff, states 25 to 34.
_CLIFF_EDGE = tuple(range(2 * 12 + 1, 2 * 12 + 11))


def cliff_walking(gamma: float = 0.95, *, is_slippery: bool = True, cost: str = "edge",
                  d=None) -> TabularCMDP:
    r"""Gymnasium's CliffWalking-v1 (4 x 12 cells) from its table
    (:func:`cliff_walking_table`, no Gymnasium needed), slippery by default, with its own
    rewards (-1 per step, -100 for a fall into the cliff, which puts the agent back on
    the start).

    The cost (``cost``):

    * ``"edge"`` (default): 1 for entering a cell along the cliff (:data:`_CLIFF_EDGE`,
      the row above it), on every transition into one (also off the nominal support):
      the discounted time spent next to the cliff.  On the slippery table the robust
      optimum walks the edge with the move "up", whose slips go left and right and never
      down into the cliff, so it never falls and is still exposed; the constraint keeps
      the agent away from the edge, on a longer path.
    * ``"falls"``: 1 per fall (``float(reward == -100)`` on the table's entries).  On the
      slippery table some robust optimum never falls (from the start, "up", whose right
      slip falls back onto the start, and "left" are worth the same), so with the budget
      rule of :func:`halfway_budget` no budget on the falls binds.

    Without slipping (``is_slippery=False``, Gymnasium's default) the table is
    deterministic: a set on its nominal support holds the nominal kernel alone.
    """
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_choice(cost, "cost", ("edge", "falls"))
    table = cliff_walking_table(bool(is_slippery))
    if cost == "falls":
        def fell(s, a, t, reward, terminated):
            return float(reward == -100)

        return TabularCMDP.from_gymnasium(table, costs=fell, d=_budget(d, gamma),
                                          gamma=gamma, horizon=None, name="CliffWalking")
    m = TabularCMDP.from_gymnasium(table, costs=np.zeros(48), d=_budget(d, gamma),
                                   gamma=gamma, horizon=None, name="CliffWalking")
    C = np.zeros((48, 4, 48, 1))
    live = ~np.asarray(m.terminal)
    C[np.ix_(live, np.arange(4), np.asarray(_CLIFF_EDGE), [0])] = 1.0
    return m.replace(C=C)


def taxi(gamma: float = 0.95, *, rainy: bool = True, horizon: int | None = 200,
         d=None) -> TabularCMDP:
    r"""Taxi (Dietterich 2000) as Gymnasium's Taxi-v4 (:func:`taxi_table`, no Gymnasium
    needed), in the rain by default, with the fuel as the cost: 1 for every move
    (actions 0-3, also into a wall), C(s, move) = 1.

    Why not the illegal actions as the cost: an illegal pick-up or drop-off only wastes a
    step, so no optimal policy takes one and a budget on them never binds (the least
    worst-case number and the robust optimum's are both 0); the fuel binds, and the
    illegal actions keep Gymnasium's -10.  In the rain a set on the nominal support has
    room to move mass (the dry taxi is deterministic).
    """
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    if horizon is not None:
        check_limit(horizon, "horizon", "horizon", hint=" (a number of steps) or None")
    fuel = np.zeros((500, 6, 1))
    fuel[:, :4, 0] = 1.0
    m = TabularCMDP.from_gymnasium(taxi_table(bool(rainy)), costs=fuel,
                                   d=_budget(d, gamma), gamma=gamma, horizon=horizon,
                                   name="Taxi")
    return m.replace(action_labels=["south", "north", "east", "west", "pick-up",
                                    "drop-off"], cost_labels=["fuel (moves)"])


# --------------------------------------------------------------------------- budgets
#: The relative tolerance of a tie between robust-optimal actions
#: (:func:`robust_optimal_box`): an action is robust-optimal in state s when its
#: worst-case Q is within ``TIE_RTOL * max(1, max_s |V*(s)|)`` of the robust optimum
#: V*(s).  Robust policy iteration computes V* to about 1e-12 of that scale, so ties
#: exact in the model's numbers (symmetric routes) are found, and actions more than
#: 1e-9 of the value scale worse are not ties.
TIE_RTOL = 1e-9


def robust_optimal_box(model: TabularCMDP, uset, tol: float = TIE_RTOL, *,
                       method: str = "policy_iteration") -> Result:
    r"""The robust-optimal policies of ``model`` on ``uset`` as a box of policies.

    With :math:`V^*` the robust optimum :math:`\max_\pi \min_P V(\pi, P)` (robust policy
    iteration, or robust value iteration with ``method="value_iteration"``, every
    state) and :math:`g_s(a)` the worst-case value in state s of the
    deterministic action a against :math:`V^*` (:math:`Q^*(s, a)` on an sa-rectangular
    set; on an s-rectangular set the state's whole budget spent against a), an action
    is **robust-optimal** in s when :math:`g_s(a) \ge V^*(s) - \epsilon` with
    :math:`\epsilon` = ``tol`` :math:`\cdot \max(1, \max_s |V^*(s)|)`.  The box is
    ``lo`` = 0, ``hi`` = 1 on the robust-optimal actions and 0 elsewhere: on an
    sa-rectangular set every policy in it is robust-optimal (at every state) and every
    policy optimal at every state lies in it.  On an s-rectangular set the worst case
    of a mixture is concave in the mixture, so every mixture of optimal actions is
    optimal too; a state where no single action is optimal (the optimum is randomised)
    keeps the row of the computed optimum (``lo = hi``), so a tie between randomised
    optima there is not explored.

    Returns
    -------
    Result
        ``lo``, ``hi`` (S, A), ``mask`` (S, A) the robust-optimal actions, ``v`` (S,)
        :math:`V^*`, ``value`` = p0.v, ``policy`` the robust optimum found, ``gap``
        (S, A) :math:`V^*(s) - g_s(a)`, ``tol`` (the absolute tolerance used), ``error``
        (a bound on :math:`|p_0 \cdot V^* - ` ``value`` :math:`|`: one robust Bellman
        step, :math:`\|T v - v\|_\infty / (1 - \gamma)`, plus the rounding allowance of
        the game).
    """
    from ..robust import robust_value_iteration
    from ..robust.engine import RobustGame

    check_real(tol, "tol", 0.0, low_open=True, hint=" (the relative tolerance of ties)")
    check_choice(method, "method", ("policy_iteration", "value_iteration"))
    free = robust_value_iteration(model.replace(C=None, d=None), uset, method=method,
                                  progress=False)
    if not free.converged:
        raise RuntimeError(f"the robust optimum did not converge ({free.message}); the "
                           f"robust-optimal actions cannot be told apart")
    v = np.asarray(free.v, dtype=np.float64)
    policy = np.asarray(free.policy, dtype=np.float64)
    game = RobustGame(model, uset)
    box = optimal_actions(game, v, policy, tol)
    # the certificate of the fixed point: |V* - v| <= ||T v - v|| / (1 - gamma), one
    # robust Bellman step over every policy (the same on both kinds of rectangularity)
    S, A = model.n_states, model.n_actions
    _, tv = game.max_min(game.R[None], v[None], np.zeros((1, S, A)), np.ones((1, S, A)))
    error = float(np.abs(tv[0] - v).max()) / (1.0 - model.gamma) + float(game.rounding())
    return Result(**box, v=v, value=float(free.value), policy=policy, error=error)


def optimal_actions(game, v: np.ndarray, policy: np.ndarray, tol: float = TIE_RTOL) -> dict:
    """The box of the actions robust-optimal against the values ``v`` (S,) of the robust
    optimum (:func:`robust_optimal_box`, whose notes define it), on the game's model and
    set; ``policy`` fills the states where no single action is optimal.  Returns
    ``lo``, ``hi``, ``mask``, ``gap`` and ``tol`` (absolute)."""
    S, A = game.S, game.A
    R = np.ascontiguousarray(np.broadcast_to(game.R, (A, S, A, S)))
    if game.s_rect:
        pis = np.broadcast_to(np.eye(A)[:, None, :], (A, S, A)).copy()
        q, _ = game.inner(R, np.broadcast_to(v, (A, S)).copy(), pis)
        value_of = q[np.arange(A), :, np.arange(A)].T  # (S, A): q[a, s, a]
    else:
        q, _ = game.inner(R[:1], v[None])
        value_of = q[0]
    eps = float(tol) * max(1.0, float(np.abs(v).max(initial=0.0)))
    gap = v[:, None] - value_of
    mask = gap <= eps
    lo = np.zeros((S, A))
    hi = mask.astype(np.float64)
    fixed = ~mask.any(axis=1)
    lo[fixed] = hi[fixed] = np.asarray(policy, dtype=np.float64)[fixed]
    return dict(lo=lo, hi=hi, mask=mask, gap=gap, tol=eps)


def _box_value_iteration(game, g: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                        tol: float = 1e-12, max_iter: int = 100_000) -> Result:
    r"""Robust value iteration over a policy box: :math:`W \leftarrow \max_{\pi \in
    [lo, hi]} \min_P [g + \gamma W]` for a batch g (J, S, A, S) (the game's
    :meth:`~rcmdp_exact.robust.engine.RobustGame.max_min`), from 0, until the residual is
    at most tol * max(1, max|W|).  Returns ``w`` (J, S), ``value`` (J,) = p0.w,
    ``error`` (J,) the bound :math:`\gamma\,\mathrm{residual} / (1 - \gamma)` on
    :math:`|W^* - W|`, ``policy`` the box maximiser at ``w``, ``converged``."""
    w = np.zeros(g.shape[:2])
    res = np.full(g.shape[0], np.inf)
    pi = lo
    for _ in range(max_iter):
        pi, tw = game.max_min(g, w, lo, hi)
        res = np.abs(tw - w).max(axis=1)
        w = tw
        if np.all(res <= tol * np.maximum(1.0, np.abs(w).max(axis=1))):
            break
    gamma = game.gamma
    ok = bool(np.all(res <= tol * np.maximum(1.0, np.abs(w).max(axis=1))))
    return Result(w=w, value=w @ game.p0, error=gamma * res / (1.0 - gamma), policy=pi,
                  converged=ok)


def cost_levels(model: TabularCMDP, uset, tol: float = TIE_RTOL, *,
                method: str = "policy_iteration") -> Result:
    r"""The two cost levels of the budget rule, for every constraint k.

    ``least`` (K,): :math:`\min_\pi \max_P C_k(\pi, P)` (robust policy iteration on the
    reward :math:`-c_k`).  ``free`` (K,): the least worst-case cost among the
    robust-optimal policies,

    .. math:: f_k = \min_{\pi \in B^*} \max_P C_k(\pi, P),

    where :math:`B^*` is the box of the robust-optimal actions
    (:func:`robust_optimal_box`, ties within ``tol`` of the value scale): a robust
    problem over the robust-optimal actions, solved by robust policy iteration over the
    box.  Unlike "the worst-case cost of *the* robust optimum", :math:`f` does not
    depend on which of several equally good robust optima a solver returns (on the
    suite's 5x5 gridworld two of them cost 0.870 and 1.100).  ``policies["free"]``: a
    robust-optimal policy whose worst-case cost of the first constraint is
    :math:`f_1` (the box's minimiser) and ``policies["least"]`` a policy of least
    worst-case cost of the first constraint; ``robust_optimum`` the robust optimum's value;
    ``box`` the :func:`robust_optimal_box` result.  ``method``: "policy_iteration"
    (Howard's, the default) or "value_iteration" (:func:`_box_value_iteration`, the
    second method of ``rcmdp suite verify``) for every fixed point.
    """
    from ..robust import robust_value_iteration
    from ..robust.engine import RobustGame

    check_real(tol, "tol", 0.0, low_open=True, hint=" (the relative tolerance of ties)")
    check_choice(method, "method", ("policy_iteration", "value_iteration"))
    C = np.asarray(model.C)
    K = model.n_constraints
    least = np.empty(K)
    cheapest = []
    for k in range(K):
        mk = model.replace(R=-C[..., k], C=None, d=None)
        rv = robust_value_iteration(mk, uset, method=method, progress=False)
        if not rv.converged:
            raise RuntimeError(f"the least worst-case cost of constraint {k} did not "
                               f"converge ({rv.message})")
        least[k] = -rv.value
        cheapest.append(np.asarray(rv.policy, dtype=np.float64))
    box = robust_optimal_box(model, uset, tol, method=method)
    game = RobustGame(model, uset)
    g = np.ascontiguousarray(-np.moveaxis(C, 3, 0))  # (K, S, A, S): the costs as rewards
    lo = np.broadcast_to(box.lo, g.shape[:3]).copy()
    hi = np.broadcast_to(box.hi, g.shape[:3]).copy()
    if method == "value_iteration":
        sol = _box_value_iteration(game, g, lo, hi)
        ok, pis = sol.converged, sol.policy
    else:
        sol = game.solve(g, lo, hi)
        ok, pis = bool(sol.stable and np.all(sol.adversary.converged)), sol.pi
    if not ok:
        raise RuntimeError(f"the least cost over the robust-optimal policies did not "
                           f"converge (robust {method.replace('_', ' ')} over their box)")
    free = -np.asarray(sol.value, dtype=np.float64)
    policy = np.asarray(pis[0], dtype=np.float64) if K else box.policy
    policies = {"free": policy}
    if K:
        policies["least"] = cheapest[0]
    return Result(least=least, free=np.maximum(free, least), policies=policies,
                  robust_optimum=box.value, box=box)


def halfway_budget(model: TabularCMDP, uset, fraction: float = 0.5) -> TabularCMDP:
    r"""The model with the budgets of issue 30's rule for the set ``uset``:
    :math:`d_k = \mathrm{least}_k + \mathrm{fraction}\,(\mathrm{free}_k -
    \mathrm{least}_k)` (:func:`cost_levels`), halfway by default.

    Where the unconstrained robust optimum is already the cheapest (free = least) the
    budget equals the least worst-case cost: the constraint then binds only at that
    level.
    """
    check_real(fraction, "fraction", 0.0, 1.0)
    lv = cost_levels(model, uset)
    return model.replace(d=lv.least + fraction * (lv.free - lv.least))


def classic_instance(name: str, uset_kind: str = "l1", radius: float = 0.1,
                     support: str = "all", **kwargs):
    r"""(model, set) of a named classic domain with the budget of :func:`halfway_budget`.

    ``name``: one of :data:`CLASSIC_DOMAINS`; ``kwargs`` go to the builder (``n``,
    ``gamma``, ``map``...).  ``uset_kind``: ``"l1"`` (an sa-rectangular L1 ball of radius
    ``radius`` over ``support``: ``"all"`` next states or the ``"nominal"`` support) or
    ``"kl"`` (a KL ball of radius ``radius`` on the nominal support).
    """
    check_choice(name, "name", CLASSIC_DOMAINS)
    check_choice(uset_kind, "uset_kind", ("l1", "kl"))
    check_real(radius, "radius", 0.0, hint=" (the radius of the set, e.g. 0.1)")
    model = {"riverswim": riverswim, "chain": chain,
             "machine_replacement": machine_replacement, "frozen_lake": frozen_lake,
             "cliff_walking": cliff_walking}[name](**kwargs)
    if uset_kind == "l1":
        from ..uncertainty import l1_ball

        uset = l1_ball(model, radius, support=support)
    else:
        from ..uncertainty import KLBall

        uset = KLBall(model.P, radius)
    return halfway_budget(model, uset), uset
