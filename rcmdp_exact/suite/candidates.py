r"""The bounds of a suite record that need no branch and bound: caps above, candidate
policies below.

**Caps** (:func:`caps`): four certified upper bounds on the RCMDP optimum OPT over
stationary randomised policies (:math:`\max_\pi \min_P V(\pi, P)` s.t. :math:`\max_P
C_k(\pi, P) \le d_k`), each with the error bound of its own solve:

* ``robust``: the robust optimum without constraints, :math:`\max_\pi \min_P V`;
* ``nominal``: the nominal optimum :math:`\max_\pi V(\pi, \hat P)` (the nominal kernel
  is in the set, so :math:`\min_P V \le V(\cdot, \hat P)`);
* ``cmdp``: the CMDP's Lagrangian bound at the occupancy LP's multipliers
  :math:`\mu`, :math:`\max_\pi [V(\pi, \hat P) - \mu^\top C(\pi, \hat P)] + \mu^\top d`
  (a robust-feasible policy is feasible on the nominal kernel; by weak duality the bound
  holds for any :math:`\mu \ge 0`, and at the LP's :math:`\mu` it is the CMDP optimum);
* ``range``: the largest discounted value any policy has under any kernel,
  :math:`\max(r^+) / (1 - \gamma)` over the live states (0 for a terminal state).

**Candidates** (:func:`candidate_policies`): robust-feasible policies found without the
branch and bound, each evaluated exactly (:func:`exact`): the robust optimum of least
cost (:func:`~rcmdp_exact.domains.classic.cost_levels`; when it is robust-feasible the
record closes at the robust optimum), the least-cost policy (robust-feasible whenever
:math:`\ell \le d`, so a record with one constraint and a budget at least the least
cost always has a lower side), the CMDP's LP policy, the robust Lagrangian optima
:math:`\arg\max_\pi \min_P [V - \lambda C]` with :math:`\lambda` found by bisection on
the constraint, and on the line between a robust-feasible policy and a better
infeasible one the mixture :math:`(1 - \theta)\pi_a + \theta \pi_b` found by bisection
on :math:`\theta` so that its worst-case cost meets the budget.  The bracket is given
them all (``rcmdp_bracket(..., candidates=...)``: its local search starts from each).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = [ "exact"]

#: A policy is robust-feasible when each worst-case cost is at most
#: ``d_k + _FEAS_RTOL * max(1, |d_k|)``: the rounding of an exact evaluation (about 1e-13
#: of the cost scale), far below any gap the suite reports.
_FEAS_RTOL = 1e-9


def exact(model, uset, policy):
    """``(value, costs)``: the worst-case value :math:`\\min_P V(\\pi, P)` and the worst-case
    costs :math:`\\max_P C_k(\\pi, P)` (each under its own adversary) of ``policy``, by
    :func:`~rcmdp_exact.robust_evaluate` (robust policy iteration to a residual of
    1e-12); a RuntimeError when it does not converge."""
    from ..robust import robust_evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = robust_evaluate(model, np.asarray(policy, dtype=np.float64), uset,
                             progress=False)
    if not ev.converged:
        raise RuntimeError(f"the robust evaluation of a candidate did not converge "
                           f"({ev.message})")
    return float(ev.value), np.atleast_1d(np.asarray(ev.costs_worst, dtype=np.float64))


def feasible(costs, d) -> bool:
    """Every worst-case cost within its budget (:data:`_FEAS_RTOL`)."""
    d = np.asarray(d, dtype=np.float64)
    return bool(np.all(np.asarray(costs) <= d + _FEAS_RTOL * np.maximum(1.0, np.abs(d))))


class Incumbent:
    """The best robust-feasible policy seen: ``value``, ``costs``, ``policy``,
    ``method`` (-inf and None before the first), and every policy offered with its
    worst-case value, whether it is robust-feasible and its method (``pool``)."""

    def __init__(self, model, uset):
        self.model, self.uset = model, uset
        self.d = np.asarray(model.d, dtype=np.float64)
        self.value, self.costs, self.policy, self.method = -np.inf, None, None, "none"
        self.pool: list = []

    def offer(self, policy, method: str):
        """Evaluate ``policy`` exactly, keep it if robust-feasible and better; returns
        ``(value, costs, feasible)``."""
        pi = np.asarray(policy, dtype=np.float64)
        value, costs = exact(self.model, self.uset, pi)
        ok = feasible(costs, self.d)
        self.pool.append((value, ok, method, pi))
        if ok and value > self.value:
            self.value, self.costs, self.policy, self.method = value, costs, pi, method
        return value, costs, ok

    def best(self, n: int = 3) -> list:
        """The ``n`` best robust-feasible policies offered (distinct tables), best
        first, then the best infeasible one (a direction for the local search)."""
        out, seen = [], []
        for _value, ok, _method, pi in sorted(self.pool, key=lambda t: -t[0]):
            if ok and len(out) < n and not any(np.array_equal(pi, q) for q in seen):
                out.append(pi)
                seen.append(pi)
        bad = [t for t in self.pool if not t[1]]
        if bad:
            out.append(max(bad, key=lambda t: t[0])[3])
        return out


def caps(model, uset, lp, robust_value: float, robust_error: float) -> dict:
    """The four caps (module notes) as a dict of floats (inf where a solve failed);
    ``robust_value`` with its error bound ``robust_error`` (the robust optimum's)."""
    from ..core.mdp import solve_mdp

    out = {"robust": float(robust_value) + float(robust_error)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        nom = solve_mdp(model.replace(C=None, d=None))
        out["nominal"] = float(nom.value) + float(nom.error_bound) if nom.success else \
            np.inf
        out["cmdp"] = np.inf
        lam = lp.get("lam")
        if lp.get("status") == "infeasible":
            out["cmdp"] = -np.inf  # no policy is feasible even on the nominal kernel
        elif lam is not None and np.all(np.isfinite(lam)):
            mu = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
            sol = solve_mdp(model, lam=mu)
            if sol.success:
                out["cmdp"] = float(sol.value) + float(sol.error_bound) + \
                    float(mu @ np.asarray(model.d, dtype=np.float64))
    R = np.asarray(model.R, dtype=np.float64)
    live = R[~np.asarray(model.terminal, dtype=bool)]
    top = float(live.max(initial=-np.inf))
    if np.asarray(model.terminal).any():
        top = max(top, 0.0)
    out["range"] = top / (1.0 - float(model.gamma))  # every reward at most top
    return out


def _lagrangian_optimum(model, uset, lam: float):
    from ..robust import robust_value_iteration

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rv = robust_value_iteration(model, uset, lam=[lam], method="policy_iteration",
                                    progress=False)
    return np.asarray(rv.policy, dtype=np.float64)


def _bisect_line(inc: Incumbent, a, b, steps: int, label: str):
    """Bisection on theta of (1 - theta) a + theta b, a robust-feasible and b not: the
    largest theta found whose mixture is robust-feasible is offered."""
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        _, _, ok = inc.offer((1.0 - mid) * a + mid * b, f"{label} {mid:.6g}")
        lo, hi = (mid, hi) if ok else (lo, mid)


def candidate_policies(model, uset, levels, lp, *, extra=(), n_lambda: int = 10,
                       n_mix: int = 10) -> Incumbent:
    """Offer the candidates of the module notes to an :class:`Incumbent` and return it.

    ``levels``: the :func:`~rcmdp_exact.domains.classic.cost_levels` of the set (its
    free policy); ``lp``: the CMDP's :func:`~rcmdp_exact.solve_cmdp` result; ``extra``:
    more (method, policy) pairs (the other levels' candidates of the same instance and
    kind); ``n_lambda``, ``n_mix``: bisection steps.  Only the first constraint steers
    the bisections (the suite's instances have one).
    """
    inc = Incumbent(model, uset)
    free = np.asarray(levels.policies["free"], dtype=np.float64)
    _, _, free_ok = inc.offer(free, "robust optimum of least cost")
    if free_ok:
        return inc  # closed: nothing is worth more than the robust optimum
    inc.offer(levels.policies["least"], "least worst-case cost")
    if lp.get("policy") is not None and np.all(np.isfinite(lp.policy)):
        inc.offer(np.asarray(lp.policy), "cmdp lp")
    for method, pi in extra:
        inc.offer(pi, method)
    if inc.policy is None:
        return inc  # nothing feasible: no line to search
    # the robust Lagrangian optima: lam from 0 (the free policy, infeasible) up to one
    # whose optimum is robust-feasible, then bisection
    scale = max(1.0, float(np.abs(np.asarray(model.R)).max()))
    lam_hi, pi_hi = scale, None
    for _ in range(8):
        pi = _lagrangian_optimum(model, uset, lam_hi)
        _, _, ok = inc.offer(pi, f"robust lagrangian optimum, lambda {lam_hi:.6g}")
        if ok:
            pi_hi = pi
            break
        lam_hi *= 10.0
    lam_lo, pi_lo = 0.0, free
    if pi_hi is not None:
        for _ in range(n_lambda):
            mid = 0.5 * (lam_lo + lam_hi)
            pi = _lagrangian_optimum(model, uset, mid)
            _, _, ok = inc.offer(pi, f"robust lagrangian optimum, lambda {mid:.6g}")
            if ok:
                lam_hi, pi_hi = mid, pi
            else:
                lam_lo, pi_lo = mid, pi
        _bisect_line(inc, pi_hi, pi_lo, n_mix, "mixture of the lagrangian optima")
    _bisect_line(inc, inc.policy, free, n_mix, "mixture towards the robust optimum")
    return inc
