"""Every renamed or moved public name still works for a release, with a DeprecationWarning,
and gives the same object (or the same result) as its new home."""

from __future__ import annotations

import importlib
import sys
import warnings

import numpy as np
import pytest

import rcmdp_exact as rx
from rcmdp_exact import domains


def _fresh(module: str):
    sys.modules.pop(module, None)
    return importlib.import_module(module)


@pytest.mark.parametrize(("old", "new", "names"), [
    ("rcmdp_exact.inner", "rcmdp_exact.uncertainty",
     ["worst_case_l1", "l1_violation", "INNER_METHODS", "LP_SOLVERS"]),
    ("rcmdp_exact.ground_truth.core", "rcmdp_exact.robust", ["RobustGame"]),
    ("rcmdp_exact.ground_truth.core", "rcmdp_exact.mdp", ["greedy_box"]),
])
def test_moved_modules_warn_and_give_the_same_objects(old, new, names):
    with pytest.warns(DeprecationWarning, match=old.replace(".", r"\.")):
        mod = _fresh(old)
    target = importlib.import_module(new)
    for name in names:
        assert getattr(mod, name) is getattr(target, name)


@pytest.mark.parametrize("old", ["rcmdp_exact.reports", "rcmdp_exact.ground_truth.report"])
def test_the_ground_truth_table_aliases(old):
    from rcmdp_exact.experiments import ground_truth_table as table
    from rcmdp_exact.mdp import greedy_policy

    with pytest.warns(DeprecationWarning, match="experiments.ground_truth_table"):
        mod = _fresh(old)
    for name in ("METRICS", "POLICY_LABELS", "format_ground_truth", "ground_truth_table",
                 "save_ground_truth"):
        assert getattr(mod, name) is getattr(table, name)
    assert mod.greedy_policy is greedy_policy


@pytest.mark.parametrize(("name", "module"), [
    ("ground_truth_table", "rcmdp_exact.experiments.ground_truth_table"),
    ("format_ground_truth", "rcmdp_exact.experiments.ground_truth_table"),
    ("save_ground_truth", "rcmdp_exact.experiments.ground_truth_table"),
    ("METRICS", "rcmdp_exact.experiments.ground_truth_table"),
    ("POLICY_LABELS", "rcmdp_exact.experiments.ground_truth_table"),
    ("greedy_policy", "rcmdp_exact.mdp"),
    ("evaluate_time_dependent", "rcmdp_exact.evaluation"),
])
def test_names_that_left_ground_truth(name, module):
    with pytest.warns(DeprecationWarning, match=name):
        obj = getattr(rx.ground_truth, name)
    assert obj is getattr(importlib.import_module(module), name)


def test_renamed_functions_give_the_same_results():
    m = domains.garnet(5, 3, 2, n_constraints=1, seed=3)
    with pytest.warns(DeprecationWarning, match="policy_iteration"):
        old = rx.ground_truth.lagrangian_optimal_policy(m, [0.4])
    new = rx.policy_iteration(m, [0.4])
    np.testing.assert_array_equal(old.policy, new.policy)
    np.testing.assert_array_equal(old.v, new.v)
    q = np.random.default_rng(0).normal(size=(4, 3))
    with pytest.warns(DeprecationWarning, match="greedy_policy"):
        np.testing.assert_array_equal(rx.ground_truth.greedy_one_hot(q), rx.greedy_policy(q))
    ball = rx.l1_ball(m, 0.2)
    with pytest.warns(DeprecationWarning, match="check_set"):
        rx.uncertainty.check_ball(ball, m)
    from rcmdp_exact.learners.records import into_ball

    P = rx.domains.garnet(5, 3, 4, seed=9).P
    with pytest.warns(DeprecationWarning, match="pull_inside"):
        old_p = into_ball(P, ball, m.terminal)
    np.testing.assert_array_equal(old_p, ball.pull_inside(P, keep=m.terminal))


def test_the_package_calls_none_of_its_deprecated_names():
    """pyproject.toml turns a DeprecationWarning raised inside rcmdp_exact into an error,
    so the whole test suite checks this; here one run of the main pieces, explicitly."""
    m = domains.garnet(4, 2, 2, n_constraints=1, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        ball = rx.l1_ball(m, 0.3)
        rx.robust_evaluate(m, np.full((4, 2), 0.5), ball, "lagrangian", lam=1.0)
        rx.solve_cmdp(m)
        rx.rcmdp_bracket(m, ball, progress=False, time_limit=5.0, max_boxes=20)


# --------------------------------------------------------------------------- one vocabulary
def test_the_multipliers_are_called_lam_and_the_former_names_warn():
    m = domains.garnet(5, 3, 2, n_constraints=1, seed=3)
    opt = rx.solve_cmdp(m)
    assert "lam" in opt and "multipliers" not in opt
    with pytest.warns(DeprecationWarning, match="'multipliers' is now called 'lam'"):
        old = opt.multipliers
    assert old is opt.lam
    # the LP's multiplier is the budget's shadow price: dV*/dd by a finite difference
    h = 1e-4
    up = rx.solve_cmdp(m.replace(d=m.d + h)).value
    down = rx.solve_cmdp(m.replace(d=m.d - h)).value
    assert opt.lam[0] == pytest.approx((up - down) / (2 * h), abs=1e-5)
    br = rx.rcmdp_bracket(m, rx.l1_ball(m, 0.1), progress=False, max_boxes=5)
    with pytest.warns(DeprecationWarning, match="'multiplier' is now called 'lam'"):
        assert br.multiplier is br.lam
    res = rx.Result(multipliers=np.ones(2))
    assert list(res) == ["lam"]
    res.multiplier = np.zeros(1)
    assert list(res) == ["lam"] and res.lam[0] == 0.0


def test_training_records_keep_their_former_names_for_a_release():
    from rcmdp_exact.learners import TrainResult, train

    m = domains.garnet(5, 3, 2, n_constraints=1, seed=3).replace(horizon=10)
    res = train(m, "cpg", seed=0, episodes=6, eval_every=3, progress=False)
    rec = res.records
    assert "lam" in rec and "lambda" not in rec and "eval_train_greedy_penalised_return" in rec
    with pytest.warns(DeprecationWarning, match="'lambda' is now called 'lam'"):
        assert rec["lambda"] is rec["lam"]
    with pytest.warns(DeprecationWarning, match="penalised_return"):
        assert rec.get("eval_train_greedy_penalised") is rec["eval_train_greedy_penalised_return"]
    assert np.array_equal(res.policy, res.policy_table())
    # a result built with the former record names holds the new ones
    old = TrainResult({**res, "records": {("lambda" if k == "lam" else k): v
                                          for k, v in rec.items()}})
    assert "lambda" not in old.records
    np.testing.assert_array_equal(old.records["lam"], rec["lam"])


