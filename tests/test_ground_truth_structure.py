"""Branching where the bound loses most (pseudocosts), lazy kernels of the occupancy LP,
and the value-form relaxation (ground_truth/structure.py): every bound certified
against independent robust evaluations (tests/test_ground_truth_bracket.py's
references) of deterministic and sampled stochastic policies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from test_ground_truth import scale, scaled
from test_ground_truth_bounds import (
    assert_certified,
    box_and_intervals,
    box_policies,
    boxed_cases,
    feasible_values_in_box,
)
from test_ground_truth_bracket import mid_budget_model, robust_fixed_point, tiny_robust_cases

from rcmdp_exact import InputError
from rcmdp_exact.core.mdp import greedy_box
from rcmdp_exact.ground_truth import boxes, rcmdp_bracket
from rcmdp_exact.ground_truth.boxes import lp_bound
from rcmdp_exact.ground_truth.local_bound import occupancy_intervals
from rcmdp_exact.ground_truth.occupancy_bound import OccupancyLP
from rcmdp_exact.ground_truth.structure import (
    Pseudocosts,
    ValueFormLP,
    split_on,
    value_intervals,
)
from rcmdp_exact.robust.engine import RobustGame


# --------------------------------------------------------------------------- branching
def test_pseudocosts_split_where_the_bound_fell_most_per_unit_width():
    """Before any record the default rule's weight (width x occupancy); after records,
    width x mean gain per unit width; children of a split partition the parent."""
    S, A = 3, 2
    pc = Pseudocosts(S, A)
    lo, hi = np.zeros((1, S, A)), np.ones((1, S, A))
    occ = np.array([[5.0, 1.0, 1.0]])
    _, _, parent, ok = pc.split(lo, hi, occ, np.array([1.0]))
    assert ok.all() and (parent == 0).all()
    assert pc.pending[0][0] == 0  # the state of largest occupancy
    # the lower child of state 0 fell to 0.2, the upper one was dropped (lower = 0.1)
    pc.update(np.array([0.2, -np.inf]), 0.1)
    assert pc.count[0, 0] == 2 and pc.sum[0, 0] == pytest.approx((0.8 + 0.9) / 1.0)
    pc.split(lo, hi, occ, np.array([1.0]))
    s = pc.pending[0][0]
    assert s == 0  # the only coordinate with records; the others take the mean
    # a second round: splitting state 2 paid much more per unit width
    pc.update(np.array([1.0, 1.0]), 0.1)  # state 0 bought nothing this time
    pc.sum[2, 0], pc.count[2, 0] = 50.0, 1.0
    pc.split(lo, hi, occ, np.array([1.0]))
    assert pc.pending[0][0] == 2
    # children: each within the parent, together the parent (on the split coordinate)
    for a in range(A):
        l2, h2, _, ok = split_on(lo, hi, np.array([1]), np.array([a]))
        assert ok.all()
        assert np.all(l2 >= lo - 1e-15) and np.all(h2 <= hi + 1e-15)
        assert h2[0, 1, a] == pytest.approx(l2[1, 1, a])


def test_pseudocost_means_are_floored_so_every_coordinate_is_split():
    pc = Pseudocosts(2, 2)
    pc.sum[0, 0], pc.count[0, 0] = 10.0, 1.0
    pc.sum[1, 1], pc.count[1, 1] = 0.0, 1.0
    mean = pc.means()
    assert mean[1, 1] > 0 and mean.min() >= 0.05 * mean.max() - 1e-15


@scaled(10)
@given(tiny_robust_cases())
def test_bracket_with_pseudocost_branching_and_lazy_kernels_is_certified(case):
    """The whole bracket with the pseudocost rule and lazy kernels: the upper side above
    every robust-feasible deterministic and sampled stochastic policy (independent
    evaluation), the lower side certified."""
    model, ball, seed = case
    res = rcmdp_bracket(model, ball, variants=(), progress=False, max_boxes=60,
                        time_limit=None, branching="pseudocost", lazy_kernels=True)
    assert_certified(res, model, ball, seed)


@scaled(10)
@given(tiny_robust_cases())
def test_bracket_with_kernel_rounds_on_narrow_boxes_only_is_certified(case):
    """Kernel rounds gated by the width of the box (``round_width``): the bracket stays
    certified against independent evaluations of deterministic and sampled policies."""
    model, ball, seed = case
    res = rcmdp_bracket(model, ball, variants=(), progress=False, max_boxes=60,
                        time_limit=None, kernel_rounds=2, round_width=0.25)
    assert_certified(res, model, ball, seed)


def test_box_rules_refuse_an_unknown_split_rule():
    with pytest.raises(ValueError, match="branching"):
        boxes.BoxRules(branching="widest")


@pytest.mark.parametrize(("option", "value", "words"), [
    ("branching", "widest", ("branching", "'widest'", "pseudocost", "occupancy")),
    ("round_width", 0.0, ("round_width", "inf")),
    ("round_width", "wide", ("round_width",)),
    ("lazy_kernels", 1, ("lazy_kernels", "True or False")),
])
def test_bad_box_rules_are_refused_before_any_work(option, value, words):
    m, ball = mid_budget_model(3, 0.5)
    with pytest.raises(InputError) as err:
        rcmdp_bracket(m, ball, progress=False, **{option: value})
    for w in words:
        assert w in str(err.value)


@scaled(10)
@given(tiny_robust_cases())
def test_bracket_with_the_value_form_bound_is_certified(case):
    """box_bounds with "value" (the value-form LP beside the others): the bracket stays
    certified against independent evaluations of deterministic and sampled policies,
    and the result names the bounds it used."""
    model, ball, seed = case
    res = rcmdp_bracket(model, ball, variants=(), progress=False, max_boxes=40,
                        time_limit=None, box_bounds=("lp", "value"))
    assert res.box_bounds == ("lp", "value")
    assert_certified(res, model, ball, seed)


def test_the_value_form_bound_cuts_boxes_the_lagrangian_bound_does_not():
    """bound_boxes with bounds=("value",) takes the minimum with the value-form LP: never
    above the Lagrangian bound alone on the same boxes, below it on some (RiverSwim-6's
    top boxes), and above every robust-feasible policy sampled in each box."""
    from rcmdp_exact.domains.classic import classic_instance
    from rcmdp_exact.ground_truth.boxes import bound_boxes, split_boxes

    model, ball = classic_instance("riverswim", "l1", 0.1, support="all", n=6)
    game = RobustGame(model, ball)
    S, A = model.n_states, model.n_actions
    lam, step = np.zeros((1, 1)), np.full((1, 1), 0.1)
    root = bound_boxes(game, np.zeros((1, S, A)), np.ones((1, S, A)), lam, step, None,
                       None, -np.inf, bounds=())
    lo, hi, _parent, ok = split_boxes(np.zeros((1, S, A)), np.ones((1, S, A)), root["occ"])
    lo, hi = lo[ok], hi[ok]
    J = lo.shape[0]
    args = (lo, hi, np.repeat(root["lam"], J, 0), np.repeat(root["step"], J, 0), None, None,
            -np.inf)
    plain = bound_boxes(game, *args, bounds=())
    value = bound_boxes(game, *args, bounds=("value",))
    assert np.array_equal(plain["ok"], value["ok"])
    assert np.all(value["U"] <= plain["U"]) and np.any(value["U"] < plain["U"] - 1e-6)
    rng = np.random.default_rng(0)
    kept = np.flatnonzero(value["ok"])
    for j, i in enumerate(kept):
        for v in feasible_values_in_box(model, ball, lo[i], hi[i], rng):
            assert value["U"][j] >= v - 1e-9 * scale(model)


# --------------------------------------------------------------------------- lazy kernels
@scaled(25)
@given(boxed_cases())
def test_lazy_kernels_keep_the_bound_and_pass_the_cut_to_the_children(case):
    """lp_bound(rounds=r, lazy=True) returns the bound of rounds=r (no extra LP) and a
    pool that holds the worst-case kernels of its last LP policy; a child box's LP
    with that pool is above every robust-feasible policy sampled in the child."""
    model, ball, lo, hi, rng, game, ev, dlo, dhi = box_and_intervals(case)
    olp = OccupancyLP(game)
    plain, _ = lp_bound(game, olp, lo, hi, ev["P"][0], dlo[0], dhi[0], None, rounds=0)
    lazy, out = lp_bound(game, olp, lo, hi, ev["P"][0], dlo[0], dhi[0], None, rounds=0,
                         lazy=True)
    tol = 1e-9 * scale(model)
    assert lazy == pytest.approx(plain, abs=tol)
    pool = out["pool"]
    assert pool is None or pool[0].size <= 2 * (1 + model.n_constraints)
    # a child: the lower half of the widest interval
    s, a = np.unravel_index(np.argmax(hi - lo), lo.shape)
    l2, h2, _, ok = split_on(lo[None], hi[None], np.array([s]), np.array([a]))
    if not ok[0]:
        return
    clo, chi = l2[0], h2[0]
    cref = greedy_box(rng.normal(size=lo.shape), clo, chi)
    cev = game.evaluate(cref[None])
    cdl, cdh = occupancy_intervals(game, cev["P"], clo[None], chi[None])
    child, _ = lp_bound(game, olp, clo, chi, cev["P"][0], cdl[0], cdh[0], out, rounds=0,
                        lazy=True)
    for v in feasible_values_in_box(model, ball, clo, chi, rng):
        assert child >= v - tol


# --------------------------------------------------------------------------- value form
@scaled(25)
@given(boxed_cases())
def test_value_intervals_hold_every_policy_of_the_box(case):
    """The value intervals contain the robust value and costs of every sampled policy
    of the box (independent robust evaluation)."""
    model, ball, lo, hi, rng = case
    game = RobustGame(model, ball)
    low, high = value_intervals(game, lo[None], hi[None])
    R, C = np.asarray(model.R), np.asarray(model.C)
    tol = 1e-9 * scale(model)
    for pi in box_policies(rng, lo, hi, 10):
        v = robust_fixed_point(ball, R, model.gamma, pi)
        assert np.all(v >= low[0, 0] - tol) and np.all(v <= high[0, 0] + tol)
        for k in range(model.n_constraints):
            c = robust_fixed_point(ball, C[..., k], model.gamma, pi, -1.0)
            assert np.all(-c >= low[0, 1 + k] - tol) and np.all(-c <= high[0, 1 + k] + tol)


@scaled(25)
@given(boxed_cases())
def test_value_form_bound_is_above_every_feasible_policy_of_the_box(case):
    """The value-form LP (each objective with its exact adversary, McCormick on pi x h)
    is at least the robust value of every robust-feasible policy sampled in the box,
    and at most the box's max-min value bound (its w is bounded by it)."""
    model, ball, lo, hi, rng = case
    game = RobustGame(model, ball)
    low, high = value_intervals(game, lo[None], hi[None])
    bound = ValueFormLP(game).bound(lo, hi, low[0], high[0])
    tol = 1e-9 * scale(model)
    # the LP's optimum is at most p0.high; the certified value is the weak-duality value
    # of the solver's multipliers, above the optimum by their inaccuracy (HiGHS's
    # tolerances times the columns' ranges): a loose check of tightness only
    assert bound <= game.p0 @ high[0, 0] + 1e-3 * scale(model)
    for v in feasible_values_in_box(model, ball, lo, hi, rng):
        assert bound >= v - tol


@scaled(15)
@given(tiny_robust_cases())
def test_value_form_bound_of_a_point_box_is_its_robust_value(case):
    """On a box of one robust-feasible policy the relaxation is exact (McCormick is
    exact at a bound of pi): the bound is that policy's robust value."""
    model, ball, seed = case
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.ones(model.n_actions), size=model.n_states)
    game = RobustGame(model, ball)
    low, high = value_intervals(game, pi[None], pi[None])
    bound = ValueFormLP(game).bound(pi, pi, low[0], high[0])
    ev = game.evaluate(pi[None])
    tol = 1e-7 * scale(model)
    if np.all(ev["costs"][0] <= model.d - tol):
        assert bound == pytest.approx(ev["value_estimate"][0], abs=tol)
