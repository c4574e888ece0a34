"""Ground truth, part 3: the bounds of a policy box with one adversary per objective, the
honest stopping of the bracket, its candidates and its Dask runner.

The references are written here: occupancies by a dense solve of (I - gamma P_pi^T) d =
p0, the box's policies by greedy fills with random scores (vertices) and their mixtures,
and every robust number by the independent evaluator of test_ground_truth_bracket (the
adversary's policy iteration with the protocol's closed-form inner solution).  A bound
is checked against every robust-feasible policy sampled in its box.
"""

import itertools
import time
import warnings

import numpy as np
import pytest
from helpers import raises_fact
from hypothesis import given
from hypothesis import strategies as st
from test_ground_truth import scale, scaled
from test_ground_truth_bracket import (
    mid_budget_model,
    robust_numbers,
    search_policies,
    tiny_robust_cases,
)

from rcmdp_exact import InputError, OptionError
from rcmdp_exact.core.mdp import greedy_box
from rcmdp_exact.ground_truth import rcmdp_bracket
from rcmdp_exact.ground_truth.local_bound import (
    local_bounds,
    occupancy_intervals,
    one_step_intervals,
)
from rcmdp_exact.ground_truth.occupancy_bound import OccupancyLP
from rcmdp_exact.ground_truth.structure import tighten
from rcmdp_exact.robust.engine import RobustGame, SafetyNet
from rcmdp_exact.testing import random_box, skewed_kernel
from rcmdp_exact.uncertainty import L1Ball, l1_ball

FINITE = ("bracket", "budget_exhausted")


# --------------------------------------------------------------------------- reference
def assert_certified(res, model, uset, seed):
    """Both sides of a bracket against the robust-feasible policies a search meets: the
    upper side is never below one of them, the lower side is the certified worst-case
    value of its own robust-feasible policy (infeasible only if none is met)."""
    found = [robust_numbers(model, uset, pi) for pi in search_policies(model, seed)]
    feasible = [v for v, c in found if np.all(c <= model.d)]
    tol = 1e-9 * scale(model)
    if res.status == "infeasible":
        assert not feasible
        return
    assert res.upper >= max(feasible, default=-np.inf) - tol
    if res.status in FINITE:
        value, costs = robust_numbers(model, uset, res.policy)
        assert np.all(costs <= model.d + tol) and res.lower <= value + tol


def occupancy(P, pi, gamma, p0):
    """Discounted occupancy (S,) of pi under P from p0, by a dense solve."""
    P_pi = np.einsum("sa,sat->st", pi, P)
    return np.linalg.solve(np.eye(P.shape[0]) - gamma * P_pi.T, p0)


def box_policies(rng, lo, hi, n):
    """Policies of the box: vertices (greedy fills of random scores) and mixtures."""
    S, A = lo.shape
    verts = [greedy_box(rng.normal(size=(S, A)), lo, hi) for _ in range(n)]
    mixes = []
    for _ in range(n):
        w = rng.dirichlet(np.ones(3))
        idx = rng.integers(len(verts), size=3)
        mixes.append(sum(wi * verts[i] for wi, i in zip(w, idx, strict=True)))
    return verts + mixes


def hard_rows(draw, model, uset, rng):
    """(model, uset) as drawn, or, one case in three, the model with the rows of an
    estimated kernel (``testing.skewed_kernel``: masses from 1e-15 to 1e-2 beside large
    ones, exact zeros), gamma up to 0.999 and an L1 ball of radius 1e-6 to one that
    covers the simplex: where occupancy iterations and McCormick envelopes are
    hardest."""
    if draw(st.integers(0, 2)):
        return model, uset
    gamma = draw(st.sampled_from([model.gamma, 0.99, 0.999]))
    model = model.replace(P=skewed_kernel(rng, model.n_states, model.n_actions),
                          outcomes=None, gamma=gamma)
    return model, l1_ball(model, draw(st.sampled_from([1e-6, 0.05, 0.5, 2.5])),
                          support="all")


@st.composite
def boxed_cases(draw):
    model, uset, seed = draw(tiny_robust_cases())
    rng = np.random.default_rng(seed)
    model, uset = hard_rows(draw, model, uset, rng)
    lo, hi = random_box(rng, model.n_states, model.n_actions,
                        draw(st.sampled_from([0.05, 0.3, 1.0])))
    return model, uset, lo, hi, rng


# --------------------------------------------------------------------------- intervals
def box_and_intervals(case):
    """A case of :func:`boxed_cases` with its game, the robust evaluation of a random
    vertex of the box and the occupancy intervals of the box under that vertex's
    kernels: (model, uset, lo, hi, rng, game, ev, dlo, dhi)."""
    model, uset, lo, hi, rng = case
    game = RobustGame(model, uset)
    ref = greedy_box(rng.normal(size=lo.shape), lo, hi)
    ev = game.evaluate(ref[None])
    dlo, dhi = occupancy_intervals(game, ev["P"], lo[None], hi[None])
    return model, uset, lo, hi, rng, game, ev, dlo, dhi


@scaled(25)
@given(boxed_cases())
def test_occupancy_intervals_hold_every_policy_of_the_box_and_are_attained(case):
    """low <= d_pi <= high for every sampled policy of the box (dense solve), and both
    ends are attained, by the enumeration of every vertex policy of the box.  (A check
    by 40 sampled vertices failed the thorough profile on a 3-state box whose largest
    occupancy no sample reached: the sample, not the interval, was short.)"""
    model, uset, lo, hi, rng = case
    game = RobustGame(model, uset)
    P = np.asarray(uset.nominal)
    low, high = occupancy_intervals(game, P[None, None], lo[None], hi[None])
    low, high = low[0, 0], high[0, 0]
    occ = np.array([occupancy(P, pi, model.gamma, model.p0)
                    for pi in box_policies(rng, lo, hi, 40)])
    tol = 1e-10 / (1 - model.gamma)
    assert np.all(occ >= low - tol) and np.all(occ <= high + tol)
    # each end is attained: a state's occupancy is extreme at a vertex of the box (an MDP
    # whose actions are the rows of a polytope), and every vertex of a row
    # {lo <= x <= hi, sum x = 1} fills the actions greedily in some order: all of them
    corners = [box_row_vertices(lo[s], hi[s]) for s in range(model.n_states)]
    ends = np.array([occupancy(P, np.array(rows), model.gamma, model.p0)
                     for rows in itertools.product(*corners)])
    attained = 1e-9 * max(1.0, float(high.max())) / (1 - model.gamma)
    np.testing.assert_allclose(ends.max(axis=0), high, rtol=0, atol=attained)
    np.testing.assert_allclose(ends.min(axis=0), low, rtol=0, atol=attained)


def box_row_vertices(lo, hi):
    """Every vertex of {lo <= x <= hi, sum x = 1}: from lo, each action in turn takes as
    much as its upper end and the remaining mass allow, for every order of the actions
    (written here, not the package's greedy fill)."""
    out = []
    for order in itertools.permutations(range(lo.size)):
        x, left = lo.astype(float), 1.0 - float(lo.sum())
        for a in order:
            step = min(hi[a] - lo[a], left)
            x[a] += step
            left -= step
        out.append(x)
    return np.unique(np.array(out), axis=0)


@scaled(25)
@given(boxed_cases())
def test_intervals_past_the_safety_net_still_hold_every_policy_of_the_box(case):
    """With the safety net expired, occupancy_intervals returns the one-step intervals (no
    round of the box MDPs): wider, and still below and above every sampled policy's
    occupancy (dense solve)."""
    model, uset, lo, hi, rng = case
    P = np.asarray(uset.nominal)
    net = SafetyNet(1.0)
    net.trip("a test")
    late = RobustGame(model, uset, net=net)
    low, high = occupancy_intervals(late, P[None, None], lo[None], hi[None])
    one_low, one_high = one_step_intervals(late, P[None], lo[None], hi[None])
    np.testing.assert_array_equal(low[0, 0], one_low[0])
    np.testing.assert_array_equal(high[0, 0], one_high[0])
    full_low, full_high = occupancy_intervals(RobustGame(model, uset), P[None, None],
                                              lo[None], hi[None])
    tol = 1e-10 / (1 - model.gamma)
    assert np.all(low <= full_low + tol) and np.all(high >= full_high - tol)
    occ = np.array([occupancy(P, pi, model.gamma, model.p0)
                    for pi in box_policies(rng, lo, hi, 40)])
    assert np.all(occ >= low[0, 0] - tol) and np.all(occ <= high[0, 0] + tol)


# --------------------------------------------------------------------------- box bounds
def feasible_values_in_box(model, uset, lo, hi, rng, n=25):
    vals = []
    for pi in box_policies(rng, lo, hi, n):
        v, c = robust_numbers(model, uset, pi)
        if np.all(c <= model.d):
            vals.append(v)
    return vals


@scaled(25)
@given(boxed_cases())
def test_local_and_lp_bounds_are_above_every_feasible_policy_of_the_box(case):
    """Both bounds of a box, with the kernels of any policy of the box (here a random
    vertex), are at least the robust value of every robust-feasible policy sampled in
    the box (independent evaluation)."""
    model, uset, lo, hi, rng, game, ev, dlo, dhi = box_and_intervals(case)
    local = local_bounds(game, lo[None], hi[None], ev, dlo, dhi).U[0]
    lp, _ = OccupancyLP(game).bound(lo, hi, ev["P"][0], dlo[0], dhi[0])
    tol = 1e-9 * scale(model)
    for v in feasible_values_in_box(model, uset, lo, hi, rng):
        assert local >= v - tol
        assert lp >= v - tol


@scaled(15)
@given(tiny_robust_cases())
def test_bounds_of_a_point_box_are_its_robust_value(case):
    """On the box of one robust-feasible policy both bounds come down to its robust
    value (second order in the width: exact at width 0)."""
    model, uset, seed = case
    rng = np.random.default_rng(seed)
    game = RobustGame(model, uset)
    for pi in rng.dirichlet(np.ones(model.n_actions), size=(6, model.n_states)):
        v, c = robust_numbers(model, uset, pi)
        if np.any(c > model.d - 1e-6 * scale(model)):
            continue
        ev = game.evaluate(pi[None])
        dlo, dhi = occupancy_intervals(game, ev["P"], pi[None], pi[None])
        local = local_bounds(game, pi[None], pi[None], ev, dlo, dhi).U[0]
        lp, _ = OccupancyLP(game).bound(pi, pi, ev["P"][0], dlo[0], dhi[0])
        tol = 1e-7 * scale(model)
        assert v - tol <= local <= v + tol
        assert v - tol <= lp <= v + tol


def test_lp_bound_is_certified_from_any_basis():
    """The bound comes from weak duality with the solver's multipliers, so a basis from
    another box (a poor warm start) gives the same certified number up to the solver's
    tolerance (on a box around a robust-feasible policy, where the LP has a solution)."""
    m, uset = mid_budget_model(1, 0.3)
    game = RobustGame(m, uset)
    rng = np.random.default_rng(0)
    pi = rcmdp_bracket(m, uset, variants=(), progress=False, max_boxes=1).policy
    lo, hi, _ = tighten(np.clip(pi - 0.2, 0, 1)[None], np.clip(pi + 0.2, 0, 1)[None])
    lo, hi = lo[0], hi[0]
    ref = greedy_box(rng.normal(size=lo.shape), lo, hi)
    ev = game.evaluate(ref[None])
    dlo, dhi = occupancy_intervals(game, ev["P"], lo[None], hi[None])
    lp = OccupancyLP(game)
    cold, basis = lp.bound(lo, hi, ev["P"][0], dlo[0], dhi[0])
    lo2, hi2 = random_box(rng, m.n_states, m.n_actions, 1.0)
    _, other = lp.bound(lo2, hi2, ev["P"][0], dlo[0], dhi[0])
    warm, _ = lp.bound(lo, hi, ev["P"][0], dlo[0], dhi[0], basis=other)
    assert warm == pytest.approx(cold, abs=1e-7 * scale(m))
    assert basis is not None and basis[0].dtype == np.int8


@scaled(10)
@given(tiny_robust_cases(), st.sampled_from([(), ("local",), ("lp",), ("local", "lp")]))
def test_every_choice_of_box_bounds_is_certified(case, bounds):
    model, uset, seed = case
    res = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=60,
                        time_limit=None, box_bounds=bounds)
    assert_certified(res, model, uset, seed)


# --------------------------------------------------------------------------- stopping
def test_box_budget_ends_with_budget_exhausted_and_valid_bounds():
    m, uset = mid_budget_model(3, 0.5, n_constraints=2)
    res = rcmdp_bracket(m, uset, variants=(), progress=False, max_boxes=3, rtol=1e-12,
                        atol=0.0, time_limit=None)
    assert res.status == "budget_exhausted" and not res.success and not res.closed
    assert res.stopped == "boxes"
    rel = res.relative_gap
    assert rel == pytest.approx(res.gap / max(abs(res.lower), 1e-6 * res.value_range))
    for fact in ("max_boxes = 3", "both bounds hold", f"gap {res.gap:.3g}",
                 f"{100 * rel:.3g}% of", "NOT closed"):
        assert fact in res.message
    found = [robust_numbers(m, uset, pi) for pi in search_policies(m, 0, n_random=50)]
    assert res.upper >= max(v for v, c in found if np.all(c <= m.d)) - 1e-9
    value, costs = robust_numbers(m, uset, res.policy)
    assert np.all(costs <= m.d + 1e-9) and res.lower <= value + 1e-9
    # the trace: the upper bound never rises, the lower never falls
    tr = res.trace
    assert np.all(np.diff(tr[:, 3]) <= 1e-12) and np.all(np.diff(tr[:, 2]) >= 0.0)
    assert tr[-1, 3] >= res.upper - 1e-12


def test_closed_bracket_says_bracket():
    m, uset = mid_budget_model(1, 0.3)
    res = rcmdp_bracket(m, uset, variants=(), progress=False, rtol=1e-6, time_limit=None)
    assert res.status == "bracket" and res.success and res.closed
    assert res.gap <= 1e-6 * max(1.0, abs(res.lower))


class _Clock:
    """A fake clock that advances one second per call of the set's worst case."""

    def __init__(self):
        self.now = 0.0
        self.calls = 0

    def __call__(self):
        return self.now


class SlowBall(L1Ball):
    """An L1 ball whose every worst case costs a second on the fake clock."""

    clock = None

    def worst_case(self, *args, **kw):
        SlowBall.clock.now += 1.0
        SlowBall.clock.calls += 1
        return super().worst_case(*args, **kw)


def _slow_run(monkeypatch, time_limit):
    m, uset = mid_budget_model(3, 0.5, n_constraints=2)
    slow = SlowBall(uset.nominal, uset.alpha)
    clock = _Clock()
    SlowBall.clock = clock
    monkeypatch.setattr(time, "perf_counter", clock)
    res = rcmdp_bracket(m, slow, progress=False, time_limit=time_limit, max_boxes=10**6)
    monkeypatch.undo()
    return m, uset, res, clock


@pytest.mark.slow
def test_every_phase_keeps_the_deadline(monkeypatch):
    """With a set whose worst case costs one (fake) second, the bracket stops within a
    few calls of the deadline however the phases are cut (variants, the Lagrangian
    search, the local search, the boxes), and both bounds stay certified.  Without a
    binding deadline the same call makes far more calls (the test can fail)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m, uset, res, clock = _slow_run(monkeypatch, 40.0)
        _, _, free, free_clock = _slow_run(monkeypatch, 1e7)
    assert free_clock.calls > 400
    # after the deadline: the step in progress and the final certification
    # (robust_evaluate of the lower policy, one Bellman step per objective)
    assert clock.calls <= 40 + 60
    assert res.status in (*FINITE, "no_feasible_policy")
    assert res.status != "bracket" or res.closed
    found = [robust_numbers(m, uset, pi) for pi in search_policies(m, 0, n_random=50)]
    best = max(v for v, c in found if np.all(c <= m.d))
    assert res.upper >= best - 1e-9
    if np.isfinite(res.lower):
        value, costs = robust_numbers(m, uset, res.policy)
        assert np.all(costs <= m.d + 1e-9) and res.lower <= value + 1e-9
    assert free.upper >= best - 1e-9


# --------------------------------------------------------------------------- candidates
def test_candidates_are_certified_and_used():
    """The best robust-feasible deterministic policy, offered as a candidate, is
    certified: lower is at least its robust value, with the search cut short."""
    m, uset = mid_budget_model(2, 0.3)
    found = [(robust_numbers(m, uset, pi), pi) for pi in search_policies(m, 0, n_random=0)]
    (v_best, _), pi_best = max(((vc, pi) for vc, pi in found if np.all(vc[1] <= m.d)),
                               key=lambda t: t[0][0])
    res = rcmdp_bracket(m, uset, variants=(), progress=False, max_boxes=1, n_ascent=0,
                        n_starts=0, candidates=pi_best[None], time_limit=None)
    assert res.lower >= v_best - 1e-9
    res2 = rcmdp_bracket(m, uset, variants=(), progress=False, max_boxes=1, n_ascent=0,
                         n_starts=0, candidates=pi_best, time_limit=None)
    assert res2.lower == res.lower


@pytest.mark.parametrize(("kw", "error", "facts"), [
    ({"candidates": np.ones((2, 3, 2))}, InputError, ("candidates",)),
    ({"candidates": np.full((1, 2, 2), 0.5)}, InputError, ("candidates", "(1, 3, 2)")),
    ({"box_bounds": ("mccormick",)}, OptionError, ("box_bounds", "mccormick", "lp")),
    ({"n_starts": -1}, InputError, ("n_starts",)),
    ({"deep_after": -1}, InputError, ("deep_after",)),
    ({"deep_starts": 1.5}, InputError, ("deep_starts",)),
    ({"deep_ascent": -3}, InputError, ("deep_ascent",)),
    ({"seed": -2}, InputError, ("seed",)),
])
def test_new_argument_errors_name_the_argument(kw, error, facts):
    m, uset = mid_budget_model(1, 0.3)
    with raises_fact(error, *facts):
        rcmdp_bracket(m, uset, progress=False, **kw)


# --------------------------------------------------------------------------- dask
@pytest.mark.slow
def test_dask_runs_the_same_bracket_as_the_serial_search():
    """The children of each round are bounded in the same chunks and merged in the same
    order on a local cluster of two workers: the same bounds, policy and boxes.  (An
    L1Ball refuses pickle's state protocol; the workers get it in its own file format.)"""
    import distributed

    m, uset = mid_budget_model(3, 0.5, n_constraints=2)
    kw = dict(variants=(), progress=False, max_boxes=70, time_limit=None)
    # the box bounds travel with the chunks: the workers use the caller's, not defaults
    serial = rcmdp_bracket(m, uset, **kw)
    serial_lp = rcmdp_bracket(m, uset, box_bounds=("lp",), **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = rcmdp_bracket(m, uset, client=client, **kw)
        remote_lp = rcmdp_bracket(m, uset, client=client, box_bounds=("lp",), **kw)
    for one, other in ((remote, serial), (remote_lp, serial_lp)):
        assert one.boxes == other.boxes and one.boxes > 1
        assert one.lower == other.lower and one.upper == other.upper
        np.testing.assert_array_equal(one.policy, other.policy)
        assert one.status == other.status and one.reproducible


# --------------------------------------------------------------------------- progress
def test_progress_bar_shows_the_gap_and_default_follows_the_terminal(capsys):
    """progress=True draws the bar with the bounds and the gap; the default (None) draws
    nothing when standard error is not a terminal (as under pytest)."""
    m, uset = mid_budget_model(3, 0.5, n_constraints=2)
    kw = dict(variants=(), max_boxes=40, time_limit=None, rtol=1e-12, atol=0.0)
    res = rcmdp_bracket(m, uset, progress=True, **kw)
    err = capsys.readouterr().err
    assert "rcmdp bracket: boxes" in err and "gap" in err and "lower" in err
    assert res.boxes > 1
    rcmdp_bracket(m, uset, **kw)
    assert "rcmdp bracket" not in capsys.readouterr().err


@scaled(10)
@given(tiny_robust_cases())
def test_the_paths_for_large_models_stay_certified(case):
    """With the work rule of large models taken to bind on these small ones
    (local_bound.INTERVAL_FLOPS = 0), every box takes the one-step occupancy intervals,
    and a one-problem batch of fixed points on every grid (dual.BATCH_PROBLEMS = 1).  The
    bracket is then wider, and still certified; the variants' targets are computed as
    on small models (no forecast of the time left decides anything)."""
    import rcmdp_exact.ground_truth.dual as dual
    import rcmdp_exact.ground_truth.local_bound as lb

    model, uset, seed = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lb, "INTERVAL_FLOPS", 0.0)
        mp.setattr(dual, "BATCH_PROBLEMS", 1)
        res = rcmdp_bracket(model, uset, progress=False, max_boxes=40, time_limit=None,
                            variants=("value", "lagrangian"))
    assert set(res.variants) == {"value", "lagrangian"} and res.reproducible
    assert_certified(res, model, uset, seed)


@scaled(10)
@given(tiny_robust_cases())
def test_the_small_model_default_bounds_give_the_full_bracket(case):
    """Up to SMALL_STATES states the default box bounds are the occupancy LP alone: the
    result says so, both sides are certified, and the bracket meets the one of the full
    bounds ("local", "lp") at the same box budget (the two intersect, and at rtol 1e-6
    both close or the fast one is no wider than the full one plus its target)."""
    from rcmdp_exact.ground_truth.boxes import BOX_BOUNDS
    from rcmdp_exact.ground_truth.bracket import SMALL_BOX_BOUNDS, SMALL_STATES

    model, uset, seed = case
    kw = dict(progress=False, max_boxes=200, time_limit=None, rtol=1e-6,
              dual_evaluations=0)
    fast = rcmdp_bracket(model, uset, **kw)
    full = rcmdp_bracket(model, uset, box_bounds=BOX_BOUNDS, **kw)
    assert full.box_bounds == BOX_BOUNDS
    assert fast.box_bounds == (SMALL_BOX_BOUNDS if model.n_states <= SMALL_STATES
                               else BOX_BOUNDS)
    assert_certified(fast, model, uset, seed)
    assert fast.status == full.status or "budget_exhausted" in (fast.status, full.status)
    if fast.status in FINITE and full.status in FINITE:
        tol = 1e-9 * scale(model)
        assert max(fast.lower, full.lower) <= min(fast.upper, full.upper) + tol
        if full.closed:
            assert fast.closed or fast.boxes >= 200
