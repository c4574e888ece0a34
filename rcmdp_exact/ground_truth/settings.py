r"""The options of the certified bracket, one frozen value grouped by concern.

:class:`BracketSettings` holds four groups, each a frozen dataclass validated when
built, and three options of their own:

==================  ======================================================================
group               options (defaults)
==================  ======================================================================
``target``          :class:`Target`: ``rtol`` (1e-4), ``atol`` (1e-9): when the bracket
                    is closed; ``tol`` (1e-12): the robust fixed points' tolerance;
                    ``feas_tol`` (0): the budgets are the model's plus this
``lagrangian``      :class:`LagrangianSearch`: ``n_grid`` (29), ``lam_range`` (None),
                    ``n_refine`` (40), ``n_cuts`` (30)
``lower``           :class:`LowerSearch`: ``n_ascent`` (60), ``n_starts`` (2),
                    ``mix_steps`` (40), ``n_partners`` (4), ``deep_after`` (2000),
                    ``deep_starts`` (12), ``deep_ascent`` (300), ``seed`` (0)
``boxes``           :class:`BranchAndBound`: ``max_boxes`` (2000), ``box_bounds`` (None),
                    ``split_point`` ("middle")
(own)               ``variants`` (()): the RCPG variants' targets to compute;
                    ``dual_evaluations`` (200): the certified dual's budget;
                    ``time_limit`` (600 s): the safety net
==================  ======================================================================

Every count in these groups is a work budget: together they decide the bracket, so the
same settings give the same bits on any load of one machine; ``time_limit`` is only a
safety net (a result it stops says so).  Each option has one name, flat: the keyword
options of :func:`~.bracket.rcmdp_bracket`, ``BracketSettings(max_boxes=100)``,
``dataclasses.replace(settings, n_grid=9)`` and ``settings.max_boxes`` all use it, and
:meth:`BracketSettings.options` gives them all as one flat dict (the form a run
specification or a record stores).  The groups are what the phases take
(``settings.lower``, ``settings.boxes``).

Options that size what the bracket keeps in memory are checked against
:data:`BRACKET_MEMORY` once the model is known (:meth:`BracketSettings.check_memory`),
before any work.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .._checks import (
    check_choice,
    check_int,
    check_limit,
    check_memory,
    check_real,
    check_seed,
)
from .boxes import BOX_BOUNDS
from .structure import SPLIT_POINTS
from .variants import VARIANTS, check_feas_tol, check_lam_range

__all__ = ["BRACKET_MEMORY", "GROUPS", "RELATIVE_FLOOR", "SMALL_BOX_BOUNDS", "SMALL_STATES",
           "BracketSettings", "BranchAndBound", "LagrangianSearch", "LowerSearch", "Target",]

#: The relative gap is the gap over ``max(abs(lower), RELATIVE_FLOOR * value_range)``:
#: relative to the value, except where the value is within a millionth of the value
#: range of 0 (a value of 0 itself would leave no scale).
RELATIVE_FLOOR = 1e-6
#: Up to this many states the default box bounds are :data:`SMALL_BOX_BOUNDS`.
SMALL_STATES = 3
#: The default box bounds of small models: the occupancy LP alone (on the small models of
#: ``benchmarks/bench_ground_truth.py --section small`` the performance-difference bound
#: never cut a box the LP had not; docs/ground_truth.md, section 3.9).
SMALL_BOX_BOUNDS = ("lp",)
#: The memory the options of a bracket may make it keep at once (the points of the
#: Lagrangian search and of the variants' targets, the random starts of the lower side,
#: the certified dual's values): 2 GiB.  Options beyond it are refused before any work;
#: the open boxes of the branch and bound have their own limit
#: (:data:`~.boxes.OPEN_BOX_MEMORY`, where the search stops).
BRACKET_MEMORY = 2 * 2**30


def gap_scale(lower: float, span: float) -> float:
    """The denominator of the relative gap: ``max(abs(lower), RELATIVE_FLOOR * span)``."""
    low = abs(lower) if np.isfinite(lower) else 0.0
    return max(low, RELATIVE_FLOOR * span)


def _names(value, name: str, choices, entry: str) -> tuple:
    """A sequence of names of ``choices`` as a tuple of plain strings, each once; a bare
    string (a name given without its sequence, which a tuple would split into letters)
    or anything not iterable is an :class:`~rcmdp_exact.InputError`."""
    from .._checks import InputError, shown

    if isinstance(value, (str, bytes)):
        fix = f"({value!r},) for one name" if len(value) <= 80 else repr(choices[:1])
        raise InputError(f"{name} must be a sequence of names, got the string "
                         f"{shown(value)}; give {fix}")
    try:
        items = tuple(value)
    except TypeError:
        raise InputError(f"{name} must be a sequence of names from "
                         f"{', '.join(map(repr, choices))}, got {type(value).__name__}; "
                         f"give e.g. {choices[:1]!r}") from None
    # each name once, in the order given (a name twice would be computed twice)
    return tuple(dict.fromkeys(str(check_choice(v, entry, choices)) for v in items))


def _counts(obj, names, low=0) -> None:
    for name in names:
        check_int(getattr(obj, name), name, low)


@dataclass(frozen=True)
class Target:
    """When the bracket is closed, and of which problem.

    ``rtol``, ``atol``: closed when ``upper - lower <= max(atol, rtol * max(|lower|,
    RELATIVE_FLOOR * value_range))``; ``tol``: the tolerance of the robust fixed points
    (the bounds stay certified at any tol); ``feas_tol``: the bracket is that of the
    optimum at budgets d + feas_tol."""

    rtol: float = 1e-4
    atol: float = 1e-9
    tol: float = 1e-12
    feas_tol: float = 0.0

    def __post_init__(self):
        check_real(self.rtol, "rtol", 0.0)
        check_real(self.atol, "atol", 0.0)
        check_real(self.tol, "tol", 0.0, low_open=True)
        check_feas_tol(self.feas_tol)


@dataclass(frozen=True)
class LagrangianSearch:
    """The search over lam of the Lagrangian bound (:mod:`.dual`): ``n_grid`` points on
    ``lam_range`` (None: the default range of :func:`~.variants.lam_bounds`),
    ``n_refine`` sign steps, ``n_cuts`` cutting-plane steps.  ``n_grid`` is also the
    grid of the RCPG variants' targets."""

    n_grid: int = 29
    lam_range: tuple | None = None
    n_refine: int = 40
    n_cuts: int = 30

    def __post_init__(self):
        check_int(self.n_grid, "n_grid", 2)
        _counts(self, ("n_refine", "n_cuts"))
        object.__setattr__(self, "lam_range", check_lam_range(self.lam_range))


@dataclass(frozen=True)
class LowerSearch:
    """The search of the lower side (:mod:`.search`): SLSQP with at most ``n_ascent``
    iterations from each start (``n_starts`` random ones, drawn from ``seed``), mixtures
    (``mix_steps`` / 3 rounds of about 8 per pair, with up to ``n_partners`` infeasible
    policies); after ``deep_after`` boxes without closing, a deeper search
    (``deep_ascent`` iterations, ``deep_starts`` random starts; ``deep_after = 0``:
    never)."""

    n_ascent: int = 60
    n_starts: int = 2
    mix_steps: int = 40
    n_partners: int = 4
    deep_after: int = 2000
    deep_starts: int = 12
    deep_ascent: int = 300
    seed: object = 0

    def __post_init__(self):
        _counts(self, ("n_ascent", "n_starts", "mix_steps", "n_partners", "deep_after",
                       "deep_starts", "deep_ascent"))
        check_seed(self.seed)

    @property
    def mix_rounds(self) -> int:
        """Rounds of :func:`~.search.mix_to_boundary` per pair: ``mix_steps`` / 3."""
        return max(1, math.ceil(self.mix_steps / 3))


@dataclass(frozen=True)
class BranchAndBound:
    """The branch and bound (:mod:`.boxes`): at most ``max_boxes`` boxes, each bounded
    by its Lagrangian bound and the ``box_bounds`` (a sequence of "local" and "lp";
    None: ``("lp",)`` up to :data:`SMALL_STATES` states, ``("local", "lp")`` beyond),
    a chosen interval split at ``split_point`` (:data:`~.structure.SPLIT_POINTS`: its
    middle, the box's occupancy-LP policy or the incumbent's policy; ``"lp"`` needs the
    LP among the box bounds)."""

    max_boxes: int = 2000
    box_bounds: tuple | None = None
    split_point: str = "middle"

    def __post_init__(self):
        check_limit(self.max_boxes, "max_boxes", "boxes")
        # a numpy string kept as the plain one (a record's options are JSON)
        object.__setattr__(self, "split_point",
                           str(check_choice(self.split_point, "split_point", SPLIT_POINTS)))
        bounds = None if self.box_bounds is None else _names(self.box_bounds, "box_bounds",
                                                             BOX_BOUNDS, "box_bounds entry")
        if self.split_point == "lp" and bounds is not None and "lp" not in bounds:
            from .._checks import InputError

            raise InputError(
                f"split_point='lp' splits a box at its occupancy-LP policy, which "
                f"box_bounds={bounds!r} does not compute (every box would be split at "
                f"its middle); add 'lp' to box_bounds (or give None) or choose "
                f"split_point 'middle' or 'incumbent'")
        object.__setattr__(self, "box_bounds", bounds)

    def bounds_for(self, n_states: int) -> tuple:
        """The box bounds of a model with ``n_states`` states."""
        if self.box_bounds is not None:
            return self.box_bounds
        return SMALL_BOX_BOUNDS if n_states <= SMALL_STATES else BOX_BOUNDS


#: The groups of :class:`BracketSettings`: field name -> class.
GROUPS = {"target": Target, "lagrangian": LagrangianSearch, "lower": LowerSearch,
          "boxes": BranchAndBound}
#: Each option of a group -> its group's field name.
_GROUP_OF = {f.name: g for g, cls in GROUPS.items() for f in dataclasses.fields(cls)}
_OWN = ("variants", "dual_evaluations", "time_limit")


@dataclass(frozen=True, init=False)
class BracketSettings:
    """The options of :func:`~.bracket.rcmdp_bracket`, grouped by concern (the module
    docstring), validated once, when the object is built.

    ``BracketSettings(max_boxes=100, n_ascent=20)`` takes the options flat (or whole
    groups: ``BracketSettings(lower=LowerSearch(n_ascent=20))``, flat options given
    beside a group replace its fields); ``settings.max_boxes`` reads one flat, and
    ``dataclasses.replace(settings, max_boxes=200)`` gives a changed copy, validated
    again.  Frozen: a bracket's settings are one value, passed whole to its phases.
    """

    target: Target
    lagrangian: LagrangianSearch
    lower: LowerSearch
    boxes: BranchAndBound
    variants: tuple
    dual_evaluations: int
    time_limit: float | None

    def __init__(self, *, target: Target | None = None,
                 lagrangian: LagrangianSearch | None = None, lower: LowerSearch | None = None,
                 boxes: BranchAndBound | None = None, variants=(),
                 dual_evaluations: int = 200, time_limit: float | None = 600.0, **options):
        unknown = sorted(set(options) - set(_GROUP_OF))
        if unknown:
            raise TypeError(f"BracketSettings got an unexpected option {unknown[0]!r}; the "
                            f"options are {', '.join([*_GROUP_OF, *_OWN])}")
        given = {"target": target, "lagrangian": lagrangian, "lower": lower, "boxes": boxes}
        for name, cls in GROUPS.items():
            group = given[name]
            if group is None:
                group = cls()
            elif not isinstance(group, cls):
                from .._checks import InputError

                raise InputError(f"{name} must be a {cls.__name__}, got "
                                 f"{type(group).__name__}; give {cls.__name__}(...) or the "
                                 f"options flat")
            mine = {k: v for k, v in options.items() if _GROUP_OF[k] == name}
            object.__setattr__(self, name, dataclasses.replace(group, **mine) if mine
                               else group)
        # None: none (as the bracket's docstring says)
        variants = () if variants is None else _names(variants, "variants", VARIANTS,
                                                      "variant")
        check_int(dual_evaluations, "dual_evaluations", 0)
        if time_limit is not None:
            time_limit = check_real(time_limit, "time_limit", 0.0, low_open=True,
                                    hint=" (or None: no safety net, the work budgets alone)")
        object.__setattr__(self, "variants", variants)
        object.__setattr__(self, "dual_evaluations", int(dual_evaluations))
        object.__setattr__(self, "time_limit", time_limit)

    def __getattr__(self, name: str):
        # an option read flat: settings.max_boxes is settings.boxes.max_boxes
        group = _GROUP_OF.get(name)
        if group is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(object.__getattribute__(self, group), name)

    def options(self) -> dict:
        """Every option, flat (the keyword options of :func:`~.bracket.rcmdp_bracket`):
        what a record stores to recompute the bracket."""
        out = {}
        for name in GROUPS:
            out.update(dataclasses.asdict(getattr(self, name)))
        out.update(variants=self.variants, dual_evaluations=self.dual_evaluations,
                   time_limit=self.time_limit)
        return out

    def gap_tol(self, value: float, span: float = 0.0) -> float:
        """The target gap at a lower bound ``value`` on a model of value range ``span``
        (:func:`~.bracket.value_range`): ``max(atol, rtol * max(abs(value),
        RELATIVE_FLOOR * span))``, the rule of ``closed``."""
        span = check_real(span, "span", 0.0, hint=" (the model's range of values)")
        t = self.target
        return max(t.atol, t.rtol * gap_scale(value, span)) if np.isfinite(value) \
            else t.atol

    def check_memory(self, model) -> None:
        """Refuse, before any work, options that would make the bracket of ``model`` keep
        more than :data:`BRACKET_MEMORY` at once (an :class:`~rcmdp_exact.InputError`
        that names the option, the memory and the largest value within the limit)."""
        from .dual_certificate import check_dual_memory

        S, A, K = model.n_states, model.n_actions, model.n_constraints
        limit, where = BRACKET_MEMORY, "rcmdp_exact.ground_truth.settings.BRACKET_MEMORY"
        # a point of the Lagrangian search keeps lam, its bound, slope and maximiser,
        # three times over at the end (the history, the sort of the policies met); a
        # variant's keeps its equilibrium and common worst-case kernel
        point = 3 * 8 * (S * A + 2 * K + 2)
        grid = point + len(self.variants) * 8 * (S * A * S + S * A + 2 * K + 4)
        check_memory(self.lagrangian.n_grid, grid, limit, "n_grid",
                     "the multipliers, bounds and policies of the Lagrangian search"
                     + (" and of the variants' targets" if self.variants else ""),
                     " (a finer grid rarely helps: n_refine and n_cuts refine the best "
                     "points)", where)
        check_memory(self.lagrangian.n_cuts, point, limit, "n_cuts",
                     "the cutting planes' points and policies", "", where)
        for name in ("n_starts", "deep_starts"):
            check_memory(getattr(self.lower, name), 2 * 8 * S * A, limit, name,
                         "random starting policies", "", where)
        check_dual_memory(model, self.dual_evaluations, "dual_evaluations")
