"""Hostile inputs of ``rcmdp_exact.planners.plan`` (and of the registry and the duality
helper): every row a clear one-line error naming what is wrong, before any work (the
oracle is never built)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import raises_fact

import rcmdp_exact as rx
from rcmdp_exact.planners import NAMES, PLANNERS, Planner, plan, record_duality_gap, register
from rcmdp_exact.planners import base as planner_base
from rcmdp_exact.testing import random_cmdp

MODEL = random_cmdp(0, 3, 2, 1, 0.9)
BALL = rx.l1_ball(MODEL, 0.1)
OTHER = random_cmdp(1, 4, 2, 1, 0.9)


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if plan gets as far as building the oracle."""
    def refuse(*args, **kwargs):
        raise AssertionError("plan built its oracle before refusing the input")
    monkeypatch.setattr(planner_base, "RobustOracle", refuse)


def kl_set():
    return rx.KLBall.around(MODEL, 0.01)


ROWS = [
    # (id, args, kwargs, error class, facts in the message)
    ("unknown name", (MODEL, BALL, "ppo"), dict(iterations=5), rx.InputError,
     ("'ppo'", "rnpg")),
    ("name not a string", (MODEL, BALL, 3), dict(iterations=5), rx.InputError, ("3",)),
    ("name None", (MODEL, BALL, None), dict(iterations=5), rx.InputError, ("None",)),
    ("iterations 0", (MODEL, BALL, "rnpg"), dict(iterations=0), rx.InputError,
     ("iterations", ">= 1")),
    ("iterations negative", (MODEL, BALL, "rnpg"), dict(iterations=-3), rx.InputError,
     ("iterations",)),
    ("iterations float", (MODEL, BALL, "rnpg"), dict(iterations=1.5), rx.InputError,
     ("iterations", "1.5")),
    ("iterations bool", (MODEL, BALL, "rnpg"), dict(iterations=True), rx.InputError,
     ("iterations",)),
    ("iterations string", (MODEL, BALL, "rnpg"), dict(iterations="10"), rx.InputError,
     ("iterations",)),
    ("seed negative", (MODEL, BALL, "rnpg"), dict(iterations=5, seed=-1), rx.InputError,
     ("seed",)),
    ("seed string", (MODEL, BALL, "rnpg"), dict(iterations=5, seed="a"), rx.InputError,
     ("seed",)),
    ("step zero", (MODEL, BALL, "rnpg"), dict(iterations=5, step=0.0), rx.InputError,
     ("'step'", "0")),
    ("step negative", (MODEL, BALL, "rrpo"), dict(iterations=5, step=-1.0), rx.InputError,
     ("'step'",)),
    ("step NaN", (MODEL, BALL, "pmd-pd"), dict(iterations=5, step=float("nan")),
     rx.InputError, ("'step'", "nan")),
    ("step inf", (MODEL, BALL, "epirc-pgs"), dict(iterations=5, step=float("inf")),
     rx.InputError, ("'step'",)),
    ("step string", (MODEL, BALL, "rnpg"), dict(iterations=5, step="big"), rx.InputError,
     ("'step'", "big")),
    ("dual step zero", (MODEL, BALL, "robust-primal-dual"), dict(iterations=5, dual_step=0),
     rx.InputError, ("'dual_step'",)),
    ("lam_max negative", (MODEL, BALL, "robust-primal-dual"), dict(iterations=5, lam_max=-1.0),
     rx.InputError, ("'lam_max'",)),
    ("inner iterations zero", (MODEL, BALL, "epirc-pgs"), dict(iterations=5,
                                                                inner_iterations=0),
     rx.InputError, ("'inner_iterations'",)),
    ("unknown option", (MODEL, BALL, "rnpg"), dict(iterations=5, lr=0.1), rx.InputError,
     ("'lr'", "step", "scale")),
    ("option of another planner", (MODEL, BALL, "rnpg"), dict(iterations=5, dual_step=1.0),
     rx.InputError, ("'dual_step'", "rnpg")),
    ("settings of another planner", (MODEL, BALL, "rnpg"),
     dict(iterations=5, settings="fast"), rx.InputError, ("settings", "RNPGSettings")),
    ("learner option not a dict", (MODEL, BALL, "rcpg-value-exact"),
     dict(iterations=5, learner=[1]), rx.InputError, ("'learner'", "dict")),
    ("learner option fixed by the planner", (MODEL, BALL, "rcpg-value-exact"),
     dict(iterations=5, learner={"gradient": "sampled"}), rx.InputError,
     ("'gradient'",)),
    ("start of the wrong shape", (MODEL, BALL, "rnpg"),
     dict(iterations=5, start=np.ones((2, 2)) / 2), rx.InputError, ("start",)),
    ("start with NaN", (MODEL, BALL, "rnpg"),
     dict(iterations=5, start=np.full((3, 2), np.nan)), rx.InputError, ("start",)),
    ("start not a distribution", (MODEL, BALL, "rnpg"),
     dict(iterations=5, start=np.ones((3, 2))), rx.InputError, ("start",)),
    ("start unknown name", (MODEL, BALL, "rnpg"), dict(iterations=5, start="greedy"),
     rx.InputError, ("'greedy'", "uniform")),
    ("start for a learner", (MODEL, BALL, "rcpg-value-exact"),
     dict(iterations=5, start="uniform"), rx.InputError, ("rcpg-value-exact", "random")),
    ("model not a model", ({"P": 1}, BALL, "rnpg"), dict(iterations=5), rx.InputError,
     ("model", "TabularCMDP")),
    ("model None", (None, BALL, "rnpg"), dict(iterations=5), rx.InputError, ("model",)),
    ("set not a set", (MODEL, np.ones((3, 2, 3)), "rnpg"), dict(iterations=5),
     rx.InputError, ("uncertainty set",)),
    ("set of another model", (MODEL, rx.l1_ball(OTHER, 0.1), "rnpg"), dict(iterations=5),
     rx.InputError, ("uncertainty set",)),
    ("adversarial RCPG on a KL ball", (MODEL, "kl", "adversarial-rcpg-exact"), dict(iterations=5),
     rx.InputError, ("adversarial-rcpg-exact", "L1Ball", "KLBall")),
    ("adversarial RCPG on an s-rectangular set", (MODEL, "s-l1", "adversarial-rcpg-exact"),
     dict(iterations=5), rx.InputError, ("adversarial-rcpg-exact", "s-rectangular")),
    ("reference on a set of kernels", (MODEL, "finite", "reference"), dict(iterations=5),
     rx.InputError, ("reference", "FiniteSet")),
    ("a learner without constraints",
     (MODEL.replace(C=None, d=None), "l1-free", "rcpg-value-exact"),
     dict(iterations=5), rx.InputError, ("rcpg-value-exact", "constraint")),
    ("undiscounted model", (MODEL.replace(gamma=1.0, terminal=None), BALL, "rnpg"),
     dict(iterations=5), rx.InputError, ("gamma",)),
]


def _set(arg):
    if not isinstance(arg, str):
        return arg
    if arg == "kl":
        return kl_set()
    if arg == "s-l1":
        return rx.SRectL1Ball.around(MODEL, 0.1)
    if arg == "l1-free":
        return rx.l1_ball(MODEL.replace(C=None, d=None), 0.1)
    if arg == "finite":
        return rx.FiniteSet(np.array([MODEL.P, MODEL.P]))
    return arg


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_plan_refuses_bad_input_before_any_work(row, no_work):
    _, args, kwargs, cls, facts = row
    args = (args[0], _set(args[1]), args[2])
    with raises_fact(cls, *facts) as info:
        plan(*args, **kwargs)
    assert "\n" not in str(info.value)


def test_a_nan_model_never_reaches_the_planners():
    """NaN rewards are refused where the model is built, naming the array."""
    R = np.asarray(MODEL.R).copy()
    R[0, 0] = np.nan
    with raises_fact(rx.ModelError, "R"):
        MODEL.replace(R=R)


def test_a_planner_that_returns_no_policy_is_named():
    bad = Planner(name="test-bad-output", run=lambda ctx: {"value": 1.0})
    with raises_fact(rx.InputError, "test-bad-output", "policy"):
        plan(MODEL, BALL, bad, iterations=2)
    bad2 = Planner(name="test-bad-policy", run=lambda ctx: {"policy": np.ones((3, 2))})
    with raises_fact(rx.InputError, "test-bad-policy"):
        plan(MODEL, BALL, bad2, iterations=2)


def test_register_refuses_a_taken_name_and_a_non_planner():
    with raises_fact(rx.InputError, "'rnpg'", "registered"):
        register(Planner(name="rnpg", run=lambda ctx: {}))
    with raises_fact(rx.InputError, "Planner"):
        register("rnpg")
    with raises_fact(rx.InputError, "name"):
        register(Planner(name=" ", run=lambda ctx: {}))
    assert set(NAMES) <= set(PLANNERS)


def test_record_duality_gap_refuses_what_is_not_a_record():
    with raises_fact(rx.InputError, "record", "suite"):
        record_duality_gap(MODEL, BALL, {"lower": 1.0})
    with raises_fact(rx.InputError, "record"):
        record_duality_gap(MODEL, BALL, None)
    rec = {"bracket": {"lower": 0.0, "upper": 1.0}}
    with raises_fact(rx.InputError, "max_evaluations"):
        record_duality_gap(MODEL, BALL, rec, max_evaluations=0)
    with raises_fact(rx.InputError, "tol"):
        record_duality_gap(MODEL, BALL, rec, tol=-1.0)
