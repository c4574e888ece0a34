r"""Re-certify the stored lower sides of the suite's data file.

A record's lower side claims: the stored policy :math:`\pi_\ell` is robust-feasible,
:math:`\max_P C_k(\pi_\ell, P) \le d_k` for every k, and its worst-case value is at
least the stored ``lower``, :math:`\min_P V(\pi_\ell, P) \ge` lower.  :func:`verify`
rebuilds each record's model and set from the instance's builder (not from the file:
only the budget and the policy come from it), evaluates the stored policy exactly
(:func:`~rcmdp_exact.robust_evaluate`: robust policy iteration to a residual of
1e-12, each cost under its own maximising kernel) and checks both claims with the
tolerance ``tol * max(1, |value|)``.

A record of status ``infeasible`` claims that no policy is robust-feasible because the
least worst-case cost of one constraint, :math:`\min_\pi \max_P C_k(\pi, P)`, exceeds
its budget.  :func:`verify` recomputes that least cost by a second method, robust value
iteration on the reward :math:`-c_k` (:func:`~rcmdp_exact.robust_value_iteration` with
a zero reward and the multiplier :math:`e_k`), and confirms the claim when the least
cost, less the iteration's suboptimality bound, exceeds the budget by more than the
tolerance.  Other records without a stored lower policy (no robust-feasible policy was
found within the budget, or the bracket was not attempted) are skipped and counted.
"""

from __future__ import annotations

import time

import numpy as np

from .._result import Result

__all__ = ["verify", "verify_record"]


def verify_record(rec: dict, tol: float = 1e-7) -> dict:
    """One record's check: a dict with ``key``, ``lower``, ``value``, ``costs``,
    ``budget``, ``ok`` and ``why`` (empty when ok; None as ``ok`` when the record has
    no lower policy and is not ``infeasible``).  An ``infeasible`` record's row has the
    recomputed least worst-case costs as ``costs`` and, when confirmed, the sentence
    ``confirmed``."""
    import warnings

    from ..robust import robust_evaluate
    from .sets import build_set
    from .store import definition

    inst = definition(rec["instance"])
    b = rec["bracket"]
    budget = np.asarray(rec["budget"], dtype=np.float64)
    row = dict(key=rec["key"], lower=b.get("lower"), value=None, costs=[],
               budget=budget.tolist(), ok=None, why="no lower policy stored")
    pol = b.get("lower_policy")
    if pol is None and b.get("status") != "infeasible":
        return row
    base = inst.build()
    model = base.replace(d=budget)
    uset = build_set(base, rec["kind"], rec["r"], inst.support)
    if pol is None:
        return _verify_infeasible(row, model, uset, budget, tol)
    pol = np.asarray(pol, dtype=np.float64)
    why = []
    if pol.shape != (model.n_states, model.n_actions) or np.any(pol < 0) or not np.allclose(
            pol.sum(axis=1), 1.0, rtol=0.0, atol=1e-9):
        row.update(ok=False, why=f"the stored policy is not an (S, A) = "
                                 f"{(model.n_states, model.n_actions)} stochastic table")
        return row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = robust_evaluate(model, pol, uset, progress=False)
    value = float(ev.value)
    costs = np.atleast_1d(np.asarray(ev.costs_worst, dtype=np.float64))
    if not ev.converged:
        why.append("the robust evaluation did not converge")
    lower = b.get("lower")
    if lower is None or not value >= float(lower) - tol * max(1.0, abs(value)):
        why.append(f"robust value {value:.10g} < stored lower {lower}")
    for k, (c, dk) in enumerate(zip(costs, budget, strict=True)):
        if not c <= dk + tol * max(1.0, abs(dk)):
            why.append(f"worst-case cost {k} {c:.10g} > budget {dk:.10g}")
    row.update(value=value, costs=costs.tolist(), ok=not why, why="; ".join(why))
    return row


def _verify_infeasible(row: dict, model, uset, budget: np.ndarray, tol: float) -> dict:
    """Confirm an ``infeasible`` record: some constraint's least worst-case cost,
    recomputed by robust value iteration, exceeds its budget (the ``costs`` of the row
    are the certified lower bounds on the least costs)."""
    import warnings

    from ..robust import robust_value_iteration

    zero = model.replace(R=np.zeros_like(model.R))
    least = []
    for k in range(model.n_constraints):
        lam = np.zeros(model.n_constraints)
        lam[k] = 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rv = robust_value_iteration(zero, uset, lam=lam, progress=False)
        # max_pi min_P (-C_k) = -min_pi max_P C_k, to within the suboptimality bound
        least.append(-float(rv.value) - float(rv.suboptimality_bound)
                     if rv.converged else -np.inf)
    least = np.asarray(least)
    stalled = np.flatnonzero(least == -np.inf).tolist()  # not converged: no measurement
    over = least > budget + tol * np.maximum(1.0, np.abs(budget))
    if over.any():
        k = int(np.argmax(over))
        row.update(costs=least.tolist(), ok=True,
                   why="", value=None,
                   confirmed=f"infeasible: the least worst-case cost of constraint {k} is "
                             f"at least {least[k]:.10g} > budget {budget[k]:.10g}")
    else:
        row.update(costs=least.tolist(), ok=False,
                   why="stored as infeasible, but no constraint's least worst-case cost "
                       "(robust value iteration) exceeds its budget: "
                       + ", ".join(f"{c:.10g} vs {d:.10g}" for c, d in zip(
                           least, budget, strict=True))
                       + (f" (robust value iteration did not converge for constraints "
                          f"{stalled})" if stalled else ""))
    return row


def verify(names=None, *, path=None, tol: float = 1e-7, progress: bool | None = None) -> Result:
    """Re-certify the lower side of every record of ``names`` (default: all) in the data
    file ``path`` (default: the shipped one).

    Returns a :class:`~rcmdp_exact.Result` with ``rows`` (one dict per record, see
    :func:`verify_record`), ``checked`` (lower sides and infeasibility claims),
    ``infeasible`` (of those, the infeasibility claims confirmed), ``failed``,
    ``skipped``, ``seconds`` and ``success`` (no failure).
    """
    from .._checks import InputError, check_real
    from .._progress import progress_default, tqdm
    from .store import data, definition

    check_real(tol, "tol", 0.0, 1.0)
    if names is not None:
        if isinstance(names, str):
            names = [names]
        for n in names:
            definition(n)
    recs = [r for r in data(path)["records"] if names is None or r["instance"] in names]
    if not recs:
        raise InputError("the data file has no record of these instances; rcmdp suite list "
                         "names the instances it holds")
    t0 = time.perf_counter()
    rows = []
    for rec in tqdm(recs, desc="rcmdp suite verify", disable=not progress_default(progress)):
        rows.append(verify_record(rec, tol))
    failed = sum(r["ok"] is False for r in rows)
    skipped = sum(r["ok"] is None for r in rows)
    infeasible = sum("confirmed" in r for r in rows)
    return Result(rows=rows, checked=len(rows) - skipped, failed=failed, skipped=skipped,
                  infeasible=infeasible, seconds=time.perf_counter() - t0,
                  success=failed == 0, status="verified" if failed == 0 else "failed",
                  message=f"{len(rows) - skipped - infeasible} lower sides and "
                          f"{infeasible} infeasibility claims re-certified, {failed} "
                          f"failed")
