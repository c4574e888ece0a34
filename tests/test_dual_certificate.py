"""The certified Lagrangian dual of an RCMDP and certified duality gaps.

References, each independent of the certificate:

* brute force: g(lam) = max over deterministic policies of the min over the extreme
  kernels of the set (``extreme_kernels``, itself checked against linprog) of the exact
  value by a dense solve written here, on a fine grid of lam;
* robust value iteration (the engine's other method) on a grid of lam;
* the CMDP LP at radius 0 (strong duality holds for CMDPs);
* a model whose primal and dual are derived by hand below.
"""

import itertools
import warnings

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings

import rcmdp_exact.testing as T
from rcmdp_exact import (
    InputError,
    L1Ball,
    Result,
    TabularCMDP,
    certified_dual,
    duality_gap,
    l1_ball,
    rcmdp_bracket,
    robust_value_iteration,
    solve_cmdp,
)
from rcmdp_exact.uncertainty import extreme_kernels


# --------------------------------------------------------------------------- references
def brute_force_g(model, uset, lams):
    """g(lam) for each row of lams (n, K) by enumeration of deterministic policies and
    extreme kernels, each value by a dense solve: max_pi min_P p0.V + lam.d."""
    S, A = model.n_states, model.n_actions
    kernels = extreme_kernels(uset, model, max_kernels=5000)
    R, C = np.asarray(model.R), np.asarray(model.C)
    live = ~np.asarray(model.terminal)
    out = np.full(len(lams), -np.inf)
    for acts in itertools.product(range(A), repeat=S):
        idx = (np.arange(S), np.array(acts))
        Pk = kernels[:, idx[0], idx[1], :]  # (N, S, S)
        r = np.einsum("nst,st->ns", Pk, R[idx]) * live
        c = np.einsum("nst,stk->nsk", Pk, C[idx]) * live[:, None]
        Pk = Pk * live[None, :, None]
        M = np.eye(S) - model.gamma * Pk
        vals = np.linalg.solve(M, np.concatenate([r[..., None], c], axis=2))
        v0 = np.einsum("s,nsj->nj", model.p0, vals)  # (N, 1 + K)
        lams = np.asarray(lams, dtype=float).reshape(len(lams), -1)
        g = (v0[None, :, 0] - lams @ v0[:, 1:].T).min(axis=1) + lams @ model.d
        out = np.maximum(out, g)
    return out


def vi_g(model, uset, lam):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = robust_value_iteration(model, uset, lam, method="value_iteration",
                                     progress=False, tol=1e-13)
    return res.value + float(np.dot(lam, model.d))


def slope_bound(res, model):
    """The largest |dg/dlam_k| allowed by the certificate's slope data."""
    cmin, cmax = res.cost_range
    return float(np.max(np.maximum(np.abs(model.d - cmin), np.abs(model.d - cmax))))


def few_uncertain_pairs(case, n=2):
    """The model and its L1 ball with radius kept on n pairs only (few extreme kernels)."""
    model, uset = case
    alpha = np.array(uset.alpha)
    keep = np.zeros(alpha.size, dtype=bool)
    keep[np.argsort(-alpha.ravel(), kind="stable")[:n]] = True
    alpha = np.where(keep.reshape(alpha.shape), alpha, 0.0)
    return model, L1Ball(uset.nominal, alpha, uset.support)


# --------------------------------------------------------------------------- brute force
@settings(max_examples=examples(25))
@given(T.robust_cmdps(n_states=(2, 3), n_actions=2).map(few_uncertain_pairs))
def test_the_interval_contains_the_brute_force_dual(case):
    """lo <= D <= min over a fine grid of the brute-force g, and that minimum is within
    the grid's Lipschitz allowance of hi."""
    model, uset = case
    res = certified_dual(model, uset, tol=1e-7)
    top = float(res.lam_max[0]) if np.isfinite(res.lam_max[0]) else 10.0
    lams = np.linspace(0.0, max(top, 1e-9), 1001)[:, None]
    g = brute_force_g(model, uset, lams)
    assert res.lo <= g.min() + 1e-9
    if res.slater is not None:  # the minimum lies in the box, so the grid comes close
        h = lams[1, 0] - lams[0, 0]
        assert g.min() <= res.hi + slope_bound(res, model) * h + 1e-9
    # every certified value of g met contains the brute-force value there
    hist = res.history
    bf = brute_force_g(model, uset, hist.lam)
    assert np.all(hist.lo <= bf + 1e-9) and np.all(bf <= hist.hi + 1e-9)
    if res.status == "converged":
        assert res.hi - res.lo <= 1e-7 * max(1.0, abs(res.hi))


@settings(max_examples=examples(6))
@given(T.robust_cmdps(n_states=(2, 3), n_actions=(2, 3)))
def test_the_interval_contains_a_grid_of_robust_value_iteration(case):
    """The same with g by robust value iteration (the engine's other method), any radii."""
    model, uset = case
    res = certified_dual(model, uset)
    assert res.lo <= res.hi
    top = float(res.lam_max[0]) if np.isfinite(res.lam_max[0]) else 10.0
    lams = np.linspace(0.0, max(top, 1e-9), 61)
    g = np.array([vi_g(model, uset, np.array([t])) for t in lams])
    assert res.lo <= g.min() + 1e-8
    if res.slater is not None:
        assert g.min() <= res.hi + slope_bound(res, model) * (lams[1] - lams[0]) + 1e-8
    assert abs(vi_g(model, uset, res.lam) - res.hi) <= res.hi - res.history.lo.min() + 1e-8


@settings(max_examples=examples(4), deadline=None)
@given(T.robust_cmdps(n_states=2, n_actions=2, n_constraints=2).map(few_uncertain_pairs))
def test_two_constraints_against_a_grid(case):
    """K = 2: the box is split in two dimensions, each cell bounded by an LP."""
    model, uset = case
    res = certified_dual(model, uset, tol=1e-6, max_evaluations=3000)
    assert res.lo <= res.hi
    assert res.cells >= 1 or res.slater is None
    tops = [float(x) if np.isfinite(x) else 10.0 for x in res.lam_max]
    grid = np.stack(np.meshgrid(np.linspace(0, max(tops[0], 1e-9), 61),
                                np.linspace(0, max(tops[1], 1e-9), 61), indexing="ij"),
                    axis=-1).reshape(-1, 2)
    g = brute_force_g(model, uset, grid)
    assert res.lo <= g.min() + 1e-9
    bf = brute_force_g(model, uset, res.history.lam)
    assert np.all(res.history.lo <= bf + 1e-9) and np.all(bf <= res.history.hi + 1e-9)
    if res.slater is not None:  # the minimum lies in the box, so the grid comes close
        h = max(tops) / 60
        assert g.min() <= res.hi + 2 * slope_bound(res, model) * h + 1e-9


def test_two_constraints_on_the_hand_model():
    """A second cost that the safe action also avoids: the box is two-dimensional and the
    interval still holds D = 1 (the first budget binds, the second does not)."""
    model, uset = hand_model()
    C = np.concatenate([np.asarray(model.C), 0.5 * np.asarray(model.C)], axis=-1)
    model = model.replace(C=C, d=[1.0, 1.0])
    res = certified_dual(model, uset, tol=1e-6)
    assert res.slater is not None and res.cells > 1 and res.lam_max.shape == (2,)
    assert res.lo <= 1.0 <= res.hi and res.status == "converged"


@settings(max_examples=examples(15))
@given(T.cmdps(n_states=(2, 4), n_actions=(2, 3), n_constraints=1, terminal=False)
       .flatmap(lambda m: T.binding_budgets(m).map(lambda d: m.replace(d=d))))
def test_at_radius_zero_the_dual_is_the_cmdp_optimum(model):
    """With no uncertainty, strong duality holds: D is the LP optimum (HiGHS)."""
    uset = l1_ball(model, 0.0, support="all")
    lp = solve_cmdp(model)
    res = certified_dual(model, uset, tol=1e-8)
    assert lp.status == "optimal"
    assert res.lo - 1e-7 <= lp.value <= res.hi + 1e-7
    assert res.status == "converged" or res.slater is None  # d at the least cost: no Slater


def test_without_constraints_d_is_the_robust_optimum():
    model, uset = T.example(T.robust_cmdps(n_constraints=0), seed=2)
    res = certified_dual(model, uset)
    rvi = robust_value_iteration(model, uset, method="value_iteration", progress=False)
    assert res.lo - 1e-9 <= rvi.value <= res.hi + 1e-9 and res.status == "converged"


def test_without_a_slater_point_lo_falls_back_on_a_feasible_policy():
    """Every step costs 1, so every policy costs exactly 1/(1 - gamma) = d: feasible, but
    never strictly.  g(lam) is then the robust optimum for every lam.  Below that budget
    no policy is feasible and lo is -inf."""
    model, uset = T.example(T.robust_cmdps(n_states=2, n_actions=2, terminal=False),
                            seed=5)
    top = 1.0 / (1.0 - model.gamma)
    model = model.replace(C=np.ones((2, 2, 1)), d=[top])
    res = certified_dual(model, uset)
    rvi = robust_value_iteration(model, uset, method="policy_iteration", progress=False)
    assert res.status == "bracket" and res.slater is None
    assert res.lo <= rvi.value + 1e-9 <= res.hi + 2e-9
    assert np.isneginf(certified_dual(model.replace(d=[0.95 * top]), uset).lo)


# --------------------------------------------------------------------------- hand model
def hand_model():
    r"""Two states; state 1 is terminal.  In state 0, action 0 stays (reward 0, cost 0)
    and action 1 earns reward 1 and cost 1, then stays with probability p and ends with
    probability 1 - p.  gamma = 1/2, budget d = 1, and the L1 ball of radius 1/2 on the
    row (0, 1) around p = 1/2 allows every p in [1/4, 3/4]; the other rows are certain.

    **Primal.**  A policy plays action 1 with probability x.  Under p the state is kept
    with probability 1 - x(1 - p) per step, so

    .. math::  V(x, p) = C(x, p) = \frac{x}{1 - \gamma (1 - x(1 - p))}
                                 = \frac{x}{1/2 + x(1 - p)/2},

    increasing in x and in p.  The value's adversary takes p = 1/4, the cost's p = 3/4.
    The robust constraint :math:`C(x, 3/4) = x / (1/2 + x/8) \le 1` gives
    :math:`x \le 4/7`, and OPT = :math:`V(4/7, 1/4) = (4/7) / (1/2 + 3/14) = 4/5`.

    **Dual.**  With one adversary for :math:`r - \lambda c`, the reward of action 1 is
    :math:`1 - \lambda`.  For :math:`\lambda < 1` the adversary shortens the episode
    (p = 1/4) and action 1 is best: :math:`g = (1 - \lambda) / (1 - p/2) + \lambda =
    8/7 - \lambda/7`; for :math:`\lambda \ge 1` action 0 is best: :math:`g = \lambda d =
    \lambda`.  So D = :math:`\min_\lambda g = g(1) = 1`, and the gap D - OPT = 1/5.
    """
    P = np.zeros((2, 2, 2))
    P[0, 0, 0] = 1.0
    P[0, 1] = [0.5, 0.5]
    P[1, :, 1] = 1.0
    R = np.zeros((2, 2))
    R[0, 1] = 1.0
    C = np.zeros((2, 2, 1))
    C[0, 1, 0] = 1.0
    model = TabularCMDP(P, R, C, d=[1.0], gamma=0.5, terminal=[1])
    alpha = np.zeros((2, 2))
    alpha[0, 1] = 0.5
    return model, L1Ball(P, alpha)


def test_the_hand_derived_model_has_a_certified_duality_gap():
    model, uset = hand_model()
    dual = certified_dual(model, uset, tol=1e-9)
    assert dual.lo <= 1.0 <= dual.hi and dual.hi - dual.lo <= 1e-8
    assert abs(dual.lam[0] - 1.0) <= 1e-6
    # a robust-feasible policy's certified worst-case value: a lower bound on OPT = 4/5
    assert -np.inf < dual.feasible_value <= 0.8 + 1e-12
    br = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=300,
                       time_limit=None)
    assert br.lower <= 0.8 + 1e-12 <= br.upper + 2e-12
    gap = duality_gap(model, uset, br, dual)
    assert gap.strong_duality == "fails" and gap.lo > 0.15
    assert gap.lo <= 0.2 <= gap.hi


@pytest.mark.parametrize("radius", [0.0, 0.5])
def test_duality_gap_verdicts(radius):
    """At radius 0 the problem is a CMDP: strong duality holds to the bracket's accuracy;
    the verdict 'fails' needs a certified positive gap."""
    model, uset = hand_model()
    uset = uset.with_alpha(uset.alpha * (radius / 0.5))
    br = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=300,
                       time_limit=None)
    gap = duality_gap(model, uset, br)
    if radius == 0.0:
        assert gap.lo <= 1e-9 and gap.strong_duality in ("holds", "undecided")
        assert abs(gap.dual.hi - solve_cmdp(model).value) <= 1e-6
    else:
        assert gap.strong_duality == "fails"


@settings(max_examples=examples(6))
@given(T.robust_cmdps(n_states=2, n_actions=2))
def test_weak_duality_on_random_models(case):
    """D >= OPT: the dual's upper side is never below the bracket's lower side."""
    model, uset = case
    br = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=60,
                       time_limit=None)
    dual = certified_dual(model, uset)
    if br.status == "bracket":
        assert dual.hi >= br.lower - 1e-9
        # feasible_value is the worst-case value of a robust-feasible policy: <= OPT
        assert dual.feasible_value <= br.upper + 1e-9
    if br.dual is not None and np.isfinite(br.lower):  # the bracket's own fields
        assert br.dual.hi >= br.lower - 1e-9 and br.duality_gap.hi >= -1e-9


# --------------------------------------------------------------------------- bracket fields
def test_every_bracket_result_carries_the_certified_dual():
    """rcmdp_bracket's ``dual`` and ``duality_gap`` on the hand model: D = 1 and the gap
    D - OPT = 1/5 derived in :func:`hand_model` lie in the certified intervals, and the
    verdict is that strong duality fails."""
    model, uset = hand_model()
    br = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=300,
                       time_limit=None)
    assert br.dual.lo <= 1.0 <= br.dual.hi
    assert br.duality_gap.lo <= 0.2 <= br.duality_gap.hi
    assert br.duality_gap.lo > 0 and br.duality_gap.strong_duality == "fails"
    # the fields survive the JSON form of a result
    back = type(br).from_json(br.to_json())
    assert back.duality_gap.strong_duality == "fails" and back.dual.hi == br.dual.hi


def test_the_bracket_dual_is_skipped_where_it_is_not_defined():
    model, uset = hand_model()
    off = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=5,
                        dual_evaluations=0)
    assert off.dual is None and off.duality_gap is None
    from rcmdp_exact import SRectL1Ball

    srect = SRectL1Ball(uset.nominal, 0.5)
    res = rcmdp_bracket(model, srect, variants=(), progress=False, max_boxes=5)
    assert res.dual is None and res.duality_gap is None
    with raises_fact(InputError, "dual_evaluations"):
        rcmdp_bracket(model, uset, dual_evaluations=-1)


@pytest.mark.parametrize("bracket, facts", [
    ({"lo": 0.0, "hi": 1.0}, ["no field 'lower', 'upper'", "rcmdp_bracket"]),
    ({"lower": "a", "upper": 1.0}, ["bracket['lower']", "'a'", "not a number"]),
    ({"lower": float("nan"), "upper": 1.0}, ["bracket['lower']", "nan"]),
    ([0.0, 1.0], ["bracket must be a result", "list"]),
])
def test_a_bracket_that_is_not_one_is_refused_before_any_work(bracket, facts, monkeypatch):
    """A dict without the fields failed after the whole dual with a KeyError: refused
    up front, before the dual is computed."""
    import rcmdp_exact.ground_truth.dual_certificate as dc

    monkeypatch.setattr(dc, "certified_dual", lambda *a, **k: pytest.fail("work started"))
    model, uset = hand_model()
    with raises_fact(InputError, *facts):
        duality_gap(model, uset, bracket)


@pytest.mark.parametrize("bracket, dual, facts", [
    ({"lower": 2.0, "upper": 1.0}, None, ["lower = 2.0 is above its upper = 1.0"]),
    (Result(lower=0.0, upper=1.0), {"lo": 1.0, "hi": 0.0}, ["lo = 1.0 is above its hi"]),
])
def test_crossed_bounds_are_reported_as_inconsistent(bracket, dual, facts, monkeypatch):
    """lower > upper gave lo > hi and the verdict "holds"; now the verdict says the
    bounds cross, nothing is concluded (lo and hi NaN) and no dual is computed."""
    import rcmdp_exact.ground_truth.dual_certificate as dc

    monkeypatch.setattr(dc, "certified_dual", lambda *a, **k: pytest.fail("work started"))
    model, uset = hand_model()
    gap = duality_gap(model, uset, bracket, dual)
    assert gap.strong_duality == "inconsistent"
    assert np.isnan(gap.lo) and np.isnan(gap.hi)
    for fact in facts:
        assert fact in gap.message, gap.message
    # bounds that touch up to rounding are a bracket
    model, uset = hand_model()
    dual = {"lo": 1.0, "hi": 1.0 + 1e-12}
    touching = duality_gap(model, uset, {"lower": 0.8 + 1e-15, "upper": 0.8}, dual)
    assert touching.strong_duality == "fails" and touching.lo == pytest.approx(0.2)


def test_the_dual_builds_one_game(monkeypatch):
    """Every robust fixed point of the dual (values of g, fixed policies, Slater
    candidates) runs on one game built from the checked model and set."""
    import rcmdp_exact.robust.engine as engine

    built = []
    init = engine.RobustGame.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(engine.RobustGame, "__init__", counting)
    m = T.dense_binding_cmdp(3)
    res = certified_dual(m, l1_ball(m, 0.2), max_evaluations=12)
    assert res.evaluations >= 12 and len(built) == 1


# --------------------------------------------------------------------------- the cell LP
@pytest.mark.parametrize("K", [2, 3])
def test_the_slope_bound_of_a_cell_is_the_lp_minimum_and_certified(K):
    """The slope bound of a cell (HiGHS through highspy, certified by its dual weights)
    against scipy's linprog on random cells: never above the LP's minimum (the minimum
    over the cell of the largest corner minorant), and equal to it up to rounding."""
    from scipy.optimize import linprog

    from rcmdp_exact.ground_truth.dual_certificate import _slope_bound

    rng = np.random.default_rng(K)
    for _ in range(40):
        lo = rng.uniform(0.0, 2.0, K)
        hi = lo + rng.uniform(0.0, 3.0, K) * (rng.random(K) < 0.9)
        s1 = -rng.uniform(0.0, 5.0, K)
        s2 = s1 + rng.uniform(0.0, 10.0, K)
        corners = [(np.where(np.array(bits, bool), hi, lo), float(rng.normal()))
                   for bits in itertools.product((0, 1), repeat=K)]
        bound, point = _slope_bound(corners, s1, s2, lo, hi)
        rows, rhs = [], []
        for c, gc in corners:
            sc = np.where(c == lo, s1, s2)
            rows.append(np.append(sc, -1.0))
            rhs.append(sc @ c - gc)
        ref = linprog(np.append(np.zeros(K), 1.0), A_ub=np.array(rows), b_ub=rhs,
                      bounds=[*zip(lo, hi, strict=True), (None, None)], method="highs")
        assert ref.status == 0
        assert bound <= ref.fun + 1e-9 * max(1.0, abs(ref.fun))
        assert bound >= ref.fun - 1e-7 * max(1.0, abs(ref.fun))
        assert np.all(point >= lo - 1e-9) and np.all(point <= hi + 1e-9)


@settings(max_examples=examples(6))
@given(T.robust_cmdps(n_states=2, n_actions=2))
def test_the_bracket_dual_starts_from_the_bracket_and_agrees_with_the_plain_one(case):
    """The bracket's dual uses its lower side as a floor (weak duality) and its
    multipliers as a first point: an interval on the same D as the plain certified dual
    (the two intersect), with ``lo`` at least the bracket's lower side."""
    model, uset = case
    br = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=60,
                       time_limit=None)
    if br.dual is None or not np.isfinite(br.lower):
        return
    plain = certified_dual(model, uset, max_evaluations=200)
    assert br.dual.lo >= min(br.lower, br.dual.hi) - 1e-12
    tol = 1e-9 * max(1.0, abs(plain.hi))
    assert max(br.dual.lo, plain.lo) <= min(br.dual.hi, plain.hi) + tol
    assert br.dual.feasible_value >= br.lower
