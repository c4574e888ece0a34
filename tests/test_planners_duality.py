"""The certified duality gap of suite records, checked by a second computation.

``record_duality_gap`` takes the certified interval [lo, hi] on the Lagrangian dual
D = min_{lam >= 0} g(lam) from ``certified_dual`` (a branch and bound over lam on the
robust engine's fixed points).  Here D is computed again on real suite records by other
means, each step written here:

* g(lam) = max_pi min_P [V_r - lam C](pi, P) + lam d by robust **policy iteration**
  (``robust_value_iteration(method="policy_iteration")``, not the certificate's path);
* the search box [0, Lam] from a Slater policy found here (the policy of least
  worst-case cost, by robust policy iteration on the reward -c, evaluated by
  ``robust_evaluate``): g(lam) >= V_s + lam (d - C_s) > g(0) >= D beyond Lam;
* the slopes of g lie in [d - c_hi / (1 - gamma), d - c_lo / (1 - gamma)] (each
  Lagrangian value is affine in lam with slope d - C(pi, P)), so g is L-Lipschitz and a
  bisection of [0, Lam] into cells, each bounded below by (g(a) + g(b)) / 2 - L (b - a)
  / 2 (Piyavskii's bound, written here), gives an interval on D: the least cell bound
  <= D <= the least g met.

The certified interval must meet that second interval, every g met must be at least lo
(each is an upper bound on D), and the value of g at the certificate's multiplier, by
policy iteration, must lie within the certificate's own bracket of it.  (The second
interval is wider than the certificate's, 1e-3 relative where the slope bound is loose:
g's own slopes are far below L.)
The records are small ones of four set kinds that every data file holds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rcmdp_exact as rx
from rcmdp_exact import suite
from rcmdp_exact.planners import record_duality_gap

RECORDS = [("chain-10", "s-l1"), ("grid-5x5", "interval"), ("paper-inventory", "kl"),
           ("forest-10", "interval"), ("paper-nav1", "l1")]
#: Evaluations of g in the second computation.
BUDGET = 120


def lipschitz_min(f, a: float, b: float, L: float, budget: int):
    """An interval [low, best] on min_{[a, b]} f for an L-Lipschitz f: bisect the cell of
    least lower bound (f(a') + f(b')) / 2 - L (b' - a') / 2 until ``budget`` evaluations;
    returns low, best and every (x, f(x)) met."""
    met = {a: f(a), b: f(b)}
    cells = [((met[a] + met[b]) / 2 - L * (b - a) / 2, a, b)]
    while len(met) < budget:
        cells.sort()
        _, x, y = cells.pop(0)
        m = (x + y) / 2
        met[m] = f(m)
        cells += [((met[x] + met[m]) / 2 - L * (m - x) / 2, x, m),
                  ((met[m] + met[y]) / 2 - L * (y - m) / 2, m, y)]
    best = min(met.values())
    return min(min(c[0] for c in cells), best), best, met


def g_of(model, uset, lam: float) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = rx.robust_value_iteration(model, uset, np.array([lam]),
                                        method="policy_iteration")
    return float(res.value + lam * model.d[0])


def slater(model, uset):
    """The policy of least worst-case cost (robust policy iteration on the reward -c; the
    set does not depend on the reward), its exact worst-case value and cost."""
    costly = model.replace(R=-model.C[..., 0], C=None, d=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pi = rx.robust_value_iteration(costly, uset, method="policy_iteration").policy
        ev = rx.robust_evaluate(model, pi, uset)
    return float(ev.value), float(np.atleast_1d(ev.costs_worst)[0])


@pytest.mark.slow
@pytest.mark.parametrize(("instance", "kind"), RECORDS)
def test_the_certified_dual_of_a_record_by_a_second_computation(instance, kind):
    model, uset, rec = suite.load(instance, kind, 0.1)
    assert model.n_constraints == 1
    gap = record_duality_gap(model, uset, rec)
    lo, hi = gap.dual_lo, gap.dual_hi
    tol = 1e-7 * max(1.0, abs(hi))
    d = float(model.d[0])
    # the box, from a Slater policy of our own
    g0 = g_of(model, uset, 0.0)
    v_s, c_s = slater(model, uset)
    assert c_s < d, "the records picked have a strictly feasible policy"
    top = max((g0 - v_s) / (d - c_s), 0.0)
    c = model.C[..., 0]
    span = 1.0 / (1.0 - model.gamma)
    c_lo, c_hi = min(0.0, float(c.min())) * span, max(0.0, float(c.max())) * span
    slope = max(abs(d - c_hi), abs(d - c_lo))
    low, best, met = lipschitz_min(lambda x: g_of(model, uset, x), 0.0, top, slope, BUDGET)
    assert min(met.values()) >= lo - tol, "an upper bound on D below the certified lower end"
    assert lo <= best + tol and low <= hi + tol  # the two intervals on D meet
    # g at the certificate's multiplier, by policy iteration
    at = g_of(model, uset, float(np.atleast_1d(gap.lam)[0]))
    assert lo - tol <= at <= hi + tol + (hi - lo)
    # the verdict follows from the numbers
    if gap.strong_duality == "fails":
        assert lo > gap.upper
    if gap.strong_duality == "holds":
        assert hi - gap.lower <= 1e-6 * max(1.0, abs(hi)) + tol
