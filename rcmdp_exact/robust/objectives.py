r"""What an adversary minimises: the value, the worst constraint cost, or the Lagrangian.

A :class:`WorstCaseObjective` names the reward :math:`g(s, a, s')` whose discounted sum
the adversary minimises: ``value`` (:math:`R`), ``constraint`` (:math:`-\sum_k C_k`, the
most cost) or ``lagrangian`` (:math:`R - \lambda^\top C`, the paper's Eq.
"robustlagrangian"), and carries the multipliers of the Lagrangian.
:func:`resolve_objective` is the one place that decides which multipliers a robust
computation uses when they come from both the objective and a ``lam`` argument.
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    InputError,
    as_float_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_shape,
    readonly,
)
from ..core.model import TabularCMDP

__all__ = ["OBJECTIVES", "WorstCaseObjective", "resolve_objective", "worst_case_objective"]

#: Names of the quantities an adversary can robustify.
OBJECTIVES = ("value", "constraint", "lagrangian")


class WorstCaseObjective:
    r"""The quantity an adversary minimises: ``value``, ``constraint`` or ``lagrangian``.

    Built by :func:`worst_case_objective`.  ``name`` and ``lam`` (K,) are read-only.
    """

    __slots__ = ("_lam", "_name")

    def __init__(self, name: str, lam: np.ndarray):
        self._name = name
        self._lam = lam

    @property
    def name(self) -> str:
        return self._name

    @property
    def lam(self) -> np.ndarray:
        return self._lam

    def __repr__(self) -> str:
        lam = "" if self._name != "lagrangian" else f", lam={self._lam.tolist()}"
        return f"WorstCaseObjective({self._name!r}{lam})"

    def lam_for(self, model: TabularCMDP) -> np.ndarray:
        check_shape(self._lam, (model.n_constraints,),
                    "the objective's multipliers (one per constraint of the model)", ("k",))
        return self._lam

    def transition_reward(self, model: TabularCMDP) -> np.ndarray:
        r"""The reward :math:`g(s, a, s')` (S, A, S) whose discounted sum is minimised."""
        if self._name == "value":
            return np.asarray(model.R)
        if self._name == "constraint":
            check_int(model.n_constraints, "the number of constraints K of a model whose "
                      "worst 'constraint' is asked for", 1)
            return -np.asarray(model.C).sum(axis=3)
        lam = self.lam_for(model)
        return np.asarray(model.R) - np.asarray(model.C) @ lam

    def scalarise(self, v, c) -> np.ndarray:
        r""":math:`W` from a value V (...,) and costs C (..., K)."""
        v = np.asarray(v, dtype=np.float64)
        if self._name == "value":
            return v
        c = np.asarray(c, dtype=np.float64)
        if self._name == "constraint":
            return -c.sum(axis=-1)
        return v - c @ self._lam


def worst_case_objective(objective="value", lam=None, model: TabularCMDP | None = None
                         ) -> WorstCaseObjective:
    r"""Validate an objective name (or pass a :class:`WorstCaseObjective` through).

    Parameters
    ----------
    objective : {"value", "constraint", "lagrangian"} or WorstCaseObjective
    lam : float or array (K,), optional
        Multipliers of the Lagrangian (default 0); ignored by the other objectives.
    model : TabularCMDP, optional
        Checks ``lam`` against the number of constraints.
    """
    if isinstance(objective, WorstCaseObjective):
        if model is not None:
            objective.lam_for(model)
        return objective
    check_choice(objective, "objective", OBJECTIVES,
                 hint=" (worst value, worst constraint cost, or worst Lagrangian r - lam.c)")
    if model is not None:
        lam_arr = model.check_multipliers(lam)
    else:
        lam_arr = np.atleast_1d(as_float_array(0.0 if lam is None else lam, "lam",
                                               "give one multiplier per constraint"))
        check_nonnegative(lam_arr, "lam", "Lagrange multipliers")
    return WorstCaseObjective(objective, readonly(lam_arr.copy()))


def resolve_objective(objective, lam, model: TabularCMDP):
    """The objective and the multipliers (K,) of a robust computation, from one channel.

    A :class:`WorstCaseObjective` carries its own multipliers; a ``lam`` given beside it
    must equal them (the reported ``lagrangian`` and the adversary's reward then use the
    same numbers); with ``lam=None`` the objective's are used.  A name takes ``lam``
    (default 0).  Returns ``(objective, lam)``.
    """
    if isinstance(objective, WorstCaseObjective):
        obj_lam = objective.lam_for(model)
        if lam is None:
            return objective, np.array(obj_lam)
        lam_arr = model.check_multipliers(lam)
        if not np.array_equal(lam_arr, obj_lam):
            raise InputError(
                f"lam = {lam_arr.tolist()} differs from the multipliers {obj_lam.tolist()} "
                f"of the objective {objective!r}; give the multipliers once (in the "
                f"objective, or as lam with the objective's name)"
            )
        return objective, lam_arr
    obj = worst_case_objective(objective, lam, model)
    return obj, np.array(obj.lam)
