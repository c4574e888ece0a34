r"""The uncertainty sets of the suite and the budget rule.

The grid is the same for every instance: four kinds of set at three radii r = 0.05,
0.1 and 0.2 (the radii of the robust MDP literature's sa-rectangular L1 balls), each
built around the instance's own kernel on the instance's support
(:attr:`~rcmdp_exact.suite.instances.Instance.support`) by the kind's own ``around``:

========== ================================ ==============================================
kind       radius given to ``around``       the set
========== ================================ ==============================================
l1         r                                sa-rectangular L1 ball, ||p - p^||_1 <= r
kl         r^2 / 2                          sa-rectangular KL ball, KL(p || p^) <= r^2/2:
                                            inside the L1 ball of radius r (Pinsker)
s-l1       r                                s-rectangular L1 set, one budget A r per state
                                            shared by its actions: contains the L1 ball
interval   r / 2                            sa-rectangular box |p_i - p^_i| <= r / 2 on
                                            the support: the smallest box that contains
                                            the L1 ball of radius r
========== ================================ ==============================================

so the kl set is the smallest and s-l1 the largest of the four at each r.  A KL ball
never leaves the support of its centre; the three others are built on the instance's
support.

**The budget rule** (:func:`budget`, "halfway"): with :math:`\ell = \min_\pi \max_P
C(\pi, P)` the least worst-case cost and :math:`f = \max_P C(\pi^*, P)` the worst-case
cost of the unconstrained robust optimum :math:`\pi^* = \arg\max_\pi \min_P V(\pi, P)`,
both on the set, :math:`d = \ell + (f - \ell) / 2`: every robust-feasible policy is
constrained (d < f when f > l) and one exists (d >= l).  The paper's three domains keep
the paper's budgets ("paper"); whether they bind is in their records.
"""

from __future__ import annotations

__all__ = ["KINDS", "RADII", "REFERENCE", "budget", "build_set", "grid", "set_radius",
           "set_text"]

#: The radii r of the grid.
RADII = (0.05, 0.1, 0.2)
#: The kinds of set of the grid, in the order of the data file.
KINDS = ("l1", "kl", "s-l1", "interval")
#: The set of the leaderboard and of :func:`rcmdp_exact.suite.instance`: (kind, r).
REFERENCE = ("l1", 0.1)


def set_radius(kind: str, r: float) -> float:
    """The radius given to ``kind``'s ``around`` for the grid's radius ``r``."""
    if kind == "kl":
        return r * r / 2.0
    if kind == "interval":
        return r / 2.0
    if kind in ("l1", "s-l1"):
        return float(r)
    raise ValueError(f"unknown kind {kind!r}; the suite's kinds are {', '.join(KINDS)}")


def grid() -> list[tuple[str, float]]:
    """Every (kind, r) of the grid, kinds first."""
    return [(k, r) for k in KINDS for r in RADII]


def set_text(kind: str, r: float, support: str) -> str:
    """One line that names the set: its kind, its own radius and its support."""
    own = set_radius(kind, r)
    sup = "nominal" if kind == "kl" else support
    what = {"l1": "sa-rectangular L1 ball", "kl": "sa-rectangular KL ball",
            "s-l1": "s-rectangular L1 set", "interval": "sa-rectangular interval set"}[kind]
    return f"{what} of radius {own:g} (r = {r:g}) on the {sup} support"


def build_set(model, kind: str, r: float, support: str):
    """The set of ``kind`` at the grid's radius ``r`` around ``model``'s kernel."""
    from ..uncertainty import set_class

    own = set_radius(kind, r)
    return set_class(kind).around(model, own, "nominal" if kind == "kl" else support)


def budget(model, uset, rule: str = "halfway"):
    """``(d, levels)``: the budget of ``rule`` for ``model`` on ``uset`` and the cost
    levels ``least`` and ``free`` (arrays (K,)) with the unconstrained robust optimum
    (``levels.policies["free"]``).  "paper" keeps the model's budget."""
    import numpy as np

    from ..domains.classic import cost_levels

    lv = cost_levels(model, uset)
    if rule == "halfway":
        d = lv.least + 0.5 * (lv.free - lv.least)
    elif rule == "paper":
        d = np.asarray(model.d, dtype=np.float64)
    else:
        raise ValueError(f"unknown budget rule {rule!r}; give halfway or paper")
    return np.asarray(d, dtype=np.float64), lv
