r"""Check every field of every record of the suite's data file by a second method.

:func:`_verify_record` rebuilds the record's model (the frozen instance, checked against
its checksum) and set, and recomputes, with ``tol`` = 1e-7 (relative, times
:math:`\max(1, |x|)`) plus each recomputation's own error bound:

* **the levels and the budget** -- ``least`` and the robust optimum by a certificate:
  the stored least-cost policy and robust optimum are evaluated exactly, and one robust
  Bellman step over all policies bounds the optimum they claim, :math:`|x^* - p_0
  \cdot w| \le \|T w - w\|_\infty / (1 - \gamma)` (a second method beside the robust
  policy iteration that made them); ``free``: the same over the box of the
  robust-optimal actions found from the free policy's values (the free policy must be
  robust-optimal and cost ``free``); ``budget`` from the instance's rule, ``binds``;
* **the three optima** -- ``nominal_optimum`` by value iteration
  (:func:`~rcmdp_exact.core.mdp.solve_mdp`, where certify used policy iteration),
  ``robust_optimum`` as above, ``cmdp_optimum`` by the Lagrangian dual
  :math:`\min_{\mu \ge 0} \max_\pi [V(\pi) - \mu^\top (C(\pi) - d)]` (a golden-section
  search over :math:`\mu` of exact MDP solves; one constraint), where certify used the
  occupancy LP;
* **the lower side** -- the stored ``lower_policy`` is a stochastic table (a NaN is
  named as one), its exact worst-case value (:func:`~rcmdp_exact.robust_evaluate`)
  equals ``lower`` and its worst-case costs equal ``lower_costs`` and are within the
  budget;
* **the upper side** -- ``upper >= lower``, and ``upper`` is at most each cap
  (recomputed: the robust and nominal optima, the CMDP dual, the value range) and the
  stored ``caps`` agree with them; ``gap`` and ``relative_gap``;
* **the claims** -- ``infeasible``: the least worst-case cost exceeds the budget;
  ``no_feasible_policy``: refuted when (one constraint) the least cost is within the
  budget, since the least-cost policy is then robust-feasible.

Every failure names the record, the field and both numbers (stored, recomputed).
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from .._result import Result

__all__ = ["verify",]


class _Checks:
    """The failures of one record: ``compare`` and ``fail`` add (field, stored,
    recomputed, why)."""

    def __init__(self, tol: float):
        self.tol = tol
        self.failures: list = []
        self.n = 0

    def fail(self, field: str, stored, recomputed, why: str) -> None:
        self.failures.append(dict(field=field, stored=stored, recomputed=recomputed,
                                  why=why))

    def slack(self, x: float, err: float = 0.0) -> float:
        return self.tol * max(1.0, abs(x)) + abs(err)

    def equal(self, field: str, stored, recomputed: float, err: float = 0.0) -> None:
        self.n += 1
        if stored is None or not isinstance(stored, int | float) or not math.isfinite(
                recomputed) or abs(float(stored) - recomputed) > self.slack(recomputed,
                                                                           err):
            self.fail(field, stored, recomputed, "differs from the recomputed value")

    def at_most(self, field: str, stored, bound: float, err: float = 0.0,
                what: str = "") -> None:
        self.n += 1
        if stored is None or not float(stored) <= bound + self.slack(bound, err):
            self.fail(field, stored, bound, f"exceeds {what}")

    def at_least(self, field: str, stored, bound: float, what: str = "") -> None:
        self.n += 1
        if stored is None or not float(stored) >= bound - self.slack(bound):
            self.fail(field, stored, bound, f"is below {what}")


def _policy_table(checks, field, pol, S, A):
    """The stored policy as an (S, A) stochastic array, or None (a failure named)."""
    arr = np.asarray(pol, dtype=np.float64) if pol is not None else None
    if arr is None or arr.shape != (S, A):
        checks.fail(field, None if arr is None else list(arr.shape), [S, A],
                    "is not an (S, A) table")
        return None
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        checks.fail(field, float(arr[tuple(bad)]), None,
                    f"holds a non-finite entry (NaN or inf) at state {bad[0]}, action "
                    f"{bad[1]}")
        return None
    if np.any(arr < 0) or not np.allclose(arr.sum(axis=1), 1.0, rtol=0.0, atol=1e-9):
        s = int(np.argmax(np.abs(arr.sum(axis=1) - 1.0) + (arr < 0).any(axis=1)))
        checks.fail(field, float(arr[s].sum()), 1.0,
                    f"is not a distribution in state {s} (negative entries or a sum not 1)")
        return None
    return arr


def _cmdp_dual(model, d: float, iters: int = 60):
    """min over mu >= 0 of D(mu) = max_pi [V - mu C] + mu d (exact MDP solves, golden
    section), the CMDP optimum by strong duality, one constraint; returns (D, error of
    the solves)."""
    from ..core.mdp import solve_mdp

    seen: dict = {}

    def D(mu):
        if mu not in seen:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                sol = solve_mdp(model, lam=[mu])
            seen[mu] = (float(sol.value) + mu * d, float(sol.error_bound))
        return seen[mu]

    hi = 1.0
    while hi < 1e12 and D(2 * hi)[0] < D(hi)[0]:
        hi *= 2.0
    if hi >= 1e12:  # D falls without end: no policy meets the budget on the nominal kernel
        return -np.inf, 0.0
    lo, hi = 0.0, 2.0 * hi
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    fa, fb = D(a)[0], D(b)[0]
    for _ in range(iters):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - phi * (hi - lo)
            fa = D(a)[0]
        else:
            lo, a, fa = a, b, fb
            b = lo + phi * (hi - lo)
            fb = D(b)[0]
    best = min((D(0.0), D(a), D(b), D(lo), D(hi)), key=lambda t: t[0])
    return best


def _verify_record(rec: dict, tol: float = 1e-7) -> dict:
    """One record's checks (module notes): a dict with ``key``, ``ok`` (no failure),
    ``failures`` (dicts with ``field``, ``stored``, ``recomputed``, ``why``), ``checks``
    (how many comparisons) and, for the table, ``lower``, ``value`` (the lower policy's
    exact worst-case value), ``costs``, ``budget`` and ``confirmed`` (what a claim of
    infeasibility was confirmed by)."""
    from ..core.mdp import solve_mdp
    from ..domains.classic import optimal_actions
    from ..robust import robust_evaluate
    from ..robust.engine import RobustGame
    from .candidates import caps as caps_of
    from .certify import relative_gap
    from .sets import build_set, radius_of
    from .store import definition

    c = _Checks(tol)
    row = dict(key=rec.get("key"), lower=None, value=None, costs=[], budget=[],
               confirmed=None)
    try:
        inst = definition(rec["instance"])
        kind, level = rec["kind"], float(rec["level"])
        b = rec["bracket"]
        d = np.asarray(rec["budget"], dtype=np.float64)
    except (KeyError, TypeError, ValueError) as exc:
        c.fail("record", None, None, f"is not a suite record ({exc})")
        return dict(row, ok=False, failures=c.failures, checks=c.n)
    row.update(lower=b.get("lower"), budget=d.tolist())
    base = inst.build()
    model = base.replace(d=d)
    uset = build_set(base, kind, level, inst.support)
    game = RobustGame(model, uset)
    S, A, K, gamma = model.n_states, model.n_actions, model.n_constraints, model.gamma
    for field, want in (("S", S), ("A", A), ("K", K), ("gamma", gamma),
                        ("radius", radius_of(kind, level))):
        c.equal(field, rec.get(field), float(want))
    # ---------------------------------------------------------------- the levels
    free = _policy_table(c, "free_policy", rec.get("free_policy"), S, A)
    least_pi = _policy_table(c, "least_policy", rec.get("least_policy"), S, A)
    if free is None or least_pi is None:
        return dict(row, ok=False, failures=c.failures, checks=c.n)
    ev = game.evaluate(np.stack([free, least_pi]))
    w_value = ev.w[0, 0]  # the free policy's robust values
    box = optimal_actions(game, w_value, free)
    full = (np.zeros((S, A)), np.ones((S, A)))
    g = np.stack([game.R, -game.C[0], -game.C[0]])
    w = np.stack([w_value, ev.w[1, 1], ev.w[0, 1]])
    lo = np.stack([full[0], full[0], box["lo"]])
    hi = np.stack([full[1], full[1], box["hi"]])
    _, tw = game.max_min(g, w, lo, hi)
    err = np.abs(tw - w).max(axis=1) / (1.0 - gamma) + ev.err[[0, 1, 0], [0, 1, 1]]
    robust = float(w_value @ game.p0)
    least = -float(ev.w[1, 1] @ game.p0)
    fcost = -float(ev.w[0, 1] @ game.p0)
    c.equal("robust_optimum", rec.get("robust_optimum"), robust, err[0])
    c.equal("least", (rec.get("least") or [None])[0], least, err[1])
    c.equal("free", (rec.get("free") or [None])[0], fcost, err[2])
    # a certificate wider than the tolerance confirms nothing: the stored policy is not
    # the optimum it stands for (its Bellman step moves its values)
    for field, x, e, whose in (("robust_optimum", robust, err[0], "free_policy"),
                               ("least", least, err[1], "least_policy"),
                               ("free", fcost, err[2], "free_policy")):
        if not e <= c.slack(x):
            c.fail(field, rec.get(field), x,
                   f"is not certified: the stored {whose} is not optimal (one robust "
                   f"Bellman step bounds the optimum only within {e:.3g} of its value)")
    if inst.budget_rule == "halfway":
        c.equal("budget", float(d[0]), least + 0.5 * (fcost - least), err[1] + err[2])
    else:
        c.equal("budget", float(d[0]), float(np.asarray(base.d)[0]))
    binds = fcost > float(d[0]) + 1e-9 * max(1.0, abs(float(d[0])))
    if K == 1 and bool(rec.get("binds")) != binds and abs(fcost - d[0]) > c.slack(
            d[0], err[2]):
        c.fail("binds", rec.get("binds"), binds, "is not what free > budget says")
    # ---------------------------------------------------------------- the optima
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        nom = solve_mdp(model.replace(C=None, d=None), method="value_iteration")
    c.equal("nominal_optimum", rec.get("nominal_optimum"), float(nom.value),
            float(nom.error_bound))
    dual, dual_err = (np.nan, 0.0)
    if K == 1:
        dual, dual_err = _cmdp_dual(model, float(d[0]))
        if rec.get("cmdp_optimum") is not None or np.isfinite(dual):
            c.equal("cmdp_optimum", rec.get("cmdp_optimum"), dual, dual_err + 1e-9 * max(
                1.0, abs(dual)))
    # ---------------------------------------------------------------- the caps
    caps = caps_of(model, uset, {"status": "", "lam": None}, robust, err[0])
    caps["cmdp"] = dual + dual_err if np.isfinite(dual) else np.inf
    for name, value in caps.items():
        if np.isfinite(value):
            c.equal(f"caps.{name}", (rec.get("caps") or {}).get(name), value)
    # ---------------------------------------------------------------- the bracket
    status = b.get("status")
    lower, upper = b.get("lower"), b.get("upper")
    if status == "infeasible":
        if least - err[1] > float(d[0]) + c.slack(d[0]):
            row["confirmed"] = (f"infeasible: the least worst-case cost is at least "
                                f"{least - err[1]:.10g} > budget {d[0]:.10g}")
        else:
            c.fail("bracket.status", "infeasible", least,
                   f"is refuted: the least worst-case cost {least:.10g} is within the "
                   f"budget {d[0]:.10g}")
        row.update(costs=[least])
    elif status == "no_feasible_policy" and K == 1 and least <= float(d[0]):
        c.fail("bracket.status", "no_feasible_policy", least,
               f"is refuted: the least-cost policy is robust-feasible (cost {least:.10g} "
               f"<= budget {d[0]:.10g})")
    pol = b.get("lower_policy")
    if status != "infeasible" and pol is None and lower is not None:
        c.fail("bracket.lower_policy", None, lower, "is missing for a finite lower side")
    if pol is not None:
        pi = _policy_table(c, "bracket.lower_policy", pol, S, A)
        if pi is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ev_l = robust_evaluate(model, pi, uset, progress=False)
            value = float(ev_l.value)
            costs = np.atleast_1d(np.asarray(ev_l.costs_worst, dtype=np.float64))
            row.update(value=value, costs=costs.tolist())
            if not ev_l.converged:
                c.fail("bracket.lower", lower, value, "the robust evaluation did not "
                       "converge")
            c.equal("bracket.lower", lower, value)
            for k in range(K):
                c.equal(f"bracket.lower_costs[{k}]", (b.get("lower_costs") or [None] * K)[k],
                        float(costs[k]))
                c.at_most(f"bracket.lower_costs[{k}]", float(costs[k]), float(d[k]), 0.0,
                          f"the budget d[{k}]")
    if upper is not None:
        if lower is not None:
            exact = row["value"] if row["value"] is not None else float(lower)
            c.at_least("bracket.upper", upper, exact, "the exact value of the lower policy "
                       "(recomputed)")
            c.equal("bracket.gap", b.get("gap"), float(upper) - float(lower))
            rg = relative_gap(float(upper) - float(lower), float(lower), model)
            if rg is not None:
                c.equal("bracket.relative_gap", b.get("relative_gap"), rg)
        for name, value in caps.items():
            if np.isfinite(value):
                c.at_most("bracket.upper", upper, value, 0.0, f"the {name} cap")
    elif status not in ("infeasible",):
        c.fail("bracket.upper", None, min(caps.values()), "is missing: the caps bound it")
    return dict(row, ok=not c.failures, failures=c.failures, checks=c.n)


def _chunk(args):
    recs, tol = args
    return [_verify_record(r, tol) for r in recs]


def verify(names=None, *, path=None, tol: float = 1e-7, progress: bool | None = None,
           workers: int = 1) -> Result:
    """Check every record of ``names`` (default: all) in the data file ``path`` (default:
    the shipped one) by :func:`_verify_record`, in ``workers`` local processes (which end
    with their parent).

    Returns a :class:`~rcmdp_exact.Result` with ``rows`` (one dict per record),
    ``checked`` (records), ``checks`` (comparisons), ``failed`` (records with a
    failure), ``failures`` (every failure with its record), ``infeasible`` (claims
    confirmed), ``seconds`` and ``success``.
    """
    from .._checks import InputError, check_int, check_real
    from .._progress import progress_default, tqdm
    from ..protocol.backends import max_workers
    from .store import data, definition

    check_real(tol, "tol", 0.0, 1.0)
    check_int(workers, "workers", 1, max_workers(),
              hint=" (local processes: at most protocol.backends.max_workers())")
    if names is not None:
        if isinstance(names, str):
            names = [names]
        for n in names:
            definition(n)
    recs = [r for r in data(path)["records"] if names is None or r["instance"] in names]
    if not recs:
        which = "any instance" if names is None else ", ".join(names)
        where = "the shipped data file" if path is None else repr(str(path))
        raise InputError(f"{where} has no record of {which}; rcmdp suite list names the "
                         f"instances it holds")
    t0 = time.perf_counter()
    rows = []
    bar_on = progress_default(progress)
    if workers > 1 and len(recs) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from .._workers import pool_initializer

        # the large records first, spread over the workers
        order = sorted(range(len(recs)), key=lambda i: -recs[i]["S"] * recs[i]["A"])
        parts = [[recs[i] for i in order[j::workers * 4]] for j in range(workers * 4)]
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                 **pool_initializer()) as pool, \
                tqdm(total=len(recs), desc="rcmdp suite verify", disable=not bar_on) as bar:
            done = {}
            for part, out in zip(parts, pool.map(_chunk, [(p, tol) for p in parts]),
                                 strict=True):
                for r, o in zip(part, out, strict=True):
                    done[r["key"]] = o
                bar.update(len(out))
        rows = [done[r["key"]] for r in recs]
    else:
        for rec in tqdm(recs, desc="rcmdp suite verify", disable=not bar_on):
            rows.append(_verify_record(rec, tol))
    failures = [dict(f, key=r["key"]) for r in rows for f in r["failures"]]
    failed = sum(not r["ok"] for r in rows)
    infeasible = sum(r["confirmed"] is not None for r in rows)
    checks = sum(r["checks"] for r in rows)
    return Result(rows=rows, checked=len(rows), checks=checks, failed=failed,
                  failures=failures, infeasible=infeasible,
                  seconds=time.perf_counter() - t0, success=failed == 0,
                  status="verified" if failed == 0 else "failed",
                  message=f"{len(rows)} records checked ({checks} comparisons, "
                          f"{infeasible} infeasibility claims confirmed), {failed} "
                          f"failed")
