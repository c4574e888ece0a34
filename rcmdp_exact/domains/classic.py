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
* :func:`frozen_lake`, :func:`cliff_walking` -- Gymnasium's own tables
  (:meth:`~rcmdp_exact.TabularCMDP.from_gymnasium`); cost: holes entered, cliff entered.

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

from .._checks import check_choice, check_int, check_real
from .._result import Result
from ..core.model import TabularCMDP

__all__ = ["CLASSIC_DOMAINS", "chain", "classic_instance", "cliff_walking", "cost_levels",
           "frozen_lake", "halfway_budget", "machine_replacement", "riverswim"]

#: The builders by name (``classic_instance(name, ...)``).
CLASSIC_DOMAINS = ("riverswim", "chain", "machine_replacement", "frozen_lake",
                   "cliff_walking")


def _budget(d, gamma: float) -> np.ndarray:
    """The budget given, or the placeholder 1/(1 - gamma) (an indicator's largest
    discounted cost: never binding)."""
    return np.atleast_1d(np.asarray(1.0 / (1.0 - gamma) if d is None else d,
                                    dtype=np.float64))


# --------------------------------------------------------------------------- RiverSwim
def riverswim(n: int = 6, gamma: float = 0.95, *, upstream: float = 0.35,
              stay: float = 0.6, back: float = 0.05, end_up: float = 0.4,
              left_reward: float = 0.005, right_reward: float = 1.0, d=None) -> TabularCMDP:
    r"""RiverSwim (Strehl and Littman 2008) with an effort cost.

    States 0 (the left bank, the start) to n - 1 (the right end, upstream); actions
    0 = swim with the current (left) and 1 = swim upstream (right).

    * Left: moves one state left with probability 1 (state 0 stays).
    * Right, in an interior state: one state right with ``upstream`` = 0.35, stays with
      ``stay`` = 0.6, one state left with ``back`` = 0.05; at the left end: right with
      ``end_up`` = 0.4, stays with 0.6; at the right end: stays with 0.6, left with
      0.4 (Strehl and Littman 2008, figure 1, n = 6).
    * Reward ``left_reward`` = 0.005 for the left action in state 0 and ``right_reward``
      = 1 for the right action in state n - 1 (their 5 and 10,000 scaled as in Osband,
      Russo and Van Roy 2013: 5/1000 and 1).
    * Cost (the constraint): 1 for every upstream stroke, C(s, right) = 1: the
      discounted number of strokes, so a budget limits the effort.

    ``d``: the budget (default a non-binding placeholder; :func:`halfway_budget` sets
    the rule of the benchmarks for a set).
    """
    check_int(n, "n", 2)
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    for name, v in (("upstream", upstream), ("stay", stay), ("back", back),
                    ("end_up", end_up)):
        check_real(v, name, 0.0, 1.0)
    A = 2
    P = np.zeros((n, A, n))
    for s in range(n):
        P[s, 0, max(s - 1, 0)] = 1.0
        if s == 0:
            P[s, 1, 1] += end_up
            P[s, 1, 0] += 1.0 - end_up
        elif s == n - 1:
            P[s, 1, s] += 1.0 - end_up
            P[s, 1, s - 1] += end_up
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
    check_int(n, "n", 2)
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_real(slip, "slip", 0.0, 1.0)
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
    check_int(n, "n", 4)
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_real(wear, "wear", 0.0, 1.0)
    if min(repair_fail, to_r1, to_r2) < 0 or abs(repair_fail + to_r1 + to_r2 - 1.0) > 1e-12:
        raise ValueError(f"repair_fail + to_r1 + to_r2 must be 1 (each >= 0), got "
                         f"{repair_fail} + {to_r1} + {to_r2}")
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


# --------------------------------------------------------------------------- Gymnasium
def frozen_lake(map: str = "4x4", gamma: float = 0.95, *, is_slippery: bool = True,
                d=None) -> TabularCMDP:
    r"""Gymnasium's FrozenLake-v1 (``map_name`` "4x4" or "8x8", slippery by default)
    from its own table, with the holes entered as the cost.

    Reward 1 on entering the goal (Gymnasium's), on every transition into it (also off
    the nominal support); the goal and the holes are terminal
    (:meth:`~rcmdp_exact.TabularCMDP.from_gymnasium`).  Cost: 1 for entering a hole,
    C(s, a, s') = 1 for every hole s' (also off the nominal support, so that a set
    that moves mass onto a hole is charged for it): the discounted probability of
    falling in.  Needs ``gymnasium``.
    """
    check_choice(map, "map", ("4x4", "8x8"))
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    import gymnasium

    env = gymnasium.make("FrozenLake-v1", map_name=map, is_slippery=bool(is_slippery))
    holes = (np.asarray(env.unwrapped.desc) == b"H").ravel().astype(np.float64)
    m = TabularCMDP.from_gymnasium(env, costs=holes, d=_budget(d, gamma), gamma=gamma,
                                   name=f"FrozenLake-{map}")
    # from_gymnasium charges the transitions of the table only; a hole entered off the
    # nominal support (a kernel of a set with a wider support) is charged too
    S, A = m.n_states, m.n_actions
    live = ~np.asarray(m.terminal)
    C = np.zeros((S, A, S, 1))
    C[live, :, :, 0] = holes
    # likewise the reward: 1 for entering the goal, on every transition
    goal = (np.asarray(env.unwrapped.desc) == b"G").ravel().astype(np.float64)
    R = np.zeros((S, A, S))
    R[live] = goal
    return m.replace(R=R, C=C)


def cliff_walking(gamma: float = 0.95, *, is_slippery: bool = True,
                  fall_reward: float = -1.0, d=None) -> TabularCMDP:
    r"""Gymnasium's CliffWalking-v1 (4 x 12 cells) from its own table, with the cliff
    entered as the cost.

    Gymnasium's table: reward -1 per step; stepping into the cliff sends the agent back
    to the start with reward -100; the goal is terminal; with ``is_slippery`` (the
    default here) a move goes to a perpendicular direction with Gymnasium's slip
    probability, so a path along the edge risks a fall.  Cost: 1 for every entry of
    the table whose reward is -100, ``costs=lambda s, a, t, reward, terminated:
    float(reward == -100)``: the discounted number of falls.

    A constrained model moves the penalty of a fall from the reward into the
    constraint: the reward of a fall is ``fall_reward`` (default -1, an ordinary step;
    -100 keeps Gymnasium's reward, and then the unconstrained optimum already avoids the
    edge as far as it can, so the budget rule of :func:`halfway_budget` leaves no room).
    Without slipping (``is_slippery=False``) no policy that avoids stepping into the
    cliff ever falls, on any kernel that keeps the nominal support.  Needs
    ``gymnasium``.
    """
    check_real(gamma, "gamma", 0.0, 1.0, high_open=True)
    check_real(fall_reward, "fall_reward")
    import gymnasium

    env = gymnasium.make("CliffWalking-v1", is_slippery=bool(is_slippery))

    def fell(s, a, t, reward, terminated):
        return float(reward == -100)

    m = TabularCMDP.from_gymnasium(env, costs=fell, d=_budget(d, gamma), gamma=gamma,
                                   horizon=None, name="CliffWalking")
    # a merged transition's reward and cost are probability-weighted averages of its
    # entries, so the falls' share of its reward moves with its cost
    R = np.asarray(m.R) + (fall_reward + 100.0) * np.asarray(m.C)[..., 0]
    return m.replace(R=R)


# --------------------------------------------------------------------------- budgets
def cost_levels(model: TabularCMDP, uset) -> Result:
    r"""The two cost levels of the budget rule, for every constraint k.

    ``least`` (K,): :math:`\min_\pi \max_P C_k(\pi, P)` (robust policy iteration on the
    reward :math:`-c_k`); ``free`` (K,): the worst-case costs :math:`\max_P C_k(\pi^*,
    P)` of the unconstrained robust optimum :math:`\pi^* = \arg\max_\pi \min_P V(\pi,
    P)` (``policies["free"]``), each under its own adversary.
    """
    from ..robust import robust_evaluate, robust_value_iteration

    C = np.asarray(model.C)
    least = np.empty(model.n_constraints)
    for k in range(model.n_constraints):
        mk = model.replace(R=-C[..., k], C=None, d=None)
        least[k] = -robust_value_iteration(mk, uset, method="policy_iteration",
                                           progress=False).value
    free = robust_value_iteration(model.replace(C=None, d=None), uset,
                                  method="policy_iteration", progress=False).policy
    free_costs = np.asarray(robust_evaluate(model, free, uset, progress=False).costs_worst)
    return Result(least=least, free=np.maximum(free_costs, least),
                  policies={"free": free})


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
