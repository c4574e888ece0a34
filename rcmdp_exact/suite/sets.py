r"""The uncertainty sets of the suite and the budget rule.

The grid is the same for every instance: four kinds of set at three **levels** r =
0.05, 0.1 and 0.2 (the radii of the robust MDP literature's sa-rectangular L1 balls),
each built around the instance's own kernel on the instance's support
(:attr:`~rcmdp_exact.suite.instances.Instance.support`) by the kind's own ``around``,
whose **radius** is the kind's own (what ``--set KIND --radius R`` means everywhere in
the toolkit: the L1 radius, the KL bound, the half-width of an interval):

========== ================================ ==============================================
kind       radius of the set at level r     the set
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

so the kl set is the smallest and s-l1 the largest of the four at each level.  A KL
ball never leaves the support of its centre; the three others are built on the
instance's support.  A record's ``level`` is r, its ``radius`` the set's own radius.

**The budget rule** (:func:`budget`, "halfway"): with :math:`\ell = \min_\pi \max_P
C(\pi, P)` the least worst-case cost and :math:`f` the least worst-case cost among the
robust-optimal policies (:func:`~rcmdp_exact.domains.classic.cost_levels`: a robust
problem over the robust-optimal actions, so :math:`f` does not depend on which of
several equally good robust optima a solver returns), both on the set, :math:`d = \ell
+ (f - \ell) / 2`: when :math:`f > \ell` every robust-optimal policy violates the
budget (d < f) and a robust-feasible policy exists (d >= l); when :math:`f = \ell` the
constraint cannot bind (d = f: some robust optimum is robust-feasible, and the record
is closed at the robust optimum).  The paper's three domains keep the paper's budgets
("paper"); whether they bind is in their records.
"""

from __future__ import annotations

__all__ = ["KINDS", "LEVELS", "REFERENCE", "budget", "build_set", "grid", "radius_of",
           "set_text"]

#: The levels r of the grid (each kind's radius at level r: :func:`radius_of`).
LEVELS = (0.05, 0.1, 0.2)
#: The kinds of set of the grid, in the order of the data file.
KINDS = ("l1", "kl", "s-l1", "interval")
#: The set of the leaderboard and of :func:`rcmdp_exact.suite.instance`: (kind, level).
REFERENCE = ("l1", 0.1)


def radius_of(kind: str, level: float) -> float:
    """The radius of ``kind``'s set at the grid's level ``level``: the radius given to
    its ``around``, which the kind's own class says
    (:meth:`~rcmdp_exact.uncertainty.UncertaintySet.l1_level_radius`: r for l1 and s-l1,
    r^2/2 for kl, r/2 for interval).  ``level``: a real >= 0 (the grid's are
    :data:`LEVELS`)."""
    from .._checks import check_choice, check_real
    from ..uncertainty import set_class

    check_choice(kind, "kind", KINDS, hint=" (the suite's kinds of set)")
    level = check_real(level, "level", 0.0, hint=f" (the grid's levels are {LEVELS})")
    return float(set_class(kind).l1_level_radius(level))


def _support_of(kind: str, support: str) -> str:
    """The instance's support, or the one the kind's ``around`` accepts (its
    ``AROUND_SUPPORTS`` line: a KL ball never leaves the support of its centre)."""
    from ..uncertainty.kinds import kind_files

    accepted = kind_files()[kind].supports
    return support if accepted is None or support in accepted else accepted[0]


def grid() -> list[tuple[str, float]]:
    """Every (kind, level) of the grid, kinds first."""
    return [(k, r) for k in KINDS for r in LEVELS]


def set_text(kind: str, level: float, support: str) -> str:
    """One line that names the set: its kind, its radius, its level and its support."""
    from ..uncertainty import set_class

    own = radius_of(kind, level)
    sup = _support_of(kind, support)
    return (f"{set_class(kind).title} of radius {own:g} (level {float(level):g}) on the "
            f"{sup} support")


def build_set(model, kind: str, level: float, support: str):
    """The set of ``kind`` at the grid's level ``level`` around ``model``'s kernel."""
    from ..uncertainty import set_class

    return set_class(kind).around(model, radius_of(kind, level), _support_of(kind, support))


def budget(model, uset, rule: str = "halfway"):
    """``(d, levels)``: the budget of ``rule`` for ``model`` on ``uset`` and the cost
    levels ``least`` and ``free`` (arrays (K,)) with a robust optimum of cost ``free``
    (``levels.policies["free"]``; :func:`~rcmdp_exact.domains.classic.cost_levels`).
    "paper" keeps the model's budget."""
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
