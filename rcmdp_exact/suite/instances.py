r"""The instances of the certified RCMDP benchmark suite.

Each instance is a :class:`~rcmdp_exact.TabularCMDP` with one natural constraint, a
budget rule, a discount, an episode length (for the sampled learners) and a citation of
the definition it follows.  The builders of this module return the model with a budget
placeholder that never binds (``d`` = the largest discounted cost); the budget of an
(instance, set, radius) is set by :func:`rcmdp_exact.suite.sets.budget` with the rule
of the instance (:data:`_BUDGET_RULES`) and stored in the suite's data file, which
:func:`rcmdp_exact.suite.load` reads.

Families (``docs/suite/``, one page each):

* ``riverswim-6``, ``riverswim-20``: RiverSwim (Strehl and Littman 2008), cost: the
  upstream strokes (:func:`rcmdp_exact.domains.riverswim`);
* ``chain-10``: the chain of Strens (2000) with 10 states, cost: the forward steps;
* ``machine-10``, ``machine-20``: machine replacement (Delage and Mannor 2010), cost:
  the repairs;
* ``inventory-50``: the paper's Inventory Management (Puterman 2005, sec. 3.2) with 50
  stock levels, cost: the purchases above the limit;
* ``forest-10``: forest management (pymdptoolbox's ``example.forest``; Possingham and
  Tuck 1997), written here from its definition, cost: the fires (:func:`forest`);
* ``grid-5x5``: a slippery 5x5 gridworld with a band of puddles, in the 0.8/0.1/0.1
  convention of Russell and Norvig (2010), cost: the puddles entered (:func:`gridworld`);
* ``frozenlake-4x4``, ``frozenlake-8x8``, ``cliffwalking``: Gymnasium's tables (written
  in :mod:`rcmdp_exact.domains.classic` from their definitions), cost: holes entered, the
  cells along the cliff entered;
* ``taxi``: Gymnasium's Taxi-v4 in the rain (Dietterich 2000), cost: the fuel (the
  moves; :func:`rcmdp_exact.domains.classic.taxi` says why not the illegal
  actions);
* ``paper-inventory``, ``paper-nav1``, ``paper-nav2``: the paper's three domains, with
  the paper's budgets;
* ``garnet-15x5-s0``, ``-s1``, ``-s2``: Garnet models (Archibald et al. 1995) with
  S = 15, A = 5 (the size of the RCMDP literature's random models), branching 5, seeds
  0, 1 and 2, a uniform random cost.

References
----------
* A. L. Strehl and M. L. Littman.  An analysis of model-based interval estimation for
  Markov decision processes.  JCSS 74(8):1309-1331, 2008.
* M. Strens.  A Bayesian framework for reinforcement learning.  ICML 2000.
* E. Delage and S. Mannor.  Percentile optimization for Markov decision processes with
  parameter uncertainty.  Operations Research 58(1):203-213, 2010.
* M. L. Puterman.  Markov Decision Processes.  Wiley, 2005 (sec. 3.2, inventory).
* H. P. Possingham and G. Tuck.  Application of stochastic dynamic programming to
  optimal fire management of a spatially structured threatened species.  MODSIM 1997;
  S. Cordwell, pymdptoolbox, ``mdptoolbox.example.forest`` (its numbers: S = 3,
  r1 = 4, r2 = 2, p = 0.1).
* S. Russell and P. Norvig.  Artificial Intelligence: A Modern Approach, 3rd ed.,
  sec. 17.1 (the 4x3 world: the intended move with 0.8, each perpendicular one with
  0.1, a move into a wall stays).
* T. G. Dietterich.  Hierarchical reinforcement learning with the MAXQ value function
  decomposition.  JAIR 13:227-303, 2000 (the taxi domain).
* M. Towers et al.  Gymnasium.  arXiv 2407.17032, 2024 (FrozenLake-v1, CliffWalking-v1,
  Taxi-v4).
* T. W. Archibald, K. I. M. McKinnon and L. C. Thomas.  On the generation of Markov
  decision processes.  JORS 46(3):354-361, 1995.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import check_int, check_real, check_sizes
from ..core.model import TabularCMDP

__all__ = [ "INSTANCES", "Instance", "forest", "freeze", "gridworld"]

#: The budget rules: "halfway" (d = least + (free - least) / 2 for the set, see
#: :func:`rcmdp_exact.suite.sets.budget`) and "paper" (the paper's own budget).
_BUDGET_RULES = ("halfway", "paper")


# --------------------------------------------------------------------------- forest
def forest(n: int = 10, gamma: float = 0.9, *, r1: float = 4.0, r2: float = 2.0,
           p: float = 0.1, horizon: int | None = 100) -> TabularCMDP:
    r"""Forest management (Possingham and Tuck 1997, as in pymdptoolbox's
    ``mdptoolbox.example.forest``), with the fires as the constraint.

    States 0 (a young forest, the start) to n - 1 (the oldest age class); actions
    0 = wait and 1 = cut.  A fire, which burns the forest back to state 0, happens with
    probability ``p`` in every step in which the forest is left to grow.

    * Wait in state s: state min(s + 1, n - 1) with 1 - p, state 0 with p.
    * Cut in any state: state 0 with probability 1.
    * Reward of waiting: ``r1`` = 4 in the oldest state, 0 elsewhere; reward of
      cutting: 0 in state 0, 1 in states 1 to n - 2, ``r2`` = 2 in the oldest state.
    * Cost (the constraint): 1 on every transition to state 0 after waiting, C(s, wait,
      0) = 1: the discounted number of fires (charged on every kernel, so a set that
      moves mass to state 0 after waiting is charged for it).

    pymdptoolbox's example uses S = 3 and discounts by 0.9 in its documentation; the
    suite uses 10 age classes (its numbers r1, r2, p unchanged).
    """
    check_int(n, "n", 3)
    check_sizes(8 * 2 * n * n * 3, {"n": n}, "transitions, rewards and costs (n, 2, n)")
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_real(p, "p", 0.0, 1.0)
    check_real(r1, "r1")
    check_real(r2, "r2")
    S, A = n, 2
    P = np.zeros((S, A, S))
    for s in range(S):
        P[s, 0, min(s + 1, S - 1)] += 1.0 - p
        P[s, 0, 0] += p
    P[:, 1, 0] = 1.0
    R = np.zeros((S, A))
    R[S - 1, 0] = r1
    R[1:S - 1, 1] = 1.0
    R[S - 1, 1] = r2
    C = np.zeros((S, A, S, 1))
    C[:, 0, 0, 0] = 1.0
    return TabularCMDP(P, R, C, [1.0 / (1.0 - gamma)], gamma=gamma, p0=0,
                       horizon=horizon, normalize=True, name=f"Forest-{n}",
                       action_labels=["wait", "cut"], cost_labels=["fires"])


# --------------------------------------------------------------------------- gridworld
#: The puddles of the suite's gridworld: a band across the middle row with gaps at the
#: two borders, cells (x, y).
GRID_PUDDLES = ((1, 2), (2, 2), (3, 2))
#: Moves of the gridworld's actions (up, right, down, left) as (dx, dy).
GRID_MOVES = ((0, 1), (1, 0), (0, -1), (-1, 0))


def gridworld(size: int = 5, gamma: float = 0.95, *, success: float = 0.8,
              puddles=GRID_PUDDLES, horizon: int | None = 100) -> TabularCMDP:
    r"""A slippery gridworld with puddles (the suite's own, in the convention of
    Russell and Norvig 2010, sec. 17.1).

    Cells (x, y), 0 <= x, y < ``size``; state s = size * y + x; the start is (0, 0) and
    the goal (size - 1, size - 1) is terminal.  Actions 0..3 = up, right, down, left.
    The intended move happens with probability ``success`` = 0.8 and each of the two
    perpendicular moves with (1 - success) / 2 = 0.1; a move off the grid stays in the
    cell.  Reward 1 on entering the goal (on every kernel), 0 otherwise.  Cost: 1 on
    entering a puddle (``puddles``, default the band (1, 2), (2, 2), (3, 2) across the
    middle row, open at both borders), on every kernel: the discounted number of
    puddles entered.  The shortest way through the middle crosses the band; the ways
    along the borders pass beside it, where a slip lands in a puddle.
    """
    check_int(size, "size", 2)
    # size**2 cells, 4 actions: P, R and C dense (S, 4, S)
    check_sizes(8 * 4 * 3 * size**4, {"size": size}, "transitions, rewards and costs")
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_real(success, "success", 0.0, 1.0)
    n = size * size
    goal = n - 1

    def cell(x, y):
        return size * y + x

    P = np.zeros((n, 4, n))
    for y in range(size):
        for x in range(size):
            s = cell(x, y)
            if s == goal:
                P[s, :, s] = 1.0
                continue
            for a in range(4):
                for b, prob in ((a, success), ((a + 1) % 4, (1 - success) / 2),
                                ((a + 3) % 4, (1 - success) / 2)):
                    dx, dy = GRID_MOVES[b]
                    nx, ny = x + dx, y + dy
                    if not (0 <= nx < size and 0 <= ny < size):
                        nx, ny = x, y
                    P[s, a, cell(nx, ny)] += prob
    wet = np.zeros(n)
    for x, y in puddles:
        wet[cell(x, y)] = 1.0
    R = np.zeros((n, 4, n))
    C = np.zeros((n, 4, n, 1))
    live = np.arange(n) != goal
    R[live, :, goal] = 1.0
    C[live, :, :, 0] = wet
    return TabularCMDP(P, R, C, [1.0 / (1.0 - gamma)], gamma=gamma, p0=0,
                       horizon=horizon, terminal=[goal], normalize=True,
                       name=f"Grid-{size}x{size}",
                       action_labels=["up", "right", "down", "left"],
                       cost_labels=["puddles entered"])


# --------------------------------------------------------------------------- the list
@dataclass(frozen=True)
class Instance:
    """One instance of the suite: how to build it and what it means.

    ``build()`` returns the model with the budget placeholder (never binding); the
    budget of a set is given by ``budget_rule`` (:func:`rcmdp_exact.suite.sets.budget`).
    ``support`` is the support of the sets built around it ("nominal": nature moves the
    probabilities of the transitions the model has; "outcomes": the model's outcomes;
    "all": every state), ``support_why`` says why.  ``learn``: whether the leaderboard
    trains the learners on it (``skip_why`` otherwise).  ``bracket``: whether the
    bracket is computed (``False``: only the values that scale are certified;
    ``skip_bracket`` says why).  ``kinds``: the kinds of set of the grid certified for
    it (all four but for Taxi, ``kinds_why`` says why).  ``variant``: which variant of
    the cited definition the table is, with the source numbers (the instance's page in
    ``docs/suite/`` says the same; ``tests/test_suite_instances.py`` checks the table
    against them).
    """

    name: str
    family: str
    builder: object
    kwargs: dict = field(default_factory=dict)
    constraint: str = ""
    budget_rule: str = "halfway"
    support: str = "nominal"
    support_why: str = ""
    citation: str = ""
    learn: bool = True
    skip_why: str = ""
    bracket: bool = True
    skip_bracket: str = ""
    kinds: tuple = ("l1", "kl", "s-l1", "interval")
    kinds_why: str = ""
    variant: str = ""

    def build(self) -> TabularCMDP:
        """The model (budget placeholder for the halfway rule, the paper's budget for
        the paper's domains), as frozen in the package's data
        (:func:`~rcmdp_exact.suite.frozen.frozen_model`: checked against its checksum)."""
        from .frozen import frozen_model

        return frozen_model(self.name)

    def rebuild(self) -> TabularCMDP:
        """The model from its builder (what :meth:`build`'s frozen copy was made of;
        ``tests/test_suite_instances.py`` compares the two)."""
        return self.builder(**self.kwargs)


def _classic(name):
    def build(**kw):
        from ..domains import classic

        m = getattr(classic, name)(**kw)
        return m if m.horizon is not None else m.replace(horizon=100)
    build.__name__ = name
    return build


def _paper(name):
    def build(**kw):
        from ..domains import paper_domain

        return paper_domain(name, **kw)
    build.__name__ = f"paper_domain_{name}"
    return build


def _inventory(**kw):
    from ..domains import inventory

    m = inventory(**kw)
    return m.replace(d=[1.0 / (1.0 - m.gamma) * float(np.max(m.C))])


def _garnet(**kw):
    from ..domains import garnet

    m = garnet(**kw)
    return m.replace(d=[1.0 / (1.0 - m.gamma)], name=f"Garnet-15x5-b5-s{kw['seed']}")


_NOMINAL = ("nominal: nature moves the probabilities of the transitions the model has "
            "and adds none")

_RIVERSWIM = ("Osband, Russo and Van Roy (2013)'s RiverSwim: left moves one state down "
              "with 1; right in an interior state moves up with 0.35, stays with 0.6 and "
              "falls back with 0.05 (Strehl and Littman 2008, figure 1); right on the left "
              "bank moves up with 0.6 and stays with 0.4, at the right end stays with 0.6 "
              "and falls back with 0.4; reward 5/1000 for left in state 0 and 1 for right "
              "in the last state (Strehl and Littman's 5 and 10,000 scaled by Osband et "
              "al.); start in state 0")
_MACHINE = ("Delage and Mannor (2010), figure 3: working states 0 (new) to n - 3 (worn "
            "out), repair states R1 = n - 2 and R2 = n - 1; do nothing wears to the next "
            "state with 0.8 and stays with 0.2 (the worn-out state stays); repair reaches "
            "R1 with 0.6, R2 with 0.1 and fails with 0.3 (wears as if left alone); in R1 "
            "do nothing returns a new machine with 0.8 and stays with 0.2, repair stays; "
            "in R2 do nothing stays, repair reaches R1 with 0.6 and stays with 0.4; "
            "operating costs 20 (worn out), 2 (R1) and 10 (R2) charged on the current "
            "state, r(s, a) = -cost(s) (the reference table of Petrik's MDPs.jl charges "
            "them on entering the state, mostly; the two differ by one step of timing), "
            "gamma 0.95 (ours)")
_FROZEN = ("Gymnasium FrozenLake-v1 with is_slippery: the intended move with 1/3 and each "
           "perpendicular move with (1 - 1/3)/2 (Gymnasium 1.x's success_rate); reward 1 "
           "on entering the goal; holes and goal end the episode; 100 steps per episode "
           "(FrozenLake-v1's registration, for the 8x8 map too)")
_CLIFF = ("Gymnasium CliffWalking-v1 with is_slippery (CliffWalkingSlippery-v1): the "
          "intended move and the two perpendicular ones with 1/3 each (Sutton and Barto's "
          "example 6.6 is deterministic: a set on its nominal support would hold one "
          "kernel); Gymnasium's rewards, -1 per step and -100 for a fall, which puts the "
          "agent back on the start; 100 steps per episode (ours: the registration has "
          "none)")
_TAXI = ("Gymnasium Taxi-v4 with is_rainy: a possible move goes the intended way with 0.8 "
         "and to each side with (1 - 0.8)/2 (a blocked side move stays); -1 per step, -10 "
         "for an illegal pick-up or drop-off, +20 for the delivery; 200 steps per episode "
         "(the registration's)")

INSTANCES = {i.name: i for i in (
    Instance("riverswim-6", "riverswim", _classic("riverswim"), dict(n=6, gamma=0.95),
             "upstream strokes (C(s, right) = 1)", support_why=_NOMINAL + " (an L1 ball "
             "over all states would carry the swimmer anywhere in one stroke)",
             citation="Strehl and Littman (2008), figure 1; the numbers of Osband, Russo "
                      "and Van Roy (2013)", variant=_RIVERSWIM),
    Instance("riverswim-20", "riverswim", _classic("riverswim"), dict(n=20, gamma=0.95),
             "upstream strokes (C(s, right) = 1)", support_why=_NOMINAL,
             citation="Strehl and Littman (2008), 20 states; the numbers of Osband, "
                      "Russo and Van Roy (2013)", variant=_RIVERSWIM + ", 20 states"),
    Instance("chain-10", "chain", _classic("chain"), dict(n=10, gamma=0.95),
             "forward steps attempted (C(s, forward) = 1)", support_why=_NOMINAL + " (the "
             "slip between the forward move and the return to the start)",
             citation="Strens (2000), figure 1, after Dearden, Friedman and Russell "
                      "(1998); 10 states",
             variant="Strens (2000), figure 1, with 10 states instead of 5: forward moves "
                     "to s + 1 (the last state stays), back to state 0, the other action's "
                     "move with 0.2; reward 2 for a move to state 0 and 10 for the forward "
                     "move that stays in the last state"),
    Instance("machine-10", "machine", _classic("machine_replacement"),
             dict(n=10, gamma=0.95), "repairs (C(s, repair) = 1)",
             support_why=_NOMINAL + " (wear and repair outcomes)",
             citation="Delage and Mannor (2010), also Wiesemann, Kuhn and Rustem (2013)",
             variant=_MACHINE + "; n = 10 (8 working states)"),
    Instance("machine-20", "machine", _classic("machine_replacement"),
             dict(n=20, gamma=0.95), "repairs (C(s, repair) = 1)", support_why=_NOMINAL,
             citation="Delage and Mannor (2010) with 18 working states",
             variant=_MACHINE + "; n = 20 (18 working states)"),
    Instance("inventory-50", "inventory", _inventory, dict(n_states=50, gamma=0.95),
             "units ordered above the purchasing limit, c(s, a) = max(0, a' - L(s))",
             support_why="nominal: the discretised Normal demand already reaches every "
                         "stock level below the order-up-to level",
             citation="Puterman (2005), sec. 3.2, with the paper's purchasing limit; 50 "
                      "stock levels", learn=False,
             variant="Puterman (2005), sec. 3.2 as the paper's Inventory Management with 50 "
                     "stock levels and order sizes: Normal demand, mean 50/4 and sd 50/6, "
                     "discretised exactly; sale 3.99, purchase 2.49, holding 0.03",
             skip_why="50 actions per state: a tabular learner needs far more than a "
                      "few thousand episodes"),
    Instance("forest-10", "forest", forest, dict(n=10, gamma=0.9), "fires (C(s, wait, 0) "
             "= 1)", support_why=_NOMINAL + " (nature raises the fire probability)",
             citation="Possingham and Tuck (1997) as pymdptoolbox's example.forest "
                      "(r1 = 4, r2 = 2, p = 0.1), 10 age classes",
             variant="pymdptoolbox's mdptoolbox.example.forest(S=10, r1=4, r2=2, p=0.1): "
                     "wait grows the forest one class (a fire, 0.1, burns it to class 0), "
                     "cut returns to class 0; wait earns 4 in the oldest class, cut 1 (2 "
                     "in the oldest class); gamma 0.9"),
    Instance("grid-5x5", "gridworld", gridworld, dict(size=5, gamma=0.95),
             "puddles entered (C(s, a, s') = 1 for a puddle s')",
             support_why=_NOMINAL + " (the three outcomes of the slip; an L1 ball over "
                         "all states would move mass into a puddle from any cell)",
             citation="the suite's own 5x5 world in the slip convention of Russell and "
                      "Norvig (2010), sec. 17.1",
             variant="the intended move with 0.8, each perpendicular move with 0.1 (Russell "
                     "and Norvig's 4x3 world), walls stay; start (0, 0), goal (4, 4) "
                     "terminal with reward 1 on entering it; puddles (1, 2), (2, 2), (3, 2)"),
    Instance("frozenlake-4x4", "frozenlake", _classic("frozen_lake"),
             dict(map="4x4", gamma=0.95), "holes entered (C(s, a, s') = 1 for a hole s')",
             support_why=_NOMINAL + " (the three slippery outcomes; over all states "
                         "nature could drop the agent into a hole from any cell)",
             citation="Gymnasium FrozenLake-v1, map 4x4, is_slippery (Towers et al. 2024)",
             variant=_FROZEN + "; map 4x4"),
    Instance("frozenlake-8x8", "frozenlake", _classic("frozen_lake"),
             dict(map="8x8", gamma=0.95), "holes entered", support_why=_NOMINAL,
             citation="Gymnasium FrozenLake-v1, map 8x8, is_slippery (Towers et al. "
                       "2024)", learn=False,
             skip_why="the goal is rarely reached by the first episodes of a "
                      "from-scratch learner within a few thousand episodes",
             variant=_FROZEN + "; map 8x8"),
    Instance("cliffwalking", "cliffwalking", _classic("cliff_walking"),
             dict(gamma=0.95), "the cells along the cliff entered (C(s, a, s') = 1 for s' "
             "in row 2, columns 1 to 10)", support_why=_NOMINAL + " (the slippery outcomes)",
             citation="Gymnasium CliffWalking-v1, is_slippery (Sutton and Barto 2018, "
                      "example 6.6; Towers et al. 2024)", variant=_CLIFF),
    Instance("taxi", "taxi", _classic("taxi"), dict(gamma=0.95),
             "fuel: the moves (C(s, move) = 1)",
             support_why=_NOMINAL + " (the rain's side moves)",
             citation="Dietterich (2000); Gymnasium Taxi-v4 with is_rainy (Towers et al. "
                      "2024)", learn=False, variant=_TAXI,
             skip_why="500 states: beyond a few thousand episodes of tabular learning",
             bracket=False,
             skip_bracket="500 states and 6 actions: the policy boxes of the branch and "
                          "bound have 3000 intervals and one robust fixed point of 500 "
                          "states per box, beyond a time limit of seconds.",
             kinds=("l1",),  # also in store.ONLY_KINDS (tested)
             kinds_why="one job on Taxi takes about 90 s (the robust fixed points of 500 "
                       "states): the shipped file has the sa-rectangular L1 balls of the "
                       "literature's convention only"),
    Instance("paper-inventory", "paper", _paper("inventory"), {},
             "units ordered above the purchasing limit (the paper's)", budget_rule="paper",
             support="all", support_why="all: the paper's Hoeffding ball of the "
                                        "inventory domain is over all stock levels",
             citation="the paper's Inventory Management (Puterman 2005, sec. 3.2), d = 6",
             variant="the paper's Inventory Management (rcmdp_exact.domains.paper_domain("
                     "'inventory')), its budget d = 6"),
    Instance("paper-nav1", "paper", _paper("nav1"), {}, "cost cells entered (the paper's)",
             budget_rule="paper", support="outcomes",
             support_why="outcomes: the paper's ball is over the five outcomes of a move "
                         "(stay and the four neighbours)",
             citation="the paper's Safe Navigation 1, d = 3",
             variant="the paper's Safe Navigation 1 (paper_domain('nav1'): the reference "
                     "layout, moves succeed with 0.8), its budget d = 3"),
    Instance("paper-nav2", "paper", _paper("nav2"), {}, "cost cells entered (the paper's)",
             budget_rule="paper", support="outcomes",
             support_why="outcomes: the paper's ball is over the five outcomes of a move "
                         "(the model itself is deterministic)",
             citation="the paper's Safe Navigation 2, d = 0.4",
             variant="the paper's Safe Navigation 2 (paper_domain('nav2'): deterministic "
                     "moves), its budget d = 0.4"),
    *(Instance(f"garnet-15x5-s{seed}", "garnet", _garnet,
               dict(n_states=15, n_actions=5, branching=5, n_constraints=1, seed=seed,
                    gamma=0.95, horizon=100),
               "a uniform random cost per transition", support_why=_NOMINAL + " (the "
               "branching is the instance's structure)",
               citation=f"Archibald, McKinnon and Thomas (1995); S = 15, A = 5 as the "
                        f"RCMDP literature's random models; branching 5, seed {seed}",
               variant=f"rcmdp_exact.domains.garnet(n_states=15, n_actions=5, branching=5, "
                       f"n_constraints=1, seed={seed}): the toolkit's own Garnet generator "
                       f"(numpy's default_rng({seed})), frozen")
      for seed in (0, 1, 2)),
)}


def freeze(names=None, folder=None) -> dict:
    """Write the archives of ``names`` (default: every instance) from their builders
    into ``folder`` (default: the package's) and their checksums
    (:func:`~rcmdp_exact.suite.frozen.write_frozen`); returns ``{name: sha256}``."""
    from .frozen import write_frozen

    names = list(INSTANCES) if names is None else list(names)
    return write_frozen({n: INSTANCES[n].rebuild() for n in names}, list(INSTANCES), folder)
