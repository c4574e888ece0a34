r"""Where strong duality fails, certified: the Lagrangian dual of a suite record beside its
bracket.

For an RCMDP (each constraint against its own adversary) the optimum OPT and the
Lagrangian dual

.. math::

    D = \min_{\lambda \ge 0} g(\lambda), \qquad
    g(\lambda) = \max_\pi \min_{P \in \mathcal P} [V_r - \lambda^\top C](\pi, P)
                 + \lambda^\top d,

satisfy OPT :math:`\le` D (weak duality, for every set); strong duality (OPT = D) holds for
CMDPs but can fail for RCMDPs, which is what separates the primal-dual planners
(:mod:`.primal_dual`, :mod:`.mirror`, the RCPG learners: they can only reach D's
saddle points) from the primal-only ones (:mod:`.epigraph`, :mod:`.switching`,
:mod:`.rrpo`).  :func:`record_duality_gap` certifies the gap on one record of the suite:
the certified interval [lo, hi] on D (:func:`~rcmdp_exact.ground_truth.certified_dual`)
and the record's bracket ``lower <= OPT <= upper`` give

.. math::

    \text{lo} - \text{upper} \;\le\; D - \mathrm{OPT} \;\le\; \text{hi} - \text{lower},

so ``lo > upper`` proves that strong duality fails on that record
(:func:`~rcmdp_exact.ground_truth.duality_gap`).  A record without a feasible policy has
no OPT to compare with (``strong_duality = "no_primal"``).  ``certified_dual`` also
works for s-rectangular sets: weak duality and the slope bounds it uses hold for any
set, and each :math:`g(\lambda)` is the robust MDP value the robust engine finds for an
s-rectangular set (its adversary answers the randomised policy).
"""

from __future__ import annotations

import math

from .._checks import InputError, check_int, check_real
from .._result import Result

__all__ = ["record_duality_gap"]


def _bracket_of(record) -> tuple[float, float]:
    if not isinstance(record, dict) or not isinstance(record.get("bracket"), dict):
        raise InputError("record must be a suite record (a dict with a 'bracket'), as "
                         "rcmdp_exact.suite.load(name, set=..., level=...) returns it")
    b = record["bracket"]
    lower = b.get("lower")
    upper = b.get("upper")
    lower = -math.inf if lower is None else float(lower)
    upper = math.inf if upper is None else float(upper)
    return lower, upper


def _same_model(model, record) -> None:
    """The record's sizes and discount are the model's (a bracket of another model would
    make the gap's claim about strong duality a false one)."""
    from ..core.model import check_model

    check_model(model)
    have = dict(S=model.n_states, A=model.n_actions, K=model.n_constraints,
                gamma=float(model.gamma))
    for field, value in have.items():
        stored = record.get(field)
        if stored is None:
            continue
        same = math.isclose(float(stored), value, rel_tol=1e-12, abs_tol=0.0) \
            if field == "gamma" else int(stored) == value
        if not same:
            raise InputError(f"record {record.get('key')!r} is of a model with {field} = "
                             f"{stored}, the model given has {field} = {value}; give the "
                             f"model and set of that record (rcmdp_exact.suite.load("
                             f"name, set=..., level=...))")


def record_duality_gap(model, uset, record, *, tol: float = 1e-6,
                       max_evaluations: int = 400) -> Result:
    r"""The certified duality gap of one suite record (module notes).

    Parameters
    ----------
    model, uset, record
        What :func:`rcmdp_exact.suite.load` returns for the record (``suite.load(name,
        set=kind, level=r)``; a :class:`~rcmdp_exact.suite.Loaded` tuple unpacks into
        them).
    tol, max_evaluations
        Of :func:`~rcmdp_exact.ground_truth.certified_dual` (a budget of robust fixed
        points, not a clock: the answer depends on the inputs alone).

    Returns
    -------
    Result
        ``key`` (the record's), ``lower``, ``upper`` (the record's bracket; -inf / inf
        when a side is missing), ``dual_lo``, ``dual_hi`` (the certified interval on D),
        ``gap_lo``, ``gap_hi`` (certified bounds on D - OPT), ``strong_duality``
        ("fails", "holds", "undecided", "inconsistent", or "no_primal" when the record
        has no robust-feasible policy), ``lam`` (the dual's multipliers), ``dual`` (the
        full :func:`certified_dual` result), ``message``.
    """
    from ..ground_truth import certified_dual, duality_gap

    lower, upper = _bracket_of(record)
    _same_model(model, record)
    check_real(tol, "tol", 0.0, low_open=True)
    check_int(max_evaluations, "max_evaluations", 2)
    dual = certified_dual(model, uset, tol=tol, max_evaluations=int(max_evaluations))
    key = record.get("key")
    base = dict(key=key, lower=lower, upper=upper, dual_lo=float(dual.lo),
                dual_hi=float(dual.hi), lam=dual.lam, dual=dual)
    if not math.isfinite(upper) or not math.isfinite(lower):
        return Result(**base, gap_lo=math.nan, gap_hi=math.nan, strong_duality="no_primal",
                      message=f"{key}: the record has no robust-feasible policy (bracket "
                              f"[{lower}, {upper}]); D lies in [{dual.lo:.9g}, "
                              f"{dual.hi:.9g}]")
    gap = duality_gap(model, uset, {"lower": lower, "upper": upper}, dual=dual)
    return Result(**base, gap_lo=float(gap.lo), gap_hi=float(gap.hi),
                  strong_duality=gap.strong_duality, message=f"{key}: {gap.message}")
