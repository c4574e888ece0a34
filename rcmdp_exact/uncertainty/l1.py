r"""The L1 ball: the paper's uncertainty set, and the first implementation of the protocol.

The sa-rectangular set of the paper's Sec. "Uncertainty Set and Uncertainty Budget",

.. math::

    \mathcal P_{s,a} = \{ p \in \Delta(\Sigma_{s,a}) :
    \|p - \hat P(\cdot \mid s, a)\|_1 \le \alpha(s, a) \},

is an :class:`L1Ball` (nominal (S, A, S), radii (S, A), support (S, A, S), and the
outcome form when the model has outcomes: merging outcomes maps the outcome ball onto the
state ball, so both give the same worst case).  Its inner problem is solved by
:func:`~rcmdp_exact.uncertainty.l1_sort.worst_case_l1`; :func:`l1_ball` builds a ball
around a model's own kernel, and :func:`estimate_l1_ball` one from counts, with the
paper's Hoeffding radius (:func:`hoeffding_radius`) or that of Weissman et al. 2003
(:func:`weissman_radius`); :func:`~rcmdp_exact.uncertainty.estimate` is the paper's
phase 1 that collects the counts.  Terminal rows are the model's self-loop with radius
0.  The proofs are in ``docs/robust.md``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._checks import (
    MAX_INPUT_BYTES,
    as_float_array,
    check_choice,
    check_indices,
    check_int,
    check_memory,
    check_nonnegative,
    check_real,
    check_shape,
    readonly,
    row_tolerance,
)
from .._result import Result
from ..core.model import TabularCMDP, check_model
from ..core.model_checks import ModelError, check_transition_rows
from ._counts import check_pseudo_count, smoothed_counts
from ._rows import Frozen
from .base import (
    SARectangularSet,
    check_strategy,
    kind_delta,
    kind_radius,
    radii,
    split_batch,
    support_mask,
)
from .extreme import l1_vertices
from .l1_sort import worst_case_l1

__all__ = [
    "KIND",
    "L1Ball",
    "L1Rows",
    "estimate_l1_ball",
    "first_outcomes",
    "hoeffding_radius",
    "l1_ball",
    "merge_outcomes",
    "outcome_map",
    "weissman_radius",
]

#: The kind of this file's set (``--set l1``, the default; read by :mod:`.kinds`).
KIND = "l1"
#: What ``--radius R`` is for the set around a model (read by :mod:`.kinds`).
RADIUS = "the L1 radius of every pair"


def merge_outcomes(q, outcomes, n_states: int | None = None) -> np.ndarray:
    r"""Merge outcome distributions into next-state distributions: :math:`p = Mq`.

    Parameters
    ----------
    q : array (S, A, O)
        Mass of each outcome.
    outcomes : int array (S, A, O)
        Next state reached by each outcome.
    n_states : int, optional
        Number of next states (default S = ``q.shape[0]``).

    Returns
    -------
    array (S, A, n_states)
        :math:`p(s, a, s') = \sum_{o : \mathrm{outcomes}(s, a, o) = s'} q(s, a, o)`.
    """
    q = as_float_array(q, "q", "give an (S, A, O) array of outcome masses")
    if n_states is not None:
        n_states = check_int(n_states, "n_states", 1, hint=" (the number of next states)")
        check_memory(n_states, 8 * (q.size // max(q.shape[-1], 1) if q.ndim else 1),
                     MAX_INPUT_BYTES, "n_states", "next-state probabilities", "",
                     "rcmdp_exact._checks.MAX_INPUT_BYTES")
    out = outcome_map(outcomes, q.shape, n_states)
    S, A, O = q.shape
    n = S if n_states is None else int(n_states)
    rows = np.arange(S * A, dtype=np.int64).repeat(O)
    flat = rows * n + out.reshape(-1)
    p = np.bincount(flat, weights=q.reshape(-1), minlength=S * A * n)
    return p.reshape(S, A, n)


def outcome_map(outcomes, shape, n_states=None) -> np.ndarray:
    """``outcomes`` as an int64 (S, A, O) map of states, checked against ``shape``."""
    out = check_indices(outcomes, "outcomes", shape[0] if n_states is None else n_states,
                        "state")
    check_shape(out, tuple(shape), "outcomes", ("s", "a", "o"))
    return out


def first_outcome_split(P: np.ndarray, outcomes: np.ndarray) -> np.ndarray:
    """Outcome distribution putting each state's mass on the first outcome reaching it."""
    vals = np.take_along_axis(P, outcomes, axis=2)
    return np.where(first_outcomes(outcomes), vals, 0.0)


def first_outcomes(outcomes: np.ndarray) -> np.ndarray:
    """(S, A, O) bool: outcome o is the first of its pair to reach its state."""
    S, A, O = outcomes.shape
    first = np.ones((S, A, O), dtype=bool)
    for o in range(1, O):  # O is small (the outcomes of one pair)
        first[:, :, o] = ~(outcomes[:, :, :o] == outcomes[:, :, o : o + 1]).any(axis=2)
    return first


class L1Rows(NamedTuple):
    """An L1 ball by (state, action) row, for compiled code (row ``r = s * A + a``): what
    :meth:`L1Ball.compiled_rows` returns.

    The arrays of :func:`~rcmdp_exact.uncertainty.l1_numba.worst_pair` (the learners'
    per-episode worst case) and of the adversary of Adversarial RCPG, whose deviation
    penalty is defined on the L1 ball (C-contiguous, writable copies); :meth:`solve`
    solves every row of a batch (the robust engine's compiled inner step).
    """

    nominal: np.ndarray
    """(S*A, S) nominal rows."""
    support: np.ndarray
    """(S*A, S) bool support."""
    radius: np.ndarray
    """(S*A,) radii."""

    def solve(self, z: np.ndarray, f: np.ndarray | None = None):
        """(q (J, S, A), P (J, S, A, S)): the worst case of every (j, s, a) row in one
        compiled call (:func:`~rcmdp_exact.uncertainty.l1_numba.solve_rows`; numba is
        imported on the first call): z (J, S) with f (J, S, A), or z (J, S, A, S)."""
        from .l1_numba import solve_rows

        return solve_rows(self, z, f)


class L1Ball(Frozen, SARectangularSet):
    r"""An sa-rectangular L1 uncertainty set around a nominal model.

    Parameters
    ----------
    nominal : array (S, A, S)
        Nominal transition probabilities :math:`\hat P(s' \mid s, a)`.
    alpha : float or array (S, A)
        Radius of each ball, >= 0.  Values >= 2 allow every distribution on the
        support.
    support : bool array (S, A, S), optional
        Next states that may receive mass (default: all).  ``nominal`` must be zero
        outside the support.
    outcomes : int array (S, A, O), optional
        The outcome map this ball came from (see :meth:`from_outcomes`); stored with
        ``outcome_nominal`` for adversaries that act on outcomes.
    outcome_nominal : array (S, A, O), optional
        Nominal outcome probabilities; must merge to ``nominal``.

    Attributes
    ----------
    nominal, alpha, support, outcomes, outcome_nominal
        Read-only arrays (``outcomes`` and ``outcome_nominal`` may be None).

    Notes
    -----
    Immutable; :meth:`with_alpha` makes a new ball.  Validation errors are
    :class:`~rcmdp_exact.InputError` naming the culprit (s, a).  The first
    implementation of :class:`~rcmdp_exact.uncertainty.UncertaintySet`.
    """

    kind = KIND
    note = "the paper's Hoeffding L1 ball (sa-rectangular)"
    title = "sa-rectangular L1 ball"
    method_hint = " ('sort': exact, batched; 'lp': one cvxpy LP per row, a cross-check)"
    _RADII = ("alpha",)
    #: Keys of a ball saved before files carried a format entry.
    __slots__ = ("_alpha", "_frozen", "_nominal", "_out_nominal", "_outcomes", "_support",
                 "_tiles")

    def __init__(self, nominal, alpha, support=None, *, outcomes=None, outcome_nominal=None):
        object.__setattr__(self, "_frozen", False)
        P = np.array(as_float_array(nominal, "nominal", "give an array (S, A, S)", finite=False))
        if P.ndim != 3 or P.shape[0] != P.shape[2] or 0 in P.shape:
            raise ModelError(
                f"nominal must have shape (S, A, S) with S, A >= 1 and nominal[s, a, s'] the "
                f"probability of s' after a in s, got shape {P.shape}"
            )
        S, A, _ = P.shape
        check_transition_rows(P, "nominal")
        al = radii(alpha, S, A)
        if support is None:
            sup = np.ones((S, A, S), dtype=bool)
        else:
            sup = support_mask(support, S, A, P, "nominal",
                                "put the nominal mass on the support or enlarge it")
        if (outcomes is None) != (outcome_nominal is None):
            raise ModelError("give both outcomes and outcome_nominal, or neither")
        out = q = None
        if outcomes is not None:
            q = np.array(as_float_array(outcome_nominal, "outcome_nominal",
                                        "give (S, A, O) outcome probabilities"))
            out = outcome_map(outcomes, q.shape if q.ndim == 3 else (S, A, -1), S)
            gap = np.abs(merge_outcomes(q, out, S) - P).max(axis=2)
            reach = merge_outcomes(np.ones(out.shape), out, S) > 0
            if (gap > row_tolerance(S)).any() or (reach != sup).any():
                s, a = (int(i) for i in np.argwhere((gap > row_tolerance(S))
                                                    | (reach != sup).any(axis=2))[0])
                raise ModelError(
                    f"the outcome form of ({s}, {a}) disagrees with the state form: "
                    f"outcome_nominal must merge to nominal[{s}, {a}] (largest gap "
                    f"{gap[s, a]:.3e}) and the support must be the states the outcomes "
                    f"reach; build the ball with L1Ball.from_outcomes"
                )
        self._set(P, al, sup, out, q)

    def _set(self, P, al, sup, out, q) -> None:
        """Store validated arrays (read-only) and freeze."""
        object.__setattr__(self, "_frozen", False)
        self._nominal = readonly(P)
        self._alpha = readonly(al)
        self._support = readonly(sup)
        self._outcomes = None if out is None else readonly(out)
        self._out_nominal = None if q is None else readonly(q)
        self._tiles = {}
        self._frozen = True

    @classmethod
    def _trusted(cls, P, al, sup, out=None, q=None) -> L1Ball:
        """A ball of arrays that are already valid (no checks)."""
        uset = object.__new__(cls)
        uset._set(P, al, sup, out, q)
        return uset

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError("L1Ball is immutable; use with_alpha or build a new ball")
        object.__setattr__(self, name, value)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_outcomes(cls, outcome_nominal, alpha, outcomes) -> L1Ball:
        r"""The state-form ball of an outcome-form ball (see the module docstring).

        ``nominal`` is :math:`M\hat q` and ``support`` the states reached by the
        outcomes; the outcome form is kept.
        """
        q = as_float_array(outcome_nominal, "outcome_nominal",
                           "give (S, A, O) outcome probabilities")
        out = outcome_map(outcomes, q.shape if q.ndim == 3 else (-1, -1, -1))
        S = q.shape[0]
        nominal = merge_outcomes(q, out, S)
        support = merge_outcomes(np.ones(q.shape), out, S) > 0
        return cls(nominal, alpha, support, outcomes=out, outcome_nominal=q)

    # ----------------------------------------------------------------- attributes
    @property
    def alpha(self) -> np.ndarray:
        """Radii (S, A)."""
        return self._alpha

    @property
    def outcomes(self) -> np.ndarray | None:
        """Outcome map (S, A, O) of the outcome form, or None."""
        return self._outcomes

    @property
    def outcome_nominal(self) -> np.ndarray | None:
        """Nominal outcome probabilities (S, A, O), or None."""
        return self._out_nominal

    def __repr__(self) -> str:
        form = "" if self._outcomes is None else f", O={self._outcomes.shape[2]} outcomes"
        return (
            f"<L1Ball S={self.n_states}, A={self.n_actions}{form}, alpha in "
            f"[{self._alpha.min():.4g}, {self._alpha.max():.4g}]>"
        )

    # ----------------------------------------------------------------- operations
    def with_alpha(self, alpha) -> L1Ball:
        """The same ball with new radii (only the radii are checked)."""
        S, A = self.n_states, self.n_actions
        return L1Ball._trusted(self._nominal, radii(alpha, S, A), self._support,
                               self._outcomes, self._out_nominal)

    def _absorb_arrays(self, data: dict, ts: np.ndarray) -> None:
        """The terminal rows of the outcome form too: every outcome reaches the state."""
        super()._absorb_arrays(data, ts)
        if "outcomes" in data:
            data["outcomes"][ts] = ts[:, None, None]
            data["outcome_nominal"][ts] = 1.0 / data["outcomes"].shape[2]

    def distance(self, P) -> np.ndarray:
        r""":math:`\|P(\cdot|s,a) - \hat P(\cdot|s,a)\|_1` for every pair, shape (S, A)."""
        return np.abs(self._kernel(P) - self._nominal).sum(axis=2)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``P`` (S, A, S) lies in the set (up to ``tol``), (S, A)."""
        P = self._kernel(P)
        return self._rows_ok(P, tol) & (self.distance(P) <= self._alpha + tol)

    def pull_inside(self, P, keep=None) -> np.ndarray:
        r"""The kernel ``P`` (S, A, S) with every pair outside its radius brought back.

        A pair with :math:`\delta = \|P(s, a) - \hat P(s, a)\|_1 > \alpha(s, a)`
        becomes :math:`\hat P + (\alpha / \delta)(P - \hat P)`: a point of the segment
        to the nominal, at distance exactly :math:`\alpha` (the ball is convex, and both
        ends put mass only on the support when ``P`` does).  The rows of the states
        marked in ``keep`` (S,) bool (terminal states) are kept as they are.
        """
        P = np.array(P, dtype=np.float64)
        gap = P - self._nominal
        dist = np.abs(gap).sum(axis=2)
        outside = dist > self._alpha
        if keep is not None:
            outside &= ~np.asarray(keep, dtype=bool)[:, None]
        scale = np.where(outside, self._alpha / np.where(outside, dist, 1.0), 1.0)
        return np.where(outside[:, :, None], self._nominal + scale[:, :, None] * gap, P)

    #: The ball's solver: a subclass that replaces one of these is solved by its own
    #: (:meth:`compiled_rows` gives None).
    _SOLVER = ("worst_case", "_solve_rows", "_solve_shared")

    def compiled_rows(self) -> L1Rows | None:
        """The ball by (state, action) row for compiled code (:meth:`rows`), or None for a
        subclass that replaces the ball's solver (``worst_case``, ``_solve_rows`` or
        ``_solve_shared``: its answers are its own, so it is solved by them).  The hook of
        :meth:`SARectangularSet.compiled_rows <rcmdp_exact.uncertainty.SARectangularSet.
        compiled_rows>`."""
        own = all(getattr(type(self), m) is getattr(L1Ball, m) for m in self._SOLVER)
        return self.rows() if own else None

    def rows(self) -> L1Rows:
        """The ball by (state, action) row, for compiled code (:class:`L1Rows`)."""
        S, A = self.n_states, self.n_actions
        return L1Rows(
            nominal=np.array(self._nominal.reshape(S * A, S), dtype=np.float64, order="C"),
            support=np.array(self._support.reshape(S * A, S), dtype=np.bool_, order="C"),
            radius=np.array(self._alpha.reshape(S * A), dtype=np.float64, order="C"))

    def outcome_rows(self):
        """The outcome form by row, ``(outcomes (S*A, O) int64, nominal (S*A, O))``, or
        None when the ball has none (the adversary then acts on next states)."""
        if self._outcomes is None:
            return None
        S, A, O = self._outcomes.shape
        return (np.array(self._outcomes.reshape(S * A, O), dtype=np.int64, order="C"),
                np.array(self._out_nominal.reshape(S * A, O), dtype=np.float64, order="C"))

    def _tile(self, J: int):
        """The nominal, radii and support repeated J times (cached: the batched calls of
        the robust engine reuse them)."""
        if J not in self._tiles:
            if len(self._tiles) > 6:
                self._tiles.clear()
            nom = np.ascontiguousarray(np.broadcast_to(self._nominal, (J, *self._nominal.shape)))
            al = np.ascontiguousarray(np.broadcast_to(self._alpha, (J, *self._alpha.shape)))
            sup = None if self.full_support else np.ascontiguousarray(
                np.broadcast_to(self._support, (J, *self._support.shape)))
            self._tiles[J] = (nom, al, sup)
        return self._tiles[J]

    def worst_case(self, z, policy=None, *, method: str = "sort",
                   form: str = "state") -> Result:
        r"""Solve the inner problem of every (s, a): :math:`\min_{p} p^\top z(s, a, \cdot)`.

        The batch flow of every sa-rectangular set
        (:meth:`~rcmdp_exact.uncertainty.SARectangularSet.worst_case`), and the outcome
        form of the ball.

        Parameters
        ----------
        z : array (S,), (J, S), (S, A, S) or (J, S, A, S)
            The quantity minimised over next states: shared by all pairs ((S,), sorted
            once) or per pair, with an optional batch axis J.
        policy : None
            Not used (an sa-rectangular set does not depend on the policy).
        method : {"sort", "lp"}
            See :func:`~rcmdp_exact.uncertainty.l1_sort.worst_case_l1`.
        form : {"state", "outcome"}
            Solve on next states (default) or on outcomes (needs the outcome form; no
            batch axis); both give the same value (see the module docstring).

        Returns
        -------
        Result
            ``p`` (..., S, A, S) worst-case kernel, ``value`` (..., S, A), ``method``,
            ``success``, ``row_success``; the LP method adds ``lp_success``; the outcome
            form returns ``q`` (S, A, O), the worst-case outcome distributions, in place
            of the per-row fields.
        """
        check_choice(form, "form", ("state", "outcome"))
        if form == "state":
            return super().worst_case(z, method=method)
        S, A = self.n_states, self.n_actions
        zz, batched, _ = split_batch(z, S, A)
        check_choice(method, "method", self.methods, hint=self.method_hint)
        if self._outcomes is None:
            raise ModelError(
                "this ball has no outcome form; build it with L1Ball.from_outcomes, "
                "estimate_l1_ball(..., outcomes=...) or from a model with outcomes"
            )
        if batched:
            raise ModelError("form='outcome' takes z of shape (S,) or (S, A, S), without a "
                             "batch axis")
        out = self._outcomes
        zo = zz[out] if zz.ndim == 1 else np.take_along_axis(zz, out, axis=2)
        res = worst_case_l1(self._out_nominal, zo, self._alpha, method=method, check=False,
                            progress=False)
        return Result(
            p=merge_outcomes(res.p, out, S), value=res.value, q=res.p, method=method,
            success=res.success,
        )

    def _result(self, res, method):
        """(p, value, ok, extra) of a result of worst_case_l1."""
        if method == "lp":
            ok = (np.asarray(res.lp_status) == "optimal") & (
                np.asarray(res.violation) <= 1e-8)
            return res.p, res.value, ok, {"lp_success": ok}
        return res.p, res.value, res.success, {}

    def _solve_rows(self, Z, J, method):
        S, A = self.n_states, self.n_actions
        zz = Z.reshape(J, S, A, S)
        if J == 1:
            sup = None if self.full_support else self._support
            res = worst_case_l1(self._nominal, zz[0], self._alpha, sup, method=method,
                                check=False, progress=False)
        else:
            nom, al, supj = self._tile(J)
            res = worst_case_l1(nom, zz, al, supj, method=method, check=False,
                                progress=False)
        p, val, ok, extra = self._result(res, method)
        return (np.reshape(p, (J * S * A, S)), np.reshape(val, -1),
                np.reshape(ok, -1) if np.ndim(ok) else ok,
                {k: np.reshape(v, -1) for k, v in extra.items()})

    def _solve_shared(self, z, method):
        """One vector per state: each is sorted once for every pair."""
        S, A = self.n_states, self.n_actions
        sup = None if self.full_support else self._support
        parts = [self._result(worst_case_l1(self._nominal, zj, self._alpha, sup,
                                            method=method, check=False, progress=False),
                              method) for zj in z]
        ok = [np.broadcast_to(np.asarray(part[2], dtype=bool), (S, A)) for part in parts]
        extra = {k: np.stack([part[3][k] for part in parts]).reshape(-1)
                 for k in parts[0][3]}
        return (np.stack([part[0] for part in parts]).reshape(-1, S),
                np.stack([part[1] for part in parts]).reshape(-1),
                np.stack(ok).reshape(-1), extra)

    def row_vertices(self, s: int, a: int) -> np.ndarray:
        """The vertices of the ball's row (s, a) (:func:`~rcmdp_exact.uncertainty.
        l1_vertices`)."""
        s, a = self._pair(s, a)
        return l1_vertices(self._nominal[s, a], self._alpha[s, a], self._support[s, a])

    # ----------------------------------------------------------------- the kind
    @classmethod
    def l1_level_radius(cls, level: float) -> float:
        r"""The L1 ball of level r is itself: radius :math:`r`."""
        return float(level)

    @classmethod
    def from_counts(cls, counts, *, delta: float, hoeffding_l1: L1Ball) -> L1Ball:
        """The kind ``l1`` of an estimation: the paper's Hoeffding ball ``hoeffding_l1``
        itself (:func:`~rcmdp_exact.estimate`, on outcomes when the model has them)."""
        kind_delta(delta)
        return hoeffding_l1

    @classmethod
    def around(cls, model, radius: float, support: str = "nominal") -> L1Ball:
        """The kind ``l1`` around ``model``'s own kernel: :func:`l1_ball` of radius
        ``min(radius, 2)`` on ``support`` ("nominal", "all" or "outcomes")."""
        radius = kind_radius(radius)
        return l1_ball(model, min(float(radius), 2.0), support=support)

    @classmethod
    def strategy(cls, model, *, max_radius: float = 2.0, support=("all", "nominal"),
                 grid: int | None = 4):
        """Hypothesis strategy of balls around ``model.P``: a radius per pair in [0,
        max_radius] (0 at terminal states), support every state or the nominal's."""
        check_strategy(grid, max_radius=max_radius)
        from hypothesis import strategies as st

        from ._draw import pair_radii, supports

        return st.tuples(supports(model, support), pair_radii(model, max_radius, grid=grid)
                         ).map(lambda t: cls(model.P, t[1], t[0]))

    # ----------------------------------------------------------------- persistence
    def _arrays(self) -> dict:
        arrays = {"nominal": self._nominal, "alpha": self._alpha, "support": self._support}
        if self._outcomes is not None:
            arrays["outcomes"] = self._outcomes
            arrays["outcome_nominal"] = self._out_nominal
        return arrays

    @classmethod
    def _from_arrays(cls, data: dict) -> L1Ball:
        kw = {}
        if "outcomes" in data:
            kw = {"outcomes": data["outcomes"], "outcome_nominal": data["outcome_nominal"]}
        return cls(data["nominal"], data["alpha"], data["support"], **kw)


_SUPPORTS = ("auto", "all", "nominal", "outcomes")


def l1_ball(model: TabularCMDP, alpha, support="auto") -> L1Ball:
    r"""An L1 ball around a model's own transitions with the given radius.

    Parameters
    ----------
    model : TabularCMDP
    alpha : float or array (S, A)
        Radii.
    support : {"auto", "all", "nominal", "outcomes"} or bool array (S, A, S)
        ``"outcomes"``: the states the model's outcomes reach (the ball keeps the
        outcome form, each state's mass on the first outcome reaching it);
        ``"all"``: every state; ``"nominal"``: the support of ``model.P`` (no new
        next states); ``"auto"`` (default): ``"outcomes"`` when the model has
        outcomes, else ``"all"``.

    Terminal rows are the model's self-loop with radius 0.
    """
    check_model(model)
    P = model.P
    S, A = model.n_states, model.n_actions
    al = radii(alpha, S, A)
    if not isinstance(support, str):
        return L1Ball(P, al, support).absorb_terminal(model.terminal)
    check_choice(support, "support", _SUPPORTS)
    if support == "auto":
        support = "outcomes" if model.outcomes is not None else "all"
    if support == "outcomes":
        if model.outcomes is None:
            raise ModelError("support='outcomes' needs a model with outcomes; use 'all' "
                             "or 'nominal'")
        # the model's validation put all of P's mass on states its outcomes reach
        q = first_outcome_split(P, model.outcomes)
        reach = merge_outcomes(np.ones(q.shape), model.outcomes, S) > 0
        uset = L1Ball._trusted(P, al, reach, model.outcomes, q)
    elif support == "all":
        uset = L1Ball._trusted(P, al, np.ones((S, A, S), dtype=bool))
    else:
        uset = L1Ball._trusted(P, al, P > 0)
    return uset.absorb_terminal(model.terminal)


# --------------------------------------------------------------------------- estimation
#: Radii of :func:`estimate_l1_ball`.
_L1_BOUNDS = ("hoeffding", "weissman")


def _radius_inputs(n, delta) -> tuple[np.ndarray, float]:
    """The counts (all > 0) and the error probability in (0, 1) of a radius formula."""
    d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                   hint=" (the error probability)")
    n = as_float_array(n, "counts n(s, a)", "give positive counts")
    if (n <= 0).any():
        raise ModelError("every count n(s, a) must be > 0 to define a radius; use a "
                         "pseudo-count")
    return n, d


def _sizes(n_outcomes, n_states, n_actions) -> tuple[int, int, int]:
    """S', S and A of a radius, each an integer in 1..10^18 (a count of states or
    actions; beyond float64's integers the radius's logarithm is not computed)."""
    return (check_int(n_outcomes, "n_outcomes", 1, 10**18),
            check_int(n_states, "n_states", 1, 10**18),
            check_int(n_actions, "n_actions", 1, 10**18))


def hoeffding_radius(n, n_outcomes: int, n_states: int, n_actions: int,
                     delta: float = 0.1) -> np.ndarray:
    r"""The paper's Hoeffding radius :math:`\sqrt{\frac{2}{n} \ln \frac{2^{S'} S A}{\delta}}`.

    Computed as :math:`\sqrt{2 (S' \ln 2 + \ln(S A / \delta)) / n}` (no overflow of
    :math:`2^{S'}`).

    >>> round(float(hoeffding_radius(100, 5, 25, 4, 0.1)), 6)  # a navigation pair
    0.455489
    """
    n, d = _radius_inputs(n, delta)
    Sp, S, A = _sizes(n_outcomes, n_states, n_actions)
    log_term = Sp * math.log(2.0) + math.log(S) + math.log(A) - math.log(d)  # no overflow
    return np.sqrt(2.0 * log_term / n)


def weissman_radius(n, n_outcomes: int, n_states: int, n_actions: int,
                    delta: float = 0.1) -> np.ndarray:
    r"""The L1 radius of Weissman et al. 2003 with a union bound over the S A pairs.

    Their inequality for the empirical distribution :math:`\hat f` of n samples on
    :math:`S'` outcomes, :math:`P(\|\hat f - p\|_1 \ge \epsilon) \le (2^{S'} - 2)
    e^{-n \epsilon^2 / 2}`, set to :math:`\delta / (S A)` per pair:

    .. math::

        \epsilon = \sqrt{\frac{2}{n} \Bigl(\ln(2^{S'} - 2) + \ln\frac{S A}{\delta}
        \Bigr)},

    computed with :math:`\ln(2^{S'} - 2) = S' \ln 2 + \ln(1 - 2^{1 - S'})` (no overflow);
    0 for a single outcome (nothing to estimate).  Slightly smaller than
    :func:`hoeffding_radius` (which has :math:`2^{S'}` in place of :math:`2^{S'} - 2`).

    >>> round(float(weissman_radius(100, 5, 25, 4, 0.1)), 6)
    0.454069
    """
    n, d = _radius_inputs(n, delta)
    Sp, S, A = _sizes(n_outcomes, n_states, n_actions)
    if Sp == 1:
        return np.zeros(n.shape)
    log_term = (Sp * math.log(2.0) + math.log1p(-(2.0 ** (1 - Sp))) + math.log(S) + math.log(A)
                - math.log(d))  # ln(S A / delta) as a sum: no overflow for a subnormal delta
    return np.sqrt(2.0 * log_term / n)


def estimate_l1_ball(counts, delta: float = 0.1, n_outcomes: int | None = None, *,
                     outcomes=None, pseudo_count: float = 1.0, support=None,
                     bound: str = "hoeffding") -> L1Ball:
    r"""The Hoeffding L1 ball of observed counts (the paper's phase 1).

    Parameters
    ----------
    counts : array (S, A, O)
        Observed transitions, without pseudo-counts: over outcomes when ``outcomes``
        is given, else over next states (O = S).
    delta : float in (0, 1)
        Error probability (0.1: a 90% set).
    n_outcomes : int, optional
        :math:`S'` of the radius; default O (the number of outcomes, or S).
    outcomes : int array (S, A, O), optional
        Next state of each outcome; the ball is merged into the state form and keeps
        the outcome form.
    pseudo_count : float >= 0
        Added to every outcome (every supported next state in the state form) before
        normalising; 1 in the paper.
    support : bool array (S, A, S), optional
        State form only: the next states that get the pseudo-count and may receive
        mass (default: all); counts outside it are an error.
    bound : {"hoeffding", "weissman"}
        The radius: :func:`hoeffding_radius` (the paper's, default) or
        :func:`weissman_radius` (Weissman et al. 2003, slightly smaller).  Both hold
        with probability at least :math:`1 - \delta` for the empirical frequencies of
        :math:`n(s, a)` independent samples, i.e. with ``pseudo_count=0``; with
        pseudo-counts the centre moves and n includes them (the paper's convention).

    Returns
    -------
    L1Ball
        nominal :math:`\hat P = (n + \text{pseudo}) / n(s, a)`, alpha from the chosen
        bound with :math:`n(s, a)` including the pseudo-counts.
    """
    c = as_float_array(counts, "counts", "give an array (S, A, O) of counts")
    if c.ndim != 3 or 0 in c.shape:
        raise ModelError(f"counts must have shape (S, A, O) with S, A, O >= 1, got {c.shape}")
    S, A, O = c.shape
    check_nonnegative(c, "counts", "counts")
    pc = check_pseudo_count(pseudo_count)
    if outcomes is None:
        check_shape(c, (S, A, S), "counts over next states (pass outcomes=model.outcomes "
                                  "for counts over outcomes)", ("s", "a", "s'"))
        mask = (np.ones((S, A, S), dtype=bool) if support is None else
                support_mask(support, S, A, c, "counts", "enlarge the support"))
    elif support is not None:
        raise ModelError("give either outcomes or support, not both")
    else:
        mask = np.ones((S, A, O), dtype=bool)
    total, n = smoothed_counts(c, pc, mask, "L1 ball")
    q = total / n[:, :, None]
    Sp = O if n_outcomes is None else check_int(n_outcomes, "n_outcomes", 1)
    check_choice(bound, "bound", _L1_BOUNDS)
    radius = hoeffding_radius if bound == "hoeffding" else weissman_radius
    alpha = radius(n, Sp, S, A, delta)
    if outcomes is None:
        return L1Ball(q, alpha, None if support is None else mask)
    return L1Ball.from_outcomes(q, alpha, outcome_map(outcomes, c.shape))
