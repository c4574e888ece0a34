"""Branching where the bound loses most (pseudocosts, ground_truth/structure.py): the
records and splits, and whole brackets certified against independent robust
evaluations (tests/test_ground_truth_bracket.py's references) of deterministic and
sampled stochastic policies.  The options measured as losing and removed (issue 40:
kernel rounds, lazy kernels, the value-form bound, occupancy branching) are refused
by name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from test_ground_truth import scaled
from test_ground_truth_bounds import assert_certified
from test_ground_truth_bracket import mid_budget_model, tiny_robust_cases

from rcmdp_exact import OptionError
from rcmdp_exact.ground_truth import BracketSettings, rcmdp_bracket
from rcmdp_exact.ground_truth.structure import Pseudocosts, split_on


# --------------------------------------------------------------------------- branching
def test_pseudocosts_split_where_the_bound_fell_most_per_unit_width():
    """Before any record width x occupancy (the former rule's weight); after records,
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
def test_bracket_with_pseudocost_branching_is_certified(case):
    """The whole bracket with the pseudocost rule: the upper side above every
    robust-feasible deterministic and sampled stochastic policy (independent
    evaluation), the lower side certified."""
    model, uset, seed = case
    res = rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=60,
                        time_limit=None)
    assert_certified(res, model, uset, seed)


@pytest.mark.parametrize("option", [
    {"kernel_rounds": 2}, {"round_width": 0.25}, {"lazy_kernels": True},
    {"branching": "occupancy"},
])
def test_the_removed_box_rules_are_refused_by_name(option):
    """Measured as losing within the goals' time limits and removed (docs/ground_truth.md
    section 3.9 keeps the measurements): refused before any work, naming the option."""
    (name,) = option
    m, uset = mid_budget_model(3, 0.5)
    with pytest.raises(TypeError, match=name):
        rcmdp_bracket(m, uset, progress=False, **option)
    with pytest.raises(TypeError, match=name):
        BracketSettings(**option)


def test_the_removed_value_form_bound_is_refused():
    m, uset = mid_budget_model(3, 0.5)
    with pytest.raises(OptionError) as err:
        rcmdp_bracket(m, uset, progress=False, box_bounds=("lp", "value"))
    assert "'value'" in str(err.value) and "'local', 'lp'" in str(err.value)
